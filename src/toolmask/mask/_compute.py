"""Token masks: which token ids may come next in an automaton state.

A text token is allowed iff feeding all its bytes keeps the automaton alive. Two routes:

* **Trie walk.** For each allowed first byte, walk that bucket of the :class:`TokenTrie` in
  depth-first order with the automaton, jumping over a subtree at its first dead byte. Cost:
  O(live trie nodes) memoised transitions (a dict lookup each once warm).
* **Loop-set shortcut.** Inside strings (and other "almost anything goes" places) the automaton
  reaches a state ``T`` that loops on a byte set ``B`` (``advance(T, b) == T``) and on every
  complete multi-byte UTF-8 character. Let ``S`` be the current state and ``G`` the first
  characters that take ``S`` to such a ``T`` (``S == T`` inside a string; ``S`` = just after the
  opening quote is the other common case). For a token ``t = c + rest`` with ``c`` in ``G``:
  if ``rest`` stays in the loop the token is allowed outright (one numpy pass over per-token
  byte sets of ``rest``, cached per ``B``); otherwise ``rest`` leaves the loop at a first
  position ``k`` and, since ``rest[:k]`` brings ``T`` back to ``T``, the token is allowed iff
  ``rest[k:]`` is alive from ``T``. Those exit suffixes form a small trie of their own (cached
  per ``B`` and vocabulary), walked as above. First characters outside ``G`` take the walk.

Special tokens are out of band: allowed when the grammar names them here
(``allowed_specials``); EOS ids are allowed exactly when the state accepts. Padding ids never.

The result is an int32 bitmask of ``ceil(V / 32)`` words (bit ``t % 32`` of word ``t // 32``),
xgrammar's layout.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask.automaton import PythonAutomaton, State
from toolmask.grammar import ANY_CHAR, UTF8_LEAD_LENGTH, utf8_sequences
from toolmask.limits import DEFAULT_LIMITS
from toolmask.mask._trie import TokenTrie

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = ["PythonMaskCache", "PythonVocabIndex", "compute_mask", "loop_set"]

#: a run class (bytes that all step one state to one next state) needs this many ASCII bytes
LOOP_MIN_ASCII = 8
#: below this many trie nodes behind a group of first bytes, walking beats the numpy tables
TABLE_MIN_NODES = 4096
#: first-character classes: 0-127 the ASCII byte, then these two
FIRST_MB = 128
FIRST_OTHER = 129

_MISS = object()

# UTF-8 well-formed multi-byte characters: lead range, then continuation ranges (RFC 3629)
_UTF8: tuple[tuple[tuple[int, int], ...], ...] = tuple(
    tuple(s) for s in utf8_sequences(ANY_CHAR) if len(s) > 1
)
#: intermediate states followed while checking that every UTF-8 character loops
_UTF8_FRONTIER_CAP = 8


class PythonVocabIndex:
    """The pure-Python :class:`~toolmask.mask.VocabIndex`: everything mask computation needs
    about one vocabulary, built once per vocabulary (the compiler keeps it).

    The trie of text tokens, and flat per-byte numpy arrays over the concatenated token bytes
    (owner token, whether the byte lies in the token's tail after its first character, whether
    it belongs to a complete UTF-8 character, and the index of its character within the tail),
    from which run tables are computed per run class in a few vectorised passes; at most
    ``max_run_tables`` of them are kept (``Limits.max_run_tables``).
    """

    def __init__(
        self, vocab: Vocabulary, *, max_run_tables: int = DEFAULT_LIMITS.max_run_tables
    ) -> None:
        self.vocab = vocab
        self.size = vocab.vocab_size
        self.words = (self.size + 31) // 32
        tb = vocab.token_bytes
        text = np.zeros(self.size, dtype=np.bool_)
        for i in range(self.size):
            if vocab.is_text(i):
                text[i] = True
        self.text = text
        texts = [tb[i] if text[i] else b"" for i in range(self.size)]
        self._texts = texts
        self.trie = TokenTrie((t, i) for i, t in enumerate(texts) if t)
        # first character of each text token: its class (the ASCII byte, FIRST_MB for a complete
        # multi-byte character, FIRST_OTHER for a partial / invalid one or a non-text id)
        first_cls = np.full(self.size, FIRST_OTHER, dtype=np.int16)
        first_len = np.zeros(self.size, dtype=np.int64)
        partial: list[tuple[bytes, int]] = []
        # per byte: part of a complete, well-formed UTF-8 character (ASCII included), and the
        # index of the character it belongs to counted from the token's tail
        valid = bytearray()
        char_idx: list[int] = []
        tail_chars = np.zeros(self.size, dtype=np.int64)
        for i, t in enumerate(texts):
            if not t:
                continue
            n = len(t)
            ok = bytearray(n)
            starts = []
            j = 0
            while j < n:
                c = t[j]
                size = 1 if c < 0x80 else UTF8_LEAD_LENGTH[c]
                if size and j + size <= n and (size == 1 or _is_char(t[j : j + size])):
                    ok[j : j + size] = b"\x01" * size
                    starts.append((j, size))
                    j += size
                else:
                    starts.append((j, 1))
                    j += 1
            valid += ok
            if ok[0]:
                first_cls[i] = t[0] if t[0] < 0x80 else FIRST_MB
                first_len[i] = starts[0][1]
            else:
                partial.append((t, i))
            idxs = []
            for k, (_, size) in enumerate(starts):
                idxs.extend([k - 1] * size)  # the first character is -1: not in the tail
            char_idx.extend(idxs)
            tail_chars[i] = len(starts) - 1
        self.first_cls = first_cls
        self.first_len = first_len
        self.tail_chars = tail_chars
        self.max_tail_chars = int(tail_chars.max(initial=0))
        lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=self.size)
        self.starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
        self.flat = np.frombuffer(b"".join(texts), dtype=np.uint8)
        self.owner = np.repeat(np.arange(self.size, dtype=np.int64), lens)
        self.pos = np.arange(self.flat.size, dtype=np.int64) - self.starts[self.owner]
        self.in_tail = self.pos >= first_len[self.owner]
        self.valid = np.frombuffer(bytes(valid), dtype=np.bool_)
        self.char_idx = np.array(char_idx, dtype=np.int64)
        self.nonempty = np.flatnonzero(lens > 0)
        #: tokens whose first character is partial or invalid UTF-8
        self.partial_trie = TokenTrie(partial)
        by_text: dict[str, list[int]] = {}
        for tid, s in vocab.special.items():
            by_text.setdefault(s, []).append(tid)
        self.special_by_text: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in by_text.items()}
        self.eos = np.array(sorted(vocab.eos_ids), dtype=np.int64)
        self._runs: OrderedDict[tuple[int, bool, int], _RunTables] = OrderedDict()
        self.max_run_tables = max(1, max_run_tables)
        self._lock = threading.Lock()

    def memory_bytes(self) -> int:
        """Bytes held, estimated: the numpy tables exactly, the Python lists of the tries and
        token texts at their slot and object sizes."""
        arrays: list[npt.NDArray[Any]] = [self.text, self.first_cls, self.first_len]
        arrays += [self.tail_chars, self.starts, self.flat, self.owner, self.pos]
        arrays += [self.in_tail, self.valid, self.char_idx]
        n = sum(int(a.nbytes) for a in arrays)
        n += (self.trie.n_nodes + self.partial_trie.n_nodes) * 5 * (8 + 28)
        n += sum(len(t) for t in self._texts) + len(self._texts) * 41
        return n

    def run_tables(self, run: int, utf8: bool, exits: int) -> _RunTables:
        """Tables for a run of the ASCII bytes ``run`` (and every complete UTF-8 character when
        ``utf8``) after a token's first character; only exits through a byte of ``exits``
        are kept. Built once per key (bounded cache): a few numpy passes over the token bytes
        plus tries of the kept exit suffixes."""
        key = (run, utf8, exits)
        with self._lock:
            hit = self._runs.get(key)
            if hit is not None:
                self._runs.move_to_end(key)
                return hit
        lut = np.zeros(256, dtype=np.bool_)
        for b in range(128):
            lut[b] = bool((run >> b) & 1)
        flat = self.flat
        inside = lut[flat]
        if utf8:
            inside |= (flat >= 0x80) & self.valid
        out = ~inside & self.in_tail
        big = np.int64(1 << 40)
        exit_at = np.full(self.size, big, dtype=np.int64)
        if self.nonempty.size:
            cand = np.where(out, self.pos, big)
            exit_at[self.nonempty] = np.minimum.reduceat(cand, self.starts[self.nonempty])
        first_ok = self.first_cls != FIRST_OTHER
        fully = first_ok & (exit_at == big)
        has_exit = np.flatnonzero(first_ok & (exit_at != big))
        flat_at = self.starts[has_exit] + exit_at[has_exit]
        ex_lut = np.zeros(256, dtype=np.bool_)
        for b in range(256):
            ex_lut[b] = bool((exits >> b) & 1)
        keep = ex_lut[flat[flat_at]]
        kept, kept_at = has_exit[keep], flat_at[keep]
        at_char = self.char_idx[kept_at]
        by_pos: dict[int, list[tuple[bytes, int]]] = {}
        texts = self._texts
        for tid, p, e in zip(kept.tolist(), at_char.tolist(), exit_at[kept].tolist(), strict=True):
            by_pos.setdefault(p, []).append((texts[tid][e:], tid))
        tables = _RunTables(fully, {p: TokenTrie(v) for p, v in sorted(by_pos.items())})
        with self._lock:
            self._runs[key] = tables
            while len(self._runs) > self.max_run_tables:
                self._runs.popitem(last=False)
        return tables


class _RunTables:
    """``fully``: tokens whose tail (after the first character) stays in the run;
    ``exits[p]``: trie of the suffixes of tokens leaving the run at tail character ``p``."""

    __slots__ = ("exits", "fully")

    def __init__(self, fully: npt.NDArray[np.bool_], exits: dict[int, TokenTrie]) -> None:
        self.fully = fully
        self.exits = exits


def _is_char(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _walk(a: PythonAutomaton, root: State, trie: TokenTrie, first: int, out: list[int]) -> None:
    """Append to ``out`` the ids of ``trie`` alive from ``root``, for first bytes in ``first``."""
    byte, depth, skip, ends, tokens = trie.byte, trie.depth, trie.skip, trie.ends, trie.tokens
    n = trie.max_depth + 1
    states: list[State] = [root] * n
    trans: list[dict[int, State | None]] = [a.transitions(root)] * n
    advance = a.advance
    miss = _MISS
    bucket = trie.bucket
    m = first
    while m:
        low = m & -m
        m ^= low
        i, hi = bucket[low.bit_length() - 1]
        while i < hi:
            d = depth[i]
            c = byte[i]
            t = trans[d - 1].get(c, miss)
            if t is miss:
                t = advance(states[d - 1], c)
            if t is None:
                i = skip[i]
                continue
            e = ends[i]
            if e >= 0:
                out.extend(tokens[e])
            if skip[i] > i + 1:  # has children
                states[d] = t  # type: ignore[call-overload]
                trans[d] = a.transitions(t)  # type: ignore[arg-type]
            i += 1


def loop_set(a: PythonAutomaton, s: State, allowed: int) -> tuple[int, bool]:
    """(bytes ``b`` with ``advance(s, b) == s``, whether every UTF-8 character loops too)."""
    loop = 0
    for subset, y in a.successors(s, allowed):
        if y == s:
            loop |= subset
    if (loop & _ASCII).bit_count() < LOOP_MIN_ASCII:
        return loop, False
    return loop, utf8_target(a, s) == s


def utf8_target(a: PythonAutomaton, s: State) -> State | None:
    """The one state every well-formed multi-byte UTF-8 character leads to from ``s``, if any.

    Follows the byte ranges of RFC 3629 through the automaton, giving up when more than a few
    intermediate states appear. Cost: at most a few hundred memoised transitions.
    """
    target: State | None = None
    for ranges in _UTF8:
        frontier: set[State] = {s}
        for lo, hi in ranges:
            mask = ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
            nxt: set[State] = set()
            for x in frontier:
                for _, y in a.successors(x, mask):
                    if y is None:
                        return None
                    nxt.add(y)
            if len(nxt) > _UTF8_FRONTIER_CAP:
                return None
            frontier = nxt
        if len(frontier) != 1:
            return None
        (t,) = frontier
        if target is None:
            target = t
        elif t != target:
            return None
    return target


_ASCII = (1 << 128) - 1
_HIGH = ((1 << 256) - 1) ^ _ASCII


def _step(
    a: PythonAutomaton, c: State, run: int, utf8: bool, memo: dict[tuple[State, int, bool], Any]
) -> State | bool | None:
    """The one state every byte of ``run`` (and every UTF-8 character) leads ``c`` to; False
    when all of them are dead in ``c``; None when neither (they go different ways)."""
    key = (c, run, utf8)
    hit = memo.get(key, _MISS)
    if hit is not _MISS:
        return hit  # type: ignore[no-any-return]
    out: State | bool | None = None
    succ = a.successors(c, run)
    if all(y is None for _, y in succ):
        allowed_high = a.allowed_bytes(c) & _HIGH
        out = False if not (utf8 and allowed_high) else None
    elif all(y is not None and y == succ[0][1] for _, y in succ):
        nxt = succ[0][1]
        if not utf8 or utf8_target(a, c) == nxt:
            out = nxt
    memo[key] = out
    return out


class _Run:
    """First characters of a state that lead into a run: the chain of states it walks."""

    __slots__ = ("chain", "exits", "firsts", "infinite", "mb", "run", "utf8")

    def __init__(
        self,
        firsts: int,
        mb: bool,
        run: int,
        utf8: bool,
        chain: list[State],
        infinite: bool,
        exits: int,
    ) -> None:
        self.firsts = firsts  # ASCII first bytes
        self.mb = mb  # complete multi-byte first characters too
        self.run = run
        self.utf8 = utf8
        self.chain = chain  # chain[j]: the state before tail character j
        self.infinite = infinite  # the chain ends in a self-loop
        self.exits = exits  # bytes other than the run's allowed somewhere on the chain


class _LoopInfo:
    __slots__ = ("runs",)

    def __init__(self, runs: list[_Run]) -> None:
        self.runs = runs


def _follow(
    a: PythonAutomaton, t: State, cap: int, memo: dict[tuple[State, int, bool], Any]
) -> tuple[int, bool, list[State], bool, int] | None:
    """From ``t``: the run class (the biggest set of ASCII bytes that go to one state), and
    the chain of states it walks until a self-loop, a dead end, or ``cap`` steps."""
    groups: dict[State, int] = {}
    for subset, y in a.successors(t, a.allowed_bytes(t) & _ASCII):
        if y is not None:
            groups[y] = groups.get(y, 0) | subset
    if not groups:
        return None
    nxt, run = max(groups.items(), key=lambda kv: kv[1].bit_count())
    if run.bit_count() < LOOP_MIN_ASCII:
        return None
    utf8 = utf8_target(a, t) == nxt
    chain = [t]
    exits = a.allowed_bytes(t) & ~run
    c = t
    while len(chain) <= cap:
        step = _step(a, c, run, utf8, memo)
        if step is None:
            return None  # the run splits: no table
        if step is False:
            return run, utf8, chain, False, exits
        assert isinstance(step, State)
        y = step
        if y == c:
            return run, utf8, chain, True, exits
        chain.append(y)
        exits |= a.allowed_bytes(y) & ~run
        c = y
    return run, utf8, chain, False, exits


def _loop_info(
    a: PythonAutomaton, s: State, ab: int, idx: PythonVocabIndex, memo: dict[Any, Any] | None
) -> _LoopInfo:
    if memo is not None:
        hit = memo.get(s)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
    step_memo: dict[tuple[State, int, bool], Any] = memo if memo is not None else {}
    by_target: dict[State, int] = {}
    for subset, t in a.successors(s, ab & _ASCII):
        if t is not None:
            by_target[t] = by_target.get(t, 0) | subset
    mb = utf8_target(a, s) if ab & _HIGH else None
    if mb is not None:
        by_target.setdefault(mb, 0)
    runs: list[_Run] = []
    bucket = idx.trie.bucket
    for t, firsts in by_target.items():
        nodes = 0
        f = firsts
        while f:
            low = f & -f
            f ^= low
            lo, hi = bucket[low.bit_length() - 1]
            nodes += hi - lo
        if nodes < TABLE_MIN_NODES and t != mb:
            continue  # a small walk is cheaper than the numpy passes over V
        got = _follow(a, t, idx.max_tail_chars + 1, step_memo)
        if got is None:
            continue
        run, utf8, chain, infinite, exits = got
        runs.append(_Run(firsts, t == mb, run, utf8, chain, infinite, exits))
    info = _LoopInfo(runs)
    if memo is not None:
        memo[s] = info
    return info


def compute_mask(
    a: PythonAutomaton, s: State, idx: PythonVocabIndex, memo: dict[Any, Any] | None = None
) -> npt.NDArray[np.int32]:
    """The int32 bitmask (``ceil(V / 32)`` words) of the tokens allowed in state ``s``.

    Cost: a trie walk over the live nodes; where first characters lead into a run (a string
    body: looping, or counting towards a length bound), a few numpy passes over V plus walks of
    that run's small exit-suffix tries instead. Use :class:`PythonMaskCache` to pay it once per
    state.
    """
    allowed = np.zeros(idx.words * 32, dtype=np.bool_)
    ab = a.allowed_bytes(s)
    ids: list[int] = []
    if ab:
        walk_first = ab
        mb_done = False
        for r in _loop_info(a, s, ab, idx, memo).runs:
            tables = idx.run_tables(r.run, r.utf8, r.exits)
            lut = np.zeros(FIRST_OTHER + 1, dtype=np.bool_)
            fb = r.firsts
            while fb:
                low = fb & -fb
                fb ^= low
                lut[low.bit_length() - 1] = True
            lut[FIRST_MB] = r.mb
            sel = lut[idx.first_cls]
            steps = len(r.chain)  # tail characters the chain can take (all, if infinite)
            ok = sel & tables.fully
            if not r.infinite and steps <= idx.max_tail_chars:
                ok &= idx.tail_chars < steps
            allowed[: idx.size] |= ok
            found: list[int] = []
            for p, trie in tables.exits.items():
                if p < steps:
                    c = r.chain[p]
                elif r.infinite:
                    c = r.chain[-1]
                else:
                    continue
                _walk(a, c, trie, a.allowed_bytes(c), found)
            if found:
                f = np.array(found, dtype=np.int64)
                allowed[f[sel[f]]] = True
            walk_first &= ~r.firsts
            if r.mb:
                mb_done = True
        if mb_done:
            _walk(a, s, idx.partial_trie, walk_first & _HIGH, ids)
            walk_first &= _ASCII
        _walk(a, s, idx.trie, walk_first, ids)
    for text in a.allowed_specials(s):
        ids.extend(idx.special_by_text.get(text, ()))
    if ids:
        allowed[np.array(ids, dtype=np.int64)] = True
    if s.accepting and idx.eos.size:
        allowed[idx.eos] = True
    return np.packbits(allowed, bitorder="little").view(np.int32)


class PythonMaskCache:
    """The pure-Python :class:`~toolmask.mask.MaskCache`: a bounded cache of bitmasks keyed by
    automaton state (equal states share one mask).

    ``get(state)`` computes on a miss; past ``capacity`` masks the oldest computed is dropped
    (first in, first out: a hit takes no lock and reorders nothing). Thread-safe; two threads
    missing the same state may both compute it (the results are equal). Cost of a hit: one
    dict lookup.
    """

    def __init__(self, automaton: PythonAutomaton, index: PythonVocabIndex, max_bytes: int) -> None:
        self.automaton = automaton
        self.index = index
        self.capacity = max(16, max_bytes // max(1, index.words * 4))
        self._masks: OrderedDict[State, npt.NDArray[np.int32]] = OrderedDict()
        self._loop_memo: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, s: State) -> npt.NDArray[np.int32]:
        """The (read-only) mask of ``s``; never modify it, copy it."""
        m = self._masks.get(s)
        if m is not None:
            self.hits += 1
            return m
        self.misses += 1
        if len(self._loop_memo) > self.capacity:
            self._loop_memo.clear()
        m = compute_mask(self.automaton, s, self.index, self._loop_memo)
        m.setflags(write=False)
        with self._lock:
            self._masks[s] = m
            if len(self._masks) > self.capacity:
                self._masks.popitem(last=False)
        return m

    def fill(self, s: State, out: npt.NDArray[np.int32]) -> None:
        """Copy the mask of ``s`` into ``out``."""
        np.copyto(out, self.get(s))

    def advance_token(self, s: State, tid: int) -> State | None:
        """The state after text token ``tid``'s bytes, or None."""
        return self.automaton.advance_bytes(s, self.index.vocab.token_bytes[tid])

    def memory_bytes(self) -> int:
        """Bytes of the cached masks (the loop memo and run tables are not counted)."""
        return len(self._masks) * self.index.words * 4

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "states": len(self._masks)}

    def clear(self) -> None:
        with self._lock:
            self._masks.clear()
            self._loop_memo.clear()

    def __len__(self) -> int:
        return len(self._masks)
