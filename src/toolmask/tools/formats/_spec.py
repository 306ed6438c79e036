"""A wire format as data: :class:`FormatSpec`, read by one :class:`Codec` per call notation.

A format is frozen data in four groups, plus the codec that writes and reads its calls::

    trigger ... open after_open list_open CALL (separator CALL)* list_close before_close close

* :class:`BlockMarkers`: the texts around a block of calls (``open``, ``close``, the trigger
  whose first appearance starts a block, texts that also start one when reading, a bare start);
* :class:`Layout`: how calls sit in blocks (a list in brackets, one call per block, the
  whitespace allowed around them, prose after the calls, one call per turn);
* :class:`Reasoning`: the reasoning channel's markers (and how a prompt leaves it open);
* :class:`Values`: how the arguments JSON is laid out (``json.dumps`` spacing or compact, keys
  in any order, undeclared keys refused), the layouts the models of the family also write.

The codec (:class:`Codec`) turns one CALL into grammar, reads a block of calls back and renders
calls as the model writes them, all from the same spec, so grammar, reader and renderer cannot
drift apart: the JSON call object (:mod:`._json`), XML parameters (:mod:`._xml`), key/value
markers (:mod:`._keyvalue`), Python calls (:mod:`._pythonic`), Gemma's object notation
(:mod:`._objects`), a name then JSON arguments between markers (:mod:`._marked`), and the few
families whose turn is a sequence of messages bring their own (Harmony, ATEM, XTML, ...). The
generic turn (reasoning, prose, blocks) is built by :mod:`toolmask.tools._grammar` from the
spec alone; a codec that builds the whole turn itself says so with :meth:`Codec.turn_grammar`.

Adding a format is one module with a ``SPEC`` (data, plus at most a codec of its own) and a row
in the registry (:mod:`._registry`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from toolmask.grammar import Node
from toolmask.tools.formats._chat import tool_json_lines, tools_prompt

if TYPE_CHECKING:
    from toolmask.tools.formats._kit import Kit
    from toolmask.tools.formats._read import Block

__all__ = [
    "BlockMarkers",
    "Codec",
    "CodecBase",
    "FormatSpec",
    "Habit",
    "Layout",
    "Prompt",
    "Reasoning",
    "ToolLike",
    "Values",
    "builds_own_turn",
]

_WS = " \t\r\n"

#: ``(name, arguments)`` calls, as renderers take them
Calls = Sequence[tuple[str, object]]


class ToolLike(Protocol):
    """What a codec reads of a tool (:class:`toolmask.tools.Tool` is one; the formats sit
    below the tool layer, so they name the shape, not the class)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    def to_openai(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class BlockMarkers:
    """The texts around a block of calls.

    ``open`` / ``close``: the markers that open and close a block (``""``: none; a block
    without ``close`` ends with its calls). ``trigger``: the text whose first appearance starts
    a block (default ``open``; it must start with ``open``: ``functools[``). ``after_open`` /
    ``before_close``: fixed text the grammar writes right after ``open`` / before ``close``
    (whitespace-only text there is optional). ``extra_triggers``: further texts that start a
    block when a reply is read (never generated: Qwen3-Coder's ``<function=`` without
    ``<tool_call>``). ``bare_start``: a block may also start without ``open`` at the very start
    of the reply (after reasoning and whitespace) with this text (``{`` for Llama 3's JSON
    calls; ``""``: it may not). ``overlaps``: the trigger may overlap itself (Functionary
    v3.2's ``>>>``), only for a codec that builds its own turn and keeps the text before a
    trigger from ending with the start of another. ``bare_named``: a bare block is a call only
    where its head names a tool of the turn (the codec's :meth:`Codec.call_head`, as a prose
    :class:`Habit`'s fence): a reply that is a JSON object answering the user stays prose. Other
    markers a family's models write around the same calls are its :class:`Habit` s
    (:attr:`FormatSpec.habits`)."""

    open: str = ""
    close: str = ""
    trigger: str = ""
    after_open: str = ""
    before_close: str = ""
    extra_triggers: tuple[str, ...] = ()
    bare_start: str = ""
    overlaps: bool = False
    bare_named: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """How calls sit in a block and blocks in a turn.

    ``list_open`` / ``list_close``: brackets around the calls of one block (``[`` / ``]``);
    ``list_optional``: they may be left out, and then a block holds one call (Phi-4-mini).
    ``separator``: the text between calls inside one block, whitespace aside (``""``: one call
    per block, blocks repeat, joined by ``block_sep`` when rendered; one character for the
    codecs that read a list of calls, :class:`~toolmask.tools.formats._json.JsonEnvelope`),
    written as ``separator_text``.
    ``list_calls``: one block holds every call of the turn, each call with its own markers and
    nothing between them (Kimi's and DeepSeek's sections). ``max_trailing_ws``: whitespace
    bytes after the last block (and between blocks); ``max_inner_ws``: before the first block
    under ``required``, between the calls of a block and before its close (default
    ``max_trailing_ws``). ``prose_after_calls``: text may follow the last call (Gemma 4).
    ``parallel_calls``: False for families whose template renders one call per turn.
    ``close_at_end``: the end of a reply stands for ``close`` (an end-of-turn token the engine
    cuts: Solar Open's ``<|calls|>``).

    ``list_open_admits`` / ``separator_admits`` / ``list_close_admits`` / ``close_admits``:
    what the grammar admits for that piece when it is more than its text (Granite's list in
    either layout; a ``Special(text)`` node in them stands for the marker ``text``, a special
    token where the vocabulary has it)."""

    list_open: str = ""
    list_close: str = ""
    list_optional: bool = False
    separator: str = ""
    separator_text: str = ", "
    list_calls: bool = False
    block_sep: str = "\n"
    max_trailing_ws: int = 4
    max_inner_ws: int | None = None
    prose_after_calls: bool = False
    parallel_calls: bool = True
    close_at_end: bool = False
    list_open_admits: Node | None = None
    separator_admits: Node | None = None
    list_close_admits: Node | None = None
    close_admits: Node | None = None

    @property
    def separator_mark(self) -> str:
        """``separator`` without the whitespace around it: the text a reader looks for between
        two calls of a block (``""``: none)."""
        return self.separator.strip(_WS)

    @property
    def inner_ws(self) -> int:
        """``max_inner_ws``, defaulting to ``max_trailing_ws``."""
        return self.max_trailing_ws if self.max_inner_ws is None else self.max_inner_ws

    @property
    def one_block(self) -> bool:
        """Every call of the turn sits in one block (a list, or ``list_calls``)."""
        return bool(self.separator) or self.list_calls


@dataclass(frozen=True, slots=True)
class Reasoning:
    """The reasoning channel: the marker that opens it at the start of the reply (``""``: only
    the prompt opens it) and the one that closes it (``""``: the format has none). ``skips``:
    texts that, first in a channel the prompt opened, show the model skipped reasoning.
    ``opener``: what a reply opens the channel with, for the reasoning budget (default
    ``start``; Harmony's analysis header). ``prefill``: a prompt that ends with this text
    leaves the channel open without a marker (Apriel's ``Here are my reasoning steps:``)."""

    start: str = ""
    end: str = ""
    skips: tuple[str, ...] = ()
    opener: str = ""
    prefill: str = ""

    def opened_by(self, prompt: str) -> bool:
        """Whether ``prompt`` (what the generation prompt ends with) leaves the channel open,
        so that the reply starts inside it (Qwen3 thinking models, GLM 4.7, Kimi K2 thinking
        prefill ``<think>``)."""
        if self.prefill:
            return prompt.rstrip(_WS).endswith(self.prefill)
        if not self.end or not self.start:
            return False
        start = self.start.rstrip(_WS)
        return bool(start) and prompt.rstrip(_WS).endswith(start)


@dataclass(frozen=True, slots=True)
class Values:
    """How the arguments are written (options of
    :func:`~toolmask.schema.compile_json_schema`): chat templates render calls with ``tojson``
    (``json.dumps`` spacing), models write keys in the order they choose, and a key the tool
    does not declare is a mistake (an object that declares none stays a free map);
    ``ToolTurn(schema_options=...)`` overrides them. ``extra_layouts``: further layouts the
    grammar admits, for the families whose models write both ``json.dumps`` spacing and compact
    JSON (ignored when ``schema_options`` set a ``whitespace``). ``max_whitespace``: the
    whitespace bytes a ``"flexible"`` layout admits between JSON tokens (``None``: the schema
    compiler's default)."""

    whitespace: str = "spaced"
    property_order: str = "any"
    additional_properties_default: bool = False
    extra_layouts: tuple[str, ...] = ()
    max_whitespace: int | None = None

    @property
    def options(self) -> dict[str, Any]:
        """The :func:`~toolmask.schema.compile_json_schema` options."""
        out: dict[str, Any] = {
            "whitespace": self.whitespace,
            "property_order": self.property_order,
            "additional_properties_default": self.additional_properties_default,
        }
        if self.max_whitespace is not None:
            out["max_whitespace"] = self.max_whitespace
        return out

    def dump(self, arguments: object) -> str:
        """The arguments JSON as the default grammar writes it."""
        if self.whitespace == "compact":
            return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(arguments, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Prompt:
    """How a prompt without a chat template advertises the tools: the family's own section
    (``section``: Qwen's ``# Tools``, Mistral's ``[AVAILABLE_TOOLS]``), else the tool list and
    how a call is written: ``how`` (fixed text) or the codec's rendering of one call of
    ``example_name`` with ``example_args``. The text depends on the tool list only."""

    section: Callable[[Sequence[ToolLike]], str] | None = None
    how: str = ""
    example_name: str = "{name}"
    example_args: tuple[tuple[str, str], ...] = (("{arg}", "..."),)


@dataclass(frozen=True, slots=True)
class Habit:
    """Another way a family's models write a block of the same calls: other markers around the
    same call notation. Qwen2.5-Coder, asked by its template for ``<tool_call>`` tags, writes
    ``` ```json\n{"name": ..., "arguments": ...}\n``` ```. The grammar admits a habit
    wherever a block may start (the model takes its own path into the call, and the call is
    constrained from there; never under ``none``), and the parser reads it as a block. A habit
    is added only where a model of the family was seen writing it (``evidence``), never from a
    list of guesses. ``open`` / ``close`` / ``after_open`` / ``before_close``: its markers, as
    :class:`BlockMarkers`'. ``values``: how the calls inside are written (models pretty-print
    the JSON inside a code fence: ``Values(whitespace="flexible", max_whitespace=12)``;
    ``None``: as the format writes them). Habits are not control markers: detection and the
    sanitizer leave them alone."""

    open: str
    close: str
    after_open: str = ""
    before_close: str = ""
    values: Values | None = None
    #: where the habit was seen: the model, and the benchmark that showed it
    evidence: str = ""
    #: the model writes it where the turn forces a call too (the distortion meter under
    #: ``required`` shows the mask removing it), so forced turns admit it as well; such habits
    #: come first in :attr:`FormatSpec.habits`
    forced: bool = False
    #: the opener also starts prose (a code fence, which models write around any code): the
    #: block is a call only from where its call's head names a tool of the turn (the codec's
    #: :meth:`Codec.call_head`, then the name); a fence holding anything else is prose, in the
    #: grammar (``auto``) and in the parser. Never ``forced`` (a forced turn has no prose)
    prose: bool = False


@dataclass(frozen=True)
class FormatSpec:
    """One model family's tool-call wire format (see the module docstring): data in four
    groups, the chat template's control markers (``template_markers``, for the sanitizer and
    detection), the template-less tool prompt, and the codec of its calls. ``has_grammar``:
    whether the turn grammar (generation) supports it. ``habits``: other markers the family's
    models write around the same calls (:class:`Habit`), only for formats whose blocks hold
    one call each; each is a :attr:`variant` of the format."""

    name: str
    codec: Codec
    block: BlockMarkers = BlockMarkers()
    layout: Layout = Layout()
    reasoning: Reasoning = Reasoning()
    values: Values = Values()
    template_markers: tuple[str, ...] = ()
    prompt: Prompt = field(default=Prompt())
    has_grammar: bool = True
    habits: tuple[Habit, ...] = ()
    #: a habit's variant (:attr:`variants`) whose calls are written as the format's own (the
    #: same values): that format, whose call rules and parts its blocks hold (None: its own)
    calls_as: FormatSpec | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        b = self.block
        t = self.trigger_text
        if not b.overlaps and any(t[:k] == t[-k:] for k in range(1, len(t))):
            raise ValueError(f"wire format {self.name!r}: trigger {t!r} overlaps itself")
        if b.trigger and not b.trigger.startswith(b.open):
            raise ValueError(f"wire format {self.name!r}: trigger must start with the open marker")
        if b.bare_named and not (b.bare_start and self.codec.call_head(self)):
            raise ValueError(f"wire format {self.name!r}: bare_named needs a bare start and a head")
        if self.habits:
            if self.layout.one_block:
                raise ValueError(f"wire format {self.name!r}: habits need one call per block")
            flags = [h.forced for h in self.habits]
            if flags != sorted(flags, reverse=True):
                raise ValueError(f"wire format {self.name!r}: forced habits must come first")
            for h in self.habits:
                if h.prose and (h.forced or self.codec.call_head(self) is None):
                    raise ValueError(
                        f"wire format {self.name!r}: habit {h.open!r} opens prose, so it needs a "
                        "codec with a call head and may not be forced"
                    )
            starts = self.block_triggers()
            for x in starts:
                for y in starts:
                    if _overlap(x, y):
                        raise ValueError(f"wire format {self.name!r}: openers {x!r}, {y!r} overlap")

    # -- views --------------------------------------------------------------------------------
    @property
    def trigger_text(self) -> str:
        """The text whose first appearance starts a block (``trigger``, else ``open``)."""
        return self.block.trigger or self.block.open

    @property
    def reasoning_start(self) -> str:
        return self.reasoning.start

    @property
    def reasoning_end(self) -> str:
        return self.reasoning.end

    @property
    def reasoning_opener(self) -> str:
        """The text a reply opens its reasoning channel with (for the reasoning budget)."""
        return self.reasoning.opener or self.reasoning.start

    @property
    def argument_options(self) -> dict[str, Any]:
        return self.values.options

    def prompt_opens_reasoning(self, prompt: str) -> bool:
        """See :meth:`Reasoning.opened_by`."""
        return self.reasoning.opened_by(prompt)

    def parse_triggers(self, *, habits: bool = True) -> tuple[str, ...]:
        """The texts whose first appearance starts a block when parsing (``habits=False``: not
        the habits' openers, for a turn where no call may be made)."""
        habit_opens = (h.open for h in self.habits) if habits else ()
        found = (
            self.trigger_text,
            *habit_opens,
            *self.block.extra_triggers,
            *self.codec.triggers(self),
        )
        return tuple(dict.fromkeys(t for t in found if t))

    def block_triggers(self) -> tuple[str, ...]:
        """The texts that start a block the grammar generates: the trigger, then each habit's
        opener (for engines with lazy grammars)."""
        return tuple(t for t in (self.trigger_text, *(h.open for h in self.habits)) if t)

    @cached_property
    def variants(self) -> tuple[FormatSpec, ...]:
        """This format, then one format per habit: the same format with the habit's markers and
        values (and no habits, extra triggers or bare start of its own). The grammar builds a
        block of each, the parser reads a block with the variant whose opener it found."""
        out = [self]
        for h in self.habits:
            markers = BlockMarkers(
                h.open, h.close, after_open=h.after_open, before_close=h.before_close
            )
            values = self.values if h.values is None else h.values
            home = self if values == self.values else None
            out.append(
                dataclasses.replace(self, block=markers, values=values, habits=(), calls_as=home)
            )
        return tuple(out)

    @cached_property
    def prose_openers(self) -> frozenset[str]:
        """The openers of the habits that also start prose (:attr:`Habit.prose`)."""
        return frozenset(h.open for h in self.habits if h.prose)

    def variant_for(self, trigger: str) -> FormatSpec:
        """The variant (:attr:`variants`) whose block a parse trigger opens: a habit's for its
        opener, else this format."""
        for v in self.variants[1:]:
            if v.block.open == trigger:
                return v
        return self

    def own_markers(self) -> tuple[str, ...]:
        """The markers that set this format apart from its chat template's turn markers (the
        block's open and close, its trigger, the reasoning channel's markers, extra triggers,
        the codec's own): what format detection weighs to pick the most specific of several
        proven formats."""
        b, r = self.block, self.reasoning
        found = (b.open, b.close, b.trigger, r.start, r.end, *b.extra_triggers)
        return tuple(dict.fromkeys(m for m in (*found, *self.codec.own_markers(self)) if m))

    def markers(self) -> tuple[str, ...]:
        """Every control-marker text of this format and its chat template, longest first."""
        b, r = self.block, self.reasoning
        texts = (b.open, b.close, b.trigger, r.start, r.end, *b.extra_triggers)
        found = {m for m in (*texts, *self.template_markers, *self.codec.own_markers(self)) if m}
        return tuple(sorted(found, key=lambda m: (-len(m), m)))

    def decision_prompt(self) -> str:
        """A one-line reminder, placed right after the user's request, that makes ``auto`` an
        explicit, early decision: it names the marker the reply starts with to call a function.
        Small models read the tool list far back in the system prompt and, without it, almost
        never start a call (see ``bench/quality.py``); the text depends on the format only."""
        return (
            f"Reply with {self.trigger_text} if a function can answer this; else answer directly."
        )

    # -- rendering ------------------------------------------------------------------------------
    def render_calls(self, calls: Calls) -> str:
        """``(name, arguments)`` calls written the way the turn grammar makes the model write
        them (the codec's renderer). O(size of the calls)."""
        return self.codec.render_calls(self, calls)

    def render_call(self, name: str, arguments: object) -> str:
        """How this format writes one call, for examples and tests."""
        return self.render_calls([(name, arguments)])

    def render_tools(self, tools: Sequence[ToolLike]) -> str:
        """The prompt text that advertises ``tools`` (system prompt or template section).

        Renders every tool, always in the given order, so the text depends on the tool list
        only: tool_choice and allowed subsets never change it.
        """
        p = self.prompt
        if p.section is not None:
            return p.section(tools)
        how = p.how or self.render_call(p.example_name, dict(p.example_args))
        return tools_prompt(tool_json_lines(tools), how)

    def __repr__(self) -> str:
        return f"<wire format {self.name!r}>"


def _overlap(a: str, b: str) -> bool:
    """Whether text that ends inside ``a`` (a proper suffix of it) can continue into ``b``'s
    start, or hold ``b`` whole, so that prose followed by one opener would hold another opener
    earlier, and the parser would split the text elsewhere than the grammar. ``a == b`` is the
    trigger's own overlap. Two different openers, one the start of the other, overlap too:
    the parser could not tell which block starts."""
    if a != b and (a.startswith(b) or b.startswith(a)):
        return True
    return any(b.startswith(a[k:]) or a[k:].startswith(b) for k in range(1, len(a)))


class Codec(Protocol):
    """One call notation: the grammar of a call, the reader of a block of calls and the
    renderer of calls, each given the :class:`FormatSpec` it serves."""

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """The grammar of one call of ``tool`` (the ``index``-th callable tool) inside a block;
        rules go through ``kit`` (named with ``f"a{index}_"``)."""
        ...

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
        """The block whose trigger is at ``text[k]`` (``bare``: a block without its opener at
        the start of the reply); ``schemas`` (tool name -> parameters) types raw values."""
        ...

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        """The calls as the grammar makes the model write them."""
        ...

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
        """The whole turn, for codecs whose turns are not prose-then-blocks (Harmony's
        messages); ``None`` means the generic shape of :mod:`toolmask.tools._grammar`.
        ``calls`` are the callable tools' call rules, ``mode`` ``none``/``auto``/``required``,
        ``reasoning`` whether the turn may start with reasoning (``kit.reasoning_open``: the
        prompt opened the channel, so it must)."""
        ...

    def starts_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        """Whether a bare block starts at ``text[i]``, the reply's first text after its
        reasoning and whitespace (formats with a ``bare_start``)."""
        ...

    def may_start_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        """Whether ``text[i:]``, all of a streamed reply after its reasoning and whitespace so
        far, may still grow into a bare block's start; whenever it says no for a text,
        :meth:`starts_bare` says no for every longer one."""
        ...

    def triggers(self, spec: FormatSpec) -> tuple[str, ...]:
        """Texts of the codec's own that start a block when parsing (a prose message)."""
        ...

    def own_markers(self, spec: FormatSpec) -> tuple[str, ...]:
        """Marker texts of the codec's own (for detection and the sanitizer)."""
        ...

    def call_head(self, spec: FormatSpec) -> tuple[str, ...] | None:
        """The texts a call starts with before its name, any JSON whitespace around each
        (``{``, ``"name"``, ``:`` for a JSON envelope); the name follows as a JSON string.
        None: the codec has none (its calls cannot be told from prose by their head)."""
        ...


@dataclass(frozen=True, slots=True)
class CodecBase:
    """The defaults of :class:`Codec`: the generic turn, a bare block starts with
    ``bare_start``, no texts of the codec's own. Codecs subclass it and
    set their data as dataclass fields."""

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
        return None

    def starts_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        return text.startswith(spec.block.bare_start, i)

    def may_start_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        return spec.block.bare_start.startswith(text[i:])

    def triggers(self, spec: FormatSpec) -> tuple[str, ...]:
        return ()

    def own_markers(self, spec: FormatSpec) -> tuple[str, ...]:
        return ()

    def call_head(self, spec: FormatSpec) -> tuple[str, ...] | None:
        return None


def builds_own_turn(spec: FormatSpec) -> bool:
    """Whether ``spec``'s codec builds the whole turn (:meth:`Codec.turn_grammar`: Harmony's,
    ATEM's, XTML's messages; prose messages), rather than the generic prose-then-blocks."""
    own: object = type(spec.codec).turn_grammar
    return own is not CodecBase.turn_grammar
