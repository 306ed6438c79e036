"""Shapes -> grammar IR: the :class:`Lowerer`, which keeps the grammar under construction.

Every (term, depth) pair becomes one rule (depth is always 0 unless the layout indents, where the
indentation of a value depends on how deep it sits). Rules reference each other through
:class:`RuleRef`, so recursive schemas become recursive grammars. The lowerer keeps that
bookkeeping (a rule per term to lower, terms of equal shapes sharing one, the shared ``string``
/ ``number`` / ``integer`` rules, each DFA's rules defined once, the caps on rules) and hands each
alternative of a shape to the lowering of its JSON type, which takes the lowerer as its
:class:`~._lower_values.Lowering`: scalars and strings in :mod:`._lower_values`, arrays and
objects in :mod:`._lower_containers`.

Layout decides where whitespace goes (:mod:`._layout`): ``compact``, ``spaced``, ``flexible`` or
``indent``. Notation decides how values are spelled (:mod:`._notation`): JSON, Python literals or
Gemma's object notation; the layouts apply to all three.

Object members come in schema order, or, with ``any_order``, in any order the writer picks:
every required key present, no key twice. Any order is a rule per set of keys written so far,
so it is bounded by ``Limits.max_any_order_properties`` (beyond it, schema order).
"""

from __future__ import annotations

import time

from toolmask._cache import current_caches, memo
from toolmask.errors import LimitError
from toolmask.grammar import (
    NOTHING,
    Dfa,
    Grammar,
    Node,
    PostCheck,
    Rule,
    RuleRef,
    byte_class,
    choice,
    lit,
    node_bytes,
    opt,
    plus,
    seq,
    star,
    trusted_grammar,
)
from toolmask.schema._compiler import SchemaCompiler
from toolmask.schema._dfa_rules import lowered_dfa
from toolmask.schema._json_text import any_json_string_char
from toolmask.schema._layout import Layout
from toolmask.schema._lower_containers import array, obj
from toolmask.schema._lower_values import DfaEncoding, literal_set, number, string, text_string
from toolmask.schema._notation import NOTATIONS, Notation
from toolmask.schema._terms import BOTTOM, SHAPE_TOP, TOP, Shape, Term

__all__ = ["Lowerer"]

_monotonic = time.monotonic


class Lowerer:
    """Turns the terms of one :class:`SchemaCompiler` into rules: the grammar's bookkeeping,
    and the dispatch of a shape's alternatives to the lowering of their JSON types (which take
    the lowerer as their :class:`~._lower_values.Lowering`)."""

    def __init__(
        self,
        compiler: SchemaCompiler,
        layout: Layout,
        *,
        additional_properties_default: bool,
        max_indent_depth: int,
        any_order: bool = False,
        notation: Notation = NOTATIONS["json"],
        special_tokens: frozenset[str] = frozenset(),
    ) -> None:
        self.c = compiler
        self.limits = compiler.limits
        self.notation = notation
        self.special_tokens = special_tokens
        self.layout = layout
        self._indent = layout.mode == "indent"
        self.addl_default = additional_properties_default
        self.any_order = any_order
        self.max_depth = max_indent_depth
        self.rules: dict[str, Node] = {}
        self.order: list[str] = []
        self._memo: dict[tuple[Term, int], Node] = {}
        #: the rule of each (shape, depth) lowered: terms of equal shapes share it
        self._by_shape: dict[tuple[Shape, int], RuleRef] = {}
        self._todo: list[tuple[str, Term, int]] = []
        self._dfa_memo: dict[tuple[Dfa, str], Node] = {}
        #: the node of each string in a notation other than JSON (None: any string)
        self.strings: dict[Dfa | None, Node] = {}
        self._n = 0
        self.over: set[tuple[str, str]] = set()
        #: the key of this lowerer's body of any value in ``schema.top_bodies`` (see
        #: :meth:`_top_body`), None where that body is not kept (indentation: it depends on the
        #: depth; notations other than JSON: their strings are rules of their own)
        self._plain_top: tuple[object, ...] | None = None
        if layout.mode != "indent" and notation.name == "json":
            self._plain_top = (layout, additional_properties_default, any_order)

    # -- driver -----------------------------------------------------------------------------------
    def run(self, root: Term, schema_json: str, resources_json: str) -> Grammar:
        self._memo[(root, 0)] = RuleRef("root")
        todo = self._todo
        todo.append(("root", root, 0))
        c = self.c
        expand, deadline = c.expand, c.deadline
        while todo:
            name, term, depth = todo.pop()
            try:
                if _monotonic() > deadline:  # check_time(), without its call
                    c.check_time()
                shape = expand(term)
                self.over |= shape.flags.over
                # self.body(shape, depth), written out
                if shape is SHAPE_TOP and depth == 0 and self._plain_top is not None:
                    body = self._top_body()
                else:
                    body = self._body(shape, depth)
                self.define(name, body)
            except LimitError as e:  # a cap hit lowering this term: locate it there
                e.at(self.c.where(term))
                raise
        over = self.over | self.c.forced_over
        checks: tuple[PostCheck, ...] = ()
        if over:
            checks = (PostCheck(schema_json, tuple(sorted(over)), resources_json),)
        bodies = self.rules
        rules = tuple([Rule(n, bodies[n]) for n in self.order])
        # every RuleRef the lowerer writes names a rule it defines (ref, shared, dfa_node,
        # objects' and arrays' rules): the per-node check of Grammar() is skipped
        return trusted_grammar(rules, "root", checks)

    def define(self, name: str, body: Node) -> None:
        if name not in self.rules:
            self.order.append(name)
        self.rules[name] = body
        if len(self.rules) > self.limits.max_rules:
            raise LimitError("the schema needs too many grammar rules", limit="max_rules")

    def fresh(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def ref(self, term: Term, depth: int) -> Node:
        if term is BOTTOM:
            return NOTHING
        d = depth if self._indent else 0
        key = (term, d)
        got = self._memo.get(key)
        if got is not None:
            return got
        node: Node
        if term is TOP and d == 0:
            node = RuleRef("value")
            self._todo.append(("value", term, d))
        else:
            # the shape decides the rule's body: a small literal set (a discriminator's
            # const) is written in place, and terms of equal shapes (every plain {"type":
            # "string"}, say) share one rule, so a union of many branches costs no rule per
            # branch for them
            try:
                shape = self.c.expand(term)
            except LimitError as e:  # located at this term, as when run() lowers it
                e.at(self.c.where(term))
                raise
            lits = shape.literals
            if lits is not None and not shape.flags.over and sum(map(len, lits)) <= _INLINE_LITERAL:
                node = literal_set(self, lits, d)
            else:
                shared = self._by_shape.get((shape, d))
                if shared is None:
                    shared = self._by_shape[(shape, d)] = RuleRef(self.fresh("t"))
                    self._todo.append((shared.name, term, d))
                node = shared
        self._memo[key] = node
        return node

    def is_bottom(self, term: Term) -> bool:
        """True when no value satisfies ``term`` at the top level of its shape."""
        return term is BOTTOM or self.c.expand(term).is_empty()

    def shared(self, name: str) -> Node:
        if name == "string" and self.notation.name != "json":
            return text_string(self, None)
        if name not in self.rules:
            if name == "string":
                body = _string_body()
            else:
                body = _INTEGER if name == "integer" else _NUMBER
            self.define(name, body)
        return RuleRef(name)

    def dfa_node(self, dfa: Dfa, encoding: DfaEncoding) -> Node:
        key = (dfa, encoding)
        got = self._dfa_memo.get(key)
        if got is not None:
            return got
        prefix = self.fresh("n" if encoding == "raw" else "s")
        lowered = lowered_dfa(dfa, encoding)
        entry = lowered.entry
        if lowered.rules:
            entry = lowered.named(entry, lowered.entry_plan, prefix)
            for r, plan in zip(lowered.rules, lowered.plans, strict=True):
                self.define(prefix + r.name[1:], lowered.named(r.body, plan, prefix))
        self._dfa_memo[key] = entry
        return entry

    # -- shapes -----------------------------------------------------------------------------------
    def body(self, shape: Shape, depth: int) -> Node:
        if shape is SHAPE_TOP and depth == 0 and self._plain_top is not None:
            return self._top_body()
        return self._body(shape, depth)

    def _top_body(self) -> Node:
        """The body of any JSON value at depth 0 (the ``value`` rule, the extra keys' values of
        most objects), built once per cache set, layout and options (it reads no limit): the
        node :meth:`_body` builds, with its side effects replayed (the shared ``number`` and
        ``string`` rules defined in that order, the ``value`` rule referenced). A build whose
        side effects are not exactly those is not kept."""
        bodies = current_caches().cache(
            "schema.top_bodies", limit="max_memo_entries", entry_bytes=node_bytes
        )
        key = self._plain_top
        got: Node | None = bodies.get(key)
        if got is not None:
            self.shared("number")
            self.shared("string")
            self.ref(TOP, 0)
            return got
        before = (self._n, len(self.order), len(self.over), len(self._todo))
        node = self._body(SHAPE_TOP, 0)
        new = self.order[before[1] :]
        replayable = (
            self._n == before[0]
            and len(self.over) == before[2]
            and new in ([], ["number"], ["string"], ["number", "string"])
            and self.rules.get("number") == _NUMBER
            and "string" in self.rules
            and self._memo.get((TOP, 0)) == RuleRef("value")
            and len(self._todo) <= before[3] + 1
        )
        if replayable:
            bodies.put(key, node)
        return node

    def _body(self, shape: Shape, depth: int) -> Node:
        alts: list[Node] = []
        if shape.literals is not None:
            return literal_set(self, shape.literals, depth)
        if shape.null:
            alts.append(lit(self.notation.null))
        if True in shape.booleans:
            alts.append(lit(self.notation.true))
        if False in shape.booleans:
            alts.append(lit(self.notation.false))
        # plain loops, not generators: a body is made per rule, most of its types empty
        for n in shape.numbers:
            alts.append(number(self, n))
        for s in shape.strings:
            alts.append(string(self, s))
        arrays, objects = shape.arrays, shape.objects
        if not arrays and not objects:
            return choice(*alts)
        too_deep = self.layout.mode == "indent" and depth >= self.max_depth
        if too_deep:
            pass  # deeper containers are not emitted in indent mode (a documented restriction)
        else:
            # literal containers (enum values met with a union) share one trie; the others are
            # an alternative each
            fixed = [a.literal for a in arrays if a.literal is not None]
            fixed += [o.literal for o in objects if o.literal is not None]
            if fixed:
                alts.append(literal_set(self, fixed, depth))
            for a in arrays:
                if a.literal is None:
                    alts.append(array(self, a, depth))
            for o in objects:
                if o.literal is None:
                    alts.append(obj(self, o, depth))
        return choice(*alts)


@memo("schema.string_rule", limit="max_memo_entries", entry_bytes=node_bytes)
def _string_body() -> Node:
    """The body of the shared ``string`` rule (JSON's): made once per cache set."""
    return seq(lit('"'), star(any_json_string_char()), lit('"'))


_DIGIT = byte_class((0x30, 0x39))
#: the bodies of the shared ``integer`` and ``number`` rules (JSON's spellings)
_INTEGER = seq(opt(lit("-")), choice(lit("0"), seq(byte_class((0x31, 0x39)), star(_DIGIT))))
_NUMBER = seq(
    opt(lit("-")),
    choice(lit("0"), seq(byte_class((0x31, 0x39)), star(_DIGIT))),
    opt(seq(lit("."), plus(_DIGIT))),
    opt(seq(byte_class(0x65, 0x45), opt(byte_class(0x2B, 0x2D)), plus(_DIGIT))),
)
#: literal sets up to this many bytes of JSON text are written where they are used, not as a rule
_INLINE_LITERAL = 64
