"""An OpenAI client's agent loop against ``toolmask serve`` (``bench/convergence.py --via
serve``): what a user with the official ``openai`` client and their own loop gets.

The loop is the textbook one: send the conversation with the tools; if the reply holds
``tool_calls``, run each (a tool's exception becomes ``error: ...``), append the results as
``tool`` messages and ask again; a reply without calls is the answer. Under ``required`` a
``final_answer(answer)`` tool is added and its call is the answer, as clients do to end a
forced-call loop. With ``answer_on_repeat`` (the default, as the library's ``Agent`` does), a
reply whose every call repeats an earlier identical call that got the same result is followed
by a request that may only answer: ``tool_choice="none"`` under ``auto``, the named
``final_answer`` under ``required``. The tools stay in the request either way.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

FINAL_ANSWER = {
    "type": "function",
    "function": {
        "name": "final_answer",
        "description": "Give the final answer to the user and end.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The answer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}


@contextmanager
def serve(model: str, threads: int | None, extra: list[str] | None = None) -> Iterator[Any]:
    """``toolmask serve --model MODEL`` on a free port; yields an ``openai.OpenAI`` client."""
    import openai

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "toolmask.server", "--port", str(port), "--model", model]
    cmd += ["--max-tokens", "256", *(extra or [])]
    if threads:
        cmd += ["--threads", str(threads)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"convergence-serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"toolmask serve exited: {log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(base + "/health", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("toolmask serve did not start") from None
                time.sleep(0.5)
        client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=900)
        yield client
        client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class LoopResult:
    answer: str | None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    steps: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    stop: str = ""


def run_loop(
    client: Any,
    prompt: str,
    specs: list[dict[str, Any]],
    fns: dict[str, Callable[..., Any]],
    *,
    tool_choice: str,
    max_steps: int,
    max_tokens: int,
    answer_on_repeat: bool = True,
) -> LoopResult:
    """One question through the loop (greedy); see the module docstring."""
    tools = [*specs, FINAL_ANSWER] if tool_choice == "required" else specs
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    out = LoopResult(None)
    seen: dict[str, str] = {}  # a call (name and arguments) -> its last result
    answer_only: Any = None
    if answer_on_repeat:
        answer_only = (
            {"type": "function", "function": {"name": "final_answer"}}
            if tool_choice == "required"
            else "none"
        )
    repeated_all = False
    for _ in range(max_steps):
        r = client.chat.completions.create(
            model="default",
            messages=messages,
            tools=tools,
            tool_choice=answer_only if repeated_all else tool_choice,
            parallel_tool_calls=False,
            temperature=0,
            max_tokens=max_tokens,
        )
        out.steps += 1
        if r.usage:
            out.tokens += r.usage.completion_tokens
            out.prompt_tokens += r.usage.prompt_tokens
        msg = r.choices[0].message
        if not msg.tool_calls:
            out.answer, out.stop = msg.content or "", "answer"
            return out
        messages.append(
            {
                "role": "assistant",
                "content": msg.content or "",
                "tool_calls": [c.model_dump() for c in msg.tool_calls],
            }
        )
        repeats = 0
        for c in msg.tool_calls:
            args = json.loads(c.function.arguments)
            out.calls.append((c.function.name, args))
            if c.function.name == "final_answer":
                out.answer, out.stop = str(args.get("answer", "")), "answer"
                return out
            try:
                result = fns[c.function.name](**args)
                text = result if isinstance(result, str) else json.dumps(result)
            except Exception as e:  # a tool error goes back to the model, as text
                text = f"error: {e}"
            key = c.function.name + json.dumps(args, sort_keys=True)
            repeats += seen.get(key) == text
            seen[key] = text
            out.results.append(text)
            messages.append({"role": "tool", "tool_call_id": c.id, "content": text})
        repeated_all = answer_only is not None and repeats == len(msg.tool_calls)
    out.stop = "max_steps"
    return out
