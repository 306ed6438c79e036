"""End to end on a real model through llama.cpp (default: the catalogue's default model,
``--model NAME|PATH``): the mask's share of decode time, and validity with and without it.

For each prompt of ``tests/agent/test_e2e.py`` under ``tool_choice="required"``, greedy:

* masked, with jump-forward (forced text appended as the model's own tokens in one batch):
  per step the model's decode time and the mask time (fill_bitmask); pass 1 meets automaton
  states for the first time, later passes find their masks cached (steady state);
* masked without jump-forward: how many sampling steps the forced text saves;
* unconstrained: the same prompts without a mask: tokens/s, and does the reply hold a call
  that parses and validates?
* the peer: llama.cpp's own GBNF sampler on the same turn grammar (``to_gbnf()``), same prompts;
* time to first token with the tools' prefix already in the KV cache (warm) and cleared (cold).

The prefix is put in the KV cache before the first measured run (one unconstrained token), so
every run, the first pass included, starts from the same cache state.

Prints a table and writes ``bench/results/e2e.json``.

    .venv/bin/python bench/e2e.py [--model qwen2.5-coder-1.5b] [--rounds 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agent.test_e2e import PROMPTS, TOOLS  # noqa: E402

import toolmask as tm  # noqa: E402
from toolmask.agent import Message, render_chatml  # noqa: E402
from toolmask.backends.llama_cpp import LlamaCpp  # noqa: E402
from toolmask.models import DEFAULT_MODEL  # noqa: E402
from toolmask.tools import ToolTurn  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q))] if s else 0.0


def run_pass(
    backend: LlamaCpp,
    turn: ToolTurn,
    compiled: Any,
    prompts: list[list[int]],
    *,
    max_tokens: int,
    jump_forward: bool = True,
) -> dict[str, Any]:
    """Decode every prompt once; per-step model time, mask time, validity, token counts."""
    steps: list[float] = []
    masks: list[float] = []
    ttft: list[float] = []
    valid = tokens = forced = sampled = cut = 0
    wall = 0.0
    for ids in prompts:
        g0 = time.perf_counter()
        gen = backend.generate(ids, compiled, max_tokens=max_tokens, jump_forward=jump_forward)
        wall += time.perf_counter() - g0
        steps += gen.step_s
        masks += gen.mask_s
        tokens += len(gen.tokens)
        forced += gen.forced_tokens
        sampled += gen.sampled_tokens
        cut += gen.finish_reason == "length"
        ttft.append(gen.first_token_s)
        parsed = turn.parse(gen.text.decode("utf-8", "replace"))
        valid += bool(parsed.calls) and all(turn.validate(c) == [] for c in parsed.calls)
    decode = statistics.fmean(steps) if steps else 0.0
    out: dict[str, Any] = {
        "valid": valid,
        "cut_at_max_tokens": cut,
        "tokens": tokens,
        "forced_tokens": forced,
        "sampled_tokens": sampled,
        "model_steps": len(steps),
        "tok_per_s": tokens / wall if wall else 0.0,
        "decode_ms_mean": decode * 1e3,
        "ttft_ms_mean": statistics.fmean(ttft) * 1e3,
    }
    if masks:
        out |= {
            "mask_ms_mean": statistics.fmean(masks) * 1e3,
            "mask_ms_p99": pct(masks, 0.99) * 1e3,
            "mask_share_mean": statistics.fmean(masks) / decode,
            "mask_share_p99": pct(masks, 0.99) / decode,
        }
    return out


def run_gbnf_peer(
    backend: LlamaCpp, turn: ToolTurn, prompts: list[list[int]], *, max_tokens: int
) -> dict[str, Any]:
    """The peer: llama.cpp's own GBNF grammar sampler on the same turn grammar (exported with
    ``to_gbnf()``), same prompts, greedy, through llama-cpp-python's ``create_completion``."""
    import llama_cpp

    grammar = llama_cpp.LlamaGrammar.from_string(turn.grammar().to_gbnf(), verbose=False)
    valid = tokens = cut = 0
    wall = 0.0
    ttft: list[float] = []
    for ids in prompts:
        g0 = time.perf_counter()
        stream = backend.llm.create_completion(
            ids, max_tokens=max_tokens, temperature=0.0, grammar=grammar, stream=True
        )
        text, first, finish, n = "", 0.0, None, 0
        for chunk in stream:  # one chunk per generated token
            n += 1
            if not first:
                first = time.perf_counter() - g0
            choice = chunk["choices"][0]
            text += choice["text"]
            finish = choice.get("finish_reason") or finish
        wall += time.perf_counter() - g0
        ttft.append(first)
        tokens += n
        cut += finish == "length"
        parsed = turn.parse(text)
        valid += bool(parsed.calls) and all(turn.validate(c) == [] for c in parsed.calls)
    return {
        "valid": valid,
        "cut_at_max_tokens": cut,
        "tokens": tokens,
        "forced_tokens": 0,
        "sampled_tokens": tokens,
        "tok_per_s": tokens / wall if wall else 0.0,
        "ttft_ms_mean": statistics.fmean(ttft) * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="a GGUF or a catalogue name")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "e2e.json")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the prompts (1 = cold)")
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    load_before = os.getloadavg()
    backend = LlamaCpp(args.model, n_ctx=4096, n_threads=args.threads)
    # one call per turn, as in the e2e tests: asked for parallel calls, a 135M model repeats
    # its call until max_tokens
    turn = ToolTurn(
        TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        special_tokens=backend.vocab.special.values(),
    )
    t0 = time.perf_counter()
    compiled = tm.compile(turn.grammar(), backend.vocab)
    compile_s = time.perf_counter() - t0
    system = Message("system", "You are a helpful assistant.\n\n" + turn.prompt())
    prompts = [backend.tokenize(render_chatml([system, Message("user", p)], turn)) for p in PROMPTS]
    mt = args.max_tokens
    # the tools' prefix (the system prompt every prompt shares) in the KV cache before any
    # measured run, as every run after the first finds it: else the first pass alone pays
    # its prefill (seconds on a CPU) and its tokens/s is not comparable with the others'
    backend.generate(prompts[0], None, max_tokens=1)
    # first pass: masks computed as states are first seen; later passes: the mask cache is warm
    rounds = [
        {"round": r} | run_pass(backend, turn, compiled, prompts, max_tokens=mt)
        for r in range(args.rounds)
    ]
    no_jump = run_pass(backend, turn, compiled, prompts, max_tokens=mt, jump_forward=False)
    free = run_pass(backend, turn, None, prompts, max_tokens=mt)
    peer = run_gbnf_peer(backend, turn, prompts, max_tokens=mt)
    # cold prefix: the context is cleared before each prompt (warm: the system prompt is cached)
    cold: list[float] = []
    for ids in prompts[:5]:
        backend.llm.reset()
        cold.append(backend.generate(ids, compiled, max_tokens=4).first_token_s)
    steady = rounds[-1]
    report = {
        "model": str(backend.model_path.name),
        "load_avg_before": load_before,
        "n_threads": backend.llm.n_threads,
        "prompts": len(PROMPTS),
        "max_tokens": mt,
        "compile_s": compile_s,
        "constrained": rounds,
        "constrained_no_jump_forward": no_jump,
        "unconstrained": free,
        "peer_llama_cpp_gbnf": peer,
        "ttft_warm_prefix_ms_mean": steady["ttft_ms_mean"],
        "ttft_cold_prefix_ms_mean": statistics.fmean(cold) * 1e3,
        "tokens_saved_by_forced_text": no_jump["sampled_tokens"] - steady["sampled_tokens"],
    }
    print(
        f"model {report['model']} ({report['n_threads']} threads), {len(PROMPTS)} prompts under "
        f"tool_choice=required, max_tokens {mt}; turn grammar compiled in "
        f"{compile_s * 1e3:.0f} ms\n"
    )
    head = (
        "| run | valid | cut | tokens | sampled | forced | tok/s | decode ms/step "
        "| mask ms mean / p99 | mask share mean / p99 | TTFT ms |"
    )
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    runs = [(f"masked, pass {r['round'] + 1}", r) for r in rounds]
    runs += [("masked, no jump-forward", no_jump), ("unconstrained", free)]
    runs += [("peer: llama.cpp GBNF sampler", peer)]
    for name, r in runs:
        mask = (
            f"{r['mask_ms_mean']:.3f} / {r['mask_ms_p99']:.2f}"
            f" | {100 * r['mask_share_mean']:.1f}% / {100 * r['mask_share_p99']:.1f}%"
            if "mask_ms_mean" in r
            else "- | -"
        )
        decode = f"{r['decode_ms_mean']:.2f}" if "decode_ms_mean" in r else "-"
        print(
            f"| {name} | {r['valid']}/{len(PROMPTS)} | {r['cut_at_max_tokens']} | {r['tokens']} "
            f"| {r['sampled_tokens']} | {r['forced_tokens']} | {r['tok_per_s']:.1f} "
            f"| {decode} | {mask} | {r['ttft_ms_mean']:.0f} |"
        )
    print(
        f"\ntokens saved by forced text: {report['tokens_saved_by_forced_text']} sampling steps "
        f"({steady['forced_tokens']} tokens appended in batches)"
    )
    print(
        f"TTFT: {report['ttft_warm_prefix_ms_mean']:.0f} ms with the tools' prefix cached, "
        f"{report['ttft_cold_prefix_ms_mean']:.0f} ms cold"
    )
    out = args.out
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
