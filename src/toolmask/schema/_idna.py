"""IDNA2008 (RFC 5890-5893) for the ``hostname`` and ``idn-hostname`` formats.

:func:`check_idn_hostname` is the exact checker the post-decode validator runs for
``idn-hostname`` (:func:`check_hostname`: the same for ASCII-only ``hostname``). The RFC 5892
code point properties are derived from Python's :mod:`unicodedata` (its Unicode version);
joining types (for the ZERO WIDTH NON-JOINER rule) are tabulated for the Arabic, Syriac, N'Ko
and Mandaic blocks only, so a ZWNJ in another cursive script is accepted only after a virama
(stricter than the RFC, never looser). Script membership for the CONTEXTO rules uses block
ranges. The tables below are the RFC 5892 exceptions and the blocks those rules name.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["check_hostname", "check_idn_hostname"]


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


def check_idn_hostname(s: str) -> bool:
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


def check_hostname(s: str) -> bool:
    return s.isascii() and check_idn_hostname(s)
