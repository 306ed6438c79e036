"""Filtering a literal set by the parts it meets, exactly and without re-validating what the
parts' shapes already say.

A literal set (an ``enum`` / ``const``, or the literal values of a union) met with other
constraints keeps the values that every constraint accepts. Evaluating each value against the
whole intersection with jsonschema is exact but costs O(values x the other parts' size):
Azure Pipelines' schema meets ``{"task": {"anyOf": [259 one-value enums]}}`` with each of 259
branches' ``task`` pattern, 259 values against a 259-branch ``anyOf``, 259 times (180 s). So
:func:`literal_filter` evaluates a value part by part, and reads a part off its shape where the
shape says exactly what the part holds (no flags): a literal set is a lookup by JSON equality,
a null / boolean / string a check against the shape's languages. The rest goes to jsonschema.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._merge import finite_strings
from toolmask.schema._resolve import json_key
from toolmask.schema._terms import NO_FLAGS, Shape, Term

__all__ = ["literal_filter"]

Accepts = Callable[[Term, Any], bool]


def literal_filter(
    accepts: Accepts,
    limits: Limits,
    term: Term,
    shapes: list[Shape],
    terms: list[Term] | None,
    base: Shape,
) -> tuple[str, ...]:
    """The literals of ``base`` (canonical JSON texts, in their order; ``base`` is one of
    ``shapes``, the expansions of the parts of ``term``) that ``term`` holds. Without
    ``terms`` (the part each shape expands): ``accepts`` (jsonschema) on the whole term. With
    them: a value must be in every part; a part whose shape is a literal set without flags
    holds exactly the values of that set (expansion filtered them by the part itself), so it
    is a lookup by JSON equality (``1`` is ``1.0``), and ``base`` 's own part is not evaluated
    again; other parts by :func:`_part_test`. Where a part allows finitely many strings (a
    pattern such as ``^PowerShell@2$``: at most 64), only the base's strings among those are
    evaluated: a branch naming one task among a thousand names costs a scan of the names,
    not a thousand evaluations."""
    texts = base.literals or ()
    if any(t[0] == '"' for t in texts):
        allowed = _finite_part_strings(limits, shapes, terms, base)
        if allowed is not None:
            texts = tuple(t for t in texts if t[0] != '"' or t in allowed)
    if terms is None or len(terms) != len(shapes):
        return tuple(t for t in texts if accepts(term, json.loads(t)))
    sets: list[frozenset[Any]] = []
    rest: list[Callable[[Any], bool]] = []
    for t, s in zip(terms, shapes, strict=True):
        if s.literals is None or s.flags != NO_FLAGS:
            rest.append(_part_test(accepts, limits, t, s))
        elif s is not base:
            sets.append(frozenset(json_key(json.loads(x)) for x in s.literals))

    def test(v: Any) -> bool:
        if sets:
            k = json_key(v)
            if any(k not in keys for keys in sets):
                return False
        return all(f(v) for f in rest)

    return tuple(t for t in texts if test(json.loads(t)))


def _finite_part_strings(
    limits: Limits, shapes: list[Shape], terms: list[Term] | None, base: Shape
) -> set[str] | None:
    """The smallest set of canonical string texts that one part without flags allows (its
    string alternatives have finitely many strings), or None when no part is one."""
    if terms is None:
        return None
    best: set[str] | None = None
    for s in shapes:
        if s is base or s.literals is not None or s.flags != NO_FLAGS or not s.strings:
            continue
        got = finite_strings(Shape(strings=s.strings), limits)
        if got is not None and (best is None or len(got) < len(best)):
            best = got
    return best


def _part_test(accepts: Accepts, limits: Limits, t: Term, s: Shape) -> Callable[[Any], bool]:
    """Whether a value is in the part ``t`` whose expansion is ``s``: a null, boolean or
    string is read off ``s`` when it has no flags (its languages are then exactly the part's:
    a string alternative is a DFA over the decoded value, or a chain pattern matched without
    its DFA); anything else, or a format kept unbuilt (cheaper to evaluate than to
    determinise for this), with ``accepts``."""
    if s.flags != NO_FLAGS or s.literals is not None:
        return lambda v: accepts(t, v)
    strs: list[Callable[[str], bool]] = []
    read_strings = True
    for a in s.strings:
        chain = _langs.pattern_chain(a.pat, limits) if a.pat is not None else None
        if a.fmt is not None or (a.pat is not None and chain is None):
            read_strings = False
        elif chain is not None:
            strs.append(functools.partial(_langs.chain_accepts, chain))
        elif a.dfa is not None:
            strs.append(a.dfa.accepts)
        else:
            strs.append(lambda v: True)

    def test(v: Any) -> bool:
        if v is None:
            return s.null
        if isinstance(v, bool):
            return v in s.booleans
        if isinstance(v, str) and read_strings:
            return any(f(v) for f in strs)
        return accepts(t, v)

    return test
