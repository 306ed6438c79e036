"""The agent loop itself: :class:`Agent` (decode under the turn grammar, parse, validate, run
the tool, sanitise, repeat), its answer tool and how a run ends (:class:`Outcome`,
:class:`Transcript`). See the package docstring for the contract."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolmask.agent._messages import DEFAULT_SYSTEM, Message, Template, with_decision
from toolmask.agent._policy import ToolPolicy, expand_tool_patterns
from toolmask.agent._template import ChatTemplate, default_template
from toolmask.backends import Backend, ReasoningBudget
from toolmask.decoding import DecodingParams, Opening, call_opener, resolve_params
from toolmask.errors import ToolError
from toolmask.sampling import SamplingParams
from toolmask.tools import ParsedTurn, Tool, ToolCall, ToolTurn, render_errors, resolve_format

if TYPE_CHECKING:
    from toolmask._compile import CompiledGrammar

__all__ = [
    "ANSWER_TOOL",
    "GRAMMAR_SYSTEM",
    "Agent",
    "LoopMode",
    "NameChoice",
    "Outcome",
    "StopReason",
    "Transcript",
    "final_answer",
]


def final_answer(answer: str) -> str:
    """Give the final answer to the user. Call it once the tools have told you the answer.

    Args:
        answer: The answer, short and complete (numbers as the tools gave them).
    """
    return answer


#: the answer tool of ``mode="grammar"`` unless another is given: ``final_answer(answer: str)``,
#: the answer bounded to 300 characters (a small model may otherwise ramble to ``max_tokens``)
ANSWER_TOOL = Tool(
    "final_answer",
    "Give the final answer to the user. Call it once the tools have told you the answer.",
    {
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "description": "The answer, short and complete (numbers as the tools gave them).",
                "minLength": 1,
                "maxLength": 300,
            }
        },
        "required": ["answer"],
        "additionalProperties": False,
    },
    function=final_answer,
)

#: the system prompt of ``mode="grammar"`` unless another is given
GRAMMAR_SYSTEM = (
    "You are a helpful assistant. Use the tools to find the answer, one call at a time, with "
    "the exact values from the question. Then call final_answer with the answer."
)

LoopMode = Literal["prose", "grammar"]
#: how a required step picks its tool: decoded token by token, or by the whole name's likelihood
NameChoice = Literal["decode", "likelihood"]
StopReason = Literal["answer", "prose", "blocked", "max_steps"]


@dataclass(frozen=True)
class Outcome:
    """How a run ended (``Transcript.outcome``).

    ``stop``: ``"answer"`` (grammar mode: the answer tool was called), ``"prose"`` (prose mode:
    the model answered without a call), ``"blocked"`` (``max_consecutive_blocked`` steps in a
    row were blocked) or ``"max_steps"``. ``answer`` is the answer (``None`` when the run ended
    without one); ``message`` one line saying why the run ended. ``tools``: the tools that ran,
    in order (the answer tool left out); ``blocked``: why each blocked step was blocked.
    ``tokens``: tokens generated; ``prompt_tokens``: prompt tokens evaluated (the reused KV
    prefix left out).
    """

    stop: StopReason
    answer: str | None
    message: str
    tools: tuple[str, ...] = ()
    steps: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    blocked: tuple[str, ...] = ()


class Transcript(list[Message]):
    """The messages of a run (a ``list`` of :class:`Message`) and its :class:`Outcome`."""

    outcome: Outcome


def _last_user(transcript: Sequence[Message]) -> int:
    return max((i for i, m in enumerate(transcript) if m.role == "user"), default=-1)


def _call_key(call: ToolCall) -> str:
    return f"{call.name}:{json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)}"


def _brief(call: ToolCall) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False)
    return f"{call.name}({args[:80]}{'...' if len(args) > 80 else ''})"


class Agent:
    """A tool-calling loop on a local backend (see the module docstring).

    ``mode="prose"`` (the default) decodes each step under ``tool_choice``; the run ends when
    the model answers in prose. ``mode="grammar"`` adds ``answer_tool`` (default
    :data:`ANSWER_TOOL`, ``final_answer(answer: str)``) to the tools and decodes every step as
    ``required``: the model always acts or answers through the grammar, and calling the answer
    tool ends the run; ``answer_after=k`` masks the answer tool out until ``k`` tools have run
    without error in this run (act before answering). ``policy`` (one callable or several,
    intersected) narrows the tools of a step by name or pattern (see
    :mod:`toolmask.agent._policy`); the answer tool is a tool like the others there (a set left
    empty allows the answer tool alone, so the run can end).
    ``constrained=False`` decodes without a grammar and only parses (a baseline).
    ``reminder``: under ``tool_choice="auto"`` with toolmask's tool prompt (a template that does
    not advertise tools), the format's one-line decision prompt
    (:meth:`FormatSpec.decision_prompt`) follows the user's message, as ``toolmask serve``
    renders it; the model still decides, at its first token.
    ``name_choice="likelihood"``: where a step must call a tool (grammar mode, ``required``) and
    more than one tool is allowed, the backend scores each allowed tool's name as the format
    writes it (the model's own log-probability of the whole name after the prompt, unmasked)
    and the call is decoded under the best one alone; ``"decode"`` (default) decodes the name
    token by token like the rest, where a common first token (``add``) can commit the model to
    a tool it did not mean (``add_days`` for a sum). The prompt is the same either way.

    ``sampling`` (the token sampler's :class:`~toolmask.sampling.SamplingParams`; None:
    greedy) and ``decoding`` (the mode and its budgets:
    :class:`~toolmask.decoding.DecodingParams` or a mode name; default ``plain``) are passed
    to the backend's ``generate``: ``"exact"`` chooses finite branches (the tool name, enum
    values, booleans, another call or the end) by the whole sequence's probability, and
    sampled under ``auto`` call or prose first; ``"aligned"`` decodes by beam search (greedy)
    or sequential Monte Carlo (see ``docs/sampling.md``). ``sampling="exact"`` is short for
    that mode, greedy. Every ``auto`` step hands the decoder its
    :class:`~toolmask.decoding.Opening` (the call block's opener; a call first is decoded
    under ``required`` over the same tools); the mode decides whether to use it.

    ``fmt`` (default ``"auto"``): the wire format, read from the model's chat template and
    special tokens (:func:`~toolmask.tools.resolve_format`; Hermes when they name none). A
    prompt that ends inside the format's reasoning channel (a template that prefills
    ``<think>``) starts the turn there, for the grammar and the parser. ``reasoning_budget``:
    at most that many tokens of reasoning per turn, then the decoder closes the channel
    (:class:`~toolmask.backends.ReasoningBudget`); None (the default) leaves it to the model.

    A step is *blocked* when every call in it failed: the validator rejected it, the tool
    raised, or it repeated an earlier identical call and got the same result; in grammar mode
    a turn without a complete call is blocked too, and in prose mode a turn whose only calls
    are unfinished or malformed blocks (a call cut at ``max_tokens``: the model meant to call,
    and its raw text is not an answer). ``max_consecutive_blocked`` blocked steps in
    a row stop the run. ``answer_on_repeat`` (default on): after a step whose every call
    repeated an earlier identical call and got the same result, the next step may only answer
    (the answer tool alone in grammar mode; no call under ``auto``, the tools still in the
    prompt): the model has what it asked for, and a tool-trained model that loops on its last
    call (Qwen2.5-Coder-1.5B does, unconstrained too) answers from it instead of stopping
    blocked.
    """

    def __init__(
        self,
        backend: Backend,
        tools: Iterable[Tool | Callable[..., Any] | dict[str, Any]],
        *,
        mode: LoopMode = "prose",
        answer_tool: Tool | Callable[..., Any] | dict[str, Any] | None = None,
        fmt: str = "auto",
        tool_choice: Any = "auto",
        parallel_tool_calls: bool | None = None,
        max_steps: int = 6,
        max_tokens: int = 256,
        max_consecutive_blocked: int = 2,
        system: str | None = None,
        sampling: SamplingParams | str | None = None,
        decoding: DecodingParams | str | None = None,
        policy: ToolPolicy | Sequence[ToolPolicy] | None = None,
        functions: dict[str, Callable[..., Any]] | None = None,
        template: Template | None = None,
        constrained: bool = True,
        answer_after: int = 0,
        reminder: bool = True,
        name_choice: NameChoice = "decode",
        reasoning_budget: int | None = None,
        answer_on_repeat: bool = True,
    ) -> None:
        if mode not in ("prose", "grammar"):
            raise ToolError(f"unknown agent mode {mode!r}: use 'prose' or 'grammar'", where="mode")
        if name_choice not in ("decode", "likelihood"):
            raise ToolError(
                f"unknown name_choice {name_choice!r}: use 'decode' or 'likelihood'",
                where="name_choice",
            )
        self.name_choice: NameChoice = name_choice
        self.mode: LoopMode = mode
        self.backend = backend
        tool_list = list(tools)
        self.answer_tool: Tool | None = None
        if mode == "grammar":
            answer = ANSWER_TOOL if answer_tool is None else answer_tool
            self.answer_tool = ToolTurn([answer]).tools[0]
            tool_list.append(self.answer_tool)
            tool_choice = "required"
        self.functions: dict[str, Callable[..., Any]] = dict(functions or {})
        specials = sorted(set(backend.vocab.special.values()))
        self.template: Template = template or default_template(backend)
        source = getattr(self.template, "source", None) or getattr(backend, "chat_template", None)
        fmt = resolve_format(fmt, source, specials)
        if parallel_tool_calls is None:  # one call a step in grammar mode: act, read, act
            parallel_tool_calls = mode == "prose"
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
        tool_prompt = base.prompt()
        if isinstance(self.template, ChatTemplate) and self.template.knows_tools:
            tool_prompt = ""  # the model's template advertises the tools itself
        if system is None:
            system = GRAMMAR_SYSTEM if mode == "grammar" else DEFAULT_SYSTEM
        self.system = f"{system}\n\n{tool_prompt}" if tool_prompt else system
        try:  # a mode name as sampling ("exact", "aligned") is that mode, greedy
            sp, self.decoding = resolve_params(sampling, decoding)
        except ValueError as e:
            raise ToolError(str(e), where="decoding" if decoding else "sampling") from None
        self.sampling: SamplingParams | None = None if sampling is None else sp
        self.policies: tuple[ToolPolicy, ...] = (
            () if policy is None else (policy,) if callable(policy) else tuple(policy)
        )
        self.constrained = constrained
        self.answer_after = answer_after if mode == "grammar" else 0
        self._base = base
        self._turns: dict[tuple[str, ...], ToolTurn] = {}
        self._words: ToolTurn | None = None  # the answer-only turn of prose mode
        self._opened: dict[int, ToolTurn] = {}
        if reasoning_budget is not None and (
            isinstance(reasoning_budget, bool)
            or not isinstance(reasoning_budget, int)
            or reasoning_budget < 0
        ):
            raise ToolError(
                f"reasoning_budget must be a number of tokens >= 0, not {reasoning_budget!r}",
                where="reasoning_budget",
            )
        self.reasoning_budget = reasoning_budget
        self.answer_on_repeat = answer_on_repeat
        auto = mode == "prose" and tool_choice == "auto" and bool(tool_prompt)
        self._decision = base.format.decision_prompt() if reminder and auto else None

    @property
    def policy(self) -> ToolPolicy | None:
        """The first policy (the one passed as ``policy=``), or ``None``."""
        return self.policies[0] if self.policies else None

    def allowed(self, step: int, transcript: Sequence[Message]) -> list[str] | None:
        """The tool names allowed at ``step``: the intersection of the policies' sets, less the
        answer tool until ``answer_after`` tools have run without error in this run (the answer
        tool alone if nothing is left); ``None`` when nothing narrows the tools."""
        names = [t.name for t in self.tools]
        allowed: set[str] | None = None
        for policy in self.policies:
            patterns = policy(step, transcript)
            if patterns is not None:
                hits = set(expand_tool_patterns(list(patterns), names))
                allowed = hits if allowed is None else allowed & hits
        answer = self.answer_tool.name if self.answer_tool is not None else None
        if answer is not None and self.answer_after > 0:
            run = transcript[_last_user(transcript) + 1 :]
            done = sum(
                m.role == "tool" and m.name != answer and not m.content.startswith("error:")
                for m in run
            )
            if done < self.answer_after:
                allowed = (set(names) if allowed is None else allowed) - {answer}
        if allowed is None:
            return None
        if answer is not None and not allowed:  # the run must be able to end
            allowed = {answer}
        return [n for n in names if n in allowed]

    def _turn_for(self, step: int, transcript: Sequence[Message]) -> ToolTurn:
        names = self.allowed(step, transcript)
        if names is None:
            return self._base
        return self._turn_of(names)

    def _turn_of(self, names: Sequence[str]) -> ToolTurn:
        turn = self._turns.get(tuple(names))
        if turn is None:
            choice = {
                "type": "allowed_tools",
                "mode": "auto" if self.tool_choice == "auto" else "required",
                "tools": [{"type": "function", "function": {"name": n}} for n in names],
            }
            turn = self._base.with_tool_choice(choice)  # the tools are checked already
            self._turns[tuple(names)] = turn
        return turn

    def _answer_turn(self) -> ToolTurn:
        """The turn of a step that may only answer: the answer tool alone (grammar mode), or
        no call (``tool_choice="none"``, the habits' openers kept out of the prose too, so a
        model that writes its calls in a fence answers in words; the prompt still advertises
        every tool)."""
        if self.answer_tool is not None:
            return self._turn_of([self.answer_tool.name])
        if self._words is None:  # not in _turns: its key would be an empty allowed set's
            words = self._base.options.replace(habit_prose=False)
            self._words = self._base.with_tool_choice("none").with_options(words)
        return self._words

    def step(
        self, transcript: list[Message], step: int = 0, *, answer_only: bool = False
    ) -> tuple[Message, ParsedTurn, Any]:
        """Decode and parse one assistant turn (appended to ``transcript``). The message's
        ``meta`` holds ``finish_reason``, ``tokens`` (generated), ``prompt_tokens``,
        ``reused_prefix`` (prompt tokens whose KV cache was reused), ``allowed`` (the tool
        names the grammar allowed), ``reasoning`` (the turn's reasoning text),
        ``reasoning_tokens`` and ``reasoning_cut`` (counted and closed by ``reasoning_budget``),
        and the decoder's cost: ``forward_passes`` (model calls), ``exact_branches`` and
        ``branch_fallbacks`` (see ``sampling``). ``answer_only``: the step may only answer
        (see ``answer_on_repeat``)."""
        turn = self._answer_turn() if answer_only else self._turn_for(step, transcript)
        text = self.template(with_decision(transcript, self._decision), turn)
        scores: dict[str, float] = {}
        if turn.format.prompt_opens_reasoning(text):  # the reply starts inside the channel
            opened = self._opened.get(id(turn))
            if opened is None:
                opened = self._opened[id(turn)] = turn.for_prompt(text)
            turn = opened
        elif self.name_choice == "likelihood" and self.constrained:
            turn, scores = self._choose_name(turn, text)
        prompt = self.backend.tokenize(text)
        extra: dict[str, Any] = {}
        opening = self._opening(turn)
        if opening is not None:
            extra["opening"] = opening[0]
        compiled = turn.compile(self.backend.vocab) if self.constrained else None
        budget = ReasoningBudget.for_turn(turn, self.reasoning_budget)
        if budget is not None:
            extra["reasoning_budget"] = budget
        gen = self.backend.generate(
            prompt,
            compiled,
            max_tokens=self.max_tokens,
            sampling=self.sampling,
            decoding=self.decoding,
            **extra,
        )
        call_p = getattr(gen, "call_probability", None)
        if opening is not None and getattr(gen, "call_first", None):
            turn = self._turns.get(opening[1], turn)  # decoded under required: parsed so
        raw = gen.text.decode("utf-8", "replace")
        parsed = turn.parse(raw)
        msg = Message(
            "assistant",
            parsed.content,
            tool_calls=tuple(parsed.calls),
            raw=raw,
            malformed=tuple(b.text for b in parsed.malformed),
            meta={
                "finish_reason": gen.finish_reason,
                "tokens": len(gen.tokens),
                "prompt_tokens": gen.prompt_tokens,
                "reused_prefix": gen.reused_prefix,
                "allowed": list(turn.tool_choice.callable([t.name for t in turn.tools])),
                "name_scores": scores,
                "call_probability": None if call_p is None else round(call_p, 4),
                "reasoning": parsed.reasoning,
                "reasoning_tokens": gen.reasoning_tokens,
                "reasoning_cut": gen.reasoning_cut,
                "forward_passes": getattr(gen, "forward_passes", 0),
                "exact_branches": getattr(gen, "exact_branches", 0),
                "branch_fallbacks": getattr(gen, "branch_fallbacks", 0),
            },
        )
        transcript.append(msg)
        return msg, parsed, turn

    def _opening(self, turn: ToolTurn) -> tuple[Opening, tuple[str, ...]] | None:
        """Where the step may open with a call or with prose (:func:`call_opener`; an
        ``auto`` turn with callable tools), the :class:`~toolmask.decoding.Opening` the
        decoder may choose by, and the key under which a call first's turn is kept: that turn
        is the same tools under ``required`` (over the callable ones), built and compiled only
        when a decoder chooses a call first. The prompt is unchanged either way."""
        opener = call_opener(turn) if self.constrained else None
        if opener is None:
            return None
        names = list(turn.tool_choice.callable([t.name for t in turn.tools]))
        key = ("__opening__", *names)

        def call() -> CompiledGrammar:
            chosen = self._turns.get(key)
            if chosen is None:
                choice = {
                    "type": "allowed_tools",
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": n}} for n in names],
                }
                chosen = ToolTurn(self.tools, tool_choice=choice, **self._turn_args)  # type: ignore[arg-type]
                self._turns[key] = chosen
            return chosen.compile(self.backend.vocab)

        return Opening(opener, call), key

    def _choose_name(self, turn: ToolTurn, text: str) -> tuple[ToolTurn, dict[str, float]]:
        """``name_choice="likelihood"``: the turn narrowed to the allowed tool whose name, as
        the format writes it after the prompt (its opener, the name and the byte after it, so
        that ``add`` and ``add_days`` differ), the model finds most likely; the turn unchanged
        where the step may answer in prose, one tool is allowed, or the backend cannot score.
        Every name is scored from the same context (the tokens all candidates share: the
        prompt and the format's opener), so the sums compare."""
        score = getattr(self.backend, "score", None)
        if score is None or self.tool_choice != "required":  # grammar mode is required too
            return turn, {}
        names = list(turn.tool_choice.callable([t.name for t in turn.tools]))
        if len(names) < 2:
            return turn, {}
        seqs = []
        for name in names:
            written = turn.format.render_calls([(name, {})])
            at = written.find(name)
            piece = written[: at + len(name) + 1] if at >= 0 else written
            seqs.append(self.backend.tokenize(text + piece))
        first, most = seqs[0], min(len(seq) for seq in seqs) - 1  # one token left to score
        shared = next((k for k in range(most) if any(s[k] != first[k] for s in seqs)), most)
        if shared <= 0:
            return turn, {}
        sums = score(first[:shared], [seq[shared:] for seq in seqs])
        scores = {n: round(float(v), 3) for n, v in zip(names, sums, strict=True)}
        best = max(names, key=lambda n: scores[n])
        return self._turn_of([best]), scores

    def run(
        self, user: str, *, history: Sequence[Message] = (), max_steps: int | None = None
    ) -> Transcript:
        """Run the loop for one user message; returns the whole transcript, with its
        :class:`Outcome` in ``.outcome``. ``max_steps`` overrides the agent's for this run
        (``1``: one model turn and its tool results)."""
        transcript = Transcript([Message("system", self.system), *history, Message("user", user)])
        limit = self.max_steps if max_steps is None else max_steps
        blocked = 0
        reasons: list[str] = []
        ran: list[str] = []
        seen: dict[str, str] = {}  # call key -> its last result
        tokens = prompt_tokens = 0
        stop: StopReason = "max_steps"
        answer: str | None = None
        message = f"stopped: max_steps ({limit}) reached without an answer"
        steps = 0
        answer_only = False
        for step in range(limit):
            msg, _parsed, turn = self.step(transcript, step, answer_only=answer_only)
            steps += 1
            tokens += int(msg.meta["tokens"])
            prompt_tokens += int(msg.meta["prompt_tokens"]) - int(msg.meta["reused_prefix"])
            step_reasons: list[str] = []
            if not msg.tool_calls:
                if self.mode == "prose" and not msg.malformed:
                    stop, answer = "prose", msg.content.strip()
                    message = "answered in prose"
                    break
                cut = " (cut at max_tokens)" if msg.meta["finish_reason"] == "length" else ""
                if self.mode == "prose":  # a call begun and not finished: not an answer
                    why = f"an unfinished call{cut}"
                    then = "write the whole call, or answer in words"
                else:
                    why, then = f"no complete call{cut}", f"call a tool, or {self._answer_name()}"
                transcript.append(Message("tool", f"error: {why}; {then}"))
                step_reasons.append(why)
            failed = repeated = 0
            for call in msg.tool_calls:
                problems = turn.validate(call)
                if problems:
                    failed += 1
                    content = "error: " + render_errors(problems)
                    step_reasons.append(f"{_brief(call)}: invalid: {render_errors(problems)}")
                else:
                    content, ok = self._run_tool(call)
                    if self.answer_tool is not None and call.name == self.answer_tool.name and ok:
                        transcript.append(
                            Message(
                                "tool", turn.sanitize(content), tool_call_id=call.id, name=call.name
                            )
                        )
                        stop, answer = "answer", content
                        message = f"answered through {call.name}"
                        break
                    if call.name != self._answer_name():
                        ran.append(call.name)
                    key, result = _call_key(call), content
                    if not ok:
                        failed += 1
                        step_reasons.append(f"{_brief(call)}: {content}")
                    elif seen.get(key) == content:
                        failed += 1
                        repeated += 1
                        step_reasons.append(f"{_brief(call)}: repeated, same result")
                        then = (
                            f"or call {self._answer_name()}"
                            if self.answer_tool is not None
                            else "answer the user in words now"
                        )
                        content += (
                            f"\n(note: the same call gave the same result before; use it: {then})"
                        )
                    seen[key] = result if ok else ""
                transcript.append(
                    Message("tool", turn.sanitize(content), tool_call_id=call.id, name=call.name)
                )
            if stop == "answer":
                break
            answer_only = self.answer_on_repeat and 0 < repeated == len(msg.tool_calls)
            if step_reasons and failed == len(msg.tool_calls):
                blocked += 1
                reasons.extend(f"step {step + 1}: {r}" for r in step_reasons)
            else:
                blocked = 0
            if blocked >= self.max_consecutive_blocked:
                stop = "blocked"
                last = "; ".join(r for r in reasons[-len(step_reasons) :])
                message = f"stopped: {blocked} blocked steps in a row (last: {last})"
                break
        transcript.outcome = Outcome(
            stop,
            answer,
            message,
            tools=tuple(ran),
            steps=steps,
            tokens=tokens,
            prompt_tokens=prompt_tokens,
            blocked=tuple(reasons),
        )
        return transcript

    def _answer_name(self) -> str:
        return self.answer_tool.name if self.answer_tool is not None else "answer"

    def _run_tool(self, call: ToolCall) -> tuple[str, bool]:
        """The tool's result as text and whether it ran without error."""
        fn = self.functions.get(call.name)
        if fn is None:
            if self.answer_tool is not None and call.name == self.answer_tool.name:
                args = call.arguments  # an answer tool without a function: its arguments
                if len(args) == 1 and isinstance(next(iter(args.values())), str):
                    return str(next(iter(args.values()))), True
                return json.dumps(args, ensure_ascii=False), True
            return f"error: no implementation for tool {call.name!r}", False
        try:
            result = fn(**call.arguments)
        except Exception as e:  # a tool's failure is a message for the model, not a crash
            return f"error: {type(e).__name__}: {e}", False
        if isinstance(result, str):
            return result, True
        return json.dumps(result, ensure_ascii=False, default=str), True
