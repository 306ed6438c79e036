"""Chat templates: a model's own Jinja template renders the transcript the agent decodes after."""

from __future__ import annotations

from typing import Any

import pytest

from toolmask.agent import (
    Agent,
    ChatTemplate,
    ChatTemplateError,
    Message,
    default_template,
    render_chatml,
)
from toolmask.tools import ToolCall, ToolTurn
from toolmask.vocab import Vocabulary

# plain ChatML that knows no tools (the shape of SmolLM2's template)
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# a template that advertises tools itself and wraps tool results (the shape of Qwen's)
TOOL_AWARE = """{{ bos_token }}{% if tools %}<|im_start|>system
{{ messages[0]['content'] }}
# Tools
{% for t in tools %}{{ t['function'] | tojson }}
{% endfor %}<|im_end|>
{% endif %}{% for m in messages %}{% if m['role'] == 'tool' %}<|im_start|>user
<tool_response>
{{ m['content'] }}
</tool_response><|im_end|>
{% elif not (tools and loop.first) %}<|im_start|>{{ m['role'] }}
{{ m['content'] }}<|im_end|>
{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


def _transcript() -> list[Message]:
    call = ToolCall(id="call_1", name="weather", arguments={"city": "Zürich"})
    return [
        Message("system", "Be brief."),
        Message("user", "Weather in Zürich?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"sky": "clear"}', tool_call_id="call_1", name="weather"),
        Message("assistant", "Clear.", raw="Clear."),
        Message("user", "Thanks"),
    ]


def test_chatml_template_renders_exactly_like_render_chatml() -> None:
    turn = ToolTurn([weather])
    t = ChatTemplate(CHATML)
    assert not t.knows_tools
    msgs = _transcript()
    assert t.render(msgs, turn) == render_chatml(msgs, turn)
    assert '<tool_call>\n{"name": "weather", "arguments": {"city": "Zürich"}}\n</tool_call>' in (
        t.render(msgs, turn)
    )


def test_longer_transcript_extends_the_prompt_byte_for_byte() -> None:
    turn = ToolTurn([weather])
    t = ChatTemplate(CHATML)
    msgs = _transcript()
    for k in range(1, len(msgs)):
        if msgs[k].role == "assistant":  # the prompt of that turn ends in the open header
            assert t.render(msgs[: k + 1], turn).startswith(t.render(msgs[:k], turn))


def test_tool_aware_template_gets_the_tools_and_wraps_results() -> None:
    turn = ToolTurn([weather])
    t = ChatTemplate(TOOL_AWARE, bos_token="<s>")
    assert t.knows_tools
    text = t.render(_transcript(), turn)
    assert text.startswith("<s><|im_start|>system\nBe brief.\n# Tools\n")
    assert '"name": "weather"' in text and "Zürich" in text  # tojson keeps non-ASCII
    assert '<tool_response>\n{"sky": "clear"}\n</tool_response>' in text
    assert text.count("<tool_response>") == 1  # wrapped by the template, not twice


class _Backend:
    def __init__(self, template: str | None) -> None:
        self.vocab = Vocabulary.from_token_bytes([bytes([i]) for i in range(256)])
        self.chat_template = template
        self.bos_text = "<s>"

    def tokenize(self, text: str) -> list[int]:  # pragma: no cover - not decoded here
        return list(text.encode())

    def generate(self, *a: Any, **k: Any) -> Any:  # pragma: no cover - not decoded here
        raise AssertionError


def test_agent_uses_the_backends_template_and_leaves_tools_to_it() -> None:
    plain = Agent(_Backend(None), [weather], fmt="hermes")
    assert plain.template is render_chatml
    assert "<tools>" in plain.system  # the format's own tool prompt
    aware = Agent(_Backend(TOOL_AWARE), [weather], fmt="hermes")
    assert isinstance(aware.template, ChatTemplate) and aware.template.bos_token == "<s>"
    assert "<tools>" not in aware.system  # the template advertises them
    chatml = Agent(_Backend(CHATML), [weather], fmt="hermes")
    assert "<tools>" in chatml.system
    assert isinstance(default_template(_Backend(CHATML)), ChatTemplate)


def test_template_errors_are_clear() -> None:
    with pytest.raises(ChatTemplateError, match="does not compile"):
        ChatTemplate("{% for m in messages %}")
    strict = ChatTemplate(
        "{% for m in messages %}{% if m['role'] == 'tool' %}"
        "{{ raise_exception('no tool role') }}{% endif %}{% endfor %}"
    )
    with pytest.raises(ChatTemplateError, match="no tool role"):
        strict.render(_transcript(), ToolTurn([weather]))
    sandboxed = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(ChatTemplateError):
        sandboxed.render(_transcript())


@pytest.mark.model
def test_smollm2_gguf_template_renders_like_chatml() -> None:
    pytest.importorskip("llama_cpp")
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.errors import ToolmaskError
    from toolmask.models import TEST_MODEL, resolve_model

    try:
        backend = LlamaCpp(resolve_model(TEST_MODEL), n_ctx=512)
    except ToolmaskError as e:  # pragma: no cover - only without the default model
        pytest.skip(str(e))
    assert backend.chat_template and "im_start" in backend.chat_template
    turn = ToolTurn([weather])
    t = default_template(backend)
    assert isinstance(t, ChatTemplate) and not t.knows_tools
    assert t(_transcript(), turn) == render_chatml(_transcript(), turn)


def test_template_keyword_arguments_reach_the_template() -> None:
    src = (
        "{% for m in messages %}{{ m.content }}{% endfor %}"
        "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}"
    )
    t = ChatTemplate(src)
    msgs = [Message("user", "hi")]
    assert t(msgs, ToolTurn([])) == "hi"
    assert t(msgs, ToolTurn([]), enable_thinking=False) == "hi<think></think>"
