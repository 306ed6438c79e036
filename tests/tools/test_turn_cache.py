"""The turn cache: the tool layer's caches are one service a compiler owns and hands down
(``compiler.turns``); nothing in the tool layer looks a compiler up from a context variable, a
tool's schema is serialised once on the way from a tool list to a compiled, validated turn, and
a turn compiles in the compiler it is given (or the active one, as before)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolmask as tm
from toolmask._compile import TurnCache, turn_cache
from toolmask.tools import Tool, ToolTurn, get_format

from ..test_imports import IMPORTS

#: what reads the compiler's context variable: the accessors of the active compiler
_CONTEXT = {"active_compiler", "default_compiler", "_active", "_default"}


def test_no_tool_module_imports_the_compilers_context_variable() -> None:
    found = [
        imp.where()
        for imp in IMPORTS
        if imp.importer.startswith("toolmask.tools")
        and imp.target == "toolmask._compile"
        and set(imp.names) & _CONTEXT
    ]
    assert found == []


def test_every_compiler_owns_one_turn_cache() -> None:
    c = tm.GrammarCompiler()
    assert isinstance(c.turns, TurnCache) and c.turns.compiler is c
    assert turn_cache(c) is c.turns
    with c.activate():
        assert turn_cache() is c.turns
    assert turn_cache() is tm.default_compiler().turns


_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


def test_a_tool_schema_is_serialised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's compile, a subset's, a call's validation and a new turn over the same tools
    serialise the tool's parameters once in the tool layer (the schema stage reads its own
    copy once more for each set of argument options it compiles it with)."""
    tools = [
        Tool.from_openai({"name": "get_weather", "parameters": _PARAMS}),
        Tool.from_openai({"name": "get_time", "parameters": {"type": "object"}}),
    ]
    params = tools[0].parameters
    seen: list[str] = []
    real = json.JSONEncoder.encode

    # every serialisation, json.dumps and encoders made once alike, goes through encode
    def counting(self: json.JSONEncoder, obj: Any) -> str:
        if obj is params or (isinstance(obj, list) and any(x is params for x in obj)):
            seen.append("x")
        return real(self, obj)

    monkeypatch.setattr(json.JSONEncoder, "encode", counting)
    one = {"type": "function", "function": {"name": "get_time"}}
    with tm.GrammarCompiler().activate():
        ToolTurn(tools, "hermes", "required").compile()
        ToolTurn(tools, "hermes", one).compile()
        assert ToolTurn(tools, "hermes").validate(("get_weather", {"city": "Paris"})) == []
        ToolTurn(tools, "qwen3", "auto").compile()
        forced_only = len(seen)
        ToolTurn(tools, "hermes", "auto").compile()
    monkeypatch.setattr(json.JSONEncoder, "encode", real)
    # the tool layer's canonical text once, and the schema stage's once per compile: the
    # forced turns build hermes' own tags and its forced <tools> habit (both json.dumps
    # spacing), ``auto`` adds the fence's pretty-printing
    layouts = {repr(sorted(v.argument_options.items())) for v in get_format("hermes").variants}
    assert forced_only == 1 + 1
    assert len(seen) == 1 + len(layouts)


def test_a_turn_compiles_in_the_compiler_it_is_given() -> None:
    turn = ToolTurn([Tool.from_openai({"name": "f", "parameters": _PARAMS})], "hermes")
    mine, other = tm.GrammarCompiler(), tm.GrammarCompiler()
    turn.compile(compiler=mine)
    assert len(mine.turns.turns) == 1 and len(other.turns.turns) == 0
    with other.activate():  # no compiler given: the active one
        turn.compile()
    assert len(other.turns.turns) == 1
    mine.clear()
    assert len(mine.turns.turns) == 0 and len(mine.turns.parts) == 0
