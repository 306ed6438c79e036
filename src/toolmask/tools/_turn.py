"""``ToolTurn``: one assistant turn with tools: its prompt text, grammar, parser and validator."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolmask._compile import CompiledGrammar, GrammarCompiler, TurnCache, turn_cache
from toolmask.errors import ToolError
from toolmask.grammar import Grammar
from toolmask.limits import Limits
from toolmask.tools._choice import ToolChoice, ToolChoiceLike
from toolmask.tools._grammar import (
    build_call_grammar,
    build_lazy_turn,
    build_name_filter,
    build_turn_grammar,
    name_slots,
    with_tool_parts,
)
from toolmask.tools._lazy import LazyTurnGrammar
from toolmask.tools._options import TurnOptions
from toolmask.tools._parser import (
    IdFactory,
    ParsedTurn,
    StreamParser,
    parse_turn,
    random_call_id,
)
from toolmask.tools._parts import gc_paused, limits_of, tool_fingerprint
from toolmask.tools._sanitize import sanitize_tool_output
from toolmask.tools._slots import NameSlots
from toolmask.tools._spec import Tool
from toolmask.tools._validate import CallError, validate_call
from toolmask.tools.formats import FormatSpec, get_format

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = ["LAZY_MIN_TOOLS", "ToolTurn"]

#: a turn over more tools than this compiles lazily by default (see :meth:`ToolTurn.compile`)
LAZY_MIN_TOOLS = 32


def _as_tool(t: Tool | Mapping[str, Any] | Any) -> Tool:
    if isinstance(t, Tool):
        return t
    if isinstance(t, Mapping):
        return Tool.from_openai(t)
    if callable(t):
        return Tool.from_function(t)
    raise ToolError(f"cannot make a tool from {t!r}")


class ToolTurn:
    """Tools x wire format x ``tool_choice`` x ``parallel_tool_calls`` for one assistant turn.

    ``tools`` may mix :class:`Tool` objects, OpenAI tool dicts and typed functions; names must
    be unique. ``fmt`` is a registered format name (see :data:`toolmask.tools.formats.FORMATS`).
    ``special_tokens`` are the special-token texts of the vocabulary: markers among them become
    :class:`~toolmask.grammar.Special` nodes in the grammar. ``schema_options`` go to
    :func:`~toolmask.schema.compile_json_schema` for every tool, over the format's own
    :attr:`~toolmask.tools.FormatSpec.argument_options` (``json.dumps`` spacing, keys in any
    order). ``id_factory`` makes call ids from the call index
    (:func:`random_call_id`, or :func:`sequential_call_id` for reproducible ids).

    Reasoning: with ``reasoning`` (the default) the grammar lets a format with a reasoning
    channel (``<think>``, ``[THINK]``, Harmony's analysis channel) reason first, then applies
    ``tool_choice`` to what follows. ``reasoning_open``: the prompt ended inside the channel
    (a template that prefills ``<think>``; see :meth:`FormatSpec.prompt_opens_reasoning` and
    :meth:`for_prompt`), so the reply starts with reasoning; grammar and parser both know it.

    ``parallel_tool_calls``, ``special_tokens``, ``schema_options``, ``reasoning`` and
    ``reasoning_open`` are kept as one frozen :class:`TurnOptions` (:attr:`options`; the
    attributes of those names read it): a turn that differs in one of them is another turn
    (:meth:`for_prompt`, :meth:`with_options`).

    Invariant: :meth:`prompt` depends on the tool list and format only, never on
    ``tool_choice`` or ``parallel_tool_calls``, so a prefix cache stays valid across turns.
    """

    def __init__(
        self,
        tools: Iterable[Tool | Mapping[str, Any] | Any],
        fmt: str | FormatSpec = "hermes",
        tool_choice: ToolChoiceLike = "auto",
        *,
        parallel_tool_calls: bool = True,
        special_tokens: Iterable[str] = (),
        schema_options: Mapping[str, Any] | None = None,
        id_factory: IdFactory = random_call_id,
        reasoning: bool = True,
        reasoning_open: bool = False,
    ) -> None:
        self.tools: tuple[Tool, ...] = tuple(_as_tool(t) for t in tools)
        seen: set[str] = set()
        for t in self.tools:
            if t.name in seen:
                raise ToolError(f"two tools are called {t.name!r}", where=t.name)
            seen.add(t.name)
        self.format: FormatSpec = get_format(fmt)
        self.tool_choice: ToolChoice = ToolChoice.parse(tool_choice, self._names, index=self._index)
        self.id_factory = id_factory
        #: everything the grammar and the parser depend on besides tools, format and choice
        self.options: TurnOptions = TurnOptions.of(
            self.format,
            parallel=parallel_tool_calls,
            special_tokens=special_tokens,
            schema_options=schema_options,
            reasoning=reasoning,
            reasoning_open=reasoning_open,
        )

    # -- the options ------------------------------------------------------------------------------
    @property
    def parallel_tool_calls(self) -> bool:
        return self.options.parallel

    @property
    def special_tokens(self) -> frozenset[str]:
        return self.options.special_tokens

    @property
    def schema_options(self) -> Mapping[str, Any]:
        return self.options.schema_options

    @property
    def reasoning(self) -> bool:
        return self.options.reasoning

    @property
    def reasoning_open(self) -> bool:
        return self.options.reasoning_open

    def with_options(self, options: TurnOptions) -> ToolTurn:
        """This turn with other options (``reasoning_open`` kept only where the format has a
        channel): the same tools, format and choice, already checked; ``self`` when they are
        the same. O(1)."""
        options = options.for_format(self.format)
        if options == self.options:
            return self
        other = copy.copy(self)
        for name in ("_grammar", "_tools_key_"):  # what depends on the options
            other.__dict__.pop(name, None)
        other.options = options
        return other

    # -- views ------------------------------------------------------------------------------------
    @functools.cached_property
    def _names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        """Tool name -> its position in :attr:`tools`."""
        return {t.name: i for i, t in enumerate(self.tools)}

    @functools.cached_property
    def callable_tools(self) -> tuple[Tool, ...]:
        """The tools that may be called this turn (``()`` under ``none``), in tool order."""
        choice = self.tool_choice
        if choice.mode == "none":
            return ()
        if choice.allowed is None:
            return self.tools
        return tuple(map(self.tools.__getitem__, map(self._index.__getitem__, choice.allowed)))

    @property
    def _callable_names(self) -> tuple[str, ...]:
        """The names of :attr:`callable_tools`, in tool order, without making them: what the
        compile cache keys a subset's filter by (``allowed`` is kept in tool order)."""
        choice = self.tool_choice
        if choice.mode == "none":
            return ()
        if choice.allowed is None:
            return self._names
        return choice.allowed

    def prepare(self, compiler: GrammarCompiler | None = None) -> ToolTurn:
        """Read the tool list once in ``compiler``'s turn cache (default: the active one's):
        the key its compiled turns are kept under, and the prompt. Every turn derived from
        this one afterwards (:meth:`with_tool_choice`) shares both, so a server that keeps
        one turn per tool list pays O(allowed names) per new ``tool_choice``. Returns
        ``self``. O(tools) once."""
        self._tools_key(turn_cache(compiler))
        self.prompt()
        return self

    def with_tool_choice(self, tool_choice: ToolChoiceLike) -> ToolTurn:
        """This turn with another ``tool_choice`` (a policy's next allowed set): the same tools,
        format and options, already checked, and the same cached key of the tool list, so the
        cost is O(allowed names), and :meth:`compile` finds the turn over every tool and,
        for a subset seen before, its filter in the cache. The prompt is unchanged."""
        other = copy.copy(self)
        for name in ("_grammar", "callable_tools"):  # what depends on tool_choice
            other.__dict__.pop(name, None)
        other.tool_choice = ToolChoice.parse(tool_choice, self._names, index=self._index)
        return other

    @property
    def triggers(self) -> tuple[str, ...]:
        """Texts whose appearance starts a call (for engines with lazy grammars): the format's
        trigger, then its habits' openers (a fence too, which the turn's own grammar leaves as
        prose where it names no tool: a literal trigger cannot say that)."""
        return self.format.block_triggers()

    def prompt(self) -> str:
        """The text that advertises every tool (see :meth:`FormatSpec.render_tools`), made once
        per turn and shared by the turns derived from it (it depends on the tools and the
        format only)."""
        return self._prompt

    @functools.cached_property
    def _prompt(self) -> str:
        return self.format.render_tools(self.tools)

    # -- grammar ----------------------------------------------------------------------------------
    def grammar(self) -> Grammar:
        """The grammar of the whole reply (cached per instance); see :mod:`toolmask.tools._grammar`.

        Raises :class:`~toolmask.errors.SchemaError` for a tool schema that cannot be compiled.
        """
        return self._grammar

    @functools.cached_property
    def _grammar(self) -> Grammar:
        return build_turn_grammar(
            self.tools, self.format, self.tool_choice, self.options, turn_cache()
        )

    def compile(
        self,
        vocab: Vocabulary | None = None,
        *,
        limits: Limits | None = None,
        lazy: bool | None = None,
        compiler: GrammarCompiler | None = None,
    ) -> CompiledGrammar:
        """The turn compiled for matching (and token masks with ``vocab``) with ``compiler``
        (default: the active one), in its turn cache; accepts exactly :meth:`grammar`'s
        language.

        A turn where every tool may be called (or none) compiles its grammar. A turn where a
        subset may be called (``allowed_tools``, a named ``tool_choice``, an agent policy) is
        the turn over *every* tool in the same mode, :meth:`~CompiledGrammar.restricted` by
        a name filter (:func:`~toolmask.tools.build_name_filter`: the envelope with the
        allowed names and any argument values): the large automaton and its cached masks
        are shared by every subset, and a subset costs its filter, compiled once (O(allowed
        names), cached) and then a dictionary lookup. Both are kept in the compiler's turn
        cache (:class:`~toolmask._compile.TurnCache`, ``turns``), keyed by the tools'
        fingerprints, format, options and mode without reading the grammars.

        ``limits``: the compile limits (default: ``schema_options["limits"]``, else the
        compiler's); ``max_rules`` applies to each tool's part and to the envelope, not to
        their sum. Raises what :meth:`grammar` raises. The cyclic garbage collector is paused
        while it builds (see :func:`toolmask.tools._parts.parts_of`).

        ``lazy`` (default: True over more than :data:`LAZY_MIN_TOOLS` tools): compile each
        tool's arguments only when a reply first enters them (a
        :class:`~toolmask.tools.LazyTurnGrammar`, see ``docs/tools.md`` "Many tools"): the
        same language and the same masks, the compile costs O(names) instead of one schema
        compilation per tool, and a schema that cannot be compiled raises from the matcher
        call that enters it instead of from here.
        """
        cache = turn_cache(compiler)
        with gc_paused(), cache.activate():
            return self._compile_turn(vocab, limits, lazy, cache)

    def _compile_turn(
        self,
        vocab: Vocabulary | None,
        limits: Limits | None,
        lazy: bool | None,
        cache: TurnCache,
    ) -> CompiledGrammar:
        lim = limits if limits is not None else limits_of(self.schema_options, cache)
        names = self._callable_names
        mode = self.tool_choice.mode if names else "none"
        turns = cache.turns
        vkey = vocab.fingerprint if vocab is not None else None
        if lazy is None:
            lazy = len(self.tools) > LAZY_MIN_TOOLS
        lazy = lazy and mode != "none"
        base = (self._tools_key(cache), vkey, lim, mode, lazy)
        every = mode == "none" or len(names) == len(self.tools)
        full: CompiledGrammar | None = turns.get(base)
        if full is None:
            if lazy:
                full = turns.put(base, self._lazy_turn(cache, vocab, lim, mode))
            else:
                grammar = self._grammar if every else self._full_grammar(mode, cache)
                full = turns.put(base, _compile(cache, grammar, vocab, lim))
        if every:
            return full
        fkey = (*base, names)
        filt: CompiledGrammar | None = turns.get(fkey)
        if filt is None:
            grammar = build_name_filter(
                self.tools,
                self.format,
                self.tool_choice,
                self.options,
                cache,
                slots=self._name_slots(cache, base, full, mode),
                chosen=self.callable_tools,
            )
            filt = turns.put(fkey, _compile(cache, grammar, vocab, lim))
        return full.restricted(filt)

    def _name_slots(
        self, cache: TurnCache, base: tuple[Any, ...], full: CompiledGrammar, mode: str
    ) -> NameSlots:
        """The name slots of this tool list's filters in ``mode`` (:func:`name_slots`), made
        once per turn over every tool (``base``) and kept in the turn cache: from the lazy
        turn's ``any`` grammar when the turn is lazy."""
        key = (base[0], mode)
        slots: NameSlots | None = cache.slots.get(key)
        if slots is None:
            any_turn = None
            if isinstance(full, LazyTurnGrammar):
                lazy = full.lazy_turn
                any_turn = (lazy.any, lazy.call_rules)
            slots = name_slots(self.tools, self.format, mode, self.options, cache, any_turn)
            cache.slots.put(key, slots)
        return slots

    def _tools_key(self, cache: TurnCache) -> str:
        """A digest of everything the turn's grammar depends on but ``tool_choice`` (made once
        per turn). The tools' part of it is kept per list of tool objects (``lists``), so a new
        turn over the same objects (a new subset) costs O(tools) identity checks, not their
        serialisation; a tool's fingerprint is the one its part and schema are keyed by."""
        known: str | None = self.__dict__.get("_tools_key_")
        if known is not None:
            return known
        lists = cache.lists
        ids = tuple(map(id, self.tools))
        hit: tuple[tuple[Tool, ...], bytes] | None = lists.get(ids)
        if hit is not None and all(a is b for a, b in zip(hit[0], self.tools, strict=True)):
            digest = hit[1]
        else:
            h = hashlib.blake2b(digest_size=16)
            for t in self.tools:
                h.update(tool_fingerprint(t, cache).encode("utf-8", "surrogatepass") + b"\0")
            digest = h.digest()
            lists.put(ids, (self.tools, digest))
        h = hashlib.blake2b(digest, digest_size=16)
        rest = f"{self.format.name}\0{id(self.format)}\0{self.options.key()}"
        h.update(rest.encode("utf-8", "surrogatepass"))
        key = self.__dict__["_tools_key_"] = h.hexdigest()
        return key

    def _full_grammar(self, mode: str, cache: TurnCache) -> Grammar:
        """The turn over every tool in ``mode`` (``auto`` / ``required``)."""
        every = ToolChoice(mode)  # type: ignore[arg-type]  # a ToolChoice mode
        return build_turn_grammar(self.tools, self.format, every, self.options, cache)

    def _lazy_turn(
        self, cache: TurnCache, vocab: Vocabulary | None, lim: Limits, mode: str
    ) -> LazyTurnGrammar:
        """The turn over every tool in ``mode``, compiled lazily (see :mod:`._lazy`): its
        tools compile later, from a matcher, in ``cache`` (its compiler active for the schema
        stages' memos)."""
        every = ToolChoice(mode)  # type: ignore[arg-type]  # a ToolChoice mode
        base = build_lazy_turn(self.tools, self.format, every, self.options, cache)
        index = self._index
        fmt, options = self.format, self.options

        def with_parts(grammar: Grammar, names: frozenset[str]) -> Grammar:
            if not names:
                return grammar
            with cache.activate(), gc_paused():
                tools = [self.tools[i] for i in sorted(index[n] for n in names)]
                return with_tool_parts(grammar, base.call_rules, tools, fmt, options, cache)

        def compile_one(grammar: Grammar) -> CompiledGrammar:
            with cache.activate():
                return _compile(cache, grammar, vocab, lim)

        return LazyTurnGrammar.create(base, with_parts, compile_one)

    def _filter_grammar(self) -> Grammar:
        return build_name_filter(
            self.tools, self.format, self.tool_choice, self.options, turn_cache()
        )

    def for_prompt(self, prompt: str) -> ToolTurn:
        """This turn with ``reasoning_open`` read from the prompt the reply continues (what
        the chat template's generation prompt ends with); ``self`` when it does not change."""
        is_open = self.format.prompt_opens_reasoning(prompt)
        return self.with_options(self.options.replace(reasoning_open=is_open))

    @functools.cached_property
    def schemas(self) -> dict[str, Any]:
        """Tool name -> parameters schema (types raw parameter values when parsing)."""
        return {t.name: t.parameters for t in self.tools}

    def call_grammar(self) -> Grammar:
        """The grammar from the trigger on: the calls block(s) only, for lazy-grammar engines.

        Raises :class:`ToolError` when no tool may be called.
        """
        return build_call_grammar(
            self.tools, self.format, self.tool_choice, self.options, turn_cache()
        )

    # -- parsing and checking ---------------------------------------------------------------------
    def _open(self, prompt: str | None) -> bool:
        if prompt is None:
            return self.reasoning_open
        return self.format.prompt_opens_reasoning(prompt)

    def parse(self, text: str, *, prompt: str | None = None) -> ParsedTurn:
        """Parse a finished reply into reasoning, content, calls and malformed blocks (never
        raises). ``prompt``: the text the reply continues; when given, it says whether the
        reply starts inside the reasoning channel (else :attr:`reasoning_open` does)."""
        return parse_turn(
            text,
            self.format,
            id_factory=self.id_factory,
            reasoning_open=self._open(prompt),
            schemas=self.schemas,
            habits=self._calls_allowed,
        )

    @property
    def _calls_allowed(self) -> bool:
        """Whether this turn may hold calls (else the format's habits are read as prose)."""
        return self.tool_choice.mode != "none" and bool(self.callable_tools)

    def stream_parser(self, *, prompt: str | None = None) -> StreamParser:
        """A fresh :class:`StreamParser` for one streamed reply (``prompt`` as in :meth:`parse`)."""
        return StreamParser(
            self.format,
            id_factory=self.id_factory,
            reasoning_open=self._open(prompt),
            schemas=self.schemas,
            habits=self._calls_allowed,
        )

    def validate(self, call: Any) -> list[CallError]:
        """Problems of one call: unknown or not-allowed tool, arguments invalid for the schema."""
        allowed = [t.name for t in self.callable_tools]
        return validate_call(call, self.tools, allowed=allowed)

    def sanitize(self, tool_output: str) -> str:
        """``tool_output`` with this format's and vocabulary's control markers broken."""
        return sanitize_tool_output(tool_output, self.format, special_tokens=self.special_tokens)

    def __repr__(self) -> str:
        names = [t.name for t in self.tools]
        return (
            f"ToolTurn({names}, fmt={self.format.name!r}, tool_choice={self.tool_choice}, "
            f"parallel_tool_calls={self.parallel_tool_calls})"
        )


def _compile(
    cache: TurnCache, grammar: Grammar, vocab: Vocabulary | None, limits: Limits
) -> CompiledGrammar:
    """Compile a turn's grammar; its parts were checked against ``max_rules`` one by one, so
    the automaton's cap on the whole grammar is widened to the grammar's size."""
    if len(grammar.rules) > limits.max_rules:
        limits = dataclasses.replace(limits, max_rules=len(grammar.rules))
    return cache.compile(grammar, vocab, limits)
