"""``qwen25_coder`` on vLLM's Qwen2.5-Coder tool template
(``vllm-upstream/tool_chat_template_qwen2_5_coder.jinja``): hermes' call objects in ``<tools>``
tags, which no other format reads."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "vllm-upstream/tool_chat_template_qwen2_5_coder.jinja"
_END = "<|im_end|>\n"
_W = '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tools>\n'
_Z = '<tools>\n{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}\n</tools>\n'
CASES = {
    "one": Case(_T, _W + _END, _END, ONE),
    "two": Case(_T, _W + _Z + _END, _END, TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("qwen25_coder", CASES[name])


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    case = CASES["two"]
    text = FORMATS["qwen25_coder"].render_calls(TWO)
    assert takes("qwen25_coder", case, text)
    assert [(c.name, c.arguments) for c in parse("qwen25_coder", case, text).calls] == TWO


def test_only_its_own_tags() -> None:
    case = CASES["one"]
    # the same object in Qwen's <tool_call> tags is hermes'; hermes takes <tools> too, as the
    # habit Qwen2.5-Coder shows where a call is forced (hermes.py), but qwen25_coder no tags
    hermes = case.reply.replace("<tools>", "<tool_call>").replace("</tools>", "</tool_call>")
    assert not takes("qwen25_coder", case, hermes) and takes("hermes", case, hermes)
    assert takes("hermes", case, case.reply)
    assert parse("qwen25_coder", case, hermes).calls == ()
    # prose before the calls under auto only
    reply = "Let me check.\n" + case.reply
    assert takes("qwen25_coder", case, reply, "auto") and not takes("qwen25_coder", case, reply)
    assert parse("qwen25_coder", case, reply).content == "Let me check."


def test_malformed_block_stays_in_content() -> None:
    reply = CASES["one"].reply.strip()
    check_stays_in_content(
        "qwen25_coder",
        CASES["one"],
        (
            reply.replace('"arguments": {', '"arguments": [', 1),  # not JSON
            reply.replace('"name"', '"tool"', 1),  # no name
            reply[: reply.index('"days"')],  # cut off
        ),
    )
