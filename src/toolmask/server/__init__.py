"""OpenAI-compatible HTTP server (extra ``server``: FastAPI + uvicorn). See ``docs/server.md``.

``create_app(backend, model_name=...)`` returns the FastAPI app; ``toolmask serve`` (or
``python -m toolmask.server``) loads a GGUF and serves it. Layers, one module each:

* ``_protocol``: request validation into a typed :class:`ChatRequest`; OpenAI-shaped errors
  (:class:`APIError`). Pure, no FastAPI.
* ``_plans``: tools x tool_choice x parallel x response_format -> a compiled grammar under
  :data:`toolmask.limits.SERVER_LIMITS`, cached across requests.
* ``_engine``: one worker thread owning the backend, a bounded FIFO queue, cancellation, stop
  strings.
* ``_render``: the prompt of a request, the response message of a completion. Pure.
* ``_chat``: ``POST /v1/chat/completions``, from the body to the response or the stream.
* ``_app``: :func:`create_app`: the other routes, the error handlers, the wiring.
* ``cli``: ``add_serve_parser`` / ``run_serve`` for the ``toolmask`` command line, and the
  engine table (``ENGINES``: ``--engine`` name -> loader, imported by name at start).

The public API below is what an engine integration builds on (``toolmask.integrations.vllm``
does): the job-queue protocol (:class:`JobQueue`, :class:`Job`, :class:`Finished`,
:class:`JobCounters`, :class:`QueueFull`, :class:`Cancelled`, :class:`TextStream`,
:func:`token_budget`), the grammar plans (:class:`PlanCache`, :class:`Plan`) and the request
reader (:func:`parse_chat_request`, :class:`ChatRequest`, :data:`SPEC_FIELDS`,
:class:`APIError`).

Importing this package does not import FastAPI; :func:`create_app` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmask.server._defaults import ServerDefaults
from toolmask.server._engine import (
    Cancelled,
    Engine,
    Finished,
    Job,
    JobCounters,
    JobQueue,
    MaxTokensError,
    QueueFull,
    TextStream,
    token_budget,
)
from toolmask.server._plans import Plan, PlanCache
from toolmask.server._protocol import (
    APIError,
    ChatRequest,
    ResponseFormat,
    ToolLists,
    parse_chat_request,
)
from toolmask.server._spec import SPEC_FIELDS, read_turn_spec, turn_spec

if TYPE_CHECKING:
    from fastapi import FastAPI

    from toolmask.backends import Backend

__all__ = [
    "SPEC_FIELDS",
    "APIError",
    "Cancelled",
    "ChatRequest",
    "Engine",
    "Finished",
    "Job",
    "JobCounters",
    "JobQueue",
    "MaxTokensError",
    "Plan",
    "PlanCache",
    "QueueFull",
    "ResponseFormat",
    "ServerDefaults",
    "TextStream",
    "ToolLists",
    "create_app",
    "parse_chat_request",
    "read_turn_spec",
    "token_budget",
    "turn_spec",
]


def create_app(backend: Backend, **kwargs: Any) -> FastAPI:
    """See :func:`toolmask.server._app.create_app` (imported lazily: it needs FastAPI)."""
    from toolmask.server._app import create_app as _create_app

    return _create_app(backend, **kwargs)
