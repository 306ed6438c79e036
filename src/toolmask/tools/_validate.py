"""Checking a parsed call against its tool: name allowed, arguments valid under the full schema.

The grammar enforces most of a schema while decoding; the keywords it leaves to post-decode
checks (and every keyword, for output that was not constrained) are checked here by the
validator ``CompiledGrammar.validate`` uses too (:func:`toolmask.schema.schema_validator`: the
schema's dialect, toolmask's exact format checks), so the two agree on every value. Each
problem is a :class:`CallError` with the instance path and schema path; :func:`render_errors`
turns a list of them into the short message shown to the model (``missing required args
['title'] for tool 'x'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask._compile import TurnCache, turn_cache
from toolmask._pointer import json_pointer
from toolmask.tools._parser import ToolCall
from toolmask.tools._spec import Tool

__all__ = ["CallError", "render_errors", "validate_call"]


@dataclass(frozen=True, slots=True)
class CallError:
    """One problem with a call.

    ``kind``: ``"unknown_tool"``, ``"not_allowed"`` or the JSON Schema keyword that failed
    (``"required"``, ``"enum"``, ``"type"``, ...). ``instance_path`` and ``schema_path`` are
    JSON pointers (``""`` = the arguments object / the schema root). ``message`` is
    jsonschema's message (or ours for name problems); ``detail`` holds what a renderer may
    group by (the missing property names for ``required``).
    """

    tool: str
    kind: str
    message: str
    instance_path: str = ""
    schema_path: str = ""
    detail: tuple[str, ...] = ()

    def __str__(self) -> str:
        return render_errors([self])


def _validator(schema: Mapping[str, Any], cache: TurnCache) -> Any:
    """A jsonschema validator for ``schema``, cached by its JSON in ``cache``'s
    ``validators`` (``Limits.max_validators`` entries): a tool's parameters are keyed by the
    text they were fingerprinted with."""
    validators = cache.validators
    key = cache.canonical(schema, keep=False)
    v = validators.get(key)
    if v is None:
        from toolmask.schema import schema_validator

        v = validators.put(key, schema_validator(schema))
    return v


def validate_call(
    call: ToolCall | tuple[str, Mapping[str, Any]],
    tools: Sequence[Tool] | Mapping[str, Tool],
    *,
    allowed: Iterable[str] | None = None,
    cache: TurnCache | None = None,
) -> list[CallError]:
    """Problems of ``call`` (a :class:`ToolCall` or ``(name, arguments)``), ``[]`` if none.

    The name must be one of ``tools`` (and of ``allowed``, when given); the arguments must
    satisfy the tool's full ``parameters`` schema. Errors come sorted by instance path.
    Cost: one jsonschema validation (validators are cached by schema in ``cache``, default
    :func:`~toolmask._compile.turn_cache`).
    """
    name, args = (call.name, call.arguments) if isinstance(call, ToolCall) else call
    by_name = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
    tool = by_name.get(name)
    if tool is None:
        return [CallError(name, "unknown_tool", f"unknown tool {name!r}", detail=tuple(by_name))]
    if allowed is not None:
        allowed_names = tuple(allowed)
        if name not in allowed_names:
            return [
                CallError(
                    name,
                    "not_allowed",
                    f"tool {name!r} may not be called now",
                    detail=allowed_names,
                )
            ]
    out: list[CallError] = []
    validator = _validator(tool.parameters, turn_cache() if cache is None else cache)
    for err in validator.iter_errors(args):
        detail: tuple[str, ...] = ()
        if err.validator == "required":
            present = err.instance if isinstance(err.instance, dict) else {}
            detail = tuple(r for r in err.validator_value if r not in present)
        out.append(
            CallError(
                name,
                str(err.validator),
                err.message,
                json_pointer(err.absolute_path),
                json_pointer(err.absolute_schema_path),
                detail,
            )
        )
    out.sort(key=lambda e: (e.instance_path, e.kind, e.message))
    return out


def _render_required(errs: list[CallError]) -> list[str]:
    lines = []
    by_path: dict[str, list[str]] = {}
    for e in errs:
        by_path.setdefault(e.instance_path, []).extend(e.detail)
    for path, names in by_path.items():
        where = f" in {path}" if path else ""
        lines.append(f"missing required args {sorted(set(names))}{where}")
    return lines


def _render_plain(errs: list[CallError]) -> list[str]:
    out = []
    for e in errs:
        if e.kind in ("unknown_tool", "not_allowed"):
            out.append(f"{e.message}; available: {list(e.detail)}")
        else:
            out.append(f"{e.instance_path or 'arguments'}: {e.message}")
    return out


_RENDERERS: dict[str, Callable[[list[CallError]], list[str]]] = {"required": _render_required}


def render_errors(errors: Sequence[CallError], *, max_errors: int = 5) -> str:
    """Short text for the model, one problem per ``; ``: required properties grouped
    (``missing required args ['title'] for tool 'x'``), others as ``path: message``. At most
    ``max_errors`` problems, then ``(and N more)``. ``""`` for no errors."""
    if not errors:
        return ""
    by_tool: dict[str, dict[str, list[CallError]]] = {}
    for e in errors:
        group = e.kind if e.kind in _RENDERERS else ""
        by_tool.setdefault(e.tool, {}).setdefault(group, []).append(e)
    parts: list[str] = []
    for tool, groups in by_tool.items():
        lines: list[str] = []
        for group, errs in groups.items():
            lines.extend(_RENDERERS.get(group, _render_plain)(errs))
        parts.extend(f"{line} for tool {tool!r}" for line in lines)
    shown = parts[:max_errors]
    more = len(parts) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more else "")
