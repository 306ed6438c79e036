"""``seed_oss``: ByteDance Seed-OSS: Qwen3-Coder's ``<function=...>`` / ``<parameter=...>`` calls
inside ``<seed:tool_call>``, values written tight against their tags, reasoning in
``<seed:think>``::

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    <parameter=days>3</parameter>
    </function>
    </seed:tool_call>

The template writes a string value raw and any other value with Jinja's ``string`` filter, i.e.
Python's ``str``: ``True``, ``['a', 'b']``, ``{'k': 1}``; models write JSON there as well (vLLM's
Seed-OSS parser reads objects as JSON first, then as Python literals). The grammar admits both
spellings of non-string values, typed by the parameter's schema; the reader is
:func:`~toolmask.tools.formats.qwen3_xml.read_functions` (it strips one newline at either end of
a value, so the grammar's raw strings neither start nor end with one). One call per block,
blocks on their own lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, choice, lit, seq
from toolmask.tools.formats._base import register_format, tool_json_lines
from toolmask.tools.formats._blocks import python_str, schema_types, tools_prompt
from toolmask.tools.formats.qwen3_xml import Qwen3Xml

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["SeedOss", "json_or_python"]


def json_or_python(kit: Kit, sub: Any, prefix: str, raw: Node) -> Node:
    """A parameter value written raw (strings: ``raw``) or, for other types, as JSON or as a
    Python literal (what Jinja's ``string`` filter writes for lists, dicts and booleans)."""
    types = schema_types(sub)
    node = kit.raw_value(sub, sub, prefix, raw)
    if not types or "string" in types or not types & {"array", "object", "null"}:
        return node
    return choice(node, kit.json(sub, f"{prefix}py_", "python"))


@register_format("seed_oss")
class SeedOss(Qwen3Xml):
    open = "<seed:tool_call>"
    close = "</seed:tool_call>"
    reasoning_start = "<seed:think>"
    reasoning_end = "</seed:think>"
    template_markers: ClassVar[tuple[str, ...]] = (
        "<seed:bos>",
        "<seed:eos>",
        "<seed:pad>",
        "<seed:tool_call>",
        "</seed:tool_call>",
        "<seed:think>",
        "</seed:think>",
        "<seed:cot_budget_reflect>",
        "</seed:cot_budget_reflect>",
        "<function=",
        "</function>",
        "<parameter=",
        "</parameter>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<function=NAME>\\n`` then one ``<parameter=K>VALUE</parameter>\\n`` per parameter
        (strings raw, other types JSON or Python literals; declared parameters in any order,
        required ones present), then ``</function>``."""
        raw = kit.text_without(("</parameter>", "<parameter=", "</function>"), edges="\n")

        def param(key: str, value: Node) -> Node:
            return seq(lit(f"<parameter={key}>"), value, lit("</parameter>\n"))

        def free() -> Node:
            return seq(lit("<parameter="), kit.chars(">\n"), lit(">"), raw, lit("</parameter>\n"))

        params = kit.params(
            tool.parameters, f"a{index}_", param, raw, free,
            value=lambda sub, prefix: json_or_python(kit, sub, prefix, raw),
        )  # fmt: skip
        return seq(lit(f"<function={tool.name}>\n"), params, lit("</function>"))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        """As the template writes them (non-string values through Python's ``str``)."""
        out = []
        for name, arguments in calls:
            params = "".join(
                f"<parameter={k}>{python_str(v)}</parameter>\n"
                for k, v in (arguments if isinstance(arguments, dict) else {}).items()
            )
            out.append(f"{self.open}\n<function={name}>\n{params}</function>\n{self.close}")
        return "\n".join(out)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(
            tool_json_lines(tools),
            "<seed:tool_call>\n<function=example_function_name>\n"
            "<parameter=example_parameter_1>value_1</parameter>\n</function>\n</seed:tool_call>",
        )
