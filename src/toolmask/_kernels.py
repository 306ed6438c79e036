"""The kernel chooser: which implementation of the automaton and the masks a compiler uses.

Two kernels compute the same things: ``"native"``, the compiled kernel ``toolmask._native``
(the default when it is built), and ``"python"``, the pure-Python reference
(``TOOLMASK_BACKEND=python`` or ``GrammarCompiler(backend="python")``: the public names keep
the older word); see ``docs/masks.md``. A :class:`~toolmask.GrammarCompiler` takes one
:class:`Kernel` from :func:`choose_kernel` when it is made and asks it for everything
kernel-specific: how a grammar is keyed, its automaton, a vocabulary's index and the mask
cache that pairs them. No other module branches on the kernel's name. (A *backend* is a model
engine: :mod:`toolmask.backends`.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from toolmask._kernel import BackendName, resolve_backend
from toolmask.automaton import (
    Automaton,
    PythonAutomaton,
    build_automaton,
    flatten,
    native_from_flat,
)
from toolmask.grammar import Grammar
from toolmask.limits import Limits
from toolmask.mask import (
    PREWARM_FORMATS,
    MaskCache,
    NativeMaskCache,
    NativeVocabIndex,
    PythonMaskCache,
    PythonVocabIndex,
    VocabIndex,
)
from toolmask.schema import compile_json_schema
from toolmask.vocab import Vocabulary

__all__ = ["Kernel", "KeyedGrammar", "NativeKernel", "PythonKernel", "choose_kernel"]


@dataclass(frozen=True, slots=True)
class KeyedGrammar:
    """A grammar read by a kernel: ``key`` names it in the caches (equal grammars, equal
    keys), ``build`` makes its automaton (at most once: the native one consumes what it read)."""

    key: str
    build: Callable[[Limits], Automaton]


class Kernel(Protocol):
    """One implementation of the hot path (see the module docstring)."""

    @property
    def name(self) -> BackendName: ...

    def read(self, grammar: Grammar) -> KeyedGrammar:
        """Key ``grammar`` for the caches. O(grammar size)."""
        ...

    def vocab_index(self, vocab: Vocabulary, *, max_run_tables: int) -> VocabIndex:
        """Build the index of ``vocab`` (tries, token tables; run tables on demand)."""
        ...

    def mask_cache(self, automaton: Automaton, index: VocabIndex, max_bytes: int) -> MaskCache:
        """The mask cache of an automaton and an index this kernel built."""
        ...


class PythonKernel:
    """The pure-Python reference: :func:`~toolmask.automaton.build_automaton`,
    :class:`~toolmask.mask.PythonVocabIndex`, :class:`~toolmask.mask.PythonMaskCache`."""

    name: BackendName = "python"

    def read(self, grammar: Grammar) -> KeyedGrammar:
        def build(limits: Limits) -> Automaton:
            # states are opaque handles: the Python automaton takes its own (see Automaton)
            return cast(Automaton, build_automaton(grammar, limits=limits))

        return KeyedGrammar(grammar.fingerprint(), build)

    def vocab_index(self, vocab: Vocabulary, *, max_run_tables: int) -> VocabIndex:
        return PythonVocabIndex(vocab, max_run_tables=max_run_tables)

    def mask_cache(self, automaton: Automaton, index: VocabIndex, max_bytes: int) -> MaskCache:
        # this kernel built both halves: they are the Python classes
        masks = PythonMaskCache(
            cast(PythonAutomaton, automaton), cast(PythonVocabIndex, index), max_bytes
        )
        return cast(MaskCache, masks)


class NativeKernel:
    """The compiled kernel: ``toolmask._native`` through
    :func:`~toolmask.automaton.native_from_flat`, :class:`~toolmask.mask.NativeVocabIndex`
    and :class:`~toolmask.mask.NativeMaskCache`. A grammar is keyed by the kernel's canonical
    serialisation of it (hashed at C speed), and every vocabulary index is warmed with the run
    tables of a plain JSON string."""

    name: BackendName = "native"

    def __init__(self) -> None:
        self._warm: tuple[tuple[Grammar, bytes], ...] | None = None

    def read(self, grammar: Grammar) -> KeyedGrammar:
        flat = flatten(grammar)
        key = _native_key(flat, grammar)
        return KeyedGrammar(key, lambda limits: native_from_flat(flat, grammar, limits))

    def vocab_index(self, vocab: Vocabulary, *, max_run_tables: int) -> VocabIndex:
        if self._warm is None:
            self._warm = tuple((compile_json_schema(s), b) for s, b in PREWARM_FORMATS)
        return NativeVocabIndex(vocab, max_run_tables=max_run_tables, warm=self._warm)

    def mask_cache(self, automaton: Automaton, index: VocabIndex, max_bytes: int) -> MaskCache:
        # this kernel built the index: it is the compiled kernel's
        return NativeMaskCache(automaton, cast(NativeVocabIndex, index), max_bytes)


def _native_key(flat: Any, grammar: Grammar) -> str:
    """Cache key of a grammar on the native kernel: a digest of the kernel's canonical
    serialisation (nodes by content, rule bodies, start), the rule names, the special texts
    and the post-decode checks. O(grammar size), hashing at C speed."""
    h = hashlib.blake2b(flat.key, digest_size=32)
    h.update(b"\0".join([r.name.encode("utf-8", "surrogatepass") for r in grammar.rules]))
    # the key's special nodes are indices into these texts: without them, two grammars that
    # differ only in their special tokens would share one automaton
    h.update(b"\2" + b"\0".join([t.encode("utf-8", "surrogatepass") for t in flat.texts]))
    h.update(b"\1" + repr(grammar.checks).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


_KERNELS: dict[BackendName, Callable[[], Kernel]] = {
    "native": NativeKernel,
    "python": PythonKernel,
}


def choose_kernel(name: str | None) -> Kernel:
    """The kernel called ``name`` (None: :func:`toolmask.mask.backend`, the kernel when it is
    built unless ``TOOLMASK_BACKEND`` says otherwise). ValueError for an unknown name,
    ImportError for ``"native"`` when the kernel is not built."""
    return _KERNELS[resolve_backend(name)]()
