"""Errors of the tool layer.

``ToolError`` derives from :class:`toolmask.errors.ToolmaskError` (and from ``ValueError``, since
each one reports a bad argument: a tool spec, a tool choice, a format name)::

    ToolmaskError
    └── ToolError        a bad tool spec, tool choice or format name (``where`` says which part)
"""

from __future__ import annotations

from toolmask.errors import ToolmaskError

__all__ = ["ToolError"]


class ToolError(ToolmaskError, ValueError):
    """A tool spec, tool choice or wire-format name that cannot be used.

    ``where`` names the offending part (a tool name, ``"tool_choice"``, a parameter path), so the
    message can point at it; it may be ``""``.
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
