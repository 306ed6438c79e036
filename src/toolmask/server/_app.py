"""The FastAPI application: ``/v1/chat/completions``, ``/v1/models``, ``/health``.

``create_app(backend, model_name=...)`` wires the pieces: :func:`parse_chat_request` (400s),
the model name (404), :class:`PlanCache` (grammars under the server's limits, compiled off the
event loop, at most ``compile_threads`` at once), the prompt (the model's chat template, else
ChatML; :func:`~toolmask.server._render.render_prompt`), and the engine (one worker, bounded
FIFO: 429 when full). The chat route itself is :class:`~toolmask.server._chat.ChatRoute`.

Every error, including unknown routes and unexpected exceptions, is answered in OpenAI's shape
``{"error": {"message", "type", "param", "code"}}``; nothing a request contains can stop the
worker or the event loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from toolmask.agent import Template, default_template
from toolmask.backends import Backend
from toolmask.errors import ToolmaskError
from toolmask.limits import SERVER_LIMITS, Limits
from toolmask.server._chat import ChatRoute
from toolmask.server._defaults import BUILTIN, ServerDefaults
from toolmask.server._engine import Engine, JobQueue
from toolmask.server._plans import PlanCache
from toolmask.server._protocol import APIError
from toolmask.tools import resolve_format

try:
    import anyio
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as e:  # pragma: no cover - only without the extra
    raise ToolmaskError("the server needs FastAPI: pip install 'toolmask[server]'") from e

__all__ = ["create_app"]

log = logging.getLogger("toolmask.server")


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
    constrain: bool = True,
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
    with a ``format`` toolmask does not know (default: an annotation); ``constrain=False``
    decodes tool turns without a mask (the reply is still parsed). ``defaults`` fill the
    sampling parameters and ``max_tokens`` a request leaves out (:class:`ServerDefaults`;
    ``toolmask serve`` resolves them from the model's metadata and its flags).
    ``tool_reminder``: follow the last user message with the format's decision prompt when the
    tool prompt is ours (see :func:`render_prompt`). The engine's worker thread starts now and
    stops on the app's shutdown."""
    eng: JobQueue = engine or Engine(backend, queue_size=queue_size)
    chat_template = template or default_template(backend)
    source = getattr(chat_template, "source", None) or getattr(backend, "chat_template", None)
    fmt = resolve_format(fmt, source, backend.vocab.special.values())
    plans = PlanCache(
        backend.vocab, limits, fmt=fmt, strict_formats=strict_formats, constrain=constrain
    )
    chat = ChatRoute(
        engine=eng,
        plans=plans,
        template=chat_template,
        model_name=model_name,
        names={model_name, *aliases},
        limits=limits,
        defaults=defaults,
        tool_reminder=tool_reminder,
        compile_threads=compile_threads,
    )

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        log.info("serving %s (queue %d, context %s tokens)", model_name, queue_size, eng.n_ctx)
        yield
        await anyio.to_thread.run_sync(eng.close)

    app = FastAPI(title="toolmask", version="0.1.0", lifespan=lifespan)
    app.state.engine = eng
    app.state.plans = plans
    _add_error_handlers(app)
    _add_model_routes(app, chat, defaults)
    app.post("/v1/chat/completions")(chat.__call__)
    return app


def _error_response(e: APIError) -> Response:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers or None)


def _add_error_handlers(app: FastAPI) -> None:
    """Every error in OpenAI's shape: :class:`APIError`, Starlette's HTTP errors (an unknown
    route is a 404 ``unknown_url``) and any unexpected exception (a 500, logged)."""

    @app.exception_handler(APIError)
    async def _api_error(_request: Request, e: APIError) -> Response:
        return _error_response(e)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, e: StarletteHTTPException) -> Response:
        code = "unknown_url" if e.status_code == 404 else None
        return _error_response(APIError(e.status_code, str(e.detail), code=code))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, e: Exception) -> Response:
        log.exception("unexpected error")
        return _error_response(
            APIError(500, f"internal error: {type(e).__name__}", type="server_error")
        )


def _add_model_routes(app: FastAPI, chat: ChatRoute, defaults: ServerDefaults) -> None:
    """``/health``, ``/v1/models`` and ``/v1/models/{id}`` (404 for a name it does not serve)."""
    eng, plans, model_name = chat.engine, chat.plans, chat.model_name
    created = int(time.time())

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
        if model_id not in chat.names:
            raise chat.unknown_model(model_id)
        return model_card()
