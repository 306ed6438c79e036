"""The turn grammar: tools x tool_choice x parallel x wire format x reasoning -> one
:class:`Grammar`.

Shape (``[]`` optional, names as in the printed grammar)::

    root      ::= head body
    head      ::= [reasoning_start text reasoning_end]   the format's reasoning channel
                | text reasoning_end                      the prompt opened it (reasoning_open)
    none      body ::= prose
    auto      body ::= prose [calls]              (llama3_json: prose_nb [calls] | bare_calls)
    required  body ::= ws_in calls                (llama3_json: calls | bare_calls)
    calls     one call per block:  block (ws block)* ws       (parallel off: block ws)
              list formats:  open [ call (sep call)* ] close ws  (parallel off: one call)
                (list_optional: or blocks of one bare call each, as one call per block)
              then, where the format has prose after its calls (gemma4), prose_t
    ws        ::= [ \t\n\r]{0,max_trailing_ws}
    ws_in     ::= [ \t\n\r]{0,inner_ws}    between the calls of one block, before the first
    call      ::= call_0 | call_1 | ...               one alternative per callable tool
    call_i    ::= '{"name": "<tool i>", "arguments": ' a<i>_root '}'   or the format's own
                  encoding (its codec's call_grammar: XML parameters, name-then-arguments, ...)

Reasoning is a channel: the model reasons freely first (``text`` avoids only the channel's
close marker), then ``tool_choice`` applies to what follows, so ``required`` means "reason,
then call". A turn without reasoning may not start with the channel's open marker either
(the parser would read it as reasoning). Harmony (gpt-oss) writes its turn as messages and
its codec builds it (:meth:`~toolmask.tools.formats.Codec.turn_grammar`).

The end follows the model: after the last block, whitespace and then the end of the turn are
always allowed (models write ``</tool_call>\n`` before their end-of-turn token), and another
call needs the format's own opener, so no whitespace token commits the model to a second call.
Arguments are written as the format's chat template renders them
(the spec's :class:`~toolmask.tools.formats.Values`: ``json.dumps`` spacing, keys in any order,
required keys enforced, none twice).

Name and arguments sit in one alternative, so a tool's name can only be followed by that tool's
own argument grammar. ``prose`` is every UTF-8 text that does not contain the format's trigger
text: the lazy trigger of ``auto`` expressed inside the grammar, so the model writes freely
until it starts the marker and is held to the call grammar from then until the block closes.
Prose avoids the trigger *text* even when the marker is a special token, so the parser (which
sees text) never finds a call that the grammar did not mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask._compile import TurnCache, turn_cache
from toolmask.errors import LimitError, SchemaError, ToolError
from toolmask.grammar import (
    EMPTY,
    Grammar,
    Node,
    Rule,
    RuleRef,
    Special,
    choice,
    lit,
    opt,
    seq,
    star,
)
from toolmask.schema import json_ws
from toolmask.tools._choice import ToolChoice
from toolmask.tools._fences import Names, prose_rules, quoted_names
from toolmask.tools._options import TurnOptions
from toolmask.tools._parts import limits_of, parts_of, schema_grammar
from toolmask.tools._slots import (
    NAMES_RULE,
    SLOT_INDEX,
    SLOT_NAME,
    NameSlots,
    fill_slot,
    mentions,
    names_choice,
    split_slot,
)
from toolmask.tools._spec import Tool
from toolmask.tools.formats import FormatSpec, Kit, prefix_rules
from toolmask.tools.formats._kit import escape_in_string, indent_newlines
from toolmask.tools.formats._pieces import closer, list_close, list_open, opener, separator

__all__ = [
    "LAZY_SENTINEL",
    "LazyTurn",
    "NameSlots",
    "build_call_grammar",
    "build_lazy_turn",
    "build_name_filter",
    "build_turn_grammar",
    "name_slots",
    "prose_rules",
    "with_tool_parts",
]


#: the options of a turn nobody set any of
DEFAULT_OPTIONS = TurnOptions()

#: what a turn's whole grammar, too large for one automaton, says to do instead
TURN_HINT = (
    "this is a tool turn's whole grammar: ToolTurn.compile(vocab) compiles it per tool, each "
    "tool's arguments on first use, and takes thousands of tools"
)


def _ws(fmt: FormatSpec) -> Node:
    return json_ws(fmt.layout.max_trailing_ws)


def _calls(fmt: FormatSpec, calls: Sequence[Node], *, parallel: bool, kit: Kit, bare: bool) -> Node:
    """The block(s) holding the calls, then the trailing whitespace before the end of the turn;
    ``bare`` leaves out the first block's opener, and its closer (a bare block has no marker).
    ``calls``: the call node of each variant of the format (:attr:`FormatSpec.variants`: its
    own markers first, then its habits'; only the first where the turn leaves the habits
    out)."""
    b, lay = fmt.block, fmt.layout
    call = calls[0]
    ws = _ws(fmt)
    inner_ws = json_ws(lay.inner_ws)
    special = kit.special_tokens
    first_opener = opener(fmt, special)
    last = closer(fmt, special) if b.close else lit(b.before_close)
    first = EMPTY if bare else first_opener
    if lay.one_block:  # all calls in one block
        sep = separator(fmt) if lay.separator else inner_ws
        if bare:
            last = lit(b.before_close)
        inner = seq(call, star(seq(sep, call))) if parallel else call
        listed = seq(first, list_open(fmt), inner, list_close(fmt), last, ws)
        if not lay.list_optional or bare:
            return listed
        single = seq(call, last)  # the brackets left out: one call a block, blocks repeat
        more = star(seq(ws, first_opener, single)) if parallel else EMPTY
        return choice(listed, seq(first, single, more, ws))
    # a block in the format's own markers, or in one of the family's habits (Habit)
    blocks = [seq(first_opener, list_open(fmt), call, list_close(fmt), last)]
    for v, v_call in zip(fmt.variants[1 : len(calls)], calls[1:], strict=True):
        v_close = closer(v, special) if v.block.close else lit(v.block.before_close)
        blocks.append(seq(opener(v, special), list_open(v), v_call, list_close(v), v_close))
    block = choice(*blocks)
    # a bare block (the reply starts with the call object itself) has neither marker
    head = seq(list_open(fmt), call, list_close(fmt)) if bare else block
    if not parallel:
        return seq(head, ws)
    return seq(head, star(seq(ws, block)), ws)


def _options(
    fmt: FormatSpec, schema_options: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The argument options and the JSON layouts of ``fmt`` (or of one of its variants)."""
    options = {**fmt.argument_options, **schema_options}
    layout = str(options.get("whitespace", "compact"))
    extra = () if "whitespace" in schema_options else fmt.values.extra_layouts
    return options, (layout, *(x for x in extra if x != layout))


def _kit(fmt: FormatSpec, turn: TurnOptions, cache: TurnCache, *, kind: type[Kit] = Kit) -> Kit:
    """The kit a turn's grammar is written with: the format's argument options under the
    turn's ``schema_options``, its layouts, the vocabulary's special tokens, schemas compiled
    in ``cache``."""
    options, layouts = _options(fmt, turn.schema_options)
    return kind(
        options,
        turn.special_tokens,
        layouts,
        turn.reasoning_open,
        schema_grammar=schema_grammar(cache),
    )


def _variant_count(fmt: FormatSpec, mode: str) -> int:
    """How many of ``fmt``'s variants (:attr:`FormatSpec.variants`) a turn under ``mode``
    writes calls in. A forced call (required, named, a subset) is written in the format's own
    markers and the habits marked ``forced`` (those first): the others (a fence) are the
    model's way into a call it chose to make. Admitted there, they take the model's path off
    the parallel calls it writes in the tags (Qwen2.5-Coder-1.5B, BFCL dev parallel under
    required: one fenced call on each of 8 with the fence admitted; two or more calls on 15 of
    20 with the tags only; docs/performance.md). So only ``auto`` builds every habit's calls."""
    if mode == "auto":
        return len(fmt.variants)
    return 1 + sum(1 for h in fmt.habits if h.forced)


def _variant_kits(
    fmt: FormatSpec, kit: Kit, schema_options: Mapping[str, Any], count: int
) -> list[Kit]:
    """One kit for each of the first ``count`` variants of ``fmt`` (:attr:`FormatSpec.variants`):
    ``kit`` for the format itself, and for each habit a kit with the habit's argument options
    that shares ``kit``'s rules (so the envelope collects them all)."""
    kits = [kit]
    for v in fmt.variants[1:count]:
        options, layouts = _options(v, schema_options)
        kits.append(dataclasses.replace(kit, options=options, layouts=layouts))
    return kits


@dataclass
class _AnyValueKit(Kit):
    """A kit whose JSON values are any JSON value in the same layouts and notation (one shared
    rule set per spelling): the arguments of a name filter (:func:`build_name_filter`). Every
    value a schema's grammar writes in a layout is a JSON value in that layout, so the calls
    it admits are a superset of the real ones, and a JSON value delimits itself, so the names
    sit where they sit in the real turn."""

    _any: dict[tuple[Any, ...], Node] = field(default_factory=dict)

    def _shared(
        self, key: tuple[Any, ...], options: Mapping[str, Any], pad: str = "", quoted: bool = False
    ) -> Node:
        hit = self._any.get(key)
        if hit is None:
            grammar = self.schema_grammar({}, {**options, "additional_properties_default": True})
            if pad:
                grammar = indent_newlines(grammar, pad)
            if quoted:
                grammar = escape_in_string(grammar)
            hit, rules = prefix_rules(grammar, f"any{len(self._any)}_")
            for r in rules:
                self.add(r.name, r.body)
            hit = seq(lit('"'), hit, lit('"')) if quoted else hit
            self._any[key] = hit
        return hit

    def json(
        self,
        schema: Any,
        prefix: str,
        notation: str = "json",
        *,
        at: str = "",
        quoted: bool = False,
    ) -> Node:
        extra: dict[str, Any] = {}
        if notation != "json":
            from toolmask.schema import GEMMA_QUOTE

            extra = {
                "notation": notation,
                "special_tokens": sorted({GEMMA_QUOTE} & self.special_tokens),
            }
        alts = [
            self._shared(
                ("json", notation, layout, quoted),
                {**self.options, **extra, "whitespace": layout},
                quoted=quoted,
            )
            for layout in self.layouts
        ]
        return choice(*alts)

    def json_indented(self, schema: Any, prefix: str, *, indent: int, depth: int) -> Node:
        options = {**self.options, "whitespace": "indent", "indent": indent}
        return self._shared(("indented", indent, depth), options, " " * (indent * depth))

    def copy(self) -> _AnyValueKit:
        other = super().copy()
        assert isinstance(other, _AnyValueKit)
        other._any = dict(self._any)
        return other


#: the text of the placeholder special token that stands for tool ``i``'s argument values in a
#: lazy turn (:func:`build_lazy_turn`); no vocabulary holds it, so no token ever matches it
LAZY_SENTINEL = "<|toolmask:lazy-arguments:{}|>"


@dataclass
class _SentinelKit(Kit):
    """A kit whose JSON values are one placeholder special token per tool (``LAZY_SENTINEL``
    with the tool's index, set in :attr:`tool` before each call grammar): the arguments of a
    tool that a lazy turn has not compiled yet. No token matches the placeholder, so a prefix
    stops right before the tool's first argument value, and every byte before it (envelope,
    name, parameter names) is the real turn's."""

    tool: int = -1

    def _sentinel(self) -> Node:
        return Special(LAZY_SENTINEL.format(self.tool))

    def json(self, *args: Any, **kwargs: Any) -> Node:  # every JSON value: the placeholder
        return self._sentinel()

    def json_indented(self, schema: Any, prefix: str, *, indent: int, depth: int) -> Node:
        return self._sentinel()


def _head(fmt: FormatSpec, kit: Kit, turn: TurnOptions) -> Node | None:
    """The reasoning the turn starts with: required when the prompt opened the channel,
    optional when the format has an open marker (and ``reasoning``), else None."""
    r = fmt.reasoning
    if not r.end:
        return None
    text = kit.text_without((r.end,))
    end = kit.marker(r.end)
    if turn.reasoning_open:
        return seq(text, end)
    if turn.reasoning and r.start:
        return seq(_ws(fmt), kit.marker(r.start), text, end)
    return None


#: how a turn gets its callable tools' call nodes in one variant of its format (the format,
#: or a habit, :attr:`FormatSpec.variants`): (tools, kit, variant, its index) -> (call nodes,
#: their rules)
_Calls = Callable[[Sequence[Tool], Kit, FormatSpec, int], tuple[list[Node], list[Rule]]]


def _call_rule(i: int, k: int) -> str:
    """The rule of callable tool ``i``'s call in variant ``k`` (0: the format's own markers)."""
    return f"call_{i}" if k == 0 else f"h{k}_call_{i}"


def _shares_calls(fmt: FormatSpec, k: int) -> bool:
    """Whether variant ``k`` of ``fmt`` writes its calls as the format's own (a habit with
    other markers only, :attr:`FormatSpec.calls_as`): its blocks hold the format's call
    rules, not rules of their own."""
    return k > 0 and fmt.variants[k].calls_as is fmt


def _call_rules(fmt: FormatSpec, i: int, count: int) -> tuple[str, ...]:
    """The rules of callable tool ``i``'s call in the first ``count`` variants of ``fmt``."""
    return tuple(_call_rule(i, 0 if _shares_calls(fmt, k) else k) for k in range(count))


def _real_calls(limits: Any, cache: TurnCache) -> _Calls:
    """Each tool's cached part (:func:`toolmask.tools._parts.tool_part`)."""

    def calls(
        tools: Sequence[Tool], kit: Kit, fmt: FormatSpec, k: int
    ) -> tuple[list[Node], list[Rule]]:
        parts = parts_of(fmt, tools, kit, limits, cache)
        return [p.entry for p in parts], [r for p in parts for r in p.rules]

    return calls


def _named_calls(
    tools: Sequence[Tool], kit: Kit, fmt: FormatSpec, k: int
) -> tuple[list[Node], list[Rule]]:
    """Each tool's call written with the kit itself, in rule ``call_<i>`` (``h<k>_call_<i>``
    for a habit): with :class:`_AnyValueKit`, arguments that are any JSON value; with
    :class:`_SentinelKit`, a placeholder where they start."""
    nodes: list[Node] = []
    for i, t in enumerate(tools):
        if isinstance(kit, _SentinelKit):
            kit.tool = i
        try:
            nodes.append(kit.add(_call_rule(i, k), fmt.codec.call_grammar(fmt, t, i, kit)))
        except (SchemaError, LimitError) as e:
            e.in_tool(t.name)
            raise
    return nodes, []


def build_turn_grammar(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    tool_choice: ToolChoice,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
) -> Grammar:
    """The grammar of one assistant turn (see the module docstring for its shape).

    ``tools`` are all advertised tools; ``tool_choice`` says which may be called; ``options``
    the rest (:class:`TurnOptions`: markers in ``special_tokens`` become :class:`Special`
    nodes; ``reasoning``: the turn may start with the format's reasoning channel;
    ``reasoning_open``: the prompt ended inside the channel
    (:meth:`FormatSpec.prompt_opens_reasoning`), so the turn starts with reasoning and its
    close marker). Raises :class:`SchemaError` or :class:`LimitError`
    for a tool schema that cannot be compiled, naming the tool (``e.tool``); caps apply per
    tool (:mod:`toolmask.tools._parts`), and ``max_rules`` to the envelope on its own.

    Cost: each callable tool's part is compiled once per (tool, format, argument options)
    and cached in ``cache`` (default: :func:`~toolmask._compile.turn_cache`, the active
    compiler's); on a hit the turn is the envelope plus a
    concatenation of the parts' rules (O(tools), plus 2**parameters, at most 2**8, rules per
    tool on a miss for formats that write parameters one by one in any order).
    """
    cache = turn_cache() if cache is None else cache
    limits = limits_of(options.schema_options, cache)
    calls = _real_calls(limits, cache)
    return _assemble(tools, fmt, tool_choice, calls, limits, options, cache)


def build_name_filter(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    tool_choice: ToolChoice,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
    *,
    slots: NameSlots | None = None,
    chosen: Sequence[Tool] | None = None,
) -> Grammar:
    """The turn grammar of ``tool_choice`` with every argument value replaced by *any* JSON
    value (same layouts and notation): a filter that only decides which names may be called.

    Intersected with the turn over every tool in the same mode (``required`` or ``auto``),
    it gives exactly the turn of ``tool_choice``: a reply both accept has the same envelope
    in both (it is the same grammar but for the values), its values delimit themselves, so
    its names are at the same places; the filter admits only allowed names there and the full
    turn holds each call to its own tool's arguments. Size: the envelope, one name per
    allowed tool and one shared any-value grammar per layout (formats that write parameters
    one by one keep each tool's parameter names). Same arguments as
    :func:`build_turn_grammar`.

    ``slots`` (:func:`name_slots` of the tool list, in the same mode and options): the calls
    of the tools whose filter call is the format's template with their name are one call,
    the template, whose name is a choice of those names (the same language: the template
    writes the name once on every path), so the grammar holds the envelope, the template and
    the names, and costs O(allowed names) to build and to compile; the other tools keep their
    own calls. ``chosen``: the callable tools in tool order, when the caller has them (else
    read from ``tool_choice``, O(tools)).
    """
    cache = turn_cache() if cache is None else cache
    limits = limits_of(options.schema_options, cache)
    if slots is None or not slots.names:
        return _assemble(
            tools, fmt, tool_choice, _named_calls, limits, options, cache, kit_kind=_AnyValueKit
        )
    chosen = _callable(tools, tool_choice) if chosen is None else chosen
    names = slots.names
    fits = bool(chosen) and all(t.name in names for t in chosen)
    key = (tool_choice.mode, options, limits)
    if fits:
        shell = slots.shells.get(key)
        if shell is not None:  # the same filter but for the choice of names
            return shell.with_rule(NAMES_RULE, names_choice(t.name for t in chosen), refs=False)
    grammar = _assemble(
        tools,
        fmt,
        tool_choice,
        _slotted_calls(slots),
        limits,
        options,
        cache,
        kit=slots.kit_copy(),
        chosen=chosen,
    )
    if fits:
        slots.shells[key] = grammar
    return grammar


def _slotted_calls(slots: NameSlots) -> _Calls:
    """The calls of a subset's filter with ``slots``: the tools that fit the template are one
    call, the template with the choice of their names (rule :data:`NAMES_RULE`); the others
    their own (:func:`_named_calls`)."""

    def calls(
        tools: Sequence[Tool], kit: Kit, fmt: FormatSpec, k: int
    ) -> tuple[list[Node], list[Rule]]:
        inside = [t.name for t in tools if t.name in slots.names]
        rest = [t for t in tools if t.name not in slots.names]
        nodes, _ = _named_calls(rest, kit, fmt, k)
        if inside:
            if k == 0:
                kit.add(NAMES_RULE, names_choice(inside))
            nodes.insert(0, kit.add(f"tm_slot_{k}", slots.templates[k]))
        return nodes, []

    return calls


def name_slots(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    mode: str,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
    any_turn: tuple[Grammar, Mapping[str, tuple[str, ...]]] | None = None,
) -> NameSlots:
    """The name slots of ``tools`` under ``mode`` (``auto`` / ``required``) for
    :func:`build_name_filter` (see :mod:`toolmask.tools._slots`). ``any_turn``: the filter over
    every tool in ``mode`` and each tool's call rules in it (a lazy turn's ``any`` grammar and
    ``call_rules``), else it is built here. Cost: O(tools), once per tool list: the template
    filled with each name and compared with the tool's call."""
    cache = turn_cache() if cache is None else cache
    count = _variant_count(fmt, mode)
    kit = _kit(fmt, options, cache, kind=_AnyValueKit)
    kits = _variant_kits(fmt, kit, options.schema_options, count)
    slot_tool = Tool(SLOT_NAME)
    raw = [
        v.codec.call_grammar(v, slot_tool, SLOT_INDEX, v_kit)
        for v, v_kit in zip(fmt.variants[:count], kits, strict=True)
    ]
    split = [split_slot(t) for t in raw]
    nothing = NameSlots(kit, (), frozenset())
    if any(t is None for t in split) or mentions(r.body for r in kit.rules):
        return nothing
    if any_turn is None:
        limits = limits_of(options.schema_options, cache)
        every = ToolChoice(mode)  # type: ignore[arg-type]  # a ToolChoice mode
        grammar = _assemble(
            tools, fmt, every, _named_calls, limits, options, cache, kit_kind=_AnyValueKit
        )
        rules = {t.name: _call_rules(fmt, i, count) for i, t in enumerate(tools)}
        any_turn = (grammar, rules)
    grammar, call_rules = any_turn
    bodies = {r.name: r.body for r in grammar.rules}
    # the templates' own rules (the any-value grammars) must be the turn's, under those names
    if any(bodies.get(r.name) != r.body for r in kit.rules):
        return nothing
    names = frozenset(
        t.name
        for t in tools
        if len(call_rules.get(t.name, ())) == count
        and all(
            bodies.get(rule) == fill_slot(raw[k], t.name)
            for k, rule in enumerate(call_rules[t.name])
        )
    )
    templates = tuple(t for t in split if t is not None)
    return NameSlots(kit, templates, names)


@dataclass(frozen=True)
class LazyTurn:
    """The two grammars of a lazy turn before any tool is compiled (:func:`build_lazy_turn`):
    ``block`` (a placeholder special token where each tool's first argument value starts:
    ``LAZY_SENTINEL`` with the tool's index) and ``any`` (any JSON value there).
    ``placeholders``: placeholder text -> tool name; ``call_rules``: tool name -> the rules
    that hold its call in both grammars, one per variant of the format (``call_<i>``, then
    ``h<k>_call_<i>`` for its habits)."""

    block: Grammar
    any: Grammar
    placeholders: Mapping[str, str]
    call_rules: Mapping[str, tuple[str, ...]]


def build_lazy_turn(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    tool_choice: ToolChoice,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
) -> LazyTurn:
    """The grammars of a lazy turn (:mod:`toolmask.tools._lazy`): the turn of
    :func:`build_turn_grammar` with no tool's arguments compiled. In ``block``, each callable
    tool's argument values are one placeholder special token per tool; no token matches it,
    so ``block`` admits exactly the real turn's prefixes that stop before a tool's first
    argument value. In ``any`` they are any JSON value in the same layouts: a superset of the
    real turn (as :func:`build_name_filter`'s). :func:`with_tool_parts` puts compiled tools in.

    Cost: the envelope and one call per tool without its schema, O(names), twice."""
    cache = turn_cache() if cache is None else cache
    limits = limits_of(options.schema_options, cache)
    grammars = [
        _assemble(tools, fmt, tool_choice, _named_calls, limits, options, cache, kit_kind=kind)
        for kind in (_SentinelKit, _AnyValueKit)
    ]
    chosen = _callable(tools, tool_choice)
    return LazyTurn(
        grammars[0],
        grammars[1],
        {LAZY_SENTINEL.format(i): t.name for i, t in enumerate(chosen)},
        {
            t.name: _call_rules(fmt, i, _variant_count(fmt, tool_choice.mode))
            for i, t in enumerate(chosen)
        },
    )


def with_tool_parts(
    grammar: Grammar,
    call_rules: Mapping[str, tuple[str, ...]],
    tools: Sequence[Tool],
    fmt: FormatSpec,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
) -> Grammar:
    """``grammar`` (a :class:`LazyTurn` grammar) with the calls of ``tools`` replaced by their
    real parts (:func:`toolmask.tools._parts.tool_part`, cached per tool): the rule
    ``call_rules[name]`` then references the part. Raises the part's SchemaError / LimitError
    naming the tool. Cost: the parts (cached), then O(rules) to rebuild the rule tuple."""
    cache = turn_cache() if cache is None else cache
    kit = _kit(fmt, options, cache)
    limits = limits_of(options.schema_options, cache)
    swap: dict[str, Node] = {}
    added: list[Rule] = []
    # the variants the turn's mode writes calls in (_variant_count): one rule each
    count = max((len(r) for r in call_rules.values()), default=1)
    kits = _variant_kits(fmt, kit, options.schema_options, count)
    for k, (v, v_kit) in enumerate(zip(fmt.variants[:count], kits, strict=True)):
        if _shares_calls(fmt, k):  # its call rules are the format's own (_call_rules)
            continue
        parts = parts_of(v, tools, v_kit, limits, cache)
        swap.update((call_rules[p.name][k], p.entry) for p in parts)
        added += [r for p in parts for r in p.rules]
    rules = [Rule(r.name, swap[r.name]) if r.name in swap else r for r in grammar.rules]
    rules += added
    return Grammar(tuple(rules), grammar.start, grammar.checks)


def _callable(tools: Sequence[Tool], tool_choice: ToolChoice) -> list[Tool]:
    """The tools ``tool_choice`` lets the model call, in tool order."""
    names = set(tool_choice.callable([t.name for t in tools]))
    return [t for t in tools if t.name in names]


def _assemble(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    tool_choice: ToolChoice,
    calls_of: _Calls,
    limits: Any,
    options: TurnOptions,
    cache: TurnCache,
    *,
    kit_kind: type[Kit] = Kit,
    kit: Kit | None = None,
    chosen: Sequence[Tool] | None = None,
) -> Grammar:
    if not fmt.has_grammar:
        raise ToolError(
            f"format {fmt.name!r} parses replies but has no generation grammar yet",
            where="format",
        )
    if options.parallel and not fmt.layout.parallel_calls:
        options = options.replace(parallel=False)
    if chosen is None:
        chosen = _callable(tools, tool_choice)
    mode = tool_choice.mode if chosen else "none"
    if kit is None:
        kit = _kit(fmt, options, cache, kind=kit_kind)
    head = _head(fmt, kit, options)
    call_refs: list[list[Node]] = []
    part_rules: list[Rule] = []
    if mode != "none":
        count = _variant_count(fmt, mode)
        kits = _variant_kits(fmt, kit, options.schema_options, count)
        for k, (v, v_kit) in enumerate(zip(fmt.variants[:count], kits, strict=True)):
            if _shares_calls(fmt, k):  # the format's own calls between other markers
                call_refs.append(call_refs[0])
                continue
            refs, rules = calls_of(chosen, v_kit, v, k)
            call_refs.append(refs)
            part_rules += rules
    # a fence is prose unless it names a tool of the turn: any of them (_fences)
    names: Names = False
    if mode == "auto" and (fmt.prose_openers or fmt.block.bare_named):
        names = quoted_names(t.name for t in tools)
    envelope = _envelope(fmt, kit, mode, call_refs, head, options, names)
    if len(envelope) > limits.max_rules:
        raise LimitError(
            f"the turn's envelope has {len(envelope)} rules (more than {limits.max_rules})",
            limit="max_rules",
        )
    return Grammar((*envelope, *part_rules), hint=TURN_HINT)


def _envelope(
    fmt: FormatSpec,
    kit: Kit,
    mode: str,
    call_refs: list[list[Node]],
    head: Node | None,
    options: TurnOptions,
    names: Names = False,
) -> tuple[Rule, ...]:
    """Everything but the parts: prose, reasoning, blocks, and the choice of a call
    (``call_refs``: the callable tools' call nodes in each variant of the format; ``names``:
    the turn's tool names a fence's call names, :func:`prose_rules`)."""
    parallel, reasoning_open = options.parallel, options.reasoning_open
    own = call_refs[0] if call_refs else []
    custom = fmt.codec.turn_grammar(
        fmt, kit, own, mode, parallel=parallel, reasoning=options.reasoning
    )
    if custom is not None:
        return (Rule("root", custom), *kit.rules)
    out: list[Rule] = []
    # prose right at the start (no reasoning written) and prose after the reasoning
    prose_first: Node = EMPTY
    prose_after: Node = EMPTY
    if mode != "required":
        # with no call to make, a habit's opener is plain text (the parser reads it so); a
        # turn asked for words may only not open with it (_fences)
        habits = mode != "none"
        words = mode == "none" and not options.habit_prose
        prose_first, rules = prose_rules(
            fmt, at_start=True, habits=habits, words=words, names=names
        )
        out.extend(rules)
        if head is not None:
            prose_after, rules = prose_rules(
                fmt, at_start=False, name="prose_r", habits=habits, words=words, names=names
            )
            out.extend(rules)
    if mode == "none":
        if head is None:
            return (Rule("root", prose_first), *out, *kit.rules)
        alts = [seq(head, prose_after)]
        if not reasoning_open:
            alts.append(prose_first)
        return (Rule("root", choice(*alts)), *out, *kit.rules)
    calls: list[Node] = []
    for k, refs in enumerate(call_refs):
        if _shares_calls(fmt, k):  # a habit around the format's own calls: their rule
            calls.append(calls[0])
        else:
            calls.append(kit.add("call" if k == 0 else f"h{k}_call", choice(*refs)))
    tail: Node = EMPTY
    if fmt.layout.prose_after_calls:
        tail, rules = prose_rules(fmt, at_start=False, name="prose_t")
        out.extend(rules)
    out.append(Rule("calls", seq(_calls(fmt, calls, parallel=parallel, kit=kit, bare=False), tail)))
    bare = None
    if fmt.block.bare_start:
        bare = seq(_calls(fmt, calls, parallel=parallel, kit=kit, bare=True), tail)
        out.append(Rule("bare_calls", bare))

    def body(prose: Node) -> Node:
        alts: list[Node] = []
        if mode == "auto":
            alts.append(seq(prose, opt(RuleRef("calls"))))
        else:
            alts.append(seq(json_ws(fmt.layout.inner_ws), RuleRef("calls")))
        if bare is not None:
            alts.append(RuleRef("bare_calls"))
        return choice(*alts)

    if head is None:
        root = body(prose_first)
    elif reasoning_open:
        root = seq(head, body(prose_after))
    else:
        root = choice(seq(head, body(prose_after)), body(prose_first))
    return (Rule("root", root), *out, *kit.rules)


def build_call_grammar(
    tools: Sequence[Tool],
    fmt: FormatSpec,
    tool_choice: ToolChoice,
    options: TurnOptions = DEFAULT_OPTIONS,
    cache: TurnCache | None = None,
) -> Grammar:
    """The grammar from the trigger on (for engines with their own lazy triggers).

    The same as the ``required`` turn grammar restricted to ``tool_choice``'s callable tools,
    without reasoning. Raises :class:`ToolError` via :class:`ToolChoice` when nothing may be
    called.
    """
    names = tool_choice.callable([t.name for t in tools])
    if not names:
        raise ToolError("no tool may be called under this tool_choice", where="tool_choice")
    only_calls = options.replace(reasoning=False, reasoning_open=False)
    chosen = ToolChoice("required", tuple(names))
    return build_turn_grammar(tools, fmt, chosen, only_calls, cache)
