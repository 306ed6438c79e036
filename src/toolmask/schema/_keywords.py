"""The keyword table: for every JSON Schema keyword, how toolmask enforces it.

This table is the one place that says what is supported. ``grammar`` keywords are enforced by the
grammar (exactly, or, where the note says so, by a grammar that is stricter than the schema plus
the post-decode validator for the rest); ``validator`` keywords are checked on the finished
document; ``annotation`` keywords do not constrain instances; ``unsupported`` keywords raise
:class:`~toolmask.errors.SchemaError` (``lenient=True`` turns that into a warning and leaves the
keyword to the post-decode validator). Keywords that appear in no row are unknown keywords, which
JSON Schema 2020-12 ignores; so do we.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["KEYWORDS", "Enforcement", "KeywordInfo"]

Enforcement = Literal["grammar", "validator", "annotation", "unsupported"]


@dataclass(frozen=True, slots=True)
class KeywordInfo:
    enforcement: Enforcement
    note: str = ""


_G: Enforcement = "grammar"
_V: Enforcement = "validator"
_A: Enforcement = "annotation"
_U: Enforcement = "unsupported"

KEYWORDS: dict[str, KeywordInfo] = {
    # core / identification
    "$schema": KeywordInfo(_A, "selects the dialect (2020-12 default; draft-07/04 spellings read)"),
    "$id": KeywordInfo(_G, "sets the base URI for $ref resolution"),
    "$anchor": KeywordInfo(_G, "plain-name fragment for $ref"),
    "$ref": KeywordInfo(_G, "resolved at compile time; recursion through the pushdown stack"),
    "$defs": KeywordInfo(_G, "container for $ref targets"),
    "definitions": KeywordInfo(_G, "draft-07 spelling of $defs"),
    "$comment": KeywordInfo(_A),
    "$vocabulary": KeywordInfo(_A),
    "$dynamicAnchor": KeywordInfo(_A, "a plain anchor unless a $dynamicRef needs it"),
    "$dynamicRef": KeywordInfo(_U, "dynamic scope is not compiled"),
    "$recursiveRef": KeywordInfo(_U, "dynamic scope is not compiled"),
    "$recursiveAnchor": KeywordInfo(_A),
    # applicators
    "allOf": KeywordInfo(_G, "merged: constraints of all branches are intersected"),
    "anyOf": KeywordInfo(_G, "union of branches; ambiguous prefixes run in parallel"),
    "oneOf": KeywordInfo(
        _G,
        "exact when branches are disjoint or their complements are exact; "
        "otherwise union in the grammar and exclusivity by the validator",
    ),
    "not": KeywordInfo(
        _G,
        "complement for types, literals, strings, numbers, simple array/object constraints; "
        "otherwise validator",
    ),
    "if": KeywordInfo(_G, "(if and then) or (not if and else); validator where `not if` is"),
    "then": KeywordInfo(_G),
    "else": KeywordInfo(_G),
    "dependentSchemas": KeywordInfo(_G, "(key absent) or (key present and schema)"),
    "dependentRequired": KeywordInfo(_G, "(key absent) or (key present and others required)"),
    "dependencies": KeywordInfo(_G, "draft-07 spelling of dependentRequired/dependentSchemas"),
    # type-independent
    "type": KeywordInfo(_G),
    "enum": KeywordInfo(_G, "finite literal set, filtered by the sibling keywords"),
    "const": KeywordInfo(_G),
    # numbers
    "minimum": KeywordInfo(_G, "exact digit-range grammar; bounded numbers use no exponent"),
    "maximum": KeywordInfo(_G, "exact digit-range grammar; bounded numbers use no exponent"),
    "exclusiveMinimum": KeywordInfo(_G, "number or (draft-04) boolean"),
    "exclusiveMaximum": KeywordInfo(_G, "number or (draft-04) boolean"),
    "multipleOf": KeywordInfo(_G, "remainder automaton over the decimal digits"),
    # strings
    "minLength": KeywordInfo(_G, "code points; very large bounds go to the validator"),
    "maxLength": KeywordInfo(_G, "code points; very large bounds go to the validator"),
    "pattern": KeywordInfo(_G, "ECMA-262 regex, unanchored search semantics"),
    "format": KeywordInfo(
        _G,
        "known formats asserted exactly (toolmask.schema._formats.FORMATS); "
        "an unknown format is an annotation unless strict_formats",
    ),
    "contentEncoding": KeywordInfo(_A),
    "contentMediaType": KeywordInfo(_A),
    "contentSchema": KeywordInfo(_A),
    # arrays
    "items": KeywordInfo(_G, "schema, or (draft-07) array form = prefixItems"),
    "prefixItems": KeywordInfo(_G),
    "additionalItems": KeywordInfo(_G, "draft-07 spelling of items after an array-form items"),
    "minItems": KeywordInfo(_G),
    "maxItems": KeywordInfo(_G),
    "contains": KeywordInfo(_G, "counting automaton over matching / non-matching items"),
    "minContains": KeywordInfo(_G),
    "maxContains": KeywordInfo(_G),
    "uniqueItems": KeywordInfo(_V, "not context-free; checked after decoding"),
    "unevaluatedItems": KeywordInfo(_G, "from the evaluated positions known after merging"),
    # objects
    "properties": KeywordInfo(_G, "emitted in schema order"),
    "required": KeywordInfo(_G),
    "additionalProperties": KeywordInfo(_G, "keys outside properties/patterns, by key language"),
    "patternProperties": KeywordInfo(_G, "key languages from the regexes"),
    "propertyNames": KeywordInfo(_G, "intersected with every key language"),
    "minProperties": KeywordInfo(_G, "counted in the grammar"),
    "maxProperties": KeywordInfo(_G, "counted in the grammar"),
    "unevaluatedProperties": KeywordInfo(_G, "applied to the key regions no keyword evaluated"),
    # annotations
    "title": KeywordInfo(_A),
    "description": KeywordInfo(_A),
    "default": KeywordInfo(_A),
    "examples": KeywordInfo(_A),
    "deprecated": KeywordInfo(_A),
    "readOnly": KeywordInfo(_A),
    "writeOnly": KeywordInfo(_A),
}
