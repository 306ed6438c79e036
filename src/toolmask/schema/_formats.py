"""JSON Schema ``format`` values: one regex and one exact checker per supported format.

:data:`FORMATS` is the one place that says which formats toolmask supports. Each
:class:`FormatSpec` carries

* ``regex`` -- a pattern over the *decoded* string value (code points), in the common subset of
  ECMA-262 (``u`` flag) and Python :mod:`re`: literals, ``\\uHHHH`` escapes, escaped
  metacharacters, character classes, ``(?:...)``, ``|`` and greedy quantifiers; no ``.``, ``^``,
  ``$``, lookarounds or backreferences. It is meant for a full match (the caller anchors).
  Code points above U+FFFF appear as literal characters.
* ``relation`` -- how the regex language relates to the format: ``"exact"`` (same language),
  ``"subset"`` (the regex accepts only valid values but misses some; a grammar built from it never
  lets an invalid value through) or ``"superset"`` (the regex also accepts some invalid values;
  the post-decode validator must finish the job with :meth:`FormatSpec.check`).
* :meth:`FormatSpec.check` -- an exact Python checker, used by the post-decode validator and by
  :func:`format_checker`.

What "valid" means per format (the JSON-Schema-Test-Suite's draft 2020-12 optional format tests
are the acceptance test, see ``tests/schema/test_formats.py``):

=====================  ========  =============================================================
format                 relation  definition
=====================  ========  =============================================================
date                   exact     RFC 3339 ``full-date``, Gregorian leap years (years 0000-9999)
time                   subset    RFC 3339 ``full-time``; ``T``/``Z`` case-insensitive. A leap
                                 second ``:60`` is valid iff the time in UTC is 23:59:60; the
                                 regex allows it only as ``23:59:60`` with offset ``Z``/``±00:00``
date-time              subset    RFC 3339 ``date-time`` (as date + ``T`` + time)
duration               exact     RFC 3339 Appendix A ``duration`` (ISO 8601 subset)
email                  exact     RFC 5321 ``Mailbox``: dot-string or quoted-string local part,
                                 ``@``, a domain of LDH labels (1-63 chars) or an ``[IPv4]`` /
                                 ``[IPv6:...]`` address literal. General address literals and
                                 the 64/255-octet length limits are not part of the definition
idn-email              exact     as email with RFC 6531's extension: any non-ASCII code point is
                                 allowed in atoms, quoted strings and domain labels
hostname               superset  RFC 1123 names of LDH labels (1-63 chars, no edge hyphen), no
                                 trailing dot, at most 253 chars; a label with ``--`` in
                                 positions 3-4 must be a valid IDNA2008 A-label (``xn--``).
                                 The regex enforces all but the 253 limit and A-label validity
idn-hostname           superset  IDNA2008 (RFC 5890-5893) labels separated by ``.`` or U+3002,
                                 U+FF0E, U+FF61; A-label form at most 63 octets per label and
                                 253 in all. The regex only checks the label/separator shape
ipv4                   exact     dotted decimal, four octets 0-255 without leading zeros
ipv6                   exact     RFC 4291 text forms (RFC 3986 ``IPv6address``), embedded IPv4
                                 tail allowed; no zone id, no brackets, no prefix length
uuid                   exact     RFC 4122 8-4-4-4-12 hex digits, any case, any version/variant
uri                    exact     RFC 3986 ``URI`` (scheme required; fragment allowed)
uri-reference          exact     RFC 3986 ``URI-reference``
iri                    exact     RFC 3987 ``IRI``
iri-reference          exact     RFC 3987 ``IRI-reference``
uri-template           exact     RFC 6570 ``URI-Template`` (level 4) with ``'`` allowed in
                                 literals, as the test suite expects
json-pointer           exact     RFC 6901
relative-json-pointer  exact     draft-bhutton-relative-json-pointer-00
regex                  superset  ECMA-262 pattern syntax with the ``u`` flag; the regex accepts
                                 every string, :func:`is_ecma_regex` decides
=====================  ========  =============================================================

IDNA2008 checks use Python's :mod:`unicodedata` (its Unicode version) to derive the RFC 5892
code point properties; joining types (for the ZERO WIDTH NON-JOINER rule) are tabulated for the
Arabic, Syriac, N'Ko and Mandaic blocks only, so a ZWNJ in another cursive script is accepted
only after a virama (stricter than the RFC, never looser). Script membership for the CONTEXTO
rules uses block ranges.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import jsonschema

__all__ = ["FORMATS", "FormatSpec", "format_checker", "is_ecma_regex"]

Relation = Literal["exact", "subset", "superset"]


@dataclass(frozen=True, slots=True)
class FormatSpec:
    """How one ``format`` is enforced: a language (see ``relation``) plus an exact checker.

    ``applies_to`` is the JSON type the format constrains; values of other types pass. String
    formats have a ``regex`` over the decoded value (``None``: every string); number formats
    have ``integers`` (the integral values in an inclusive range), or ``None`` (every number).
    ``definition`` cites where the meaning is defined; ``alias_of`` names the format this one
    is another spelling of.
    """

    regex: str | None
    relation: Relation
    checker: Callable[[Any], bool]
    applies_to: Literal["string", "number"] = "string"
    integers: tuple[int, int] | None = None
    definition: str = ""
    alias_of: str | None = None

    @property
    def exact(self) -> bool:
        """Whether the language accepts exactly the valid values."""
        return self.relation == "exact"

    def check(self, value: Any) -> bool:
        """Exact validity of a value of the type the format applies to."""
        return bool(self.checker(value))


# ---------------------------------------------------------------------------------------------
# Helpers for building character classes


def _cp(c: int) -> str:
    if c < 0x80:
        ch = chr(c)
        if ch.isalnum():
            return ch
        if ch in "!\"#%&',:;<=>@_`~ ":
            return ch
        if c < 0x20 or c == 0x7F:
            return f"\\u{c:04x}"
        return "\\" + ch
    if c <= 0xFFFF:
        return f"\\u{c:04x}"
    return chr(c)


def _cls(ranges: Iterable[tuple[int, int]]) -> str:
    """A character class for the given inclusive code point ranges (merged, sorted)."""
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    parts: list[str] = []
    for a, b in merged:
        if a == b:
            parts.append(_cp(a))
        elif b == a + 1:
            parts.append(_cp(a) + _cp(b))
        else:
            parts.append(_cp(a) + "-" + _cp(b))
    return "[" + "".join(parts) + "]"


def _chars(s: str) -> list[tuple[int, int]]:
    return [(ord(c), ord(c)) for c in s]


_ALPHA = [(0x41, 0x5A), (0x61, 0x7A)]
_DIGIT = [(0x30, 0x39)]
_ALNUM = _ALPHA + _DIGIT
_HEX = [*_DIGIT, (0x41, 0x46), (0x61, 0x66)]
_UCSCHAR = [
    (0xA0, 0xD7FF),
    (0xF900, 0xFDCF),
    (0xFDF0, 0xFFEF),
    *[(p << 16, (p << 16) + 0xFFFD) for p in range(1, 14)],
    (0xE1000, 0xEFFFD),
]
_IPRIVATE = [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]
_NON_ASCII = [(0x80, 0xD7FF), (0xE000, 0x10FFFF)]

_H = _cls(_HEX)


def _opt(rx: str) -> str:
    return f"(?:{rx})?"


# ---------------------------------------------------------------------------------------------
# Dates and times (RFC 3339)

_YEAR = "[0-9]{4}"
_DIV4 = "(?:[02468][048]|[13579][26])"  # two digits divisible by 4, 00 included
_LEAP_YEAR = f"(?:[0-9]{{2}}(?:0[48]|[2468][048]|[13579][26])|{_DIV4}00)"
_DATE = (
    f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    f"|{_LEAP_YEAR}-02-29)"
)
_FRAC = r"(?:\.[0-9]+)?"
_OFFSET = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_TIME = (
    f"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]{_FRAC}{_OFFSET}"
    f"|23:59:60{_FRAC}(?:[Zz]|[+-]00:00))"
)
_DATE_TIME = f"{_DATE}[Tt]{_TIME}"

_TIME_PARSE = re.compile(
    r"([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(?:\.[0-9]+)?"
    r"(?:[Zz]|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))",
    re.ASCII,
)
_DATE_RE = re.compile(_DATE)


def _check_date(s: str) -> bool:
    return _DATE_RE.fullmatch(s) is not None


def _check_time(s: str) -> bool:
    m = _TIME_PARSE.fullmatch(s)
    if m is None:
        return False
    if m.group(3) != "60":
        return True
    minutes = int(m.group(1)) * 60 + int(m.group(2))
    if m.group(4) is not None:
        off = int(m.group(5)) * 60 + int(m.group(6))
        minutes -= off if m.group(4) == "+" else -off
    return minutes % 1440 == 23 * 60 + 59


def _check_date_time(s: str) -> bool:
    if len(s) < 11 or s[10] not in "Tt":
        return False
    return _check_date(s[:10]) and _check_time(s[11:])


# ISO 8601 durations, RFC 3339 Appendix A
_N = "[0-9]+"
_DUR_TIME = f"T(?:{_N}H(?:{_N}M(?:{_N}S)?)?|{_N}M(?:{_N}S)?|{_N}S)"
_DURATION = (
    f"P(?:(?:{_N}D|{_N}M(?:{_N}D)?|{_N}Y(?:{_N}M(?:{_N}D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME}|{_N}W)"
)

# ---------------------------------------------------------------------------------------------
# IP addresses

_DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"


def _ipv6() -> str:
    h16 = f"{_H}{{1,4}}"
    ls32 = f"(?:{h16}:{h16}|{_IPV4})"
    alts = [f"(?:{h16}:){{6}}{ls32}", f"::(?:{h16}:){{5}}{ls32}"]
    tails = [f"(?:{h16}:){{{k}}}{ls32}" for k in (4, 3, 2, 1)] + [ls32, h16, ""]
    for i, tail in enumerate(tails):
        # [ *i( h16 ":" ) h16 ] "::" tail
        head = f"(?:{h16})" if i == 0 else f"(?:(?:{h16}:){{0,{i}}}{h16})"
        alts.append(f"{head}?::{tail}")
    return "(?:" + "|".join(alts) + ")"


_IPV6 = _ipv6()
_UUID = f"{_H}{{8}}-{_H}{{4}}-{_H}{{4}}-{_H}{{4}}-{_H}{{12}}"

# ---------------------------------------------------------------------------------------------
# Host names

_LDH = _cls([*_ALNUM, (0x2D, 0x2D)])
_AN = _cls(_ALNUM)
# A label: 1-63 letters/digits/hyphens, no hyphen at either end, and (RFC 5891 4.2.3.1) "--" in
# positions 3-4 only after "xn" (an A-label; its Punycode validity is left to check()).
_LABEL_TAIL = f"{_LDH}{{0,58}}{_AN}"
_LABEL = (
    f"(?:{_AN}(?:{_LDH}?{_AN})?"
    f"|{_AN}{_LDH}(?:{_LDH}{_AN}(?:{_LABEL_TAIL})?|{_AN}-{_LABEL_TAIL})"
    f"|[Xx][Nn]--{_LABEL_TAIL})"
)
_HOSTNAME = rf"{_LABEL}(?:\.{_LABEL})*"
_PLAIN_LABEL = f"{_AN}(?:{_LDH}{{0,61}}{_AN})?"  # RFC 1123 label, for e-mail domains

_IDN_SEPS = [(0x2E, 0x2E), (0x3002, 0x3002), (0xFF0E, 0xFF0E), (0xFF61, 0xFF61)]
_IDN_LABEL_CHARS = _cls(
    [
        *_ALNUM,
        (0x2D, 0x2D),
        (0x80, 0x3001),
        (0x3003, 0xD7FF),
        (0xE000, 0xFF0D),
        (0xFF0F, 0xFF60),
        (0xFF62, 0x10FFFF),
    ]
)
_IDN_HOSTNAME = f"{_IDN_LABEL_CHARS}+(?:{_cls(_IDN_SEPS)}{_IDN_LABEL_CHARS}+)*"

# ---------------------------------------------------------------------------------------------
# E-mail (RFC 5321 Mailbox; RFC 6531 for idn-email)

_ATEXT = [*_ALNUM, *_chars("!#$%&'*+-/=?^_`{|}~")]
_QTEXT = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)]
_ADDR_LITERAL = rf"\[(?:{_IPV4}|[Ii][Pp][Vv]6:{_IPV6})\]"


def _email(non_ascii: bool) -> str:
    extra = _NON_ASCII if non_ascii else []
    atom = _cls(_ATEXT + extra) + "+"
    qtext = _cls(_QTEXT + extra)
    quoted = f'"(?:{qtext}|\\\\[ -~])*"'
    local = rf"(?:{atom}(?:\.{atom})*|{quoted})"
    if non_ascii:
        lchar = _cls(_ALNUM + extra)
        ldh = _cls([*_ALNUM, (0x2D, 0x2D), *extra])
        label = f"{lchar}(?:{ldh}*{lchar})?"
    else:
        label = _PLAIN_LABEL
    return rf"{local}@(?:{label}(?:\.{label})*|{_ADDR_LITERAL})"


_EMAIL = _email(False)
_IDN_EMAIL = _email(True)

# ---------------------------------------------------------------------------------------------
# URIs and IRIs (RFC 3986, RFC 3987)

_UNRESERVED = [*_ALNUM, *_chars("-._~")]
_SUB_DELIMS = _chars("!$&'()*+,;=")
_PCT = f"%{_H}{{2}}"


def _uri_regexes(iri: bool) -> tuple[str, str]:
    """(absolute URI/IRI, URI/IRI reference)."""
    unres = _UNRESERVED + (_UCSCHAR if iri else [])
    private = _IPRIVATE if iri else []

    def chars(*extra: list[tuple[int, int]]) -> str:
        rs = list(unres)
        for e in extra:
            rs.extend(e)
        return f"(?:{_cls(rs)}|{_PCT})"

    pchar = chars(_SUB_DELIMS, _chars(":@"))
    seg = f"{pchar}*"
    seg_nz = f"{pchar}+"
    seg_nz_nc = chars(_SUB_DELIMS, _chars("@")) + "+"
    path_abempty = f"(?:/{seg})*"
    path_absolute = f"/(?:{seg_nz}(?:/{seg})*)?"
    path_rootless = f"{seg_nz}(?:/{seg})*"
    path_noscheme = f"{seg_nz_nc}(?:/{seg})*"
    userinfo = chars(_SUB_DELIMS, _chars(":")) + "*"
    ipfuture = rf"[Vv]{_H}+\.{_cls(_UNRESERVED + _SUB_DELIMS + _chars(':'))}+"
    host = rf"(?:\[(?:{_IPV6}|{ipfuture})\]|{chars(_SUB_DELIMS)}*)"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    query = f"(?:{chars(_SUB_DELIMS, _chars(':@/?'), private)})*"
    fragment = f"(?:{chars(_SUB_DELIMS, _chars(':@/?'))})*"
    scheme = f"[A-Za-z]{_cls([*_ALNUM, *_chars('+-.')])}*"
    tail = rf"(?:\?{query})?(?:#{fragment})?"
    hier = f"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless})?"
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme})?"
    absolute = f"{scheme}:{hier}{tail}"
    return absolute, f"(?:{absolute}|{relative}{tail})"


_URI, _URI_REFERENCE = _uri_regexes(False)
_IRI, _IRI_REFERENCE = _uri_regexes(True)


def _uri_template() -> str:
    literal_chars = [
        (0x21, 0x21),
        (0x23, 0x24),
        (0x26, 0x3B),
        (0x3D, 0x3D),
        (0x3F, 0x5B),
        (0x5D, 0x5D),
        (0x5F, 0x5F),
        (0x61, 0x7A),
        (0x7E, 0x7E),
        *_UCSCHAR,
        *_IPRIVATE,
    ]  # RFC 6570 literals, plus "'" (0x27) which the test suite accepts
    literals = f"(?:{_cls(literal_chars)}|{_PCT})"
    varchar = f"(?:{_cls([*_ALNUM, (0x5F, 0x5F)])}|{_PCT})"
    varname = rf"{varchar}(?:\.?{varchar})*"
    varspec = rf"{varname}(?::[1-9][0-9]{{0,3}}|\*)?"
    operator = _cls(_chars("+#./;?&=,!@|"))
    expression = rf"\{{{operator}?{varspec}(?:,{varspec})*\}}"
    return f"(?:{literals}|{expression})*"


_URI_TEMPLATE = _uri_template()

# ---------------------------------------------------------------------------------------------
# JSON pointers

_JSON_POINTER = "(?:/(?:[^/~]|~[01])*)*"
_RELATIVE_JSON_POINTER = f"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})"
_ANY = _cls([(0, 0x10FFFF)]) + "*"


# ---------------------------------------------------------------------------------------------
# IDNA2008 (RFC 5890-5893) for hostname / idn-hostname

_EXC_PVALID = {0x00DF, 0x03C2, 0x06FD, 0x06FE, 0x0F0B, 0x3007}
_EXC_CONTEXTO = {
    0x00B7,
    0x0375,
    0x05F3,
    0x05F4,
    0x30FB,
    *range(0x0660, 0x066A),
    *range(0x06F0, 0x06FA),
}
_EXC_DISALLOWED = {0x0640, 0x07FA, 0x302E, 0x302F, *range(0x3031, 0x3036), 0x303B}
_DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]
_IGNORABLE_BLOCKS = [(0x20D0, 0x20FF), (0x1D100, 0x1D1FF), (0x1D200, 0x1D24F)]
_OLD_HANGUL_JAMO = [(0x1100, 0x11FF), (0xA960, 0xA97F), (0xD7B0, 0xD7FF)]
_LETTER_DIGITS = {"Ll", "Lu", "Lo", "Nd", "Lm", "Mn", "Mc"}

_GREEK = [
    (0x0370, 0x0373),
    (0x0375, 0x0377),
    (0x037A, 0x037D),
    (0x037F, 0x037F),
    (0x0384, 0x0384),
    (0x0386, 0x0386),
    (0x0388, 0x03E1),
    (0x03F0, 0x03FF),
    (0x1D26, 0x1D2A),
    (0x1D5D, 0x1D61),
    (0x1D66, 0x1D6A),
    (0x1DBF, 0x1DBF),
    (0x1F00, 0x1FFE),
    (0x2126, 0x2126),
    (0xAB65, 0xAB65),
    (0x10140, 0x101A0),
    (0x1D200, 0x1D245),
]
_HEBREW = [(0x0591, 0x05F4), (0xFB1D, 0xFB4F)]
_HIRAGANA_KATAKANA_HAN = [
    (0x2E80, 0x2FDF),
    (0x3005, 0x3005),
    (0x3007, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303B),
    (0x3041, 0x309F),
    (0x30A0, 0x30FA),
    (0x30FC, 0x30FF),
    (0x31F0, 0x31FF),
    (0x32D0, 0x32FE),
    (0x3300, 0x3357),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF6F),
    (0xFF71, 0xFF9D),
    (0x1AFF0, 0x1B16F),
    (0x20000, 0x3134F),
]

# Joining types (Unicode ArabicShaping.txt) for the Arabic, Syriac, Arabic Supplement, N'Ko and
# Mandaic blocks: dual-joining (D) and right-joining (R) letters.
_JT_D = [
    (0x0620, 0x0620),
    (0x0626, 0x0626),
    (0x0628, 0x0628),
    (0x062A, 0x062E),
    (0x0633, 0x063F),
    (0x0641, 0x0647),
    (0x0649, 0x064A),
    (0x066E, 0x066F),
    (0x0678, 0x0687),
    (0x069A, 0x06BF),
    (0x06C1, 0x06C2),
    (0x06CC, 0x06CC),
    (0x06CE, 0x06CE),
    (0x06D0, 0x06D1),
    (0x06FA, 0x06FC),
    (0x06FF, 0x06FF),
    (0x0712, 0x0714),
    (0x071A, 0x071D),
    (0x071F, 0x0727),
    (0x0729, 0x0729),
    (0x072B, 0x072B),
    (0x072D, 0x072E),
    (0x074E, 0x0758),
    (0x075C, 0x076A),
    (0x076D, 0x0770),
    (0x0772, 0x0772),
    (0x0775, 0x0777),
    (0x077A, 0x077F),
    (0x07CA, 0x07EA),
    (0x0841, 0x0845),
    (0x0848, 0x0848),
    (0x084A, 0x0853),
    (0x0855, 0x0855),
]
_JT_R = [
    (0x0622, 0x0625),
    (0x0627, 0x0627),
    (0x0629, 0x0629),
    (0x062F, 0x0632),
    (0x0648, 0x0648),
    (0x0671, 0x0673),
    (0x0675, 0x0677),
    (0x0688, 0x0699),
    (0x06C0, 0x06C0),
    (0x06C3, 0x06CB),
    (0x06CD, 0x06CD),
    (0x06CF, 0x06CF),
    (0x06D2, 0x06D3),
    (0x06D5, 0x06D5),
    (0x06EE, 0x06EF),
    (0x0710, 0x0710),
    (0x0715, 0x0719),
    (0x071E, 0x071E),
    (0x0728, 0x0728),
    (0x072A, 0x072A),
    (0x072C, 0x072C),
    (0x072F, 0x072F),
    (0x074D, 0x074D),
    (0x0759, 0x075B),
    (0x076B, 0x076C),
    (0x0771, 0x0771),
    (0x0773, 0x0774),
    (0x0778, 0x0779),
    (0x0840, 0x0840),
    (0x0846, 0x0847),
    (0x0849, 0x0849),
    (0x0854, 0x0854),
]
_JT_U_LISTED = {*range(0x0600, 0x0606), 0x0608, 0x060B, 0x0621, 0x0674, 0x06DD, 0x0640, 0x07FA}


def _in(c: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= c <= b for a, b in ranges)


def _joining_type(c: int) -> str:
    if _in(c, _JT_D):
        return "D"
    if _in(c, _JT_R):
        return "R"
    listed = c in _JT_U_LISTED or c in (0x200C, 0x200D)
    if not listed and unicodedata.category(chr(c)) in ("Mn", "Me", "Cf"):
        return "T"
    return "U"


def _idna_property(c: int) -> str:
    """RFC 5892 derived property: PVALID, CONTEXTJ, CONTEXTO, DISALLOWED or UNASSIGNED."""
    if c in _EXC_PVALID:
        return "PVALID"
    if c in _EXC_CONTEXTO:
        return "CONTEXTO"
    if c in _EXC_DISALLOWED:
        return "DISALLOWED"
    ch = chr(c)
    cat = unicodedata.category(ch)
    noncharacter = 0xFDD0 <= c <= 0xFDEF or (c & 0xFFFE) == 0xFFFE
    if cat == "Cn" and not noncharacter:
        return "UNASSIGNED"
    if ch in "abcdefghijklmnopqrstuvwxyz0123456789-":
        return "PVALID"
    if c in (0x200C, 0x200D):
        return "CONTEXTJ"
    if unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", ch).casefold()) != ch:
        return "DISALLOWED"
    if noncharacter or ch.isspace() or _in(c, _DEFAULT_IGNORABLE):
        return "DISALLOWED"
    if _in(c, _IGNORABLE_BLOCKS) or _in(c, _OLD_HANGUL_JAMO):
        return "DISALLOWED"
    return "PVALID" if cat in _LETTER_DIGITS else "DISALLOWED"


def _contextj_ok(label: str, i: int) -> bool:
    before = label[i - 1] if i > 0 else ""
    if before and unicodedata.combining(before) == 9:  # Virama
        return True
    if ord(label[i]) == 0x200D:
        return False
    # ZWNJ: (L|D) T* ZWNJ T* (R|D)
    j = i - 1
    while j >= 0 and _joining_type(ord(label[j])) == "T":
        j -= 1
    if j < 0 or _joining_type(ord(label[j])) not in ("L", "D"):
        return False
    k = i + 1
    while k < len(label) and _joining_type(ord(label[k])) == "T":
        k += 1
    return k < len(label) and _joining_type(ord(label[k])) in ("R", "D")


def _contexto_ok(label: str, i: int) -> bool:
    c = ord(label[i])
    if c == 0x00B7:
        return 0 < i < len(label) - 1 and label[i - 1] == "l" and label[i + 1] == "l"
    if c == 0x0375:
        return i + 1 < len(label) and _in(ord(label[i + 1]), _GREEK)
    if c in (0x05F3, 0x05F4):
        return i > 0 and _in(ord(label[i - 1]), _HEBREW)
    if c == 0x30FB:
        return any(_in(ord(x), _HIRAGANA_KATAKANA_HAN) for x in label)
    if 0x0660 <= c <= 0x0669:
        return not any(0x06F0 <= ord(x) <= 0x06F9 for x in label)
    if 0x06F0 <= c <= 0x06F9:
        return not any(0x0660 <= ord(x) <= 0x0669 for x in label)
    return False


def _valid_u_label(label: str) -> bool:
    """RFC 5891 section 5.4 checks on one U-label (before the Bidi rule)."""
    if not label or unicodedata.normalize("NFC", label) != label:
        return False
    if label[2:4] == "--" or label[0] == "-" or label[-1] == "-":
        return False
    if unicodedata.category(label[0]).startswith("M"):
        return False
    for i, ch in enumerate(label):
        prop = _idna_property(ord(ch))
        if prop == "PVALID":
            continue
        if prop == "CONTEXTJ" and _contextj_ok(label, i):
            continue
        if prop == "CONTEXTO" and _contexto_ok(label, i):
            continue
        return False
    return True


_RTL = {"R", "AL", "AN"}


def _bidi_ok(label: str) -> bool:
    """RFC 5893 section 2, for a label of a Bidi domain name."""
    classes = [unicodedata.bidirectional(ch) for ch in label]
    if classes[0] not in ("L", "R", "AL"):
        return False
    trimmed = list(classes)
    while trimmed and trimmed[-1] == "NSM":
        trimmed.pop()
    if classes[0] in ("R", "AL"):
        allowed = {"R", "AL", "AN", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}
        if not set(classes) <= allowed:
            return False
        if not trimmed or trimmed[-1] not in ("R", "AL", "EN", "AN"):
            return False
        return not ("EN" in classes and "AN" in classes)
    allowed = {"L", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}
    if not set(classes) <= allowed:
        return False
    return bool(trimmed) and trimmed[-1] in ("L", "EN")


_LDH_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")
_IDN_SEP_RE = re.compile("[.\u3002\uff0e\uff61]")


def _to_ascii_label(label: str) -> tuple[str, str] | None:
    """(A-label or LDH label, U-label form) of one label, or None if it is invalid."""
    if label.isascii():
        if _LDH_LABEL.fullmatch(label) is None:
            return None
        if label[2:4] != "--":
            return label, label.lower()
        if label[:2].lower() != "xn":
            return None
        try:
            ulabel = label[4:].encode("ascii").decode("punycode")
        except (UnicodeError, ValueError):
            return None
        ulabel_l = _lower_ascii(ulabel)
        if ulabel_l.isascii() or not _valid_u_label(ulabel_l):
            return None
        if "xn--" + ulabel_l.encode("punycode").decode("ascii") != label.lower():
            return None
        return label, ulabel_l
    ulabel = _lower_ascii(label)
    if not _valid_u_label(ulabel):
        return None
    return "xn--" + ulabel.encode("punycode").decode("ascii"), ulabel


def _lower_ascii(s: str) -> str:
    return "".join(ch.lower() if "A" <= ch <= "Z" else ch for ch in s)


def _check_idn_hostname(s: str) -> bool:
    if not s:
        return False
    labels = _IDN_SEP_RE.split(s)
    ascii_labels: list[str] = []
    ulabels: list[str] = []
    for label in labels:
        r = _to_ascii_label(label)
        if r is None or len(r[0]) > 63:
            return False
        ascii_labels.append(r[0])
        ulabels.append(r[1])
    if len(".".join(ascii_labels)) > 253:
        return False
    bidi_domain = any(unicodedata.bidirectional(ch) in _RTL for u in ulabels for ch in u)
    return not bidi_domain or all(_bidi_ok(u) for u in ulabels)


def _check_hostname(s: str) -> bool:
    return s.isascii() and _check_idn_hostname(s)


# ---------------------------------------------------------------------------------------------
# ECMA-262 pattern syntax (u flag)


class _EcmaSyntaxError(Exception):
    pass


_SYNTAX_CHARS = set("^$\\.*+?()[]{}|")
_GROUP_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PROPERTY = re.compile(r"[A-Za-z_]+(?:=[A-Za-z0-9_]+)?")


class _EcmaRegexParser:
    """Recursive-descent recogniser of ECMA-262 ``Pattern[+UnicodeMode, +NamedCaptureGroups]``."""

    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.groups = 0
        self.names: set[str] = set()
        self.backrefs: list[int] = []
        self.named_refs: list[str] = []

    def fail(self) -> None:
        raise _EcmaSyntaxError(self.i)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def eat(self, text: str) -> bool:
        if self.s.startswith(text, self.i):
            self.i += len(text)
            return True
        return False

    def parse(self) -> None:
        self.disjunction()
        if self.i != len(self.s):
            self.fail()
        if any(n > self.groups for n in self.backrefs):
            self.fail()
        if any(n not in self.names for n in self.named_refs):
            self.fail()

    def disjunction(self) -> None:
        self.alternative()
        while self.eat("|"):
            self.alternative()

    def alternative(self) -> None:
        while self.i < len(self.s) and self.peek() not in "|)":
            self.term()

    def term(self) -> None:
        if self.eat("^") or self.eat("$") or self.eat("\\b") or self.eat("\\B"):
            return
        for look in ("(?=", "(?!", "(?<=", "(?<!"):
            if self.eat(look):
                self.disjunction()
                if not self.eat(")"):
                    self.fail()
                return  # quantified lookarounds are not allowed in unicode mode
        self.atom()
        self.quantifier()

    def quantifier(self) -> None:
        if self.eat("*") or self.eat("+") or self.eat("?"):
            self.eat("?")
            return
        if self.peek() == "{":
            m = re.compile(r"\{([0-9]+)(,([0-9]*))?\}").match(self.s, self.i)
            if m is None:
                self.fail()
                return
            lo = int(m.group(1))
            if m.group(3) and int(m.group(3)) < lo:
                self.fail()
            self.i = m.end()
            self.eat("?")

    def atom(self) -> None:
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.eat("?:"):
                pass
            elif self.eat("?<"):
                m = _GROUP_NAME.match(self.s, self.i)
                if m is None or m.group(0) in self.names:
                    self.fail()
                    return
                self.names.add(m.group(0))
                self.i = m.end()
                if not self.eat(">"):
                    self.fail()
                self.groups += 1
            elif self.peek() == "?":
                self.fail()
            else:
                self.groups += 1
            self.disjunction()
            if not self.eat(")"):
                self.fail()
        elif c == "[":
            self.char_class()
        elif c == "\\":
            self.i += 1
            self.atom_escape()
        elif c == ".":
            self.i += 1
        elif c == "" or c in _SYNTAX_CHARS:
            self.fail()
        else:
            self.i += 1

    def atom_escape(self) -> None:
        c = self.peek()
        if c and c in "123456789":
            m = re.compile("[0-9]+").match(self.s, self.i)
            assert m is not None
            self.backrefs.append(int(m.group(0)))
            self.i = m.end()
            return
        if c == "k":
            self.i += 1
            m = _GROUP_NAME.match(self.s, self.i + 1) if self.peek() == "<" else None
            if m is None or self.s[m.end() : m.end() + 1] != ">":
                self.fail()
                return
            self.named_refs.append(m.group(0))
            self.i = m.end() + 1
            return
        if self.class_escape_set():
            return
        self.character_escape()

    def class_escape_set(self) -> bool:
        c = self.peek()
        if c and c in "dDsSwW":
            self.i += 1
            return True
        if c and c in "pP":
            self.i += 1
            if not self.eat("{"):
                self.fail()
            m = _PROPERTY.match(self.s, self.i)
            if m is None:
                self.fail()
                return True
            self.i = m.end()
            if not self.eat("}"):
                self.fail()
            return True
        return False

    def character_escape(self) -> int:
        """Parse a CharacterEscape and return its code point."""
        c = self.peek()
        simple = {"f": 0xC, "n": 0xA, "r": 0xD, "t": 0x9, "v": 0xB}
        if c in simple and c:
            self.i += 1
            return simple[c]
        if c == "c":
            nxt = self.peek(1)
            if nxt and nxt.isascii() and nxt.isalpha():
                self.i += 2
                return ord(nxt) % 32
            self.fail()
        if c == "0" and not (self.peek(1) and self.peek(1) in "0123456789"):
            self.i += 1
            return 0
        if c == "x":
            m = re.compile("[0-9A-Fa-f]{2}").match(self.s, self.i + 1)
            if m is None:
                self.fail()
                return 0
            self.i = m.end()
            return int(m.group(0), 16)
        if c == "u":
            return self.unicode_escape()
        if c and (c in _SYNTAX_CHARS or c == "/"):
            self.i += 1
            return ord(c)
        self.fail()
        return 0

    def unicode_escape(self) -> int:
        self.i += 1
        if self.eat("{"):
            m = re.compile("[0-9A-Fa-f]+").match(self.s, self.i)
            if m is None or int(m.group(0), 16) > 0x10FFFF:
                self.fail()
                return 0
            self.i = m.end()
            if not self.eat("}"):
                self.fail()
            return int(m.group(0), 16)
        m = re.compile("[0-9A-Fa-f]{4}").match(self.s, self.i)
        if m is None:
            self.fail()
            return 0
        self.i = m.end()
        cp = int(m.group(0), 16)
        if 0xD800 <= cp <= 0xDBFF and self.s.startswith("\\u", self.i):
            m2 = re.compile("[Dd][C-Fc-f][0-9A-Fa-f]{2}").match(self.s, self.i + 2)
            if m2 is not None:
                self.i = m2.end()
                return 0x10000 + ((cp - 0xD800) << 10) + (int(m2.group(0), 16) - 0xDC00)
        return cp

    def char_class(self) -> None:
        self.i += 1
        self.eat("^")
        while True:
            if self.i >= len(self.s):
                self.fail()
            if self.eat("]"):
                return
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) != "]" and self.peek(1) != "":
                self.i += 1
                hi = self.class_atom()
                if lo is None or hi is None or lo > hi:
                    self.fail()

    def class_atom(self) -> int | None:
        """A class atom's code point, or None for a class escape (``\\d``, ``\\p{..}``)."""
        c = self.peek()
        if c != "\\":
            self.i += 1
            return ord(c)
        self.i += 1
        if self.eat("b"):
            return 8
        if self.eat("-"):
            return ord("-")
        if self.class_escape_set():
            return None
        return self.character_escape()


def is_ecma_regex(pattern: str) -> bool:
    """Whether ``pattern`` is a syntactically valid ECMA-262 regular expression (``u`` flag).

    Property escapes ``\\p{..}`` are accepted for any name or ``name=value`` of identifier
    characters (the property tables are not consulted); everything else is checked exactly.
    """
    try:
        _EcmaRegexParser(pattern).parse()
    except _EcmaSyntaxError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# OpenAPI and other widely used formats


def _int_range(lo: int, hi: int) -> Callable[[object], bool]:
    """Integral values (``3`` or ``3.0``) in ``[lo, hi]``."""

    def check(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if isinstance(value, float) and not value.is_integer():
            return False
        return lo <= int(value) <= hi

    return check


def _always(value: object) -> bool:
    return True


#: RFC 4648 section 4: the base64 alphabet in groups of four, the last group padded with ``=``
_BASE64 = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
#: Semantic Versioning 2.0.0 (semver.org, "Is there a suggested regular expression"), with
#: ``[0-9]`` for ``\d``
_NUM_ID = "(?:0|[1-9][0-9]*)"
_PRE_ID = "(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = "[0-9A-Za-z-]+"
_SEMVER = (
    rf"{_NUM_ID}\.{_NUM_ID}\.{_NUM_ID}(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?"
    rf"(?:\+{_BUILD_ID}(?:\.{_BUILD_ID})*)?"
)

# ---------------------------------------------------------------------------------------------
# The registry


def _exact(rx: str, definition: str) -> FormatSpec:
    compiled = re.compile(rx)

    def check(value: str) -> bool:
        return compiled.fullmatch(value) is not None

    return FormatSpec(rx, "exact", check, definition=definition)


def _any_string(definition: str) -> FormatSpec:
    return FormatSpec(None, "exact", _always, definition=definition)


def _integers(bits: int, signed: bool, definition: str) -> FormatSpec:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return FormatSpec(
        None, "exact", _int_range(lo, hi), "number", integers=(lo, hi), definition=definition
    )


def _any_number(definition: str) -> FormatSpec:
    return FormatSpec(None, "exact", _always, "number", definition=definition)


def _alias(name: str, definition: str) -> FormatSpec:
    spec = FORMATS[name]
    return FormatSpec(
        spec.regex,
        spec.relation,
        spec.checker,
        spec.applies_to,
        spec.integers,
        definition=definition,
        alias_of=name,
    )


_OAS = "OpenAPI Format Registry (spec.openapis.org/registry/format)"
_DRAFT3 = "JSON Schema draft-03, section 5.23"

FORMATS: dict[str, FormatSpec] = {
    # JSON Schema 2020-12 (Validation, section 7.3)
    "date": _exact(_DATE, "RFC 3339 full-date"),
    "date-time": FormatSpec(_DATE_TIME, "subset", _check_date_time, definition="RFC 3339"),
    "duration": _exact(_DURATION, "RFC 3339 Appendix A"),
    "email": _exact(_EMAIL, "RFC 5321 Mailbox"),
    "hostname": FormatSpec(_HOSTNAME, "superset", _check_hostname, definition="RFC 1123"),
    "idn-email": _exact(_IDN_EMAIL, "RFC 6531"),
    "idn-hostname": FormatSpec(
        _IDN_HOSTNAME, "superset", _check_idn_hostname, definition="RFC 5890-5893 (IDNA2008)"
    ),
    "ipv4": _exact(_IPV4, "RFC 2673 dotted-quad"),
    "ipv6": _exact(_IPV6, "RFC 4291"),
    "iri": _exact(_IRI, "RFC 3987 IRI"),
    "iri-reference": _exact(_IRI_REFERENCE, "RFC 3987 IRI-reference"),
    "json-pointer": _exact(_JSON_POINTER, "RFC 6901"),
    "regex": FormatSpec(_ANY, "superset", is_ecma_regex, definition="ECMA-262"),
    "relative-json-pointer": _exact(
        _RELATIVE_JSON_POINTER, "draft-bhutton-relative-json-pointer-00"
    ),
    "time": FormatSpec(_TIME, "subset", _check_time, definition="RFC 3339 full-time"),
    "uri": _exact(_URI, "RFC 3986 URI"),
    "uri-reference": _exact(_URI_REFERENCE, "RFC 3986 URI-reference"),
    "uri-template": _exact(_URI_TEMPLATE, "RFC 6570"),
    "uuid": _exact(_UUID, "RFC 4122"),
    # OpenAPI: numbers
    "int8": _integers(8, True, f"{_OAS}: signed 8-bit integer"),
    "int16": _integers(16, True, f"{_OAS}: signed 16-bit integer"),
    "int32": _integers(32, True, f"{_OAS}; OpenAPI 3.1.0 section 4.2: signed 32 bits"),
    "int64": _integers(64, True, f"{_OAS}; OpenAPI 3.1.0 section 4.2: signed 64 bits"),
    "uint8": _integers(8, False, f"{_OAS}: unsigned 8-bit integer"),
    "uint16": _integers(16, False, f"{_OAS}: unsigned 16-bit integer"),
    "uint32": _integers(32, False, f"{_OAS}: unsigned 32-bit integer"),
    "uint64": _integers(64, False, f"{_OAS}: unsigned 64-bit integer"),
    "float": _any_number(f"{_OAS}; OpenAPI 3.1.0 section 4.2: single precision number"),
    "double": _any_number(f"{_OAS}; OpenAPI 3.1.0 section 4.2: double precision number"),
    # OpenAPI: strings
    "byte": _exact(_BASE64, f"{_OAS}: base64 encoded data, RFC 4648 section 4"),
    "binary": _any_string(f"{_OAS}: any sequence of octets"),
    "password": _any_string(f"{_OAS}; OpenAPI 3.1.0 section 4.2: a hint to obscure the value"),
    # widely used
    "semver": _exact(_SEMVER, "Semantic Versioning 2.0.0 (semver.org)"),
    "utc-millisec": _any_number(f"{_DRAFT3}: milliseconds since 1970-01-01T00:00Z, a number"),
}
FORMATS.update(
    {
        "url": _alias("uri", "the common spelling of uri (RFC 3986 URI)"),
        "datetime": _alias("date-time", "the common spelling of date-time (RFC 3339)"),
        "host-name": _alias("hostname", f"{_DRAFT3}: host-name, renamed hostname in draft-04"),
        "ip-address": _alias("ipv4", f"{_DRAFT3}: ip-address, renamed ipv4 in draft-04"),
    }
)
"""Formats toolmask knows and enforces exactly. See the module docstring for what each means."""


def format_checker() -> jsonschema.FormatChecker:
    """A :class:`jsonschema.FormatChecker` with every :data:`FORMATS` checker registered.

    jsonschema's own checkers pass silently when their optional packages are missing; these do
    not depend on any. An instance of a type a format does not apply to passes, as JSON Schema
    requires; a format not in :data:`FORMATS` is not registered, so it passes too (an
    annotation).
    """
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    for name, spec in FORMATS.items():
        checker.checks(name)(_typed(spec))
    return checker


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _typed(spec: FormatSpec) -> Callable[[object], bool]:
    applies = _is_number if spec.applies_to == "number" else (lambda v: isinstance(v, str))
    fn = spec.checker

    def check(instance: object) -> bool:
        return not applies(instance) or fn(instance)

    return check
