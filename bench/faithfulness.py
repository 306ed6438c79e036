"""Where does the mask push the model off its own path? The distortion meter over BFCL questions.

For each question and ``tool_choice`` mode, a model (the embedded SmolLM2 unless ``--model``
names a catalogued one or a GGUF) decodes greedily under the turn grammar with ``meter=True``:
at every step the model's unconstrained top-1 token, whether the mask removed it, the
probability mass removed, and the site of the turn (prose, envelope, key, value, separator,
after a block, ...). The table ranks sites by how often the model's choice was
removed, per mode; a *forced continuation* is a step where the model's top-1 was its
end-of-turn token and the mask removed it (it had to keep writing), and a call *after* one is
a call the grammar, not the model, asked for.

    python bench/faithfulness.py                         # the default grammar
    python bench/faithfulness.py --key-order schema      # keys in schema order, for comparison
    python bench/faithfulness.py --whitespace compact --label compact
    python bench/faithfulness.py --model qwen2.5-coder-1.5b --label qwen15b   # a tool-trained model

Writes ``bench/results/faithfulness[-LABEL].json``. Prompts are rendered as ``toolmask serve``
renders them (the model's chat template, the tool prompt in the system message).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _bfcl
import toolmask as tm
from toolmask.agent import Message, default_template, with_tool_prompt
from toolmask.tools import ToolTurn, distortion_sites

RESULTS = Path(__file__).resolve().parent / "results"


def prompt_text(template: Any, q: _bfcl.Question, turn: ToolTurn, *, reminder: bool = True) -> str:
    """The prompt as the server renders it for a template that does not know tools."""
    msgs = [Message(m["role"], m["content"]) for m in q.messages]
    if not getattr(template, "knows_tools", False):
        decision = turn.format.decision_prompt() if reminder else None
        msgs = with_tool_prompt(msgs, turn.prompt(), decision=decision)
    return str(template(msgs, turn))


def choice_for(mode: str, q: _bfcl.Question) -> Any:
    if mode == "named":
        if not q.answers:
            return None
        name = next(iter(q.answers[0]))
        wire = next(w for w, n in q.wire_to_name.items() if n == name)
        return {"type": "function", "function": {"name": wire}}
    return mode


def run(args: argparse.Namespace) -> dict[str, Any]:
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.models import TEST_MODEL, resolve_model

    model = args.model or TEST_MODEL
    backend = LlamaCpp(str(resolve_model(model)), n_ctx=4096, n_threads=args.threads)
    template = default_template(backend)
    special = backend.vocab.special.values()
    options: dict[str, Any] = {}
    if args.whitespace:
        options["whitespace"] = args.whitespace
    if args.max_whitespace is not None:
        options["max_whitespace"] = args.max_whitespace
    if args.key_order:
        options["property_order"] = args.key_order
    questions = _bfcl.load(args.categories, per_category=args.per_category, seed=args.seed)
    modes = args.modes
    per_mode: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for mode in modes:
        per_mode[mode] = {
            "replies": 0,
            "steps": 0,
            "removed": 0,
            "removed_mass": 0.0,
            "forced_continuations": 0,
            "calls": 0,
            "calls_after_forced": 0,
            "replies_with_calls": 0,
            "cut": 0,
            "exit_end": 0,
            "sites": defaultdict(lambda: Counter()),
            "mass_by_site": Counter(),
        }
    for qi, q in enumerate(questions):
        if not q.tools:
            continue
        for mode in modes:
            choice = choice_for(mode, q)
            if choice is None:
                continue
            turn = ToolTurn(
                q.tools, args.format, choice, special_tokens=special, schema_options=options
            )
            compiled = tm.compile(turn.grammar(), backend.vocab)
            prompt = backend.tokenize(prompt_text(template, q, turn, reminder=args.reminder))
            if len(prompt) + args.max_tokens >= backend.n_ctx:
                continue
            gen = backend.generate(
                prompt,
                compiled,
                max_tokens=args.max_tokens,
                meter=True,
                end_on_exit=args.end_on_exit,
            )
            sites = distortion_sites(gen, turn.format)
            text = gen.text.decode("utf-8", "replace")
            parsed = turn.parse(text)
            agg = per_mode[mode]
            agg["replies"] += 1
            agg["steps"] += len(gen.distortion)
            agg["cut"] += gen.finish_reason == "length"
            agg["exit_end"] += gen.exit_end
            first_forced = None
            for d, site in zip(gen.distortion, sites, strict=True):
                agg["sites"][site]["steps"] += 1
                if d.removed and not d.ended:
                    agg["removed"] += 1
                    agg["sites"][site]["removed"] += 1
                if d.forced_continuation:
                    agg["forced_continuations"] += 1
                    agg["sites"][site]["forced"] += 1
                    if first_forced is None:
                        first_forced = d.offset
                agg["removed_mass"] += d.removed_mass
                agg["mass_by_site"][site] += d.removed_mass
            n_calls = len(parsed.calls)
            agg["calls"] += n_calls
            agg["replies_with_calls"] += n_calls > 0
            if first_forced is not None and n_calls:
                # calls that start after the first forced continuation
                starts = [
                    i for i in range(len(text)) if text.startswith(turn.format.trigger_text, i)
                ]
                agg["calls_after_forced"] += sum(
                    1 for s in starts if len(text[:s].encode()) >= first_forced
                )
            rows.append(
                {
                    "id": q.id,
                    "mode": mode,
                    "text": text,
                    "finish": gen.finish_reason,
                    "calls": [(c.name, c.arguments) for c in parsed.calls],
                    "removed": [
                        (
                            site,
                            repr(backend.vocab.token_bytes[d.top1] or b"<special>"),
                            round(d.removed_mass, 4),
                        )
                        for d, site in zip(gen.distortion, sites, strict=True)
                        if d.removed
                    ],
                }
            )
        print(f"  {qi + 1}/{len(questions)} {q.id}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t_start
    out: dict[str, Any] = {
        "label": args.label,
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
        "model": f"{model} (llama.cpp), greedy",
        "format": args.format,
        "argument_options": options or "format default",
        "questions": len(questions),
        "max_tokens": args.max_tokens,
        "elapsed_s": round(elapsed, 1),
        "modes": {},
        "replies": rows,
    }
    for mode, agg in per_mode.items():
        sites = {
            s: {
                "steps": c["steps"],
                "removed": c["removed"],
                "forced": c["forced"],
                "removed_mass": round(agg["mass_by_site"][s], 3),
            }
            for s, c in agg["sites"].items()
        }
        out["modes"][mode] = {
            k: (round(v, 3) if isinstance(v, float) else v)
            for k, v in agg.items()
            if k not in ("sites", "mass_by_site")
        }
        out["modes"][mode]["sites"] = sites
    return out


def print_tables(res: dict[str, Any]) -> None:
    print(
        f"\n## Distortion meter ({res['label']}): {res['questions']} BFCL questions, "
        f"{res['model']}, format {res['format']}, arguments {res['argument_options']}"
    )
    print(
        "\n| mode | replies | steps | top-1 removed | mass removed / step | forced continuations "
        "| calls | calls after a forced continuation | ended on exit | cut at max_tokens |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for mode, m in res["modes"].items():
        steps = max(m["steps"], 1)
        print(
            f"| {mode} | {m['replies']} | {m['steps']} | {m['removed']} "
            f"({100 * m['removed'] / steps:.1f}%) | {m['removed_mass'] / steps:.4f} | "
            f"{m['forced_continuations']} | {m['calls']} | {m['calls_after_forced']} | "
            f"{m['exit_end']} | {m['cut']} |"
        )
    for mode, m in res["modes"].items():
        print(f"\n### {mode}: sites ranked by removals of the model's top-1")
        print("\n| site | steps | top-1 removed | forced continuations | mass removed |")
        print("| --- | --- | --- | --- | --- |")
        ranked = sorted(
            m["sites"].items(), key=lambda kv: (-kv[1]["removed"], -kv[1]["removed_mass"])
        )
        for site, c in ranked:
            print(
                f"| {site} | {c['steps']} | {c['removed']} | {c['forced']} "
                f"| {c['removed_mass']:.2f} |"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--categories",
        nargs="*",
        default=[
            "multiple",
            "parallel_multiple",
            "live_parallel",
            "live_relevance",
            "live_irrelevance",
        ],
    )
    p.add_argument(
        "--model", help="a catalogued model (toolmask models) or a GGUF path (default: SmolLM2)"
    )
    p.add_argument("--per-category", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--modes", nargs="*", default=["auto", "required", "named"])
    p.add_argument("--format", default="hermes")
    p.add_argument("--whitespace", choices=("compact", "spaced", "flexible"))
    p.add_argument("--max-whitespace", type=int, help="bytes per place under flexible")
    p.add_argument("--key-order", choices=("schema", "any"))
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--label", default="default")
    p.add_argument(
        "--threads", type=int, help="llama.cpp threads (default: all cores; 1 on a busy machine)"
    )
    p.add_argument("--no-end-on-exit", dest="end_on_exit", action="store_false")
    p.add_argument(
        "--no-reminder",
        dest="reminder",
        action="store_false",
        help="leave out the decision prompt after the user's message (as serve --no-tool-reminder)",
    )
    args = p.parse_args()
    res = run(args)
    RESULTS.mkdir(exist_ok=True)
    name = "faithfulness.json" if args.label == "default" else f"faithfulness-{args.label}.json"
    (RESULTS / name).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print_tables(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
