"""Keyword handlers: what each JSON Schema keyword means, as a part of its location's shape.

The model is python-jsonschema's ``_keywords.py`` with ``validators.create(validators=...)``: one
function per keyword, in a table from keyword to function. :data:`HANDLERS` is that table,
grouped into :class:`Family` s: the keywords whose meanings combine into one part shape of a
location (the numeric range of ``minimum`` ... ``multipleOf``; the one array alternative of
``items`` ... ``uniqueItems``; the object alternatives of ``properties`` ... ``maxProperties``;
the dependencies; the applicators). A keyword function reads its value from the location
(:class:`Site`) and writes into its family's accumulator; the family's ``finish`` makes the part
shape, and :meth:`~toolmask.schema._compiler.SchemaCompiler.expand` meets the parts. Families
run in table order, and a family's keywords in its order, so errors, locations and automata
come in the order the compiler has always made them (keyword order matters: ``exclusiveMinimum``
reads the ``minimum`` before it, ``uniqueItems`` the ``maxItems``).

As in jsonschema, some keywords are read by another one's function rather than having their
own: ``minContains`` / ``maxContains`` by ``contains``, ``additionalItems`` by an array-form
``items`` (draft-07), ``then`` / ``else`` by ``if``, and ``properties``, ``patternProperties``
and ``additionalProperties`` are one function (a key's value is constrained by the property of
its name and every pattern that matches it, and by ``additionalProperties`` where neither
does). Keywords of resolution (``$id``, ``$defs``, ``$anchor``, ...) are read by
:mod:`~toolmask.schema._resolve`; ``enum`` / ``const`` and the ``unevaluated*`` keywords by the
compiler itself (they filter or rewrite the whole location's shape).

One table serves every dialect: the compiler reads draft-04/06/07 and 2019-09 spellings in any
schema (``KEYWORDS`` in ``_keywords.py`` says which), so :data:`DIALECTS` maps each to
:data:`HANDLERS`; a dialect that needs another meaning for a keyword gets a table with that
entry replaced, as ``validators.extend`` does.
"""

from __future__ import annotations

from typing import Any

from toolmask.schema._kw_applicators import APPLICATORS
from toolmask.schema._kw_containers import ARRAYS, DEPENDENCIES, OBJECTS
from toolmask.schema._kw_values import FORMAT, NUMBERS, STRINGS, TYPE
from toolmask.schema._site import Family, keyword_parts

__all__ = ["DIALECTS", "HANDLERS", "READ_BY", "dialect_table", "keyword_parts"]


#: keyword -> function, by family, in evaluation order
HANDLERS: tuple[Family[Any], ...] = (
    TYPE,
    NUMBERS,
    STRINGS,
    FORMAT,
    ARRAYS,
    OBJECTS,
    DEPENDENCIES,
    APPLICATORS,
)

#: the keywords another keyword's function reads (they have no function of their own)
READ_BY: dict[str, str] = {
    "minContains": "contains",
    "maxContains": "contains",
    "then": "if",
    "else": "if",
}

#: dialect -> its table (every dialect reads every spelling: one table, see the module docstring)
DIALECTS: dict[str, tuple[Family[Any], ...]] = dict.fromkeys(
    ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12"), HANDLERS
)


def dialect_table(schema: Any) -> tuple[Family[Any], ...]:
    """The table of ``schema``'s dialect (its ``$schema``; 2020-12 when absent or unknown)."""
    uri = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(uri, str):
        for name, table in DIALECTS.items():
            if name in uri:
                return table
    return DIALECTS["2020-12"]
