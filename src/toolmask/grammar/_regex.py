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
    CLASS_ESCAPES,
    DOT_CHARS,
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
    quick = _simple_chain(pattern, max(8 * limits.max_dfa_states, 1_000))
    if quick is not None:
        return quick
    return _parsed_chain(pattern, limits)


def _parsed_chain(pattern: str, limits: Limits) -> list[tuple[CharSet, int, int | None]] | None:
    """:func:`anchored_chain` through the parser (any pattern)."""
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


# -- the common chains, read without the parser ------------------------------------------------
#
# ``^`` + classes and characters, each optionally quantified, + ``$``, in printable ASCII: what
# the parser (_regex_syntax._Parser) reads for them, mirrored for that subset (a character or a
# punctuation escape is its code point, \d \w \s \D \W \S and ``.`` their sets, a class the
# parser's own reading of its members and ranges, a quantifier its bounds, a lazy ``?`` nothing)
# with the NFA bound _check_size computes. Anything else (groups, alternatives, inner anchors,
# other escapes, non-ASCII, a quantifier the parser would refuse or a bound near the cap) is
# left to the parser, which gives the result or the error.

#: the characters read as themselves outside a class (the parser's literal_char for them)
_PLAIN_ATOMS = frozenset(chr(c) for c in range(0x20, 0x7F) if chr(c) not in "^$\\.*+?()[]{}|")
#: \d \w \s and their complements (the parser's own table)
_SET_ESCAPES = CLASS_ESCAPES
#: punctuation a backslash makes itself (the parser's identity escapes of ASCII punctuation)
_IDENTITY_ESCAPES = frozenset(
    chr(c) for c in range(0x21, 0x7F) if not chr(c).isalnum() and chr(c) not in "-"
)


def _simple_chain(pattern: str, cap: int) -> list[tuple[CharSet, int, int | None]] | None:
    """``anchored_chain(pattern)`` for a pattern of the subset above; None for any other
    pattern (the caller parses it). O(len(pattern))."""
    n = len(pattern)
    if n < 2 or pattern[0] != "^" or pattern[-1] != "$" or not pattern.isascii():
        return None
    out: list[tuple[CharSet, int, int | None]] = []
    size = 2 + 2 + 2  # the concatenation, ^ and $ (_nfa_size)
    i, end = 1, n - 1
    while i < end:
        c = pattern[i]
        cs: CharSet
        if c == "[":
            got = _simple_class(pattern, i + 1, end)
            if got is None:
                return None
            cs, i = got
        elif c == "\\":
            e = pattern[i + 1]  # i + 1 < n: the pattern ends in "$"
            if e in _SET_ESCAPES:
                cs = _SET_ESCAPES[e]
            elif e in _IDENTITY_ESCAPES and i + 1 < end:
                cs = CharSet(((ord(e), ord(e)),))
            else:
                return None
            i += 2
        elif c == ".":
            cs, i = DOT_CHARS, i + 1
        elif c in _PLAIN_ATOMS:
            cs, i = CharSet(((ord(c), ord(c)),)), i + 1
        else:
            return None
        lo: int
        hi: int | None
        q = pattern[i] if i < end else ""
        if q == "*" or q == "+" or q == "?":
            lo, hi = (0, None) if q == "*" else (1, None) if q == "+" else (0, 1)
            i += 1
        elif q == "{":
            k = pattern.find("}", i, end)
            body = pattern[i + 1 : k] if k > 0 else ""
            a, comma, b = body.partition(",")
            if not a.isdigit() or not (b.isdigit() or b == "") or (b and not comma):
                return None  # the parser reads it otherwise (or refuses it)
            lo, hi = int(a), (int(b) if b else (None if comma else int(a)))
            if hi is not None and hi < lo:
                return None  # refused: the parser says where
            i = k + 1
        else:
            out.append((cs, 1, 1))
            size += 2
            continue
        if i < end and pattern[i] == "?":  # lazy: the same language
            i += 1
        if i < end and pattern[i] in "*+?{":
            return None  # a second quantifier (refused) or a literal "{": the parser decides
        out.append((cs, lo, hi))
        copies = hi if hi is not None else max(lo, 1)
        size += min(2 * copies, cap + 1) + 2
    if size > cap // 2:
        return None  # near the NFA bound: _check_size decides
    return out


def _simple_class(pattern: str, i: int, end: int) -> tuple[CharSet, int] | None:
    """The class whose members start at ``i`` (after ``[``) and the position after its ``]``,
    read as the parser's char_class reads it, for members of printable ASCII and the escapes
    above; None otherwise (a negated or unterminated class, another escape, a range out of
    order or bounded by a set)."""
    if i < end and pattern[i] == "^":
        return None
    acc: list[tuple[int, int]] = []
    while True:
        if i >= end:
            return None  # unterminated (the final "$" is no member): the parser says so
        c = pattern[i]
        if c == "]":
            return CharSet.from_ranges(acc), i + 1
        member = _class_member(pattern, i, end)
        if member is None:
            return None
        a_set, a_cp, i = member
        if i + 1 < end and pattern[i] == "-" and pattern[i + 1] != "]":
            other = _class_member(pattern, i + 1, end)
            if other is None:
                return None
            _, b_cp, i = other
            if a_cp is None or b_cp is None or a_cp > b_cp:
                return None  # refused by the parser
            acc.append((a_cp, b_cp))
        elif a_set is None:
            assert a_cp is not None
            acc.append((a_cp, a_cp))
        else:
            acc.extend(a_set.ranges)


def _class_member(pattern: str, i: int, end: int) -> tuple[CharSet | None, int | None, int] | None:
    """A class member at ``i``: its set (None for one code point), its code point (None for a
    set) and the position after it; None for a member the parser reads otherwise."""
    c = pattern[i]
    if c != "\\":
        return None, ord(c), i + 1
    if i + 1 >= end:
        return None
    e = pattern[i + 1]
    if e in _SET_ESCAPES:
        return _SET_ESCAPES[e], None, i + 2
    if e == "-" or e in _IDENTITY_ESCAPES:
        return None, ord(e), i + 2
    return None


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
