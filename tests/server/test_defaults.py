"""Request defaults: the model's recommended sampling, the server's flags, a max_tokens budget.

A request that leaves sampling out gets the GGUF's ``general.sampling.*`` values where present,
else the built-in defaults; ``toolmask serve`` flags override both; the request's own values
override everything. Checked on the resolver and through the app (FastAPI's test client, a
backend that records what it was asked to decode with).
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

import toolmask as tm

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from toolmask.backends import Generation, OnToken
from toolmask.server._app import create_app
from toolmask.server._defaults import BUILTIN, ServerDefaults, gguf_sampling
from toolmask.server.cli import _add_arguments, server_defaults

SPECIALS = ["<|im_start|>", "<|im_end|>"]


class Recorder:
    """Answers "ok" and records the sampling and max_tokens of each generation (and its
    decoding mode and opening)."""

    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        tokens: list[bytes | None] = [bytes([b]) for b in range(256)] + [None, None]
        texts = {256 + i: s for i, s in enumerate(SPECIALS)}
        self.vocab = tm.Vocabulary.from_token_bytes(tokens, eos_ids=[257], special_texts=texts)
        self.n_ctx = 4096
        self.metadata = metadata or {}
        self.calls: list[tuple[Any, int]] = []
        self.decodings: list[Any] = []
        self.openings: list[Any] = []

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
        self.calls.append((sampling, max_tokens))
        self.decodings.append(decoding)
        self.openings.append(opening)
        if on_token is not None:
            on_token([111, 107], b"ok")
        return Generation([111, 107], b"ok", "stop", len(prompt), 0)


def test_gguf_sampling_reads_usable_values_only() -> None:
    meta = {
        "general.sampling.temp": "0.7",
        "general.sampling.top_k": 20,
        "general.sampling.top_p": 1.5,  # out of range: ignored
        "general.sampling.min_p": "nan",
        "general.name": "x",
    }
    assert gguf_sampling(meta) == {"temperature": 0.7, "top_k": 20}
    assert gguf_sampling({"general.sampling.top_k": -1}) == {}


def test_resolve_order_builtin_model_flags() -> None:
    meta = {"general.sampling.temp": 0.6, "general.sampling.top_p": 0.8}
    d = BUILTIN.resolve(meta)
    assert (d.temperature, d.top_p, d.top_k, d.min_p) == (0.6, 0.8, BUILTIN.top_k, BUILTIN.min_p)
    assert "model metadata" in d.source
    d = BUILTIN.resolve(meta, temperature=0.0, top_k=None)
    assert d.temperature == 0.0 and d.top_p == 0.8 and "flags (temperature)" in d.source
    assert BUILTIN.resolve({}) == BUILTIN


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    _add_arguments(p)
    return p.parse_args(list(argv))


def test_serve_flags() -> None:
    d = server_defaults(_args(), {"general.sampling.temp": "0.9"})
    assert d.temperature == 0.9 and d.max_tokens == BUILTIN.max_tokens
    d = server_defaults(_args("--temperature", "0.1", "--max-tokens", "0"), {})
    assert d.temperature == 0.1 and d.max_tokens is None
    with pytest.raises(tm.ToolmaskError, match="top_p"):
        server_defaults(_args("--top-p", "0"), {})
    with pytest.raises(tm.ToolmaskError, match="max-tokens"):
        server_defaults(_args("--max-tokens", "-3"), {})
    assert server_defaults(_args(), {}).reasoning_budget is None
    assert server_defaults(_args("--reasoning-budget", "64"), {}).reasoning_budget == 64
    with pytest.raises(tm.ToolmaskError, match="reasoning-budget"):
        server_defaults(_args("--reasoning-budget", "-1"), {})
    assert _args().format == "auto" and _args("--format", "glm").format == "glm"
    assert server_defaults(_args(), {}).sampling == "plain"
    d = server_defaults(_args("--sampling", "exact"), {})
    assert d.sampling == "exact" and "sampling" in d.source
    with pytest.raises(SystemExit):
        _args("--sampling", "beam")


def _post(client: TestClient, **body: Any) -> Any:
    r = client.post(
        "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}], **body},
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_requests_get_the_defaults_for_what_they_leave_out() -> None:
    backend = Recorder()
    defaults = ServerDefaults(temperature=0.3, top_p=0.9, top_k=7, min_p=0.01, max_tokens=99)
    app = create_app(backend, model_name="m", defaults=defaults)
    with TestClient(app) as client:
        _post(client)
        _post(client, temperature=0, top_p=0.5, max_tokens=5, seed=3)
        health = client.get("/health").json()
    (s1, n1), (s2, n2) = backend.calls
    assert (s1.temperature, s1.top_p, s1.top_k, s1.min_p, n1) == (0.3, 0.9, 7, 0.01, 99)
    assert (s2.temperature, s2.top_p, s2.top_k, s2.min_p, n2) == (0.0, 0.5, 7, 0.01, 5)
    assert s2.seed == 3
    assert health["defaults"]["max_tokens"] == 99


def test_no_server_budget_means_the_rest_of_the_context() -> None:
    backend = Recorder()
    app = create_app(backend, model_name="m", defaults=ServerDefaults(max_tokens=None))
    with TestClient(app) as client:
        _post(client)
    ((_, n),) = backend.calls
    assert 4000 < n < 4096


def test_the_sampling_field_and_the_server_default_choose_the_mode() -> None:
    backend = Recorder()
    app = create_app(backend, model_name="m", defaults=ServerDefaults(sampling="exact"))
    with TestClient(app) as client:
        _post(client)  # the server's default (serve --sampling exact)
        _post(client, sampling="aligned", temperature=0.5)
        r = client.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "sampling": 1},
        )
        assert r.status_code == 400 and r.json()["error"]["param"] == "sampling"
        health = client.get("/health").json()
    (_, _), (s2, _) = backend.calls
    d1, d2 = backend.decodings
    assert d1.mode == "exact" and (d2.mode, s2.temperature) == ("aligned", 0.5)
    assert health["defaults"]["sampling"] == "exact"


TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_auto_turns_hand_the_decoder_their_opening() -> None:
    """Where a reply may open with a call or with prose (``auto`` with tools, no reasoning
    first), the server hands the backend an :class:`~toolmask.decoding.Opening` whatever the
    mode (the decoder decides whether to choose: ``tests/decoding`` checks the exact mode's
    choice); its call grammar is the same tools under ``required``."""
    backend = Recorder()
    app = create_app(backend, model_name="m", fmt="hermes")
    with TestClient(app) as client:
        _post(client, tools=[TOOL], sampling="exact", temperature=1, seed=0)
        _post(client, tools=[TOOL], temperature=0)
        _post(client, tools=[TOOL], tool_choice="required", sampling="exact", temperature=1)
        _post(client)  # no tools
    exact, plain, required, none = backend.openings
    assert [d.mode for d in backend.decodings] == ["exact", "plain", "exact", "plain"]
    assert required is None and none is None
    for opening in (exact, plain):
        assert opening.opener == "<tool_call>"
        assert opening.call().matcher().accept_bytes(b"<tool_call>")
        assert not opening.call().matcher().accept_bytes(b"Hi")
