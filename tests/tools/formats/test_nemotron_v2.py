"""``nemotron_v2`` on llama.cpp's ``NVIDIA-Nemotron-Nano-v2.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TWO, Case, check_case, parse, takes

_T = "llama.cpp/NVIDIA-Nemotron-Nano-v2.jinja"
_ONE = '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]</TOOLCALL>'
_TWO = (
    '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
    '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]</TOOLCALL>'
)
CASES = {
    # the last assistant turn as the template renders it (history drops the reasoning)
    "one": Case(_T, _ONE + "<SPECIAL_12>\n\n", "<SPECIAL_12>\n\n", ONE),
    "two": Case(
        _T,
        _TWO + "<SPECIAL_12>\n\n",
        "<SPECIAL_12>\n\n",
        TWO,
        special=frozenset({"<TOOLCALL>", "</TOOLCALL>"}),
    ),
    # the generation prompt ends with "<think>\n": the reply reasons, then calls
    "thinking": Case(
        _T, "The user wants the weather.\n</think>\n\n" + _TWO, "", TWO, reasoning_open=True
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("nemotron_v2", CASES[name])


def test_the_generation_prompt_opens_the_reasoning() -> None:
    fmt = FORMATS["nemotron_v2"]
    assert fmt.prompt_opens_reasoning("<SPECIAL_11>Assistant\n<think>\n")
    assert not fmt.prompt_opens_reasoning("<SPECIAL_11>Assistant\n<think></think>")
    case = CASES["thinking"]
    assert parse("nemotron_v2", case, case.reply).reasoning == "The user wants the weather."
    assert not takes("nemotron_v2", case, _TWO)  # the channel must be closed first
