"""``compile_json_schema``: the schema stage's entry point (JSON Schema -> grammar IR).

It checks the options and the documents' size and depth, then runs the
:class:`~toolmask.schema._compiler.SchemaCompiler` (resolution, keywords, shape algebra) and the
:class:`~toolmask.schema._lower.Lowerer` (shapes -> rules), memoising in the cache set it is
given (:mod:`toolmask._cache`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Literal

from toolmask._cache import CacheSet
from toolmask._pointer import json_pointer
from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits
from toolmask.schema._notation import NOTATIONS
from toolmask.schema._validate import dialect_of

if TYPE_CHECKING:
    from toolmask.schema._compiler import SchemaCompiler
    from toolmask.schema._layout import Layout
    from toolmask.schema._lower import Lowerer

__all__ = ["compile_json_schema"]


def compile_json_schema(
    schema: Any,
    *,
    whitespace: Literal["compact", "spaced", "flexible", "indent"] = "compact",
    property_order: Literal["schema", "any"] = "schema",
    indent: int = 2,
    max_whitespace: int = 4,
    additional_properties_default: bool = True,
    lenient: bool = False,
    strict_formats: bool = False,
    resources: Mapping[str, Any] | None = None,
    max_indent_depth: int = 32,
    notation: Literal[
        "json", "python", "python_json", "gemma", "functiongemma", "minimax_xml"
    ] = "json",
    special_tokens: Iterable[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    caches: CacheSet | None = None,
) -> Grammar:
    """Compile a JSON Schema (draft 2020-12; draft-07/04 spellings read) into a grammar.

    Options:

    * ``whitespace``: ``"compact"`` (``json.dumps(v, separators=(",", ":"))``), ``"spaced"``
      (``json.dumps(v)``: ``", "`` and ``": "``, what chat templates' ``tojson`` writes),
      ``"flexible"`` (up to ``max_whitespace`` bytes of whitespace wherever JSON allows it), or
      ``"indent"`` (exactly ``json.dumps(v, indent=indent)``; containers nest at most
      ``max_indent_depth``).
    * ``property_order``: ``"schema"``: object keys come in schema order (``properties`` order,
      then ``required`` names, then other keys); ``"any"``: declared keys in any order, each
      at most once, every required key present, then other keys (objects with more than
      ``limits.max_any_order_properties`` declared keys keep schema order). Strings are in
      canonical form (``json.dumps(s, ensure_ascii=False)``).
    * ``additional_properties_default``: what a missing ``additionalProperties`` means. ``True``
      is the JSON Schema meaning; ``False`` stops a model from inventing keys: an object that
      names its keys (``properties`` / ``patternProperties``) gets no others, while one that
      names none stays a free-form map (``{"type": "object"}`` is any object, not only ``{}``).
    * ``lenient``: unsupported keywords become warnings and are left to the post-decode validator
      instead of raising :class:`SchemaError`.
    * ``strict_formats``: an unknown ``format`` raises :class:`SchemaError` instead of being an
      annotation (JSON Schema 2020-12's format-annotation vocabulary: it constrains nothing, and
      the compiler logs a warning once per format name on the ``toolmask.schema`` logger).
      Formats toolmask knows (``toolmask.schema._formats.FORMATS``) are always enforced exactly.
    * ``resources``: documents for remote ``$ref`` s, by URI (nothing is fetched).
    * ``notation``: how values are spelled: ``"json"``, ``"python"`` (Python literals, for
      tool calls written as Python code), ``"python_json"`` (the same with JSON's ``true`` /
      ``false`` / ``null``), ``"gemma"`` (Gemma 4's object notation),
      ``"functiongemma"`` (the same with ``<escape>`` quotes) or ``"minimax_xml"`` (strings
      as bare element text); see :mod:`toolmask.schema._notation`. The post-decode checks
      read JSON text only.
    * ``special_tokens``: special-token texts of the vocabulary; a notation's marker among them
      (Gemma's ``<|"|>``, FunctionGemma's ``<escape>``) is a
      :class:`~toolmask.grammar.Special` node, else its bytes.

    * ``caches``: the cache set the compilation memoises in (a compiler passes its own,
      ``compiler.caches``); None: the cache set in use (see :mod:`toolmask._cache`).

    Raises :class:`SchemaError` (with a JSON pointer and keyword) for schemas it cannot compile
    and :class:`LimitError` when a resource cap of ``limits`` is hit.
    """
    compiler_cls, layout_cls, lowerer_cls = _stages()
    _check_options(whitespace, notation, property_order)
    schema_json, resources_json = _read_documents(schema, resources, limits)
    # a key is written as its quoted text, so a schema without these texts has no reference
    # and its registry is not crawled (see SchemaCompiler); definitions are crawled too, since
    # only the crawl reads (and refuses) a malformed definition that nothing refers to
    crawl = bool(resources) or any(f'"{k}"' in schema_json for k in _CRAWL_KEYWORDS)
    # no key that starts with "$" ($schema, $id, anchors, references: most tool schemas): the
    # registry is made only if something asks for it (see Locations)
    plain = not crawl and '"$' not in schema_json

    def make(crawl: bool) -> SchemaCompiler:
        return compiler_cls(
            schema,
            resources=resources,
            lenient=lenient,
            limits=limits,
            strict_formats=strict_formats,
            crawl=crawl,
            plain=plain and not crawl,
        )

    def lower(compiler: SchemaCompiler) -> Grammar:
        lowerer = lowerer_cls(
            compiler,
            layout_cls(whitespace, indent, max_whitespace),
            additional_properties_default=additional_properties_default,
            max_indent_depth=max_indent_depth,
            any_order=property_order == "any",
            notation=NOTATIONS[notation],
            special_tokens=frozenset(special_tokens),
        )
        return lowerer.run(compiler.root_term, schema_json, resources_json)

    try:
        # None: the cache set in use already (what ``using(None)`` keeps, without its cost)
        with _KEEP_CACHES if caches is None else caches.use():
            try:
                return lower(make(crawl))
            except Exception:
                if not crawl:
                    # the crawl walks every subschema first and trips on a malformed one: the
                    # error it raises (located below through the metaschema) comes first, as it
                    # does when the registry is crawled up front
                    make(True)
                raise
    except RecursionError as e:  # a backstop: the depth checks above should come first
        raise LimitError(
            "the schema nests too deeply for the compiler's stack",
            limit="max_schema_depth",
            pointer="",
        ) from e
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
        # a malformed schema that slipped past the keyword checks (a subschema that is a
        # number, say) tripped the resolver: name the place through the metaschema
        raise _malformed(schema, e) from e


def _stages() -> tuple[type[SchemaCompiler], type[Layout], type[Lowerer]]:
    """The compiler's classes: their modules load with the first compilation (``import
    toolmask`` stays light), and are looked up once (an import statement in
    compile_json_schema cost about 2 µs a compilation)."""
    global _STAGES
    if _STAGES is None:
        from toolmask.schema._compiler import SchemaCompiler
        from toolmask.schema._layout import Layout
        from toolmask.schema._lower import Lowerer

        _STAGES = (SchemaCompiler, Layout, Lowerer)
    return _STAGES


_STAGES: tuple[type[SchemaCompiler], type[Layout], type[Lowerer]] | None = None


def _check_options(whitespace: str, notation: str, property_order: str) -> None:
    if whitespace not in ("compact", "spaced", "flexible", "indent"):
        raise ValueError(
            f"whitespace must be compact, spaced, flexible or indent, not {whitespace!r}"
        )
    if notation not in NOTATIONS:
        names = ", ".join(NOTATIONS)
        raise ValueError(f"notation must be one of {names}, not {notation!r}")
    if property_order not in ("schema", "any"):
        raise ValueError(f"property_order must be schema or any, not {property_order!r}")


def _read_documents(
    schema: Any, resources: Mapping[str, Any] | None, limits: Limits
) -> tuple[str, str]:
    """The schema's and the resources' JSON text, after the depth and size caps (LimitError,
    SchemaError for a document that is not JSON)."""
    cap = limits.max_schema_depth
    failed: Exception | None = None
    try:
        schema_json = _SCHEMA_JSON.encode(schema)
    except Exception as e:  # the depth caps' errors come first (a document too deep to encode)
        failed, schema_json = e, ""
    # a document of at most cap + 1 objects and arrays cannot nest deeper than cap: counting
    # the brackets of its text (those in strings too, which can only over-count) is cheaper
    # than walking it
    if failed is not None or schema_json.count("{") + schema_json.count("[") > cap + 1:
        _check_depth(schema, cap, "")
    for uri, doc in (resources or {}).items():
        _check_depth(doc, cap, uri)
    if failed is not None:
        if isinstance(failed, (TypeError, ValueError)):
            raise SchemaError(f"the schema is not JSON: {failed}") from failed
        raise failed
    n_bytes = len(schema_json)
    if 4 * n_bytes > limits.max_schema_bytes:  # at most 4 UTF-8 bytes a character
        n_bytes = len(schema_json.encode())
    if n_bytes > limits.max_schema_bytes:
        raise LimitError(
            f"the schema has {len(schema_json)} bytes of JSON", limit="max_schema_bytes", pointer=""
        )
    resources_json = json.dumps(dict(resources or {}), ensure_ascii=False) if resources else ""
    return schema_json, resources_json


#: the context of a compilation that keeps the cache set in use
_KEEP_CACHES = nullcontext()

#: ``json.dumps(schema, ensure_ascii=False, sort_keys=False, allow_nan=False)``'s encoder, made
#: once (json.dumps makes one per call for options other than its defaults)
_SCHEMA_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=False, allow_nan=False)

#: keys whose presence makes compile_json_schema crawl the registry up front
_CRAWL_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef", "$defs", "definitions")


def _check_depth(doc: Any, cap: int, uri: str) -> None:
    """LimitError when objects and arrays nest more than ``cap`` deep in ``doc`` (the schema
    when ``uri`` is empty, else the resource of that URI)."""
    deep = _too_deep(doc, cap)
    if deep is not None:
        ptr = json_pointer(deep)
        what = f"the resource {uri!r} nests" if uri else "the schema nests"
        at = f" (at {uri}#{ptr})" if uri else ""
        raise LimitError(
            f"{what} objects and arrays more than {cap} deep{at}",
            limit="max_schema_depth",
            pointer=None if uri else ptr,  # a pointer into a resource is in the message
        )


def _too_deep(doc: Any, cap: int) -> list[str | int] | None:
    """The path to a value of ``doc`` that objects and arrays nest more than ``cap`` deep above
    (the root container is at depth 0, a value of its member at depth 1), or None when there is
    none. Iterative: it runs before anything recursive reads the document. O(size)."""
    # a path is a linked list (key, parent path), so a step costs O(1) whatever the depth;
    # only containers are pushed (a scalar nests nothing)
    if not isinstance(doc, (dict, list)):
        return None
    stack: list[tuple[Any, int, Any]] = [(doc, 0, None)]
    while stack:
        node, depth, path = stack.pop()
        if depth > cap:
            keys: list[str | int] = []
            while path is not None:
                key, path = path
                keys.append(key)
            return keys[::-1]
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, (key, path)))
    return None


def _malformed(schema: Any, cause: Exception) -> SchemaError:
    """A located :class:`SchemaError` for a schema that broke the compiler: the metaschema's
    best-matching error (its JSON pointer and keyword), else the cause itself at the root."""
    from jsonschema.exceptions import best_match

    cls = dialect_of(schema)
    try:
        err = best_match(cls(cls.META_SCHEMA).iter_errors(schema))
    except Exception:  # the metaschema walk itself failed: fall back to the cause
        err = None
    if err is None:
        # valid by the metaschema: a compiler fault, reported as such rather than as bad input
        return SchemaError(f"the schema could not be compiled ({type(cause).__name__}: {cause})")
    # absolute: best_match may pick an error from inside an anyOf, whose path is relative
    path = [str(p) for p in err.absolute_path]
    pointer = json_pointer(path)
    keyword = next((p for p in reversed(path) if not p.isdigit()), None)
    return SchemaError(f"malformed schema: {err.message}", pointer=pointer, keyword=keyword)
