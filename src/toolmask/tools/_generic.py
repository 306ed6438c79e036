"""The generic format: a wire format derived from a chat template's own rendering of calls.

Where no family format reads the calls a template renders (every family failed its proof on
every probe variant), detection (:mod:`toolmask.tools._detect`) asks :func:`derive_formats`
for formats built from the rendering itself, the way llama.cpp builds a parser from a
template's output, and proves each the same way a family format is proven. The derivation:

1. **Find the calls.** Each call notation of :data:`NOTATIONS` looks for the probe's calls in
   the rendered text, in order: a JSON object whose values are the call's name and arguments
   (its keys, in the template's order, give the roles), a Python call
   ``NAME(key=value, ...)``, an XML invoke tag ``<TAG name="NAME">`` holding one
   ``<PTAG name="KEY">VALUE</PTAG>`` per argument. Where a notation finds them, the text around
   them is literal bytes: before the first call (``one``'s and ``two``'s must agree), after the
   last (the same), and between two calls.
2. **Read the layout from the between-text.** The closer, whitespace, then the opener again:
   one call per block, blocks repeated. Whitespace only: the calls of one block back to back.
   Anything else: the calls of one block with that separator; brackets right around the calls
   (``[`` ... ``]``) are a list (a JSON array, a Python list).
3. **Build a frozen** :class:`~toolmask.tools.formats.FormatSpec` on the notation's codec
   (:class:`~toolmask.tools.formats._json.JsonCalls`,
   :class:`~toolmask.tools.formats._pythonic.PythonCalls`,
   :class:`~toolmask.tools.formats._xml.InvokeParams`), its markers the literal texts found,
   the reasoning channel's markers the texts around the probe's reasoning where the template
   renders it. Its name is ``generic_`` and a digest of the data (the same rendering, the same
   name).

A derived format needs a non-blank opener (prose must be told from a call) and is never
registered until detection proved it (:func:`register_generic`); detection never tries a
registered generic format as a family (:func:`is_generic`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.tools._probe import PROBE_REASONING, Probe, ProbeCase
from toolmask.tools.formats import (
    FORMATS,
    BlockMarkers,
    Codec,
    FormatSpec,
    Layout,
    Reasoning,
    Values,
    register_format,
)
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._pythonic import PythonCalls, expression_end, read_calls
from toolmask.tools.formats._read import json_end, loads
from toolmask.tools.formats._xml import InvokeParams

__all__ = ["GENERIC", "NOTATIONS", "Derived", "derive_formats", "is_generic", "register_generic"]

#: the prefix of every derived format's name
GENERIC = "generic"

_WS = " \t\r\n"

#: ``(start, end)`` of each call in a rendered text
Spans = list[tuple[int, int]]
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Derived:
    """What the rendering showed around the calls, one notation's reading: the text before
    the first call, between two calls (``None``: one call only) and after the last; ``spans``:
    where the ``one`` case's calls stand in its text."""

    notation: str
    before: str
    between: str | None
    after: str
    spans: tuple[tuple[int, int], ...]


def is_generic(name: str) -> bool:
    """Whether ``name`` is a derived format's (see the module docstring)."""
    return name.startswith(GENERIC + "_")


def register_generic(spec: FormatSpec) -> FormatSpec:
    """``spec`` registered under its name (once; the registered one when it is already), so
    that the name :func:`~toolmask.tools.resolve_format` returns resolves anywhere."""
    return FORMATS.get(spec.name) or register_format(spec)


# -- finding the calls -------------------------------------------------------------------------


def _json_spans(text: str, calls: Sequence[Call]) -> Spans | None:
    """The JSON objects holding each call (its name and its arguments among its values)."""
    out: Spans = []
    i = 0
    for name, args in calls:
        while True:
            i = text.find("{", i)
            if i < 0:
                return None
            end = json_end(text, i)
            obj = loads(text[i:end])[0] if end is not None else None
            if end is not None and _roles(obj, name, args) is not None:
                out.append((i, end))
                i = end
                break
            i += 1
    return out


def _roles(obj: Any, name: str, args: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The call object's keys in order with their roles (``name``, ``args``), or None when
    ``obj`` is not exactly the call."""
    if not isinstance(obj, dict) or len(obj) != 2:
        return None
    roles = tuple((k, "name" if v == name else "args" if v == args else "") for k, v in obj.items())
    return roles if sorted(r for _, r in roles) == ["args", "name"] else None


def _python_spans(text: str, calls: Sequence[Call]) -> Spans | None:
    """The Python calls ``NAME(key=value, ...)`` of each call."""
    out: Spans = []
    i = 0
    for name, args in calls:
        m = re.compile(rf"(?<![\w.]){re.escape(name)}\(").search(text, i)
        if m is None:
            return None
        end = expression_end(text, m.end() - 1)
        got = read_calls(text[m.start() : end], listed=False, json_names=True) if end else None
        if (
            end is None
            or not isinstance(got, list)
            or [(c.name, c.args) for c in got] != [(name, args)]
        ):
            return None
        out.append((m.start(), end))
        i = end
    return out


_INVOKE = re.compile(r'<([A-Za-z_][\w:.-]*) name="([^"<>]+)">')


def _invoke_spans(text: str, calls: Sequence[Call]) -> Spans | None:
    """The invoke tags ``<TAG name="NAME">...</TAG>`` of each call (read by the codec itself
    when the format is proven: here only the tags are found)."""
    out: Spans = []
    i = 0
    for name, _ in calls:
        m = next((m for m in _INVOKE.finditer(text, i) if m.group(2) == name), None)
        if m is None:
            return None
        close = f"</{m.group(1)}>"
        end = text.find(close, m.end())
        if end < 0:
            return None
        out.append((m.start(), end + len(close)))
        i = end + len(close)
    return out


#: notation -> the finder of its calls in a rendered text
NOTATIONS: dict[str, Callable[[str, Sequence[Call]], Spans | None]] = {
    "json": _json_spans,
    "python": _python_spans,
    "xml": _invoke_spans,
}


def _read(notation: str, case: ProbeCase) -> tuple[str, str | None, str, Spans] | None:
    """The texts before, between (the first two) and after the calls of ``case``, and the
    calls' spans."""
    text = case.text
    spans = NOTATIONS[notation](text, case.calls)
    if not spans:
        return None
    between = text[spans[0][1] : spans[1][0]] if len(spans) > 1 else None
    return text[: spans[0][0]], between, text[spans[-1][1] :], spans


def _derive(notation: str, probe: Probe) -> tuple[Derived, Reasoning] | None:
    """The texts the ``one`` and ``two`` cases show around the calls (they must agree), and
    the reasoning channel the ``reasoning`` case shows (none without that case)."""
    cases = {c.name: c for c in probe.cases}
    one = cases.get("one")
    if one is None:
        return None
    got = _read(notation, one)
    if got is None:
        return None
    before, _, after, spans = got
    between = None
    two = cases.get("two")
    if two is not None:
        got2 = _read(notation, two)
        if got2 is None or (got2[0], got2[2]) != (before, after):
            return None
        between = got2[1]
    reasoning = Reasoning()
    r = cases.get("reasoning")
    if r is not None:
        k = r.text.find(PROBE_REASONING)
        tail = r.text[k + len(PROBE_REASONING) :]
        if k < 0 or not tail.endswith(one.text):
            return None
        start, end = r.text[:k].strip(_WS), tail[: len(tail) - len(one.text)].strip(_WS)
        if not end:
            return None
        reasoning = Reasoning(start, end)
    return Derived(notation, before, between, after, tuple(spans)), reasoning


# -- building the format ------------------------------------------------------------------------


def _split_ws(text: str) -> tuple[str, str, str]:
    """``text`` as leading whitespace, the rest stripped, trailing whitespace."""
    core = text.strip(_WS)
    if not core:
        return text, "", ""
    i = text.index(core)
    return text[:i], core, text[i + len(core) :]


def _layout(d: Derived, brackets: tuple[str, str]) -> tuple[BlockMarkers, Layout] | None:
    """The block's markers and layout the texts around the calls show (see the module
    docstring, step 2); ``brackets``: the list brackets the notation knows."""
    _, head, after_open = _split_ws(d.before)
    before_close, tail, trailing = _split_ws(d.after)
    if not head:
        return None
    ws = max(4, len(trailing))
    if d.between is None:  # one call a turn
        markers = BlockMarkers(head, tail, after_open=after_open, before_close=before_close)
        return markers, Layout(parallel_calls=False, max_trailing_ws=ws)
    mid = d.between.strip(_WS)
    lo, lc = brackets
    if lo and head.endswith(lo) and tail.startswith(lc) and mid.startswith(","):
        list_open = head[-len(lo) :] + after_open
        list_close = before_close + tail[: len(lc)]
        head, tail = head[: -len(lo)], tail[len(lc) :]
        head, after_open = head.rstrip(_WS), head[len(head.rstrip(_WS)) :]
        tail, before_close = tail.lstrip(_WS), tail[: len(tail) - len(tail.lstrip(_WS))]
        if not head:
            return None
        markers = BlockMarkers(head, tail, after_open=after_open, before_close=before_close)
        layout = Layout(
            list_open=list_open, list_close=list_close, separator=",", separator_text=d.between,
            max_trailing_ws=ws,
        )  # fmt: skip
        return markers, layout
    markers = BlockMarkers(head, tail, after_open=after_open, before_close=before_close)
    if not mid:  # back to back in one block
        inner = max(4, len(d.between))
        layout = Layout(
            list_calls=True, separator_text=d.between, max_trailing_ws=ws, max_inner_ws=inner
        )
        return markers, layout
    first, last = before_close + tail, head + after_open
    if d.between.startswith(first) and d.between.endswith(last):  # one call a block, repeated
        block_sep = d.between[len(first) : len(d.between) - len(last)]
        if block_sep.strip(_WS) or len(d.between) < len(first) + len(last):
            return None
        return markers, Layout(block_sep=block_sep, max_trailing_ws=max(ws, len(block_sep)))
    if len(mid) == 1:
        layout = Layout(separator=mid, separator_text=d.between, max_trailing_ws=ws)
        return markers, layout
    return None


def _json_codecs(one: ProbeCase, d: Derived, layout: Layout) -> list[tuple[Codec, Values]]:
    """The JSON codecs that may write the calls as rendered: the object's keys in the
    template's order, on one line or indented as ``tojson(indent=k)`` writes them."""
    s, e = d.spans[0]
    obj = json.loads(one.text[s:e])
    roles = _roles(obj, *one.calls[0])
    if roles is None:
        return []
    listed = bool(layout.list_open)
    body = one.text[s:e]
    args = one.calls[0][1]
    compact = json.dumps(args, separators=(",", ":")) in body and json.dumps(args) != "{}"
    values = Values(whitespace="compact") if compact else Values()
    if "\n" not in body:
        return [(JsonCalls(call_keys=roles, json_list=listed), values)]
    # tojson(indent=k): the keys k x (depth + 1) spaces in, the object depth levels down
    first = body.split("\n", 1)[1]
    spaces = len(first) - len(first.lstrip(" "))
    out: list[tuple[Codec, Values]] = []
    for depth in (1, 0) if listed else (0,):
        indent = spaces // (depth + 1)
        if indent and indent * (depth + 1) == spaces:
            codec = JsonCalls(call_keys=roles, indent=indent, depth=depth, json_list=listed)
            out.append((codec, values))
    return out


def _python_codecs(one: ProbeCase, d: Derived, layout: Layout) -> list[tuple[Codec, Values]]:
    """The Python-call codecs: a list of calls in brackets, or calls one a block or one a
    separator; strings in the quotes the template writes."""
    double = '"' in "".join(one.text[s:e] for s, e in d.spans)
    notation = "python_json" if double else "python"
    if layout.list_open:
        if layout.list_open.strip(_WS) != "[" or layout.separator != ",":
            return []
        return [(PythonCalls(wrap=True, notation=notation), Values())]
    return [(PythonCalls(listed=False, notation=notation), Values())]


def _xml_codecs(one: ProbeCase, d: Derived, layout: Layout) -> list[tuple[Codec, Values]]:
    """The invoke-tag codec with the tag names and the newline the rendering shows."""
    m = _INVOKE.search(one.text)
    if m is None:
        return []
    after = one.text[m.end() :]
    p = re.match(r'(\s*)<([A-Za-z_][\w:.-]*) name="', after)
    if p is None:
        return []
    return [(InvokeParams(invoke=m.group(1), param=p.group(2), nl=p.group(1)), Values())]


_CODECS: dict[str, Callable[[ProbeCase, Derived, Layout], list[tuple[Codec, Values]]]] = {
    "json": _json_codecs,
    "python": _python_codecs,
    "xml": _xml_codecs,
}
_BRACKETS = {"json": ("[", "]"), "python": ("[", "]"), "xml": ("", "")}


def _named(spec: FormatSpec) -> FormatSpec:
    data = repr((spec.codec, spec.block, spec.layout, spec.reasoning, spec.values))
    digest = hashlib.sha1(data.encode("utf-8")).hexdigest()[:8]
    return dataclasses.replace(spec, name=f"{GENERIC}_{digest}")


def derive_formats(probe: Probe) -> list[FormatSpec]:
    """The formats the probe's rendering shows, one per notation that finds the calls (see the
    module docstring), not yet proven. O(notations x rendered text)."""
    out: list[FormatSpec] = []
    for notation in NOTATIONS:
        got = _derive(notation, probe)
        if got is None:
            continue
        d, reasoning = got
        shape = _layout(d, _BRACKETS[notation])
        if shape is None:
            continue
        block, layout = shape
        if notation == "xml":  # invoke tags sit in the block's markers, one a line
            if layout.separator or layout.list_open:
                continue
            layout = dataclasses.replace(layout, list_calls=True)
        one = next(c for c in probe.cases if c.name == "one")  # _derive found it
        for codec, values in _CODECS[notation](one, d, layout):
            try:
                spec = FormatSpec(
                    GENERIC, codec, block, layout, reasoning, values,
                    template_markers=tuple(m for m in (block.open, block.close) if m),
                )  # fmt: skip
            except ValueError:  # a trigger that overlaps itself
                continue
            out.append(_named(spec))
    return out


def describe(spec: FormatSpec) -> str:
    """The derived format in words: its notation and markers (for the warning and ``check``)."""
    b, lay, r = spec.block, spec.layout, spec.reasoning
    kind = type(spec.codec).__name__
    parts = [f"{kind} calls", f"open {b.open!r}", f"close {b.close!r}"]
    if lay.list_open:
        parts.append(f"list {lay.list_open!r} ... {lay.list_close!r}")
    if lay.one_block:
        parts.append(f"calls joined by {lay.separator_text!r}")
    elif lay.parallel_calls:
        parts.append(f"one call a block, blocks joined by {lay.block_sep!r}")
    else:
        parts.append("one call a turn")
    if r.end:
        parts.append(f"reasoning {r.start!r} ... {r.end!r}")
    return ", ".join(parts)
