"""Python calls: a Python list of calls, keyword arguments only (Llama 4, Llama 3.2 pythonic,
LFM2, Gemma 3 prompted for calls)::

    [get_weather(city='Paris', days=3), get_time()]

The grammar writes each value as a Python literal derived from the parameter's schema (strings
in either quote with backslash escapes, ``True`` / ``False`` / ``None``, lists and dicts with
``", "`` or compact spacing); keyword arguments in any order, each at most once, the required
ones present, separated by ``", "`` or ``","``. A property whose name is not a Python identifier
cannot be a keyword argument: it is never written (when required, the tool cannot be called).
The reader parses the list with :mod:`ast` and reads each value as a literal.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import CharSet, Dfa, Node, RuleRef, choice, dfa_to_rules, lit, seq
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, Call, done, is_value, python_value, skip_ws
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["HOW", "PythonCalls", "read_calls"]

#: how a Python list of calls is written (the tool prompt of the formats written in it)
HOW = "[func_name1(param1=value1, param2=value2), func_name2()]"


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


def read_calls(src: str) -> list[Call] | str:
    """The calls of a Python list of calls, or why it is not one."""
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


@dataclass(frozen=True, slots=True)
class PythonCalls(CodecBase):
    """The Python list of calls (see the module docstring); ``wrap``: the renderer writes the
    list between the block's markers (LFM2), else bare."""

    wrap: bool = False

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
        b = spec.block
        i = k if bare else skip_ws(text, k + len(b.open))
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
            if text.startswith(b.close, j):
                end = j + len(b.close)
            elif not final and b.close.startswith(text[j:]):
                return Block("pending")
        if isinstance(calls, str):
            return Block("bad", end, reason=calls)
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
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

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        parts = [
            f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in dict(a).items()) + ")"  # type: ignore[call-overload]
            for n, a in calls
        ]
        listed = "[" + ", ".join(parts) + "]"
        return spec.block.open + listed + spec.block.close if self.wrap else listed


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
