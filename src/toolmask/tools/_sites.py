"""Where in a turn a byte is written: the *site* the distortion meter reports.

:func:`site_at` reads the reply so far and names the part of the turn the next byte belongs
to, in the words of the wire format rather than of grammar rules:

``turn_start``
    the first byte of the reply: where ``auto`` decides between prose and a call.
``prose``
    free text outside any block (under ``auto`` / ``none``).
``block_open``
    the block opener is being written (``<tool_call>`` ...; at the start under ``required``).
``envelope``
    inside a block, outside the arguments: the call object's ``{"name": "X", "arguments": ``,
    a list bracket, the space between calls.
``key``
    an argument key, or the place where one may start (after ``{`` or ``, ``).
``value``
    inside an argument value (any nesting).
``separator``
    right after an argument value: ``, `` (another key) or ``}`` (the arguments end).
``block_close``
    after the call JSON, before the close marker is complete.
``after_block``
    after a complete block: whitespace, the end of the turn, or another opener.

The scan is a forward pass of O(len(text)); it trusts nothing (it reads unconstrained output
too) and never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from toolmask.tools.formats import FormatSpec

__all__ = ["SITES", "Metered", "distortion_sites", "site_at", "sites_of"]


class _Step(Protocol):
    @property
    def offset(self) -> int: ...


class Metered(Protocol):
    """What :func:`distortion_sites` reads of a generation: the reply's bytes and the metered
    steps' byte offsets (:class:`toolmask.backends.Generation` is one; the tool layer sits
    below the backends, so it names the shape, not the class)."""

    @property
    def text(self) -> bytes: ...

    @property
    def distortion(self) -> Sequence[_Step]: ...


SITES = (
    "turn_start",
    "prose",
    "block_open",
    "envelope",
    "key",
    "value",
    "separator",
    "block_close",
    "after_block",
)
_WS = " \t\r\n"


@dataclass(slots=True)
class _Frame:
    bracket: str  # "{" or "["
    role: str  # "list" | "call" | "args" | "inner"
    state: str  # objects: key | colon | value | comma; arrays: value | comma
    last_key: str = ""


class _JsonScan:
    """A permissive character-level JSON scanner that tracks the role of each container."""

    def __init__(self, fmt: FormatSpec) -> None:
        self.args_keys = {"arguments", "parameters"}
        self.list_first = bool(fmt.layout.list_open)
        self.frames: list[_Frame] = []
        self.in_string = False
        self.escape = False
        self.string_is_key = False
        self.string_text: list[str] = []
        self.in_scalar = False
        self.started = False
        self.done = False

    def _child_role(self) -> str:
        if not self.frames:
            return "list" if self.list_first else "call"
        top = self.frames[-1]
        if top.role == "list":
            return "call"
        if top.role == "call" and top.bracket == "{" and top.last_key in self.args_keys:
            return "args"
        return "inner"

    def _value_done(self) -> None:
        if not self.frames:
            self.done = True
            return
        self.frames[-1].state = "comma"

    def feed(self, text: str) -> int:
        """Consume ``text``; return how many characters were read (less than ``len(text)`` when
        the root value closed first)."""
        for i, c in enumerate(text):
            if self.done:
                return i
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif c == "\\":
                    self.escape = True
                elif c == '"':
                    self.in_string = False
                    if self.string_is_key and self.frames:
                        self.frames[-1].last_key = "".join(self.string_text)
                        self.frames[-1].state = "colon"
                    else:
                        self._value_done()
                    continue
                if self.string_is_key:
                    self.string_text.append(c)
                continue
            if self.in_scalar:
                if c in ",}] \t\r\n":
                    self.in_scalar = False
                    self._value_done()
                else:
                    continue
            if c in _WS:
                continue
            top = self.frames[-1] if self.frames else None
            if c in "{[":
                self.frames.append(_Frame(c, self._child_role(), "key" if c == "{" else "value"))
                self.started = True
            elif c in "}]":
                if self.frames:
                    self.frames.pop()
                self._value_done()
            elif c == '"':
                self.in_string = True
                self.string_is_key = top is not None and top.bracket == "{" and top.state == "key"
                self.string_text = []
                self.started = True
            elif c == ":":
                if top is not None:
                    top.state = "value"
            elif c == ",":
                if top is not None:
                    top.state = "key" if top.bracket == "{" else "value"
            else:
                self.in_scalar = True
                self.started = True
        return len(text)

    def site(self) -> str:
        if self.done:
            return "block_close"
        if not self.frames:
            return "value" if (self.in_string or self.in_scalar) else "envelope"
        top = self.frames[-1]
        if top.role in ("list", "call"):
            return "envelope"
        if top.role == "inner":
            return "value"
        # the arguments object itself
        if self.in_string:
            return "key" if self.string_is_key else "value"
        if self.in_scalar or top.state == "value":
            return "value"
        if top.state == "comma":
            return "separator"
        return "key"


def _next_block(fmt: FormatSpec, text: str, pos: int) -> tuple[int, FormatSpec]:
    """Where the next block's opener is at or after ``pos`` (-1: none), and the variant of the
    format (its own markers or a habit's, :attr:`FormatSpec.variants`) it opens."""
    best, found = -1, fmt
    for v in fmt.variants:
        k = text.find(v.trigger_text, pos)
        if k >= 0 and (best < 0 or k < best):
            best, found = k, v
    return best, found


def site_at(fmt: FormatSpec, text: str) -> str:
    """The site (one of :data:`SITES`) of the next byte after the reply prefix ``text``."""
    triggers = [v.trigger_text for v in fmt.variants]
    pos = 0
    after_block = False
    while True:
        bare = pos == 0 and bool(fmt.block.bare_start) and text.startswith("{")
        k, block = (0, fmt) if bare else _next_block(fmt, text, pos)
        if k < 0:
            rest = text[pos:]
            stripped = rest.lstrip(_WS) if after_block else rest
            if not text:
                return "turn_start"
            if after_block and not stripped:
                return "after_block"
            if stripped and any(t.startswith(stripped) for t in triggers):
                return "block_open"
            return "prose"
        start = k if bare else k + len(block.block.open)
        body = text[start:]
        scan = _JsonScan(fmt)
        used = scan.feed(body)
        if not scan.done:
            return scan.site() if scan.started else "envelope"
        tail = body[used:]
        closer = block.block.before_close + block.block.close
        if not closer:
            pos = start + used
            after_block = True
            continue
        if len(tail) < len(closer):
            if closer.startswith(tail):
                return "block_close"
            pos = start + used
            after_block = False
            continue
        if tail.startswith(closer):
            pos = start + used + len(closer)
            after_block = True
            continue
        pos = start + used
        after_block = False


def distortion_sites(gen: Metered, fmt: FormatSpec) -> list[str]:
    """The site of every :class:`~toolmask.backends.StepDistortion` of ``gen`` (same order).
    Cost: O(steps x reply length)."""
    return sites_of(gen.text, [d.offset for d in gen.distortion], fmt)


def sites_of(text: bytes, offsets: Sequence[int], fmt: FormatSpec) -> list[str]:
    """The site at each byte offset of the reply ``text``."""
    return [site_at(fmt, text[:o].decode("utf-8", "ignore")) for o in offsets]
