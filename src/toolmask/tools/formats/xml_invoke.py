"""XML calls that name the function and each parameter in an attribute: ``minimax_m2``
(MiniMax-M2 / M2.1) and ``minicpm5`` (MiniCPM 5)::

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </minimax:tool_call>                                                     (minimax_m2)

    <function name="get_weather"><param name="city">Paris</param></function>   (minicpm5)

The families differ in a small table (:class:`InvokeXml`'s class attributes): the tags, the
newlines the template writes after them, whether every call of a turn sits in one block, and how
values are written. MiniMax-M2 writes a string raw and other values as JSON (``tojson``);
MiniCPM 5 writes non-string values with Jinja's ``string`` filter (Python's ``str``: ``True``,
``['a']``) and wraps a string holding ``<``, ``&`` or a newline in ``<![CDATA[...]]>``. The
reader is structural: a value ends at the parameter's close tag that is followed by the next
parameter or the invoke's close tag (a CDATA section first runs to its ``]]>``), so tag text
inside a value stays text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, choice, lit, seq
from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    Call,
    coerce_value,
    done,
    param_schema,
    python_str,
    schema_types,
    skip_ws,
    tools_prompt,
)
from toolmask.tools.formats.seed_oss import json_or_python

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["InvokeXml", "MiniCpm5", "MiniMaxM2", "read_invokes"]

CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"


def read_invokes(
    text: str,
    pos: int,
    *,
    invoke: str,
    param: str,
    close: str,
    cdata: bool,
    final: bool,
    schemas: Mapping[str, Any] | None,
    bad_end: str,
) -> tuple[list[Call], int] | Block:
    """The ``<INVOKE name="N">`` calls from ``text[pos]`` up to and including ``close`` (``""``:
    exactly one call, the block ends after its ``</INVOKE>``), and the block's end; or the
    pending / bad :class:`Block` (a bad one extends to the next ``bad_end``)."""
    n = len(text)
    head = re.compile(rf'<{re.escape(invoke)}\s+name="([^"<>\n]*)"\s*>')
    phead = re.compile(rf'<{re.escape(param)}\s+name="([^"<>\n]*)"\s*>')
    inv_end, p_end, p_start = f"</{invoke}>", f"</{param}>", f"<{param} name="
    calls: list[Call] = []

    def wait(reason: str) -> Block:
        return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

    def bad(reason: str, at: int) -> Block:
        c = text.find(bad_end, at) if bad_end else -1
        return Block("bad", c + len(bad_end) if c >= 0 else n, reason=reason)

    def unfinished(rest: str, *words: str) -> bool:
        return any(w.startswith(rest) or (rest.startswith(w) and ">" not in rest) for w in words)

    while True:
        j = skip_ws(text, pos)
        if close and text.startswith(close, j):
            if not calls:
                return Block("bad", j + len(close), reason="an empty block of calls")
            return calls, j + len(close)
        m = head.match(text, j)
        if m is None:
            if unfinished(text[j:], f"<{invoke} name=", *((close,) if close else ())):
                return wait("the reply ends before a call's name")
            return bad(f'expected <{invoke} name="...">', j)
        name = m.group(1)
        args: dict[str, Any] = {}
        p = m.end()
        while True:
            j = skip_ws(text, p)
            if text.startswith(inv_end, j):
                p = j + len(inv_end)
                break
            pm = phead.match(text, j)
            if pm is None:
                if unfinished(text[j:], p_start, inv_end):
                    return wait("the reply ends inside a call")
                return bad(f'expected <{param} name="..."> or {inv_end}', j)
            key = pm.group(1)
            q = start = pm.end()
            if cdata and text.startswith(CDATA_OPEN, start):
                c = text.find(CDATA_CLOSE, start + len(CDATA_OPEN))
                if c < 0:
                    return wait("the reply ends inside a CDATA section")
                q = c + len(CDATA_CLOSE)
            elif cdata and not final and n - start < 9 and CDATA_OPEN.startswith(text[start:]):
                return Block("pending")
            while True:  # the first close tag the structure confirms
                e = text.find(p_end, q)
                if e < 0:
                    return wait("the reply ends inside a value")
                t = skip_ws(text, e + len(p_end))
                rest = text[t:]
                if rest.startswith(p_start) or rest.startswith(inv_end):
                    break
                if not final and (p_start.startswith(rest) or inv_end.startswith(rest)):
                    return Block("pending")
                q = e + len(p_end)
            raw = text[start:e]
            schema = param_schema(schemas, name, key)
            if cdata and raw.startswith(CDATA_OPEN) and raw.endswith(CDATA_CLOSE):
                inner = raw[len(CDATA_OPEN) : -len(CDATA_CLOSE)]  # a string, typed or not
                strings = schema_types(schema) <= {"string"}
                args[key] = inner if strings else coerce_value(inner, schema)
            else:
                args[key] = coerce_value(raw, schema)
            p = e + len(p_end)
        calls.append(done(name, args))
        if not close:
            return calls, p
        pos = p


class InvokeXml(WireFormat):
    """The table of one family (see the module docstring)."""

    #: the call and parameter tag names
    invoke: ClassVar[str] = "invoke"
    param: ClassVar[str] = "parameter"
    #: what follows ``<invoke name="N">``, a parameter's close tag and ``</invoke>``
    nl: ClassVar[str] = "\n"
    #: non-string values: ``"json"`` (``tojson``) or ``"python"`` (Jinja's ``string``, Python's
    #: ``str``; JSON admitted too)
    values: ClassVar[str] = "json"
    #: strings holding ``<``, ``&`` or a newline are wrapped in CDATA (MiniCPM 5)
    cdata: ClassVar[bool] = False

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        one = not self.list_calls  # the block is one call: its opener is the trigger
        got = read_invokes(
            text, k if one else k + len(self.open), invoke=self.invoke, param=self.param,
            close="" if one else self.close, cdata=self.cdata, final=final, schemas=schemas,
            bad_end=self.close,
        )  # fmt: skip
        if isinstance(got, Block):
            return got
        calls, end = got
        return Block("ok", end, calls)

    def string_node(self, kit: Kit) -> Node:
        """A raw string value: any text without the parameter's close tag; with CDATA, text
        without ``<``, ``&`` and newlines, or a CDATA section."""
        if not self.cdata:
            return kit.text_without((f"</{self.param}>",))
        plain = kit.chars("<&\n", lo=0)
        section = seq(lit(CDATA_OPEN), kit.text_without((CDATA_CLOSE,)), lit(CDATA_CLOSE))
        return choice(plain, section)

    def invoke_node(self, tool: Tool, index: int, kit: Kit, *, whole: bool = True) -> Node:
        """``<invoke name="NAME">`` then each parameter as
        ``<parameter name="K">VALUE</parameter>`` (declared parameters in any order, required
        ones present), then ``</invoke>``, with the family's newlines; without ``whole``, the
        part after ``open`` and before ``close`` (a family whose block is one invoke)."""
        raw = self.string_node(kit)
        nl, pt = self.nl, self.param

        def param(key: str, value: Node) -> Node:
            return seq(lit(f'<{pt} name="{key}">'), value, lit(f"</{pt}>{nl}"))

        def free() -> Node:
            key = kit.chars('"<>\n')
            return seq(lit(f'<{pt} name="'), key, lit('">'), raw, lit(f"</{pt}>{nl}"))

        def value(sub: Any, prefix: str) -> Node:
            if self.values == "python":
                return json_or_python(kit, sub, prefix, raw)
            return kit.raw_value(sub, sub, prefix, raw)

        params = kit.params(tool.parameters, f"a{index}_", param, raw, free, value=value)
        if not whole:
            return seq(lit(f'{tool.name}">{nl}'), params)
        return seq(lit(f'<{self.invoke} name="{tool.name}">{nl}'), params, lit(f"</{self.invoke}>"))

    def value_text(self, v: object) -> str:
        """A value as the template writes it."""
        if isinstance(v, str):
            if self.cdata and any(c in v for c in "<&\n"):
                return CDATA_OPEN + v + CDATA_CLOSE
            return v
        return python_str(v) if self.values == "python" else self.dump_arguments(v)

    def invoke_text(self, name: str, arguments: object) -> str:
        nl, pt = self.nl, self.param
        params = "".join(
            f'<{pt} name="{k}">{self.value_text(v)}</{pt}>{nl}'
            for k, v in (arguments if isinstance(arguments, dict) else {}).items()
        )
        return f'<{self.invoke} name="{name}">{nl}{params}</{self.invoke}>'


@register_format("minimax_m2")
class MiniMaxM2(InvokeXml):
    open = "<minimax:tool_call>"
    close = "</minimax:tool_call>"
    after_open = "\n"
    list_calls = True
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
        "]~!b[",
        "]~b]",
        "[e~[",
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "<think>",
        "</think>",
        "<invoke name=",
        "</invoke>",
        "<parameter name=",
        "</parameter>",
        "<response>",
        "</response>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """One ``<invoke>`` and its newline; the calls of a turn follow each other in the
        block (``<minimax:tool_call>\\n`` ... ``</minimax:tool_call>``)."""
        return seq(self.invoke_node(tool, index, kit), lit("\n"))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        body = "".join(self.invoke_text(n, a) + "\n" for n, a in calls)
        return f"{self.open}\n{body}{self.close}"

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("tool-name", {"key": "v"}))


@register_format("minicpm5")
class MiniCpm5(InvokeXml):
    """MiniCPM 5: no block markers, the ``<function name="`` opener is the trigger; calls on
    their own lines."""

    open = '<function name="'
    close = "</function>"
    invoke = "function"
    param = "param"
    nl = ""
    values = "python"
    cdata = True
    block_sep = "\n"
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<think>",
        "</think>",
        "<tool_response>",
        "</tool_response>",
        "<tool_sep>",
        '<function name="',
        "</function>",
        "<param name=",
        "</param>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The rest of ``<function name="NAME">...</function>`` after the opener (the opener
        and the close are the block's markers)."""
        return self.invoke_node(tool, index, kit, whole=False)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return "\n".join(self.invoke_text(n, a) for n, a in calls)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("function-name", {"k": "v"}))
