"""Byte-level pushdown automaton compiled from the grammar IR.

:class:`Automaton` is the protocol the layers above use; two implementations satisfy it:
:func:`build_automaton` returns the pure-Python :class:`PythonAutomaton` (the reference; its
runtime configurations are interned, hashable :class:`State` objects), and
:func:`build_native_automaton` the compiled kernel's (``toolmask._native``; :func:`flatten`
and :func:`native_from_flat` split it in two, so that the flat form can key a cache first).
See ``docs/automaton.md`` for the derivation.
"""

from __future__ import annotations

from toolmask.automaton._build import build_automaton
from toolmask.automaton._native import build_native_automaton, flatten, native_from_flat
from toolmask.automaton._protocol import Automaton, AutomatonState
from toolmask.automaton._runtime import PythonAutomaton, State

__all__ = [
    "Automaton",
    "AutomatonState",
    "PythonAutomaton",
    "State",
    "build_automaton",
    "build_native_automaton",
    "flatten",
    "native_from_flat",
]
