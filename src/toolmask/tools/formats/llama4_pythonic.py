"""``llama4_pythonic``: Llama 4: a Python list of calls, keyword arguments only::

    [get_weather(city='Paris', days=3), get_time()]

optionally between ``<|python_start|>`` and ``<|python_end|>``. Without them a block is
recognised only at the start of the reply.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    done,
    is_value,
    python_value,
    skip_ws,
    tools_prompt,
)

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Llama4Pythonic"]


def _list_end(text: str, i: int) -> int | None:
    """End of the bracketed Python expression at ``text[i]`` (quote-aware), None if cut."""
    depth = 0
    j, n = i, len(text)
    while j < n:
        c = text[j]
        if c in "'\"":
            q = c
            j += 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return None
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def read_calls(src: str) -> list[Any] | str:
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not a Python list of calls"
    body = tree.body
    if not isinstance(body, ast.List) or not body.elts:
        return "expected a non-empty list of calls"
    calls = []
    for node in body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return "expected NAME(key=value, ...)"
        name = ast.unparse(node.func)
        args: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                return "**kwargs in a call"
            v = python_value(ast.unparse(kw.value))
            if not is_value(v):
                return f"argument {kw.arg!r} is not a literal"
            args[kw.arg] = v
        calls.append(done(name, args))
    return calls


@register_format("llama4_pythonic")
class Llama4Pythonic(WireFormat):
    has_grammar = False
    open = "<|python_start|>"
    close = "<|python_end|>"
    bare_at_start = True
    bare_start = "["
    block_sep = ""
    template_markers = (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|header_start|>",
        "<|header_end|>",
        "<|eot|>",
        "<|eom|>",
        "<|python_start|>",
        "<|python_end|>",
    )

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        i = k if bare else skip_ws(text, k + len(self.open))
        if i >= len(text):
            return Block("pending") if not final else Block("bad", len(text), reason="truncated")
        if text[i] != "[":
            return Block("bad", i, reason="expected '['")
        end = _list_end(text, i)
        if end is None:
            if final:
                return Block("bad", len(text), reason="truncated: the list never closes")
            return Block("pending")
        calls = read_calls(text[i:end])
        j = skip_ws(text, end)
        if not bare:
            if text.startswith(self.close, j):
                end = j + len(self.close)
            elif not final and self.close.startswith(text[j:]):
                return Block("pending")
        elif not final and text[j:] == "":
            pass
        if isinstance(calls, str):
            return Block("bad", end, reason=calls)
        return Block("ok", end, calls)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        def lit(v: object) -> str:
            return repr(v)

        parts = [
            f"{n}(" + ", ".join(f"{k}={lit(v)}" for k, v in dict(a).items()) + ")"  # type: ignore[call-overload]
            for n, a in calls
        ]
        return "[" + ", ".join(parts) + "]"

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), "[func_name1(param1=value1), func_name2()]")
