"""End to end on SmolLM2 (llama.cpp): the mask's share of decode time, and validity with and
without it.

For each prompt of ``tests/agent/test_e2e.py`` under ``tool_choice="required"``:

* constrained: decode under the turn grammar; per step the model's decode time and the mask
  time (fill_bitmask) are recorded; time to first token with the tools' prefix already in the
  KV cache (warm) and after clearing it (cold);
* unconstrained: the same prompt decoded greedily without a mask: does the reply hold a call
  that parses and validates?

Prints a table and writes ``bench/results/e2e.json``.

    .venv/bin/python bench/e2e.py [--model PATH] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
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
from toolmask.backends.llama_cpp import LlamaCpp, default_model_path  # noqa: E402
from toolmask.tools import ToolTurn  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q))] if s else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--rounds", type=int, default=2, help="passes over the prompts (1 = cold)")
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    backend = LlamaCpp(args.model or default_model_path(), n_ctx=4096)
    turn = ToolTurn(TOOLS, tool_choice="required", special_tokens=backend.vocab.special.values())
    t0 = time.perf_counter()
    compiled = tm.compile(turn.grammar(), backend.vocab)
    compile_s = time.perf_counter() - t0

    def prompt_ids(p: str) -> list[int]:
        msgs = [Message("system", "You are a helpful assistant.\n\n" + turn.prompt())]
        return backend.tokenize(render_chatml([*msgs, Message("user", p)], turn))

    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        steps: list[float] = []
        masks: list[float] = []
        ttft_warm: list[float] = []
        valid = 0
        tokens = 0
        wall = 0.0
        for p in PROMPTS:
            ids = prompt_ids(p)
            g0 = time.perf_counter()
            gen = backend.generate(ids, compiled, max_tokens=args.max_tokens)
            wall += time.perf_counter() - g0
            steps += gen.step_s
            masks += gen.mask_s
            tokens += len(gen.tokens)
            ttft_warm.append(gen.first_token_s)
            parsed = turn.parse(gen.text.decode("utf-8", "replace"))
            valid += bool(parsed.calls) and all(turn.validate(c) == [] for c in parsed.calls)
        rounds.append(
            {
                "round": r,
                "valid": valid,
                "tokens": tokens,
                "tok_per_s": tokens / wall if wall else 0.0,
                "decode_ms_mean": statistics.fmean(steps) * 1e3,
                "mask_ms_mean": statistics.fmean(masks) * 1e3,
                "mask_ms_p99": pct(masks, 0.99) * 1e3,
                "mask_share_mean": statistics.fmean(masks) / statistics.fmean(steps),
                "ttft_ms_mean": statistics.fmean(ttft_warm) * 1e3,
            }
        )
    # cold prefix: clear the context before each prompt
    cold: list[float] = []
    for p in PROMPTS[:5]:
        backend.llm.reset()
        gen = backend.generate(prompt_ids(p), compiled, max_tokens=4)
        cold.append(gen.first_token_s)
    # unconstrained baseline
    free_valid = 0
    free_tokens = 0
    free_wall = 0.0
    for p in PROMPTS:
        g0 = time.perf_counter()
        gen = backend.generate(prompt_ids(p), None, max_tokens=args.max_tokens)
        free_wall += time.perf_counter() - g0
        free_tokens += len(gen.tokens)
        parsed = turn.parse(gen.text.decode("utf-8", "replace"))
        free_valid += bool(parsed.calls) and all(turn.validate(c) == [] for c in parsed.calls)
    report = {
        "model": str(backend.model_path.name),
        "prompts": len(PROMPTS),
        "compile_s": compile_s,
        "constrained": rounds,
        "ttft_cold_prefix_ms_mean": statistics.fmean(cold) * 1e3,
        "unconstrained": {
            "valid": free_valid,
            "tok_per_s": free_tokens / free_wall if free_wall else 0.0,
        },
    }
    print(
        f"model {report['model']}, {len(PROMPTS)} prompts, turn grammar compiled in "
        f"{compile_s * 1e3:.0f} ms"
    )
    for r in rounds:
        print(
            f"round {r['round']}: valid {r['valid']}/{len(PROMPTS)}, {r['tok_per_s']:.1f} tok/s, "
            f"decode {r['decode_ms_mean']:.2f} ms/step, mask {r['mask_ms_mean']:.3f} ms mean "
            f"({100 * r['mask_share_mean']:.1f}% of decode), p99 {r['mask_ms_p99']:.2f} ms, "
            f"TTFT (warm prefix) {r['ttft_ms_mean']:.0f} ms"
        )
    print(f"TTFT with a cold prefix: {report['ttft_cold_prefix_ms_mean']:.0f} ms")
    u = report["unconstrained"]
    print(f"unconstrained: valid {u['valid']}/{len(PROMPTS)}, {u['tok_per_s']:.1f} tok/s")
    out = ROOT / "bench" / "results" / "e2e.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
