"""Lazy Thompson construction of one byte-level NFA for a whole grammar.

Edges are epsilon, byte class (a 256-bit mask), call (an entry id: "match the rule compiled as
that entry, then continue at the target") or special token (by text). Each *entry* (the start
rule and every rule referenced by a call) has a start state and an exit state.

Nothing is built up front. A state carries *pending tasks* ``(node, to, group, group exit)``:
"build ``node`` between this state and ``to``". :meth:`LazyNFA.expand` runs the tasks of one
state; building a node creates its direct structure only (a sequence: fresh middle states, its
first item built now, the others left pending on their start states; a repetition: unrolled
copies, each pending), so the NFA grows one layer at a time, only where the subset
construction looks. A state's edges are complete once it has been expanded.

Construction invariant (what makes sharing ``frm``/``to`` between alternatives sound): building a
node between ``frm`` and ``to`` never adds an edge *into* ``frm`` nor *out of* ``to``; loops use
fresh states. Edges are only ever added to the state being expanded or to states created by
that same expansion, so no expanded state changes afterwards.

Inlined references share their copy: the body of rule R built towards ``to`` is built once per
``(R, to)`` and entered by an epsilon edge. Alternatives ending in the same rule, and the chains
of tail references that the schema compiler emits for string languages, therefore reuse one copy
instead of multiplying them, which also keeps the subset construction canonical (the same
configuration is the same set of NFA states, whichever path led there).

Only productive nodes are built (a sequence with an item of empty language, a reference to an
unproductive rule: no path at all), so every built state can reach its exit.

Cost: O(states built), each state built once; the count is checked on every new state.
"""

from __future__ import annotations

from toolmask.automaton._analysis import PRODUCTIVE, Analysis
from toolmask.errors import LimitError
from toolmask.grammar import (
    ByteClass,
    Bytes,
    Choice,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
)
from toolmask.limits import Limits

__all__ = ["LazyNFA"]

#: (node, to, regular group id or -1, that group copy's exit or -1, check productivity?)
Task = tuple[Node, int, int, int, bool]


class LazyNFA:
    """The grammar's NFA, built on demand (see the module docstring)."""

    __slots__ = (
        "analysis",
        "broken",
        "byte",
        "call",
        "entries",
        "entry_names",
        "entry_of",
        "eps",
        "grammar",
        "group_exit",
        "is_exit",
        "limits",
        "max_states",
        "pending",
        "shared",
        "special",
    )

    def __init__(self, analysis: Analysis, limits: Limits) -> None:
        self.analysis = analysis
        self.grammar = analysis.grammar
        self.limits = limits
        self.eps: list[list[int]] = []
        self.byte: list[list[tuple[int, int]]] = []
        self.call: list[list[tuple[int, int]]] = []
        self.special: list[list[tuple[str, int]]] = []
        #: tasks still to build from each state; None once the state is expanded
        self.pending: list[list[Task] | None] = []
        self.is_exit: list[bool] = []
        #: entry id -> NFA start state; entry 0 is the start rule
        self.entries: list[int] = []
        #: entry id -> rule name
        self.entry_names: list[str] = []
        self.entry_of: dict[str, int] = {}
        #: (rule, to) -> start state of the copy of that rule's body built towards ``to``
        self.shared: dict[tuple[str, int], int] = {}
        #: regular group id -> exit shared by the group's entries
        self.group_exit: dict[int, int] = {}
        self.max_states = 2 * limits.max_automaton_states
        #: set once a cap was hit mid-construction: nothing more may be built
        self.broken = False

    def __len__(self) -> int:
        return len(self.eps)

    def new_state(self, pending: list[Task] | None) -> int:
        n = len(self.eps)
        if n >= self.max_states:
            self.broken = True
            raise LimitError(
                f"the grammar's NFA exceeds {self.max_states} states",
                limit="max_automaton_states",
            )
        self.eps.append([])
        self.byte.append([])
        self.call.append([])
        self.special.append([])
        self.pending.append(pending)
        self.is_exit.append(False)
        return n

    def entry(self, name: str) -> int:
        """The entry id of rule ``name`` as a call target (created on first use)."""
        eid = self.entry_of.get(name)
        if eid is not None:
            return eid
        gid = self.analysis.group_of.get(name)
        if gid is not None:
            ex = self.group_exit.get(gid)
            if ex is None:
                ex = self.new_state(None)
                self.is_exit[ex] = True
                self.group_exit[gid] = ex
            start = self.copy_start(name, ex, gid)
        else:
            ex = self.new_state(None)
            self.is_exit[ex] = True
            start = self.copy_start(name, ex, -1)
        eid = len(self.entries)
        self.entries.append(start)
        self.entry_names.append(name)
        self.entry_of[name] = eid
        return eid

    def copy_start(self, name: str, to: int, gid: int) -> int:
        """Start state of the copy of rule ``name`` built towards ``to`` (one per pair).

        For a member of regular group ``gid`` the copy is the group's copy with exit ``to``:
        tail references inside it jump to the other members' starts towards the same exit.
        """
        key = (name, to)
        s = self.shared.get(key)
        if s is None:
            chk = not self.analysis.clean(name)
            s = self.new_state([(self.grammar[name].body, to, gid, to if gid >= 0 else -1, chk)])
            self.shared[key] = s
        return s

    def expand(self, s: int) -> None:
        """Build the pending tasks of state ``s``; afterwards its edges are complete."""
        tasks = self.pending[s]
        if tasks is None:
            return
        if self.broken:
            raise LimitError("the automaton hit a cap earlier", limit="max_automaton_states")
        self.pending[s] = None
        a = self.analysis
        pending = self.pending
        eps = self.eps
        byte = self.byte
        new_state = self.new_state
        while tasks:
            node, to, gid, gexit, chk = tasks.pop()
            t = type(node)
            if t is ByteClass:
                assert isinstance(node, ByteClass)
                if node.mask:
                    byte[s].append((node.mask, to))
            elif t is Bytes:
                assert isinstance(node, Bytes)
                v = node.value
                if not v:
                    eps[s].append(to)
                    continue
                cur = s
                for b in v[:-1]:
                    nxt = new_state(None)
                    byte[cur].append((1 << b, nxt))
                    cur = nxt
                byte[cur].append((1 << v[-1], to))
            elif t is Seq:
                assert isinstance(node, Seq)
                items = node.items
                if not items:
                    eps[s].append(to)
                    continue
                if chk and not a.node_prop(node, PRODUCTIVE):
                    continue
                last = len(items) - 1
                nxt = to if last == 0 else new_state([])
                tasks.append((items[0], nxt, gid, gexit, chk))
                for i in range(1, last + 1):
                    cur = nxt
                    nxt = to if i == last else new_state([])
                    tl = pending[cur]
                    assert tl is not None
                    tl.append((items[i], nxt, gid, gexit, chk))
            elif t is Choice:
                assert isinstance(node, Choice)
                for item in node.items:
                    if not chk or a.node_prop(item, PRODUCTIVE):
                        tasks.append((item, to, gid, gexit, chk))
            elif t is Repeat:
                assert isinstance(node, Repeat)
                self._repeat(s, tasks, node, to, gid, gexit, chk)
            elif t is RuleRef:
                assert isinstance(node, RuleRef)
                self._ref(s, node.name, to, gid, gexit)
            else:
                assert isinstance(node, Special)
                self.special[s].append((node.text, to))

    def _repeat(
        self, s: int, tasks: list[Task], node: Repeat, to: int, gid: int, gexit: int, chk: bool
    ) -> None:
        eps = self.eps
        if node.max == 0:
            eps[s].append(to)
            return
        item = node.item
        if chk and not self.analysis.node_prop(item, PRODUCTIVE):
            if node.min == 0:
                eps[s].append(to)
            return
        new_state = self.new_state
        pending = self.pending

        def add(cur: int, task: Task) -> None:
            if cur == s:
                tasks.append(task)
            else:
                tl = pending[cur]
                assert tl is not None
                tl.append(task)

        cur = s
        mandatory = node.min if node.max is not None else max(node.min - 1, 0)
        for _ in range(mandatory):
            nxt = new_state([])
            add(cur, (item, nxt, gid, gexit, chk))
            cur = nxt
        if node.max is None:
            back = new_state(None)
            loop = new_state([(item, back, gid, gexit, chk)])
            eps[cur].append(loop)
            eps[back].append(loop)
            # star (min 0): may skip the item; plus (min >= 1): must match it once here
            eps[loop if node.min == 0 else back].append(to)
            return
        for _ in range(node.max - node.min):
            eps[cur].append(to)
            nxt = new_state([])
            add(cur, (item, nxt, gid, gexit, chk))
            cur = nxt
        eps[cur].append(to)

    def _ref(self, s: int, name: str, to: int, gid: int, gexit: int) -> None:
        a = self.analysis
        if not a.rule_prop(name, PRODUCTIVE):
            return  # the empty language: no path
        rgid = a.group_of.get(name, -1)
        if gid >= 0 and rgid == gid:
            # a tail reference inside a regular group: a jump (the analysis checked tail-ness)
            self.eps[s].append(self.copy_start(name, gexit, gid))
        elif a.inline(name):
            self.eps[s].append(self.copy_start(name, to, rgid))
        else:
            self.call[s].append((self.entry(name), to))
