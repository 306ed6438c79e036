"""Load test of ``toolmask serve``: N concurrent clients for T seconds, then it stops.

    python bench/load.py                      # starts a server on 127.0.0.1, 4 clients x 60 s
    python bench/load.py --clients 8 --seconds 120 --queue-size 4
    python bench/load.py --url http://127.0.0.1:8000 --pid 1234   # an already running server
    python bench/load.py --clients 4 --queue-size 4 --overload 6 --seconds 60

Each client is a thread with the official ``openai`` client (its own retries off) that sends
requests back to back, cycling through four kinds: plain chat, a required tool call, a
``json_schema`` response and a stream with usage. Every request is accounted for: answered (by
status) or failed to connect. A client that gets a 429 waits what the server's ``retry-after-ms``
(else ``Retry-After``) says and sends the same request again, as the official client does with
retries on (``--no-retry`` counts the 429 as the answer instead); a request still refused when the
time is up counts as answered 429. With ``--overload K`` a second phase on the same server runs
``K`` times the clients and the table compares the served rates. The server's RSS is sampled every
second from ``/proc`` (after one warm-up request of each kind, so lazily built masks are not counted
as growth).

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
        self.refusals = 0  # 429s a client waited out and retried
        self.retry_wait_s = 0.0
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
                except AssertionError as e:
                    status, tokens = "bad answer", 0
                    with stats.lock:
                        stats.errors.append(f"{kind}: {e}")
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


def _phase(
    url: str, model: str, pid: int | None, clients: int, seconds: float, retry: bool
) -> dict[str, Any]:
    """``clients`` clients for ``seconds`` against ``url``; the phase's figures."""
    health0 = _get(url + "/health")
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
    health1 = _get(url + "/health")
    server_served = health1["served"] - health0["served"]
    all_lat = [x for xs in stats.latency.values() for x in xs]
    answered = sum(stats.status.values())
    five_xx = sum(n for s, n in stats.status.items() if s.startswith("5"))
    lost = stats.sent - answered + stats.status.get("no answer", 0)
    return {
        "conditions": {
            "clients": clients,
            "seconds": seconds,
            "wall_s": round(wall, 1),
            "queue_size": health1["queue_size"],
            "retry_after_honoured": retry,
            "loadavg_before": [round(x, 2) for x in load0],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "sent": stats.sent,
        "served": stats.ok,
        "served_per_s": round(stats.ok / wall, 3) if wall else None,
        "server_counted_served": server_served,
        "server_rejected": health1.get("rejected", 0) - health0.get("rejected", 0),
        "status": dict(stats.status),
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


def _print_phase(title: str, r: dict[str, Any]) -> None:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    c = r["conditions"]
    print(f"\n{title}: {c['clients']} clients x {c['seconds']:g} s, queue {c['queue_size']}")
    print(f"  load average before/after: {c['loadavg_before'][0]} / {c['loadavg_after'][0]}")
    print(f"{'kind':8} {'served':>7} {'p50 s':>8} {'p99 s':>8}")
    for k in KINDS:
        v = r["latency_s"][k]
        print(f"{k:8} {v['n']:7d} {f(v['p50']):>8} {f(v['p99']):>8}")
    lat = r["latency_s"]
    print(f"{'all':8} {r['served']:7d} {f(lat['p50']):>8} {f(lat['p99']):>8}")
    print(
        f"sent {r['sent']}, by final status {r['status']}, lost {r['lost']}; "
        f"{r['refusals_retried']} 429s waited out ({r['retry_wait_s']} s in all)"
    )
    print(
        f"served {r['served_per_s']}/s; server counted {r['server_counted_served']} served, "
        f"{r['server_rejected']} refused; {r['completion_tokens']} completion tokens"
    )
    m = r["rss_mb"]
    print(f"server RSS MB: first {m['first']}, last {m['last']}, max {m['max']}")


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
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()

    proc = None
    log = Path(tempfile.mkstemp(prefix="toolmask-load-", suffix=".log")[1])
    if args.url:
        url, pid = args.url.rstrip("/"), args.pid
    else:
        proc, url = _start_server(args.queue_size, args.threads, log)
        pid = proc.pid
    phases: dict[str, dict[str, Any]] = {}
    try:
        model = _get(url + "/v1/models")["data"][0]["id"]
        warm = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=600)
        for k, kind in enumerate(KINDS):  # one of each kind: grammars compiled, masks warm
            _request(warm, model, kind, k)
        warm.close()
        phases["base"] = _phase(url, model, pid, args.clients, args.seconds, args.retry)
        if args.overload > 1:
            n = args.clients * args.overload
            phases["overload"] = _phase(url, model, pid, n, args.seconds, args.retry)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)

    result: dict[str, Any] = {
        "conditions": {
            "model": model,
            "server_threads": None if args.url else args.threads,
            "cpus": os.cpu_count(),
            "mix": list(KINDS),
        },
        **phases["base"],
    }
    if "overload" in phases:
        base_rate = phases["base"]["served_per_s"] or 0
        over_rate = phases["overload"]["served_per_s"] or 0
        result["overload"] = phases["overload"]
        result["overload_served_ratio"] = round(over_rate / base_rate, 3) if base_rate else None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")

    print(f"toolmask serve load test, {model}")
    failed = False
    for name, r in phases.items():
        _print_phase(name, r)
        mismatch = r["server_counted_served"] != r["served"]
        if r["five_xx"] or r["lost"] or mismatch:
            failed = True
            print(
                f"FAIL ({name}): {r['five_xx']} 5xx, {r['lost']} lost, server/client served "
                f"{r['server_counted_served']}/{r['served']}"
            )
            for e in r["errors"][:10]:
                print("  ", e)
    if "overload" in result:
        print(
            f"\n{args.overload}x overload: served rate {result['overload_served_ratio']} of the "
            f"{args.clients}-client rate"
        )
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
