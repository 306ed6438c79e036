"""TokenTrie: the text tokens of a vocabulary as a flat trie in depth-first order.

Layout (llguidance's toktrie idea): node ``i`` has ``byte[i]``, ``depth[i]`` (1 for a first
byte), ``skip[i]`` (the index just past its subtree) and ``ends[i]`` (index into ``tokens`` of
the ids whose bytes end exactly here, or -1). The children of a node follow it directly, so a
walk is one loop over indices that jumps to ``skip[i]`` to prune a dead subtree. Nodes of one
first byte form the contiguous range ``bucket[b]``.

Per token, numpy arrays hold the 256-bit set of its bytes (four uint64 words) and whether its
bytes are well-formed UTF-8 made of whole characters; these serve the loop-set shortcut in
``_compute``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["TokenTrie"]


class TokenTrie:
    """A flat depth-first trie over ``(bytes, token id)`` pairs. Immutable once built.

    Cost: O(total token bytes) to build (a sort plus one pass); memory about 5 Python list
    slots per node.
    """

    __slots__ = ("bucket", "byte", "depth", "ends", "max_depth", "n_nodes", "skip", "tokens")

    def __init__(self, items: Iterable[tuple[bytes, int]]) -> None:
        pairs = sorted((b, t) for b, t in items if b)
        byte: list[int] = []
        depth: list[int] = []
        ends: list[int] = []
        tokens: list[tuple[int, ...]] = []
        # open[d] = index of the node at depth d + 1 on the current path
        path: list[int] = []
        prev = b""
        skip_of: list[int] = []
        for data, tid in pairs:
            if data == prev and path:
                node = path[-1]
                e = ends[node]
                tokens[e] = (*tokens[e], tid)
                continue
            lcp = 0
            limit = min(len(prev), len(data))
            while lcp < limit and prev[lcp] == data[lcp]:
                lcp += 1
            # close the nodes below the common prefix
            while len(path) > lcp:
                skip_of[path.pop()] = len(byte)
            for d in range(lcp, len(data)):
                path.append(len(byte))
                byte.append(data[d])
                depth.append(d + 1)
                ends.append(-1)
                skip_of.append(0)
            node = path[-1]
            ends[node] = len(tokens)
            tokens.append((tid,))
            prev = data
        while path:
            skip_of[path.pop()] = len(byte)
        self.byte: list[int] = byte
        self.depth: list[int] = depth
        self.skip: list[int] = skip_of
        self.ends: list[int] = ends
        self.tokens: list[tuple[int, ...]] = tokens
        self.n_nodes = len(byte)
        self.max_depth = max(depth, default=0)
        bucket: list[tuple[int, int]] = [(0, 0)] * 256
        i = 0
        while i < len(byte):
            bucket[byte[i]] = (i, skip_of[i])
            i = skip_of[i]
        self.bucket: list[tuple[int, int]] = bucket

    def __repr__(self) -> str:
        return f"TokenTrie(nodes={self.n_nodes}, tokens={len(self.tokens)})"


def token_byte_sets(token_bytes: Sequence[bytes]) -> npt.NDArray[np.uint64]:
    """``[V, 4]`` uint64: bit ``b % 64`` of word ``b // 64`` is set when byte ``b`` occurs."""
    n = len(token_bytes)
    out = np.zeros((n, 4), dtype=np.uint64)
    # vectorised over the concatenation of all tokens
    lengths = np.fromiter((len(t) for t in token_bytes), dtype=np.int64, count=n)
    flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
    if flat.size:
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
        word = (flat >> 6).astype(np.int64)
        bit = np.left_shift(np.uint64(1), (flat & 63).astype(np.uint64))
        view = out.reshape(-1)
        np.bitwise_or.at(view, owner * 4 + word, bit)
    return out


def whole_utf8(token_bytes: Sequence[bytes]) -> npt.NDArray[np.bool_]:
    """``[V]`` bool: the token decodes as UTF-8 made of complete characters (strict)."""
    out = np.zeros(len(token_bytes), dtype=np.bool_)
    for i, t in enumerate(token_bytes):
        if t:
            try:
                t.decode("utf-8")
            except UnicodeDecodeError:
                continue
            out[i] = True
    return out
