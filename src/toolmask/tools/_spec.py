"""Tool specs: :class:`Tool` from OpenAI dicts, typed Python functions and Pydantic models.

A tool is a name, a description and a JSON Schema for its arguments (an object schema). Names
are checked the way OpenAI checks them (``^[a-zA-Z0-9_-]{1,64}$``). Python types map to JSON
Schema through :data:`TYPE_SCHEMAS` (plain types) and :data:`_ORIGIN_HANDLERS` (generic
origins); anything else is a :class:`ToolError` naming the parameter.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask.errors import ToolError
from toolmask.tools.formats import json_type

__all__ = ["TYPE_SCHEMAS", "Tool", "check_tool_name", "json_type", "type_schema"]

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

#: The schema of a tool without arguments.
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

#: plain Python types -> JSON Schema (``bool`` before ``int`` does not matter: lookup is exact)
TYPE_SCHEMAS: dict[object, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    list: {"type": "array"},
    tuple: {"type": "array"},
    dict: {"type": "object"},
    typing.Any: {},
    object: {},
}


def check_tool_name(name: object) -> str:
    """Return ``name`` if it is a valid tool name, else raise :class:`ToolError` saying why."""
    if not isinstance(name, str):
        raise ToolError(f"a tool name must be a string, not {type(name).__name__}", where="name")
    if not _NAME_RE.match(name):
        raise ToolError(
            f"invalid tool name {name!r}: use 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'",
            where="name",
        )
    return name


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable tool as the model sees it.

    ``parameters`` is the JSON Schema of the arguments object (treat it as read-only; it is not
    part of the hash). ``function`` is the Python callable to run, when there is one (not part
    of equality). Construct with :meth:`from_openai`, :meth:`from_function` or
    :meth:`from_pydantic`, or directly (the name is checked).
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(NO_ARGUMENTS), hash=False)
    strict: bool = False
    function: Callable[..., Any] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if not isinstance(self.parameters, Mapping):
            raise ToolError("parameters must be a JSON Schema object (a dict)", where=self.name)
        try:
            json.dumps(self.parameters, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ToolError(f"parameters are not JSON: {e}", where=self.name) from e

    # -- constructors -----------------------------------------------------------------------------
    @classmethod
    def from_openai(cls, spec: Mapping[str, Any]) -> Tool:
        """Read a Chat Completions tool ``{"type": "function", "function": {...}}``.

        Also accepts the bare function object ``{"name", "description", "parameters"}`` and the
        Responses-API flat shape ``{"type": "function", "name": ...}``. A missing ``parameters``
        means the tool takes no arguments.
        """
        if not isinstance(spec, Mapping):
            raise ToolError("a tool spec must be a JSON object")
        kind = spec.get("type", "function")
        if kind != "function":
            raise ToolError(f"unsupported tool type {kind!r} (only 'function')")
        fn = spec.get("function", spec)
        if not isinstance(fn, Mapping):
            raise ToolError("'function' must be a JSON object")
        name = check_tool_name(fn.get("name"))
        description = fn.get("description") or ""
        if not isinstance(description, str):
            raise ToolError("description must be a string", where=name)
        params = fn.get("parameters")
        if params is None:
            params = dict(NO_ARGUMENTS)
        if not isinstance(params, Mapping):
            raise ToolError("parameters must be a JSON Schema object", where=name)
        strict = bool(fn.get("strict", spec.get("strict", False)))
        return cls(name, description, json.loads(json.dumps(params)), strict)

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """Build a tool from a typed function: its signature gives the schema, its docstring the
        description (first paragraph) and parameter descriptions (Google ``Args:`` sections or
        Sphinx ``:param x:`` lines).

        Parameters without a default are required. Supported annotations: see :func:`type_schema`.
        ``*args``/``**kwargs`` and unannotated parameters are errors.
        """
        tool_name = check_tool_name(name or getattr(fn, "__name__", ""))
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as e:  # NameError for unresolvable forward references, ...
            raise ToolError(f"cannot resolve the annotations: {e}", where=tool_name) from e
        doc = inspect.getdoc(fn) or ""
        summary, param_docs = _parse_docstring(doc)
        props: dict[str, Any] = {}
        required: list[str] = []
        for pname, p in inspect.signature(fn).parameters.items():
            where = f"{tool_name}.{pname}"
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise ToolError("*args and **kwargs cannot be tool parameters", where=where)
            if pname not in hints:
                raise ToolError("the parameter has no type annotation", where=where)
            schema = type_schema(hints[pname], where=where)
            if pname in param_docs and "description" not in schema:
                schema = {**schema, "description": param_docs[pname]}
            if p.default is p.empty:
                required.append(pname)
            else:
                default = _jsonable(p.default)
                if default is not _NOT_JSON:
                    schema = {**schema, "default": default}
            props[pname] = schema
        params: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            params["required"] = required
        params["additionalProperties"] = False
        return cls(
            tool_name,
            summary if description is None else description,
            params,
            False,
            fn,
        )

    @classmethod
    def from_pydantic(
        cls, model: type[Any], *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """Build a tool whose arguments are a Pydantic v2 model (``model.model_json_schema()``).

        The name defaults to the model's class name, the description to its docstring.
        """
        schema_fn = getattr(model, "model_json_schema", None)
        if schema_fn is None:
            raise ToolError(f"{model!r} is not a Pydantic v2 model", where=name or "")
        schema = dict(schema_fn())
        schema.pop("title", None)
        doc = schema.pop("description", None) or inspect.getdoc(model) or ""
        return cls(
            name or model.__name__,
            doc if description is None else description,
            schema,
            False,
        )

    # -- views ---------------------------------------------------------------------------------
    def to_openai(self) -> dict[str, Any]:
        """The Chat Completions shape ``{"type": "function", "function": {...}}``."""
        fn: dict[str, Any] = {"name": self.name}
        if self.description:
            fn["description"] = self.description
        fn["parameters"] = self.parameters
        if self.strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}


# -- docstrings ------------------------------------------------------------------------------------

_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_PARAM = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_OTHER_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(summary, {param: description})``; the summary is the first paragraph, joined.

    Reads Sphinx ``:param x: text`` lines and Google ``Args:`` sections (a parameter line is
    ``name (type): text`` at the section's first indentation; deeper lines continue it).
    """
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip():
            break
        summary_lines.append(line.strip())
    summary = " ".join(summary_lines)
    if _GOOGLE_SECTION.match(summary) or summary.startswith(":param"):
        summary = ""
    params: dict[str, str] = {}
    in_args = False
    arg_indent: int | None = None
    current: str | None = None
    for raw in lines:
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if m := _SPHINX_PARAM.match(line):
            params[m.group(1)] = m.group(2).strip()
            in_args, current = False, None
            continue
        if _GOOGLE_SECTION.match(line):
            in_args, arg_indent, current = True, None, None
            continue
        if not in_args or not line:
            continue
        if arg_indent is None:
            arg_indent = indent
        if indent < arg_indent or (indent == arg_indent and _OTHER_SECTION.match(line)):
            in_args = False
            continue
        m = _GOOGLE_PARAM.match(line)
        if indent == arg_indent and m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line).strip()
    return summary, params


# -- Python types -> JSON Schema -------------------------------------------------------------------

_NOT_JSON = object()


def _jsonable(value: object) -> object:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return _NOT_JSON


def _literal(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    values = [a.value if isinstance(a, enum.Enum) else a for a in args]
    for v in values:
        if not isinstance(v, (str, int, float, bool)) and v is not None:
            raise ToolError(f"Literal value {v!r} is not a JSON scalar", where=where)
    kinds = {json_type(v) for v in values}
    out: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        out = {"type": kinds.pop(), **out}
    return out


def _union(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    non_null = [a for a in args if a is not type(None)]
    options = [type_schema(a, where=where) for a in non_null]
    if len(non_null) < len(args):
        options.append({"type": "null"})
    if len(options) == 1:
        return options[0]
    return {"anyOf": options}


def _array(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    if not args:
        return {"type": "array"}
    return {"type": "array", "items": type_schema(args[0], where=f"{where}[]")}


def _tuple(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    if not args:
        return {"type": "array"}
    if len(args) == 2 and args[1] is Ellipsis:
        return _array(args[:1], where)
    items = [type_schema(a, where=f"{where}[{i}]") for i, a in enumerate(args)]
    return {
        "type": "array",
        "prefixItems": items,
        "items": False,
        "minItems": len(items),
        "maxItems": len(items),
    }


def _mapping(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    if args and args[0] is not str:
        raise ToolError("only dicts with str keys map to JSON objects", where=where)
    if len(args) < 2:
        return {"type": "object"}
    return {"type": "object", "additionalProperties": type_schema(args[1], where=f"{where}{{}}")}


def _annotated(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    schema = type_schema(args[0], where=where)
    for meta in args[1:]:
        if isinstance(meta, str):
            schema = {**schema, "description": meta}
    return schema


def _dataclass_schema(tp: type[Any], where: str) -> dict[str, Any]:
    hints = typing.get_type_hints(tp, include_extras=True)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(tp):
        props[f.name] = type_schema(hints[f.name], where=f"{where}.{f.name}")
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _pydantic_schema(tp: type[Any]) -> dict[str, Any] | None:
    fn = getattr(tp, "model_json_schema", None)
    if fn is None or not isinstance(tp, type):
        return None
    schema = dict(fn())
    schema.pop("title", None)
    if "$defs" in schema:
        # nested $refs point at "#/$defs/...": inline them so the schema stands alone anywhere
        schema = _inline_defs(schema, schema.pop("$defs"))
    return schema


def _inline_defs(node: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    if depth > 64:
        raise ToolError("recursive Pydantic models cannot be nested in a function signature")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs[ref[len("#/$defs/") :]]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**_inline_defs(target, defs, depth + 1), **rest}
        return {k: _inline_defs(v, defs, depth) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_defs(v, defs, depth) for v in node]
    return node


_ORIGIN_HANDLERS: dict[object, Callable[[tuple[Any, ...], str], dict[str, Any]]] = {
    typing.Literal: _literal,
    typing.Union: _union,
    types.UnionType: _union,
    list: _array,
    set: _array,
    frozenset: _array,
    Sequence: _array,
    typing.Sequence: _array,
    tuple: _tuple,
    dict: _mapping,
    Mapping: _mapping,
    typing.Annotated: _annotated,
}


def type_schema(tp: Any, *, where: str = "") -> dict[str, Any]:
    """The JSON Schema for a Python type annotation.

    ``str``/``int``/``float``/``bool``/``None``, ``Literal[...]`` (enum), ``X | None`` and
    ``Optional[X]``, ``Union``, ``list[X]``/``set[X]``/``Sequence[X]``, ``tuple[X, ...]`` and
    fixed tuples, ``dict[str, X]``, ``Annotated[X, "description"]``, ``Enum`` subclasses,
    dataclasses, Pydantic v2 models and ``Any``. Raises :class:`ToolError` (naming ``where``)
    for anything else.
    """
    if tp in TYPE_SCHEMAS:
        return dict(TYPE_SCHEMAS[tp])
    origin = typing.get_origin(tp)
    if origin is not None:
        handler = _ORIGIN_HANDLERS.get(origin)
        if handler is None:
            raise ToolError(f"unsupported annotation {tp!r}", where=where)
        return handler(typing.get_args(tp), where)
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return _literal(tuple(tp), where)
        if dataclasses.is_dataclass(tp):
            return _dataclass_schema(tp, where)
        pyd = _pydantic_schema(tp)
        if pyd is not None:
            return pyd
    raise ToolError(f"unsupported annotation {tp!r}", where=where)
