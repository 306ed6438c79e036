"""The table of decoding modes: a mode registered from this module, and from nowhere else, runs
through ``generate``, through a real server on 127.0.0.1 (the official ``openai`` client) and
through the agent; ``DecodingParams`` and the ``sampling`` / ``decoding`` arguments.

The toy mode (:class:`Lowest`) takes, at every step, the allowed token with the lowest id: a
rule no built-in mode follows, so its replies say which decoder ran. The engine
(:class:`Reply`) is a real :class:`~toolmask.backends.DecodingBackend` over a byte vocabulary
whose logits prefer the next byte of a fixed reply; with the embedded SmolLM2 (``model``) the
same runs on llama.cpp.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from tests.decoding.toy import Toy
from toolmask.agent import Agent
from toolmask.backends import DecodingBackend
from toolmask.decoding import (
    DecodeRequest,
    DecodingParams,
    Generation,
    ModelEngine,
    mode_names,
    register_mode,
    resolve_params,
    unregister_mode,
)
from toolmask.models import TEST_MODEL
from toolmask.sampling import SamplingParams, bitmask_to_bool, new_bitmask

EOS = 256
TOKENS: list[bytes | None] = [bytes([b]) for b in range(256)] + [None]
VOCAB = tm.Vocabulary.from_token_bytes(TOKENS, eos_ids=[EOS], special_texts={EOS: "<|im_end|>"})
HEADER = list(b"<|im_start|>assistant\n")
#: what the engine's model would write (a plain decoder writes it; the toy mode does not)
REPLY = b"It is 5."
#: the replies' grammar: the toy mode's lowest ids give "no" ('n' < 'y')
ANSWER = {"enum": ["yes", "no"]}
GRAMMAR = tm.Grammar.from_json_schema(ANSWER)


class Lowest:
    """A toy decoding mode: the allowed token with the lowest id, until the grammar is
    finished or only the end is left (without a grammar: the end at once). Records every
    request it decodes in :data:`SEEN`."""

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation:
        SEEN.append(request)
        vocab = engine.vocab
        reused = engine.sync_prompt(request.prompt)
        gen = Generation([], b"", "stop", len(request.prompt), reused, mode=request.decoding.mode)
        m = request.compiled.matcher() if request.compiled is not None else None
        bits = new_bitmask(vocab.vocab_size)
        while m is not None and not m.is_finished() and len(gen.tokens) < request.max_tokens:
            m.fill_bitmask(bits)
            allowed = np.flatnonzero(bitmask_to_bool(bits, vocab.vocab_size))
            token = int(allowed[0])
            if token in vocab.eos_ids:
                break
            m.accept_token(token)
            gen.tokens.append(token)
            text = vocab.token_bytes[token] or b""
            if request.on_token is not None and request.on_token([token], text):
                break
            engine.feed([token])
        gen.text = b"".join(vocab.token_bytes[t] or b"" for t in gen.tokens)
        return gen


SEEN: list[DecodeRequest] = []


@pytest.fixture(autouse=True)
def toy_mode() -> Iterator[None]:
    register_mode("lowest", Lowest)
    SEEN.clear()
    yield
    unregister_mode("lowest")


class Reply(Toy):
    """Prefers the next byte of :data:`REPLY` after the assistant's header, then the end (the
    toy's context bookkeeping, a byte vocabulary)."""

    def __init__(self) -> None:
        super().__init__()
        self.vocab = VOCAB
        self.n_ctx = 4096

    def tokenize(self, text: str) -> list[int]:
        return list(text.encode())

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def logits(self) -> Any:
        ctx, h = self.context, HEADER
        at = max((i + len(h) for i in range(len(ctx)) if ctx[i : i + len(h)] == h), default=0)
        done = bytes(ctx[at:])
        row = np.full(len(TOKENS), -10.0, dtype=np.float32)
        ok = REPLY.startswith(done) and len(done) < len(REPLY)
        row[REPLY[len(done)] if ok else EOS] = 5.0
        return row


def _engine(kind: str) -> DecodingBackend:
    if kind == "reply":
        return Reply()
    llama = pytest.importorskip("toolmask.backends.llama_cpp")
    pytest.importorskip("llama_cpp")
    try:
        return llama.LlamaCpp(TEST_MODEL, n_ctx=2048, n_threads=1)  # type: ignore[no-any-return]
    except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
        pytest.skip(str(e))


ENGINES = ["reply", pytest.param("llama", marks=pytest.mark.model)]


def test_a_registered_mode_is_in_the_table() -> None:
    assert mode_names() == ("plain", "exact", "aligned", "lowest")
    assert DecodingParams("lowest").mode == "lowest"
    with pytest.raises(ValueError, match="registered already"):
        register_mode("lowest", Lowest)
    with pytest.raises(ValueError, match="lowercase identifier"):
        register_mode("Not a name", Lowest)


@pytest.mark.parametrize("kind", ENGINES)
def test_the_toy_mode_runs_through_generate(kind: str) -> None:
    engine = _engine(kind)
    compiled = tm.compile(GRAMMAR, engine.vocab)
    prompt = engine.tokenize("<|im_start|>user\nYes or no?<|im_end|>\n<|im_start|>assistant\n")
    gen = engine.generate(prompt, compiled, decoding="lowest", max_tokens=8)
    assert gen.text == b'"no"' and gen.mode == "lowest"
    assert [r.decoding.mode for r in SEEN] == ["lowest"]
    assert engine.generate(prompt, compiled, max_tokens=8).mode == "plain"
    # the decoder is made once per engine, and a mode registered again gets a new one
    assert engine.decoders.get("lowest") is engine.decoders.get("lowest")
    first = engine.decoders.get("lowest")
    register_mode("lowest", Lowest, replace=True)
    assert engine.decoders.get("lowest") is first  # the same factory: the same decoder
    register_mode("lowest", lambda: Lowest(), replace=True)
    assert engine.decoders.get("lowest") is not first


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("kind", ENGINES)
def test_the_toy_mode_runs_through_the_server(kind: str) -> None:
    openai = pytest.importorskip("openai")
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    from toolmask.server import create_app

    engine = _engine(kind)
    port = _free_port()
    app = create_app(engine, model_name="m", fmt="hermes")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-", max_retries=0)
        fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": ANSWER}}
        body: dict[str, Any] = {
            "model": "m",
            "messages": [{"role": "user", "content": "Yes or no?"}],
            "response_format": fmt,
            "max_tokens": 8,
            "temperature": 0.5,
        }
        toy = client.chat.completions.create(**body, extra_body={"sampling": "lowest"})
        streamed = client.chat.completions.create(
            **body, stream=True, extra_body={"sampling": "lowest"}
        )
        pieces = [c.choices[0].delta.content or "" for c in streamed if c.choices]
        with pytest.raises(openai.BadRequestError, match="use one of plain, exact, aligned"):
            client.chat.completions.create(**body, extra_body={"sampling": "highest"})
    finally:
        server.should_exit = True
        thread.join(30)
    assert toy.choices[0].message.content == '"no"' and "".join(pieces) == '"no"'
    assert [r.decoding.mode for r in SEEN] == ["lowest", "lowest"]
    assert SEEN[0].sampling.temperature == 0.5  # the token sampler's settings reach it too


@pytest.mark.parametrize("kind", ENGINES)
def test_the_toy_mode_runs_through_the_agent(kind: str) -> None:
    engine = _engine(kind)

    def pick(n: int) -> str:
        """Pick a number.

        Args:
            n: The number.
        """
        return str(n)

    agent = Agent(
        engine,
        [pick],
        fmt="hermes",
        tool_choice="required",
        parallel_tool_calls=False,
        decoding="lowest",
    )
    step = agent.run("Pick one.", max_steps=1)[2]
    # the lowest ids: "-" before a digit, "0" the lowest digit; on the byte vocabulary, tabs
    # wherever whitespace may go (SmolLM2's lowest ids there are longer tokens)
    assert '"arguments": {"n": -0}}' in step.raw
    want = '\t\t\t\t<tool_call>\n{"name": "pick", "arguments": {"n": -0}}\t\t\t\t</tool_call>'
    assert step.raw.startswith(want) or kind != "reply"
    assert [(c.name, c.arguments) for c in step.tool_calls] == [("pick", {"n": 0})]
    assert [r.decoding.mode for r in SEEN] == ["lowest"]
    assert SEEN[0].compiled is not None and SEEN[0].opening is None  # required: no opening
    auto = Agent(engine, [pick], fmt="hermes", decoding="lowest")
    auto.run("Pick one.", max_steps=1)
    assert SEEN[1].opening is not None and SEEN[1].opening.opener == "<tool_call>"


def test_decoding_params_and_the_sampling_shorthand() -> None:
    assert DecodingParams() == DecodingParams("plain", 8, 128, 512)
    with pytest.raises(ValueError, match="mode must be one of plain, exact, aligned"):
        DecodingParams("beam")
    with pytest.raises(ValueError, match="particles"):
        DecodingParams(particles=0)
    with pytest.raises(ValueError, match="branch_alternatives"):
        DecodingParams(branch_alternatives=-1)
    with pytest.raises(ValueError, match="branch_tokens"):
        DecodingParams(branch_tokens=0)
    greedy = SamplingParams(temperature=0.0)
    assert resolve_params(None, None) == (greedy, DecodingParams())
    assert resolve_params("exact", None) == (greedy, DecodingParams("exact"))
    hot = SamplingParams(temperature=0.7)
    assert resolve_params(hot, "aligned") == (hot, DecodingParams("aligned"))
    assert resolve_params("lowest", DecodingParams("lowest", particles=2))[1].particles == 2
    with pytest.raises(ValueError, match="names the mode 'exact' and decoding 'aligned'"):
        resolve_params("exact", "aligned")
    with pytest.raises(TypeError):
        resolve_params(0.5, None)  # type: ignore[arg-type]
