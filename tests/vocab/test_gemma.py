"""A second real vocabulary: Gemma 3's 262,144-token SentencePiece vocabulary, read from the
Gemma 3 270M GGUF (catalogue ``gemma3-270m``, pulled by ``make venv``), through masks and the
llama.cpp backend. A base model with no chat template still writes only valid calls under the
turn grammar."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import toolmask as tm
from toolmask.models import ModelError, resolve_model
from toolmask.tools import ToolTurn

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 40},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def gguf() -> str:
    try:
        return str(resolve_model("gemma3-270m", fetch=False))
    except ModelError as e:
        pytest.skip(f"{e} (make venv pulls it)")


@pytest.fixture(scope="module")
def vocab(gguf: str) -> tm.Vocabulary:
    return tm.Vocabulary.from_gguf(gguf)


def test_the_vocabulary_reads_whole(vocab: tm.Vocabulary) -> None:
    assert vocab.vocab_size == vocab.n_tokens == 262144
    specials = set(vocab.special.values())
    assert {"<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"} <= specials
    assert {vocab.special[i] for i in vocab.eos_ids} >= {"<eos>"}
    # SentencePiece's byte fallback: every byte has a token of its own
    assert {vocab.token_bytes[i] for i in range(vocab.n_tokens)} >= {bytes([b]) for b in range(256)}
    text = '{"name": "get_weather", "arguments": {"city": "Zürich", "days": 3}}'.encode()
    ids = vocab.encode_greedy(text)
    assert b"".join(vocab.token_bytes[i] for i in ids) == text
    assert len(ids) < len(text) // 2  # real merges, not byte by byte


def test_masks_are_exact_on_262k_tokens(vocab: tm.Vocabulary) -> None:
    """Every token of a valid call is allowed where it stands, and at two states the mask is
    exactly the set of tokens whose bytes the matcher accepts (each one tried)."""
    turn = ToolTurn(
        [WEATHER], "hermes", "required", special_tokens=frozenset(vocab.special.values())
    )
    compiled = tm.compile(turn.grammar(), vocab)
    reply = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}\n'
    reply += "</tool_call>"
    m = compiled.matcher()
    ids = vocab.encode_greedy(reply.encode())
    checked = 0
    for k, tid in enumerate(ids):
        allowed = set(m.allowed_token_ids())
        assert tid in allowed, (k, vocab.token_bytes[tid])
        if k in (len(ids) // 2, len(ids) - 3):  # inside the arguments, near the end
            expect = set()
            probe = compiled.matcher()
            assert probe.accept_bytes(b"".join(vocab.token_bytes[i] for i in ids[:k]))
            for t in range(vocab.n_tokens):
                b = vocab.token_bytes[t]
                if b and t not in vocab.special and probe.accept_bytes(b):
                    expect.add(t)
                    probe.rollback(len(b))
            assert allowed - set(vocab.special) == expect
            checked += 1
        assert m.accept_token(tid)
    assert checked == 2 and m.is_accepting()
    bitmask = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    m.fill_bitmask(bitmask)  # the int32 layout covers all 262,144 logits
    assert bitmask.shape == (8192,)


@pytest.mark.model
def test_a_base_model_writes_valid_calls_by_construction(gguf: str) -> None:
    pytest.importorskip("llama_cpp")
    from toolmask.backends.llama_cpp import LlamaCpp

    backend = LlamaCpp(gguf, n_ctx=1024, max_sequences=1)
    assert backend.vocab.vocab_size == 262144
    turn = ToolTurn(
        [WEATHER],
        "hermes",
        "required",
        special_tokens=frozenset(backend.vocab.special.values()),
    )
    compiled = tm.compile(turn.grammar(), backend.vocab)
    schema = WEATHER["function"]["parameters"]  # type: ignore[index]
    for question in ("Weather in Paris for the next 3 days?", "Is it cold in Oslo this week?"):
        prompt = f"{turn.prompt()}\n\nUser: {question}\nAssistant: "
        gen = backend.generate(backend.tokenize(prompt), compiled, max_tokens=96)
        text = gen.text.decode()
        parsed = turn.parse(text)
        assert parsed.calls, text
        for call in parsed.calls:
            assert call.name == "get_weather"
            jsonschema.validate(call.arguments, schema)
            assert json.loads(call.arguments_json) == call.arguments
