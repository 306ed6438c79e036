"""``minimax_m1`` on llama.cpp's ``MiniMax-M1.jinja``."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, parse, takes

_T = "llama.cpp/MiniMax-M1.jinja"
_W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
_S = frozenset({"<tool_calls>", "</tool_calls>"})
CASES = {
    "one": Case(
        _T, f"<tool_calls>\n{_W}\n</tool_calls><end_of_sentence>\n", "<end_of_sentence>\n", ONE
    ),
    "two": Case(
        _T,
        f"<tool_calls>\n{_W}\n{_Z}\n</tool_calls><end_of_sentence>\n",
        "<end_of_sentence>\n",
        TWO,
        special=_S,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("minimax_m1", CASES[name])


def test_one_object_per_line_only() -> None:
    case = CASES["two"]
    # a JSON list is not MiniMax-M1's block; objects on one line are not either
    listed = f"<tool_calls>\n[{_W}, {_Z}]\n</tool_calls>"
    assert not takes("minimax_m1", case, listed)
    assert parse("minimax_m1", case, listed).malformed
    assert not takes("minimax_m1", case, f"<tool_calls>\n{_W}, {_Z}\n</tool_calls>")
