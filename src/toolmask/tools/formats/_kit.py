"""Grammar pieces the codecs build their calls from: the toolkit of the turn grammar.

A codec describes one call with :meth:`~toolmask.tools.formats.Codec.call_grammar`, given a
:class:`Kit`: it asks the kit for the markers (``Special`` when the vocabulary has them as
single tokens), the JSON grammar of a schema (compiled by :func:`compile_json_schema` with the
format's argument options, renamed into the turn grammar; the kit's ``schema_grammar`` compiles
it, and the tool layer passes one that caches), free text that avoids some stop strings (for raw
XML parameter values and reasoning), and XML-style parameter lists (each declared parameter at
most once, in any order, the required ones enforced).

Every rule the kit makes is collected in :attr:`Kit.rules`; rule names are unique per kit.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask._pointer import json_pointer
from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import (
    EMPTY,
    NOTHING,
    ByteClass,
    Bytes,
    CharSet,
    Choice,
    Dfa,
    Grammar,
    Node,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Special,
    choice,
    dfa_to_rules,
    lit,
    opt,
    repeat,
    seq,
)
from toolmask.schema import compile_json_schema, json_ws
from toolmask.tools.formats._read import schema_types
from toolmask.tools.formats._rename import prefix_rules

__all__ = [
    "MAX_ANY_ORDER_PARAMS",
    "Kit",
    "SchemaGrammar",
    "compile_arguments",
    "escape_in_string",
    "escape_node",
    "indent_newlines",
    "marker_node",
    "with_defs",
]

#: compiles a tool schema's JSON grammar with these options (the tool layer passes one that
#: caches in its turn cache)
SchemaGrammar = Callable[[Any, Mapping[str, Any]], Grammar]

#: parameter lists longer than this keep the schema's order (any order costs 2**n rules)
MAX_ANY_ORDER_PARAMS = 8


@functools.lru_cache(maxsize=1024)
def marker_node(text: str, special_tokens: frozenset[str]) -> Node:
    """``text`` as the tokenizer reads it: each special token of the vocabulary inside it (the
    longest first, left to right) as a :class:`Special` node, the rest as bytes; Gemma 4's
    ``<|channel>thought`` is the token ``<|channel>`` then the text ``thought``. Cached."""
    if not text or text in special_tokens:
        return Special(text) if text else lit(text)
    inside = sorted((t for t in special_tokens if t and t in text), key=len, reverse=True)
    if not inside:
        return lit(text)
    parts: list[Node] = []
    i = j = 0
    while j < len(text):
        hit = next((t for t in inside if text.startswith(t, j)), None)
        if hit is None:
            j += 1
            continue
        parts += [lit(text[i:j]), Special(hit)]
        i = j = j + len(hit)
    parts.append(lit(text[i:]))
    return seq(*parts)


def compile_arguments(schema: Any, options: Mapping[str, Any]) -> Grammar:
    """``compile_json_schema(schema, **options)``, uncached (the default of a kit's
    ``schema_grammar``)."""
    return compile_json_schema(schema, **options)


def indent_newlines(grammar: Grammar, pad: str) -> Grammar:
    """``grammar`` with ``pad`` written after every newline byte of its literals: an
    ``"indent"``-layout JSON grammar (``json.dumps(v, indent=k)``) moved to a deeper level, as
    when a template indents the arguments inside the call object (``tojson(indent=4)`` of a
    list of calls puts them two levels down). Sound only for grammars whose newlines are all
    literal bytes (the indent layout's: strings escape theirs): a byte class or a repetition
    that admits a newline raises ValueError. Cost: O(grammar size)."""
    nl = pad.encode("utf-8")

    def shift(node: Node) -> Node:
        if isinstance(node, Bytes):
            return Bytes(node.value.replace(b"\n", b"\n" + nl)) if b"\n" in node.value else node
        if isinstance(node, ByteClass):
            if 0x0A in node:
                raise ValueError("indent_newlines: a byte class admits a newline")
            return node
        if isinstance(node, Seq | Choice):
            return type(node)(tuple(shift(i) for i in node.items))
        if isinstance(node, Repeat):
            return Repeat(shift(node.item), node.min, node.max)
        return node

    rules = tuple(Rule(r.name, shift(r.body)) for r in grammar.rules)
    return Grammar(rules, grammar.start, grammar.checks)


#: what ``json.dumps`` writes for each byte it escapes inside a JSON string
_STRING_ESCAPES: dict[int, bytes] = {
    0x22: b'\\"',
    0x5C: b"\\\\",
    0x08: b"\\b",
    0x0C: b"\\f",
    0x0A: b"\\n",
    0x0D: b"\\r",
    0x09: b"\\t",
    **{b: b"\\u%04x" % b for b in range(0x20) if b not in (0x08, 0x0C, 0x0A, 0x0D, 0x09)},
}
_ESCAPED_MASK = sum(1 << b for b in _STRING_ESCAPES)


def escape_in_string(grammar: Grammar) -> Grammar:
    """``grammar`` with every text it admits written as the inside of a JSON string, the way
    ``json.dumps`` (``ensure_ascii=False``) escapes it: ``"`` as ``\\"``, ``\\`` as ``\\\\``,
    control characters as their short escapes or ``\\u00XX``, every other byte as it is. The
    arguments of OpenAI's tool-call objects, ``"arguments": "{\\"city\\": \\"Paris\\"}"``, are
    the arguments' JSON grammar so escaped, between quotes. Exact: the escaping is a bijection
    byte string -> byte string, so the grammar admits the escaped text of exactly the texts
    ``grammar`` admits. A ``Special`` node cannot sit inside a string: it raises ValueError.
    Cost: O(grammar size)."""
    memo: dict[int, Node] = {}
    rules = tuple(Rule(r.name, escape_node(r.body, memo)) for r in grammar.rules)
    return Grammar(rules, grammar.start, grammar.checks)


def escape_node(node: Node, memo: dict[int, Node] | None = None) -> Node:
    """``node`` with its bytes escaped as :func:`escape_in_string` says (``memo``: the nodes
    already escaped, by id, shared between the rules of one grammar). O(node size)."""
    memo = {} if memo is None else memo

    def esc(node: Node) -> Node:
        hit = memo.get(id(node))
        if hit is not None:
            return hit
        out: Node
        if isinstance(node, Bytes):
            out = Bytes(b"".join(_STRING_ESCAPES.get(b, bytes((b,))) for b in node.value))
        elif isinstance(node, ByteClass):
            plain = ByteClass(node.mask & ~_ESCAPED_MASK)
            escaped = [lit(_STRING_ESCAPES[b]) for b in node.bytes() if b in _STRING_ESCAPES]
            out = node if not escaped else choice(*([plain] if plain.mask else []), *escaped)
        elif isinstance(node, Seq | Choice):
            out = type(node)(tuple(esc(i) for i in node.items))
        elif isinstance(node, Repeat):
            out = Repeat(esc(node.item), node.min, node.max)
        elif isinstance(node, Special):
            raise ValueError(f"escape_in_string: the marker {node.text!r} inside a string")
        else:
            out = node
        memo[id(node)] = out
        return out

    return esc(node)


def with_defs(schema: Any, root: Any) -> dict[str, Any]:
    """A parameter's subschema ``schema`` to compile on its own: a copy that carries the tool
    schema ``root``'s ``$defs`` / ``definitions``, so that its ``$ref`` s resolve."""
    sub = dict(schema) if isinstance(schema, Mapping) else {}
    if isinstance(root, Mapping):
        for k in ("$defs", "definitions"):
            if k in root and k not in sub:
                sub[k] = root[k]
    return sub


@dataclass
class Kit:
    """What a format needs to write its part of a turn grammar (see the module docstring).

    ``options``: the arguments' :func:`compile_json_schema` options; ``layouts``: the
    whitespace layouts admitted for JSON values (the first is ``options["whitespace"]``; a
    format whose models write both ``json.dumps`` spacing and compact JSON lists both).
    ``reasoning_open``: the prompt ended inside the reasoning channel (codecs that build
    their whole turn read it, see :meth:`Codec.turn_grammar`). ``tag``: a prefix for the names
    of the rules the kit makes itself (shared texts), so that kits whose rules end up in one
    grammar (a turn's per-tool parts) cannot collide. ``schema_grammar``: compiles a schema
    with options (default: uncached :func:`compile_arguments`).
    """

    options: Mapping[str, Any]
    special_tokens: frozenset[str] = frozenset()
    layouts: tuple[str, ...] = ()
    reasoning_open: bool = False
    tag: str = ""
    schema_grammar: SchemaGrammar = compile_arguments
    rules: list[Rule] = field(default_factory=list)
    _names: set[str] = field(default_factory=set)
    _texts: dict[tuple[str | tuple[str, str], ...], Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.layouts:
            self.layouts = (str(self.options.get("whitespace", "compact")),)

    # -- plumbing -------------------------------------------------------------------------------
    def copy(self) -> Kit:
        """This kit with its own copies of the rules made so far (and what they are cached
        under), to add more rules to without changing this one. O(rules)."""
        other = dataclasses.replace(self)
        other.rules = list(self.rules)
        other._names = set(self._names)
        other._texts = dict(self._texts)
        return other

    def add(self, name: str, body: Node) -> RuleRef:
        """Add rule ``name`` (unique within this kit) and return a reference to it."""
        if name in self._names:
            raise ValueError(f"rule {name!r} defined twice")
        self._names.add(name)
        self.rules.append(Rule(name, body))
        return RuleRef(name)

    def marker(self, text: str) -> Node:
        """``Special(text)`` if ``text`` is a special token of the vocabulary, else its bytes
        with the special tokens inside it as Special nodes (``<|channel>thought``)."""
        return marker_node(text, self.special_tokens)

    def ws(self, hi: int = 4, lo: int = 0) -> Node:
        return json_ws(hi, lo)

    # -- values -----------------------------------------------------------------------------------
    def json(
        self,
        schema: Any,
        prefix: str,
        notation: str = "json",
        *,
        at: str = "",
        quoted: bool = False,
    ) -> Node:
        """The JSON grammar of ``schema`` in every admitted layout (rules ``prefix...``);
        ``notation`` ``"python"`` / ``"gemma"`` / ``"functiongemma"`` spells the values
        otherwise (see :mod:`toolmask.schema._notation`), its markers special where the
        vocabulary says.
        ``at``: the JSON pointer of ``schema`` in the tool's parameters when it is a part of
        them (one parameter), so that a SchemaError or LimitError points into the parameters.
        ``quoted``: the JSON text written as a JSON string (:func:`escape_in_string`, between
        ``"`` and ``"``), as OpenAI's tool-call objects write their arguments."""
        alts: list[Node] = []
        extra: dict[str, Any] = {}
        if notation != "json":
            from toolmask.schema import NOTATIONS

            special = sorted({NOTATIONS[notation].quote} & self.special_tokens)
            extra = {"notation": notation, "special_tokens": special}
        for j, layout in enumerate(self.layouts):
            options = {**self.options, **extra, "whitespace": layout}
            name = prefix if len(self.layouts) == 1 else f"{prefix}{j}_"
            try:
                grammar = self.schema_grammar(schema, options)
            except (SchemaError, LimitError) as e:
                e.within(at)
                raise
            if quoted:
                grammar = escape_in_string(grammar)
            entry, rules = prefix_rules(grammar, name)
            for r in rules:
                self.add(r.name, r.body)
            alts.append(seq(lit('"'), entry, lit('"')) if quoted else entry)
        return choice(*alts)

    def json_indented(self, schema: Any, prefix: str, *, indent: int, depth: int) -> Node:
        """The JSON grammar of ``schema`` as ``tojson(indent=indent)`` writes it when the value
        sits ``depth`` levels down in an indented document (its inner lines start ``indent *
        (depth + 1)`` spaces in), whatever the kit's layouts (rules ``prefix...``)."""
        options = {**self.options, "whitespace": "indent", "indent": indent}
        grammar = self.schema_grammar(schema, options)
        if depth:
            grammar = indent_newlines(grammar, " " * (indent * depth))
        entry, rules = prefix_rules(grammar, prefix)
        for r in rules:
            self.add(r.name, r.body)
        return entry

    def text_without(
        self,
        stops: Sequence[str | tuple[str, str]],
        *,
        nonempty: bool = False,
        edges: str = "",
    ) -> Node:
        """Any UTF-8 text that contains none of ``stops`` (a DFA lowered to rules; shared by
        every use of the same stops); a stop ``(a, b)`` is ``a``, any JSON whitespace, then
        ``b``. ``edges``: characters the text may neither start nor end with (a reader that
        strips a newline around a value: Seed-OSS). O(sum of the stops' lengths) states."""
        key = (*stops, "+" if nonempty else "*", ("edges", edges))
        hit = self._texts.get(key)
        if hit is not None:
            return hit
        anything = Dfa.any_string()
        ws = Dfa.char(CharSet.of(ord(c) for c in " \t\r\n")).star()
        dfa = Dfa.epsilon().complement() if nonempty else anything
        for s in stops:
            stop = Dfa.literal(s) if isinstance(s, str) else Dfa.literal(s[0]).concat(ws)
            if not isinstance(s, str):
                stop = stop.concat(Dfa.literal(s[1]))
            dfa = dfa.intersect(anything.concat(stop).concat(anything).complement())
        if edges:
            edge = Dfa.char(CharSet.of(ord(c) for c in edges))
            dfa = dfa.intersect(edge.concat(anything).complement())
            dfa = dfa.intersect(anything.concat(edge).complement())
        name = f"{self.tag}text{len(self._texts)}"
        entry, rules = dfa_to_rules(dfa, name, encoding="raw")
        for r in rules:
            self.add(r.name, r.body)
        self._texts[key] = entry
        return entry

    def chars(self, excluded: str, *, lo: int = 1) -> Node:
        """One or more characters, none of them in ``excluded`` (names, ids)."""
        key = (excluded, str(lo), "chars")
        hit = self._texts.get(key)
        if hit is not None:
            return hit
        cs = CharSet.of(ord(c) for c in excluded).complement()
        dfa = Dfa.char(cs).concat(Dfa.char(cs).star())
        if lo == 0:
            dfa = dfa.union(Dfa.epsilon())
        entry, rules = dfa_to_rules(dfa, f"{self.tag}chars{len(self._texts)}", encoding="raw")
        self._texts[key] = entry
        for r in rules:
            self.add(r.name, r.body)
        return entry

    def raw_value(self, schema: Any, root: Any, prefix: str, raw: Node, *, at: str = "") -> Node:
        """A parameter value written as raw text (XML-parameter formats): a string parameter
        is the text itself (``raw``; an ``enum``/``const`` of strings is its literal values),
        any other type is JSON for its subschema (:func:`with_defs`; ``at`` as for
        :meth:`json`); a boolean may also be written ``True`` / ``False`` (Python literals, as
        some templates render them)."""
        types = schema_types(schema)
        if isinstance(schema, Mapping):
            values = list(schema.get("enum") or ())
            if "const" in schema:
                values = [schema["const"]]
            if values and all(isinstance(v, str) for v in values):
                return choice(*(lit(v) for v in values))
        if not types or "string" in types:
            return raw
        node = self.json(with_defs(schema, root), prefix, at=at)
        if types == {"boolean"}:
            return choice(node, lit("True"), lit("False"))
        return node

    def params(
        self,
        schema: Any,
        prefix: str,
        param: Callable[[str, Node], Node],
        raw: Node,
        free: Callable[[], Node] | None = None,
        *,
        sep: Node | None = None,
        value: Callable[[Any, str], Node] | None = None,
        keep: Callable[[str], bool] | None = None,
    ) -> Node:
        """The parameters of a tool schema written one by one (``param(key, value)``): each
        declared parameter at most once, the required ones present, in any order (schema order
        beyond :data:`MAX_ANY_ORDER_PARAMS`). An object schema that declares no properties
        but allows others gets ``free()`` (any key, raw value) repeated.

        ``sep`` goes between two parameters (Python's ``, ``); ``value(subschema, prefix)``
        writes a value (default: :meth:`raw_value` with ``raw``); a parameter whose key
        ``keep`` refuses cannot be written (a required one makes the call impossible)."""
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        props = props if isinstance(props, Mapping) else {}
        required = set(schema.get("required") or ()) if isinstance(schema, Mapping) else set()
        if keep is not None:
            if any(not keep(k) for k in required if k in props):
                return NOTHING
            props = {k: v for k, v in props.items() if keep(k)}
        keys = list(props)
        if not keys:
            extra = (
                schema.get("additionalProperties", True) if isinstance(schema, Mapping) else True
            )
            if free is not None and extra is not False:
                if sep is not None:
                    f = free()
                    return opt(seq(f, repeat(seq(sep, f), 0, None)))
                return repeat(free(), 0, None)
            return EMPTY

        def value_of(j: int, k: str) -> Node:
            at = json_pointer(("properties", k))
            if value is not None:
                try:
                    return value(with_defs(props[k], schema), f"{prefix}v{j}_")
                except (SchemaError, LimitError) as e:
                    e.within(at)
                    raise
            return self.raw_value(props[k], schema, f"{prefix}v{j}_", raw, at=at)

        nodes = [self.add(f"{prefix}p{j}", param(k, value_of(j, k))) for j, k in enumerate(keys)]
        lead = sep if sep is not None else EMPTY
        if len(keys) > MAX_ANY_ORDER_PARAMS:
            if sep is None:
                return seq(
                    *(n if k in required else opt(n) for k, n in zip(keys, nodes, strict=True))
                )
            # schema order: rule t{i}_{w}: parameters i.. after w (0/1) were written
            for i in range(len(keys), -1, -1):
                for w in (0, 1):
                    if i == len(keys):
                        body: Node = EMPTY
                    else:
                        put = seq(lead if w else EMPTY, nodes[i], RuleRef(f"{prefix}t{i + 1}_1"))
                        skip = RuleRef(f"{prefix}t{i + 1}_{w}")
                        body = put if keys[i] in required else choice(put, skip)
                    self.add(f"{prefix}t{i}_{w}", body)
            return RuleRef(f"{prefix}t0_0")
        req_mask = sum(1 << j for j, k in enumerate(keys) if k in required)
        n = len(keys)
        for mask in range(1 << n):
            alts: list[Node] = [
                seq(lead if mask else EMPTY, nodes[j], RuleRef(f"{prefix}s{mask | (1 << j)}"))
                for j in range(n)
                if not mask & (1 << j)
            ]
            if mask & req_mask == req_mask:
                alts.append(EMPTY)
            self.add(f"{prefix}s{mask}", choice(*alts))
        return RuleRef(f"{prefix}s0")
