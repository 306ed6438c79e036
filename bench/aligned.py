"""Does the decoder sample what the model means among the valid strings? Plain masking, the
exact-branch mode and the aligned sampler against the exact distribution, on grammars whose
language is small enough to enumerate.

The model is the embedded SmolLM2-135M (Q4_1 GGUF, llama-cpp-python). For each grammar:

1. **The exact distribution.** The target is the model's own distribution over the token
   sequences the grammar allows, conditioned on validity: ``P(s) ∝ Σ_t p(t)`` over every
   tokenisation ``t`` of the string ``s`` the masks allow, with the end of the turn scored as
   the decoder scores it (``end_on_exit``: the end-of-turn token plus what the grammar forbids,
   where the grammar can end but goes on). It is computed by a best-first walk of the masked
   token tree, scoring each node with the model, until the unexplored mass is below
   ``--tolerance`` of the mass found (the remainder is reported: it bounds the error).
2. **Samples.** ``--samples`` draws (default 2,000) at temperature 1 with each mode, through
   ``DecodingBackend.generate``, the code the library runs. The model's rows are memoised by
   token prefix (each computed once, token by token, so every mode and the enumeration see the
   same numbers; llama.cpp's logits depend slightly on how tokens are batched).
3. **Figures.** Total variation and KL(empirical ‖ exact) to the exact distribution; the noise
   floor (the expected TV and KL of an exact sampler at the same n, by simulation); the mass of
   non-canonical tokenisations; the distortion meter over each mode's samples (how often the
   mask removed the model's top-1 token on the sampled path, and the mass it removed); and the
   cost, measured separately on the real backend (``--cost-samples`` generations per mode):
   model calls and evaluated token positions per generated token, milliseconds per reply.

    python bench/aligned.py                       # all grammars, 2,000 samples per mode
    python bench/aligned.py --samples 500 --grammars cities

Writes ``bench/results/aligned.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import toolmask as tm
from toolmask.backends import DecodingBackend
from toolmask.backends.llama_cpp import LlamaCpp
from toolmask.decoding import DecodingParams
from toolmask.decoding._branch import find_branch
from toolmask.decoding._scoring import score_branch
from toolmask.sampling import SamplingParams, bitmask_to_bool

RESULTS = Path(__file__).resolve().parent / "results"

CITIES = [
    "Amsterdam", "Athens", "Barcelona", "Belgrade", "Berlin", "Bratislava", "Brussels",
    "Bucharest", "Budapest", "Copenhagen", "Dublin", "Edinburgh", "Florence", "Geneva",
    "Hamburg", "Helsinki", "Lisbon", "London", "Madrid", "Milan", "Munich", "Oslo", "Paris",
    "Prague", "Riga", "Rome", "Stockholm", "Vienna", "Warsaw", "Zurich",
]  # fmt: skip


def chatml(system: str, user: str) -> str:
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def grammars() -> dict[str, tuple[tm.Grammar, str, Any]]:
    """name -> (grammar, prompt text, wire format for the meter's sites or None)."""
    cities = tm.Grammar.from_json_schema({"enum": CITIES})
    settings = tm.Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {
                "unit": {"enum": ["celsius", "fahrenheit", "kelvin"]},
                "alert": {"type": "boolean"},
                "month": {"type": "integer", "minimum": 1, "maximum": 12},
            },
            "required": ["unit", "alert", "month"],
            "additionalProperties": False,
        },
        whitespace="spaced",
    )
    tools = [
        tm.Tool.from_openai(
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather in a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "city": {"enum": ["Paris", "London", "Tokyo", "Lima"]},
                            "unit": {"enum": ["c", "f"]},
                        },
                        "required": ["city", "unit"],
                        "additionalProperties": False,
                    },
                },
            }
        ),
        tm.Tool.from_openai(
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "The current time in a time zone.",
                    "parameters": {
                        "type": "object",
                        "properties": {"zone": {"enum": ["UTC", "CET", "EST", "PST"]}},
                        "required": ["zone"],
                        "additionalProperties": False,
                    },
                },
            }
        ),
        tm.Tool.from_openai(
            {
                "type": "function",
                "function": {
                    "name": "convert",
                    "description": "Convert an amount of money.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "amount": {"type": "integer", "minimum": 1, "maximum": 5},
                            "to": {"enum": ["usd", "eur"]},
                        },
                        "required": ["amount", "to"],
                        "additionalProperties": False,
                    },
                },
            }
        ),
    ]
    turn = tm.ToolTurn(tools, fmt="hermes", tool_choice="required", parallel_tool_calls=False)
    # the call as the model writes it inside the block (the turn grammar's whitespace freedom
    # around the block would make the language large without changing the choice measured)
    call = tm.Grammar.from_json_schema(
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": t.name},
                        "arguments": t.to_openai()["function"]["parameters"],
                    },
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                }
                for t in turn.tools
            ]
        },
        whitespace="spaced",
    )
    return {
        "cities": (
            cities,
            chatml(
                "You are a helpful assistant. Answer with a JSON string only.",
                "Name one European city you would like to visit.",
            ),
            None,
        ),
        "settings": (
            settings,
            chatml(
                "You are a helpful assistant. Answer with a JSON object only.",
                "Write the settings as JSON with the keys unit, alert and month: a temperature "
                "unit, whether alerts are on, and a month number.",
            ),
            None,
        ),
        "tool_call": (
            call,
            chatml(
                "You are a helpful assistant with tools.\n\n" + turn.prompt(),
                "What is the weather like in Paris?",
            )
            + "<tool_call>\n",
            turn.format,
        ),
    }


class MemoBackend(DecodingBackend):
    """The model with its logits memoised by token sequence (float16 rows): each row is
    computed once (in a batch by :meth:`prefetch`, else token by token), so the enumeration
    and every mode see the same numbers. The cost counters report what the batched llama.cpp
    backend would spend: one call per batch, the new trie positions as evaluated tokens."""

    def __init__(self, inner: LlamaCpp) -> None:
        self.inner = inner
        self.vocab = inner.vocab
        self.n_ctx = inner.n_ctx
        self.memo: dict[tuple[int, ...], np.ndarray] = {}
        self.cur: list[int] = []
        self.model_calls = 0
        self.held: set[tuple[int, ...]] = set()
        self.prompt_len = 0

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def encode(self, text: str) -> list[int]:
        return self.inner.encode(text)

    def sync_prompt(self, prompt: list[int]) -> int:
        common = 0
        for a, b in zip(self.cur, prompt, strict=False):
            if a != b:
                break
            common += 1
        self.cur = list(prompt)
        self.held = set()
        return min(common, len(prompt) - 1)

    def feed(self, tokens: list[int]) -> None:
        self.cur = self.cur + list(tokens)
        self.held = set()

    def logits(self) -> Any:
        return self.row(tuple(self.cur))

    def row(self, key: tuple[int, ...]) -> np.ndarray:
        got = self.memo.get(key)
        if got is not None:
            return got
        inner = self.inner
        have = inner.llm.input_ids[: inner.llm.n_tokens].tolist()
        common = 0
        for a, b in zip(have, key, strict=False):
            if a != b:
                break
            common += 1
        start = max(common + 1, self.prompt_len)
        for k in range(start, len(key) + 1):
            inner.sync_prompt(list(key[:k]))
            self.model_calls += 1
            self.memo.setdefault(
                key[:k], np.array(inner.logits()[: self.vocab.vocab_size], dtype=np.float16)
            )
        return self.memo[key]

    def prefetch(self, prompt: list[int], conts: list[tuple[int, ...]]) -> None:
        """Compute the rows after ``prompt + c`` that are missing, in one batch of the real
        backend (its side sequences reuse what the previous batch held)."""
        need = [list(c) for c in conts if tuple(prompt) + c not in self.memo and c]
        if tuple(prompt) not in self.memo:
            self.row(tuple(prompt))
        if not need:
            return
        rows, _, _ = self.inner.logits_many(list(prompt), need)
        self.model_calls += 1
        for c, r in zip(need, rows, strict=True):
            self.memo[tuple(prompt) + tuple(c)] = np.asarray(r, dtype=np.float16)

    def logits_many(
        self, context: list[int], continuations: list[list[int]], every: bool = False
    ) -> tuple[list[Any], int, int]:
        ctx = tuple(context)
        out: list[Any] = []
        new: set[tuple[int, ...]] = set()
        for c in continuations:
            for k in range(1, len(c) + 1):
                if every or tuple(c[:k]) not in self.held or k == len(c):
                    new.add(tuple(c[:k]))
            if every:
                out.append(np.stack([self.row(ctx + tuple(c[:k])) for k in range(1, len(c) + 1)]))
            else:
                out.append(self.row(ctx + tuple(c)))
        if not every:
            self.held = {tuple(c[:k]) for c in continuations for k in range(1, len(c) + 1)}
        return out, (len(new) + 511) // 512 if new else 0, len(new)


def log_softmax(row: np.ndarray) -> np.ndarray:
    x = row.astype(np.float64)
    top = x.max()
    return x - (top + np.log(np.exp(x - top).sum()))


def language(compiled: tm.CompiledGrammar, cap: int = 20000) -> list[tuple[bytes, bool]]:
    """Every string of a finite grammar, with whether the turn ends after it by the end token
    (the grammar could go on there) rather than by the grammar finishing."""
    a = compiled.matcher().automaton
    out: list[tuple[bytes, bool]] = []

    def go(state: Any, prefix: bytes) -> None:
        if len(out) > cap or len(prefix) > 400:
            raise SystemExit("the grammar's language is too large to enumerate")
        if a.is_finished(state):
            out.append((prefix, False))
            return
        if state.accepting:
            out.append((prefix, True))
        mask = a.allowed_bytes(state)
        for b in range(256):
            if mask >> b & 1:
                nxt = a.advance(state, b)
                if nxt is not None:
                    go(nxt, prefix + bytes((b,)))

    go(a.initial, b"")
    return out


def exact_distribution(
    be: MemoBackend, prompt: list[int], compiled: tm.CompiledGrammar
) -> dict[str, Any]:
    """P(s) ∝ the model's probability of the canonical tokenisation of each string s (times
    the exit mass where the end token ends it), scored from the memoised rows. The rows of the
    canonical token trie are computed in batches of 32 sequences."""
    V = be.vocab.vocab_size
    eos = list(be.vocab.eos_ids)
    buf = np.zeros((V + 31) // 32, dtype=np.int32)
    strings = language(compiled)
    toks = [be.encode(t.decode("utf-8")) for t, _ in strings]
    table = be.vocab.token_bytes
    for (text, _), ids in zip(strings, toks, strict=True):
        assert b"".join(table[t] or b"" for t in ids) == text
    nodes = sorted({tuple(ids[:k]) for ids in toks for k in range(len(ids) + 1)}, key=len)
    for lo in range(0, len(nodes), 32):
        be.prefetch(prompt, nodes[lo : lo + 32])
    logp: dict[bytes, float] = {}
    for (text, end), ids in zip(strings, toks, strict=True):
        total = 0.0
        for k, t in enumerate(ids):
            total += float(log_softmax(be.row(tuple(prompt) + tuple(ids[:k])))[t])
        if end:
            m = compiled.matcher()
            for t in ids:
                m.accept_token(t)
            m.fill_bitmask(buf)
            allowed = bitmask_to_bool(buf, V)
            allowed[eos] = False
            ls = log_softmax(be.row(tuple(prompt) + tuple(ids)))
            total += math.log(max(1e-300, 1.0 - float(np.exp(ls[allowed]).sum())))
        logp[text] = total
    top = max(logp.values())
    z = sum(math.exp(v - top) for v in logp.values())
    return {
        "p": {k: math.exp(v - top) / z for k, v in logp.items()},
        "valid_mass": z * math.exp(top),
        "nodes": len(nodes),
    }


def analytic_exact(
    be: MemoBackend, prompt: list[int], compiled: tm.CompiledGrammar, p: dict[bytes, float]
) -> dict[str, Any]:
    """The exact mode's first decision, without sampling noise: where it covers the whole
    language (one branch per reply), the distribution it samples from, against the target."""
    m = compiled.matcher()
    forced = m.forced_bytes()
    m.accept_bytes(forced)  # what jump-forward writes before the first sampled token
    br = find_branch(m.automaton, m.state, max_alternatives=DecodingParams().branch_alternatives)
    if br.alternatives is None:
        return {"whole_language": False}
    lead = be.encode(forced.decode()) if forced else []
    lead = lead[:-1] if len(forced) >= 2 else []  # jump-forward keeps all but the last token
    m = compiled.matcher()
    for t in lead:
        m.accept_token(t)
    br = find_branch(m.automaton, m.state, max_alternatives=DecodingParams().branch_alternatives)
    if br.alternatives is None:
        return {"whole_language": False}
    ctx = list(prompt) + lead
    head = b"".join(be.vocab.token_bytes[t] or b"" for t in lead)
    scored = score_branch(
        br.alternatives,
        m=m,
        vocab=be.vocab,
        encode=be.encode,
        logits_many=be.logits_many,
        context=ctx,
        row=be.row(tuple(ctx)),
        max_tokens=DecodingParams().branch_tokens,
    )
    texts = {head + a.text for a in br.alternatives}
    if scored is None or texts != set(p):
        return {"whole_language": False, "alternatives": len(br.alternatives)}
    probs = np.exp(scored.scores - scored.log_total)
    q = {head + a.text: float(x) for a, x in zip(scored.alternatives, probs, strict=True)}
    return {"whole_language": True, "alternatives": len(q), "tv": tv(q, p)}


def tv(p: dict[bytes, float], q: dict[bytes, float]) -> float:
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


def kl(emp: dict[bytes, float], p: dict[bytes, float]) -> float:
    """KL(empirical ‖ exact); a sample outside the exact support gets the floor 1e-12."""
    return sum(v * math.log(v / max(p.get(k, 0.0), 1e-12)) for k, v in emp.items() if v > 0)


def noise(p: dict[bytes, float], n: int, reps: int, seed: int = 0) -> dict[str, float]:
    """TV and KL of an exact sampler's empirical distribution at ``n`` draws."""
    rng = np.random.default_rng(seed)
    keys = list(p)
    probs = np.array([p[k] for k in keys])
    probs = probs / probs.sum()
    tvs, kls = [], []
    for _ in range(reps):
        counts = rng.multinomial(n, probs)
        emp = {k: c / n for k, c in zip(keys, counts, strict=True) if c}
        tvs.append(tv(emp, p))
        kls.append(kl(emp, p))
    return {
        "tv_mean": float(np.mean(tvs)),
        "tv_p95": float(np.percentile(tvs, 95)),
        "kl_mean": float(np.mean(kls)),
    }


def meter(
    be: MemoBackend, prompt: list[int], compiled: tm.CompiledGrammar, toks: list[int]
) -> tuple[int, int, float]:
    """(positions, positions where the mask removed the model's top-1, removed mass summed)."""
    V = be.vocab.vocab_size
    buf = np.zeros((V + 31) // 32, dtype=np.int32)
    m = compiled.matcher()
    removed = 0
    mass = 0.0
    for k, t in enumerate(toks):
        row = be.row(tuple(prompt) + tuple(toks[:k])).astype(np.float64)
        m.fill_bitmask(buf)
        allowed = bitmask_to_bool(buf, V)
        p = np.exp(row - row.max())
        p /= p.sum()
        removed += not allowed[int(row.argmax())]
        mass += float(p[~allowed].sum())
        m.accept_token(t)
    return len(toks), removed, mass


#: each mode's decoding parameters (all sampled at temperature 1)
MODES = {
    "plain": lambda a: DecodingParams(),
    "exact": lambda a: DecodingParams("exact"),
    "aligned": lambda a: DecodingParams("aligned", particles=a.particles),
    "aligned_smc_only": lambda a: DecodingParams(
        "aligned", particles=a.particles, branch_alternatives=0
    ),
}


def run_grammar(
    name: str, args: argparse.Namespace, llm: LlamaCpp, spec: tuple[tm.Grammar, str, Any]
) -> dict[str, Any]:
    grammar, text, _fmt = spec
    be = MemoBackend(llm)
    compiled = tm.compile(grammar, llm.vocab)
    prompt = llm.tokenize(text)
    be.prompt_len = len(prompt)
    t0 = time.perf_counter()
    exact = exact_distribution(be, prompt, compiled)
    p = exact["p"]
    out: dict[str, Any] = {
        "strings": len(p),
        "valid_mass": exact["valid_mass"],
        "trie_nodes": exact["nodes"],
        "enumerate_s": round(time.perf_counter() - t0, 1),
        "top": sorted(((k.decode(), round(v, 4)) for k, v in p.items()), key=lambda kv: -kv[1])[:8],
        "noise": noise(p, args.samples, 200),
        "exact_analytic": analytic_exact(be, prompt, compiled, p),
        "modes": {},
    }
    print(
        f"\n{name}: {len(p)} strings, valid mass {exact['valid_mass']:.3g}, "
        f"{exact['nodes']} trie nodes in {out['enumerate_s']} s; noise TV "
        f"{out['noise']['tv_mean']:.4f} (p95 {out['noise']['tv_p95']:.4f}); exact mode's "
        f"first decision: {out['exact_analytic']}",
        flush=True,
    )
    for mode in args.modes:
        params = MODES[mode](args)
        counts: Counter[bytes] = Counter()
        noncanonical = 0
        pos = rem = 0
        mass = 0.0
        t1 = time.perf_counter()
        fallbacks = branches = 0
        for i in range(args.samples):
            gen = be.generate(
                prompt,
                compiled,
                max_tokens=96,
                sampling=SamplingParams(temperature=1.0, seed=1_000_003 * i + 7),
                decoding=params,
            )
            counts[gen.text] += 1
            noncanonical += gen.tokens != be.encode(gen.text.decode("utf-8", "replace"))
            fallbacks += gen.branch_fallbacks
            branches += gen.exact_branches
            if i < args.meter_samples:
                a, b, c = meter(be, prompt, compiled, gen.tokens)
                pos, rem, mass = pos + a, rem + b, mass + c
        emp = {k: v / args.samples for k, v in counts.items()}
        row = {
            "tv": tv(emp, p),
            "kl": kl(emp, p),
            "distinct": len(counts),
            "noncanonical_rate": noncanonical / args.samples,
            "invalid_or_unseen": sum(v for k, v in emp.items() if k not in p),
            "branches_per_sample": branches / args.samples,
            "fallbacks_per_sample": fallbacks / args.samples,
            "meter": {
                "positions": pos,
                "top1_removed_rate": rem / max(1, pos),
                "removed_mass_per_token": mass / max(1, pos),
            },
            "sample_s": round(time.perf_counter() - t1, 1),
        }
        out["modes"][mode] = row
        print(
            f"  {mode:>17}: TV {row['tv']:.4f}  KL {row['kl']:.4f}  distinct {row['distinct']}"
            f"  non-canonical {row['noncanonical_rate']:.3f}"
            f"  branches/sample {row['branches_per_sample']:.2f} fallbacks/sample "
            f"{row['fallbacks_per_sample']:.2f}  meter top1-removed "
            f"{row['meter']['top1_removed_rate']:.3f} removed mass/token "
            f"{row['meter']['removed_mass_per_token']:.3f}  ({row['sample_s']} s)",
            flush=True,
        )
    out["model_calls"] = be.model_calls
    out["cost"] = cost(args, llm, prompt, compiled)
    be.memo.clear()
    return out


def cost(
    args: argparse.Namespace, llm: LlamaCpp, prompt: list[int], compiled: tm.CompiledGrammar
) -> dict[str, Any]:
    """Model calls and evaluated positions per generated token, and ms per reply, on the
    real backend (modes interleaved, the prompt's KV reused as in serving)."""
    acc: dict[str, dict[str, float]] = {
        m: {"passes": 0, "evaluated": 0, "tokens": 0, "s": 0.0} for m in args.modes
    }
    for i in range(args.cost_samples):
        for mode in args.modes:
            params = MODES[mode](args)
            llm.decoders.clear()  # each reply scores its branches afresh
            t = time.perf_counter()
            gen = llm.generate(
                prompt,
                compiled,
                max_tokens=96,
                sampling=SamplingParams(temperature=1.0, seed=i),
                decoding=params,
            )
            a = acc[mode]
            a["s"] += time.perf_counter() - t
            a["passes"] += gen.forward_passes - 1  # the prompt's call is not per token
            a["evaluated"] += gen.evaluated_tokens - (gen.prompt_tokens - gen.reused_prefix)
            a["tokens"] += len(gen.tokens)
    out = {}
    for mode, a in acc.items():
        n = max(1.0, a["tokens"])
        out[mode] = {
            "passes_per_token": a["passes"] / n,
            "evaluated_per_token": a["evaluated"] / n,
            "ms_per_reply": 1000 * a["s"] / max(1, args.cost_samples),
            "tokens_per_reply": a["tokens"] / max(1, args.cost_samples),
        }
        print(
            f"  cost {mode:>17}: {out[mode]['passes_per_token']:.2f} calls/token, "
            f"{out[mode]['evaluated_per_token']:.2f} positions/token, "
            f"{out[mode]['ms_per_reply']:.0f} ms/reply",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--grammars", nargs="+", default=["cities", "settings", "tool_call"])
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    ap.add_argument("--particles", type=int, default=8)
    ap.add_argument("--meter-samples", type=int, default=200)
    ap.add_argument("--cost-samples", type=int, default=10)
    ap.add_argument("--label", default="")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    args = ap.parse_args()
    llm = LlamaCpp.default(n_ctx=2048, n_threads=args.threads)
    specs = grammars()
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    results: dict[str, Any] = {}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"aligned{'-' + args.label if args.label else ''}.json"
    for name in args.grammars:  # written after each grammar, so a long run leaves results
        results[name] = run_grammar(name, args, llm, specs[name])
        write(path, args, results, load0, t0)
    print(f"\nwrote {path}")


def write(
    path: Path, args: argparse.Namespace, results: dict[str, Any], load0: Any, t0: float
) -> None:
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_before": load0,
        "load_after": os.getloadavg(),
        "wall_s": round(time.perf_counter() - t0, 1),
        "model": "SmolLM2-135M-Instruct Q4_1 (llama-cpp-python)",
        "samples": args.samples,
        "particles": args.particles,
        "temperature": 1.0,
        "threads": args.threads,
        "grammars": results,
    }
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
