"""``gpt_oss``: gpt-oss (the Harmony response format). A reply is a sequence of messages; the
analysis channel is reasoning, a message addressed ``to=functions.NAME`` is a call whose body is
the arguments JSON, the final (or a recipient-less commentary) channel is content::

    <|channel|>analysis<|message|>Need the weather.<|end|>
    <|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json
    <|message|>{"city": "Paris"}

The recipient may sit in the role header or after the channel. Generation stops at ``<|call|>``
or ``<|return|>`` (cut from the reply).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import EMPTY, Node, choice, lit, opt, repeat, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, done, json_end, loads, skip_ws
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Calls,
    CodecBase,
    FormatSpec,
    Prompt,
    Reasoning,
    ToolLike,
    Values,
)

__all__ = ["SPEC"]

MESSAGE = "<|message|>"
_END = re.compile(r"<\|end\|>|<\|return\|>|(?=<\|start\|>)")
_CALL_END = re.compile(r"\s*(?:<\|call\|>|<\|end\|>)?")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")


@dataclass(frozen=True, slots=True)
class _Harmony(CodecBase):
    """Harmony's messages (see the module docstring)."""

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
        m = text.find(MESSAGE, k)
        if m < 0:
            if final:
                return Block("bad", len(text), reason="truncated: a header without <|message|>")
            return Block("pending")
        header = text[k:m]
        body_start = m + len(MESSAGE)
        to = _RECIPIENT.search(header)
        if to is not None:  # the arguments end with their JSON (markers may sit in strings)
            j = skip_ws(text, body_start)
            a_end = json_end(text, j) if text.startswith("{", j) else None
            if a_end is None:
                if not final:
                    return Block("pending")
                return Block("bad", len(text), reason="truncated: the arguments never close")
            args, err = loads(text[j:a_end])
            c = _CALL_END.match(text, a_end)
            end = c.end() if c is not None else a_end
            if not final and end == len(text):
                return Block("pending")
            if err is not None or not isinstance(args, dict):
                return Block("bad", end, reason=err or "the arguments must be an object")
            return Block("ok", end, [done(to.group(1), args)])
        if re.search(r"to=\S", header):  # a built-in tool (python, browser): not for the client
            e = _END.search(text, body_start)
            if e is None:
                return Block("pending") if not final else Block("ok", len(text))
            return Block("ok", e.end())
        e = _END.search(text, body_start)
        if e is None:
            if not final:
                return Block("pending")
            body, end = text[body_start:], len(text)
        else:
            body, end = text[body_start : e.start()], e.end()
        channels = _CHANNEL.findall(header)
        channel = channels[-1] if channels else ""
        if channel == "analysis":
            return Block("ok", end, text_kind="reasoning", text=body.strip())
        return Block("ok", end, text_kind="prose", text=body)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """One call message: the recipient ``to=functions.NAME`` in the role header (``
        to=...<|channel|>commentary``) or after the channel (``<|channel|>commentary to=...``),
        the optional content type (``<|constrain|>json`` or `` json``), then the arguments."""
        to = lit(f"to=functions.{tool.name}")
        channel = seq(kit.marker("<|channel|>"), choice(lit("commentary"), lit("analysis")))
        constrain = opt(
            choice(seq(opt(lit(" ")), kit.marker("<|constrain|>"), lit("json")), lit(" json"))
        )
        header = choice(seq(lit(" "), to, channel), seq(channel, lit(" "), to))
        args = kit.json(tool.parameters, f"a{index}_")
        return seq(header, constrain, kit.marker(MESSAGE), args)

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
        """Harmony messages. The prompt ends with ``<|start|>assistant``, so the first message
        starts with its header; each later one with ``<|start|>assistant``::

            turn     ::= [analysis next] (final | [preamble next] calls)   auto
                       | [analysis next] final                           none
                       | [analysis next] calls                           required
            analysis ::= <|channel|>analysis<|message|> text <|end|>
            preamble ::= <|channel|>commentary<|message|> text <|end|>
            final    ::= <|channel|>final<|message|> text      (the turn ends: <|return|>)
            calls    ::= call (<|call|> next call)* ws [<|call|> | <|end|>]

        ``text`` is any text without ``<|end|>``, ``<|return|>`` or ``<|start|>`` (where the
        parser ends a message). ``<|call|>`` and
        ``<|return|>`` are the model's stop tokens; a final message after a call is not
        generated (the turn stops at ``<|call|>``)."""
        m = kit.marker
        text = kit.text_without(("<|end|>", "<|return|>", "<|start|>"))
        nxt = seq(m("<|start|>"), lit("assistant"))

        def message(channel: str, ends: bool = True) -> Node:
            body = seq(m("<|channel|>"), lit(channel), m(MESSAGE), text)
            return seq(body, m("<|end|>"), nxt) if ends else body

        analysis = message("analysis")
        final = message("final", ends=False)
        ws = repeat(kit.ws(1, 1), 0, spec.layout.max_trailing_ws)
        lead = opt(analysis) if reasoning else EMPTY
        if mode == "none":
            return seq(lead, final)
        call = kit.add("call", choice(*calls))
        more = star(seq(m("<|call|>"), nxt, call)) if parallel else EMPTY
        block = kit.add("calls", seq(call, more, ws, opt(choice(m("<|call|>"), m("<|end|>")))))
        if mode == "required":
            return seq(lead, block)
        return seq(lead, choice(final, seq(opt(message("commentary")), block)))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        return "<|call|><|start|>assistant".join(
            f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>"
            f"{json.dumps(a, ensure_ascii=False)}"
            for n, a in calls
        )


SPEC = FormatSpec(
    "gpt_oss",
    _Harmony(),
    #: the prompt ends with ``<|start|>assistant``: a reply may start inside that header
    BlockMarkers("<|channel|>", extra_triggers=("<|start|>",), bare_start="to="),
    reasoning=Reasoning(end="<|end|>", opener="<|channel|>analysis" + MESSAGE),
    values=Values(extra_layouts=("compact",)),
    template_markers=(
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|call|>",
        "<|return|>",
    ),
    prompt=Prompt(example_name="NAME", example_args=(("key", "value"),)),
)
