"""Token masks through the compiled kernel: the vocabulary index and the per-grammar mask cache.

:class:`NativeVocabIndex` holds a vocabulary's tries and shared run tables in C
(``toolmask._native.Vocab``); :class:`NativeMaskCache` computes and caches the masks of one
automaton over it (``toolmask._native.Masks``): per position, what the position decides on its
own, and per state the composition (see ``docs/masks.md``). Same interface as the pure-Python
:class:`~toolmask.mask.MaskCache` and :class:`~toolmask.mask.VocabIndex`, which stay the
reference the tests compare against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask._kernel import native_module
from toolmask.automaton import Automaton, AutomatonState, build_native_automaton
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = ["PREWARM_FORMATS", "NativeMaskCache", "NativeVocabIndex"]

#: grammars (as schemas) whose run tables a vocabulary index builds when it is created (the
#: compiler compiles them and passes them as ``warm``), each with the prefix the prewarm starts
#: from: the plain JSON string, whose character class every string schema starts from (free-form,
#: counted, patterns, keys), and the string formats tool schemas use most, whose sub-grammars
#: (a date's digit groups, an email's local part and counted domain labels) have several
#: classes each. Every class of these grammars is covered by construction: the prewarm walks
#: each one's automaton breadth first (:data:`PREWARM_STATES` states) and computes every state's
#: mask, rather than forcing one sample value, which met only the classes on its path. Other
#: classes (patterns, other formats) are combined on first use from the class bitmaps and the
#: exit index the kernel's vocabulary holds from its creation (docs/masks.md, "Class bitmaps")
PREWARM_FORMATS: tuple[tuple[dict[str, Any], bytes], ...] = (
    ({"type": "string"}, b'"'),
    *(
        ({"type": "string", "format": f}, b'"')
        for f in ("date-time", "date", "time", "email", "uuid")
    ),
)
#: how many states of each warm grammar the prewarm computes, breadth first from its prefix
PREWARM_STATES = 160


class NativeVocabIndex:
    """A vocabulary's token tries, per-token character tables, class bitmaps, exit index and
    shared run tables (in C).

    Cost: about 0.1 s and 29 MB for a 151k vocabulary (one sort of the token bytes and a pass
    over them, the class bitmaps and the exit index); run tables are added on first use, V/8
    bytes per base bitmask, at most ``max_run_tables`` kept (``Limits.max_run_tables``).
    """

    __slots__ = ("eos", "native", "size", "special_by_text", "text", "vocab", "words")

    def __init__(
        self,
        vocab: Vocabulary,
        *,
        max_run_tables: int = DEFAULT_LIMITS.max_run_tables,
        warm: Sequence[tuple[Grammar, bytes]] = (),
    ) -> None:
        self.vocab = vocab
        self.size = vocab.vocab_size
        self.words = (self.size + 31) // 32
        tb = vocab.token_bytes
        #: 1 for a text token (its bytes can be matched), else 0
        self.text = bytes(1 if tb[i] else 0 for i in range(self.size))
        self.native: Any = native_module().Vocab(tb, self.text, max(1, max_run_tables))
        by_text: dict[str, list[int]] = {}
        for tid, s in vocab.special.items():
            by_text.setdefault(s, []).append(tid)
        self.special_by_text: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in by_text.items()}
        self.eos: tuple[int, ...] = tuple(sorted(vocab.eos_ids))
        if warm:
            self._prewarm(warm)

    def _prewarm(self, warm: Sequence[tuple[Grammar, bytes]]) -> None:
        """Build, now, the run tables that nearly every tool schema needs on its first steps, as
        part of the index's setup cost: the compiler passes grammars, each with a prefix
        (:data:`PREWARM_FORMATS`). From the state after the prefix, the automaton is walked
        breadth first, one byte per ASCII transition to a new state, and every state's mask is
        computed (at most :data:`PREWARM_STATES` per grammar) through a throwaway mask cache;
        only the vocabulary's shared tables stay. They are shared by every position and grammar
        with the same run class (a counted string's bounded tables are one AND each). About
        30 ms per 151k-token vocabulary."""
        out = np.empty(self.words, dtype=np.int32)
        ascii_bytes = (1 << 128) - 1
        for g, prefix in warm:
            a = build_native_automaton(g)
            masks = native_module().Masks(a, self.native, [], (), 1 << 24)
            start = a.advance_bytes(a.initial, prefix)
            if start is None:
                continue
            order: list[AutomatonState] = [start]
            seen = {start}
            for s in order:
                if len(seen) > PREWARM_STATES:
                    break
                masks.fill(s, out)
                allowed = a.allowed_bytes(s) & ascii_bytes
                while allowed:
                    b = (allowed & -allowed).bit_length() - 1
                    allowed &= allowed - 1
                    nxt = a.advance(s, b)
                    if nxt is not None and nxt not in seen:
                        seen.add(nxt)
                        order.append(nxt)

    def memory_bytes(self) -> int:
        """Bytes held: tries, token tables and the shared run tables built so far."""
        return int(self.native.memory_bytes()) + len(self.text)

    def __repr__(self) -> str:
        return f"NativeVocabIndex({self.native.info()})"


class NativeMaskCache:
    """Masks of one automaton over one vocabulary, computed and cached by the kernel.

    ``fill(state, out)`` writes the state's bitmask; ``get(state)`` returns it as a new
    read-only array. Bounded by ``max_bytes`` (everything is dropped when it is passed, then
    refilled on demand). Thread-safe (the kernel runs under the GIL). Cost of a cached state:
    one copy of ceil(V/32) words plus the few ids it adds.
    """

    __slots__ = ("automaton", "index", "native")

    def __init__(self, automaton: Automaton, index: NativeVocabIndex, max_bytes: int) -> None:
        self.automaton = automaton
        self.index = index
        texts: tuple[str, ...] = automaton.texts  # type: ignore[attr-defined]  # the kernel's
        special_ids = [index.special_by_text.get(t, ()) for t in texts]
        self.native: Any = native_module().Masks(
            automaton, index.native, special_ids, index.eos, max_bytes
        )

    def fill(self, state: AutomatonState, out: npt.NDArray[np.int32]) -> None:
        """Write the bitmask of ``state`` into ``out`` (int32, ceil(V/32) words)."""
        self.native.fill(state, out)

    def get(self, state: AutomatonState) -> npt.NDArray[np.int32]:
        """The bitmask of ``state`` as a new read-only array."""
        out = np.empty(self.index.words, dtype=np.int32)
        self.native.fill(state, out)
        out.setflags(write=False)
        return out

    def advance_token(self, state: AutomatonState, tid: int) -> AutomatonState | None:
        """The state after text token ``tid``'s bytes, or None."""
        return self.native.advance_token(state, tid)  # type: ignore[no-any-return]

    @property
    def hits(self) -> int:
        return int(self.native.stats()["hits"])

    @property
    def misses(self) -> int:
        return int(self.native.stats()["misses"])

    def stats(self) -> dict[str, int]:
        """Counters (hits, misses, positions computed, exact walks) and cached bytes."""
        return dict(self.native.stats())

    def memory_bytes(self) -> int:
        """Bytes held by the cached masks (the shared run tables count with the index)."""
        return int(self.native.memory_bytes())

    def clear(self) -> None:
        self.native.clear()

    def __len__(self) -> int:
        return int(self.native.stats()["states"])
