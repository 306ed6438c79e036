"""``functionary_v31`` on llama.cpp's ``meetkai-functionary-medium-v3.1.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, takes

_T = "llama.cpp/meetkai-functionary-medium-v3.1.jinja"
_W = '<function=get_weather>{"city": "Paris", "days": 3}</function>'
_Z = '<function=get_time>{"zone": "Europe/Paris"}</function>'
CASES = {
    "one": Case(_T, _W + "<|eom_id|>", "<|eom_id|>", ONE),
    "two": Case(_T, _W + _Z + "<|eom_id|>", "<|eom_id|>", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("functionary_v31", CASES[name])


def test_a_close_marker_inside_a_string_does_not_end_the_call() -> None:
    case = CASES["one"]
    reply = '<function=get_time>{"zone": "</function>"}</function>'
    assert takes("functionary_v31", case, reply)
    got = ToolTurn(TOOLS, "functionary_v31").parse(reply)
    assert [(c.name, c.arguments) for c in got.calls] == [("get_time", {"zone": "</function>"})]
