"""GBNF and Lark output of compiled schemas round-trips through our own parsers.

For every schema of the official suite that compiles, the grammar is printed with ``to_gbnf()``
and ``to_lark()``, parsed back with ``Grammar.from_gbnf`` / ``Grammar.from_lark``, compiled, and
each of the schema's instances must get the same byte-level verdict from all three automata.
(Post-decode checks are not part of the printed grammar; only the grammar verdict is compared.)
"""

from __future__ import annotations

from collections import defaultdict

import pytest

import toolmask as tm
from tests.schema.conformance import Case, Compiled, remotes, serialisations, suite_cases

_GROUPS: dict[str, list[Case]] = defaultdict(list)
for _case in suite_cases():
    _GROUPS[_case.group].append(_case)
GROUPS = sorted(_GROUPS)
REMOTES = remotes()


def _accepts(c: tm.CompiledGrammar, text: bytes) -> bool:
    m = c.matcher()
    return bool(m.accept_bytes(text) and m.is_accepting())


@pytest.mark.parametrize("group", GROUPS)
def test_printed_grammars_round_trip(group: str) -> None:
    cases = _GROUPS[group]
    original = Compiled(cases[0].schema, resources=REMOTES)
    if original.compiled is None:
        pytest.skip(f"schema not compiled: {original.error}")
    g = original.compiled.grammar
    reparsed = {
        "gbnf": tm.compile(tm.Grammar.from_gbnf(g.to_gbnf())),
        "lark": tm.compile(tm.Grammar.from_lark(g.to_lark())),
    }
    checked = 0
    for case in cases:
        for text in serialisations(case.data, case.schema):
            want = _accepts(original.compiled, text)
            for dialect, c in reparsed.items():
                got = _accepts(c, text)
                assert got == want, f"{dialect} round trip disagrees on {text!r}: {got} != {want}"
            checked += 1
    assert checked >= len(cases)
