"""``functiongemma``: the documented FunctionGemma calls, beside the buggy renders of
vllm/tool_chat_template_functiongemma.jinja."""

from __future__ import annotations

import pytest

from .checks import streamed, takes, turn_for
from .xml_rendered import CALLS

# What vllm/tool_chat_template_functiongemma.jinja renders: every value, numbers and booleans
# included, inside <escape> with Python's str() (``{{ value }}``)
RENDERED = {
    "one": "<start_function_call>call:get_weather{city:<escape>Paris<escape>,"
    "days:<escape>3<escape>}<end_function_call>",
    "types": "<start_function_call>call:set_opts{flag:<escape>True<escape>,"
    "tags:<escape>['a', 'b c']<escape>,cfg:<escape>{'a': 1, 'b': 'x y'}<escape>,"
    "ratio:<escape>0.5<escape>}<end_function_call>",
}
# FunctionGemma's own output: strings in <escape>, other values bare (Gemma's object notation)
NATIVE = {
    "one": "<start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}"
    "<end_function_call>",
    "two": "<start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}"
    "<end_function_call><start_function_call>call:get_weather{city:<escape>Rome<escape>}"
    "<end_function_call>",
    "types": "<start_function_call>call:set_opts{flag:true,tags:[<escape>a<escape>,"
    "<escape>b c<escape>],cfg:{a:1,b:<escape>x y<escape>},ratio:0.5}<end_function_call>",
}
SPECIAL = frozenset({"<start_function_call>", "<end_function_call>", "<escape>"})


@pytest.mark.parametrize("case", sorted(NATIVE))
def test_native_calls(case: str) -> None:
    text = NATIVE[case]
    for mode in ("required", "auto"):
        assert takes(turn_for("functiongemma", mode, ""), text)
        turn = turn_for("functiongemma", mode, "", special_tokens=SPECIAL)
        assert takes(turn, text, SPECIAL)
    auto = turn_for("functiongemma", "auto", "")
    parsed = auto.parse(text)
    assert [(c.name, c.arguments) for c in parsed.calls] == CALLS[case]
    assert parsed.content == "" and not parsed.malformed
    assert streamed(auto, text)[0] == parsed
    assert not takes(auto, text.replace(CALLS[case][0][0], "no_such_tool"))
    assert takes(turn_for("functiongemma", "required", "", parallel=False), text) == (case != "two")


@pytest.mark.parametrize("case", sorted(RENDERED))
def test_the_vllm_template_quotes_every_value(case: str) -> None:
    """A template bug: an integer or a boolean inside <escape> is a string."""
    assert not takes(turn_for("functiongemma", "auto", ""), RENDERED[case])


def test_truncated_call_stays_in_content() -> None:
    cut = NATIVE["one"][:40]
    parsed = turn_for("functiongemma", "auto", "").parse(cut)
    assert parsed.calls == () and parsed.malformed and parsed.content == cut
