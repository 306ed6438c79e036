"""Numeric ranges as regular expressions over JSON number text.

JSON number text is ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``. The functions here turn
a value range into a regex (common subset of ECMA-262 and Python ``re``, meant for a full match;
the caller anchors) whose language is a set of JSON number texts selected by *value*:

* :func:`integer_regex` -- exact: every exponent-free spelling of every integer in the range
  (``7``, ``7.0``, ``7.000``; ``-0`` and ``-0.0`` are the value 0) and nothing else.
* :func:`number_regex` -- exact over exponent-free spellings: every exponent-free JSON number
  text whose value lies in the interval, and nothing else. Exponent spellings (``1e2``) are left
  out whenever a bound is given. That is stricter than the schema but complete in value terms:
  every finite decimal has an exponent-free spelling, so a decoder constrained by the regex can
  still produce every allowed value. With no bound at all the full JSON number syntax is returned.

An empty range is signalled by ``None`` (there is no portable regex for the empty language).

Construction: the classic digit-range algorithm for the integer part (split the range into runs of
equal length, then by leading digit), negatives by mirroring, and for a fractional bound a
first-digit recursion over the fraction digits that compares them with the bound's digits
(trailing zeros are always allowed). Output size is O(number of digits of the bounds), and the
resulting DFAs have O(digits) states.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TypeAlias

from toolmask._cache import memo

__all__ = ["JSON_NUMBER", "integer_regex", "number_regex"]

JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
"""The full JSON number syntax (RFC 8259), as a full-match regex."""

_ZERO = r"-?0"
_ANY_FRAC = r"(?:\.[0-9]+)?"


# ---------------------------------------------------------------------------------------------
# Integers


def _digits_class(a: int, b: int) -> str:
    if a == b:
        return str(a)
    if a == 0 and b == 9:
        return "[0-9]"
    return f"[{a}-{b}]"


def _any_digits(k: int) -> str:
    if k == 0:
        return ""
    if k == 1:
        return "[0-9]"
    return f"[0-9]{{{k}}}"


def _same_length(lo: str, hi: str) -> str:
    """Regex for the digit strings of length ``len(lo)`` between ``lo`` and ``hi`` inclusive."""
    if lo == hi:
        return lo
    k = len(lo) - 1
    a, b = int(lo[0]), int(hi[0])
    if a == b:
        return lo[0] + _group(_same_length(lo[1:], hi[1:]))
    parts: list[str] = []
    start, end = a, b
    if lo[1:] != "0" * k:
        parts.append(lo[0] + _group(_same_length(lo[1:], "9" * k)))
        start = a + 1
    if hi[1:] != "9" * k:
        end = b - 1
    if start <= end:
        parts.append(_digits_class(start, end) + _any_digits(k))
    if hi[1:] != "9" * k:
        parts.append(hi[0] + _group(_same_length("0" * k, hi[1:])))
    return "|".join(parts)


def _group(rx: str) -> str:
    """Wrap an alternation so that it can be concatenated."""
    return f"(?:{rx})" if "|" in rx and "|" in _top_level(rx) else rx


def _top_level(rx: str) -> str:
    """The characters of ``rx`` outside groups and classes (enough to spot a top-level ``|``)."""
    out: list[str] = []
    depth = 0
    in_class = False
    i = 0
    while i < len(rx):
        ch = rx[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def length_bands(p: int, q: int | None) -> list[tuple[str, str]]:
    """The integers in ``[p, q]`` (``q=None``: up to ``p``'s own length), ``0 <= p <= q``, in
    bands of one digit count: each band's lowest and highest, as digits."""
    lp = len(str(p))
    lq = lp if q is None else len(str(q))
    out: list[tuple[str, str]] = []
    for length in range(lp, lq + 1):
        lo = max(p, 10 ** (length - 1) if length > 1 else 0)
        hi = 10**length - 1 if q is None else min(q, 10**length - 1)
        if lo <= hi:
            out.append((str(lo), str(hi)))
    return out


def _nonneg_int_alts(p: int, q: int | None) -> list[str]:
    """Alternatives spelling the integers in ``[p, q]`` (``q=None``: unbounded), ``0 <= p``,
    canonical digits (no leading zeros, no sign)."""
    if q is not None and p > q:
        return []
    lp = len(str(p))
    alts = [_same_length(lo, hi) for lo, hi in length_bands(p, q)]
    if q is None:
        if lp > 1 and p == 10 ** (lp - 1):  # the whole first length is in: fold it in
            alts.pop()
            alts.append(f"[1-9][0-9]{{{lp - 1},}}")
        elif p <= 1:
            alts = ["0"] if p == 0 else []
            alts.append("[1-9][0-9]*")
        else:
            alts.append(f"[1-9][0-9]{{{lp},}}")
    return alts


def _join(alts: list[str]) -> str:
    return _group(alts[0]) if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def integer_regex(lo: int | None, hi: int | None, *, fraction: bool = True) -> str | None:
    """JSON number texts whose value is an integer in ``[lo, hi]`` (``None``: unbounded).

    Exact: accepts ``-?(0|[1-9][0-9]*)`` spellings of the integers in range, each optionally
    followed by ``.0+`` (``1.0`` is an integer in JSON Schema; ``fraction=False`` leaves that
    out: the spellings a grammar writes), with ``-0``/``-0.0`` read as 0; rejects everything
    else, exponent spellings included. Returns ``None`` for an empty range.
    """
    if lo is not None and hi is not None and lo > hi:
        return None
    alts: list[str] = []
    # negative values: |v| in [max(1, -hi), -lo]
    if lo is None or lo < 0:
        nlo = 1 if hi is None or hi >= 0 else -hi
        nhi = None if lo is None else -lo
        neg = _nonneg_int_alts(nlo, nhi)
        if neg:
            alts.append("-" + _group("|".join(neg)))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        alts.append(_ZERO)
    if hi is None or hi > 0:
        plo = 1 if lo is None or lo <= 0 else lo
        alts.extend(_nonneg_int_alts(plo, hi))
    if not alts:
        return None
    return _join(alts) + (r"(?:\.0+)?" if fraction else "")


# ---------------------------------------------------------------------------------------------
# Decimals

# A bound on the fraction digits. Lower: None (no constraint), _GT0 (the fraction must be > 0),
# or (digits, strict) with digits non-empty and without trailing zeros. Upper: None, _EQ0 (the
# fraction must be 0), or (digits, strict).
_Bound: TypeAlias = "tuple[str, bool] | str | None"
_GT0 = "gt0"
_EQ0 = "eq0"


def _split(x: Decimal) -> tuple[int, str]:
    """``x >= 0`` as (integer part, fraction digits without trailing zeros)."""
    text = format(x, "f")
    if "." in text:
        whole, frac = text.split(".", 1)
    else:
        whole, frac = text, ""
    return int(whole), frac.rstrip("0")


def _lower_state(frac: str, strict: bool) -> _Bound:
    if not frac:
        return _GT0 if strict else None
    return (frac, strict)


def _upper_state(frac: str, strict: bool) -> _Bound | bool:
    """The upper fraction state; ``False`` when nothing can satisfy it (``< 0``)."""
    if not frac:
        return False if strict else _EQ0
    return (frac, strict)


def _frac_bytes(v: tuple[bool, str | None]) -> int:
    return 120 + len(v[1] or "")


@memo("schema.fraction_regexes", limit="max_memo_entries", entry_bytes=_frac_bytes)
def _frac(lower: _Bound, upper: _Bound) -> tuple[bool, str | None]:
    """Digit strings ``s`` (possibly empty) with ``0.s`` within the bounds.

    Returns (the empty string qualifies, regex for the non-empty qualifying strings or None).
    """
    if lower is None and upper is None:
        return True, "[0-9]+"
    if lower == _GT0 and upper is None:
        return False, "0*[1-9][0-9]*"
    if lower is None and upper == _EQ0:
        return True, "0+"
    if lower == _GT0 and upper == _EQ0:
        return False, None
    # 0 satisfies every upper state (a non-empty u has no trailing zeros, so 0 < 0.u) and only
    # the absent lower bound
    empty_ok = lower is None
    # group first digits by residual state
    residuals: list[tuple[_Bound, _Bound] | None] = []
    for c in range(10):
        residuals.append(_step(lower, upper, c))
    alts: list[str] = []
    c = 0
    while c < 10:
        r = residuals[c]
        d = c
        while d + 1 < 10 and residuals[d + 1] == r:
            d += 1
        if r is not None:
            e, sub = _frac(*r)
            cls = _digits_class(c, d)
            if sub is None:
                if e:
                    alts.append(cls)
            elif e and sub == "[0-9]+":
                alts.append(cls + "[0-9]*")
            elif e:
                alts.append(cls + "(?:" + sub + ")?" if _needs_group(sub) else cls + sub + "?")
            else:
                alts.append(cls + _group(sub))
        c = d + 1
    return empty_ok, ("|".join(alts) if alts else None)


def _needs_group(rx: str) -> bool:
    """Whether ``rx`` must be grouped before a ``?`` is applied to it."""
    if len(rx) == 1:
        return False
    return not (rx.startswith("[") and rx.endswith("]") and rx.count("[") == 1)


def _step(lower: _Bound, upper: _Bound, c: int) -> tuple[_Bound, _Bound] | None:
    """The bounds on the rest of the digits after a first digit ``c``; None if impossible."""
    lo: _Bound
    up: _Bound
    if lower is None:
        lo = None
    elif lower == _GT0:
        lo = None if c > 0 else _GT0
    else:
        assert isinstance(lower, tuple)
        digits, strict = lower
        t = int(digits[0])
        if c < t:
            return None
        lo = None if c > t else _lower_state(digits[1:], strict)
    if upper is None:
        up = None
    elif upper == _EQ0:
        if c > 0:
            return None
        up = _EQ0
    else:
        assert isinstance(upper, tuple)
        digits, strict = upper
        u = int(digits[0])
        if c > u:
            return None
        if c < u:
            up = None
        else:
            nxt = _upper_state(digits[1:], strict)
            if nxt is False:
                return None
            assert not isinstance(nxt, bool)
            up = nxt
    return lo, up


def _frac_regex(lower: _Bound, upper: _Bound | bool) -> str | None:
    """The optional ``.digits`` part for the given fraction bounds; None if nothing qualifies."""
    if upper is False:
        return None
    assert not isinstance(upper, bool)
    e, sub = _frac(lower, upper)
    if sub is None:
        return "" if e else None
    body = r"\." + _group(sub)
    return f"(?:{body})?" if e else body


def _positive_alts(a: Decimal, a_strict: bool, b: Decimal | None, b_strict: bool) -> list[str]:
    """Spellings (no sign, no exponent) of values ``x > 0`` with ``a <(=) x <(=) b``, ``a >= 0``.

    The caller passes ``a = 0, a_strict = True`` for "positive" so that 0 itself never appears.
    """
    if b is not None and (a > b or (a == b and (a_strict or b_strict))):
        return []
    ai, af = _split(a)
    lower = _lower_state(af, a_strict)
    alts: list[str] = []
    bi, upper = 0, None
    if b is not None:
        bi, bf = _split(b)
        upper = _upper_state(bf, b_strict)
        if ai == bi:
            fr = _frac_regex(lower, upper)
            return [] if fr is None else [str(ai) + fr]
    fr = _frac_regex(lower, None)
    if fr is not None:
        alts.append(str(ai) + fr)
    mid = _nonneg_int_alts(ai + 1, None if b is None else bi - 1)
    if mid:
        alts.append(_group("|".join(mid)) + _ANY_FRAC)
    if b is not None:
        fr = _frac_regex(None, upper)
        if fr is not None:
            alts.append(str(bi) + fr)
    return alts


def number_regex(
    lo: Decimal | None, lo_exclusive: bool, hi: Decimal | None, hi_exclusive: bool
) -> str | None:
    """JSON number texts whose value lies between ``lo`` and ``hi`` (``None``: unbounded).

    With at least one bound: exact over exponent-free texts -- every
    ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` text whose value is in the interval, any number of
    trailing fraction zeros, ``-0``/``-0.0`` read as 0 -- and no exponent spelling (a stricter,
    value-complete choice: each finite decimal has an exponent-free spelling). With no bound:
    the full JSON number syntax, exponents included. ``None`` when the interval is empty.
    """
    for x in (lo, hi):
        if x is not None and not x.is_finite():
            raise ValueError(f"bound must be finite, got {x}")
    if lo is None and hi is None:
        return JSON_NUMBER
    if (
        lo is not None
        and hi is not None
        and (lo > hi or (lo == hi and (lo_exclusive or hi_exclusive)))
    ):
        return None
    alts: list[str] = []
    zero = Decimal(0)
    # negative values: |v| in (-hi, -lo) intersected with (0, inf)
    if lo is None or lo < 0:
        if hi is None or hi >= 0:
            na, na_strict = zero, True
        else:
            na, na_strict = -hi, hi_exclusive
        nb = None if lo is None else -lo
        neg = _positive_alts(na, na_strict, nb, lo_exclusive)
        if neg:
            alts.append("-" + _group("|".join(neg)))
    lo_ok = lo is None or lo < 0 or (lo == 0 and not lo_exclusive)
    hi_ok = hi is None or hi > 0 or (hi == 0 and not hi_exclusive)
    if lo_ok and hi_ok:
        alts.append(_ZERO + r"(?:\.0+)?")
    if hi is None or hi > 0:
        if lo is None or lo <= 0:
            pa, pa_strict = zero, True
        else:
            pa, pa_strict = lo, lo_exclusive
        alts.extend(_positive_alts(pa, pa_strict, hi, hi_exclusive))
    if not alts:
        return None
    return _join(alts)
