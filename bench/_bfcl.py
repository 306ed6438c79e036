"""BFCL v4 dev questions for the quality and faithfulness benchmarks: loading, schema mapping,
and the AST checker.

The questions live in ``tests/data/bfcl-dev/`` (vendored, Apache-2.0). BFCL writes parameter
schemas with its own type names (``dict``, ``float``, ``tuple``, ``any``) and marks optional
parameters with ``"optional": true``; :func:`to_json_schema` maps them to JSON Schema. Tool names
with dots (``math.hypot``) are not valid OpenAI names, so, as BFCL's own harness does for
OpenAI models, dots become underscores on the wire and are mapped back for checking.

:func:`ast_match` follows BFCL's AST checker: the same function names (order-free over the
calls of one reply, one expected call matched by exactly one model call), every required
parameter present, no parameter the function does not declare, each value among the allowed
ones (``""`` among them: the parameter may be left out), strings compared after BFCL's
normalisation (case, spaces and ``,./-_*^`` ignored), an integer accepted for a float,
lists and dicts compared element by element.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "bfcl-dev"

#: category -> (file, has answers, expects a call)
CATEGORIES: dict[str, tuple[str, bool, bool]] = {
    "multiple": ("BFCL_v4_multiple.json", True, True),
    "parallel_multiple": ("BFCL_v4_parallel_multiple.json", True, True),
    "live_parallel": ("BFCL_v4_live_parallel.json", True, True),
    "live_relevance": ("BFCL_v4_live_relevance.json", False, True),
    "live_irrelevance": ("BFCL_v4_live_irrelevance.json", False, False),
}

_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


@dataclass
class Question:
    id: str
    category: str
    messages: list[dict[str, str]]
    tools: list[dict[str, Any]]  # OpenAI tool dicts (wire names)
    wire_to_name: dict[str, str]
    answers: list[dict[str, dict[str, list[Any]]]] | None  # None: no ground truth
    expects_call: bool
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # wire name -> schema

    @property
    def expected_calls(self) -> int:
        return len(self.answers) if self.answers is not None else (1 if self.expects_call else 0)


def to_json_schema(node: Any) -> Any:
    """BFCL's parameter schema -> JSON Schema (type names mapped, ``optional`` dropped)."""
    if isinstance(node, list):
        return [to_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "optional":
            continue
        if k == "type" and isinstance(v, str):
            if v == "any":
                continue
            out[k] = _TYPES.get(v, v)
        elif k == "properties" and isinstance(v, dict):
            out[k] = {name: to_json_schema(s) for name, s in v.items()}
        elif k in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "not"):
            out[k] = to_json_schema(v)
        else:
            out[k] = v
    if out.get("type") == "array" and "items" not in out and node.get("type") == "tuple":
        out["items"] = {}
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    return out


def wire_name(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]


def load(
    categories: list[str] | None = None, *, per_category: int | None = None, seed: int = 0
) -> list[Question]:
    """The questions of ``categories`` (all by default), ``per_category`` sampled with ``seed``
    (first-turn questions only: one user request, optionally with a system message)."""
    out: list[Question] = []
    for cat in categories or list(CATEGORIES):
        fname, has_answers, expects = CATEGORIES[cat]
        rows = [json.loads(line) for line in (DATA / fname).read_text().splitlines() if line]
        answers: dict[str, Any] = {}
        if has_answers:
            for line in (DATA / "possible_answer" / fname).read_text().splitlines():
                if line:
                    a = json.loads(line)
                    answers[a["id"]] = a["ground_truth"]
        rows = [
            r for r in rows if len(r["question"]) == 1 and r["question"][0][-1]["role"] == "user"
        ]
        if per_category is not None and per_category < len(rows):
            rows = random.Random(seed).sample(rows, per_category)
            rows.sort(key=lambda r: r["id"])
        for r in rows:
            tools, w2n, schemas = [], {}, {}
            for fn in r["function"]:
                w = wire_name(fn["name"])
                w2n[w] = fn["name"]
                params = to_json_schema(fn.get("parameters") or {"type": "object"})
                params.setdefault("type", "object")
                schemas[w] = params
                spec = {"name": w, "description": fn.get("description", ""), "parameters": params}
                tools.append({"type": "function", "function": spec})
            out.append(
                Question(
                    r["id"],
                    cat,
                    [{"role": m["role"], "content": m["content"]} for m in r["question"][0]],
                    tools,
                    w2n,
                    answers.get(r["id"]) if has_answers else None,
                    expects,
                    schemas,
                )
            )
    return out


# -- AST checking ----------------------------------------------------------------------------------


def _norm(s: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"')


def _value_ok(got: Any, allowed: list[Any]) -> bool:
    return any(_same(got, a) for a in allowed if a != "")


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want if isinstance(got, bool) and isinstance(want, bool) else False
    if isinstance(want, float) and isinstance(got, int):
        return float(got) == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return type(want) is type(got) and got == want
    if isinstance(want, str) and isinstance(got, str):
        return _norm(got) == _norm(want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        for k, allowed in want.items():
            if k not in got:
                if isinstance(allowed, list) and "" in allowed:
                    continue
                return False
            vals = allowed if isinstance(allowed, list) else [allowed]
            if not _value_ok(got[k], vals):
                return False
        return all(k in want for k in got)
    return bool(got == want)


def call_matches(
    name: str, args: dict[str, Any], expected: dict[str, dict[str, list[Any]]]
) -> bool:
    """One model call against one expected call ``{name: {param: [allowed...]}}``."""
    ((want_name, params),) = expected.items()
    if name != want_name:
        return False
    for p, allowed in params.items():
        if p not in args:
            if "" not in allowed:
                return False
        elif not _value_ok(args[p], allowed):
            return False
    return all(p in params for p in args)


def ast_match(
    calls: list[tuple[str, dict[str, Any]]], expected: list[dict[str, dict[str, list[Any]]]]
) -> bool:
    """All expected calls matched one to one by the model's calls, order-free (names are the
    original BFCL names)."""
    if len(calls) != len(expected):
        return False
    used = [False] * len(calls)

    def solve(i: int) -> bool:
        if i == len(expected):
            return True
        for j, (name, args) in enumerate(calls):
            if not used[j] and call_matches(name, args, expected[i]):
                used[j] = True
                if solve(i + 1):
                    return True
                used[j] = False
        return False

    return solve(0)
