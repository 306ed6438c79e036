"""The loop's modes, policies and guards on a scripted model (no GGUF).

``Scripted`` is a real :class:`DecodingBackend` over a byte vocabulary whose logits prefer the
next byte of a scripted completion, so the real decode loop runs under the real mask: a script
the grammar forbids comes out changed (the tests compare), and the prompt and KV-prefix
bookkeeping are the backend's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import toolmask as tm
from toolmask.agent import (
    ANSWER_TOOL,
    Agent,
    Message,
    PoolFilter,
    StateMachine,
    Transcript,
    expand_tool_patterns,
)
from toolmask.backends import DecodingBackend
from toolmask.errors import ToolError
from toolmask.tools import ToolCall

EOS = 0
TOKENS: list[bytes | None] = [None, *(bytes([b]) for b in range(256))]
VOCAB = tm.Vocabulary.from_token_bytes(TOKENS, eos_ids=[EOS], special_texts={EOS: "<eos>"})


def _agent(*args: Any, **kw: Any) -> Agent:
    """An Agent that reads its replies as Hermes, the format these scripts write (a backend
    without a chat template or a special token naming a format would get the prompt-injected
    fallback)."""
    kw.setdefault("fmt", "hermes")
    return Agent(*args, **kw)


class Scripted(DecodingBackend):
    """Prefers, at every step, the next byte of the current scripted completion, then EOS."""

    def __init__(self, script: list[str]) -> None:
        self.vocab = VOCAB
        self.n_ctx = 1 << 16
        self.script = list(script)
        self.current = b""
        self.context: list[int] = []
        self.prompt_len = 0
        self.prompts: list[str] = []
        self.reused: list[int] = []
        #: the compiled turn of every step, as the loop passed it
        self.compiled: list[tm.CompiledGrammar | None] = []

    def generate(self, prompt: list[int], compiled: tm.CompiledGrammar | None, **kw: Any) -> Any:
        self.compiled.append(compiled)
        return super().generate(prompt, compiled, **kw)

    def sync_prompt(self, prompt: list[int]) -> int:
        common = self._sync(prompt)
        self.prompt_len = len(prompt)
        self.reused.append(common)
        self.current = self.script.pop(0).encode() if self.script else b""
        return common

    def _sync(self, prompt: list[int]) -> int:
        """Make ``prompt`` the context (recorded); the tokens reused (all but one at most)."""
        common = 0
        for a, b in zip(self.context, prompt, strict=False):
            if a != b:
                break
            common += 1
        self.context = list(prompt)
        self.prompts.append(bytes(t - 1 for t in prompt).decode())
        return min(common, len(prompt) - 1)

    def feed(self, tokens: list[int]) -> None:
        self.context.extend(tokens)

    def logits(self) -> Any:
        done = len(self.context) - self.prompt_len
        row = np.full(len(TOKENS), -10.0, dtype=np.float32)
        row[self.current[done] + 1 if done < len(self.current) else EOS] = 5.0
        return row

    def encode(self, text: str) -> list[int]:
        return [b + 1 for b in text.encode()]

    def tokenize(self, text: str) -> list[int]:
        return self.encode(text)


def call(name: str, args: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def answer(text: str) -> str:
    return call("final_answer", f'{{"answer": "{text}"}}')


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First.
        b: Second.
    """
    return a + b


def shell(command: str) -> str:
    """Run a shell command.

    Args:
        command: The command.
    """
    raise AssertionError("the shell must not run")


def browser_open(url: str) -> str:
    """Open a page.

    Args:
        url: The address.
    """
    return f"opened {url}"


def browser_read() -> str:
    """Read the open page."""
    return "the page says 42"


def flaky(x: int) -> int:
    """Fail.

    Args:
        x: Anything.
    """
    raise RuntimeError("disk on fire")


def raw_of(t: Transcript) -> list[str | None]:
    return [m.raw for m in t if m.role == "assistant"]


# -- grammar mode -------------------------------------------------------------------------------


def test_grammar_mode_ends_on_the_answer_tool() -> None:
    script = [call("add", '{"a": 2, "b": 3}'), answer("5")]
    b = Scripted(script)
    agent = _agent(b, [add], mode="grammar")
    t = agent.run("2 + 3?")
    assert raw_of(t) == script  # the mask let the script through unchanged
    assert t.outcome.stop == "answer" and t.outcome.answer == "5"
    assert t.outcome.tools == ("add",) and t.outcome.steps == 2
    assert [m.content for m in t if m.role == "tool"] == ["5", "5"]
    assert "final_answer" in agent.system  # advertised like any tool
    assert t.outcome.tokens == sum(m.meta["tokens"] for m in t if m.role == "assistant")


def test_grammar_mode_never_lets_prose_through() -> None:
    b = Scripted(["The answer is 5.", answer("5")])
    t = _agent(b, [add], mode="grammar", max_steps=2).run("2 + 3?")
    first = t[2]
    assert first.raw != "The answer is 5." and first.raw is not None
    assert first.raw.lstrip().startswith("<tool_call>")  # the grammar required a call
    assert first.tool_calls and not first.content.strip()  # no prose around it


def test_configurable_answer_tool() -> None:
    def reply(text: str, confidence: int) -> str:
        """Reply.

        Args:
            text: The reply.
            confidence: 0 to 10.
        """
        return f"{text} ({confidence}/10)"

    script = [call("reply", '{"text": "five", "confidence": 9}')]
    t = _agent(Scripted(script), [add], mode="grammar", answer_tool=reply).run("2 + 3?")
    assert t.outcome.answer == "five (9/10)" and t.outcome.stop == "answer"


def test_prose_mode_is_unchanged() -> None:
    t = _agent(Scripted(["It is 5."]), [add]).run("2 + 3?")
    assert t.outcome.stop == "prose" and t.outcome.answer == "It is 5."
    assert ANSWER_TOOL.name not in _agent(Scripted([]), [add]).system


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ToolError, match="mode"):
        _agent(Scripted([]), [add], mode="chat")  # type: ignore[arg-type]


def test_unconstrained_parses_only() -> None:
    b = Scripted(["The answer is 5."])
    t = _agent(b, [add], mode="grammar", constrained=False, max_steps=1).run("2 + 3?")
    assert raw_of(t) == ["The answer is 5."]  # nothing forced it into a call
    assert t.outcome.stop == "max_steps" and t.outcome.answer is None


# -- guards -------------------------------------------------------------------------------------


def test_repeated_call_with_same_result_is_blocked_and_stops() -> None:
    same = call("add", '{"a": 2, "b": 3}')
    b = Scripted([same, same, same, same])
    agent = _agent(
        b, [add], mode="grammar", max_consecutive_blocked=2, max_steps=6, answer_on_repeat=False
    )
    t = agent.run("2 + 3?")
    assert t.outcome.stop == "blocked" and t.outcome.steps == 3
    assert t.outcome.answer is None
    assert "2 blocked steps in a row" in t.outcome.message
    assert "repeated, same result" in t.outcome.message
    notes = [m.content for m in t if m.role == "tool"]
    assert notes[0] == "5" and "same call gave the same result" in notes[1]


@pytest.mark.parametrize("mode", ["grammar", "prose"])
def test_after_a_repeat_the_next_step_may_only_answer(mode: Any) -> None:
    """A model that loops on its last call (the same call, the same result) is asked for the
    answer: the next step allows the answer tool alone (grammar mode) or no call (auto); the
    prompt is the same tools' either way."""
    same = call("add", '{"a": 2, "b": 3}')
    last = answer("5") if mode == "grammar" else "It is 5."
    b = Scripted([same, same, last])
    t = _agent(b, [add], mode=mode, max_steps=6).run("2 + 3?")
    assert t.outcome.answer == ("5" if mode == "grammar" else "It is 5.")
    assert t.outcome.stop == ("answer" if mode == "grammar" else "prose")
    assert t.outcome.steps == 3  # the call, its repeat, then the answer
    allowed = [m.meta["allowed"] for m in t if m.role == "assistant"]
    every = ["add", "final_answer"] if mode == "grammar" else ["add"]
    assert allowed == [every, every, ["final_answer"] if mode == "grammar" else []]
    # the model that repeats once more is held to the answer by the mask
    b = Scripted([same, same, same])
    t = _agent(b, [add], mode=mode, max_steps=3).run("2 + 3?")
    third = [m for m in t if m.role == "assistant"][2]
    if mode == "grammar":  # the call it began is the answer tool's
        assert (third.raw or "").startswith('<tool_call>\n{"name": "final_answer"')
    else:  # no call: the opener it began is masked out of the prose
        assert third.tool_calls == () and "<tool_call>" not in (third.raw or "")
    assert len({p.split("<|im_start|>user")[0] for p in b.prompts}) == 1  # same tools prompt


def test_a_repeat_with_a_new_result_is_not_blocked() -> None:
    box = {"n": 0}

    def tick() -> int:
        """Count."""
        box["n"] += 1
        return box["n"]

    same = call("tick", "{}")
    t = _agent(Scripted([same, same, same]), [tick], mode="grammar", max_steps=3).run("go")
    assert t.outcome.stop == "max_steps" and t.outcome.blocked == ()


def test_tool_errors_are_blocked() -> None:
    b = Scripted([call("flaky", '{"x": 1}'), call("flaky", '{"x": 2}')])
    t = _agent(b, [flaky], mode="grammar", max_consecutive_blocked=2).run("go")
    assert t.outcome.stop == "blocked"
    assert "RuntimeError: disk on fire" in t.outcome.message
    assert next(m.content for m in t if m.role == "tool").startswith("error: RuntimeError")


def test_validator_errors_go_back_and_count_as_blocked() -> None:
    spec = {
        "type": "function",
        "function": {
            "name": "pick",
            "parameters": {
                "type": "object",
                "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
                "required": ["xs"],
                "additionalProperties": False,
            },
        },
    }
    # uniqueItems is checked after decoding, not by the grammar (see toolmask check)
    spec["function"]["parameters"]["properties"]["xs"]["uniqueItems"] = True  # type: ignore[index]
    bad = call("pick", '{"xs": [1, 1]}')
    b = Scripted([bad, bad, answer("x")])
    agent = _agent(b, [spec], functions={"pick": lambda xs: xs}, mode="grammar")
    t = agent.run("pick")
    tool_msgs = [m for m in t if m.role == "tool"]
    assert tool_msgs[0].content.startswith("error:") and "/xs" in tool_msgs[0].content
    assert tool_msgs[0].name == "pick" and tool_msgs[0].tool_call_id is not None
    assert t.outcome.stop == "blocked" and "invalid" in t.outcome.message


def test_a_good_step_resets_the_counter() -> None:
    b = Scripted(
        [call("flaky", '{"x": 1}'), call("add", '{"a": 1, "b": 1}'), call("flaky", '{"x": 2}')]
    )
    t = _agent(b, [flaky, add], mode="grammar", max_steps=3).run("go")
    assert t.outcome.stop == "max_steps" and len(t.outcome.blocked) == 2


def test_a_cut_turn_is_blocked_in_grammar_mode() -> None:
    long = call("add", '{"a": 1111111111111111, "b": 2}')
    b = Scripted([long, long])
    t = _agent(b, [add], mode="grammar", max_tokens=20).run("go")
    assert t.outcome.stop == "blocked" and "cut at max_tokens" in t.outcome.message


def test_a_call_cut_in_prose_mode_is_not_an_answer() -> None:
    """Under ``auto`` a reply cut at ``max_tokens`` inside its call block holds the block's raw
    text in the content (never dropped); the agent does not take it for the answer."""
    long = "Adding. " + call("add", '{"a": 1111111111111111, "b": 2}')
    b = Scripted([long, "It is 5."])
    t = _agent(b, [add], tool_choice="auto", max_tokens=30).run("2 + 3?")
    assert t.outcome.stop == "prose" and t.outcome.answer == "It is 5."
    first = next(m for m in t if m.role == "assistant")
    assert first.malformed and "<tool_call>" in first.content  # the cut block stays in content
    assert t.outcome.blocked == ("step 1: an unfinished call (cut at max_tokens)",)
    error = next(m for m in t if m.role == "tool")
    assert error.content.startswith("error: an unfinished call (cut at max_tokens)")
    # twice in a row: the run stops blocked and says why
    t = _agent(Scripted([long, long]), [add], tool_choice="auto", max_tokens=30).run("2 + 3?")
    assert t.outcome.stop == "blocked" and "cut at max_tokens" in t.outcome.message


# -- policies -----------------------------------------------------------------------------------


def test_expand_patterns() -> None:
    names = ["browser_open", "browser_read", "shell", "add"]
    assert expand_tool_patterns(["browser_*"], names) == ["browser_open", "browser_read"]
    assert expand_tool_patterns(["*", "!browser_*"], names) == ["shell", "add"]
    with pytest.raises(ToolError, match="matches no tool"):
        expand_tool_patterns(["web_*"], names)


def _run_state_machine(script: list[str]) -> tuple[Scripted, Transcript, Agent]:
    machine = StateMachine(
        {"start": ["browser_open"], "open": ["browser_*", "final_answer"], "read": []},
        start="start",
        transitions={"start": {"browser_open": "open"}, "open": {"browser_read": "read"}},
    )
    b = Scripted(script)
    agent = _agent(b, [shell, browser_open, browser_read], mode="grammar", policy=machine)
    return b, agent.run("what does example.org say?"), agent


def test_state_machine_narrows_the_mask_and_keeps_the_prompt() -> None:
    script = [
        call("browser_open", '{"url": "example.org"}'),
        call("browser_read", "{}"),
        answer("42"),
    ]
    b, t, agent = _run_state_machine(script)
    assert raw_of(t) == script and t.outcome.answer == "42"
    allowed = [m.meta["allowed"] for m in t if m.role == "assistant"]
    assert allowed == [
        ["browser_open"],
        ["browser_open", "browser_read", "final_answer"],
        ["final_answer"],  # the state allows nothing: the answer tool alone, so the run can end
    ]
    # each step's prompt extends the previous one byte for byte, whatever the allowed set
    for before, after in zip(b.prompts, b.prompts[1:], strict=False):
        assert after.startswith(before)
    assert all(r > 0 for r in b.reused[1:])
    # the prompt under another allowed set is the same text
    base = agent.template(t[:2], agent._base)
    assert base == b.prompts[0]


def test_policy_steps_share_one_compiled_turn() -> None:
    """Each step's allowed set is a name filter over the one turn compiled for every tool:
    the policy switches a filter, never compiles the turn again."""
    b, _t, _a = _run_state_machine(
        [call("browser_open", '{"url": "example.org"}'), call("browser_read", "{}"), answer("1")]
    )
    steps = [c for c in b.compiled if c is not None]
    assert len(steps) == 3
    assert all(c.filter is not None for c in steps)
    assert len({id(c.automaton) for c in steps}) == 1


def test_state_machine_forbids_tools_outside_the_state() -> None:
    _b, t, _ = _run_state_machine([call("shell", '{"command": "ls"}')])
    first = t[2]  # shell was masked: the first name the grammar allowed is taken instead
    assert first.raw is not None and first.raw.startswith('<tool_call>\n{"name": "browser_open"')
    assert all(c.name != "shell" for m in t if m.role == "assistant" for c in m.tool_calls)


def test_state_machine_ignores_failed_calls_and_checks_its_table() -> None:
    m = StateMachine({"a": ["x"], "b": ["y"]}, start="a", transitions={"a": {"x": "b"}})
    ok = ToolCall("call_1", "x", {})
    bad = ToolCall("call_2", "x", {})
    run = [
        Message("user", "go"),
        Message("assistant", tool_calls=(bad,)),
        Message("tool", "error: no", tool_call_id="call_2"),
    ]
    assert m.state_at(run) == "a"
    run += [Message("assistant", tool_calls=(ok,)), Message("tool", "fine", tool_call_id="call_1")]
    assert m.state_at(run) == "b" and m(0, run) == ["y"]
    assert m.state_at([*run, Message("user", "again")]) == "a"  # a new run starts over
    with pytest.raises(ToolError, match="unknown state 'c'"):
        StateMachine({"a": ["x"]}, start="a", transitions={"a": {"x": "c"}})
    with pytest.raises(ToolError, match="start state"):
        StateMachine({"a": ["x"]}, start="z")
    by_fn = StateMachine({"a": ["x"], "b": ["y"]}, "a", lambda s, c: "b" if c.name == "x" else None)
    assert by_fn.state_at(run[:1] + run[3:5]) == "b"


def test_pool_filter_matches_whole_words() -> None:
    f = PoolFilter({"shell": ["shell", "terminal"], "browser_*": ["web", "page"]})
    assert f.excluded("open a terminal") == ["browser_*"]
    assert f.excluded("the webpage and the shellfish") == ["shell", "browser_*"]  # not words
    assert f.excluded("read the WEB page in the Shell") == []
    assert f(0, [Message("user", "add 2 and 3")]) == ["*", "!shell", "!browser_*"]
    assert f(0, [Message("user", "use the shell and the web")]) is None
    with pytest.raises(ToolError, match="empty"):
        PoolFilter({"shell": []})


def test_pool_filter_in_the_loop_masks_escape_hatches() -> None:
    script = [call("shell", '{"command": "echo 5"}'), answer("5")]
    agent = _agent(
        Scripted(script),
        [add, shell],
        mode="grammar",
        policy=PoolFilter({"shell": ["shell", "command"]}),
    )
    t = agent.run("2 + 3?")
    assert t[2].tool_calls[0].name == "add"  # shell masked: no marker in the question
    assert t[2].meta["allowed"] == ["add", "final_answer"]
    assert "shell" in agent.system  # still advertised


def test_policies_intersect() -> None:
    agent = _agent(
        Scripted([]),
        [add, shell, browser_open],
        mode="grammar",
        policy=[lambda s, t: ["add", "shell"], PoolFilter({"shell": ["shell"]})],
    )
    assert agent.allowed(0, [Message("user", "hi")]) == ["add"]


def test_answer_after_masks_the_answer_until_a_tool_ran() -> None:
    script = [answer("6"), call("flaky", '{"x": 1}'), call("add", '{"a": 2, "b": 3}'), answer("5")]
    b = Scripted(script)
    t = _agent(b, [add, flaky], mode="grammar", answer_after=1, max_consecutive_blocked=3).run("?")
    allowed = [m.meta["allowed"] for m in t if m.role == "assistant"]
    assert allowed[:3] == [["add", "flaky"]] * 3  # a failed tool does not count
    assert allowed[3] == ["add", "flaky", "final_answer"]
    assert t[2].tool_calls[0].name != "final_answer"  # the scripted early answer was masked
    assert t.outcome.stop == "answer" and t.outcome.answer == "5"


def test_format_auto_prompt_opened_reasoning_and_budget() -> None:
    """``fmt="auto"`` reads qwen3 from the model's template; the prompt opens ``<think>``, so
    the turn starts inside the channel; the budget closes it after 3 tokens and the call
    follows."""
    from tests.decoding.thinker import Thinker
    from tests.tools.test_probe import TEMPLATES

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    backend = Thinker(
        opener="<think>",
        close="</think>",
        after="\n\n" + call,
        specials=["<think>", "</think>"],
        chat_template=TEMPLATES["qwen3"],  # renders calls as Qwen 3 does: proves qwen3
    )

    def template(messages: Any, turn: Any, **_kw: Any) -> str:
        text = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
        return text + "<|im_start|>assistant\n<think>\n"

    def get_weather(city: str) -> str:
        """Weather."""
        return f"sunny in {city}"

    agent = Agent(backend, [get_weather], template=template, reasoning_budget=3, max_steps=1)
    assert agent._base.format.name == "qwen3"
    reply = agent.run("Weather in Oslo?")[2]
    assert reply.meta["reasoning"] == "hm" and reply.meta["reasoning_cut"]
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_weather", {"city": "Oslo"})]
    with pytest.raises(ToolError, match="reasoning_budget"):
        Agent(backend, [get_weather], template=template, reasoning_budget=-2)


# -- the decision prompt under auto ---------------------------------------------------------------


def test_auto_prose_steps_carry_the_decision_prompt_after_the_user_message() -> None:
    b = Scripted([call("add", '{"a": 2, "b": 3}'), "It is 5."])
    t = _agent(b, [add]).run("2 + 3?")
    decision = "<|im_start|>system\nReply with <tool_call> if a function can answer this"
    for prompt in b.prompts:
        user = prompt.index("<|im_start|>user\n2 + 3?<|im_end|>\n")
        assert prompt.index(decision) > user  # right after the user's message, every step
        assert prompt.count(decision) == 1
    assert b.prompts[1].startswith(b.prompts[0][: -len("<|im_start|>assistant\n")])
    assert b.reused[1] > len(b.prompts[0]) - 30  # the second step reuses the first's prefix
    assert all(m.role != "system" or i == 0 for i, m in enumerate(t))  # not in the transcript


def test_no_decision_prompt_when_the_mask_decides_or_when_asked() -> None:
    for agent in (
        _agent(Scripted([answer("5")]), [add], mode="grammar"),
        _agent(Scripted(["It is 5."]), [add], tool_choice="required", max_steps=1),
        _agent(Scripted(["It is 5."]), [add], reminder=False),
    ):
        agent.run("2 + 3?")
        backend = agent.backend
        assert isinstance(backend, Scripted)
        assert "Reply with <tool_call>" not in backend.prompts[0]


# -- choosing the tool by its whole name's likelihood -------------------------------------------


def add_days(date: str, days: int) -> str:
    """A date plus days.

    Args:
        date: YYYY-MM-DD.
        days: How many.
    """
    return f"{date}+{days}"


def test_backend_score_is_the_sum_of_log_softmax() -> None:
    b = Scripted(["ab", "ab"])
    context = b.tokenize("Q:")
    good, bad = b.score(context, [b.tokenize("ab"), b.tokenize("ax")])
    # Scripted's logits: 5.0 for the preferred byte, -10.0 for every other token
    hit = 5.0 - float(np.log(np.exp(5.0) + (len(TOKENS) - 1) * np.exp(-10.0)))
    miss = -10.0 - float(np.log(np.exp(5.0) + (len(TOKENS) - 1) * np.exp(-10.0)))
    assert good == pytest.approx(2 * hit) and bad == pytest.approx(hit + miss)
    assert b.reused[-1] == len(context) - 1  # the context's KV prefix is reused


@pytest.mark.parametrize("meant", ["add", "add_days"])
def test_likelihood_picks_the_name_the_model_means_with_the_same_prompt(meant: str) -> None:
    """The scripted model means ``meant`` when asked for the whole name (its scripts for the
    two scoring passes, which start after what the candidates share: the prompt and
    ``<tool_call>\n{"name": "add``); the step is then decoded under that tool alone, and the
    prompt is the one the default choice renders."""
    args = '{"a": 2, "b": 3}' if meant == "add" else '{"date": "2025-01-01", "days": 3}'
    shared = len('<tool_call>\n{"name": "add')
    script = [call(meant, args)[shared:]] * 2 + [call(meant, args)]
    b = Scripted(script)
    agent = _agent(b, [add_days, add], mode="grammar", answer_after=1, name_choice="likelihood")
    t = agent.run("2 + 3?", max_steps=1)
    step = t[2]
    scores = step.meta["name_scores"]
    assert set(scores) == {"add_days", "add"} and max(scores, key=scores.get) == meant
    assert step.meta["allowed"] == [meant] and step.tool_calls[0].name == meant
    plain = Scripted([call(meant, args)])
    _agent(plain, [add_days, add], mode="grammar", answer_after=1).run("2 + 3?", max_steps=1)
    assert b.prompts[-1] == plain.prompts[0]  # the mask changed, the prompt did not


def test_likelihood_leaves_prose_steps_and_single_tools_alone() -> None:
    b = Scripted(["It is 5."])
    t = _agent(b, [add_days, add], name_choice="likelihood").run("2 + 3?")
    assert t[2].meta["name_scores"] == {} and len(b.prompts) == 1  # auto: nothing scored
    b = Scripted([call("add", '{"a": 2, "b": 3}')])
    t = _agent(b, [add], tool_choice="required", name_choice="likelihood").run("?", max_steps=1)
    assert t[2].meta["name_scores"] == {} and len(b.prompts) == 1  # one tool: nothing to choose
    with pytest.raises(ToolError, match="name_choice"):
        _agent(b, [add], name_choice="best")  # type: ignore[arg-type]


def test_the_decoding_mode_reaches_the_backend() -> None:
    seen: list[Any] = []

    class Recording(Scripted):
        def generate(self, prompt: list[int], compiled: Any, **kw: Any) -> Any:
            seen.append((kw.get("sampling"), kw.get("decoding")))
            kw["sampling"] = kw["decoding"] = None  # the script is decoded greedily, plain
            return super().generate(prompt, compiled, **kw)

    b = Recording([answer("5")])
    _agent(b, [add], mode="grammar", sampling="exact").run("2 + 3?", max_steps=1)
    assert seen[0][1].mode == "exact" and seen[0][0].temperature == 0
    params = tm.SamplingParams(temperature=0.7)
    decoding = tm.DecodingParams("aligned", particles=4)
    b = Recording([answer("5")])
    _agent(b, [add], mode="grammar", sampling=params, decoding=decoding).run("2 + 3?", max_steps=1)
    assert seen[1][0] is params and seen[1][1] is decoding
    with pytest.raises(ToolError, match="mode"):
        _agent(b, [add], sampling="beam")
    with pytest.raises(ToolError, match="mode"):
        _agent(b, [add], decoding="beam")


class Replier(Scripted):
    """Its logits are a function of the whole context (so the decoders' scoring reads them
    right): the next byte of the script after the assistant's header, else the end; ten times
    as sure as :class:`Scripted` (a draw at temperature 1 is the script's byte)."""

    HEADER = tuple(b + 1 for b in b"<|im_start|>assistant\n")

    def sync_prompt(self, prompt: list[int]) -> int:
        return self._sync(prompt)  # the script is one reply: nothing to advance

    def logits(self) -> Any:
        ctx, h = self.context, list(self.HEADER)
        at = max(i + len(h) for i in range(len(ctx) - len(h) + 1) if ctx[i : i + len(h)] == h)
        done = bytes(t - 1 for t in ctx[at:])
        want = self.script[0].encode()
        row = np.full(len(TOKENS), -100.0, dtype=np.float32)
        row[want[len(done)] + 1 if want.startswith(done) and len(done) < len(want) else EOS] = 50.0
        return row


@pytest.mark.parametrize("calls", [True, False])
def test_exact_mode_decides_call_or_prose_first_under_auto(calls: bool) -> None:
    """Sampled, the exact decoder draws call or prose first by the model's probability of
    opening a call block (here all but 1 or 0); the agent describes the opening and parses
    a call first under the required turn it builds for it."""
    b = Replier([call("add", '{"a": 2, "b": 3}') if calls else "It is 5."])
    params = tm.SamplingParams(temperature=1.0, seed=0)
    t = _agent(b, [add], sampling=params, decoding="exact").run("2 + 3?", max_steps=1)
    step = t[2]
    assert step.meta["call_probability"] == (1.0 if calls else 0.0)
    assert step.meta["allowed"] == ["add"]  # prose first: the auto turn, a call may follow
    assert bool(step.tool_calls) is calls
    auto = b.compiled[0]  # the agent hands the decoder the auto turn and the opening
    assert auto is not None and auto.matcher().accept_bytes(b"It is 5. <tool_call>")
    base = Replier(["It is 5."])
    plain = _agent(base, [add], sampling=params).run("2 + 3?", max_steps=1)
    assert plain[2].meta["call_probability"] is None  # plain: the auto turn as it is
    greedy = _agent(Replier(["It is 5."]), [add], sampling="exact").run("2 + 3?", max_steps=1)
    assert greedy[2].meta["call_probability"] is None  # greedy: the auto turn as it is
    assert b.prompts[0] == base.prompts[0]  # the grammar changed, the prompt did not
