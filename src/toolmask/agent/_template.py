"""A model's own chat template (Jinja, as GGUF files and Hugging Face tokenizers carry it).

``ChatTemplate(source)`` renders a transcript of :class:`~toolmask.agent.Message` the way the
model was trained to read it, in a sandboxed Jinja environment with the helpers chat templates
expect (``raise_exception``, ``strftime_now``, a ``tojson`` that keeps non-ASCII text).

Tools: a template that mentions ``tools`` knows how to advertise them and receives the OpenAI
tool list; the caller then leaves the tool prompt out of the system message. A template that
knows no tools (SmolLM2's plain ChatML, for one) gets the format's own tool prompt in the system
message and tool results wrapped in ``<tool_response>`` by us, exactly as :func:`render_chatml`
writes them. Assistant turns are rendered from the raw completion, which already holds the
calls in the model's wire format, so no template rewrites them.

Rendering is deterministic; for the usual templates a longer transcript extends the text of a
shorter one byte for byte, which keeps the backend's KV cache of the prefix valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolmask.agent._messages import Message, Template, assistant_text, render_chatml
from toolmask.errors import ChatTemplateError, ToolmaskError

if TYPE_CHECKING:
    from toolmask.tools import ToolTurn

__all__ = ["ChatTemplate", "ChatTemplateError", "default_template"]

_MENTIONS_TOOLS = re.compile(r"\btools\b")


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


def _tojson(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


class ChatTemplate:
    """A Jinja chat template; see the module docstring. Compiling costs one Jinja parse."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        try:
            from jinja2 import TemplateError
            from jinja2.ext import loopcontrols
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError as e:  # pragma: no cover - jinja2 comes with both backends
            raise ToolmaskError("chat templates need jinja2: pip install jinja2") from e
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except TemplateError as e:
            raise ChatTemplateError(f"the chat template does not compile: {e}") from e
        self._template_error = TemplateError
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        #: whether the template advertises tools itself (then it is given the tool list)
        self.knows_tools = bool(_MENTIONS_TOOLS.search(source))

    def _message(self, m: Message, turn: ToolTurn | None) -> dict[str, Any]:
        if m.role == "assistant":
            if turn is None:  # no wire format to write calls in: the text as it stands
                return {"role": "assistant", "content": m.raw if m.raw is not None else m.content}
            return {"role": "assistant", "content": assistant_text(m, turn.format)}
        if m.role == "tool":
            content = m.content
            if not self.knows_tools:
                content = f"<tool_response>\n{content}\n</tool_response>"
            out: dict[str, Any] = {"role": "tool", "content": content}
            if m.tool_call_id is not None:
                out["tool_call_id"] = m.tool_call_id
            if m.name is not None:
                out["name"] = m.name
            return out
        return {"role": m.role, "content": m.content}

    def render(
        self, messages: Sequence[Message], turn: ToolTurn | None = None, **extra: Any
    ) -> str:
        """The prompt text for ``messages`` with the assistant's turn opened. ``extra``
        variables reach the template as they are (``enable_thinking=False``, the request's
        ``chat_template_kwargs``); the names the renderer sets itself win."""
        context: dict[str, Any] = {
            **extra,
            "messages": [self._message(m, turn) for m in messages],
            "add_generation_prompt": True,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        }
        if self.knows_tools and turn is not None and turn.tools:
            context["tools"] = [t.to_openai() for t in turn.tools]
        try:
            return self._template.render(**context)
        except ChatTemplateError:
            raise
        except self._template_error as e:
            raise ChatTemplateError(f"the chat template failed: {e}") from e

    def __call__(self, messages: Sequence[Message], turn: ToolTurn, **extra: Any) -> str:
        return self.render(messages, turn, **extra)


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
