"""How a schema's values are written: JSON, or the other value notations models use for tool
arguments.

The schema compiler's shapes say *which* values are valid; a notation says how a value is
spelled. :func:`~toolmask.schema.compile_json_schema` takes one by name:

* ``json``: RFC 8259 text (the default; strings in ``json.dumps`` canonical form);
* ``python``: Python literals (Llama 4's pythonic calls): strings in single or double quotes
  with backslash escapes (:func:`python_string_char`), ``True`` / ``False`` / ``None``, dict keys
  as strings; numbers, lists and dicts otherwise as in JSON. Every text is one that
  :func:`ast.literal_eval` reads back as the value;
* ``python_json``: the same strings, with ``true`` / ``false`` / ``null`` as in JSON (OLMo 3's
  template writes a string argument in single quotes and every other value with ``tojson``);
  its readers take those three names as the JSON constants;
* ``gemma``: Gemma 4's object notation: strings between ``<|"|>`` markers with raw content (it
  cannot hold the marker), keys bare (``{city:<|"|>Paris<|"|>,days:3}``), ``:`` after a key in
  every layout but ``flexible``; ``true`` / ``false`` / ``null`` and numbers as in JSON;
* ``functiongemma``: the same notation with ``<escape>`` as the string marker (FunctionGemma);
* ``minimax_xml``: a string is its raw text without delimiters, holding no ``]<]minimax[>[``
  (the text of a MiniMax-M3 XML element; the format writes the other types itself).

A notation's markers that are special tokens of the vocabulary (Gemma's ``<|"|>``, FunctionGemma's
``<escape>``) become
:class:`~toolmask.grammar.Special` nodes when named in ``special_tokens``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from toolmask.grammar import (
    NOTHING,
    CharSet,
    Dfa,
    Node,
    Special,
    byte_class,
    choice,
    lit,
    seq,
    utf8_node,
)

__all__ = [
    "FUNCTIONGEMMA_QUOTE",
    "GEMMA_QUOTE",
    "MINIMAX_NS",
    "NOTATIONS",
    "Notation",
    "gemma_key_dfa",
    "gemma_string_dfa",
    "python_string_char",
]

NotationName = Literal["json", "python", "gemma"]

#: Gemma 4's string delimiter (a special token in Gemma 4 vocabularies)
GEMMA_QUOTE = '<|"|>'
#: FunctionGemma's string delimiter (a special token of its vocabulary)
FUNCTIONGEMMA_QUOTE = "<escape>"
#: the marker before every MiniMax-M3 tag: element text cannot hold it
MINIMAX_NS = "]<]minimax[>["


@dataclass(frozen=True, slots=True)
class Notation:
    """The spelling of the scalar constants; strings and keys are built by the lowerer from
    :attr:`name` (they need its rule memo)."""

    name: NotationName
    null: str
    true: str
    false: str
    #: the string delimiter of the ``gemma`` notations (text a string cannot hold)
    quote: str = ""
    #: strings are written between two ``quote`` s; else bare (their text only)
    delimited: bool = True


NOTATIONS: dict[str, Notation] = {
    "json": Notation("json", "null", "true", "false"),
    "python": Notation("python", "None", "True", "False"),
    "python_json": Notation("python", "null", "true", "false"),
    "gemma": Notation("gemma", "null", "true", "false", GEMMA_QUOTE),
    "functiongemma": Notation("gemma", "null", "true", "false", FUNCTIONGEMMA_QUOTE),
    "minimax_xml": Notation("gemma", "null", "true", "false", MINIMAX_NS, delimited=False),
}

# -- python ------------------------------------------------------------------------------------

_PY_SHORT = {0x5C: "\\", 0x27: "'", 0x22: '"', 0x0A: "n", 0x0D: "r", 0x09: "t"}
#: code points never written raw inside a Python string literal: the backslash, line ends
#: and the other C0 controls (tab is written raw too)
_PY_ESCAPED = CharSet.of([(0, 0x08), (0x0A, 0x1F), 0x5C])


@functools.lru_cache(maxsize=8192)
def _python_char(cs: CharSet, quote: str) -> Node:
    q = ord(quote)
    special = cs & (_PY_ESCAPED | CharSet.of([q]))
    plain = cs - _PY_ESCAPED - CharSet.of([q])
    alts: list[Node] = []
    if plain:
        cp = plain.ranges[0][0]
        if len(plain.ranges) == 1 and cp == plain.ranges[0][1] and not 0xD800 <= cp <= 0xDFFF:
            alts.append(lit(chr(cp)))
        else:
            alts.append(utf8_node(plain))
    # either quote may be escaped in either quoting (``'Martha\'s'``, ``'\"x\"'``)
    short = [ord(_PY_SHORT[cp]) for cp in _PY_SHORT if cp in cs]
    if short:
        alts.append(seq(lit("\\"), byte_class(*short)))
    hexes = [
        cp
        for lo, hi in special.ranges
        for cp in range(lo, hi + 1)
        if cp not in _PY_SHORT and cp != q
    ]
    if hexes:
        alts.append(choice(*(lit(f"\\x{cp:02x}") for cp in hexes)))
    return choice(*alts) if alts else NOTHING


def python_string_char(quote: str) -> functools.partial[Node]:
    """The encoder of one code point inside a Python string literal quoted with ``quote``:
    raw UTF-8 except the backslash, the quote and the C0 controls but tab; escapes ``\\\\``,
    ``\\'``, ``\\"`` (both quotes, in either quoting), ``\\n``, ``\\r``, ``\\t``, and ``\\xhh``
    (lowercase, as ``repr`` writes them) for the other controls."""
    return functools.partial(_python_char, quote=quote)


# -- gemma -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _no_quote(quote: str) -> Dfa:
    anything = Dfa.any_string()
    return anything.concat(Dfa.literal(quote)).concat(anything).complement()


def gemma_string_dfa(content: Dfa | None, quote: str = GEMMA_QUOTE) -> Dfa:
    """The raw contents of a Gemma string: ``content`` (any text when None) that does not hold
    the ``quote`` delimiter (``<|"|>``; FunctionGemma's ``<escape>``)."""
    return _no_quote(quote) if content is None else content.intersect(_no_quote(quote))


#: characters a bare Gemma key cannot hold: the reader ends or refuses a key at them
_GEMMA_KEY_STOP = CharSet.of(":{}[],<\"'")
_WS = CharSet.of(" \t\r\n")


@functools.lru_cache(maxsize=1)
def _bare_key() -> Dfa:
    inner = CharSet.of([(0, 0x10FFFF)]) - _GEMMA_KEY_STOP
    edge = inner - _WS - CharSet.of([(0, 0x1F)])
    middle = Dfa.char(inner - CharSet.of([(0, 0x1F)]) | CharSet.of(" ")).star()
    one = Dfa.char(edge)
    return one.union(one.concat(middle).concat(one))


def gemma_key_dfa(keys: Dfa | None) -> Dfa:
    """Keys written bare: non-empty, no ``:{}[],<`` or quotes, no control characters, no
    whitespace at either end (the reader strips it); ``keys`` (any name when None) narrows."""
    return _bare_key() if keys is None else keys.intersect(_bare_key())


def gemma_quote(special_tokens: frozenset[str], quote: str = GEMMA_QUOTE) -> Node:
    return Special(quote) if quote in special_tokens else lit(quote)
