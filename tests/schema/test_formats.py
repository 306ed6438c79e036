from __future__ import annotations

import calendar
import collections
import datetime
import ipaddress
import json
import random
import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vendored import suite_files
from toolmask.schema._ecma import is_ecma_regex
from toolmask.schema._formats import FORMATS, format_checker


def _load_suite() -> list[tuple[str, str, object, bool]]:
    """(format, description, instance, valid) for every test of a supported format."""
    cases: list[tuple[str, str, object, bool]] = []
    for path in suite_files("optional/format"):
        with path.open(encoding="utf-8") as fh:
            groups = json.load(fh)
        for group in groups:
            fmt = group["schema"].get("format")
            if fmt not in FORMATS:
                continue
            for t in group["tests"]:
                cases.append((fmt, f"{path.stem}: {t['description']}", t["data"], t["valid"]))
    return cases


CASES = _load_suite()
STRING_CASES = [c for c in CASES if isinstance(c[2], str)]


def _ids(cases: list[tuple[str, str, object, bool]]) -> list[str]:
    return [f"{fmt}|{desc}" for fmt, desc, _, _ in cases]


@pytest.mark.parametrize(("fmt", "desc", "data", "valid"), STRING_CASES, ids=_ids(STRING_CASES))
def test_suite_check(fmt: str, desc: str, data: str, valid: bool) -> None:
    assert FORMATS[fmt].check(data) == valid


@pytest.mark.parametrize(("fmt", "desc", "data", "valid"), STRING_CASES, ids=_ids(STRING_CASES))
def test_suite_regex(fmt: str, desc: str, data: str, valid: bool) -> None:
    spec = FORMATS[fmt]
    assert spec.regex is not None
    matched = re.fullmatch(spec.regex, data) is not None
    if spec.relation == "exact":
        assert matched == valid
    elif spec.relation == "subset":
        assert not (matched and not valid), "false positive"
    else:
        assert not (valid and not matched), "superset regex rejects a valid value"


#: the formats JSON Schema 2020-12 defines (Validation, section 7.3), all in the suite
SPEC_FORMATS = {
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
}
#: string formats with a language (the ones a regex test can look at)
REGEX_FORMATS = sorted(n for n, s in FORMATS.items() if s.regex is not None)


def test_suite_agreement_counts() -> None:
    """Every format of the specification is exercised by the suite; print per-format agreement
    of the regex (the other formats have their own tests below, each citing its definition)."""
    per: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for fmt, _, data, valid in STRING_CASES:
        assert isinstance(data, str)
        per[fmt][1] += 1
        per[fmt][0] += (re.fullmatch(FORMATS[fmt].regex or "", data) is not None) == valid
    assert set(per) == SPEC_FORMATS
    for fmt in sorted(per):
        ok, n = per[fmt]
        rx = FORMATS[fmt].regex
        assert rx is not None
        print(f"{fmt:22} {FORMATS[fmt].relation:8} regex agrees on {ok}/{n}")
        if FORMATS[fmt].exact:
            assert ok == n


@pytest.mark.parametrize(("fmt", "desc", "data", "valid"), CASES, ids=_ids(CASES))
def test_format_checker(fmt: str, desc: str, data: object, valid: bool) -> None:
    validator = jsonschema.Draft202012Validator({"format": fmt}, format_checker=format_checker())
    assert validator.is_valid(data) == valid


def test_exact_flag_matches_relation() -> None:
    for spec in FORMATS.values():
        assert spec.exact == (spec.relation == "exact")
        assert spec.relation in ("exact", "subset", "superset")


# ---------------------------------------------------------------------------------------------
# The regexes stay inside the common subset of ECMA-262 (u flag) and Python re.

_META = set("\\.*+?()[]{}|^$/-")


def subset_violation(rx: str) -> str | None:
    """Why ``rx`` is outside the allowed syntax, or None.

    Allowed: literal characters (not ``.^$``), ``\\`` + a metacharacter, ``\\uHHHH``, classes
    (optionally negated) of such atoms and ranges, ``(?:...)``, ``|``, and greedy ``* + ? {n}
    {n,} {n,m}`` after an atom.
    """
    i, depth, can_quantify = 0, 0, False
    esc = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[\\.*+?()\[\]{}|^$/-])")
    quant = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            m = esc.match(rx, i)
            if m is None:
                return f"escape at {i}"
            i, can_quantify = m.end(), True
        elif c == "[":
            i += 1
            if rx.startswith("^", i):
                i += 1
            while i < len(rx) and rx[i] != "]":
                if rx[i] == "\\":
                    m = esc.match(rx, i)
                    if m is None:
                        return f"class escape at {i}"
                    i = m.end()
                elif rx[i] == "[":
                    return f"nested [ at {i}"
                else:
                    i += 1
            if i >= len(rx):
                return "unclosed class"
            i, can_quantify = i + 1, True
        elif c == "(":
            if not rx.startswith("(?:", i):
                return f"group other than (?: at {i}"
            i, depth, can_quantify = i + 3, depth + 1, False
        elif c == ")":
            if depth == 0:
                return f"unbalanced ) at {i}"
            i, depth, can_quantify = i + 1, depth - 1, True
        elif c == "|":
            i, can_quantify = i + 1, False
        elif c in "*+?":
            if not can_quantify:
                return f"quantifier without atom at {i}"
            i, can_quantify = i + 1, False
        elif c == "{":
            m = quant.match(rx, i)
            if m is None or not can_quantify:
                return f"bad {{ at {i}"
            i, can_quantify = m.end(), False
        elif c in ".^$}]":
            return f"{c!r} at {i}"
        else:
            i, can_quantify = i + 1, True
    return "unbalanced (" if depth else None


@pytest.mark.parametrize("fmt", REGEX_FORMATS)
def test_regex_syntax_subset(fmt: str) -> None:
    rx = FORMATS[fmt].regex
    assert rx is not None
    assert subset_violation(rx) is None
    assert is_ecma_regex(rx)  # and it parses as an ECMA-262 u-mode pattern
    re.compile(rx)


def test_subset_checker_rejects() -> None:
    for bad in ["a.b", "^a", "a$", "(?=a)", "(a)", r"\d", r"\1", "a*?", "a{2}?", "(?i)a", "{"]:
        assert subset_violation(bad) is not None, bad
    assert subset_violation(r"(?:[a-z\-]|\u00e9){1,3}[^/~]*") is None


# ---------------------------------------------------------------------------------------------
# The regexes compile to small DFAs with toolmask's own ECMA regex engine, which agrees with
# Python re; every string the DFA accepts passes check() unless the regex is a superset.


@pytest.mark.parametrize("fmt", REGEX_FORMATS)
def test_dfa(fmt: str) -> None:
    regex_mod = pytest.importorskip("toolmask.grammar._regex")
    spec = FORMATS[fmt]
    assert spec.regex is not None
    dfa = regex_mod.regex_dfa(spec.regex, search=False)
    assert dfa.n_states < 2000
    for f, _, data, _ in STRING_CASES:
        if f == fmt:
            assert isinstance(data, str)
            assert dfa.accepts(data) == (re.fullmatch(spec.regex, data) is not None), data
    rng = random.Random(fmt)
    for _ in range(60):
        s = dfa.sample(rng, stop=0.2, max_len=60)
        assert s is not None
        assert re.fullmatch(spec.regex, s) is not None, s
        if spec.relation != "superset":
            assert spec.check(s), s


# ---------------------------------------------------------------------------------------------
# Independent oracles


def _days(y: int, m: int) -> int:
    return [31, 29 if calendar.isleap(y) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]


@settings(max_examples=500)
@given(y=st.integers(0, 9999), m=st.integers(0, 13), d=st.integers(0, 32))
def test_date_oracle(y: int, m: int, d: int) -> None:
    s = f"{y:04d}-{m:02d}-{d:02d}"
    valid = 1 <= m <= 12 and 1 <= d <= _days(y, m)
    assert FORMATS["date"].check(s) == valid
    assert (re.fullmatch(FORMATS["date"].regex, s) is not None) == valid


def test_every_feb_29() -> None:
    rx = re.compile(FORMATS["date"].regex)
    for y in range(10000):
        assert (rx.fullmatch(f"{y:04d}-02-29") is not None) == calendar.isleap(y), y


@settings(max_examples=800)
@given(
    h=st.integers(0, 24),
    mi=st.integers(0, 60),
    sec=st.sampled_from([0, 30, 59, 60, 61]),
    frac=st.sampled_from(["", ".5", ".000001"]),
    off=st.one_of(
        st.sampled_from(["Z", "z", "+00:00", "-00:00"]),
        st.tuples(st.sampled_from("+-"), st.integers(0, 24), st.integers(0, 60)),
    ),
)
def test_time_oracle(h: int, mi: int, sec: int, frac: str, off: str | tuple[str, int, int]) -> None:
    if isinstance(off, tuple):
        sign, oh, om = off
        off_text = f"{sign}{oh:02d}:{om:02d}"
        off_ok = oh <= 23 and om <= 59
        off_min = (oh * 60 + om) * (1 if sign == "+" else -1)
    else:
        off_text, off_ok, off_min = off, True, 0
    s = f"{h:02d}:{mi:02d}:{sec:02d}{frac}{off_text}"
    valid = off_ok and h <= 23 and mi <= 59 and sec <= 60
    if valid and sec == 60:
        utc = datetime.datetime(2000, 1, 2, h, mi) - datetime.timedelta(minutes=off_min)
        valid = (utc.hour, utc.minute) == (23, 59)
    spec = FORMATS["time"]
    assert spec.check(s) == valid
    matched = re.fullmatch(spec.regex, s) is not None
    assert not (matched and not valid)
    if valid and sec != 60:
        assert matched  # the regex only leaves out leap seconds at non-zero offsets
    dt = spec_dt = FORMATS["date-time"]
    assert spec_dt.check("2000-01-01T" + s) == valid
    assert not (re.fullmatch(dt.regex, "2000-01-01t" + s) and not valid)


octet_text = st.one_of(
    st.integers(0, 300).map(str), st.sampled_from(["00", "01", "007", "", "a", "1e2", "-1"])
)


@settings(max_examples=500)
@given(parts=st.lists(octet_text, min_size=3, max_size=5))
def test_ipv4_oracle(parts: list[str]) -> None:
    s = ".".join(parts)
    try:
        ipaddress.IPv4Address(s)
        valid = True
    except ValueError:
        valid = False
    assert FORMATS["ipv4"].check(s) == valid
    assert (re.fullmatch(FORMATS["ipv4"].regex, s) is not None) == valid


@st.composite
def ipv6_texts(draw: st.DrawFn) -> str:
    addr = ipaddress.IPv6Address(draw(st.integers(0, 2**128 - 1) | st.sampled_from([0, 1])))
    form = draw(st.sampled_from(["compressed", "exploded", "v4", "mutate"]))
    if form == "compressed":
        return addr.compressed
    if form == "exploded":
        return addr.exploded
    groups = addr.exploded.split(":")
    if form == "v4":
        v4 = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        return ":".join(groups[:6]) + ":" + str(v4)
    text = draw(st.sampled_from([addr.compressed, addr.exploded]))
    i = draw(st.integers(0, len(text)))
    junk = draw(st.sampled_from([":", "::", "0", "g", "12345", ".1", "1.2.3.4", ""]))
    return text[:i] + junk + text[i + draw(st.integers(0, 3)) :]


@settings(max_examples=800)
@given(s=ipv6_texts())
def test_ipv6_oracle(s: str) -> None:
    try:
        ipaddress.IPv6Address(s)
        valid = "%" not in s
    except ValueError:
        valid = False
    assert FORMATS["ipv6"].check(s) == valid, s
    assert (re.fullmatch(FORMATS["ipv6"].regex, s) is not None) == valid, s


def test_ipv6_forms() -> None:
    rx = re.compile(FORMATS["ipv6"].regex)
    good = [
        "::",
        "::1",
        "1::",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:1.2.3.4",
        "::1.2.3.4",
        "1::1.2.3.4",
        "1:2:3:4:5::1.2.3.4",
        "ABCD:ef01::",
    ]
    bad = [
        "1::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:1.2.3.4",
        ":::",
        "1:::2",
        "1::2::3",
        "::1.2.3",
        "1:2:3:4:5:6:7:8:9",
        "::ffff:1.2.3.04",
        "[::1]",
        "::1%eth0",
    ]
    for s in good:
        assert rx.fullmatch(s), s
    for s in bad:
        assert not rx.fullmatch(s), s


def test_hostname_rules() -> None:
    spec = FORMATS["hostname"]
    assert spec.check("a" * 63 + ".com")
    assert not spec.check("a" * 64 + ".com")
    long = ".".join(["a" * 63] * 3 + ["a" * 61])  # 253 chars
    assert len(long) == 253 and spec.check(long)
    assert not spec.check(long + "a")
    assert re.fullmatch(spec.regex, long + "a")  # the length limit is check()'s job
    for s in ["ab--cd", "a---", "XN--", "xn--"]:
        assert not re.fullmatch(spec.regex, s) and not spec.check(s), s
    assert spec.check("EXAMPLE.com") and spec.check("xn--bcher-kva.example")


def test_idn_hostname_rules() -> None:
    spec = FORMATS["idn-hostname"]
    assert spec.check("bücher.example") and spec.check("Bücher.example")
    assert not spec.check("bu\u0308cher.example")  # not NFC
    assert not spec.check("a\u3002")


@pytest.mark.parametrize(
    ("pattern", "ok"),
    [
        ("", True),
        ("a|b", True),
        ("(?:a)+?", True),
        ("a{2,3}", True),
        ("a{3,2}", False),
        ("[a-z]", True),
        ("[z-a]", False),
        (r"[\d-z]", False),
        (r"\u{1F600}", True),
        (r"\u{110000}", False),
        (r"\p{L}", True),
        (r"\p{Script=Greek}", True),
        ("(?=a)", True),
        ("(?=a)*", False),
        ("a**", False),
        ("{", False),
        ("}", False),
        ("]", False),
        (r"\1(a)", True),
        (r"\2(a)", False),
        (r"\k<x>(?<x>a)", True),
        (r"\k<y>", False),
        ("(?<x>a)(?<x>b)", False),
        (r"\-", False),
        (r"[\-]", True),
        (r"\/", True),
        ("(", False),
        (")", False),
        (r"\x4", False),
        (r"\x41", True),
        (r"\c1", False),
        (r"\0", True),
        (r"\00", False),
        (r"[\b]", True),
        ("^*", False),
        ("a{,3}", False),
    ],
)
def test_is_ecma_regex(pattern: str, ok: bool) -> None:
    assert is_ecma_regex(pattern) == ok


# ---------------------------------------------------------------------------------------------
# OpenAPI's formats and other widely used ones: each test cites the definition it checks, and
# checks the grammar (what the decoder can write) and the checker (what validate() says) alike.


def _grammar_accepts(schema: dict[str, object], doc: object) -> bool:
    import toolmask as tm

    m = tm.compile(tm.Grammar.from_json_schema(schema)).matcher()
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return bool(m.accept_bytes(text.encode()) and m.is_accepting())


def _validator_accepts(schema: dict[str, object], doc: object) -> bool:
    v = jsonschema.Draft202012Validator(schema, format_checker=format_checker())
    return bool(v.is_valid(doc))


@pytest.mark.parametrize(
    ("fmt", "lo", "hi"),
    [
        # OpenAPI 3.1.0 section 4.2 "Data Types" and the OpenAPI Format Registry
        # (spec.openapis.org/registry/format): intN "signed N-bit integer", uintN "unsigned"
        ("int8", -128, 127),
        ("int16", -32768, 32767),
        ("int32", -(2**31), 2**31 - 1),
        ("int64", -(2**63), 2**63 - 1),
        ("uint8", 0, 255),
        ("uint16", 0, 65535),
        ("uint32", 0, 2**32 - 1),
        ("uint64", 0, 2**64 - 1),
    ],
)
def test_openapi_integer_formats(fmt: str, lo: int, hi: int) -> None:
    spec = FORMATS[fmt]
    assert spec.applies_to == "number" and spec.integers == (lo, hi)
    for typ in ("integer", "number"):
        schema = {"type": typ, "format": fmt}
        for v in (lo, hi, 0 if lo <= 0 else lo + 1):
            assert _grammar_accepts(schema, v) and _validator_accepts(schema, v), (fmt, v)
        for v in (lo - 1, hi + 1):
            assert not _grammar_accepts(schema, v) and not _validator_accepts(schema, v), v
    # an integer format admits integral values only, in any spelling the validator sees
    assert not spec.check(1.5) and spec.check(3.0) and not spec.check(True)
    assert not _grammar_accepts({"format": fmt}, 1.5)
    # values of other types are not numbers: the format does not apply to them
    for other in ("x", None, [1], {"a": 1}, True):
        assert _grammar_accepts({"format": fmt}, other)
        assert _validator_accepts({"format": fmt}, other)


@pytest.mark.parametrize("fmt", ["float", "double", "utc-millisec"])
def test_number_formats_accept_every_number(fmt: str) -> None:
    # OpenAPI 3.1.0 section 4.2: float / double are the precision a number is stored with, so
    # every JSON number is one (it rounds to the nearest); draft-03 section 5.23 utc-millisec:
    # "The value SHOULD be a number (integer or float)". None constrains a number further.
    spec = FORMATS[fmt]
    assert spec.applies_to == "number" and spec.integers is None
    for v in (0, -1, 2.5, 1e300, -3.25e-7, 2**70):
        assert _grammar_accepts({"type": "number", "format": fmt}, v)
        assert _validator_accepts({"type": "number", "format": fmt}, v)


def test_byte_is_base64() -> None:
    # OpenAPI Format Registry "byte": base64 encoded data as defined in RFC 4648 section 4;
    # the valid values are the RFC's section 10 test vectors and what b64encode writes
    import base64

    good = ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", "+/+/", "AB+/Cd=="]
    bad = ["Zg=", "Zg", "Zm9", "Zg===", "Zm9v=", "Zm 9v", "Zm9v\n", "Zm9v-_==", "=Zg=", "Z===="]
    spec = FORMATS["byte"]
    for s in good:
        base64.b64decode(s, validate=True)  # the oracle agrees these are base64
        assert spec.check(s) and _grammar_accepts({"format": "byte"}, s), s
    for s in bad:
        assert not spec.check(s) and not _grammar_accepts({"format": "byte"}, s), s
    rng = random.Random(4648)
    for n in range(20):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert spec.check(base64.b64encode(data).decode())


@pytest.mark.parametrize("fmt", ["binary", "password"])
def test_binary_and_password_are_strings(fmt: str) -> None:
    # OpenAPI Format Registry: "binary" any sequence of octets, "password" a hint to UIs to
    # obscure input: neither constrains a string
    for s in ("", "hunter2", "\u00e9\U0001f600", "\x00\n"):
        assert FORMATS[fmt].check(s)
        assert _grammar_accepts({"type": "string", "format": fmt}, s)


def test_semver() -> None:
    # Semantic Versioning 2.0.0 (semver.org), items 2, 9 and 10; the examples are the spec's
    good = [
        "0.0.0",
        "1.9.0",
        "10.20.30",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-0.3.7",
        "1.0.0-x.7.z.92",
        "1.0.0-x-y-z.--",
        "1.0.0-alpha+001",
        "1.0.0+20130313144700",
        "1.0.0-beta+exp.sha.5114f85",
        "1.0.0+21AF26D3----117B344092BD",
    ]
    bad = ["1", "1.2", "01.1.1", "1.01.1", "1.1.01", "1.0.0-01", "1.0.0-", "1.0.0+", "v1.0.0"]
    bad += ["1.0.0-alpha..1", "1.0.0+a..b", "1.0.0-é", " 1.0.0", "1.0.0 "]
    spec = FORMATS["semver"]
    for s in good:
        assert spec.check(s) and _grammar_accepts({"format": "semver"}, s), s
    for s in bad:
        assert not spec.check(s) and not _grammar_accepts({"format": "semver"}, s), s


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("url", "uri"),  # the common spelling of RFC 3986's URI
        ("datetime", "date-time"),  # the common spelling of RFC 3339's date-time
        ("host-name", "hostname"),  # draft-03 section 5.23 "host-name"
        ("ip-address", "ipv4"),  # draft-03 section 5.23 "ip-address"
    ],
)
def test_aliases(alias: str, name: str) -> None:
    a, b = FORMATS[alias], FORMATS[name]
    assert a.alias_of == name and (a.regex, a.relation, a.checker) == (
        b.regex,
        b.relation,
        b.checker,
    )
    samples = ["http://x.org/a?b#c", "x", "2024-02-29T12:00:00Z", "a.b-c", "1.2.3.4", "::1", ""]
    for s in samples:
        assert _grammar_accepts({"format": alias}, s) == _grammar_accepts({"format": name}, s)
        assert _validator_accepts({"format": alias}, s) == _validator_accepts({"format": name}, s)


def test_every_format_cites_its_definition() -> None:
    for name, spec in FORMATS.items():
        assert spec.definition, name


def test_format_left_to_validator_when_product_too_large() -> None:
    # email x a 3..255 length counter passes max_dfa_states: the grammar keeps one side and the
    # post-decode validator must check the rest (the flag used to be dropped when merging)
    import toolmask as tm

    schema = {"type": "string", "format": "email", "minLength": 3, "maxLength": 255}
    c = tm.compile(tm.Grammar.from_json_schema(schema))
    for doc, valid in (("a@b.org", True), ("invalid_email", False), ("ab", False)):
        text = json.dumps(doc)
        m = c.matcher()
        accepted = m.accept_bytes(text.encode()) and m.is_accepting() and not c.validate(text)
        assert accepted == valid, doc
