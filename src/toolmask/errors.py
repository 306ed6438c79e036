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


class SchemaError(ToolmaskError):
    """A JSON Schema that cannot be compiled exactly.

    ``pointer`` is a JSON pointer (RFC 6901) to the schema location, ``keyword`` the keyword at
    fault (may be ``None`` when the whole subschema is at fault).
    """

    def __init__(self, message: str, *, pointer: str = "", keyword: str | None = None) -> None:
        self.message = message
        self.pointer = pointer
        self.keyword = keyword
        where = pointer or "#"
        if not where.startswith("#"):
            where = "#" + where
        kw = f" ({keyword})" if keyword else ""
        super().__init__(f"{where}{kw}: {message}")


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


class LimitError(ToolmaskError):
    """A resource cap was exceeded; ``limit`` names the :class:`Limits` field."""

    def __init__(self, message: str, *, limit: str) -> None:
        self.limit = limit
        super().__init__(f"{message} (limit: {limit})")


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
