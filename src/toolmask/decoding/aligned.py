"""The ``aligned`` mode: grammar-aligned decoding (see ``docs/sampling.md``).

The target is the model's own distribution restricted to what the grammar accepts,
``p(x) * [x valid] / Z``: what the model would write, conditioned on writing something valid.
Masking each token and renormalising samples instead ``prod_t p(x_t) / Z_t(x_<t)``, where
``Z_t`` is the mass the mask kept at step t; it over-weights prefixes whose continuations the
mask cuts hard (few valid continuations look as likely as many).

**Sampling (temperature > 0): sequential Monte Carlo.** ``particles`` sequences are decoded
side by side, each step in one batched model call. Each particle proposes its next token from
the masked distribution (exactly what plain masking does) and multiplies its importance weight
by ``p(x_t) / q(x_t)``, which is ``Z_t`` when no top-k / top-p / min-p filter is on. Where the
turn may end (``end_on_exit``), the model's own draw decides and the weight is unchanged. When
the effective sample size falls below half the particles they are resampled (systematic
resampling, weights reset to their mean). At the end one particle is drawn by weight. As the
particles grow the draw tends to the target; one particle is plain masking. Forced text is
sampled token by token (no jump-forward), so its probability enters the weights.

**Greedy (temperature 0): beam search** of width ``particles`` over the masked token tree,
scored by the unmasked log-probability (the target's own), ending where the turn ends (the
exit mass, as ``end_on_exit`` decodes). It returns the best finished sequence found: an
approximation of the target's mode, where greedy masking returns the mode of the proposal.

Cost: one model call per step for all particles (``particles`` token positions each), against
one call with one position for plain masking; text is streamed as it becomes common to every
particle. Temperature applies per token (the target is ``prod_t softmax(z_t / T)``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from toolmask.decoding._lookup import BranchLookup
from toolmask.decoding._loop import TokenLoop
from toolmask.decoding._result import Generation
from toolmask.decoding._scoring import BranchDecision, LazyBranch, ScoredBranch
from toolmask.errors import ToolmaskError
from toolmask.sampling import Sampler, bitmask_to_bool

if TYPE_CHECKING:
    from toolmask._compile import CompiledGrammar, Matcher
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodeRequest

__all__ = ["AlignedDecoder"]


class AlignedDecoder:
    """Sequential Monte Carlo over ``particles`` sequences (sampled), or beam search of that
    width (greedy), under a grammar; without one, the plain token loop. Refuses a reasoning
    budget and ``exclude_first`` under a grammar; ignores ``request.opening`` (the particles
    or beams carry both openings). Owns a :class:`~toolmask.decoding._lookup.BranchLookup`
    (exact branches as proposals, reused across this engine's requests)."""

    def __init__(self) -> None:
        self.branches = BranchLookup()

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation:
        compiled = request.compiled
        if compiled is None:
            return TokenLoop(engine, request).run()
        if request.reasoning_budget is not None:
            raise ToolmaskError("a reasoning budget is not supported with sampling='aligned'")
        if request.exclude_first is not None:
            raise ToolmaskError("exclude_first is not supported with sampling='aligned'")
        search = _Search(engine, request, compiled, self.branches)
        return search.beam() if request.sampling.greedy else search.smc()


@dataclass(slots=True)
class _Particle:
    tokens: list[int]
    m: Matcher
    logw: float = 0.0
    done: bool = False
    exit_end: bool = False
    length: bool = False  # stopped by max_tokens or the context


def _log_mass(x: np.ndarray, allowed: np.ndarray | None) -> tuple[float, float]:
    """``(log-sum-exp of all, log-sum-exp of the allowed)`` of float64 ``x``."""
    top = float(x.max())
    e = np.exp(x - top)
    lse = top + float(np.log(e.sum()))
    if allowed is None:
        return lse, lse
    kept = float(e[allowed].sum())
    return lse, (top + float(np.log(kept))) if kept > 0 else -np.inf


class _Search:
    """One aligned decode under a grammar; the contract is :class:`AlignedDecoder`'s."""

    def __init__(
        self,
        engine: ModelEngine,
        request: DecodeRequest,
        compiled: CompiledGrammar,
        lookup: BranchLookup,
    ) -> None:
        self.engine = engine
        self.vocab = vocab = engine.vocab
        self.prompt = prompt = request.prompt
        self.compiled = compiled
        self.params = params = request.decoding
        self.temperature = request.sampling.temperature
        self.max_tokens = request.max_tokens
        self.on_token = request.on_token
        self.lookup = lookup
        sampling = request.sampling
        self.sampler = Sampler(sampling)
        self.filtered = sampling.top_k > 0 or sampling.top_p < 1 or sampling.min_p > 0
        self.eos = vocab.eos_ids
        self.end_id = min(self.eos) if self.eos else -1
        self.end_on_exit = request.end_on_exit and self.end_id >= 0
        self.V = vocab.vocab_size
        self.buf = np.zeros((self.V + 31) // 32, dtype=np.int32)
        self.t0 = time.perf_counter()
        reused = engine.sync_prompt(prompt)
        self.first_row = np.array(engine.logits()[: self.V], dtype=np.float32)
        self.gen = Generation([], b"", "stop", len(prompt), reused, mode=params.mode)
        self.gen.forward_passes = 1
        self.gen.evaluated_tokens = len(prompt) - reused
        self.gen.particles = params.particles
        self.emitted = 0
        self.stopped = False
        #: exact branches as proposals: at temperature 1 (sampling) and 0 (beam)
        self.branches = params.branch_alternatives >= 2 and self.temperature in (0, 1)
        #: the fallbacks counted in this decode, by (automaton, state, tokens): sequences
        #: with the same tokens share a branch and count its fallback once
        self.counted: set[tuple[int, object, tuple[int, ...]]] = set()
        self.marks = {t: s.encode() for t, s in vocab.special.items() if t not in self.eos}

    # -- shared --
    def rows(self, seqs: list[list[int]]) -> list[np.ndarray]:
        """The logits row after the prompt and each sequence (one batched call)."""
        need = [s for s in seqs if s]
        uniq: dict[tuple[int, ...], int] = {}
        for s in need:
            uniq.setdefault(tuple(s), len(uniq))
        got: list[Any] = []
        if uniq:
            got, passes, evaluated = self.engine.logits_many(self.prompt, [list(k) for k in uniq])
            self.gen.forward_passes += passes
            self.gen.evaluated_tokens += evaluated
        return [
            np.asarray(got[uniq[tuple(s)]], dtype=np.float64)
            if s
            else self.first_row.astype(np.float64)
            for s in seqs
        ]

    def text(self, tokens: list[int]) -> bytes:
        table = self.vocab.token_bytes
        return b"".join(table[t] or self.marks.get(t, b"") for t in tokens)

    def full(self, n: int) -> bool:
        return n >= self.max_tokens or len(self.prompt) + n >= self.engine.n_ctx

    def stream(self, seqs: list[list[int]]) -> None:
        """Emit the tokens every sequence now shares (they can no longer change)."""
        if self.on_token is None or self.stopped or not seqs:
            return
        first = seqs[0]
        n = min(len(s) for s in seqs)
        k = self.emitted
        while k < n and all(s[k] == first[k] for s in seqs):
            k += 1
        if k > self.emitted:
            chunk = first[self.emitted : k]
            if not self.emitted:
                self.gen.first_token_s = time.perf_counter() - self.t0
            self.emitted = k
            if self.on_token(chunk, self.text(chunk)):
                self.stopped = True

    def finish(self, tokens: list[int], *, exit_end: bool, length: bool) -> Generation:
        gen = self.gen
        if self.stopped:  # the caller asked to stop: what was streamed is the reply
            tokens = tokens[: self.emitted]
            length = False
        elif self.on_token is not None and len(tokens) > self.emitted:
            rest = tokens[self.emitted :]
            if not self.emitted:
                gen.first_token_s = time.perf_counter() - self.t0
            self.on_token(rest, self.text(rest))
        gen.tokens = tokens
        gen.text = self.text(tokens)
        gen.exit_end = exit_end and not self.stopped
        gen.finish_reason = "length" if length else "stop"
        gen.sampled_tokens = len(tokens)
        return gen

    def matcher_for(self, tokens: list[int]) -> Matcher:
        m = self.compiled.matcher()
        for t in tokens:
            if not m.accept_token(t):
                raise ToolmaskError(f"matcher refused token {t} on replay")
        return m

    def lazy(self, m: Matcher, tokens: list[int], row: np.ndarray) -> LazyBranch | None:
        """The finite branch at this sequence's state, scored as far as asked so far (None:
        none, or one over the budget or that cannot be tokenised, counted once per decode).
        Sequences with the same tokens share it, and a prompt asked again reuses it (the
        decoder's :class:`~toolmask.decoding._lookup.BranchLookup`)."""
        if not self.branches:
            return None
        context = self.prompt + tokens
        lazy, fallback = self.lookup.lookup(self.engine, m, context, row, self.params)
        key = (id(m.automaton), m.state, tuple(tokens))
        if fallback and key not in self.counted:
            self.counted.add(key)
            self.gen.branch_fallbacks += 1
        return lazy

    def _charged(self, lazy: LazyBranch, passes: int, evaluated: int, ok: bool) -> None:
        """Count what ``lazy`` evaluated since ``(passes, evaluated)`` and the outcome."""
        gen = self.gen
        gen.forward_passes += lazy.passes - passes
        gen.evaluated_tokens += lazy.evaluated - evaluated
        if ok:
            gen.exact_branches += 1
        else:
            gen.branch_fallbacks += 1

    def branch(self, m: Matcher, tokens: list[int], row: np.ndarray) -> ScoredBranch | None:
        """Beam search: the branch at this state with its ``particles`` most probable
        alternatives scored exactly (no other could enter the beam; the rest score -inf) (None:
        no branch, or over the budget, counted)."""
        lazy = self.lazy(m, tokens, row)
        if lazy is None:
            return None
        before = lazy.passes, lazy.evaluated
        ok = lazy.evaluate_top(self.params.particles)
        scored = lazy.scored(partial=True) if ok else None
        self._charged(lazy, *before, scored is not None)
        return scored

    def draw_branch(
        self, m: Matcher, tokens: list[int], row: np.ndarray
    ) -> tuple[BranchDecision, float] | None:
        """SMC: a continuation drawn from the branch at this state by the model's
        probability (T = 1), and the log of an unbiased estimate of the branch's mass, the
        particle's weight increment (:meth:`LazyBranch.log_mass`). Only what the draw and the
        estimate need is evaluated: at a call's end, where 85 whitespace runs lead to the
        closing tag, one or two paths instead of 416 positions. None: no branch, or over the
        budget (counted)."""
        lazy = self.lazy(m, tokens, row)
        if lazy is None:
            return None
        before = lazy.passes, lazy.evaluated
        dec = lazy.draw(1.0, self.sampler.uniform)
        log_z = lazy.log_mass(self.sampler.uniform) if dec is not None else None
        self._charged(lazy, *before, log_z is not None)
        if dec is None or log_z is None:
            return None
        return dec, log_z

    def extend(self, p: _Particle, chunk: list[int]) -> None:
        """Append ``chunk`` (cut at the token budget) to particle ``p`` and mark it done when
        the grammar is finished or the budget is spent."""
        room = self.max_tokens - len(p.tokens)
        for t in chunk[:room]:
            if not p.m.accept_token(t):
                raise ToolmaskError(f"matcher refused token {t}")
            p.tokens.append(t)
        if p.m.is_finished():
            p.done = True
        elif len(chunk) > room or self.full(len(p.tokens)):
            p.done = p.length = True

    def step_of(self, p: _Particle, row: np.ndarray) -> tuple[int, float, bool]:
        """Propose the next token of particle ``p``: ``(token, log weight increment, exit)``
        (``token`` is the end id when the turn ends)."""
        m = p.m
        m.fill_bitmask(self.buf)
        allowed = bitmask_to_bool(self.buf, self.V)
        T = self.temperature
        x = row / T if T != 1 else row
        if self.end_on_exit and m.is_accepting():
            token = self.sampler.sample(row)
            if self.filtered:
                lse, _ = _log_mass(x, None)
                q = float(self.sampler.probabilities(row)[token])
                inc = float(x[token]) - lse - float(np.log(q))
            else:
                inc = 0.0
            if token in self.eos or not allowed[token]:
                return self.end_id, inc, not allowed[token] and token not in self.eos
            return token, inc, False
        token = self.sampler.sample(row, self.buf)
        if self.filtered:
            lse, _ = _log_mass(x, None)
            q = float(self.sampler.probabilities(row, self.buf)[token])
            inc = float(x[token]) - lse - float(np.log(q))
        else:
            lse, kept = _log_mass(x, allowed)
            inc = kept - lse
        return token, inc, False

    # -- sampling: sequential Monte Carlo --
    def smc(self) -> Generation:
        n = self.params.particles
        parts = [_Particle([], self.compiled.matcher()) for _ in range(n)]
        while not self.stopped:
            alive = [p for p in parts if not p.done]
            if not alive:
                break
            for p, row in zip(alive, self.rows([p.tokens for p in alive]), strict=True):
                got = self.draw_branch(p.m, p.tokens, row)
                if got is not None:  # weight: the branch's whole mass (target / proposal)
                    dec, log_z = got
                    p.logw += log_z
                    self.extend(p, dec.tokens)
                    if dec.end and not p.done:
                        p.done = p.exit_end = True
                    continue
                token, inc, exited = self.step_of(p, row)
                p.logw += inc
                if token in self.eos:
                    p.done, p.exit_end = True, exited
                    continue
                self.extend(p, [token])
            parts = self.resample(parts)
            self.stream([p.tokens for p in parts])
        w = np.array([p.logw for p in parts])
        w = np.exp(w - w.max())
        c = np.cumsum(w)
        pick = parts[min(int(np.searchsorted(c, self.sampler.uniform() * c[-1], "right")), n - 1)]
        return self.finish(pick.tokens, exit_end=pick.exit_end, length=pick.length)

    def resample(self, parts: list[_Particle]) -> list[_Particle]:
        """Systematic resampling when the effective sample size is below half."""
        n = len(parts)
        lw = np.array([p.logw for p in parts])
        w = np.exp(lw - lw.max())
        w /= w.sum()
        if 1.0 / float((w * w).sum()) >= n / 2:
            return parts
        self.gen.resamples += 1
        c = np.cumsum(w)
        u = (self.sampler.uniform() + np.arange(n)) / n
        idx = np.minimum(np.searchsorted(c, u, side="right"), n - 1)
        mean = float(lw.max() + np.log(np.exp(lw - lw.max()).mean()))
        out: list[_Particle] = []
        used: set[int] = set()
        for i in idx.tolist():
            src = parts[i]
            if i not in used:  # the first copy keeps the matcher
                used.add(i)
                src.logw = mean
                out.append(src)
                continue
            m = src.m if src.done else self.matcher_for(src.tokens)
            out.append(_Particle(list(src.tokens), m, mean, src.done, src.exit_end, src.length))
        return out

    # -- greedy: beam search --
    def beam(self) -> Generation:
        width = self.params.particles
        beams: list[tuple[float, list[int], Matcher]] = [(0.0, [], self.compiled.matcher())]
        done: list[tuple[float, list[int], bool, bool]] = []  # score, tokens, exit_end, length
        while beams and not self.stopped:
            # candidates: (score, parent tokens, appended tokens, the turn ends after them)
            cands: list[tuple[float, list[int], list[int], bool]] = []
            for (score, tokens, m), row in zip(
                beams, self.rows([b[1] for b in beams]), strict=True
            ):
                scored = self.branch(m, tokens, row)
                if scored is not None:  # each alternative whole, its last token the best
                    for i, alt in enumerate(scored.alternatives):
                        if not np.isfinite(scored.scores[i]):
                            continue  # not evaluated: below the beam's width of this branch
                        ids = scored.seqs[i]
                        if not alt.end:
                            cand, lp = scored.last[i]
                            ids = [*ids[:-1], int(cand[int(np.argmax(lp))])]
                        cands.append((score + float(scored.scores[i]), tokens, ids, alt.end))
                    continue
                m.fill_bitmask(self.buf)
                allowed = bitmask_to_bool(self.buf, self.V)
                lse, _ = _log_mass(row, None)
                ids_ok = np.flatnonzero(allowed)
                if self.end_on_exit and m.is_accepting():
                    keep = ids_ok[~np.isin(ids_ok, list(self.eos))]
                    _, kept = _log_mass(row, keep if keep.size else None)
                    exit_mass = -np.expm1(kept - lse) if keep.size else 1.0
                    if exit_mass > 0:
                        cands.append((score + float(np.log(exit_mass)), tokens, [], True))
                    ids_ok = keep
                k = min(width, ids_ok.size)
                if k:
                    top = ids_ok[np.argpartition(-row[ids_ok], k - 1)[:k]]
                    for t in top.tolist():
                        cands.append((score + float(row[t]) - lse, tokens, [int(t)], False))
            cands.sort(key=lambda c: -c[0])
            nxt: list[tuple[float, list[int], Matcher]] = []
            for score, tokens, add, ends in cands:
                if len(nxt) >= width:
                    break
                seq = [*tokens, *add][: self.max_tokens]
                if ends:
                    done.append((score, seq, True, False))
                    continue
                m = self.matcher_for(seq)
                if m.is_finished():
                    done.append((score, seq, False, False))
                elif self.full(len(seq)):
                    done.append((score, seq, False, True))
                else:
                    nxt.append((score, seq, m))
            best_done = max((d[0] for d in done), default=-np.inf)
            beams = [b for b in nxt if b[0] > best_done]  # scores only fall as text grows
            lead = [max(done, key=lambda d: d[0])[1]] if done else []
            self.stream([b[1] for b in beams] + lead)
        if not done:
            if not beams:
                raise ToolmaskError("beam search found no valid continuation")
            return self.finish(beams[0][1], exit_end=False, length=True)
        score, tokens, exited, length = max(done, key=lambda d: d[0])
        return self.finish(tokens, exit_end=exited, length=length)
