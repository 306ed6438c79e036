"""ECMA-262 regular expressions (``u`` flag, no other flags) to DFAs and grammar IR.

The dialect (JSON Schema's ``pattern`` / ``patternProperties``) and its parser are in
``_regex_syntax``; this module turns a syntax tree into an NFA and a DFA, or straight into IR.

Entry points: :func:`regex_dfa` (``search=True`` is JSON Schema semantics: the string *contains* a
match), :func:`regex_node` / :func:`regex_rules` (full match, raw UTF-8 bytes) and
:func:`grammar_from_regex`.
"""

from __future__ import annotations

from toolmask._cache import CacheSet, memo, using
from toolmask.errors import GrammarError, LimitError
from toolmask.grammar._charset import ANY_CHAR, CharSet
from toolmask.grammar._fsm import (
    Dfa,
    Encoding,
    dfa_bytes,
    dfa_to_node,
    dfa_to_rules,
    encode_charset,
)
from toolmask.grammar._ir import Grammar, Node, Rule, choice, register_frontend, repeat, seq
from toolmask.grammar._nfa import BOL, EOL, Nfa
from toolmask.grammar._regex_syntax import (
    RAlt,
    RAssert,
    RCat,
    RChars,
    RLook,
    RNode,
    RRepeat,
    has_assertions,
    parse_regex,
    strip_outer_anchors,
)
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "anchored_chain",
    "grammar_from_regex",
    "parse_full_match",
    "regex_ast_node",
    "regex_dfa",
    "regex_direct_node",
    "regex_node",
    "regex_rules",
]


# -- AST -> NFA ---------------------------------------------------------------------------------


def _nfa_size(node: RNode, cap: int) -> int:
    """An upper bound on the NFA states ``node`` needs (stops counting past ``cap``)."""
    t = type(node)
    if t is RChars or t is RAssert:
        return 2
    if isinstance(node, RLook):
        return 2 + _nfa_size(node.body, cap)
    if isinstance(node, (RCat, RAlt)):
        total = 2
        for it in node.items:
            total += _nfa_size(it, cap)
            if total > cap:
                return total
        return total
    assert isinstance(node, RRepeat)
    inner = _nfa_size(node.item, cap)
    copies = node.max if node.max is not None else max(node.min, 1)
    return min(inner * copies, cap + 1) + 2


def _build(node: RNode, nfa: Nfa) -> tuple[int, int]:
    if isinstance(node, RChars):
        s, e = nfa.add_state(), nfa.add_state()
        nfa.add_char(s, node.cs, e)
        return s, e
    if isinstance(node, RAssert):
        s, e = nfa.add_state(), nfa.add_state()
        nfa.add_eps(s, e, node.cond)
        return s, e
    if isinstance(node, RLook):
        # the body is its own fragment, entered by the determinisation at every position the
        # lookahead is passed; it shares nothing with the main automaton
        body_start, body_accept = _build(node.body, nfa)
        s, e = nfa.add_state(), nfa.add_state()
        nfa.add_lookahead(s, e, body_start, body_accept, negative=node.negative)
        return s, e
    if isinstance(node, RCat):
        s = e = nfa.add_state()
        for it in node.items:
            a, b = _build(it, nfa)
            nfa.add_eps(e, a)
            e = b
        return s, e
    if isinstance(node, RAlt):
        s, e = nfa.add_state(), nfa.add_state()
        for it in node.items:
            a, b = _build(it, nfa)
            nfa.add_eps(s, a)
            nfa.add_eps(b, e)
        return s, e
    s = cur = nfa.add_state()
    for _ in range(node.min):
        a, b = _build(node.item, nfa)
        nfa.add_eps(cur, a)
        cur = b
    e = nfa.add_state()
    if node.max is None:
        a, b = _build(node.item, nfa)
        nfa.add_eps(cur, a)
        nfa.add_eps(b, a)
        nfa.add_eps(b, e)
        nfa.add_eps(cur, e)
        return s, e
    for _ in range(node.max - node.min):  # nested optionals: closures stay small
        a, b = _build(node.item, nfa)
        nfa.add_eps(cur, e)
        nfa.add_eps(cur, a)
        cur = b
    nfa.add_eps(cur, e)
    return s, e


def _check_size(ast: RNode, limits: Limits) -> None:
    cap = max(8 * limits.max_dfa_states, 1_000)
    if _nfa_size(ast, cap) > cap:
        raise LimitError(
            f"regex needs more than {cap} automaton states (counted repetition too large)",
            limit="max_dfa_states",
        )


def _regex_nfa(ast: RNode, *, search: bool, limits: Limits) -> Nfa:
    _check_size(ast, limits)
    nfa = Nfa()
    if search:
        pre = nfa.add_state()
        nfa.add_char(pre, ANY_CHAR, pre)
        s, e = _build(ast, nfa)
        post = nfa.add_state()
        nfa.add_char(post, ANY_CHAR, post)
        nfa.add_eps(pre, s)
        nfa.add_eps(e, post)
        nfa.start, nfa.accept = pre, post
    else:
        nfa.start, nfa.accept = _build(ast, nfa)
    return nfa


@memo("grammar.regex_dfas", limit="max_language_memos", entry_bytes=dfa_bytes)
def _regex_dfa_cached(pattern: str, search: bool, limits: Limits, backrefs: bool) -> Dfa:
    ast = parse_regex(pattern, limits=limits, backrefs=backrefs)
    return Dfa.from_nfa(_regex_nfa(ast, search=search, limits=limits), limits=limits)


def regex_dfa(
    pattern: str, *, search: bool, limits: Limits = DEFAULT_LIMITS, backrefs: bool = False
) -> Dfa:
    """The minimal DFA over code points for ``pattern``.

    ``search=True``: the strings that *contain* a match (JSON Schema ``pattern``); ``search=False``:
    the strings the pattern matches in full. Raises GrammarSyntaxError for malformed or unsupported
    syntax and LimitError when the automaton would exceed ``limits.max_dfa_states``. Memoised
    in the cache set in use (:func:`toolmask._cache.memo`).

    ``backrefs=True``: a backreference is read as the language its group can match, so the
    DFA is a *superset* of the pattern's language (a backreference is not regular); the
    caller checks the exact pattern afterwards (``python_regex``). Without it a
    backreference is a GrammarSyntaxError.
    """
    return _regex_dfa_cached(pattern, search, limits, backrefs)


# -- AST -> IR ----------------------------------------------------------------------------------


def _direct_ir(node: RNode, encoding: Encoding = "raw") -> Node:
    t = type(node)
    if t is RChars:
        return encode_charset(node.cs, encoding)  # type: ignore[union-attr]
    if t is RCat:
        return seq(*[_direct_ir(i, encoding) for i in node.items])  # type: ignore[union-attr]
    if t is RAlt:
        return choice(*[_direct_ir(i, encoding) for i in node.items])  # type: ignore[union-attr]
    if t is RRepeat:
        r: RRepeat = node  # type: ignore[assignment]
        return repeat(_direct_ir(r.item, encoding), r.min, r.max)
    raise AssertionError("assertions have no direct IR")


def regex_direct_node(
    pattern: str, *, encoding: Encoding = "raw", limits: Limits = DEFAULT_LIMITS
) -> Node | None:
    """The full-match language of ``pattern`` as one IR node built from its syntax tree
    (linear in the pattern; no automaton is built), each code point written in ``encoding``;
    None when the pattern has inner anchors, word boundaries or lookaheads (they need its DFA:
    :func:`regex_dfa`). Raises what :func:`regex_dfa` raises before it determinises: syntax
    errors and the NFA size bound. The automaton determinises the node lazily, so a pattern
    whose DFA would blow up should not come here: callers use it for vetted patterns (known
    formats, generated number ranges)."""
    return regex_ast_node(parse_full_match(pattern, limits=limits), encoding=encoding)


def parse_full_match(pattern: str, *, limits: Limits = DEFAULT_LIMITS) -> RNode:
    """``pattern``'s syntax tree for a full match (outer anchors dropped), after the checks
    :func:`regex_dfa` makes before it determinises (syntax, nesting, the NFA size bound)."""
    ast = parse_regex(pattern, limits=limits)
    _check_size(ast, limits)  # the bound regex_dfa checks first, so both routes refuse alike
    return strip_outer_anchors(ast)


def anchored_chain(
    pattern: str, *, limits: Limits = DEFAULT_LIMITS
) -> list[tuple[CharSet, int, int | None]] | None:
    """``pattern`` as ``[(class, min, max), ...]`` when it is ``^`` + a concatenation of
    character classes, each optionally quantified + ``$`` (one alternative, no other
    assertion): its search language is then the full-match language of the chain. None for
    any other shape. Raises what :func:`regex_dfa` raises before it determinises (syntax
    errors, nesting, the NFA size bound)."""
    ast = parse_regex(pattern, limits=limits)
    _check_size(ast, limits)
    if not isinstance(ast, RCat) or len(ast.items) < 2:
        return None
    first, *middle, last = ast.items
    if first != RAssert(BOL) or last != RAssert(EOL):
        return None
    out: list[tuple[CharSet, int, int | None]] = []
    for it in middle:
        if isinstance(it, RChars):
            out.append((it.cs, 1, 1))
        elif isinstance(it, RRepeat) and isinstance(it.item, RChars):
            out.append((it.item.cs, it.min, it.max))
        else:
            return None
    return out


def regex_ast_node(ast: RNode, *, encoding: Encoding = "raw") -> Node | None:
    """The IR node of a syntax tree from :func:`parse_full_match` (None when it has
    assertions: see :func:`regex_direct_node`)."""
    return None if has_assertions(ast) else _direct_ir(ast, encoding)


def _assertion_free(pattern: str, limits: Limits) -> RNode | None:
    ast = strip_outer_anchors(parse_regex(pattern, limits=limits))
    return None if has_assertions(ast) else ast


def regex_node(pattern: str, *, limits: Limits = DEFAULT_LIMITS) -> Node:
    """One rule-free IR node for the UTF-8 bytes of the strings ``pattern`` fully matches.

    Without inner anchors / word boundaries the regex maps structurally to IR (linear size).
    Otherwise its DFA is lowered by state elimination; if that tree is too large this raises
    GrammarError telling the caller to use :func:`regex_rules`.
    """
    ast = _assertion_free(pattern, limits)
    if ast is not None:
        return _direct_ir(ast)
    node = dfa_to_node(regex_dfa(pattern, search=False, limits=limits), encoding="raw")
    if node is None:
        raise GrammarError(
            f"regex {pattern!r} needs rules (anchors or word boundaries inside loops); "
            "use toolmask.grammar._regex.regex_rules"
        )
    return node


def regex_rules(
    pattern: str, prefix: str, *, limits: Limits = DEFAULT_LIMITS
) -> tuple[Node, tuple[Rule, ...]]:
    """Entry node and rules (names start with ``prefix``) for the full-match language, as raw
    UTF-8. Assertion-free patterns give a single structural node and no rules; others the
    right-linear rules of the minimal DFA (:func:`~toolmask.grammar._fsm.dfa_to_rules`)."""
    ast = _assertion_free(pattern, limits)
    if ast is not None:
        return _direct_ir(ast), ()
    return dfa_to_rules(regex_dfa(pattern, search=False, limits=limits), prefix, encoding="raw")


def grammar_from_regex(
    pattern: str, *, limits: Limits = DEFAULT_LIMITS, caches: CacheSet | None = None
) -> Grammar:
    """A grammar (start rule ``root``) for the strings ``pattern`` fully matches; its automata
    are memoised in ``caches`` (None: the cache set in use, see :mod:`toolmask._cache`)."""
    with using(caches):
        node, rules = regex_rules(pattern, "root", limits=limits)
    return Grammar((Rule("root", node), *rules), start="root")


register_frontend("regex", grammar_from_regex)
