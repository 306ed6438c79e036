"""The compiled automaton: ``toolmask._native.Automaton`` built from a grammar.

Same construction as the Python reference (``_analysis``, ``_nfa``, ``_dfa``, ``_runtime``),
ported to C: the same positions, the same stack structure, the same caps. Its states are
interned handle objects (``toolmask._native.State``: ``.accepting``, ``.stacks``,
``.is_dead``); one object per state while it is referenced, so ``is`` compares states.

The kernel detects build errors but does not describe them: on one, the reference analysis
runs and raises the located error (the cycle of a left recursion, the repetition and the
limit it passed), so both backends raise the same exceptions.
"""

from __future__ import annotations

from typing import Any, cast

from toolmask._kernel import native_module
from toolmask.automaton._analysis import check_rule_count
from toolmask.automaton._protocol import Automaton
from toolmask.errors import GrammarError, LimitError
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = ["build_native_automaton", "flatten", "native_from_flat"]


def flatten(grammar: Grammar) -> Any:
    """The grammar read into the kernel's flat arrays; ``.key`` is its canonical serialisation
    (equal grammars give equal keys, whatever the sharing of their node objects). O(nodes)."""
    return native_module().Flat(grammar)


def native_from_flat(flat: Any, grammar: Grammar, limits: Limits = DEFAULT_LIMITS) -> Automaton:
    """Build the automaton from ``flatten(grammar)`` (consumed). Raises what
    :func:`toolmask.automaton.build_automaton` raises, with the same messages."""
    check_rule_count(grammar, limits)
    nat = native_module()
    try:
        return cast(Automaton, nat.Automaton(flat, limits))
    except nat.BuildError as e:
        kind = str(e)
    # the reference describes the error (and raises it)
    from toolmask.automaton._build import build_automaton

    build_automaton(grammar, limits=limits)
    if kind == "left_recursion":
        raise GrammarError("left recursion")
    if kind in ("max_repeat_unroll", "max_automaton_states", "max_compile_seconds"):
        raise LimitError(f"the compiled automaton hit {kind}", limit=kind)
    raise GrammarError(f"the compiled automaton could not be built ({kind})")


def build_native_automaton(grammar: Grammar, *, limits: Limits = DEFAULT_LIMITS) -> Automaton:
    """``build_automaton`` with the compiled kernel (see the module docstring)."""
    return native_from_flat(flatten(grammar), grammar, limits)
