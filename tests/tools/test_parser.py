"""The batch and streaming parsers, on reply shapes that real models produce."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolmask.tools import (
    FORMATS,
    MalformedBlock,
    ParsedTurn,
    ReasoningSplitter,
    StreamDelta,
    StreamParser,
    ToolCall,
    ToolTurn,
    get_format,
    parse_turn,
    sequential_call_id,
)

from .toolset import TOOLS


def parse(text: str, fmt: str = "hermes") -> ParsedTurn:
    return parse_turn(text, get_format(fmt), id_factory=sequential_call_id)


def calls(parsed: ParsedTurn) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, c.arguments) for c in parsed.calls]


# -- hermes (Qwen 2.5 / 3, Hermes, SmolLM) ------------------------------------------------------

QWEN_PARALLEL = (
    "I'll check both cities.\n"
    "<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n'
    "</tool_call>\n"
    "<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Tokyo"}}\n'
    "</tool_call>"
)


def test_hermes_prose_and_two_calls() -> None:
    p = parse(QWEN_PARALLEL)
    assert p.content == "I'll check both cities."
    assert calls(p) == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_weather", {"city": "Tokyo"}),
    ]
    assert [c.id for c in p.calls] == ["call_0", "call_1"]
    assert p.malformed == ()


def test_prose_only_is_content_byte_for_byte() -> None:
    text = "  Paris is sunny today.\n\nAnything else?  \n"
    for fmt in FORMATS:
        assert parse(text, fmt) == ParsedTurn(text)


def test_prose_after_the_calls_is_kept() -> None:
    text = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n\nDone, waiting.'
    p = parse(text)
    assert p.content == "Done, waiting."
    assert calls(p) == [("get_time", {})]


def test_markers_inside_json_strings() -> None:
    args = {"query": "what does </tool_call> mean? and <tool_call>?", "limit": 3}
    body = json.dumps({"name": "search_web", "arguments": args})
    text = f"<tool_call>\n{body}\n</tool_call>"
    p = parse(text)
    assert calls(p) == [("search_web", args)]
    assert p.content == ""


def test_broken_json_stays_in_content() -> None:
    text = (
        "Let me try.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    )
    p = parse(text)
    bad = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'
    assert p.content == "Let me try.\n" + bad
    assert calls(p) == [("get_time", {})]
    (m,) = p.malformed
    assert m.text == bad
    assert m.offset == len(b"Let me try.\n")
    assert m.reason.startswith("invalid JSON")


def test_truncated_at_max_tokens() -> None:
    text = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
    p = parse(text)
    assert p.calls == ()
    assert p.content == text  # a call cut off is listed, and its text stays in content
    (m,) = p.malformed
    assert m.reason.startswith("truncated")
    assert m.text == text[len("Checking.\n") :]


def test_truncated_before_close_marker() -> None:
    text = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_'
    p = parse(text)
    assert p.calls == () and p.content == text
    assert p.malformed[0].reason.startswith("truncated")


def test_a_second_call_cut_off_keeps_the_first_batch_and_streamed() -> None:
    first = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
    text = first + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
    p = parse(text)
    cut = text[len(first) :]
    assert [c.name for c in p.calls] == ["get_time"] and p.content == cut
    assert p.malformed[0].reason.startswith("truncated")
    s = StreamParser(FORMATS["hermes"], id_factory=sequential_call_id)
    deltas = [d for i in range(0, len(text), 7) for d in s.feed(text[i : i + 7])] + s.finish()
    assert "".join(d.content or "" for d in deltas) == cut  # the cut call's text is kept
    assert [d.name for d in deltas if d.name] == ["get_time"]
    assert s.result == p


def test_missing_name_and_non_object_arguments() -> None:
    p = parse('<tool_call>\n{"arguments": {}}\n</tool_call>')
    assert p.malformed[0].reason == "the call has no string 'name'"
    p = parse('<tool_call>\n{"name": "x", "arguments": [1]}\n</tool_call>')
    assert p.malformed[0].reason == "the arguments must be a JSON object"


def test_arguments_as_json_string_and_key_order() -> None:
    text = (
        '<tool_call>\n{"arguments": "{\\"city\\": \\"Oslo\\"}", "name": "get_weather"}'
        "\n</tool_call>"
    )
    assert calls(parse(text)) == [("get_weather", {"city": "Oslo"})]


def test_byte_offsets_count_utf8() -> None:
    text = "Já vou ver 🌧.\n<tool_call>\n{oops}\n</tool_call>"
    (m,) = parse(text).malformed
    assert m.offset == text.encode().index(b"<tool_call>")


# -- other formats -------------------------------------------------------------------------------


def test_llama3_bare_and_tagged() -> None:
    text = '{"name": "get_weather", "parameters": {"city": "Lima"}}'
    assert calls(parse(text, "llama3_json")) == [("get_weather", {"city": "Lima"})]
    text = (
        '<|python_tag|>{"name": "get_time", "parameters": {}}; '
        '{"name": "calculate", "parameters": {"expression": "1+1"}}'
    )
    p = parse(text, "llama3_json")
    assert calls(p) == [("get_time", {}), ("calculate", {"expression": "1+1"})]
    assert p.content == ""


def test_llama3_json_that_is_not_a_call() -> None:
    text = '{"answer": 42}'
    p = parse(text, "llama3_json")
    assert p.calls == () and p.content == text
    assert p.malformed == (MalformedBlock(text, "the call has no string 'name'", 0),)


def test_llama3_brace_later_is_prose() -> None:
    text = 'The JSON is {"name": "x"}.'
    assert parse(text, "llama3_json") == ParsedTurn(text)


def test_mistral_array() -> None:
    text = (
        'Sure.[TOOL_CALLS] [{"name": "get_time", "arguments": {}}, '
        '{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "abc123def"}]'
    )
    p = parse(text, "mistral")
    assert p.content == "Sure."
    assert calls(p) == [("get_time", {}), ("get_weather", {"city": "Rome"})]


def test_mistral_bad_element_makes_block_malformed() -> None:
    text = '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, 3]'
    p = parse(text, "mistral")
    assert p.calls == () and p.content == text
    assert p.malformed[0].reason == "expected a call object '{'"


def test_phi4_mini() -> None:
    text = '<|tool_call|>[{"name": "calculate", "arguments": {"expression": "6*7"}}]<|/tool_call|>'
    assert calls(parse(text, "phi4_mini")) == [("calculate", {"expression": "6*7"})]


def test_functools_word_alone_is_prose() -> None:
    text = "Python's functools module is handy."
    assert parse(text, "functools") == ParsedTurn(text)
    text = 'ok functools[{"name": "get_time", "arguments": {}}]'
    p = parse(text, "functools")
    assert p.content == "ok" and calls(p) == [("get_time", {})]


def test_empty_call_list_is_malformed() -> None:
    p = parse("[TOOL_CALLS][]", "mistral")
    assert p.calls == () and p.malformed[0].reason == "an empty list of calls"


def test_tool_call_to_openai() -> None:
    c = ToolCall("call_0", "get_weather", {"city": "Paris"})
    assert c.to_openai() == {
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }


# -- streaming -----------------------------------------------------------------------------------


def stream(text: str, cuts: list[int], fmt: str = "hermes") -> tuple[list[StreamDelta], ParsedTurn]:
    turn = ToolTurn(TOOLS, fmt, id_factory=sequential_call_id)
    sp = turn.stream_parser()
    deltas: list[StreamDelta] = []
    prev = 0
    for c in [*sorted(cuts), len(text)]:
        deltas += sp.feed(text[prev:c])
        prev = c
    deltas += sp.finish()
    return deltas, sp.result


def test_stream_deltas_openai_shape() -> None:
    deltas, result = stream(QWEN_PARALLEL, list(range(0, len(QWEN_PARALLEL), 3)))
    assert result == parse(QWEN_PARALLEL)
    content = "".join(d.content or "" for d in deltas if d.index is None)
    assert content == result.content
    starts = [d for d in deltas if d.id is not None]
    assert [(d.index, d.id, d.name) for d in starts] == [
        (0, "call_0", "get_weather"),
        (1, "call_1", "get_weather"),
    ]
    for i, call in enumerate(result.calls):
        frag = "".join(d.arguments or "" for d in deltas if d.index == i)
        assert json.loads(frag) == call.arguments
    assert starts[0].to_openai() == {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ]
    }
    # arguments stream before the call's block is complete
    first_args = next(i for i, d in enumerate(deltas) if d.index == 0 and d.id is None)
    assert first_args < next(i for i, d in enumerate(deltas) if d.index == 1)


def test_stream_holds_back_a_possible_marker() -> None:
    turn = ToolTurn(TOOLS, "hermes")
    sp = turn.stream_parser()
    assert sp.feed("Hello <tool") == [StreamDelta(content="Hello")]
    assert sp.feed("box> there") == [StreamDelta(content=" <toolbox> there")]
    sp.finish()
    assert sp.result.content == "Hello <toolbox> there"


PIECES = {
    "hermes": [
        "Let me check. ",
        "\n",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call>\n{"name": "search_web", "arguments": {"query": "a </tool_call> b"}}'
        "\n</tool_call>",
        '<tool_call>\n{"name": "get_time", "arguments": {oops}}\n</tool_call>',
        '<tool_call>\n{"arguments": {}, "name": "get_time"}</tool_call>',
        '<tool_call>\n{"name": "calc',
        "<tool_",
        "Done 🌧.",
    ],
    "llama3_json": [
        '{"name": "get_weather", "parameters": {"city": "Lima"}}',
        '<|python_tag|>{"name": "get_time", "parameters": {}}; '
        '{"name": "x", "parameters": {"a": [1, "}"]}}',
        "; ",
        "Sure thing.",
        "<|python",
        '{"broken": ',
    ],
    "mistral": [
        'Okay.[TOOL_CALLS][{"name": "get_time", "arguments": {}}, '
        '{"name": "calculate", "arguments": {"expression": "[1]"}}]',
        "[TOOL_CALLS] [",
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}]',
        "text [TOOL",
        "]",
    ],
    "phi4_mini": [
        '<|tool_call|>[{"name": "get_time", "arguments": {}}]<|/tool_call|>',
        "Prose. ",
        '<|tool_call|>[{"name": "get_time", "arguments": {}},',
        "<|/tool_call|>",
    ],
    "functools": [
        'functools[{"name": "get_time", "arguments": {}}]',
        "I know functools. ",
        'functools[{"name": "calculate", "arguments": {"expression": "functools[1]"}}',
        "]",
    ],
}


@st.composite
def reply_and_cuts(draw: st.DrawFn) -> tuple[str, str, list[int]]:
    fmt = draw(st.sampled_from(sorted(PIECES)))
    parts = draw(st.lists(st.sampled_from(PIECES[fmt]), max_size=5))
    text = "".join(parts)
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=12))
    return fmt, text, cuts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply_and_cuts())
def test_stream_equals_batch_for_every_split(case: tuple[str, str, list[int]]) -> None:
    fmt, text, cuts = case
    deltas, result = stream(text, cuts, fmt)
    batch = parse(text, fmt)
    assert result.content == batch.content
    assert result.malformed == batch.malformed
    assert calls(result) == calls(batch)
    content = "".join(d.content or "" for d in deltas if d.index is None)
    assert content == batch.content
    announced = [d for d in deltas if d.id is not None]
    if len(announced) == len(batch.calls):  # no block was abandoned after announcing its calls
        assert result == batch
        for i, call in enumerate(batch.calls):
            frag = "".join(d.arguments or "" for d in deltas if d.index == i)
            assert json.loads(frag) == call.arguments


@pytest.mark.parametrize("fmt", sorted(PIECES))
def test_stream_every_single_split_point(fmt: str) -> None:
    text = "".join(PIECES[fmt])
    batch = parse(text, fmt)
    for k in range(len(text) + 1):
        _, result = stream(text, [k], fmt)
        assert (result.content, calls(result), result.malformed) == (
            batch.content,
            calls(batch),
            batch.malformed,
        )


def test_feed_after_finish_is_an_error() -> None:
    sp = ToolTurn(TOOLS).stream_parser()
    with pytest.raises(RuntimeError):
        _ = sp.result
    sp.finish()
    with pytest.raises(RuntimeError):
        sp.feed("x")


# -- the reasoning channel split off a stream (ReasoningSplitter) --------------------------------

THINKING = "<think>\nParis is in France.\n</think>\n\n" + QWEN_PARALLEL


def split_all(text: str, fmt: str, cuts: list[int], *, reasoning_open: bool = False) -> Any:
    """Feed ``text`` cut at ``cuts``, then finish; the joined reasoning and body, and
    whether the body was handed over before the end."""
    sp = ReasoningSplitter(get_format(fmt), reasoning_open=reasoning_open)
    reasoning, body = "", ""
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    for piece in pieces:
        r, b = sp.feed(piece)
        reasoning, body = reasoning + r, body + b
    r, b = sp.feed("", final=True)
    return reasoning + r, body + b, sp


@pytest.mark.parametrize("cut", range(0, len(THINKING), 7))
def test_reasoning_splitter_agrees_with_the_parser(cut: int) -> None:
    reasoning, body, sp = split_all(THINKING, "qwen3", [cut])
    parsed = parse_turn(THINKING, get_format("qwen3"), id_factory=sequential_call_id)
    assert reasoning == parsed.reasoning == "Paris is in France."
    assert body == QWEN_PARALLEL  # the blank line after </think> dropped, as the parser drops it
    assert sp.done and sp.handed_over
    rest = parse_turn(body, get_format("hermes"), id_factory=sequential_call_id)
    assert calls(rest) == calls(parsed) and rest.content == parsed.content


def test_reasoning_splitter_holds_back_a_possible_opener() -> None:
    sp = ReasoningSplitter(get_format("qwen3"))
    assert sp.feed("<thi") == ("", "")
    assert not sp.done
    assert sp.feed("nk>") == ("", "")
    assert sp.feed("a plan") == ("a plan", "")
    assert sp.feed("</think>  ") == ("", "")
    assert sp.done and not sp.handed_over  # whitespace after the channel: not handed over yet
    assert sp.feed("Hi") == ("", "Hi")
    assert sp.handed_over


def test_reasoning_splitter_without_a_channel_is_all_body() -> None:
    reasoning, body, sp = split_all(QWEN_PARALLEL, "hermes", [5, 40])
    assert (reasoning, body) == ("", QWEN_PARALLEL)
    assert sp.done


def test_reasoning_splitter_prompt_opened_channel() -> None:
    text = "The user wants Tokyo.\n</think>\n\nOK."
    reasoning, body, _ = split_all(text, "qwen3", [3, 20], reasoning_open=True)
    assert (reasoning, body) == ("The user wants Tokyo.", "OK.")
    # cut off inside the channel: what came is reasoning, the body is empty
    reasoning, body, _ = split_all("still thinking", "qwen3", [6], reasoning_open=True)
    assert (reasoning, body) == ("still thinking", "")
