"""``minimax_m3``: MiniMax-M3: every call of a turn in one block, each tag behind the namespace
marker ``]<]minimax[>[``, and argument values written as XML elements, recursively::

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="set_opts">]<]minimax[>[<flag>true]<]minimax[>[</flag>
    ]<]minimax[>[<tags>]<]minimax[>[<item>a]<]minimax[>[</item>]<]minimax[>[</tags>
    ]<]minimax[>[<cfg>]<]minimax[>[<a>1]<]minimax[>[</a>]<]minimax[>[</cfg>]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

(one line in the reply: the breaks above are for reading; the template writes a newline only
after ``<tool_call>`` and after each ``</invoke>``). An object's members are child elements named
by their keys (``None`` members left out), an array's are ``<item>`` elements, a string is its raw
text (it cannot hold the marker), a boolean ``true`` / ``false``, a number as written. The reply
starts with the reasoning channel ``<mm:think>...</mm:think>`` or, when the model does not
reason, its close ``</mm:think>`` alone (the template's adaptive mode; its disabled mode puts
that close in the prompt).

The grammar derives the elements from the tool's schema (``properties``, ``items``,
``minItems`` / ``maxItems``, ``enum`` / ``const`` strings, ``anyOf`` / ``oneOf`` as
alternatives, local ``$ref`` s); an object that declares no properties can only be empty, since
an element's close tag must repeat a name the grammar cannot remember. What the elements cannot
say (string patterns and lengths, ``uniqueItems``, ...) is left to the post-decode validator, as
for the other formats that write strings raw. The reader builds the tree and types its leaves
with the schema (:func:`~toolmask.tools.formats._blocks.coerce_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask._pointer import json_pointer
from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import EMPTY, Dfa, Node, choice, dfa_to_rules, lit, opt, repeat, seq, star
from toolmask.schema import MINIMAX_NS
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, Call, coerce_value, done, schema_types, skip_ws
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Calls,
    CodecBase,
    FormatSpec,
    Prompt,
    Reasoning,
    ToolLike,
)

__all__ = ["SPEC", "to_xml"]

NS = MINIMAX_NS
THINK_OPEN = "<mm:think>"
THINK_END = "</mm:think>"
_INVOKE = re.compile(re.escape(NS) + r'<invoke name="([^"<>\n]*)">')
_OPEN_TAG = re.compile(re.escape(NS) + r"<([^<>/\s][^<>\s]*)>")
#: the keywords that constrain a string's text
_STRING_KEYWORDS = frozenset({"pattern", "format", "minLength", "maxLength"})
#: how deep local $refs may lead (a recursive schema cannot be written as finite elements)
_MAX_REF_DEPTH = 16


def to_xml(v: object) -> str:
    """A JSON value as the template's ``to_xml`` macro writes it."""
    if isinstance(v, dict):
        return "".join(f"{NS}<{k}>{to_xml(x)}{NS}</{k}>" for k, x in v.items() if x is not None)
    if isinstance(v, list):
        return "".join(f"{NS}<item>{to_xml(x)}{NS}</item>" for x in v)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class _Cut(Exception):
    """The text ends inside the element being read."""


class _Bad(Exception):
    pass


def _read_content(text: str, i: int, tag: str) -> tuple[Any, int]:
    """The content of element ``tag`` from ``text[i]`` to its close tag: leaf text (``str``) or
    the list of ``(child tag, content)``; and the position after the close tag. ``_Cut`` when
    the text ends first, ``_Bad`` when it is not the element's content."""
    close = f"{NS}</{tag}>"
    if text.startswith(close, i):
        return "", i + len(close)
    if not text.startswith(NS + "<", i) or text.startswith(NS + "</", i):  # leaf text
        k = text.find(NS, i)
        if k < 0:
            raise _Cut
        if text.startswith(close, k):
            return text[i:k], k + len(close)
        if close.startswith(text[k:]):
            raise _Cut
        raise _Bad(f"expected {close!r}")
    children: list[tuple[str, Any]] = []
    while True:
        if text.startswith(close, i):
            return children, i + len(close)
        m = _OPEN_TAG.match(text, i)
        if m is None:
            rest = text[i:]
            if close.startswith(rest) or (rest.startswith(NS + "<") and ">" not in rest):
                raise _Cut
            raise _Bad(f"expected a child element or {close!r}")
        child, i = _read_content(text, m.end(), m.group(1))
        children.append((m.group(1), child))


def _to_value(tree: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """The JSON value of an element's content, typed by ``schema`` (local ``$ref`` s resolved
    in ``root``, the tool's parameters)."""
    if isinstance(schema, Mapping) and "$ref" in schema and depth < _MAX_REF_DEPTH:
        try:
            schema = _deref(_with_defs(schema, root) if isinstance(root, Mapping) else schema)
        except SchemaError:
            schema = None
        return _to_value(tree, schema, root, depth + 1)
    types = schema_types(schema)
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(tree, str):
        if tree == "" and "array" in types and "string" not in types:
            return []
        if tree == "" and "object" in types and "string" not in types:
            return {}
        return coerce_value(tree, schema)
    items = schema.get("items") if isinstance(schema, Mapping) else None
    as_list = "array" in types and "object" not in types
    if not as_list and not types:
        as_list = bool(tree) and all(t == "item" for t, _ in tree)
    if as_list:
        if any(t != "item" for t, _ in tree):
            raise _Bad("an array's elements are <item>")
        return [_to_value(c, items, root, depth) for _, c in tree]
    out: dict[str, Any] = {}
    for t, c in tree:
        if t in out:
            raise _Bad(f"member {t!r} twice")
        sub = props.get(t) if isinstance(props, Mapping) else None
        out[t] = _to_value(c, sub, root, depth)
    return out


@dataclass(frozen=True, slots=True)
class _Elements(CodecBase):
    """MiniMax-M3's XML elements (see the module docstring)."""

    def read_block(
        self,
        spec: FormatSpec,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool,
        schemas: Mapping[str, Any] | None,
    ) -> Block:
        """The calls from the block's open to its close; a bare ``</mm:think>`` is nothing."""
        if text.startswith(THINK_END, k):
            return Block("ok", k + len(THINK_END))
        n = len(text)
        opener, closer = spec.block.open, spec.block.close
        pos = skip_ws(text, k + len(opener))
        calls: list[Call] = []

        def bad(reason: str) -> Block:
            c = text.find(closer, k)
            if c >= 0:
                return Block("bad", c + len(closer), reason=reason)
            return Block("bad", n, reason=reason) if final else Block("pending")

        try:
            while True:
                if text.startswith(closer, pos):
                    if not calls:
                        return Block("bad", pos + len(closer), reason="an empty block")
                    return Block("ok", pos + len(closer), calls)
                m = _INVOKE.match(text, pos)
                if m is None:
                    rest = text[pos : pos + 40]
                    head = f'{NS}<invoke name="'
                    if any(w.startswith(rest) for w in (closer, head)) or (
                        rest.startswith(head) and ">" not in rest
                    ):
                        raise _Cut
                    return bad("expected an invoke")
                name = m.group(1)
                tree, pos = _read_content(text, m.end(), "invoke")
                schema = schemas.get(name) if schemas else None
                if isinstance(tree, str):
                    if tree.strip():
                        return bad("text directly inside an invoke")
                    tree = []
                params = schema if schema is not None else {"type": "object"}
                args = _to_value(tree, params, params)
                calls.append(done(name, args))
                pos = skip_ws(text, pos)
        except _Cut:
            if final:
                return Block("bad", n, reason="truncated: the reply ends inside the block")
            return Block("pending")
        except (_Bad, RecursionError) as e:
            return bad(str(e))

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``NS<invoke name="NAME">``, one element per argument (:meth:`value_node`), then
        ``NS</invoke>`` and a newline."""
        ns = kit.marker(NS)
        raw = kit.text_without((NS,))

        def param(key: str, value: Node) -> Node:
            return seq(ns, lit(f"<{key}>"), value, ns, lit(f"</{key}>"))

        def value(sub: Any, prefix: str) -> Node:
            return self.value_node(kit, sub, prefix, raw, 0)

        params = kit.params(tool.parameters, f"a{index}_", param, raw, value=value)
        return seq(ns, lit(f'<invoke name="{tool.name}">'), params, ns, lit("</invoke>\n"))

    def value_node(self, kit: Kit, sub: Any, prefix: str, raw: Node, depth: int) -> Node:
        """The elements (or the leaf text) that write a value of schema ``sub``."""
        if not isinstance(sub, Mapping):
            return raw
        if "$ref" in sub:
            return self.value_node(kit, _deref(sub), prefix, raw, _deeper(depth))
        alts: list[Node] = []
        for key in ("anyOf", "oneOf"):
            for j, branch in enumerate(sub.get(key) or ()):
                b = _with_defs(branch, sub)
                try:
                    node = self.value_node(kit, b, f"{prefix}{key[0]}{j}_", raw, _deeper(depth))
                except (SchemaError, LimitError) as e:
                    e.within(json_pointer((key, j)))
                    raise
                alts.append(node)
        if alts:
            return choice(*alts)
        values = list(sub.get("enum") or ())
        if "const" in sub:
            values = [sub["const"]]
        if values:
            return choice(*(lit(to_xml(v)) for v in values))
        types = schema_types(sub) or {"string"}
        ns = kit.marker(NS)
        for t in sorted(types):
            if t == "string" and set(sub) & _STRING_KEYWORDS:
                # the schema compiler's string language (pattern, format, lengths) as bare text
                text = {k: v for k, v in sub.items() if k in _STRING_KEYWORDS | {"$defs"}}
                alts.append(kit.json({**text, "type": "string"}, f"{prefix}s_", "minimax_xml"))
            elif t == "string":
                alts.append(raw)
            elif t == "boolean":
                alts.append(choice(lit("true"), lit("false")))
            elif t in ("integer", "number"):
                if "integer" in types and t == "number":
                    continue  # the number grammar below already holds the integers
                num = {k: v for k, v in sub.items() if k not in ("type", "properties", "items")}
                num["type"] = "number" if "number" in types else "integer"
                alts.append(kit.json(num, f"{prefix}n_"))
            elif t == "null":
                alts.append(EMPTY)
            elif t == "array":
                items = _with_defs(sub.get("items", {}), sub)
                try:
                    inner = self.value_node(kit, items, f"{prefix}i_", raw, _deeper(depth))
                except (SchemaError, LimitError) as e:
                    e.within("/items")
                    raise
                item = kit.add(f"{prefix}item", seq(ns, lit("<item>"), inner, ns, lit("</item>")))
                lo = int(sub.get("minItems", 0))
                hi = sub.get("maxItems")
                alts.append(repeat(item, lo, int(hi) if hi is not None else None))
            elif t == "object":
                alts.append(self.object_node(kit, sub, prefix, raw, depth))
        return choice(*alts)

    def object_node(
        self, kit: Kit, sub: Mapping[str, Any], prefix: str, raw: Node, depth: int
    ) -> Node:
        """An object's declared members as child elements, any order, required ones present."""
        ns = kit.marker(NS)

        def member(key: str, value: Node) -> Node:
            return seq(ns, lit(f"<{key}>"), value, ns, lit(f"</{key}>"))

        def value(s: Any, p: str) -> Node:
            return self.value_node(kit, s, p, raw, _deeper(depth))

        return kit.params(sub, prefix, member, raw, value=value)

    def turn_grammar(
        self,
        spec: FormatSpec,
        kit: Kit,
        calls: Sequence[Node],
        mode: str,
        *,
        parallel: bool,
        reasoning: bool,
    ) -> Node | None:
        """The reply opens with the reasoning channel or its bare close, then follows
        ``tool_choice``::

            turn  ::= head (prose | prose [block])  none | auto
                    | head ws block                 required
            head  ::= text </mm:think>                        the prompt opened the channel
                    | [<mm:think> text </mm:think> | </mm:think>]
            block ::= NS<tool_call> [\n] call+ NS</tool_call> ws      (one call: parallel off)

        ``prose`` holds neither the block's open nor ``</mm:think>`` and does not start with
        ``<mm:think>``; without ``reasoning`` only the bare close may open the reply."""
        m = kit.marker
        text = kit.text_without((THINK_END,))
        if kit.reasoning_open:
            head: Node = seq(text, m(THINK_END))
        elif reasoning:
            head = opt(choice(seq(m(THINK_OPEN), text, m(THINK_END)), m(THINK_END)))
        else:
            head = opt(m(THINK_END))
        prose = _prose(spec, kit)
        ws = kit.ws(spec.layout.max_trailing_ws)
        if mode == "none":
            return seq(head, prose)
        call = kit.add("call", choice(*calls))
        more = star(call) if parallel else EMPTY
        b = spec.block
        block = kit.add("calls", seq(m(b.open), opt(lit("\n")), call, more, m(b.close), ws))
        if mode == "required":
            return seq(head, ws, block)
        return seq(head, prose, opt(block))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        body = "".join(f'{NS}<invoke name="{n}">{to_xml(a)}{NS}</invoke>\n' for n, a in calls)
        return f"{spec.block.open}\n{body}{spec.block.close}"


def _prose(spec: FormatSpec, kit: Kit) -> Node:
    anything = Dfa.any_string()
    dfa = anything
    for t in spec.parse_triggers():
        dfa = dfa.intersect(anything.concat(Dfa.literal(t)).concat(anything).complement())
    ws = Dfa.literals([" ", "\t", "\r", "\n"]).star()
    dfa = dfa.intersect(ws.concat(Dfa.literal(THINK_OPEN)).concat(anything).complement())
    entry, rules = dfa_to_rules(dfa, "prose", encoding="raw")
    for r in rules:
        kit.add(r.name, r.body)
    return entry


def _with_defs(sub: Any, parent: Mapping[str, Any]) -> Any:
    if not isinstance(sub, Mapping):
        return sub
    out = dict(sub)
    for k in ("$defs", "definitions"):
        if k in parent and k not in out:
            out[k] = parent[k]
    return out


def _deref(sub: Mapping[str, Any]) -> Any:
    """The local definition a ``$ref`` names (``#/$defs/X`` or ``#/definitions/X``)."""
    ref = sub["$ref"]
    m = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", ref) if isinstance(ref, str) else None
    target = (sub.get(m.group(1)) or {}).get(m.group(2)) if m else None
    if not isinstance(target, Mapping):
        raise SchemaError(
            f"MiniMax-M3's XML values follow local $refs only, not {ref!r}",
            pointer="",
            keyword="$ref",
        )
    return _with_defs(target, sub)


def _deeper(depth: int) -> int:
    if depth >= _MAX_REF_DEPTH:
        raise SchemaError(
            "a schema this deep (or recursive) cannot be written as MiniMax-M3's XML elements",
            pointer="",
        )
    return depth + 1


SPEC = FormatSpec(
    "minimax_m3",
    _Elements(),
    #: a bare ``</mm:think>`` (no reasoning) is read as an empty block
    BlockMarkers(
        NS + "<tool_call>", NS + "</tool_call>", after_open="\n", extra_triggers=(THINK_END,)
    ),
    reasoning=Reasoning(THINK_OPEN, THINK_END),
    template_markers=(
        "]~!b[",
        "]~b]",
        "[e~[",
        NS,
        "]<]image[>[",
        "]<]video[>[",
        THINK_OPEN,
        THINK_END,
        "<response>",
        "</response>",
    ),
    prompt=Prompt(example_name="tool-name", example_args=(("k", "v"),)),
)
