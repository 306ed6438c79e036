"""``toolmask serve`` on the default model (Qwen2.5-Coder-0.5B-Instruct, a tool-trained model):
under ``tool_choice="auto"`` the model writes its call its own way, a fenced JSON block, and the
official ``openai`` client gets ``tool_calls``, streamed or not; a question no tool answers gets
prose. Before hermes knew the fence (issue 35), no call was ever made under ``auto``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.test_server import _get, serve_process
from toolmask.models import DEFAULT_MODEL, ModelError, resolve_model

pytestmark = pytest.mark.model

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("llama_cpp")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        resolve_model(DEFAULT_MODEL, fetch=False)
    except ModelError as e:
        pytest.skip(f"{e} (make venv pulls it)")
    with serve_process(["--threads", "1"], tmp_path_factory.mktemp("server")) as base:
        models = _get(base + "/v1/models")
        assert next(m["id"] for m in models["data"]) == DEFAULT_MODEL
        c = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=300)
        yield c
        c.close()


def _ask(client: Any, text: str, **kw: Any) -> Any:
    return client.chat.completions.create(
        model=DEFAULT_MODEL,
        messages=[{"role": "user", "content": text}],
        tools=[WEATHER],
        temperature=0,
        **kw,
    )


def test_auto_the_models_own_fenced_call_is_a_tool_call(client: Any) -> None:
    reply = _ask(client, "What's the weather in Paris right now?")
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", choice.message.content
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"].startswith("Paris")
    assert not choice.message.content


def test_auto_streamed_the_same_call_arrives_as_deltas(client: Any) -> None:
    stream = _ask(client, "What's the weather in Paris right now?", stream=True)
    name, args, finish = "", "", None
    for chunk in stream:
        delta = chunk.choices[0].delta
        for tc in delta.tool_calls or []:
            name += tc.function.name or ""
            args += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert (name, finish) == ("get_weather", "tool_calls")
    assert json.loads(args)["city"].startswith("Paris")


def test_auto_a_question_no_tool_answers_gets_prose(client: Any) -> None:
    reply = _ask(client, "Write one short sentence about the sea.", max_tokens=60)
    choice = reply.choices[0]
    assert not choice.message.tool_calls and choice.message.content
