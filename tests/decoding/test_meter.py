"""The distortion meter on the real SmolLM2 GGUF (marked ``model``).

At temperature 0 the sampled token is the model's top-1 exactly when the mask did not remove
it; the meter must say so at every step, with the removed mass in [0, 1] and the step's byte
offset pointing into the reply.
"""

from __future__ import annotations

from typing import Any

import pytest

import toolmask as tm
from toolmask.agent import Message, render_chatml
from toolmask.models import TEST_MODEL, resolve_model
from toolmask.tools import SITES, ToolTurn, distortion_sites

pytestmark = pytest.mark.model

llama_cpp_backend = pytest.importorskip("toolmask.backends.llama_cpp")
pytest.importorskip("llama_cpp")
try:
    MODEL = resolve_model(TEST_MODEL)
except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
    pytest.skip(str(e), allow_module_level=True)

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 30},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def backend() -> Any:
    return llama_cpp_backend.LlamaCpp(MODEL, n_ctx=2048)


@pytest.mark.parametrize("choice", ["required", "auto"])
def test_meter_records_every_masked_step(backend: Any, choice: str) -> None:
    turn = ToolTurn([WEATHER], tool_choice=choice, parallel_tool_calls=False)
    messages = [
        Message("system", "You are a helpful assistant.\n\n" + turn.prompt()),
        Message("user", "What's the weather in Paris?"),
    ]
    prompt = backend.tokenize(render_chatml(messages, turn))
    compiled = tm.compile(turn.grammar(), backend.vocab)
    gen = backend.generate(prompt, compiled, max_tokens=48, meter=True)
    assert gen.forced_tokens == 0  # the meter samples every step, so every step is measured
    assert len(gen.distortion) == gen.sampled_tokens
    for d in gen.distortion:
        assert 0.0 <= d.removed_mass <= 1.0
        assert d.removed == (d.chosen != d.top1) or (d.ended and d.accepting), d
        if d.removed:
            assert d.removed_mass > 0.0
        assert 0 <= d.offset <= len(gen.text)
        assert d.top1_is_end == (d.top1 in backend.vocab.eos_ids)
    assert [d.step for d in gen.distortion] == list(range(len(gen.distortion)))
    sites = distortion_sites(gen, turn.format)
    assert len(sites) == len(gen.distortion) and set(sites) <= set(SITES)
    assert sites[0] == "turn_start"
    # without the meter the same greedy reply comes back (jump-forward may split it otherwise)
    plain = backend.generate(prompt, compiled, max_tokens=48, jump_forward=False)
    assert plain.text == gen.text
