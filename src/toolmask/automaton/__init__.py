"""Byte-level pushdown automaton compiled from the grammar IR.

``build_automaton(grammar)`` returns an :class:`Automaton`; its runtime configurations are
interned, hashable :class:`State` objects. See ``docs/automaton.md`` for the derivation.
"""

from __future__ import annotations

from toolmask.automaton._build import build_automaton
from toolmask.automaton._runtime import Automaton, State

__all__ = ["Automaton", "State", "build_automaton"]
