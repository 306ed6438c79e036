"""``llama4`` on Llama 4's own chat template (``transformers/meta-llama-Llama-4.jinja``)."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, check_stays_in_content, takes

_T = "transformers/meta-llama-Llama-4.jinja"
_OPEN = "<|python_start|><|python_end|>"
_W = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}'
_SPECIAL = frozenset({"<|python_start|>", "<|python_end|>"})
CASES = {
    # the message's (empty) text in the python pair, then the calls back to back, then <|eot|>
    "one": Case(_T, _OPEN + _W + "<|eot|>", "<|eot|>", ONE, special=_SPECIAL),
    "two": Case(_T, _OPEN + _W + _Z + "<|eot|>", "<|eot|>", TWO, special=_SPECIAL),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("llama4", CASES[name])


def test_calls_after_prose_and_types() -> None:
    case = CASES["two"]
    reply = "Checking both.\n" + _OPEN + _W + _Z
    assert takes("llama4", case, reply, "auto")
    assert not takes("llama4", case, reply, "required")
    got = ToolTurn(TOOLS, "llama4").parse(reply)
    assert got.content == "Checking both."
    assert [c.name for c in got.calls] == ["get_weather", "get_time"]
    # "arguments" is llama3_json's spelling, not this template's; the bare calls are vLLM's
    assert not takes("llama4", case, _OPEN + _W.replace("parameters", "arguments"))
    assert not takes("llama4", case, _W + _Z)
    assert not takes("llama4", case, "<|python_start|>" + _W + _Z + "<|python_end|>")


def test_malformed_block_stays_in_content() -> None:
    case = CASES["one"]
    check_stays_in_content(
        "llama4", case, (_OPEN + _W[:-1], _OPEN + '{"name": "get_weather", "parameters": [1]}')
    )
