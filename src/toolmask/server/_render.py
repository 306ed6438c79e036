"""How a request becomes a prompt and a finished completion becomes a response message: pure
functions, no FastAPI (the app, the vLLM integration and the tests share them)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolmask.agent import (
    ChatTemplate,
    ChatTemplateError,
    Message,
    Template,
    render_chatml,
    with_tool_prompt,
)
from toolmask.server._plans import Plan
from toolmask.server._protocol import APIError
from toolmask.tools import StreamDelta, ToolTurn

__all__ = ["assemble", "render_prompt"]


def render_prompt(
    messages: Sequence[Message],
    plan: Plan,
    base: ToolTurn,
    template: Template = render_chatml,
    *,
    reminder: bool = True,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The prompt of a request, rendered by ``template`` (the model's own chat template, or
    ChatML: :func:`toolmask.agent.default_template`).

    With tools, the tool prompt (:meth:`ToolTurn.prompt`, which depends on the tool list only)
    is appended to the first system message, or to :data:`DEFAULT_SYSTEM` when there is none,
    unless the template advertises tools itself; then, with ``reminder``, the format's
    one-line decision prompt (:meth:`~toolmask.tools.FormatSpec.decision_prompt`) follows the
    last user message as a system message, so ``auto`` is decided where the model reads it (it
    depends on the tool list's presence only, never on ``tool_choice``). Every text the client
    sent has its control markers broken (:meth:`ToolTurn.sanitize`), so only the template's own
    markers are control tokens. ``template_kwargs`` (the request's ``chat_template_kwargs`` and
    ``reasoning_effort``: the thinking switch) go to a template that takes keyword arguments
    (a Jinja template reads them as variables). Raises :class:`APIError` (400) when the
    template refuses the conversation. O(prompt length).
    """
    turn = plan.turn or base
    msgs = [
        Message(
            m.role,
            turn.sanitize(m.content),
            tool_calls=m.tool_calls,
            tool_call_id=m.tool_call_id,
            name=m.name,
        )
        for m in messages
    ]
    knows_tools = isinstance(template, ChatTemplate) and template.knows_tools
    if plan.turn is not None and not knows_tools:
        decision = plan.turn.format.decision_prompt() if reminder else None
        msgs = with_tool_prompt(msgs, plan.tool_prompt, decision=decision)
    kwargs = dict(template_kwargs or {})
    try:
        if kwargs and _takes_kwargs(template):
            return template(msgs, turn, **kwargs)
        return template(msgs, turn)
    except ChatTemplateError as e:
        raise APIError(400, str(e), param="messages", code="invalid_messages") from None


def _takes_kwargs(template: Template) -> bool:
    """Whether ``template`` accepts arbitrary keyword arguments (``**kwargs``)."""
    try:
        params = inspect.signature(template).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _deltas_to_message(
    deltas: Iterable[StreamDelta], content: str, call_ids: Sequence[str]
) -> dict[str, Any]:
    """The ``message`` of a non-streaming response: ``content`` and, for each final call id,
    the call as the stream announced it (same arguments text as a stream sends)."""
    calls: dict[int, dict[str, Any]] = {}
    reasoning: list[str] = []
    for d in deltas:
        if d.reasoning is not None:
            reasoning.append(d.reasoning)
        if d.index is None:
            continue
        c = calls.setdefault(
            d.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if d.id is not None:
            c["id"] = d.id
        if d.name is not None:
            c["function"]["name"] = d.name
        c["function"]["arguments"] += d.arguments or ""
    by_id = {c["id"]: c for c in calls.values()}
    tool_calls = [by_id[i] for i in call_ids if i in by_id]
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content if content or not tool_calls else None,
        "refusal": None,
    }
    if reasoning:
        msg["reasoning_content"] = "".join(reasoning)
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg


def assemble(text: str, plan: Plan) -> tuple[dict[str, Any], bool]:
    """The response ``message`` for a finished completion ``text`` and whether it holds calls.

    Parsed with the same :class:`~toolmask.tools.StreamParser` a stream uses (one feed), so a
    non-streaming reply and the reassembled stream of the same completion are equal; the
    reasoning channel comes back as ``reasoning_content``."""
    if plan.turn is None:
        return {"role": "assistant", "content": text, "refusal": None}, False
    parser = plan.turn.stream_parser()
    deltas = parser.feed(text) + parser.finish()
    result = parser.result
    msg = _deltas_to_message(deltas, result.content, [c.id for c in result.calls])
    return msg, bool(result.calls)
