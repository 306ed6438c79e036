"""``compile``: a grammar becomes a :class:`CompiledGrammar` (automaton + post-decode checks).

Compiled grammars are cached by ``(grammar.fingerprint(), limits)`` in a bounded LRU, so
compiling the same grammar twice costs one dict lookup plus the fingerprint.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from toolmask.automaton import Automaton, State, build_automaton
from toolmask.grammar._ir import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = ["CompiledGrammar", "Matcher", "compile"]

#: entries kept by the compile cache
CACHE_SIZE = 64
#: longest run that :meth:`Matcher.forced_bytes` returns
MAX_FORCED = 4096

_cache: OrderedDict[tuple[str, Limits], CompiledGrammar] = OrderedDict()
_cache_lock = threading.Lock()


def compile(grammar: Grammar, *, limits: Limits = DEFAULT_LIMITS) -> CompiledGrammar:
    """Compile ``grammar`` for byte-level matching; cached by fingerprint (LRU, 64 entries).

    Raises GrammarError / LimitError as :func:`toolmask.automaton.build_automaton` does.
    Cost: the automaton build on a miss (see ``docs/automaton.md``); O(grammar size) on a hit
    (the fingerprint).
    """
    key = (grammar.fingerprint(), limits)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    compiled = CompiledGrammar(grammar, build_automaton(grammar, limits=limits))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:  # another thread won the race: keep one object per key
            _cache.move_to_end(key)
            return hit
        _cache[key] = compiled
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def clear_cache() -> None:
    """Forget every cached compiled grammar (tests, memory pressure)."""
    with _cache_lock:
        _cache.clear()


class CompiledGrammar:
    """A grammar with its automaton. Immutable; share it between threads and sequences."""

    __slots__ = ("_validators", "automaton", "grammar")

    grammar: Grammar
    automaton: Automaton

    def __init__(self, grammar: Grammar, automaton: Automaton) -> None:
        self.grammar = grammar
        self.automaton = automaton
        self._validators: list[Any] | None = None

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the grammar (one per sequence). O(1)."""
        return Matcher(self.automaton)

    def validate(self, doc: bytes | str) -> list[str]:
        """Run the grammar's post-decode checks on a finished document.

        Returns one string per problem, ``"at <json pointer>: <message>"`` (``(root)`` for the
        document itself), or a single parse error with its position; ``[]`` means valid. A
        grammar without checks returns ``[]`` without parsing. Cost: one JSON parse plus the
        jsonschema validation.
        """
        if not self.grammar.checks:
            return []
        try:
            text = doc.decode("utf-8") if isinstance(doc, (bytes, bytearray)) else doc
        except UnicodeDecodeError as e:
            return [f"invalid UTF-8 at byte {e.start}: {e.reason}"]
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as e:
            return [f"invalid JSON at line {e.lineno} column {e.colno} (char {e.pos}): {e.msg}"]
        except ValueError as e:
            return [f"invalid JSON: {e}"]
        errors: list[str] = []
        for validator in self._get_validators():
            for err in sorted(validator.iter_errors(value), key=_error_sort_key):
                errors.append(f"at {_pointer(err.absolute_path)}: {err.message}")
        return errors

    def _get_validators(self) -> list[Any]:
        vs = self._validators
        if vs is None:
            from toolmask.schema._validate import make_validator

            vs = [make_validator(check) for check in self.grammar.checks]
            self._validators = vs
        return vs

    def __repr__(self) -> str:
        return (
            f"CompiledGrammar(start={self.grammar.start!r}, rules={len(self.grammar.rules)}, "
            f"positions={self.automaton.n_positions}, checks={len(self.grammar.checks)})"
        )


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _error_sort_key(err: Any) -> tuple[list[str], str]:
    return [str(p) for p in err.absolute_path], str(err.message)


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else "(root)"


class Matcher:
    """Byte-level matching of one sequence against a compiled grammar.

    Never raises on model output: ``accept_*`` returns False and leaves the state unchanged.
    Raises ValueError only on misuse (rolling back more than was accepted). Keeps one history
    entry per accepted byte or special token, so ``rollback`` is O(n).
    """

    __slots__ = ("_a", "_history", "_state")

    def __init__(self, automaton: Automaton) -> None:
        self._a = automaton
        self._state: State = automaton.initial
        self._history: list[State] = []

    @property
    def state(self) -> State:
        """The current automaton state (interned; usable as a cache key)."""
        return self._state

    @property
    def automaton(self) -> Automaton:
        return self._a

    @property
    def n_accepted(self) -> int:
        """Bytes and special tokens accepted so far (what ``rollback`` can undo)."""
        return len(self._history)

    def accept_bytes(self, data: bytes | bytearray | memoryview) -> bool:
        """Accept all of ``data`` or nothing. O(len(data)) memo lookups when warm."""
        data = bytes(data)
        a = self._a
        s: State | None = self._state
        trail: list[State] = []
        for b in data:
            assert s is not None
            trail.append(s)
            s = a.advance(s, b)
            if s is None:
                return False
        assert s is not None
        self._history.extend(trail)
        self._state = s
        return True

    def accept_special(self, text: str) -> bool:
        """Accept one special token; counts as one unit for ``rollback``."""
        s = self._a.advance_special(self._state, text)
        if s is None:
            return False
        self._history.append(self._state)
        self._state = s
        return True

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted bytes / special tokens. ValueError if ``n`` is too big."""
        if n < 0 or n > len(self._history):
            raise ValueError(f"cannot roll back {n} units: only {len(self._history)} accepted")
        if n == 0:
            return
        self._state = self._history[-n]
        del self._history[-n:]

    def reset(self) -> None:
        """Back to the start of the grammar."""
        self._state = self._a.initial
        self._history.clear()

    def is_accepting(self) -> bool:
        """The document accepted so far is complete (it may still continue)."""
        return self._state.accepting

    def is_finished(self) -> bool:
        """Complete, and nothing more can be accepted."""
        return self._a.is_finished(self._state)

    def allowed_bytes(self) -> int:
        """256-bit mask of the bytes that ``accept_bytes`` would take next (cached by state)."""
        return self._a.allowed_bytes(self._state)

    def allowed_specials(self) -> frozenset[str]:
        """Special-token texts that ``accept_special`` would take next."""
        return self._a.allowed_specials(self._state)

    def forced_bytes(self) -> bytes:
        """The longest byte string every continuation must start with (at most MAX_FORCED).

        Follows the automaton while exactly one byte is allowed, no special token is allowed
        and the state is not accepting. Does not change the matcher.
        """
        a = self._a
        s = self._state
        out = bytearray()
        while len(out) < MAX_FORCED and not s.accepting:
            mask = a.allowed_bytes(s)
            if mask == 0 or mask & (mask - 1) or a.allowed_specials(s):
                break
            b = mask.bit_length() - 1
            nxt = a.advance(s, b)
            assert nxt is not None
            out.append(b)
            s = nxt
        return bytes(out)

    def __repr__(self) -> str:
        return f"Matcher(accepted={len(self._history)}, state={self._state!r})"
