"""The transcript's messages and how they become prompt text: :class:`Message`, the tool prompt
and decision prompt inserted into a conversation, assistant turns written back in a wire
format, and ChatML (the fallback template). Pure functions, O(messages)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask.tools import FormatSpec, ToolCall, ToolTurn

__all__ = [
    "DEFAULT_SYSTEM",
    "Message",
    "Template",
    "assistant_text",
    "render_chatml",
    "render_tool_calls",
    "with_decision",
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
    (:meth:`~toolmask.tools.FormatSpec.decision_prompt`) as a system message right after the
    last user message. For chat templates that do not advertise tools themselves.
    O(messages)."""
    msgs = list(messages)
    if msgs and msgs[0].role == "system":
        msgs[0] = Message("system", f"{msgs[0].content}\n\n{tool_prompt}")
    else:
        msgs.insert(0, Message("system", f"{system}\n\n{tool_prompt}"))
    return with_decision(msgs, decision)


def with_decision(messages: Sequence[Message], decision: str | None) -> list[Message]:
    """``messages`` with the one-line ``decision`` prompt as a system message right after the
    last user message (unchanged when ``decision`` is empty or there is no user message).
    Later turns come after it, so a longer run extends the text of a shorter one."""
    msgs = list(messages)
    if decision:
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        if last_user >= 0:
            msgs.insert(last_user + 1, Message("system", decision))
    return msgs


def render_tool_calls(calls: Sequence[ToolCall], fmt: FormatSpec) -> str:
    """``calls`` written the way ``fmt``'s turn grammar makes the model write them
    (:meth:`~toolmask.tools.FormatSpec.render_calls`)."""
    return fmt.render_calls([(c.name, c.arguments) for c in calls])


def assistant_text(m: Message, fmt: FormatSpec) -> str:
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
