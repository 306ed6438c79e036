"""The errors of the MCP tool source.

::

    ToolmaskError
    └── McpError              anything that went wrong talking to an MCP server
        ├── McpConnectionError    a server that cannot be started or reached, or that went
        │                         away (its process exited, its HTTP endpoint closed)
        ├── McpTimeoutError       a connection or a call that took longer than its timeout
        └── McpToolError          the server ran the tool and reported a failure (``isError``)
                                  or refused the call with a JSON-RPC error

Inside the agent loop a tool's exception becomes the tool result ``error: <Type>: <message>``
(the loop goes on), so each message is written for the model and the user alike: which
server, which tool, what happened.
"""

from __future__ import annotations

from toolmask.errors import ToolmaskError

__all__ = ["McpConnectionError", "McpError", "McpTimeoutError", "McpToolError"]


class McpError(ToolmaskError):
    """Root of the MCP tool source's errors."""


class McpConnectionError(McpError):
    """A server that could not be started or reached, or whose connection was lost."""


class McpTimeoutError(McpError):
    """A connection or call that ran past its timeout (the call is cancelled)."""


class McpToolError(McpError):
    """The tool ran and failed (``isError``), or the server refused the call."""
