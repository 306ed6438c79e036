"""``POST /v1/chat/completions``: one request from its body to its response or stream.

:class:`ChatRoute` holds what the app's routes share (the engine, the plan cache, the chat
template, the request defaults) and answers a request in four steps: admission (429 before the
body is read when the queue is full; 413 for a body over ``Limits.max_request_bytes``), the
plan and the prompt (grammars compiled off the event loop, at most ``compile_threads`` at
once), the job (submitted to the engine; the response waits for the worker to *start* it, so
an error that depends on the prompt is still an HTTP status, for streams too), then a body or
a stream. While a request waits or decodes, a client that disconnects cancels it: the waiting
loop polls the connection, and a stream's generator sets the cancel flag when Starlette stops
it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from toolmask.agent import Template
from toolmask.backends import ContextOverflowError, ReasoningBudget
from toolmask.decoding import DecodingParams, Opening, call_opener
from toolmask.errors import LimitError, SchemaError, ToolmaskError
from toolmask.limits import Limits
from toolmask.sampling import SamplingParams
from toolmask.server._defaults import ServerDefaults
from toolmask.server._engine import (
    Cancelled,
    Finished,
    Job,
    JobQueue,
    MaxTokensError,
    QueueFull,
)
from toolmask.server._plans import Plan, PlanCache, schema_error
from toolmask.server._protocol import APIError, ChatRequest, parse_chat_request
from toolmask.server._render import assemble, render_prompt
from toolmask.server._spec import turn_spec
from toolmask.tools import StreamDelta, ToolTurn

try:
    import anyio
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse
except ImportError as e:  # pragma: no cover - only without the extra
    raise ToolmaskError("the server needs FastAPI: pip install 'toolmask[server]'") from e

__all__ = ["POLL_S", "ChatRoute"]

log = logging.getLogger("toolmask.server")

#: how often a waiting request checks that its client is still connected, in seconds
POLL_S = 0.25


def _too_large(max_body: int) -> APIError:
    return APIError(
        413, f"The request body is larger than {max_body} bytes (Limits.max_request_bytes)."
    )


def busy(e: QueueFull) -> APIError:
    """The 429 of a full queue, with ``Retry-After`` (whole seconds, rounded up) and
    ``retry-after-ms`` (which the official client reads first) from the engine's estimate."""
    ms = max(1, round(e.retry_after * 1000))
    return APIError(
        429,
        f"The server is busy ({e}); retry after {ms / 1000:.2f} s.",
        type="requests",
        code="rate_limit_exceeded",
        headers={"Retry-After": str(math.ceil(ms / 1000)), "retry-after-ms": str(ms)},
    )


def _finish_reason(fin: Finished, has_calls: bool) -> str:
    if fin.finish_reason == "length":
        return "length"
    return "tool_calls" if has_calls else "stop"


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _sampling(req: ChatRequest, defaults: ServerDefaults) -> SamplingParams:
    """The request's sampling, with ``defaults`` for what it leaves out."""

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    return SamplingParams(
        temperature=pick(req.temperature, defaults.temperature),
        top_k=pick(req.top_k, defaults.top_k),
        top_p=pick(req.top_p, defaults.top_p),
        min_p=pick(req.min_p, defaults.min_p),
        seed=req.seed,
    )


def _decoding(req: ChatRequest, defaults: ServerDefaults) -> DecodingParams:
    """The request's decoding mode (its ``sampling`` field), else the server's."""
    return DecodingParams(req.sampling if req.sampling is not None else defaults.sampling)


def _opener(req: ChatRequest, plan: Plan, reasoning_open: bool) -> str | None:
    """The call block's opener where the reply may open with a call or with prose, both at
    its first token (plain ``auto`` with callable tools, no response format, no reasoning
    channel first: :func:`~toolmask.decoding.call_opener`); None elsewhere."""
    turn = plan.turn
    if turn is None or plan.compiled is None or reasoning_open:
        return None
    if req.tool_choice not in (None, "auto") or req.response_format.kind != "text":
        return None
    return call_opener(turn)


def _job_error(e: BaseException) -> APIError:
    if isinstance(e, ContextOverflowError):
        return APIError(
            400,
            f"This model's maximum context length is {e.n_ctx} tokens. However, your messages "
            f"resulted in {e.prompt_tokens} tokens. Please reduce the length of the messages.",
            param="messages",
            code="context_length_exceeded",
        )
    if isinstance(e, MaxTokensError):
        return APIError(400, str(e), param="max_tokens", code="context_length_exceeded")
    if isinstance(e, Cancelled):
        return APIError(503, f"The request was cancelled: {e}", type="server_error")
    if isinstance(e, (SchemaError, LimitError)):
        # a lazy turn compiles a tool's arguments when the reply first enters them
        what = f"tool {e.tool!r}" if e.tool else "the tools"
        return schema_error(e, param="tools", what=what)
    return APIError(
        500, f"The server failed to generate: {type(e).__name__}: {e}", type="server_error"
    )


def _log_done(cid: str, req: ChatRequest, fin: Finished, reason: str, t0: float) -> None:
    log.info(
        "%s: %s %d prompt + %d completion tokens, finish=%s, queued %.2fs, total %.2fs",
        cid,
        "stream" if req.stream else "chat",
        fin.gen.prompt_tokens,
        len(fin.gen.tokens),
        reason,
        fin.queued_s,
        time.monotonic() - t0,
    )


# -- the bridge between the worker thread and the event loop --------------------------------------


class _Events:
    """Events posted by the worker thread (``start``, ``text``, ``done``), read on the loop.

    ``next(request)`` returns the next event; with a ``request`` it also polls the connection
    every :data:`POLL_S` seconds and returns ``("gone",)`` when the client disconnected. A
    pending read is kept across polls, so no event is lost."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._q: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._get: asyncio.Future[tuple[Any, ...]] | None = None

    def post(self, *item: Any) -> None:
        """Thread-safe; a no-op once the loop is closed (the server is stopping)."""
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._q.put_nowait, item)

    async def next(self, request: Request | None = None) -> tuple[Any, ...]:
        while True:
            if self._get is None:
                self._get = asyncio.ensure_future(self._q.get())
            done, _ = await asyncio.wait({self._get}, timeout=POLL_S if request else None)
            if done:
                item = self._get.result()
                self._get = None
                return item
            if request is not None and await request.is_disconnected():
                return ("gone",)

    def close(self) -> None:
        if self._get is not None:
            self._get.cancel()
            self._get = None


@dataclass(slots=True)
class _Running:
    """A submitted request: its job, the job's future, the events it posts and its id."""

    cid: str
    req: ChatRequest
    plan: Plan
    job: Job
    fut: Future[Finished]
    events: _Events
    t0: float


# -- the route ------------------------------------------------------------------------------------


class ChatRoute:
    """The chat-completions endpoint of one app (see the module docstring). ``await
    route(request)`` answers one request; ``names`` are the model names it accepts."""

    def __init__(
        self,
        *,
        engine: JobQueue,
        plans: PlanCache,
        template: Template,
        model_name: str,
        names: set[str],
        limits: Limits,
        defaults: ServerDefaults,
        tool_reminder: bool,
        compile_threads: int,
    ) -> None:
        self.engine = engine
        self.plans = plans
        self.template = template
        self.model_name = model_name
        self.names = names
        self.limits = limits
        self.defaults = defaults
        self.tool_reminder = tool_reminder
        self.base_turn = ToolTurn([], plans.fmt, special_tokens=plans.special_tokens)
        self.compile_limiter = anyio.CapacityLimiter(compile_threads)

    def unknown_model(self, name: str) -> APIError:
        return APIError(
            404,
            f"The model `{name}` does not exist or you do not have access to it. This server "
            f"serves `{self.model_name}`.",
            param="model",
            code="model_not_found",
        )

    async def __call__(self, request: Request) -> Response:
        t0 = time.monotonic()
        eng = self.engine
        if eng.full:  # refused before the body is read or a grammar compiled: cheap under load
            raise busy(eng.reject())
        raw = await self._read_body(request)
        req = parse_chat_request(raw, limits=self.limits, tool_lists=self.plans.tool_lists)
        if req.model not in self.names:
            raise self.unknown_model(req.model)
        if req.reasoning_budget is not None and not eng.supports_reasoning_budget:
            raise APIError(
                400,
                "reasoning_budget is not supported by this server's engine",
                param="reasoning_budget",
                code="unsupported_parameter",
            )
        run = await self._submit(req, raw, t0)
        try:
            first = await run.events.next(request)
        except BaseException:
            run.job.cancel.set()
            run.events.close()
            raise
        if first[0] == "gone":
            run.job.cancel.set()
            run.events.close()
            log.info("%s: client went away while queued", run.cid)
            return JSONResponse({}, status_code=499)
        if first[0] == "done":  # failed before decoding (context overflow, shutdown)
            exc = run.fut.exception()
            assert exc is not None
            raise _job_error(exc)
        prompt_tokens: int = first[1]
        if req.stream:
            return StreamingResponse(
                self._stream(run, prompt_tokens),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        return await self._reply(request, run, prompt_tokens)

    async def _read_body(self, request: Request) -> bytes:
        max_body = self.limits.max_request_bytes
        try:
            size = int(request.headers.get("content-length") or 0)
        except ValueError:
            raise APIError(400, "The Content-Length header is not a number.") from None
        if size > max_body:
            raise _too_large(max_body)
        chunks: list[bytes] = []
        total = 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > max_body:
                raise _too_large(max_body)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _plan(self, req: ChatRequest) -> tuple[Plan, str, bool]:
        """The request's plan, its prompt, and whether the prompt opened the reasoning
        channel (then the plan is the one that starts inside it)."""
        plans, limiter = self.plans, self.compile_limiter
        plan = await anyio.to_thread.run_sync(plans.get, req, limiter=limiter)
        prompt = render_prompt(
            req.messages,
            plan,
            self.base_turn,
            self.template,
            reminder=self.tool_reminder,
            template_kwargs=req.template_kwargs(),
        )
        reasoning_open = plan.turn is not None and plan.turn.format.prompt_opens_reasoning(prompt)
        if reasoning_open:
            # the template prefilled the reasoning channel (<think>): grammar and parser start
            # inside it (a second plan, cached like the first)
            plan = await anyio.to_thread.run_sync(
                functools.partial(plans.get, req, reasoning_open=True), limiter=limiter
            )
        return plan, prompt, reasoning_open

    async def _submit(self, req: ChatRequest, raw: bytes, t0: float) -> _Running:
        """Plan, render and submit the request's job (429 when the queue filled meanwhile)."""
        plan, prompt, reasoning_open = await self._plan(req)
        eng, defaults = self.engine, self.defaults
        events = _Events()
        budget = req.reasoning_budget
        spec = None
        if eng.needs_spec and plan.compiled is not None:
            spec = turn_spec(
                raw, self.plans.fmt, reasoning_open=reasoning_open, tool_lists=self.plans.tool_lists
            )
        opener = _opener(req, plan, reasoning_open) if spec is None else None
        opening = None
        if opener is not None:
            # a call first is decoded under the same tools as required: planned (and
            # compiled) only when the decoder chooses it, on the engine's thread
            required = dataclasses.replace(req, tool_choice="required")
            opening = Opening(opener, lambda: self.plans.get(required).compiled)
        job = Job(
            prompt,
            plan.compiled,
            req.max_tokens if req.max_tokens is not None else defaults.max_tokens,
            _sampling(req, defaults),
            req.stop,
            decoding=_decoding(req, defaults),
            on_text=(lambda t: events.post("text", t)) if req.stream else None,
            on_start=lambda n: events.post("start", n),
            reasoning_budget=ReasoningBudget.for_turn(
                plan.turn, defaults.reasoning_budget if budget is None else budget
            ),
            spec=spec,
            opening=opening,
        )
        try:
            fut = eng.submit(job)
        except QueueFull as e:
            raise busy(e) from None
        fut.add_done_callback(lambda _f: events.post("done"))
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        return _Running(cid, req, plan, job, fut, events, t0)

    async def _reply(self, request: Request, run: _Running, prompt_tokens: int) -> Response:
        """The non-streaming response, once the job is done (499 if the client left)."""
        try:
            while True:
                ev = await run.events.next(request)
                if ev[0] == "done":
                    break
                if ev[0] == "gone":
                    run.job.cancel.set()
                    log.info("%s: client went away", run.cid)
                    return JSONResponse({}, status_code=499)
        except BaseException:
            run.job.cancel.set()
            raise
        finally:
            run.events.close()
        exc = run.fut.exception()
        if exc is not None:
            raise _job_error(exc)
        fin = run.fut.result()
        msg, has_calls = assemble(fin.text, run.plan)
        reason = _finish_reason(fin, has_calls)
        _log_done(run.cid, run.req, fin, reason, run.t0)
        body = {
            "id": run.cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "system_fingerprint": None,
            "choices": [{"index": 0, "message": msg, "finish_reason": reason, "logprobs": None}],
            "usage": _usage(prompt_tokens, len(fin.gen.tokens)),
        }
        return JSONResponse(body)

    def _chunk(
        self, run: _Running, created: int, delta: dict[str, Any], finish: str | None = None
    ) -> str:
        obj: dict[str, Any] = {
            "id": run.cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": self.model_name,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        if run.req.include_usage:
            obj["usage"] = None
        return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"

    async def _stream(self, run: _Running, prompt_tokens: int) -> AsyncIterator[str]:
        """The server-sent events of a streaming response; a job error after the stream began
        is one ``error`` event, then ``[DONE]``."""
        created_at = int(time.time())
        plan, fut, events = run.plan, run.fut, run.events
        parser = plan.turn.stream_parser() if plan.turn is not None else None
        had_calls = False

        def render(deltas: list[StreamDelta]) -> Iterable[str]:
            nonlocal had_calls
            for d in deltas:
                if d.index is not None:
                    had_calls = True
                yield self._chunk(run, created_at, d.to_openai())

        try:
            yield self._chunk(
                run, created_at, {"role": "assistant", "content": "", "refusal": None}
            )
            while True:
                ev = await events.next()
                if ev[0] == "done":
                    break
                if ev[0] == "text":
                    text: str = ev[1]
                    deltas = parser.feed(text) if parser else [StreamDelta(content=text)]
                    for out in render(deltas):
                        yield out
            exc = fut.exception()
            if exc is not None:
                err = _job_error(exc)
                log.warning("%s: stream failed: %s", run.cid, err.message)
                yield "data: " + json.dumps(err.body()) + "\n\n"
                yield "data: [DONE]\n\n"
                return
            fin: Finished = fut.result()
            if parser is not None:
                for out in render(parser.finish()):
                    yield out
                has_calls = bool(parser.result.calls)
            else:
                has_calls = had_calls
            reason = _finish_reason(fin, has_calls)
            _log_done(run.cid, run.req, fin, reason, run.t0)
            yield self._chunk(run, created_at, {}, reason)
            if run.req.include_usage:
                obj = {
                    "id": run.cid,
                    "object": "chat.completion.chunk",
                    "created": created_at,
                    "model": self.model_name,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": _usage(prompt_tokens, len(fin.gen.tokens)),
                }
                yield "data: " + json.dumps(obj) + "\n\n"
            yield "data: [DONE]\n\n"
        finally:
            if not fut.done():
                log.info("%s: stream closed by the client; cancelling", run.cid)
            run.job.cancel.set()
            events.close()
