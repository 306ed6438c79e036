"""Turns over many tools: compile, subsets, masks and memory at N = 10 ... 2,000 tools.

What is measured, per tool count N (hermes format, ``tool_choice="required"``, the Qwen3
vocabulary from ``quicktok-v1`` as in ``bench/masks.py``, the native backend):

* **cold compile** (ms): a fresh ``GrammarCompiler`` (empty caches and schema memos; the
  vocabulary index is built before the clock starts, it is per vocabulary), a new
  ``ToolTurn`` over the N tools, ``turn.compile(vocab)``: lazy over ``LAZY_MIN_TOOLS`` (32)
  tools (the envelope and the names; each tool's arguments compile when a reply first enters
  them, see ``docs/tools.md`` "Many tools"); **every schema up front**: the same with
  ``lazy=False`` in another fresh compiler (every tool's schema compiled, the whole turn read
  by the automaton), at sizes up to ``--eager-up-to``;
* **first entry into a tool** (ms): from the name position, the bytes of one tool's name and
  ``", "arguments": {`` accepted and the mask there computed: in a lazy turn, that tool's
  schema compiled and the turn's two grammars rebuilt over the names; **entry, tool
  compiled**: the same in a second matcher (the variant is shared);
* **warm new subset** (ms): tools seen before, a new ``allowed_tools`` subset of N/10 tools
  (random, seeded): ``turn.with_tool_choice`` (what an agent policy does), ``compile`` (the
  turn over every tool is cached; the subset's name filter is built and compiled), a matcher,
  and the first mask at the name position (median of 20 new subsets);
* **switch** (ms): back and forth between two subsets seen before: ``with_tool_choice``,
  ``compile`` (cache hits), a matcher and the mask at the name position (median of 20);
  **switch, new turn**: the same from a new ``ToolTurn`` over the tool list (what a server
  request does: O(tools) to read and check the list);
* **name mask** (ms): the bitmask right after ``<tool_call>\\n{"name": "`` on the turn over
  every tool, first computation (cold) and again (warm); **subset name mask**: the same state
  on a subset turn (two cached masks and an AND);
* **argument mask** (ms): inside the arguments of one tool (after ``"arguments": {``), warm;
* **server** (ms): the server's time per request before the first token, over the same tools
  (:func:`server_path`): the request body read (with the server's tool lists), its plan from a
  ``PlanCache`` (its own compiler), the tool prompt, a matcher and the first mask at the name
  position; **new subset**: a request whose ``allowed_tools`` the server has not seen (the
  tools have: median of 20), **subset seen**: one it has (median of 20; each body in a
  buffer written just before its request, as a socket read leaves it), and the same after
  64 MB of memory traffic (a model step's; **caches cold**); the first request,
  which compiles the tools, is in the JSON (``server_first_ms``); **vLLM spec, new subset**:
  the server writes the request's turn spec (JSON text of the body's own member texts) and
  the processors read it with their own tool lists (the same tools seen before) and plan it
  (median of 5; no prompt or mask: vLLM renders the prompt, its mask is the server's);
* **CPU** columns: the same spans in the process's CPU time (``time.process_time``), which a
  shared machine's load inflates far less than wall-clock;
* **memory** (MB): the compiler's own account (``GrammarCompiler.memory()["total"]``: automata,
  masks, vocabulary index, memos and the tool layer's parts) and the process's resident set
  growth over the run.

Tools: the 14 tools of the reference MCP servers (``bench/data/mcp_tools.json``) then
JSONSchemaBench parameter schemas (``tests/data/jsonschemabench``: Glaiveai2K, then
Github_easy), each named after its file, in file order, keeping those that compile on their
own (chosen once by the parent, not timed). Each (N, repeat) runs in its own process, repeats
interleaved across N (``--repeats``); the table shows medians, the JSON every run, with the
machine's load average before and after. Wall-clock on a shared machine: no assertion.

    .venv/bin/python bench/many_tools.py [--sizes 10,100,300,1000,2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

RESULTS = ROOT / "bench" / "results"
MCP_TOOLS = ROOT / "bench" / "data" / "mcp_tools.json"
BENCH_DIR = ROOT / "tests" / "data" / "jsonschemabench"
SPLITS = ("Glaiveai2K", "Github_easy")
FMT = "hermes"
NAME_PREFIX = b'\n{"name": "'


def _name(raw: str, seen: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:56] or "tool"
    name, k = base, 1
    while name in seen:
        k += 1
        name = f"{base}_{k}"
    seen.add(name)
    return name


def corpus(limit: int) -> list[dict[str, Any]]:
    """OpenAI tool dicts: the MCP servers' tools, then JSONSchemaBench schemas, each kept only
    when a turn over it alone compiles (checked with a throwaway compiler)."""
    import toolmask as tm

    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    data = json.loads(MCP_TOOLS.read_text(encoding="utf-8"))
    raw: list[tuple[str, Any, str]] = []
    for server in data["servers"].values():
        raw += [(t["name"], t["inputSchema"], t.get("description", "")) for t in server["tools"]]
    for split in SPLITS:
        with gzip.open(BENCH_DIR / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                name = rec["name"].split("---")[-1]
                raw.append((name, rec["schema"], rec.get("description", "")))
    checker = tm.GrammarCompiler()
    with checker.activate():
        for name, schema, desc in raw:
            if len(out) >= limit:
                break
            spec = {
                "type": "function",
                "function": {
                    "name": _name(name, seen),
                    "description": str(desc)[:200],
                    "parameters": schema,
                },
            }
            try:
                tm.ToolTurn([spec], FMT, "required").grammar()
            except Exception:  # a schema toolmask refuses is left out
                continue
            out.append(spec)
    return out


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def worker(specs: list[dict[str, Any]], seed: int, eager: bool) -> dict[str, Any]:
    """One cold process: every measure of the module docstring for these tools."""
    import numpy as np

    import toolmask as tm

    vocab = tm.Vocabulary.from_quicktok("qwen3")
    special = frozenset(vocab.special.values())
    tools = [tm.Tool.from_openai(s) for s in specs]
    compiler = tm.GrammarCompiler()
    out: dict[str, Any] = {"n": len(tools), "backend": compiler.backend}
    words = (vocab.vocab_size + 31) // 32
    bm = np.zeros(words, dtype=np.int32)
    with compiler.activate():
        compiler.vocab_index(vocab)  # per vocabulary, not per turn
        rss0 = _rss_kb()
        t0, c0 = time.perf_counter(), time.process_time()
        turn = tm.ToolTurn(tools, FMT, "required", special_tokens=special)
        compiled = turn.compile(vocab)  # lazy over LAZY_MIN_TOOLS tools
        out["cold_ms"] = _ms(t0)
        out["cold_cpu_ms"] = (time.process_time() - c0) * 1e3
        out["lazy"] = isinstance(compiled, tm.tools.LazyTurnGrammar)

        def at_name(c: Any) -> Any:
            m = c.matcher()
            assert m.accept_special("<tool_call>") and m.accept_bytes(NAME_PREFIX)
            return m

        m = at_name(compiled)
        t0 = time.perf_counter()
        m.fill_bitmask(bm)
        out["name_mask_cold_ms"] = _ms(t0)
        out["name_mask_allowed"] = int(np.unpackbits(bm.view(np.uint8)).sum())
        t0 = time.perf_counter()
        m.fill_bitmask(bm)
        out["name_mask_warm_ms"] = _ms(t0)

        # the first reply into one tool's arguments: that tool's compile (lazy), the mask
        tool = tools[len(tools) // 2]
        t0 = time.perf_counter()
        assert m.accept_bytes(tool.name.encode() + b'", "arguments": {')
        m.fill_bitmask(bm)
        out["enter_tool_ms"] = _ms(t0)
        t0 = time.perf_counter()
        m.fill_bitmask(bm)
        out["arg_mask_warm_ms"] = _ms(t0)
        m2 = at_name(compiled)
        t0 = time.perf_counter()
        assert m2.accept_bytes(tool.name.encode() + b'", "arguments": {')
        m2.fill_bitmask(bm)
        out["enter_again_ms"] = _ms(t0)

        rng = random.Random(seed)
        names = [t.name for t in tools]
        k = max(1, len(tools) // 10)

        def choice(sub: list[str]) -> dict[str, Any]:
            return {"type": "allowed_tools", "mode": "required", "tools": sub}

        subsets = [rng.sample(names, k) for _ in range(22)]
        t0 = time.perf_counter()
        c = turn.with_tool_choice(choice(subsets[0])).compile(vocab)
        sm = at_name(c)
        sm.fill_bitmask(bm)
        out["warm_subset_first_ms"] = _ms(t0)  # also builds the filters' any-value rules
        out["subset_allowed_at_name"] = int(np.unpackbits(bm.view(np.uint8)).sum())
        t0 = time.perf_counter()
        sm.fill_bitmask(bm)
        out["subset_name_mask_warm_ms"] = _ms(t0)
        news: list[float] = []
        news_cpu: list[float] = []
        for sub in subsets[1:21]:
            t0, c0 = time.perf_counter(), time.process_time()
            at_name(turn.with_tool_choice(choice(sub)).compile(vocab)).fill_bitmask(bm)
            news.append(_ms(t0))
            news_cpu.append((time.process_time() - c0) * 1e3)
        out["warm_subset_ms"] = statistics.median(news)
        out["warm_subset_cpu_ms"] = statistics.median(news_cpu)
        switches: list[float] = []
        fresh: list[float] = []
        for i in range(20):
            sub = subsets[i % 2]
            t0 = time.perf_counter()
            at_name(turn.with_tool_choice(choice(sub)).compile(vocab)).fill_bitmask(bm)
            switches.append(_ms(t0))
            t0 = time.perf_counter()
            again = tm.ToolTurn(tools, FMT, choice(sub), special_tokens=special)
            at_name(again.compile(vocab)).fill_bitmask(bm)
            fresh.append(_ms(t0))
        out["switch_ms"] = statistics.median(switches)
        out["switch_new_turn_ms"] = statistics.median(fresh)
        mem = compiler.memory()
        out["memory_mb"] = mem["total"] / 1e6
        out["rss_growth_mb"] = (_rss_kb() - rss0) / 1e3
    fresh = [rng.sample(names, k) for _ in range(5)]  # for the spec path: plans not made yet
    out.update(server_path(specs, vocab, subsets, choice, fresh))
    out["eager_cold_cpu_ms"] = None
    if eager:  # every schema up front, in a compiler of its own (cold caches)
        other = tm.GrammarCompiler()
        with other.activate():
            other.vocab_index(vocab)
            t0, c0 = time.perf_counter(), time.process_time()
            tm.ToolTurn(tools, FMT, "required", special_tokens=special).compile(vocab, lazy=False)
            out["eager_cold_ms"] = _ms(t0)
            out["eager_cold_cpu_ms"] = (time.process_time() - c0) * 1e3
    return out


def server_path(
    specs: list[dict[str, Any]],
    vocab: Any,
    subsets: list[list[str]],
    choice: Any,
    fresh: list[list[str]],
) -> dict[str, Any]:
    """The server's time per request before the first token, for the same tools: the request
    body (made by the client, not timed) read by ``parse_chat_request`` with the server's tool
    lists, its plan from a ``PlanCache`` (its own compiler, server limits), the tool prompt,
    a matcher and the first mask at the name position. A first request (the tools compiled),
    then the new subsets, then subsets seen before."""
    import numpy as np

    import toolmask as tm
    from toolmask.server._plans import PlanCache
    from toolmask.server._protocol import parse_chat_request

    plans = PlanCache(vocab, tm.SERVER_LIMITS)
    plans.compiler.vocab_index(vocab)  # per vocabulary, not per request
    bm = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    msgs = [{"role": "user", "content": "Which tool?"}]

    def body(sub: list[str]) -> bytes:
        raw = {"model": "m", "messages": msgs, "tools": specs, "tool_choice": choice(sub)}
        return json.dumps(raw).encode()

    cpu: list[float] = []
    # a server before tool lists were kept reads every request's tools (for a before/after run)
    lists = {"tool_lists": plans.tool_lists} if hasattr(plans, "tool_lists") else {}

    def request(raw: bytes) -> float:
        t0, c0 = time.perf_counter(), time.process_time()
        req = parse_chat_request(raw, limits=plans.limits, **lists)
        plan = plans.get(req)
        assert plan.tool_prompt and plan.compiled is not None
        m = plan.compiled.matcher()
        assert m.accept_special("<tool_call>") and m.accept_bytes(NAME_PREFIX)
        m.fill_bitmask(bm)
        cpu.append((time.process_time() - c0) * 1e3)
        return _ms(t0)

    out: dict[str, Any] = {"server_first_ms": request(body(subsets[0]))}
    out["server_new_subset_ms"] = statistics.median(request(body(s)) for s in subsets[1:21])
    out["server_new_subset_cpu_ms"] = statistics.median(cpu[1:])
    # each request's body in a buffer written just before it, as the server's read of the
    # socket leaves it (not timed): a body made long before would be read from memory
    seen = [body(subsets[0]), body(subsets[1])]
    out["server_seen_subset_ms"] = statistics.median(
        request(bytes(bytearray(seen[i % 2]))) for i in range(20)
    )
    # the same after a model step's memory traffic (64 MB written, not timed): what the server
    # kept from earlier requests is read from memory, the new body from the caches
    traffic = bytearray(64 << 20)

    def after_step(i: int) -> bytes:
        traffic[:] = bytes([i & 0xFF]) * len(traffic)
        return bytes(bytearray(seen[i % 2]))

    out["server_seen_cold_ms"] = statistics.median(request(after_step(i)) for i in range(20))

    # the vLLM processors' path: the server writes the request's turn spec from the body it
    # read, the processors read it with their own tool lists (another process: the first spec
    # over these tools is read whole) and plan it (no prompt: vLLM renders it)
    spec_lists = type(plans.tool_lists)() if hasattr(plans, "tool_lists") else None
    if spec_lists is not None:
        from toolmask.server import read_turn_spec, turn_spec

        def spec_of(raw: bytes) -> bytes:
            return turn_spec(raw, "hermes", reasoning_open=False, tool_lists=plans.tool_lists)

        read_turn_spec(spec_of(body(subsets[0])), spec_lists)  # their first one: not timed

    def spec_request(sub: list[str]) -> float:
        raw = body(sub)  # made by the client, not timed
        parse_chat_request(raw, limits=plans.limits, **lists)  # the server's read: not timed
        t0 = time.perf_counter()
        if spec_lists is None:  # a tree before turn specs were text: the parsed request
            req = parse_chat_request(json.loads(raw), limits=plans.limits, **lists)
        else:
            req = read_turn_spec(spec_of(raw), spec_lists)[0]
        plan = plans.get(req)
        assert plan.compiled is not None
        return _ms(t0)

    out["spec_new_subset_ms"] = statistics.median(spec_request(s) for s in fresh)
    return out


def _run_worker(specs: list[dict[str, Any]], seed: int, eager: bool) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(specs, f)
        path = f.name
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", path, "--seed", str(seed)]
            + (["--eager"] if eager else []),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


COLUMNS = [
    ("n", "tools", "{:d}"),
    ("cold_ms", "cold compile (ms)", "{:.0f}"),
    ("cold_cpu_ms", "cold, CPU (ms)", "{:.0f}"),
    ("eager_cold_cpu_ms", "every schema up front, CPU (ms)", "{:.0f}"),
    ("enter_tool_ms", "first entry into a tool (ms)", "{:.1f}"),
    ("enter_again_ms", "entry, tool compiled (ms)", "{:.2f}"),
    ("warm_subset_ms", "warm, new subset (ms)", "{:.1f}"),
    ("warm_subset_cpu_ms", "new subset, CPU (ms)", "{:.1f}"),
    ("switch_ms", "subset switch (ms)", "{:.2f}"),
    ("switch_new_turn_ms", "switch, new turn (ms)", "{:.2f}"),
    ("server_new_subset_ms", "server, new subset (ms)", "{:.2f}"),
    ("server_new_subset_cpu_ms", "server, new subset, CPU (ms)", "{:.2f}"),
    ("server_seen_subset_ms", "server, subset seen (ms)", "{:.2f}"),
    ("server_seen_cold_ms", "server, subset seen, caches cold (ms)", "{:.2f}"),
    ("spec_new_subset_ms", "vLLM spec, new subset (ms)", "{:.1f}"),
    ("name_mask_cold_ms", "name mask cold (ms)", "{:.2f}"),
    ("name_mask_warm_ms", "name mask warm (ms)", "{:.3f}"),
    ("subset_name_mask_warm_ms", "subset name mask warm (ms)", "{:.3f}"),
    ("arg_mask_warm_ms", "arg mask warm (ms)", "{:.3f}"),
    ("memory_mb", "compiler memory (MB)", "{:.0f}"),
    ("rss_growth_mb", "RSS growth (MB)", "{:.0f}"),
]


def table(rows: list[dict[str, Any]]) -> str:
    head = "| " + " | ".join(c[1] for c in COLUMNS) + " |"
    sep = "|" + "|".join("---" for _ in COLUMNS) + "|"

    def cell(v: Any, fmt: str) -> str:
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)

    body = ["| " + " | ".join(cell(r[k], fmt) for k, _, fmt in COLUMNS) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,300,1000,2000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--eager-up-to",
        type=int,
        default=1000,
        help="also compile every schema up front (lazy=False) at sizes up to this",
    )
    ap.add_argument("--eager", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS / "many_tools.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        specs = json.loads(Path(args.worker).read_text(encoding="utf-8"))
        print(json.dumps(worker(specs, args.seed, args.eager)))
        return
    sizes = [int(x) for x in args.sizes.split(",")]
    load_before = os.getloadavg()
    specs = corpus(max(sizes))
    if len(specs) < max(sizes):
        sys.exit(f"only {len(specs)} tools compile on their own; ask for fewer")
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):  # interleaved: every size once per repeat
        for n in sizes:
            r = _run_worker(specs[:n], seed=rep, eager=n <= args.eager_up_to)
            r["repeat"] = rep
            r["load"] = os.getloadavg()
            runs.append(r)
            print(
                f"repeat {rep} n={n}: cold {r['cold_ms']:.0f} ms, switch "
                f"{r['switch_ms']:.2f} ms (load {r['load'][0]:.2f})",
                flush=True,
            )
    medians = []
    for n in sizes:
        mine = [r for r in runs if r["n"] == n]
        row: dict[str, Any] = {"n": n}
        for k, _, _ in COLUMNS[1:]:
            xs = [r[k] for r in mine if r.get(k) is not None]
            row[k] = statistics.median(xs) if xs else None
        medians.append(row)
    print(table(medians))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "format": FMT,
        "vocab": "qwen3 (quicktok-v1)",
        "tool_choice": "required; subsets: allowed_tools of n/10 tools",
        "medians": medians,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
