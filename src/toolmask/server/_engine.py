"""The generation queue: one worker thread owns the backend and runs one sequence at a time.

``Engine(backend, queue_size=16)``; ``engine.submit(job)`` enqueues a :class:`Job` and returns
its ``concurrent.futures.Future`` (of a :class:`Finished`), or raises :class:`QueueFull` when
``queue_size`` jobs are already waiting (the server answers 429). Jobs run in arrival order
(FIFO: no request can be overtaken). A job whose ``cancel`` event is set is skipped if it has
not started and stopped at its next token if it has (the ``on_token`` hook returns True): this
is how a client that went away gives the model back. Stop strings are applied by
:class:`TextStream` in the same hook, so the model stops at the token that completes one.

The backend (llama.cpp) is not thread-safe: only the worker thread calls ``tokenize`` and
``generate``. The worker never dies: an exception inside a job becomes that job's exception.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolmask import CompiledGrammar
from toolmask.backends import Backend, ContextOverflowError, Generation, ReasoningBudget
from toolmask.decoding import DecodingParams, Opening
from toolmask.sampling import SamplingParams

__all__ = [
    "Cancelled",
    "Engine",
    "Finished",
    "Job",
    "JobCounters",
    "JobQueue",
    "MaxTokensError",
    "QueueFull",
    "TextStream",
    "context_size",
    "token_budget",
]

log = logging.getLogger("toolmask.server")


class QueueFull(Exception):
    """``queue_size`` jobs are already waiting; ``retry_after`` (seconds) estimates when a
    place in the queue frees (:meth:`Engine.retry_after`)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Cancelled(Exception):
    """The job was cancelled before it started."""


class MaxTokensError(Exception):
    """``max_tokens`` does not fit in the context left after the prompt."""

    def __init__(self, prompt_tokens: int, max_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"This model's maximum context length is {n_ctx} tokens. However, you requested "
            f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or "
            "completion."
        )


class TextStream:
    """Bytes of a completion in, text out: incremental UTF-8 decoding and stop strings.

    ``feed(data)`` returns ``(text, stop)``: the new text that is certainly part of the
    completion (a suffix that could start a stop string is held back until decided) and whether
    a stop string has now appeared (the text is then cut before it). ``finish()`` returns the
    rest. :attr:`text` is the whole completion so far (cut at the stop string). O(len(data) +
    longest stop) per feed.
    """

    def __init__(self, stops: tuple[str, ...] = ()) -> None:
        self.stops = tuple(s for s in stops if s)
        self._longest = max((len(s) for s in self.stops), default=0)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.text = ""
        self._sent = 0
        self.stopped = False

    def _cut(self) -> bool:
        if not self.stops:
            return False
        start = max(0, self._sent - self._longest)
        hits = [k for k in (self.text.find(s, start) for s in self.stops) if k >= 0]
        if not hits:
            return False
        self.text = self.text[: min(hits)]
        self.stopped = True
        return True

    def feed(self, data: bytes) -> tuple[str, bool]:
        if self.stopped:
            return "", True
        self.text += self._decoder.decode(data)
        if self._cut():
            out = self.text[self._sent :]
            self._sent = len(self.text)
            return out, True
        hold = 0
        for s in self.stops:
            for h in range(min(len(s) - 1, len(self.text) - self._sent), hold, -1):
                if self.text.endswith(s[:h]):
                    hold = h
                    break
        end = len(self.text) - hold
        out = self.text[self._sent : end]
        self._sent = end
        return out, False

    def finish(self) -> str:
        if not self.stopped:
            self.text += self._decoder.decode(b"", final=True)
            self._cut()
        out = self.text[self._sent :]
        self._sent = len(self.text)
        return out


@dataclass
class Finished:
    """What the worker hands back: the generation, its text (cut at a stop string) and why it
    ended (``stop`` or ``length``)."""

    gen: Generation
    text: str
    finish_reason: str
    queued_s: float


@dataclass
class Job:
    """One request for the worker.

    ``prompt``: the rendered prompt text (tokenised by the worker). ``max_tokens``: None means
    "the rest of the context". ``sampling`` and ``decoding``: the token sampler's settings and
    the decoding mode (the backend's decoder chooses by its name). ``on_text(text)`` is called
    in the worker thread with each new piece of completion text (see :class:`TextStream`), for
    streaming; ``on_start(prompt_tokens)`` once the prompt is known to fit, just before
    decoding. Both must be quick and must not raise. Set ``cancel`` to abandon the job.
    """

    prompt: str
    compiled: CompiledGrammar | None
    max_tokens: int | None
    sampling: SamplingParams
    stops: tuple[str, ...] = ()
    on_text: Callable[[str], None] | None = None
    #: bound on the reply's reasoning (given to the backend only when set)
    reasoning_budget: ReasoningBudget | None = None
    on_start: Callable[[int], None] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    #: the request's turn spec (:func:`~toolmask.server.turn_spec`: JSON text) for an engine
    #: that compiles the grammar in another process (``Engine.needs_spec``); None otherwise
    spec: bytes | None = None
    #: an ``auto`` turn that may open with a call or with prose: the decoder may choose (see
    #: :class:`~toolmask.decoding.Opening`; given to the backend only when set)
    opening: Opening | None = None
    decoding: DecodingParams = field(default_factory=DecodingParams)
    future: concurrent.futures.Future[Finished] = field(default_factory=concurrent.futures.Future)
    enqueued: float = field(default_factory=time.monotonic)
    prompt_tokens: int = 0


def context_size(backend: Any) -> int | None:
    """The backend's context window in tokens, when it says (``n_ctx`` attribute or method, or
    a llama-cpp-python ``llm``)."""
    n = getattr(backend, "n_ctx", None)
    if n is None and getattr(backend, "llm", None) is not None:
        n = getattr(backend.llm, "n_ctx", None)
    if callable(n):
        n = n()
    return n if isinstance(n, int) else None


def token_budget(prompt_tokens: int, max_tokens: int | None, n_ctx: int | None) -> int:
    """The completion tokens a job may decode: ``max_tokens``, or the rest of the context when
    None (4096 without a known context). Raises :class:`ContextOverflowError` when the prompt
    fills the context and :class:`MaxTokensError` when ``max_tokens`` does not fit after it."""
    if n_ctx is not None and prompt_tokens >= n_ctx:
        raise ContextOverflowError(prompt_tokens, n_ctx)
    if max_tokens is None:
        return (n_ctx - prompt_tokens) if n_ctx is not None else 4096
    if n_ctx is not None and prompt_tokens + max_tokens > n_ctx:
        raise MaxTokensError(prompt_tokens, max_tokens, n_ctx)
    return max_tokens


class JobQueue(Protocol):
    """What the server needs of a generation queue: :class:`Engine` (llama.cpp, one sequence
    at a time) or :class:`toolmask.integrations.vllm.VllmEngine` (vLLM, batched)."""

    needs_spec: bool
    supports_reasoning_budget: bool
    queue_size: int
    n_ctx: int | None
    served: int
    cancelled: int
    failed: int
    rejected: int

    @property
    def busy(self) -> bool: ...

    @property
    def waiting(self) -> int: ...

    @property
    def full(self) -> bool: ...

    def reject(self) -> QueueFull: ...

    def submit(self, job: Job) -> concurrent.futures.Future[Finished]: ...

    def close(self, timeout: float = ...) -> None: ...


class JobCounters:
    """What both generation queues count for ``/health`` (``served``, ``cancelled``, ``failed``,
    ``rejected``, the moving average ``service_s``) and how a job's outcome reaches its future:
    :meth:`settle` with the result or the exception, :meth:`took` with the seconds it held the
    engine."""

    def __init__(self) -> None:
        self.served = 0
        self.cancelled = 0
        self.failed = 0
        self.rejected = 0
        #: moving average of the seconds a job holds the engine (None before the first)
        self.service_s: float | None = None

    def settle(self, job: Job, outcome: Finished | BaseException) -> None:
        """Hand ``job`` its result or error and count it: a context overflow or a
        ``max_tokens`` too large is the client's error (not counted as failed); a job whose
        client went away while it ran counts as cancelled."""
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, ContextOverflowError | MaxTokensError):
                self.failed += 1
                log.error("generation failed", exc_info=outcome)
            job.future.set_exception(outcome)
            return
        if job.cancel.is_set():
            self.cancelled += 1
        else:
            self.served += 1
        job.future.set_result(outcome)

    def took(self, seconds: float) -> None:
        prev = self.service_s
        self.service_s = seconds if prev is None else 0.7 * prev + 0.3 * seconds


_STOP = object()


class Engine(JobCounters):
    """One worker thread, a bounded FIFO of :class:`Job` s (see the module docstring).

    Counters (read without a lock; for ``/health``): ``served``, ``cancelled``, ``failed``,
    ``rejected``; ``busy`` is True while a job runs.
    """

    #: whether jobs must carry :attr:`Job.spec` (the grammar is compiled elsewhere)
    needs_spec = False
    #: whether :attr:`Job.reasoning_budget` is honoured
    supports_reasoning_budget = True

    def __init__(self, backend: Backend, *, queue_size: int = 16) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.backend = backend
        self.queue_size = queue_size
        self.n_ctx = context_size(backend)
        self._q: queue.Queue[Job | object] = queue.Queue(maxsize=queue_size)
        super().__init__()
        self.busy = False
        self._thread = threading.Thread(target=self._run, name="toolmask-engine", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        return self._q.qsize()

    @property
    def full(self) -> bool:
        """``queue_size`` jobs are waiting: a submit now would raise :class:`QueueFull`."""
        return self._q.full()

    def retry_after(self) -> float:
        """Seconds after which a refused client should try again: the time for half of the
        jobs ahead (those waiting and the one decoding) to finish, at the average service time
        (1 s before any job finished), at least 0.05 s. Half, not all: clients that come back
        while the queue still holds work keep the worker busy, and a refusal costs far less
        than an idle worker. O(1)."""
        per_job = self.service_s if self.service_s is not None else 1.0
        ahead = self.waiting + (1 if self.busy else 0)
        return max(0.05, per_job * max(1, ahead) / 2)

    def reject(self) -> QueueFull:
        """Count a refusal and return the :class:`QueueFull` that says when to come back."""
        self.rejected += 1
        return QueueFull(f"{self.queue_size} requests are already waiting", self.retry_after())

    def submit(self, job: Job) -> concurrent.futures.Future[Finished]:
        """Enqueue ``job``; QueueFull when ``queue_size`` jobs are waiting. O(1)."""
        try:
            self._q.put_nowait(job)
        except queue.Full:
            raise self.reject() from None
        return job.future

    def close(self, timeout: float = 5.0) -> None:
        """Stop the worker after the jobs already queued (those are cancelled first)."""
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Job):
                item.future.set_exception(Cancelled("the server is shutting down"))
        try:
            self._q.put(_STOP, timeout=timeout)
        except queue.Full:  # pragma: no cover - a new job raced in; the daemon thread dies anyway
            return
        self._thread.join(timeout)

    # -- the worker -------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is _STOP:
                return
            assert isinstance(item, Job)
            job = item
            if job.cancel.is_set():
                self.cancelled += 1
                job.future.set_exception(Cancelled("the client went away"))
                continue
            if not job.future.set_running_or_notify_cancel():
                continue
            self.busy = True
            began = time.monotonic()
            try:
                result = self._generate(job)
            except BaseException as e:  # the worker survives anything a job does
                self.settle(job, e)
            else:
                self.settle(job, result)
            finally:
                self.took(time.monotonic() - began)
                self.busy = False

    def _generate(self, job: Job) -> Finished:
        queued = time.monotonic() - job.enqueued
        backend = self.backend
        prompt = backend.tokenize(job.prompt)
        job.prompt_tokens = len(prompt)
        max_tokens = token_budget(len(prompt), job.max_tokens, self.n_ctx)
        if job.on_start is not None:
            job.on_start(len(prompt))
        stream = TextStream(job.stops)
        cancel = job.cancel
        on_text = job.on_text

        def on_token(_ids: list[int], data: bytes) -> bool:
            if cancel.is_set():
                return True
            text, stop = stream.feed(data)
            if text and on_text is not None:
                on_text(text)
            return stop

        extra: dict[str, Any] = {}
        if job.reasoning_budget is not None:
            extra["reasoning_budget"] = job.reasoning_budget
        if job.opening is not None:
            extra["opening"] = job.opening
        gen = backend.generate(
            prompt,
            job.compiled,
            max_tokens=max_tokens,
            sampling=job.sampling,
            decoding=job.decoding,
            on_token=on_token,
            **extra,
        )
        rest = stream.finish()
        if rest and on_text is not None:
            on_text(rest)
        reason = "stop" if stream.stopped else gen.finish_reason
        return Finished(gen, stream.text, reason, queued)
