"""``anchored_chain`` reads the common chain patterns (``^[A-Z]{3}$``: printable-ASCII classes,
characters and set escapes, each optionally quantified, between ``^`` and ``$``) without the
regex parser (``_regex._simple_chain``). The chain must be the parser's, and every pattern it
does not read (groups, alternatives, other escapes, malformed quantifiers or classes, non-ASCII,
a bound near the NFA cap) must be left to the parser, which reads it or raises."""

from __future__ import annotations

import random

import pytest

from toolmask.errors import GrammarSyntaxError, LimitError
from toolmask.grammar._charset import CharSet
from toolmask.grammar._regex import _parsed_chain, _simple_chain, anchored_chain
from toolmask.limits import DEFAULT_LIMITS, Limits

Chain = list[tuple[CharSet, int, int | None]]


def _cap(limits: Limits) -> int:
    return max(8 * limits.max_dfa_states, 1_000)


ATOMS = [*"abcXYZ09 _-/@:,#%&=~!'\"<>;`}]", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "."]
ATOMS += ["\\.", "\\-", "\\+", "\\\\", "\\/", "\\$", "\\^", "\\n", "\\t", "\\u0041", "\\b"]
ATOMS += ["\\x41", "\\_", "\\a", "(", ")", "|", "^", "$", "é", "\\[", "\\]", "\\{", "{", "["]
MEMBERS = [*"abcxyzAZ09_-./ :@^]$*+?(){}|", "\\d", "\\w", "\\s", "\\-", "\\.", "\\]", "\\\\"]
MEMBERS += ["\\^", "\\b", "\\n", "a-z", "0-9", "A-Z", "z-a", "\\d-z", "a-\\d", "-", "é"]
QUANTIFIERS = ["", "", "", "?", "*", "+", "{2}", "{0}", "{1}", "{2,}", "{2,5}", "{5,2}", "{,3}"]
QUANTIFIERS += ["{a}", "??", "+?", "*+", "{3}?", "{1,1}", "{100}", "{4000}", "{2,x}", "{"]


def _pattern(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(0, 5)):
        if rng.random() < 0.35:
            body = "".join(rng.choice(MEMBERS) for _ in range(rng.randint(0, 4)))
            atom = "[" + ("^" if rng.random() < 0.1 else "") + body
            atom += "]" if rng.random() < 0.95 else ""
        else:
            atom = rng.choice(ATOMS)
        items.append(atom + rng.choice(QUANTIFIERS))
    pattern = "".join(items)
    if rng.random() < 0.9:
        pattern = "^" + pattern
    if rng.random() < 0.9:
        pattern += "$"
    return pattern


@pytest.mark.parametrize("limits", [DEFAULT_LIMITS, Limits(max_dfa_states=100)])
def test_simple_chains_are_the_parsers(limits: Limits) -> None:
    rng = random.Random(21)
    read = 0
    for _ in range(12_000):
        pattern = _pattern(rng)
        quick = _simple_chain(pattern, _cap(limits))
        if quick is None:
            continue
        assert quick == _parsed_chain(pattern, limits), pattern
        read += 1
    assert read > 2_000  # the generator reaches the subset


READ = [
    "^[A-Z]{3}$",
    "^[a-z]{2}$",
    "^[A-Za-z0-9_./-]+$",
    "^\\+?[0-9 ]{6,20}$",
    "^\\d{4}-\\d{2}-\\d{2}$",
    "^[\\w.-]+@[\\w-]+$",
    "^$",
    "^a??b*?c{2,}?$",
]
LEFT = [
    "^(ab)+$",
    "^a|b$",
    "^[^a]$",
    "^a\\n$",
    "^é$",
    "^a{2,1}$",
    "^[z-a]$",
    "^[\\d-z]$",
    "^a+*$",
    "^ab",
    "a$",
    "^a$b$",
    "^[ab$",
    "^a{90000}$",  # past half the NFA cap: the parser checks the bound
]


@pytest.mark.parametrize("pattern", READ)
def test_common_patterns_are_read_without_the_parser(pattern: str) -> None:
    quick = _simple_chain(pattern, _cap(DEFAULT_LIMITS))
    assert quick is not None
    assert quick == _parsed_chain(pattern, DEFAULT_LIMITS) == anchored_chain(pattern)


@pytest.mark.parametrize("pattern", LEFT)
def test_other_patterns_are_left_to_the_parser(pattern: str) -> None:
    assert _simple_chain(pattern, _cap(DEFAULT_LIMITS)) is None
    try:
        want = _parsed_chain(pattern, DEFAULT_LIMITS)
    except (GrammarSyntaxError, LimitError) as e:
        with pytest.raises(type(e)):
            anchored_chain(pattern)
    else:
        assert anchored_chain(pattern) == want
