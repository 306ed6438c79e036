"""TokenTrie: the text tokens of a vocabulary as a flat trie in depth-first order.

Layout (llguidance's toktrie idea): node ``i`` has ``byte[i]``, ``depth[i]`` (1 for a first
byte), ``skip[i]`` (the index just past its subtree) and ``ends[i]`` (index into ``tokens`` of
the ids whose bytes end exactly here, or -1). The children of a node follow it directly, so a
walk is one loop over indices that jumps to ``skip[i]`` to prune a dead subtree. Nodes of one
first byte form the contiguous range ``bucket[b]``.
"""

from __future__ import annotations

from collections.abc import Iterable

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
