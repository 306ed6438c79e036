from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolmask.schema._numbers import JSON_NUMBER, integer_regex, number_regex

# An independent statement of RFC 8259's number syntax, the oracle for "is this JSON".
STRICT_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)


def is_json_number(text: str) -> bool:
    return STRICT_JSON_NUMBER.fullmatch(text) is not None


def in_interval(v: Decimal, lo: Decimal | None, lo_x: bool, hi: Decimal | None, hi_x: bool) -> bool:
    if lo is not None and (v < lo or (lo_x and v == lo)):
        return False
    return not (hi is not None and (v > hi or (hi_x and v == hi)))


def spell(v: Decimal, extra_zeros: int, neg_zero: bool) -> str:
    """An exponent-free spelling of ``v`` with ``extra_zeros`` trailing fraction zeros."""
    text = format(v, "f")
    if extra_zeros:
        text += ("" if "." in text else ".") + "0" * extra_zeros
    if v == 0 and neg_zero and not text.startswith("-"):
        text = "-" + text
    return text


# Random texts over the number alphabet, shaped enough to hit the interesting cases (leading
# zeros, -0, trailing zeros, empty fractions, exponents).
raw_texts = st.from_regex(r"-?[0-9]{1,5}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,2})?", fullmatch=True)
noise_texts = st.text(alphabet="-+.eE0123456789", max_size=8)

small_ints = st.integers(min_value=-20_000, max_value=20_000)
big_ints = st.integers(min_value=-(10**25), max_value=10**25)
int_bounds = st.one_of(st.none(), small_ints, big_ints, st.sampled_from([0, 1, -1, 9, 10, -10, 99]))

decimals = st.decimals(
    min_value=Decimal(-10_000), max_value=Decimal(10_000), places=4, allow_nan=False
).map(lambda d: d.normalize() if d != 0 else Decimal(0))
dec_bounds = st.one_of(st.none(), decimals, st.integers(-300, 300).map(Decimal))


def near(bounds: list[int | Decimal | None]) -> st.SearchStrategy[Decimal]:
    """Values at and around the bounds, where off-by-one errors live."""
    pts = [Decimal(b) for b in bounds if b is not None] or [Decimal(0)]
    deltas = [Decimal(x) for x in ("0", "1", "-1", "0.0001", "-0.0001", "0.5", "-0.5", "10")]
    return st.builds(lambda p, d: p + d, st.sampled_from(pts), st.sampled_from(deltas))


def int_expected(text: str, lo: int | None, hi: int | None) -> bool:
    if not is_json_number(text) or "e" in text.lower():
        return False
    v = Decimal(text)
    if v != v.to_integral_value():
        return False
    return in_interval(
        v, None if lo is None else Decimal(lo), False, None if hi is None else Decimal(hi), False
    )


def num_expected(text: str, lo: Decimal | None, lo_x: bool, hi: Decimal | None, hi_x: bool) -> bool:
    if not is_json_number(text):
        return False
    if (lo is not None or hi is not None) and "e" in text.lower():
        return False
    return in_interval(Decimal(text), lo, lo_x, hi, hi_x)


def check_int(lo: int | None, hi: int | None, texts: list[str]) -> None:
    rx = integer_regex(lo, hi)
    empty = lo is not None and hi is not None and lo > hi
    assert (rx is None) == empty
    for t in texts:
        got = rx is not None and re.fullmatch(rx, t) is not None
        assert got == int_expected(t, lo, hi), (lo, hi, t, rx)


@settings(max_examples=250)
@given(
    lo=int_bounds,
    hi=int_bounds,
    raw=st.lists(st.one_of(raw_texts, noise_texts), max_size=10),
    data=st.data(),
)
@example(lo=0, hi=0, raw=["0", "-0", "-0.0", "0.000", "00", "0.", ".0", "-", "1e0"], data=None)
@example(lo=-5, hi=-1, raw=["-1", "-1.0", "-5.00", "-0", "-6", "1", "-01"], data=None)
@example(lo=100, hi=200, raw=["100.0", "200.00", "150", "201.0", "99"], data=None)
@example(lo=10, hi=None, raw=["10", "9.999", "9", "100", "1e2", "010"], data=None)
def test_integer_regex(
    lo: int | None, hi: int | None, raw: list[str], data: st.DataObject | None
) -> None:
    texts = list(raw)
    if data is not None:
        vals = data.draw(st.lists(near([lo, hi]).map(lambda d: d.to_integral_value()), max_size=10))
        zeros = data.draw(st.lists(st.integers(0, 3), min_size=len(vals), max_size=len(vals)))
        texts += [spell(v, z, z % 2 == 1) for v, z in zip(vals, zeros, strict=True)]
    check_int(lo, hi, texts)


def check_num(
    lo: Decimal | None, lo_x: bool, hi: Decimal | None, hi_x: bool, texts: list[str]
) -> None:
    rx = number_regex(lo, lo_x, hi, hi_x)
    empty = lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_x or hi_x)))
    assert (rx is None) == empty
    for t in texts:
        got = rx is not None and re.fullmatch(rx, t) is not None
        assert got == num_expected(t, lo, lo_x, hi, hi_x), (lo, lo_x, hi, hi_x, t, rx)


@settings(max_examples=300)
@given(
    lo=dec_bounds,
    lo_x=st.booleans(),
    hi=dec_bounds,
    hi_x=st.booleans(),
    raw=st.lists(st.one_of(raw_texts, noise_texts), max_size=10),
    data=st.data(),
)
@example(
    lo=Decimal("1.05"),
    lo_x=False,
    hi=Decimal("1.3"),
    hi_x=True,
    raw=["1.05", "1.0500", "1.049", "1.3", "1.30", "1.29999", "1.1", "1"],
    data=None,
)
@example(
    lo=Decimal(0),
    lo_x=True,
    hi=Decimal(1),
    hi_x=True,
    raw=["0", "-0", "0.000", "0.0001", "1", "0.99", "1.0", "-0.5"],
    data=None,
)
@example(
    lo=None,
    lo_x=False,
    hi=Decimal(0),
    hi_x=False,
    raw=["0", "-0", "-0.0", "0.0", "0.001", "-0.001", "-1e3", "007"],
    data=None,
)
def test_number_regex(
    lo: Decimal | None,
    lo_x: bool,
    hi: Decimal | None,
    hi_x: bool,
    raw: list[str],
    data: st.DataObject | None,
) -> None:
    texts = list(raw)
    if data is not None:
        vals = data.draw(st.lists(near([lo, hi]), max_size=12))
        zeros = data.draw(st.lists(st.integers(0, 3), min_size=len(vals), max_size=len(vals)))
        texts += [spell(v, z, z % 2 == 1) for v, z in zip(vals, zeros, strict=True)]
    check_num(lo, lo_x, hi, hi_x, texts)


def test_unbounded_number_is_full_json_syntax() -> None:
    assert number_regex(None, False, None, False) == JSON_NUMBER
    for t in ["0", "-0", "1.5e10", "1E+2", "-0.0e-0", "123"]:
        assert re.fullmatch(JSON_NUMBER, t)
    for t in ["007", "1.", ".5", "+1", "1e", "--1", "0x1", "1.5e+", ""]:
        assert not re.fullmatch(JSON_NUMBER, t)


@pytest.mark.parametrize(
    ("lo", "lo_x", "hi", "hi_x"),
    [
        (Decimal("1e3"), False, Decimal("1.2E+4"), False),  # exponent-written bounds
        (Decimal("-0.00"), False, Decimal("0.000"), False),
        (Decimal("0.0001"), True, Decimal("0.0002"), True),
        (Decimal("5"), False, Decimal("5"), False),
    ],
)
def test_number_regex_edge_bounds(lo: Decimal, lo_x: bool, hi: Decimal, hi_x: bool) -> None:
    texts = [
        "1000",
        "12000",
        "12000.0",
        "999.999",
        "12000.001",
        "0",
        "-0",
        "0.0",
        "0.00015",
        "0.0001",
        "0.0002",
        "0.00010",
        "5",
        "5.000",
        "5.0001",
        "4.9999",
    ]
    check_num(lo, lo_x, hi, hi_x, texts)


def test_infinite_bound_rejected() -> None:
    with pytest.raises(ValueError):
        number_regex(Decimal("Infinity"), False, None, False)


def test_regexes_are_compact() -> None:
    """Sizes grow with the number of digits of the bounds, not with the width of the range."""
    rx = integer_regex(-(10**30) + 7, 10**30 - 3)
    assert rx is not None and len(rx) < 2000
    rx2 = number_regex(Decimal("-12345.6789"), True, Decimal("98765.4321"), False)
    assert rx2 is not None and len(rx2) < 2000


def test_regexes_compile_to_small_dfas() -> None:
    regex_mod = pytest.importorskip("toolmask.grammar._regex")
    for rx in [
        integer_regex(-(10**12) + 7, 10**15 - 3),
        number_regex(Decimal("-12345.6789"), True, Decimal("98765.4321"), False),
        number_regex(Decimal("0.125"), False, None, False),
    ]:
        assert rx is not None
        dfa = regex_mod.regex_dfa(rx, search=False)
        assert dfa is not None


def test_integer_regex_grid() -> None:
    """Deterministic sweep: every bound pair on a grid, every small integer in several spellings."""
    texts = [spell(Decimal(v), z, z == 1) for v in range(-1100, 1101, 1) for z in (0, 1)]
    texts = [t for i, t in enumerate(texts) if i % 7 == 0 or abs(int(Decimal(t))) < 130]
    bounds: list[int | None] = [None, -1000, -101, -100, -99, -10, -9, -1, 0, 1, 9, 10, 99, 100]
    bounds += [101, 199, 200, 999, 1000]
    for lo in bounds:
        for hi in bounds:
            check_int(lo, hi, texts)


def test_number_regex_grid() -> None:
    """Deterministic sweep over bounds with up to two fraction digits and both exclusivities."""
    vals = sorted(
        {Decimal(n) / 100 for n in range(-1250, 1251, 5)} | {Decimal(n) for n in (-100, 100)}
    )
    texts = [spell(v, z, z == 1) for v in vals for z in (0, 1)] + ["-0", "0.000", "1e1", "007"]
    bounds: list[Decimal | None] = [None] + [
        Decimal(x)
        for x in ("-10", "-1.05", "-1", "-0.5", "0", "0.05", "0.5", "1", "1.25", "9.95", "10")
    ]
    for lo in bounds:
        for hi in bounds:
            for lo_x in (False, True):
                for hi_x in (False, True):
                    check_num(lo, lo_x, hi, hi_x, texts)
