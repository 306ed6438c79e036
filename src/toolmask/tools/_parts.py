"""Per-tool parts of a turn grammar: each tool's call compiled on its own, once, and shared.

A turn over N tools is the envelope (prose, reasoning, blocks, separators) plus one *part* per
callable tool: the format's call grammar for that tool (its name, then its arguments grammar),
its rules renamed with a prefix derived from the part's key so that parts never collide and
never need renaming again. A part is keyed by:

* the tool's fingerprint (its name and parameters schema as canonical JSON),
* the wire format (its call encoding),
* the kit's argument options, layouts and special-token texts (how arguments are written);

and kept in the compiler's turn cache (:class:`~toolmask._compile.TurnCache`, ``parts``:
``Limits.max_tool_parts`` entries), which every function here takes as an argument, so turns,
subsets and requests that share tools share their parts: a turn over tools seen before costs a
concatenation of rule tuples. The arguments grammar under a part (schema -> grammar,
``schema_grammars``) is keyed by (schema, options) alone, so formats that write arguments the
same way share it. A tool's parameters are serialised once (``TurnCache.canonical``): the
fingerprint, the schema grammar's key and the validator's key are all made from that text.

Caps apply per part: a part with more than ``limits.max_rules`` rules is refused with a
:class:`LimitError` naming the tool (``e.tool``), as is a schema the compiler refuses (with its
JSON pointer); the turn's own ``max_rules`` counts the envelope's rules only.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from toolmask._compile import TurnCache
from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import Grammar, Rule, RuleRef
from toolmask.limits import Limits
from toolmask.schema import compile_json_schema
from toolmask.tools._spec import Tool
from toolmask.tools.formats import FormatSpec, Kit, SchemaGrammar, prefix_rules

__all__ = [
    "ToolPart",
    "gc_paused",
    "limits_of",
    "parts_of",
    "schema_grammar",
    "tool_fingerprint",
    "tool_part",
]


@dataclass(frozen=True, slots=True)
class ToolPart:
    """One tool's call grammar inside a turn: ``entry`` references its call rule, ``rules``
    are its rules (names unique to the part)."""

    name: str
    entry: RuleRef
    rules: tuple[Rule, ...]


def tool_fingerprint(tool: Tool, cache: TurnCache) -> str:
    """The tool's name and the canonical JSON of its parameters schema (what its grammar
    depends on; the description does not matter), the schema serialised once per object in
    ``cache`` (:meth:`TurnCache.canonical`), so a turn over tools seen before does not
    serialise them again. O(schema size) on a miss."""
    # ``json.dumps([name, parameters], sort_keys=True)``, the schema's text made once
    return f"[{json.dumps(tool.name)}, {cache.canonical(tool.parameters)}]"


def schema_grammar(cache: TurnCache) -> SchemaGrammar:
    """The kits' schema compiler in ``cache``: ``compile_json_schema(schema, **options)``,
    cached by (schema, options) in ``schema_grammars`` (``Limits.max_schema_grammars``
    entries); a tool's parameters schema is keyed by the text it was fingerprinted with."""
    grammars = cache.schema_grammars

    def compile_schema(schema: Any, options: Mapping[str, Any]) -> Grammar:
        key = (
            cache.canonical(schema, keep=False),
            json.dumps(dict(options), sort_keys=True, default=repr),
        )
        hit: Grammar | None = grammars.get(key)
        if hit is not None:
            return hit
        built = compile_json_schema(schema, **options)
        return grammars.put(key, built)  # type: ignore[no-any-return]

    return compile_schema


def _kit_key(fmt: FormatSpec, kit: Kit) -> str:
    return json.dumps(
        [
            fmt.name,
            sorted(kit.special_tokens),
            list(kit.layouts),
            {k: v for k, v in kit.options.items() if k != "caches"},
        ],
        sort_keys=True,
        default=repr,
    )


def tool_part(fmt: FormatSpec, tool: Tool, kit: Kit, limits: Limits, cache: TurnCache) -> ToolPart:
    """The part of ``tool`` in ``fmt`` written with ``kit``'s options (cached, see the module
    docstring). Raises SchemaError / LimitError naming the tool (``e.tool``) when its
    parameters cannot be compiled or its part has more than ``limits.max_rules`` rules.
    Cost on a miss: the tool's schema compilation (cached by schema and options) and the
    format's call grammar around it; on a hit: a dictionary lookup."""
    fp = tool_fingerprint(tool, cache)
    kit_key = _kit_key(fmt, kit)
    parts = cache.parts
    key = (fp, kit_key, id(fmt))
    hit: tuple[FormatSpec, ToolPart] | None = parts.get(key)
    if hit is not None and hit[0] is fmt:
        return hit[1]
    digest = hashlib.blake2b(f"{fp}\0{kit_key}".encode(), digest_size=8).digest()
    # a 12-digit index: the format names the part's rules a<index>..., the kit t<index>_...,
    # so no two parts' names can collide and the rules need no renaming pass
    index = 10**11 + int.from_bytes(digest, "big") % (9 * 10**11)
    tag = f"t{index}_"
    own = Kit(
        kit.options,
        kit.special_tokens,
        kit.layouts,
        kit.reasoning_open,
        tag=tag,
        schema_grammar=kit.schema_grammar,
    )
    try:
        node = fmt.codec.call_grammar(fmt, tool, index, own)
    except (SchemaError, LimitError) as e:
        e.in_tool(tool.name)
        raise
    entry = own.add(f"{tag}call", node)
    rules = tuple(own.rules)
    if len(rules) > limits.max_rules:
        raise LimitError(
            f"the call grammar has {len(rules)} rules (more than {limits.max_rules})",
            limit="max_rules",
            pointer="",
        ).in_tool(tool.name)
    ours = (f"a{index}", tag)
    if not all(r.name.startswith(ours) for r in rules):  # a format that names rules itself
        entry, rules = prefix_rules(Grammar(rules, entry.name), tag)
    part = ToolPart(tool.name, entry, rules)
    parts.put(key, (fmt, part))
    return part


def parts_of(
    fmt: FormatSpec, tools: Sequence[Tool], kit: Kit, limits: Limits, cache: TurnCache
) -> list[ToolPart]:
    """:func:`tool_part` of each tool, in order. Two parts whose 12-digit indexes collide (odds
    about n**2 / 2e12) get the later one's rules renamed.

    CPython's cyclic garbage collector is paused while the parts are built (:func:`gc_paused`):
    building hundreds of tools allocates millions of long-lived IR nodes, and every full
    collection on the way walks all of them (measured: 25-35% of a cold 300-tool build)."""
    with gc_paused():
        parts = [tool_part(fmt, t, kit, limits, cache) for t in tools]
    seen: set[str] = set()
    for i, p in enumerate(parts):
        if p.entry.name in seen:
            entry, rules = prefix_rules(Grammar(p.rules, p.entry.name), f"d{i}_")
            parts[i] = ToolPart(p.name, entry, rules)
        seen.add(parts[i].entry.name)
    return parts


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector for the block, unless someone else already did
    (then leave it as it is). Only cycles wait: reference counting frees everything else as
    usual, and the next allocation after the block runs the collection that was due."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def limits_of(options: Mapping[str, Any], cache: TurnCache) -> Limits:
    """The limits the tool layer compiles under: ``schema_options["limits"]`` when given, else
    the turn cache's compiler's."""
    lim = options.get("limits")
    return lim if isinstance(lim, Limits) else cache.limits
