"""What the vLLM logits processors share, with no vLLM import: reading a request's turn spec,
compiling it (cached across requests), and keeping one matcher per batch slot.

A request opts in with ``SamplingParams.extra_args["toolmask"]`` (``vllm_xargs`` over HTTP,
where only flat values pass: there the spec is a JSON string). The spec is an object with the
fields of an OpenAI chat request that shape the reply, read by the server's own validator
(:func:`toolmask.server.parse_chat_request`) so that errors read the same:

``tools`` (OpenAI tool list), ``tool_choice``, ``parallel_tool_calls``, ``response_format``,
``reasoning_effort``, ``chat_template_kwargs``, plus ``format`` (the wire format, a name of
:data:`toolmask.tools.FORMATS`; default: the model's own, read from its chat template and
special tokens as ``toolmask serve --format auto`` does, :data:`DEFAULT_FORMAT` where nothing is
known) and ``reasoning_open`` (the
prompt ends inside the format's reasoning channel).

The grammar is built by :class:`toolmask.server.PlanCache` (the same shapes as ``toolmask
serve``), one cache per wire format, all sharing a vocabulary and :data:`SERVER_LIMITS`, so a
repeated request shape costs one canonical JSON dump and a dict lookup.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from toolmask import CompiledGrammar, Matcher
from toolmask.limits import SERVER_LIMITS, Limits
from toolmask.mask import BatchFill, BatchFiller
from toolmask.sampling import apply_bitmask
from toolmask.server import APIError, ChatRequest, PlanCache, ToolLists, read_turn_spec
from toolmask.vocab import Vocabulary

__all__ = [
    "DEFAULT_FORMAT",
    "EXTRA_ARGS_KEY",
    "OVERLAP_ENV",
    "STATS_ENV",
    "BatchConstrainer",
    "StepStats",
    "TurnSpec",
    "byte_vocabulary",
    "overlap_enabled",
    "read_spec",
]

log = logging.getLogger("toolmask.vllm")

#: the key of ``SamplingParams.extra_args`` that holds a request's turn spec
EXTRA_ARGS_KEY = "toolmask"
#: the wire format of a spec without ``format``
DEFAULT_FORMAT = "hermes"


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """A validated turn spec: the chat request's reply-shaping fields, the wire format and
    whether the prompt opens the reasoning channel."""

    request: ChatRequest
    #: None: the processor's default (the model's format)
    fmt: str | None = None
    reasoning_open: bool = False


def read_spec(extra_args: Mapping[str, Any] | None) -> TurnSpec | None:
    """The turn spec of a request's ``extra_args``, or None when it carries none.

    Raises ValueError (vLLM answers HTTP 400) naming the field at fault: a spec that is not
    an object or JSON text of one, an unknown field, an unknown format, or any error
    :func:`~toolmask.server.parse_chat_request` reports for the request fields
    (:func:`~toolmask.server.read_turn_spec`, with the tool lists of earlier specs: the same
    tools, sent as text or as a new object every request, are the same Tool objects and key,
    so the planner's turn over them is reused and a new subset costs its filter, not a reading
    of every tool)."""
    if not extra_args or EXTRA_ARGS_KEY not in extra_args:
        return None
    req, fmt, opens = read_turn_spec(
        extra_args[EXTRA_ARGS_KEY], _TOOL_LISTS, where=f"extra_args.{EXTRA_ARGS_KEY}"
    )
    return TurnSpec(req, fmt, opens)


#: the tool lists of recent specs (their JSON text), shared by every processor in the process
_TOOL_LISTS = ToolLists()

_BYTE_VOCAB: Vocabulary | None = None


def byte_vocabulary() -> Vocabulary:
    """A 256-token vocabulary (one token per byte): what :meth:`BatchConstrainer.check`
    compiles against where the model's vocabulary is not at hand (vLLM's front end)."""
    global _BYTE_VOCAB
    if _BYTE_VOCAB is None:
        _BYTE_VOCAB = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)])
    return _BYTE_VOCAB


class Planner:
    """One :class:`PlanCache` per wire format over one vocabulary (thread-safe)."""

    def __init__(
        self, vocab: Vocabulary, limits: Limits = SERVER_LIMITS, fmt: str = DEFAULT_FORMAT
    ) -> None:
        self.vocab = vocab
        self.limits = limits
        #: the wire format of a spec that names none
        self.fmt = fmt
        self._caches: dict[str, PlanCache] = {}
        self._lock = threading.Lock()

    def cache(self, fmt: str) -> PlanCache:
        with self._lock:
            pc = self._caches.get(fmt)
            if pc is None:
                pc = self._caches[fmt] = PlanCache(self.vocab, self.limits, fmt=fmt)
            return pc

    def compile(self, spec: TurnSpec) -> CompiledGrammar | None:
        """The spec's grammar for this vocabulary (None: unconstrained). Raises ValueError
        with the server's 400 message for a schema that does not compile."""
        try:
            plan = self.cache(spec.fmt or self.fmt).get(
                spec.request, reasoning_open=spec.reasoning_open
            )
        except APIError as e:
            where = f" (at {e.param})" if e.param else ""
            raise ValueError(f"extra_args.{EXTRA_ARGS_KEY}{where}: {e.message}") from None
        return plan.compiled


_CHECKER: Planner | None = None
_CHECKER_LOCK = threading.Lock()


def check_spec(extra_args: Mapping[str, Any] | None) -> None:
    """Validate a request's spec fully, schemas included (compiled byte-level, cached): the
    body of both processors' ``validate_params``. Raises ValueError."""
    global _CHECKER
    spec = read_spec(extra_args)
    if spec is None:
        return
    with _CHECKER_LOCK:
        if _CHECKER is None:
            _CHECKER = Planner(byte_vocabulary())
    _CHECKER.compile(spec)


#: the environment variable naming the file where the processors write their step timings
STATS_ENV = "TOOLMASK_VLLM_STATS"
#: a gap between two steps longer than this is the engine idling, not a step
_IDLE_GAP_S = 2.0


class StepStats:
    """The processor's share of vLLM's decode step, by batch size, for ``bench/load.py``.

    :meth:`add` is called once per step with the batch rows, the constrained rows, the seconds
    the processor held the engine's thread in that step (``visible``: ``update_state`` plus
    ``apply``, including any wait for the fill thread) and the seconds of mask work in all
    (``total``: ``visible`` plus the fill that ran on the fill thread while the forward pass
    ran). The step's time is the wall time from the previous step's call to this one (a gap
    over 2 s is the engine idling and is not counted). Every 64 steps, and on :meth:`flush`,
    the summary is written as JSON to ``path`` (atomically): per batch size, the steps, the
    mean visible (``processor_ms_mean``) and total (``total_ms_mean``) milliseconds, the step
    milliseconds, and both shares (``share`` is the visible one). On a CPU the forward pass
    runs on the engine's thread, so the visible time is exactly what the mask adds; on a GPU
    the engine's thread runs ahead of the device and the visible time is an upper bound.
    Nothing is kept per step: memory is one small dict per batch size."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._last: float | None = None
        # batch -> [steps, visible s, step s, rows, total s, steps filled ahead]
        self._by: dict[int, list[float]] = {}
        self._n = 0
        atexit.register(self.flush)  # the steps since the last multiple of 64 too

    def add(
        self,
        batch: int,
        constrained: int,
        visible: float,
        total: float | None = None,
        ahead: bool = False,
    ) -> None:
        now = time.perf_counter()
        gap = None if self._last is None else now - self._last
        self._last = now
        if gap is None or gap > _IDLE_GAP_S or constrained == 0:
            return
        acc = self._by.setdefault(batch, [0.0] * 6)
        acc[0] += 1
        acc[1] += visible
        acc[2] += gap
        acc[3] += constrained
        acc[4] += visible if total is None else total
        acc[5] += 1 if ahead else 0
        self._n += 1
        if self._n % 64 == 0:
            self.flush()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for batch, (n, spent, step, rows, total, ahead) in sorted(self._by.items()):
            out[str(batch)] = {
                "steps": int(n),
                "constrained_rows_mean": round(rows / n, 2),
                "processor_ms_mean": round(1000 * spent / n, 4),
                "total_ms_mean": round(1000 * total / n, 4),
                "step_ms_mean": round(1000 * step / n, 3),
                "share": round(spent / step, 5) if step else None,
                "total_share": round(total / step, 5) if step else None,
                "filled_ahead": round(ahead / n, 3),
            }
        return out

    def flush(self) -> None:
        if not self._by:
            return
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"pid": os.getpid(), "by_batch": self.summary()}, f, indent=1)
            os.replace(tmp, self.path)
        except OSError as e:  # pragma: no cover - a benchmark aid must not break serving
            log.warning("cannot write %s: %s", self.path, e)


def step_stats() -> StepStats | None:
    """A :class:`StepStats` writing to ``$TOOLMASK_VLLM_STATS``, or None when it is unset."""
    path = os.environ.get(STATS_ENV)
    return StepStats(path) if path else None


#: the environment variable that turns the fill ahead off (``0``), for before/after timings
OVERLAP_ENV = "TOOLMASK_VLLM_OVERLAP"


def overlap_enabled() -> bool:
    """Whether the processors fill the next bitmask on the fill thread during the forward pass
    (default on; ``TOOLMASK_VLLM_OVERLAP=0`` turns it off)."""
    return os.environ.get(OVERLAP_ENV, "1").strip() not in ("0", "false", "no", "off")


class _Slot:
    """One constrained request in one batch slot."""

    __slots__ = ("broken", "fed", "future", "matcher", "output", "temperature")

    def __init__(
        self,
        future: Future[CompiledGrammar | None],
        output: Sequence[int] | None,
        temperature: float,
    ):
        self.future: Future[CompiledGrammar | None] | None = future
        #: the request's sampling temperature (end on exit merges mass at this temperature)
        self.temperature = temperature
        self.matcher: Matcher | None = None
        #: vLLM's live list of the request's output ids (V1), or None (V2 feeds explicitly)
        self.output = output
        self.fed = 0  # output tokens fed to the matcher
        self.broken = False  # a token was rejected: the request is no longer constrained


class BatchConstrainer:
    """Matchers by batch slot, and the batch bitmask.

    ``add(slot, spec, output)`` starts compiling on a worker thread (a cache hit returns at
    once) so the compile overlaps the forward pass; the first :meth:`fill` that needs it waits.
    The vocabulary's index (about a second for 150k tokens) is built on that thread when the
    constrainer is made, not by the first request.

    Overlap. The next step's bitmask depends only on the tokens already sampled, so
    :meth:`fill_ahead` starts the fill on the fill thread as soon as every row's tokens are in
    (V1: ``update_state``, before the forward pass) and :meth:`apply` joins it (:meth:`take`):
    what the engine waits for is max(0, fill - forward). Where the tokens come only with the
    logits (vLLM's asynchronous scheduling writes ``-1`` placeholders into the output lists and
    repairs them just before sampling; Model Runner V2), :meth:`apply` fills there, which on a
    GPU still runs while the device finishes the forward: nothing here waits for the device
    before the fill. The one seam between the overlap and the fill itself is ``self._fill``
    (:meth:`fill`).
    ``remove`` / ``move`` / ``swap`` follow vLLM's batch updates. :meth:`fill` writes the rows
    of the constrained slots into one ``int32[rows, W]`` array with one
    :class:`toolmask.mask.BatchFiller` call (native threads, GIL released, when the batch
    pays for them), which also says which rows accept.

    A token the matcher rejects (something after the processor changed the logits, or a
    request resumed with output the grammar does not admit) drops the constraint of that
    request with a warning: a matcher never raises on model output.
    """

    def __init__(
        self, vocab: Vocabulary, limits: Limits = SERVER_LIMITS, fmt: str = DEFAULT_FORMAT
    ) -> None:
        self.vocab = vocab
        self.planner = Planner(vocab, limits, fmt)
        self.words = (vocab.vocab_size + 31) // 32
        #: the token that ends a turn (the lowest EOS id, as the decode loop uses), -1: none
        self.end_id = min(vocab.eos_ids) if vocab.eos_ids else -1
        self.slots: dict[int, _Slot] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolmask-compile")
        self._bitmask = np.zeros((0, self.words), dtype=np.int32)
        self._filler = BatchFiller()
        # the overlap: one fill thread, the fill in flight (its rows and future), and the
        # seconds the last joined fill took on that thread
        self._fill_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolmask-fill")
        self._ahead: tuple[tuple[tuple[int, int], ...], Future[Any]] | None = None
        self.ahead_s = 0.0
        #: the seam: what fills a batch's rows (``rows -> (bitmask, exits)``)
        self._fill = self.fill
        self._pool.submit(self._warm)

    def _warm(self) -> None:
        """Build the vocabulary's index now (the compile thread's first task)."""
        try:
            self.planner.cache(self.planner.fmt).compiler.vocab_index(self.vocab)
        except Exception as e:  # pragma: no cover - only a slower first request
            log.warning("could not build the vocabulary index ahead: %s", e)

    def _compile(self, spec: TurnSpec) -> CompiledGrammar | None:
        return self.planner.compile(spec)

    def add(
        self,
        slot: int,
        spec: TurnSpec | None,
        output: Sequence[int] | None = None,
        temperature: float = 0.0,
    ) -> bool:
        """Track ``slot`` under ``spec`` (None: drop whatever the slot held), a request
        sampled at ``temperature`` (0: greedy). True if the slot is constrained."""
        self.slots.pop(slot, None)
        if spec is None:
            return False
        self.slots[slot] = _Slot(self._pool.submit(self._compile, spec), output, temperature)
        return True

    def remove(self, slot: int) -> None:
        self.slots.pop(slot, None)

    def move(self, src: int, dst: int) -> None:
        """The request in ``src`` moves to ``dst`` (whatever ``dst`` held is gone)."""
        s = self.slots.pop(src, None)
        self.slots.pop(dst, None)
        if s is not None:
            self.slots[dst] = s

    def swap(self, a: int, b: int) -> None:
        sa, sb = self.slots.pop(a, None), self.slots.pop(b, None)
        if sa is not None:
            self.slots[b] = sa
        if sb is not None:
            self.slots[a] = sb

    def _ready(self, slot: int, s: _Slot) -> Matcher | None:
        if s.future is not None:
            fut, s.future = s.future, None
            try:
                compiled = fut.result()
            except Exception as e:  # validate_params passed, so this is a limit of this vocab
                log.warning("slot %d: unconstrained, its grammar did not compile: %s", slot, e)
                s.broken = True
                return None
            if compiled is None:
                s.broken = True  # the spec asks for no constraint (text, no tools)
                return None
            s.matcher = compiled.matcher()
        return None if s.broken else s.matcher

    def feed(self, slot: int, tokens: Sequence[int]) -> None:
        """Feed ``tokens`` (the slot's next output tokens) to its matcher."""
        s = self.slots.get(slot)
        if s is None:
            return
        m = self._ready(slot, s)
        s.fed += len(tokens)
        if m is None:
            return
        for t in tokens:
            if not m.accept_token(int(t)):
                log.warning(
                    "slot %d: token %d is outside the grammar; the request is unconstrained "
                    "from here",
                    slot,
                    t,
                )
                s.broken = True
                return

    def catch_up(self, slot: int) -> bool:
        """Feed the slot's live output list (V1) from where it was left, up to the first
        placeholder (a negative id: under asynchronous scheduling vLLM appends ``-1`` for a
        token still on the device and writes the real id just before sampling). True when
        something was fed."""
        s = self.slots.get(slot)
        if s is None or s.output is None or len(s.output) <= s.fed:
            return False
        new = list(s.output[s.fed :])
        cut = next((i for i, t in enumerate(new) if t < 0), len(new))
        if cut:
            self.feed(slot, new[:cut])
        return cut > 0

    def pending(self, slot: int) -> bool:
        """True when the slot's output list (V1) holds tokens not fed yet (or placeholders)."""
        s = self.slots.get(slot)
        return s is not None and s.output is not None and len(s.output) > s.fed

    # -- the overlap --
    def fill_ahead(self, rows: Sequence[tuple[int, int]]) -> bool:
        """Start :meth:`fill` of ``rows`` on the fill thread, when every row's tokens are in
        (else False: :meth:`take` fills when the logits come). The caller must not touch the
        slots until :meth:`take` or :meth:`settle`."""
        self.settle()
        key = tuple((int(r), int(s)) for r, s in rows)
        if not key or any(self.pending(s) for _, s in key):
            return False
        self._ahead = (key, self._fill_thread.submit(self._timed_fill, key))
        return True

    def _timed_fill(
        self, rows: tuple[tuple[int, int], ...]
    ) -> tuple[npt.NDArray[np.int32], list[tuple[int, float]], float]:
        t0 = time.perf_counter()
        bm, exits = self._fill(rows)
        return bm, exits, time.perf_counter() - t0

    def fill_ahead_with(self, slots: Sequence[int], prepare: Callable[[], bool]) -> None:
        """Start, on the fill thread, ``prepare()`` (which feeds the slots' new tokens and says
        whether every slot is caught up) and then the fill of ``slots`` in that order (row i =
        ``slots[i]``). :meth:`take_slots` picks the rows a step needs from it."""
        self.settle()
        key = tuple((i, int(s)) for i, s in enumerate(slots))

        def run() -> Any:
            if not prepare():
                return None
            return self._timed_fill(key)

        self._ahead = (key, self._fill_thread.submit(run))

    def take_slots(
        self, rows: Sequence[tuple[int, int]]
    ) -> tuple[npt.NDArray[np.int32], list[tuple[int, float]]] | None:
        """The bitmask and exits of ``rows`` picked from a :meth:`fill_ahead_with` fill, or
        None when there is none, it could not catch up, or it lacks one of the rows' slots
        (then the caller fills as usual). Sets :attr:`ahead_s`."""
        ahead, self._ahead = self._ahead, None
        self.ahead_s = 0.0
        if ahead is None:
            return None
        got = ahead[1].result()
        if got is None:
            return None
        bm, exits, took = got
        at = {s: i for i, s in ahead[0]}
        if any(s not in at for _, s in rows):
            return None
        pick = [at[s] for _, s in rows]
        where = {i: j for j, i in enumerate(pick)}
        self.ahead_s = took
        return bm[pick], [(where[i], t) for i, t in exits if i in where]

    def settle(self) -> None:
        """Wait for a fill in flight and drop it (its rows changed, or nobody took it)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            # an error here is the fill's: the synchronous fill that follows reports it
            with contextlib.suppress(Exception):
                ahead[1].result()

    def take(
        self, rows: Sequence[tuple[int, int]]
    ) -> tuple[npt.NDArray[np.int32], list[tuple[int, float]]]:
        """The bitmask and exits of ``rows``: the fill started ahead when it covers exactly
        these rows and no token arrived since, else catch up and fill now. Sets
        :attr:`ahead_s` to the seconds the ahead fill took on the fill thread (0 when none)."""
        ahead, self._ahead = self._ahead, None
        self.ahead_s = 0.0
        key = tuple((int(r), int(s)) for r, s in rows)
        if ahead is not None:
            bm, exits, took = ahead[1].result()
            fresh = [s for _, s in key if self.catch_up(s)]
            if ahead[0] == key and not fresh:
                self.ahead_s = took
                return bm, exits
        for _, s in key:
            self.catch_up(s)
        return self._fill(key)

    def fill(
        self, rows: Sequence[tuple[int, int]]
    ) -> tuple[npt.NDArray[np.int32], list[tuple[int, float]]]:
        """The bitmask of ``rows`` (pairs of logits row and slot; constrained slots only), as
        ``int32[len(rows), W]`` (a row whose slot is unconstrained by now is all ones), and
        the rows whose matcher accepts (the turn may end there), as pairs of index into
        ``rows`` and the request's temperature, for :func:`apply_rows`."""
        n = len(rows)
        if self._bitmask.shape[0] < n:
            self._bitmask = np.zeros((max(n, 2 * self._bitmask.shape[0]), self.words), np.int32)
        bm = self._bitmask[:n]
        slots = [self.slots[slot] for _, slot in rows]
        matchers = [self._ready(slot, s) for (_, slot), s in zip(rows, slots, strict=True)]
        done = self._filler.fill(matchers, bm)
        exits: list[tuple[int, float]] = []
        if self.end_id >= 0:
            accepting = np.flatnonzero(done.flags & BatchFill.ACCEPTING).tolist()
            exits = [(i, slots[i].temperature) for i in accepting]
        return bm, exits

    def apply(
        self,
        logits: Any,
        rows: Sequence[tuple[int, int]],
        filled: tuple[npt.NDArray[np.int32], list[tuple[int, float]]] | None = None,
    ) -> Any:
        """Mask the logits rows of ``rows`` (pairs of logits row and slot, constrained slots
        only) in place and return ``logits`` (a torch tensor ``[B, V]``). ``filled``: the
        bitmask and exits of ``rows`` when the caller has them (V2's fill ahead), else
        :meth:`take`.

        Ending on exit, as :meth:`DecodingBackend.generate
        <toolmask.backends.DecodingBackend.generate>` does by default: where the matcher
        accepts, a draw of a token the grammar forbids ends the turn. Here that is one logit:
        the end token's becomes ``T * logsumexp(l / T)`` over itself and every forbidden token
        (``T`` the request's temperature; the maximum when greedy), so that after vLLM divides
        by ``T`` the end token carries exactly the probability of "end, or anything the grammar
        forbids", and every allowed token keeps its own."""
        import torch  # type: ignore[import-not-found, unused-ignore]

        bm, exits = self.take(rows) if filled is None else filled
        idx = [r for r, _ in rows]
        raw = None
        if exits:
            raw = logits[[idx[i] for i, _ in exits]].clone()
        if idx == list(range(logits.shape[0])):
            apply_bitmask(logits, bm, inplace=True)
        else:
            sel = torch.tensor(idx, device=logits.device)
            logits[sel] = apply_bitmask(logits[sel], bm, inplace=True)
        if raw is not None:
            end = self.end_id
            for j, (i, temp) in enumerate(exits):
                row = logits[idx[i]]
                out = torch.isneginf(row) & ~torch.isneginf(raw[j])
                out[end] = True
                # no boolean indexing (a read back to the host): -inf outside the set adds 0
                vals = torch.where(out, raw[j], float("-inf"))
                row[end] = vals.max() if temp <= 0 else temp * torch.logsumexp(vals / temp, 0)
        return logits

    def shutdown(self) -> None:
        self.settle()
        self._fill_thread.shutdown(wait=False, cancel_futures=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
