"""One hostile schema, in a process of its own: ``python -m tests.schema.hostile_child``.

Reads ``{"case": name}`` or ``{"schema": ...}`` (plus ``steps``, ``seed``, ``vocab``) as JSON on
stdin, caps its own address space (``memory_bytes``), compiles the schema under the default
limits without the wall-clock cap (so the outcome never depends on machine load), then, when it
compiled, builds the token masks for ``vocab`` and walks up to ``steps`` decode steps: forced
bytes where there are some, else a token drawn from the allowed ones. Prints one JSON line:
``{"outcome": "compiled" | "SchemaError" | "LimitError", ...}``. Anything else (a traceback, a
MemoryError, no line at all) is a failure for the parent test to report.
"""

from __future__ import annotations

import dataclasses
import json
import random
import resource
import sys
from typing import Any


def run(request: dict[str, Any]) -> dict[str, Any]:
    cap = int(request.get("memory_bytes", 3 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    import toolmask as tm
    from tests.schema.hostile_cases import CASES

    limits = dataclasses.replace(tm.DEFAULT_LIMITS, max_compile_seconds=3600.0)
    schema = dict(CASES)[request["case"]]() if "case" in request else request["schema"]
    try:
        grammar = tm.Grammar.from_json_schema(schema, limits=limits)
        vocab = tm.Vocabulary.from_quicktok(request["vocab"]) if request.get("vocab") else None
        compiled = tm.compile(grammar, vocab, limits=limits)
    except tm.SchemaError as e:
        return {"outcome": "SchemaError", "pointer": e.pointer, "keyword": e.keyword}
    except tm.LimitError as e:
        return {"outcome": "LimitError", "limit": e.limit, "message": str(e)[:300]}
    m = compiled.matcher()
    rng = random.Random(int(request.get("seed", 0)))
    steps = forced = 0
    for _ in range(int(request.get("steps", 0))):
        if m.is_finished():
            break
        text = m.forced_bytes()
        if text:
            if not m.accept_bytes(text):
                return {"outcome": "error", "message": f"forced bytes refused: {text!r}"}
            forced += 1
            continue
        if vocab is None:
            break
        allowed = [int(t) for t in m.allowed_token_ids()]
        if not allowed:
            return {"outcome": "error", "message": "no token allowed in an unfinished state"}
        token = rng.choice(allowed)
        if not m.accept_token(token):
            return {"outcome": "error", "message": f"allowed token {token} refused"}
        steps += 1
    return {
        "outcome": "compiled",
        "rules": len(grammar.rules),
        "steps": steps,
        "forced": forced,
        "accepting": m.is_accepting(),
    }


def main() -> None:
    print(json.dumps(run(json.load(sys.stdin))), flush=True)


if __name__ == "__main__":
    main()
