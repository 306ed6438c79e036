"""The ``toolmask`` command line: one argparse subcommand per task.

``toolmask grammar --tools tools.json --format hermes --tool-choice required --dialect gbnf``
prints the turn grammar for a tool list (GBNF for llama.cpp, Lark for llguidance, or our EBNF);
``toolmask check schema.json`` shows how each keyword of a schema is enforced;
``toolmask demo`` runs an agent with real local tools on the embedded model, ``toolmask chat``
the same loop interactively, ``toolmask serve`` an OpenAI-compatible server.
Exit status: 0 on success, 1 for an error toolmask reports (bad schema, tool spec, grammar that
the dialect cannot express), 2 for a usage error (argparse's convention).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolmask.errors import ToolmaskError
from toolmask.models.cli import MODEL_HELP, add_models_parser
from toolmask.server.cli import add_format_argument, add_serve_parser, split_engine_args

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


def _argument_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--whitespace`` / ``--key-order`` overrides of the format's argument layout."""
    out: dict[str, Any] = {}
    if args.whitespace is not None:
        out["whitespace"] = args.whitespace
    if args.key_order is not None:
        out["property_order"] = args.key_order
    return out


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
        schema_options=_argument_options(args),
    )
    grammar = turn.call_grammar() if args.calls_only else turn.grammar()
    sys.stdout.write(_DIALECTS[args.dialect](grammar))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    if args.template is not None:
        if args.schema is not None or args.mcp:
            raise ToolmaskError("give one of a schema file, --template or --mcp")
        return _check_template(args)
    from toolmask.schema import check_schema, format_report, load_schema

    if args.mcp:
        if args.schema is not None:
            raise ToolmaskError("give a schema file or --mcp, not both")
        return _cmd_check_mcp(args)
    if args.schema is None:
        raise ToolmaskError(
            "give a schema file, --template FILE|GGUF|FOLDER, or --mcp CMD (an MCP server's tools)"
        )
    options: dict[str, Any] = {
        "lenient": args.lenient,
        "whitespace": args.whitespace,
        "strict_formats": args.strict_formats,
    }
    report = check_schema(load_schema(args.schema), **options)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_report(report))
    return 0


def _check_template(args: argparse.Namespace) -> int:
    """``check --template``: the wire format read from a chat template, with the evidence.
    Exit status 0 when a format proved itself, 1 when it is the fallback."""
    from toolmask.tools import (
        detect_format,
        detection_report,
        evidence_table,
        load_chat_template,
    )

    template = args.template
    if not Path(template).exists():  # a catalogue name: that model's GGUF (pulled if needed)
        from toolmask.models import CATALOGUE, resolve_model

        if template in CATALOGUE:
            template = str(resolve_model(template))
    guess = detect_format(load_chat_template(template))
    if args.json:
        probe = guess.probe
        out = {
            "template": guess.template,
            "format": guess.name,
            "source": guess.source,
            "proven": list(guess.proven),
            "clues": list(guess.clues),
            "warning": guess.warning,
            "cases": [
                {"case": c.name, "text": c.text, "end": c.end}
                for c in (probe.cases if probe is not None else ())
            ],
            "evidence": evidence_table(guess),
        }
        sys.stdout.write(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(detection_report(guess))
    return 0 if guess.confident else 1


DEMO_PROMPTS = (
    "What is 12.75 plus 0.35?",
    "What time is it in Tokyo (Asia/Tokyo)?",
    "Which files are in the folder?",
)


def _demo_check(prompt: str, folder: str, started: float) -> tuple[str, Callable[[str], bool]]:
    """What a right answer to a demo prompt holds, and the test, computed from the world (the
    folder's entries, the clock), never from what the tools said. Unknown prompts: no check."""
    import datetime as dt
    import re
    from decimal import Decimal
    from zoneinfo import ZoneInfo

    def numbers(text: str) -> set[Decimal]:  # the regex admits decimals only
        return {Decimal(m) for m in re.findall(r"-?\d+(?:\.\d+)?", text)}

    if prompt == DEMO_PROMPTS[0]:
        return "13.1", lambda a: Decimal("13.1") in numbers(a)
    if prompt == DEMO_PROMPTS[1]:
        zone = ZoneInfo("Asia/Tokyo")
        first = dt.datetime.fromtimestamp(started, zone).replace(second=0, microsecond=0)
        span = int((time.time() - started) // 60) + 2
        times = [(first + dt.timedelta(minutes=k)).strftime("%H:%M") for k in range(span)]
        return f"the time in Tokyo ({times[0]})", lambda a: any(t in a for t in times)
    if prompt == DEMO_PROMPTS[2]:
        names = sorted(p.name for p in Path(folder).iterdir())
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return f"every entry: {shown}", lambda a: all(
            re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", a) for n in names
        )
    return "", lambda a: False


def _verdict(prompt: str, transcript: Any, folder: str, started: float) -> str:
    """One line: the answer, the tools that ran, and whether the answer is right."""
    out = transcript.outcome
    tools = ", ".join(out.tools) or "none"
    answer = (
        f"answer {json.dumps(out.answer, ensure_ascii=False)[:120]}"
        if out.answer
        else f"no answer ({out.message})"
    )
    expected, check = _demo_check(prompt, folder, started)
    if not expected:
        converged = "unknown (no expected answer for this prompt)"
    elif out.answer and check(out.answer):
        converged = "yes"
    else:
        converged = f"no (expected {expected})"
    return f"verdict: {answer} | tools: {tools} | converged: {converged}"


class _Loading:
    """A progress line on stderr while a model loads: a spinner with the elapsed seconds on a
    terminal, one line before and one after otherwise (logs stay clean)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Loading:
        self._t0 = time.perf_counter()
        if sys.stderr.isatty():
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        else:
            print(f"loading {self.what} ...", file=sys.stderr, flush=True)
        return self

    def _spin(self) -> None:
        frames = "|/-\\"
        i = 0
        while not self._done.wait(0.1):
            dt = time.perf_counter() - self._t0
            sys.stderr.write(f"\r{frames[i % 4]} loading {self.what} ... {dt:4.1f} s")
            sys.stderr.flush()
            i += 1

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            sys.stderr.write("\r\x1b[K")
        dt = time.perf_counter() - self._t0
        state = "failed" if exc[0] is not None else "loaded"
        print(f"{state} {self.what} in {dt:.1f} s", file=sys.stderr, flush=True)


def _load_backend(model: str | None) -> Any:
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.models import resolve_model

    path = resolve_model(model)  # a file, or a catalogue name pulled on first use
    with _Loading(str(path)):
        backend = LlamaCpp(path)
    print(f"vocabulary: {backend.vocab}", file=sys.stderr, flush=True)
    return backend


def _print_turns(messages: Sequence[Any], *, raw: bool) -> None:
    """Print the assistant and tool messages of one agent run."""
    for m in messages:
        if m.role == "assistant":
            if raw or m.tool_calls or m.malformed:
                print(f"--- assistant, raw completion ({m.meta.get('finish_reason')}):")
                print(m.raw)
            else:
                print(f"assistant: {m.content}")
            for c in m.tool_calls:
                print(f"    parsed call: {c.name}({json.dumps(c.arguments, ensure_ascii=False)})")
            for bad in m.malformed:
                print(f"    malformed block kept in content: {bad!r}")
        elif m.role == "tool":
            print(f"--- tool {m.name}: {m.content}")


def _cmd_demo(args: argparse.Namespace) -> int:
    from toolmask.agent import Agent, PoolFilter
    from toolmask.agent.demo_tools import ACT_ONCE, DEMO_MARKERS, demo_tools

    if args.mcp:
        return _demo_mcp(args)
    backend = _load_backend(args.model)
    grammar = args.mode == "grammar"
    agent = Agent(
        backend,
        demo_tools(args.dir),
        mode=args.mode,
        policy=[PoolFilter(DEMO_MARKERS), ACT_ONCE] if grammar else None,
        tool_choice="required" if grammar else args.tool_choice,
        answer_after=1 if grammar else 0,
        max_steps=args.max_steps,
        fmt=args.format,
    )
    _demo_prompts(agent, args)
    return 0


def _demo_prompts(agent: Any, args: argparse.Namespace) -> None:
    """Run each demo prompt through ``agent``: its steps, then the verdict line."""
    for prompt in args.prompt or DEMO_PROMPTS:
        print(f"\n### user: {prompt}")
        started = time.time()
        transcript = agent.run(prompt)
        _print_turns(transcript[2:], raw=True)
        if transcript.outcome.stop in ("blocked", "max_steps"):
            print(transcript.outcome.message)
        print(_verdict(prompt, transcript, args.dir, started), flush=True)


CHAT_HELP = "commands: /reset forgets the conversation, /exit (or end of input) leaves"


def _cmd_chat(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    with ExitStack() as stack:
        policy = None
        if args.mcp:
            if args.tools or args.no_tools:
                raise ToolmaskError("--mcp replaces the tools: leave out --tools and --no-tools")
            toolset = stack.enter_context(_mcp_toolset(args))
            tools: list[Any] = list(toolset.tools)
            policy = toolset.policy()
        else:
            from toolmask.agent.demo_tools import demo_tools

            tools = [] if args.no_tools else demo_tools(args.dir)
            if args.tools:
                tools = _load_tools(args.tools)
        return _chat(args, tools, policy)


def _chat(args: argparse.Namespace, tools: list[Any], policy: Any) -> int:
    from toolmask.agent import Agent, Message
    from toolmask.sampling import SamplingParams

    backend = _load_backend(args.model)
    agent = Agent(
        backend,
        tools,
        tool_choice=args.tool_choice if tools else "none",
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        sampling=SamplingParams(temperature=args.temperature, seed=args.seed),
        fmt=args.format,
        policy=policy,
    )
    names = ", ".join(t.name for t in agent.tools) or "none"
    print(f"tools: {names}\n{CHAT_HELP}", file=sys.stderr, flush=True)
    history: list[Message] = []
    while True:
        try:
            line = input("you> " if sys.stdin.isatty() else "")
        except EOFError:
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/reset":
            history = []
            print("(conversation reset)")
            continue
        transcript = agent.run(text, history=history)
        start = 2 + len(history)  # system + history + this user message
        _print_turns(transcript[start:], raw=args.raw)
        history = transcript[1:]
        sys.stdout.flush()
    return 0


# -- MCP servers as the tool source (toolmask.integrations.mcp, extra ``mcp``) ----------------


def add_mcp_arguments(p: argparse.ArgumentParser) -> None:
    """``--mcp`` (repeatable) and the permission flags, shared by ``check``, ``demo`` and
    ``chat``."""
    p.add_argument(
        "--mcp",
        action="append",
        metavar="CMD|URL",
        help="an MCP server as the tool source (repeatable): a command line (quoted, split "
        "like a shell would; run as a subprocess, spoken to over stdio) or an http(s) URL "
        "(streamable HTTP)",
    )
    p.add_argument(
        "--allow-destructive",
        action="store_true",
        help="let the model call MCP tools that may destroy (by their annotations: not "
        "readOnlyHint, destructiveHint not false); masked by default",
    )
    p.add_argument(
        "--allow-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="an MCP tool (name or glob) the model may call whatever its annotations say "
        "(repeatable)",
    )
    p.add_argument(
        "--deny-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="an MCP tool (name or glob) the model may not call (repeatable)",
    )


def _mcp_toolset(args: argparse.Namespace) -> Any:
    """The :class:`~toolmask.integrations.mcp.McpToolset` of ``--mcp`` and the permission
    flags; says on stderr which tools were refused or are masked."""
    from toolmask.integrations.mcp import McpToolset, Permissions

    permissions = Permissions(
        allow_destructive=args.allow_destructive,
        allow=tuple(args.allow_tool),
        deny=tuple(args.deny_tool),
    )
    fmt = args.format if getattr(args, "format", "auto") != "auto" else "hermes"
    toolset = McpToolset(args.mcp, permissions=permissions, fmt=fmt)
    try:
        names = ", ".join(f"{s.name} ({s.spec.label})" for s in toolset.servers)
        print(f"MCP servers: {names}; {len(toolset)} tools", file=sys.stderr)
        for refused in toolset.refused:
            print(f"left out: {refused}", file=sys.stderr)
        masked = toolset.masked()
        if masked:
            shown = ", ".join(f"{n} ({why})" for n, why in masked.items())
            print(f"masked (in the prompt, not callable): {shown}", file=sys.stderr, flush=True)
    except BaseException:
        toolset.close()
        raise
    return toolset


def _demo_mcp(args: argparse.Namespace) -> int:
    """``demo --mcp``: the demo's agent (grammar mode: one tool, then final_answer; the
    tool picked by the likelihood of its whole name) on the servers' tools."""
    from toolmask.agent import Agent
    from toolmask.agent.demo_tools import ACT_ONCE

    if not args.prompt:
        raise ToolmaskError("demo --mcp needs --prompt (the built-in prompts use the demo tools)")
    with _mcp_toolset(args) as toolset:
        backend = _load_backend(args.model)
        grammar = args.mode == "grammar"
        agent = Agent(
            backend,
            toolset.tools,
            mode=args.mode,
            policy=[toolset.policy(), ACT_ONCE] if grammar else toolset.policy(),
            tool_choice="required" if grammar else args.tool_choice,
            answer_after=1 if grammar else 0,
            name_choice="likelihood" if grammar else "decode",
            max_steps=args.max_steps,
            fmt=args.format,
        )
        _demo_prompts(agent, args)
    return 0


def _cmd_check_mcp(args: argparse.Namespace) -> int:
    """``check --mcp``: compile every tool of the servers; one row per tool. Exit status 1
    when a tool's schema was refused."""
    from toolmask.schema import check_schema
    from toolmask.tools.formats import get_format

    options = dict(get_format("hermes").argument_options)
    options.update(lenient=args.lenient, strict_formats=args.strict_formats)
    rows: list[dict[str, Any]] = []
    with _mcp_toolset(args) as toolset:
        masked = toolset.masked()
        for entry in toolset:
            report = check_schema(entry.tool.parameters, **options)
            counts = report.counts()
            rows.append(
                {
                    "tool": entry.name,
                    "server": entry.server,
                    "mcp_name": entry.remote_name,
                    "status": "compiled",
                    "rules": report.rules,
                    "grammar": counts.get("grammar", 0),
                    "validated": [
                        f"{k.pointer} {k.keyword}"
                        for k in report.keywords
                        if k.enforcement in ("validator", "unsupported")
                    ],
                    "annotation": counts.get("annotation", 0),
                    "output_schema": entry.output_schema is not None,
                    "hints": entry.hints.brief(),
                    "permission": f"masked ({masked[entry.name]})"
                    if entry.name in masked
                    else "allowed",
                }
            )
        for refused in toolset.refused:
            rows.append(
                {
                    "tool": refused.name,
                    "server": refused.server,
                    "mcp_name": refused.remote_name,
                    "status": "refused",
                    "error": str(refused.error),
                    "pointer": getattr(refused.error, "pointer", None),
                    "hints": refused.hints.brief(),
                    "permission": "left out",
                }
            )
    if args.json:
        sys.stdout.write(json.dumps({"tools": rows}, indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_mcp_table(rows))
    return 1 if any(r["status"] == "refused" for r in rows) else 0


def _mcp_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of ``check --mcp`` as a plain-text table."""
    head = ("tool", "server", "arguments", "grammar", "after decoding", "hints", "permission")
    table = [head]
    for r in rows:
        if r["status"] == "refused":
            args_cell, grammar, after = "REFUSED", "-", "(below)"
        else:
            args_cell = f"{r['rules']} rules" + (", +output" if r["output_schema"] else "")
            grammar = str(r["grammar"])
            after = ", ".join(r["validated"]) or "-"
        table.append(
            (r["tool"], r["server"], args_cell, grammar, after, r["hints"], r["permission"])
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in table
    ]
    ok = sum(r["status"] == "compiled" for r in rows)
    for r in rows:
        if r["status"] == "refused":
            lines.append(f"refused: {r['server']}: {r['error']}")
    lines.append(
        f"\n{ok} of {len(rows)} tools compiled; grammar: keywords the decoder enforces; after "
        "decoding: keywords the validator checks; hints marked * are MCP's defaults (not "
        "declared by the server)"
    )
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    """The ``toolmask`` parser: one subcommand per entry of :data:`_COMMANDS`, each built by
    its own function (its options in one place)."""
    from toolmask import __version__

    p = argparse.ArgumentParser(
        prog="toolmask", description="Valid-by-construction tool calls for local LLMs."
    )
    p.add_argument("--version", action="version", version=f"toolmask {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _COMMANDS:
        add(sub)
    return p


def _add_grammar(sub: Any) -> None:
    from toolmask.tools import FORMATS

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
        choices=("compact", "spaced", "flexible", "indent"),
        help="JSON layout of the arguments (default: the format's own, json.dumps spacing for "
        "the JSON formats)",
    )
    g.add_argument(
        "--key-order",
        choices=("schema", "any"),
        help="argument keys in schema order or in any order, required ones enforced (default: "
        "the format's own, any)",
    )
    g.add_argument(
        "--calls-only",
        action="store_true",
        help="only the call block(s), from the trigger on (for lazy-grammar engines)",
    )
    g.set_defaults(run=_cmd_grammar)


def _add_check(sub: Any) -> None:
    c = sub.add_parser(
        "check",
        help="show how each keyword of a JSON Schema is enforced, or which tool-call format a "
        "chat template proves",
        description="Compile a JSON Schema and list, for every keyword, whether the grammar "
        "enforces it, the post-decode validator checks it, or it is an annotation. An "
        "unsupported keyword is an error naming its JSON pointer (a warning with --lenient). "
        "With --template: render a model's chat template with a probe conversation and show "
        "which wire format reads its calls back and takes them as its grammar (exit status 1 "
        "when none does and the prompt-injected fallback applies).",
    )
    c.add_argument("schema", nargs="?", help="JSON file holding the schema ('-': stdin)")
    c.add_argument(
        "--template",
        metavar="FILE|GGUF|FOLDER|MODEL",
        help="a chat template: a Jinja file, a GGUF, a Hugging Face model folder, or a "
        "catalogue model's name (toolmask models)",
    )
    add_mcp_arguments(c)
    c.add_argument("--lenient", action="store_true", help="unsupported keywords: warn, validate")
    c.add_argument(
        "--strict-formats",
        action="store_true",
        help="an unknown format is an error (default: an annotation, as JSON Schema 2020-12 says)",
    )
    c.add_argument(
        "--whitespace", default="compact", choices=("compact", "spaced", "flexible", "indent")
    )
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(run=_cmd_check)


def _add_demo(sub: Any) -> None:
    d = sub.add_parser(
        "demo",
        help="run an agent with real local tools on a local model",
        description="An agent loop on a local GGUF (default: the catalogue's default model, "
        "pulled on first use; see toolmask models) "
        "with exact decimal arithmetic, the time in a time zone, and file listing/reading under "
        "--dir. Prints each step (the raw completion, the parsed call, the tool's result), then "
        "a verdict: the answer, the tools used, and whether the answer is right.",
    )
    d.add_argument("--model", help=MODEL_HELP)
    d.add_argument("--dir", default=".", help="the folder the file tools may read (default: .)")
    d.add_argument("--prompt", action="append", help="a user message (repeatable)")
    d.add_argument(
        "--mode",
        default="grammar",
        choices=("grammar", "prose"),
        help="grammar (default): every step is a call; a tool is offered only when the "
        "question has one of its words; one tool runs, then final_answer ends the run; "
        "prose: --tool-choice each step, prose ends the run",
    )
    d.add_argument("--tool-choice", default="auto", type=_tool_choice, help="prose mode only")
    add_format_argument(d)
    d.add_argument("--max-steps", type=int, default=4)
    add_mcp_arguments(d)
    d.set_defaults(run=_cmd_demo)


def _add_chat(sub: Any) -> None:
    ch = sub.add_parser(
        "chat",
        help="chat with a local model in the terminal, tools included",
        description="An interactive agent loop: each line you type is a user message; the "
        "model's calls are parsed, run and fed back. Default tools: the demo's (arithmetic, "
        "time, files under --dir); --tools takes OpenAI tool specs (calls are shown, no "
        "implementation runs); --no-tools for plain chat. " + CHAT_HELP + ".",
    )
    ch.add_argument("--model", help=MODEL_HELP)
    ch.add_argument("--dir", default=".", help="the folder the file tools may read (default: .)")
    ch.add_argument("--tools", help="JSON file of OpenAI tools instead of the demo tools")
    ch.add_argument("--no-tools", action="store_true", help="plain chat, no tools")
    ch.add_argument("--tool-choice", default="auto", type=_tool_choice)
    add_format_argument(ch)
    ch.add_argument("--max-steps", type=int, default=4, help="model turns per message")
    ch.add_argument("--max-tokens", type=int, default=256, help="tokens per model turn")
    ch.add_argument("--temperature", type=float, default=0.0)
    ch.add_argument("--seed", type=int, default=None)
    ch.add_argument("--raw", action="store_true", help="print every raw completion")
    add_mcp_arguments(ch)
    ch.set_defaults(run=_cmd_chat)


#: the subcommands, in the order ``toolmask --help`` lists them
_COMMANDS: tuple[Callable[[Any], object], ...] = (
    _add_grammar,
    _add_check,
    _add_demo,
    _add_chat,
    add_serve_parser,
    add_models_parser,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    own, extra = split_engine_args(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(own)
    if extra and args.command != "serve":
        print(
            f"toolmask {args.command}: error: arguments after `--` are for serve", file=sys.stderr
        )
        return 2
    args.engine_args = extra
    try:
        status: int = args.run(args)
    except (ToolmaskError, OSError, json.JSONDecodeError) as e:
        print(f"toolmask {args.command}: error: {e}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
