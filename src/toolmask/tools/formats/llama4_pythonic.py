"""``llama4_pythonic``: Llama 4: a Python list of calls, keyword arguments only::

    [get_weather(city='Paris', days=3), get_time()]

optionally between ``<|python_start|>`` and ``<|python_end|>``. Without them a block is
recognised only at the start of the reply.

The grammar writes each value as a Python literal derived from the parameter's schema (strings
in either quote with backslash escapes, ``True`` / ``False`` / ``None``, lists and dicts with
``", "`` or compact spacing); keyword arguments in any order, each at most once, the required
ones present, separated by ``", "`` or ``","``. A property whose name is not a Python
identifier cannot be a keyword argument: it is never written (when required, the tool cannot be
called).
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import CharSet, Dfa, Node, RuleRef, choice, dfa_to_rules, lit, seq
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
    from toolmask.tools.formats._gen import Kit

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
    open = "<|python_start|>"
    close = "<|python_end|>"
    bare_at_start = True
    bare_start = "["
    block_sep = ""
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    argument_options: ClassVar[Mapping[str, Any]] = {
        "whitespace": "spaced",
        "property_order": "any",
        "additional_properties_default": False,
    }
    extra_layouts = ("compact",)
    template_markers: ClassVar[tuple[str, ...]] = (
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

    def separator_node(self) -> Node:
        return choice(lit(", "), lit(","))

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME(key=value, ...)`` with Python-literal values (see the module docstring)."""
        sep = choice(lit(", "), lit(","))

        def param(key: str, value: Node) -> Node:
            return seq(lit(f"{key}="), value)

        def value(sub: Any, prefix: str) -> Node:
            return kit.json(sub, prefix, "python")

        def free() -> Node:
            return seq(_identifier(kit), lit("="), kit.json({}, f"a{index}_any_", "python"))

        params = kit.params(
            tool.parameters, f"a{index}_", param, lit(""), free, sep=sep, value=value,
            keep=_is_keyword_name,
        )  # fmt: skip
        return seq(lit(f"{tool.name}("), params, lit(")"))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        parts = [
            f"{n}(" + ", ".join(f"{k}={_py(v)}" for k, v in dict(a).items()) + ")"  # type: ignore[call-overload]
            for n, a in calls
        ]
        return "[" + ", ".join(parts) + "]"

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), "[func_name1(param1=value1), func_name2()]")


def _is_keyword_name(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


def _identifier(kit: Kit) -> Node:
    """An ASCII Python identifier that is not a keyword (a free keyword argument's name);
    one rule set per kit."""
    if f"{kit.tag}kwname_s0" in {r.name for r in kit.rules}:
        return RuleRef(f"{kit.tag}kwname_s0")
    first = CharSet.of([(0x41, 0x5A), (0x61, 0x7A), 0x5F])
    rest = first | CharSet.of([(0x30, 0x39)])
    dfa = Dfa.char(first).concat(Dfa.char(rest).star())
    dfa = dfa.intersect(Dfa.literals(keyword.kwlist).complement())
    entry, rules = dfa_to_rules(dfa, f"{kit.tag}kwname", encoding="raw")
    for r in rules:
        kit.add(r.name, r.body)
    return entry


def _py(v: object) -> str:
    """``v`` (JSON data) as a Python literal: ``repr`` with JSON's constants spelled as Python's."""
    return repr(v)
