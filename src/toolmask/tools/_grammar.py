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
                  encoding (WireFormat.call_grammar: XML parameters, name-then-arguments, ...)

Reasoning is a channel: the model reasons freely first (``text`` avoids only the channel's
close marker), then ``tool_choice`` applies to what follows, so ``required`` means "reason,
then call". A turn without reasoning may not start with the channel's open marker either
(the parser would read it as reasoning). Harmony (gpt-oss) writes its turn as messages and
builds it itself (:meth:`WireFormat.turn_grammar`).

The end follows the model: after the last block, whitespace and then the end of the turn are
always allowed (models write ``</tool_call>\n`` before their end-of-turn token), and another
call needs the format's own opener, so no whitespace token commits the model to a second call.
Arguments are written as the format's chat template renders them
(:attr:`WireFormat.argument_options`: ``json.dumps`` spacing, keys in any order, required
keys enforced, none twice).

Name and arguments sit in one alternative, so a tool's name can only be followed by that tool's
own argument grammar. ``prose`` is every UTF-8 text that does not contain the format's trigger
text: the lazy trigger of ``auto`` expressed inside the grammar, so the model writes freely
until it starts the marker and is held to the call grammar from then until the block closes.
Prose avoids the trigger *text* even when the marker is a special token, so the parser (which
sees text) never finds a call that the grammar did not mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolmask.errors import LimitError, SchemaError, ToolError
from toolmask.grammar import (
    EMPTY,
    Dfa,
    Grammar,
    Node,
    Rule,
    RuleRef,
    choice,
    dfa_to_rules,
    lit,
    opt,
    seq,
    star,
)
from toolmask.schema import json_ws
from toolmask.tools._choice import ToolChoice
from toolmask.tools._spec import Tool
from toolmask.tools.formats._base import WireFormat
from toolmask.tools.formats._gen import Kit, arguments_grammar

__all__ = ["build_call_grammar", "build_turn_grammar", "prose_rules"]

_WS_SET = " \t\r\n"


def _arguments_grammar(tool: Tool, options: Mapping[str, Any]) -> Grammar:
    """``compile_json_schema(tool.parameters, **options)``, cached by (schema, options) JSON in
    the active GrammarCompiler (``Limits.max_schema_grammars`` entries)."""
    return arguments_grammar(tool.parameters, options)


def prose_rules(
    fmt: WireFormat, *, at_start: bool, name: str = "prose"
) -> tuple[Node, tuple[Rule, ...]]:
    """Free text that contains none of ``fmt``'s parse triggers (rules named ``<name>_s<i>``).

    With ``at_start``: a format whose blocks may start bare (``{`` at the start of the reply)
    also may not start with ``bare_start``, and a format with a reasoning channel may not start
    with its open marker (after whitespace), which the parser would read as reasoning. Cost: a
    DFA of about the triggers' total length in states.
    """
    anything = Dfa.any_string()
    dfa = anything
    for t in fmt.parse_triggers():
        dfa = dfa.intersect(anything.concat(Dfa.literal(t)).concat(anything).complement())
    if at_start and fmt.bare_at_start:
        dfa = dfa.intersect(Dfa.literal(fmt.bare_start).concat(anything).complement())
    if at_start and fmt.reasoning_start:
        ws = Dfa.literals(list(_WS_SET)).star()
        starts = ws.concat(Dfa.literal(fmt.reasoning_start)).concat(anything)
        dfa = dfa.intersect(starts.complement())
    return dfa_to_rules(dfa, name, encoding="raw")


def _ws(fmt: WireFormat) -> Node:
    return json_ws(fmt.max_trailing_ws)


def _calls(fmt: WireFormat, call: Node, *, parallel: bool, kit: Kit, bare: bool) -> Node:
    """The block(s) holding the calls, then the trailing whitespace before the end of the turn;
    ``bare`` leaves out the first block's opener, and its closer (a bare block has no marker)."""
    ws = _ws(fmt)
    inner_ws = json_ws(fmt.inner_ws)
    opener = fmt.open_node(kit.special_tokens)
    closer = fmt.close_node(kit.special_tokens) if fmt.close else lit(fmt.before_close)
    first = EMPTY if bare else opener
    if fmt.separator or fmt.list_calls:  # all calls in one block
        sep = fmt.separator_node() if fmt.separator else inner_ws
        if bare:
            closer = lit(fmt.before_close)
        inner = seq(call, star(seq(sep, call))) if parallel else call
        listed = seq(first, fmt.list_open_node(), inner, fmt.list_close_node(), closer, ws)
        if not fmt.list_optional or bare:
            return listed
        single = seq(call, closer)  # the brackets left out: one call a block, blocks repeat
        more = star(seq(ws, opener, single)) if parallel else EMPTY
        return choice(listed, seq(first, single, more, ws))
    body = seq(fmt.list_open_node(), call, fmt.list_close_node(), closer)
    if not parallel:
        return seq(first, body, ws)
    return seq(first, body, star(seq(ws, opener, body)), ws)


def _kit(fmt: WireFormat, special_tokens: frozenset[str], schema_options: Mapping[str, Any]) -> Kit:
    options = {**fmt.argument_options, **schema_options}
    layout = str(options.get("whitespace", "compact"))
    extra = () if "whitespace" in schema_options else fmt.extra_layouts
    layouts = (layout, *(x for x in extra if x != layout))
    return Kit(options, special_tokens, layouts)


def _call_grammar(fmt: WireFormat, tool: Tool, index: int, kit: Kit) -> Node:
    """``fmt.call_grammar``; a SchemaError or LimitError from compiling the tool's parameters
    leaves naming the tool (``e.tool``), so a caller can say whose schema failed without
    compiling each again."""
    try:
        return fmt.call_grammar(tool, index, kit)
    except (SchemaError, LimitError) as e:
        e.in_tool(tool.name)
        raise


def _head(fmt: WireFormat, kit: Kit, *, reasoning: bool, reasoning_open: bool) -> Node | None:
    """The reasoning the turn starts with: required when the prompt opened the channel,
    optional when the format has an open marker (and ``reasoning``), else None."""
    if not fmt.reasoning_end:
        return None
    text = kit.text_without((fmt.reasoning_end,))
    end = kit.marker(fmt.reasoning_end)
    if reasoning_open:
        return seq(text, end)
    if reasoning and fmt.reasoning_start:
        return seq(_ws(fmt), kit.marker(fmt.reasoning_start), text, end)
    return None


def build_turn_grammar(
    tools: Sequence[Tool],
    fmt: WireFormat,
    tool_choice: ToolChoice,
    *,
    parallel: bool = True,
    special_tokens: frozenset[str] = frozenset(),
    schema_options: Mapping[str, Any] | None = None,
    reasoning: bool = True,
    reasoning_open: bool = False,
) -> Grammar:
    """The grammar of one assistant turn (see the module docstring for its shape).

    ``tools`` are all advertised tools; ``tool_choice`` says which may be called. Markers in
    ``special_tokens`` become :class:`Special` nodes. ``reasoning``: the turn may start with
    the format's reasoning channel (formats that have one); ``reasoning_open``: the prompt
    ended inside the channel (:meth:`WireFormat.prompt_opens_reasoning`), so the turn starts
    with reasoning and its close marker. Raises :class:`SchemaError` or :class:`LimitError`
    for a tool schema that cannot be compiled, naming the tool (``e.tool``). Cost: one schema
    compilation per distinct (schema, options), cached; the rest is linear in the tool count
    (times 2**parameters, at most 2**8, for formats that write parameters one by one in any
    order).
    """
    if not fmt.has_grammar:
        raise ToolError(
            f"format {fmt.name!r} parses replies but has no generation grammar yet",
            where="format",
        )
    parallel = parallel and fmt.parallel_calls
    callable_names = set(tool_choice.callable([t.name for t in tools]))
    chosen = [t for t in tools if t.name in callable_names]
    mode = tool_choice.mode if chosen else "none"
    kit = _kit(fmt, special_tokens, schema_options or {})
    kit.reasoning_open = reasoning_open
    head = _head(fmt, kit, reasoning=reasoning, reasoning_open=reasoning_open)
    call_refs = [kit.add(f"call_{i}", _call_grammar(fmt, t, i, kit)) for i, t in enumerate(chosen)]
    custom = fmt.turn_grammar(kit, call_refs, mode, parallel=parallel, reasoning=reasoning)
    if custom is not None:
        return Grammar((Rule("root", custom), *kit.rules))
    out: list[Rule] = []
    # prose right at the start (no reasoning written) and prose after the reasoning
    prose_first: Node = EMPTY
    prose_after: Node = EMPTY
    if mode != "required":
        prose_first, rules = prose_rules(fmt, at_start=True)
        out.extend(rules)
        if head is not None:
            prose_after, rules = prose_rules(fmt, at_start=False, name="prose_r")
            out.extend(rules)
    if mode == "none":
        if head is None:
            return Grammar((Rule("root", prose_first), *out, *kit.rules))
        alts = [seq(head, prose_after)]
        if not reasoning_open:
            alts.append(prose_first)
        return Grammar((Rule("root", choice(*alts)), *out, *kit.rules))
    call = kit.add("call", choice(*call_refs))
    tail: Node = EMPTY
    if fmt.prose_after_calls:
        tail, rules = prose_rules(fmt, at_start=False, name="prose_t")
        out.extend(rules)
    out.append(Rule("calls", seq(_calls(fmt, call, parallel=parallel, kit=kit, bare=False), tail)))
    bare = None
    if fmt.bare_at_start:
        bare = seq(_calls(fmt, call, parallel=parallel, kit=kit, bare=True), tail)
        out.append(Rule("bare_calls", bare))

    def body(prose: Node) -> Node:
        alts: list[Node] = []
        if mode == "auto":
            alts.append(seq(prose, opt(RuleRef("calls"))))
        else:
            alts.append(seq(json_ws(fmt.inner_ws), RuleRef("calls")))
        if bare is not None:
            alts.append(RuleRef("bare_calls"))
        return choice(*alts)

    if head is None:
        root = body(prose_first)
    elif reasoning_open:
        root = seq(head, body(prose_after))
    else:
        root = choice(seq(head, body(prose_after)), body(prose_first))
    return Grammar((Rule("root", root), *out, *kit.rules))


def build_call_grammar(
    tools: Sequence[Tool],
    fmt: WireFormat,
    tool_choice: ToolChoice,
    *,
    parallel: bool = True,
    special_tokens: frozenset[str] = frozenset(),
    schema_options: Mapping[str, Any] | None = None,
) -> Grammar:
    """The grammar from the trigger on (for engines with their own lazy triggers).

    The same as the ``required`` turn grammar restricted to ``tool_choice``'s callable tools.
    Raises :class:`ToolError` via :class:`ToolChoice` when nothing may be called.
    """
    names = tool_choice.callable([t.name for t in tools])
    if not names:
        raise ToolError("no tool may be called under this tool_choice", where="tool_choice")
    return build_turn_grammar(
        tools,
        fmt,
        ToolChoice("required", tuple(names)),
        parallel=parallel,
        special_tokens=special_tokens,
        schema_options=schema_options,
        reasoning=False,
    )
