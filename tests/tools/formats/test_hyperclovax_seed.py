"""``hyperclovax_seed`` on vLLM's HyperCLOVA X SEED Think template
(``vllm-upstream/tool_chat_template_hyperclovax_seed_think_14b.jinja``): the reply continues
``<|im_start|>assistant`` with the kind of its first message; calls are a JSON list in the
`` -> tool/function_call`` message."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "vllm-upstream/tool_chat_template_hyperclovax_seed_think_14b.jinja"
_END = "<|stop|>\n"
_HEAD = " -> tool/function_call\n"
_W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
CASES = {
    "one": Case(_T, f"{_HEAD}[{_W}]<|im_end|>{_END}", _END, ONE),
    "two": Case(_T, f"{_HEAD}[{_W}, {_Z}]<|im_end|>{_END}", _END, TWO),
}
#: the template's render of a message with reasoning_content "THINK", content "Let me check."
#: and the call (the reasoning shows when the message follows the last user message)
_FULL = (
    "/think\nTHINK<|im_end|>\n<|im_start|>assistant\nLet me check.<|im_end|>\n"
    f"<|im_start|>assistant{_HEAD}[{_W}]<|im_end|>"
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("hyperclovax_seed", CASES[name])


def test_reasoning_and_text_before_the_calls() -> None:
    case = CASES["one"]
    assert takes("hyperclovax_seed", case, _FULL, "auto")
    assert not takes("hyperclovax_seed", case, _FULL)  # text before calls under auto only
    got = parse("hyperclovax_seed", case, _FULL)
    assert [(c.name, c.arguments) for c in got.calls] == ONE
    assert (got.reasoning, got.content, got.malformed) == ("THINK", "Let me check.", ())
    calls_only = _FULL.replace("\nLet me check.<|im_end|>\n<|im_start|>assistant", "")
    assert takes("hyperclovax_seed", case, calls_only)
    assert parse("hyperclovax_seed", case, calls_only).reasoning == "THINK"


def test_a_text_reply() -> None:
    """A text message (the engine stops at ``<|endofturn|>``): its text, without markers."""
    case = CASES["one"]
    text = "\nIt is sunny.<|im_end|>"
    assert takes("hyperclovax_seed", case, text, "auto")
    assert takes("hyperclovax_seed", case, text, "none")
    assert not takes("hyperclovax_seed", case, text)
    got = parse("hyperclovax_seed", case, text)
    assert (got.calls, got.content) == ((), "It is sunny.")


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    case = CASES["two"]
    text = FORMATS["hyperclovax_seed"].render_calls(TWO)
    assert takes("hyperclovax_seed", case, text)
    assert [(c.name, c.arguments) for c in parse("hyperclovax_seed", case, text).calls] == TWO


def test_malformed_block_stays_in_content() -> None:
    reply = CASES["one"].reply
    check_stays_in_content(
        "hyperclovax_seed",
        CASES["one"],
        (
            reply.replace("[", "", 1),  # no list
            f"{_HEAD}[]<|im_end|>",  # an empty list
            reply[: reply.index('"days"')],  # cut off
        ),
    )
