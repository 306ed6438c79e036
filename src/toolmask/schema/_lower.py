"""Shapes -> grammar IR.

Every (term, depth) pair becomes one rule (depth is always 0 unless the layout indents, where the
indentation of a value depends on how deep it sits). Rules reference each other through
:class:`RuleRef`, so recursive schemas become recursive grammars.

Layout decides where whitespace goes: ``compact`` (none), ``spaced`` (exactly what
``json.dumps(value)`` writes: ``", "`` between items, ``": "`` after keys), ``flexible`` (at every
place JSON allows it, at most ``max_ws`` bytes of ``[ \\t\\n\\r]``) or ``indent`` (exactly what
``json.dumps(value, indent=k)`` writes).

Notation decides how values are spelled (:mod:`._notation`): JSON, Python literals or Gemma's
object notation; the layouts apply to all three.

Object members come in schema order, or, with ``any_order``, in any order the writer picks:
every required key present, no key twice. Any order is a rule per set of keys written so far,
so it is bounded by ``Limits.max_any_order_properties`` (beyond it, schema order).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from toolmask.errors import LimitError
from toolmask.grammar import (
    ANY_CHAR,
    EMPTY,
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
    opt,
    plus,
    regex_direct_node,
    repeat,
    seq,
    star,
    trusted_grammar,
)
from toolmask.schema import _langs
from toolmask.schema._algebra import to_decimal
from toolmask.schema._compiler import SchemaCompiler
from toolmask.schema._dfa_rules import lowered_dfa
from toolmask.schema._json_text import any_json_string_char, json_string_char, json_ws
from toolmask.schema._keys import key_rest_rules, other_keys_body
from toolmask.schema._literal_trie import Tail, number_spellings, trie_node
from toolmask.schema._notation import (
    NOTATIONS,
    Notation,
    gemma_key_dfa,
    gemma_quote,
    gemma_string_dfa,
)
from toolmask.schema._terms import (
    BOTTOM,
    TOP,
    ArrAlt,
    Flags,
    NumAlt,
    ObjAlt,
    Shape,
    StrAlt,
    Term,
    canonical,
    mk_and,
    mk_not,
)

__all__ = ["Layout", "Lowerer"]

Whitespace = Literal["compact", "spaced", "flexible", "indent"]


@dataclass(frozen=True, slots=True)
class Layout:
    mode: Whitespace = "compact"
    indent: int = 2
    max_ws: int = 4

    def ws(self) -> Node:
        return json_ws(self.max_ws)

    def open(self, bracket: str, depth: int) -> Node:
        if self.mode == "indent":
            return lit(bracket + "\n" + " " * (self.indent * (depth + 1)))
        if self.mode == "flexible":
            return seq(lit(bracket), self.ws())
        return lit(bracket)

    def close(self, bracket: str, depth: int) -> Node:
        if self.mode == "indent":
            return lit("\n" + " " * (self.indent * depth) + bracket)
        if self.mode == "flexible":
            return seq(self.ws(), lit(bracket))
        return lit(bracket)

    def empty(self, pair: str) -> Node:
        if self.mode == "flexible":
            return seq(lit(pair[0]), self.ws(), lit(pair[1]))
        return lit(pair)

    def sep(self, depth: int) -> Node:
        if self.mode == "indent":
            return lit(",\n" + " " * (self.indent * (depth + 1)))
        if self.mode == "flexible":
            return seq(self.ws(), lit(","), self.ws())
        if self.mode == "spaced":
            return lit(", ")
        return lit(",")

    def colon(self) -> Node:
        if self.mode in ("indent", "spaced"):
            return lit(": ")
        if self.mode == "flexible":
            return seq(self.ws(), lit(":"), self.ws())
        return lit(":")

    def render(self, value: Any, depth: int) -> str:
        if self.mode == "indent":
            text = json.dumps(value, ensure_ascii=False, indent=self.indent)
            return text.replace("\n", "\n" + " " * (self.indent * depth))
        if self.mode == "spaced":
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Lowerer:
    """Turns the terms of one :class:`SchemaCompiler` into rules."""

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
        self.notation = notation
        self.special_tokens = special_tokens
        self.layout = layout
        self.addl_default = additional_properties_default
        self.any_order = any_order
        self.max_depth = max_indent_depth
        self.rules: dict[str, Node] = {}
        self.order: list[str] = []
        self._memo: dict[tuple[Term, int], Node] = {}
        #: the rule of each (shape, depth) lowered: terms of equal shapes share it
        self._by_shape: dict[tuple[Shape, int], RuleRef] = {}
        self._todo: list[tuple[str, Term, int]] = []
        self._dfa_memo: dict[tuple[Dfa | None, str], Node] = {}
        self._n = 0
        self.over: set[tuple[str, str]] = set()

    # -- driver -----------------------------------------------------------------------------------
    def run(self, root: Term, schema_json: str, resources_json: str) -> Grammar:
        self._memo[(root, 0)] = RuleRef("root")
        self._todo.append(("root", root, 0))
        while self._todo:
            name, term, depth = self._todo.pop()
            try:
                self.c.check_time()
                shape = self.c.expand(term)
                self.over |= shape.flags.over
                self._define(name, self.body(shape, depth))
            except LimitError as e:  # a cap hit lowering this term: locate it there
                e.at(self.c.where(term))
                raise
        over = self.over | self.c.forced_over
        checks: tuple[PostCheck, ...] = ()
        if over:
            checks = (PostCheck(schema_json, tuple(sorted(over)), resources_json),)
        rules = tuple(Rule(n, self.rules[n]) for n in self.order)
        # every RuleRef the lowerer writes names a rule it defines (ref, shared, dfa_node,
        # objects' and arrays' rules): the per-node check of Grammar() is skipped
        return trusted_grammar(rules, "root", checks)

    def _define(self, name: str, body: Node) -> None:
        if name not in self.rules:
            self.order.append(name)
        self.rules[name] = body
        if len(self.rules) > self.c.limits.max_rules:
            raise LimitError("the schema needs too many grammar rules", limit="max_rules")

    def _fresh(self, kind: str) -> str:
        self._n += 1
        return f"{kind}{self._n}"

    def ref(self, term: Term, depth: int) -> Node:
        if term == BOTTOM:
            return NOTHING
        d = depth if self.layout.mode == "indent" else 0
        key = (term, d)
        got = self._memo.get(key)
        if got is not None:
            return got
        node: Node
        if term == TOP and d == 0:
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
                node = self.literal_set(lits, d)
            else:
                shared = self._by_shape.get((shape, d))
                if shared is None:
                    shared = self._by_shape[(shape, d)] = RuleRef(self._fresh("t"))
                    self._todo.append((shared.name, term, d))
                node = shared
        self._memo[key] = node
        return node

    def is_bottom(self, term: Term) -> bool:
        """True when no value satisfies ``term`` at the top level of its shape."""
        return term == BOTTOM or self.c.expand(term).is_empty()

    def shared(self, name: str) -> Node:
        if name == "string" and self.notation.name != "json":
            return self.text_string(None)
        if name not in self.rules:
            if name == "string":
                body = seq(lit('"'), star(any_json_string_char()), lit('"'))
            elif name == "integer":
                body = seq(
                    opt(lit("-")), choice(lit("0"), seq(byte_class((0x31, 0x39)), star(_DIGIT)))
                )
            else:
                body = seq(
                    opt(lit("-")),
                    choice(lit("0"), seq(byte_class((0x31, 0x39)), star(_DIGIT))),
                    opt(seq(lit("."), plus(_DIGIT))),
                    opt(seq(byte_class(0x65, 0x45), opt(byte_class(0x2B, 0x2D)), plus(_DIGIT))),
                )
            self._define(name, body)
        return RuleRef(name)

    def dfa_node(
        self, dfa: Dfa, encoding: Literal["raw", "json_string", "python'", 'python"']
    ) -> Node:
        key = (dfa, encoding)
        got = self._dfa_memo.get(key)
        if got is not None:
            return got
        prefix = self._fresh("n" if encoding == "raw" else "s")
        lowered = lowered_dfa(dfa, encoding)
        entry = lowered.entry
        if lowered.rules:
            entry = lowered.named(entry, lowered.entry_plan, prefix)
            for r, plan in zip(lowered.rules, lowered.plans, strict=True):
                self._define(prefix + r.name[1:], lowered.named(r.body, plan, prefix))
        self._dfa_memo[key] = entry
        return entry

    # -- shapes -----------------------------------------------------------------------------------
    def body(self, shape: Shape, depth: int) -> Node:
        alts: list[Node] = []
        if shape.literals is not None:
            return self.literal_set(shape.literals, depth)
        if shape.null:
            alts.append(lit(self.notation.null))
        if True in shape.booleans:
            alts.append(lit(self.notation.true))
        if False in shape.booleans:
            alts.append(lit(self.notation.false))
        alts.extend(self.number(n) for n in shape.numbers)
        alts.extend(self.string(s) for s in shape.strings)
        too_deep = self.layout.mode == "indent" and depth >= self.max_depth
        if too_deep and (shape.arrays or shape.objects):
            pass  # deeper containers are not emitted in indent mode (a documented restriction)
        else:
            # literal containers (enum values met with a union) share one trie; the others are
            # an alternative each
            fixed = [a.literal for a in shape.arrays if a.literal is not None]
            fixed += [o.literal for o in shape.objects if o.literal is not None]
            if fixed:
                alts.append(self.literal_set(fixed, depth))
            alts.extend(self.array(a, depth) for a in shape.arrays if a.literal is None)
            alts.extend(self.obj(o, depth) for o in shape.objects if o.literal is None)
        return choice(*alts)

    def literal(self, value: Any, depth: int) -> Node:
        """One constant value (see :meth:`literal_set`)."""
        return self.literal_set((canonical(value),), depth)

    def literal_set(self, texts: Iterable[str], depth: int) -> Node:
        """A set of constant values (their canonical JSON texts, :func:`canonical`) as one byte
        trie of their spellings (see :mod:`._literal_trie`): numbers in every exponent-free
        spelling, objects of 2 to 4 members in any member order, other values as the layout
        renders them. Values in a notation other than JSON, other than numbers, are spelled
        node by node beside the trie (their strings have several quotings). O(total bytes of
        the spellings); no rule."""
        spellings: list[tuple[bytes, Tail]] = []
        others: list[Node] = []
        json_text = self.notation.name == "json"
        render = self.layout.render
        for text in texts:
            first = text[0]
            if first == '"' and json_text:  # a string is written the same in every layout
                spellings.append((text.encode(), ""))
                continue
            if first in _INT_START and text != "0" and text.lstrip("-").isdigit():
                # a canonical integer other than 0 (which is also written -0): no leading zero
                spellings.append((text.encode(), "int"))
                continue
            value = json.loads(text)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                spellings.extend(number_spellings(to_decimal(value, "", "const")))
            elif not json_text:
                others.append(self.spelled(value, depth))
            elif isinstance(value, dict) and 2 <= len(value) <= 4:
                for order in itertools.permutations(value.items()):
                    spellings.append((render(dict(order), depth).encode(), ""))
            else:
                spellings.append((render(value, depth).encode(), ""))
        size = sum(len(text) for text, _ in spellings)
        if size > self.c.limits.max_literal_bytes:
            raise LimitError(
                f"the literal values take {size} bytes spelled out", limit="max_literal_bytes"
            )
        return choice(trie_node(spellings), *others)

    def number(self, n: NumAlt) -> Node:
        if n.rng is not None:
            assert n.integer == (n.rng.plain is not None)
            return n.rng.node
        if n.is_any:
            return self.shared("integer" if n.integer else "number")
        d = n.lang(self.c.limits)
        assert d is not None
        if n.integer:
            d = _langs.dfa_and(d, _langs.int_plain(), self.c.limits)
        return self.dfa_node(d, "raw")

    def string(self, s: StrAlt) -> Node:
        if self.notation.name != "json":  # a format's or a pattern's DFA is built for it
            return self.text_string(s.lang(self.c.limits))
        if s.fmt is not None:
            node = _format_node(s.fmt)
            if node is None:
                node = self.dfa_node(_langs.format_dfa(s.fmt), "json_string")
            return seq(lit('"'), node, lit('"'))
        if s.pat is not None:
            node = _langs.pattern_node(s.pat, self.c.limits)
            assert node is not None
            return seq(lit('"'), node, lit('"'))
        if s.dfa is None:
            return self.shared("string")
        bounds = _length_only(s.dfa)
        if bounds is not None:
            # minLength / maxLength alone: a repetition of one character, not a rule per length
            lo, hi = bounds
            return seq(lit('"'), repeat(any_json_string_char(), lo, hi), lit('"'))
        return seq(lit('"'), self.dfa_node(s.dfa, "json_string"), lit('"'))

    # notations other than JSON
    def text_string(self, dfa: Dfa | None) -> Node:
        """A string whose contents are in ``dfa`` (any text when None), in the notation."""
        key = (dfa, "string")
        got = self._dfa_memo.get(key)
        if got is not None:
            return got
        if self.notation.name == "gemma":
            quote = self.notation.quote
            node = self.dfa_node(gemma_string_dfa(dfa, quote), "raw")
            if self.notation.delimited:
                q = gemma_quote(self.special_tokens, quote)
                node = seq(q, node, q)
        else:  # python: either quote
            d = Dfa.any_string() if dfa is None else dfa
            node = choice(
                seq(lit("'"), self.dfa_node(d, "python'"), lit("'")),
                seq(lit('"'), self.dfa_node(d, 'python"'), lit('"')),
            )
        if dfa is None:  # one rule for the free string, as JSON's ``string``
            self._define("string", node)
            node = RuleRef("string")
        self._dfa_memo[key] = node
        return node

    def key(self, name: str) -> Node:
        """A declared key, in the notation."""
        if self.notation.name == "json":
            return lit(json.dumps(name, ensure_ascii=False))
        if self.notation.name == "gemma":  # bare, else quoted (the reader takes both)
            if gemma_key_dfa(None).accepts(name):
                return lit(name)
            return self.text_string(Dfa.literal(name))
        return self.text_string(Dfa.literal(name))

    def colon(self) -> Node:
        if self.notation.name == "gemma" and self.layout.mode != "flexible":
            return lit(":")
        return self.layout.colon()

    def spelled(self, value: Any, depth: int) -> Node:
        """A constant value written in a notation other than JSON (strings in every quoting
        the notation has; objects of 2 to 4 members in any order, as for JSON)."""
        L = self.layout
        n = self.notation
        if value is None:
            return lit(n.null)
        if value is True:
            return lit(n.true)
        if value is False:
            return lit(n.false)
        if isinstance(value, str):
            return self.text_string(Dfa.literal(value))
        if isinstance(value, (int, float)):
            return self.literal(value, depth)
        if isinstance(value, list):
            if not value:
                return L.empty("[]")
            items = [self.spelled(v, depth + 1) for v in value]
            body = [items[0]]
            for it in items[1:]:
                body += [L.sep(depth), it]
            return seq(L.open("[", depth), *body, L.close("]", depth))
        if not value:
            return L.empty("{}")
        members = list(value.items())
        orders = itertools.permutations(members) if 2 <= len(members) <= 4 else [members]
        alts = []
        for order in orders:
            body = []
            for i, (k, v) in enumerate(order):
                if i:
                    body.append(L.sep(depth))
                body += [self.key(str(k)), self.colon(), self.spelled(v, depth + 1)]
            alts.append(seq(L.open("{", depth), *body, L.close("}", depth)))
        return choice(*alts)

    # arrays
    def array(self, a: ArrAlt, depth: int) -> Node:
        L = self.layout
        if a.literal is not None:
            if self.notation.name != "json":
                return self.spelled(json.loads(a.literal), depth)
            return lit(L.render(json.loads(a.literal), depth))
        if a.contains is not None and a.min_contains == 0 and a.max_contains is None:
            a = ArrAlt(a.prefix, a.items, a.min_items, a.max_items, None, 1, None, a.evaluated)
        if a.contains is not None:
            node = self._array_contains(a, depth)
            if node is not None:
                return node
            self.over.add(("", "contains"))
        lo, hi = a.min_items, a.max_items
        unroll = self.c.limits.max_repeat_unroll
        if lo > unroll:
            self.over.add(("", "minItems"))
            lo = unroll
        if hi is not None and hi - lo > unroll:
            self.over.add(("", "maxItems"))
            hi = None
        k = len(a.prefix)
        sep = L.sep(depth)

        def elem(i: int) -> Node:
            return self.ref(a.item_term(i), depth + 1)

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

    def _array_contains(self, a: ArrAlt, depth: int) -> Node | None:
        if a.prefix or a.contains is None:
            return None
        L = self.layout
        lo, hi = a.min_items, a.max_items
        cmin, cmax = a.min_contains, a.max_contains
        cap_n = hi if hi is not None else lo
        cap_x = cmax if cmax is not None else cmin
        if (cap_n + 1) * (cap_x + 1) > 4096:
            return None
        x = self.ref(mk_and(a.items, a.contains), depth + 1)
        y = self.ref(mk_and(a.items, mk_not(a.contains)), depth + 1)
        sep = L.sep(depth)
        base = self._fresh("c")

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
            self._define(name(cx, n), choice(*alts))
        out: list[Node] = []
        if lo == 0 and cmin == 0:
            out.append(L.empty("[]"))
        if first:
            out.append(seq(L.open("[", depth), choice(*first), L.close("]", depth)))
        return choice(*out)

    # objects
    def obj(self, o: ObjAlt, depth: int) -> Node:
        L = self.layout
        if o.literal is not None:
            return self.literal(json.loads(o.literal), depth)
        if any(p.required and self.is_bottom(p.value) for p in o.props):
            return NOTHING
        names = [p.name for p in o.props]
        props = [p for p in o.props if not self.is_bottom(p.value)]
        regions = [r for r in o.regions if not self.is_bottom(r.value)]
        if not self.addl_default and (o.props or any(r.evaluated for r in o.regions)):
            # an object that names its keys gets no others; one that names none is a free map
            regions = [r for r in regions if r.evaluated]
        lo, hi = o.min_props, o.max_props
        if sum(1 for p in props if p.required) > (hi if hi is not None else 1 << 30):
            return NOTHING
        sep = L.sep(depth)
        colon = self.colon()
        extra: Node = NOTHING
        if regions:
            extra = choice(
                *(
                    seq(self._key_node(r.keys, names), colon, self.ref(r.value, depth + 1))
                    for r in regions
                )
            )
        counting = lo > 0 or hi is not None
        cap = max(lo, hi if hi is not None else 0, 1) if counting else 1
        memo: dict[tuple[int, int], Node] = {}
        # rest(i, c) is shared by both branches of rest(i - 1, .): inline, the tree doubles per
        # optional member, so beyond a few members each (i, c) becomes a rule of its own
        use_rules = len(props) > 4 or len(props) * (cap + 1) > 48
        base = self._fresh("o") if use_rules else ""

        def member(i: int) -> Node:
            p = props[i]
            return seq(self.key(p.name), colon, self.ref(p.value, depth + 1))

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
                self._define(rn, node)
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
            self._define(rn, choice(*alts))
            return any_memo[seen]

        any_memo: dict[int, Node] = {}
        any_base = ""
        required = sum(1 << i for i, p in enumerate(props) if p.required)
        unordered = self.any_order and 1 < len(props) <= self.c.limits.max_any_order_properties
        if unordered:
            any_base = self._fresh("u")
        elif len(props) > _FLAT_OBJECT:
            _warm(rest, props, cap, hi)
        out: list[Node] = []
        if lo == 0 and not any(p.required for p in props):
            out.append(L.empty("{}"))
        body = any_rest(0) if unordered else rest(0, 0)
        out.append(seq(L.open("{", depth), body, L.close("}", depth)))
        return choice(*out)

    def _key_node(self, keys: Dfa | None, names: list[str]) -> Node:
        if self.notation.name == "gemma":  # bare keys
            d = gemma_key_dfa(keys)
            if names:
                d = d.intersect(_langs.not_names(frozenset(names)), limits=self.c.limits)
            return self.dfa_node(d, "raw")
        if keys is None and not names:
            return self.shared("string")
        json_keys = self.notation.name == "json"
        if keys is None:
            tree = (
                other_keys_body(frozenset(names), self.c.limits.max_dfa_states)
                if json_keys
                else None
            )
            if tree is not None:
                body, uses = tree
                for name in sorted(uses - self.rules.keys()):
                    self._define(name, key_rest_rules()[name])
                return seq(lit('"'), body, lit('"'))
            d = _langs.not_names(frozenset(names))
        else:
            d = _langs.dfa_and(keys, _langs.not_names(frozenset(names)), self.c.limits)
        if not json_keys:
            return self.text_string(d)
        return seq(lit('"'), self.dfa_node(d, "json_string"), lit('"'))


_DIGIT = byte_class((0x30, 0x39))
#: literal sets up to this many bytes of JSON text are written where they are used, not as a rule
_INLINE_LITERAL = 64
#: the first characters of an integer's canonical text
_INT_START = frozenset("-0123456789")


@functools.cache
def _format_node(name: str) -> Node | None:
    """A known format's string body straight from its regex's syntax tree (JSON-escaped code
    points), or None when the regex needs its DFA (inner anchors): no automaton is built at
    compile time, the matcher determinises it lazily. Known formats only: their regexes are
    vetted (a user's pattern keeps the DFA route, whose size limits are checked at compile
    time). Cached per format."""
    from toolmask.schema._formats import FORMATS

    rx = FORMATS[name].regex
    assert rx is not None
    return regex_direct_node(rx, encoding=json_string_char)


#: the longest length bound written as a repetition (beyond it, a rule per length: a repetition
#: is unrolled by the automaton and bounded by ``Limits.max_repeat_unroll``)
_MAX_LENGTH_REPEAT = 128


def _length_only(dfa: Dfa) -> tuple[int, int | None] | None:
    """``(lo, hi)`` when ``dfa`` is exactly "any ``lo`` to ``hi`` characters" (``Dfa.length``:
    a chain of states on every code point, final from ``lo`` on, the last one looping when
    unbounded) with ``hi`` at most ``_MAX_LENGTH_REPEAT``; else None. O(states)."""
    edges = dfa.edges
    n = len(edges)
    if n > _MAX_LENGTH_REPEAT + 1:
        return None
    for i, es in enumerate(edges[:-1]):
        if len(es) != 1:
            return None
        cs, to = es[0]
        # Dfa.length's edges share one class object: identity settles the usual case
        if to != i + 1 or (cs is not ANY_CHAR and cs != ANY_CHAR):
            return None
    last = edges[-1]
    if last and (len(last) != 1 or last[0][0] != ANY_CHAR or last[0][1] != n - 1):
        return None
    if not dfa.finals or dfa.finals != frozenset(range(min(dfa.finals), n)):
        return None
    return min(dfa.finals), (n - 1 if not last else None)


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


def flags_over(f: Flags) -> frozenset[tuple[str, str]]:
    return f.over
