"""Reasoning through the app: a Qwen3 reply (``<think>`` prefilled by the template) and a
Harmony reply (gpt-oss: analysis channel, then a call message) come back with
``reasoning_content`` and ``tool_calls`` split, streamed and not; the thinking switch
(``chat_template_kwargs``, ``reasoning_effort``) reaches the chat template and the grammar.

The backend is scripted (no Qwen3 or gpt-oss model is at hand offline): it checks that every
byte of its reply is accepted by the plan's compiled grammar, so the reply is one the masked
decoder could have produced, then emits it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

import toolmask as tm

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from toolmask.agent import Message
from toolmask.backends import Generation, OnToken
from toolmask.server._app import create_app
from toolmask.tools import ToolTurn

from ..vendored import chat_template

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
QWEN_REPLY = (
    "The user wants the weather in Paris.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)
GEMMA_REPLY = (
    "<|channel>thought\nThe user wants Paris.\n<channel|>"
    '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
)
KIMI_K3_REPLY = (
    "<|open|>think<|sep|>Look up Paris.<|close|>think<|sep|><|open|>response<|sep|>"
    '<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
)
HARMONY_REPLY = (
    "<|channel|>analysis<|message|>Need live weather for Paris.<|end|><|start|>assistant"
    ' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Paris"}'
)


class Scripted:
    """Replies ``reply`` in chunks of 5 bytes after checking it against the grammar."""

    def __init__(self, reply: str) -> None:
        tokens: list[bytes | None] = [bytes([b]) for b in range(256)] + [None]
        self.vocab = tm.Vocabulary.from_token_bytes(
            tokens, eos_ids=[256], special_texts={256: "<|im_end|>"}
        )
        self.n_ctx = 4096
        self.metadata: dict[str, Any] = {}
        self.reply = reply.encode()
        self.accepted: list[bool] = []

    def tokenize(self, text: str) -> list[int]:
        return list(text.encode()[:100])

    def generate(
        self,
        prompt: list[int],
        compiled: Any,
        *,
        max_tokens: int = 256,
        sampling: Any = None,
        decoding: Any = None,
        on_token: OnToken | None = None,
        opening: Any = None,
    ) -> Generation:
        m = compiled.matcher()
        self.accepted.append(m.accept_bytes(self.reply) and m.is_accepting())
        ids = list(self.reply)
        if on_token is not None:
            for i in range(0, len(self.reply), 5):
                on_token(ids[i : i + 5], self.reply[i : i + 5])
        return Generation(ids, self.reply, "stop", len(prompt), 0)


class Template:
    """ChatML whose generation prompt opens ``<think>`` unless ``enable_thinking`` is false;
    records the keyword arguments it was given."""

    def __init__(self) -> None:
        self.kwargs: list[dict[str, Any]] = []

    def __call__(self, messages: Sequence[Message], turn: ToolTurn, **kwargs: Any) -> str:
        self.kwargs.append(kwargs)
        text = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
        think = "<think>\n" if kwargs.get("enable_thinking", True) else "<think>\n\n</think>\n\n"
        return text + "<|im_start|>assistant\n" + think


def _body(**kw: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [TOOL],
        "tool_choice": "required",
        **kw,
    }


def _stream(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    """The message a client rebuilds from the chunks."""
    reasoning, content, args, names = "", "", "", []
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"]
            reasoning += delta.get("reasoning_content") or ""
            content += delta.get("content") or ""
            for c in delta.get("tool_calls") or ():
                if c["function"].get("name"):
                    names.append(c["function"]["name"])
                args += c["function"].get("arguments") or ""
    return {"reasoning": reasoning, "content": content, "names": names, "args": args}


@pytest.mark.parametrize(
    ("fmt", "reply", "thought"),
    [
        ("qwen3", QWEN_REPLY, "The user wants the weather in Paris."),
        ("gpt_oss", HARMONY_REPLY, "Need live weather for Paris."),
        ("gemma4", GEMMA_REPLY, "The user wants Paris."),
        ("kimi_k3", KIMI_K3_REPLY, "Look up Paris."),
    ],
)
def test_reasoning_and_calls_come_back_split(fmt: str, reply: str, thought: str) -> None:
    backend = Scripted(reply)
    app = create_app(backend, model_name="m", fmt=fmt, template=Template())
    with TestClient(app) as client:
        r = client.post("/v1/chat/completions", json=_body())
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        streamed = _stream(client, _body())
    assert backend.accepted == [True, True], "the reply must be one the grammar admits"
    msg = choice["message"]
    assert choice["finish_reason"] == "tool_calls"
    assert msg["reasoning_content"] == thought
    assert msg["content"] is None
    (call,) = msg["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert streamed["reasoning"] == thought and streamed["content"] == ""
    assert streamed["names"] == ["get_weather"]
    assert json.loads(streamed["args"]) == {"city": "Paris"}


def test_the_thinking_switch_reaches_the_template_and_the_grammar() -> None:
    reply = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    backend = Scripted(reply)
    template = Template()
    app = create_app(backend, model_name="m", fmt="qwen3", template=template)
    body = _body(chat_template_kwargs={"enable_thinking": False}, reasoning_effort="low")
    with TestClient(app) as client:
        r = client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        plans = app.state.plans
        bad = client.post("/v1/chat/completions", json=_body(reasoning_effort="lots"))
    assert template.kwargs[-1] == {"enable_thinking": False, "reasoning_effort": "low"}
    assert backend.accepted == [True]
    msg = r.json()["choices"][0]["message"]
    assert "reasoning_content" not in msg and msg["tool_calls"]
    # thinking off: the grammar has no reasoning channel, so <think> is refused
    from toolmask.server._protocol import parse_chat_request

    plan = plans.get(parse_chat_request(body))
    assert plan.turn is not None and not plan.turn.reasoning
    assert not plan.compiled.matcher().accept_bytes(b"<think>")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "reasoning_effort"


def test_the_reasoning_budget_closes_the_channel() -> None:
    """A request's ``reasoning_budget`` (and the server default) bounds the reasoning of a
    model that would think forever; the call follows."""
    from tests.decoding.thinker import Thinker
    from toolmask.server._defaults import ServerDefaults

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    specials = ["<think>", "</think>"]

    def backend() -> Thinker:
        return Thinker(opener="<think>", close="</think>", after="\n\n" + call, specials=specials)

    app = create_app(backend(), model_name="m", fmt="qwen3", template=Template())
    with TestClient(app) as client:
        r = client.post("/v1/chat/completions", json=_body(reasoning_budget=4))
        streamed = _stream(client, _body(reasoning_budget=4))
        bad = client.post("/v1/chat/completions", json=_body(reasoning_budget=-1))
    msg = r.json()["choices"][0]["message"]
    assert msg["reasoning_content"] == "hm h"  # 4 tokens after the prompt's <think>
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert streamed["reasoning"] == msg["reasoning_content"] and streamed["names"]
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "reasoning_budget"

    defaults = ServerDefaults(reasoning_budget=2)
    app = create_app(backend(), model_name="m", fmt="qwen3", template=Template(), defaults=defaults)
    with TestClient(app) as client:
        r = client.post("/v1/chat/completions", json=_body())
        health = client.get("/health").json()
    assert r.json()["choices"][0]["message"]["reasoning_content"] == "hm"
    assert health["defaults"]["reasoning_budget"] == 2


def test_the_format_is_read_from_the_model() -> None:
    """``create_app``'s default ``fmt="auto"``: the format proven on the backend's chat
    template (Gemma 4's own)."""
    backend = Scripted(GEMMA_REPLY)
    gemma = chat_template("llama.cpp/google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")
    backend.chat_template = gemma  # type: ignore[attr-defined]
    app = create_app(backend, model_name="m", template=Template())
    assert app.state.plans.fmt == "gemma4"
    with TestClient(app) as client:
        r = client.post("/v1/chat/completions", json=_body())
    assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
