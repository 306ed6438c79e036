"""MCP tools as toolmask tools: names, hints, results and the permission rule.

Names. toolmask (like the OpenAI API) takes tool names of 1 to 64 characters from
``[A-Za-z0-9_-]``; MCP allows more (``.``, ``/``, up to 128 characters). The rule, applied
to all servers at once so the result does not depend on the order tools are listed in:

1. a server's *short name* is :attr:`ServerSpec.name` when given, else the name the server
   gives itself, else the command's file name (or the URL's host); characters outside the
   charset become ``_``; the second server of the same short name gets ``_2``, the third
   ``_3`` (in the order the servers were given);
2. a tool's *local name* is its MCP name with every character outside the charset replaced
   by ``_``;
3. a local name that more than one server lists becomes ``<server>__<local name>`` on every
   server that lists it (no server keeps the bare name: none is privileged by order);
4. a name that is still taken, or longer than 64 characters, is cut to 55 characters and
   ends with ``_`` and 8 hex digits of the SHA-256 of ``server + "\\0" + MCP name``.

The call always goes to the server under the tool's MCP name.

Hints. MCP tool annotations are hints with defaults that assume the worst:
``readOnlyHint=false``, ``destructiveHint=true``, ``idempotentHint=false``,
``openWorldHint=true``. A tool *may destroy* when it is not read-only and its
``destructiveHint`` is not false, so a tool without annotations may destroy.
:class:`Permissions` masks such tools unless allowed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from toolmask.integrations.mcp._errors import McpError

__all__ = ["Permissions", "ToolHints", "assign_names", "result_text", "short_name"]

MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def short_name(text: str, *, limit: int = 32) -> str:
    """``text`` in the tool-name charset (others become ``_``), at most ``limit``
    characters; ``"server"`` when nothing is left."""
    out = _BAD.sub("_", text.strip())[:limit].strip("_")
    return out or "server"


def _hashed(name: str, server: str, remote: str) -> str:
    digest = hashlib.sha256(f"{server}\0{remote}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def assign_names(listed: Sequence[tuple[str, str]]) -> list[str]:
    """The toolmask name of each ``(server short name, MCP tool name)`` pair, in order, by
    the module docstring's rule (steps 2 to 4; the server names are already unique). A pair
    listed twice (one server listing one name twice) gets the hashed form the second time.
    O(tools)."""
    local = [_BAD.sub("_", remote) or "_" for _, remote in listed]
    servers_of: dict[str, set[str]] = {}
    for (server, _), name in zip(listed, local, strict=True):
        servers_of.setdefault(name, set()).add(server)
    wanted = [
        f"{server}__{name}" if len(servers_of[name]) > 1 else name
        for (server, _), name in zip(listed, local, strict=True)
    ]
    counts: dict[str, int] = {}
    for name in wanted:
        counts[name] = counts.get(name, 0) + 1
    taken: set[str] = {n for n in wanted if counts[n] == 1 and len(n) <= MAX_NAME}
    out: list[str] = []
    for (server, remote), name in zip(listed, wanted, strict=True):
        if name in taken and name not in out:
            out.append(name)
            continue
        fixed = _hashed(name, server, remote)
        salt = 0
        while fixed in taken or fixed in out:  # a hash collision: vanishingly rare, still total
            salt += 1
            fixed = _hashed(name, server, f"{remote}\0{salt}")
        out.append(fixed)
    return out


@dataclass(frozen=True, slots=True)
class ToolHints:
    """An MCP tool's annotations with the specification's defaults filled in; ``declared``
    names the hints the server actually sent (camelCase, as on the wire)."""

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True
    declared: frozenset[str] = frozenset()

    @classmethod
    def of(cls, annotations: Any) -> ToolHints:
        """From the SDK's ``ToolAnnotations`` (or ``None``)."""
        if annotations is None:
            return cls()
        fields = {
            "readOnlyHint": ("read_only", getattr(annotations, "read_only_hint", None)),
            "destructiveHint": ("destructive", getattr(annotations, "destructive_hint", None)),
            "idempotentHint": ("idempotent", getattr(annotations, "idempotent_hint", None)),
            "openWorldHint": ("open_world", getattr(annotations, "open_world_hint", None)),
        }
        given = {wire: (attr, v) for wire, (attr, v) in fields.items() if isinstance(v, bool)}
        return cls(**{attr: v for attr, v in given.values()}, declared=frozenset(given))

    @property
    def may_destroy(self) -> bool:
        """Not read-only and not declared non-destructive (MCP: ``destructiveHint`` is
        meaningful only when ``readOnlyHint`` is false)."""
        return not self.read_only and self.destructive

    def brief(self) -> str:
        """``read-only`` / ``destructive`` / ``writes``, plus ``open-world``; an asterisk
        marks a value taken from the defaults rather than declared."""
        if self.read_only:
            kind = "read-only" + ("" if "readOnlyHint" in self.declared else "*")
        elif self.destructive:
            known = {"readOnlyHint", "destructiveHint"} <= self.declared
            kind = "destructive" + ("" if known else "*")
        else:
            kind = "writes"
        if self.open_world:
            kind += ", open-world" + ("" if "openWorldHint" in self.declared else "*")
        return kind


@dataclass(frozen=True)
class Permissions:
    """Which MCP tools the model may call; the others stay in the prompt and are masked.

    A tool is allowed when a pattern of ``allow`` matches its name, or when it is neither
    destructive (unless ``allow_destructive``) nor open-world (unless ``allow_open_world``);
    a pattern of ``deny`` masks a tool whatever else says. Patterns are tool names (the
    toolmask names, prefixes included) or ``fnmatch`` globs (``git_*``).
    """

    allow_destructive: bool = False
    allow_open_world: bool = True
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def masked(self, hints: Mapping[str, ToolHints]) -> dict[str, str]:
        """Tool name -> why it is masked, for the tools of ``hints`` (name -> hints). A
        pattern of ``allow`` or ``deny`` that matches no tool is an error (a typo would
        otherwise silently change nothing). O(patterns x tools)."""
        names = list(hints)
        for pattern in (*self.allow, *self.deny):
            if not any(fnmatchcase(n, pattern) for n in names):
                raise McpError(
                    f"the permission pattern {pattern!r} matches no MCP tool; the tools are {names}"
                )
        out: dict[str, str] = {}
        for name, h in hints.items():
            if any(fnmatchcase(name, p) for p in self.deny):
                out[name] = "denied"
            elif any(fnmatchcase(name, p) for p in self.allow):
                continue
            elif h.may_destroy and not self.allow_destructive:
                out[name] = "destructive"
            elif h.open_world and not self.allow_open_world:
                out[name] = "open-world"
        return out


# -- results -----------------------------------------------------------------------------------


def _block_text(block: Any) -> str:
    """One content block as text: text as is; an embedded text resource's text; anything
    else a one-line placeholder naming its kind and size (binary data is never pasted)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return text
        blob = getattr(res, "blob", "") or ""
        return f"[resource {res.uri}: {res.mime_type or 'binary'}, {_b64_size(blob)} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.uri}" + (f": {block.name}]" if block.name else "]")
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_b64_size(block.data)} bytes]"
    return f"[{kind or 'unknown'} content]"


def _b64_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (ValueError, TypeError):
        return len(data)


def result_text(content: Iterable[Any], structured: Any) -> str:
    """A tool result as the text the model reads: the content blocks joined by newlines;
    when there is no content block, the structured content as JSON (``json.dumps``,
    non-ASCII kept); the empty string when there is neither."""
    parts = [_block_text(b) for b in content]
    if parts:
        return "\n".join(parts)
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    return ""
