"""Request validation (no model, no HTTP): every bad request is a 400 naming its field."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from toolmask.server._protocol import APIError, ChatRequest, parse_chat_request

MSG = [{"role": "user", "content": "hi"}]
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture(params=["digest", "text"])
def kept(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The server's tool lists recognise a list sent again by a digest of the request's bytes
    (the compiled kernel) or, without the kernel, by comparing the kept text: both ways."""
    from toolmask.server import _body

    if request.param == "text":
        monkeypatch.setattr(_body, "_DIGEST", None)
    elif _body._DIGEST is None:
        pytest.skip("the compiled kernel is not built")
    return str(request.param)


def ok(**body: Any) -> ChatRequest:
    return parse_chat_request(json.dumps({"model": "m", "messages": MSG, **body}).encode())


def bad(body: Any) -> APIError:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    with pytest.raises(APIError) as e:
        parse_chat_request(raw)
    assert e.value.status == 400
    shape = e.value.body()["error"]
    assert set(shape) >= {"message", "type", "param", "code"}
    assert shape["type"] == "invalid_request_error"
    return e.value


def test_minimal_request_leaves_sampling_to_the_server() -> None:
    r = ok()
    assert r.model == "m" and r.messages[0].role == "user" and r.messages[0].content == "hi"
    assert r.temperature is None and r.top_p is None and r.top_k is None and r.min_p is None
    assert r.max_tokens is None and r.sampling is None
    assert not r.stream and r.parallel_tool_calls and r.response_format.kind == "text"


def test_every_supported_field_is_read() -> None:
    r = ok(
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        max_completion_tokens=7,
        max_tokens=99,
        temperature=0.5,
        top_p=0.9,
        seed=-1,
        stop="END",
        n=1,
        stream=True,
        stream_options={"include_usage": True},
        user="u",
        presence_penalty=0,
        logprobs=False,
        sampling="aligned",
    )
    assert r.tools[0].name == "get_weather" and not r.parallel_tool_calls
    assert r.sampling == "aligned"
    assert r.max_tokens == 7  # max_completion_tokens wins
    assert r.stop == ("END",) and r.include_usage and r.stream
    assert r.seed is not None and r.seed >= 0
    assert r.response_format.kind == "json_schema" and r.response_format.name == "x"


def test_null_means_not_given() -> None:
    r = ok(temperature=None, tools=None, stop=None, seed=None, n=None)
    assert r.temperature is None and r.tools == () and r.stop == ()


def test_messages_of_every_role() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    r = parse_chat_request(
        {
            "model": "m",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
                {"role": "tool", "tool_call_id": "call_1", "content": "12C"},
            ],
        }
    )
    system, user, assistant, tool = r.messages
    assert system.role == "system" and user.content == "ab"
    assert assistant.tool_calls[0].arguments == {"a": 1} and assistant.content == ""
    assert tool.tool_call_id == "call_1"


@pytest.mark.parametrize(
    ("body", "param", "needle"),
    [
        (b"{not json", None, "could not parse the JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (b"\xff\xfe", None, "could not parse"),
        ({"messages": MSG}, "model", "Missing required parameter: 'model'"),
        ({"model": "m"}, "messages", "Missing required parameter: 'messages'"),
        ({"model": "m", "messages": []}, "messages", "empty array"),
        ({"model": 3, "messages": MSG}, "model", "expected a string, but got integer"),
        ({"model": "m", "messages": MSG, "temperature": "hot"}, "temperature", "got string"),
        ({"model": "m", "messages": MSG, "temperature": 3}, "temperature", "at most 2"),
        ({"model": "m", "messages": MSG, "max_tokens": 0}, "max_tokens", "at least 1"),
        ({"model": "m", "messages": MSG, "max_tokens": True}, "max_tokens", "got boolean"),
        ({"model": "m", "messages": MSG, "stream": "yes"}, "stream", "expected a boolean"),
        ({"model": "m", "messages": MSG, "n": 2}, "n", "n = 1"),
        ({"model": "m", "messages": MSG, "stop": ["a"] * 5}, "stop", "at most 4"),
        ({"model": "m", "messages": MSG, "stop": [1]}, "stop[0]", "expected a string"),
        ({"model": "m", "messages": MSG, "bogus": 1}, "bogus", "Unrecognized request argument"),
        ({"model": "m", "messages": MSG, "presence_penalty": 1}, "presence_penalty", "does not"),
        ({"model": "m", "messages": MSG, "logprobs": True}, "logprobs", "does not implement"),
        (
            {"model": "m", "messages": MSG, "stream_options": {"include_usage": True}},
            "stream_options",
            "only allowed when 'stream' is enabled",
        ),
        (
            {"model": "m", "messages": [{"role": "robot", "content": "x"}]},
            "messages[0].role",
            "robot",
        ),
        ({"model": "m", "messages": [{"role": "user"}]}, "messages[0].content", "Missing"),
        ({"model": "m", "messages": ["hi"]}, "messages[0]", "expected an object"),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0].type",
            "text parts only",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id",
            "Missing",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{"}}],
                    }
                ],
            },
            "messages[0].tool_calls[0].function.arguments",
            "not JSON",
        ),
        ({"model": "m", "messages": MSG, "tools": {}}, "tools", "expected an array"),
        ({"model": "m", "messages": MSG, "tools": [{"type": "function"}]}, "tools[0]", "name"),
        ({"model": "m", "messages": MSG, "tools": [TOOL, TOOL]}, "tools", "two tools"),
        ({"model": "m", "messages": MSG, "tool_choice": "required"}, "tool_choice", "only allowed"),
        (
            {"model": "m", "messages": MSG, "tools": [TOOL], "tool_choice": "sometimes"},
            "tool_choice",
            "unknown tool_choice",
        ),
        (
            {
                "model": "m",
                "messages": MSG,
                "tools": [TOOL],
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            "tool_choice",
            "unknown tools",
        ),
        ({"model": "m", "messages": MSG, "sampling": "beam"}, "sampling", "plain, exact"),
        ({"model": "m", "messages": MSG, "sampling": True}, "sampling", "string"),
        (
            {"model": "m", "messages": MSG, "response_format": {"type": "xml"}},
            "response_format.type",
            "xml",
        ),
        (
            {
                "model": "m",
                "messages": MSG,
                "response_format": {"type": "json_schema", "json_schema": {"schema": 3}},
            },
            "response_format.json_schema.schema",
            "JSON Schema object",
        ),
    ],
)
def test_bad_requests_name_their_field(body: Any, param: str | None, needle: str) -> None:
    e = bad(body)
    assert e.param == param
    assert needle in e.message


def test_allowed_tools_choice_is_checked_against_the_tools() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
    }
    assert ok(tools=[TOOL], tool_choice=choice).tool_choice == choice


def test_deeply_nested_json_body_is_a_400_not_a_crash() -> None:
    e = bad(b"[" * 100_000 + b"]" * 100_000)
    assert e.code == "invalid_json"


# -- the tool list's identity from the body's own text ---------------------------------------------

BODIES = [
    b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
    b' \n{ "model" :"m","messages":[{"role":"user","content":"a \\" b"}] ,"tools":[] }\r\n',
    b'{"model": "m", "model": "n", "messages": []}',
    b"{}",
    b'{"a": {"b": [1, 2.5e3, null, true, "\\u00e9"]}, "c": NaN}',
    b'\xef\xbb\xbf{"model": "m"}',
    '{"model": "é", "x": "\U0001f600"}'.encode("utf-16"),
    b'{"model": "m",}',
    b'{"model" "m"}',
    b'{"model": "m"} x',
    b'["model"]',
    b'{"model": "m"',
    b'{"a": "\x01"}',
    b"\xff\xfe\x00",
    b"",
]


@pytest.mark.parametrize("body", BODIES)
def test_the_body_reads_as_json_loads_reads_it(body: bytes) -> None:
    """The reader that keeps the spans of the top-level values gives json.loads's value, or
    raises json.loads's error."""
    from toolmask.server._body import read_body

    try:
        expected: Any = json.loads(body)
    except (ValueError, RecursionError) as e:
        with pytest.raises(type(e)):
            read_body(body)
        return
    data, text, spans = read_body(body)
    span = spans.get("tools")
    assert json.dumps(data) == json.dumps(expected)
    if span is not None:
        assert json.loads(text[span[0] : span[1]]) == expected["tools"]


def test_a_known_list_is_found_in_the_bytes_and_never_taken_where_it_is_not_the_value(
    kept: str,
) -> None:
    """With the list kept, a body holding it as its top-level ``tools`` gets it without the
    list's text being decoded; the same text elsewhere (nested under another key called
    ``tools``, or a top-level ``tools`` given twice) is read as JSON reads it."""
    from toolmask.server import ToolLists
    from toolmask.server._body import KnownTools, read_body

    lists = ToolLists()
    fn = {**TOOL["function"], "name": "other", "description": "météo ☃"}
    tools = [TOOL, {**TOOL, "function": fn}]
    text = json.dumps(tools, ensure_ascii=False)  # multi-byte characters in the list's text
    body = '{"model": "m", "messages": ' + json.dumps(MSG) + ', "tools": ' + text + "}"
    parse_chat_request(body.encode(), tool_lists=lists)
    known = [
        '{"model": "m", "messages": [{"role": "user", "content": "ünï ☃"}], "tools": ' + text + "}",
        '{"tools" :\n ' + text + ', "model": "m", "messages": []}',
    ]
    for body in known:
        for raw in (body.encode(), body.encode("utf-16"), body):
            data, _, _ = read_body(raw, lists)
            assert isinstance(data["tools"], KnownTools)
            assert data["tools"].names == ("get_weather", "other")
            rest = {k: v for k, v in json.loads(body).items() if k != "tools"}
            assert {k: v for k, v in data.items() if k != "tools"} == rest
    other = json.dumps([TOOL])
    elsewhere = [
        '{"meta": {"tools": ' + text + '}, "tools": ' + other + "}",
        '{"tools": ' + text + ', "tools": ' + other + "}",
        '{"meta": {"tools": ' + text + "}}",
        '{"a": "\\"tools\\": ' + text.replace('"', '\\"') + '"}',
    ]
    for body in elsewhere:
        data, _, _ = read_body(body.encode(), lists)
        assert data == json.loads(body), body


def test_a_tool_list_sent_again_is_not_read_again(kept: str) -> None:
    from toolmask.server import ToolLists

    lists = ToolLists(size=2)
    tools = [TOOL, {**TOOL, "function": {**TOOL["function"], "name": "other"}}]
    first = parse_chat_request(
        json.dumps({"model": "m", "messages": MSG, "tools": tools}).encode(), tool_lists=lists
    )
    again = parse_chat_request(
        json.dumps({"tools": tools, "messages": MSG + MSG, "model": "m"}).encode(),
        tool_lists=lists,
    )
    assert first.tools_key and again.tools_key == first.tools_key
    assert all(a is b for a, b in zip(first.tools, again.tools, strict=True))
    other = parse_chat_request(
        json.dumps({"model": "m", "messages": MSG, "tools": tools[:1]}).encode(), tool_lists=lists
    )
    assert other.tools_key != first.tools_key and len(other.tools) == 1
    # without the lists, or for a body given parsed: the same tools, read again
    plain = parse_chat_request(json.dumps({"model": "m", "messages": MSG, "tools": tools}))
    assert plain.tools == first.tools and plain.tools_key == first.tools_key
    parsed = parse_chat_request({"model": "m", "messages": MSG, "tools": tools})
    assert parsed.tools == first.tools and parsed.tools_key == ""


def test_a_list_like_a_kept_one_but_for_a_byte_is_read_as_its_own(kept: str) -> None:
    """A ``tools`` text with a kept list's first bytes and length that differs in one byte
    (anywhere past the indexed prefix), or that is cut short by the body's end, is never taken
    for the kept list: it is parsed and read as its own."""
    from toolmask.server import ToolLists
    from toolmask.server._body import KnownTools, read_body

    lists = ToolLists()
    tools = [
        {**TOOL, "function": {**TOOL["function"], "name": f"tool_{i:03d}", "description": "d" * 40}}
        for i in range(40)
    ]
    text = json.dumps(tools)
    body = {"model": "m", "messages": MSG, "tools": tools}
    parse_chat_request(json.dumps(body).encode(), tool_lists=lists)
    positions = [i for i in range(ToolLists.PREFIX, len(text)) if text[i : i + 3] == "_00"]
    positions += [len(text) - 200, len(text) - 130]
    for i in positions:
        changed = text[:i] + text[i].swapcase() if text[i].isalpha() else text[:i] + "_"
        changed += text[i + 1 :]
        if changed == text:
            continue
        try:
            want = json.loads(changed)
        except ValueError:
            continue
        data, _, _ = read_body(('{"tools": ' + changed + "}").encode(), lists)
        assert data["tools"] == want and not isinstance(data["tools"], KnownTools), i
    # the same first bytes, the body ending before the kept length
    short = text[: len(text) // 2]
    with pytest.raises(ValueError):
        read_body(('{"tools": ' + short).encode(), lists)
    data, _, _ = read_body(('{"tools": ' + text + "}").encode(), lists)
    assert isinstance(data["tools"], KnownTools)


def test_a_tool_choice_sent_again_over_a_known_list_is_compared_not_parsed(kept: str) -> None:
    """A ``tool_choice`` read and checked over a kept list is found again by its text (the
    body's value is its KnownChoice, the client's value and its ToolChoice); any other text,
    another list, or the same text over a list without those names is read and checked as
    before, and a refused choice is never kept."""
    from toolmask.server import ToolLists
    from toolmask.server._body import KnownChoice, read_body
    from toolmask.tools import ToolChoice

    lists = ToolLists()
    names = ["a", "b", "c"]
    tools = [{**TOOL, "function": {**TOOL["function"], "name": n}} for n in names]
    subset = {"type": "allowed_tools", "mode": "required", "tools": ["c", "a"]}

    def body(choice: Any, tl: list[dict[str, Any]] = tools, sep: str = ", ") -> bytes:
        raw = {"model": "m", "messages": MSG, "tools": tl, "tool_choice": choice}
        return json.dumps(raw, separators=(sep, ": ")).encode()

    first = parse_chat_request(body(subset), tool_lists=lists)
    assert first.normal_choice() == ToolChoice("required", ("a", "c"))
    data, _, _ = read_body(body(subset), lists)
    assert isinstance(data["tool_choice"], KnownChoice)
    again = parse_chat_request(body(subset), tool_lists=lists)
    assert again.tool_choice == subset and again.normal_choice() == first.normal_choice()
    # another spelling of the same subset: read, checked, the same normal form
    spaced = parse_chat_request(body(subset, sep=" ,"), tool_lists=lists)
    assert spaced.normal_choice() == first.normal_choice()
    assert not isinstance(read_body(body("auto"), lists)[0]["tool_choice"], KnownChoice)
    # a refused choice is refused every time, never kept
    unknown = {"type": "allowed_tools", "mode": "required", "tools": ["a", "zz"]}
    for _ in range(2):
        with pytest.raises(APIError, match="zz"):
            parse_chat_request(body(unknown), tool_lists=lists)
    # the same text over another list that lacks one of the names: checked, refused
    fewer = tools[:2]
    with pytest.raises(APIError, match="unknown tools"):
        parse_chat_request(body(subset, fewer), tool_lists=lists)
    data, _, _ = read_body(body(subset, fewer), lists)
    assert data["tool_choice"] == subset
    # nested, the same text is a value like any other
    nested = json.dumps({"model": "m", "messages": MSG, "tools": tools, "metadata": subset})
    assert read_body(nested.encode(), lists)[0]["metadata"] == subset


def test_a_known_list_keeps_its_last_tool_choices() -> None:
    from toolmask.server._body import KnownTools
    from toolmask.tools import ToolChoice

    known = KnownTools("k", ())
    texts = [json.dumps({"type": "function", "function": {"name": f"t{i}"}}) for i in range(70)]
    for i, t in enumerate(texts):
        known.note_choice(t, json.loads(t), ToolChoice("required", (f"t{i}",)))
    assert known.match_choice("x" + texts[0], 1) is None  # the oldest dropped
    hit = known.match_choice("x" + texts[-1] + "}", 1)
    assert hit is not None and hit[0].choice.allowed == ("t69",) and hit[1] == 1 + len(texts[-1])
    known.note_choice("1", 1, ToolChoice())  # not a string or an object: not kept
    assert known.match_choice("12", 0) is None


def test_a_request_made_with_another_tool_choice_is_keyed_by_it() -> None:
    """The plan key takes the checked ToolChoice (a subset in any order is one key), and a
    request replaced with another ``tool_choice`` is keyed by that value, not the old one."""
    import dataclasses

    from toolmask.server._plans import PlanCache

    tools = [{**TOOL, "function": {**TOOL["function"], "name": n}} for n in "abc"]

    def req(choice: Any) -> Any:
        raw = {"model": "m", "messages": MSG, "tools": tools, "tool_choice": choice}
        return parse_chat_request(json.dumps(raw).encode())

    ab = req({"type": "allowed_tools", "mode": "required", "tools": ["a", "b"]})
    ba = req({"type": "allowed_tools", "mode": "required", "tools": ["b", "a"]})
    assert PlanCache.key(ab) == PlanCache.key(ba)
    auto = req("auto")
    forced = dataclasses.replace(auto, tool_choice="required")
    assert forced.normal_choice() is None
    assert PlanCache.key(forced) != PlanCache.key(auto)
    assert PlanCache.key(forced) == PlanCache.key(dataclasses.replace(req("required")))


def test_a_parsed_body_finds_its_tools_in_the_lists_too(kept: str) -> None:
    """A body handed over parsed (the vLLM processors' turn specs: a new dict each request)
    is written as text when it has tools, so the same tools are the same objects and key;
    a value JSON text cannot hold (NaN) is read as it is, and refused as before."""
    from toolmask.server import ToolLists

    lists = ToolLists()
    tools = [TOOL, {**TOOL, "function": {**TOOL["function"], "name": "other"}}]
    sent = parse_chat_request(
        json.dumps({"model": "m", "messages": MSG, "tools": tools}).encode(), tool_lists=lists
    )
    for _ in range(2):
        body = json.loads(json.dumps({"model": "m", "messages": MSG, "tools": tools}))
        parsed = parse_chat_request(body, tool_lists=lists)
        assert parsed.tools_key == sent.tools_key
        assert all(a is b for a, b in zip(parsed.tools, sent.tools, strict=True))
    bad = {**TOOL, "function": {**TOOL["function"], "name": "nan_max"}}
    bad["function"]["parameters"] = {"type": "number", "maximum": math.nan}
    with pytest.raises(APIError) as e:
        parse_chat_request({"model": "m", "messages": MSG, "tools": [bad]}, tool_lists=lists)
    assert e.value.param is not None and e.value.param.startswith("tools[0]")


def test_a_parsed_body_seen_before_is_found_by_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same tools handed over parsed again (new dicts) are found by a digest of the value,
    without writing the body as JSON text; values whose JSON differs (``true`` and ``1``,
    ``1`` and ``1.0``, keys in another order) are other lists."""
    import toolmask.server._protocol as protocol
    from toolmask.server import ToolLists

    lists = ToolLists(size=2)

    def tool(const: object, keys: tuple[str, str] = ("type", "const")) -> dict[str, Any]:
        prop = {keys[0]: "object" if keys[0] == "type" else const, keys[1]: const}
        if keys[0] != "type":
            prop = {"const": const, "type": "object"}
        return {"type": "function", "function": {"name": "f", "parameters": prop}}

    def parse(tools: list[Any]) -> Any:
        body = copy.deepcopy({"model": "m", "messages": MSG, "tools": tools})  # new dicts
        return parse_chat_request(body, tool_lists=lists)

    first = parse([TOOL])
    written: list[object] = []
    real = protocol.json.dumps

    def dumps(obj: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(obj, dict) and "messages" in obj:  # a body written as text
            written.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(protocol.json, "dumps", dumps)
    again = parse([TOOL])
    assert written == [] and again.tools_key == first.tools_key
    assert all(a is b for a, b in zip(again.tools, first.tools, strict=True))
    keys = {parse([tool(c)]).tools_key for c in (True, 1, 1.0)}
    assert len(keys) == 3 and len(written) == 3
    swapped = parse([tool(1, ("const", "type"))])
    assert swapped.tools_key not in keys and len(written) == 4
    # the lists keep two: the oldest value's list is gone, and read from its text again
    assert parse([TOOL]).tools_key == first.tools_key and len(written) == 5


def test_a_bad_tool_list_is_refused_every_time(kept: str) -> None:
    from toolmask.server import ToolLists

    lists = ToolLists()
    body = json.dumps({"model": "m", "messages": MSG, "tools": [{"type": "function"}]}).encode()
    for _ in range(2):
        with pytest.raises(APIError) as e:
            parse_chat_request(body, tool_lists=lists)
        assert e.value.param == "tools[0]"
    # each tool reads, the list does not (two tools of one name): not kept, refused again
    twice = json.dumps({"model": "m", "messages": MSG, "tools": [TOOL, TOOL]}).encode()
    for _ in range(2):
        with pytest.raises(APIError) as e:
            parse_chat_request(twice, tool_lists=lists)
        assert e.value.param == "tools" and "two tools are called" in str(e.value)
