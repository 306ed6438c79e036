"""MCP servers as a tool source (extra ``mcp``; see ``docs/mcp.md``).

* :class:`McpToolset`: connect to servers over stdio (a command line) or streamable HTTP (a
  URL), list their tools as :class:`~toolmask.tools.Tool` s whose functions call the server,
  and close them again;
* :class:`Permissions`: which tools the model may call, from the MCP annotations
  (``readOnlyHint``, ``destructiveHint``, ``openWorldHint``) and allow / deny lists;
  :meth:`McpToolset.policy` applies them to an :class:`~toolmask.agent.Agent` as a mask;
* :class:`ServerSpec`, :class:`ToolHints`, :func:`result_text`: the parts, for callers that
  build their own loop.

Built on the official ``mcp`` SDK, imported only here.
"""

from __future__ import annotations

from toolmask.errors import ToolmaskError

try:
    import mcp  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ToolmaskError(
        "toolmask.integrations.mcp needs the MCP SDK: pip install 'toolmask[mcp]'"
    ) from e

from toolmask.integrations.mcp._errors import (
    McpConnectionError,
    McpError,
    McpTimeoutError,
    McpToolError,
)
from toolmask.integrations.mcp._server import McpServer, ServerSpec
from toolmask.integrations.mcp._tools import (
    Permissions,
    ToolHints,
    assign_names,
    result_text,
    short_name,
)
from toolmask.integrations.mcp._toolset import McpTool, McpToolset, RefusedTool

__all__ = [
    "McpConnectionError",
    "McpError",
    "McpServer",
    "McpTimeoutError",
    "McpTool",
    "McpToolError",
    "McpToolset",
    "Permissions",
    "RefusedTool",
    "ServerSpec",
    "ToolHints",
    "assign_names",
    "result_text",
    "short_name",
]
