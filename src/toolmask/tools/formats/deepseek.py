"""DeepSeek: ``deepseek_v3`` (V3 / R1), ``deepseek_v31`` (V3.1) and ``deepseek_dsml`` (V3.2, V4,
V4.1 "DSML" markup), with ``<think>`` reasoning::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
    ```json
    {"city": "Tokyo"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>                                  (V3)
    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...  (V3.1)
    <｜DSML｜function_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>                                                   (V3.2; V4
    writes ``tool_calls``, V4.1 ``<｜DSML｜ calls>``)

The readers accept every sub-format; the name decides how calls are rendered.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask._pointer import json_pointer
from toolmask.grammar import EMPTY, Node, choice, lit, opt, seq
from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    coerce_value,
    done,
    loads,
    param_schema,
    regex_calls,
    schema_types,
    tools_prompt,
)

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["DeepSeekDsml", "DeepSeekV3", "DeepSeekV4", "DeepSeekV31", "DeepSeekV41"]

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
_MARKERS = (
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<｜User｜>",
    "<｜Assistant｜>",
    CALLS_BEGIN,
    CALLS_END,
    CALL_BEGIN,
    CALL_END,
    SEP,
    "<｜tool▁outputs▁begin｜>",
    "<｜tool▁outputs▁end｜>",
    "<｜tool▁output▁begin｜>",
    "<｜tool▁output▁end｜>",
    "<think>",
    "</think>",
)
_CALL = re.compile(
    re.escape(CALL_BEGIN)
    + r"\s*(?:function\s*"
    + re.escape(SEP)
    + r")?\s*([^\s<`{]+)\s*(?:"
    + re.escape(SEP)
    + r"|```(?:json)?)\s*(.*?)\s*(?:```)?\s*"
    + re.escape(CALL_END)
    + r"\s*",
    re.S,
)


class _DeepSeek(WireFormat):
    open = CALLS_BEGIN
    close = CALLS_END
    #: whitespace templates write around the markers: a newline between calls (R1's template)
    #: and before the calls' end, and vLLM's DeepSeek templates (no whitespace control) indent
    #: them: up to 20 spaces before the block, 17 bytes between calls, 8 before its end
    before_close = "\n"
    max_inner_ws = 24
    block_sep = ""
    list_calls = True
    extra_layouts = ("compact",)
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = _MARKERS

    def read_inner(
        self, text: str, start: int, inner_end: int, end: int, schemas: Mapping[str, Any] | None
    ) -> Block:
        calls = regex_calls(_CALL, text, start, inner_end, end)
        if isinstance(calls, Block):
            return calls
        if not calls:
            return Block("bad", end, reason="an empty block of calls")
        return Block("ok", end, calls)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("{name}", {"{arg}": "..."}))


@register_format("deepseek_v3")
class DeepSeekV3(_DeepSeek):
    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<call begin>function<sep>NAME\n```json\n{...}\n```<call end>``."""
        return seq(
            kit.marker(CALL_BEGIN), lit("function"), kit.marker(SEP),
            lit(f"{tool.name}\n```json\n"), kit.json(tool.parameters, f"a{index}_"),
            lit("\n```"), kit.marker(CALL_END),
        )  # fmt: skip

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        body = "".join(
            f"{CALL_BEGIN}function{SEP}{n}\n```json\n{self.dump_arguments(a)}\n```{CALL_END}"
            for n, a in calls
        )
        return CALLS_BEGIN + body + CALLS_END


@register_format("deepseek_v31")
class DeepSeekV31(_DeepSeek):
    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<call begin>NAME<sep>{...}<call end>``."""
        return seq(
            kit.marker(CALL_BEGIN), lit(tool.name), kit.marker(SEP),
            kit.json(tool.parameters, f"a{index}_"), kit.marker(CALL_END),
        )  # fmt: skip

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        body = "".join(f"{CALL_BEGIN}{n}{SEP}{self.dump_arguments(a)}{CALL_END}" for n, a in calls)
        return CALLS_BEGIN + body + CALLS_END


DSML = "｜DSML｜"


@dataclass(frozen=True, slots=True)
class _Markup:
    """The regexes that read DSML-style markup whose tags carry ``mark`` (DeepSeek's
    ``｜DSML｜``, GigaChat 3.5's ``｜GCML｜``), any whitespace after it."""

    mark: str
    block_open: re.Pattern[str]
    invoke: re.Pattern[str]
    invoke_end: re.Pattern[str]
    param: re.Pattern[str]

    def block_close(self, tag: str) -> re.Pattern[str]:
        return re.compile(rf"</{re.escape(self.mark)}\s*{tag}\s*>")


@functools.cache
def _markup(mark: str) -> _Markup:
    """The readers of the markup tagged ``mark``, compiled once per mark."""
    m = re.escape(mark)
    return _Markup(
        mark,
        re.compile(rf"<{m}\s*(function_calls|tool_calls|calls)\s*>"),
        re.compile(rf'\s*<{m}\s*invoke\s+name="([^"]*)"\s*(/?)>', re.S),
        re.compile(rf"\s*</{m}\s*invoke\s*>", re.S),
        re.compile(
            rf'\s*<{m}\s*parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>(.*?)'
            rf"</{m}\s*parameter\s*>",
            re.S,
        ),
    )


@register_format("deepseek_dsml")
class DeepSeekDsml(WireFormat):
    """DeepSeek V3.2 (``function_calls``); :class:`DeepSeekV4` and :class:`DeepSeekV41` differ
    in the block's tag and the space after ``｜DSML｜`` only (the reader takes all three).
    Subclasses with another ``mark`` write the same markup under another tag name
    (GigaChat 3.5's ``｜GCML｜``); ``open``, ``close``, ``extra_triggers`` and
    ``template_markers`` then spell it too."""

    #: what every tag starts with after ``<`` or ``</``
    mark: ClassVar[str] = DSML
    #: the block's tag and what follows the mark in every tag
    tag: ClassVar[str] = "function_calls"
    space: ClassVar[str] = ""
    open = "<｜DSML｜function_calls>"
    close = "</｜DSML｜function_calls>"
    after_open = "\n"
    before_close = ""
    extra_triggers = ("<｜DSML｜",)
    block_sep = ""
    list_calls = True
    separator_text = ""
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers: ClassVar[tuple[str, ...]] = (*_MARKERS, "<｜DSML｜", "</｜DSML｜")

    @property
    def _what(self) -> str:
        """The markup's name in messages (``DSML``)."""
        return self.mark.strip("｜ ")

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        mk = _markup(self.mark)
        m = mk.block_open.match(text, k)
        if m is None and final and mk.invoke.match(text, k) and not mk.invoke_end.search(text, k):
            # the rest of a block cut off (see below): an unfinished invoke
            return Block("bad", len(text), reason="truncated: the reply ends inside an invoke")
        if m is None:
            head = text[k : k + 40]
            if not final and ">" not in head:
                return Block("pending")
            want = f"<{self.mark}{self.space}{self.tag}>"
            return Block("bad", k + len(self.mark) + 1, reason=f"expected {want}")
        c = mk.block_close(m.group(1)).search(text, m.end())
        if c is None and not final:
            return Block("pending")
        if c is None:  # cut off: its complete invokes are kept, the unfinished one follows
            ends = list(mk.invoke_end.finditer(text, m.end()))
            if not ends:
                return Block("bad", len(text), reason=f"truncated: no closing {self._what} tag")
            last = ends[-1]
            closed = f"{text[: last.end()]}</{self.mark}{m.group(1)}>"
            got = self.read_block(closed, k, final=True, schemas=schemas)
            if got is None or got.status != "ok":
                return Block("bad", len(text), reason=f"truncated: no closing {self._what} tag")
            return Block("ok", last.end(), got.calls)
        end = c.end()
        pos, inner_end = m.end(), c.start()
        calls = []
        while text[pos:inner_end].strip():
            inv = mk.invoke.match(text, pos, inner_end)
            if inv is None:
                return Block("bad", end, reason=f"expected <{self.mark}invoke name=...>")
            name = inv.group(1)
            pos = inv.end()
            args: dict[str, Any] = {}
            if not inv.group(2):
                while True:
                    e = mk.invoke_end.match(text, pos, inner_end)
                    if e is not None:
                        pos = e.end()
                        break
                    p = mk.param.match(text, pos, inner_end)
                    if p is None:
                        return Block("bad", end, reason=f"expected a {self._what} parameter")
                    key, is_str, raw = p.group(1), p.group(2), p.group(3)
                    if is_str == "true":
                        args[key] = raw
                    elif is_str == "false":
                        value, err = loads(raw)
                        args[key] = raw if err is not None else value
                    else:
                        args[key] = coerce_value(raw, param_schema(schemas, name, key))
                    pos = p.end()
            calls.append(done(name, args))
        if not calls:
            return Block("bad", end, reason="an empty block of calls")
        return Block("ok", end, calls)

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<｜DSML｜invoke name="NAME">\n`` then one line per parameter, ``string="true"`` and
        the raw text for strings, ``string="false"`` and JSON otherwise (declared parameters
        in any order, required ones present), then ``</｜DSML｜invoke>\n``."""
        d = self.mark + self.space
        end = f"</{d}parameter>"
        raw = kit.text_without((end, f"</{d}{self.tag}>"))  # where the reader ends
        props = tool.parameters.get("properties")
        props = props if isinstance(props, Mapping) else {}

        def param(key: str, value: Node) -> Node:
            return seq(lit(f'<{d}parameter name="{key}" string="'), value, lit(f"{end}\n"))

        def value_for(key: str) -> Node:
            schema = props.get(key)
            types = schema_types(schema)
            alts: list[Node] = []
            if not types or "string" in types:
                alts.append(seq(lit('true">'), raw))
            if types - {"string"} or not types:
                from toolmask.tools.formats._gen import with_defs

                j = list(props).index(key)
                sub = with_defs(schema, tool.parameters)
                at = json_pointer(("properties", key))
                alts.append(seq(lit('false">'), kit.json(sub, f"a{index}_j{j}_", at=at)))
            return choice(*alts)

        def free() -> Node:
            key = kit.text_without(('"',), nonempty=True)
            return seq(lit(f'<{d}parameter name="'), key, lit('" string="true">'), raw,
                       lit(f"{end}\n"))  # fmt: skip

        params = kit.params(
            {**tool.parameters, "properties": {k: {} for k in props}},
            f"a{index}_",
            lambda k, _v: param(k, value_for(k)),
            EMPTY,
            free,
        )
        full = seq(
            lit(f'<{d}invoke name="{tool.name}">\n'), opt(lit("\n")), params,
            lit(f"</{d}invoke>\n"),
        )  # fmt: skip
        if tool.parameters.get("required"):
            return full
        return choice(full, lit(f'<{d}invoke name="{tool.name}"/>\n'))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        d = self.mark + self.space
        out = [f"<{d}{self.tag}>\n"]
        for name, arguments in calls:
            out.append(f'<{d}invoke name="{name}">\n')
            for key, v in (arguments if isinstance(arguments, dict) else {}).items():
                s = "true" if isinstance(v, str) else "false"
                val = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                out.append(f'<{d}parameter name="{key}" string="{s}">{val}</{d}parameter>\n')
            out.append(f"</{d}invoke>\n")
        return "".join(out) + f"</{d}{self.tag}>"

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("{name}", {"{arg}": "..."}))


@register_format("deepseek_v4")
class DeepSeekV4(DeepSeekDsml):
    """DeepSeek V4: ``<｜DSML｜tool_calls>``."""

    tag = "tool_calls"
    open = "<｜DSML｜tool_calls>"
    close = "</｜DSML｜tool_calls>"


@register_format("deepseek_v41")
class DeepSeekV41(DeepSeekDsml):
    """DeepSeek V4.1: ``<｜DSML｜ calls>``, a space after ``｜DSML｜`` in every tag."""

    tag = "calls"
    space = " "
    open = "<｜DSML｜ calls>"
    close = "</｜DSML｜ calls>"
