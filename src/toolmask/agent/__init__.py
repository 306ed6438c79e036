"""The agent loop: decode under the turn grammar, parse, validate, run the tool, sanitise, repeat.

``Agent(backend, tools).run("...")`` returns the transcript (a :class:`Transcript`, a list of
:class:`Message` with the run's :class:`Outcome`). Each step renders the conversation with the
model's chat template (the prompt of a step extends the previous one byte for byte, so the
backend reuses its KV cache), decodes one assistant turn under the grammar of the turn
(``tool_choice``, the mode and the step's policies change only the mask, never the prompt), and
parses it. Calls are validated against their tool's full schema (what the grammar cannot say);
a failure goes back to the model as a tool message naming the problem. Tools are Python
callables; an exception becomes an error message for the model, never a crash. Tool output is
sanitised (control markers broken) before it re-enters the prompt.

Two modes: ``"prose"`` ends the run when the model answers in prose; ``"grammar"`` makes every
step a required call over the tools plus an answer tool, and the answer tool ends the run.
Either ends after ``max_steps`` turns, or after ``max_consecutive_blocked`` blocked turns in a
row (every call invalid, failed, or a repeat with the same result). Tool policies as data:
:class:`StateMachine`, :class:`PoolFilter`.
"""

from __future__ import annotations

from toolmask.agent._loop import (
    ANSWER_TOOL,
    GRAMMAR_SYSTEM,
    Agent,
    LoopMode,
    NameChoice,
    Outcome,
    Transcript,
    final_answer,
)
from toolmask.agent._messages import (
    DEFAULT_SYSTEM,
    Message,
    Template,
    assistant_text,
    render_chatml,
    render_tool_calls,
    with_decision,
    with_tool_prompt,
)
from toolmask.agent._policy import PoolFilter, StateMachine, ToolPolicy, expand_tool_patterns
from toolmask.agent._template import ChatTemplate, ChatTemplateError, default_template
from toolmask.backends import Backend

__all__ = [
    "ANSWER_TOOL",
    "DEFAULT_SYSTEM",
    "GRAMMAR_SYSTEM",
    "Agent",
    "Backend",
    "ChatTemplate",
    "ChatTemplateError",
    "LoopMode",
    "Message",
    "NameChoice",
    "Outcome",
    "PoolFilter",
    "StateMachine",
    "Template",
    "ToolPolicy",
    "Transcript",
    "assistant_text",
    "default_template",
    "expand_tool_patterns",
    "final_answer",
    "render_chatml",
    "render_tool_calls",
    "with_decision",
    "with_tool_prompt",
]
