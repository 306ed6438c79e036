"""``lfm2_json`` on llama.cpp's LFM2 template (``llama.cpp-upstream/llama-cpp-lfm2.jinja``): LFM2's
JSON mode, the calls as JSON objects with their ids inside the markers ``lfm2`` writes Python
calls in."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "llama.cpp-upstream/llama-cpp-lfm2.jinja"
_W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "call0000a"}'
_Z = '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}, "id": "call0001b"}'
_END = "<|im_end|>\n"
_SPECIAL = frozenset({"<|tool_call_start|>", "<|tool_call_end|>"})
CASES = {
    "one": Case(
        _T,
        f"<|tool_call_start|>[{_W}]<|tool_call_end|>{_END}",
        _END,
        ONE,
        ids=("call0000a",),
        special=_SPECIAL,
    ),
    "two": Case(
        _T,
        f"<|tool_call_start|>[{_W}, {_Z}]<|tool_call_end|>{_END}",
        _END,
        TWO,
        ids=("call0000a", "call0001b"),
        special=_SPECIAL,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("lfm2_json", CASES[name])


def test_the_two_modes_do_not_read_each_other() -> None:
    case = CASES["one"]
    python = "<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>"
    assert takes("lfm2", case, python) and not takes("lfm2_json", case, python)
    assert not takes("lfm2", case, case.reply)
    got = parse("lfm2_json", case, python)
    assert got.calls == () and got.malformed and got.content == python


def test_ids_are_optional_and_reasoning_first() -> None:
    case = CASES["two"]
    bare = case.reply.replace(', "id": "call0000a"', "").replace(', "id": "call0001b"', "")
    assert takes("lfm2_json", case, bare)
    reply = "<think>\nThe user wants the weather.\n</think>\n" + bare
    assert takes("lfm2_json", case, reply)
    got = parse("lfm2_json", case, reply)
    assert got.reasoning == "The user wants the weather." and len(got.calls) == 2


def test_malformed_block_stays_in_content() -> None:
    case = CASES["one"]
    check_stays_in_content(
        "lfm2_json",
        case,
        (
            "<|tool_call_start|>[" + _W + "<|tool_call_end|>",  # the list is never closed
            "<|tool_call_start|>[]<|tool_call_end|>",  # an empty list
            "<|tool_call_start|>[" + _W[:40],  # cut off
        ),
    )
