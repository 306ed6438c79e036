"""Choosing among a finite branch's alternatives (the ``exact`` mode; see ``docs/sampling.md``;
the branches come from :mod:`toolmask.decoding._branch`).

**Scoring.** Each alternative is tokenised with the model's own tokeniser. All tokens but the
last are scored by their log-softmax; the last by the mass of every allowed token that starts
with its bytes (the token may merge with what follows), so alternatives that end where the
text goes on compare fairly; an alternative that ends the turn is scored by the exit mass
there (the end-of-turn token plus what the grammar forbids, as ``end_on_exit`` decodes).
After the choice, every token but the last is appended and the last is drawn among the
tokens that start with its bytes, by the model's probability: by the chain rule the text then
follows the alternative's probability. The result is exact for the branch with respect to the
canonical tokenisation of each alternative; other tokenisations of the same text are not
counted (their mass is usually small; ``bench/aligned.py`` measures it).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from toolmask.decoding._branch import Alternative
from toolmask.sampling import bitmask_to_bool

if TYPE_CHECKING:
    from toolmask._compile import Matcher
    from toolmask.vocab import Vocabulary

__all__ = [
    "BranchDecision",
    "LazyBranch",
    "LogitsMany",
    "ScoredBranch",
    "prefix_index",
    "score_branch",
]


@dataclass(slots=True)
class BranchDecision:
    """What :meth:`ScoredBranch.draw` chose: ``tokens`` to append (the last one drawn among
    the tokens that start with the alternative's last token) and ``end`` (the turn ends after
    them)."""

    tokens: list[int]
    end: bool
    index: int


@dataclass(slots=True)
class ScoredBranch:
    """A branch scored by :func:`score_branch`: each alternative's token ids and
    log-probability (``scores``), the cost of scoring (``passes``: model calls, ``evaluated``:
    token positions), and what :meth:`draw` needs to finish an alternative."""

    alternatives: tuple[Alternative, ...]
    seqs: list[list[int]]
    scores: np.ndarray
    passes: int
    evaluated: int
    #: per alternative: the tokens its last token stands for, and their logits there
    last: list[tuple[np.ndarray, np.ndarray]]

    @property
    def log_total(self) -> float:
        """log of the summed probability of every alternative (the branch's normaliser)."""
        return _log_sum(self.scores)

    def draw(self, temperature: float, uniform: Callable[[], float]) -> BranchDecision:
        """An alternative drawn from ``exp(score / T)``, or at temperature 0 the one
        :meth:`greedy` takes; its last token drawn among the tokens that start with its
        bytes, likewise."""
        pick = self.greedy() if temperature == 0 else _choose(self.scores, temperature, uniform)
        ids = self.seqs[pick]
        if self.alternatives[pick].end:
            return BranchDecision(list(ids), True, pick)
        cand, logits = self.last[pick]
        last = int(cand[_choose(logits, temperature, uniform)])
        return BranchDecision([*ids[:-1], last], False, pick)

    def greedy(self) -> int:
        """Temperature 0: greedy decoding of the exact conditional. Down the alternatives'
        token trie, each split takes the token whose alternatives hold the most probability
        together (the argmax of the model's next token *and* a valid completion of the
        branch), until one alternative is left; an alternative that ends at a split counts on
        its own. Where the model prefers "another key" or "another call" to the end but
        spreads that preference over several keys or tools, this takes another one, as the
        model's own greedy step would; the single most likely alternative might be the end.
        Ties go to the earlier alternative."""
        live = list(range(len(self.seqs)))
        k = 0
        while len(live) > 1:
            groups: dict[Any, list[int]] = {}
            for i in live:
                ids = self.seqs[i]
                groups.setdefault(ids[k] if k < len(ids) else ("end", i), []).append(i)
            if len(groups) > 1:
                live = max(groups.values(), key=lambda g: _log_sum(self.scores[g]))
            k += 1
        return live[0]


def _log_sum(x: np.ndarray) -> float:
    top = float(x.max())
    if not np.isfinite(top):
        return top
    return top + float(np.log(np.exp(x - top).sum()))


class _PrefixIndex:
    """The vocabulary's token byte strings sorted, for "tokens that start with b" queries."""

    def __init__(self, vocab: Vocabulary) -> None:
        pairs = sorted((p, i) for i, p in enumerate(vocab.token_bytes) if p)
        self.keys = [p for p, _ in pairs]
        self.ids = np.array([i for _, i in pairs], dtype=np.int64)

    def starting_with(self, prefix: bytes) -> np.ndarray:
        lo = bisect.bisect_left(self.keys, prefix)
        hi = lo
        n = len(self.keys)
        # the range ends at the first key that does not start with prefix
        step = 1
        while hi < n and self.keys[min(n - 1, hi + step - 1)].startswith(prefix):
            hi = min(n, hi + step)
            step *= 2
        while hi < n and self.keys[hi].startswith(prefix):
            hi += 1
        return self.ids[lo:hi]


_INDEX: dict[str, _PrefixIndex] = {}


def prefix_index(vocab: Vocabulary) -> _PrefixIndex:
    """The vocabulary's sorted token bytes, built once per vocabulary (a few kept)."""
    got = _INDEX.get(vocab.fingerprint)
    if got is None:
        if len(_INDEX) > 4:
            _INDEX.clear()
        got = _INDEX[vocab.fingerprint] = _PrefixIndex(vocab)
    return got


#: ``logits_many(context, continuations, every) -> (rows, passes, evaluated)``: see
#: :meth:`toolmask.decoding.ModelEngine.logits_many` (called with ``every=True``)
LogitsMany = Callable[[list[int], list[list[int]], bool], tuple[list[Any], int, int]]


@dataclass(slots=True)
class _Prepared:
    """A branch's alternatives as the model writes them: per alternative its canonical token
    ids, the tokens its last token stands for (non-end alternatives), and the allowed
    non-end ids after it (end alternatives: what the exit mass leaves out)."""

    alternatives: tuple[Alternative, ...]
    seqs: list[list[int]]
    last_sets: list[np.ndarray]
    exits: list[np.ndarray | None]

    def path(self, i: int) -> list[int]:
        """The tokens after which alternative ``i`` needs the model's row (its factors sit
        at every prefix of this, the empty one included)."""
        ids = self.seqs[i]
        return ids if self.alternatives[i].end else ids[:-1]


def _prepare(
    alternatives: Sequence[Alternative],
    m: Matcher,
    vocab: Vocabulary,
    encode: Callable[[str], list[int]],
) -> _Prepared | None:
    """Tokenise each alternative and read from the matcher what its last step allows (None
    when an alternative cannot be tokenised as the grammar allows). ``m`` is left as it was."""
    table = vocab.token_bytes
    eos = vocab.eos_ids
    width = (vocab.vocab_size + 31) // 32
    buf = np.zeros(width, dtype=np.int32)
    seqs: list[list[int]] = []
    last_sets: list[np.ndarray] = []  # per alternative: the tokens its last token stands for
    exits: list[np.ndarray | None] = []  # per alternative: the allowed non-end ids after it
    index = prefix_index(vocab)
    for alt in alternatives:
        try:
            text = alt.text.decode("utf-8")
        except UnicodeDecodeError:
            return None
        ids = encode(text) if text else []
        if b"".join(table[t] or b"" for t in ids) != alt.text or (not alt.end and not ids):
            return None
        ok = True
        taken = 0
        cand = np.zeros(0, dtype=np.int64)
        for k, t in enumerate(ids):
            if k == len(ids) - 1 and not alt.end:
                m.fill_bitmask(buf)
                allowed = bitmask_to_bool(buf, vocab.vocab_size)
                starts = index.starting_with(table[t] or b"")
                cand = starts[allowed[starts]]
            if not m.accept_token(t):
                ok = False
                break
            taken += 1
        exit_ids = None
        if ok and alt.end:
            if not m.is_accepting():
                ok = False
            else:
                m.fill_bitmask(buf)
                allowed = bitmask_to_bool(buf, vocab.vocab_size)
                allowed[list(eos)] = False
                exit_ids = np.flatnonzero(allowed)
        m.rollback(taken)
        if not ok:
            return None
        seqs.append(ids)
        last_sets.append(cand)
        exits.append(exit_ids)
    return _Prepared(tuple(alternatives), seqs, last_sets, exits)


class _Rows:
    """The model's rows at the prefixes of a branch's token trie (the key ``()`` is the
    context's own row), with each row's log-sum-exp computed once."""

    def __init__(self, row: Any) -> None:
        self.rows: dict[tuple[int, ...], Any] = {(): np.asarray(row)}
        self._lse: dict[tuple[int, ...], float] = {}

    def log_softmax(self, prefix: tuple[int, ...], ids: Any) -> np.ndarray:
        x = self.rows[prefix]
        z = self._lse.get(prefix)
        if z is None:  # float32 exp over the row, summed in float64
            top = float(x.max())
            e = np.exp(np.asarray(x, dtype=np.float32) - np.float32(top))
            z = self._lse[prefix] = top + float(np.log(e.sum(dtype=np.float64)))
        return np.asarray(x[ids], dtype=np.float64) - z

    def add(self, path: list[int], block: Any) -> None:
        """Store ``block[k]``, the row after ``path[: k + 1]``, for each k."""
        for k in range(len(path)):
            key = tuple(path[: k + 1])
            if key not in self.rows:
                self.rows[key] = block[k]

    def score(
        self, prep: _Prepared, i: int, start: int = 0, known: float = 0.0
    ) -> tuple[float, bool, tuple[np.ndarray, np.ndarray], int]:
        """Alternative ``i``'s log-probability from the rows held: ``(log p, complete,
        last, factors)``. Incomplete (a row on its path not evaluated yet): the sum of the
        ``factors`` known, an upper bound, since each missing factor is a log-probability.
        ``last``: the tokens its last token stands for and their log-probabilities (empty for
        an end). ``start`` / ``known``: the factors an earlier call summed (rows are only ever
        added, so a later call goes on from there, with the same sum)."""
        alt, ids = prep.alternatives[i], prep.seqs[i]
        full = len(ids) if alt.end else len(ids) - 1
        total = known
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0))
        for k in range(start, full):
            key = tuple(ids[:k])
            if key not in self.rows:
                return total, False, empty, k
            total += float(self.log_softmax(key, ids[k]))
        key = tuple(ids[:full])
        if key not in self.rows:
            return total, False, empty, full
        if alt.end:
            exits = prep.exits[i]
            kept = self.log_softmax(key, exits) if exits is not None else np.zeros(0)
            mass = float(np.exp(kept).sum()) if kept.size else 0.0
            total += float(np.log1p(-min(mass, 1.0))) if mass < 1.0 else -np.inf
            return total, True, empty, full
        cand = prep.last_sets[i]
        lp = self.log_softmax(key, cand)
        top = float(lp.max()) if lp.size else -np.inf
        total += top + float(np.log(np.exp(lp - top).sum())) if lp.size else -np.inf
        return total, True, (cand, lp), full


def score_branch(
    alternatives: Sequence[Alternative],
    *,
    m: Matcher,
    vocab: Vocabulary,
    encode: Callable[[str], list[int]],
    logits_many: LogitsMany,
    context: list[int],
    row: Any,
    max_tokens: int,
) -> ScoredBranch | None:
    """Score ``alternatives`` after ``context`` (whose logits ``row`` the caller holds; the
    matcher ``m`` is at the branch). None when an alternative cannot be tokenised as the
    grammar allows, or their token trie has more than ``max_tokens`` positions (the caller
    falls back and counts it). ``m`` is left as it was. Cost: one :data:`LogitsMany` call over
    the alternatives' trie, then one log-sum-exp per trie node. Every alternative is scored
    (what beam search and ``bench/aligned.py`` need); to choose one, or to weigh an SMC
    particle, :class:`LazyBranch` evaluates only what that needs."""
    lazy = LazyBranch.build(
        alternatives,
        m=m,
        vocab=vocab,
        encode=encode,
        logits_many=logits_many,
        context=context,
        row=row,
        max_tokens=max_tokens,
    )
    if lazy is None or not lazy.evaluate_all():
        return None
    return lazy.scored()


def _trie(paths: list[list[int]]) -> tuple[set[tuple[int, ...]], list[list[int]]]:
    """The token trie of ``paths``: its nodes (every non-empty prefix), and the paths that are
    no prefix of another (evaluating those evaluates every node)."""
    nodes = {tuple(w[:k]) for w in paths for k in range(1, len(w) + 1)}
    leaves = list(
        {
            tuple(w): w
            for w in paths
            if w and not any(len(o) > len(w) and o[: len(w)] == w for o in paths)
        }.values()
    )
    return nodes, leaves


class LazyBranch:
    """A branch to choose from, whose alternatives are scored only as far as the choice needs.

    Scoring the whole trie costs one position per trie node; most of them belong to
    alternatives the model all but rules out at their first token (85 whitespace runs before
    a closing tag, of which the model writes one). Every factor of an alternative's
    probability is a probability, so the factors known so far bound it from above. So:

    - **sampling** (temperature T > 0) is rejection sampling under that envelope: propose an
      alternative with probability proportional to ``bound ** (1 / T)``, evaluate its path
      (one call for its missing rows), accept with ``(p / bound) ** (1 / T)``, and after a
      rejection propose again under the bounds the evaluated rows tightened (a path's rows
      tighten every alternative that shares a prefix with it: after `\\n\\t\\t</x>` is
      rejected, every run that starts with `\\n` is bound by its second token). Each round
      accepts alternative i with probability ``p_i ** (1 / T) / sum(bound ** (1 / T))``, so the
      draw follows ``p ** (1 / T)`` exactly, as :meth:`ScoredBranch.draw` does over the fully
      scored trie. Where the paths would pass the trie's positions, or leave too few of the
      budget to score the rest, the rest is scored at once and the draw made from the exact
      scores;
    - **greedy** (T = 0) takes what :meth:`ScoredBranch.greedy` takes: at each split the
      token group whose alternatives hold the most mass, decided as soon as one group's
      known mass reaches every other group's bound (the alternative with the largest bound
      among the contenders is evaluated next).

    Either way the positions spent stay under twice the trie's (a path evaluated alone counts
    the prefix it shares with another path again; past the trie's count the rest is evaluated
    at once), and usually one or two paths are evaluated.
    ``passes`` and ``evaluated`` count the model calls and positions so far; a draw returns
    None when it would pass ``max_tokens`` positions (the caller falls back and counts it).
    """

    def __init__(
        self,
        prep: _Prepared,
        *,
        logits_many: LogitsMany,
        context: list[int],
        row: Any,
        max_tokens: int,
    ) -> None:
        self.prep = prep
        self._logits_many = logits_many
        self._context = list(context)
        self._rows = _Rows(row)
        self._max_tokens = max_tokens
        self.passes = 0
        self.evaluated = 0
        n = len(prep.seqs)
        self._bound = np.zeros(n)
        self._done = np.zeros(n, dtype=bool)
        self._last: list[tuple[np.ndarray, np.ndarray]] = [
            (np.zeros(0, dtype=np.int64), np.zeros(0))
        ] * n
        #: per open alternative: how many of its factors its bound sums (a re-score goes on
        #: from there)
        self._at = [0] * n
        #: positions of the alternatives' token trie: what scoring all of them at once costs
        self.trie_nodes = len(_trie([prep.path(i) for i in range(n)])[0])
        self._refresh()

    @classmethod
    def build(
        cls,
        alternatives: Sequence[Alternative],
        *,
        m: Matcher,
        vocab: Vocabulary,
        encode: Callable[[str], list[int]],
        logits_many: LogitsMany,
        context: list[int],
        row: Any,
        max_tokens: int,
    ) -> LazyBranch | None:
        """As :func:`score_branch` takes its arguments; None when an alternative cannot be
        tokenised as the grammar allows."""
        prep = _prepare(alternatives, m, vocab, encode)
        if prep is None:
            return None
        return cls(prep, logits_many=logits_many, context=context, row=row, max_tokens=max_tokens)

    def _refresh(self) -> None:
        """Re-score the open alternatives from where each stopped (O(open alternatives) plus
        the factors the new rows give, not their whole paths again)."""
        for i in np.flatnonzero(~self._done):
            j = int(i)
            got = self._rows.score(self.prep, j, self._at[j], float(self._bound[j]))
            self._bound[j], self._done[j], self._last[j], self._at[j] = got

    def _evaluate(self, i: int) -> bool:
        """Evaluate alternative ``i``'s missing rows in one call (False: over the budget).
        Where that would take the positions spent past the whole trie's, the rest of the trie
        is evaluated instead (:meth:`evaluate_all`)."""
        path = self.prep.path(i)
        spent = self.evaluated + len(path)
        # the rest must stay affordable; the trie bounds what is missing, so the missing
        # nodes are counted only when the whole trie would not fit beside this path
        if spent > self.trie_nodes or (
            spent + self.trie_nodes > self._max_tokens
            and spent + len(self._missing()[0]) > self._max_tokens
        ):
            return self.evaluate_all()
        got, passes, evaluated = self._logits_many(self._context, [path], True)
        self._rows.add(path, got[0])
        self.passes += passes
        self.evaluated += evaluated
        self._refresh()
        return True

    def _missing(self) -> tuple[set[tuple[int, ...]], list[list[int]]]:
        """The trie nodes of the alternatives not scored yet whose rows are not held, and the
        paths that evaluate them."""
        nodes, leaves = _trie([self.prep.path(int(i)) for i in np.flatnonzero(~self._done)])
        return nodes - self._rows.rows.keys(), leaves

    def evaluate_all(self) -> bool:
        """Evaluate every row still missing, in one call over their trie (False: over the
        budget). Afterwards every alternative is scored exactly."""
        missing, leaves = self._missing()
        if not missing:
            return True
        if self.evaluated + len(missing) > self._max_tokens:  # what the call may evaluate
            return False
        got, passes, evaluated = self._logits_many(self._context, leaves, True)
        for w, block in zip(leaves, got, strict=True):
            self._rows.add(w, block)
        self.passes += passes
        self.evaluated += evaluated
        self._refresh()
        return True

    def evaluate_top(self, k: int) -> bool:
        """Evaluate alternatives, the largest bound first, until the ``k`` most probable are
        known exactly (False: over the budget): every alternative not evaluated then has a
        bound, so a probability, at most the ``k``-th best evaluated one's. What a beam of
        width ``k`` needs from a branch; usually a few paths instead of the whole trie."""
        while True:
            live = np.isfinite(self._bound)
            open_ = np.flatnonzero(~self._done & live)
            if not open_.size:
                return True
            known = self._bound[self._done & live]
            if known.size >= k and np.partition(known, known.size - k)[known.size - k] >= float(
                self._bound[open_].max()
            ):
                return True
            if not self._evaluate(int(open_[np.argmax(self._bound[open_])])):
                return False

    def scored(self, *, partial: bool = False) -> ScoredBranch | None:
        """The branch as :func:`score_branch` returns it, once :meth:`evaluate_all` has
        scored every alternative (None: no alternative has any probability). ``partial``:
        as far as it is scored (after :meth:`evaluate_top`), an alternative not evaluated
        scored -inf."""
        if not partial and not self._done.all():
            raise ValueError("scored() needs every alternative scored: call evaluate_all()")
        if not np.isfinite(self._bound.max()):
            return None
        p = self.prep
        scores = np.where(self._done, self._bound, -np.inf)
        return ScoredBranch(
            p.alternatives, p.seqs, scores, self.passes, self.evaluated, list(self._last)
        )

    def draw(self, temperature: float, uniform: Callable[[], float]) -> BranchDecision | None:
        """As :meth:`ScoredBranch.draw` over the fully scored branch (None: the positions it
        would need pass the budget, or no alternative has any probability)."""
        pick = self._greedy() if temperature == 0 else self._sample(temperature, uniform)
        if pick is None:
            return None
        ids = self.prep.seqs[pick]
        if self.prep.alternatives[pick].end:
            return BranchDecision(list(ids), True, pick)
        cand, logits = self._last[pick]
        last = int(cand[_choose(logits, temperature, uniform)])
        return BranchDecision([*ids[:-1], last], False, pick)

    def log_mass(self, uniform: Callable[[], float]) -> float | None:
        """An unbiased estimate of the branch's total probability ``Z = sum p`` (its log;
        -inf when it is 0): what the aligned sampler multiplies a particle's weight by when
        it draws the particle's continuation from the branch (:meth:`draw` at T = 1).

        The alternatives scored so far count exactly. For the rest one alternative ``j`` is
        drawn by its bound ``b_j`` (their sum is ``B``) and evaluated: ``p_j * B / b_j`` has
        expectation ``sum p`` over the rest, whatever the rows already evaluated, so the
        estimate's expectation is ``Z`` given everything the draw did before it; that makes
        the particle properly weighted. Each ``p_j <= b_j``, so the rest adds at most ``B``:
        where the draw left the bounds tight (one path evaluated, the others ruled out by
        their first tokens) the estimate is within ``B`` of ``Z``; where it evaluated the
        whole trie it is exact. Cost: one path at most. None: over the budget."""
        known = self._bound[self._done]
        log_known = _log_sum(known) if known.size else -np.inf
        rest = np.flatnonzero(~self._done & np.isfinite(self._bound))
        if not rest.size:
            return log_known
        bounds = self._bound[rest]
        j = int(rest[_choose(bounds, 1.0, uniform)])
        b_j, log_b = float(self._bound[j]), _log_sum(bounds)
        if not self._evaluate(j):
            return None
        return float(np.logaddexp(log_known, float(self._bound[j]) - b_j + log_b))

    def _sample(self, temperature: float, uniform: Callable[[], float]) -> int | None:
        while True:
            if not np.isfinite(self._bound.max()):
                return None
            i = _choose(self._bound, temperature, uniform)
            if self._done[i]:
                return i
            bound = float(self._bound[i])
            if not self._evaluate(i):
                return None
            if uniform() < math.exp((float(self._bound[i]) - bound) / temperature):
                return i

    def _greedy(self) -> int | None:
        live = list(range(len(self.prep.seqs)))
        k = 0
        while len(live) > 1:
            groups: dict[Any, list[int]] = {}
            for i in live:
                ids = self.prep.seqs[i]
                groups.setdefault(ids[k] if k < len(ids) else ("end", i), []).append(i)
            if len(groups) > 1:
                got = self._decide(list(groups.values()))
                if got is None:
                    return None
                live = got
            k += 1
        if not np.isfinite(self._bound[live[0]]):
            return None
        if not self._done[live[0]] and not self._evaluate(live[0]):
            return None
        return live[0]

    def _decide(self, groups: list[list[int]]) -> list[int] | None:
        """The group with the most mass, evaluating alternatives until it is certain."""
        while True:
            upper = [_log_sum(self._bound[g]) for g in groups]
            if all(self._done[i] for g in groups for i in g):
                return groups[int(np.argmax(upper))]
            lower = [
                _log_sum(self._bound[[i for i in g if self._done[i]]])
                if any(self._done[i] for i in g)
                else -np.inf
                for g in groups
            ]
            best = int(np.argmax(upper))
            if all(lower[best] >= upper[j] for j in range(len(groups)) if j != best):
                return groups[best]
            # the open alternative with the largest bound among the groups still in the race
            floor = max(lower)
            open_ = [
                i for j, g in enumerate(groups) if upper[j] >= floor for i in g if not self._done[i]
            ]
            i = max(open_, key=lambda x: float(self._bound[x]))
            if not self._evaluate(i):
                return None


def _choose(logp: np.ndarray, temperature: float, uniform: Callable[[], float]) -> int:
    """argmax (temperature 0; ties to the first) or a draw from ``exp(logp / T)``."""
    if temperature == 0 or logp.size == 1:
        return int(np.argmax(logp))
    z = logp / temperature
    z = z - z.max()
    p = np.exp(z)
    c = np.cumsum(p)
    return min(int(np.searchsorted(c, uniform() * c[-1], side="right")), logp.size - 1)
