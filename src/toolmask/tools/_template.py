"""Chat templates rendered the way ``transformers.apply_chat_template`` renders them.

A model's chat template is Jinja text that a GGUF carries in ``tokenizer.chat_template`` and a
Hugging Face folder in ``chat_template.jinja`` or ``tokenizer_config.json``.
:func:`load_chat_template` reads it from any of the three (or a bare ``.jinja`` file);
:class:`TemplateRenderer` renders a conversation with it exactly as transformers does:

* a sandboxed environment with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols``
  extension and transformers' ``{% generation %}`` tag (it marks the assistant's text for
  training masks and renders its body unchanged);
* transformers' ``tojson`` (``json.dumps`` with ``ensure_ascii=False`` by default, and its
  ``indent`` / ``separators`` / ``sort_keys`` arguments), ``raise_exception`` and
  ``strftime_now``;
* the context ``messages``, ``tools``, ``add_generation_prompt``, the special tokens
  (``bos_token``, ``eos_token``) and any extra variables.

One deliberate difference: transformers' environment is immutable, so a template that calls
``list.append`` (Kimi K2's) fails there, while llama.cpp's own Jinja engine (minja) renders
it. :meth:`TemplateRenderer.render` first renders immutably; only when the sandbox refuses a
mutation does it render again with mutable lists (``renderer.mutated`` says so), because such a
template is in use through llama.cpp and its output is what the model was trained on.

jinja2 is an optional dependency: ``pip install 'toolmask[templates]'``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from toolmask.errors import ChatTemplateError, ToolmaskError

__all__ = ["TemplateRenderer", "TemplateSource", "load_chat_template"]

#: the optional extra that brings jinja2
EXTRA = "templates"


def _jinja() -> Any:
    try:
        import jinja2
        import jinja2.ext
        import jinja2.sandbox
    except ImportError as e:  # pragma: no cover - jinja2 is in the test extra
        raise ToolmaskError(
            f"rendering chat templates needs jinja2: pip install 'toolmask[{EXTRA}]'"
        ) from e
    return jinja2


@dataclass(frozen=True, slots=True)
class TemplateSource:
    """A chat template's text and what comes with it: ``origin`` (the file it was read from,
    for messages), the ``bos_token`` / ``eos_token`` texts the template may print, and the
    vocabulary's special-token texts (only a fallback for format detection, where the model
    carries no template)."""

    text: str
    origin: str = "<string>"
    bos_token: str = ""
    eos_token: str = ""
    special_tokens: tuple[str, ...] = field(default=(), repr=False)

    @property
    def name(self) -> str:
        """The origin's file name (or folder name), for messages."""
        return Path(self.origin).name or self.origin


def _token_text(value: Any) -> str:
    """A special token in tokenizer_config.json: a string or ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


def _pick(template: Any) -> str | None:
    """tokenizer_config's ``chat_template``: a string, or a list of ``{"name", "template"}``
    of which transformers takes ``tool_use`` when tools are given (else ``default``)."""
    if isinstance(template, str):
        return template
    if isinstance(template, list):
        named = {
            t.get("name"): t.get("template")
            for t in template
            if isinstance(t, Mapping) and isinstance(t.get("template"), str)
        }
        for key in ("tool_use", "default"):
            if key in named:
                return str(named[key])
    return None


def _from_hf_folder(folder: Path) -> TemplateSource:
    config: dict[str, Any] = {}
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        config = json.loads(cfg.read_text(encoding="utf-8"))
    text: str | None = None
    jinja_file = folder / "chat_template.jinja"
    json_file = folder / "chat_template.json"
    if jinja_file.is_file():
        text = jinja_file.read_text(encoding="utf-8")
    elif json_file.is_file():
        text = _pick(json.loads(json_file.read_text(encoding="utf-8")).get("chat_template"))
    if text is None:
        text = _pick(config.get("chat_template"))
    specials = sorted(
        {
            str(t["content"])
            for t in (config.get("added_tokens_decoder") or {}).values()
            if isinstance(t, Mapping) and t.get("special") and isinstance(t.get("content"), str)
        }
    )
    return TemplateSource(
        text or "",
        str(folder),
        _token_text(config.get("bos_token")),
        _token_text(config.get("eos_token")),
        tuple(specials),
    )


def _from_gguf(path: Path) -> TemplateSource:
    from toolmask.vocab import gguf_metadata

    meta = gguf_metadata(path, keep=("tokenizer.ggml.tokens",))
    tokens = meta.get("tokenizer.ggml.tokens") or []
    kinds = meta.get("tokenizer.ggml.token_type") or []

    def token(key: str) -> str:
        i = meta.get(key)
        return str(tokens[i]) if isinstance(i, int) and 0 <= i < len(tokens) else ""

    control = tuple(sorted({str(t) for t, k in zip(tokens, kinds, strict=False) if k == 3}))
    text = meta.get("tokenizer.chat_template.tool_use") or meta.get("tokenizer.chat_template")
    return TemplateSource(
        str(text or ""),
        str(path),
        token("tokenizer.ggml.bos_token_id"),
        token("tokenizer.ggml.eos_token_id"),
        control,
    )


def load_chat_template(path: str | Path) -> TemplateSource:
    """The chat template of ``path``: a Hugging Face model folder (``chat_template.jinja``,
    ``chat_template.json`` or ``tokenizer_config.json``'s ``chat_template``, the ``tool_use``
    variant when there are several), a GGUF file (``tokenizer.chat_template``, or its
    ``.tool_use`` variant) or a Jinja text file. The text is ``""`` when the model carries no
    template (its special tokens may still be known). Raises :class:`ToolmaskError` for a path
    that does not exist or a GGUF that cannot be read. Cost: one file read (a GGUF's metadata
    only)."""
    p = Path(path)
    if p.is_dir():
        return _from_hf_folder(p)
    if not p.is_file():
        raise ToolmaskError(f"{p}: no such file or folder (a chat template, GGUF or HF folder)")
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic == b"GGUF":
        return _from_gguf(p)
    return TemplateSource(p.read_text(encoding="utf-8"), str(p))


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' ``tojson`` filter: ``json.dumps`` without HTML escaping; a generator
    (what ``map`` returns) is read as a list, as llama.cpp's minja does."""
    return json.dumps(
        value,
        default=_listed,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
    )


def _listed(value: Any) -> Any:
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment(mutable: bool) -> Any:
    jinja2 = _jinja()
    from jinja2 import nodes
    from jinja2.ext import Extension

    class Generation(Extension):
        """transformers' ``{% generation %}...{% endgeneration %}``: the body, unchanged."""

        tags = {"generation"}  # noqa: RUF012 (jinja2 declares it an instance attribute)

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            call = self.call_method("_body")
            return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> Any:
            return caller()

    cls = (
        jinja2.sandbox.SandboxedEnvironment
        if mutable
        else (jinja2.sandbox.ImmutableSandboxedEnvironment)
    )
    env = cls(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[Generation, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = _strftime_now
    return env


class TemplateRenderer:
    """A compiled chat template (see the module docstring). Compiling costs one Jinja parse
    (two when a render needs the mutable fallback); :meth:`render` is one Jinja render.

    Raises :class:`ChatTemplateError` when the text does not compile.
    """

    def __init__(self, source: TemplateSource | str) -> None:
        self.source = source if isinstance(source, TemplateSource) else TemplateSource(source)
        jinja2 = _jinja()
        self._errors: tuple[type[BaseException], ...] = (
            jinja2.TemplateError,
            TypeError,
            ValueError,
            KeyError,
            IndexError,
            AttributeError,
            ZeroDivisionError,
            RecursionError,
        )
        self._security = jinja2.sandbox.SecurityError
        try:
            self._template = _environment(False).from_string(self.source.text)
        except jinja2.TemplateError as e:
            raise ChatTemplateError(
                f"{self.source.name}: the chat template does not compile: {e}"
            ) from e
        self._mutable: Any = None
        #: a render needed the mutable fallback (the template calls list.append or the like)
        self.mutated = False

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        **extra: Any,
    ) -> str:
        """The template's text for ``messages`` (OpenAI/transformers message dicts) and
        ``tools`` (OpenAI tool dicts; left out of the context when None, as transformers does).
        ``extra`` variables reach the template as they are (``enable_thinking=False``); the
        special tokens come from the :class:`TemplateSource`. Raises :class:`ChatTemplateError`
        when the template raises or fails."""
        context: dict[str, Any] = {
            "bos_token": self.source.bos_token,
            "eos_token": self.source.eos_token,
            **extra,
            "messages": [dict(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
        }
        if tools is not None:
            context["tools"] = [dict(t) for t in tools]
        try:
            return str(self._template.render(**context))
        except self._security:
            pass  # the immutable sandbox refused a mutation: see below
        except ChatTemplateError:
            raise
        except self._errors as e:
            raise ChatTemplateError(f"{self.source.name}: the chat template failed: {e}") from e
        # the immutable sandbox refused a mutation (list.append): render as minja does
        if self._mutable is None:
            self._mutable = _environment(True).from_string(self.source.text)
        self.mutated = True
        try:
            return str(self._mutable.render(**context))
        except ChatTemplateError:
            raise
        except (*self._errors, self._security) as e:
            raise ChatTemplateError(f"{self.source.name}: the chat template failed: {e}") from e
