"""``qwen3_xml``: Qwen3-Coder, Qwen3.5 / 3.6 / 3.8: XML parameters inside ``<tool_call>``, with a
``<think>`` channel (prefilled by the 3.5+ templates)::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Values are raw text; the parser types them with the tool's schema (strings stay text, other types
are JSON). A ``<function=...>`` written without ``<tool_call>`` and a missing ``</parameter>``
are read too (both seen in the wild).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolmask.grammar._ir import Node, lit, seq
from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    coerce_value,
    done,
    param_schema,
    skip_ws,
    tools_prompt,
)
from toolmask.tools.formats.hermes import Hermes

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Qwen3Xml"]

_FUNC = re.compile(r"\s*<function=([^>\n]+)>", re.S)
_PARAM = re.compile(r"\s*<parameter=([^>\n]+)>", re.S)
_PARAM_END = re.compile(r"</parameter>|(?=<parameter=)|(?=</function>)")


def _value(raw: str) -> str:
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    return raw


def read_functions(
    text: str, pos: int, end: int, schemas: Mapping[str, Any] | None
) -> list[Any] | str:
    """The ``<function=...>`` calls in ``text[pos:end]``, or the reason they are malformed."""
    calls = []
    while text[pos:end].strip():
        f = _FUNC.match(text, pos, end)
        if f is None:
            return "expected <function=NAME>"
        name = f.group(1).strip()
        f_end = text.find("</function>", f.end(), end)
        if f_end < 0:
            return "a function without </function>"
        args: dict[str, Any] = {}
        p = f.end()
        while text[p:f_end].strip():
            m = _PARAM.match(text, p, f_end)
            if m is None:
                return "expected <parameter=NAME>"
            key = m.group(1).strip()
            e = _PARAM_END.search(text, m.end(), f_end)
            stop = e.start() if e is not None else f_end
            raw = _value(text[m.end() : stop])
            if e is None or not e.group():  # no </parameter>: the text up to the next tag
                raw = raw.rstrip("\n")
            args[key] = coerce_value(raw, param_schema(schemas, name, key))
            p = e.end() if e is not None else f_end
        calls.append(done(name, args))
        pos = f_end + len("</function>")
    return calls


@register_format("qwen3_xml")
class Qwen3Xml(WireFormat):
    open = "<tool_call>"
    close = "</tool_call>"
    after_open = "\n"
    before_close = "\n"
    extra_triggers = ("<function=",)
    block_sep = "\n"
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (*Hermes.template_markers, "<function=", "</function>", "<parameter=",
                        "</parameter>")  # fmt: skip

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        if text.startswith(self.open, k):
            return super().read_block(text, k, final=final, bare=bare, schemas=schemas)
        # <function=...> without <tool_call>
        f = text.find("</function>", k)
        if f < 0:
            if final:
                return Block("bad", len(text), reason="truncated: no </function>")
            return Block("pending")
        end = f + len("</function>")
        j = skip_ws(text, end)
        if text.startswith(self.close, j):
            end = j + len(self.close)
        elif not final and self.close.startswith(text[j:]):
            return Block("pending")
        return self.read_inner(text, k, f + len("</function>"), end, schemas)

    def read_inner(
        self, text: str, start: int, inner_end: int, end: int, schemas: Mapping[str, Any] | None
    ) -> Block:
        calls = read_functions(text, start, inner_end, schemas)
        if isinstance(calls, str):
            return Block("bad", end, reason=calls)
        if not calls:
            return Block("bad", end, reason="an empty <tool_call>")
        return Block("ok", end, calls)

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<function=NAME>\n`` then each parameter as ``<parameter=K>\nVALUE\n</parameter>\n``
        (strings raw, other types JSON; declared parameters in any order, required ones
        present), then ``</function>``."""
        # the reader ends a value at these, and the block at its close marker
        raw = kit.text_without(("</parameter>", "<parameter=", "</function>", self.close))

        def param(key: str, value: Node) -> Node:
            return seq(lit(f"<parameter={key}>\n"), value, lit("\n</parameter>\n"))

        def free() -> Node:
            return param_any(kit.chars(">\n"), raw)

        def param_any(key: Node, value: Node) -> Node:
            return seq(lit("<parameter="), key, lit(">\n"), value, lit("\n</parameter>\n"))

        params = kit.params(tool.parameters, f"a{index}_", param, raw, free)
        return seq(lit(f"<function={tool.name}>\n"), params, lit("</function>"))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        out = []
        for name, arguments in calls:
            params = "".join(
                f"<parameter={k}>\n{v if isinstance(v, str) else self.dump_arguments(v)}\n"
                "</parameter>\n"
                for k, v in (arguments if isinstance(arguments, dict) else {}).items()
            )
            out.append(f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>")
        return "\n".join(out)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(
            tool_json_lines(tools),
            "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n"
            "value_1\n</parameter>\n</function>\n</tool_call>",
        )
