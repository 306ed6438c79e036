"""The turn grammar: tools x tool_choice x parallel x wire format -> one :class:`Grammar`.

Shape (``[]`` optional, names as in the printed grammar)::

    none      root ::= prose
    auto      root ::= prose [blocks]                 (llama3_json: prose_nb [open-block] | bare)
    required  root ::= blocks                         (llama3_json: open-block | bare)
    blocks    one call per block:  block (block_sep block)*   (parallel off: block)
              list formats:  open [ call (sep call)* ] close  (parallel off: open [ call ] close)
    call      ::= call_0 | call_1 | ...               one alternative per callable tool
    call_i    ::= '{"name": "<tool i>", "arguments": ' a<i>_root '}'

Name and arguments sit in one alternative, so a tool's name can only be followed by that tool's
own argument grammar. ``prose`` is every UTF-8 text that does not contain the format's trigger
text: the lazy trigger of ``auto`` expressed inside the grammar, so the model writes freely
until it starts the marker and is held to the call grammar from then until the block closes.
Prose avoids the trigger *text* even when the marker is a special token, so the parser (which
sees text) never finds a call that the grammar did not mean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolmask._cache import active_compiler
from toolmask.grammar._dfa import Dfa, dfa_to_rules
from toolmask.grammar._ir import EMPTY, Grammar, Node, Rule, RuleRef, choice, lit, opt, seq, star
from toolmask.schema import compile_json_schema
from toolmask.tools._choice import ToolChoice
from toolmask.tools._rename import prefix_rules
from toolmask.tools._spec import Tool
from toolmask.tools.formats._base import WireFormat

__all__ = ["DEFAULT_SCHEMA_OPTIONS", "build_call_grammar", "build_turn_grammar", "prose_rules"]

#: options passed to :func:`compile_json_schema` for every tool's arguments unless overridden
DEFAULT_SCHEMA_OPTIONS: Mapping[str, Any] = {"whitespace": "compact"}


def _arguments_grammar(tool: Tool, options: Mapping[str, Any]) -> Grammar:
    """``compile_json_schema(tool.parameters, **options)``, cached by (schema, options) JSON in
    the active GrammarCompiler (``Limits.max_schema_grammars`` entries)."""
    key = (
        json.dumps(tool.parameters, sort_keys=True),
        json.dumps(dict(options), sort_keys=True, default=repr),
    )
    cache = active_compiler().cache("tools.schema_grammars", limit="max_schema_grammars")
    hit: Grammar | None = cache.get(key)
    if hit is not None:
        return hit
    return cache.put(key, compile_json_schema(tool.parameters, **options))  # type: ignore[no-any-return]


def prose_rules(fmt: WireFormat, *, at_start: bool) -> tuple[Node, tuple[Rule, ...]]:
    """Free text that does not contain ``fmt``'s trigger text (rules named ``prose_s<i>``).

    With ``at_start`` and a format whose blocks may start bare (``{`` at the start of the
    reply), the text must also not start with ``{``. Cost: a DFA of len(trigger) + 2 states.
    """
    anything = Dfa.any_string()
    dfa = anything.concat(Dfa.literal(fmt.trigger_text)).concat(anything).complement()
    if at_start and fmt.bare_at_start:
        dfa = dfa.intersect(Dfa.literal("{").concat(anything).complement())
    return dfa_to_rules(dfa, "prose", encoding="raw")


def _calls(
    fmt: WireFormat, call: Node, *, parallel: bool, special_tokens: frozenset[str], bare: bool
) -> Node:
    """One block (or the run of blocks) holding the calls; ``bare`` leaves out the opener."""
    opener = EMPTY if bare else fmt.open_node(special_tokens)
    closer = fmt.close_node(special_tokens) if fmt.close else lit(fmt.before_close)
    if fmt.separator:  # all calls in one block
        inner = seq(call, star(seq(lit(fmt.separator_text), call))) if parallel else call
        return seq(opener, lit(fmt.list_open), inner, lit(fmt.list_close), closer)
    block = seq(opener, lit(fmt.list_open), call, lit(fmt.list_close), closer)
    if not parallel or bare:
        return block
    return seq(block, star(seq(lit(fmt.block_sep), block)))


def _call_rules(
    tools: Sequence[Tool], fmt: WireFormat, schema_options: Mapping[str, Any]
) -> tuple[Node, list[Rule]]:
    rules: list[Rule] = []
    alts: list[Node] = []
    options = {**DEFAULT_SCHEMA_OPTIONS, **schema_options}
    for i, tool in enumerate(tools):
        entry, args_rules = prefix_rules(_arguments_grammar(tool, options), f"a{i}_")
        rules.extend(args_rules)
        rules.append(Rule(f"call_{i}", fmt.call_node(tool.name, entry)))
        alts.append(RuleRef(f"call_{i}"))
    rules.append(Rule("call", choice(*alts)))
    return RuleRef("call"), rules


def build_turn_grammar(
    tools: Sequence[Tool],
    fmt: WireFormat,
    tool_choice: ToolChoice,
    *,
    parallel: bool = True,
    special_tokens: frozenset[str] = frozenset(),
    schema_options: Mapping[str, Any] | None = None,
) -> Grammar:
    """The grammar of one assistant turn (see the module docstring for its shape).

    ``tools`` are all advertised tools; ``tool_choice`` says which may be called. Markers in
    ``special_tokens`` become :class:`Special` nodes. Raises :class:`SchemaError` for a tool
    schema that cannot be compiled. Cost: one schema compilation per distinct (schema, options),
    cached; the rest is linear in the tool count.
    """
    callable_names = set(tool_choice.callable([t.name for t in tools]))
    chosen = [t for t in tools if t.name in callable_names]
    mode = tool_choice.mode if chosen else "none"
    out: list[Rule] = []
    prose: Node = EMPTY
    if mode != "required":
        prose, rules = prose_rules(fmt, at_start=True)
        out.extend(rules)
    if mode == "none":
        return Grammar((Rule("root", prose), *out))
    call, call_rules = _call_rules(chosen, fmt, schema_options or {})
    out.extend(call_rules)
    calls = _calls(fmt, call, parallel=parallel, special_tokens=special_tokens, bare=False)
    bare = None
    if fmt.bare_at_start:
        bare = _calls(fmt, call, parallel=parallel, special_tokens=special_tokens, bare=True)
    out.append(Rule("calls", calls))
    if bare is not None:
        out.append(Rule("bare_calls", bare))
    alts: list[Node] = []
    if mode == "auto":
        alts.append(seq(prose, opt(RuleRef("calls"))))
    else:
        alts.append(RuleRef("calls"))
    if bare is not None:
        alts.append(RuleRef("bare_calls"))
    return Grammar((Rule("root", choice(*alts)), *out))


def build_call_grammar(
    tools: Sequence[Tool],
    fmt: WireFormat,
    tool_choice: ToolChoice,
    *,
    parallel: bool = True,
    special_tokens: frozenset[str] = frozenset(),
    schema_options: Mapping[str, Any] | None = None,
) -> Grammar:
    """The grammar from the trigger on (for engines with their own lazy triggers).

    The same as the ``required`` turn grammar restricted to ``tool_choice``'s callable tools.
    Raises :class:`ToolError` via :class:`ToolChoice` when nothing may be called.
    """
    from toolmask.tools._errors import ToolError

    names = tool_choice.callable([t.name for t in tools])
    if not names:
        raise ToolError("no tool may be called under this tool_choice", where="tool_choice")
    return build_turn_grammar(
        tools,
        fmt,
        ToolChoice("required", tuple(names)),
        parallel=parallel,
        special_tokens=special_tokens,
        schema_options=schema_options,
    )
