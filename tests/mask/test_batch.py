"""``fill_batch`` / ``BatchFiller``: many rows in one call, on native threads when it pays.

Every row of a batch must equal what the row's matcher writes on its own, and the flags what
its ``is_accepting`` / ``is_finished`` say. The references come from a second, independent
compiler (the batch's caches are never what the reference reads), so a batch that corrupted a
shared cache would show. Batches mix grammars, positions (cold and cached states), rows
without constraint (None) and matchers that accepted EOS; they run with 1, 2 and 4 threads,
forced and automatic, on cold and warm caches, and from several Python threads at once while
other threads compile and advance matchers of the same grammars.
"""

from __future__ import annotations

import json
import random
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from toolmask.mask import BatchFill, BatchFiller, backend, default_threads, fill_batch
from toolmask.vocab import Vocabulary

NATIVE = backend() == "native"

S: dict[str, Any] = {"type": "string"}
#: (schema, valid instances): counted and pattern strings, formats, enums, nesting, free keys
CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (
        {
            "type": "object",
            "properties": {
                "city": S,
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        [{"city": "São Paulo", "unit": "celsius", "days": 3}, {"city": "東京"}],
    ),
    (
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 3, "maxLength": 80},
                "labels": {"type": "array", "items": S, "maxItems": 5},
            },
            "required": ["title"],
            "additionalProperties": False,
        },
        [{"title": "Crash on start", "labels": ["bug", "p0"]}, {"title": "Docs typo"}],
    ),
    (
        {
            "type": "object",
            "properties": {
                "to": {"type": "array", "items": {"type": "string", "format": "email"}},
                "subject": {"type": "string", "maxLength": 120},
            },
            "required": ["to", "subject"],
            "additionalProperties": False,
        },
        [{"to": ["ana@example.com"], "subject": "Hi"}, {"to": [], "subject": "Re: plan"}],
    ),
    (
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "pattern": "^[A-Za-z0-9_./-]+$"},
                "num_adults": {"type": "integer"},
                "num_children": {"type": "integer"},
            },
            "required": ["path"],
        },
        [{"path": "notes/todo.md", "num_adults": 2, "num_children": 1}, {"path": "a.txt"}],
    ),
]


@dataclass(frozen=True)
class Spec:
    """A row: a case's grammar, the tokens fed so far, and whether EOS was accepted."""

    case: int
    tokens: tuple[int, ...]
    stopped: bool = False


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_quicktok("qwen3")


@pytest.fixture(scope="module")
def grammars() -> list[tm.Grammar]:
    return [tm.Grammar.from_json_schema(schema) for schema, _ in CASES]


def _specs(vocab: Vocabulary, seed: int, n: int) -> list[Spec | None]:
    """n rows: random cases at random token positions of their instances; a few None rows
    and a few stopped ones (the whole instance and EOS)."""
    rng = random.Random(seed)
    eos = min(vocab.eos_ids)
    out: list[Spec | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            out.append(None)
            continue
        case = rng.randrange(len(CASES))
        inst = rng.choice(CASES[case][1])
        text = json.dumps(inst, ensure_ascii=False, separators=(",", ":")).encode()
        ids = vocab.encode_greedy(text)
        if r < 0.15:
            out.append(Spec(case, (*ids, eos), stopped=True))
        else:
            out.append(Spec(case, tuple(ids[: rng.randint(0, len(ids))])))
    return out


def _matchers(
    specs: list[Spec | None], compiler: tm.GrammarCompiler, grammars: list[tm.Grammar], vocab: Any
) -> list[tm.Matcher | None]:
    rows: list[tm.Matcher | None] = []
    for sp in specs:
        if sp is None:
            rows.append(None)
            continue
        m = compiler.compile(grammars[sp.case], vocab).matcher()
        for t in sp.tokens:
            assert m.accept_token(t)
        assert m.stopped == sp.stopped
        rows.append(m)
    return rows


def _reference(
    specs: list[Spec | None], grammars: list[tm.Grammar], vocab: Vocabulary
) -> tuple[np.ndarray, np.ndarray]:
    """Each row filled on its own by a fresh compiler of its own backend's default."""
    words = (vocab.vocab_size + 31) // 32
    ref = np.zeros((len(specs), words), dtype=np.int32)
    flags = np.zeros(len(specs), dtype=np.uint8)
    rows = _matchers(specs, tm.GrammarCompiler(), grammars, vocab)
    for i, m in enumerate(rows):
        if m is None:
            ref[i] = -1
            continue
        m.fill_bitmask(ref, i)
        flags[i] = (BatchFill.ACCEPTING if m.is_accepting() else 0) | (
            BatchFill.FINISHED if m.is_finished() else 0
        )
    return ref, flags


def _check(out: np.ndarray, done: BatchFill, ref: np.ndarray, flags: np.ndarray) -> None:
    n = len(flags)
    bad = [i for i in range(n) if not np.array_equal(out[i], ref[i])]
    assert not bad, f"rows {bad} differ from their matchers' own masks"
    assert done.flags.tolist() == flags.tolist()
    assert done.accepting.tolist() == [bool(f & 1) for f in flags.tolist()]
    assert done.finished.tolist() == [bool(f & 2) for f in flags.tolist()]
    assert done.threads >= 1


@pytest.mark.parametrize("threads", [1, 2, 4, None])
def test_batch_equals_each_row_cold_then_warm(
    vocab: Vocabulary, grammars: list[tm.Grammar], threads: int | None
) -> None:
    specs = _specs(vocab, seed=threads or 0, n=48)
    ref, flags = _reference(specs, grammars, vocab)
    rows = _matchers(specs, tm.GrammarCompiler(), grammars, vocab)  # fresh caches: cold rows
    out = np.full((len(rows) + 3, ref.shape[1]), 7, dtype=np.int32)
    filler = BatchFiller(threads=4)
    cold = filler.fill(rows, out, threads=threads)
    _check(out, cold, ref, flags)
    assert (out[len(rows) :] == 7).all(), "rows past the batch were written"
    if NATIVE:
        assert cold.cold_rows > 0
        if threads is not None:
            assert cold.threads <= threads
    out[:] = 0
    warm = filler.fill(rows, out, threads=threads)
    _check(out, warm, ref, flags)
    if NATIVE:
        assert warm.cold_rows == 0


def test_many_threads_share_grammars(vocab: Vocabulary, grammars: list[tm.Grammar]) -> None:
    """Four Python threads fill batches over the same grammars at once (each batch on up to 4
    native threads, the GIL released), while two more compile the grammars and advance their
    matchers; every batch row is compared with its reference."""
    pool = _specs(vocab, seed=7, n=96)
    ref, flags = _reference(pool, grammars, vocab)
    compiler = tm.GrammarCompiler()
    errors: list[str] = []
    stop = threading.Event()

    def batches(seed: int) -> None:
        rng = random.Random(seed)
        out = np.zeros((64, ref.shape[1]), dtype=np.int32)
        try:
            for _ in range(12):
                pick = [rng.randrange(len(pool)) for _ in range(rng.randint(1, 64))]
                rows = _matchers([pool[i] for i in pick], compiler, grammars, vocab)
                done = fill_batch(rows, out, threads=rng.choice([None, 2, 4]))
                for k, i in enumerate(pick):
                    if not np.array_equal(out[k], ref[i]) or done.flags[k] != flags[i]:
                        errors.append(f"thread {seed}: row {k} (spec {i}) differs")
        except Exception as e:  # reported below: an exception in a thread must fail the test
            errors.append(f"thread {seed}: {type(e).__name__}: {e}")

    def churn(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                sp = pool[rng.randrange(len(pool))]
                if sp is None:
                    continue
                m = compiler.compile(grammars[sp.case], vocab).matcher()
                for t in sp.tokens:
                    m.accept_token(t)
                m.mask()
                m.is_finished()
        except Exception as e:
            errors.append(f"churn {seed}: {type(e).__name__}: {e}")

    workers = [threading.Thread(target=batches, args=(s,)) for s in range(4)]
    others = [threading.Thread(target=churn, args=(100 + s,)) for s in range(2)]
    for t in workers + others:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in others:
        t.join()
    assert not errors, errors[:5]


def test_rows_of_the_python_reference_are_filled_too(
    vocab: Vocabulary, grammars: list[tm.Grammar]
) -> None:
    specs = _specs(vocab, seed=11, n=12)
    ref, flags = _reference(specs, grammars, vocab)
    python = _matchers(specs, tm.GrammarCompiler(backend="python"), grammars, vocab)
    mixed = list(python)
    if NATIVE:  # half the rows from each backend in one batch
        native = _matchers(specs, tm.GrammarCompiler(backend="native"), grammars, vocab)
        mixed = [n if i % 2 else p for i, (n, p) in enumerate(zip(native, python, strict=True))]
    out = np.zeros_like(ref)
    _check(out, fill_batch(mixed, out, threads=2), ref, flags)


def test_misuse_raises(vocab: Vocabulary, grammars: list[tm.Grammar]) -> None:
    m = tm.compile(grammars[0], vocab).matcher()
    words = (vocab.vocab_size + 31) // 32
    with pytest.raises(ValueError, match="without a vocabulary"):
        fill_batch([m, tm.compile(grammars[0]).matcher()], np.zeros((2, words), np.int32))
    with pytest.raises(ValueError, match="shape"):
        fill_batch([m, m], np.zeros((1, words), np.int32))
    with pytest.raises(ValueError):
        fill_batch([m], np.zeros((1, words + 1), np.int32))
    with pytest.raises(ValueError, match="threads"):
        fill_batch([m], np.zeros((1, words), np.int32), threads=0)
    with pytest.raises(ValueError, match="threads"):
        BatchFiller(threads=-1)
    empty = fill_batch([], np.zeros((0, words), np.int32))
    assert empty.flags.size == 0 and empty.cold_rows == 0


def test_default_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLMASK_FILL_THREADS", "3")
    assert default_threads() == 3
    assert BatchFiller().threads == 3
    monkeypatch.setenv("TOOLMASK_FILL_THREADS", "zero")
    with pytest.raises(ValueError, match="TOOLMASK_FILL_THREADS"):
        default_threads()
    monkeypatch.delenv("TOOLMASK_FILL_THREADS")
    assert 1 <= default_threads() <= 8


@pytest.mark.skipif(not NATIVE, reason="the compiled kernel is not in use")
def test_a_forked_child_fills_batches(vocab: Vocabulary, grammars: list[tm.Grammar]) -> None:
    """The pool's threads do not survive fork(); a child starts its own."""
    import multiprocessing

    specs = _specs(vocab, seed=3, n=16)
    ref, flags = _reference(specs, grammars, vocab)
    rows = _matchers(specs, tm.GrammarCompiler(), grammars, vocab)
    out = np.zeros_like(ref)
    fill_batch(rows, out, threads=4)  # the parent's pool is started
    ctx = multiprocessing.get_context("fork")
    q: Any = ctx.Queue()

    def child() -> None:
        o = np.zeros_like(ref)
        d = fill_batch(rows, o, threads=4)
        q.put((o.tobytes(), d.flags.tobytes()))

    p = ctx.Process(target=child)
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork() in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        p.start()
    got, got_flags = q.get(timeout=120)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert got == ref.tobytes() and got_flags == flags.tobytes()
