"""The OpenAI Chat Completions request, validated into a typed :class:`ChatRequest`.

Pure (no FastAPI, no model): ``parse_chat_request(body_bytes)`` either returns a
:class:`ChatRequest` or raises :class:`APIError`, whose :meth:`APIError.body` is OpenAI's error
shape ``{"error": {"message", "type", "param", "code"}}`` and whose ``status`` is the HTTP
status. ``param`` names the offending field the way OpenAI does (``messages[2].content``,
``tools[0].function.parameters``).

What is accepted is the table :data:`FIELDS` (field name -> reader); fields OpenAI defines but
toolmask does not implement are accepted only at their neutral value (:data:`NEUTRAL`, e.g.
``presence_penalty: 0``, ``logprobs: false``) and rejected otherwise, so nothing is silently
ignored. Any other field is rejected as OpenAI rejects it ("Unrecognized request argument").
``null`` means "not given" for every optional field.

Cost: one JSON read of the body plus O(size of the request); a ``tools`` array seen before
(:class:`ToolLists`) is not read again.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask.agent import Message
from toolmask.decoding import mode_names
from toolmask.limits import SERVER_LIMITS, Limits
from toolmask.server._body import (
    KnownChoice,
    KnownTools,
    ToolLists,
    read_body,
    tools_digest,
    value_digest,
)
from toolmask.tools import Tool, ToolCall, ToolChoice, ToolError

__all__ = [
    "FIELDS",
    "NEUTRAL",
    "APIError",
    "ChatRequest",
    "KnownTools",
    "ResponseFormat",
    "ToolLists",
    "parse_chat_request",
    "tools_digest",
]


class APIError(Exception):
    """An error answered in OpenAI's shape: ``status`` (HTTP), ``message``, ``type``, ``param``
    (the offending request field, or None), ``code`` (a short machine-readable reason), and
    ``extra`` fields added to the error object (``pointer``, ``keyword``, ``limit``), and
    ``headers`` of the response (``Retry-After`` on a 429)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.headers = dict(headers or {})
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.extra = dict(extra or {})

    def body(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code", ...extra}}``."""
        err: dict[str, Any] = {
            "message": self.message,
            "type": self.type,
            "param": self.param,
            "code": self.code,
        }
        err.update(self.extra)
        return {"error": err}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """``response_format``: ``kind`` is ``text``, ``json_object`` or ``json_schema``; for the
    last, ``schema`` is the JSON Schema, ``name`` its name, ``strict`` the client's flag."""

    kind: str = "text"
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=True)
    name: str = ""
    strict: bool = False

    def key(self) -> str:
        """A canonical JSON text (cache key)."""
        return json.dumps([self.kind, self.schema, self.name, self.strict], sort_keys=True)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated request. ``max_tokens`` is None when the client gave neither
    ``max_tokens`` nor ``max_completion_tokens``, and a sampling field is None when the client
    left it out (the server's :class:`~toolmask.server._defaults.ServerDefaults` fill them);
    ``tool_choice`` is the client's raw value (validated against ``tools``), None when not
    given."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    parallel_tool_calls: bool = True
    response_format: ResponseFormat = ResponseFormat()
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    #: the thinking switch, passed to the chat template: ``reasoning_effort`` (``"none"``
    #: turns reasoning off) and ``chat_template_kwargs`` (e.g. ``{"enable_thinking": false}``)
    reasoning_effort: str | None = None
    chat_template_kwargs: Mapping[str, Any] | None = None
    #: at most this many tokens of reasoning, then the channel is closed (None: the server's
    #: default, ``serve --reasoning-budget``)
    reasoning_budget: int | None = None
    #: the decoding mode (toolmask's extension, ``extra_body={"sampling": "exact"}``): one of
    #: :func:`toolmask.decoding.mode_names`; None: the server's (``serve --sampling``)
    sampling: str | None = None
    #: the digest of the ``tools`` array's JSON text as the client sent it ("" when unknown:
    #: a body given already parsed): the tool list's identity, without reading it again
    tools_key: str = ""
    #: ``tool_choice`` as :func:`parse_chat_request` read it: (the client's value, its
    #: :class:`ToolChoice` over ``tools``); see :meth:`normal_choice`
    parsed_choice: tuple[Any, ToolChoice] | None = field(default=None, compare=False, repr=False)

    def normal_choice(self) -> ToolChoice | None:
        """``tool_choice`` normalised over ``tools`` (names in tool order), as
        :func:`parse_chat_request` checked it; None when not given, or when this request was
        made with another ``tool_choice`` since (``dataclasses.replace``)."""
        kept = self.parsed_choice
        return kept[1] if kept is not None and kept[0] is self.tool_choice else None

    @property
    def thinking(self) -> bool:
        """Whether the turn may reason (off with ``reasoning_effort: "none"`` or
        ``chat_template_kwargs: {"enable_thinking": false}``)."""
        kw = self.chat_template_kwargs or {}
        return self.reasoning_effort != "none" and kw.get("enable_thinking") is not False

    def template_kwargs(self) -> dict[str, Any]:
        """What the chat template is given besides the messages and tools."""
        out = dict(self.chat_template_kwargs or {})
        if self.reasoning_effort is not None:
            out.setdefault("reasoning_effort", self.reasoning_effort)
        return out


# -- primitive readers ----------------------------------------------------------------------------


def _type_name(v: object) -> str:
    return {
        type(None): "null",
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(v), type(v).__name__)


def _expect(v: object, kind: type | tuple[type, ...], what: str, param: str) -> None:
    ok = isinstance(v, kind) and not (isinstance(v, bool) and bool not in _as_tuple(kind))
    if not ok:
        raise bad_request(
            f"Invalid type for '{param}': expected {what}, but got {_type_name(v)}.",
            param,
            "invalid_type",
        )


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _number(v: object, param: str, lo: float, hi: float, *, lo_open: bool = False) -> float:
    _expect(v, (int, float), "a number", param)
    x = float(v)  # type: ignore[arg-type]
    if not math.isfinite(x) or x < lo or x > hi or (lo_open and x == lo):
        low = f"greater than {lo:g}" if lo_open else f"at least {lo:g}"
        raise bad_request(
            f"Invalid value for '{param}': {v!r}; it must be {low} and at most {hi:g}.",
            param,
            "invalid_value",
        )
    return x


def _int(v: object, param: str, lo: int) -> int:
    _expect(v, int, "an integer", param)
    assert isinstance(v, int)
    if v < lo:
        raise bad_request(
            f"Invalid value for '{param}': {v}; it must be at least {lo}.", param, "invalid_value"
        )
    return v


def _bool(v: object, param: str) -> bool:
    _expect(v, bool, "a boolean", param)
    return bool(v)


# -- messages -------------------------------------------------------------------------------------

_TEXT_ROLES = {"system": "system", "developer": "system", "user": "user"}


def _content(v: object, param: str, *, required: bool) -> str:
    """A message's text: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if v is None:
        if required:
            raise bad_request(f"Missing required parameter: '{param}'.", param, "missing")
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        out: list[str] = []
        for i, part in enumerate(v):
            p = f"{param}[{i}]"
            _expect(part, dict, "an object", p)
            kind = part.get("type")
            if kind != "text":
                raise bad_request(
                    f"Invalid value for '{p}.type': {kind!r}; this server supports text parts "
                    "only.",
                    f"{p}.type",
                    "unsupported_value",
                )
            text = part.get("text")
            _expect(text, str, "a string", f"{p}.text")
            out.append(text)
        return "".join(out)
    raise bad_request(
        f"Invalid type for '{param}': expected a string or an array of text parts, but got "
        f"{_type_name(v)}.",
        param,
        "invalid_type",
    )


def _tool_calls(v: object, param: str) -> tuple[ToolCall, ...]:
    if v is None:
        return ()
    _expect(v, list, "an array", param)
    assert isinstance(v, list)
    calls: list[ToolCall] = []
    for i, c in enumerate(v):
        p = f"{param}[{i}]"
        _expect(c, dict, "an object", p)
        cid = c.get("id")
        _expect(cid, str, "a string", f"{p}.id")
        if c.get("type", "function") != "function":
            raise bad_request(
                f"Invalid value for '{p}.type': only 'function' tool calls are supported.",
                f"{p}.type",
                "unsupported_value",
            )
        fn = c.get("function")
        _expect(fn, dict, "an object", f"{p}.function")
        name = fn.get("name")
        _expect(name, str, "a string", f"{p}.function.name")
        args_text = fn.get("arguments", "{}")
        _expect(args_text, str, "a string of JSON", f"{p}.function.arguments")
        try:
            args = json.loads(args_text)
        except (json.JSONDecodeError, RecursionError) as e:
            raise bad_request(
                f"Invalid value for '{p}.function.arguments': not JSON ({e}).",
                f"{p}.function.arguments",
                "invalid_value",
            ) from None
        if not isinstance(args, dict):
            raise bad_request(
                f"Invalid value for '{p}.function.arguments': it must be a JSON object.",
                f"{p}.function.arguments",
                "invalid_value",
            )
        calls.append(ToolCall(cid, name, args))
    return tuple(calls)


def _message(v: object, i: int) -> Message:
    param = f"messages[{i}]"
    _expect(v, dict, "an object", param)
    assert isinstance(v, dict)
    role = v.get("role")
    name = v.get("name")
    if name is not None:
        _expect(name, str, "a string", f"{param}.name")
    if role in _TEXT_ROLES:
        return Message(
            _TEXT_ROLES[role], _content(v.get("content"), f"{param}.content", required=True)
        )
    if role == "assistant":
        calls = _tool_calls(v.get("tool_calls"), f"{param}.tool_calls")
        text = _content(v.get("content"), f"{param}.content", required=not calls)
        return Message("assistant", text, tool_calls=calls, name=name)
    if role == "tool":
        cid = v.get("tool_call_id")
        if cid is None:
            raise bad_request(
                f"Missing required parameter: '{param}.tool_call_id'.",
                f"{param}.tool_call_id",
                "missing",
            )
        _expect(cid, str, "a string", f"{param}.tool_call_id")
        text = _content(v.get("content"), f"{param}.content", required=True)
        return Message("tool", text, tool_call_id=cid, name=name)
    raise bad_request(
        f"Invalid value for '{param}.role': {role!r}; use system, developer, user, assistant or "
        "tool.",
        f"{param}.role",
        "invalid_value",
    )


def _messages(v: object) -> tuple[Message, ...]:
    _expect(v, list, "an array", "messages")
    assert isinstance(v, list)
    if not v:
        raise bad_request(
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
            "messages",
            "empty_array",
        )
    return tuple(_message(m, i) for i, m in enumerate(v))


# -- tools, tool_choice, response_format, stop ----------------------------------------------------


def _tools(v: object) -> tuple[Tool, ...]:
    _expect(v, list, "an array", "tools")
    assert isinstance(v, list)
    out: list[Tool] = []
    for i, spec in enumerate(v):
        try:
            out.append(Tool.from_openai(spec))
        except ToolError as e:
            raise bad_request(f"Invalid 'tools[{i}]': {e}", f"tools[{i}]", "invalid_tool") from None
    return tuple(out)


def _response_format(v: object) -> ResponseFormat:
    _expect(v, dict, "an object", "response_format")
    assert isinstance(v, dict)
    kind = v.get("type")
    if kind in ("text", "json_object"):
        return ResponseFormat(kind)
    if kind != "json_schema":
        raise bad_request(
            f"Invalid value for 'response_format.type': {kind!r}; use text, json_object or "
            "json_schema.",
            "response_format.type",
            "invalid_value",
        )
    js = v.get("json_schema")
    _expect(js, dict, "an object", "response_format.json_schema")
    assert isinstance(js, dict)
    name = js.get("name", "response")
    _expect(name, str, "a string", "response_format.json_schema.name")
    schema = js.get("schema", {})
    _expect(schema, (dict, bool), "a JSON Schema object", "response_format.json_schema.schema")
    strict = js.get("strict")
    strict = False if strict is None else _bool(strict, "response_format.json_schema.strict")
    if isinstance(schema, bool):
        schema = {} if schema else {"not": {}}
    return ResponseFormat("json_schema", schema, name, strict)


def _stop(v: object) -> tuple[str, ...]:
    """The stop sequences as given (their count and lengths are checked against the limits
    by :func:`_limit_stop`)."""
    items = [v] if isinstance(v, str) else v
    _expect(items, list, "a string or an array of strings", "stop")
    assert isinstance(items, list)
    for i, s in enumerate(items):
        _expect(s, str, "a string", f"stop[{i}]")
    return tuple(items)


def _limit_stop(items: tuple[str, ...], limits: Limits) -> tuple[str, ...]:
    """``items`` within ``limits.max_stop_sequences`` / ``max_stop_chars``, empty ones
    dropped."""
    if len(items) > limits.max_stop_sequences:
        raise bad_request(
            f"Invalid 'stop': at most {limits.max_stop_sequences} sequences, got {len(items)} "
            "(Limits.max_stop_sequences).",
            "stop",
            "invalid_value",
        )
    for i, s in enumerate(items):
        if len(s) > limits.max_stop_chars:
            raise bad_request(
                f"Invalid 'stop[{i}]': longer than {limits.max_stop_chars} characters "
                "(Limits.max_stop_chars).",
                f"stop[{i}]",
                "invalid_value",
            )
    return tuple(s for s in items if s)


def _stream_options(v: object) -> bool:
    _expect(v, dict, "an object", "stream_options")
    assert isinstance(v, dict)
    inc = v.get("include_usage")
    return False if inc is None else _bool(inc, "stream_options.include_usage")


def _seed(v: object) -> int:
    _expect(v, int, "an integer", "seed")
    assert isinstance(v, int)
    return v % (1 << 64)  # OpenAI accepts negative seeds; numpy wants a non-negative one


def _n(v: object) -> int:
    n = _int(v, "n", 1)
    if n != 1:
        raise bad_request(
            f"Invalid value for 'n': {n}; this server generates one choice per request (n = 1).",
            "n",
            "unsupported_value",
        )
    return n


REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")


def _reasoning_effort(v: object) -> str:
    if v not in REASONING_EFFORTS:
        raise bad_request(
            f"Invalid value for 'reasoning_effort': {v!r}; expected one of "
            f"{list(REASONING_EFFORTS)}.",
            "reasoning_effort",
            "invalid_value",
        )
    assert isinstance(v, str)
    return v


def _sampling_mode(v: object) -> str:
    _expect(v, str, "a string", "sampling")
    modes = mode_names()  # read now: a mode registered after import is one too
    if v not in modes:
        raise bad_request(
            f"Invalid value for 'sampling': {v!r}; use one of {', '.join(modes)}.",
            "sampling",
            "invalid_value",
        )
    return str(v)


def _template_kwargs(v: object) -> Mapping[str, Any]:
    _expect(v, dict, "an object", "chat_template_kwargs")
    assert isinstance(v, dict)
    return dict(v)


def _model(v: object) -> str:
    _expect(v, str, "a string", "model")
    assert isinstance(v, str)
    return v


#: field -> (ChatRequest attribute or "" to drop, reader). The one place that says what the
#: server reads from a request.
FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model": ("model", _model),
    "messages": ("messages", _messages),
    "tools": ("tools", _tools),
    "tool_choice": ("tool_choice", lambda v: v),  # checked against the tools below
    "parallel_tool_calls": ("parallel_tool_calls", lambda v: _bool(v, "parallel_tool_calls")),
    "response_format": ("response_format", _response_format),
    "max_tokens": ("max_tokens", lambda v: _int(v, "max_tokens", 1)),
    "max_completion_tokens": ("", lambda v: _int(v, "max_completion_tokens", 1)),
    "temperature": ("temperature", lambda v: _number(v, "temperature", 0, 2)),
    "top_p": ("top_p", lambda v: _number(v, "top_p", 0, 1)),
    "top_k": ("top_k", lambda v: _int(v, "top_k", 0)),
    "min_p": ("min_p", lambda v: _number(v, "min_p", 0, 1)),
    "seed": ("seed", _seed),
    "stop": ("stop", _stop),
    "n": ("", _n),
    "stream": ("stream", lambda v: _bool(v, "stream")),
    "stream_options": ("include_usage", _stream_options),
    "reasoning_effort": ("reasoning_effort", _reasoning_effort),
    "chat_template_kwargs": ("chat_template_kwargs", _template_kwargs),
    "reasoning_budget": ("reasoning_budget", lambda v: _int(v, "reasoning_budget", 0)),
    "sampling": ("sampling", _sampling_mode),
    # accepted and ignored: bookkeeping fields that do not change the completion
    "user": ("", lambda v: _expect(v, str, "a string", "user")),
    "metadata": ("", lambda v: _expect(v, dict, "an object", "metadata")),
    "store": ("", lambda v: _bool(v, "store")),
    "service_tier": ("", lambda v: _expect(v, str, "a string", "service_tier")),
}

#: fields OpenAI defines that toolmask does not implement: accepted only at these values
NEUTRAL: dict[str, Callable[[Any], bool]] = {
    "frequency_penalty": lambda v: v == 0 and not isinstance(v, bool),
    "presence_penalty": lambda v: v == 0 and not isinstance(v, bool),
    "logprobs": lambda v: v is False,
    "top_logprobs": lambda v: v == 0 and not isinstance(v, bool),
    "logit_bias": lambda v: v == {},
    "modalities": lambda v: v == ["text"],
}


def _known_value(
    body: Mapping[str, Any], tool_lists: ToolLists
) -> tuple[Mapping[str, Any] | str, bytes | None]:
    """A parsed body with tools: its ``tools`` the list read before from the same value
    (:meth:`ToolLists.match_value`), else the body written as text (C speed, O(bytes)), so
    that tools seen before are found as for a body sent as text (a value JSON cannot write,
    NaN or an object, is left as it is); and the digest of the tools' value (None when it
    has none). A body whose ``tools`` is a :class:`KnownTools` (a turn spec's list, found
    before: :func:`~toolmask.server.read_turn_spec`) is left as it is."""
    if isinstance(body["tools"], KnownTools):
        return body, None
    by_value = value_digest(body["tools"])
    hit = tool_lists.match_value(by_value) if by_value is not None else None
    if hit is not None:
        return {**body, "tools": hit}, by_value
    with contextlib.suppress(TypeError, ValueError, RecursionError):
        return json.dumps(body, ensure_ascii=False, allow_nan=False), by_value
    return body, by_value


def parse_chat_request(
    body: bytes | str | Mapping[str, Any],
    *,
    limits: Limits = SERVER_LIMITS,
    tool_lists: ToolLists | None = None,
) -> ChatRequest:
    """Validate a ``POST /v1/chat/completions`` body (raw bytes or already parsed JSON); the
    stop sequences within ``limits`` (``max_stop_sequences``, ``max_stop_chars``).

    ``tool_lists``: the tool lists of earlier requests (:class:`ToolLists`); a body whose
    ``tools`` text is one of them gets its tools from there, and :attr:`ChatRequest.tools_key`
    is the digest of that text either way (a body given as parsed JSON is written as text
    first, when it has tools: O(bytes) in C, against reading and checking every tool).

    Raises :class:`APIError` (400) for malformed JSON, a body that is not an object, a missing
    ``model`` or ``messages``, a field of the wrong type or out of range, an unknown field, a
    non-neutral value of an unimplemented field, ``n`` other than 1, ``stream_options``
    without ``stream``, and a ``tool_choice`` that names unknown tools or needs tools that
    were not given. Never raises anything else on any input.
    """
    spans: dict[str, tuple[int, int]] = {}
    text = ""
    by_value: bytes | None = None  # the digest of a parsed body's tools (ToolLists.match_value)
    if isinstance(body, Mapping) and tool_lists is not None and body.get("tools"):
        body, by_value = _known_value(body, tool_lists)
    if isinstance(body, Mapping):
        data: Any = body
    else:
        try:
            data, text, spans = read_body(body, tool_lists)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise bad_request(
                f"We could not parse the JSON body of your request ({e}). The body must be a "
                "JSON object.",
                code="invalid_json",
            ) from None
    if not isinstance(data, Mapping):
        raise bad_request(
            f"The request body must be a JSON object, not {_type_name(data)}.",
            code="invalid_json",
        )
    values: dict[str, Any] = {}
    max_completion: int | None = None
    known: KnownTools | None = None
    parsed: ToolChoice | None = None  # a tool_choice read and checked before (KnownChoice)
    for key, raw in data.items():
        if raw is None:
            continue
        entry = FIELDS.get(key)
        if entry is not None:
            attr, reader = entry
            if key == "tools" and isinstance(raw, KnownTools):
                values["tools"], values["tools_key"] = raw.tools, raw.key
                known = raw
                continue
            if key == "tool_choice" and isinstance(raw, KnownChoice):
                values["tool_choice"], parsed = raw.value, raw.choice
                continue
            value = reader(raw)
            if key == "max_completion_tokens":
                max_completion = value
            elif attr:
                values[attr] = value
            continue
        neutral = NEUTRAL.get(key)
        if neutral is not None:
            if not neutral(raw):
                raise bad_request(
                    f"Unsupported value for '{key}': {raw!r}; this server does not implement "
                    f"'{key}' (leave it out or use its default).",
                    key,
                    "unsupported_parameter",
                )
            continue
        raise bad_request(
            f"Unrecognized request argument supplied: {key}", key, "unknown_parameter"
        )
    for required in ("model", "messages"):
        if required not in values:
            raise bad_request(f"Missing required parameter: '{required}'.", required, "missing")
    if "stop" in values:
        values["stop"] = _limit_stop(values["stop"], limits)
    if max_completion is not None:
        values["max_tokens"] = max_completion  # the newer name wins when both are given
    if "include_usage" in values and not values.get("stream", False):
        raise bad_request(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
            "invalid_value",
        )
    tools: tuple[Tool, ...] = values.get("tools", ())
    index = known.index if known is not None else None  # a list read before: checked then
    names = [t.name for t in tools] if known is None else known.names
    if known is None and len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise bad_request(f"Invalid 'tools': two tools are called {dup!r}.", "tools")
    span = spans.get("tools")
    if known is None and span is not None:  # a list is kept once every check of it passed
        read = text[span[0] : span[1]]
        if tool_lists is not None:
            known = tool_lists.put(read, tools)
            values["tools_key"] = known.key
        else:
            values["tools_key"] = tools_digest(read)
    if by_value is not None and tool_lists is not None and values.get("tools_key"):
        tool_lists.note_value(by_value, values["tools_key"])
    choice = values.get("tool_choice")
    if choice is not None:
        if parsed is None:
            parsed = _checked_choice(choice, bool(tools), names, index)
            at = spans.get("tool_choice")
            if known is not None and at is not None:  # a subset sent again is compared
                known.note_choice(text[at[0] : at[1]], choice, parsed)
        elif not tools:
            parsed = _checked_choice(choice, False, names, index)
        values["parsed_choice"] = (choice, parsed)
    if values.get("top_p") == 0:  # nucleus of mass 0 is the single best token
        values["top_p"] = 1.0
        values["temperature"] = 0.0
    return ChatRequest(**values)


def _checked_choice(
    choice: Any, has_tools: bool, names: Sequence[str], index: Mapping[str, int] | None
) -> ToolChoice:
    """A request's ``tool_choice`` read against its tools' ``names``; APIError (400) where it
    needs tools that were not given or names what they are not."""
    if not has_tools and choice not in ("none", "auto"):
        raise bad_request(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified.",
            "tool_choice",
            "invalid_value",
        )
    try:
        return ToolChoice.parse(choice, names, index=index)
    except ToolError as e:
        raise bad_request(
            f"Invalid value for 'tool_choice': {e.message}", "tool_choice", "invalid_value"
        ) from None
