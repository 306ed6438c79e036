"""The undeclared-key tree of an object (``_keys.other_keys_body``) against the general route
it shortcuts: a node whose children are all printable ASCII is written directly, every other
node through ``_off_trie`` / ``json_string_char``; both must build the same IR."""

from __future__ import annotations

import random

from toolmask.grammar._ir import EMPTY, Node, choice, seq
from toolmask.schema import _keys


def _reference(names: frozenset[str]) -> tuple[Node, frozenset[str]]:
    """The tree with every node through the memoised general route."""
    children: list[dict[int, int]] = [{}]
    ends: set[int] = set()
    for name in names:
        node = 0
        for ch in name:
            nxt = children[node].get(ord(ch))
            if nxt is None:
                nxt = len(children)
                children.append({})
                children[node][ord(ch)] = nxt
            node = nxt
        ends.add(node)
    built: list[Node] = [EMPTY] * len(children)
    uses: set[str] = set()
    for v in range(len(children) - 1, -1, -1):
        order = sorted(children[v])
        off, used = _keys._off_trie(tuple(order))
        uses |= used
        alts = list(off)
        alts += [seq(_keys._json_char_lit(cp), built[children[v][cp]]) for cp in order]
        if v not in ends:
            alts.append(EMPTY)
        built[v] = choice(*alts)
    return built[0], frozenset(uses)


def test_key_tree_matches_the_general_route() -> None:
    rng = random.Random(7)
    alphabet = ["a", "b", "_", " ", "~", "\x7f", '"', "\\", "\n", "\x00", "é", "€", "😀", "Z"]
    cases = [frozenset(), frozenset({""}), frozenset({"city", "unit", "days"})]
    for _ in range(400):
        k = rng.randint(2, len(alphabet))
        cases.append(
            frozenset(
                "".join(rng.choice(alphabet[:k]) for _ in range(rng.randint(0, 5)))
                for _ in range(rng.randint(1, 5))
            )
        )
    for names in cases:
        got = _keys.other_keys_body(names, 10_000)
        assert got is not None
        assert got == _reference(names), sorted(names)
