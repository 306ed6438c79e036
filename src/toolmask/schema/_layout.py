"""Where the lowered grammar puts whitespace: ``compact`` (none), ``spaced`` (exactly what
``json.dumps(value)`` writes: ``", "`` between items, ``": "`` after keys), ``flexible`` (at every
place JSON allows it, at most ``max_ws`` bytes of ``[ \\t\\n\\r]``) or ``indent`` (exactly what
``json.dumps(value, indent=k)`` writes, so a container's brackets depend on how deep it sits).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from toolmask.grammar import Node, lit, seq
from toolmask.schema._json_text import json_ws

__all__ = ["Layout", "Whitespace"]

Whitespace = Literal["compact", "spaced", "flexible", "indent"]


@dataclass(frozen=True, slots=True)
class Layout:
    mode: Whitespace = "compact"
    indent: int = 2
    max_ws: int = 4

    def ws(self) -> Node:
        return json_ws(self.max_ws)

    def open(self, bracket: str, depth: int) -> Node:
        if self.mode == "indent":
            return lit(bracket + "\n" + " " * (self.indent * (depth + 1)))
        if self.mode == "flexible":
            return seq(lit(bracket), self.ws())
        return _LITS[bracket]

    def close(self, bracket: str, depth: int) -> Node:
        if self.mode == "indent":
            return lit("\n" + " " * (self.indent * depth) + bracket)
        if self.mode == "flexible":
            return seq(self.ws(), lit(bracket))
        return _LITS[bracket]

    def empty(self, pair: str) -> Node:
        if self.mode == "flexible":
            return seq(lit(pair[0]), self.ws(), lit(pair[1]))
        return _LITS[pair]

    def sep(self, depth: int) -> Node:
        if self.mode == "indent":
            return lit(",\n" + " " * (self.indent * (depth + 1)))
        if self.mode == "flexible":
            return seq(self.ws(), lit(","), self.ws())
        if self.mode == "spaced":
            return _LITS[", "]
        return _LITS[","]

    def colon(self) -> Node:
        if self.mode in ("indent", "spaced"):
            return _LITS[": "]
        if self.mode == "flexible":
            return seq(self.ws(), lit(":"), self.ws())
        return _LITS[":"]

    def render(self, value: Any, depth: int) -> str:
        if self.mode == "indent":
            text = json.dumps(value, ensure_ascii=False, indent=self.indent)
            return text.replace("\n", "\n" + " " * (self.indent * depth))
        if self.mode == "spaced":
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: the literals the layouts write as they are (made once: IR nodes are values, shared freely)
_LITS: dict[str, Node] = {t: lit(t) for t in ("[", "]", "{", "}", "[]", "{}", ",", ", ", ":", ": ")}
