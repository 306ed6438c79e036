"""toolmask's logits processors inside vLLM (marked ``vllm``; ``make test-vllm``).

* the V1 processor end to end: vLLM's offline ``LLM`` on the converted SmolLM2, a batch of
  requests with different turn specs, lengths and sampling (so vLLM adds, removes and moves
  them in its batch), every constrained reply a valid call or JSON value;
* Model Runner V2's processor against its interface: a fake request state (the committed
  token table and prompt lengths the model runner shares), rows reordered every step, a
  resumption that feeds several tokens at once;
* the spec reader and the end-on-exit logit (no model).
"""

from __future__ import annotations

import gc
import json
import math
from types import SimpleNamespace
from typing import Any

import jsonschema
import numpy as np
import pytest

pytestmark = [
    pytest.mark.vllm,
    # vLLM and torch warn about their own internals (deprecations) while loading the model
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    # vLLM's client leaves a zmq context to the garbage collector (collected in the teardown)
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

torch = pytest.importorskip("torch")
pytest.importorskip("vllm")
tv = pytest.importorskip("toolmask.integrations.vllm")

from toolmask.integrations.vllm._core import (  # noqa: E402
    DEFAULT_FORMAT,
    BatchConstrainer,
    byte_vocabulary,
    read_spec,
)
from toolmask.limits import SERVER_LIMITS  # noqa: E402
from toolmask.server._plans import PlanCache  # noqa: E402
from toolmask.vocab import Vocabulary  # noqa: E402

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
UNIT = {
    "type": "object",
    "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["unit"],
    "additionalProperties": False,
}
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "set_unit", "parameters": UNIT}},
]
SCHEMAS = {"get_weather": WEATHER, "set_unit": UNIT}
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
    "additionalProperties": False,
}


# -- the spec and the end-on-exit logit (no model) ---------------------------------------------


def test_read_spec_accepts_objects_and_json_text_and_names_what_is_wrong() -> None:
    assert read_spec(None) is None and read_spec({"other": 1}) is None
    spec = {"tools": TOOLS, "tool_choice": "required", "format": "hermes"}
    a, b = read_spec({"toolmask": spec}), read_spec({"toolmask": json.dumps(spec)})
    assert a is not None and a == b and a.fmt == "hermes"
    plain = read_spec({"toolmask": {"tools": TOOLS}})
    assert plain is not None and plain.fmt is None  # the processor's default: the model's
    for bad, words in [
        ("{", "not valid JSON"),
        ([1], "must be an object"),
        ({"tools": TOOLS, "color": 1}, "unknown field 'color'"),
        ({"format": "nope"}, "unknown wire format 'nope'"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ]:
        with pytest.raises(ValueError, match=words):
            read_spec({"toolmask": bad})


def test_a_schema_that_does_not_compile_is_refused_with_its_pointer() -> None:
    bad = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a)\\1$"}}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": bad}}]
    with pytest.raises(ValueError, match="#/properties/s"):
        tv.check_spec({"toolmask": {"tools": tools}})


def _digits_vocab() -> Vocabulary:
    tokens: list[bytes | None] = [bytes([b]) for b in b"0123456789a"] + [b"</s>"]
    return Vocabulary.from_token_bytes(tokens, eos_ids=[11], special_ids=[11])


def _integer_constrainer(temperature: float) -> BatchConstrainer:
    c = BatchConstrainer(_digits_vocab())
    rf = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer"}}}
    assert c.add(0, read_spec({"toolmask": {"response_format": rf}}), None, temperature)
    c.feed(0, [1, 2])  # "12": the grammar accepts (the turn may end) and may go on
    return c


def test_end_on_exit_greedy_a_forbidden_favourite_ends_the_turn() -> None:
    c = _integer_constrainer(0.0)
    logits = torch.tensor([[0.0] * 10 + [5.0, 1.0]])  # "a" (forbidden) is the favourite
    out = c.apply(logits, [(0, 0)])
    assert int(out[0].argmax()) == 11 and math.isinf(float(out[0][10]))
    logits = torch.tensor([[0.0] * 3 + [6.0] + [0.0] * 6 + [5.0, 1.0]])  # "3" beats "a"
    assert int(c.apply(logits, [(0, 0)])[0].argmax()) == 3


def test_end_on_exit_sampled_the_end_token_carries_the_forbidden_mass() -> None:
    t = 0.7
    c = _integer_constrainer(t)
    raw = torch.linspace(-1.0, 2.0, 12).reshape(1, 12)
    p_raw = torch.softmax(raw[0] / t, 0)
    out = c.apply(raw.clone(), [(0, 0)])
    p = torch.softmax(out[0] / t, 0)
    assert float(p[11]) == pytest.approx(float(p_raw[11] + p_raw[10]), rel=1e-5)
    for d in range(10):  # every allowed token keeps its own probability
        assert float(p[d]) == pytest.approx(float(p_raw[d]), rel=1e-5)


def test_a_row_not_in_an_accepting_state_is_only_masked() -> None:
    c = BatchConstrainer(_digits_vocab())
    rf = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer"}}}
    c.add(0, read_spec({"toolmask": {"response_format": rf}}))
    out = c.apply(torch.zeros(2, 12), [(1, 0)])  # the constrained request is row 1
    assert torch.equal(out[0], torch.zeros(12))  # row 0 (another request) untouched
    assert math.isinf(float(out[1][10])) and math.isinf(float(out[1][11]))  # no "a", no end yet


# -- V1, end to end on the converted SmolLM2 ----------------------------------------------------


@pytest.fixture(scope="module")
def hf_model() -> str:
    from toolmask.backends.transformers import export_hf

    try:
        return str(export_hf())
    except Exception as e:  # pragma: no cover - only without the embedded model
        pytest.skip(f"no model to convert: {e}")


@pytest.fixture(scope="module")
def llm(hf_model: str) -> Any:
    from vllm import LLM

    engine = LLM(
        model=hf_model,
        logits_processors=[tv.ToolmaskLogitsProcessor],
        max_model_len=2048,
        max_num_seqs=4,
        dtype="float32",
        enforce_eager=True,
        gpu_memory_utilization=0.15,
    )
    yield engine
    engine.llm_engine.engine_core.shutdown()
    del engine
    gc.collect()  # here, under this module's warning filters, not in a later test


def _prompt(llm: Any, user: str) -> str:
    msgs = [{"role": "user", "content": user}]
    out: str = llm.get_tokenizer().apply_chat_template(
        msgs, tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    return out


def _turn(spec: dict[str, Any]) -> Any:
    """The toolmask turn (parser) of a spec, as the server builds it."""
    s = read_spec({"toolmask": spec})
    assert s is not None
    plan = PlanCache(byte_vocabulary(), SERVER_LIMITS, fmt=s.fmt or DEFAULT_FORMAT).get(s.request)
    return plan.turn


def test_v1_a_mixed_batch_gets_valid_calls_and_json(llm: Any) -> None:
    from vllm import SamplingParams

    required = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    named = {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "set_unit"}}}
    rf = {"type": "json_schema", "json_schema": {"name": "a", "schema": ANSWER}}
    jobs: list[tuple[str, dict[str, Any] | None, float, int]] = [
        ("What's the weather in Paris?", required, 0.0, 60),
        ("Use celsius please.", named, 0.0, 40),
        ("Weather in Oslo?", required, 0.9, 60),
        ("Describe the weather in Rome.", {"response_format": rf}, 0.0, 60),
        ("Say hello.", None, 0.0, 8),
        ("And in Lima?", named, 0.8, 40),
    ]
    prompts = [_prompt(llm, user) for user, *_ in jobs]
    params = [
        SamplingParams(
            temperature=temp,
            seed=7,
            max_tokens=n,
            extra_args={"toolmask": json.dumps(spec)} if spec is not None else None,
        )
        for _, spec, temp, n in jobs
    ]
    outs = llm.generate(prompts, params, use_tqdm=False)
    for (user, spec, _, _), out in zip(jobs, outs, strict=True):
        text = out.outputs[0].text
        done = out.outputs[0].finish_reason == "stop"
        if spec is None:
            continue
        if "response_format" in spec:
            if done:
                jsonschema.validate(json.loads(text), ANSWER)
            continue
        parsed = _turn(spec).parse(text)
        if done:
            assert parsed.calls, (user, text)
        for call in parsed.calls:
            if spec["tool_choice"] != "required":
                assert call.name == "set_unit"
            jsonschema.validate(call.arguments, SCHEMAS[call.name])
        if spec.get("parallel_tool_calls") is False:
            assert len(parsed.calls) <= 1


def test_v1_a_bad_spec_is_refused_before_it_runs(llm: Any) -> None:
    from vllm import SamplingParams
    from vllm.exceptions import VLLMValidationError  # what vLLM answers with a 400

    sp = SamplingParams(max_tokens=4, extra_args={"toolmask": {"tools": TOOLS, "x": 1}})
    with pytest.raises(VLLMValidationError, match="unknown field 'x'"):
        llm.generate([_prompt(llm, "hi")], [sp], use_tqdm=False)


# -- Model Runner V2, against its interface ------------------------------------------------------


class _V2(tv.ToolmaskLogitsProcessorV2):  # type: ignore[misc]
    """The V2 processor over the HF folder's tokenizer (vLLM's config is not at hand)."""

    vocab: Vocabulary

    def _model(self, vllm_config: Any) -> tuple[Vocabulary, str]:
        return self.vocab, "hermes"


@pytest.mark.parametrize("ahead", [False, True], ids=["fill-in-apply", "fill-ahead"])
def test_v2_decodes_valid_calls_through_a_fake_request_state(hf_model: str, ahead: bool) -> None:
    """``ahead``: the request state has ``total_len`` and the runner calls
    ``apply_staged_writes`` before each step, so the fill runs on the fill thread."""
    from transformers import AutoTokenizer
    from vllm import SamplingParams

    from toolmask.integrations.vllm import vocabulary_from_tokenizer
    from toolmask.sampling import apply_bitmask

    tok = AutoTokenizer.from_pretrained(hf_model)
    vocab = vocabulary_from_tokenizer(tok, 49152, [tok.eos_token_id])
    _V2.vocab = vocab
    slots, max_len = 8, 512
    prompt_len = np.zeros(slots, dtype=np.int32)
    table = torch.zeros(slots, max_len, dtype=torch.int64)  # the committed tokens per slot
    total = torch.zeros(slots, dtype=torch.int32)  # prompt + committed output per slot
    state = SimpleNamespace(
        prompt_len=SimpleNamespace(np=prompt_len), all_token_ids=SimpleNamespace(gpu=table)
    )
    if ahead:
        state.total_len = SimpleNamespace(gpu=total)
    proc = _V2(SimpleNamespace(speculative_config=None), state)
    named = {
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "set_unit"}},
        "parallel_tool_calls": False,  # one call, then the end: random logits must finish
    }
    reqs = {5: 7, 2: 4}  # slot -> prompt length
    ref = BatchConstrainer(vocab)  # picks slot 2's tokens while it is out of the batch
    for slot, n in reqs.items():
        prompt_len[slot] = n
        total[slot] = n
        assert proc.add_request(slot, SamplingParams(extra_args={"toolmask": named}))
    ref.add(2, read_spec({"toolmask": named}))
    assert not proc.add_request(6, SamplingParams())  # no spec: not constrained
    lens = dict(reqs)
    out: dict[int, list[int]] = {s: [] for s in reqs}
    ended: set[int] = set()
    gen = torch.Generator().manual_seed(0)
    eos = min(vocab.eos_ids)
    filled_ahead = 0

    def commit(s: int, t: int) -> None:
        out[s].append(t)
        table[s, lens[s]] = t
        lens[s] += 1
        total[s] = lens[s]
        if s == 2:
            ref.feed(2, [t])

    for step in range(150):
        live = [s for s in reqs if s not in ended]
        if not live:
            break
        if 2 in live and step in (4, 5):  # slot 2 is preempted: the runner commits for it
            bm, _ = ref.fill([(0, 2)])
            row = apply_bitmask(torch.randn(1, vocab.vocab_size, generator=gen), bm)
            commit(2, int(row.argmax()))
            live.remove(2)
        order = (live[::-1] if step % 2 else live) + [6]  # rows are reordered every step
        ctx = SimpleNamespace(
            idx_mapping_np=np.array(order),
            seq_lens_upper_bound_np=np.array([lens.get(s, 3) for s in order]),
            input_ids=torch.tensor([int(table[s, lens[s] - 1]) if s in lens else 0 for s in order]),
        )
        proc.apply_staged_writes()
        logits = proc.apply(torch.randn(len(order), vocab.vocab_size, generator=gen), ctx)
        filled_ahead += proc.constrainer.ahead_s > 0
        for r, s in enumerate(order):
            if s in reqs:
                t = int(logits[r].argmax())
                if t == eos:
                    ended.add(s)
                else:
                    commit(s, t)
    assert ended == set(reqs), {s: tok.decode(out[s]) for s in reqs}
    assert (filled_ahead > 0) == ahead  # the resumption steps fall back to the fill in apply
    turn = _turn(named)
    for s in reqs:
        text = b"".join(vocab.token_bytes[t] or b"" for t in out[s]).decode()
        calls = turn.parse(text).calls
        assert calls and calls[0].name == "set_unit", text
        for call in calls:
            jsonschema.validate(call.arguments, UNIT)


def test_v2_refuses_speculative_decoding() -> None:
    with pytest.raises(ValueError, match="speculative"):
        tv.ToolmaskLogitsProcessorV2(SimpleNamespace(speculative_config=object()), None)


def test_vllm_loaders_take_each_processor_by_name_and_v2_refuses_the_v1_one() -> None:
    from vllm.v1.worker.gpu.sample.logits_processor.loader import (
        _load_v2_logitsprocs_by_fqcns,
    )

    v2 = "toolmask.integrations.vllm:ToolmaskLogitsProcessorV2"
    assert _load_v2_logitsprocs_by_fqcns([v2]) == [tv.ToolmaskLogitsProcessorV2]
    with pytest.raises(ValueError, match="not a subclass"):
        _load_v2_logitsprocs_by_fqcns(["toolmask.integrations.vllm:ToolmaskLogitsProcessor"])
    from vllm.v1.sample.logits_processor import LogitsProcessor

    assert issubclass(tv.ToolmaskLogitsProcessor, LogitsProcessor)
