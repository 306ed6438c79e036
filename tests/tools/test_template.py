"""The chat-template renderer: transformers' rendering rules, and templates read from a Jinja
file, a GGUF's metadata and a Hugging Face folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmask.errors import ChatTemplateError, ToolmaskError
from toolmask.tools import TemplateRenderer, TemplateSource, load_chat_template

from .test_probe import TEMPLATES

USER = {"role": "user", "content": "héllo"}


def render(text: str, **kw: object) -> str:
    return TemplateRenderer(text).render([USER], **kw)  # type: ignore[arg-type]


def test_trim_and_lstrip_blocks_as_transformers() -> None:
    text = "{% for m in messages %}\n    {{ m.content }}\n{% endfor %}\n"
    assert render(text) == "    héllo\n"  # the block lines vanish, the indentation of output stays


def test_tojson_keeps_unicode_and_takes_transformers_arguments() -> None:
    assert render("{{ messages[0] | tojson }}") == '{"role": "user", "content": "héllo"}'
    assert render("{{ messages[0] | tojson(ensure_ascii=True) }}") == json.dumps(USER)
    out = render("{{ {'b': 1, 'a': [1, 2]} | tojson(indent=2, sort_keys=True) }}")
    assert out == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}'
    out = render("{{ {'a': 1} | tojson(separators=(',', ':')) }}")
    assert out == '{"a":1}'


def test_tojson_reads_a_map_generator_as_a_list_as_minja_does() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    out = render("{{ tools | map(attribute='function') | tojson }}", tools=tools)
    assert out == '[{"name": "f"}]'


def test_generation_tag_renders_its_body() -> None:
    text = "{% for m in messages %}{% generation %}<{{ m.content }}>{% endgeneration %}{% endfor %}"
    assert render(text) == "<héllo>"


def test_loop_controls_and_globals() -> None:
    text = "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    assert render(text) == "012"
    assert (
        render(
            "{{ bos_token }}x",
        )
        == "x"
    )
    assert len(render("{{ strftime_now('%Y') }}")) == 4
    with pytest.raises(ChatTemplateError, match="refused the conversation: no"):
        render("{{ raise_exception('no') }}")


def test_special_tokens_and_extra_variables_reach_the_template() -> None:
    source = TemplateSource("{{ bos_token }}{{ flag }}{{ eos_token }}", bos_token="<s>",
                            eos_token="</s>")  # fmt: skip
    assert TemplateRenderer(source).render([], flag="!") == "<s>!</s>"


def test_tools_are_left_out_of_the_context_when_none() -> None:
    assert render("{{ tools is defined }}") == "False"
    assert render("{{ tools is defined }}", tools=[]) == "True"


def test_list_append_needs_the_mutable_fallback() -> None:
    text = (
        "{% set xs = [] %}{% for m in messages %}{{ xs.append(m.role) or '' }}{% endfor %}{{ xs }}"
    )
    r = TemplateRenderer(text)
    assert r.render([USER]) == "['user']"
    assert r.mutated


def test_the_sandbox_still_refuses_unsafe_access() -> None:
    r = TemplateRenderer("{{ messages.__class__.__mro__ }}")
    with pytest.raises(ChatTemplateError):
        r.render([USER])


def test_errors_name_the_template() -> None:
    with pytest.raises(ChatTemplateError, match="does not compile"):
        TemplateRenderer(TemplateSource("{% if %}", origin="/x/bad.jinja"))
    with pytest.raises(ChatTemplateError, match=r"bad\.jinja: the chat template failed"):
        TemplateRenderer(TemplateSource("{{ 1 / 0 }}", origin="/x/bad.jinja")).render([])


# -- where templates come from --------------------------------------------------------------------
def test_a_jinja_file(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text("{{ messages[0].content }}", encoding="utf-8")
    source = load_chat_template(tmp_path / "t.jinja")
    assert source.text == "{{ messages[0].content }}" and source.name == "t.jinja"


def test_a_hugging_face_folder(tmp_path: Path) -> None:
    config = {
        "bos_token": {"content": "<s>", "special": True},
        "eos_token": "</s>",
        "chat_template": [
            {"name": "default", "template": "plain"},
            {"name": "tool_use", "template": "with tools"},
        ],
        "added_tokens_decoder": {
            "0": {"content": "<s>", "special": True},
            "5": {"content": "<tool_call>", "special": True},
            "9": {"content": "word", "special": False},
        },
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    source = load_chat_template(tmp_path)
    assert (source.text, source.bos_token, source.eos_token) == ("with tools", "<s>", "</s>")
    assert source.special_tokens == ("<s>", "<tool_call>")
    # chat_template.jinja wins over the config's template (transformers' order)
    (tmp_path / "chat_template.jinja").write_text("from the file", encoding="utf-8")
    assert load_chat_template(tmp_path).text == "from the file"


def test_a_folder_without_a_template(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    assert load_chat_template(tmp_path).text == ""


def test_a_gguf(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["<s>", "</s>", "hi", "<tool_call>"])
    w.add_token_types([3, 3, 1, 3])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_chat_template(TEMPLATES["hermes"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    source = load_chat_template(path)
    assert source.text == TEMPLATES["hermes"]
    assert (source.bos_token, source.eos_token) == ("<s>", "</s>")
    assert source.special_tokens == ("</s>", "<s>", "<tool_call>")


def test_a_missing_path() -> None:
    with pytest.raises(ToolmaskError, match="no such file"):
        load_chat_template("/nonexistent/template.jinja")
