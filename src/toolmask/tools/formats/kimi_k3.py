"""``kimi_k3``: Kimi K3: XTML control tokens, sections for reasoning, the response and the
tools, with reasoning::

    <|open|>tools<|sep|><|open|>call tool="calc" index="1"<|sep|>
    <|open|>argument key="x" type="number"<|sep|>1<|close|>argument<|sep|>
    <|close|>call<|sep|><|close|>tools<|sep|>

(without the line breaks). A string argument is raw text, any other JSON, its ``type`` the
value's JSON type (``number`` for integers); attribute values are entity-escaped.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import EMPTY, Node, byte_range, choice, lit, opt, repeat, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import (
    Block,
    closed_block,
    coerce_value,
    done,
    loads,
    param_schema,
    schema_types,
    skip_ws,
)
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Calls,
    CodecBase,
    FormatSpec,
    Layout,
    Reasoning,
    ToolLike,
)

__all__ = ["SPEC"]

_K3_TAG = re.compile(r"<\|(open|close)\|>([^<]*?)<\|sep\|>", re.S)
_K3_ATTR = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True, slots=True)
class _Xtml(CodecBase):
    """Kimi K3's XTML sections (see the module docstring)."""

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
        m = _K3_TAG.match(text, k)
        if m is None:
            if not final and "<|sep|>" not in text[k:]:
                return Block("pending")
            return Block("bad", k + len("<|open|>"), reason="expected <|open|>TAG<|sep|>")
        kind, head = m.group(1), m.group(2).strip()
        tag = head.split(None, 1)[0] if head else ""
        if kind == "close":  # the end of a section the prompt opened
            return Block("ok", m.end())
        closer = f"<|close|>{tag}<|sep|>"
        if tag != "tools" and final and text.find(closer, m.end()) < 0:  # cut off: keep it
            kind_of = "reasoning" if tag == "think" else "prose"
            body = text[m.end() :]
            return Block(
                "ok", len(text), text_kind=kind_of, text=body.strip() if tag == "think" else body
            )
        got = closed_block(text, k, m.end() - k, closer, final)
        if isinstance(got, Block):
            return got
        inner_end, end = got
        inner = text[m.end() : inner_end]
        if tag == "think":
            return Block("ok", end, text_kind="reasoning", text=inner.strip())
        if tag != "tools":
            return Block("ok", end, text_kind="prose", text=inner)
        calls = []
        pos = m.end()
        while text[pos:inner_end].strip():
            c = _K3_TAG.match(text, skip_ws(text, pos))
            if c is None or c.group(1) != "open" or not c.group(2).startswith("call"):
                return Block("bad", end, reason="expected <|open|>call ...<|sep|>")
            attrs = {a: html.unescape(v) for a, v in _K3_ATTR.findall(c.group(2))}
            name = attrs.get("tool", "")
            call_end = text.find("<|close|>call<|sep|>", c.end(), inner_end)
            if call_end < 0 or not name:
                return Block("bad", end, reason="a call without a tool name or its close tag")
            args: dict[str, Any] = {}
            p = c.end()
            while text[p:call_end].strip():
                a = _K3_TAG.match(text, skip_ws(text, p))
                if a is None or a.group(1) != "open" or not a.group(2).startswith("argument"):
                    return Block("bad", end, reason="expected <|open|>argument ...<|sep|>")
                at = {a: html.unescape(v) for a, v in _K3_ATTR.findall(a.group(2))}
                a_end = text.find("<|close|>argument<|sep|>", a.end(), call_end)
                if a_end < 0 or "key" not in at:
                    return Block("bad", end, reason="an argument without a key or close tag")
                raw = text[a.end() : a_end]
                typ = at.get("type")
                schema = {"type": typ} if typ else param_schema(schemas, name, at["key"])
                if typ in ("object", "array"):
                    value, err = loads(raw)
                    args[at["key"]] = raw if err is not None else value
                else:
                    args[at["key"]] = coerce_value(raw, schema)
                p = a_end + len("<|close|>argument<|sep|>")
            calls.append(done(name, args))
            pos = call_end + len("<|close|>call<|sep|>")
        if not calls:
            return Block("bad", end, reason="an empty tools section")
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``<|open|>call tool="NAME" index="N"<|sep|>`` then one ``<|open|>argument key="K"
        type="T"<|sep|>VALUE<|close|>argument<|sep|>`` per parameter (any order, required ones
        present; a string is raw text, other types JSON, ``T`` the value's JSON type with
        ``number`` for integers), then ``<|close|>call<|sep|>``."""
        m = kit.marker
        raw = _text(kit)

        def value(schema: Any, prefix: str) -> Node:
            return _typed_value(kit, schema, prefix, raw)

        def param(key: str, v: Node) -> Node:
            return seq(m("<|open|>"), lit(f'argument key="{_attr(key)}" type="'), v, _arg_end(m))

        def free() -> Node:
            key = kit.chars('"<>&\n')
            return seq(
                m("<|open|>"), lit('argument key="'), key, lit('" type="'),
                _typed_value(kit, {}, f"a{index}_any_", raw), _arg_end(m),
            )  # fmt: skip

        params = kit.params(tool.parameters, f"a{index}_", param, raw, free, value=value)
        head = seq(
            m("<|open|>"),
            lit(f'call tool="{_attr(tool.name)}" index="'),
            repeat(byte_range(0x30, 0x39), 1, 4),
            lit('"'),
            m("<|sep|>"),
        )
        return seq(head, params, m("<|close|>call<|sep|>"))

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
        """XTML sections::

            turn   ::= [think] response tail                 reasoning (the prompt opened it:
                     | text <|close|>response<|sep|> tail     think required, without its open)
            think  ::= <|open|>think<|sep|> text <|close|>think<|sep|>
            response ::= <|open|>response<|sep|> text <|close|>response<|sep|>   (text empty
                                                                               under required)
            tail   ::= [tools] [<|close|>message<|sep|>] ws   (tools required under required,
            tools  ::= <|open|>tools<|sep|> call+ <|close|>tools<|sep|>      absent under none)

        The second shape is a prompt that ended with ``<|open|>response<|sep|>`` (thinking
        disabled). ``text`` holds no ``<|open|>`` / ``<|close|>`` (where the reader sees tags)."""
        m = kit.marker
        text = _text(kit)
        prose = EMPTY if mode == "required" else text
        end = seq(opt(m("<|close|>message<|sep|>")), kit.ws(spec.layout.max_trailing_ws))
        if mode == "none":
            tail: Node = end
        else:
            call = kit.add("call", choice(*calls))
            body = seq(call, star(call)) if parallel else call
            tools = kit.add("tools", seq(m(spec.block.open), body, m(spec.block.close)))
            tail = seq(tools if mode == "required" else opt(tools), end)
        closed = seq(prose, m("<|close|>response<|sep|>"), tail)
        response = seq(m("<|open|>response<|sep|>"), closed)
        think = seq(text, m(spec.reasoning.end))
        if kit.reasoning_open:
            return seq(think, response)
        lead = opt(seq(m(spec.reasoning.start), think)) if reasoning else EMPTY
        return choice(closed, seq(lead, response))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        out = [spec.block.open]
        for i, (name, arguments) in enumerate(calls, 1):
            out.append(f'<|open|>call tool="{name}" index="{i}"<|sep|>')
            for key, v in (arguments if isinstance(arguments, dict) else {}).items():
                typ = _type_name(v)
                val = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                out.append(f'<|open|>argument key="{_attr(key)}" type="{typ}"<|sep|>{val}')
                out.append("<|close|>argument<|sep|>")
            out.append("<|close|>call<|sep|>")
        return "".join(out) + spec.block.close


def _attr(text: str) -> str:
    """An XTML attribute value: ``&``, ``<``, ``>`` and ``"`` as entities."""
    return html.escape(text, quote=False).replace('"', "&quot;")


def _arg_end(m: Callable[[str], Node]) -> Node:
    return m("<|close|>argument<|sep|>")


def _text(kit: Kit) -> Node:
    return kit.text_without(("<|open|>", "<|close|>"))


#: the ``type`` attribute Kimi K3 writes for a value of each JSON type
_TYPE_ATTR = {"integer": "number", "number": "number", "string": "string", "boolean": "boolean",
              "null": "null", "array": "array", "object": "object"}  # fmt: skip


def _typed_value(kit: Kit, schema: Any, prefix: str, raw: Node) -> Node:
    """``T"<|sep|>VALUE`` for each JSON type the schema admits: a string raw (its enum /
    const values literally), any other type JSON (json.dumps spacing) for the schema narrowed
    to that type."""
    types = schema_types(schema) or set(_TYPE_ATTR)
    if "number" in types:
        types.discard("integer")
    sep = kit.marker("<|sep|>")
    alts: list[Node] = []
    for j, t in enumerate(sorted(types)):
        if t not in _TYPE_ATTR:
            continue
        if t == "string":
            node = raw
            if isinstance(schema, Mapping) and ("enum" in schema or "const" in schema):
                values = [schema["const"]] if "const" in schema else list(schema["enum"])
                words = [v for v in values if isinstance(v, str)]
                if not words:
                    continue
                node = choice(*(lit(v) for v in words))
        elif schema_types(schema) in ({t}, {"integer", "number"}):  # already that type alone
            node = kit.json(schema, f"{prefix}{j}_")
        else:
            try:
                node = kit.json(_narrow(schema, t), f"{prefix}{j}_")
            except (SchemaError, LimitError) as e:  # point into the schema, not the wrapper
                if e.pointer is not None:
                    e.pointer = e.pointer.removeprefix("/allOf/0")
                raise
        alts.append(seq(lit(_TYPE_ATTR[t] + '"'), sep, node))
    return choice(*alts)


def _narrow(schema: Any, t: str) -> dict[str, Any]:
    """``schema`` and ``{"type": t}`` (its ``$defs`` kept at the top)."""
    if not isinstance(schema, Mapping) or not schema:
        return {"type": t}
    out: dict[str, Any] = {
        "type": t,
        "allOf": [{k: v for k, v in schema.items() if k not in ("$defs", "definitions")}],
    }
    for k in ("$defs", "definitions"):
        if k in schema:
            out[k] = schema[k]
    return out


def _type_name(v: object) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    return "array" if isinstance(v, list) else "object"


SPEC = FormatSpec(
    "kimi_k3",
    _Xtml(),
    BlockMarkers(
        "<|open|>tools<|sep|>", "<|close|>tools<|sep|>", extra_triggers=("<|open|>", "<|close|>")
    ),
    Layout(block_sep=""),
    Reasoning(
        "<|open|>think<|sep|>",
        "<|close|>think<|sep|>",
        skips=("<|open|>response<|sep|>", "<|open|>tools<|sep|>"),
    ),
    template_markers=("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"),
)
