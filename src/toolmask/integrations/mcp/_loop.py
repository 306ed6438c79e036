"""One asyncio event loop on a background thread, so that synchronous code (the agent loop)
can drive the async MCP SDK.

The loop runs until :meth:`LoopThread.stop`. :meth:`LoopThread.run` submits a coroutine and
blocks the calling thread until it finishes, raising what it raised; past ``timeout`` the
coroutine is cancelled (on the loop) and :class:`McpTimeoutError` is raised. Long-lived async
context managers (an MCP client session, whose anyio task groups must be entered and left in
one task) live in tasks started with :meth:`LoopThread.spawn`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from toolmask.integrations.mcp._errors import McpError, McpTimeoutError

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop running ``run_forever`` on a daemon thread named ``name``.

    Thread-safe: any thread but the loop's own may call :meth:`run`, :meth:`spawn` and
    :meth:`stop`. Cost: one thread, idle while no coroutine is pending.
    """

    def __init__(self, name: str = "toolmask-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._stopped = False
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    @property
    def alive(self) -> bool:
        """Whether the loop still accepts work."""
        return not self._stopped and self._thread.is_alive()

    def _check_caller(self) -> None:
        if threading.current_thread() is self._thread:
            raise McpError("a blocking MCP call was made from the MCP event loop itself")
        if not self.alive:
            raise McpError("the MCP connections are closed")

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None, what: str) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception). Past
        ``timeout`` seconds (``None``: no limit) the coroutine is cancelled and
        :class:`McpTimeoutError` names ``what``."""
        try:
            self._check_caller()
        except McpError:
            coro.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpTimeoutError(f"{what} took longer than {timeout:g} s") from None
        except concurrent.futures.CancelledError:
            raise McpError(f"{what} was cancelled (the MCP connections are closing)") from None

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Start ``coro`` as a task on the loop; returns a future of its result."""
        try:
            self._check_caller()
        except McpError:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Schedule ``fn(*args)`` on the loop (thread-safe); nothing when the loop stopped."""
        if self.alive:
            self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (tasks still pending are cancelled) and join its thread. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
