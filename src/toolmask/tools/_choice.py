"""``tool_choice``: the OpenAI spellings normalised to one small value, :class:`ToolChoice`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal, TypeAlias

from toolmask.errors import ToolError

__all__ = ["ToolChoice", "ToolChoiceLike"]

Mode = Literal["none", "auto", "required"]


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """What the model may do this turn.

    ``mode``: ``"none"`` (prose only), ``"auto"`` (prose, then optionally calls) or
    ``"required"`` (at least one call, nothing before it). ``allowed`` is the tuple of tool names
    that may be called (in tool-list order), or ``None`` for every tool. A forced function
    (``{"type": "function", "function": {"name": X}}``) is ``required`` with ``allowed=(X,)``.
    """

    mode: Mode = "auto"
    allowed: tuple[str, ...] | None = None

    @classmethod
    def parse(
        cls,
        value: ToolChoiceLike,
        tool_names: Sequence[str],
        *,
        index: Mapping[str, int] | None = None,
    ) -> ToolChoice:
        """Normalise an OpenAI ``tool_choice`` against the advertised ``tool_names``.

        Accepts ``"none" | "auto" | "required"``, ``{"type": "function", "function": {"name":
        X}}`` (also the flat ``{"type": "function", "name": X}``), ``{"type": "allowed_tools",
        "mode": "auto" | "required", "tools": [{"type": "function", "function": {"name": X}} |
        {"type": "function", "name": X} | "X", ...]}`` (also nested under ``"allowed_tools"``),
        or a :class:`ToolChoice`. Raises :class:`ToolError` for unknown names or shapes, and for
        ``required`` with nothing callable. ``index``: each name's position in ``tool_names``
        when the caller has it (then the cost is O(allowed names), not O(tools)).
        """
        if isinstance(value, ToolChoice):
            choice = value
        elif isinstance(value, str):
            if value not in ("none", "auto", "required"):
                raise ToolError(
                    f"unknown tool_choice {value!r}: use none, auto, required or an object",
                    where="tool_choice",
                )
            choice = cls(value)  # type: ignore[arg-type]
        elif isinstance(value, Mapping):
            parser = _OBJECT_PARSERS.get(str(value.get("type")))
            if parser is None:
                raise ToolError(
                    f"unknown tool_choice type {value.get('type')!r}: use 'function' or "
                    "'allowed_tools'",
                    where="tool_choice",
                )
            choice = parser(value)
        else:
            raise ToolError(
                f"tool_choice must be a string or an object, not {type(value).__name__}",
                where="tool_choice",
            )
        if index is None:
            index = {n: i for i, n in enumerate(tool_names)}
        if choice.allowed is not None:
            # the names in tool order, once each (lookups and the sort of their positions in
            # C: a policy's subset of hundreds of names is parsed on every step)
            try:
                at = sorted(set(_items(index, choice.allowed)))
            except KeyError:
                unknown = [n for n in choice.allowed if n not in index]
                raise ToolError(
                    f"tool_choice names unknown tools {unknown}; the tools are {list(tool_names)}",
                    where="tool_choice",
                ) from None
            choice = cls(choice.mode, _items(tool_names, at))
        nothing = not index if choice.allowed is None else not choice.allowed
        if choice.mode == "required" and nothing:
            raise ToolError(
                "tool_choice is 'required' but no tool can be called", where="tool_choice"
            )
        return choice

    def callable(self, tool_names: Sequence[str]) -> list[str]:
        """The names, among ``tool_names``, that may be called (``[]`` under ``none``)."""
        if self.mode == "none":
            return []
        if self.allowed is None:
            return list(tool_names)
        allowed = set(self.allowed)
        return [n for n in tool_names if n in allowed]


#: what ``ToolTurn(tool_choice=...)`` accepts
ToolChoiceLike: TypeAlias = str | Mapping[str, Any] | ToolChoice


def _items(seq: Any, keys: Sequence[Any]) -> tuple[Any, ...]:
    """``tuple(seq[k] for k in keys)``, the lookups in C (``operator.itemgetter``)."""
    if not keys:
        return ()
    if len(keys) == 1:
        return (seq[keys[0]],)
    return itemgetter(*keys)(seq)  # type: ignore[no-any-return]


def _function_name(obj: object) -> str:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, Mapping):
        fn = obj.get("function", obj)
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            return str(fn["name"])
    raise ToolError(f"cannot read a tool name from {obj!r}", where="tool_choice")


def _parse_function(value: Mapping[str, Any]) -> ToolChoice:
    return ToolChoice("required", (_function_name(value),))


def _parse_allowed(value: Mapping[str, Any]) -> ToolChoice:
    body = value.get("allowed_tools", value)
    if not isinstance(body, Mapping):
        raise ToolError("allowed_tools must be an object", where="tool_choice")
    mode = body.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise ToolError(
            f"allowed_tools mode must be auto or required, not {mode!r}", where="tool_choice"
        )
    tools = body.get("tools")
    if not isinstance(tools, list):
        raise ToolError("allowed_tools needs a list of tools", where="tool_choice")
    if set(map(type, tools)) <= {str}:  # plain names (checked in C)
        return ToolChoice(mode, tuple(tools))
    return ToolChoice(mode, tuple(_function_name(t) for t in tools))


_OBJECT_PARSERS = {"function": _parse_function, "allowed_tools": _parse_allowed}
