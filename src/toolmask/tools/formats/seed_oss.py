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
spellings of non-string values, typed by the parameter's schema; the reader is Qwen3-Coder's
(:func:`~toolmask.tools.formats._xml.read_functions`: it strips one newline at either end of a
value, so the grammar's raw strings neither start nor end with one). One call per block, blocks
on their own lines.
"""

from __future__ import annotations

from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Prompt, Reasoning
from toolmask.tools.formats._xml import FunctionParams

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "seed_oss",
    FunctionParams(tight=True, python=True),
    BlockMarkers(
        "<seed:tool_call>",
        "</seed:tool_call>",
        after_open="\n",
        before_close="\n",
        extra_triggers=("<function=",),
    ),
    reasoning=Reasoning("<seed:think>", "</seed:think>"),
    template_markers=(
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
    ),
    prompt=Prompt(
        how="<seed:tool_call>\n<function=example_function_name>\n"
        "<parameter=example_parameter_1>value_1</parameter>\n</function>\n</seed:tool_call>"
    ),
)
