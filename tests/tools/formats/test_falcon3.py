"""``falcon3`` on Falcon 3's chat template (``optimum-intel/tiiuae-Falcon3-7B-Instruct.jinja``):
OpenAI's tool-call objects as an indented JSON list inside ``<tool_call>``."""

from __future__ import annotations

import json

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "optimum-intel/tiiuae-Falcon3-7B-Instruct.jinja"
_END = "<|endoftext|>\n"


def _openai(calls: list[tuple[str, dict[str, object]]]) -> str:
    """The turn as the template writes it: ``message.tool_calls | tojson(indent=2)``."""
    objs = [
        {"id": f"call{i:04d}{'ab'[i]}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(calls)
    ]
    return "\n<tool_call>\n" + json.dumps(objs, indent=2) + "\n</tool_call>" + _END


CASES = {
    "one": Case(_T, _openai(ONE), _END, ONE, ids=("call0000a",)),
    "two": Case(_T, _openai(TWO), _END, TWO, ids=("call0000a", "call0001b")),
}


def test_the_cases_are_the_templates_bytes() -> None:
    one = (
        '\n<tool_call>\n[\n  {\n    "id": "call0000a",\n    "type": "function",\n'
        '    "function": {\n      "name": "get_weather",\n      "arguments": {\n'
        '        "city": "Paris",\n        "days": 3\n      }\n    }\n  }\n]\n</tool_call>'
    )
    assert CASES["one"].turn == one + _END  # copied from a render of the template


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("falcon3", CASES[name])


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    case = CASES["two"]
    text = FORMATS["falcon3"].render_calls(TWO)
    assert takes("falcon3", case, text)
    got = parse("falcon3", case, text)
    assert [(c.name, c.arguments) for c in got.calls] == TWO
    assert [c.id for c in got.calls] == ["call_0", "call_1"]


def test_only_the_templates_layout() -> None:
    case = CASES["one"]
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    obj = {"id": "call0000a", "type": "function", "function": call}
    flat = "<tool_call>\n" + json.dumps([obj]) + "\n</tool_call>"
    assert not takes("falcon3", case, flat)
    assert [c.name for c in parse("falcon3", case, flat).calls] == ["get_weather"]
    # a Hermes call object in the same tags is another format's
    hermes = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert not takes("falcon3", case, hermes)
    got = parse("falcon3", case, hermes)
    assert got.calls == () and got.malformed and got.content == hermes


def test_malformed_block_stays_in_content() -> None:
    case = CASES["one"]
    reply = case.reply.strip()
    check_stays_in_content(
        "falcon3",
        case,
        (
            reply.replace('"function": {', '"function": [', 1),  # not JSON
            reply.replace('"function"', '"fn"', 2),  # no function object
            reply[: reply.index('"name"')],  # cut off
        ),
    )
