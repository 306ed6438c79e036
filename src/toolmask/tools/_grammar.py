"""The turn grammar: tools x tool_choice x parallel x wire format -> one :class:`Grammar`.

Shape (``[]`` optional, names as in the printed grammar)::

    none      root ::= prose
    auto      root ::= prose [calls]                  (llama3_json: prose_nb [calls] | bare_calls)
    required  root ::= calls                          (llama3_json: calls | bare_calls)
    calls     one call per block:  block (ws block)* ws       (parallel off: block ws)
              list formats:  open [ call (sep call)* ] close ws  (parallel off: one call)
    ws        ::= [ \t\n\r]{0,max_trailing_ws}
    call      ::= call_0 | call_1 | ...               one alternative per callable tool
    call_i    ::= '{"name": "<tool i>", "arguments": ' a<i>_root '}'

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

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from toolmask.grammar._dfa import Dfa, dfa_to_rules
from toolmask.grammar._ir import (
    EMPTY,
    Grammar,
    Node,
    Rule,
    RuleRef,
    byte_class,
    choice,
    lit,
    opt,
    repeat,
    seq,
    star,
)
from toolmask.schema import compile_json_schema
from toolmask.tools._choice import ToolChoice
from toolmask.tools._rename import prefix_rules
from toolmask.tools._spec import Tool
from toolmask.tools.formats._base import WireFormat

__all__ = ["build_call_grammar", "build_turn_grammar", "prose_rules"]

_SCHEMA_CACHE_SIZE = 256
_schema_cache: OrderedDict[tuple[str, str], Grammar] = OrderedDict()
_schema_lock = threading.Lock()


def _arguments_grammar(tool: Tool, options: Mapping[str, Any]) -> Grammar:
    """``compile_json_schema(tool.parameters, **options)``, cached by (schema, options) JSON."""
    key = (
        json.dumps(tool.parameters, sort_keys=True),
        json.dumps(dict(options), sort_keys=True, default=repr),
    )
    with _schema_lock:
        hit = _schema_cache.get(key)
        if hit is not None:
            _schema_cache.move_to_end(key)
            return hit
    g = compile_json_schema(tool.parameters, **options)
    with _schema_lock:
        _schema_cache[key] = g
        while len(_schema_cache) > _SCHEMA_CACHE_SIZE:
            _schema_cache.popitem(last=False)
    return g


def prose_rules(fmt: WireFormat, *, at_start: bool) -> tuple[Node, tuple[Rule, ...]]:
    """Free text that does not contain ``fmt``'s trigger text (rules named ``prose_s<i>``).

    With ``at_start`` and a format whose blocks may start bare (``{`` at the start of the
    reply), the text must also not start with ``{``. Cost: a DFA of len(trigger) + 2 states.
    """
    anything = Dfa.any_string()
    dfa = anything.concat(Dfa.literal(fmt.trigger_text)).concat(anything).complement()
    if at_start and fmt.bare_at_start:
        dfa = dfa.intersect(Dfa.literal("{").concat(anything).complement())
    return dfa_to_rules(dfa, "prose", encoding="raw")


def _calls(
    fmt: WireFormat, call: Node, *, parallel: bool, special_tokens: frozenset[str], bare: bool
) -> Node:
    """The block(s) holding the calls, then the trailing whitespace before the end of the turn;
    ``bare`` leaves out the first block's opener."""
    ws = repeat(byte_class(0x20, 0x09, 0x0A, 0x0D), 0, fmt.max_trailing_ws)
    opener = fmt.open_node(special_tokens)
    closer = fmt.close_node(special_tokens) if fmt.close else lit(fmt.before_close)
    first = EMPTY if bare else opener
    if fmt.separator:  # all calls in one block
        inner = seq(call, star(seq(lit(fmt.separator_text), call))) if parallel else call
        return seq(first, lit(fmt.list_open), inner, lit(fmt.list_close), closer, ws)
    body = seq(lit(fmt.list_open), call, lit(fmt.list_close), closer)
    if not parallel:
        return seq(first, body, ws)
    return seq(first, body, star(seq(ws, opener, body)), ws)


def _call_rules(
    tools: Sequence[Tool], fmt: WireFormat, schema_options: Mapping[str, Any]
) -> tuple[Node, list[Rule]]:
    rules: list[Rule] = []
    alts: list[Node] = []
    options = {**fmt.argument_options, **schema_options}
    for i, tool in enumerate(tools):
        entry, args_rules = prefix_rules(_arguments_grammar(tool, options), f"a{i}_")
        rules.extend(args_rules)
        layout = str(options.get("whitespace", "compact"))
        max_ws = int(options.get("max_whitespace", 4))
        rules.append(Rule(f"call_{i}", fmt.call_node(tool.name, entry, layout, max_ws)))
        alts.append(RuleRef(f"call_{i}"))
    rules.append(Rule("call", choice(*alts)))
    return RuleRef("call"), rules


def build_turn_grammar(
    tools: Sequence[Tool],
    fmt: WireFormat,
    tool_choice: ToolChoice,
    *,
    parallel: bool = True,
    special_tokens: frozenset[str] = frozenset(),
    schema_options: Mapping[str, Any] | None = None,
) -> Grammar:
    """The grammar of one assistant turn (see the module docstring for its shape).

    ``tools`` are all advertised tools; ``tool_choice`` says which may be called. Markers in
    ``special_tokens`` become :class:`Special` nodes. Raises :class:`SchemaError` for a tool
    schema that cannot be compiled. Cost: one schema compilation per distinct (schema, options),
    cached; the rest is linear in the tool count.
    """
    if not fmt.has_grammar:
        from toolmask.errors import ToolError

        raise ToolError(
            f"format {fmt.name!r} parses replies but has no generation grammar yet",
            where="format",
        )
    callable_names = set(tool_choice.callable([t.name for t in tools]))
    chosen = [t for t in tools if t.name in callable_names]
    mode = tool_choice.mode if chosen else "none"
    out: list[Rule] = []
    prose: Node = EMPTY
    if mode != "required":
        prose, rules = prose_rules(fmt, at_start=True)
        out.extend(rules)
    if mode == "none":
        return Grammar((Rule("root", prose), *out))
    call, call_rules = _call_rules(chosen, fmt, schema_options or {})
    out.extend(call_rules)
    calls = _calls(fmt, call, parallel=parallel, special_tokens=special_tokens, bare=False)
    bare = None
    if fmt.bare_at_start:
        bare = _calls(fmt, call, parallel=parallel, special_tokens=special_tokens, bare=True)
    out.append(Rule("calls", calls))
    if bare is not None:
        out.append(Rule("bare_calls", bare))
    alts: list[Node] = []
    if mode == "auto":
        alts.append(seq(prose, opt(RuleRef("calls"))))
    else:
        alts.append(RuleRef("calls"))
    if bare is not None:
        alts.append(RuleRef("bare_calls"))
    return Grammar((Rule("root", choice(*alts)), *out))


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
    from toolmask.errors import ToolError

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
    )
