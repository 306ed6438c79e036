"""``lfm2`` on LFM2.5-8B-A1B.jinja's renders; ``llama3_pythonic`` and ``gemma3_pythonic`` on
what the models write, beside the vLLM templates' buggy renders."""

from __future__ import annotations

import pytest

from .checks import check_prefixes, check_rendered, check_truncated, streamed, takes, turn_for
from .xml_rendered import CALLS, FORMAT_OF, cases_for


@pytest.mark.parametrize("key", cases_for("lfm2"), ids="-".join)
def test_lfm2_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("lfm2"), ids="-".join)
def test_lfm2_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


@pytest.mark.parametrize("template", sorted(t for t, f in FORMAT_OF.items() if f == "lfm2"))
def test_lfm2_truncated(template: str) -> None:
    check_truncated(template)


# vllm/tool_chat_template_llama3.2_pythonic.jinja and vllm/tool_chat_template_toolace.jinja write
# string values unquoted (``"%s" | format(value)``), which is not Python: Meta's documentation of
# Llama 3.2's pythonic calls quotes them. The renders are refused; the documented form is taken.
LLAMA32_RENDERED = {
    "one": "[get_weather(city=Paris, days=3)]",
    "two": "[get_weather(city=Paris, days=3), get_weather(city=Rome)]",
    "types": "[set_opts(flag=True, tags=['a', 'b c'], cfg={'a': 1, 'b': 'x y'}, ratio=0.5)]",
}
LLAMA32_NATIVE = {
    "one": '[get_weather(city="Paris", days=3)]',
    "two": "[get_weather(city='Paris', days=3), get_weather(city='Rome')]",
    "types": LLAMA32_RENDERED["types"],  # no string at the top level: the render is Python
}
# vllm/tool_chat_template_gemma3_pythonic.jinja drops the ", " between arguments (a ``set``
# inside a loop does not outlive the iteration in Jinja) and writes values with ``tojson``
# (``true``); Google's guide asks for a Python list of calls
GEMMA3_RENDERED = {
    "one": '[get_weather(city="Paris"days=3)]',
    "two": '[get_weather(city="Paris"days=3), get_weather(city="Rome")]',
    "types": '[set_opts(flag=truetags=["a", "b c"]cfg={"a": 1, "b": "x y"}ratio=0.5)]',
}
GEMMA3_NATIVE = {
    "one": '[get_weather(city="Paris", days=3)]',
    "two": '[get_weather(city="Paris", days=3), get_weather(city="Rome")]',
    "types": '[set_opts(flag=True, tags=["a", "b c"], cfg={"a": 1, "b": "x y"}, ratio=0.5)]',
}
CASES = [
    ("llama3_pythonic", LLAMA32_RENDERED, LLAMA32_NATIVE),
    ("gemma3_pythonic", GEMMA3_RENDERED, GEMMA3_NATIVE),
]


@pytest.mark.parametrize("case", ["one", "two", "types"])
@pytest.mark.parametrize(("fmt", "rendered", "native"), CASES, ids=["llama3", "gemma3"])
def test_buggy_vllm_renders_refused_native_calls_taken(
    fmt: str, rendered: dict[str, str], native: dict[str, str], case: str
) -> None:
    for mode in ("required", "auto"):
        turn = turn_for(fmt, mode, "")
        assert takes(turn, native[case])
        if rendered[case] != native[case]:
            assert not takes(turn, rendered[case])
    parsed = turn_for(fmt, "auto", "").parse(native[case])
    assert [(c.name, c.arguments) for c in parsed.calls] == CALLS[case]
    assert parsed.content == "" and not parsed.malformed
    assert streamed(turn_for(fmt, "auto", ""), native[case])[0] == parsed


def test_gemma3_tool_code_fence() -> None:
    """Google's function-calling guide also has the model wrap its calls in a tool_code fence."""
    text = '```tool_code\n[get_weather(city="Paris", days=3)]\n```'
    turn = turn_for("gemma3_pythonic", "required", "")
    assert takes(turn, text) and takes(turn_for("gemma3_pythonic", "auto", ""), "Sure.\n" + text)
    assert [c.name for c in turn.parse(text).calls] == ["get_weather"]
    # a bare list after prose is prose: the grammar takes it as text, the parser reads no call
    auto = turn_for("gemma3_pythonic", "auto", "")
    prose = 'Sure. [get_weather(city="Paris")]'
    assert takes(auto, prose) and auto.parse(prose).calls == ()


def test_llama3_python_tag() -> None:
    text = '<|python_tag|>[get_weather(city="Paris")]'
    turn = turn_for("llama3_pythonic", "required", "")
    special = frozenset({"<|python_tag|>"})
    special_turn = turn_for("llama3_pythonic", "required", "", special_tokens=special)
    assert takes(turn, text) and takes(special_turn, text, special)
    assert [c.arguments for c in turn.parse(text).calls] == [{"city": "Paris"}]


def test_lfm2_writes_either_quote_and_json_objects() -> None:
    """LFM2.5's template single-quotes strings and writes objects with ``tojson``; Liquid's
    documentation shows double quotes: both are Python."""
    turn = turn_for("lfm2", "required", "")
    for text in (
        '<|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>',
        "<|tool_call_start|>[set_opts(cfg={'a': 1}, flag=False)]<|tool_call_end|>",
    ):
        assert takes(turn, text), text
        assert turn.parse(text).calls
    assert not takes(turn, "<|tool_call_start|>[set_opts(flag=true)]<|tool_call_end|>")
