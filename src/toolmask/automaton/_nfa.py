"""Thompson construction of one byte-level NFA for a whole grammar.

Edges are epsilon, byte class (a 256-bit mask), call (an entry id: "match the rule compiled as
that entry, then continue at the target") or special token (by text). Each *entry* (the start
rule and every rule referenced by a call) is a fragment with a start state and an exit state.

Construction invariant (what makes sharing ``frm``/``to`` between alternatives sound): building a
node between ``frm`` and ``to`` never adds an edge *into* ``frm`` nor *out of* ``to``; loops use
fresh states.

Cost: O(size of the unrolled, inlined grammar); the state count is checked on every new state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolmask.automaton._analysis import Plan, _Deadline, repeat_copies
from toolmask.errors import LimitError
from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
)
from toolmask.limits import Limits

__all__ = ["NFA", "build_nfa"]


@dataclass(slots=True)
class NFA:
    eps: list[list[int]] = field(default_factory=list)
    byte: list[list[tuple[int, int]]] = field(default_factory=list)
    call: list[list[tuple[int, int]]] = field(default_factory=list)
    special: list[list[tuple[str, int]]] = field(default_factory=list)
    exits: set[int] = field(default_factory=set)
    #: entry id -> NFA start state; entry 0 is the start rule
    entries: list[int] = field(default_factory=list)
    #: entry id -> rule name
    entry_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.eps)


class _GroupCtx:
    """One copy of a regular group: member -> start state, and the shared exit."""

    __slots__ = ("exit", "gid", "starts")

    def __init__(self, gid: int, exit_state: int) -> None:
        self.gid = gid
        self.exit = exit_state
        self.starts: dict[str, int] = {}


_Task = tuple[Node, int, int, "_GroupCtx | None"]


class _Builder:
    def __init__(self, grammar: Grammar, plan: Plan, limits: Limits) -> None:
        self.g = grammar
        self.plan = plan
        self.limits = limits
        self.nfa = NFA()
        self.max_states = 2 * limits.max_automaton_states
        self.max_work = 16 * limits.max_automaton_states
        self.tasks: list[_Task] = []
        self.entry_of: dict[str, int] = {}
        self.group_entry_ctx: dict[int, _GroupCtx] = {}
        self.deadline = _Deadline(limits.max_compile_seconds)

    def new_state(self) -> int:
        nfa = self.nfa
        n = len(nfa.eps)
        if n >= self.max_states:
            raise LimitError(
                f"the grammar's NFA exceeds {self.max_states} states",
                limit="max_automaton_states",
            )
        nfa.eps.append([])
        nfa.byte.append([])
        nfa.call.append([])
        nfa.special.append([])
        return n

    def entry(self, name: str) -> int:
        eid = self.entry_of.get(name)
        if eid is not None:
            return eid
        eid = len(self.nfa.entries)
        self.entry_of[name] = eid
        gid = self.plan.group_of.get(name)
        if gid is not None:
            ctx = self.group_entry_ctx.get(gid)
            if ctx is None:
                ctx = _GroupCtx(gid, self.new_state())
                self.nfa.exits.add(ctx.exit)
                self.group_entry_ctx[gid] = ctx
            start = self.group_start(ctx, name)
        else:
            start = self.new_state()
            end = self.new_state()
            self.nfa.exits.add(end)
            self.tasks.append((self.g[name].body, start, end, None))
        self.nfa.entries.append(start)
        self.nfa.entry_names.append(name)
        return eid

    def group_start(self, ctx: _GroupCtx, name: str) -> int:
        s = ctx.starts.get(name)
        if s is None:
            s = self.new_state()
            ctx.starts[name] = s
            self.tasks.append((self.g[name].body, s, ctx.exit, ctx))
        return s

    def run(self) -> NFA:
        nfa = self.nfa
        self.entry(self.g.start)
        work = 0
        tasks = self.tasks
        while tasks:
            work += 1
            if work > self.max_work:
                raise LimitError(
                    "the grammar is too large to compile", limit="max_automaton_states"
                )
            self.deadline.tick()
            node, frm, to, ctx = tasks.pop()
            if isinstance(node, Bytes):
                v = node.value
                if not v:
                    nfa.eps[frm].append(to)
                    continue
                cur = frm
                for b in v[:-1]:
                    nxt = self.new_state()
                    nfa.byte[cur].append((1 << b, nxt))
                    cur = nxt
                nfa.byte[cur].append((1 << v[-1], to))
            elif isinstance(node, ByteClass):
                if node.mask:
                    nfa.byte[frm].append((node.mask, to))
            elif isinstance(node, Special):
                nfa.special[frm].append((node.text, to))
            elif isinstance(node, Seq):
                items = node.items
                if not items:
                    nfa.eps[frm].append(to)
                    continue
                cur = frm
                for item in items[:-1]:
                    nxt = self.new_state()
                    tasks.append((item, cur, nxt, ctx))
                    cur = nxt
                tasks.append((items[-1], cur, to, ctx))
            elif isinstance(node, Choice):
                for item in node.items:
                    tasks.append((item, frm, to, ctx))
            elif isinstance(node, Repeat):
                self.repeat(node, frm, to, ctx)
            else:
                self.ref(node, frm, to, ctx)
        return nfa

    def repeat(self, node: Repeat, frm: int, to: int, ctx: _GroupCtx | None) -> None:
        nfa = self.nfa
        if node.max == 0:
            nfa.eps[frm].append(to)
            return
        repeat_copies(node, self.limits)
        item = node.item
        cur = frm
        mandatory = node.min if node.max is not None else max(node.min - 1, 0)
        for _ in range(mandatory):
            nxt = self.new_state()
            self.tasks.append((item, cur, nxt, ctx))
            cur = nxt
        if node.max is None:
            loop = self.new_state()
            back = self.new_state()
            nfa.eps[cur].append(loop)
            self.tasks.append((item, loop, back, ctx))
            nfa.eps[back].append(loop)
            # star (min 0): may skip the item; plus (min >= 1): must match it once here
            nfa.eps[loop if node.min == 0 else back].append(to)
            return
        for _ in range(node.max - node.min):
            nfa.eps[cur].append(to)
            nxt = self.new_state()
            self.tasks.append((item, cur, nxt, ctx))
            cur = nxt
        nfa.eps[cur].append(to)

    def ref(self, node: RuleRef, frm: int, to: int, ctx: _GroupCtx | None) -> None:
        plan = self.plan
        name = node.name
        if name not in plan.productive:
            return  # the empty language: no path
        gid = plan.group_of.get(name)
        if ctx is not None and gid == ctx.gid:
            # a tail reference inside a regular group: a jump (the analysis checked tail-ness)
            self.nfa.eps[frm].append(self.group_start(ctx, name))
        elif name in plan.call:
            self.nfa.call[frm].append((self.entry(name), to))
        elif gid is not None:
            copy = _GroupCtx(gid, to)
            self.nfa.eps[frm].append(self.group_start(copy, name))
        else:
            self.tasks.append((self.g[name].body, frm, to, None))


def build_nfa(grammar: Grammar, plan: Plan, limits: Limits) -> NFA:
    """Build the NFA of every entry reachable from ``grammar.start`` (entry 0)."""
    return _Builder(grammar, plan, limits).run()
