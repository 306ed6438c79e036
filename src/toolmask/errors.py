"""The exceptions toolmask raises.

Every error derives from :class:`ToolmaskError`::

    ToolmaskError
    ├── SchemaError          a JSON Schema that cannot be compiled (JSON pointer + keyword)
    ├── GrammarError         an unusable IR grammar (undefined rule, left recursion, ...)
    │   └── GrammarSyntaxError   GBNF / Lark / regex text that does not parse (line, column, caret)
    ├── LimitError           a resource cap of :class:`toolmask.limits.Limits` was exceeded
    ├── VocabError           a vocabulary that cannot be read or is inconsistent
    ├── ToolError            a bad tool spec, tool choice or format name (also a ``ValueError``)
    ├── ChatTemplateError    a chat template that does not compile or refuses a transcript
    └── ContextOverflowError a prompt longer than the model's context window

Matchers never raise on model output: ``accept_*`` returns ``False`` instead. Exceptions are for
API misuse and for bad grammars or schemas at compile time.
"""

from __future__ import annotations

from typing import Self

from toolmask._pointer import fragment

__all__ = [
    "ChatTemplateError",
    "ContextOverflowError",
    "GrammarError",
    "GrammarSyntaxError",
    "LimitError",
    "SchemaError",
    "ToolError",
    "ToolmaskError",
    "VocabError",
]


class ToolmaskError(Exception):
    """Root of every error raised by toolmask."""


class _SchemaPlace:
    """Where in whose schema a :class:`SchemaError` or :class:`LimitError` happened:
    ``pointer`` (see each class) and ``tool``, the name of the tool whose parameters were
    being compiled (set by the tool layer as the error passes through it; ``None`` for a schema
    compiled on its own)."""

    pointer: str | None
    tool: str | None = None

    def in_tool(self, name: str) -> Self:
        """Name the tool whose schema this is, unless one is named already; returns ``self``."""
        if self.tool is None:
            self.tool = name
        return self

    def within(self, prefix: str) -> Self:
        """The schema compiled was the subschema at JSON pointer ``prefix`` of a larger one
        (a tool parameter compiled on its own): make ``pointer`` relative to the larger one.
        Returns ``self``."""
        if self.pointer is not None:
            self.pointer = prefix + self.pointer
        return self

    def _prefix(self) -> str:
        return f"tool {self.tool!r}: " if self.tool is not None else ""


class SchemaError(_SchemaPlace, ToolmaskError):
    """A JSON Schema that cannot be compiled exactly.

    ``pointer`` is a JSON pointer (RFC 6901) to the schema location, ``keyword`` the keyword at
    fault (may be ``None`` when the whole subschema is at fault); ``tool`` the tool whose
    parameters schema it is, when a tool's.
    """

    pointer: str

    def __init__(self, message: str, *, pointer: str = "", keyword: str | None = None) -> None:
        self.message = message
        self.pointer = pointer
        self.keyword = keyword
        super().__init__(message)

    def __str__(self) -> str:
        kw = f" ({self.keyword})" if self.keyword else ""
        return f"{self._prefix()}{fragment(self.pointer)}{kw}: {self.message}"


class GrammarError(ToolmaskError):
    """A grammar that is structurally unusable (undefined rule, left recursion, ...)."""


class GrammarSyntaxError(GrammarError):
    """Grammar or regex text that does not parse; carries a 1-based line and column."""

    def __init__(self, message: str, *, text: str, pos: int, source: str = "grammar") -> None:
        self.message = message
        self.text = text
        self.pos = pos
        self.line = text.count("\n", 0, pos) + 1
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        if line_end < 0:
            line_end = len(text)
        self.column = pos - line_start + 1
        src_line = text[line_start:line_end]
        caret = " " * (self.column - 1) + "^"
        super().__init__(f"{source}:{self.line}:{self.column}: {message}\n  {src_line}\n  {caret}")


class LimitError(_SchemaPlace, ToolmaskError):
    """A resource cap was exceeded; ``limit`` names the :class:`Limits` field.

    ``pointer``: when the cap was hit while compiling a JSON Schema, the JSON pointer (RFC 6901)
    to the schema location being compiled then (the innermost one; ``""`` is the root, the
    schema as a whole); ``None`` when the cap is not tied to a schema location (an automaton
    built from a grammar, say). ``tool``: the tool whose parameters schema it was, when a
    tool's.
    """

    def __init__(self, message: str, *, limit: str, pointer: str | None = None) -> None:
        self.message = message
        self.limit = limit
        self.pointer = pointer
        super().__init__(message)

    def at(self, pointer: str) -> LimitError:
        """Locate this error at ``pointer`` unless a more precise location was set first (the
        schema compiler calls it from the innermost location out); returns ``self``."""
        if self.pointer is None:
            self.pointer = pointer
        return self

    def __str__(self) -> str:
        where = "" if self.pointer is None else f"{fragment(self.pointer)}: "
        return f"{self._prefix()}{where}{self.message} (limit: {self.limit})"


class VocabError(ToolmaskError):
    """A vocabulary that cannot be read or is inconsistent (names the file, id or field)."""


class ToolError(ToolmaskError, ValueError):
    """A tool spec, tool choice or wire-format name that cannot be used.

    ``where`` names the offending part (a tool name, ``"tool_choice"``, a parameter path), so the
    message can point at it; it may be ``""``. Also a ``ValueError``: each one reports a bad
    argument.
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class ChatTemplateError(ToolmaskError):
    """A chat template that does not compile, or that refuses a transcript."""


class ContextOverflowError(ToolmaskError):
    """The prompt does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"the prompt has {prompt_tokens} tokens but the model's context holds {n_ctx}"
        )
