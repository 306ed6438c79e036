"""What a format's block reader returns to the scanner, and helpers the readers share.

A format whose calls are not JSON call objects (XML parameters, name-then-arguments, Python
call syntax, ...) overrides :meth:`~toolmask.tools.formats.WireFormat.read_block` (or, when its
calls sit between ``open`` and ``close``, :meth:`~toolmask.tools.formats.WireFormat.read_inner`):
given the text and the offset of a trigger, it returns a :class:`Block`: ``ok`` (the calls and
the end of the block), ``bad`` (malformed: the reason and where the raw text ends) or
``pending`` (the text ends inside the block and more may come; only when not ``final``). A
reader decides from the text before the point it returns, so a prefix of a reply yields a
prefix of the final parse.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolmask.tools._spec import json_type

__all__ = [
    "Block",
    "Call",
    "bad_block",
    "coerce_value",
    "loads",
    "param_schema",
    "python_str",
    "python_value",
    "regex_calls",
    "schema_types",
    "skip_ws",
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


def json_object_end(text: str, i: int) -> int | None:
    """End (exclusive) of the JSON object or array at ``text[i]``, or None when the text
    ends first (string-aware bracket counting, no validation)."""
    depth = 0
    n = len(text)
    j = i
    while j < n:
        c = text[j]
        if c == '"':
            j += 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return None
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def tools_prompt(tools_json: str, how: str) -> str:
    """A template-less tool prompt: the tool list and how this format writes a call."""
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query. "
        "The functions, as JSON:\n" + tools_json + "\n\nTo call a function, write:\n" + how
    )


def skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in WS:
        i += 1
    return i


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
    or a sentinel when it is not one."""
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


def python_str(v: object) -> str:
    """A JSON value as Jinja's ``string`` filter (Python's ``str``) writes it: strings as they
    are, ``True`` / ``False`` / ``None``, lists and dicts as their ``repr`` (single-quoted
    strings). Templates that write non-string arguments so: Seed-OSS, MiniCPM 5, Llama 3.2
    pythonic."""
    return v if isinstance(v, str) else repr(v)


def is_value(v: Any) -> bool:
    return v is not _NOT
