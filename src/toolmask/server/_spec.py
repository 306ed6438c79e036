"""Turn specs: the fields of a chat request that shape the reply's grammar, handed to an engine
that compiles the grammar in another process (``toolmask serve --engine vllm``: vLLM's logits
processors, :mod:`toolmask.integrations.vllm`).

The server writes a spec as JSON text made of the request's own member texts
(:func:`turn_spec`): the ``tools`` list, often most of the body, is copied as bytes, never
parsed or written again. The reader (:func:`read_turn_spec`) finds a ``tools`` list it has read
before by the digest of the spec's bytes (:class:`ToolLists`, as the server finds the list in a
request body), so a spec over the same tools costs O(bytes) in C whatever the subset, and the
same Tool objects reach the planner's caches. A spec may also be an object (a client of the
processors writes one); its tools are then found by their value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolmask.server._body import KnownTools, ToolLists, _known_read, read_body
from toolmask.server._protocol import APIError, ChatRequest, parse_chat_request
from toolmask.tools import FORMATS

__all__ = ["OWN_FIELDS", "SPEC_FIELDS", "read_turn_spec", "turn_spec"]

#: the request fields that shape the reply's grammar (what a turn spec carries)
SPEC_FIELDS = (
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "reasoning_effort",
    "chat_template_kwargs",
)
#: a spec's own fields: the wire format's name and whether the prompt opened the reasoning
#: channel
OWN_FIELDS = ("format", "reasoning_open")

#: what stands for the conversation in the request a spec is read as (a spec has none)
_MESSAGES = [{"role": "user", "content": "-"}]
_PREFIX = '{"model": "-", "messages": ' + json.dumps(_MESSAGES)


def turn_spec(
    body: bytes,
    fmt: str,
    *,
    reasoning_open: bool,
    tool_lists: ToolLists | None = None,
) -> bytes:
    """The turn spec of an already validated request body, as JSON text (UTF-8): its
    :data:`SPEC_FIELDS` as the client sent them (JSON ``null`` left out), the wire format
    ``fmt`` and whether the prompt opened the reasoning channel (what :func:`read_turn_spec`
    reads).

    Made of the body's own member texts: with ``tool_lists`` holding the body's ``tools`` (the
    server's, which read this body), the list's bytes are copied, neither decoded nor written
    again."""
    found = tool_lists.find(body) if tool_lists is not None else None
    read = _known_read(body, found) if found is not None else None
    if read is None:  # no kept list there: the body read whole, its list decoded
        found = None
        read = read_body(body)
    data, text, spans = read
    own = [b'"format": ' + json.dumps(fmt).encode()]
    if reasoning_open:
        own.append(b'"reasoning_open": true')
    parts: list[bytes] = []
    for key in SPEC_FIELDS:
        if data.get(key) is None:
            continue
        if key == "tools" and found is not None:
            member = body[found[1] : found[2]]
        elif key in spans:
            start, end = spans[key]
            member = text[start:end].encode("utf-8", "surrogatepass")
        else:  # a body read whole (no member texts): the value written
            member = json.dumps(data[key], ensure_ascii=False).encode("utf-8", "surrogatepass")
        parts.append(json.dumps(key).encode() + b": " + member)
    return b"{" + b", ".join(parts + own) + b"}"


def read_turn_spec(
    raw: Any, tool_lists: ToolLists | None = None, *, where: str = "spec"
) -> tuple[ChatRequest, str | None, bool]:
    """A turn spec read and checked: the chat request it stands for (its conversation a
    stand-in), the wire format's name (None when the spec names none) and whether the prompt
    opened the reasoning channel.

    ``raw``: an object, or JSON text of one (``str`` or UTF-8 ``bytes``, as :func:`turn_spec`
    writes). ``tool_lists``: the tool lists of earlier specs; a ``tools`` list read before is
    found by the digest of the spec's bytes (text) or of its value (an object), and is neither
    parsed nor checked again.

    Raises ValueError naming the field at fault, prefixed with ``where``: a spec that is not
    an object or JSON text of one, an unknown field, an unknown format, a ``reasoning_open``
    that is not a boolean, or any error :func:`parse_chat_request` reports for the request
    fields."""
    text = ""
    spans: dict[str, tuple[int, int]] = {}
    if isinstance(raw, str | bytes):
        try:
            raw, text, spans = read_body(raw, tool_lists)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise ValueError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"{where} must be an object (or JSON text of one), not {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - set(SPEC_FIELDS) - set(OWN_FIELDS))
    if unknown:
        raise ValueError(
            f"{where}: unknown field {unknown[0]!r}; known: " + ", ".join(SPEC_FIELDS + OWN_FIELDS)
        )
    fmt = raw.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(
            f"{where}.format: unknown wire format {fmt!r}; known: " + ", ".join(sorted(FORMATS))
        )
    opens = raw.get("reasoning_open", False)
    if not isinstance(opens, bool):
        raise ValueError(f"{where}.reasoning_open must be a boolean")
    fields = [k for k in SPEC_FIELDS if k in raw]
    body: Mapping[str, Any] | bytes
    tools = raw.get("tools")
    if spans and tools is not None and not isinstance(tools, KnownTools):
        # tools not seen before: the request written from the spec's own member texts, so
        # that the list is kept under the digest of the bytes the next spec will hold
        members = "".join(f", {json.dumps(k)}: {text[spans[k][0] : spans[k][1]]}" for k in fields)
        body = (_PREFIX + members + "}").encode("utf-8", "surrogatepass")
    else:
        body = {"model": "-", "messages": _MESSAGES, **{k: raw[k] for k in fields}}
    try:
        req = parse_chat_request(body, tool_lists=tool_lists)
    except APIError as e:
        raise ValueError(f"{where}: {e.message}") from None
    return req, (FORMATS[fmt].name if fmt is not None else None), opens
