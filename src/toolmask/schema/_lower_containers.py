"""The lowering of arrays and objects: an array's items (a prefix, then the rest; ``contains``
counted by a rule per (matches, length) pair), an object's members in schema order (a chain
over the declared properties and a count of members) or in any order (a rule per set of keys
written so far, up to ``Limits.max_any_order_properties``), then its undeclared keys.

Free functions of a :class:`~toolmask.schema._lower_values.Lowering` (the
:class:`~toolmask.schema._lower.Lowerer` that drives them): an item or a member's value is a
reference to its term's rule (``ref``), and bounds past the caps are left to the post-decode
check (``over``).
"""

from __future__ import annotations

import json
from typing import Any

from toolmask.grammar import (
    EMPTY,
    NOTHING,
    Bytes,
    Dfa,
    Node,
    RuleRef,
    choice,
    lit,
    opt,
    repeat,
    seq,
)
from toolmask.schema import _langs
from toolmask.schema._keys import key_rest_rules, other_keys_body
from toolmask.schema._lower_values import (
    Lowering,
    colon,
    declared_key,
    literal,
    spelled,
    text_string,
)
from toolmask.schema._notation import gemma_key_dfa
from toolmask.schema._terms import BOTTOM, ArrAlt, ObjAlt, mk_and, mk_not

__all__ = ["array", "obj"]


def array(lw: Lowering, a: ArrAlt, depth: int) -> Node:
    L = lw.layout
    if a.literal is not None:
        if lw.notation.name != "json":
            return spelled(lw, json.loads(a.literal), depth)
        return lit(L.render(json.loads(a.literal), depth))
    if a.contains is not None and a.min_contains == 0 and a.max_contains is None:
        a = ArrAlt(a.prefix, a.items, a.min_items, a.max_items, None, 1, None, a.evaluated)
    if a.contains is not None:
        node = _array_contains(lw, a, depth)
        if node is not None:
            return node
        lw.over.add(("", "contains"))
    lo, hi = a.min_items, a.max_items
    unroll = lw.limits.max_repeat_unroll
    if lo > unroll:
        lw.over.add(("", "minItems"))
        lo = unroll
    if hi is not None and hi - lo > unroll:
        lw.over.add(("", "maxItems"))
        hi = None
    k = len(a.prefix)
    sep = L.sep(depth)

    def elem(i: int) -> Node:
        return lw.ref(a.item_term(i), depth + 1)

    def after(i: int) -> Node:
        # the rest of a list that already has i >= 1 elements
        if hi is not None and i >= hi:
            return EMPTY
        if i >= k:
            if a.items == BOTTOM:
                return EMPTY if i >= lo else NOTHING
            tail_hi = None if hi is None else hi - i
            return repeat(seq(sep, elem(k)), max(0, lo - i), tail_hi)
        nxt = seq(sep, elem(i), after(i + 1))
        return nxt if i < lo else opt(nxt)

    alts: list[Node] = []
    if lo == 0:
        alts.append(L.empty("[]"))
    if hi is None or hi > 0:
        alts.append(seq(L.open("[", depth), elem(0), after(1), L.close("]", depth)))
    return choice(*alts)


def _array_contains(lw: Lowering, a: ArrAlt, depth: int) -> Node | None:
    if a.prefix or a.contains is None:
        return None
    L = lw.layout
    lo, hi = a.min_items, a.max_items
    cmin, cmax = a.min_contains, a.max_contains
    cap_n = hi if hi is not None else lo
    cap_x = cmax if cmax is not None else cmin
    if (cap_n + 1) * (cap_x + 1) > 4096:
        return None
    x = lw.ref(mk_and(a.items, a.contains), depth + 1)
    y = lw.ref(mk_and(a.items, mk_not(a.contains)), depth + 1)
    sep = L.sep(depth)
    base = lw.fresh("c")

    def name(cx: int, n: int) -> str:
        return f"{base}_{cx}_{n}"

    todo = []
    made: set[tuple[int, int]] = set()

    def state(cx: int, n: int) -> Node:
        key = (min(cx, cap_x), min(n, cap_n))
        if key not in made:
            made.add(key)
            todo.append(key)
        return RuleRef(name(*key))

    first: list[Node] = []
    if hi is None or hi > 0:
        if cmax is None or cmax >= 1:
            first.append(seq(x, state(1, 1)))
        first.append(seq(y, state(0, 1)))
    while todo:
        cx, n = todo.pop()
        alts: list[Node] = []
        if cx >= cmin and n >= lo:
            alts.append(EMPTY)
        if hi is None or n < hi:
            if cmax is None or cx < cmax:
                alts.append(seq(sep, x, state(cx + 1, n + 1)))
            alts.append(seq(sep, y, state(cx, n + 1)))
        lw.define(name(cx, n), choice(*alts))
    out: list[Node] = []
    if lo == 0 and cmin == 0:
        out.append(L.empty("[]"))
    if first:
        out.append(seq(L.open("[", depth), choice(*first), L.close("]", depth)))
    return choice(*out)


def obj(lw: Lowering, o: ObjAlt, depth: int) -> Node:
    L = lw.layout
    if o.literal is not None:
        return literal(lw, json.loads(o.literal), depth)
    for p in o.props:  # a loop, not any(): it runs per object, most of them small
        if p.required and lw.is_bottom(p.value):
            return NOTHING
    names = [p.name for p in o.props]
    # a required property is not empty (just checked)
    props = [p for p in o.props if p.required or not lw.is_bottom(p.value)]
    regions = [r for r in o.regions if not lw.is_bottom(r.value)]
    if not lw.addl_default and (o.props or any(r.evaluated for r in o.regions)):
        # an object that names its keys gets no others; one that names none is a free map
        regions = [r for r in regions if r.evaluated]
    lo, hi = o.min_props, o.max_props
    if hi is not None and sum(1 for p in props if p.required) > hi:
        return NOTHING
    sep = L.sep(depth)
    colon_node = colon(lw)
    extra: Node = NOTHING
    if regions:
        extra = choice(
            *(
                seq(_region_key(lw, r.keys, names), colon_node, lw.ref(r.value, depth + 1))
                for r in regions
            )
        )
    counting = lo > 0 or hi is not None
    cap = max(lo, hi if hi is not None else 0, 1) if counting else 1
    memo: dict[tuple[int, int], Node] = {}
    # rest(i, c) is shared by both branches of rest(i - 1, .): inline, the tree doubles per
    # optional member, so beyond a few members each (i, c) becomes a rule of its own
    use_rules = len(props) > 4 or len(props) * (cap + 1) > 48
    base = lw.fresh("o") if use_rules else ""

    members: dict[int, Node] = {}

    def member(i: int) -> Node:
        # once per member: rest(i, c) asks for it at every count c that reaches it
        got = members.get(i)
        if got is None:
            p = props[i]
            # the key first: in some notations it defines rules, named in order
            key = declared_key(lw, p.name)
            got = members[i] = _member(key, colon_node, lw.ref(p.value, depth + 1))
        return got

    def extras(c: int) -> Node:
        need = max(0, lo - c) if counting else 0
        room = None if hi is None else hi - c
        if extra == NOTHING:
            return (EMPTY if need == 0 else NOTHING) if c > 0 else NOTHING
        if c == 0:
            # no member yet: at least one extra must come (the empty object is separate)
            first_hi = None if room is None else room - 1
            if room is not None and room < 1:
                return NOTHING
            return seq(extra, repeat(seq(sep, extra), max(0, need - 1), first_hi))
        return repeat(seq(sep, extra), need, room)

    def rest(i: int, c: int) -> Node:
        key = (i, c)
        got = memo.get(key)
        if got is not None:
            return got
        if i == len(props):
            node = extras(c)
        else:
            p = props[i]
            alts: list[Node] = []
            if hi is None or c < hi:
                nc = min(c + 1, cap)
                alts.append(seq(sep if c > 0 else EMPTY, member(i), rest(i + 1, nc)))
            if not p.required:
                alts.append(rest(i + 1, c))
            node = choice(*alts)
        if use_rules:
            rn = f"{base}_{i}_{c}"
            lw.define(rn, node)
            node = RuleRef(rn)
        memo[key] = node
        return node

    def any_rest(seen: int) -> Node:
        """Members after the set ``seen`` (a bit per member) was written, in any order."""
        got = any_memo.get(seen)
        if got is not None:
            return got
        rn = f"{any_base}_{seen:x}"
        any_memo[seen] = RuleRef(rn)
        c = min(seen.bit_count(), cap)
        alts: list[Node] = []
        if hi is None or c < hi:
            for i in range(len(props)):
                if not seen >> i & 1:
                    lead = sep if seen else EMPTY
                    alts.append(seq(lead, member(i), any_rest(seen | 1 << i)))
        if seen & required == required:
            alts.append(extras(c))
        lw.define(rn, choice(*alts))
        return any_memo[seen]

    any_memo: dict[int, Node] = {}
    any_base = ""
    required = 0
    unordered = lw.any_order and 1 < len(props) <= lw.limits.max_any_order_properties
    if unordered:
        required = sum(1 << i for i, p in enumerate(props) if p.required)
        any_base = lw.fresh("u")
    elif len(props) > _FLAT_OBJECT:
        _warm(rest, props, cap, hi)
    out: list[Node] = []
    if lo == 0 and not any(p.required for p in props):
        out.append(L.empty("{}"))
    body = any_rest(0) if unordered else rest(0, 0)
    out.append(seq(L.open("{", depth), body, L.close("}", depth)))
    return choice(*out)


def _member(key: Node, colon_node: Node, value: Node) -> Node:
    """A declared member: its key, the colon, its value."""
    if type(key) is Bytes and type(colon_node) is Bytes and type(value) is RuleRef:
        # the usual member (the compact and spaced layouts), the key and colon fused before a
        # reference: what seq() gives for it, less one item of its loop
        return seq(Bytes(key.value + colon_node.value), value)
    return seq(key, colon_node, value)


def _region_key(lw: Lowering, keys: Dfa | None, names: list[str]) -> Node:
    if lw.notation.name == "gemma":  # bare keys
        d = gemma_key_dfa(keys)
        if names:
            d = d.intersect(_langs.not_names(frozenset(names)), limits=lw.limits)
        return lw.dfa_node(d, "raw")
    if keys is None and not names:
        return lw.shared("string")
    json_keys = lw.notation.name == "json"
    if keys is None:
        tree = other_keys_body(frozenset(names), lw.limits.max_dfa_states) if json_keys else None
        if tree is not None:
            body, uses = tree
            missing = sorted(uses - lw.rules.keys())
            if missing:
                bodies = key_rest_rules()
                for name in missing:
                    lw.define(name, bodies[name])
            return seq(lit('"'), body, lit('"'))
        d = _langs.not_names(frozenset(names))
    else:
        d = _langs.dfa_and(keys, _langs.not_names(frozenset(names)), lw.limits)
    if not json_keys:
        return text_string(lw, d)
    return seq(lit('"'), lw.dfa_node(d, "json_string"), lit('"'))


#: objects with more declared properties than this build their member chain from the last
#: member back (the same rules; only the recursion is gone): an implementation detail, not a cap
_FLAT_OBJECT = 64


def _warm(rest: Any, props: list[Any], cap: int, hi: int | None) -> None:
    """Call ``rest(i, c)`` for every reachable ``(i, c)`` from the last member back, so that
    ``rest(0, 0)`` finds its successors memoised and recursion stays one level deep however
    many properties an object declares (5,000 flat properties would pass Python's limit)."""
    reach: list[set[int]] = [{0}]
    for p in props:
        nxt: set[int] = set()
        for c in reach[-1]:
            if hi is None or c < hi:
                nxt.add(min(c + 1, cap))
            if not p.required:
                nxt.add(c)
        reach.append(nxt)
    for i in range(len(props), 0, -1):
        for c in sorted(reach[i]):
            rest(i, c)
