"""``command_r7b`` / ``cohere2`` / ``command_r_plus`` on llama.cpp's
``CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja``, ``Cohere2MoE.jinja`` and
``CohereForAI-c4ai-command-r-plus-tool_use.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS, ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, parse, takes

_W = '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
_Z = '{"tool_call_id": "1", "tool_name": "get_time", "parameters": {"zone": "Europe/Paris"}}'
_ONE = f"<|START_ACTION|>[\n    {_W}\n]<|END_ACTION|>"
_TWO = f"<|START_ACTION|>[\n    {_W},\n    {_Z}\n]<|END_ACTION|>"
_R7B = "llama.cpp/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"
_MOE = "llama.cpp/Cohere2MoE.jinja"
_RP = "llama.cpp/CohereForAI-c4ai-command-r-plus-tool_use.jinja"
_EOT = "<|END_OF_TURN_TOKEN|>"
_S = frozenset({"<|START_ACTION|>", "<|END_ACTION|>"})
_RP_ONE = (
    '\nAction:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": '
    '{\n            "city": "Paris",\n            "days": 3\n        }\n    }\n]```\n'
)
_RP_TWO = (
    '\nAction:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": '
    '{\n            "city": "Paris",\n            "days": 3\n        }\n    },\n    {\n        '
    '"tool_name": "get_time",\n        "parameters": {\n            "zone": "Europe/Paris"\n'
    "        }\n    }\n]```\n"
)
CASES = {
    # R7B's prompt prefills "<|START_THINKING|><|END_THINKING|>" unless thinking is on
    "command_r7b-one": Case(_R7B, _ONE + _EOT, _EOT, ONE, ids=("0",), special=_S),
    "command_r7b-two": Case(_R7B, _TWO + _EOT, _EOT, TWO, ids=("0", "1")),
    "cohere2-one": Case(_MOE, _ONE + _EOT, _EOT, ONE, ids=("0",)),
    "cohere2-two": Case(_MOE, _TWO + _EOT, _EOT, TWO, ids=("0", "1"), special=_S),
    # Cohere2's generation prompt ends with "<|START_THINKING|>" when reasoning is on
    "cohere2-thinking": Case(
        _MOE, "I will check.<|END_THINKING|>" + _TWO, "", TWO, ids=("0", "1"), reasoning_open=True
    ),
    # R+'s template writes content (here "") + "\nAction:..." and no end-of-turn token after it
    "command_r_plus-one": Case(_RP, _RP_ONE, "", ONE),
    "command_r_plus-two": Case(_RP, _RP_TWO, "", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case(name.split("-")[0], CASES[name])


@pytest.mark.parametrize(
    ("fmt", "prose"),
    [
        ("command_r7b", "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|>"),
        ("cohere2", "<|START_TEXT|>It is sunny.<|END_TEXT|>"),
    ],
)
def test_prose_is_a_message(fmt: str, prose: str) -> None:
    case = CASES[f"{fmt}-one"]
    plan = "<|START_THINKING|>No tool needed.<|END_THINKING|>"
    for choice in ("auto", "none"):
        assert takes(fmt, case, prose, choice) and takes(fmt, case, plan + prose, choice)
    assert not takes(fmt, case, prose, "required")
    assert not takes(fmt, case, "It is sunny.", "auto")  # prose outside its message
    got = parse(fmt, case, plan + prose)
    assert got.content == "It is sunny." and got.reasoning == "No tool needed."
    # a response and then an action, under auto
    assert takes(fmt, case, prose + case.reply, "auto")
    both = parse(fmt, case, prose + case.reply)
    assert both.content == "It is sunny." and len(both.calls) == 1
    # cut off before its end marker, the message is still the content
    cut = prose[: prose.index("sunny")]
    assert parse(fmt, case, cut).content == "It is "


def test_the_plan_before_the_action() -> None:
    case = CASES["command_r7b-two"]
    reply = "<|START_THINKING|>I will look up both.<|END_THINKING|>" + _TWO
    assert takes("command_r7b", case, reply)
    got = parse("command_r7b", case, reply)
    assert got.reasoning == "I will look up both." and [c.id for c in got.calls] == ["0", "1"]
    assert FORMATS["cohere2"].prompt_opens_reasoning("<|CHATBOT_TOKEN|><|START_THINKING|>")
    assert not FORMATS["cohere2"].prompt_opens_reasoning(
        "<|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>"
    )


def test_ids_are_the_templates_counter() -> None:
    case = CASES["command_r7b-one"]
    assert takes("command_r7b", case, _ONE.replace('"0"', '"17"'))
    assert not takes("command_r7b", case, _ONE.replace('"0"', '"call_0"'))
    assert not takes("command_r7b", case, _ONE.replace('"tool_call_id": "0", ', ""))
    # ids the model repeats are not returned twice
    got = ToolTurn(TOOLS, "command_r7b").parse(_TWO.replace('"1"', '"0"'))
    ids = [c.id for c in got.calls]
    assert ids[0] == "0" and ids[1] != "0"
