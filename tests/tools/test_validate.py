"""The validator: full-schema checks with paths, and short messages for the model."""

from __future__ import annotations

from toolmask.tools import CallError, ToolCall, ToolTurn, render_errors, validate_call

from .toolset import INVALID, TOOLS, VALID


def test_valid_and_invalid_instances() -> None:
    for name, good in VALID.items():
        for args in good:
            assert validate_call((name, args), TOOLS) == []
    for name, bad in INVALID.items():
        for args in bad:
            assert validate_call((name, args), TOOLS), (name, args)


def test_missing_required_message() -> None:
    errs = validate_call(ToolCall("c", "create_event", {"start": "now"}), TOOLS)
    assert [(e.kind, e.instance_path, e.schema_path) for e in errs] == [
        ("required", "", "/required")
    ]
    assert render_errors(errs) == "missing required args ['title'] for tool 'create_event'"


def test_nested_paths() -> None:
    args = {"title": "x", "start": "y", "attendees": [{"name": "a"}, {"email": "b"}]}
    (e,) = validate_call(("create_event", args), TOOLS)
    assert e.instance_path == "/attendees/1"
    assert e.schema_path == "/properties/attendees/items/required"
    assert str(e) == "missing required args ['name'] in /attendees/1 for tool 'create_event'"
    (e,) = validate_call(("get_weather", {"city": "Oslo", "unit": "kelvin"}), TOOLS)
    assert e.kind == "enum" and e.instance_path == "/unit"
    assert render_errors([e]).startswith("/unit: 'kelvin' is not one of")


def test_keywords_the_grammar_leaves_to_the_validator() -> None:
    (e,) = validate_call(("search_web", {"query": "x", "limit": 99}), TOOLS)
    assert e.kind == "maximum" and e.instance_path == "/limit"


def test_unknown_and_not_allowed_tools() -> None:
    (e,) = validate_call(("nope", {}), TOOLS)
    assert e.kind == "unknown_tool"
    assert render_errors([e]).startswith("unknown tool 'nope'; available: ['get_weather'")
    turn = ToolTurn(TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}})
    (e,) = turn.validate(("calculate", {"expression": "1"}))
    assert e.kind == "not_allowed"
    assert render_errors([e]) == (
        "tool 'calculate' may not be called now; available: ['get_time'] for tool 'calculate'"
    )


def test_render_limits_and_empty() -> None:
    assert render_errors([]) == ""
    errs = [CallError("t", "type", f"m{i}", f"/a{i}") for i in range(8)]
    assert (
        render_errors(errs, max_errors=2)
        == "/a0: m0 for tool 't'; /a1: m1 for tool 't' (and 6 more)"
    )


def test_agrees_with_the_post_decode_validator() -> None:
    """One validator factory: a call's arguments and ``CompiledGrammar.validate`` reject the
    same values. jsonschema's own ``uri`` checker passes anything when its optional package is
    missing, and it knows no ``int32``; toolmask's checks are exact and shared."""
    import json

    import toolmask as tm
    from toolmask.tools import Tool

    schema = {
        "type": "object",
        "properties": {"link": {"type": "string", "format": "uri"}, "n": {"format": "int32"}},
        "uniqueItems": True,  # a keyword left to the validator: the grammar carries a PostCheck
    }
    tool = Tool.from_openai({"type": "function", "function": {"name": "f", "parameters": schema}})
    compiled = tm.compile(tm.Grammar.from_json_schema(schema))
    for args, ok in (
        ({"link": "https://example.org/a"}, True),
        ({"link": "not a uri"}, False),
        ({"n": 2**31 - 1}, True),
        ({"n": 2**31}, False),
    ):
        assert (validate_call(("f", args), [tool]) == []) == ok, args
        assert (compiled.validate(json.dumps(args)) == []) == ok, args
