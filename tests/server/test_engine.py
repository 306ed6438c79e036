"""The generation queue and the grammar plans, on a scripted backend (no model, no HTTP).

The same features run on the real model over HTTP in ``test_server.py``; these tests pin the
edge cases that are hard to provoke there (exact queue order, a stop string split across
chunks, a worker whose backend raises).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import toolmask as tm
from toolmask.backends import ContextOverflowError, Generation, OnToken
from toolmask.server._engine import (
    Cancelled,
    Engine,
    Job,
    MaxTokensError,
    QueueFull,
    TextStream,
)
from toolmask.server._plans import PlanCache
from toolmask.server._protocol import APIError, parse_chat_request

GREEDY = tm.SamplingParams(temperature=0.0)
TIMEOUT = 30


class Scripted:
    """Emits ``pieces`` one token each; ``gate`` (if set) must be opened for each step."""

    def __init__(self, pieces: list[bytes], *, n_ctx: int = 64) -> None:
        self.pieces = pieces
        self.n_ctx = n_ctx
        self.gate: threading.Semaphore | None = None
        self.started = threading.Event()
        self.prompts: list[str] = []
        self.steps = 0

    def tokenize(self, text: str) -> list[int]:
        self.prompts.append(text)
        if text == "boom":
            raise RuntimeError("backend failure")
        return list(range(len(text.split())))

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
        self.started.set()
        out: list[int] = []
        reason = "stop"
        for i, piece in enumerate(self.pieces):
            if len(out) >= max_tokens:
                reason = "length"
                break
            if self.gate is not None:
                assert self.gate.acquire(timeout=TIMEOUT)
            self.steps += 1
            out.append(i)
            if on_token is not None and on_token([i], piece):
                break
        text = b"".join(self.pieces[i] for i in out)
        return Generation(out, text, reason, len(prompt), 0)


def job(prompt: str = "a b c", **kw: Any) -> Job:
    kw.setdefault("max_tokens", 16)
    return Job(prompt, None, sampling=GREEDY, **kw)


# -- TextStream -----------------------------------------------------------------------------------


def test_text_stream_holds_back_a_possible_stop_prefix() -> None:
    s = TextStream(("END",))
    assert s.feed(b"Hello E") == ("Hello ", False)
    assert s.feed(b"N") == ("", False)
    assert s.feed(b"D and more") == ("", True)
    assert s.text == "Hello " and s.stopped
    assert s.finish() == ""


def test_text_stream_releases_a_prefix_that_was_not_a_stop() -> None:
    s = TextStream(("END",))
    assert s.feed(b"the EN") == ("the ", False)
    assert s.feed(b"Ds") == ("", True)  # "ENDs": the stop string is inside
    s = TextStream(("END",))
    s.feed(b"the EN")
    assert s.feed(b"x") == ("ENx", False)
    assert s.finish() == ""


def test_text_stream_decodes_utf8_split_across_tokens() -> None:
    s = TextStream()
    e_acute = "é".encode()
    assert s.feed(b"caf" + e_acute[:1]) == ("caf", False)
    assert s.feed(e_acute[1:]) == ("é", False)
    assert s.finish() == "" and s.text == "café"


# -- Engine ---------------------------------------------------------------------------------------


def test_stop_string_stops_the_model_at_that_token() -> None:
    backend = Scripted([b"Hel", b"lo E", b"ND", b" never", b" reached"])
    eng = Engine(backend, queue_size=2)
    try:
        fin = eng.submit(job(stops=("END",))).result(TIMEOUT)
    finally:
        eng.close()
    assert fin.text == "Hello " and fin.finish_reason == "stop"
    assert backend.steps == 3


def test_streamed_text_is_the_final_text() -> None:
    backend = Scripted([b"a", b"b ST", b"OP", b"c"])
    pieces: list[str] = []
    eng = Engine(backend)
    try:
        fin = eng.submit(job(stops=("STOP",), on_text=pieces.append)).result(TIMEOUT)
    finally:
        eng.close()
    assert "".join(pieces) == fin.text == "ab "


def test_queue_is_bounded_fifo_and_cancellable() -> None:
    backend = Scripted([b"x"] * 4)
    backend.gate = threading.Semaphore(0)
    eng = Engine(backend, queue_size=2)
    try:
        first = job("first")
        f1 = eng.submit(first)
        assert backend.started.wait(TIMEOUT)  # the worker holds the first job
        second, third = job("second"), job("third")
        f2, f3 = eng.submit(second), eng.submit(third)
        assert eng.full and eng.service_s is None
        with pytest.raises(QueueFull) as refused:
            eng.submit(job("fourth"))
        assert eng.rejected == 1
        # before any job finished: 1 s per job, half of the three jobs ahead
        assert refused.value.retry_after == pytest.approx(1.5)
        second.cancel.set()  # a client that left while queued is skipped
        first.cancel.set()  # and one that leaves while decoding stops at its next token
        backend.gate.release()
        assert f1.result(TIMEOUT).finish_reason == "stop"
        with pytest.raises(Cancelled):
            f2.result(TIMEOUT)
        for _ in range(4):
            backend.gate.release()
        assert f3.result(TIMEOUT).text == "xxxx"
        assert eng.service_s is not None and eng.service_s > 0
        assert not eng.full and eng.retry_after() == pytest.approx(max(0.05, eng.service_s / 2))
    finally:
        eng.close()
    assert backend.prompts == ["first", "third"]
    assert eng.cancelled == 2 and eng.served == 1


def test_context_overflow_and_max_tokens_past_the_context() -> None:
    eng = Engine(Scripted([b"x"], n_ctx=4))
    try:
        with pytest.raises(ContextOverflowError):
            eng.submit(job("a b c d e")).result(TIMEOUT)
        with pytest.raises(MaxTokensError, match="maximum context length is 4"):
            eng.submit(job("a b", max_tokens=3)).result(TIMEOUT)
        fin = eng.submit(job("a b", max_tokens=None)).result(TIMEOUT)  # the rest of the context
        assert fin.text == "x"
    finally:
        eng.close()


def test_the_worker_survives_a_failing_backend() -> None:
    eng = Engine(Scripted([b"ok"]))
    try:
        with pytest.raises(RuntimeError, match="backend failure"):
            eng.submit(job("boom")).result(TIMEOUT)
        assert eng.submit(job("fine")).result(TIMEOUT).text == "ok"
    finally:
        eng.close()
    assert eng.failed == 1 and eng.served == 1


# -- plans ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plans() -> PlanCache:
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens.append(None)
    vocab = tm.Vocabulary.from_token_bytes(tokens, eos_ids=[256], special_texts={256: "<eos>"})
    return PlanCache(vocab, tm.SERVER_LIMITS)


def _req(**body: Any) -> Any:
    return parse_chat_request(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], **body}
    )


def _tool(name: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": params}}


def _rf(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}


def _accepts(plan: Any, text: str) -> bool:
    m = plan.compiled.matcher()
    return bool(m.accept_bytes(text.encode()) and m.is_accepting())


def test_plans_are_cached_by_request_shape(plans: PlanCache) -> None:
    rf = _rf({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    a = plans.get(_req(response_format=rf))
    b = plans.get(_req(response_format=rf, temperature=0))
    assert a is b
    assert _accepts(a, '{"n":3}') and not _accepts(a, '{"n":"3"}')
    assert plans.get(_req()).compiled is None  # plain chat is unconstrained


def test_json_response_with_tools_is_json_or_calls(plans: PlanCache) -> None:
    tools = [_tool("f", {"type": "object", "properties": {"a": {"type": "integer"}}})]
    rf = _rf({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
    plan = plans.get(_req(tools=tools, response_format=rf))
    call = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
    assert _accepts(plan, '{"ok":true}') and _accepts(plan, call)
    assert not _accepts(plan, "hello")
    required = plans.get(_req(tools=tools, response_format=rf, tool_choice="required"))
    assert _accepts(required, call) and not _accepts(required, '{"ok":true}')
    none = plans.get(_req(tools=tools, response_format=rf, tool_choice="none"))
    assert _accepts(none, '{"ok":true}') and not _accepts(none, call)


def test_tool_choice_none_over_tools_asks_for_words(plans: PlanCache) -> None:
    """A client sends ``tool_choice="none"`` for the answer after its tools ran: the reply is
    words, not nothing and not the start of a call the mask would cut (``{"name``: what
    Qwen2.5-Coder wrote there when only hermes' whole bare start was kept out)."""
    tools = [_tool("get_time", {"type": "object", "properties": {"tz": {"type": "string"}}})]
    none = plans.get(_req(tools=tools, tool_choice="none"))
    assert none.turn is not None and not none.turn.options.habit_prose
    for bad in ("", "  ", "{", '{"name', "```json\n", '<tool_call>\n{"name": "get_time"'):
        assert not _accepts(none, bad), bad
    assert _accepts(none, "It is 10:00 in Rome.")
    assert _accepts(none, 'As JSON:\n```json\n{"time": "10:00"}\n```')
    assert _accepts(none, 'Use:\n```json\n{"name": "get_time", "arguments": {}}\n```')
    auto = plans.get(_req(tools=tools))  # a turn that may call is not asked for words
    assert _accepts(auto, '{"name": "get_time", "arguments": {}}') and _accepts(auto, "")
    assert _accepts(auto, '{"x": 1}')


def test_unsupported_schema_is_a_400_with_pointer_and_keyword(plans: PlanCache) -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}
    with pytest.raises(APIError) as e:
        plans.get(_req(response_format=_rf(schema)))
    err = e.value
    assert err.status == 400 and err.code == "invalid_schema"
    assert err.param == "response_format.json_schema.schema"
    assert err.extra == {"pointer": "#/properties/x", "keyword": "$ref"}
    assert "#/properties/x" in err.message and "$ref" in err.message
    with pytest.raises(APIError) as again:  # failures are cached too
        plans.get(_req(response_format=_rf(schema)))
    assert again.value is err


def test_tool_schema_errors_name_the_tool(plans: PlanCache) -> None:
    good = _tool("ok", {"type": "object"})
    hostile = _tool("evil", {"type": "object", "properties": {"s": {"pattern": "(?<=a)b"}}})
    with pytest.raises(APIError) as e:
        plans.get(_req(tools=[good, hostile]))
    assert e.value.param == "tools[1].function.parameters"
    assert e.value.extra["keyword"] == "pattern" and "'evil'" in e.value.message


def test_unknown_formats_are_annotations_unless_strict_formats(plans: PlanCache) -> None:
    schema = {"type": "object", "properties": {"c": {"type": "string", "format": "color"}}}
    plan = plans.get(_req(response_format=_rf(schema)))
    assert _accepts(plan, '{"c":"not a colour"}')
    strict = PlanCache(plans.vocab, tm.SERVER_LIMITS, strict_formats=True)
    with pytest.raises(APIError) as e:
        strict.get(_req(response_format=_rf(schema)))
    assert e.value.status == 400 and e.value.param == "response_format.json_schema.schema"
    assert e.value.extra == {"pointer": "#/properties/c", "keyword": "format"}
    with pytest.raises(APIError) as e:
        strict.get(_req(tools=[_tool("paint", schema)]))
    assert e.value.param == "tools[0].function.parameters"
    assert e.value.extra["keyword"] == "format"


def test_schemas_past_the_server_limits_are_refused(plans: PlanCache) -> None:
    blowup = {"type": "string", "pattern": "[ab]*a[ab]{24}"}  # a DFA of 2**25 states
    with pytest.raises(APIError) as e:
        plans.get(_req(response_format=_rf(blowup)))
    assert e.value.code == "schema_too_complex"
    assert e.value.extra == {"limit": "max_dfa_states", "pointer": "#"}
    nested = {"type": "object", "properties": {"when": {"type": "array", "items": blowup}}}
    with pytest.raises(APIError) as e:
        plans.get(_req(tools=[_tool("ok", {"type": "object"}), _tool("evil", nested)]))
    assert e.value.param == "tools[1].function.parameters"
    assert e.value.extra == {"limit": "max_dfa_states", "pointer": "#/properties/when/items"}
    assert "'evil'" in e.value.message and "#/properties/when/items" in e.value.message
    deep: dict[str, Any] = {"type": "integer"}
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    with pytest.raises(APIError) as e:
        plans.get(_req(response_format=_rf(deep)))
    assert e.value.code in ("schema_too_complex", "invalid_schema")


def test_a_schema_that_trips_a_library_is_still_a_400(plans: PlanCache) -> None:
    broken = {"type": "object", "properties": {"a": {"dependentSchemas": 1}}}
    with pytest.raises(APIError) as e:
        plans.get(_req(response_format=_rf(broken)))
    assert e.value.status == 400


def test_a_broken_tool_among_many_is_named_when_a_reply_enters_it(plans: PlanCache) -> None:
    """Over LAZY_MIN_TOOLS tools the turn compiles lazily: the plan compiles, a reply that
    calls a good tool is taken, and one that enters the broken tool's arguments raises its
    error naming the tool (the server answers it as a 400, see ``_job_error``)."""
    from toolmask.errors import SchemaError
    from toolmask.server._chat import _job_error

    good = {"type": "object", "properties": {"a": {"type": "integer"}}}
    tools = [_tool(f"t{i}", good) for i in range(40)]
    tools[5] = _tool("evil", {"type": "object", "properties": {"s": {"pattern": "(?<=a)b"}}})
    plan = plans.get(_req(tools=tools, tool_choice="required"))
    assert _accepts(plan, '<tool_call>\n{"name": "t7", "arguments": {"a": 1}}\n</tool_call>')
    m = plan.compiled.matcher()
    with pytest.raises(SchemaError) as e:
        m.accept_bytes(b'<tool_call>\n{"name": "evil", "arguments": ')
    err = _job_error(e.value)
    assert err.status == 400 and err.code == "invalid_schema" and err.param == "tools"
    assert "'evil'" in err.message and err.extra["keyword"] == "pattern"
