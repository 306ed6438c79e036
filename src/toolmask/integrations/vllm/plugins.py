"""Tool-call and reasoning parsers for vLLM's OpenAI server, read with toolmask's wire formats.

``vllm serve --tool-parser-plugin <this file> --tool-call-parser toolmask --enable-auto-tool-choice
[--reasoning-parser-plugin <this file> --reasoning-parser toolmask]`` (the module name
``toolmask.integrations.vllm.plugins`` works too). Importing the module registers:

* tool parsers ``toolmask`` (the wire format detected from the model's chat template and
  special tokens, as :func:`toolmask.tools.resolve_format` does for ``--format auto``) and
  ``toolmask-<format>`` for every format of :data:`toolmask.tools.FORMATS` whose turns are prose
  then blocks of calls (all but ``gpt_oss`` and ``kimi_k3``, whose turns are channel messages);
* reasoning parsers ``toolmask`` and ``toolmask-<format>`` for the formats with a leading
  reasoning channel (``<think>``, ``[THINK]``, Gemma 4's thought channel).

The parse is :class:`toolmask.tools.StreamParser`'s, the one ``toolmask serve`` uses: the
same calls, the same content (a malformed or cut-off block keeps its raw text in the content),
arguments as the server streams them; a non-streaming reply is one feed of the same parser, so
it equals the reassembled stream. The split of work follows vLLM's: the reasoning parser takes
the channel at the start of the reply (toolmask's scanner decides where it ends) and hands the
rest, leading whitespace dropped as toolmask does after the channel, to the tool parser, which
reads it with the format's channel switched off. Without a reasoning parser the channel markup
is content, as vLLM does for every tool parser.

A request's toolmask spec (``vllm_xargs={"toolmask": ...}``, see
:mod:`toolmask.integrations.vllm._core`) may name its ``format``; the tool parser then reads
that format, the one the logits processor constrained the reply to.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from vllm.entrypoints.generate.base.protocol import (  # type: ignore[import-not-found, unused-ignore]
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.reasoning import (  # type: ignore[import-not-found, unused-ignore]
    ReasoningParser,
    ReasoningParserManager,
)
from vllm.tool_parsers import (  # type: ignore[import-not-found, unused-ignore]
    ToolParser,
    ToolParserManager,
)

from toolmask.integrations.vllm._core import EXTRA_ARGS_KEY
from toolmask.integrations.vllm._vocab import model_format
from toolmask.tools import FORMATS, FormatSpec, ReasoningSplitter, StreamDelta, StreamParser
from toolmask.tools.formats import Reasoning, builds_own_turn

__all__ = [
    "PREFIX",
    "REASONING_PARSERS",
    "TOOL_PARSERS",
    "ToolmaskReasoningParser",
    "ToolmaskToolParser",
    "model_format",
    "register",
]

log = logging.getLogger("toolmask.vllm")

#: every parser name starts with it: ``toolmask`` (format from the model), ``toolmask-<format>``
PREFIX = "toolmask"
_WS = " \t\n\r"


# -- formats ---------------------------------------------------------------------------------------


def _parsable(fmt: FormatSpec) -> bool:
    """Whether a format's turn is prose then blocks of calls (what a vLLM tool parser reads);
    Harmony and Kimi K3 write channel messages (their codec builds the turn)."""
    return not builds_own_turn(fmt)


def _has_channel(fmt: FormatSpec) -> bool:
    """Whether a format has a reasoning channel a reply opens at its start."""
    return bool(fmt.reasoning_start and fmt.reasoning_end) and _parsable(fmt)


@functools.cache
def _body_format(fmt: FormatSpec) -> FormatSpec:
    """``fmt`` with its reasoning channel switched off: what follows the channel (or a reply
    read without a reasoning parser) is prose and calls only. Cached per format."""
    if not fmt.reasoning.end:
        return fmt
    return dataclasses.replace(fmt, reasoning=Reasoning())


def _spec_format(request: Any) -> str | None:
    """The ``format`` named by a request's toolmask spec (``vllm_xargs``), if it is a known one."""
    xargs = getattr(request, "vllm_xargs", None)
    if not isinstance(xargs, Mapping) or EXTRA_ARGS_KEY not in xargs:
        return None
    raw = xargs[EXTRA_ARGS_KEY]
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    fmt = raw.get("format") if isinstance(raw, Mapping) else None
    return fmt if isinstance(fmt, str) and fmt in FORMATS else None


def _plain(value: Any) -> Any:
    """A pydantic object of vLLM's protocol (or a plain value) as JSON data."""
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value


def _request_spec(request: Any, fmt: str) -> dict[str, Any]:
    """The toolmask spec of an OpenAI request that carries none: its ``tools``,
    ``tool_choice`` and ``parallel_tool_calls`` as the client sent them, and the parser's
    wire format. ``response_format`` stays with vLLM's own structured outputs."""
    spec: dict[str, Any] = {
        "tools": [_plain(t) for t in request.tools],
        "format": fmt,
    }
    choice = getattr(request, "tool_choice", None)
    if choice is not None:
        spec["tool_choice"] = _plain(choice)
    parallel = getattr(request, "parallel_tool_calls", None)
    if parallel is not None:
        spec["parallel_tool_calls"] = bool(parallel)
    return spec


def _schemas(tools: Iterable[Any] | None) -> dict[str, Any]:
    """Tool name -> parameters schema of a request's tools (vLLM's pydantic objects or dicts):
    what types raw parameter values in the XML formats, as ``ToolTurn.schemas`` does."""
    out: dict[str, Any] = {}
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, Mapping) else getattr(t, "function", t)
        get = fn.get if isinstance(fn, Mapping) else functools.partial(getattr, fn)
        name, params = get("name", None), get("parameters", None)
        if isinstance(name, str):
            out[name] = params if isinstance(params, Mapping) else {}
    return out


# -- tool parser -----------------------------------------------------------------------------------


def _message(deltas: Sequence[StreamDelta]) -> DeltaMessage | None:
    """One vLLM ``DeltaMessage`` of toolmask stream deltas: content and reasoning joined, one
    ``DeltaToolCall`` per call index (its argument fragments joined). None when empty."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, DeltaToolCall] = {}
    for d in deltas:
        if d.reasoning is not None:
            reasoning.append(d.reasoning)
        elif d.index is None:
            content.append(d.content or "")
        elif d.index in calls:
            fn = calls[d.index].function
            fn.arguments = (fn.arguments or "") + (d.arguments or "")
        else:
            calls[d.index] = DeltaToolCall(
                index=d.index,
                id=d.id,
                type="function" if d.id is not None else None,
                function=DeltaFunctionCall(name=d.name, arguments=d.arguments or ""),
            )
    text, think = "".join(content), "".join(reasoning)
    if not (text or think or calls):
        return None
    return DeltaMessage(
        content=text or None, reasoning=think or None, tool_calls=list(calls.values())
    )


class ToolmaskToolParser(ToolParser):  # type: ignore[misc, unused-ignore]
    """vLLM tool parser over :class:`toolmask.tools.StreamParser` (one instance per reply, as
    vLLM makes them). ``fmt_name``: the wire format; ``""`` reads it from the tokenizer
    (:func:`model_format`). A request's toolmask spec ``format`` takes precedence.

    ``supports_required_and_named = False``: vLLM then neither forces its own JSON-list grammar
    on ``tool_choice="required"`` / named requests nor reads their replies as a bare JSON list;
    every reply is read in the format (the toolmask logits processor enforces the choice).
    ``engine_based_streaming = True`` is what makes vLLM call :meth:`finish_streaming` at the
    end of a stream, where the parser releases the text it held back (a possible marker prefix,
    trailing whitespace) and decides a block cut off by the end (malformed: its text is content).
    """

    fmt_name: ClassVar[str] = ""
    supports_required_and_named = False
    structural_tag_model = None
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self.format: FormatSpec = FORMATS[self.fmt_name or model_format(tokenizer)]
        self._stream: StreamParser | None = None
        self._plain = False  # the stream is read as content only (tool_choice "none")

    def _parser(self, request: Any) -> StreamParser:
        fmt = FORMATS[_spec_format(request) or self.format.name]
        return StreamParser(_body_format(fmt), schemas=_schemas(getattr(request, "tools", None)))

    def adjust_request(self, request: Any) -> Any:
        request = super().adjust_request(request)
        if request.tools and request.tool_choice != "none":
            # markers may be special tokens (Qwen's <tool_call>): the parser must see their text
            request.skip_special_tokens = False
        if request.tools:
            xargs = dict(getattr(request, "vllm_xargs", None) or {})
            if EXTRA_ARGS_KEY not in xargs:
                # the request's own tools and tool_choice become its toolmask spec, so the
                # logits processor (when vLLM loads it) constrains a plain OpenAI request
                xargs[EXTRA_ARGS_KEY] = json.dumps(_request_spec(request, self.format.name))
                request.vllm_xargs = xargs
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        """The parse of a finished reply: one feed of the streaming parser, so the calls'
        arguments text is what a stream of the same reply sends."""
        if getattr(request, "tool_choice", None) == "none":
            return ExtractedToolCallInformation(
                tools_called=False, tool_calls=[], content=model_output
            )
        sp = self._parser(request)
        deltas = sp.feed(model_output) + sp.finish()
        result = sp.result
        streamed: dict[int, ToolCall] = {}
        for d in deltas:
            if d.index is None:
                continue
            if d.id is not None:
                streamed[d.index] = ToolCall(
                    id=d.id, function=FunctionCall(id=d.id, name=d.name or "", arguments="")
                )
            streamed[d.index].function.arguments += d.arguments or ""
        by_id = {c.id: c for c in streamed.values()}
        calls = [by_id[c.id] for c in result.calls if c.id in by_id]
        return ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=result.content or None
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        """The deltas that ``delta_text`` decides (vLLM hands this parser the new text only)."""
        if self._stream is None and not self._plain:
            if getattr(request, "tool_choice", None) == "none":
                self._plain = True
            else:
                self._stream = self._parser(request)
        if self._stream is None:
            return DeltaMessage(content=delta_text) if delta_text else None
        return _message(self._stream.feed(delta_text))

    def finish_streaming(self) -> DeltaMessage | None:
        """The last deltas of a stream (vLLM calls it once, with the last chunk)."""
        if self._stream is None:
            return None
        return _message(self._stream.finish())


# -- reasoning parser ------------------------------------------------------------------------------


class ToolmaskReasoningParser(ReasoningParser):  # type: ignore[misc, unused-ignore]
    """vLLM reasoning parser for a format's leading reasoning channel, split as toolmask's
    parser splits it (``toolmask serve``'s ``reasoning_content``). ``fmt_name``: the format;
    ``""`` reads it from the tokenizer. A format without a channel makes every reply content.

    Where the reply starts: in a stream, vLLM hands over the prompt (the channel is open when
    it ends with the opener, :meth:`FormatSpec.prompt_opens_reasoning`); for a finished reply
    it does not, so the chat template's generation prompt is rendered once (with the request's
    ``chat_template_kwargs``) and read the same way. A prompt that ends with a closed channel
    (``enable_thinking: false``) makes the reply content, in both.

    ``engine_based_streaming = True``: vLLM asks :meth:`has_engine_confirmed_reasoning_end`
    (decided on text) instead of looking for an end token id, which a marker spelled over
    several tokens never is; the token-id methods (:meth:`is_reasoning_end`, for vLLM's own
    structured outputs) decode the ids.
    """

    fmt_name: ClassVar[str] = ""
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.format: FormatSpec = FORMATS[self.fmt_name or model_format(tokenizer)]
        self._channel = _has_channel(self.format)
        kw = kwargs.get("chat_template_kwargs")
        self._template_kwargs: dict[str, Any] = dict(kw) if isinstance(kw, Mapping) else {}
        self._split: ReasoningSplitter | None = None
        self._prompt_open: bool | None = None
        self._body = ""  # text after the channel, held for finish_streaming

    @property
    def reasoning_start_str(self) -> str | None:
        return self.format.reasoning_start if self._channel else None

    @property
    def reasoning_end_str(self) -> str | None:
        return self.format.reasoning_end if self._channel else None

    def adjust_request(self, request: Any) -> Any:
        if self._channel:
            request.skip_special_tokens = False  # [THINK] and <think> may be special tokens
        return request

    # -- where the reply starts ---------------------------------------------------------------
    def _decode(self, ids: Sequence[int]) -> str:
        return str(self.model_tokenizer.decode(list(ids), skip_special_tokens=False))

    def _closed(self, text: str) -> bool:
        return text.rstrip(_WS).endswith(self.format.reasoning_end)

    @functools.cached_property
    def _generation_prompt(self) -> str:
        """The chat template's generation prompt for this request's template arguments."""
        try:
            out = self.model_tokenizer.apply_chat_template(
                [{"role": "user", "content": "-"}],
                tokenize=False,
                add_generation_prompt=True,
                **self._template_kwargs,
            )
        except Exception as e:  # a template that needs more than one message: assume closed
            log.debug("toolmask reasoning parser: cannot render the chat template: %s", e)
            return ""
        return out if isinstance(out, str) else ""

    def _splitter(self) -> ReasoningSplitter:
        if self._split is None:
            opens = self._prompt_open
            if opens is None:
                opens = self.format.prompt_opens_reasoning(self._generation_prompt)
            fmt = self.format if self._channel else _body_format(self.format)
            self._split = ReasoningSplitter(fmt, reasoning_open=opens and self._channel)
        return self._split

    # -- token ids (vLLM's prompt check and structured-output gate) ---------------------------
    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """True for a format without a channel, and for ids whose text ends with the closed
        channel (a prompt that closed it: the reply is content)."""
        if not self._channel:
            return True
        return self._closed(self._decode(input_ids[-64:]))

    def is_reasoning_end_streaming(
        self, input_ids: Sequence[int], delta_ids: Iterable[int]
    ) -> bool:
        """The close marker is in the text that the last step's tokens complete."""
        if not self._channel:
            return True
        n = len(list(delta_ids))
        tail = self._decode(input_ids[-(n + 16) :])
        before = self._decode(input_ids[-(n + 16) : len(input_ids) - n]) if n else tail
        end = self.format.reasoning_end
        return tail.count(end) > before.count(end)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the first close marker (all of them for a format without a channel)."""
        if not self._channel:
            return input_ids
        end = self.format.reasoning_end
        for i in range(len(input_ids)):
            if end in self._decode(input_ids[max(0, i - 16) : i + 1]):
                return input_ids[i + 1 :]
        return []

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        self._prompt_open = self.format.prompt_opens_reasoning(self._decode(prompt_token_ids[-64:]))

    # -- text ---------------------------------------------------------------------------------
    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        if not self._channel or self._closed(self._generation_prompt):
            return None, model_output
        split = self._splitter()
        reasoning, body = split.feed(model_output, final=True)
        return reasoning or None, body or None

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        """The reasoning ``delta_text`` decides; the text after the channel waits for
        :meth:`finish_streaming`, which vLLM calls when the channel is confirmed closed."""
        split = self._splitter()
        reasoning, body = split.feed(delta_text)
        self._body += body
        return DeltaMessage(reasoning=reasoning) if reasoning else None

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._splitter().handed_over

    def finish_streaming(self) -> DeltaMessage | None:
        """At the channel's close: the text after it so far (then the tool parser reads on).
        At the end of a reply still in the channel: the last reasoning (or a cut-off opener)."""
        split = self._splitter()
        reasoning, body = ("", "") if split.done else split.feed("", final=True)
        body, self._body = self._body + body, ""
        if not (reasoning or body):
            return None
        return DeltaMessage(reasoning=reasoning or None, content=body or None)


# -- registration ----------------------------------------------------------------------------------


def _name(fmt: str) -> str:
    return f"{PREFIX}-{fmt}"


#: parser name -> class; ``toolmask`` reads the format from the model
TOOL_PARSERS: dict[str, type[ToolmaskToolParser]] = {PREFIX: ToolmaskToolParser}
REASONING_PARSERS: dict[str, type[ToolmaskReasoningParser]] = {PREFIX: ToolmaskReasoningParser}
for _fmt in sorted(FORMATS):
    if not _parsable(FORMATS[_fmt]):
        continue
    _cls = _fmt.title().replace("_", "")
    TOOL_PARSERS[_name(_fmt)] = type(
        f"Toolmask{_cls}ToolParser", (ToolmaskToolParser,), {"fmt_name": _fmt}
    )
    if _has_channel(FORMATS[_fmt]):
        REASONING_PARSERS[_name(_fmt)] = type(
            f"Toolmask{_cls}ReasoningParser", (ToolmaskReasoningParser,), {"fmt_name": _fmt}
        )


def register() -> None:
    """Register every parser with vLLM's managers (done on import; idempotent)."""
    for name, tool_cls in TOOL_PARSERS.items():
        ToolParserManager.register_module(name=name, module=tool_cls)
    for name, reasoning_cls in REASONING_PARSERS.items():
        ReasoningParserManager.register_module(name=name, module=reasoning_cls)


register()
