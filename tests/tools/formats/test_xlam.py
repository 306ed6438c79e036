"""``xlam`` on vLLM's ``tool_chat_template_xlam_llama.jinja`` and ``_xlam_qwen.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, takes

_ONE = '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
_TWO = (
    '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
    '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]'
)
_L, _Q = "vllm/tool_chat_template_xlam_llama.jinja", "vllm/tool_chat_template_xlam_qwen.jinja"
CASES = {
    "llama-one": Case(_L, _ONE + "<|eot_id|>", "<|eot_id|>", ONE),
    "llama-two": Case(_L, _TWO + "<|eot_id|>", "<|eot_id|>", TWO),
    "qwen-one": Case(_Q, _ONE + "<|im_end|>\n", "<|im_end|>\n", ONE),
    "qwen-two": Case(_Q, _TWO + "<|im_end|>\n", "<|im_end|>\n", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("xlam", CASES[name])


def test_a_list_is_a_call_only_at_the_start_or_fenced() -> None:
    case = CASES["llama-one"]
    turn = ToolTurn(TOOLS, "xlam")
    prose = "Here it is: " + _ONE
    assert turn.parse(prose).calls == () and turn.parse(prose).content == prose
    fenced = "Here it is:\n```json\n" + _ONE + "\n```"
    assert len(turn.parse(fenced).calls) == 1
    assert takes("xlam", case, fenced, "auto")
    assert takes("xlam", case, prose, "auto")  # prose, as the parser reads it
    assert not takes("xlam", case, prose, "required")
    assert not takes("xlam", case, "[Paris] is sunny.", "auto")  # a bare list is a call
    assert takes("xlam", case, "Paris [1] is sunny.", "auto")
