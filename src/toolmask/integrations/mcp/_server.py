"""One connection to one MCP server, driven synchronously through a :class:`LoopThread`.

A server is a command line (run as a subprocess, spoken to over its stdin/stdout) or an
``http://`` / ``https://`` URL (streamable HTTP). The connection is the SDK's
:class:`mcp.Client` held open by one task on the loop, so its task groups are entered and left
in that task; calls from other threads are submitted to the loop and waited for with a
timeout. The subprocess's stderr goes to a temporary file by default, and its last lines are
quoted when the server fails (it is usually where a crashing server says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolmask.integrations.mcp._errors import (
    McpConnectionError,
    McpError,
    McpTimeoutError,
    McpToolError,
)
from toolmask.integrations.mcp._loop import LoopThread

__all__ = ["McpServer", "ServerSpec"]

#: at most this many ``tools/list`` pages are read from one server (a paginator that never
#: ends cannot hang the listing)
MAX_PAGES = 1000

#: this many trailing lines of a server's stderr are quoted in an error
STDERR_LINES = 8

_URL = re.compile(r"^https?://", re.I)


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is.

    ``target``: a URL (``http://...`` or ``https://...``: streamable HTTP), a command line
    as one string (split as a POSIX shell splits it, quotes included, no expansion), or the
    argument vector itself. ``name``: the server's short name, used to prefix tool names on
    collision (default: the name the server gives itself, else the command's or host's
    name). ``env``: variables added to the SDK's default environment of a subprocess (which
    keeps only ``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``); ``cwd``: its
    working directory.
    """

    target: str | tuple[str, ...]
    name: str | None = None
    env: Mapping[str, str] | None = field(default=None, hash=False, compare=False)
    cwd: str | None = None

    @classmethod
    def of(cls, value: str | Sequence[str] | ServerSpec) -> ServerSpec:
        """``value`` as a spec (a spec is returned as is)."""
        if isinstance(value, ServerSpec):
            return value
        if isinstance(value, str):
            return cls(value)
        return cls(tuple(value))

    @property
    def is_url(self) -> bool:
        return isinstance(self.target, str) and bool(_URL.match(self.target.strip()))

    def argv(self) -> list[str]:
        """The command line as an argument vector (a :class:`McpConnectionError` when it is
        empty or its quotes do not close)."""
        if isinstance(self.target, str):
            try:
                argv = shlex.split(self.target)
            except ValueError as e:
                raise McpConnectionError(f"cannot split the command {self.target!r}: {e}") from e
        else:
            argv = list(self.target)
        if not argv:
            raise McpConnectionError("an MCP server command is empty")
        return argv

    @property
    def label(self) -> str:
        """The target as the user wrote it (for messages)."""
        if isinstance(self.target, str):
            return self.target.strip()
        return shlex.join(self.target)

    def default_name(self) -> str:
        """The name the spec implies: the command's file name (``mcp-server-time``), or the
        URL's host and port."""
        if self.is_url:
            assert isinstance(self.target, str)
            rest = _URL.sub("", self.target.strip())
            return rest.split("/", 1)[0] or "server"
        argv = self.argv()
        head = Path(argv[0]).name
        # an interpreter running a script or module names the server by the script / module
        if re.match(r"^(python[0-9.]*|uv|uvx|node|npx|pipx)$", head) and len(argv) > 1:
            operands = [a for a in argv[1:] if not a.startswith("-")]
            if operands:
                script = Path(operands[0]).name
                head = script.removesuffix(".py") or head
        return head


def resolve_command(command: str) -> str:
    """``command`` as the subprocess will run it: unchanged when it is a path or found on
    ``PATH``, else the script of that name next to the running Python (the ``bin`` folder of
    the virtual environment toolmask runs in, which need not be on ``PATH``)."""
    if os.sep in command or shutil.which(command) is not None:
        return command
    here = Path(sys.executable).parent / command
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return command


def _leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside ``exc`` (anyio's task groups wrap errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class McpServer:
    """A connected MCP server (see the module docstring).

    ``connect_timeout`` bounds starting the server and the protocol handshake;
    ``call_timeout`` each request (a tool call, a page of the tool listing). ``stderr``: a
    file for the subprocess's stderr, or ``None`` to keep it in a temporary file quoted in
    errors. Blocking methods must not be called from the loop's own thread.
    """

    def __init__(
        self,
        spec: ServerSpec,
        loop: LoopThread,
        *,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        stderr: TextIO | None = None,
    ) -> None:
        self.spec = spec
        self.loop = loop
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self._own_errlog = stderr is None
        self._errlog: TextIO | None = None
        if not spec.is_url:
            self._errlog = stderr or tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
                "w+", encoding="utf-8", errors="replace"
            )
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lost: BaseException | None = None
        self._gone: str | None = None  # what ended the connection, once a request saw it
        self.info: mcp_types.Implementation | None = None
        self.closed = False

    # -- connection -------------------------------------------------------------------------------
    def _transport(self) -> Any:
        if self.spec.is_url:
            assert isinstance(self.spec.target, str)
            return self.spec.target.strip()
        argv = self.spec.argv()
        params = StdioServerParameters(
            command=resolve_command(argv[0]),
            args=argv[1:],
            env=dict(self.spec.env) if self.spec.env else None,
            cwd=self.spec.cwd,
        )
        assert self._errlog is not None
        return stdio_client(params, errlog=self._errlog)

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Open the client, say so through ``ready``, and keep it open until ``_stop``."""
        self._stop = asyncio.Event()
        try:
            client = Client(self._transport(), read_timeout_seconds=self.call_timeout, cache=None)
            async with client:
                self._client = client
                self.info = client.server_info
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e)
            else:
                self._lost = e
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    async def _start(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready))
        try:
            await ready
        except BaseException:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            raise

    def connect(self) -> None:
        """Start (or reach) the server and run the MCP handshake. Raises
        :class:`McpConnectionError` (naming the target, quoting the server's stderr) or
        :class:`McpTimeoutError`."""
        what = f"connecting to the MCP server {self.spec.label!r}"
        try:
            self.loop.run(self._start(), timeout=self.connect_timeout, what=what)
        except McpTimeoutError as e:
            raise McpTimeoutError(f"{e}{self._stderr_tail()}") from None
        except McpError:
            raise
        except BaseException as e:
            leaf = _leaf(e)
            raise McpConnectionError(
                f"cannot connect to the MCP server {self.spec.label!r}: "
                f"{type(leaf).__name__}: {leaf}{self._stderr_tail()}"
            ) from leaf

    @property
    def name(self) -> str:
        """The name the server gives itself, else the spec's default name."""
        if self.spec.name:
            return self.spec.name
        if self.info is not None and self.info.name:
            return self.info.name
        return self.spec.default_name()

    def _stderr_tail(self) -> str:
        log = self._errlog
        if log is None or not self._own_errlog or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            lines = [ln.rstrip() for ln in log.read().splitlines() if ln.strip()]
            log.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        if not lines:
            return ""
        tail = "\n".join(lines[-STDERR_LINES:])
        return f"\nthe server's last stderr lines:\n{tail}"

    # -- requests ---------------------------------------------------------------------------------
    def _live_client(self, doing: str) -> Client:
        client = self._client
        if self.closed:
            raise McpConnectionError(f"MCP server {self.name!r} cannot {doing}: it was closed")
        if self._gone is not None or client is None:
            why = self._gone or "its connection was lost"
            if self._lost is not None and self._gone is None:
                leaf = _leaf(self._lost)
                why += f" ({type(leaf).__name__}: {leaf})"
            raise McpConnectionError(
                f"MCP server {self.name!r} cannot {doing}: {why}{self._stderr_tail()}"
            )
        return client

    def _failure(self, e: BaseException, doing: str) -> McpError:
        """The error to raise for exception ``e`` of a request (``doing``: what it was)."""
        leaf = _leaf(e)
        who = f"MCP server {self.name!r}"
        if isinstance(leaf, McpError):
            return leaf
        if isinstance(leaf, MCPError):
            if leaf.code == mcp_types.CONNECTION_CLOSED:
                self._gone = f"it closed the connection during {doing} (it exited or crashed)"
                return McpConnectionError(f"{who}: {self._gone}{self._stderr_tail()}")
            if leaf.code == mcp_types.REQUEST_TIMEOUT:
                return McpTimeoutError(f"{who}: {doing} timed out: {leaf.message}")
            return McpToolError(
                f"{who} refused {doing}: {leaf.message} (JSON-RPC error {leaf.code})"
            )
        if isinstance(leaf, ValidationError):
            return McpToolError(f"{who} answered {doing} with a malformed result: {leaf}")
        if isinstance(leaf, TimeoutError):
            return McpTimeoutError(f"{who}: {doing} timed out")
        return McpConnectionError(
            f"{who} failed during {doing}: {type(leaf).__name__}: {leaf}{self._stderr_tail()}"
        )

    def _request(self, coro_fn: Any, doing: str, timeout: float | None) -> Any:
        client = self._live_client(doing)
        limit = self.call_timeout if timeout is None else timeout

        async def go() -> Any:
            return await coro_fn(client, limit)

        try:
            # the SDK times the request itself; the loop's limit is a backstop a bit later
            return self.loop.run(go(), timeout=limit + 5.0, what=f"{doing} on {self.name!r}")
        except McpTimeoutError:
            raise
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            raise self._failure(e, doing) from _leaf(e)

    def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool of the server, following ``nextCursor`` (at most :data:`MAX_PAGES`
        pages; a cursor seen twice is an error)."""
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):

            async def page(client: Client, limit: float, at: str | None = cursor) -> Any:
                return await client.list_tools(cursor=at)

            result = self._request(page, "listing its tools", None)
            tools.extend(result.tools)
            cursor = result.next_cursor
            if cursor is None:
                return tools
            if cursor in seen:
                raise McpToolError(
                    f"MCP server {self.name!r} repeats the tools/list cursor {cursor!r}"
                )
            seen.add(cursor)
        raise McpToolError(f"MCP server {self.name!r} lists tools in more than {MAX_PAGES} pages")

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> mcp_types.CallToolResult:
        """Call tool ``name`` (the server's own name for it); returns the SDK's result, whose
        ``is_error`` the caller reads. Raises :class:`McpConnectionError` (the server is gone),
        :class:`McpTimeoutError`, or :class:`McpToolError` (a JSON-RPC error)."""

        async def go(client: Client, limit: float) -> Any:
            return await client.call_tool(name, dict(arguments), read_timeout_seconds=limit)

        result: mcp_types.CallToolResult = self._request(go, f"the call of {name!r}", timeout)
        return result

    # -- shutdown ---------------------------------------------------------------------------------
    def _signal_stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def close(self, timeout: float = 10.0) -> None:
        """Leave the session (the SDK closes the subprocess's stdin, then terminates it) and
        wait up to ``timeout`` seconds for that. Idempotent; never raises for a server that
        already died."""
        if self.closed:
            return
        self.closed = True
        task = self._task
        if task is not None and self.loop.alive:
            self.loop.call_soon(self._signal_stop)

            async def wait() -> None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(task), timeout)

            with contextlib.suppress(McpError):
                self.loop.run(wait(), timeout=timeout + 1.0, what="closing")
        if self._own_errlog and self._errlog is not None:
            self._errlog.close()
