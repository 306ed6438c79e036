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

The IDNA2008 checker is :mod:`toolmask.schema._idna`, the ECMA-262 syntax recogniser
:mod:`toolmask.schema._ecma`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolmask.schema._ecma import is_ecma_regex
from toolmask.schema._idna import check_hostname, check_idn_hostname

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
    compiled: list[re.Pattern[str]] = []  # compiled at the first check: some take 0.1 s each

    def check(value: str) -> bool:
        if not compiled:
            compiled.append(re.compile(rx))
        return compiled[0].fullmatch(value) is not None

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
    "hostname": FormatSpec(_HOSTNAME, "superset", check_hostname, definition="RFC 1123"),
    "idn-email": _exact(_IDN_EMAIL, "RFC 6531"),
    "idn-hostname": FormatSpec(
        _IDN_HOSTNAME, "superset", check_idn_hostname, definition="RFC 5890-5893 (IDNA2008)"
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
