"""XML parameters: each argument in a tag of its own, string values raw.

Two codecs:

* :class:`FunctionParams`: ``<function=NAME>`` then ``<parameter=KEY>VALUE</parameter>`` per
  argument, then ``</function>`` (Qwen3-Coder, Qwen3.5+, Seed-OSS); values on their own lines
  (``tight=False``) or against their tags;
* :class:`InvokeParams`: the function and each parameter named in an attribute,
  ``<invoke name="NAME"><parameter name="KEY">VALUE</parameter></invoke>`` (MiniMax-M2,
  MiniCPM 5, ATEM's calls), with the family's tag names and newlines.

Values: a string is raw text; another type is JSON (``tojson``) or, where the template writes
it with Jinja's ``string`` filter (``python=True``), a Python literal (``True``, ``['a']``;
JSON admitted too); the reader types a value with the tool's schema
(:func:`~toolmask.tools.formats._read.coerce_value`). The readers are structural: a tag ends a
value only where the next tag follows it, so tag text inside a value stays text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Node, choice, lit, seq
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import (
    Block,
    Call,
    bad_block,
    coerce_value,
    done,
    param_schema,
    python_str,
    schema_types,
    separator_at,
    skip_ws,
)
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = [
    "CDATA_CLOSE",
    "CDATA_OPEN",
    "FunctionParams",
    "InvokeParams",
    "json_or_python",
    "read_functions",
    "read_invokes",
]


def json_or_python(kit: Kit, sub: Any, prefix: str, raw: Node) -> Node:
    """A parameter value written raw (strings: ``raw``) or, for other types, as JSON or as a
    Python literal (what Jinja's ``string`` filter writes for lists, dicts and booleans)."""
    types = schema_types(sub)
    node = kit.raw_value(sub, sub, prefix, raw)
    if not types or "string" in types or not types & {"array", "object", "null"}:
        return node
    return choice(node, kit.json(sub, f"{prefix}py_", "python"))


def _arguments(arguments: object) -> Mapping[str, Any]:
    return arguments if isinstance(arguments, dict) else {}


# -- <function=NAME><parameter=KEY> --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tags:
    """The patterns :func:`read_functions` reads the function-tag notation with, for its tag
    names (``function`` / ``parameter``: Qwen3-Coder)."""

    func: re.Pattern[str]
    param_head: re.Pattern[str]
    #: where a value may end: its close tag, or (close tag missing) the next tag on a new line
    value_end: re.Pattern[str]
    next: tuple[str, str]


@functools.lru_cache(maxsize=16)
def _tags(function: str, param: str) -> _Tags:
    f, p = re.escape(function), re.escape(param)
    return _Tags(
        re.compile(rf"\s*<{f}=([^>\n]+)>", re.S),
        re.compile(rf"\s*<{p}=([^>\n]+)>", re.S),
        re.compile(rf"</{p}>|\n(?=<{p}=|</{f}>)"),
        (f"<{param}=", f"</{function}>"),
    )


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
    text: str,
    pos: int,
    close: str,
    final: bool,
    schemas: Mapping[str, Any] | None,
    *,
    function: str = "function",
    param: str = "parameter",
    sep: str = "",
) -> tuple[list[Call], int] | Block:
    """The ``<function=...>`` calls from ``text[pos]`` up to and including the block's
    ``close`` (optional at the very end: a bare ``<function=...>`` may end there), and the
    block's end; or the pending / bad :class:`Block`. Structural tags are told from the same
    text inside a value by what follows them: a value ends at ``</parameter>`` followed by
    ``<parameter=`` or ``</function>`` (whitespace between), a function at ``</function>``
    followed by ``close``, ``<function=`` or the end, as the templates write them; one newline
    at either end of a value is the layout's. ``function`` / ``param``: the tag names
    (``<tool=NAME>`` / ``<arg=KEY>`` where a template names them so). ``sep``: the text
    between two functions, whitespace aside (``,``, ``---``, or a closer and the opener again:
    ``</tc>\n<tc>``); it is read before ``close`` (it may start with it), and must be followed
    by the next function; cut at the end of a streamed text, it is pending."""
    calls = []
    n = len(text)
    tags = _tags(function, param)
    opener, end_tag = f"<{function}=", f"</{function}>"

    def wait(reason: str) -> Block:
        return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

    while True:
        f = tags.func.match(text, pos)
        if f is None:
            if _unfinished_tag(text[skip_ws(text, pos) :], opener):
                return wait("the reply ends before a function's name")
            return bad_block(text, pos, close, f"expected {opener}NAME>", final)
        name = f.group(1).strip()
        args: dict[str, Any] = {}
        p = f.end()
        while True:
            j = skip_ws(text, p)
            if text.startswith(end_tag, j):
                p = j + len(end_tag)
                break
            m = tags.param_head.match(text, p)
            if m is None:
                if any(_unfinished_tag(text[j:], w) for w in tags.next):
                    return wait("the reply ends inside a function")
                return bad_block(text, p, close, f"expected <{param}=NAME>", final)
            key = m.group(1).strip()
            q = m.end()
            while True:  # the first value end that the structure confirms
                e = tags.value_end.search(text, q)
                if e is None:
                    return wait("the reply ends inside a parameter value")
                if e.group() == "\n":  # no </parameter>: a tag on the next line ends the value
                    stop, after = e.start(), e.end()
                    break
                ok = _followed_by(text, e.end(), tags.next, final)
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
        if separator_at(text, j, sep, close, final):  # the separator, then the next function
            k = skip_ws(text, j + len(sep))
            if text.startswith(opener, k):
                pos = k
                continue
            if not final and (k >= n or opener.startswith(text[k:])):
                return Block("pending")
            return bad_block(text, k, close, f"expected {opener}NAME> after {sep!r}", final)
        if sep and not final and sep.startswith(text[j:]):
            return Block("pending")  # the separator, or the closer, may follow
        if text.startswith(close, j):
            return calls, j + len(close)
        if sep and j < n and sep.startswith(text[j:]):  # final: the reply ends inside it
            return wait("the reply ends inside the text between two functions")
        if text.startswith(opener, j):
            pos = j
            continue
        if j >= n or (not final and any(w.startswith(text[j:]) for w in (close, opener))):
            if final:
                return calls, p  # a bare function at the end of the reply
            return Block("pending")
        return calls, p  # text after a bare function


def _unfinished_tag(rest: str, tag: str) -> bool:
    """``rest`` is the start of ``tag`` or of ``tag`` followed by a name and ``>``."""
    return tag.startswith(rest) or (rest.startswith(tag) and not re.search("[>\n]", rest))


@dataclass(frozen=True, slots=True)
class FunctionParams(CodecBase):
    """``<function=NAME>\\n`` then the parameters, then ``</function>``, inside the block's
    markers (one call per block; with ``list_calls``, every call of the turn in one block, one
    after the other; with a ``separator``, every call in one block, ``separator_text``
    between two: the formats derived from a rendering). ``tight``: a value sits against its tags
    (``<parameter=K>V</parameter>\\n``, Seed-OSS), else on its own line
    (``<parameter=K>\\nV\\n</parameter>\\n``); ``python``: non-string values are written as
    Python literals (Jinja's ``string``), JSON admitted too. ``function`` / ``param``: the
    tag names (the formats derived from a rendering: ``<tool=NAME>``, ``<arg=KEY>``); ``nl``:
    the whitespace after ``<function=NAME>`` and after each ``</parameter>`` (``""``: the
    parameters right after the function's tag and after each other, as a rendering may
    show them: ``<function=f><parameter=k>v</parameter></function>``)."""

    tight: bool = False
    python: bool = False
    function: str = "function"
    param: str = "parameter"
    nl: str = "\n"

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
        """The block's opener then ``<function=...>`` calls (or a bare ``<function=...>``),
        read structurally (:func:`read_functions`)."""
        b = spec.block
        pos = k + len(b.open) if text.startswith(b.open, k) else k
        got = read_functions(
            text, pos, b.close, final, schemas, function=self.function, param=self.param,
            sep=spec.layout.separator_mark,
        )  # fmt: skip
        if isinstance(got, Block):
            return got
        calls, end = got
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """The parameters in any order (declared ones at most once, required ones present),
        strings raw, other types JSON (or Python literals)."""
        # a value holds none of the tags that may end it (the reader looks at what follows
        # them); the block's close marker is text there (the block ends after </function>)
        fn, pt = self.function, self.param
        stops = (f"</{pt}>", f"<{pt}=", f"</{fn}>")
        raw = kit.text_without(stops, edges="\n") if self.tight else kit.text_without(stops)
        pad, nl = ("" if self.tight else "\n"), self.nl

        def param(key: str, value: Node) -> Node:
            return seq(lit(f"<{pt}={key}>{pad}"), value, lit(f"{pad}</{pt}>{nl}"))

        def free() -> Node:
            return seq(lit(f"<{pt}="), kit.chars(">\n"), lit(f">{pad}"), raw,
                       lit(f"{pad}</{pt}>{nl}"))  # fmt: skip

        def value(sub: Any, prefix: str) -> Node:
            return json_or_python(kit, sub, prefix, raw)

        params = kit.params(
            tool.parameters, f"a{index}_", param, raw, free, value=value if self.python else None
        )
        return seq(lit(f"<{fn}={tool.name}>{nl}"), params, lit(f"</{fn}>"))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        b = spec.block
        pad = "" if self.tight else "\n"
        fn, pt = self.function, self.param
        out = []
        for name, arguments in calls:
            params = "".join(
                f"<{pt}={k}>{pad}{self._text(spec, v)}{pad}</{pt}>{self.nl}"
                for k, v in _arguments(arguments).items()
            )
            out.append(f"<{fn}={name}>{self.nl}{params}</{fn}>")
        if spec.layout.one_block:
            out = [spec.layout.separator_text.join(out)]
        return spec.layout.block_sep.join(
            b.open + b.after_open + body + b.before_close + b.close for body in out
        )

    def _text(self, spec: FormatSpec, v: object) -> str:
        if self.python:
            return python_str(v)
        return v if isinstance(v, str) else spec.values.dump(v)


# -- <invoke name="NAME"><parameter name="KEY"> --------------------------------------------------

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
    sep: str = "",
    pad: str = "",
) -> tuple[list[Call], int] | Block:
    """The ``<INVOKE name="N">`` calls from ``text[pos]`` up to and including ``close`` (``""``:
    exactly one call, the block ends after its ``</INVOKE>``), and the block's end; or the
    pending / bad :class:`Block` (a bad one extends to the next ``bad_end``). A value ends at
    the parameter's close tag that is followed by the next parameter or the invoke's close tag
    (a CDATA section first runs to its ``]]>``). ``sep``: the text between two calls,
    whitespace aside (``---``, or a closer and the opener again: ``</tc>\n<tc>``); read
    before ``close`` (it may start with it), it must be followed by the next call; cut at the
    end of a streamed text, it is pending. ``pad``: the text a value's layout puts at both of
    its ends (``"\\n"``: values on lines of their own), taken off where the value has it at
    both."""
    n = len(text)
    head = re.compile(rf'<{re.escape(invoke)}\s+name="([^"<>\n]*)"\s*>')
    phead = re.compile(rf'<{re.escape(param)}\s+name="([^"<>\n]*)"\s*>')
    inv_end, p_end, p_start = f"</{invoke}>", f"</{param}>", f"<{param} name="
    calls: list[Call] = []

    def wait(reason: str) -> Block:
        return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

    def bad(reason: str, at: int) -> Block:  # to the next bad_end, undecided until then
        return bad_block(text, at, bad_end, reason, final)

    def unfinished(rest: str, *words: str) -> bool:
        return any(w.startswith(rest) or (rest.startswith(w) and ">" not in rest) for w in words)

    while True:
        j = skip_ws(text, pos)
        after_sep = False
        if sep and calls:
            if separator_at(text, j, sep, close, final):
                j, after_sep = skip_ws(text, j + len(sep)), True
            elif not final and sep.startswith(text[j:]):
                return Block("pending")  # the separator, or the closer, may follow
        if close and not after_sep and text.startswith(close, j):
            if not calls:
                return Block("bad", j + len(close), reason="an empty block of calls")
            return calls, j + len(close)
        m = head.match(text, j)
        if m is None:
            ends = (close,) if close and not after_sep else ()
            if unfinished(text[j:], f"<{invoke} name=", *ends):
                return wait("the reply ends before a call's name")
            where = f" after {sep!r}" if after_sep else ""
            return bad(f'expected <{invoke} name="...">{where}', j)
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
            if pad and len(raw) >= 2 * len(pad) and raw.startswith(pad) and raw.endswith(pad):
                raw = raw[len(pad) : len(raw) - len(pad)]
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


@dataclass(frozen=True, slots=True)
class InvokeParams(CodecBase):
    """``<invoke name="NAME">`` then ``<parameter name="KEY">VALUE</parameter>`` per argument,
    then ``</invoke>``: ``invoke`` / ``param`` the tag names, ``nl`` what follows
    ``<invoke ...>`` and a parameter's close tag; ``pad``: the text on both sides of a value
    inside its tags (``"\\n"``: each value on lines of its own, ``<parameter name="K">\\nV\\n
    </parameter>``, as a rendering may show it); ``python``: non-string values
    as Python literals (JSON too), else JSON; ``cdata``: strings holding ``<``, ``&`` or a
    newline are wrapped in CDATA (MiniCPM 5).

    With ``list_calls`` the block's markers hold every call of the turn, each ``<invoke>`` on
    its own line (MiniMax-M2), or, ``joined``, the calls with the layout's whitespace
    ``separator_text`` between two and its ``before_close`` after the last (the formats derived
    from a rendering: ``</call><call ...>``, ``</call>\\n\\n</calls>``); with a ``separator``,
    every call of the turn with ``separator_text`` between two (derived too: ``\\n---\\n``,
    or a closer and the opener again); else a block is one call: where the block's opener is
    the start of the invoke tag itself (``<function name="``, MiniCPM 5), that tag; else the
    invoke tag between the block's markers, blocks repeated (derived from a rendering)."""

    invoke: str = "invoke"
    param: str = "parameter"
    nl: str = "\n"
    python: bool = False
    cdata: bool = False
    joined: bool = False
    pad: str = ""

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
        one = self._opens_invoke(spec)  # the block is one call: its opener is the trigger
        got = read_invokes(
            text, k if one else k + len(b.open), invoke=self.invoke, param=self.param,
            close="" if one else b.close, cdata=self.cdata, final=final, schemas=schemas,
            bad_end=b.close, sep=spec.layout.separator_mark, pad=self.pad,
        )  # fmt: skip
        if isinstance(got, Block):
            return got
        calls, end = got
        return Block("ok", end, calls)

    def _opens_invoke(self, spec: FormatSpec) -> bool:
        """Whether a block is one call whose opener is the start of the invoke tag."""
        return not spec.layout.one_block and spec.block.open.startswith(f"<{self.invoke} ")

    def string_node(self, kit: Kit) -> Node:
        """A raw string value: any text without the parameter's close tag; with CDATA, text
        without ``<``, ``&`` and newlines, or a CDATA section."""
        if not self.cdata:
            return kit.text_without((f"</{self.param}>",))
        plain = kit.chars("<&\n", lo=0)
        section = seq(lit(CDATA_OPEN), kit.text_without((CDATA_CLOSE,)), lit(CDATA_CLOSE))
        return choice(plain, section)

    def invoke_node(self, tool: ToolLike, index: int, kit: Kit, *, whole: bool = True) -> Node:
        """``<invoke name="NAME">`` then each parameter (declared parameters in any order,
        required ones present), then ``</invoke>``, with the family's newlines; without
        ``whole``, the part after the opener ``<invoke name="``."""
        raw = self.string_node(kit)
        nl, pt, pad = self.nl, self.param, self.pad

        def param(key: str, value: Node) -> Node:
            return seq(lit(f'<{pt} name="{key}">{pad}'), value, lit(f"{pad}</{pt}>{nl}"))

        def free() -> Node:
            key = kit.chars('"<>\n')
            return seq(lit(f'<{pt} name="'), key, lit(f'">{pad}'), raw, lit(f"{pad}</{pt}>{nl}"))

        def value(sub: Any, prefix: str) -> Node:
            if self.python:
                return json_or_python(kit, sub, prefix, raw)
            return kit.raw_value(sub, sub, prefix, raw)

        params = kit.params(tool.parameters, f"a{index}_", param, raw, free, value=value)
        if not whole:
            return seq(lit(f'{tool.name}">{nl}'), params)
        return seq(lit(f'<{self.invoke} name="{tool.name}">{nl}'), params, lit(f"</{self.invoke}>"))

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        if spec.layout.list_calls and not spec.layout.separator and not self.joined:
            return seq(self.invoke_node(tool, index, kit), lit("\n"))
        return self.invoke_node(tool, index, kit, whole=not self._opens_invoke(spec))

    def value_text(self, spec: FormatSpec, v: object) -> str:
        """A value as the template writes it."""
        if isinstance(v, str):
            if self.cdata and any(c in v for c in "<&\n"):
                return CDATA_OPEN + v + CDATA_CLOSE
            return v
        return python_str(v) if self.python else spec.values.dump(v)

    def invoke_text(self, spec: FormatSpec, name: str, arguments: object) -> str:
        nl, pt, pad = self.nl, self.param, self.pad
        params = "".join(
            f'<{pt} name="{k}">{pad}{self.value_text(spec, v)}{pad}</{pt}>{nl}'
            for k, v in _arguments(arguments).items()
        )
        return f'<{self.invoke} name="{name}">{nl}{params}</{self.invoke}>'

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        b, lay = spec.block, spec.layout
        if lay.separator or (lay.list_calls and self.joined):  # one block, text between calls
            body = lay.separator_text.join(self.invoke_text(spec, n, a) for n, a in calls)
            return b.open + b.after_open + body + b.before_close + b.close
        if lay.list_calls:
            body = "".join(self.invoke_text(spec, n, a) + "\n" for n, a in calls)
            return f"{b.open}{b.after_open}{body}{b.close}"
        inner = (self.invoke_text(spec, n, a) for n, a in calls)
        if self._opens_invoke(spec):
            return spec.layout.block_sep.join(inner)
        around = b.open + b.after_open, b.before_close + b.close
        return spec.layout.block_sep.join(around[0] + x + around[1] for x in inner)
