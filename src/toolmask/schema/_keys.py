"""The undeclared keys of an object: a trie over the declared names whose off-trie branches
continue in three shared rules (the rest of any JSON string body, after an escaped or a
non-ASCII character), so that "any key but these" costs one automaton position per trie node."""

from __future__ import annotations

import functools

from toolmask._cache import memo
from toolmask.grammar import (
    ANY_CHAR,
    EMPTY,
    ByteClass,
    CharSet,
    Choice,
    Node,
    RuleRef,
    Seq,
    choice,
    lit,
    node_bytes,
    node_count,
    seq,
    star,
)
from toolmask.schema._json_text import any_json_string_char, json_string_char

__all__ = ["KEY_REST", "KEY_REST_ESC", "KEY_REST_MB", "key_rest_rules", "other_keys_body"]

_ASCII = CharSet.range(0, 0x7F)


#: the rules the off-trie branches of every key tree continue in, one rule each so that the
#: automaton builds their positions once per grammar (an inlined copy is shared by every
#: reference with the same continuation), not once per trie node: the rest of an undeclared key
#: (any JSON string body); an escaped character (a control character, a quote, a backslash)
#: then the rest; a non-ASCII character then the rest
KEY_REST = "key_rest"
KEY_REST_ESC = "key_rest_esc"
KEY_REST_MB = "key_rest_mb"

#: the characters JSON writes as themselves in ASCII, those it escapes, and the non-ASCII ones
_PLAIN_ASCII = CharSet.range(0x20, 0x7F) - CharSet.of('"\\')
_ESCAPED = CharSet.range(0, 0x1F) | CharSet.of('"\\')
_NON_ASCII = ANY_CHAR - CharSet.range(0, 0x7F)


def key_rest_rules() -> dict[str, Node]:
    """The bodies of ``KEY_REST``, ``KEY_REST_ESC`` and ``KEY_REST_MB``."""
    rest = RuleRef(KEY_REST)
    return {
        KEY_REST: star(any_json_string_char()),
        KEY_REST_ESC: seq(json_string_char(_ESCAPED), rest),
        KEY_REST_MB: seq(json_string_char(_NON_ASCII), rest),
    }


def _off_trie_bytes(v: tuple[tuple[Node, ...], frozenset[str]]) -> int:
    return 128 + sum(node_bytes(n) for n in v[0])


@memo("schema.key_trie_rests", limit="max_memo_entries", entry_bytes=_off_trie_bytes)
def _off_trie(kids: tuple[int, ...]) -> tuple[tuple[Node, ...], frozenset[str]]:
    """The alternatives of a key-trie node for the characters off the trie (not in ``kids``),
    each followed by the rest of the key, and the key rules they use: the printable ASCII ones
    as one byte class, the escaped ones and the non-ASCII ones through their shared rule unless
    a child is one of them (then written out)."""
    off = ANY_CHAR - CharSet.of(list(kids))
    rest = RuleRef(KEY_REST)
    alts: list[Node] = []
    uses = {KEY_REST}
    plain = off & _PLAIN_ASCII
    if plain:
        alts.append(seq(json_string_char(plain), rest))
    for part, whole, rule in (
        (off & _ESCAPED, _ESCAPED, KEY_REST_ESC),
        (off & _NON_ASCII, _NON_ASCII, KEY_REST_MB),
    ):
        if part == whole:
            alts.append(RuleRef(rule))
            uses.add(rule)
        elif part:
            alts.append(seq(json_string_char(part), rest))
    return tuple(alts), frozenset(uses)


#: bit ``c`` set for each printable ASCII character JSON writes as itself (``_PLAIN_ASCII``), and
#: a bit above them standing for any other character
_PLAIN_MASK = sum(1 << c for lo, hi in _PLAIN_ASCII.ranges for c in range(lo, hi + 1))
_NOT_PLAIN = 1 << 0x80 | ((1 << 0x80) - 1) & ~_PLAIN_MASK
#: each plain character as the literal ``json_string_char`` gives it (the character itself)
_PLAIN_LITS: dict[int, Node] = {
    c: lit(bytes((c,))) for lo, hi in _PLAIN_ASCII.ranges for c in range(lo, hi + 1)
}
_ALL_KEY_RULES = frozenset({KEY_REST, KEY_REST_ESC, KEY_REST_MB})


def _plain_node(mask: int) -> Node:
    """``json_string_char`` of the plain characters in ``mask`` (not empty): the one character
    as a literal, or a byte class of them."""
    if mask & (mask - 1) == 0:
        return _PLAIN_LITS[mask.bit_length() - 1]
    return ByteClass(mask)


@functools.cache
def _single_off() -> dict[int, tuple[Node, ...]]:
    """For each printable ASCII character written as itself, the off-trie alternatives of a
    key-trie node whose only child it is (what the loop of :func:`_other_keys_body` builds for
    such a node): made once per process, they are immutable."""
    esc, mb = RuleRef(KEY_REST_ESC), RuleRef(KEY_REST_MB)
    rest = RuleRef(KEY_REST)
    return {cp: (Seq((_plain_node(_PLAIN_MASK & ~(1 << cp)), rest)), esc, mb) for cp in _PLAIN_LITS}


@functools.cache
def _leaf() -> Node:
    """A key-trie node without children (where a name ends): any character then the rest."""
    rest = RuleRef(KEY_REST)
    return Choice(
        (Seq((_plain_node(_PLAIN_MASK), rest)), RuleRef(KEY_REST_ESC), RuleRef(KEY_REST_MB))
    )


def _json_char_lit(cp: int) -> Node:
    return json_string_char(CharSet(((cp, cp),)))


#: names longer than this go through the DFA route (the tree below nests one level per character)
_MAX_TREE_NAME = 64


def other_keys_body(names: frozenset[str], max_nodes: int) -> tuple[Node, frozenset[str]] | None:
    """The JSON string body of every key except ``names`` (an object's undeclared keys), or
    None when a name is longer than ``_MAX_TREE_NAME`` or the trie of the names has
    ``max_nodes`` nodes or more (the caller then takes the DFA route, which raises the
    ``max_dfa_states`` LimitError where it applies).

    The language of ``_langs.not_names(names)`` written directly, without building and
    complementing its DFA: a tree over the trie of the names, where a character off the trie
    leads to the free string body (the key rules of :func:`_off_trie`; the second value names
    the ones the tree uses, which the caller defines from :func:`key_rest_rules`) and the end
    of the key is allowed where no name ends. Each character is written as
    :func:`json_string_char` writes it (canonical escapes), so the tree is deterministic. Cost:
    O(total length of the names) nodes; memoised in the cache set in use by the set of
    names.
    """
    return _other_keys_body(names, max_nodes)[0]


def _key_tree_bytes(v: tuple[tuple[Node, frozenset[str]] | None, int]) -> int:
    # the tree's node count comes with it (counted as it is built): what node_bytes counts
    return 64 if v[0] is None else 96 * v[1]


@memo("schema.key_trees", limit="max_memo_entries", entry_bytes=_key_tree_bytes)
def _other_keys_body(
    names: frozenset[str], max_nodes: int
) -> tuple[tuple[Node, frozenset[str]] | None, int]:
    if any(len(name) > _MAX_TREE_NAME for name in names):
        return (None, 0)
    children: list[dict[int, int]] = [{}]
    ends: set[int] = set()
    for name in names:
        if len(children) >= max_nodes:
            return (None, 0)
        node = 0
        for ch in name:
            cp = ord(ch)
            nxt = children[node].get(cp)
            if nxt is None:
                nxt = len(children)
                children.append({})
                children[node][cp] = nxt
            node = nxt
        ends.add(node)
    built: list[Node | None] = [None] * len(children)
    #: each built node's count of nodes (as node_bytes counts them), by id for node_count
    sizes: dict[int, int] = {}
    uses: set[str] = set()
    rest, esc_ref, mb_ref = RuleRef(KEY_REST), RuleRef(KEY_REST_ESC), RuleRef(KEY_REST_MB)
    single_off, leaf = _single_off(), _leaf()
    # children have larger numbers than their parent: build from the last node back
    for v in range(len(children) - 1, -1, -1):
        kids = children[v]
        if len(kids) <= 1 and (kids or v in ends):
            # most trie nodes: a leaf (the end of a name), or one printable child; the same
            # nodes as the general case below, with the off-trie alternatives made once
            if not kids:
                uses |= _ALL_KEY_RULES
                built[v] = leaf
                sizes[id(leaf)] = 6
                continue
            ((cp, k),) = kids.items()
            off = single_off.get(cp)
            if off is not None:
                uses |= _ALL_KEY_RULES
                sub = built[k]
                assert type(sub) is Choice
                if v in ends:
                    one: Node = Choice((*off, Seq((_PLAIN_LITS[cp], sub))))
                    sizes[id(one)] = 8 + sizes[id(sub)]
                else:
                    one = Choice((*off, Seq((_PLAIN_LITS[cp], sub)), EMPTY))
                    sizes[id(one)] = 9 + sizes[id(sub)]
                built[v] = one
                continue
        order = sorted(kids)
        kmask = 0
        for cp in order:
            kmask |= 1 << cp if cp < 0x80 else _NOT_PLAIN
        if not kmask & _NOT_PLAIN:
            # every child is printable ASCII written as itself (the usual property name): the
            # off-trie alternatives of _off_trie written directly, without its memo
            pmask = _PLAIN_MASK & ~kmask
            alts: list[Node] = [Seq((_plain_node(pmask), rest))] if pmask else []
            alts += (esc_ref, mb_ref)
            uses |= _ALL_KEY_RULES
            size = 3 + (3 if pmask else 0)  # the choice, its off-trie alternatives
            for cp in order:
                sub = built[kids[cp]]
                assert type(sub) is Choice  # every node has two alternatives or more
                alts.append(Seq((_PLAIN_LITS[cp], sub)))
                size += 2 + sizes[id(sub)]
            if v not in ends:
                alts.append(EMPTY)
                size += 1
            # what choice() gives: no alternative is a choice, a single byte or a duplicate
            tree: Node = Choice(tuple(alts))
            built[v] = tree
            sizes[id(tree)] = size
            continue
        off, used = _off_trie(tuple(order))
        uses |= used
        alts = list(off)
        for cp in order:
            sub = built[kids[cp]]
            assert sub is not None
            alts.append(seq(_json_char_lit(cp), sub))
        if v not in ends:
            alts.append(EMPTY)
        tree = built[v] = choice(*alts)
        sizes[id(tree)] = node_count(tree, sizes)
    root = built[0]
    assert root is not None
    return ((root, frozenset(uses)), sizes[id(root)])
