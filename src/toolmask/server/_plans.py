"""What a request decodes under: its turn (tools x tool_choice x parallel), its grammar
compiled for the backend's vocabulary under the server's limits, and the tool prompt.

:class:`PlanCache` maps ``(tools, tool_choice, parallel_tool_calls, response_format)`` to a
:class:`Plan`, in a bounded LRU shared by every request; a request that failed to compile is
cached too (as its :class:`APIError`), so repeating a hostile schema costs a dict lookup, not
another run to the compile deadline. Below it, the PlanCache's own
:class:`~toolmask.GrammarCompiler` keeps compiled grammars, automata, masks and the tool layer's
caches under the server limits' byte budget, so even a miss here reuses every mask already
computed for the same tool schemas.

Grammar shapes (``J`` the response-format JSON grammar, ``C`` the calls of the turn)::

    no tools, text          unconstrained (the model's end-of-turn token ends it)
    no tools, json          J
    tools, text             the turn grammar (prose and/or calls, per tool_choice)
    tools, json, none       J
    tools, json, auto       J | C
    tools, json, required   C
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from toolmask import CompiledGrammar, GrammarCompiler
from toolmask._pointer import fragment
from toolmask.errors import LimitError, SchemaError, ToolmaskError
from toolmask.grammar import Grammar, Rule, choice
from toolmask.limits import Limits
from toolmask.schema import compile_json_schema
from toolmask.server._protocol import APIError, ChatRequest, ResponseFormat, ToolLists
from toolmask.tools import ToolChoice, ToolError, ToolTurn, get_format, prefix_rules
from toolmask.vocab import Vocabulary

__all__ = ["Plan", "PlanCache", "schema_error"]

#: the ``tool_choice`` strings that are a mode alone, and their ToolChoice
_MODES: dict[str, ToolChoice] = {m: ToolChoice(m) for m in ("none", "auto", "required")}

log = logging.getLogger("toolmask.server")

#: the JSON Schema of ``response_format: {"type": "json_object"}``
JSON_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True, slots=True)
class Plan:
    """How to decode and read back one request.

    ``turn``: the tool turn (prompt text, parser, validator), None without tools.
    ``compiled``: the grammar for the backend's vocabulary, None for unconstrained decoding.
    ``json_checks``: the response-format grammar compiled byte-level when its schema has
    post-decode checks (``CompiledGrammar.validate`` on the content), else None.
    """

    turn: ToolTurn | None
    compiled: CompiledGrammar | None
    json_checks: CompiledGrammar | None = None

    @property
    def tool_prompt(self) -> str:
        return self.turn.prompt() if self.turn is not None else ""


def schema_error(e: Exception, *, param: str, what: str) -> APIError:
    """A compile failure as a 400: SchemaError with its JSON pointer and keyword, LimitError
    with the limit and the pointer where it was hit (``#``, the schema as a whole, for a cap
    not tied to one location: the automaton of the whole grammar), anything else (a schema so
    malformed that a library below us tripped) as a plain invalid schema."""
    if isinstance(e, SchemaError):
        ptr = fragment(e.pointer)
        kw = f" (keyword '{e.keyword}')" if e.keyword else ""
        return APIError(
            400,
            f"Invalid schema for {what}: at {ptr}{kw}: {e.message}",
            param=param,
            code="invalid_schema",
            extra={"pointer": ptr, "keyword": e.keyword},
        )
    if isinstance(e, LimitError):
        ptr = fragment(e.pointer or "")
        return APIError(
            400,
            f"The schema for {what} is too complex for this server: at {ptr}: {e.message} "
            f"(limit: {e.limit})",
            param=param,
            code="schema_too_complex",
            extra={"limit": e.limit, "pointer": ptr},
        )
    return APIError(
        400,
        f"Invalid schema for {what}: {type(e).__name__}: {e}",
        param=param,
        code="invalid_schema",
    )


class PlanCache:
    """Plans by request shape for one vocabulary and one :class:`Limits` (thread-safe LRU).

    ``get(request)`` returns the cached :class:`Plan` or builds it (schema compilation, the
    automaton's initial state); raises the cached or fresh :class:`APIError` (400) for a tool or
    response schema that cannot be compiled under the limits. Cost on a hit: a JSON dump of the
    request's shape, its tools as their digest (:attr:`ChatRequest.tools_key`, made by
    :func:`parse_chat_request` with :attr:`tool_lists`) when it has one; on a miss for a tool
    list seen before, the turn over it derived for the new ``tool_choice``.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        limits: Limits,
        size: int = 128,
        fmt: str = "hermes",
        *,
        strict_formats: bool = False,
        constrain: bool = True,
    ) -> None:
        self.vocab = vocab
        self.limits = limits
        #: False: tool turns decode without a mask (``serve --no-grammar``), and replies are
        #: still read by the format's parser: the unconstrained baseline of the benchmarks
        self.constrain = constrain
        #: an unknown ``format`` in a schema is a 400 instead of an annotation (``serve
        #: --strict-formats``; see :func:`toolmask.schema.compile_json_schema`)
        self.strict_formats = strict_formats
        #: the wire format of tool calls (a name of :data:`toolmask.tools.FORMATS`)
        self.fmt = get_format(fmt).name
        self.size = size
        self.special_tokens = sorted(set(vocab.special.values()))
        #: owns every compile-side cache of this server (bounded by limits.max_cache_bytes)
        self.compiler = GrammarCompiler(limits=limits)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], Plan | APIError] = OrderedDict()
        #: the turn over each recent tool list (by its key and options), see :meth:`_turn`
        self._turns: OrderedDict[tuple[Any, ...], tuple[Any, ToolTurn]] = OrderedDict()
        #: the tool lists of recent requests, for :func:`parse_chat_request`
        self.tool_lists = ToolLists()
        self.hits = 0
        self.misses = 0
        # load what a first compilation imports lazily (the format checkers, the validator
        # factory) now, so that time never counts against a request's max_compile_seconds
        compile_json_schema({"type": "string", "format": "email"}, limits=limits)

    @staticmethod
    def key(req: ChatRequest, reasoning_open: bool = False) -> tuple[Any, ...]:
        """The request's shape: its tools by :attr:`ChatRequest.tools_key` (the digest of
        their JSON text) when the request has it, else serialised; its ``tool_choice`` as
        checked (:meth:`ChatRequest.normal_choice`: a subset in any order or spelling is one
        key, hashed, not written), else serialised; the rest as it is."""

        def text(value: Any) -> str:
            return json.dumps(value, sort_keys=True, ensure_ascii=False)

        tc: Any = req.normal_choice()
        if tc is None:  # a request made another way: a mode is its ToolChoice, as read
            mode = req.tool_choice
            tc = _MODES.get(mode) if isinstance(mode, str) else None
            if tc is None:
                tc = text(mode)
        return (
            req.tools_key or text([t.to_openai() for t in req.tools]),
            tc,
            req.parallel_tool_calls,
            req.response_format.key(),
            req.thinking,
            reasoning_open,
        )

    def get(self, req: ChatRequest, *, reasoning_open: bool = False) -> Plan:
        """``reasoning_open``: the rendered prompt ends inside the format's reasoning channel
        (:meth:`~toolmask.tools.FormatSpec.prompt_opens_reasoning`), so the grammar and the
        parser start there."""
        key = self.key(req, reasoning_open)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.hits += 1
        if hit is None:
            try:
                with self.compiler.activate():
                    hit = self._build(req, reasoning_open)
            except APIError as e:
                hit = e
            with self._lock:
                self.misses += 1
                self._cache[key] = hit
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        if isinstance(hit, APIError):
            raise hit
        return hit

    # -- building ---------------------------------------------------------------------------------
    def _schema_options(self) -> dict[str, Any]:
        return {"limits": self.limits, "strict_formats": self.strict_formats}

    def _turn(self, req: ChatRequest, reasoning_open: bool) -> ToolTurn:
        """The request's turn: the turn over its tool list (kept per list and options, so a
        new ``tool_choice`` over tools seen before is derived from it in O(allowed names),
        with its tool key and prompt), with the request's ``tool_choice``. Every turn is made
        with ``TurnOptions.habit_prose=False``, which only changes a turn where no call may be
        made: under ``none`` it asks for words, since a client sends ``none`` for the answer
        after its tools ran, and a model set on calling would otherwise open its call, be cut
        by the mask and stop (docs/server.md)."""
        choice = req.normal_choice() or req.tool_choice
        if choice is None:
            choice = "auto"
        key = (req.tools_key, req.parallel_tool_calls, req.thinking, reasoning_open)
        base: ToolTurn | None = None
        with self._lock:
            hit = self._turns.get(key) if req.tools_key else None
            # the turn holds the request's tuple of tools (the one parse_chat_request reuses
            # for the same text), so an identity check says it is the same tool objects
            if hit is not None and hit[0] is req.tools:
                self._turns.move_to_end(key)
                base = hit[1]
        if base is None:
            base = ToolTurn(
                req.tools,
                self.fmt,
                "auto",
                parallel_tool_calls=req.parallel_tool_calls,
                special_tokens=self.special_tokens,
                schema_options=self._schema_options(),
                reasoning=req.thinking,
                reasoning_open=reasoning_open,
            )
            base = base.with_options(base.options.replace(habit_prose=False))
            base.prepare(self.compiler)  # its key and prompt, shared by the turns derived
            if req.tools_key:
                with self._lock:
                    self._turns[key] = (req.tools, base)
                    while len(self._turns) > self.size:
                        self._turns.popitem(last=False)
        return base.with_tool_choice(choice)

    def _build(self, req: ChatRequest, reasoning_open: bool = False) -> Plan:
        turn: ToolTurn | None = None
        if req.tools:
            turn = self._turn(req, reasoning_open)
        rf = req.response_format
        json_grammar = self._json_grammar(rf) if rf.kind != "text" else None
        if turn is not None and json_grammar is None:
            compiled: CompiledGrammar | None = None
            if self.constrain:
                compiled = self._compile_turn(req, turn)
        else:
            grammar = self._grammar(req, turn, json_grammar)
            compiled = self._compile(grammar, req, self.vocab) if grammar is not None else None
        checks = None
        if json_grammar is not None and json_grammar.checks:
            checks = self._compile(json_grammar, req, None)
        return Plan(turn, compiled, checks)

    def _json_grammar(self, rf: ResponseFormat) -> Grammar:
        schema = rf.schema if rf.kind == "json_schema" else JSON_OBJECT_SCHEMA
        try:
            return compile_json_schema(schema, whitespace="compact", **self._schema_options())
        except Exception as e:  # a hostile or broken schema must not take the server down
            raise schema_error(
                e,
                param="response_format.json_schema.schema",
                what=f"response_format {rf.name!r}" if rf.name else "response_format",
            ) from None

    def _grammar(
        self, req: ChatRequest, turn: ToolTurn | None, json_grammar: Grammar | None
    ) -> Grammar | None:
        if turn is None:
            return json_grammar
        mode = turn.tool_choice.mode if turn.callable_tools else "none"
        if json_grammar is not None and mode == "none":
            return json_grammar
        try:
            if json_grammar is None or mode == "required":
                return turn.grammar()
            calls = turn.call_grammar()
        except ToolError as e:
            raise APIError(400, str(e), param="tool_choice", code="invalid_value") from None
        except Exception as e:
            raise self._tool_error(req, e) from None
        j_ref, j_rules = prefix_rules(json_grammar, "rf_")
        c_ref, c_rules = prefix_rules(calls, "tc_")
        return Grammar((Rule("root", choice(j_ref, c_ref)), *j_rules, *c_rules))

    def _compile_turn(self, req: ChatRequest, turn: ToolTurn) -> CompiledGrammar:
        """``turn.compile``: the turn over every tool is compiled once per tool list and
        shared by every ``tool_choice`` / ``allowed_tools`` subset (a name filter each); caps
        apply per tool (see :mod:`toolmask.tools`)."""
        try:
            return turn.compile(self.vocab, limits=self.limits)
        except ToolError as e:
            raise APIError(400, str(e), param="tool_choice", code="invalid_value") from None
        except ToolmaskError as e:
            raise self._tool_error(req, e) from None

    def _tool_error(self, req: ChatRequest, e: Exception) -> APIError:
        """A turn-grammar failure as a 400, attributed to the tool whose schema failed: the
        tool layer names it on the error (``SchemaError.tool`` / ``LimitError.tool``)."""
        tool = e.tool if isinstance(e, (SchemaError, LimitError)) else None
        for i, t in enumerate(req.tools):
            if t.name == tool:
                return schema_error(
                    e, param=f"tools[{i}].function.parameters", what=f"tool {t.name!r}"
                )
        return schema_error(e, param="tools", what="the tools")

    def _compile(
        self, grammar: Grammar, req: ChatRequest, vocab: Vocabulary | None
    ) -> CompiledGrammar:
        try:
            return self.compiler.compile(grammar, vocab, limits=self.limits)
        except ToolmaskError as e:
            param = "response_format" if req.response_format.kind != "text" else "tools"
            raise schema_error(e, param=param, what=param) from None
