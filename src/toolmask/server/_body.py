"""Reading a chat request's body: the JSON object's members with the span of each value, and
the tool lists of recent requests, so that a ``tools`` value whose text the server has read
before is recognised by a digest of the request's bytes (O(bytes), in C) instead of being
parsed and checked again (see :func:`~toolmask.server._protocol.parse_chat_request`)."""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolmask import _kernel
from toolmask.tools import Tool, ToolChoice

__all__ = [
    "KnownChoice",
    "KnownTools",
    "ToolLists",
    "read_body",
    "tools_digest",
    "value_digest",
]


@dataclass(frozen=True, slots=True)
class KnownChoice:
    """A ``tool_choice`` value read before over the same tool list: the client's value and
    its :class:`ToolChoice`, checked against that list's tools."""

    value: Any
    choice: ToolChoice


@dataclass(frozen=True)
class KnownTools:
    """A ``tools`` value the server has read before: its digest and its tools; and the
    ``tool_choice`` texts read and checked over it (the last :attr:`CHOICES`), so that a
    subset sent again is found by comparing its text, neither parsed nor checked again."""

    key: str
    tools: tuple[Tool, ...]
    _choices: dict[str, KnownChoice] = field(default_factory=dict, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    #: how many ``tool_choice`` texts are kept per list
    CHOICES = 64

    def match_choice(self, text: str, at: int) -> tuple[KnownChoice, int] | None:
        """The ``tool_choice`` kept whose text stands in ``text`` at ``at``, and where it ends.
        Exact: a kept text is a whole JSON string or object, which ends where its text ends."""
        with self._lock:
            for kept, hit in self._choices.items():
                if text.startswith(kept, at):
                    return hit, at + len(kept)
        return None

    def note_choice(self, text: str, value: Any, choice: ToolChoice) -> None:
        """Keep ``choice``, read from ``value`` (JSON text ``text``) and checked against these
        tools; only a string or an object, whose text ends where the value ends."""
        if not isinstance(value, str | dict) or len(text) < 2 or text[-1] not in '"}':
            return
        with self._lock:
            if text in self._choices:
                return
            if len(self._choices) >= self.CHOICES:
                del self._choices[next(iter(self._choices))]
            self._choices[text] = KnownChoice(value, choice)

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Tool name -> its position (the names were checked unique when first read)."""
        return {t.name: i for i, t in enumerate(self.tools)}


class ToolLists:
    """The tool lists of recent requests (a bounded, thread-safe LRU of ``size`` lists), each
    kept with the first bytes, the length and a keyed digest of its JSON text as the client
    sent it (UTF-8). Reading a body, the server hashes the bytes at the ``tools`` value over a
    kept list's length where they start as that list's text does: the same bytes are the same
    JSON value, so its :class:`Tool` objects are reused without parsing or checking the tools
    again, and the layers below find everything they keyed by those objects. Cost: one pass
    over the request's own bytes (``_native.digest``, at memory speed in C); the kept list's
    text is neither held nor read again, and the body's copy of it is not decoded
    (:func:`read_body`). Without the compiled kernel the text is kept and compared instead.

    A ``tools`` value handed over parsed (the vLLM processors' turn specs: a new list of new
    dicts every request) is found by its :func:`value_digest` instead (:meth:`match_value`),
    once a list of that value has been read as text (:meth:`note_value`): no JSON text is
    written for it."""

    #: how many bytes of a text index it (the digest is taken only where they agree)
    PREFIX = 64

    def __init__(self, size: int = 64) -> None:
        self.size = size
        #: text digest -> (the text's first bytes, its length, its text digest or, without the
        #: kernel, the text itself, the list)
        self._lists: OrderedDict[str, tuple[bytes, int, bytes, KnownTools]] = OrderedDict()
        self._by_prefix: dict[bytes, list[str]] = {}
        #: value digest -> the text digest of the list read from that value's JSON text, and
        #: per text digest the value digests noted for it (dropped with it)
        self._by_value: dict[bytes, str] = {}
        self._values_of: dict[str, list[bytes]] = {}
        self._lock = threading.Lock()

    def match(self, raw: bytes, at: int) -> tuple[KnownTools, int] | None:
        """The list whose text stands in ``raw`` (UTF-8) at ``at``, and where it ends."""
        with self._lock:
            for key in self._by_prefix.get(raw[at : at + self.PREFIX], ()):
                _, size, check, hit = self._lists[key]
                end = at + size
                if end > len(raw):
                    continue
                if _DIGEST is None:
                    same = raw.startswith(check, at)
                else:
                    same = _DIGEST(raw, at, end, _DIGEST_KEY) == check
                if same:
                    self._lists.move_to_end(key)
                    return hit, end
        return None

    def find(self, raw: bytes) -> tuple[KnownTools, int, int] | None:
        """A list this holds standing in ``raw`` (a UTF-8 JSON body) as the value of a key
        ``"tools"``: the list, where its text starts and ends; the caller checks that the key
        is the body's own (:func:`read_body`). O(bytes) in C: a search for the key, then one
        digest per list that starts the same way."""
        if not self._lists:
            return None
        at = raw.find(b'"tools"')
        while at >= 0:
            m = _WS_BYTES.match(raw, at + 7)
            i = m.end() if m is not None else at + 7
            if raw[i : i + 1] == b":":
                m = _WS_BYTES.match(raw, i + 1)
                v = m.end() if m is not None else i + 1
                hit = self.match(raw, v)
                if hit is not None:
                    return hit[0], v, hit[1]
            at = raw.find(b'"tools"', at + 7)
        return None

    def put(self, text: str, tools: tuple[Tool, ...]) -> KnownTools:
        """Keep ``tools``, read from ``text``; kept with their key (the text's digest)."""
        data = text.encode("utf-8", "surrogatepass")
        key = tools_digest(data)
        known = KnownTools(key, tools)
        check = data if _DIGEST is None else _DIGEST(data, 0, len(data), _DIGEST_KEY)
        prefix = data[: self.PREFIX]
        with self._lock:
            if key not in self._lists:
                self._by_prefix.setdefault(prefix, []).append(key)
            self._lists[key] = (prefix, len(data), check, known)
            self._lists.move_to_end(key)
            while len(self._lists) > self.size:
                old, (old_prefix, *_) = self._lists.popitem(last=False)
                same = self._by_prefix[old_prefix]
                same.remove(old)
                if not same:
                    del self._by_prefix[old_prefix]
                for value in self._values_of.pop(old, ()):
                    self._by_value.pop(value, None)
        return known

    def match_value(self, value: bytes) -> KnownTools | None:
        """The list noted for a ``tools`` value of this :func:`value_digest`, if still kept."""
        with self._lock:
            key = self._by_value.get(value)
            if key is None or key not in self._lists:
                return None
            self._lists.move_to_end(key)
            return self._lists[key][3]

    def note_value(self, value: bytes, key: str) -> None:
        """Note that the list kept under ``key`` was read from a value of digest ``value``."""
        with self._lock:
            if key in self._lists and value not in self._by_value:
                self._by_value[value] = key
                self._values_of.setdefault(key, []).append(value)


def value_digest(value: Any) -> bytes | None:
    """A digest of a parsed JSON value (lists, dicts, strings, numbers, booleans, None) that
    tells apart every two values whose JSON texts differ but for spacing: ``marshal``'s
    serialisation (format 2: no back-references, so the same value gives the same bytes
    whatever the sharing of its objects; ``True``, ``1`` and ``1.0`` apart; keys in their
    order), hashed. At C speed, several times faster than writing its JSON text. None for a
    value that holds anything else (then the value is written as text)."""
    try:
        data = marshal.dumps(value, 2)
    except ValueError:
        return None
    return hashlib.blake2b(data, digest_size=16).digest()


#: the compiled kernel's keyed digest of a byte range (None without the kernel: then the
#: texts are kept and compared), and this process's key for it
_DIGEST: Callable[[bytes, int, int, bytes], bytes] | None
try:
    _DIGEST = _kernel.native_module().digest
except ImportError:
    _DIGEST = None
_DIGEST_KEY = os.urandom(192)


def tools_digest(text: str | bytes) -> str:
    """The key of a ``tools`` value's JSON text (or of that text in UTF-8): its blake2b
    digest."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = frozenset(" \t\n\r")
_WS_BYTES = re.compile(rb"[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The first position at or after ``i`` that is not JSON whitespace."""
    if text[i : i + 1] not in _WS_CHARS:  # most often: nothing to skip, no regex run
        return i
    m = _WS.match(text, i)
    return m.end() if m is not None else i


#: a reader of a known value at a top-level member: (key, text, position) -> (value, end) |
#: None (the ``tools`` and ``tool_choice`` members are asked)
Known = Callable[[str, str, int], "tuple[KnownTools | KnownChoice, int] | None"]
#: the members :class:`Known` is asked about
_KNOWN_KEYS = frozenset({"tools", "tool_choice"})


def _members(
    text: str, known: Known | None = None
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]] | None:
    """The members of the JSON object ``text`` (as ``json.loads`` reads them: the last of two
    equal keys wins) and the span of each value in ``text``; None when ``text`` is not one JSON
    object or cannot be read this way (then ``json.loads`` says why). ``known``: where it
    recognises the ``tools`` value, that value is its :class:`KnownTools`, and the
    ``tool_choice`` value its :class:`KnownChoice`, neither parsed."""
    try:
        i = _skip(text, 0)
        if text[i] != "{":
            return None
        i = _skip(text, i + 1)
        data: dict[str, Any] = {}
        spans: dict[str, tuple[int, int]] = {}
        if text[i] == "}":
            i += 1
        else:
            while True:
                if text[i] != '"':
                    return None
                key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
                i = _skip(text, i)
                if text[i] != ":":
                    return None
                i = _skip(text, i + 1)
                hit = known(key, text, i) if known is not None and key in _KNOWN_KEYS else None
                value, end = hit if hit is not None else _DECODER.raw_decode(text, i)
                data[key], spans[key] = value, (i, end)
                i = _skip(text, end)
                if text[i] == "}":
                    i += 1
                    break
                if text[i] != ",":
                    return None
                i = _skip(text, i + 1)
    except (ValueError, IndexError, RecursionError):
        return None
    return (data, spans) if _skip(text, i) == len(text) else None


#: the span of each top-level member's value in the text read
Spans = dict[str, tuple[int, int]]


def read_body(body: bytes | str, tool_lists: ToolLists | None = None) -> tuple[Any, str, Spans]:
    """The JSON value of ``body`` (its ``tools`` a :class:`KnownTools` where ``tool_lists``
    holds their text), its text, and the span of each top-level member's value in that text
    (empty when the body is not read this way: then the text is ""). Raises what
    ``json.loads(body)`` raises.

    Where ``tool_lists`` holds the list the body's bytes show at a ``"tools"`` key, only the
    text around it is decoded and read, the list's place taken by a one-character stand-in
    (the returned text holds it): the known list, often most of the body, is hashed, never
    decoded. The stand-in must be read as the body's own top-level ``tools`` value, else the
    whole body is read as text. A ``tool_choice`` text read and checked over that list before
    (:meth:`KnownTools.note_choice`) is then found by a comparison too: its value is the
    :class:`KnownChoice`."""
    text: str | None = body if isinstance(body, str) else None
    raw: bytes | None = None
    try:
        if not isinstance(body, str):
            encoding = json.detect_encoding(body)
            if encoding == "utf-8":
                raw = body
            else:  # UTF-16/32, or a byte-order mark: as text first
                text = body.decode(encoding, "surrogatepass")
        if raw is None and text is not None and tool_lists is not None:
            raw = text.encode("utf-8", "surrogatepass")
    except (UnicodeError, LookupError):
        raw = text = None
    if raw is not None and tool_lists is not None:
        found = tool_lists.find(raw)
        got = _known_read(raw, found) if found is not None else None
        if got is not None:
            return got
    if text is None and raw is not None:
        try:
            text = raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            text = None
    read = _members(text) if text is not None else None
    if read is None or text is None:
        return json.loads(body), "", {}
    data, spans = read
    return data, text, spans


def _known_read(raw: bytes, found: tuple[KnownTools, int, int]) -> tuple[Any, str, Spans] | None:
    """:func:`read_body`'s reading of a body where a kept list was ``found``
    (:meth:`ToolLists.find`: the list, where its text starts and ends): the bytes around the
    list decoded with a stand-in ``0`` for it, read, and the stand-in's place checked to be
    the top-level ``tools`` value; None when it is not. A ``tool_choice`` kept with the list
    is compared, not parsed (it counts only where the stand-in is the body's ``tools``, and so
    its list the body's)."""
    known, start, end = found
    try:
        before = raw[:start].decode("utf-8", "surrogatepass")
        text = before + "0" + raw[end:].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    at = len(before)

    def standin(key: str, t: str, i: int) -> tuple[KnownTools | KnownChoice, int] | None:
        if key == "tool_choice":
            return known.match_choice(t, i)
        return (known, i + 1) if i == at else None

    read = _members(text, standin)
    if read is None or read[0].get("tools") is not known:
        return None
    data, spans = read
    return data, text, spans
