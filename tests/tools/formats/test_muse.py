"""``muse_glimmer`` on muse-glimmer.jinja's renders (llama.cpp's and vLLM's copies)."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import FORMAT_OF, RENDERED, cases_for


@pytest.mark.parametrize("key", cases_for("muse_glimmer"), ids="-".join)
def test_muse_glimmer_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("muse_glimmer"), ids="-".join)
def test_muse_glimmer_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "muse_glimmer"))
def test_muse_glimmer_truncated(template: str) -> None:
    check_truncated(template)


def test_header_and_invoke_must_name_the_same_tool() -> None:
    text = (
        " to=set_opts<|message|><atem:function_calls>\n"
        '<atem:invoke name="get_weather">\n<atem:parameter name="city">Paris</atem:parameter>\n'
        "</atem:invoke>\n</atem:function_calls>"
    )
    turn = turn_for("muse_glimmer", "auto", "")
    assert not takes(turn, text)
    parsed = turn.parse(text)
    assert parsed.calls == () and parsed.malformed


def test_answer_and_preamble() -> None:
    """An answer ends the turn; a message to the user may precede calls (``end_turn`` false)."""
    auto = turn_for("muse_glimmer", "auto", "")
    assert takes(auto, " to=user<|message|>It is sunny.")
    assert auto.parse(" to=user<|message|>It is sunny.<|eot|>").content == "It is sunny."
    call = RENDERED["llama.cpp/muse-glimmer.jinja", "one"][1]
    preamble = " to=user<|message|>Checking.<|eom|><|start|>assistant"
    assert takes(auto, preamble + call)
    assert not takes(turn_for("muse_glimmer", "required", ""), preamble + call)
    parsed = auto.parse(preamble + call)
    assert parsed.content == "Checking." and [c.name for c in parsed.calls] == ["get_weather"]
