"""The FastAPI application: ``/v1/chat/completions``, ``/v1/models``, ``/health``.

``create_app(backend, model_name=...)`` wires the pieces: :func:`parse_chat_request` (400s),
the model name (404), :class:`PlanCache` (grammars under the server's limits, compiled off the
event loop, at most ``compile_threads`` at once), the prompt (ChatML; the tool prompt appended
to the system message), and :class:`Engine` (one worker, bounded FIFO: 429 when full).

A request waits for the worker to *start* it before the response begins, so every error that
depends on the prompt (context overflow) is still an HTTP status, for streams too. While a
request waits or decodes, a client that disconnects cancels it: the waiting loop polls the
connection, and a stream's generator sets the cancel flag when Starlette stops it.

Every error, including unknown routes and unexpected exceptions, is answered in OpenAI's shape
``{"error": {"message", "type", "param", "code"}}``; nothing a request contains can stop the
worker or the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

from toolmask.agent import (
    ChatTemplate,
    ChatTemplateError,
    Message,
    Template,
    default_template,
    render_chatml,
    with_tool_prompt,
)
from toolmask.backends._base import Backend, ContextOverflowError, ReasoningBudget
from toolmask.errors import ToolmaskError
from toolmask.limits import SERVER_LIMITS, Limits
from toolmask.sampling import SamplingParams
from toolmask.server._defaults import BUILTIN, ServerDefaults
from toolmask.server._engine import (
    Cancelled,
    Engine,
    Finished,
    Job,
    JobQueue,
    MaxTokensError,
    QueueFull,
)
from toolmask.server._plans import Plan, PlanCache
from toolmask.server._protocol import APIError, ChatRequest, parse_chat_request, turn_spec
from toolmask.tools import StreamDelta, ToolTurn, resolve_format

try:
    import anyio
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as e:  # pragma: no cover - only without the extra
    raise ToolmaskError("the server needs FastAPI: pip install 'toolmask[server]'") from e

__all__ = ["assemble", "create_app", "render_prompt"]

log = logging.getLogger("toolmask.server")

#: how often a waiting request checks that its client is still connected, in seconds
POLL_S = 0.25


# -- prompt and result ----------------------------------------------------------------------------


def _too_large(max_body: int) -> APIError:
    return APIError(
        413, f"The request body is larger than {max_body} bytes (Limits.max_request_bytes)."
    )


def render_prompt(
    messages: Sequence[Message],
    plan: Plan,
    base: ToolTurn,
    template: Template = render_chatml,
    *,
    reminder: bool = True,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The prompt of a request, rendered by ``template`` (the model's own chat template, or
    ChatML: :func:`toolmask.agent.default_template`).

    With tools, the tool prompt (:meth:`ToolTurn.prompt`, which depends on the tool list only)
    is appended to the first system message, or to :data:`DEFAULT_SYSTEM` when there is none,
    unless the template advertises tools itself; then, with ``reminder``, the format's
    one-line decision prompt (:meth:`WireFormat.decision_prompt`) follows the last user message
    as a system message, so ``auto`` is decided where the model reads it (it depends on the
    tool list's presence only, never on ``tool_choice``). Every text the client sent has its control
    markers broken (:meth:`ToolTurn.sanitize`), so only the template's own markers are control
    tokens. ``template_kwargs`` (the request's ``chat_template_kwargs`` and
    ``reasoning_effort``: the thinking switch) go to a template that takes keyword arguments
    (a Jinja template reads them as variables). Raises :class:`APIError` (400) when the
    template refuses the conversation. O(prompt length).
    """
    turn = plan.turn or base
    msgs = [
        Message(
            m.role,
            turn.sanitize(m.content),
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            name=m.name,
        )
        for m in messages
    ]
    knows_tools = isinstance(template, ChatTemplate) and template.knows_tools
    if plan.turn is not None and not knows_tools:
        decision = plan.turn.format.decision_prompt() if reminder else None
        msgs = with_tool_prompt(msgs, plan.tool_prompt, decision=decision)
    kwargs = dict(template_kwargs or {})
    try:
        if kwargs and _takes_kwargs(template):
            return template(msgs, turn, **kwargs)
        return template(msgs, turn)
    except ChatTemplateError as e:
        raise APIError(400, str(e), param="messages", code="invalid_messages") from None


def _takes_kwargs(template: Template) -> bool:
    """Whether ``template`` accepts arbitrary keyword arguments (``**kwargs``)."""
    try:
        params = inspect.signature(template).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _busy(e: QueueFull) -> APIError:
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


def _deltas_to_message(
    deltas: Iterable[StreamDelta], content: str, call_ids: Sequence[str]
) -> dict[str, Any]:
    """The ``message`` of a non-streaming response: ``content`` and, for each final call id,
    the call as the stream announced it (same arguments text as a stream sends)."""
    calls: dict[int, dict[str, Any]] = {}
    reasoning: list[str] = []
    for d in deltas:
        if d.reasoning is not None:
            reasoning.append(d.reasoning)
        if d.index is None:
            continue
        c = calls.setdefault(
            d.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if d.id is not None:
            c["id"] = d.id
        if d.name is not None:
            c["function"]["name"] = d.name
        c["function"]["arguments"] += d.arguments or ""
    by_id = {c["id"]: c for c in calls.values()}
    tool_calls = [by_id[i] for i in call_ids if i in by_id]
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content if content or not tool_calls else None,
        "refusal": None,
    }
    if reasoning:
        msg["reasoning_content"] = "".join(reasoning)
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg


def assemble(text: str, plan: Plan) -> tuple[dict[str, Any], bool]:
    """The response ``message`` for a finished completion ``text`` and whether it holds calls.

    Parsed with the same :class:`~toolmask.tools.StreamParser` a stream uses (one feed), so a
    non-streaming reply and the reassembled stream of the same completion are equal; the
    reasoning channel comes back as ``reasoning_content``."""
    if plan.turn is None:
        return {"role": "assistant", "content": text, "refusal": None}, False
    parser = plan.turn.stream_parser()
    deltas = parser.feed(text) + parser.finish()
    result = parser.result
    msg = _deltas_to_message(deltas, result.content, [c.id for c in result.calls])
    return msg, bool(result.calls)


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
    return APIError(
        500, f"The server failed to generate: {type(e).__name__}: {e}", type="server_error"
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


# -- the app --------------------------------------------------------------------------------------


def create_app(
    backend: Backend,
    *,
    model_name: str,
    limits: Limits = SERVER_LIMITS,
    queue_size: int = 16,
    aliases: Iterable[str] = ("default",),
    compile_threads: int = 2,
    engine: JobQueue | None = None,
    template: Template | None = None,
    fmt: str = "auto",
    strict_formats: bool = False,
    defaults: ServerDefaults = BUILTIN,
    tool_reminder: bool = True,
) -> FastAPI:
    """An OpenAI-compatible app serving ``backend`` as ``model_name`` (also accepted under
    ``aliases``). ``limits`` bound the compilation of every schema received; ``queue_size`` is
    how many requests may wait for the model (more: 429). ``template`` renders prompts
    (default: the model's own chat template, else ChatML); ``fmt`` is the wire format of
    tool calls (default ``"auto"``: read from the template and the vocabulary's special
    tokens, see :func:`~toolmask.tools.resolve_format`; Hermes ``<tool_call>`` when they name
    none); ``strict_formats`` answers 400 to a schema
    with a ``format`` toolmask does not know (default: an annotation). ``defaults`` fill the
    sampling parameters and ``max_tokens`` a request leaves out (:class:`ServerDefaults`;
    ``toolmask serve`` resolves them from the model's metadata and its flags).
    ``tool_reminder``: follow the last user message with the format's decision prompt when the
    tool prompt is ours (see :func:`render_prompt`). The engine's worker thread starts now and
    stops on the app's shutdown."""
    eng: JobQueue = engine or Engine(backend, queue_size=queue_size)
    chat_template = template or default_template(backend)
    source = getattr(chat_template, "source", None) or getattr(backend, "chat_template", None)
    fmt = resolve_format(fmt, source, backend.vocab.special.values())
    plans = PlanCache(backend.vocab, limits, fmt=fmt, strict_formats=strict_formats)
    base_turn = ToolTurn([], plans.fmt, special_tokens=plans.special_tokens)
    names = {model_name, *aliases}
    created = int(time.time())
    compile_limiter = anyio.CapacityLimiter(compile_threads)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        log.info("serving %s (queue %d, context %s tokens)", model_name, queue_size, eng.n_ctx)
        yield
        await anyio.to_thread.run_sync(eng.close)

    app = FastAPI(title="toolmask", version="0.1.0", lifespan=lifespan)
    app.state.engine = eng
    app.state.plans = plans

    def error_response(e: APIError) -> Response:
        return JSONResponse(e.body(), status_code=e.status, headers=e.headers or None)

    @app.exception_handler(APIError)
    async def _api_error(_request: Request, e: APIError) -> Response:
        return error_response(e)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, e: StarletteHTTPException) -> Response:
        code = "unknown_url" if e.status_code == 404 else None
        return error_response(APIError(e.status_code, str(e.detail), code=code))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, e: Exception) -> Response:
        log.exception("unexpected error")
        return error_response(
            APIError(500, f"internal error: {type(e).__name__}", type="server_error")
        )

    def model_card() -> dict[str, Any]:
        return {"id": model_name, "object": "model", "created": created, "owned_by": "toolmask"}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "model": model_name,
            "busy": eng.busy,
            "waiting": eng.waiting,
            "queue_size": eng.queue_size,
            "served": eng.served,
            "cancelled": eng.cancelled,
            "failed": eng.failed,
            "rejected": eng.rejected,
            "plan_cache": {"hits": plans.hits, "misses": plans.misses},
            "defaults": defaults.as_dict(),
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str) -> dict[str, Any]:
        if model_id not in names:
            raise _unknown_model(model_id)
        return model_card()

    def _unknown_model(name: str) -> APIError:
        return APIError(
            404,
            f"The model `{name}` does not exist or you do not have access to it. This server "
            f"serves `{model_name}`.",
            param="model",
            code="model_not_found",
        )

    max_body = limits.max_request_bytes

    async def read_body(request: Request) -> bytes:
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

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        t0 = time.monotonic()
        if eng.full:  # refused before the body is read or a grammar compiled: cheap under load
            raise _busy(eng.reject())
        raw = await read_body(request)
        req = parse_chat_request(raw, limits=limits)
        if req.model not in names:
            raise _unknown_model(req.model)
        if req.reasoning_budget is not None and not eng.supports_reasoning_budget:
            raise APIError(
                400,
                "reasoning_budget is not supported by this server's engine",
                param="reasoning_budget",
                code="unsupported_parameter",
            )
        plan = await anyio.to_thread.run_sync(plans.get, req, limiter=compile_limiter)
        prompt = render_prompt(
            req.messages,
            plan,
            base_turn,
            chat_template,
            reminder=tool_reminder,
            template_kwargs=req.template_kwargs(),
        )
        reasoning_open = plan.turn is not None and plan.turn.format.prompt_opens_reasoning(prompt)
        if reasoning_open:
            # the template prefilled the reasoning channel (<think>): grammar and parser start
            # inside it (a second plan, cached like the first)
            plan = await anyio.to_thread.run_sync(
                functools.partial(plans.get, req, reasoning_open=True), limiter=compile_limiter
            )
        events = _Events()
        budget = req.reasoning_budget
        spec = None
        if eng.needs_spec and plan.compiled is not None:
            spec = turn_spec(raw, plans.fmt, reasoning_open=reasoning_open)
        job = Job(
            prompt,
            plan.compiled,
            req.max_tokens if req.max_tokens is not None else defaults.max_tokens,
            _sampling(req, defaults),
            req.stop,
            on_text=(lambda t: events.post("text", t)) if req.stream else None,
            on_start=lambda n: events.post("start", n),
            reasoning_budget=ReasoningBudget.for_turn(
                plan.turn, defaults.reasoning_budget if budget is None else budget
            ),
            spec=spec,
        )
        try:
            fut = eng.submit(job)
        except QueueFull as e:
            raise _busy(e) from None
        fut.add_done_callback(lambda _f: events.post("done"))
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        try:
            first = await events.next(request)
        except BaseException:
            job.cancel.set()
            events.close()
            raise
        if first[0] == "gone":
            job.cancel.set()
            events.close()
            log.info("%s: client went away while queued", cid)
            return JSONResponse({}, status_code=499)
        if first[0] == "done":  # failed before decoding (context overflow, shutdown)
            exc = fut.exception()
            assert exc is not None
            raise _job_error(exc)
        prompt_tokens: int = first[1]
        if req.stream:
            return StreamingResponse(
                _stream(cid, req, plan, job, fut, events, prompt_tokens, t0),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        try:
            while True:
                ev = await events.next(request)
                if ev[0] == "done":
                    break
                if ev[0] == "gone":
                    job.cancel.set()
                    log.info("%s: client went away", cid)
                    return JSONResponse({}, status_code=499)
        except BaseException:
            job.cancel.set()
            raise
        finally:
            events.close()
        exc = fut.exception()
        if exc is not None:
            raise _job_error(exc)
        fin = fut.result()
        msg, has_calls = assemble(fin.text, plan)
        reason = _finish_reason(fin, has_calls)
        _log_done(cid, req, fin, reason, t0)
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "system_fingerprint": None,
            "choices": [{"index": 0, "message": msg, "finish_reason": reason, "logprobs": None}],
            "usage": _usage(prompt_tokens, len(fin.gen.tokens)),
        }
        return JSONResponse(body)

    async def _stream(
        cid: str,
        req: ChatRequest,
        plan: Plan,
        job: Job,
        fut: Any,
        events: _Events,
        prompt_tokens: int,
        t0: float,
    ) -> AsyncIterator[str]:
        created_at = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            obj: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created_at,
                "model": model_name,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }
            if req.include_usage:
                obj["usage"] = None
            return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"

        parser = plan.turn.stream_parser() if plan.turn is not None else None
        had_calls = False

        def render(deltas: list[StreamDelta]) -> Iterable[str]:
            nonlocal had_calls
            for d in deltas:
                if d.index is not None:
                    had_calls = True
                yield chunk(d.to_openai())

        try:
            yield chunk({"role": "assistant", "content": "", "refusal": None})
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
                log.warning("%s: stream failed: %s", cid, err.message)
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
            _log_done(cid, req, fin, reason, t0)
            yield chunk({}, reason)
            if req.include_usage:
                obj = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created_at,
                    "model": model_name,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": _usage(prompt_tokens, len(fin.gen.tokens)),
                }
                yield "data: " + json.dumps(obj) + "\n\n"
            yield "data: [DONE]\n\n"
        finally:
            if not fut.done():
                log.info("%s: stream closed by the client; cancelling", cid)
            job.cancel.set()
            events.close()

    return app


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
