"""The readers and scanners every codec shares: what a block reader returns, and the pieces it
is built from.

A codec's block reader (:meth:`~toolmask.tools.formats.Codec.read_block`) is given the text of a
reply and the offset of a trigger; it returns a :class:`Block`: ``ok`` (the calls and the end of
the block), ``bad`` (malformed: the reason and where the raw text ends) or ``pending`` (the text
ends inside the block and more may come; only when not ``final``). A reader decides from the
text before the point it returns, so a prefix of a reply yields a prefix of the final parse.

Shared here: the JSON scanners (:func:`json_end`, string-aware bracket counting; :func:`loads`,
JSON without NaN), the one reader of a JSON call object (:func:`call_of`), calls written
``HEAD {arguments} TAIL`` (:func:`read_marked_calls`), calls matched by a pattern
(:func:`regex_calls`), and the typing of raw parameter values with the tool's schema
(:func:`coerce_value`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "WS",
    "Block",
    "Call",
    "bad_block",
    "call_of",
    "closed_block",
    "coerce_value",
    "done",
    "id_of",
    "is_value",
    "json_end",
    "json_type",
    "loads",
    "param_schema",
    "python_str",
    "python_value",
    "read_marked_calls",
    "regex_calls",
    "schema_types",
    "separator_at",
    "skip_ws",
    "string_end",
]

WS = " \t\r\n"


@dataclass(slots=True)
class Call:
    """A call inside a block. ``stream`` is its arguments text as the stream sends it: the raw
    text when the envelope reads name-then-``{``, else (complete calls only) canonical JSON.
    ``id``: the call id the model wrote (Mistral's ``"id"`` key, ``[CALL_ID]``, Command R7B's
    ``tool_call_id``, Solar Open's), where its format writes one."""

    name: str | None
    stream: str
    args: dict[str, Any] | None = None  # None while incomplete
    id: str | None = None


@dataclass(slots=True)
class Block:
    status: str  # "ok" | "bad" | "pending"
    end: int = 0
    calls: list[Call] = field(default_factory=list)
    reason: str = ""
    #: a block without calls may carry text: ``"reasoning"`` or ``"prose"`` (Harmony messages)
    text_kind: str = ""
    text: str = ""


def done(name: str, args: dict[str, Any], call_id: str | None = None) -> Call:
    """A complete call (its stream text is the canonical JSON of ``args``); ``call_id`` the id
    the model wrote, if any."""
    return Call(name, json.dumps(args, ensure_ascii=False), args, call_id or None)


def skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in WS:
        i += 1
    return i


def separator_at(text: str, j: int, sep: str, close: str, final: bool) -> bool:
    """Whether the separator ``sep`` between two calls of a block is at ``text[j]``: it is
    there, and not as the start of a longer ``close`` that is there too, or may still be
    (``--`` and ``--end>>``; a separator that starts with the close, a closer and the opener
    again, is the separator)."""
    if not sep or not text.startswith(sep, j):
        return False
    if len(close) <= len(sep):
        return True
    rest = text[j : j + len(close)]
    return not (rest == close or (not final and close.startswith(rest)))


def next_call_at(
    text: str,
    end: int,
    sep: str,
    close: str,
    final: bool,
    start: int,
    starts: Callable[[str, int], bool],
) -> int | Block | None:
    """In a block of several calls, where the call after the one that ends at ``end`` starts:
    after the separator ``sep`` (its text without whitespace, :attr:`Layout.separator_mark`)
    or, without one, where ``starts`` says a call starts and the block's ``close`` does not.
    None: the calls end there (the close is to follow). A pending :class:`Block` where the
    text can still go either way; a truncated one (from ``start``, the block's inside) where
    the reply ends after a separator."""
    n = len(text)
    j = skip_ws(text, end)
    if j >= n and not final:
        return Block("pending")  # another call may follow
    if sep:  # the separator's text, then the next call
        if not separator_at(text, j, sep, close, final):
            if not final and sep.startswith(text[j:]):
                return Block("pending")
            return None
        j = skip_ws(text, j + len(sep))
        if j < n:
            return j
        if final:
            return bad_block(
                text, start, close, "truncated: the reply ends after a separator", True
            )
        return Block("pending")
    if (close and text.startswith(close, j)) or not starts(text, j):
        if not final and close.startswith(text[j:]):
            return Block("pending")
        return None
    return j


def closed_block(
    text: str, k: int, open_len: int, close: str, final: bool
) -> tuple[int, int] | Block:
    """``(inner end, block end)`` of a block that ends with ``close``; or the pending /
    truncated :class:`Block` when the text ends before it."""
    c = text.find(close, k + open_len)
    if c >= 0:
        return c, c + len(close)
    if final:
        return Block("bad", len(text), reason=f"truncated: the reply ends before {close!r}")
    return Block("pending")


def bad_block(text: str, start: int, close: str, reason: str, final: bool) -> Block:
    """A malformed block: it extends to the first ``close`` at or after ``start``, else to the
    end of the text (undecided until ``final``)."""
    if close:
        c = text.find(close, start)
        if c >= 0:
            return Block("bad", c + len(close), reason=reason)
    if final:
        return Block("bad", len(text), reason=reason)
    return Block("pending")


# -- JSON ---------------------------------------------------------------------------------------

_STRUCT = re.compile(r'[{}\[\]"]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def json_end(text: str, i: int) -> int | None:
    """End (exclusive) of the bracketed JSON value starting at ``text[i]`` (``{`` or ``[``), or
    None when the text ends first. String-aware bracket counting; does not validate."""
    depth = 0
    j = i
    while True:
        m = _STRUCT.search(text, j)
        if m is None:
            return None
        c = m.group()
        j = m.end()
        if c == '"':
            end = string_end(text, j - 1)
            if end is None:
                return None
            j = end
        elif c in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j


def string_end(text: str, i: int) -> int | None:
    """End (exclusive, after the closing quote) of the JSON string whose opening quote is at
    ``text[i]``, or None when the text ends first. Reads escapes; does not validate them."""
    m = _STRING_REST.match(text, i + 1)
    return None if m is None else m.end()


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, reason)``; NaN/Infinity are not JSON."""
    try:
        return json.loads(text, parse_constant=_reject_constant), None
    except json.JSONDecodeError as e:
        return None, f"invalid JSON: {e.msg} at char {e.pos}"
    except (ValueError, RecursionError) as e:
        return None, f"invalid JSON: {e}"


def call_of(
    obj: Any,
    *,
    name_key: str = "name",
    args_key: str = "arguments",
    id_key: str = "",
    name_as_key: bool = False,
) -> Call | str:
    """The call a JSON call object holds, or why it is not one: the name under ``name_key``
    (or ``"name"``), the arguments under ``args_key``, ``"arguments"`` or ``"parameters"``
    (``{}`` when none; a JSON string holding an object is read too), the id the model wrote
    under ``id_key`` (a string or an integer). ``name_as_key``: the object is ``{NAME: ARGS}``
    (Apertus). Lenient where the grammar is exact: every codec that reads JSON call objects
    reads them here."""
    if not isinstance(obj, dict):
        return "a call must be a JSON object"
    if name_as_key:
        if len(obj) != 1:
            return "a call must be an object with one key, the tool's name"
        ((name, args),) = obj.items()
    else:
        name = obj.get(name_key, obj.get("name"))
        if not isinstance(name, str):
            return f"the call has no string {name_key!r}"
        for key in (args_key, "arguments", "parameters"):
            if key in obj:
                args = obj[key]
                break
        else:
            args = {}
    if isinstance(args, str):
        args, err = loads(args)
        if err is not None:
            return f"the arguments string is not JSON: {err}"
    if not isinstance(args, dict):
        return "the arguments must be a JSON object"
    call = done(name, args)
    call.id = id_of(obj.get(id_key) if id_key and not name_as_key else None)
    return call


def id_of(value: object) -> str | None:
    """A call id as a model wrote it (a string or an integer; None for anything else)."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        return str(value) or None
    return None


def regex_calls(
    pattern: re.Pattern[str], text: str, pos: int, inner_end: int, end: int
) -> list[Call] | Block:
    """The calls of ``text[pos:inner_end]``, written one after another as ``pattern`` matches
    them (group 1 the name, group 2 the JSON arguments object), whitespace between them
    allowed; or a ``bad`` :class:`Block` ending at ``end`` at the first that is not one."""
    calls: list[Call] = []
    while True:
        while pos < inner_end and text[pos] in WS:
            pos += 1
        if pos >= inner_end:
            return calls
        m = pattern.match(text, pos, inner_end)
        if m is None:
            return Block("bad", end, reason="expected a complete tool call")
        args, err = loads(m.group(2))
        if err is not None or not isinstance(args, dict):
            return Block("bad", end, reason=err or "the arguments must be a JSON object")
        calls.append(done(m.group(1), args))
        pos = m.end()


def read_marked_calls(
    text: str,
    pos: int,
    head: re.Pattern[str],
    tail: str,
    *,
    first: str,
    need: str,
    final: bool,
    many: bool,
) -> tuple[list[Call], int] | Block | str:
    """Calls written ``HEAD {arguments} TAIL`` from ``text[pos]`` on (Solar Open's,
    Functionary's). ``head`` matches up to the arguments object (group ``name``); ``need`` is
    the head's last fixed text: until it appears, a head that does not match yet may still
    (pending). The arguments are a JSON object, read string-aware, so a marker inside a string
    value does not end it. ``many``: further calls may follow, each starting with ``first``
    (whitespace between them). Returns the calls and the end of the last, a ``pending``
    :class:`Block`, or the reason the text is not a call (the caller extends the bad block to
    its close marker)."""
    n = len(text)
    calls: list[Call] = []
    while True:
        m = head.match(text, pos)
        if m is None:
            if not final and need not in text[pos:]:
                return Block("pending")
            if need not in text[pos:]:
                return "truncated: the reply ends inside a call"
            return "expected a complete tool call"
        j = skip_ws(text, m.end())
        if j >= n or (text[j] == "{" and json_end(text, j) is None):
            return Block("pending") if not final else "truncated: the reply ends inside a call"
        if text[j] != "{":
            return "expected the arguments object"
        end = json_end(text, j)
        assert end is not None
        args, err = loads(text[j:end])
        if err is not None or not isinstance(args, dict):
            return err or "the arguments must be a JSON object"
        t = skip_ws(text, end)
        if not text.startswith(tail, t):
            if tail.startswith(text[t:]):
                return Block("pending") if not final else "truncated: the reply ends inside a call"
            return f"expected {tail!r} after the arguments"
        call = done(m.group("name"), args)
        if "id" in head.groupindex:
            call.id = m.group("id")
        calls.append(call)
        pos = t + len(tail)
        if not many:
            return calls, pos
        nxt = skip_ws(text, pos)
        rest = text[nxt:]
        if rest.startswith(first):
            pos = nxt
            continue
        if not final and first.startswith(rest):
            return Block("pending")
        return calls, pos


# -- raw values typed by the schema ------------------------------------------------------------


def json_type(v: object) -> str:
    """The JSON Schema type name of a JSON value in Python (``True`` is ``"boolean"``, not
    ``"integer"``; anything else that is not a list, dict or ``None`` is ``"string"``)."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if v is None:
        return "null"
    if isinstance(v, list):
        return "array"
    return "object" if isinstance(v, dict) else "string"


def param_schema(schemas: Mapping[str, Any] | None, tool: str, param: str) -> Any:
    """The JSON Schema of parameter ``param`` of ``tool`` (None when unknown)."""
    if not schemas:
        return None
    tool_schema = schemas.get(tool)
    if not isinstance(tool_schema, Mapping):
        return None
    props = tool_schema.get("properties")
    return props.get(param) if isinstance(props, Mapping) else None


def schema_types(schema: Any) -> set[str]:
    """The JSON types a (sub)schema admits, from ``type``, ``anyOf``/``oneOf``, ``enum`` and
    ``const``; empty when it does not say (any value)."""
    if not isinstance(schema, Mapping):
        return set()
    t = schema.get("type")
    out = {t} if isinstance(t, str) else {x for x in t if isinstance(x, str)} if t else set()
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            out |= schema_types(sub)
    values = list(schema.get("enum") or ())
    if "const" in schema:
        values.append(schema["const"])
    if values and not out:
        out |= {json_type(v) for v in values}
    return out


def coerce_value(raw: str, schema: Any) -> Any:
    """A parameter value written as raw text (XML-parameter formats): a string parameter keeps
    the text; any other type is read as JSON (then as a Python literal), else stays text.
    Without a schema, JSON is tried and the text is the fallback."""
    types = schema_types(schema)
    if types == {"string"}:
        return raw
    value, err = loads(raw)
    if err is None:
        if (
            not types
            or json_type(value) in types
            or (json_type(value) == "integer" and "number" in types)
        ):
            return value
        if "string" in types:
            return raw
        return value
    if "string" in types or not types:
        return raw
    lit = python_value(raw)
    return raw if lit is _NOT else lit


_NOT = object()


def python_value(text: str) -> Any:
    """A Python literal read as JSON data (``True`` -> true, ``None`` -> null, tuples -> lists),
    or a sentinel when it is not one (:func:`is_value` tells)."""
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _NOT
    return _jsonify(v)


def _jsonify(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_jsonify(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonify(x) for k, x in v.items()}
    if isinstance(v, set | frozenset | bytes | complex):
        return _NOT
    return v


def is_value(v: Any) -> bool:
    """Whether :func:`python_value` read a literal."""
    return v is not _NOT


def python_str(v: object) -> str:
    """A JSON value as Jinja's ``string`` filter (Python's ``str``) writes it: strings as they
    are, ``True`` / ``False`` / ``None``, lists and dicts as their ``repr`` (single-quoted
    strings). Templates that write non-string arguments so: Seed-OSS, MiniCPM 5, Llama 3.2
    pythonic."""
    return v if isinstance(v, str) else repr(v)
