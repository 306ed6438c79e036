"""Grammar IR, frontends (GBNF, Lark, regex), printers, and the automata over code points that
the frontends and the schema stage build languages with.

The public names, by module:

* the IR (``_ir``): frozen, hashable nodes and :class:`Grammar`, smart constructors, the
  frontend / printer registry behind ``Grammar.from_*`` / ``to_*``;
* code-point sets and their UTF-8 encoding (``_charset``): :class:`CharSet`, :func:`utf8_node`;
* DFAs over code points (``_fsm``, built with ``_nfa``): :class:`Dfa`, lowered to rules by
  :func:`dfa_to_rules` / :func:`dfa_to_node`;
* ECMA-262 regexes (``_regex``, ``_regex_syntax``): :func:`regex_dfa`, the full-match routes
  straight to IR (:func:`regex_direct_node`, :func:`parse_full_match` +
  :func:`regex_ast_node`), :func:`grammar_from_regex`;
* GBNF and Lark text (``_gbnf``, ``_lark``): :func:`parse_gbnf`, :func:`to_gbnf`,
  :func:`parse_lark`, :func:`to_lark`.

Importing this package registers its frontends (``gbnf``, ``lark``, ``regex``) and printers;
``toolmask.schema`` registers ``json_schema``.
"""

from __future__ import annotations

from toolmask.grammar._charset import (
    ANY_CHAR,
    MAX_CP,
    UTF8_LEAD_LENGTH,
    CharSet,
    utf8_node,
    utf8_sequences,
)
from toolmask.grammar._fsm import (
    Dfa,
    Encoding,
    dfa_bytes,
    dfa_to_node,
    dfa_to_rules,
    encode_charset,
)
from toolmask.grammar._gbnf import parse_gbnf, to_gbnf
from toolmask.grammar._ir import (
    ALL_BYTES,
    EMPTY,
    NOTHING,
    ByteClass,
    Bytes,
    Choice,
    Frontend,
    Grammar,
    Node,
    PostCheck,
    Printer,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Special,
    byte_class,
    byte_range,
    choice,
    frontend,
    iter_nodes,
    lit,
    node_bytes,
    node_count,
    opt,
    plus,
    printer,
    register_frontend,
    register_printer,
    repeat,
    seq,
    star,
    trusted_grammar,
)
from toolmask.grammar._lark import parse_lark, to_lark
from toolmask.grammar._regex import (
    anchored_chain,
    grammar_from_regex,
    parse_full_match,
    regex_ast_node,
    regex_dfa,
    regex_direct_node,
    regex_node,
    regex_rules,
)
from toolmask.grammar._regex_syntax import RCat, RNode, python_regex, regex_backreferences

__all__ = [
    "ALL_BYTES",
    "ANY_CHAR",
    "EMPTY",
    "MAX_CP",
    "NOTHING",
    "UTF8_LEAD_LENGTH",
    "ByteClass",
    "Bytes",
    "CharSet",
    "Choice",
    "Dfa",
    "Encoding",
    "Frontend",
    "Grammar",
    "Node",
    "PostCheck",
    "Printer",
    "RCat",
    "RNode",
    "Repeat",
    "Rule",
    "RuleRef",
    "Seq",
    "Special",
    "anchored_chain",
    "byte_class",
    "byte_range",
    "choice",
    "dfa_bytes",
    "dfa_to_node",
    "dfa_to_rules",
    "encode_charset",
    "frontend",
    "grammar_from_regex",
    "iter_nodes",
    "lit",
    "node_bytes",
    "node_count",
    "opt",
    "parse_full_match",
    "parse_gbnf",
    "parse_lark",
    "plus",
    "printer",
    "python_regex",
    "regex_ast_node",
    "regex_backreferences",
    "regex_dfa",
    "regex_direct_node",
    "regex_node",
    "regex_rules",
    "register_frontend",
    "register_printer",
    "repeat",
    "seq",
    "star",
    "to_gbnf",
    "to_lark",
    "trusted_grammar",
    "utf8_node",
    "utf8_sequences",
]
