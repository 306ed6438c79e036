"""``McpToolset``: the tools of one or more MCP servers as toolmask tools, ready for the agent.

::

    with McpToolset(["mcp-server-time", "http://127.0.0.1:8000/mcp"]) as mcp:
        agent = Agent(backend, mcp.tools, policy=mcp.policy())
        agent.run("What time is it in Tokyo?")

Connecting starts each stdio server, runs the handshake, lists every tool (all pages) and
turns each into a :class:`~toolmask.tools.Tool` whose function calls the server. Each tool's
argument schema is compiled as the agent will compile it (its turn grammar in ``fmt``); a
schema toolmask refuses leaves that tool out, recorded in :attr:`McpToolset.refused` with the
error and its JSON pointer, and the other tools stay usable. Names follow the rule of
:mod:`toolmask.integrations.mcp._tools`. :meth:`McpToolset.policy` masks the tools the
:class:`Permissions` do not allow: they stay in the prompt (which stays byte-identical
whatever is allowed), only the set of callable tools changes.

All servers share one event loop on one background thread; close the toolset (or use it as a
context manager) to end the sessions and stop the thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TextIO

from toolmask.agent import Message, ToolPolicy
from toolmask.errors import LimitError, SchemaError, ToolError, ToolmaskError
from toolmask.integrations.mcp._errors import McpError, McpToolError
from toolmask.integrations.mcp._loop import LoopThread
from toolmask.integrations.mcp._server import McpServer, ServerSpec
from toolmask.integrations.mcp._tools import (
    Permissions,
    ToolHints,
    assign_names,
    result_text,
    short_name,
)
from toolmask.tools import Tool, ToolTurn

__all__ = ["McpTool", "McpToolset", "RefusedTool"]


@dataclass(frozen=True)
class McpTool:
    """One usable MCP tool: ``tool`` is what the model sees and calls (its ``function``
    calls the server), ``server`` the server's short name, ``remote_name`` the tool's MCP
    name, ``hints`` its annotations, ``output_schema`` the schema its structured results
    follow (``None`` when the server gives none; the SDK validates results against it)."""

    tool: Tool
    server: str
    remote_name: str
    hints: ToolHints
    output_schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    title: str | None = None

    @property
    def name(self) -> str:
        return self.tool.name


@dataclass(frozen=True)
class RefusedTool:
    """A tool left out because toolmask cannot constrain its arguments exactly: ``error``
    is the :class:`~toolmask.errors.SchemaError` / :class:`~toolmask.errors.LimitError`
    (with its JSON pointer) or :class:`~toolmask.errors.ToolError`."""

    name: str
    server: str
    remote_name: str
    hints: ToolHints
    error: ToolmaskError

    def __str__(self) -> str:
        if getattr(self.error, "tool", None):  # the error names the tool already
            return f"MCP server {self.server!r}: {self.error}"
        return f"MCP server {self.server!r}, tool {self.name!r}: {self.error}"


def _check_arguments(tool: Tool, fmt: str) -> None:
    """Build the turn grammar of ``tool`` alone in ``fmt``: what the agent compiles. Raises
    what compiling raises (SchemaError / LimitError with the tool and pointer)."""
    ToolTurn([tool], fmt, "required").grammar()


class McpToolset:
    """The tools of several MCP servers (see the module docstring).

    ``servers``: command lines, URLs or :class:`ServerSpec` s. ``permissions``: the default
    of :meth:`policy` and :meth:`masked`. ``fmt``: the wire format whose argument grammar
    checks each tool (``"hermes"``: JSON arguments; pass the agent's format if it is not a
    JSON one). ``connect_timeout`` bounds each server's start and handshake,
    ``call_timeout`` each request. ``stderr``: where stdio servers write their stderr
    (default: a temporary file per server, quoted in errors).

    Raises :class:`McpError` subclasses when a server cannot be reached or listed (the
    servers already started are closed again).
    """

    def __init__(
        self,
        servers: Iterable[str | Sequence[str] | ServerSpec],
        *,
        permissions: Permissions | None = None,
        fmt: str = "hermes",
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        stderr: TextIO | None = None,
    ) -> None:
        specs = [ServerSpec.of(s) for s in servers]
        if not specs:
            raise McpError("no MCP server given")
        self.permissions = permissions or Permissions()
        self.fmt = fmt
        self._loop = LoopThread()
        self.servers: list[McpServer] = []
        self.entries: list[McpTool] = []
        self.refused: list[RefusedTool] = []
        self._by_name: dict[str, tuple[McpTool, McpServer]] = {}
        try:
            for spec in specs:
                server = McpServer(
                    spec,
                    self._loop,
                    connect_timeout=connect_timeout,
                    call_timeout=call_timeout,
                    stderr=stderr,
                )
                self.servers.append(server)
                server.connect()
            self._load()
        except BaseException:
            self.close()
            raise

    # -- listing ----------------------------------------------------------------------------------
    def _server_names(self) -> list[str]:
        names: list[str] = []
        for server in self.servers:
            base = short_name(server.name)
            name, k = base, 1
            while name in names:
                k += 1
                name = f"{base}_{k}"
            names.append(name)
        return names

    def _load(self) -> None:
        listed: list[tuple[McpServer, str, Any]] = []
        for server, short in zip(self.servers, self._server_names(), strict=True):
            listed.extend((server, short, t) for t in server.list_tools())
        names = assign_names([(short, t.name) for _, short, t in listed])
        for (server, short, mcp_tool), name in zip(listed, names, strict=True):
            hints = ToolHints.of(mcp_tool.annotations)
            try:
                tool = Tool(
                    name,
                    mcp_tool.description or mcp_tool.title or "",
                    json.loads(json.dumps(mcp_tool.input_schema)),
                    function=self._remote(name),
                )
                _check_arguments(tool, self.fmt)
            except (SchemaError, LimitError, ToolError) as e:
                if isinstance(e, SchemaError | LimitError):
                    e.in_tool(name)
                self.refused.append(RefusedTool(name, short, mcp_tool.name, hints, e))
                continue
            entry = McpTool(
                tool,
                short,
                mcp_tool.name,
                hints,
                dict(mcp_tool.output_schema) if mcp_tool.output_schema is not None else None,
                mcp_tool.title,
            )
            self.entries.append(entry)
            self._by_name[name] = (entry, server)

    def _remote(self, name: str) -> Any:
        def call(**arguments: Any) -> str:
            return self.call(name, arguments)

        call.__name__ = name
        call.__doc__ = f"Calls the MCP tool behind {name!r}."
        return call

    # -- views ------------------------------------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        """The usable tools (refused ones left out), in server order, then listing order."""
        return [e.tool for e in self.entries]

    @property
    def hints(self) -> dict[str, ToolHints]:
        """Tool name -> its annotations."""
        return {e.name: e.hints for e in self.entries}

    def __getitem__(self, name: str) -> McpTool:
        try:
            return self._by_name[name][0]
        except KeyError:
            raise McpError(
                f"no MCP tool is called {name!r}; the tools are {list(self._by_name)}"
            ) from None

    def __iter__(self) -> Iterator[McpTool]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    # -- calls ------------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None) -> str:
        """Call tool ``name`` (its toolmask name) with ``arguments``; returns the result as
        text (:func:`~toolmask.integrations.mcp.result_text`). A result the server marks
        ``isError`` raises :class:`McpToolError` with the server's message; a server that is
        gone raises :class:`McpConnectionError`; a slow one :class:`McpTimeoutError`. The
        text is untrusted: the agent sanitises it like any tool result before the prompt
        sees it."""
        entry, server = self._by_name.get(name, (None, None))
        if entry is None or server is None:
            self[name]  # raises the error naming the tools
            raise AssertionError  # pragma: no cover - unreachable
        result = server.call_tool(entry.remote_name, arguments, timeout=timeout)
        text = result_text(result.content, result.structured_content)
        if result.is_error:
            raise McpToolError(text or f"the tool {entry.remote_name!r} failed without a message")
        return text

    # -- permissions ------------------------------------------------------------------------------
    def masked(self, permissions: Permissions | None = None) -> dict[str, str]:
        """Tool name -> why ``permissions`` (default: the toolset's) mask it."""
        return (permissions or self.permissions).masked(self.hints)

    def allowed(self, permissions: Permissions | None = None) -> list[str]:
        """The names of the tools ``permissions`` allow, in order."""
        masked = self.masked(permissions)
        return [e.name for e in self.entries if e.name not in masked]

    def policy(self, permissions: Permissions | None = None) -> ToolPolicy:
        """An agent policy (:mod:`toolmask.agent`) that masks the tools ``permissions``
        forbid at every step: ``["*", "!tool", ...]`` (every other tool of the agent stays
        allowed, its answer tool included), or ``None`` (no narrowing) when nothing is
        masked. The prompt is unchanged; only the grammar's allowed set narrows. Give the
        agent every tool of :attr:`tools` (with any of its own): the agent refuses a pattern
        that names no tool it has, so a masked tool left out of its list is an error."""
        patterns = ["*", *(f"!{n}" for n in self.masked(permissions))]

        def permitted(step: int, transcript: Sequence[Message]) -> list[str] | None:
            return patterns if len(patterns) > 1 else None

        return permitted

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        """End every session (stdio servers are stopped) and the event loop's thread.
        Idempotent."""
        for server in self.servers:
            server.close()
        self._loop.stop()

    def __enter__(self) -> McpToolset:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
