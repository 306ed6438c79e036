"""The agent loop: decode under the turn grammar, parse, validate, run the tool, sanitise, repeat.

``Agent(backend, tools).run("...")`` returns the transcript (a list of :class:`Message`). Each
step renders the conversation as ChatML (the prompt of a step extends the previous one byte for
byte, so the backend reuses its KV cache), decodes one assistant turn under the grammar of the
turn (``tool_choice`` and the step's allowed tools change only the mask, never the prompt),
and parses it. Calls are validated against their tool's full schema (what the grammar cannot
say); a failure goes back to the model as a tool message naming the problem. Tools are Python
callables; an exception becomes an error message for the model, never a crash. Tool output is
sanitised (control markers broken) before it re-enters the prompt. The loop ends when the model
answers in prose, after ``max_steps`` turns, or after ``max_consecutive_blocked`` turns in a row
whose calls all failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask._compile import compile as tm_compile
from toolmask.agent._template import ChatTemplate, ChatTemplateError
from toolmask.backends._base import Backend
from toolmask.sampling import SamplingParams
from toolmask.tools import ParsedTurn, Tool, ToolCall, ToolTurn
from toolmask.tools._validate import render_errors
from toolmask.tools.formats import WireFormat

__all__ = [
    "Agent",
    "Backend",
    "ChatTemplate",
    "ChatTemplateError",
    "Message",
    "Template",
    "assistant_text",
    "default_template",
    "render_chatml",
    "render_tool_calls",
    "with_tool_prompt",
]

DEFAULT_SYSTEM = (
    "You are a helpful assistant. When a tool can answer, call it; otherwise answer briefly."
)


@dataclass
class Message:
    """One message of the transcript (OpenAI's roles: system, user, assistant, tool)."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    #: for assistant turns: the raw completion and any malformed call blocks
    raw: str | None = None
    malformed: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


def with_tool_prompt(
    messages: Sequence[Message],
    tool_prompt: str,
    *,
    decision: str | None = None,
    system: str = DEFAULT_SYSTEM,
) -> list[Message]:
    """``messages`` with the tool prompt appended to the first system message (or to a new one
    holding ``system``) and, when ``decision`` is given, that one-line decision prompt
    (:meth:`WireFormat.decision_prompt`) as a system message right after the last user message.
    For chat templates that do not advertise tools themselves. O(messages)."""
    msgs = list(messages)
    if msgs and msgs[0].role == "system":
        msgs[0] = Message("system", f"{msgs[0].content}\n\n{tool_prompt}")
    else:
        msgs.insert(0, Message("system", f"{system}\n\n{tool_prompt}"))
    if decision:
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        if last_user >= 0:
            msgs.insert(last_user + 1, Message("system", decision))
    return msgs


def render_tool_calls(calls: Sequence[ToolCall], fmt: WireFormat) -> str:
    """``calls`` written the way ``fmt``'s turn grammar makes the model write them
    (:meth:`WireFormat.render_calls`)."""
    return fmt.render_calls([(c.name, c.arguments) for c in calls])


def assistant_text(m: Message, fmt: WireFormat) -> str:
    """The text of an assistant turn as the model wrote it: its ``raw`` completion, else its
    ``content`` followed (after a newline) by its ``tool_calls`` in ``fmt``, as messages coming
    back from an OpenAI client are."""
    if m.raw is not None:
        return m.raw
    if not m.tool_calls:
        return m.content
    calls = render_tool_calls(m.tool_calls, fmt)
    return f"{m.content}\n{calls}" if m.content else calls


def render_chatml(messages: Sequence[Message], turn: ToolTurn) -> str:
    """ChatML with Hermes-style tool calls and ``<tool_response>`` results, then the open
    assistant header. Deterministic: a longer conversation extends the text of a shorter one.

    Assistant messages are rendered by :func:`assistant_text`."""
    out: list[str] = []
    for m in messages:
        if m.role == "assistant":
            out.append(f"<|im_start|>assistant\n{assistant_text(m, turn.format)}<|im_end|>\n")
        elif m.role == "tool":
            out.append(
                f"<|im_start|>tool\n<tool_response>\n{m.content}\n</tool_response><|im_end|>\n"
            )
        else:
            out.append(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


#: renders a transcript (and the turn's tools) into the prompt text, assistant turn opened
Template = Callable[[Sequence[Message], ToolTurn], str]


def default_template(backend: Any) -> Template:
    """The backend model's own chat template when it carries one (``backend.chat_template``,
    e.g. a GGUF's ``tokenizer.chat_template``), else :func:`render_chatml`."""
    source = getattr(backend, "chat_template", None)
    if not source:
        return render_chatml
    return ChatTemplate(
        source,
        bos_token=getattr(backend, "bos_text", "") or "",
        eos_token=getattr(backend, "eos_text", "") or "",
    )


ToolPolicy = Callable[[int, Sequence[Message]], Iterable[str] | None]


class Agent:
    """A tool-calling loop on a local backend (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        tools: Iterable[Tool | Callable[..., Any] | dict[str, Any]],
        *,
        fmt: str = "hermes",
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        max_steps: int = 6,
        max_tokens: int = 256,
        max_consecutive_blocked: int = 2,
        system: str = DEFAULT_SYSTEM,
        sampling: SamplingParams | None = None,
        policy: ToolPolicy | None = None,
        functions: dict[str, Callable[..., Any]] | None = None,
        template: Template | None = None,
    ) -> None:
        self.backend = backend
        tool_list = list(tools)
        self.functions: dict[str, Callable[..., Any]] = dict(functions or {})
        specials = sorted(set(backend.vocab.special.values()))
        self._turn_args = {
            "fmt": fmt,
            "parallel_tool_calls": parallel_tool_calls,
            "special_tokens": specials,
        }
        base = ToolTurn(tool_list, tool_choice=tool_choice, **self._turn_args)  # type: ignore[arg-type]
        self.tools = base.tools
        for t in self.tools:
            if t.function is not None:
                self.functions.setdefault(t.name, t.function)
        self.tool_choice = tool_choice
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.max_consecutive_blocked = max_consecutive_blocked
        self.template: Template = template or default_template(backend)
        tool_prompt = base.prompt()
        if isinstance(self.template, ChatTemplate) and self.template.knows_tools:
            tool_prompt = ""  # the model's template advertises the tools itself
        self.system = f"{system}\n\n{tool_prompt}" if tool_prompt else system
        self.sampling = sampling
        self.policy = policy
        self._base = base

    def _turn_for(self, step: int, transcript: Sequence[Message]) -> ToolTurn:
        choice = self.tool_choice
        if self.policy is not None:
            allowed = self.policy(step, transcript)
            if allowed is not None:
                names = list(allowed)
                choice = {
                    "type": "allowed_tools",
                    "mode": "auto" if choice == "auto" else "required",
                    "tools": [{"type": "function", "function": {"name": n}} for n in names],
                }
        if choice == self.tool_choice:
            return self._base
        return ToolTurn(self.tools, tool_choice=choice, **self._turn_args)  # type: ignore[arg-type]

    def step(self, transcript: list[Message], step: int = 0) -> tuple[Message, ParsedTurn, Any]:
        """Decode and parse one assistant turn (appended to ``transcript``)."""
        turn = self._turn_for(step, transcript)
        compiled = tm_compile(turn.grammar(), self.backend.vocab)
        prompt = self.backend.tokenize(self.template(transcript, turn))
        gen = self.backend.generate(
            prompt, compiled, max_tokens=self.max_tokens, sampling=self.sampling
        )
        raw = gen.text.decode("utf-8", "replace")
        parsed = turn.parse(raw)
        msg = Message(
            "assistant",
            parsed.content,
            tool_calls=tuple(parsed.calls),
            raw=raw,
            malformed=tuple(b.text for b in parsed.malformed),
            meta={"finish_reason": gen.finish_reason, "tokens": len(gen.tokens)},
        )
        transcript.append(msg)
        return msg, parsed, turn

    def run(
        self, user: str, *, history: Sequence[Message] = (), max_steps: int | None = None
    ) -> list[Message]:
        """Run the loop for one user message; returns the whole transcript. ``max_steps``
        overrides the agent's for this run (``1``: one model turn and its tool results)."""
        transcript = [Message("system", self.system), *history, Message("user", user)]
        blocked = 0
        for step in range(self.max_steps if max_steps is None else max_steps):
            msg, _parsed, turn = self.step(transcript, step)
            if not msg.tool_calls:
                break
            failed = 0
            for call in msg.tool_calls:
                problems = turn.validate(call)
                if problems:
                    failed += 1
                    content = "error: " + render_errors(problems)
                else:
                    content = self._run_tool(call)
                transcript.append(
                    Message("tool", turn.sanitize(content), tool_call_id=call.id, name=call.name)
                )
            blocked = blocked + 1 if failed == len(msg.tool_calls) else 0
            if blocked >= self.max_consecutive_blocked:
                break
        return transcript

    def _run_tool(self, call: ToolCall) -> str:
        fn = self.functions.get(call.name)
        if fn is None:
            return f"error: no implementation for tool {call.name!r}"
        try:
            result = fn(**call.arguments)
        except Exception as e:  # a tool's failure is a message for the model, not a crash
            return f"error: {type(e).__name__}: {e}"
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False, default=str)
