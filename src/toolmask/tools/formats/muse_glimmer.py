"""``muse_glimmer``: Muse Glimmer (the ATEM protocol). A reply is a sequence of messages, each
addressed by its header: ``to=self`` is reasoning, ``to=user`` is the answer, ``to=NAME`` is a
call whose body is one ``<atem:function_calls>`` block (MiniMax-style invoke/parameter tags)::

     to=self<|message|>Need the weather.<|eom|><|start|>assistant
     to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|><|start|>assistant to=get_time<|message|>...

The prompt ends with ``<|start|>assistant``, so the reply starts inside the first header.
Messages are joined by ``<|eom|><|start|>assistant``; the turn ends with ``<|eot|>`` (the stop
token, after the last call or the answer). Parallel calls are one call per message. Values:
strings raw, booleans ``true`` / ``false``, lists and objects JSON, numbers as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import EMPTY, Node, choice, lit, opt, repeat, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, skip_ws
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Calls,
    FormatSpec,
    Prompt,
    Reasoning,
    ToolLike,
)
from toolmask.tools.formats._xml import InvokeParams, read_invokes

__all__ = ["SPEC"]

MESSAGE = "<|message|>"
EOM = "<|eom|>"
EOT = "<|eot|>"
START = "<|start|>"
BLOCK_OPEN = "<atem:function_calls>"
BLOCK_CLOSE = "</atem:function_calls>"
_HEADER = re.compile(r"(?:<\|start\|>\s*assistant)?\s*to=([^\s<]+)\s*")
#: where a reasoning or answer message ends
_END = re.compile(r"<\|eom\|>|<\|eot\|>|(?=<\|start\|>)")


@dataclass(frozen=True, slots=True)
class _Atem(InvokeParams):
    """ATEM's messages, each call one ``<atem:invoke>`` (see the module docstring)."""

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
        """One message from its header (``<|start|>assistant to=...`` or, first, ``to=...``)
        to its end marker: reasoning (``self``), prose (``user``) or one call."""
        n = len(text)
        m = text.find(MESSAGE, k)
        if m < 0:
            if final:
                return Block("bad", n, reason="truncated: a header without <|message|>")
            return Block("pending")
        h = _HEADER.fullmatch(text, k, m)
        if h is None:
            e = _END.search(text, m)
            return Block("bad", e.end() if e else n, reason="expected assistant to=RECIPIENT")
        to = h.group(1)
        body = m + len(MESSAGE)
        if to in ("self", "user"):
            e = _END.search(text, body)
            if e is None:
                if not final:
                    return Block("pending")
                inner, end = text[body:], n
            else:
                inner, end = text[body : e.start()], e.end()
            if to == "self":
                return Block("ok", end, text_kind="reasoning", text=inner.strip())
            return Block("ok", end, text_kind="prose", text=inner)
        j = skip_ws(text, body)
        if not text.startswith(BLOCK_OPEN, j):
            if not final and BLOCK_OPEN.startswith(text[j:]):
                return Block("pending")
            e = _END.search(text, body)
            return Block("bad", e.end() if e else n, reason=f"expected {BLOCK_OPEN}")
        got = read_invokes(
            text, j + len(BLOCK_OPEN), invoke=self.invoke, param=self.param, close=BLOCK_CLOSE,
            cdata=False, final=final, schemas=schemas, bad_end=EOM,
        )  # fmt: skip
        if isinstance(got, Block):
            return got
        calls, end = got
        t = skip_ws(text, end)
        rest = text[t : t + len(EOM)]
        if rest in (EOM, EOT):
            end = t + len(EOM)
        elif not final and (EOM.startswith(rest) or EOT.startswith(rest)):
            return Block("pending")  # the end marker may still come
        if any(c.name != to for c in calls):
            return Block("bad", end, reason=f"the header names {to!r}, the call another tool")
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """`` to=NAME<|message|><atem:function_calls>\\n`` then the invoke (:meth:`InvokeXml.
        invoke_node`), then ``\\n</atem:function_calls>``."""
        return seq(
            lit(f" to={tool.name}"), kit.marker(MESSAGE), lit(f"{BLOCK_OPEN}\n"),
            self.invoke_node(tool, index, kit), lit(f"\n{BLOCK_CLOSE}"),
        )  # fmt: skip

    def turn_grammar(
        self,
        spec: FormatSpec,
        kit: Kit,
        calls: Sequence[Node],
        mode: str,
        *,
        parallel: bool,
        reasoning: bool,
    ) -> Node | None:
        """ATEM messages, the first one's header right after the prompt::

            turn      ::= [reasoning next] (answer | [preamble next] calls)     auto
                        | [reasoning next] answer              none
                        | [reasoning next] calls               required
            reasoning ::= " to=self" <|message|> text <|eom|>
            answer    ::= " to=user" <|message|> text          (the turn ends: <|eot|>)
            preamble  ::= " to=user" <|message|> text <|eom|>  (``end_turn`` false)
            calls     ::= call (<|eom|> next call)* ws [<|eot|>]
            next      ::= <|start|> "assistant"

        ``text`` is any text without ``<|eom|>``, ``<|eot|>`` or ``<|start|>``."""
        m = kit.marker
        text = kit.text_without((EOM, EOT, START))
        nxt = seq(m(START), lit("assistant"))
        thought = seq(lit(" to=self"), m(MESSAGE), text, m(EOM), nxt)
        answer = seq(lit(" to=user"), m(MESSAGE), text, opt(m(EOT)))
        lead = opt(thought) if reasoning else EMPTY
        if mode == "none":
            return seq(lead, answer)
        call = kit.add("call", choice(*calls))
        more = star(seq(m(EOM), nxt, call)) if parallel else EMPTY
        ws = repeat(kit.ws(1, 1), 0, spec.layout.max_trailing_ws)
        block = kit.add("calls", seq(call, more, ws, opt(m(EOT))))
        if mode == "required":
            return seq(lead, block)
        preamble = seq(lit(" to=user"), m(MESSAGE), text, m(EOM), nxt)
        return seq(lead, choice(answer, seq(opt(preamble), block)))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        return f"{EOM}{START}assistant".join(
            f" to={n}{MESSAGE}{BLOCK_OPEN}\n{self.invoke_text(spec, n, a)}\n{BLOCK_CLOSE}"
            for n, a in calls
        )


SPEC = FormatSpec(
    "muse_glimmer",
    _Atem(invoke="atem:invoke", param="atem:parameter"),
    #: the first message's header follows the prompt's ``<|start|>assistant``
    BlockMarkers(START, bare_start="to="),
    reasoning=Reasoning(end=EOM, opener=" to=self" + MESSAGE),
    template_markers=(
        "<|start|>",
        "<|message|>",
        "<|eom|>",
        "<|eot|>",
        "<|patch|>",
        "<|video|>",
        BLOCK_OPEN,
        BLOCK_CLOSE,
        "<atem:invoke name=",
        "</atem:invoke>",
        "<atem:parameter name=",
        "</atem:parameter>",
    ),
    prompt=Prompt(example_name="NAME", example_args=(("key", "value"),)),
)
