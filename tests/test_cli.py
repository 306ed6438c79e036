"""The command line, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmask.cli import main
from toolmask.grammar import Grammar

from .tools.toolset import OPENAI_TOOLS
from .vendored import chat_template


@pytest.fixture
def tools_json(tmp_path: Path) -> Path:
    p = tmp_path / "tools.json"
    p.write_text(json.dumps(OPENAI_TOOLS))
    return p


@pytest.mark.parametrize("fmt", ["hermes", "llama3_json", "mistral", "phi4_mini", "functools"])
@pytest.mark.parametrize("choice", ["required", "auto"])
def test_grammar_gbnf_parses_back(
    fmt: str, choice: str, tools_json: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["grammar", "--tools", str(tools_json), "--format", fmt, "--tool-choice", choice]
    assert main([*args, "--dialect", "gbnf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("root ::= ")
    g = Grammar.from_gbnf(out)
    assert "root" in g


def test_grammar_options(tools_json: Path, capsys: pytest.CaptureFixture[str]) -> None:
    forced = json.dumps({"type": "function", "function": {"name": "get_time"}})
    base = ["grammar", "--tools", str(tools_json), "--tool-choice", forced, "--no-parallel"]
    assert main([*base, "--dialect", "ebnf"]) == 0
    ebnf = capsys.readouterr().out
    assert "get_time" in ebnf and "get_weather" not in ebnf and "prose" not in ebnf
    assert main([*base, "--dialect", "lark"]) == 0
    Grammar.from_lark(capsys.readouterr().out)
    special = ["--special", "<tool_call>", "--special", "</tool_call>"]
    assert main([*base, *special, "--dialect", "gbnf"]) == 0
    out = capsys.readouterr().out
    assert "<tool_call>" in out
    Grammar.from_gbnf(out)


def test_grammar_errors(
    tools_json: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert main(["grammar", "--tools", str(bad)]) == 1
    assert "expected a JSON list" in capsys.readouterr().err
    assert main(["grammar", "--tools", str(tools_json), "--tool-choice", "sometimes"]) == 1
    assert "unknown tool_choice" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["grammar", "--tools", str(tools_json), "--format", "nope"])
    assert e.value.code == 2


def test_check_reports_each_keyword(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "n": {"type": "integer", "minimum": 1},
        },
        "required": ["n"],
        "description": "demo",
        "x-vendor": 1,
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))
    assert main(["check", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    how = {(k["pointer"], k["keyword"]): k["enforcement"] for k in report["keywords"]}
    assert how[("/properties/tags", "uniqueItems")] == "validator"
    assert how[("/properties/n", "minimum")] == "grammar"
    assert how[("/", "description")] == "annotation"
    assert how[("/", "x-vendor")] == "ignored"
    assert how[("/properties/tags/items", "type")] == "grammar"
    assert report["counts"]["grammar"] == 8  # type x4, properties, items, minimum, required


def test_check_unsupported_keyword(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"properties": {"x": {"$dynamicRef": "#a"}}}))
    assert main(["check", str(path)]) == 1
    assert "#/properties/x ($dynamicRef)" in capsys.readouterr().err
    assert main(["check", str(path), "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "$dynamicRef" in out and "validator" in out and "warning:" in out


def test_check_template_shows_the_proof(capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_template("llama.cpp/mistralai-Mistral-Nemo-Instruct-2407.jinja")
    assert main(["check", "--template", str(path)]) == 0
    out = capsys.readouterr().out
    assert "detected: mistral (proven on the calls the chat template renders)" in out
    assert '"id": "call0000a"' in out  # the rendered call bytes, Nemo's call id included
    assert "  mistral: PROVEN" in out and "one: yes / yes / yes" in out
    assert main(["check", "--template", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["format"], report["source"]) == ("mistral", "template")
    assert [c["case"] for c in report["cases"]] == ["one", "two"]
    assert {"format": "mistral", "case": "two", "parsed": True, "required": True,
            "auto": True, "detail": ""} in report["evidence"]  # fmt: skip


def test_check_template_fallback_warns(capsys: pytest.CaptureFixture[str]) -> None:
    path = chat_template("vllm/tool_chat_template_toolace.jinja")
    assert main(["check", "--template", str(path)]) == 1
    out = capsys.readouterr().out
    assert "detected: functools (fallback)" in out
    assert "warning: the chat template tool_chat_template_toolace.jinja renders tool calls" in out
    assert "--format" in out


def test_check_template_of_a_gguf_without_tool_calls(capsys: pytest.CaptureFixture[str]) -> None:
    from toolmask.models import TEST_MODEL, resolve_model

    assert main(["check", "--template", str(resolve_model(TEST_MODEL))]) == 1
    out = capsys.readouterr().out
    assert "rendered turns: none (the template renders no tool calls)" in out
    assert "detected: hermes (no calls: '<|im_start|>')" in out


def _model_or_skip() -> None:
    pytest.importorskip("llama_cpp")
    from toolmask.errors import ToolmaskError
    from toolmask.models import TEST_MODEL, resolve_model

    try:
        resolve_model(TEST_MODEL)
    except ToolmaskError as e:  # pragma: no cover - only without the default model
        pytest.skip(str(e))


@pytest.mark.model
def test_demo_runs_tools_on_the_embedded_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _model_or_skip()
    (tmp_path / "notes.txt").write_text("hi")
    argv = ["demo", "--dir", str(tmp_path), "--tool-choice", "required", "--max-steps", "1"]
    assert main([*argv, "--prompt", "What is 12.75 plus 0.35?"]) == 0
    out = capsys.readouterr()
    assert "raw completion" in out.out and "parsed call: " in out.out
    assert "--- tool " in out.out  # the call ran
    assert "\nverdict: " in out.out and "| converged: " in out.out
    assert "loaded " in out.err  # the progress line around model loading


@pytest.mark.model
def test_chat_keeps_history_and_resets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    _model_or_skip()
    lines = "What is 2.5 plus 4.25?\n/reset\nSay hello.\n/exit\nnever read\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    argv = ["chat", "--dir", str(tmp_path), "--tool-choice", "required", "--max-steps", "1"]
    assert main([*argv, "--max-tokens", "48"]) == 0
    out = capsys.readouterr().out
    # required: the reply is a call, or one cut by --max-tokens and reported as such
    assert "parsed call: " in out or "raw completion (length)" in out, out
    for name in ("calculate", "list_files", "current_time"):
        if f"parsed call: {name}(" in out:
            assert f"--- tool {name}: " in out
    assert "(conversation reset)" in out
    assert "never read" not in out


@pytest.mark.model
def test_chat_without_tools_answers_in_prose(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    _model_or_skip()
    monkeypatch.setattr("sys.stdin", io.StringIO("Say hello.\n"))
    assert main(["chat", "--no-tools", "--max-tokens", "24"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("assistant: ") and "<tool_call>" not in out


def test_demo_verdict_says_what_happened(tmp_path: Path) -> None:
    import time

    from toolmask.agent import Outcome, Transcript
    from toolmask.cli import DEMO_PROMPTS, _verdict

    def run(outcome: Outcome) -> Transcript:
        t = Transcript()
        t.outcome = outcome
        return t

    now = time.time()
    right = run(Outcome("answer", "It is 13.10.", "answered", tools=("calculate",)))
    assert _verdict(DEMO_PROMPTS[0], right, str(tmp_path), now) == (
        'verdict: answer "It is 13.10." | tools: calculate | converged: yes'
    )
    wrong = run(Outcome("answer", "12.76", "answered"))
    line = _verdict(DEMO_PROMPTS[0], wrong, str(tmp_path), now)
    assert line.endswith("tools: none | converged: no (expected 13.1)")
    stuck = run(Outcome("blocked", None, "stopped: 2 blocked steps in a row (last: x)"))
    line = _verdict(DEMO_PROMPTS[1], stuck, str(tmp_path), now)
    assert line.startswith("verdict: no answer (stopped: 2 blocked") and "converged: no" in line
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "b.md").write_text("")
    both = run(Outcome("answer", "a.txt and b.md", "answered", tools=("list_files",)))
    assert _verdict(DEMO_PROMPTS[2], both, str(tmp_path), now).endswith("converged: yes")
    one = run(Outcome("answer", "a.txt", "answered", tools=("list_files",)))
    assert "converged: no (expected every entry: a.txt, b.md)" in _verdict(
        DEMO_PROMPTS[2], one, str(tmp_path), now
    )
    other = _verdict("Say hi.", run(Outcome("answer", "hi", "answered")), str(tmp_path), now)
    assert other.endswith("converged: unknown (no expected answer for this prompt)")


# -- --mcp: MCP servers as the tool source (tests/integrations/test_mcp.py tests the parts) -----

EDGE_SERVER = Path(__file__).parent / "integrations" / "mcp_edge_server.py"


def _edge_command() -> str:
    import shlex
    import sys

    pytest.importorskip("mcp")
    return shlex.join([sys.executable, str(EDGE_SERVER), "--name", "edge"])


def test_check_mcp_prints_a_row_per_tool(capsys: pytest.CaptureFixture[str]) -> None:
    edge = _edge_command()
    assert main(["check", "--mcp", "mcp-server-time", "--mcp", edge]) == 1  # weird is refused
    out, err = capsys.readouterr()
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert rows["tool"].split() == [
        "tool",
        "server",
        "arguments",
        "grammar",
        "after",
        "decoding",
        "hints",
        "permission",
    ]
    assert "mcp-time" in rows["get_current_time"] and "+output" in rows["get_current_time"]
    assert rows["get_current_time"].split()[-2:] == ["read-only", "allowed"]
    assert rows["wipe"].split()[-4:] == ["destructive,", "open-world*", "masked", "(destructive)"]
    assert "REFUSED" in rows["weird"]
    assert "refused: edge: tool 'weird': #/properties/x ($dynamicRef)" in out
    assert "12 of 13 tools compiled" in out
    assert "MCP servers: mcp-time (mcp-server-time), edge (" in err
    assert "masked (in the prompt, not callable): wipe (destructive), my_tool (destructive)" in err


def test_check_mcp_json_and_permissions(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--mcp", _edge_command(), "--json", "--allow-destructive"]
    assert main([*argv, "--deny-tool", "inject"]) == 1
    rows = {r["tool"]: r for r in json.loads(capsys.readouterr().out)["tools"]}
    assert rows["wipe"]["permission"] == "allowed"
    assert rows["inject"]["permission"] == "masked (denied)"
    assert rows["add"]["validated"] == [] and rows["add"]["grammar"] > 0
    assert rows["add"]["output_schema"] is True and rows["whoami"]["output_schema"] is False
    assert rows["weird"]["status"] == "refused" and rows["weird"]["pointer"] == "/properties/x"
    assert main(["check", "--mcp", "mcp-server-time", "--allow-tool", "nope"]) == 1
    assert "'nope' matches no MCP tool" in capsys.readouterr().err


def test_check_needs_a_schema_or_mcp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 1
    err = capsys.readouterr().err
    assert "give a schema file" in err and "--template" in err and "--mcp" in err
    path = tmp_path / "s.json"
    path.write_text("{}")
    assert main(["check", str(path), "--mcp", "mcp-server-time"]) == 1
    assert "not both" in capsys.readouterr().err


@pytest.mark.model
def test_demo_mcp_calls_the_time_server(capsys: pytest.CaptureFixture[str]) -> None:
    _model_or_skip()
    pytest.importorskip("mcp")
    prompt = "What time is it in Tokyo (Asia/Tokyo)?"
    # calibrated on SmolLM2; the default 0.5B picks convert_time for this prompt
    argv = ["demo", "--model", "smollm2-135m", "--mcp", "mcp-server-time", "--prompt", prompt]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert 'parsed call: get_current_time({"timezone": "Asia/Tokyo"})' in out
    assert '--- tool get_current_time: {\n  "timezone": "Asia/Tokyo",' in out
    assert "\nverdict: " in out and "| tools: get_current_time |" in out


def test_model_names_are_resolved_before_anything_loads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--model`` takes a GGUF path or a catalogue name; anything else is an error that lists
    the catalogue (nothing is fetched or loaded for it)."""
    assert main(["demo", "--model", "qwen9-huge", "--prompt", "hi"]) == 1
    err = capsys.readouterr().err
    assert "no model named 'qwen9-huge'" in err and "smollm2-135m" in err
    assert main(["chat", "--model", "/nowhere/x.gguf"]) == 1
    assert "no GGUF model at /nowhere/x.gguf" in capsys.readouterr().err
    assert main(["check", "--template", "qwen9-huge"]) == 1
    assert "no such file" in capsys.readouterr().err
