"""A choice of many literals read as its trie, the way both automaton builders read it.

A choice of at least :data:`LITERAL_TRIE_MIN` alternatives that are all literals (tool names in
a name filter, the values of a large ``enum``) becomes its trie: common prefixes once, then a
choice of what follows, where a group of at most :data:`LITERAL_TRIE_GROUP` literals below one
prefix is a choice of their rests. Same language; the automaton then holds one branch per
distinct next byte, not one per literal, so a step into hundreds of names costs O(branches).
The compiled kernel does this while it reads the grammar (``tm_ir.h``, the same constants and
the same construction); the reference builder runs :func:`literal_tries` first, so both build
the same positions.
"""

from __future__ import annotations

from collections.abc import Iterable

from toolmask.grammar._ir import EMPTY, Bytes, Choice, Grammar, Node, Repeat, Rule, Seq

__all__ = [
    "LITERAL_TRIE_DEPTH",
    "LITERAL_TRIE_GROUP",
    "LITERAL_TRIE_MIN",
    "literal_trie",
    "literal_tries",
]

#: the fewest literal alternatives a choice needs to be read as its trie
LITERAL_TRIE_MIN = 8
#: at most this many literals below a common prefix stay a choice of their rests
LITERAL_TRIE_GROUP = 4
#: branch points nested at most this deep; below, the rests are one choice (the same
#: language): the IR stays shallow for every reader that recurses on it
LITERAL_TRIE_DEPTH = 48


def literal_trie(values: Iterable[bytes]) -> Node:
    """The trie of ``values`` (sorted and made unique; see the module docstring): a
    :class:`Bytes` for one value, :class:`Choice` / :class:`Seq` nodes made directly (no
    smart constructor merges them), the empty choice for none. O(total bytes); recursion at
    most :data:`LITERAL_TRIE_DEPTH` deep."""
    items = sorted(set(values))

    def build(lo: int, hi: int, depth: int, level: int) -> Node:
        first = items[lo]
        if hi - lo == 1:
            return Bytes(first[depth:])
        last = items[hi - 1]
        k, n = depth, min(len(first), len(last))
        while k < n and first[k] == last[k]:
            k += 1
        alts: list[Node] = []
        if hi - lo <= LITERAL_TRIE_GROUP or level >= LITERAL_TRIE_DEPTH:
            alts = [Bytes(items[i][k:]) for i in range(lo, hi)]
        else:
            i = lo
            if len(first) == k:  # a value ends here (sorted: the shortest comes first)
                alts.append(EMPTY)
                i += 1
            while i < hi:
                b = items[i][k]
                j = i + 1
                while j < hi and items[j][k] == b:
                    j += 1
                alts.append(build(i, j, k, level + 1))
                i = j
        node = Choice(tuple(alts))
        return node if k == depth else Seq((Bytes(first[depth:k]), node))

    return build(0, len(items), 0, 0) if items else Choice(())


def _literals(items: tuple[Node, ...]) -> bool:
    return len(items) >= LITERAL_TRIE_MIN and all(type(it) is Bytes for it in items)


def literal_tries(grammar: Grammar) -> Grammar:
    """``grammar`` with every choice of at least :data:`LITERAL_TRIE_MIN` literals replaced by
    its :func:`literal_trie` (and the nodes above it remade with the same types); ``grammar``
    itself when it holds none. O(nodes), iterative; shared subtrees are remade once."""
    done: dict[int, Node] = {}
    rules: list[Rule] = []
    changed = False
    for rule in grammar.rules:
        body = _rewrite(rule.body, done)
        changed = changed or body is not rule.body
        rules.append(rule if body is rule.body else Rule(rule.name, body))
    if not changed:
        return grammar
    return Grammar(tuple(rules), grammar.start, grammar.checks)


def _rewrite(root: Node, done: dict[int, Node]) -> Node:
    """``root`` with its choices of many literals as tries (post-order; ``done`` by id)."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        t = type(node)
        if t is Seq or t is Choice:
            items: tuple[Node, ...] = node.items  # type: ignore[union-attr]
            if not ready:
                stack.append((node, True))
                stack.extend((it, False) for it in items if id(it) not in done)
                continue
            # the alternatives as the kernel sees them: already rewritten
            new = tuple(done.get(id(it), it) for it in items)
            if t is Choice and _literals(new):
                done[id(node)] = literal_trie(it.value for it in new)  # type: ignore[union-attr]
            else:
                same = all(a is b for a, b in zip(new, items, strict=True))
                done[id(node)] = node if same else t(new)
        elif t is Repeat:
            item = node.item  # type: ignore[union-attr]
            if not ready:
                stack.append((node, True))
                if id(item) not in done:
                    stack.append((item, False))
            else:
                got = done.get(id(item), item)
                r: Repeat = node  # type: ignore[assignment]
                done[id(node)] = node if got is item else Repeat(got, r.min, r.max)
        else:
            done[id(node)] = node
    return done[id(root)]
