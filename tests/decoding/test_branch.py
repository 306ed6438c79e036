"""Exact choice on finite branches (the ``exact`` mode): where a branch is found, that the
choice follows the alternatives' whole-sequence probabilities, and that budget overruns fall
back to token-by-token and are counted. The toy model (``toy.py``) makes the enumerated
distribution cheap; ``test_exact_mode_on_the_model`` runs the same check on the embedded GGUF."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from tests.decoding.toy import VOCAB, Toy, empirical, exact_distribution, tv
from toolmask.decoding import DecodingParams, choose_opening, opener_tokens, opening_odds
from toolmask.decoding._branch import Alternative, find_branch
from toolmask.decoding._scoring import LazyBranch, ScoredBranch, score_branch
from toolmask.errors import ToolmaskError
from toolmask.models import TEST_MODEL
from toolmask.sampling import SamplingParams

CITIES = ["Paris", "London", "Lima", "Lyon"]


def _branch(schema: object, *, max_alternatives: int = 64, after: bytes = b"", **kw: object):
    m = tm.compile(tm.Grammar.from_json_schema(schema, **kw)).matcher()
    assert m.accept_bytes(after)
    return find_branch(m.automaton, m.state, max_alternatives=max_alternatives)


def test_an_enum_is_one_branch_of_whole_strings() -> None:
    br = _branch({"enum": CITIES})
    assert br.alternatives is not None and not br.over_budget
    assert sorted(a.text for a in br.alternatives) == sorted(f'"{c}"'.encode() for c in CITIES)
    assert not any(a.end for a in br.alternatives)


def test_a_small_finite_object_is_chosen_jointly() -> None:
    schema = {
        "type": "object",
        "properties": {"u": {"enum": ["c", "f"]}, "b": {"type": "boolean"}},
        "required": ["u", "b"],
        "additionalProperties": False,
    }
    br = _branch(schema, whitespace="spaced")
    assert br.alternatives is not None
    assert sorted(a.text for a in br.alternatives) == sorted(
        f'{{"u": "{u}", "b": {b}}}'.encode() for u in "cf" for b in ("true", "false")
    )
    # over a budget of 3 the joint choice does not fit: the first field alone is the branch,
    # running on through the text forced after it
    br = _branch(schema, whitespace="spaced", max_alternatives=3)
    assert br.alternatives is not None
    assert sorted(a.text for a in br.alternatives) == [b'{"u": "c", "b": ', b'{"u": "f", "b": ']


def test_null_against_a_value_and_open_text() -> None:
    schema = {"type": "object", "properties": {"s": {"type": ["string", "null"]}}}
    br = _branch(schema, after=b'{"s":')
    assert br.alternatives is not None
    assert sorted(a.text for a in br.alternatives) == [b'"', b"null"]
    inside = _branch({"type": "string"}, after=b'"ab')  # free text: masking decides
    assert inside.alternatives is None and not inside.over_budget


def test_the_end_is_an_alternative_where_the_grammar_may_stop() -> None:
    m = tm.compile(tm.Grammar.from_gbnf('root ::= "ab" "cde"?')).matcher()
    br = find_branch(m.automaton, m.state, max_alternatives=8)
    assert br.alternatives is not None
    assert sorted((a.text, a.end) for a in br.alternatives) == [(b"ab", True), (b"abcde", False)]
    # single bytes and the end: what a masked step (with end_on_exit) decides already
    br = _branch({"type": "integer", "minimum": 1, "maximum": 12}, after=b"1")
    assert br.alternatives is None and not br.over_budget


def test_over_the_budget_is_reported() -> None:
    br = _branch({"enum": [f"v{i:03d}x" for i in range(100)]}, max_alternatives=8)
    assert br.alternatives is None and br.over_budget


def test_exact_choice_scores_whole_sequences() -> None:
    model = Toy(seed=1)
    compiled = tm.compile(tm.Grammar.from_json_schema({"enum": CITIES}), VOCAB)
    prompt = model.tokenize("Q:")
    m = compiled.matcher()
    br = find_branch(m.automaton, m.state, max_alternatives=64)
    assert br.alternatives is not None
    model.sync_prompt(prompt)
    scored = score_branch(
        br.alternatives,
        m=m,
        vocab=VOCAB,
        encode=model.encode,
        logits_many=model.logits_many,
        context=prompt,
        row=np.array(model.logits()),
        max_tokens=512,
    )
    assert scored is not None and m.n_accepted == 0
    # each score is the canonical tokenisation's log-probability under the model
    for alt, ids, score in zip(scored.alternatives, scored.seqs, scored.scores, strict=True):
        assert ids == model.encode(alt.text.decode())
        want = 0.0
        for k, t in enumerate(ids):
            row = model.row(tuple(prompt) + tuple(ids[:k])).astype(np.float64)
            want += float(row[t] - (row.max() + np.log(np.exp(row - row.max()).sum())))
        assert math.isclose(score, want, abs_tol=1e-6)
    canonical = exact_distribution(model, prompt, compiled, canonical=True)
    probs = np.exp(scored.scores - scored.log_total)
    for alt, p in zip(scored.alternatives, probs, strict=True):
        assert math.isclose(p, canonical.get(alt.text, 0.0), abs_tol=1e-6)  # float32 exp


@pytest.mark.parametrize("seed", [1, 2])
def test_exact_mode_samples_the_enumerated_distribution(seed: int) -> None:
    model = Toy(seed=seed)
    compiled = tm.compile(tm.Grammar.from_json_schema({"enum": CITIES}), VOCAB)
    prompt = model.tokenize("Q:")
    target = exact_distribution(model, prompt, compiled, canonical=True)
    n = 600
    texts = []
    for i in range(n):
        gen = model.generate(prompt, compiled, sampling=SamplingParams(seed=i), decoding="exact")
        assert gen.exact_branches == 1 and gen.branch_fallbacks == 0
        texts.append(gen.text)
    plain = [
        model.generate(prompt, compiled, sampling=SamplingParams(seed=i)).text for i in range(n)
    ]
    # an exact sampler's TV at n=600 over 4 outcomes is about 0.02; plain masking is far off
    assert tv(empirical(texts), target) < 0.06
    assert tv(empirical(plain), target) > 2 * tv(empirical(texts), target)
    greedy = model.generate(prompt, compiled, sampling="exact")
    assert greedy.text == greedy_descent(target, model.encode)


def greedy_descent(target: dict[bytes, float], encode: Any) -> bytes:
    """Greedy decoding of a distribution over strings, token by token (canonical tokens): at
    each position the token whose strings hold the most mass together."""
    live = {s: encode(s.decode()) for s in target}
    k = 0
    while len(live) > 1:
        groups: dict[Any, list[bytes]] = {}
        for s, ids in live.items():
            groups.setdefault(ids[k] if k < len(ids) else ("end", s), []).append(s)
        best = max(groups.values(), key=lambda g: sum(target[s] for s in g))
        live = {s: live[s] for s in best}
        k += 1
    return next(iter(live))


def test_greedy_takes_the_token_with_the_most_valid_mass_not_the_best_alternative() -> None:
    """Temperature 0 in a branch: "another key" spread over two keys (0.3 + 0.3) beats the
    object's close (0.4), though the close is the single most likely alternative."""
    alts = (Alternative(b', "a": '), Alternative(b', "b": '), Alternative(b"}", end=True))
    seqs = [[5, 6], [5, 7], [8]]
    scores = np.log(np.array([0.3, 0.3, 0.4]))
    last = [(np.array([6]), np.zeros(1)), (np.array([7]), np.zeros(1)), (np.zeros(0), np.zeros(0))]
    br = ScoredBranch(alts, seqs, scores, 1, 3, last)
    assert int(np.argmax(scores)) == 2 and br.greedy() == 0  # ties to the earlier key
    assert br.draw(0.0, lambda: 0.5).tokens == [5, 6]
    alone = ScoredBranch(alts[1:], seqs[1:], np.log(np.array([0.3, 0.4])), 1, 2, last[1:])
    assert alone.greedy() == 1  # without the second key, the close
    # an alternative that ends where others go on counts on its own
    pre = ScoredBranch(alts[:2], [[5], [5, 7]], np.log(np.array([0.5, 0.2])), 1, 2, last[:2])
    assert pre.greedy() == 0


#: grammars whose first state opens a branch on the toy vocabulary: an enum, a small object
#: with optional keys, whitespace runs before a closing tag (most of them all but ruled out
#: at their first token), and an end against going on
LAZY_GRAMMARS = [
    tm.Grammar.from_json_schema({"enum": CITIES}),
    tm.Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "boolean"}, "b": {"const": 1}, "c": {"type": "null"}},
            "additionalProperties": False,
        },
        whitespace="compact",
    ),
    tm.Grammar.from_gbnf('root ::= [ .,]? [ .,]? [ .,]? "</x>"'),
    tm.Grammar.from_gbnf('root ::= "ab" ("cde" | "cx")?'),
]


def _both(model: Toy, grammar: tm.Grammar) -> tuple[ScoredBranch, Any]:
    """The fully scored branch at the grammar's start, and a factory of lazy ones."""
    compiled = tm.compile(grammar, VOCAB)
    prompt = model.tokenize("Q:")
    m = compiled.matcher()
    br = find_branch(m.automaton, m.state, max_alternatives=128)
    assert br.alternatives is not None
    model.sync_prompt(prompt)
    row = np.array(model.logits())
    kw: dict[str, Any] = dict(
        m=m, vocab=VOCAB, encode=model.encode, logits_many=model.logits_many, context=prompt
    )
    scored = score_branch(br.alternatives, row=row, max_tokens=512, **kw)
    assert scored is not None

    def lazy(max_tokens: int = 512) -> LazyBranch:
        got = LazyBranch.build(br.alternatives, row=row, max_tokens=max_tokens, **kw)
        assert got is not None
        return got

    return scored, lazy


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("g", range(len(LAZY_GRAMMARS)))
def test_lazy_greedy_takes_what_the_fully_scored_branch_takes(seed: int, g: int) -> None:
    scored, lazy = _both(Toy(seed=seed), LAZY_GRAMMARS[g])
    one = lazy()
    dec = one.draw(0.0, lambda: 0.5)
    assert dec is not None and dec.index == scored.greedy()
    assert dec == scored.draw(0.0, lambda: 0.5)
    assert one.evaluated <= sum(len(s) for s in scored.seqs)


@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("g", range(len(LAZY_GRAMMARS)))
def test_lazy_top_k_is_the_fully_scored_top_k(k: int, seed: int, g: int) -> None:
    """What a beam of width k takes from a branch: the k most probable alternatives, scored
    exactly as the fully scored branch scores them, and every other alternative no more
    probable than the k-th (so none of them could enter the beam)."""
    scored, lazy = _both(Toy(seed=seed), LAZY_GRAMMARS[g])
    one = lazy()
    assert one.evaluate_top(k)
    part = one.scored(partial=True)
    assert part is not None
    known = np.flatnonzero(np.isfinite(part.scores))
    want = np.argsort(-scored.scores, kind="stable")[: min(k, len(scored.scores))]
    assert set(want.tolist()) <= set(known.tolist())
    np.testing.assert_allclose(part.scores[known], scored.scores[known], atol=1e-9)
    kth = np.sort(scored.scores)[::-1][min(k, len(scored.scores)) - 1]
    rest = np.setdiff1d(np.arange(len(scored.scores)), known)
    assert (scored.scores[rest] <= kth + 1e-9).all()
    assert one.evaluated <= 2 * one.trie_nodes
    if rest.size:  # the full view needs every alternative
        with pytest.raises(ValueError):
            one.scored()


@pytest.mark.parametrize("temperature", [1.0, 0.6])
@pytest.mark.parametrize("g", range(len(LAZY_GRAMMARS)))
def test_lazy_sampling_follows_the_fully_scored_distribution(temperature: float, g: int) -> None:
    """Rejection sampling under the bound, then the rest at once after a rejection: each
    draw (a fresh branch, so each pays its own evaluations) follows exp(score / T) over the
    alternatives."""
    scored, lazy = _both(Toy(seed=7), LAZY_GRAMMARS[g])
    z = scored.scores / temperature
    want = np.exp(z - z.max())
    want /= want.sum()
    rng = np.random.default_rng(0)
    # the third grammar (whitespace alternatives before a closing tag) puts 0.999 of the mass
    # on one alternative, so a few hundred draws test it as well as 3,000, at a tenth of the
    # time (each draw pays its own evaluations over 40 alternatives)
    n = 3000 if g < 2 else 300
    counts = np.zeros(len(want))
    for _ in range(n):
        one = lazy()
        dec = one.draw(temperature, rng.random)
        assert dec is not None
        counts[dec.index] += 1
        # a rejection scores the rest at once: never past twice the trie (each call here
        # also counts the toy's one position to come back to the context)
        assert one.evaluated <= 2 * one.trie_nodes + one.passes
    # the TV of an exact sampler at these n over these few outcomes is about 0.01-0.03
    assert 0.5 * np.abs(counts / n - want).sum() < 0.05


class _Tagged(Toy):
    """The toy with a model's habit: it writes the closing tag's bytes, not whitespace."""

    def row(self, seq: tuple[int, ...]) -> np.ndarray:
        out = super().row(seq)
        for b in b"</x>":
            out[VOCAB.token_bytes.index(bytes((b,)))] += 12.0
        return out


def test_lazy_branch_evaluates_what_the_choice_needs() -> None:
    """Whitespace runs before a closing tag (40 alternatives) that the model all but rules
    out at their first token: one path is evaluated, not the trie; an exhausted budget is a
    fallback (None), not a guess."""
    scored, lazy = _both(_Tagged(seed=2), LAZY_GRAMMARS[2])
    assert len(scored.alternatives) == 40
    greedy = lazy()
    dec = greedy.draw(0.0, lambda: 0.5)
    assert dec is not None and scored.alternatives[dec.index].text == b"</x>"
    assert greedy.evaluated < scored.evaluated / 10
    rng = np.random.default_rng(1)
    mean = np.mean([(b := lazy(), b.draw(1.0, rng.random), b.evaluated)[2] for _ in range(200)])
    assert mean < scored.evaluated / 10
    assert lazy(max_tokens=1).draw(0.0, lambda: 0.5) is None


@pytest.mark.parametrize("tagged", [False, True])
@pytest.mark.parametrize("g", range(len(LAZY_GRAMMARS)))
def test_lazy_mass_estimate_is_unbiased(g: int, tagged: bool) -> None:
    """The aligned sampler's weight at a branch: ``log_mass`` estimates the branch's total
    probability without bias from whatever has been evaluated. From a fresh branch (only the
    context's row known, so the estimate really is random) its mean over 2,000 estimates is
    the fully scored total within the sampling error; after a draw (T = 1) it is close, and
    never above the total by more than the bounds of what is left; once every alternative
    is scored it is the total."""
    model = _Tagged(seed=2) if tagged else Toy(seed=5)
    scored, lazy = _both(model, LAZY_GRAMMARS[g])
    total = float(np.exp(scored.log_total))
    rng = np.random.default_rng(g)
    n = 2000 if g < 2 else 500  # the third grammar's draws cost ten times the others'
    logs = [lazy().log_mass(rng.random) for _ in range(n)]
    assert all(x is not None for x in logs)
    fresh = np.exp(np.array(logs, dtype=np.float64))
    # heavy-tailed (one alternative's p / bound scales the rest's bounds); measured: mean
    # within 1.3 standard errors of the total on all 8 cases, standard error up to 10%
    assert abs(fresh.mean() / total - 1) < 4 * fresh.std() / total / np.sqrt(n) + 0.01
    after = []
    for _ in range(n):
        one = lazy()
        assert one.draw(1.0, rng.random) is not None
        left = np.flatnonzero(~one._done)
        slack = float(np.exp(one._bound[left]).sum()) if left.size else 0.0
        log_z = one.log_mass(rng.random)
        assert log_z is not None
        after.append(float(np.exp(log_z)))
        assert after[-1] <= total + slack + 1e-12
    assert abs(np.mean(after) / total - 1) < 0.01
    full = lazy()
    assert full.evaluate_all()
    assert full.log_mass(rng.random) == pytest.approx(scored.log_total, abs=1e-12)


def test_aligned_pays_a_path_not_the_trie_at_a_closing_tag() -> None:
    """Whitespace runs before a closing tag the model writes at once: the aligned sampler
    draws and weighs the branch from a path or two, not the 40 alternatives' trie."""
    model = _Tagged(seed=2)
    compiled = tm.compile(LAZY_GRAMMARS[2], VOCAB)
    prompt = model.tokenize("Q:")
    scored, _ = _both(_Tagged(seed=2), LAZY_GRAMMARS[2])
    params = SamplingParams(temperature=1.0, seed=0)
    aligned = DecodingParams("aligned", particles=4)
    gen = model.generate(prompt, compiled, sampling=params, decoding=aligned)
    assert gen.text == b"</x>" and gen.exact_branches >= 1 and gen.branch_fallbacks == 0
    assert gen.evaluated_tokens - len(prompt) < scored.evaluated / 4


def test_fallbacks_are_counted_and_the_output_stays_valid() -> None:
    model = Toy(seed=3)
    values = ["Lima", "Paris", "Oslo", "Rome", "Bern", "Kyiv", "Minsk", "Dublin", "Sofia"]
    compiled = tm.compile(tm.Grammar.from_json_schema({"enum": values}), VOCAB)
    prompt = model.tokenize("Q:")
    gen = model.generate(
        prompt,
        compiled,
        sampling=SamplingParams(seed=0),
        decoding=DecodingParams("exact", branch_alternatives=4),
    )
    assert gen.branch_fallbacks >= 1
    assert gen.text.decode().strip('"') in values
    # a token budget too small for the trie falls back likewise
    gen = model.generate(
        prompt,
        compiled,
        sampling=SamplingParams(seed=0),
        decoding=DecodingParams("exact", branch_tokens=2),
    )
    assert gen.branch_fallbacks >= 1 and gen.exact_branches == 0
    assert gen.text.decode().strip('"') in values


@pytest.mark.model
def test_exact_mode_on_the_model() -> None:
    """The embedded model, one sequence (so the rows are those of ``score``): the exact
    mode's choice probabilities are the alternatives' sequence probabilities."""
    from toolmask.backends.llama_cpp import LlamaCpp

    model = LlamaCpp(TEST_MODEL, n_ctx=512, max_sequences=1)
    compiled = tm.compile(tm.Grammar.from_json_schema({"enum": CITIES}), model.vocab)
    prompt = model.tokenize(
        "<|im_start|>user\nName a city as a JSON string.<|im_end|>\n<|im_start|>assistant\n"
    )
    m = compiled.matcher()
    br = find_branch(m.automaton, m.state, max_alternatives=64)
    assert br.alternatives is not None
    model.sync_prompt(prompt)
    scored = score_branch(
        br.alternatives,
        m=m,
        vocab=model.vocab,
        encode=model.encode,
        logits_many=model.logits_many,
        context=prompt,
        row=np.array(model.logits()),
        max_tokens=512,
    )
    assert scored is not None
    # the last token of each alternative is the closing quote, which nothing may extend here
    want = model.score(prompt, scored.seqs)
    assert np.allclose(scored.scores, want, atol=1e-4)
    gen = model.generate(prompt, compiled, sampling="exact")
    assert gen.text == scored.alternatives[scored.greedy()].text
    # the batched backend: each alternative the choice needs is one call, a few positions
    batched = LlamaCpp(TEST_MODEL, n_ctx=512)
    gen = batched.generate(prompt, compiled, sampling="exact")
    assert gen.exact_branches == 1 and gen.text.decode().strip('"') in CITIES
    assert gen.forward_passes <= len(CITIES)
    assert gen.evaluated_tokens - len(prompt) <= sum(len(s) for s in scored.seqs)


def test_opening_odds_and_the_choice() -> None:
    model = Toy(seed=4)
    prompt = model.tokenize("Q:")
    opener = model.tokenize('"London"')
    p, other = opening_odds(model, prompt, opener)
    # the last token counts with every token that starts with its text: '"', '"P', '"L', '",'
    rows = [model.row(tuple(prompt) + tuple(opener[:k])).astype(np.float64) for k in range(3)]
    want = 1.0
    for k, row in enumerate(rows):
        probs = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        starts = [i for i, b in enumerate(VOCAB.token_bytes) if b.startswith(b'"')]
        want *= probs[opener[k]] if k < 2 else probs[starts].sum()
    assert len(opener) == 3 and math.isclose(p, want, rel_tol=1e-9)
    # the best first token that does not begin the opener ('"', '"L' and '"' prefixes do)
    first = np.exp(rows[0] - rows[0].max()) / np.exp(rows[0] - rows[0].max()).sum()
    begins = {i for i, b in enumerate(VOCAB.token_bytes) if b and b'"London"'.startswith(b)}
    assert math.isclose(other, max(x for i, x in enumerate(first) if i not in begins))
    with pytest.raises(ValueError, match="temperature 0"):
        choose_opening(0.2, SamplingParams(temperature=0))
    for t in (1.0, 0.2):  # the temperature is in p_call already (opening_odds), not applied again
        draws = [choose_opening(0.3, SamplingParams(temperature=t, seed=i)) for i in range(2000)]
        assert 0.26 < sum(draws) / 2000 < 0.34


def test_opening_odds_temper_each_token() -> None:
    """At temperature T each opener token is counted by ``softmax(logits / T)``, as plain
    decoding draws it; towards 0 the odds go to 1 exactly where greedy decoding opens the call."""
    model = Toy(seed=4)
    prompt = model.tokenize("Q:")
    best: list[int] = []  # the tokens greedy decoding writes: an opener it would open
    for _ in range(3):
        best.append(int(np.argmax(model.row(tuple(prompt) + tuple(best)))))
    seen = set()
    for opener in (model.tokenize('"London"'), model.tokenize("Lima"), best):
        rows = [
            model.row(tuple(prompt) + tuple(opener[:k])).astype(np.float64)
            for k in range(len(opener))
        ]
        last = [
            i
            for i, b in enumerate(VOCAB.token_bytes)
            if b.startswith(VOCAB.token_bytes[opener[-1]])
        ]
        for temperature in (0.5, 2.0):
            want = 1.0
            for k, row in enumerate(rows):
                z = row / temperature
                probs = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
                want *= probs[opener[k]] if k < len(opener) - 1 else probs[last].sum()
            p, other = opening_odds(model, prompt, opener, temperature=temperature)
            assert math.isclose(p, want, rel_tol=1e-9) and 0 < other < 1
        greedy = all(
            int(np.argmax(row)) == opener[k] if k < len(opener) - 1 else int(np.argmax(row)) in last
            for k, row in enumerate(rows)
        )
        cold, _ = opening_odds(model, prompt, opener, temperature=0.01)
        assert (cold > 0.99) if greedy else (cold < 0.01)
        seen.add(greedy)
    assert seen == {True, False}
    with pytest.raises(ToolmaskError, match="temperature"):
        opening_odds(model, prompt, model.tokenize("Lima"), temperature=0)


def test_prose_first_excludes_the_opener_at_the_first_token_only() -> None:
    """The exact mode's "prose first" under auto: the opener's tokens are excluded at the first
    token, which is drawn from the rest by the model's probability (renormalised); after it
    the grammar allows what it allows (the opener's text may follow)."""
    model = Toy(seed=7)
    prompt = model.tokenize("Q:")
    opener = model.tokenize('"London"')
    ex = opener_tokens(VOCAB, opener)
    begins = {i for i, b in enumerate(VOCAB.token_bytes) if b and b'"London"'.startswith(b)}
    assert (
        set(np.flatnonzero(ex).tolist())
        == begins | {opener[0]}
        == {VOCAB.token_bytes.index(b'"'), VOCAB.token_bytes.index(b'"L')}
    )
    free = tm.compile(tm.Grammar.from_regex(r'("London"|London|Lima)( "London")?'), VOCAB)
    allowed = []
    for t in range(VOCAB.vocab_size):
        m = free.matcher()
        if not ex[t] and t != 0 and m.accept_token(t):
            allowed.append(t)
    assert allowed and len(allowed) < 4  # 'L', 'Lon' (not '"', '"L')
    row = model.row(tuple(prompt)).astype(np.float64)
    probs = np.exp(row[allowed] - row[allowed].max())
    want = dict(zip(allowed, probs / probs.sum(), strict=True))
    greedy = model.generate(prompt, free, exclude_first=ex)
    assert greedy.tokens[0] == max(allowed, key=lambda t: row[t])
    n = 1500
    firsts = Counter(
        model.generate(prompt, free, sampling=SamplingParams(seed=i), exclude_first=ex).tokens[0]
        for i in range(n)
    )
    assert set(firsts) <= set(allowed)
    assert sum(abs(firsts[t] / n - q) for t, q in want.items()) / 2 < 0.05
    # only the first token: the opener's text may follow
    then = tm.compile(tm.Grammar.from_regex(r'(London|Lima) "London"'), VOCAB)
    assert model.generate(prompt, then, exclude_first=ex).text.endswith(b' "London"')
    with pytest.raises(ToolmaskError, match="exclude_first"):
        model.generate(prompt, free, sampling="aligned", exclude_first=ex)


@pytest.mark.model
def test_the_decoding_modes_on_a_lazy_turn_are_the_eager_turns() -> None:
    """A turn over more tools than LAZY_MIN_TOOLS compiles each tool's arguments when a reply
    enters them: every decoding mode gives the same reply on it as on the eager turn (the
    embedded model, greedy; ``aligned`` was checked the same way by hand, it takes minutes)."""
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.tools import LazyTurnGrammar, ToolTurn

    model = LlamaCpp(TEST_MODEL, n_ctx=2048)
    enum = {"type": "string", "enum": ["Paris", "London", "Lima"]}
    params = {
        "type": "object",
        "properties": {"city": enum, "metric": {"type": "boolean"}},
        "required": ["city", "metric"],
        "additionalProperties": False,
    }
    names = ["get_weather", "get_time", "get_news", "book_hotel", "find_flight"]
    tools = [{"name": f"{n}_{i}", "parameters": params} for i in range(8) for n in names]
    special = frozenset(model.vocab.special.values())
    turn = ToolTurn(tools, "hermes", "required", parallel_tool_calls=False, special_tokens=special)
    lazy = turn.compile(model.vocab, lazy=True)
    eager = turn.compile(model.vocab, lazy=False)
    assert isinstance(lazy, LazyTurnGrammar)
    prompt = model.tokenize(
        "<|im_start|>user\nWhat is the weather in Lima, in metric units?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    for mode in ("plain", "exact"):  # aligned too, by hand (about 3 minutes on 2 cores)
        a = model.generate(prompt, lazy, sampling=mode, max_tokens=60)
        b = model.generate(prompt, eager, sampling=mode, max_tokens=60)
        assert a.text == b.text, mode
        assert eager.matcher().accept_bytes(a.text), mode
