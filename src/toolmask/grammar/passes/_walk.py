"""Tree helpers shared by the passes, the printers and the automaton builder (the fixpoint
helpers are exported by ``toolmask.grammar.passes``):
rebuilding a tree through the smart constructors, references, reachability, and the one
evaluation of nullability and productivity (:func:`node_prop`, :func:`rules_fixpoint`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    choice,
    iter_nodes,
    repeat,
    seq,
)

__all__ = [
    "NULLABLE",
    "PRODUCTIVE",
    "node_prop",
    "nullable_rules",
    "reachable",
    "rebuild",
    "references",
    "rules_fixpoint",
]


def rebuild(node: Node, leaf: Callable[[Node], Node] = lambda n: n) -> Node:
    """Rebuild ``node`` bottom-up through the smart constructors ``seq``/``choice``/``repeat``.

    ``leaf`` maps every non-composite node (Bytes, ByteClass, RuleRef, Special) first. Recursive
    in the tree depth (grammar trees are shallow; rules are the unit of recursion).
    """
    if isinstance(node, Seq):
        return seq(*(rebuild(i, leaf) for i in node.items))
    if isinstance(node, Choice):
        return choice(*(rebuild(i, leaf) for i in node.items))
    if isinstance(node, Repeat):
        return repeat(rebuild(node.item, leaf), node.min, node.max)
    return leaf(node)


def references(node: Node) -> list[str]:
    """Names of the rules ``node`` refers to, with repetitions, in pre-order."""
    return [n.name for n in iter_nodes(node) if isinstance(n, RuleRef)]


def reachable(grammar: Grammar) -> list[str]:
    """Rule names reachable from the start rule, in discovery (BFS) order."""
    seen = {grammar.start}
    order = [grammar.start]
    i = 0
    while i < len(order):
        for ref in references(grammar[order[i]].body):
            if ref not in seen:
                seen.add(ref)
                order.append(ref)
        i += 1
    return order


#: the properties :func:`node_prop` evaluates: the empty string is in the language / the
#: language is not empty
NULLABLE = 0
PRODUCTIVE = 1


def nullable_rules(rules: tuple[Rule, ...]) -> set[str]:
    """Names of the rules whose language contains the empty string (least fixpoint; a
    reference to an undefined rule counts as not nullable). O(rules x passes)."""
    known: dict[str, bool] = {}
    by_name = {r.name: r.body for r in rules}
    rules_fixpoint(list(by_name), by_name.__getitem__, NULLABLE, known)
    return {name for name, v in known.items() if v}


def rules_fixpoint(
    names: list[str], body: Callable[[str], Node], prop: int, known: dict[str, bool]
) -> None:
    """The least fixpoint of ``prop`` over the rules ``names`` (whose bodies ``body`` gives),
    written into ``known``: every other rule they reference must be in ``known`` already (a
    missing one counts as False)."""
    for name in names:
        known[name] = False
    changed = True
    while changed:
        changed = False
        for name in names:
            if not known[name] and node_prop(body(name), prop, known, set(), {}):
                known[name] = True
                changed = True


def node_prop(
    root: Node,
    prop: int,
    known: Mapping[str, bool],
    blocked: set[str],
    memo: dict[int, bool],
) -> bool | None:
    """Three-valued evaluation of ``prop`` (:data:`NULLABLE` or :data:`PRODUCTIVE`) on
    ``root``: True, False, or None when it depends on rules whose value ``known`` does not hold
    yet (their names are added to ``blocked``). Sequences are conjunctions, choices
    disjunctions; both stop at the first decisive child. Iterative; definite results of
    composites are memoised in ``memo`` (by node identity)."""
    nullable = prop == NULLABLE
    # frames: [node, items, next index, accumulated value, is_seq]
    stack: list[list[object]] = []
    n: Node = root
    while True:
        v: bool | None
        t = type(n)
        if t is Seq or t is Choice:
            assert isinstance(n, (Seq, Choice))
            m = memo.get(id(n))
            if m is not None:
                v = m
            elif n.items:
                is_seq = t is Seq
                stack.append([n, n.items, 1, is_seq, is_seq])
                n = n.items[0]
                continue
            else:
                v = t is Seq
        elif t is Repeat:
            assert isinstance(n, Repeat)
            if n.min == 0 or n.max == 0:
                v = True
            else:
                m = memo.get(id(n))
                if m is not None:
                    v = m
                else:
                    stack.append([n, None, 0, None, False])
                    n = n.item
                    continue
        elif t is RuleRef:
            assert isinstance(n, RuleRef)
            v = known.get(n.name)
            if v is None:
                blocked.add(n.name)
        elif t is Bytes:
            assert isinstance(n, Bytes)
            v = not n.value if nullable else True
        elif t is ByteClass:
            assert isinstance(n, ByteClass)
            v = False if nullable else n.mask != 0
        else:  # Special
            v = not nullable
        # return v to the enclosing frames
        descend = False
        while stack:
            frame = stack[-1]
            node = frame[0]
            items = frame[1]
            if items is None:  # a repeat passes its item's value through
                stack.pop()
                if v is not None:
                    memo[id(node)] = v
                continue
            assert isinstance(items, tuple)
            in_seq = frame[4] is True
            if v is (not in_seq):  # decisive: False in a sequence, True in a choice
                stack.pop()
                memo[id(node)] = v
                continue
            if v is None:
                frame[3] = None
            i = frame[2]
            assert isinstance(i, int)
            if i < len(items):
                frame[2] = i + 1
                n = items[i]
                descend = True
                break
            stack.pop()
            acc = frame[3]
            assert acc is None or isinstance(acc, bool)
            v = acc
            if v is not None:
                memo[id(node)] = v
        if not descend:
            return v
