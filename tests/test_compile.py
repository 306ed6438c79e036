"""compile(): caching, the byte-level Matcher and post-decode validation."""

from __future__ import annotations

import json

import pytest

from toolmask._compile import CompiledGrammar, Matcher, clear_cache, compile
from toolmask.errors import GrammarError
from toolmask.grammar._ir import (
    Grammar,
    PostCheck,
    Rule,
    RuleRef,
    Special,
    byte_range,
    choice,
    lit,
    plus,
    seq,
)
from toolmask.limits import Limits


def _kv() -> Grammar:
    """``{"n": <digits>}`` or ``{"s": "<a-z>*"}``, exactly (no whitespace)."""
    return Grammar(
        (
            Rule("root", seq(lit("{"), choice(RuleRef("n"), RuleRef("s")), lit("}"))),
            Rule("n", seq(lit('"n": '), plus(byte_range(0x30, 0x39)))),
            Rule("s", seq(lit('"s": "'), RuleRef("letters"), lit('"'))),
            Rule("letters", choice(seq(byte_range(0x61, 0x7A), RuleRef("letters")), lit(""))),
        )
    )


def test_compile_is_cached_by_fingerprint() -> None:
    clear_cache()
    c1 = compile(_kv())
    c2 = compile(_kv())  # an equal, distinct grammar object
    assert c1 is c2
    assert isinstance(c1, CompiledGrammar)
    assert compile(_kv(), limits=Limits(max_stack_depth=10)) is not c1
    assert c1.grammar == _kv()
    assert c1.automaton.n_positions > 0
    assert "CompiledGrammar" in repr(c1)


def test_compile_cache_is_bounded() -> None:
    clear_cache()
    first = compile(Grammar((Rule("root", lit("x0")),)))
    for i in range(1, 70):
        compile(Grammar((Rule("root", lit(f"x{i}")),)))
    assert compile(Grammar((Rule("root", lit("x0")),))) is not first


def test_compile_errors_propagate() -> None:
    g = Grammar((Rule("e", choice(seq(RuleRef("e"), lit("+")), lit("1"))),), "e")
    with pytest.raises(GrammarError, match="left recursion"):
        compile(g)


def test_matcher_accepts_atomically() -> None:
    m = compile(_kv()).matcher()
    assert isinstance(m, Matcher)
    assert m.accept_bytes(b'{"n": 1')
    before = m.state
    assert not m.accept_bytes(b"2x")  # "2" is fine, "x" is not: nothing is taken
    assert m.state is before
    assert m.n_accepted == 7
    assert m.accept_bytes(b"23}")
    assert m.is_accepting() and m.is_finished()
    assert not m.accept_bytes(b" ")
    assert m.accept_bytes(b"")


def test_rollback() -> None:
    m = compile(_kv()).matcher()
    s0 = m.state
    assert m.accept_bytes(b'{"s": "ab')
    s_ab = m.state
    assert m.accept_bytes(b'c"}')
    assert m.is_finished()
    m.rollback(3)
    assert m.state is s_ab
    m.rollback(0)
    assert m.state is s_ab
    with pytest.raises(ValueError):
        m.rollback(100)
    with pytest.raises(ValueError):
        m.rollback(-1)
    assert m.state is s_ab  # misuse leaves the state alone
    m.rollback(m.n_accepted)
    assert m.state is s0
    assert m.accept_bytes(b'{"n": 5}')
    m.reset()
    assert m.state is s0 and m.n_accepted == 0


def test_forced_bytes() -> None:
    m = compile(_kv()).matcher()
    assert m.forced_bytes() == b'{"'
    assert m.accept_bytes(b'{"s')
    assert m.forced_bytes() == b'": "'
    assert m.n_accepted == 3  # forced_bytes does not move the matcher
    assert m.accept_bytes(b'": "xy')
    assert m.forced_bytes() == b""  # a letter or the closing quote
    assert m.accept_bytes(b'"')
    assert m.forced_bytes() == b"}"
    assert m.accept_bytes(b"}")
    assert m.forced_bytes() == b""  # accepting: nothing is forced


def test_forced_bytes_stop_at_accepting_and_specials() -> None:
    g = Grammar((Rule("root", seq(lit("ab"), choice(lit(""), lit("cd")))),))
    m = compile(g).matcher()
    assert m.forced_bytes() == b"ab"
    g = Grammar((Rule("root", seq(lit("a"), choice(Special("<x>"), lit("b")))),))
    m = compile(g).matcher()
    assert m.forced_bytes() == b"a"


def test_forced_bytes_are_capped() -> None:
    g = Grammar((Rule("root", lit("z" * 5000)),))
    m = compile(g).matcher()
    forced = m.forced_bytes()
    assert 0 < len(forced) <= 4096 and set(forced) == {ord("z")}


def test_allowed_bytes_and_specials() -> None:
    g = Grammar((Rule("root", seq(Special("<s>"), choice(lit("a"), lit("b")))),))
    m = compile(g).matcher()
    assert m.allowed_bytes() == 0
    assert m.allowed_specials() == frozenset({"<s>"})
    assert not m.accept_special("<t>")
    assert m.accept_special("<s>")
    assert m.allowed_bytes() == (1 << ord("a")) | (1 << ord("b"))
    assert m.accept_bytes(b"a") and m.is_finished()
    m.rollback(2)
    assert m.allowed_specials() == frozenset({"<s>"})


def test_grammars_that_differ_only_in_their_special_tokens_are_two_grammars() -> None:
    # the native cache key serialises a special node as an index into the grammar's special
    # texts: the texts must be part of the key, or these two would share one automaton
    a = compile(Grammar((Rule("root", seq(Special("<a>"), lit("x"))),)))
    b = compile(Grammar((Rule("root", seq(Special("<b>"), lit("x"))),)))
    assert a is not b
    assert b.matcher().accept_special("<b>") and not b.matcher().accept_special("<a>")


def test_matcher_never_raises_on_garbage() -> None:
    m = compile(_kv()).matcher()
    for b in range(256):
        m.accept_bytes(bytes([b]))
    assert not m.accept_special("anything")
    assert m.accept_bytes(bytearray(b""))
    assert "Matcher" in repr(m)


# -- validate -------------------------------------------------------------------------------------

_SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "multipleOf": 3},
        "s": {"type": "string", "format": "email"},
        "a/b": {"type": "array", "items": {"maxLength": 2}},
    },
}


def _checked() -> CompiledGrammar:
    g = Grammar(
        (Rule("root", lit("{}")),),
        checks=(PostCheck(json.dumps(_SCHEMA), (("/properties/n", "multipleOf"),)),),
    )
    return compile(g)


def test_validate_without_checks_does_not_parse() -> None:
    assert compile(_kv()).validate(b"not json at all") == []


def test_validate_ok() -> None:
    assert _checked().validate(b'{"n": 9, "s": "a@example.com"}') == []
    assert _checked().validate('{"a/b": ["xy"]}') == []


def test_validate_reports_pointer_and_message() -> None:
    errs = _checked().validate(b'{"n": 10, "s": "nope", "a/b": ["ok", "long"]}')
    assert len(errs) == 3
    assert errs[0].startswith("at /a~1b/1: ")
    assert errs[1].startswith("at /n: ") and "multiple of 3" in errs[1]
    assert errs[2].startswith("at /s: ") and "email" in errs[2]


def test_validate_root_error() -> None:
    errs = _checked().validate(b"[1]")
    assert errs == ["at (root): [1] is not of type 'object'"]


def test_validate_parse_errors() -> None:
    (err,) = _checked().validate(b'{"n": }')
    assert err.startswith("invalid JSON at line 1 column 7 (char 6)")
    (err,) = _checked().validate(b"NaN")
    assert "invalid JSON" in err
    (err,) = _checked().validate(b'"\xff"')
    assert "UTF-8" in err
