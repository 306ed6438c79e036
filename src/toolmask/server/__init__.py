"""OpenAI-compatible HTTP server (extra ``server``: FastAPI + uvicorn). See ``docs/server.md``.

``create_app(backend, model_name=...)`` returns the FastAPI app; ``toolmask serve`` (or
``python -m toolmask.server``) loads a GGUF and serves it. Layers, one module each:

* ``_protocol``: request validation into a typed :class:`ChatRequest`; OpenAI-shaped errors
  (:class:`APIError`). Pure, no FastAPI.
* ``_plans``: tools x tool_choice x parallel x response_format -> a compiled grammar under
  :data:`toolmask.limits.SERVER_LIMITS`, cached across requests.
* ``_engine``: one worker thread owning the backend, a bounded FIFO queue, cancellation, stop
  strings.
* ``_app``: the routes, prompt rendering, response and stream shapes.
* ``cli``: ``add_serve_parser`` / ``run_serve`` for the ``toolmask`` command line.

Importing this package does not import FastAPI; :func:`create_app` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmask.server._engine import Engine, QueueFull, TextStream
from toolmask.server._plans import Plan, PlanCache
from toolmask.server._protocol import APIError, ChatRequest, ResponseFormat, parse_chat_request

if TYPE_CHECKING:
    from fastapi import FastAPI

    from toolmask.backends._base import Backend

__all__ = [
    "APIError",
    "ChatRequest",
    "Engine",
    "Plan",
    "PlanCache",
    "QueueFull",
    "ResponseFormat",
    "TextStream",
    "create_app",
    "parse_chat_request",
]


def create_app(backend: Backend, **kwargs: Any) -> FastAPI:
    """See :func:`toolmask.server._app.create_app` (imported lazily: it needs FastAPI)."""
    from toolmask.server._app import create_app as _create_app

    return _create_app(backend, **kwargs)
