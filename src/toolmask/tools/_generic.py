"""The generic format: a wire format derived from a chat template's own rendering of calls.

Where no family format reads the calls a template renders (every family failed its proof on
every probe variant), detection (:mod:`toolmask.tools._detect`) asks :func:`derive_formats`
for formats built from the rendering itself, the way llama.cpp builds a parser from a
template's output, and proves each the same way a family format is proven. The derivation:

1. **Find the calls.** Each call notation of :data:`NOTATIONS` looks for the probe's calls in
   the rendered text, in order: a JSON object that is exactly the call (:func:`call_shape`: its
   keys, in the template's order, give the roles: the name, the arguments as an object or as
   a JSON string holding their JSON, under keys of any names, the probe's call id, the text
   ``"function"``, or an object nested under any key holding the name and the arguments,
   OpenAI's ``"function": {name, arguments}``, the id in it or beside it; any other key, in
   either object, a JSON scalar the same in every call of the message, type included, a
   constant (``"kind": "call"``, ``"version": 1``, ``"strict": true``, ``null``), or a
   counter of its calls, ``"call_0"``, ``"call_1"`` or ``0``, ``1``: the id where neither
   object has one, else a key that counts beside it, ``"index": 0``: :func:`_settle`), a
   Python call ``NAME(key=value, ...)``, an XML invoke tag ``<TAG name="NAME">`` holding one
   ``<PTAG name="KEY">VALUE</PTAG>`` per argument, a function tag ``<function=NAME>`` holding
   one ``<parameter=KEY>VALUE</parameter>`` per argument (Qwen3-Coder's notation; any tag
   names: ``<tool=NAME>`` with ``<arg=KEY>``; the whitespace after the function's tag and
   around a value the rendering's, the invoke tags' too), or the name, a text and the JSON
   arguments (:data:`_TAGGED`: a function tag ``<TAG=NAME>ARGS</TAG>``, a tag naming it in
   its last attribute ``<TAG KEY="NAME">ARGS</TAG>``, a line ``KEY: NAME`` then a line
   ``KEY: ARGS``; the call from the name to the arguments' end, the tags' texts around it).
   A JSON object or a name-text-arguments call may follow a call id written right before it
   (:func:`_outside`): the probe's id, or a counter of the calls from 0 or 1 (``call_0``,
   ``1``), then a text (``">``) the same before every call; the id and that text are then
   part of the call. Where a notation finds them, the text
   around them is literal bytes: before the first call (``one``'s and ``two``'s must agree),
   after the last (the same), and between two calls; a call's id, name or string value in
   those texts (the notation found only a part of each call, or the template echoes it)
   derives nothing.
2. **Read the layout from the between-text.** The closer, whitespace, then the opener again:
   one call per block, blocks repeated; the closer, other text (``\n---\n``), the opener
   again: the calls of one block, that whole text their separator; the closer and the
   opener again up to the numbers in them (``<call n=11>``, ``<call n=12>``: numbers that
   do not count from 0 or 1): nothing. Whitespace only: the calls of one block back to back
   (name-text-arguments calls and calls after an id only where the close starts with a
   character no call starts with).
   Anything else: the calls of one block with that text between two (any text: ``;\n``,
   `` <and> ``; in every notation, invoke and function tags too; the closer and the opener
   of blocks inside a list wrapper as well: ``</tc>\n<tc>``); a comma with brackets right
   around the calls (``[`` ... ``]``) is a list (a JSON array, a Python list).
3. **Build a frozen** :class:`~toolmask.tools.formats.FormatSpec` on the notation's codec
   (:class:`~toolmask.tools.formats._json.JsonCalls`,
   :class:`~toolmask.tools.formats._pythonic.PythonCalls`,
   :class:`~toolmask.tools.formats._xml.InvokeParams`,
   :class:`~toolmask.tools.formats._xml.FunctionParams`,
   :class:`~toolmask.tools.formats._tagged.TaggedJson`: name-text-arguments calls, and JSON
   objects after an id), its markers the literal texts found,
   the reasoning channel's markers the texts around the probe's reasoning where the template
   renders it. Where the generation prompt ends with a marker (``<think>\n``) and the
   reasoning starts the reply, the prompt opens the channel: its opener is that marker, its
   close the marker right after the reasoning text (a case may start with the channel empty,
   ``\n</think>\n\n``, which is not part of the calls' texts); a template that drops reasoning
   from the history shows no close, and the opener's paired tag (``</think>``) is taken only
   where the template's own text holds it. A call id the template writes is any JSON string
   in the grammar (the model makes ids up; the renderer writes ``call_<i>``), any 1 to 64
   token characters outside a JSON string, ``"function"`` a literal. Its name is
   ``generic_`` and a digest of the data (the same rendering, the same name).

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

from toolmask.tools._generic_calls import (
    FUNCTION_TAG,
    INVOKE_TAG,
    NOTATIONS,
    Call,
    Shape,
    Spans,
    call_shape,
    json_objects,
)
from toolmask.tools._probe import PROBE_REASONING, Probe, ProbeCase, probe_call_id
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
from toolmask.tools.formats._pythonic import PythonCalls
from toolmask.tools.formats._tagged import ID_CHARS, TaggedJson
from toolmask.tools.formats._xml import FunctionParams, InvokeParams

__all__ = ["GENERIC", "NOTATIONS", "Derived", "derive_formats", "is_generic", "register_generic"]

#: the prefix of every derived format's name
GENERIC = "generic"

_WS = " \t\r\n"

_DIGIT_CHARS = frozenset("0123456789")


@dataclass(frozen=True, slots=True)
class Derived:
    """What the rendering showed around the calls, one notation's reading: the text before
    the first call, between two calls (``None``: one call only) and after the last; ``spans``:
    where the ``one`` case's calls stand in its text (the notation's part, without the id
    written before it); ``outside``: the call id written before each call, if any."""

    notation: str
    before: str
    between: str | None
    after: str
    spans: tuple[tuple[int, int], ...]
    outside: _Outside | None = None


def is_generic(name: str) -> bool:
    """Whether ``name`` is a derived format's (see the module docstring)."""
    return name.startswith(GENERIC + "_")


def register_generic(spec: FormatSpec) -> FormatSpec:
    """``spec`` registered under its name (once; the registered one when it is already), so
    that the name :func:`~toolmask.tools.resolve_format` returns resolves anywhere."""
    return FORMATS.get(spec.name) or register_format(spec)


#: the notations whose calls may follow a call id written outside them (:class:`_Outside`)
_OUTSIDE = ("json", "tagged")


@dataclass(frozen=True, slots=True)
class _Outside:
    """A call id written right before each call, outside what the notation finds, then
    ``text`` up to the call: ``shape`` ``"token"`` (the id the probe gave the call),
    ``"counter"`` (``prefix`` and the call's index from ``base``: ``call_0``, ``call_1``) or
    ``"index"`` (the index alone: ``0``, ``1``)."""

    shape: str
    text: str
    prefix: str = ""
    base: int = 0

    def id(self, given: str, index: int) -> str:
        """The id written before the ``index``-th call, whose probe id is ``given``."""
        return given if self.shape == "token" else f"{self.prefix}{index + self.base}"


def _common_suffix(texts: Sequence[str]) -> str:
    first = texts[0]
    n = 0
    while n < len(first) and all(len(t) > n and t[-1 - n] == first[-1 - n] for t in texts):
        n += 1
    return first[len(first) - n :]


def _outside(notation: str, probe: Probe, case: ProbeCase) -> _Outside | None:
    """The call id written before each call of ``case`` (the most calls a message shows),
    outside what the notation finds: the probe's id in the text before every call (its
    last), or, where that text holds none, a counter of the calls (``call_0``, ``call_1``,
    from 0 or 1) right before the text every call's shares; the same text between the id
    and each call, starting with a character an id cannot hold, holding no call's id, name
    or string value. None where no such id is there."""
    if notation not in _OUTSIDE:
        return None
    text = case.text
    ids = _ids(probe, case)
    spans = NOTATIONS[notation](text, case.calls, ids)
    if not spans:
        return None
    pres = [text[(spans[i - 1][1] if i else 0) : s] for i, (s, _) in enumerate(spans)]
    got: _Outside | None = None
    given = list(zip(ids, pres, strict=True))
    if all(cid in pre and all(c in ID_CHARS for c in cid) for cid, pre in given):
        tails = {pre[pre.rfind(cid) + len(cid) :] for cid, pre in given}
        got = _Outside("token", tails.pop()) if len(tails) == 1 else None
    elif len(spans) > 1 and not any(cid in pre for cid in ids for pre in pres):
        after = _common_suffix(pres)
        heads = [pre[: len(pre) - len(after)] for pre in pres]
        for base in (0, 1):
            prefixes: set[str] = set()
            for i, head in enumerate(heads):
                number = str(i + base)
                body = head[: len(head) - len(number)]
                if not head.endswith(number) or body[-1:] in _DIGIT_CHARS:
                    break
                k = len(body)
                while k and body[k - 1] in ID_CHARS:
                    k -= 1
                prefixes.add(body[k:])
            else:
                if len(prefixes) == 1:
                    prefix = prefixes.pop()
                    got = _Outside("counter" if prefix else "index", after, prefix, base)
                    break
    if got is None or got.text[:1] in ID_CHARS:
        return None
    if not got.text and notation != "json":  # a name or an id runs on into the next
        return None
    if any(c in got.text for c in ids) or any(
        w.lower() in got.text.lower() for w in _echoes(case.calls)
    ):
        return None
    return got


def _ids(probe: Probe, case: ProbeCase) -> list[str]:
    """The ids the probe gave the calls of ``case``."""
    return [probe_call_id(probe.variant, n, i) for i, (n, _) in enumerate(case.calls)]


def _read(
    notation: str, probe: Probe, case: ProbeCase, skip: str = "", outside: _Outside | None = None
) -> tuple[str, str | None, str, Spans] | None:
    """The texts before, between (the first two) and after the calls of ``case``, and the
    calls' spans; ``skip``: the close of a reasoning channel the prompt opened, which a case
    may start with (the channel left empty), not part of the calls' texts; ``outside``: the
    call id written before each call (part of the call, not of those texts). None where those
    texts hold a call's id (the notation found a part of each call only: the id is the
    call's, not a marker's) or a call's name or string value in any case (the template
    echoes the call around it: ``<<CALL GET_WEATHER>>``, no marker)."""
    text = case.text
    ids = _ids(probe, case)
    spans = NOTATIONS[notation](text, case.calls, ids)
    if not spans:
        return None
    calls = spans
    if outside is not None:  # the id and the text after it belong to the call
        calls = []
        for i, (s, e) in enumerate(spans):
            head = outside.id(ids[i], i) + outside.text
            if text[max(0, s - len(head)) : s] != head or s - len(head) < (
                calls[-1][1] if calls else 0
            ):
                return None
            calls.append((s - len(head), e))
    start = 0
    rest = text.lstrip(_WS)
    if skip and rest.startswith(skip):
        start = len(text) - len(rest) + len(skip)
        if start > calls[0][0]:
            return None
    between = text[calls[0][1] : calls[1][0]] if len(calls) > 1 else None
    before, after = text[start : calls[0][0]], text[calls[-1][1] :]
    around = [t.lower() for t in (before, between or "", after)]
    if any(i in t for i in ids for t in (before, between or "", after)):
        return None
    if any(w.lower() in t for w in _echoes(case.calls) for t in around):
        return None
    return before, between, after, spans


def _echoes(calls: Sequence[Call]) -> list[str]:
    """The texts of the calls that no marker holds: their names and their string values."""
    out = [name for name, _ in calls]
    return out + [v for _, args in calls for v in args.values() if isinstance(v, str)]


#: a marker a generation prompt may end with, opening the reasoning channel: a tag or a
#: bracketed word (``<think>``, ``[THINK]``, ``<|begin_of_thought|>``)
_MARKER = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")


def _opener(prompt: str) -> str:
    """The marker the generation prompt ends with (whitespace aside), or ``""``."""
    body = prompt.rstrip(_WS)
    m = next((m for m in _MARKER.finditer(body) if m.end() == len(body)), None)
    return m.group() if m is not None else ""


def _closer(opener: str) -> str:
    """The close tag that pairs with ``opener`` (``<think>``: ``</think>``; ``[THINK]``:
    ``[/THINK]``), or ``""`` for a marker without that shape."""
    if re.fullmatch(r"<[A-Za-z_][\w:.-]*>", opener):
        return "</" + opener[1:]
    if re.fullmatch(r"\[[A-Za-z_][\w:.-]*\]", opener):
        return "[/" + opener[1:]
    return ""


def _prompt_channel(probe: Probe, one: ProbeCase, source: str) -> Reasoning | None:
    """The reasoning channel the generation prompt opens, where it ends with a marker (see
    :func:`_opener`): its close is the marker the ``reasoning`` case writes right after the
    reasoning text, which starts the reply; without that case (the template drops reasoning
    from the history), the opener's paired close tag where the template's own text holds it
    (DeepSeek R1 cuts the history's reasoning at ``</think>``); None when the prompt opens no
    channel this way."""
    opener = _opener(probe.prompt)
    if not opener:
        return None
    r = next((c for c in probe.cases if c.name == "reasoning"), None)
    if r is None:
        close = _closer(opener)
        return Reasoning(opener, close) if close and close in source else None
    k = r.text.find(PROBE_REASONING)
    if k < 0 or r.text[:k].strip(_WS):
        return None  # the reply writes its own opener: not a channel the prompt opened
    tail = r.text[k + len(PROBE_REASONING) :].lstrip(_WS)
    m = _MARKER.match(tail)
    if m is None or m.group() == opener:
        return None
    after = tail[m.end() :].lstrip(_WS)
    calls = one.text.lstrip(_WS)
    if calls.startswith(m.group()):  # the case shows the channel empty, then the calls
        calls = calls[m.end() :].lstrip(_WS)
    return Reasoning(opener, m.group()) if after == calls else None


def _derive(notation: str, probe: Probe, source: str = "") -> tuple[Derived, Reasoning] | None:
    """The texts the ``one`` and ``two`` cases show around the calls (they must agree), and
    the reasoning channel the ``reasoning`` case shows (none without that case), or the one
    the generation prompt opens (:func:`_prompt_channel`; ``source``: the template's text)."""
    cases = {c.name: c for c in probe.cases}
    one = cases.get("one")
    if one is None:
        return None
    opened = _prompt_channel(probe, one, source)
    skip = opened.end if opened is not None else ""
    two = cases.get("two")
    outside = _outside(notation, probe, two or one)
    got = _read(notation, probe, one, skip, outside)
    if got is None:
        return None
    before, _, after, spans = got
    between = None
    if two is not None:
        got2 = _read(notation, probe, two, skip, outside)
        if got2 is None or (got2[0], got2[2]) != (before, after):
            return None
        between = got2[1]
    if opened is not None:
        return Derived(notation, before, between, after, tuple(spans), outside), opened
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
    return Derived(notation, before, between, after, tuple(spans), outside), reasoning


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
        if len(d.between) < len(first) + len(last):
            return None
        if not block_sep.strip(_WS):
            return markers, Layout(block_sep=block_sep, max_trailing_ws=max(ws, len(block_sep)))
        # text between the blocks (a rule, a word): the calls of one block, that text with
        # the closer and the opener around it their separator
    elif _renumbered(d.between, first, last):
        return None  # the markers number the blocks (call 1, call 2) away from the calls
    layout = Layout(separator=mid, separator_text=d.between, max_trailing_ws=ws)
    return markers, layout


def _renumbered(text: str, first: str, last: str) -> bool:
    """Whether ``text`` is ``first``, anything, then ``last``, up to the numbers in them:
    markers that number the calls where :class:`_Outside` finds no counter (numbers that
    do not count from 0 or 1), whose second block's number a separator would bake in."""
    if not any(c in _DIGIT_CHARS for c in first + last):
        return False
    t, f, la = (re.sub(r"[0-9]+", "0", x) for x in (text, first, last))
    return len(t) >= len(f) + len(la) and t.startswith(f) and t.endswith(la)


def _json_codecs(
    probe: Probe, one: ProbeCase, d: Derived, layout: Layout
) -> list[tuple[Codec, Values]]:
    """The JSON codecs that may write the calls as rendered: the object's keys in the
    template's order (an id any JSON string, the type the text ``"function"``, the function
    object nested), the arguments an object or a JSON string, on one line or indented as
    ``tojson(indent=k)`` writes them."""
    s, e = d.spans[0]
    body = one.text[s:e]
    shape = call_shape(json.loads(body), *one.calls[0], _ids(probe, one)[0])
    # the keys over the most calls a message shows (a counter is told from a constant there)
    case = next((c for c in probe.cases if c.name == "two"), one)
    got = json_objects(case.text, case.calls, _ids(probe, case))
    if shape is None or got is None:
        return []
    keys = got[1]
    listed = bool(layout.list_open)
    args = one.calls[0][1]
    if shape.args_string:  # the arguments' own text, decoded
        body = _args_text(json.loads(body), shape)
    compact = json.dumps(args, separators=(",", ":")) in body and json.dumps(args) != "{}"
    values = Values(whitespace="compact") if compact else Values()
    flat = JsonCalls(
        call_keys=keys.call_keys, function_keys=keys.function_keys, args_string=keys.args_string,
        id_shape=keys.id_shape, json_list=listed, constants=keys.constants,
        id_prefix=keys.id_prefix, counts=keys.counts,
    )  # fmt: skip
    out: list[tuple[Codec, Values]] = []
    if "\n" not in one.text[s:e]:
        out.append((flat, values))
    else:
        # tojson(indent=k): the keys k x (depth + 1) spaces in, the object depth levels down
        first = body.split("\n", 1)[1]
        spaces = len(first) - len(first.lstrip(" "))
        for depth in (1, 0) if listed else (0,):
            indent = spaces // (depth + 1)
            if indent and indent * (depth + 1) == spaces:
                codec = dataclasses.replace(flat, indent=indent, depth=depth)
                out.append((codec, values))
    if d.outside is None:
        return out
    if listed or keys.id_shape:  # an id before each object of a list, or a second id
        return []
    return [(_with_id(d.outside, call_object=c), v) for c, v in out if isinstance(c, JsonCalls)]


def _with_id(outside: _Outside, **fields: Any) -> TaggedJson:
    """The :class:`~toolmask.tools.formats._tagged.TaggedJson` codec of ``fields`` whose
    calls follow the id ``outside`` describes."""
    return TaggedJson(
        id_shape=outside.shape, id_prefix=outside.prefix, id_base=outside.base,
        id_text=outside.text, **fields,
    )  # fmt: skip


def _tagged_codecs(
    probe: Probe, one: ProbeCase, d: Derived, layout: Layout
) -> list[tuple[Codec, Values]]:
    """The codec of calls written as the name, the text the rendering shows between it and
    the arguments, and the arguments (on one line, compact or as ``json.dumps`` spaces them,
    or as ``tojson(indent=k)`` writes them), after the call id written before them, if any."""
    s, e = d.spans[0]
    name, args = one.calls[0]
    body = one.text[s:e]
    k = body.find("{", len(name))
    mid, text = body[len(name) : k], body[k:]
    indent = 0
    if "\n" in text:
        first = text.split("\n", 1)[1]
        indent = len(first) - len(first.lstrip(" "))
        if not indent:
            return []
    compact = json.dumps(args, separators=(",", ":")) == text and json.dumps(args) != "{}"
    values = Values(whitespace="compact") if compact else Values()
    try:
        codec = (
            TaggedJson(mid=mid, indent=indent)
            if d.outside is None
            else _with_id(d.outside, mid=mid, indent=indent)
        )
    except ValueError:  # a name or an id that would run on into the text after it
        return []
    return [(codec, values)]


def _args_text(obj: dict[str, Any], shape: Shape) -> str:
    """The arguments string of the call object ``obj`` of this shape."""
    keys = dict(shape.call_keys)
    if shape.function_keys:
        obj = obj[next(k for k, r in keys.items() if r == "function")]
        keys = dict(shape.function_keys)
    text: str = obj[next(k for k, r in keys.items() if r == "args")]
    return text


def _python_codecs(
    probe: Probe, one: ProbeCase, d: Derived, layout: Layout
) -> list[tuple[Codec, Values]]:
    """The Python-call codecs: a list of calls in brackets, or calls one a block or one a
    separator; values as the template writes them (in double quotes: JSON values, as
    ``tojson`` writes them; else Python literals)."""
    double = '"' in "".join(one.text[s:e] for s, e in d.spans)
    notation = "json" if double else "python"  # tojson's values, or Python's
    if layout.list_open:
        if layout.list_open.strip(_WS) != "[" or layout.separator != ",":
            return []
        return [(PythonCalls(wrap=True, notation=notation), Values())]
    return [(PythonCalls(listed=False, notation=notation), Values())]


def _xml_codecs(
    probe: Probe, one: ProbeCase, d: Derived, layout: Layout
) -> list[tuple[Codec, Values]]:
    """The invoke-tag codec with the tag names and the newline the rendering shows, each
    value against its tags or on lines of its own (the whitespace around the first value,
    the same on both sides), the calls of one block joined by the text the rendering shows
    between them."""
    s, e = d.spans[0]
    body = one.text[s:e]
    m = INVOKE_TAG.match(body)
    p = re.compile(r'(\s*)<([A-Za-z_][\w:.-]*) name="[^"<>]*">').match(body, m.end()) if m else None
    if m is None or p is None:
        return []
    close = body.find(f"</{p.group(2)}>", p.end())
    value = body[p.end() : close] if close >= 0 else ""
    core = value.strip(_WS)
    lead = value[: value.find(core)] if core else ""
    if not core or value != lead + core + lead:
        return []
    codec = InvokeParams(invoke=m.group(1), param=p.group(2), nl=p.group(1), joined=True, pad=lead)
    return [(codec, Values())]


def _function_codecs(
    probe: Probe, one: ProbeCase, d: Derived, layout: Layout
) -> list[tuple[Codec, Values]]:
    """The function-tag codec with the tag names the rendering shows (``<function=NAME>`` and
    ``<parameter=KEY>``, or ``<tool=NAME>`` and ``<arg=KEY>``), its values against their tags
    or on lines of their own, the whitespace after the function's tag (a newline, or none:
    the first parameter right after it) the rendering shows."""
    s, e = d.spans[0]
    body = one.text[s:e]
    f = FUNCTION_TAG.match(body)
    p = FUNCTION_TAG.search(body, f.end()) if f is not None else None
    # the first argument's tag (the probe's calls have arguments)
    if f is None or p is None or p.group(2) not in one.calls[0][1] or p.group(1) == f.group(1):
        return []
    nl = body[f.end() : p.start()]
    if nl.strip(_WS):
        return []
    tight = not body.startswith("\n", p.end())
    codec = FunctionParams(tight=tight, function=f.group(1), param=p.group(1), nl=nl)
    return [(codec, Values())]


_CodecsOf = Callable[[Probe, ProbeCase, Derived, Layout], list[tuple[Codec, Values]]]
_CODECS: dict[str, _CodecsOf] = {
    "json": _json_codecs,
    "python": _python_codecs,
    "xml": _xml_codecs,
    "function": _function_codecs,
    "tagged": _tagged_codecs,
}
_BRACKETS = {
    "json": ("[", "]"),
    "python": ("[", "]"),
    "xml": ("", ""),
    "function": ("", ""),
    "tagged": ("", ""),
}


def _closes(codec: TaggedJson, block: BlockMarkers) -> bool:
    """Whether the block's close is told from a next call of ``codec`` by its first
    character (calls back to back, whitespace between them)."""
    return bool(block.close) and not codec.starts_call(block.close, 0)


def _named(spec: FormatSpec) -> FormatSpec:
    data = repr((spec.codec, spec.block, spec.layout, spec.reasoning, spec.values))
    digest = hashlib.sha1(data.encode("utf-8")).hexdigest()[:8]
    return dataclasses.replace(spec, name=f"{GENERIC}_{digest}")


def derive_formats(probe: Probe, source: str = "") -> list[FormatSpec]:
    """The formats the probe's rendering shows, one per notation that finds the calls (see the
    module docstring), not yet proven; ``source``: the template's text (where it names the
    close of a reasoning channel its generation prompt opens). O(notations x rendered
    text)."""
    out: list[FormatSpec] = []
    for notation in NOTATIONS:
        got = _derive(notation, probe, source)
        if got is None:
            continue
        d, reasoning = got
        shape = _layout(d, _BRACKETS[notation])
        if shape is None:
            continue
        block, layout = shape
        if notation in ("xml", "function") and layout.list_open:  # tags in the block's markers
            continue
        one = next(c for c in probe.cases if c.name == "one")  # _derive found it
        for codec, values in _CODECS[notation](probe, one, d, layout):
            if isinstance(codec, TaggedJson) and layout.list_calls and not _closes(codec, block):
                continue
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
    c: Codec | None = spec.codec
    if isinstance(c, TaggedJson):  # what each call is written as, and the id before it
        if c.id_shape == "token":
            parts.append(f"a call id before each call, then {c.id_text!r}")
        elif c.id_shape:
            parts.append(
                f"ids counting the calls before each ({c.id_prefix!r} and the index from "
                f"{c.id_base}), then {c.id_text!r}"
            )
        if c.call_object is None:
            parts.append(f"each call its name, {c.mid!r}, its arguments")
        c = c.call_object
    if isinstance(c, JsonCalls):  # the call object's keys, and how the arguments are written
        inner = ", ".join(k for k, _ in c.function_keys)
        const = {k: json.dumps(v, ensure_ascii=False) for k, v in c.constants}
        keys = [
            f"{k} {{{inner}}}" if role == "function" else f"{k} {const[k]}" if k in const else k
            for k, role in c.call_keys
        ]
        if c.id_shape in ("counter", "index"):
            keys.append(f"ids counting the calls ({c.id_prefix!r} and the index)")
        keys += [f"{k} counting the calls ({pre!r} and the index)" for k, _, pre in c.counts]
        args = " (arguments as a JSON string)" if c.args_string else ""
        parts.append(f"keys {', '.join(keys)}{args}")
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
