"""Turn specs (``toolmask serve --engine vllm`` to vLLM's logits processors): the server writes
a request's grammar-shaping fields as JSON text made of the request's own member texts, and the
reader finds a tool list it has read before by the digest of the spec's bytes, as the server
finds it in a body. Objects are read too, and every error names its field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolmask.server import SPEC_FIELDS, ToolLists, parse_chat_request, read_turn_spec, turn_spec

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "météo ☃" if i == 1 else "d",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
        },
    }
    for i in range(3)
]


def body(**fields: Any) -> bytes:
    raw = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    return json.dumps(raw, ensure_ascii=False, indent=1).encode()


def test_a_spec_is_the_bodys_own_member_texts() -> None:
    lists = ToolLists()
    raw = body(
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "tool_1"}},
        parallel_tool_calls=False,
        response_format=None,  # null: left out
        temperature=0.5,  # not a spec field
    )
    parse_chat_request(raw, tool_lists=lists)  # the server read the body first
    spec = turn_spec(raw, "hermes", reasoning_open=True, tool_lists=lists)
    assert isinstance(spec, bytes)
    data = json.loads(spec)
    assert list(data) == ["tools", "tool_choice", "parallel_tool_calls", "format", "reasoning_open"]
    assert set(data) - {"format", "reasoning_open"} <= set(SPEC_FIELDS)
    original = json.loads(raw)
    assert data["tools"] == original["tools"] and data["tool_choice"] == original["tool_choice"]
    assert data["format"] == "hermes" and data["reasoning_open"] is True
    start = raw.index(b'"tools": ') + len(b'"tools": ')
    tools_text = json.dumps(TOOLS, ensure_ascii=False, indent=1).replace("\n", "\n ").encode()
    assert raw[start : start + len(tools_text)] == tools_text
    assert tools_text in spec  # the client's own bytes, spacing and all
    # without the lists, the same spec (the list decoded from the text, then written back)
    assert turn_spec(raw, "hermes", reasoning_open=True) == spec


def test_a_body_in_another_encoding_gives_a_utf8_spec() -> None:
    raw = json.dumps({"model": "m", "messages": [], "tools": TOOLS}).encode("utf-16")
    spec = turn_spec(raw, "mistral", reasoning_open=False)
    assert json.loads(spec.decode("utf-8")) == {"tools": TOOLS, "format": "mistral"}


@pytest.mark.parametrize("as_text", [True, False])
def test_a_spec_reads_as_the_request_it_stands_for(as_text: bool) -> None:
    choice = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": "tool_2"}}],
        },
    }
    fields = {"tools": TOOLS, "tool_choice": choice, "parallel_tool_calls": False}
    spec: Any = {**fields, "format": "hermes"}
    if as_text:
        spec = json.dumps(spec)
    req, fmt, opens = read_turn_spec(spec, ToolLists())
    want = parse_chat_request(body(**fields))
    assert req.tools == want.tools and req.tool_choice == want.tool_choice
    assert req.parallel_tool_calls is False and fmt == "hermes" and opens is False
    assert req.normal_choice() == want.normal_choice()
    assert read_turn_spec({"tools": TOOLS})[1] is None  # no format: the processor's default


def test_a_tool_list_read_before_is_found_by_the_specs_bytes() -> None:
    """The second spec over the same tools (another subset, written by turn_spec) gets the
    same Tool objects and key without the list being parsed; a list that differs in one byte
    past the indexed prefix is read as its own."""
    server, reader = ToolLists(), ToolLists()

    def spec_for(name: str, tools: list[dict[str, Any]] = TOOLS) -> bytes:
        raw = body(tools=tools, tool_choice={"type": "function", "function": {"name": name}})
        parse_chat_request(raw, tool_lists=server)
        out = turn_spec(raw, "hermes", reasoning_open=False, tool_lists=server)
        assert isinstance(out, bytes)
        return out

    first, _, _ = read_turn_spec(spec_for("tool_0"), reader)
    again, _, _ = read_turn_spec(spec_for("tool_2"), reader)
    assert first.tools_key and again.tools_key == first.tools_key
    assert all(a is b for a, b in zip(first.tools, again.tools, strict=True))
    assert again.normal_choice() != first.normal_choice()
    changed = [dict(t) for t in TOOLS]
    changed[2] = {**TOOLS[2], "function": {**TOOLS[2]["function"], "description": "e"}}
    other, _, _ = read_turn_spec(spec_for("tool_2", changed), reader)
    assert other.tools_key != first.tools_key
    assert other.tools[2].description == "e" and first.tools[2].description == "d"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("{", "not valid JSON"),
        (b"\xff{", "not valid JSON"),
        ([1], "must be an object"),
        ("[1]", "must be an object"),
        ({"tools": TOOLS, "color": 1}, "unknown field 'color'"),
        ('{"tools": [], "model": "m"}', "unknown field 'model'"),
        ({"format": "nope"}, "unknown wire format 'nope'"),
        ({"reasoning_open": 1}, "reasoning_open must be a boolean"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
        (json.dumps({"tools": TOOLS, "tool_choice": "sometimes"}), "tool_choice"),
        ('{"tools": 5}', "tools"),
    ],
)
def test_a_bad_spec_names_its_field(spec: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words) as e:
        read_turn_spec(spec, ToolLists(), where="extra_args.toolmask")
    assert str(e.value).startswith("extra_args.toolmask")
