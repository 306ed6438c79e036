"""Real-world schemas (SchemaStore and others, ``tests/data/schemastore``): the reference
resolver and the compiler on what people write.

* Each schema compiles, or is refused with a located SchemaError / LimitError, never an
  internal error (the ``referencing`` crawl once failed on draft-07 ``dependencies`` that mix
  schemas and property lists: the TextMate-grammar schema of issue 37).
* Where one compiles, documents generated from its grammar (random walks over the bytes the
  matcher allows) are valid by jsonschema, or rejected by ``CompiledGrammar.validate``: no
  false positive.
* Fuzz: mutants of these schemas with mixed ``dependencies``, schemas and anchors inside
  ``dependencies`` that a ``$ref`` names, and subschemas with a ``$schema`` of their own,
  compile or are refused with a located error.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import jsonschema
import pytest

import toolmask as tm
from tests.schema.exactness import NO_DEADLINE, located_refusal, unlocated_refusals
from tests.vendored import schemastore_schemas
from toolmask.errors import SchemaError

SCHEMAS = schemastore_schemas()
#: how each schema fares today: compiled, or the refusal's kind (a change is a decision)
REFUSED = {
    # a $ref to kubernetes-definitions.json, a document not passed in resources= (nothing is
    # fetched)
    "drone-ci": "unsupported:$ref",
}
DRAFT7 = "http://json-schema.org/draft-07/schema#"
#: bytes a random walk prefers once its document is long enough: the ones that close things
CLOSING = b'}]"'
#: bytes a walk takes only when nothing else is allowed (a backslash starts an escape, whose
#: \u001c-style characters Python's `\S` and ECMA's disagree on: see _oracle)
AVOID = b"\\"


def _compile(schema: Any) -> tm.CompiledGrammar:
    return tm.compile(tm.Grammar.from_json_schema(schema, limits=NO_DEADLINE), limits=NO_DEADLINE)


def _walk(c: tm.CompiledGrammar, rng: random.Random, budget: int) -> bytes | None:
    """A document the grammar accepts, built byte by byte from the bytes the matcher allows:
    printable ASCII at random while it is short, the closing bytes first once it is
    ``budget`` long. None when it does not close within eight times the budget."""
    m = c.matcher()
    out = bytearray()
    while len(out) < 8 * budget:
        mask = m.allowed_bytes()
        if m.is_accepting() and (not mask or len(out) >= budget or rng.random() < 0.02):
            return bytes(out)
        allowed = [b for b in range(256) if mask >> b & 1]
        assert allowed, (bytes(out), "a live prefix with no way on")
        printable = [b for b in allowed if 0x20 <= b < 0x7F and b not in AVOID] or allowed
        # inside a string (an odd count of quotes: no escapes are written) the quote closes
        order = b'"' if out.count(b'"') % 2 else CLOSING
        closing = [b for b in order if b in printable]
        b = closing[0] if len(out) >= budget and closing else rng.choice(printable)
        assert m.accept_bytes(bytes([b]))
        out.append(b)
    return None


def _oracle(schema: Any) -> Any:
    """jsonschema in the schema's own dialect, formats as annotations (their exactness is
    tested against their RFCs elsewhere; jsonschema's own checks are looser or missing).
    Its `pattern` is Python's `re`: the walks stay in printable ASCII without escapes, where
    Python's and ECMA-262's classes agree."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_compiles_or_is_refused_with_a_location(name: str) -> None:
    assert located_refusal(SCHEMAS[name]) == REFUSED.get(name)


@pytest.mark.parametrize("name", sorted(n for n in SCHEMAS if n not in REFUSED))
def test_generated_documents_are_valid(name: str) -> None:
    schema = SCHEMAS[name]
    c = _compile(schema)
    oracle = _oracle(schema)
    rng = random.Random(f"schemastore/{name}")
    docs = [_walk(c, rng, budget=rng.choice((40, 150, 400))) for _ in range(24)]
    done = [d for d in docs if d is not None]
    assert len(done) >= 8, f"only {len(done)} of {len(docs)} walks closed"
    false_positives = []
    for doc in done:
        value = json.loads(doc)
        if not oracle.is_valid(value) and not c.validate(doc):
            false_positives.append(doc[:300])
    assert not false_positives, false_positives


# -- the resolver, fuzzed ----------------------------------------------------------------------


def _subschemas(schema: Any) -> list[tuple[Any, ...]]:
    """Paths to the schema objects under ``properties`` / ``definitions`` / ``$defs`` (where a
    subschema surely sits), sorted."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for kw in ("properties", "definitions", "$defs"):
                group = node.get(kw)
                if isinstance(group, dict):
                    for k, v in group.items():
                        if isinstance(v, dict):
                            out.append((*path, kw, k))
                            stack.append((v, (*path, kw, k)))
    return sorted(out, key=repr)


def _at(schema: Any, path: tuple[Any, ...]) -> Any:
    node = schema
    for k in path:
        node = node[k]
    return node


def _mixed(rng: random.Random) -> dict[str, Any]:
    """A draft-07 ``dependencies`` mixing schemas and property lists, in a random order."""
    items: list[tuple[str, Any]] = [
        ("a", {"required": ["b"]}),
        ("b", ["a"]),
        ("c", {"properties": {"c": {"type": "integer"}}}),
        ("d", []),
        ("e", True),
    ]
    rng.shuffle(items)
    return dict(items[: rng.randrange(2, len(items) + 1)])


def _mutant(schema: Any, rng: random.Random) -> Any:
    out = copy.deepcopy(schema)
    paths = _subschemas(out)
    for _ in range(rng.randrange(1, 4)):
        node = _at(out, rng.choice(paths))
        how = rng.randrange(4)
        if how == 0:
            node["dependencies"] = _mixed(rng)
        elif how == 1:
            # a schema with an $id inside dependencies, after a property list, named by a $ref
            # elsewhere: the crawl must index it
            uri = f"https://example.com/dep{rng.randrange(10**6)}.json"
            node["dependencies"] = {"x": ["y"], "y": {"$id": uri, "minProperties": 1}}
            _at(out, rng.choice(paths))["properties"] = {"ref": {"$ref": uri}}
        elif how == 2:
            node["dependencies"] = {"x": ["y"], "y": {"$id": "#dep-anchor", "type": "object"}}
            _at(out, rng.choice(paths))["properties"] = {"ref": {"$ref": "#dep-anchor"}}
        else:
            # a subschema with a $schema of its own (a draft-07 one below a 2020-12 document,
            # or the other way round)
            node["$schema"] = rng.choice((DRAFT7, "https://json-schema.org/draft/2020-12/schema"))
            if rng.random() < 0.5:
                node["dependencies"] = _mixed(rng)
    return out


@pytest.mark.parametrize(
    "name", sorted(n for n in SCHEMAS if len(json.dumps(SCHEMAS[n])) < 300_000)
)
def test_resolver_fuzz_mixed_dependencies_ids_and_dialects(name: str) -> None:
    rng = random.Random(f"resolver/{name}")
    failures = unlocated_refusals((f"mutant {i}", _mutant(SCHEMAS[name], rng)) for i in range(4))
    assert not failures, "\n".join(failures)


# -- the reduced case of issue 37 --------------------------------------------------------------

TMLANGUAGE = {
    "$id": "https://json.schemastore.org/tmlanguage.json",
    "$schema": DRAFT7,
    "$ref": "#/definitions/root",
    "definitions": {
        "root": {},
        "grammar": {},
        "captures": {},
        "pattern": {
            "type": "object",
            "dependencies": {"begin": {"required": ["end"]}, "end": ["begin"]},
        },
        "name": {},
    },
}


def test_mixed_dependencies_are_crawled_as_the_draft_says() -> None:
    """The TextMate-grammar schema (reduced): a ``dependencies`` whose first value is a schema
    and whose second is a property list once made the crawl read the list as a schema
    (``AttributeError: 'list' object has no attribute 'get'``)."""
    c = _compile(TMLANGUAGE)
    m = c.matcher()
    assert m.accept_bytes(b'{"a":1}') and m.is_accepting()
    pattern = {**TMLANGUAGE, "$ref": "#/definitions/pattern"}
    c = _compile(pattern)
    for doc, valid in ((b'{"begin":1,"end":2}', True), (b'{"begin":1}', False), (b"{}", True)):
        m = c.matcher()
        assert (m.accept_bytes(doc) and m.is_accepting() and not c.validate(doc)) == valid


def test_a_schema_after_a_property_list_in_dependencies_is_found() -> None:
    """The other half of the same misreading: a property list first, then a schema with an
    ``$id`` that a ``$ref`` names (the crawl used to skip every value after the list)."""
    schema = {
        "$schema": DRAFT7,
        "type": "object",
        "dependencies": {"a": ["b"], "b": {"$id": "https://example.com/b.json", "type": "object"}},
        "properties": {"x": {"$ref": "https://example.com/b.json"}},
    }
    c = _compile(schema)
    for doc, valid in ((b'{"x":{}}', True), (b'{"x":1}', False), (b'{"a":1}', False)):
        m = c.matcher()
        assert (m.accept_bytes(doc) and m.is_accepting() and not c.validate(doc)) == valid


def test_the_validator_crawls_mixed_dependencies_too() -> None:
    """The post-decode validator (jsonschema) crawls the schema on its first lookup that
    misses, here the anchor ``#foo``: it reads the schema with the corrected specification."""
    schema = {
        "$schema": DRAFT7,
        "$id": "https://example.com/root.json",
        "definitions": {"a": {"$id": "#foo", "type": "string"}},
        "properties": {"x": {"$ref": "#foo"}, "u": {"type": "array", "uniqueItems": True}},
        "dependencies": {"b": {}, "c": ["b"]},
    }
    c = _compile(schema)
    assert c.validate(b'{"x":"a","u":[1,2]}') == []
    assert c.validate(b'{"x":"a","u":[1,1]}') == ["at /u: [1, 1] has non-unique elements"]
    assert c.validate(b'{"c":1}') == ["at (root): 'b' is a dependency of 'c'"]


def test_a_nested_legacy_dialect_with_mixed_dependencies_is_a_locatedlocated_refusal() -> None:
    """``referencing`` reads a subschema with a ``$schema`` of its own with its own draft
    specification, which toolmask cannot replace: such a subschema with a mixed
    ``dependencies`` is refused at its pointer (draft-07 itself says ``$schema`` must not
    appear in subschemas), not reported as an internal error."""
    schema = {
        "$schema": DRAFT7,
        "definitions": {"x": {"$schema": DRAFT7, "dependencies": {"a": {}, "b": ["a"]}}},
        "$ref": "#/definitions/x",
    }
    with pytest.raises(SchemaError) as e:
        tm.Grammar.from_json_schema(schema)
    assert e.value.pointer == "/definitions/x" and e.value.keyword == "$schema"
