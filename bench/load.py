"""Load test of ``toolmask serve``: N concurrent clients for T seconds, then it stops.

    python bench/load.py                      # starts a server on 127.0.0.1, 4 clients x 60 s
    python bench/load.py --clients 8 --seconds 120 --queue-size 4
    python bench/load.py --url http://127.0.0.1:8000 --pid 1234   # an already running server

Each client is a thread with the official ``openai`` client (no retries) that sends requests
back to back, cycling through four kinds: plain chat, a required tool call, a ``json_schema``
response and a stream with usage. Every request is accounted for: answered (by status) or
failed to connect. The server's RSS is sampled every second from ``/proc`` (after one warm-up
request of each kind, so lazily built masks are not counted as growth).

Prints a table and writes ``bench/results/load.json``. Exits non-zero when a request got a 5xx
or no answer at all, or when the server's own count of served requests disagrees with the
clients' (a lost request).
"""

from __future__ import annotations

import argparse
import json
import os
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

import openai

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "load.json"

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


def _request(client: Any, model: str, kind: str, i: int) -> int:
    """Send one request of ``kind``; returns the completion tokens."""
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
        assert r.choices[0].message.tool_calls, r
        return int(r.usage.completion_tokens)
    if kind == "json":
        msgs = [SYSTEM, {"role": "user", "content": f"Describe the weather in {city} as JSON."}]
        rf = {"type": "json_schema", "json_schema": {"name": "w", "schema": ANSWER}}
        r = client.chat.completions.create(
            messages=msgs, response_format=rf, max_tokens=40, **common
        )
        return int(r.usage.completion_tokens)
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
        self.errors: list[str] = []


def _client_loop(url: str, model: str, deadline: float, cid: int, stats: Stats) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
    i = cid
    try:
        while time.monotonic() < deadline:
            kind = KINDS[i % len(KINDS)]
            with stats.lock:
                stats.sent += 1
            t0 = time.monotonic()
            try:
                tokens = _request(client, model, kind, i)
                status = "200"
            except openai.APIStatusError as e:
                status, tokens = str(e.status_code), 0
                with stats.lock:
                    stats.errors.append(f"{kind}: {e.status_code} {e.message[:200]}")
            except openai.APIConnectionError as e:
                status, tokens = "no answer", 0
                with stats.lock:
                    stats.errors.append(f"{kind}: {type(e).__name__}: {e}")
            except AssertionError as e:
                status, tokens = "bad answer", 0
                with stats.lock:
                    stats.errors.append(f"{kind}: {e}")
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
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def _start_server(queue_size: int, threads: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "toolmask.server", "--port", str(port)]
    cmd += ["--queue-size", str(queue_size), "--threads", str(threads), "--log-level", "warning"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited:\n{log.read_text()}")
        try:
            _get(url + "/health")
            return proc, url
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(f"the server did not start:\n{log.read_text()}") from None
            time.sleep(0.3)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--queue-size", type=int, default=16, help="for the server this starts")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads of the server this starts (default 1: the clients share the "
        "machine's cores, and llama.cpp threads spin at barriers when a core is taken)",
    )
    p.add_argument("--url", help="an already running server (default: start one)")
    p.add_argument("--pid", type=int, help="the pid of the --url server, for its RSS")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()

    proc = None
    log = Path(tempfile.mkstemp(prefix="toolmask-load-", suffix=".log")[1])
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        proc, url = _start_server(args.queue_size, args.threads, log)
        pid = proc.pid
    try:
        model = _get(url + "/v1/models")["data"][0]["id"]
        warm = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
        for k, kind in enumerate(KINDS):  # one of each kind: grammars compiled, masks warm
            _request(warm, model, kind, k)
        warm.close()
        health0 = _get(url + "/health")
        load0 = os.getloadavg()
        stats = Stats()
        rss: list[tuple[float, float]] = []
        t_start = time.monotonic()
        deadline = t_start + args.seconds
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
            threading.Thread(target=_client_loop, args=(url, model, deadline, c, stats))
            for c in range(args.clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t_start
        stop.set()
        sampler.join()
        health1 = _get(url + "/health")
        server_served = health1["served"] - health0["served"]
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)

    all_lat = [x for xs in stats.latency.values() for x in xs]
    answered = sum(stats.status.values())
    five_xx = sum(n for s, n in stats.status.items() if s.startswith("5"))
    lost = stats.sent - answered + stats.status.get("no answer", 0)
    mismatch = server_served != stats.ok
    result: dict[str, Any] = {
        "conditions": {
            "model": model,
            "clients": args.clients,
            "seconds": args.seconds,
            "wall_s": round(wall, 1),
            "queue_size": health1["queue_size"],
            "server_threads": None if args.url else args.threads,
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load0],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "mix": list(KINDS),
        },
        "sent": stats.sent,
        "served": stats.ok,
        "server_counted_served": server_served,
        "status": dict(stats.status),
        "lost": lost,
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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    print(f"toolmask serve load test: {args.clients} clients x {args.seconds:g} s, {model}")
    print(f"  load average before/after: {load0[0]:.2f} / {os.getloadavg()[0]:.2f}")
    print(f"{'kind':8} {'served':>7} {'p50 s':>8} {'p99 s':>8}")
    for k, v in stats.latency.items():
        print(f"{k:8} {len(v):7d} {f(_pct(v, 0.5)):>8} {f(_pct(v, 0.99)):>8}")
    print(f"{'all':8} {stats.ok:7d} {f(_pct(all_lat, 0.5)):>8} {f(_pct(all_lat, 0.99)):>8}")
    print(f"sent {stats.sent}, answered {answered}, by status {dict(stats.status)}, lost {lost}")
    print(f"server counted {server_served} served; {stats.tokens} completion tokens")
    r = result["rss_mb"]
    print(f"server RSS MB: first {r['first']}, last {r['last']}, max {r['max']}")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    if five_xx or lost or mismatch:
        print(f"FAIL: {five_xx} 5xx, {lost} lost, server/client served {server_served}/{stats.ok}")
        for e in stats.errors[:10]:
            print("  ", e)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
