"""A full JSON grammar written in IR against ``json.loads``, byte by byte."""

from __future__ import annotations

import json
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.automaton.ir_grammars import json_grammar
from toolmask.automaton import Automaton, build_automaton


@cache
def automaton() -> Automaton:
    return build_automaton(json_grammar())


def accepts(data: bytes) -> bool:
    a = automaton()
    s = a.advance_bytes(a.initial, data)
    return s is not None and a.is_accepting(s)


def is_json(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
        json.loads(text, parse_constant=_reject)
    except ValueError:
        return False
    # json.loads (strict=True) rejects raw control characters in strings, as the grammar does;
    # lone surrogate escapes such as "\\ud800" are accepted by both
    return True


def _reject(name: str) -> object:
    raise ValueError(name)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans(), st.sampled_from([None, 2]))
def test_accepts_dumped_json(value: object, ascii_only: bool, indent: int | None) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode("utf-8")
    assert accepts(data)
    # and every proper prefix is alive (the automaton never blocks a valid document)
    a = automaton()
    s = a.initial
    for b in data:
        assert (a.allowed_bytes(s) >> b) & 1
        nxt = a.advance(s, b)
        assert nxt is not None
        s = nxt


@settings(max_examples=500, deadline=None)
@given(json_values, st.data())
def test_corrupted_json_agrees_with_json_loads(value: object, data: st.DataObject) -> None:
    doc = bytearray(json.dumps(value, ensure_ascii=data.draw(st.booleans())).encode("utf-8"))
    op = data.draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
    i = data.draw(st.integers(0, len(doc)))
    b = data.draw(st.sampled_from(list(b'{}[]",:\\ 0123456789.eE+-tfnul\x00\x1f\x7f\xc3\xa9\xff')))
    if op == "replace" and i < len(doc):
        doc[i] = b
    elif op == "insert":
        doc.insert(i, b)
    elif op == "delete" and i < len(doc):
        del doc[i]
    else:
        del doc[i:]
    assert accepts(bytes(doc)) == is_json(bytes(doc)), bytes(doc)


def test_handpicked_documents() -> None:
    good = [
        b"0",
        b"-0.5e+10",
        b' {"a" : [ true , false , null ] } ',
        b'"\\u00e9\\n\\"\\\\\\/"',
        '"h\u00e9llo \u4e16\u754c \U0001f600"'.encode(),
        b"[[[[[]]]]]",
        b'{"":{"":{"":[]}}}',
    ]
    bad = [
        b"",
        b"01",
        b"1.",
        b".5",
        b"+1",
        b"[1,]",
        b'{"a":1,}',
        b"{1:2}",
        b'"\\x"',
        b'"\x01"',
        b'"\xc3"',
        b'"\xed\xa0\x80"',  # an encoded surrogate is not UTF-8
        b'"\xc0\xaf"',  # overlong
        b"nul",
        b"truee",
        b"[1 2]",
        b"NaN",
    ]
    for doc in good:
        assert accepts(doc), doc
        assert is_json(doc), doc
    for doc in bad:
        assert not accepts(doc), doc
        assert not is_json(doc), doc


def test_structure_is_few_dfas() -> None:
    a = automaton()
    # object/array/member/string/number are inlined into value; value is the one recursion
    assert a.entry_names == ("root", "value")


def test_string_interior_is_one_state() -> None:
    a = automaton()
    s1 = a.advance_bytes(a.initial, b'["ab')
    s2 = a.advance_bytes(a.initial, b'["abcdefg\\n\\u0041')
    assert s1 is not None and s1 is s2
