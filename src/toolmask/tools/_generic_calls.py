"""Where a chat template's rendering holds the probe's calls, per call notation (the first
step of :mod:`toolmask.tools._generic`: find the calls), and the shape of a JSON call object:
which of its keys hold the name, the arguments, the id, constants and counters."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.tools.formats._pythonic import expression_end, read_calls
from toolmask.tools.formats._read import json_end, loads

__all__ = [
    "FUNCTION_TAG",
    "INVOKE_TAG",
    "NOTATIONS",
    "Call",
    "Shape",
    "Spans",
    "call_shape",
    "json_objects",
]

_WS = " \t\r\n"

#: ``(start, end)`` of each call in a rendered text
Spans = list[tuple[int, int]]
Call = tuple[str, dict[str, Any]]


# -- finding the calls -------------------------------------------------------------------------


def _json_spans(text: str, calls: Sequence[Call], ids: Sequence[str]) -> Spans | None:
    """The JSON objects holding each call (see :func:`call_shape`), their keys the same in every
    call (:func:`_settle`)."""
    got = json_objects(text, calls, ids)
    return got[0] if got is not None else None


def json_objects(
    text: str, calls: Sequence[Call], ids: Sequence[str]
) -> tuple[Spans, _Keys] | None:
    """The JSON objects holding each call and the keys they settle on."""
    out: Spans = []
    shapes: list[Shape] = []
    i = 0
    for (name, args), cid in zip(calls, ids, strict=True):
        while True:
            i = text.find("{", i)
            if i < 0:
                return None
            end = json_end(text, i)
            obj = loads(text[i:end])[0] if end is not None else None
            shape = call_shape(obj, name, args, cid) if end is not None else None
            if end is not None and shape is not None:
                out.append((i, end))
                shapes.append(shape)
                i = end
                break
            i += 1
    keys = _settle(shapes)
    return (out, keys) if keys is not None else None


@dataclass(frozen=True, slots=True)
class Shape:
    """A JSON call object's keys in the template's order with their roles (``name``, ``args``,
    ``id``, ``type``: the text ``"function"``, ``function``: a nested object whose keys are
    :attr:`function_keys`; ``other``: a key of no such role, its value in :attr:`others`,
    the nested object's in :attr:`function_others`), as
    :class:`~toolmask.tools.formats._json.JsonCalls` takes them; ``args_string``: the
    arguments are a JSON string holding their JSON text."""

    call_keys: tuple[tuple[str, str], ...]
    function_keys: tuple[tuple[str, str], ...] = ()
    args_string: bool = False
    others: tuple[tuple[str, Any], ...] = ()
    function_others: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class _Keys:
    """The keys of a message's call objects, settled over its calls (:func:`_settle`): their
    roles (the ``other`` ones now ``const``, ``id`` or ``count``), the constant strings, the
    id's shape (``string``: the id the client gave; ``counter``: :attr:`id_prefix` and the
    call's index; ``index``: the index as an integer; ``""``: no id) and the other keys that
    count the calls (key, ``counter`` or ``index``, prefix)."""

    call_keys: tuple[tuple[str, str], ...]
    function_keys: tuple[tuple[str, str], ...]
    args_string: bool
    constants: tuple[tuple[str, Any], ...] = ()
    id_shape: str = ""
    id_prefix: str = ""
    counts: tuple[tuple[str, str, str], ...] = ()


def _counter(values: Sequence[Any]) -> tuple[str, str] | None:
    """The id shape and prefix of values that count the calls (``"call_0"``, ``"call_1"``, or
    ``0``, ``1``), or None. Strings count only over two calls or more (one ``"v0"`` is as
    much a constant)."""
    n = len(values)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return ("index", "") if list(values) == list(range(n)) else None
    if n < 2 or not all(isinstance(v, str) for v in values) or not values[0].endswith("0"):
        return None
    prefix = values[0][:-1]
    return ("counter", prefix) if list(values) == [f"{prefix}{i}" for i in range(n)] else None


def _settle(shapes: Sequence[Shape]) -> _Keys | None:
    """The keys every call object of a message shares: the same keys and roles in every
    call; a key of no known role (in the call object or in its nested function object) a
    JSON scalar the same in every call, type included (a constant: ``"kind": "call"``,
    ``"version": 1``, ``"strict": true``, ``null``), or a counter of the calls: the id, where
    neither object has one, else a key that counts (``"index": 0``); None when they
    disagree, or where one key of no known role is in both objects."""
    first = shapes[0]
    head = (first.call_keys, first.function_keys, first.args_string)
    if any((s.call_keys, s.function_keys, s.args_string) != head for s in shapes):
        return None
    has_id = any(r == "id" for _, r in (*first.call_keys, *first.function_keys))
    constants: list[tuple[str, Any]] = []
    counts: list[tuple[str, str, str]] = []
    id_shape, prefix = ("string" if has_id else ""), ""

    def settled(
        pairs: tuple[tuple[str, str], ...], others: Callable[[Shape], Any], outer: bool
    ) -> list[tuple[str, str]] | None:
        nonlocal id_shape, prefix
        keys: list[tuple[str, str]] = []
        for key, role in pairs:
            if role == "other":
                values = [dict(others(s))[key] for s in shapes]
                got = _counter(values)
                if got is not None and outer and not id_shape:
                    (id_shape, prefix), role = got, "id"
                elif got is not None:
                    counts.append((key, *got))
                    role = "count"
                elif _scalar(values[0]) and _same(values):
                    constants.append((key, values[0]))
                    role = "const"
                else:
                    return None
            keys.append((key, role))
        return keys

    outer = settled(first.call_keys, lambda s: s.others, True)
    inner = settled(first.function_keys, lambda s: s.function_others, False)
    named = [k for k, _ in constants] + [k for k, _, _ in counts]
    if outer is None or inner is None or len(set(named)) != len(named):
        return None
    return _Keys(
        tuple(outer), tuple(inner), first.args_string, tuple(constants), id_shape, prefix,
        tuple(counts),
    )  # fmt: skip


def _scalar(value: Any) -> bool:
    """Whether ``value`` is a JSON scalar (a string, a number, a boolean or null)."""
    return value is None or isinstance(value, str | int | float | bool)


def _same(values: Sequence[Any]) -> bool:
    """Whether the JSON values are one and the same, type included (``1``, ``1.0`` and
    ``true`` are three)."""
    texts = {json.dumps(v, sort_keys=True) for v in values}
    return len(texts) == 1


def _role(value: Any, name: str, args: dict[str, Any], cid: str) -> tuple[str, bool]:
    """The role of one value of a call object (``""``: none), and whether it is the
    arguments written as a JSON string."""
    if value == name:
        return "name", False
    if value == args:
        return "args", False
    if isinstance(value, str) and value.lstrip(_WS).startswith("{"):
        decoded, err = loads(value)
        if err is None and decoded == args:
            return "args", True
    if cid and value == cid:
        return "id", False
    return ("type", False) if value == "function" else ("", False)


def call_shape(
    obj: Any, name: str, args: dict[str, Any], cid: str, *, nested: bool = False
) -> Shape | None:
    """How the JSON value ``obj`` holds the call: each key's role, once each (the name and the
    arguments, directly or in one nested object that holds them: OpenAI's function object;
    an id, the probe call's ``cid``, in either object, and ``"function"`` at most once;
    other keys of a JSON scalar, in either object, for :func:`_settle` to tell constants from
    counters), or None when it is not exactly the call. ``nested``: ``obj`` is the nested
    object (no type, no object nested in it)."""
    if not isinstance(obj, dict):
        return None
    keys: list[tuple[str, str]] = []
    others: list[tuple[str, Any]] = []
    inner: Shape | None = None
    quoted = False
    for key, value in obj.items():
        role, as_text = _role(value, name, args, cid)
        if nested and role == "type":
            role = ""  # "function" inside the function object: a constant, if anything
        if not role and not nested and inner is None:  # OpenAI's nested function object
            inner = call_shape(value, name, args, cid, nested=True)
            role = "function" if inner is not None else ""
        if isinstance(value, str) and cid and cid in value and role != "id":
            return None  # the call's id in another key's text: not a constant
        if not role and _scalar(value):
            role = "other"  # a constant or a counter, as the message's calls settle it
            others.append((key, value))
        if not role:
            return None
        keys.append((key, role))
        quoted = quoted or as_text
    roles = [r for _, r in keys if r not in ("function", "other")]
    if nested:
        return (
            Shape(tuple(keys), (), quoted, tuple(others))
            if sorted(roles) in (["args", "name"], ["args", "id", "name"])
            else None
        )
    if inner is not None:  # its name, its arguments and its id, if it holds the id
        quoted = inner.args_string
        roles += [r for _, r in inner.call_keys if r != "other"]
    if tuple(sorted(roles)) not in _ROLE_SETS:
        return None
    if inner is None:
        return Shape(tuple(keys), (), quoted, tuple(others))
    return Shape(tuple(keys), inner.call_keys, quoted, tuple(others), inner.others)


#: the roles a call object may hold (sorted): the name and the arguments, an id, the type
_ROLE_SETS = {
    ("args", "name"),
    ("args", "id", "name"),
    ("args", "name", "type"),
    ("args", "id", "name", "type"),
}


def _python_spans(text: str, calls: Sequence[Call], ids: Sequence[str]) -> Spans | None:
    """The Python calls ``NAME(key=value, ...)`` of each call."""
    out: Spans = []
    i = 0
    for name, args in calls:
        m = re.compile(rf"(?<![\w.]){re.escape(name)}\(").search(text, i)
        if m is None:
            return None
        end = expression_end(text, m.end() - 1)
        got = read_calls(text[m.start() : end], listed=False, json_names=True) if end else None
        if (
            end is None
            or not isinstance(got, list)
            or [(c.name, c.args) for c in got] != [(name, args)]
        ):
            return None
        out.append((m.start(), end))
        i = end
    return out


INVOKE_TAG = re.compile(r'<([A-Za-z_][\w:.-]*) name="([^"<>]+)">')
FUNCTION_TAG = re.compile(r"<([A-Za-z_][\w:.-]*)=([^>\n]+)>")


def _invoke_spans(text: str, calls: Sequence[Call], ids: Sequence[str]) -> Spans | None:
    """The invoke tags ``<TAG name="NAME">...</TAG>`` of each call."""
    return _tag_spans(INVOKE_TAG, text, calls)


def _function_spans(text: str, calls: Sequence[Call], ids: Sequence[str]) -> Spans | None:
    """The function tags ``<TAG=NAME>...</TAG>`` of each call (``<function=NAME>``)."""
    return _tag_spans(FUNCTION_TAG, text, calls)


def _tag_spans(tag: re.Pattern[str], text: str, calls: Sequence[Call]) -> Spans | None:
    """The tags ``tag`` finds (its groups: the tag's name, the call's name) up to their close
    tags, one for each call (read by the codec itself when the format is proven: here only
    the tags are found)."""
    out: Spans = []
    i = 0
    for name, _ in calls:
        m = next((m for m in tag.finditer(text, i) if m.group(2) == name), None)
        if m is None:
            return None
        close = f"</{m.group(1)}>"
        end = text.find(close, m.end())
        if end < 0:
            return None
        out.append((m.start(), end + len(close)))
        i = end + len(close)
    return out


#: the shapes of a call written as its name, a text and its JSON arguments: ``(the pattern
#: up to the name, the text between the name and the arguments, the pattern right after the
#: arguments)``, each ``{tag}`` the tag's name the first pattern found: a function tag
#: ``<TAG=NAME>ARGS</TAG>``, a tag naming it in its last attribute ``<TAG KEY="NAME">ARGS
#: </TAG>`` (other attributes before it: an id), or a line ``KEY: NAME`` (the name bare or
#: in double quotes) followed by a line ``KEY: ARGS`` (the arguments' JSON to the end of that
#: line, or over the lines ``tojson(indent=k)`` writes)
_TAGGED: tuple[tuple[str, str, str], ...] = (
    (r"<(?P<tag>[A-Za-z_][\w:.-]*)=", r">[ \t\r\n]*", r"[ \t\r\n]*</{tag}>"),
    (
        r'<(?P<tag>[A-Za-z_][\w:.-]*)(?: [A-Za-z_][\w:.-]*="[^"<>]*")* [A-Za-z_][\w:.-]*="',
        r'">[ \t\r\n]*',
        r"[ \t\r\n]*</{tag}>",
    ),
    (
        r'(?:^|(?<=\n))(?P<tag>[ \t]*)[A-Za-z_][\w-]*:[ \t]*"?',
        r'"?\n(?P=tag)[A-Za-z_][\w-]*:[ \t]*',
        r"[ \t]*(?:\n|$)",
    ),
)


def _tagged_spans(text: str, calls: Sequence[Call], ids: Sequence[str]) -> Spans | None:
    """Each call written as its name, a text and its JSON arguments, in one of the shapes of
    :data:`_TAGGED` (the same for every call, the same text between the name and the
    arguments): from the name to the arguments' end."""
    for head, mid, tail in _TAGGED:
        out: Spans = []
        mids: set[str] = set()
        i = 0
        for name, args in calls:
            pattern = re.compile(head + "(?P<name>" + re.escape(name) + ")(?P<mid>" + mid + r")\{")
            got = None
            for m in pattern.finditer(text, i):
                a = m.end() - 1
                end = json_end(text, a)
                if end is None or loads(text[a:end])[0] != args:
                    continue
                after = re.compile(tail.format(tag=re.escape(m.group("tag"))))
                if after.match(text, end) is not None:
                    got = (m.start("name"), end, m.group("mid"))
                    break
            if got is None:
                break
            out.append(got[:2])
            mids.add(got[2])
            i = got[1]
        if len(out) == len(calls) and len(mids) == 1:
            return out
    return None


#: notation -> the finder of its calls in a rendered text (given the calls and their ids)
NOTATIONS: dict[str, Callable[[str, Sequence[Call], Sequence[str]], Spans | None]] = {
    "json": _json_spans,
    "python": _python_spans,
    "xml": _invoke_spans,
    "function": _function_spans,
    "tagged": _tagged_spans,
}
