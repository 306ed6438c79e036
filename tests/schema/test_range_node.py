"""A number range's grammar node read straight from its generated regex (``_langs._range_node``)
against the parse route it shortcuts (``parse_full_match`` + ``regex_ast_node``): the same IR
for every range, and the same refusal past the NFA bound. An integer range's node built from
its digits (``_langs._int_range_node``, what ``range_lang`` uses) against ``_range_node`` of its
regex: the same IR, and None for the same ranges, bounds and nesting limits."""

from __future__ import annotations

import dataclasses
import random
from decimal import Decimal

import pytest

from toolmask.errors import LimitError
from toolmask.grammar._ir import Node
from toolmask.grammar._regex import RCat, parse_full_match, regex_ast_node
from toolmask.limits import DEFAULT_LIMITS
from toolmask.schema._langs import _FRACTION, _int_range_node, _range_node, range_lang
from toolmask.schema._numbers import integer_regex, number_regex

CAP = max(8 * DEFAULT_LIMITS.max_dfa_states, 1_000)
NEST = DEFAULT_LIMITS.max_regex_nesting


def _parsed(rx: str, integer: bool) -> Node | None:
    ast = parse_full_match(rx)
    if integer:
        assert rx.endswith(_FRACTION) and isinstance(ast, RCat)
        rest = ast.items[:-1]
        ast = rest[0] if len(rest) == 1 else RCat(rest)
    return regex_ast_node(ast)


def _bounds(rng: random.Random) -> list[int | None]:
    picks: list[int | None] = [None, 0, 1, -1, 9, 10, 99, 100, 1000, -1000, 12345, 10**12]
    return picks + [rng.randint(-(10**6), 10**6) for _ in range(30)]


def test_integer_ranges_match_the_parse_route() -> None:
    rng = random.Random(11)
    bounds = _bounds(rng)
    n = 0
    for lo in bounds:
        for hi in bounds:
            rx = integer_regex(lo, hi)
            if rx is None:
                continue
            got = _range_node(rx, True, CAP, NEST)
            assert got is not None, rx  # the generator's syntax is read in full
            assert got == _parsed(rx, True), rx
            n += 1
    assert n > 500


def test_decimal_ranges_match_the_parse_route() -> None:
    rng = random.Random(12)
    values: list[Decimal | None] = [None, Decimal(0), Decimal("0.5"), Decimal(-90), Decimal(90)]
    values += [Decimal(rng.randint(-(10**5), 10**5)).scaleb(-rng.randint(0, 4)) for _ in range(25)]
    read = 0
    for lo in values:
        for hi in values:
            if lo is None and hi is None:
                continue
            for lo_excl in (False, True):
                for hi_excl in (False, True):
                    rx = number_regex(lo, lo_excl, hi, hi_excl)
                    if rx is None:
                        continue
                    got = _range_node(rx, False, CAP, NEST)
                    if got is not None:  # None: a syntax it leaves to the parser
                        assert got == _parsed(rx, False), rx
                        read += 1
    assert read > 1000


def test_past_the_nfa_bound_it_leaves_the_refusal_to_the_parser() -> None:
    rx = integer_regex(0, 10**40)
    assert rx is not None
    assert _range_node(rx, True, 40, NEST) is None
    small = dataclasses.replace(DEFAULT_LIMITS, max_dfa_states=5)
    with pytest.raises(LimitError):
        range_lang(
            integer=True,
            lo=Decimal(0),
            lo_excl=False,
            hi=Decimal(10**40),
            hi_excl=False,
            limits=small,
        )


def test_groups_nested_past_the_limit_are_left_to_the_parser() -> None:
    rx = integer_regex(10**11 + 1, 10**12 - 2)  # one group per digit
    assert rx is not None and rx.count("(?:") > 6
    assert _range_node(rx, True, CAP, 4) is None
    assert _range_node(rx, True, CAP, NEST) is not None
    shallow = dataclasses.replace(DEFAULT_LIMITS, max_regex_nesting=4)
    with pytest.raises(LimitError):
        range_lang(
            integer=True,
            lo=Decimal(10**11 + 1),
            lo_excl=False,
            hi=Decimal(10**12 - 2),
            hi_excl=False,
            limits=shallow,
        )


def _digit_bounds(rng: random.Random) -> list[tuple[int | None, int | None]]:
    """Ranges over every digit count up to 19: powers of ten and their neighbours (where the
    digit-range construction changes shape), small ranges, one-sided ones, random ones."""
    edges: list[int] = []
    for k in range(20):
        edges += [10**k, 10**k - 1, 10**k + 1, 2 * 10**k, 10**k - 10 ** (k // 2)]
    out: list[tuple[int | None, int | None]] = [(None, None)]
    for x in edges:
        for y in (x, x + 1, 10 * x - 1, 10 * x + 7):
            out += [(x, y), (-x, y), (-y, -x)]
        out += [(None, x), (None, -x), (x, None), (-x, None)]
    out += [(lo, hi) for lo in range(-25, 26) for hi in range(-25, 26, 3)]
    for _ in range(400):
        a = rng.randint(-(10 ** rng.randint(0, 19)), 10 ** rng.randint(0, 19))
        b = rng.randint(-(10 ** rng.randint(0, 19)), 10 ** rng.randint(0, 19))
        out += [(min(a, b), max(a, b)), (a, None), (None, b)]
    return out


LIMIT_PAIRS = [(CAP, NEST), (40_000, 32), (1_000, 6), (60, 64), (30, 2)]


@pytest.mark.parametrize(("cap", "nest"), LIMIT_PAIRS)
def test_integer_nodes_from_digits_match_the_regex_route(cap: int, nest: int) -> None:
    rng = random.Random(13)
    read = 0
    for lo, hi in _digit_bounds(rng):
        rx = integer_regex(lo, hi)
        want = None if rx is None else _range_node(rx, True, cap, nest)
        got = _int_range_node(lo, hi, cap, nest)
        assert got == want and repr(got) == repr(want), (lo, hi)
        read += want is not None
    assert read > 1000 or cap < 1_000
