"""Answer quality on BFCL v4 dev questions through ``toolmask serve``, next to llama-cpp-python's
OpenAI server on the same GGUF and, where vLLM is installed, ``toolmask serve --engine vllm`` and
vLLM's own server on the same model written as a Hugging Face folder, in the same run, with the
official ``openai`` client.

    python bench/quality.py                        # toolmask and llama-cpp-python
    python bench/quality.py --per-category 40 --servers toolmask
    python bench/quality.py --servers toolmask toolmask-vllm vllm-serve \
        --vllm-python /path/to/vllm-venv/bin/python   # vLLM in its own virtualenv

Per server and ``tool_choice`` mode (``auto``; ``required`` on the questions that need a call;
a named function on ``multiple``, where one call is expected): call rate on the questions that
need a call, no-call rate on ``live_irrelevance``, the share of calls that are schema-valid,
AST matches (BFCL's rules, order-free: ``bench/_bfcl.py``), errors, and latency p50/max.

The peer is ``python -m llama_cpp.server --chat_format chatml-function-calling`` (its
function-calling path: a grammar that picks ``functions.<name>:`` or ``message:`` first, then
a JSON-Schema grammar per call). Both get the same messages, tools and ``tool_choice``, greedy
decoding (``temperature=0``; ``--temperature`` to change, ``--temperature default`` to send
none); toolmask gets no ``max_tokens`` (its server default applies), the peer the same budget
explicitly (its own default is the whole context). Servers run one after the other with the
same thread count. Tool names are sent with dots replaced by underscores, as BFCL does for
OpenAI models. ``--concurrency N`` keeps N requests in flight (the vLLM servers batch them; the
llama.cpp servers queue them), so latency is then measured under that load.

``toolmask-vllm`` is ``toolmask serve --engine vllm`` (toolmask's logits processor in vLLM's
engine; ``--max-tokens`` as for ``toolmask``). ``vllm-serve`` is the peer: vLLM's OpenAI server
with its hermes tool parser, ``--enable-auto-tool-choice`` and ``--tool-strict-level`` (default
``parameter``: xgrammar structural tags constrain the ``<tool_call>`` envelope and each tool's
argument schema under every ``tool_choice``, ``auto`` included, where the tag is triggered by
``<tool_call>``), and ``bench/templates/smollm2_hermes_tools.jinja`` as chat template, which renders
the prompt ``toolmask serve`` renders byte for byte (SmolLM2's own template knows no tools). Both
take vLLM's engine arguments from ``--vllm-args`` and run under ``--vllm-python``; vLLM's CPU
backend binds one core for compute (and keeps one for itself) on this 2-core machine whatever
``--threads`` says.

Writes ``bench/results/quality.json`` and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jsonschema
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _bfcl
from load import SERVED_NAME, VLLM_CPU_ARGS, vllm_serve_cmd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "quality.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _model_path(model: str | None) -> str:
    """The GGUF every server runs: a file, or a catalogue name (pulled on first use)."""
    from toolmask.models import resolve_model

    return str(resolve_model(model))


def _model_title(model: str | None) -> str:
    from toolmask.models import CATALOGUE, DEFAULT_MODEL

    spec = CATALOGUE.get(model or DEFAULT_MODEL)
    return f"{spec.title} GGUF ({spec.name})" if spec else str(model)


SERVERS = (
    "toolmask",
    "toolmask-free",
    "llama-server",
    "llama-cpp-python",
    "toolmask-vllm",
    "vllm-serve",
)
#: the servers that are toolmask serve (no max_tokens sent: the server's --max-tokens applies);
#: toolmask-free is toolmask serve --no-grammar: unconstrained decoding read by its parser
TOOLMASK = ("toolmask", "toolmask-free", "toolmask-vllm")


def start(server: str, args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    threads, max_tokens = args.threads, args.max_tokens
    vargs = shlex.split(args.vllm_args)
    gguf = _model_path(args.model)
    if server in ("toolmask", "toolmask-free"):
        cmd = [sys.executable, "-m", "toolmask.server", "--port", str(port), "--model", gguf]
        cmd += ["--threads", str(threads), "--max-tokens", str(max_tokens)]
        if server == "toolmask-free":
            cmd.append("--no-grammar")
    elif server == "llama-server":  # llama.cpp's own server: its template, parser, lazy grammar
        from _llama_server import ensure_llama_server

        binary = ensure_llama_server()
        env["LD_LIBRARY_PATH"] = str(binary.parent)
        cmd = [str(binary), "-m", gguf, "--jinja", "--port", str(port), "-t", str(threads)]
        cmd += ["-c", "4096", "-np", "1", "--no-webui"]
    elif server == "toolmask-vllm":
        cmd = [args.vllm_python, "-m", "toolmask.server", "--engine", "vllm", "--port", str(port)]
        cmd += ["--max-tokens", str(max_tokens), "--", *vargs]
    elif server == "vllm-serve":
        cmd = vllm_serve_cmd(args.vllm_python, port, 16, args.tool_strict_level, vargs)
    else:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", gguf]
        cmd += ["--chat_format", "chatml-function-calling", "--port", str(port)]
        cmd += ["--n_threads", str(threads), "--n_ctx", "4096", "--verbose", "False"]
    out = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"{server} exited: {log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(base + "/v1/models", timeout=5).read()
            return proc, base
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{server} did not start: {log.read_text()[-3000:]}") from None
            time.sleep(0.5)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def modes_for(q: _bfcl.Question) -> list[tuple[str, Any]]:
    if not q.tools:
        return [("auto", "auto")]
    out: list[tuple[str, Any]] = [("auto", "auto")]
    if q.expects_call:
        out.append(("required", "required"))
    if q.category == "multiple" and q.answers:
        name = next(iter(q.answers[0]))
        wire = next(w for w, n in q.wire_to_name.items() if n == name)
        out.append(("named", {"type": "function", "function": {"name": wire}}))
    return out


def ask(
    client: Any,
    server: str,
    q: _bfcl.Question,
    choice: Any,
    args: argparse.Namespace,
    sampling: str = "plain",
) -> dict[str, Any]:
    model = {"llama-cpp-python": "x", "llama-server": "x"}.get(server, SERVED_NAME)
    if server in ("toolmask", "toolmask-free"):
        model = "default"
    kw: dict[str, Any] = {"model": model}
    if sampling != "plain":  # toolmask's decoding mode (its server's extra request field)
        kw["extra_body"] = {"sampling": sampling}
    if args.temperature is not None:
        kw["temperature"] = args.temperature
    if server not in TOOLMASK:
        kw["max_tokens"] = args.max_tokens
    if q.tools:
        kw["tools"] = q.tools
        kw["tool_choice"] = choice
    t0 = time.perf_counter()
    try:
        r = client.chat.completions.create(messages=q.messages, **kw)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e)[:200]}", "latency": time.perf_counter() - t0}
    latency = time.perf_counter() - t0
    msg = r.choices[0].message
    calls: list[dict[str, Any]] = []
    for c in msg.tool_calls or []:
        item: dict[str, Any] = {"wire": c.function.name, "raw": c.function.arguments}
        try:
            args_obj = json.loads(c.function.arguments)
            item["args"] = args_obj
            schema = q.schemas.get(c.function.name)
            if schema is None:
                item["valid"] = False
                item["why"] = "unknown tool"
            else:
                errs = list(jsonschema.Draft202012Validator(schema).iter_errors(args_obj))
                item["valid"] = not errs
                if errs:
                    item["why"] = errs[0].message[:120]
        except json.JSONDecodeError as e:
            item["valid"] = False
            item["why"] = f"not JSON: {e}"
        calls.append(item)
    out: dict[str, Any] = {
        "latency": latency,
        "finish": r.choices[0].finish_reason,
        "content": (msg.content or "")[:1000],
        "calls": calls,
        "completion_tokens": r.usage.completion_tokens if r.usage else None,
        "prompt_tokens": r.usage.prompt_tokens if r.usage else None,
    }
    if q.answers is not None:
        pairs = [
            (q.wire_to_name.get(c["wire"], c["wire"]), c["args"])
            for c in calls
            if isinstance(c.get("args"), dict)
        ]
        out["ast"] = len(pairs) == len(calls) and _bfcl.ast_match(pairs, q.answers)
    return out


def ask_row(
    client: Any,
    server: str,
    q: _bfcl.Question,
    mode: str,
    choice: Any,
    args: argparse.Namespace,
    sampling: str = "plain",
) -> dict[str, Any]:
    """:func:`ask`, with the question's identity and mode in the row (a toolmask server's
    decoding mode other than plain labels the server: ``toolmask[exact]``)."""
    res = ask(client, server, q, choice, args, sampling)
    res.update(
        server=server if sampling == "plain" else f"{server}[{sampling}]",
        mode=mode,
        id=q.id,
        category=q.category,
        group=GROUPS[q.category],
        expects_call=q.expects_call,
        has_answers=q.answers is not None,
    )
    return res


#: BFCL category -> the group the tables report: one call expected, several, or none
GROUPS = {
    "multiple": "single",
    "live_relevance": "single",
    "parallel_multiple": "parallel",
    "live_parallel": "parallel",
    "live_irrelevance": "irrelevant",
}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (server, mode) and per (server, mode, group): the figures of the table."""
    out: dict[str, Any] = {}
    keys = {(r["server"], r["mode"], "all") for r in rows}
    keys |= {(r["server"], r["mode"], r.get("group", "all")) for r in rows}
    for key in sorted(keys):
        sel = [
            r
            for r in rows
            if (r["server"], r["mode"]) == key[:2] and key[2] in ("all", r.get("group", "all"))
        ]
        need = [r for r in sel if r["expects_call"]]
        irr = [r for r in sel if not r["expects_call"]]
        answered = [r for r in sel if "error" not in r]
        calls = [c for r in answered for c in r["calls"]]
        with_answers = [r for r in answered if "ast" in r]
        lat = [r["latency"] for r in sel]
        out[f"{key[0]}/{key[1]}/{key[2]}"] = {
            "server": key[0],
            "mode": key[1],
            "group": key[2],
            "requests": len(sel),
            "errors": len(sel) - len(answered),
            "call_rate": _rate([bool(r.get("calls")) for r in need]),
            "need_call": len(need),
            "no_call_rate": _rate([not r.get("calls") and "error" not in r for r in irr]),
            "irrelevant": len(irr),
            "calls": len(calls),
            "schema_valid": _rate([c["valid"] for c in calls]),
            "ast": _rate([r["ast"] for r in with_answers]),
            "ast_n": len(with_answers),
            "ast_all": _rate([bool(r.get("ast")) for r in sel if r["has_answers"]]),
            "cut": sum(1 for r in answered if r.get("finish") == "length"),
            "latency_p50_s": round(statistics.median(lat), 2) if lat else None,
            "latency_max_s": round(max(lat), 2) if lat else None,
        }
    return out


def _rate(xs: list[bool]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_table(summary: dict[str, Any]) -> None:
    print(
        "\n| server | mode | questions | requests | call rate (need a call) | no-call rate "
        "(irrelevant) | calls schema-valid | AST (answered) | AST (all) | errors | cut | "
        "latency p50 / max |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in summary.values():
        print(
            f"| {s['server']} | {s['mode']} | {s['group']} | {s['requests']} | "
            f"{_pct(s['call_rate'])} "
            f"(n={s['need_call']}) | {_pct(s['no_call_rate'])} (n={s['irrelevant']}) | "
            f"{_pct(s['schema_valid'])} of {s['calls']} | {_pct(s['ast'])} (n={s['ast_n']}) | "
            f"{_pct(s['ast_all'])} | {s['errors']} | {s['cut']} | "
            f"{s['latency_p50_s']} s / {s['latency_max_s']} s |"
        )


def write_result(
    args: argparse.Namespace,
    questions: list[_bfcl.Question],
    rows: list[dict[str, Any]],
    uptime: dict[str, list[str]],
    started: float,
) -> dict[str, Any]:
    """Summarise the rows so far and write them to ``args.out`` (after every answer, so a long
    run on a busy machine leaves its results)."""
    summary = summarise(rows)
    uses_vllm = bool({"toolmask-vllm", "vllm-serve"} & set(args.servers))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {args.threads} threads",
        "model": _model_title(args.model)
        + (
            "; the vLLM servers: its float32 Hugging Face export "
            "(toolmask.backends.transformers.export_hf)"
            if uses_vllm
            else ""
        ),
        "servers": args.servers,
        "vllm_args": args.vllm_args if uses_vllm else None,
        "tool_strict_level": args.tool_strict_level if "vllm-serve" in args.servers else None,
        "uptime_before_after": uptime,
        "questions": {c: sum(1 for q in questions if q.category == c) for c in _bfcl.CATEGORIES},
        "temperature": args.temperature,
        "sampling": args.sampling,
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
        "elapsed_s": round(time.time() - started, 1),
        "summary": summary,
        "rows": rows,
    }
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--servers", nargs="*", choices=SERVERS, default=["toolmask", "llama-cpp-python"]
    )
    p.add_argument(
        "--model",
        default=None,
        help="the GGUF every server runs: a file or a catalogue name (default: the default "
        "model, toolmask models)",
    )
    p.add_argument("--per-category", type=int, default=16)
    p.add_argument("--irrelevant", type=int, default=24, help="live_irrelevance questions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument(
        "--temperature",
        type=lambda v: None if v == "default" else float(v),
        default=0.0,
        help="sampling temperature; 'default' sends none, so each server's defaults apply",
    )
    p.add_argument("--max-tokens", type=int, default=512, help="the completion budget")
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="requests in flight at once (default 1; the latency figures are under this load)",
    )
    p.add_argument("--vllm-python", default=sys.executable, help="the Python that has vLLM")
    p.add_argument("--vllm-args", default=VLLM_CPU_ARGS, help="vLLM engine arguments (both)")
    p.add_argument(
        "--tool-strict-level",
        default="parameter",
        choices=["auto", "function", "parameter"],
        help="vllm-serve: vLLM's --tool-strict-level (default: parameter)",
    )
    p.add_argument(
        "--sampling",
        nargs="+",
        default=["plain"],
        choices=["plain", "exact", "aligned"],
        help="toolmask servers: the decoding modes to ask for, each request's 'sampling' field "
        "(default: plain); a mode other than plain shows as toolmask[MODE]",
    )
    p.add_argument("--categories", nargs="+", default=None, help="BFCL categories (default: all)")
    p.add_argument(
        "--modes",
        nargs="+",
        default=["auto", "required", "named"],
        choices=["auto", "required", "named"],
        help="the tool_choice modes to ask (default: all three)",
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    cats = ["multiple", "parallel_multiple", "live_parallel", "live_relevance"]
    if args.categories:
        cats = [c for c in cats if c in args.categories]
    questions = _bfcl.load(cats, per_category=args.per_category, seed=args.seed)
    if args.irrelevant:
        questions += _bfcl.load(["live_irrelevance"], per_category=args.irrelevant, seed=args.seed)
    rows: list[dict[str, Any]] = []
    logdir = Path(tempfile.mkdtemp(prefix="quality-"))
    started = time.time()
    uptime: dict[str, list[str]] = {}
    for server in args.servers:
        uptime[server] = [_uptime()]
        t0 = time.monotonic()
        proc, base = start(server, args, logdir / f"{server}.log")
        print(f"  {server} up in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0, timeout=600)
        try:
            work = [  # one question's requests together: its prompt's KV prefix is reused
                (client, server, q, mode, choice, args, sampling)
                for q in questions
                for sampling in (args.sampling if server in TOOLMASK else ["plain"])
                for mode, choice in modes_for(q)
                if mode in args.modes
            ]
            with ThreadPoolExecutor(args.concurrency) as pool:  # results kept in order
                done = pool.map(lambda w: ask_row(*w), work)
                for k, res in enumerate(done):
                    rows.append(res)
                    print(f"  {server} {k + 1}/{len(work)} {res['id']}", file=sys.stderr)
                    write_result(args, questions, rows, uptime, started)
        finally:
            client.close()
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
            uptime[server].append(_uptime())
    result = write_result(args, questions, rows, uptime, started)
    print(f"\n## BFCL v4 dev quality ({result['date']}, {result['machine']}, {result['model']})")
    temp = "server default" if args.temperature is None else args.temperature
    print(f"questions: {result['questions']}, temperature {temp}")
    for server, (before, after) in uptime.items():
        print(f"{server}: uptime before {before}; after {after}")
    print_table(result["summary"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
