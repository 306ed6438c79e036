"""DFAs lowered to rules once per process: the lowering of a DFA (formats, lengths, patterns:
the same in schema after schema) is memoised with placeholder rule names, and
:class:`LoweredDfa` renames them per grammar, rebuilding only the nodes on the way to a
reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from toolmask._cache import memo
from toolmask.grammar import (
    Choice,
    Dfa,
    Node,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    dfa_to_rules,
    node_bytes,
)
from toolmask.schema._json_text import json_string_char
from toolmask.schema._notation import python_string_char

__all__ = ["LoweredDfa", "lowered_dfa"]

#: the placeholder prefix of the rule names of a cached lowering (never a name the lowerer makes)
_PLACEHOLDER = "\0"
#: where the rule references sit in a node: None (nowhere), _REF (the node is one), or the
#: positions of the items that hold some, each with its own plan
_Plan = Any
_REF = "ref"


def _plan(node: Node, memo: dict[int, _Plan]) -> _Plan:
    """Where the references sit in ``node``; ``memo`` (by node id) walks a shared subtree (a
    character's encoding, in every rule of a DFA) once."""
    got = memo.get(id(node), memo)
    if got is not memo:
        return got
    plan: _Plan = None
    if isinstance(node, RuleRef):
        plan = _REF
    elif isinstance(node, (Seq, Choice)):
        subs = ((i, _plan(it, memo)) for i, it in enumerate(node.items))
        plan = tuple((i, p) for i, p in subs if p) or None
    elif isinstance(node, Repeat):
        sub = _plan(node.item, memo)
        plan = ((0, sub),) if sub else None
    memo[id(node)] = plan
    return plan


@dataclass(frozen=True, slots=True)
class LoweredDfa:
    """:func:`dfa_to_rules` of one DFA with placeholder rule names, and where the names sit."""

    entry: Node
    entry_plan: _Plan
    rules: tuple[Rule, ...]
    plans: tuple[_Plan, ...]

    @staticmethod
    def named(node: Node, plan: _Plan, prefix: str) -> Node:
        """``node`` with every placeholder name ``\\0_sK`` renamed ``{prefix}_sK``: the nodes on
        the way to a reference are rebuilt (same classes, same items), the rest is shared."""
        if plan is None:
            return node
        if plan == _REF:
            assert isinstance(node, RuleRef)
            return RuleRef(prefix + node.name[1:])
        if isinstance(node, Repeat):
            return Repeat(LoweredDfa.named(node.item, plan[0][1], prefix), node.min, node.max)
        assert isinstance(node, (Seq, Choice))
        items = list(node.items)
        for i, sub in plan:
            items[i] = LoweredDfa.named(items[i], sub, prefix)
        return type(node)(tuple(items))


def _lowered_bytes(v: LoweredDfa) -> int:
    return node_bytes(v.entry) + sum(64 + node_bytes(r.body) for r in v.rules)


@memo("schema.lowered_dfas", limit="max_language_memos", entry_bytes=_lowered_bytes)
def lowered_dfa(
    dfa: Dfa, encoding: Literal["raw", "json_string", "python'", 'python"']
) -> LoweredDfa:
    """The lowering of ``dfa`` (the same for every schema that meets it: formats, lengths,
    patterns), computed once per encoding (raw bytes, a JSON string's characters, a Python
    string's in its quote); :meth:`Lowerer.dfa_node` renames its rules. Memoised in the
    cache set in use."""
    enc: Any = "raw"
    if encoding == "json_string":
        enc = json_string_char
    elif encoding != "raw":
        enc = python_string_char(encoding[-1])
    entry, rules = dfa_to_rules(dfa, _PLACEHOLDER, encoding=enc)
    memo: dict[int, _Plan] = {}
    plans = tuple(_plan(r.body, memo) for r in rules)
    return LoweredDfa(entry, _plan(entry, memo), rules, plans)
