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
are JSON). The reader is structural: a tag ends a value only where the next tag follows it, so
``</parameter>`` or ``</tool_call>`` inside a value stays text. A ``<function=...>`` written
without ``<tool_call>`` and a missing ``</parameter>`` are read too (both seen in the wild).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, lit, seq
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
#: where a value may end: its close tag, or (close tag missing) the next tag on a new line
_VALUE_END = re.compile(r"</parameter>|\n(?=<parameter=|</function>)")
_NEXT = ("<parameter=", "</function>")


def _value(raw: str) -> str:
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    return raw


def _followed_by(text: str, i: int, words: Sequence[str], final: bool) -> bool | None:
    """Whether ``text[i:]`` is whitespace then one of ``words``; None when the text ends
    before that is known (and ``final`` is false)."""
    j = skip_ws(text, i)
    rest = text[j:]
    if any(rest.startswith(w) for w in words):
        return True
    if not final and (j >= len(text) or any(w.startswith(rest) for w in words)):
        return None
    return False


def read_functions(
    text: str, pos: int, close: str, final: bool, schemas: Mapping[str, Any] | None
) -> tuple[list[Any], int] | Block:
    """The ``<function=...>`` calls from ``text[pos]`` up to and including the block's
    ``close`` (optional at the very end: a bare ``<function=...>`` may end there), and the
    block's end; or the pending / bad :class:`Block`. Structural tags are told from the same
    text inside a value by what follows them: a value ends at ``</parameter>`` followed by
    ``<parameter=`` or ``</function>`` (whitespace between), a function at ``</function>``
    followed by ``close``, ``<function=`` or the end, as the templates write them."""
    calls = []
    n = len(text)

    def wait(reason: str) -> Block:
        return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

    while True:
        f = _FUNC.match(text, pos)
        if f is None:
            if _unfinished_tag(text[skip_ws(text, pos) :], "<function="):
                return wait("the reply ends before a function's name")
            return Block("bad", _end_of(text, pos, close), reason="expected <function=NAME>")
        name = f.group(1).strip()
        args: dict[str, Any] = {}
        p = f.end()
        while True:
            j = skip_ws(text, p)
            if text.startswith("</function>", j):
                p = j + len("</function>")
                break
            m = _PARAM.match(text, p)
            if m is None:
                if any(_unfinished_tag(text[j:], w) for w in _NEXT):
                    return wait("the reply ends inside a function")
                return Block("bad", _end_of(text, p, close), reason="expected <parameter=NAME>")
            key = m.group(1).strip()
            q = m.end()
            while True:  # the first value end that the structure confirms
                e = _VALUE_END.search(text, q)
                if e is None:
                    return wait("the reply ends inside a parameter value")
                if e.group() == "\n":  # no </parameter>: a tag on the next line ends the value
                    stop, after = e.start(), e.end()
                    break
                ok = _followed_by(text, e.end(), _NEXT, final)
                if ok is None:
                    return wait("the reply ends inside a parameter value")
                if ok:
                    stop, after = e.start(), e.end()
                    break
                q = e.end()
            args[key] = coerce_value(_value(text[m.end() : stop]), param_schema(schemas, name, key))
            p = after
        calls.append(done(name, args))
        j = skip_ws(text, p)
        if text.startswith(close, j):
            return calls, j + len(close)
        if text.startswith("<function=", j):
            pos = j
            continue
        if j >= n or (not final and close.startswith(text[j:])):
            if final:
                return calls, p  # a bare function at the end of the reply
            return Block("pending")
        return calls, p  # text after a bare function


def _unfinished_tag(rest: str, tag: str) -> bool:
    """``rest`` is the start of ``tag`` or of ``tag`` followed by a name and ``>``."""
    return tag.startswith(rest) or (rest.startswith(tag) and not re.search("[>\n]", rest))


def _end_of(text: str, pos: int, close: str) -> int:
    """Where a malformed block ends: after the next ``close``, else at the end of the text."""
    c = text.find(close, pos)
    return c + len(close) if c >= 0 else len(text)


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
    template_markers: ClassVar[tuple[str, ...]] = (
        *Hermes.template_markers, "<function=", "</function>", "<parameter=", "</parameter>",
    )  # fmt: skip

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        """``<tool_call>`` then ``<function=...>`` calls (or a bare ``<function=...>``), read
        structurally (:func:`read_functions`), so that marker text inside a value stays
        text."""
        pos = k + len(self.open) if text.startswith(self.open, k) else k
        got = read_functions(text, pos, self.close, final, schemas)
        if isinstance(got, Block):
            return got
        calls, end = got
        return Block("ok", end, calls)

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<function=NAME>\n`` then each parameter as ``<parameter=K>\nVALUE\n</parameter>\n``
        (strings raw, other types JSON; declared parameters in any order, required ones
        present), then ``</function>``."""
        # a value holds none of the tags that may end it (the reader looks at what follows
        # them); the block's close marker is text there (the block ends after </function>)
        raw = kit.text_without(("</parameter>", "<parameter=", "</function>"))

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
