"""Rebuild ``mcp_tools.json``: the tool lists of the reference MCP servers the tests start
(``mcp-server-time``, ``mcp-server-git``), as the servers report them over stdio
(``tools/list``, every page), so that ``bench/many_tools.py`` runs offline without them.

    .venv/bin/python bench/data/vendor_mcp_tools.py   # needs `make venv` (the mcp extra)

The git server is started on a temporary repository. Each tool is written as the server
listed it (``name``, ``description``, ``inputSchema``, ``outputSchema``, ``annotations``);
the file records the servers' package versions.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

OUT = Path(__file__).resolve().parent / "mcp_tools.json"


async def _list(command: list[str]) -> list[dict[str, Any]]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(stdio_client(params), cache=None) as client:
        tools: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                return tools


def main() -> None:
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as repo:
        subprocess.run(["git", "init", "-q", repo], check=True)
        servers = {
            "mcp-server-time": [str(bin_dir / "mcp-server-time")],
            "mcp-server-git": [str(bin_dir / "mcp-server-git"), "--repository", repo],
        }
        out = {
            "source": "tools/list of the reference MCP servers (modelcontextprotocol/servers, "
            "MIT licence), as their PyPI packages report them; rebuilt by vendor_mcp_tools.py",
            "servers": {
                name: {"version": version(name), "tools": asyncio.run(_list(cmd))}
                for name, cmd in servers.items()
            },
        }
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    n = sum(len(s["tools"]) for s in out["servers"].values())
    print(f"wrote {OUT} ({n} tools)")


if __name__ == "__main__":
    main()
