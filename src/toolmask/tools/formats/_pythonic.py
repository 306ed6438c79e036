"""Python calls: a Python list of calls, keyword arguments only (Llama 4, Llama 3.2 pythonic,
LFM2, Gemma 3 prompted for calls)::

    [get_weather(city='Paris', days=3), get_time()]

or one call a line, without the list, between the block's markers (OLMo 3, MiniCPM3: the
``listed=False`` codec, its values in the notation its template writes)::

    <function_calls>
    get_weather(city='Paris', days=3)
    get_time()
    </function_calls>

The grammar writes each value as a Python literal derived from the parameter's schema (strings
in either quote with backslash escapes, ``True`` / ``False`` / ``None``, lists and dicts with
``", "`` or compact spacing); keyword arguments in any order, each at most once, the required
ones present, separated by ``", "`` or ``","``. A property whose name is not a Python identifier
cannot be a keyword argument: it is never written (when required, the tool cannot be called).
The reader parses the list with :mod:`ast` and reads each value as a literal.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import CharSet, Dfa, Node, RuleRef, choice, dfa_to_rules, lit, seq
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, Call, done, is_value, python_value, skip_ws
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["HOW", "PythonCalls", "expression_end", "read_calls"]

#: how a Python list of calls is written (the tool prompt of the formats written in it)
HOW = "[func_name1(param1=value1, param2=value2), func_name2()]"


def expression_end(text: str, i: int) -> int | None:
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


def _block_end(text: str, i: int, close: str, sep: str = "", final: bool = True) -> int | None:
    """Where ``close`` first appears in ``text`` from ``i`` outside a quoted string, None if
    it does not (yet); a ``close`` that starts the separator ``sep`` between two calls (the
    closer, text, the opener again) is not the end (not yet known before ``final``)."""
    j, n = i, len(text)
    skip = sep if sep.startswith(close) else ""
    while j < n:
        if text.startswith(close, j):
            if skip and text.startswith(skip, j):
                j += len(skip)
                continue
            if skip and not final and skip.startswith(text[j:]):
                return None
            return j
        c = text[j]
        if c in "'\"":
            j += 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
        j += 1
    return None


class _JsonNames(ast.NodeTransformer):
    """``true`` / ``false`` / ``null`` read as the JSON constants (OLMo 3's values)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        consts = {"true": True, "false": False, "null": None}
        return ast.Constant(consts[node.id]) if node.id in consts else node


def read_calls(src: str, *, listed: bool = True, json_names: bool = False) -> list[Call] | str:
    """The calls of a Python list of calls (``listed``), else of calls one a line, or why it is
    not that; ``json_names``: ``true`` / ``false`` / ``null`` are values too."""
    try:
        tree = ast.parse(src.strip(), mode="eval" if listed else "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not a Python list of calls" if listed else "not Python calls"
    if isinstance(tree, ast.Expression):
        if not isinstance(tree.body, ast.List) or not tree.body.elts:
            return "expected a non-empty list of calls"
        nodes = tree.body.elts
    else:
        lines = tree.body if isinstance(tree, ast.Module) else []
        if not lines or not all(isinstance(s, ast.Expr) for s in lines):
            return "expected one call a line"
        nodes = [s.value for s in lines if isinstance(s, ast.Expr)]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            return "expected NAME(key=value, ...)"
        name = ast.unparse(node.func)
        args: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                return "**kwargs in a call"
            value = _JsonNames().visit(kw.value) if json_names else kw.value
            v = python_value(ast.unparse(value))
            if not is_value(v):
                return f"argument {kw.arg!r} is not a literal"
            args[kw.arg] = v
        calls.append(done(name, args))
    return calls


@dataclass(frozen=True, slots=True)
class PythonCalls(CodecBase):
    """The Python list of calls (see the module docstring); ``wrap``: the renderer writes the
    list between the block's markers (LFM2), else bare. ``listed=False``: the calls one a line
    between the block's markers, the layout's ``list_open`` / ``list_close`` around them (a
    code fence: MiniCPM3), read whether or not that text is there. ``notation``: how values are
    written (:mod:`toolmask.schema._notation`: ``python``, ``python_json``, ``json``); the
    reader takes Python's and JSON's constants unless it is ``python``. ``arg_sep``: what the
    renderer writes between keyword arguments (the grammar takes ``", "`` and ``","``)."""

    wrap: bool = False
    listed: bool = True
    notation: str = "python"
    arg_sep: str = ", "

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
        if not self.listed:
            return self._read_lines(spec, text, i, final=final)
        if text[i] != "[":
            return Block("bad", i, reason="expected '['")
        end = expression_end(text, i)
        if end is None:
            if final:
                return Block("bad", len(text), reason="truncated: the list never closes")
            return Block("pending")
        calls = read_calls(text[i:end], json_names=self.notation != "python")
        j = skip_ws(text, end)
        if not bare:
            if text.startswith(b.close, j):
                end = j + len(b.close)
            elif not final and b.close.startswith(text[j:]):
                return Block("pending")
        if isinstance(calls, str):
            return Block("bad", end, reason=calls)
        return Block("ok", end, calls)

    def _read_lines(self, spec: FormatSpec, text: str, i: int, *, final: bool) -> Block:
        """The calls one a line from ``text[i]`` to the block's close marker."""
        close = spec.block.close
        sep = spec.layout.separator_mark
        j = _block_end(text, i, close, sep, final)
        if j is None:
            if final:
                return Block("bad", len(text), reason="truncated: the block never closes")
            return Block("pending")
        body = text[i:j].strip()
        fence_open, fence_close = spec.layout.list_open.strip(), spec.layout.list_close.strip()
        if fence_open and body.startswith(fence_open):
            body = body[len(fence_open) :]
        if fence_close and body.endswith(fence_close):
            body = body[: len(body) - len(fence_close)]
        sep = spec.layout.separator_mark  # else calls one a line
        names = self.notation != "python"
        calls = (
            _read_separated(body, sep, names)
            if sep
            else read_calls(body, listed=False, json_names=names)
        )
        end = j + len(close)
        if isinstance(calls, str):
            return Block("bad", end, reason=calls)
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``NAME(key=value, ...)`` with Python-literal values (see the module docstring)."""
        sep = choice(lit(", "), lit(","))

        def param(key: str, value: Node) -> Node:
            return seq(lit(f"{key}="), value)

        def value(sub: Any, prefix: str) -> Node:
            return kit.json(sub, prefix, self.notation)

        def free() -> Node:
            return seq(_identifier(kit), lit("="), kit.json({}, f"a{index}_any_", self.notation))

        params = kit.params(
            tool.parameters, f"a{index}_", param, lit(""), free, sep=sep, value=value,
            keep=_is_keyword_name,
        )  # fmt: skip
        return seq(lit(f"{tool.name}("), params, lit(")"))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        parts = [
            f"{n}(" + self.arg_sep.join(f"{k}={self._value(v)}" for k, v in _items(a)) + ")"
            for n, a in calls
        ]
        if not self.listed:
            b, lay = spec.block, spec.layout
            blocks = [lay.separator_text.join(parts)] if lay.one_block else parts
            inner = [
                b.after_open + lay.list_open + x + lay.list_close + b.before_close for x in blocks
            ]
            return lay.block_sep.join(b.open + x + b.close for x in inner)
        listed = "[" + ", ".join(parts) + "]"
        return spec.block.open + listed + spec.block.close if self.wrap else listed

    def _value(self, v: object) -> str:
        """``v`` as this codec's notation writes it."""
        if self.notation == "json" or (self.notation == "python_json" and not isinstance(v, str)):
            return json.dumps(v, ensure_ascii=False)
        return repr(v)


_CALL_START = re.compile(r"[A-Za-z_][\w.]*\(")


def _read_separated(body: str, sep: str, json_names: bool) -> list[Call] | str:
    """The calls of ``body``, ``NAME(...)`` each, with ``sep`` between two (whitespace
    around it), or why it is not that."""
    calls: list[Call] = []
    i, n = 0, len(body)
    while True:
        m = _CALL_START.match(body, i)
        end = expression_end(body, m.end() - 1) if m else None
        if end is None:
            return "expected NAME(key=value, ...)"
        got = read_calls(body[i:end], listed=False, json_names=json_names)
        if isinstance(got, str):
            return got
        calls += got
        i = skip_ws(body, end)
        if i >= n:
            return calls
        if not body.startswith(sep, i):
            return f"expected {sep!r} between two calls"
        i = skip_ws(body, i + len(sep))


def _items(args: object) -> list[tuple[str, object]]:
    """A call's arguments, an object, as ``(key, value)`` pairs."""
    return list(dict(args).items())  # type: ignore[call-overload]


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
