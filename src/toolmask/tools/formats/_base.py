"""The wire-format base class and the registry (``@register_format("hermes")``).

A wire format is data plus a prompt renderer. The data says how a block of calls looks::

    trigger  ... open after_open list_open CALL (sep CALL)* list_close before_close close

``trigger`` is the text whose first appearance starts a block (``open`` unless the format says
otherwise); ``separator`` is the character between calls inside one block (``""`` = one call per
block, blocks then repeat, joined by ``block_sep``); a CALL is the JSON object
``{"<name_key>": "X", "<args_key>": {...}}``. The grammar builder, the parser and the sanitizer
read only these fields, so adding a format is one module with one class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from toolmask.errors import ToolError
from toolmask.grammar import Node, lit, opt, seq
from toolmask.schema import json_ws
from toolmask.tools.formats._gen import Kit, marker_node

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._blocks import Block

__all__ = ["FORMATS", "Habit", "WireFormat", "get_format", "register_format"]


@dataclass(frozen=True, slots=True)
class Habit:
    """Another way a family's models write a block of the same calls: other markers around the
    same call notation. Qwen2.5-Coder, asked by its template for ``<tool_call>`` tags, writes
    ``` ```json\n{"name": ..., "arguments": ...}\n``` ```. The grammar admits a habit
    wherever a block may start (the model takes its own path into the call, and the call is
    constrained from there), and the parser reads it as a block. A habit is added only where a
    model of the family was seen writing it (``evidence``), never from a list of guesses."""

    open: str
    close: str
    after_open: str = ""
    before_close: str = ""
    #: how the calls inside are written, over the format's ``argument_options`` (models
    #: pretty-print the JSON inside a code fence: ``{"whitespace": "flexible", ...}``)
    argument_options: Mapping[str, Any] = field(default_factory=dict)
    #: where the habit was seen: the model, and the benchmark that showed it
    evidence: str = ""


class WireFormat:
    """One model family's tool-call wire format. Subclasses set the class attributes below."""

    #: registry name (set by :func:`register_format`)
    name: ClassVar[str] = ""
    #: text of the marker that opens a block of calls ("" = no marker)
    open: ClassVar[str] = ""
    #: text of the marker that closes a block ("" = the block ends with its JSON)
    close: ClassVar[str] = ""
    #: text whose appearance starts a block; defaults to ``open``
    trigger: ClassVar[str] = ""
    #: a block may also start, without ``open``, at the very start of the output (after
    #: reasoning and whitespace) with ``bare_start``
    bare_at_start: ClassVar[bool] = False
    bare_start: ClassVar[str] = "{"
    #: further texts that start a block when the parser reads a reply (never generated: e.g.
    #: Qwen3-Coder's ``<function=`` written without ``<tool_call>``)
    extra_triggers: ClassVar[tuple[str, ...]] = ()
    #: the reasoning channel: the marker that opens it at the start of the reply ("" = the
    #: channel is only ever opened by the prompt) and the marker that closes it ("" = the
    #: format has no reasoning channel)
    reasoning_start: ClassVar[str] = ""
    reasoning_end: ClassVar[str] = ""
    #: texts that, first in a channel the prompt opened, show the model skipped reasoning
    reasoning_skips: ClassVar[tuple[str, ...]] = ()
    #: fixed text the grammar puts right after ``open`` / right before ``close``
    after_open: ClassVar[str] = ""
    before_close: ClassVar[str] = ""
    #: brackets around the calls of one block ("[" / "]" for a JSON array, or "")
    list_open: ClassVar[str] = ""
    list_close: ClassVar[str] = ""
    #: the brackets may be left out, and then a block holds one call object (blocks repeat,
    #: as Phi-4-mini writes ``<|tool_call|>{...}<|/tool_call|>`` besides a list)
    list_optional: ClassVar[bool] = False
    #: one character between calls inside a block ("," / ";"), "" = one call per block
    separator: ClassVar[str] = ""
    #: what the grammar emits for ``separator``
    separator_text: ClassVar[str] = ", "
    #: what :meth:`render_calls` writes between blocks (one-call-per-block formats); the
    #: grammar accepts up to ``max_trailing_ws`` whitespace bytes there, the next opener required
    block_sep: ClassVar[str] = "\n"
    #: whitespace bytes (``[ \t\n\r]``) allowed after the last block before the end of the turn,
    #: and between blocks: models write ``</tool_call>\n`` and then end their turn
    max_trailing_ws: ClassVar[int] = 4
    #: whitespace bytes allowed before the first block (under ``required``), between the
    #: calls of one block and before its close marker; None = ``max_trailing_ws`` (vLLM's
    #: DeepSeek templates indent their markers by up to 20 spaces)
    max_inner_ws: ClassVar[int | None] = None
    #: text may follow the last call (Gemma 4's template renders content after the calls):
    #: prose that cannot start another call
    prose_after_calls: ClassVar[bool] = False
    #: the trigger may overlap itself (Functionary v3.2's ``>>>``): only for a format that
    #: builds its own turn grammar and keeps the text before a trigger from ending with the
    #: start of another
    trigger_overlaps: ClassVar[bool] = False
    #: other markers the family's models write around the same calls (:class:`Habit`): the
    #: grammar admits them wherever a block may start, the parser reads them; only for
    #: formats whose blocks hold one call each (``separator`` empty, not ``list_calls``)
    habits: ClassVar[tuple[Habit, ...]] = ()
    #: whether the turn grammar (generation) supports this format
    has_grammar: ClassVar[bool] = True
    #: one block holds every call of the turn, each call with its own markers and nothing
    #: between them (Kimi's and DeepSeek's sections); ``separator`` says the same for JSON lists
    list_calls: ClassVar[bool] = False
    #: further JSON layouts the grammar admits for arguments, besides
    #: ``argument_options["whitespace"]``: the models of a family that write both ``json.dumps``
    #: spacing and compact JSON (``("compact",)``); ignored when ``schema_options`` set one
    extra_layouts: ClassVar[tuple[str, ...]] = ()
    #: whether a turn may hold more than one call: ``False`` for the families whose template
    #: renders only one call per assistant turn (GigaChat), whatever ``parallel_tool_calls`` says
    parallel_calls: ClassVar[bool] = True
    #: keys of the call object
    name_key: ClassVar[str] = "name"
    args_key: ClassVar[str] = "arguments"
    #: a key of the call object that holds the call's id, written after the arguments
    #: (Mistral v3: ``"id"``); the parser returns it as the call's id ("" = none)
    id_key: ClassVar[str] = ""
    #: the chat template's control markers (role markers, tool markers) for the sanitizer
    template_markers: ClassVar[tuple[str, ...]] = ()
    #: how the arguments JSON is written (options of :func:`~toolmask.schema.compile_json_schema`):
    #: chat templates render calls with ``tojson`` (``json.dumps`` spacing), models write keys
    #: in the order they choose, and a key the tool does not declare is a mistake (an object
    #: that declares none stays a free map); ``ToolTurn(schema_options=...)`` overrides these
    argument_options: ClassVar[Mapping[str, Any]] = {
        "whitespace": "spaced",
        "property_order": "any",
        "additional_properties_default": False,
    }

    @property
    def inner_ws(self) -> int:
        """``max_inner_ws``, defaulting to ``max_trailing_ws``."""
        return self.max_trailing_ws if self.max_inner_ws is None else self.max_inner_ws

    @property
    def trigger_text(self) -> str:
        return self.trigger or self.open

    @property
    def reasoning_opener(self) -> str:
        """The text a reply opens its reasoning channel with (``reasoning_start``; Harmony's
        analysis header), for the reasoning budget."""
        return self.reasoning_start

    def own_markers(self) -> tuple[str, ...]:
        """The markers that set this format apart from its chat template's turn markers (the
        block's open and close, its trigger, the reasoning channel's markers, extra triggers):
        what format detection weighs to pick the most specific of several proven formats."""
        found = (
            self.open,
            self.close,
            self.trigger,
            self.reasoning_start,
            self.reasoning_end,
            *self.extra_triggers,
        )
        return tuple(dict.fromkeys(m for m in found if m))

    def markers(self) -> tuple[str, ...]:
        """Every control-marker text of this format and its chat template, longest first."""
        found = {
            m
            for m in (
                self.open,
                self.close,
                self.trigger,
                self.reasoning_start,
                self.reasoning_end,
                *self.extra_triggers,
                *self.template_markers,
            )
            if m
        }
        return tuple(sorted(found, key=lambda m: (-len(m), m)))

    def parse_triggers(self, *, habits: bool = True) -> tuple[str, ...]:
        """The texts whose first appearance starts a block when parsing (``habits=False``: not
        the habits' openers, for a turn where no call may be made)."""
        habit_opens = (h.open for h in self.habits) if habits else ()
        found = (self.trigger_text, *habit_opens, *self.extra_triggers)
        return tuple(dict.fromkeys(t for t in found if t))

    def block_triggers(self) -> tuple[str, ...]:
        """The texts that start a block the grammar generates: the trigger, then each habit's
        opener (for engines with lazy grammars)."""
        return tuple(t for t in (self.trigger_text, *(h.open for h in self.habits)) if t)

    @cached_property
    def variants(self) -> tuple[WireFormat, ...]:
        """This format, then one format per habit: the same format with the habit's markers
        (and no habits, triggers or bare start of its own). The grammar builds a block of each,
        the parser reads a block with the variant whose opener it found."""
        out: list[WireFormat] = [self]
        for h in self.habits:
            attrs = {
                "open": h.open,
                "close": h.close,
                "after_open": h.after_open,
                "before_close": h.before_close,
                "trigger": "",
                "extra_triggers": (),
                "habits": (),
                "bare_at_start": False,
                "argument_options": {**self.argument_options, **h.argument_options},
                "extra_layouts": () if h.argument_options else self.extra_layouts,
            }
            cls = type(f"{type(self).__name__}Habit", (type(self),), attrs)
            out.append(cls())
        return tuple(out)

    def variant_for(self, trigger: str) -> WireFormat:
        """The variant (:attr:`variants`) whose block a parse trigger opens: a habit's for its
        opener, else this format."""
        for v in self.variants[1:]:
            if v.open == trigger:
                return v
        return self

    def prompt_opens_reasoning(self, prompt: str) -> bool:
        """Whether a prompt (what the chat template's generation prompt ends with) leaves the
        reasoning channel open, so that the reply starts inside it (Qwen3 thinking models,
        GLM 4.7, Kimi K2 thinking prefill ``<think>``)."""
        if not self.reasoning_end or not self.reasoning_start:
            return False
        tail = prompt.rstrip(" \t\r\n")
        start = self.reasoning_start.rstrip(" \t\r\n")
        return bool(start) and tail.endswith(start)

    def starts_bare(self, text: str, i: int) -> bool:
        """Whether a bare block starts at ``text[i]``, the reply's first text after its
        reasoning and whitespace (formats with ``bare_at_start``): by default, ``bare_start``
        is there. O(len(bare_start))."""
        return text.startswith(self.bare_start, i)

    def may_start_bare(self, text: str, i: int) -> bool:
        """Whether ``text[i:]``, all of a streamed reply after its reasoning and whitespace
        so far, may still grow into a bare block's start (the stream parser holds it back
        meanwhile): by default, it is a prefix of ``bare_start``. Whenever it says no for a
        text, :meth:`starts_bare` says no for every longer one."""
        return self.bare_start.startswith(text[i:])

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        """Read the block whose trigger is at ``text[k]`` (see :mod:`._blocks`). The default:
        for a format that overrides :meth:`read_inner`, the block from ``open`` to the first
        ``close`` (pending or truncated while the text ends before it), its inner text read by
        ``read_inner``; else ``None``: a JSON call object inside markers, read by the generic
        scanner."""
        if type(self).read_inner is WireFormat.read_inner:
            return None
        from toolmask.tools.formats._blocks import Block, closed_block

        got = closed_block(text, k, len(self.open), self.close, final)
        if isinstance(got, Block):
            return got
        inner_end, end = got
        return self.read_inner(text, k + len(self.open), inner_end, end, schemas)

    def read_inner(
        self, text: str, start: int, inner_end: int, end: int, schemas: Mapping[str, Any] | None
    ) -> Block:
        """The block whose calls are ``text[start:inner_end]``, in the format's own syntax,
        between ``open`` and ``close`` (the block ends at ``end``). A format whose blocks are
        read so overrides this instead of :meth:`read_block`."""
        raise NotImplementedError

    def decision_prompt(self) -> str:
        """A one-line reminder, placed right after the user's request, that makes ``auto`` an
        explicit, early decision: it names the marker the reply starts with to call a function.
        Small models read the tool list far back in the system prompt and, without it, almost
        never start a call (see ``bench/quality.py``); the text depends on the format only."""
        return (
            f"Reply with {self.trigger_text} if a function can answer this; else answer directly."
        )

    def marker_node(self, text: str, special_tokens: frozenset[str]) -> Node:
        """``Special(text)`` if ``text`` is a special token of the vocabulary, else its bytes
        with the special tokens it holds as :class:`Special` nodes (see :func:`marker_node`)."""
        return marker_node(text, special_tokens)

    def open_node(self, special_tokens: frozenset[str]) -> Node:
        """The grammar of the block opener: ``open`` (special or bytes), then ``after_open``.

        A ``trigger`` longer than ``open`` (``functools[``) is ``open`` followed by the start of
        what the grammar emits next (``list_open``), so it is not emitted again here.
        """
        return seq(
            self.marker_node(self.open, special_tokens),
            _spacing(self.after_open, len(self.after_open)),
        )

    def separator_node(self) -> Node:
        """What the grammar admits between two calls of a list (``separator_text``)."""
        return lit(self.separator_text)

    def list_open_node(self) -> Node:
        """What the grammar admits before the first call of a block (``list_open``)."""
        return lit(self.list_open)

    def list_close_node(self) -> Node:
        """What the grammar admits after the last call of a block (``list_close``)."""
        return lit(self.list_close)

    def close_node(self, special_tokens: frozenset[str]) -> Node:
        """``before_close`` then the ``close`` marker. Whitespace-only fixed text around the
        markers is optional (``<tool_call>{...}</tool_call>`` is seen too); before the closer it
        is any whitespace up to ``inner_ws`` bytes, as small models often write a blank
        line there. After the opener it stays at most its own length: a blank line admitted
        there led SmolLM2 off its path (the meter's removals per step rose from 19% to 26% under
        ``required``)."""
        return seq(
            _spacing(self.before_close, self.inner_ws),
            self.marker_node(self.close, special_tokens),
        )

    def call_node(
        self,
        name: str,
        arguments: Node,
        whitespace: str = "spaced",
        max_ws: int = 4,
        args_key: str = "",
    ) -> Node:
        """One call object: ``{"name": "X", "arguments": ARGS}`` (json.dumps spacing); with
        ``whitespace="flexible"`` (the arguments' layout), the envelope too takes up to
        ``max_ws`` whitespace bytes wherever JSON allows them (the pretty-printed
        ``{\n  "name": ...`` some models write). ``args_key``: another key than
        :attr:`args_key`."""
        name_text = json.dumps(name, ensure_ascii=False)
        akey = json.dumps(args_key or self.args_key)
        if whitespace == "flexible":
            ws = json_ws(max_ws)
            return seq(
                lit("{"), ws, lit(json.dumps(self.name_key)), ws, lit(":"), ws, lit(name_text),
                ws, lit(","), ws, lit(akey), ws, lit(":"), ws, arguments, ws, lit("}"),
            )  # fmt: skip
        return seq(
            lit("{" + json.dumps(self.name_key) + ": " + name_text),
            lit(", " + akey + ": "),
            arguments,
            lit("}"),
        )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The grammar of one call of ``tool`` (the ``index``-th callable tool) inside a block:
        by default the JSON call object :meth:`call_node` around the arguments grammar of the
        tool's schema. Formats that write calls otherwise (XML parameters, name-then-arguments)
        override this; rules they need go through ``kit`` (named with ``f"a{index}_"``)."""
        args = kit.json(tool.parameters, f"a{index}_")
        layout = str(kit.options.get("whitespace", "compact"))
        max_ws = int(kit.options.get("max_whitespace", 4))
        return self.call_node(tool.name, args, layout, max_ws)

    def turn_grammar(
        self, kit: Kit, calls: Sequence[Node], mode: str, *, parallel: bool, reasoning: bool
    ) -> Node | None:
        """The whole turn for formats whose turns are not prose-then-blocks (Harmony's
        messages); ``None`` (the default) means the generic shape of :mod:`toolmask.tools._grammar`.
        ``calls`` are the callable tools' call rules, ``mode`` ``none``/``auto``/``required``,
        ``reasoning`` whether the turn may start with reasoning (``kit.reasoning_open``: the
        prompt opened the channel, so it must)."""
        return None

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The prompt text that advertises ``tools`` (system prompt or template section).

        Renders every tool, always in the given order, so the text depends on the tool list
        only: tool_choice and allowed subsets never change it.
        """
        raise NotImplementedError

    def dump_arguments(self, arguments: object) -> str:
        """The arguments JSON as the default grammar writes it (``argument_options``)."""
        if self.argument_options.get("whitespace", "compact") == "compact":
            return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(arguments, ensure_ascii=False)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        """``(name, arguments)`` calls written the way the turn grammar makes the model write
        them: the call envelope and the arguments with ``json.dumps`` spacing (see
        :meth:`dump_arguments`); one block per call joined by ``block_sep``, or all calls in one
        block for list formats (``separator``). O(size of the calls)."""

        def one(name: str, arguments: object) -> str:
            args = self.dump_arguments(arguments)
            key, akey = json.dumps(self.name_key), json.dumps(self.args_key)
            return f"{{{key}: {json.dumps(name, ensure_ascii=False)}, {akey}: {args}}}"

        def block(body: str) -> str:
            inner = self.list_open + body + self.list_close
            return self.open + self.after_open + inner + self.before_close + self.close

        if self.separator:
            return block(self.separator_text.join(one(n, a) for n, a in calls))
        return self.block_sep.join(block(one(n, a)) for n, a in calls)

    def render_call(self, name: str, arguments: object) -> str:
        """How this format writes one call (a single-call block), for examples and tests."""
        return self.render_calls([(name, arguments)])

    def __repr__(self) -> str:
        return f"<wire format {self.name!r}>"


def _spacing(text: str, max_ws: int) -> Node:
    """Fixed text around a marker: when it is whitespace only, its own text or none (``max_ws``
    at most its length), else any JSON whitespace up to ``max_ws`` bytes; other text is
    literal."""
    if text and not text.strip():
        return opt(lit(text)) if max_ws <= len(text) else json_ws(max_ws)
    return lit(text)


def tool_json_lines(tools: Sequence[Tool]) -> str:
    """One ``{"type": "function", "function": ...}`` JSON object per line."""
    return "\n".join(json.dumps(t.to_openai(), ensure_ascii=False) for t in tools)


#: format name -> format instance; the one place that says which formats exist
FORMATS: dict[str, WireFormat] = {}

_F = TypeVar("_F", bound=type[WireFormat])


def register_format(name: str) -> Callable[[_F], _F]:
    """Class decorator: register a :class:`WireFormat` subclass under ``name``.

    Checks that the trigger cannot overlap itself (no proper prefix equal to a suffix), which
    the prose grammar relies on: prose that avoids the trigger, followed by the trigger, then
    contains it only at the end.
    """

    def deco(cls: _F) -> _F:
        if name in FORMATS:
            raise ValueError(f"wire format {name!r} is registered twice")
        cls.name = name
        inst = cls()
        t = inst.trigger_text
        if not cls.trigger_overlaps and any(t[:k] == t[-k:] for k in range(1, len(t))):
            raise ValueError(f"wire format {name!r}: trigger {t!r} overlaps itself")
        if inst.habits:
            if inst.separator or inst.list_calls:
                raise ValueError(f"wire format {name!r}: habits need one call per block")
            starts = inst.block_triggers()
            for a in starts:
                for b in starts:
                    if _overlap(a, b):
                        raise ValueError(f"wire format {name!r}: openers {a!r}, {b!r} overlap")
        if inst.trigger and not inst.trigger.startswith(inst.open):
            raise ValueError(f"wire format {name!r}: trigger must start with the open marker")
        FORMATS[name] = inst
        return cls

    return deco


def _overlap(a: str, b: str) -> bool:
    """Whether text that ends inside ``a`` (a proper suffix of it) can continue into ``b``'s
    start, or hold ``b`` whole, so that prose followed by one opener would hold another opener
    earlier, and the parser would split the text elsewhere than the grammar. ``a == b`` is the
    trigger's own overlap. Two different openers, one the start of the other, overlap too:
    the parser could not tell which block starts."""
    if a != b and (a.startswith(b) or b.startswith(a)):
        return True
    return any(b.startswith(a[k:]) or a[k:].startswith(b) for k in range(1, len(a)))


def get_format(fmt: str | WireFormat) -> WireFormat:
    """The registered format called ``fmt`` (a :class:`WireFormat` passes through)."""
    if isinstance(fmt, WireFormat):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        if fmt == "auto":
            raise ToolError(
                "format 'auto' is read from a model's chat template: resolve it with "
                "toolmask.tools.resolve_format(fmt, chat_template, special_tokens) (Agent and "
                "create_app do so from their backend)",
                where="format",
            ) from None
        raise ToolError(
            f"unknown tool-call format {fmt!r}; known: {sorted(FORMATS)}", where="format"
        ) from None
