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
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from toolmask.automaton import Automaton, State
from toolmask.mask._trie import TokenTrie, token_byte_sets, whole_utf8

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = ["MaskCache", "VocabIndex", "compute_mask", "vocab_index"]

#: a state is treated as a loop state when it loops on at least this many ASCII bytes
LOOP_MIN_ASCII = 32
#: below this many trie nodes behind a group of first bytes, walking beats the numpy tables
TABLE_MIN_NODES = 4096
#: loop tables kept per vocabulary
LOOP_TABLES = 32
#: first-character classes: 0-127 the ASCII byte, then these two
FIRST_MB = 128
FIRST_OTHER = 129

_MISS = object()

# UTF-8 well-formed multi-byte characters: lead range, then continuation ranges (RFC 3629)
_UTF8: tuple[tuple[tuple[int, int], ...], ...] = (
    ((0xC2, 0xDF), (0x80, 0xBF)),
    ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
    ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
    ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
)
#: intermediate states followed while checking that every UTF-8 character loops
_UTF8_FRONTIER_CAP = 8


def _utf8_len(lead: int) -> int:
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


class VocabIndex:
    """Everything mask computation needs about one vocabulary, built once (see vocab_index).

    ``trie`` holds the text tokens; ``byte_sets`` / ``utf8`` / ``text`` are per-token numpy
    arrays; loop tables are built on first use per ``(B, U)`` and kept (bounded).
    """

    def __init__(self, vocab: Vocabulary) -> None:
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
        self.byte_sets = token_byte_sets(texts)
        self.utf8 = whole_utf8(texts) & text
        # first character of each text token: its class (the ASCII byte, FIRST_MB for a complete
        # multi-byte character, FIRST_OTHER for a partial / invalid one or a non-text id) and
        # the per-token byte sets of what follows it
        first_cls = np.full(self.size, FIRST_OTHER, dtype=np.int16)
        first_len = [0] * self.size
        partial: list[tuple[bytes, int]] = []
        for i, t in enumerate(texts):
            if not t:
                continue
            c = t[0]
            if c < 0x80:
                first_cls[i] = c
                first_len[i] = 1
                continue
            n = _utf8_len(c)
            if n and len(t) >= n and _is_char(t[:n]):
                first_cls[i] = FIRST_MB
                first_len[i] = n
            else:
                partial.append((t, i))
        self.first_cls = first_cls
        self._first_len = first_len
        self.tail_sets = token_byte_sets([t[n:] for t, n in zip(texts, first_len, strict=True)])
        #: tokens whose first character is partial or invalid UTF-8
        self.partial_trie = TokenTrie(partial)
        by_text: dict[str, list[int]] = {}
        for tid, s in vocab.special.items():
            by_text.setdefault(s, []).append(tid)
        self.special_by_text: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in by_text.items()}
        self.eos = np.array(sorted(vocab.eos_ids), dtype=np.int64)
        self._loops: OrderedDict[int, tuple[npt.NDArray[np.bool_], TokenTrie]] = OrderedDict()
        self._lock = threading.Lock()

    def loop_tables(self, loop: int) -> tuple[npt.NDArray[np.bool_], TokenTrie]:
        """For a loop on the byte set ``loop`` (plus every UTF-8 character): (tokens whose rest
        after the first character stays in the loop, trie of the exit suffixes of the others
        whose first character is complete). Built once per ``loop`` (bounded cache)."""
        with self._lock:
            hit = self._loops.get(loop)
            if hit is not None:
                self._loops.move_to_end(loop)
                return hit
        words = np.array([(loop >> (64 * w)) & ((1 << 64) - 1) for w in range(4)], np.uint64)
        outside = ~words
        first_ok = self.first_cls != FIRST_OTHER
        ascii_ok = ((self.tail_sets[:, :2] & outside[:2]) == 0).all(axis=1)
        fully = ascii_ok & self.utf8 & first_ok
        rest = np.flatnonzero(first_ok & ~fully)
        texts, first_len = self._texts, self._first_len
        pairs: list[tuple[bytes, int]] = []
        for tid in rest.tolist():
            t = texts[tid]
            n = first_len[tid]
            k = n + _exit(t[n:], loop)
            pairs.append((t[k:], tid))
        tables = (fully, TokenTrie(pairs))
        with self._lock:
            self._loops[loop] = tables
            while len(self._loops) > LOOP_TABLES:
                self._loops.popitem(last=False)
        return tables


def _is_char(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _exit(t: bytes, loop: int) -> int:
    """Index of the first byte of ``t`` outside the loop: an ASCII byte not in ``loop``, or a
    multi-byte character that is partial or invalid."""
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if c < 0x80:
            if not (loop >> c) & 1:
                return i
            i += 1
            continue
        size = _utf8_len(c)
        if size == 0 or i + size > n or not _is_char(t[i : i + size]):
            return i
        i += size
    return i


_index_cache: OrderedDict[str, VocabIndex] = OrderedDict()
_index_lock = threading.Lock()


def vocab_index(vocab: Vocabulary) -> VocabIndex:
    """The :class:`VocabIndex` of ``vocab``, built once per fingerprint (LRU of 8)."""
    key = vocab.fingerprint
    with _index_lock:
        hit = _index_cache.get(key)
        if hit is not None:
            _index_cache.move_to_end(key)
            return hit
    idx = VocabIndex(vocab)
    with _index_lock:
        _index_cache[key] = idx
        while len(_index_cache) > 8:
            _index_cache.popitem(last=False)
    return idx


def _walk(a: Automaton, root: State, trie: TokenTrie, first: int, out: list[int]) -> None:
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


def loop_set(a: Automaton, s: State, allowed: int) -> tuple[int, bool]:
    """(bytes ``b`` with ``advance(s, b) == s``, whether every UTF-8 character loops too)."""
    loop = 0
    m = allowed
    while m:
        low = m & -m
        m ^= low
        b = low.bit_length() - 1
        if a.advance(s, b) == s:
            loop |= low
    if (loop & _ASCII).bit_count() < LOOP_MIN_ASCII:
        return loop, False
    return loop, utf8_target(a, s) == s


def utf8_target(a: Automaton, s: State) -> State | None:
    """The one state every well-formed multi-byte UTF-8 character leads to from ``s``, if any.

    Follows the byte ranges of RFC 3629 through the automaton, giving up when more than a few
    intermediate states appear. Cost: at most a few hundred memoised transitions.
    """
    target: State | None = None
    for ranges in _UTF8:
        frontier: set[State] = {s}
        for lo, hi in ranges:
            nxt: set[State] = set()
            for x in frontier:
                for b in range(lo, hi + 1):
                    y = a.advance(x, b)
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


class _LoopInfo:
    """Per state: the first characters that lead into big loop states, grouped by target."""

    __slots__ = ("groups",)

    def __init__(self, groups: list[tuple[State, int, bool, int]]) -> None:
        #: (loop state T, ASCII first bytes leading to T, multi-byte characters lead to T,
        #: T's loop byte set)
        self.groups = groups


def _loop_info(
    a: Automaton, s: State, ab: int, trie: TokenTrie, memo: dict[State, _LoopInfo] | None
) -> _LoopInfo:
    if memo is not None:
        hit = memo.get(s)
        if hit is not None:
            return hit
    by_target: dict[State, int] = {}
    m = ab & _ASCII
    while m:
        low = m & -m
        m ^= low
        t = a.advance(s, low.bit_length() - 1)
        if t is not None:
            by_target[t] = by_target.get(t, 0) | low
    mb = utf8_target(a, s) if ab & _HIGH else None
    if mb is not None:
        by_target.setdefault(mb, 0)
    groups: list[tuple[State, int, bool, int]] = []
    bucket = trie.bucket
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
        loop, utf8 = loop_set(a, t, a.allowed_bytes(t))
        if utf8:
            groups.append((t, firsts, t == mb, loop))
    info = _LoopInfo(groups)
    if memo is not None:
        memo[s] = info
    return info


def compute_mask(
    a: Automaton, s: State, idx: VocabIndex, memo: dict[State, _LoopInfo] | None = None
) -> npt.NDArray[np.int32]:
    """The int32 bitmask (``ceil(V / 32)`` words) of the tokens allowed in state ``s``.

    Cost: a trie walk over the live nodes; where first characters lead into a loop state, a
    few numpy passes over V plus a walk of that loop's exit-suffix trie instead. Use
    :class:`MaskCache` to pay it once per state.
    """
    allowed = np.zeros(idx.words * 32, dtype=np.bool_)
    ab = a.allowed_bytes(s)
    ids: list[int] = []
    if ab:
        walk_first = ab
        mb_done = False
        for t, firsts, mb, loop in _loop_info(a, s, ab, idx.trie, memo).groups:
            fully, suffixes = idx.loop_tables(loop)
            lut = np.zeros(FIRST_OTHER + 1, dtype=np.bool_)
            fb = firsts
            while fb:
                low = fb & -fb
                fb ^= low
                lut[low.bit_length() - 1] = True
            lut[FIRST_MB] = mb
            sel = lut[idx.first_cls]
            allowed[: idx.size] |= sel & fully
            found: list[int] = []
            _walk(a, t, suffixes, a.allowed_bytes(t), found)
            if found:
                f = np.array(found, dtype=np.int64)
                allowed[f[sel[f]]] = True
            walk_first &= ~firsts
            if mb:
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


class MaskCache:
    """Bounded cache of bitmasks keyed by automaton state (equal states share one mask).

    ``get(state)`` computes on a miss; past ``capacity`` masks the oldest computed is dropped
    (first in, first out: a hit takes no lock and reorders nothing). Thread-safe; two threads
    missing the same state may both compute it (the results are equal). Cost of a hit: one
    dict lookup.
    """

    def __init__(self, automaton: Automaton, index: VocabIndex, max_bytes: int) -> None:
        self.automaton = automaton
        self.index = index
        self.capacity = max(16, max_bytes // max(1, index.words * 4))
        self._masks: OrderedDict[State, npt.NDArray[np.int32]] = OrderedDict()
        self._loop_memo: dict[State, _LoopInfo] = {}
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

    def __len__(self) -> int:
        return len(self._masks)

    def states(self) -> Iterable[State]:
        return list(self._masks)
