"""One owner for the caches: the memos of the schema and grammar compilers live in the active
GrammarCompiler, bounded by its limits, counted in its byte budget, emptied by its clear()."""

from __future__ import annotations

import dataclasses
import logging

import pytest

import toolmask as tm
from toolmask._cache import LRUCache

SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"},
        "name": {"type": "string", "maxLength": 12},
        "size": {"type": "number", "minimum": 0.25, "maximum": 1000.5},
        "kind": {"enum": [f"k{i}" for i in range(40)]},
        # a non-ASCII name: its key-tree node goes through the memoised off-trie alternatives
        "größe": {"type": "integer"},
        # an unanchored pattern takes the DFA route (the anchored one above is written from
        # its syntax tree); key names constrained by propertyNames meet the names' complement
        "note": {"type": "string", "pattern": "[a-z]+x"},
        "meta": {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "propertyNames": {"maxLength": 8},
        },
    },
    "additionalProperties": {"type": "integer"},
}

MEMOS = {
    "grammar.regex_dfas",
    "grammar.utf8_nodes",
    "grammar.encoded_charsets",
    "schema.json_string_chars",
    "schema.length_dfas",
    "schema.key_complements",
    "schema.fraction_regexes",
    "schema.dfa_products",
    "schema.lowered_dfas",
    "schema.number_ranges",
    "schema.pattern_nodes",
    "schema.key_trees",
    "schema.key_trie_rests",
}


def _memo_counts(c: tm.GrammarCompiler) -> dict[str, int]:
    m = c.memory()
    return {name: m.get(name, 0) for name in MEMOS}


def test_schema_memos_live_in_the_active_compiler() -> None:
    default = _memo_counts(tm.default_compiler())
    mine = tm.GrammarCompiler()
    with mine.activate():
        tm.Grammar.from_json_schema(SCHEMA)
    counts = _memo_counts(mine)
    assert all(counts[name] > 0 for name in MEMOS), counts
    assert mine.memory()["memos"] > 0
    assert _memo_counts(tm.default_compiler()) == default  # nothing went to the default
    mine.clear()
    assert mine.memory()["memos"] == 0 and not any(_memo_counts(mine).values())


def test_memos_are_bounded_by_the_limits() -> None:
    small = tm.GrammarCompiler(limits=dataclasses.replace(tm.DEFAULT_LIMITS, max_language_memos=2))
    with small.activate():
        for i in range(6):
            tm.Grammar.from_json_schema({"type": "string", "pattern": f"a{{{i + 1}}}b"})
    assert small.memory()["grammar.regex_dfas"] == 2


def test_memos_count_in_the_byte_budget() -> None:
    tiny = tm.GrammarCompiler(max_cache_bytes=1)
    with tiny.activate():
        grammar = tm.Grammar.from_json_schema(SCHEMA)
        assert tiny.memory()["memos"] > 0
        tiny.compile(grammar)  # a compile trims the caches to the budget
    m = tiny.memory()
    assert m["memos"] == 0 and m["compiled"] == 1  # the last compiled grammar always stays


def test_unknown_formats_are_warned_about_once_per_compiler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {"type": "string", "format": "x-hard2-colour"}
    for _ in range(2):
        with caplog.at_level(logging.WARNING, "toolmask.schema"), tm.GrammarCompiler().activate():
            tm.Grammar.from_json_schema(schema)
            tm.Grammar.from_json_schema(schema)
    warned = [r for r in caplog.records if "x-hard2-colour" in r.getMessage()]
    assert len(warned) == 2


def test_lru_cache_measures_entries_when_stored() -> None:
    c: LRUCache[str, str] = LRUCache("t", 2, entry_bytes=len)
    c.put("a", "xx")
    c.put("b", "yyy")
    assert c.nbytes() == 5
    c.put("c", "z")  # "a" is dropped
    assert c.nbytes() == 4 and c.get("a") is None
    assert c.pop_oldest() == "yyy" and c.nbytes() == 1
    c.clear()
    assert c.nbytes() == 0


RUNS = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "b": {"type": "string", "pattern": "^[a-z ]+$"},
        "c": {"type": "string", "format": "date"},
        "d": {"type": "integer"},
    },
    "required": ["a", "b", "c", "d"],
}
RUNS_TEXT = b'{"a":"hello world, here we go","b":"just lower case","c":"2024-02-29","d":12345}'


@pytest.mark.parametrize("backend", ["python", "native"])
def test_run_tables_are_bounded_by_the_limits(backend: str) -> None:
    """``Limits.max_run_tables`` bounds the run tables a vocabulary index keeps; the masks do
    not depend on it."""
    from toolmask.mask import backend as built
    from toolmask.vocab import Vocabulary

    if backend == "native" and built() != "native":
        pytest.skip("the compiled kernel is not built")
    vocab = Vocabulary.from_quicktok("qwen3")
    g = tm.Grammar.from_json_schema(RUNS)
    one = tm.GrammarCompiler(
        backend=backend, limits=dataclasses.replace(tm.DEFAULT_LIMITS, max_run_tables=1)
    )
    free = tm.GrammarCompiler(backend=backend)
    m1, m2 = one.compile(g, vocab).matcher(), free.compile(g, vocab).matcher()
    for i in range(len(RUNS_TEXT)):
        assert (m1.mask() == m2.mask()).all(), RUNS_TEXT[:i]
        assert m1.accept_bytes(RUNS_TEXT[i : i + 1]) and m2.accept_bytes(RUNS_TEXT[i : i + 1])
    if backend == "python":
        assert len(one.vocab_index(vocab)._runs) == 1
        assert len(free.vocab_index(vocab)._runs) > 1


def test_a_stage_memoises_in_the_cache_set_it_is_given() -> None:
    """compile_json_schema(caches=...) keeps its memos there, not in the process' shared set."""
    from toolmask._cache import SHARED, CacheSet
    from toolmask.schema import compile_json_schema

    before = SHARED.counts()
    mine = CacheSet()
    compile_json_schema(SCHEMA, caches=mine)
    assert {name for name, n in mine.counts().items() if n} >= MEMOS
    assert SHARED.counts() == before


def test_named_caches_hold_growing_values_under_the_byte_budget() -> None:
    """A named cache measured by ``sizeof`` (per-part automata, say: they grow as input explores
    them) counts in the compiler's memory and is trimmed with the memos."""
    from toolmask.automaton import build_automaton

    c = tm.GrammarCompiler(max_cache_bytes=1)
    parts = c.cache("test.parts", limit="max_compiled_grammars", sizeof=lambda a: a.memory_bytes())
    a = build_automaton(tm.Grammar.from_json_schema({"type": "array"}))
    parts.put("array", a)
    assert c.memory()["memos"] >= a.memory_bytes() > 0
    c.compile(tm.Grammar.from_regex("a"))  # a compile trims the caches to the budget
    assert len(parts) == 0
