"""DeepSeek's "DSML" markup (V3.2, V4, V4.1) and GigaChat 3.5's copy of it under another mark::

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

Every tag starts with the ``mark`` (``｜DSML｜``, ``｜GCML｜``) and, in V4.1, a space after it;
the block's tag is ``function_calls`` (V3.2), ``tool_calls`` (V4) or ``calls`` (V4.1). A string
value is raw text with ``string="true"``, any other value JSON with ``string="false"``. The
reader takes every tag spelling of its mark; the codec's data decides how calls are written.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask._pointer import json_pointer
from toolmask.grammar import EMPTY, Node, choice, lit, opt, seq
from toolmask.tools.formats._kit import Kit, with_defs
from toolmask.tools.formats._read import (
    Block,
    coerce_value,
    done,
    loads,
    param_schema,
    schema_types,
)
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["DSML", "Dsml"]

DSML = "｜DSML｜"


@dataclass(frozen=True, slots=True)
class _Markup:
    """The regexes that read DSML-style markup whose tags carry ``mark``, any whitespace
    after it."""

    mark: str
    block_open: re.Pattern[str]
    invoke: re.Pattern[str]
    invoke_end: re.Pattern[str]
    param: re.Pattern[str]

    def block_close(self, tag: str) -> re.Pattern[str]:
        return re.compile(rf"</{re.escape(self.mark)}\s*{tag}\s*>")


@functools.cache
def _markup(mark: str) -> _Markup:
    """The readers of the markup tagged ``mark``, compiled once per mark."""
    m = re.escape(mark)
    return _Markup(
        mark,
        re.compile(rf"<{m}\s*(function_calls|tool_calls|calls)\s*>"),
        re.compile(rf'\s*<{m}\s*invoke\s+name="([^"]*)"\s*(/?)>', re.S),
        re.compile(rf"\s*</{m}\s*invoke\s*>", re.S),
        re.compile(
            rf'\s*<{m}\s*parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>(.*?)'
            rf"</{m}\s*parameter\s*>",
            re.S,
        ),
    )


@dataclass(frozen=True, slots=True)
class Dsml(CodecBase):
    """The markup (see the module docstring): ``mark`` what every tag starts with after ``<``
    or ``</``, ``tag`` the block's tag, ``space`` what follows the mark in every tag."""

    mark: str = DSML
    tag: str = "function_calls"
    space: str = ""

    @property
    def _what(self) -> str:
        """The markup's name in messages (``DSML``)."""
        return self.mark.strip("｜ ")

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
        mk = _markup(self.mark)
        m = mk.block_open.match(text, k)
        if m is None and final and mk.invoke.match(text, k) and not mk.invoke_end.search(text, k):
            # the rest of a block cut off (see below): an unfinished invoke
            return Block("bad", len(text), reason="truncated: the reply ends inside an invoke")
        if m is None:
            head = text[k : k + 40]
            if not final and ">" not in head:
                return Block("pending")
            want = f"<{self.mark}{self.space}{self.tag}>"
            return Block("bad", k + len(self.mark) + 1, reason=f"expected {want}")
        c = mk.block_close(m.group(1)).search(text, m.end())
        if c is None and not final:
            return Block("pending")
        if c is None:  # cut off: its complete invokes are kept, the unfinished one follows
            ends = list(mk.invoke_end.finditer(text, m.end()))
            if not ends:
                return Block("bad", len(text), reason=f"truncated: no closing {self._what} tag")
            last = ends[-1]
            closed = f"{text[: last.end()]}</{self.mark}{m.group(1)}>"
            got = self.read_block(spec, closed, k, final=True, bare=False, schemas=schemas)
            if got.status != "ok":
                return Block("bad", len(text), reason=f"truncated: no closing {self._what} tag")
            return Block("ok", last.end(), got.calls)
        end = c.end()
        pos, inner_end = m.end(), c.start()
        calls = []
        while text[pos:inner_end].strip():
            inv = mk.invoke.match(text, pos, inner_end)
            if inv is None:
                return Block("bad", end, reason=f"expected <{self.mark}invoke name=...>")
            name = inv.group(1)
            pos = inv.end()
            args: dict[str, Any] = {}
            if not inv.group(2):
                while True:
                    e = mk.invoke_end.match(text, pos, inner_end)
                    if e is not None:
                        pos = e.end()
                        break
                    p = mk.param.match(text, pos, inner_end)
                    if p is None:
                        return Block("bad", end, reason=f"expected a {self._what} parameter")
                    key, is_str, raw = p.group(1), p.group(2), p.group(3)
                    if is_str == "true":
                        args[key] = raw
                    elif is_str == "false":
                        value, err = loads(raw)
                        args[key] = raw if err is not None else value
                    else:
                        args[key] = coerce_value(raw, param_schema(schemas, name, key))
                    pos = p.end()
            calls.append(done(name, args))
        if not calls:
            return Block("bad", end, reason="an empty block of calls")
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``<｜DSML｜invoke name="NAME">\\n`` then one line per parameter, ``string="true"``
        and the raw text for strings, ``string="false"`` and JSON otherwise (declared
        parameters in any order, required ones present), then ``</｜DSML｜invoke>\\n``."""
        d = self.mark + self.space
        end = f"</{d}parameter>"
        raw = kit.text_without((end, f"</{d}{self.tag}>"))  # where the reader ends
        props = tool.parameters.get("properties")
        props = props if isinstance(props, Mapping) else {}

        def param(key: str, value: Node) -> Node:
            return seq(lit(f'<{d}parameter name="{key}" string="'), value, lit(f"{end}\n"))

        def value_for(key: str) -> Node:
            schema = props.get(key)
            types = schema_types(schema)
            alts: list[Node] = []
            if not types or "string" in types:
                alts.append(seq(lit('true">'), raw))
            if types - {"string"} or not types:
                j = list(props).index(key)
                sub = with_defs(schema, tool.parameters)
                at = json_pointer(("properties", key))
                alts.append(seq(lit('false">'), kit.json(sub, f"a{index}_j{j}_", at=at)))
            return choice(*alts)

        def free() -> Node:
            key = kit.text_without(('"',), nonempty=True)
            return seq(lit(f'<{d}parameter name="'), key, lit('" string="true">'), raw,
                       lit(f"{end}\n"))  # fmt: skip

        params = kit.params(
            {**tool.parameters, "properties": {k: {} for k in props}},
            f"a{index}_",
            lambda k, _v: param(k, value_for(k)),
            EMPTY,
            free,
        )
        full = seq(
            lit(f'<{d}invoke name="{tool.name}">\n'), opt(lit("\n")), params,
            lit(f"</{d}invoke>\n"),
        )  # fmt: skip
        if tool.parameters.get("required"):
            return full
        return choice(full, lit(f'<{d}invoke name="{tool.name}"/>\n'))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        d = self.mark + self.space
        out = [f"<{d}{self.tag}>\n"]
        for name, arguments in calls:
            out.append(f'<{d}invoke name="{name}">\n')
            for key, v in (arguments if isinstance(arguments, dict) else {}).items():
                s = "true" if isinstance(v, str) else "false"
                val = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                out.append(f'<{d}parameter name="{key}" string="{s}">{val}</{d}parameter>\n')
            out.append(f"</{d}invoke>\n")
        return "".join(out) + f"</{d}{self.tag}>"
