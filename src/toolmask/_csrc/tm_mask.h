/* Token masks: what each position decides on its own, cached per position; the stack only for
 * the tokens that reach past it.
 *
 * A state is a set of stacks base + (p,). For a position p, the *local* state L_p is the
 * single stack (p,) read as if p's frame were the whole document: a token's fate inside the
 * frame (it stays in it: allowed; it dies in it: refused) does not depend on the base, and
 * the only tokens that need the base are those that pass a point where the frame can return
 * ("escapes": trie nodes where the local state is accepting). So per position, once per
 * (automaton, vocabulary), shared by every stack and every matcher:
 *
 *   local(p) = (tokens alive inside the frame: shared run bitmasks + walked ids,
 *               escape nodes, the deepest and widest local state seen)
 *
 * and the mask of a state is the union over its stacks of local(top) plus, for each escape
 * node, the tokens that end there (when the base can continue) and the subtree below it walked
 * from the state after the frame returns. When the caps could act differently on the whole
 * state than on its parts (a base plus local depth past max_stack_depth, or more stacks than
 * max_stacks in a union), the state's mask is computed by the exact walk instead. Caps aside,
 * the union is exact because advancing a set of stacks is the union of advancing each.
 *
 * Inside a frame, where first characters lead into a run (a string body: the same next state
 * for many ASCII bytes and every UTF-8 character), the tokens that stay in the run are one
 * shared bitmask per (vocabulary, run class, first characters, remaining length), and only the
 * tokens that leave the run are walked, from the state where they leave (see tm_vocab.h and
 * docs/masks.md).
 *
 * This file holds the types, the cache's upkeep, the trie walks and the runs; tm_compose.h
 * computes local(p) and the states' masks.
 */
#ifndef TM_MASK_H
#define TM_MASK_H

#include <stdio.h>

typedef struct {
    const Trie *trie;
    int32_t node;
    uint8_t has_sel;
    uint64_t sel[2];
    uint8_t sel_mb;
    const int32_t *excl; /* ids left out (the position's, sorted: a run's exceptions), or NULL */
    int32_t nexcl;
} Esc;
typedef VEC(Esc) EscVec;

#define MAX_RUNS 4

/* a run whose frame can return inside it (some chain states accept): resolved per stack, since
 * what follows the return depends on the base */
typedef struct {
    RunKey key;
    uint64_t firsts[2];
    uint8_t mb, infinite;
    int32_t nchain;
    uint32_t accmask; /* bit j: chain[j] accepts (j <= CHAIN_CAP) */
} RunEsc;
/* a short run is walked instead of tabled when the walk visits fewer trie nodes than this */
#define WALK_BUDGET 4096
/* bytes a walk may follow past a run's exit when estimating it */
#define WALK_SLACK 3

typedef struct {
    uint8_t ok, nbase, nexit;
    BaseMask *bases[MAX_RUNS];
    ExitTries *exits[MAX_RUNS];
    int32_t *ids; /* walked tokens, or NULL when they are in dense */
    int32_t nids;
    uint32_t *dense; /* walked tokens as a bitmask, when that is smaller than the id list */
    Esc *esc;
    int32_t nesc;
    int32_t *excl; /* the tokens a run's exit walk left to its exceptions (sorted; held by esc) */
    int32_t nexcl;
    RunEsc *resc;
    int32_t nresc;
    int32_t maxdepth, maxstacks;
} PosLocal;

typedef struct {
    int32_t *parts; /* positions */
    int32_t nparts;
    int32_t *ids;
    int32_t nids;
    uint32_t *dense; /* the exact walk's mask, when the parts could not be used */
    uint8_t flags;   /* ROW_ACCEPTING, ROW_FINISHED: what a batch fill reports per row */
} StRep;

#define ROW_ACCEPTING 1
#define ROW_FINISHED 2

typedef struct {
    Auto *au;
    Vocab *v;
    int64_t epoch;
    PosLocal *pl;
    int32_t npl;
    StRep **reps;
    int32_t nreps;
    IVec *spec_ids; /* per special text id: token ids */
    int32_t nspec;
    int32_t *eos;
    int32_t neos;
    int64_t bytes, max_bytes;
    int64_t hits, misses, local_misses, exact_walks, nodes, bulk_nodes;
    int64_t counted_runs; /* truncated chains whose long tokens were decided by count */
    int64_t exc_merged;   /* groups of first characters merged into a run as its exceptions */
    int64_t exc_tokens;   /* tokens left out of such a run's exit walk, walked from their prefix */
    int64_t cnt_moves;    /* walk nodes whose state a state at a lower copy stood for */
    /* (state, run class) -> _step result */
    IMap step;
    /* (state, copies) -> the state moved on so many copies (mc_shift_state) */
    IMap shifted;
    VEC(RunKey) runkeys;
    int32_t *wst; /* walk stack of states per depth */
    int32_t wst_cap;
} MaskCache;

static void pl_clear(MaskCache *mc, PosLocal *pl) {
    if (pl->nbase || pl->nexit) vocab_release(mc->v, pl->bases, pl->nbase, pl->exits, pl->nexit, 0);
    free(pl->ids);
    free(pl->dense);
    free(pl->esc);
    free(pl->excl);
    free(pl->resc);
    memset(pl, 0, sizeof(*pl));
    (void)mc;
}

static void rep_free(StRep *r) {
    if (!r) return;
    free(r->parts);
    free(r->ids);
    free(r->dense);
    free(r);
}

static void mc_clear_reps(MaskCache *mc) {
    for (int32_t i = 0; i < mc->nreps; i++) {
        rep_free(mc->reps[i]);
        mc->reps[i] = NULL;
    }
    imap_free(&mc->step);
    imap_free(&mc->shifted);
    mc->runkeys.n = 0;
}

static void mc_clear_all(MaskCache *mc) {
    mc_clear_reps(mc);
    for (int32_t i = 0; i < mc->npl; i++) pl_clear(mc, &mc->pl[i]);
    mc->bytes = 0;
    vocab_release(mc->v, NULL, 0, NULL, 0, 1); /* trim what no mask holds any more */
}

static void mc_free(MaskCache *mc) {
    mc_clear_all(mc);
    free(mc->pl);
    free(mc->reps);
    if (mc->spec_ids)
        for (int32_t i = 0; i < mc->nspec; i++) VFREE(mc->spec_ids[i]);
    free(mc->spec_ids);
    free(mc->eos);
    VFREE(mc->runkeys);
    free(mc->wst);
}

static void mc_sync(MaskCache *mc) {
    if (mc->epoch != mc->au->epoch) {
        mc_clear_reps(mc);
        mc->epoch = mc->au->epoch;
    }
}

/* the walk's stack: per depth, a state, the character a walk is inside of and the copies a
 * counted state is moved on (walk_range) */
static int32_t *mc_wst(MaskCache *mc, int32_t need) {
    if (need > mc->wst_cap) {
        mc->wst = tm_xrealloc(mc->wst, (size_t)need * 3 * sizeof(int32_t));
        mc->wst_cap = need;
    }
    return mc->wst;
}

/* ---- walking a trie with the automaton -------------------------------------------------- */

/* subtrees smaller than this are walked node by node even below a looping state */
#define BULK_MIN 4
/* first characters with fewer trie nodes than this that lead into a loop within one
 * character are walked (most of it in bulk) rather than given run tables of their own */
#define BULK_WALK_NODES 32768
/* ... and whose run holds at least this many ASCII bytes (nearly every printable one: a
 * string body less a few letters), so that nearly every subtree below is taken in bulk */
#define BULK_WALK_RUN 88

static int32_t mc_utf8_target(MaskCache *mc, int32_t s);

/* the state every complete multi-byte character leads s to when it is known from the
 * positions' targets alone (au_utf8_fast: s's high-byte edges are exactly those of recognised
 * UTF-8 choices, through positions inside the character that are neither final nor calling),
 * else -1. Never follows the characters byte by byte (that would build the positions inside
 * them). Memoised with mc_utf8_target. */
static int32_t mc_utf8_virtual(MaskCache *mc, int32_t s) {
    St *S = &mc->au->st.a[s];
    if (S->utf8_tgt != -3) return S->utf8_fast && S->utf8_tgt >= 0 ? S->utf8_tgt : -1;
    int32_t fast = au_utf8_fast(mc->au, s);
    if (fast == U8_SLOW) return -1;
    S = &mc->au->st.a[s]; /* au_utf8_fast may grow the state table */
    S->utf8_tgt = fast;
    S->utf8_fast = 1;
    return fast >= 0 ? fast : -1;
}

/* the state's allowed bytes (au_allowed_bytes), without building the positions inside
 * multi-byte characters where its characters are known to lead to one state
 * (mc_utf8_virtual): its high-byte edges are then the lead bytes of recognised UTF-8
 * choices, each alive (the position after it is neither final nor calling, and no deeper) */
static M256 mc_allowed_bytes(MaskCache *mc, int32_t s) {
    Auto *au = mc->au;
    if (au->st.a[s].allowed_ok) return au->st.a[s].allowed;
    M256 high = m_and(au->st.a[s].umask, M_HIGH);
    if (m_zero(&high) || au->dfa_broken || mc_utf8_virtual(mc, s) < 0) return au_allowed_bytes(au, s);
    M256 allowed = high, todo = m_and(au->st.a[s].umask, M_ASCII);
    while (!m_zero(&todo)) {
        int b = m_low(&todo);
        M256 atom = m_and(au_atom(au, s, b), todo);
        if (au_advance(au, s, b) != TR_DEAD) allowed = m_or(allowed, atom);
        todo = m_andnot(todo, atom);
    }
    St *S = &au->st.a[s];
    S->allowed = allowed;
    S->allowed_ok = 1;
    return allowed;
}

/* ---- counted repetitions walked by count ----------------------------------------------------
 *
 * Inside a counted repetition of one byte class (an email's domain label,
 * [-0-9A-Za-z]{0,61}), a state holds copy state k of the repetition (k items read) and
 * states outside it; while lo <= k <= hi - 1 every copy state has the same edges (the next
 * item, the way out), so the state at copy k + j is the one at copy k with its copy state
 * moved j on, and every byte leads them to states that differ the same way. A walk then keeps,
 * per depth, a state at a low copy and a shift (walk_range): a long token of the class (96
 * dashes) builds the states of a copy or two, not one per character; the state itself is
 * built only where the shifted copy would leave that range (mc_shift_state). */

/* classify s (memoised): its one copy state of a counted repetition of a class, if any */
static void mc_cnt(MaskCache *mc, int32_t s) {
    Auto *au = mc->au;
    const St *S = &au->st.a[s];
    if (S->cnt_rep != -3) return;
    int32_t rep = -1, kk = 0, n = 0, pos = -1;
    const int32_t *stk = st_stacks(au, S);
    for (int32_t i = 0; i < S->nstk; i++) {
        SNode x = au->sn.a[stk[i]];
        int32_t nk;
        const int32_t *kern = arrset_get(&au->kernels, x.pos, &nk);
        for (int32_t j = 0; j < nk; j++) {
            int64_t k1;
            const RepCopies *rc = nfa_copy_of(au, kern[j], &k1);
            if (!rc || !rc->cls) continue;
            n++;
            rep = (int32_t)(rc - au->reps.a);
            kk = (int32_t)k1;
            pos = x.parent < 0 && S->nstk == 1 ? x.pos : -1;
        }
    }
    uint64_t sig = 0;
    if (n > 1 || (n == 1 && pos < 0)) {
        rep = -2;
    } else if (n == 1) { /* the kernel less the copy state, and the flag */
        int32_t nk;
        const int32_t *kern = arrset_get(&au->kernels, pos, &nk);
        int32_t e = au->reps.a[rep].copy1 + kk - 1;
        sig = 0x9e3779b97f4a7c15ULL * (uint64_t)(S->accepting + 1);
        for (int32_t j = 0; j < nk; j++)
            if (kern[j] != e) sig = tm_mix64(sig ^ (uint64_t)(uint32_t)kern[j]);
    }
    St *W = &au->st.a[s];
    W->cnt_rep = rep;
    W->cnt_k = kk;
    W->cnt_sig = sig;
    W->cnt_room = rep >= 0 && kk >= au->reps.a[rep].lo ? (int32_t)(au->reps.a[rep].hi - 1 - kk) : -1;
}

/* is n the state p moved one copy on (both classified by mc_cnt, in one repetition): the same
 * flag and the same kernel but for the copy state (the hashes first, then the kernels) */
static int mc_cnt_next(const Auto *au, const St *P, const St *N) {
    if (N->cnt_rep != P->cnt_rep || N->cnt_k != P->cnt_k + 1 || N->cnt_sig != P->cnt_sig ||
        N->accepting != P->accepting)
        return 0;
    int32_t np, nn;
    const int32_t *kp = arrset_get(&au->kernels, au->sn.a[st_stacks(au, P)[0]].pos, &np);
    const int32_t *kn = arrset_get(&au->kernels, au->sn.a[st_stacks(au, N)[0]].pos, &nn);
    if (np != nn) return 0;
    int32_t e = au->reps.a[P->cnt_rep].copy1 + P->cnt_k - 1;
    for (int32_t a = 0, b = 0; a < np || b < nn;) {
        if (a < np && kp[a] == e) {
            a++;
            continue;
        }
        if (b < nn && kn[b] == e + 1) {
            b++;
            continue;
        }
        if (a >= np || b >= nn || kp[a] != kn[b]) return 0;
        a++;
        b++;
    }
    return 1;
}

/* may a walk stand for s at copy cnt_k + j (j >= 0) by s: one frame, its copy in the range
 * where copies alike (lo <= k, k + j <= hi - 1) */
static inline int mc_cnt_room(const St *S, int64_t j) { return S->cnt_rep >= 0 && j <= S->cnt_room; }

/* the state s (one frame, one copy state: mc_cnt) with its copy state moved j copies on, built;
 * TR_DEAD on a cap */
static int32_t mc_shift_state(MaskCache *mc, int32_t s, int32_t j) {
    Auto *au = mc->au;
    uint64_t memo = ((uint64_t)(uint32_t)s << 24) | (uint64_t)(uint32_t)j;
    int32_t known = imap_get(&mc->shifted, memo, -3);
    if (known != -3) return known;
    const St *S = &au->st.a[s];
    const RepCopies *rc = &au->reps.a[S->cnt_rep];
    int32_t e = rc->copy1 + S->cnt_k - 1, pos = au->sn.a[st_stacks(au, S)[0]].pos, nk;
    const int32_t *kern = arrset_get(&au->kernels, pos, &nk);
    IVec key = {0};
    for (int32_t x = 0; x < nk; x++) VPUSH(key, kern[x] == e ? e + j : kern[x]);
    key.n = sort_unique(key.a, key.n);
    int32_t q = dfa_pos_of(au, key.a, key.n), out = TR_DEAD;
    VFREE(key);
    if (q >= 0) {
        IVec set = {0};
        au_set_begin(au);
        int r = au_close(au, -1, q, &set);
        if (r >= 0 && (set.n || r) && set.n <= au->lim.max_stacks) out = au_make(au, &set, r);
        VFREE(set);
    }
    if (out >= 0) imap_put(&mc->shifted, memo, out);
    return out;
}

/* walk_range's code for "inside a multi-byte character of UTF8_RANGES row r, k bytes read"
 * (0: not inside one) */
#define VCH(r, k) (1 + (r) * 4 + (k))

/* every complete multi-byte character leads s back to s, through positions inside the
 * character that are neither final nor calling (the fast path of the UTF-8 target: a
 * string's character choice), so a token below a node in state s that is a prefix of
 * well-formed UTF-8 is alive */
static int mc_utf8_loops(MaskCache *mc, int32_t s) {
    return mc_utf8_target(mc, s) == s && mc->au->st.a[s].utf8_fast;
}

typedef struct {
    IVec *ids;
    EscVec *esc; /* LOCAL mode: escapes are recorded here */
    int has_sel;
    uint64_t sel[2];
    uint8_t sel_mb;
    uint8_t counted; /* stand for states at high copies by states at low ones (walk_counted) */
    int32_t maxdepth, maxstacks;
} WalkOut;

static int in_sorted(const int32_t *a, int32_t n, int32_t x) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = (lo + hi) >> 1;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == x;
}

/* drop from ids[from..] the ids of excl (sorted) */
static void drop_excluded(IVec *ids, int32_t from, const int32_t *excl, int32_t nexcl) {
    if (!nexcl) return;
    int32_t w = from;
    for (int32_t j = from; j < ids->n; j++)
        if (!in_sorted(excl, nexcl, ids->a[j])) ids->a[w++] = ids->a[j];
    ids->n = w;
}

static inline void wo_note(WalkOut *o, const St *S) {
    if (S->maxdepth > o->maxdepth) o->maxdepth = S->maxdepth;
    if (S->nstk > o->maxstacks) o->maxstacks = S->nstk;
}

static inline void add_ids(const Vocab *v, const Trie *t, int32_t node, WalkOut *o) {
    const int32_t *e = t->end_ids.a + t->ends[node];
    int32_t k = e[0];
    for (int32_t j = 1; j <= k; j++) {
        int32_t id = e[j];
        if (o->has_sel && !sel_has(o->sel, o->sel_mb, v->first_cls[id])) continue;
        VPUSH(*o->ids, id);
    }
}

/* walk_counted where the copies would leave the range where they are alike: prev built moved
 * sh copies on (0 returned, *prev and *nx its own), or -1 */
static int32_t walk_built(MaskCache *mc, int32_t *prev, int32_t *nx, int32_t sh, int b) {
    if (!sh) return 0;
    int32_t built = mc_shift_state(mc, *prev, sh);
    if (built < 0) return -1;
    *prev = built;
    *nx = au_advance(mc->au, built, b);
    return *nx < 0 ? -1 : 0;
}

/* walk_range's counted step (see "counted repetitions walked by count"): from prev, standing
 * for its state moved sh copies on, byte b leads by prev's transition to nx; returns how many
 * copies the node's state is moved on from the state standing for it (prev when more than sh,
 * else nx), or -1 (dead). Where the copies would leave the range where they are alike, prev is
 * built moved (*prev, *nx updated) and 0 returned. */
static int32_t walk_counted(MaskCache *mc, int32_t *prev, int32_t *nx, int32_t sh, int b) {
    Auto *au = mc->au;
    mc_cnt(mc, *prev);
    if (au->st.a[*prev].cnt_rep < 0 && !sh) return 0;
    if (*nx == au->st.a[*prev].cnt_next) return walk_built(mc, prev, nx, sh, b); /* past the range */
    mc_cnt(mc, *nx);
    St *P = &au->st.a[*prev];
    const St *N = &au->st.a[*nx];
    if (sh && N->cnt_rep != P->cnt_rep && N->cnt_rep != -2) return 0; /* out of the repetition */
    if (P->cnt_rep >= 0 && mc_cnt_next(au, P, N)) {
        P->cnt_next = *nx;
        if (mc_cnt_room(P, sh + 1)) return sh + 1;
    }
    if (!sh) return 0;
    if (N->cnt_rep == P->cnt_rep && mc_cnt_room(N, sh)) return sh;
    return walk_built(mc, prev, nx, sh, b);
}

/* the end of node i's subtree when its state nx loops on every byte below it (a string body, a
 * key's rest, a pattern's repeated class: every token below stays in it, alive), else -1. Not
 * when it accepts in LOCAL mode (each node would be an escape). */
static int32_t bulk_end(MaskCache *mc, const Trie *t, int32_t i, int32_t nx, int local) {
    Auto *au = mc->au;
    const St *S = &au->st.a[nx];
    const uint64_t *sub = t->sub ? t->sub + 2 * (size_t)i : NULL;
    uint8_t subf = sub ? t->subf[i] : SUB_BAD;
    if (!sub || t->skip[i] - i <= BULK_MIN || (subf & SUB_BAD) || (local && S->accepting) ||
        (sub[0] & ~S->umask.w[0]) || (sub[1] & ~S->umask.w[1]))
        return -1;
    /* a quick test first: an ASCII byte below i loops (not a high byte, whose transition
     * would build a position inside a character) */
    int probe = t->byte[i + 1] < 0x80 ? t->byte[i + 1] : sub[0] ? __builtin_ctzll(sub[0]) : sub[1] ? 64 + __builtin_ctzll(sub[1]) : -1;
    if (probe >= 0 && au_advance(au, nx, probe) != nx) return -1;
    const uint64_t *loop = st_loop_set(au, nx);
    if ((sub[0] & ~loop[0]) || (sub[1] & ~loop[1]) || ((subf & SUB_HIGH) && !mc_utf8_loops(mc, nx))) return -1;
    return t->skip[i];
}

static void push_esc(WalkOut *o, const Trie *t, int32_t node) {
    Esc e;
    e.trie = t;
    e.node = node;
    e.has_sel = (uint8_t)o->has_sel;
    e.sel[0] = o->sel[0];
    e.sel[1] = o->sel[1];
    e.sel_mb = o->sel_mb;
    e.excl = NULL;
    e.nexcl = 0;
    VPUSH(*o->esc, e);
}

/* walk nodes [lo, hi) of t whose parent (at depth d0) is in state root; LOCAL: a token counts
 * when some stack survives it and escapes are recorded; EXACT: a token counts when alive */
static void walk_range(MaskCache *mc, int32_t root, int32_t d0, const Trie *t, int32_t lo, int32_t hi,
                       int local, WalkOut *o) {
    Auto *au = mc->au;
    const Vocab *v = mc->v;
    int32_t *st = mc_wst(mc, t->max_depth + 2);
    /* per depth: inside a multi-byte character whose state after it is st[d] (VCH), or 0.
     * Where a state's characters are known to lead to one state (mc_utf8_virtual), a token
     * byte that would build a position inside a character (the automaton's transition not
     * memoised yet) is checked against the UTF-8 ranges instead: a well-formed prefix is
     * alive and neither accepting nor deeper than the state before it, a complete character
     * leads to that state, anything else is dead. */
    int32_t *vch = st + mc->wst_cap;
    /* per depth: the state is st[d] moved vsh[d] copies on (walk_counted) */
    int32_t *vsh = vch + mc->wst_cap;
    st[d0] = root;
    vch[d0] = 0;
    vsh[d0] = 0;
    const uint8_t *byte = t->byte;
    const uint16_t *depth = t->depth;
    const int32_t *skip = t->skip, *ends = t->ends;
    int32_t i = lo;
    int64_t visited = 0, bulk = 0;
    while (i < hi) {
        visited++;
        int32_t d = depth[i];
        int32_t prev = st[d - 1], sh = vsh[d - 1], nsh = 0;
        int32_t nx = TR_DEAD, r = -1, k = 0;
        if (TM_UNLIKELY(sh) && byte[i] >= 0x80) { /* no characters from a moved state: build it */
            int32_t built = m_test(&au->st.a[prev].umask, byte[i]) ? mc_shift_state(mc, prev, sh) : TR_DEAD;
            if (built < 0) {
                i = skip[i];
                continue;
            }
            st[d - 1] = prev = built; /* for its siblings too */
            vsh[d - 1] = sh = 0;
        }
        if (TM_UNLIKELY(vch[d - 1])) { /* inside a character: its next byte */
            r = (vch[d - 1] - 1) >> 2;
            k = (vch[d - 1] - 1) & 3;
        } else {
            const int32_t *tr = au->st.a[prev].trans;
            nx = tr ? tr[byte[i]] : TR_UNKNOWN;
            if (TM_UNLIKELY(nx == TR_UNKNOWN)) {
                int b = byte[i];
                if (b >= 0xC2 && b <= 0xF4 && !au->dfa_broken && m_test(&au->st.a[prev].umask, b) &&
                    mc_utf8_virtual(mc, prev) >= 0) {
                    prev = au->st.a[prev].utf8_tgt;
                    for (r = 0; b > UTF8_RANGES[r][0][1]; r++) {
                    }
                } else {
                    nx = au_advance_miss(au, prev, b);
                }
            }
            if (!o->counted || nx < 0) {
            } else if (nx == au->st.a[prev].cnt_next && sh < au->st.a[prev].cnt_room) {
                nsh = sh + 1; /* one copy on, as met before */
            } else if (sh || au->st.a[prev].cnt_rep != -1) {
                int32_t p0 = prev;
                nsh = walk_counted(mc, &prev, &nx, sh, byte[i]);
                if (nsh < 0) {
                    i = skip[i];
                    continue;
                }
                if (prev != p0) { /* built moved: for its siblings too */
                    st[d - 1] = prev;
                    vsh[d - 1] = sh = 0;
                }
            }
        }
        if (TM_UNLIKELY(r >= 0)) {
            if (k && (byte[i] < UTF8_RANGES[r][k][0] || byte[i] > UTF8_RANGES[r][k][1])) {
                i = skip[i];
                continue;
            }
            if (k + 1 < UTF8_NRANGES[r]) { /* a prefix of a character: alive, not accepting */
                if (ends[i] >= 0) add_ids(v, t, i, o);
                st[d] = prev;
                vch[d] = VCH(r, k + 1);
                vsh[d] = 0;
                i++;
                continue;
            }
            nx = prev; /* the character's last byte */
        }
        if (nx < 0) {
            i = skip[i];
            continue;
        }
        const St *S = &au->st.a[nx];
        if (local && S->accepting) push_esc(o, t, i);
        if (ends[i] >= 0 && (!local || S->nstk)) add_ids(v, t, i, o);
        wo_note(o, S);
        if (skip[i] > i + 1) {
            if (!S->nstk) {
                i = skip[i];
                continue;
            }
            int32_t end = bulk_end(mc, t, i, nx, local);
            if (end >= 0) {
                for (int32_t j = i + 1; j < end; j++)
                    if (ends[j] >= 0) add_ids(v, t, j, o);
                bulk += end - i - 1;
                i = end;
                continue;
            }
            st[d] = nsh > sh ? prev : nx;
            vch[d] = 0;
            vsh[d] = nsh;
            if (nsh) mc->cnt_moves++;
        }
        i++;
    }
    mc->nodes += visited;
    mc->bulk_nodes += bulk;
}

static void walk_first(MaskCache *mc, int32_t root, const Trie *t, M256 first, int local, WalkOut *o) {
    while (!m_zero(&first)) {
        int b = m_low(&first);
        m_clear(&first, b);
        if (t->hi[b] > t->lo[b]) walk_range(mc, root, 0, t, t->lo[b], t->hi[b], local, o);
    }
}

/* ---- runs (port of _loop_info / _follow / _step / utf8_target, LOCAL-safe) --------------- */

#define UTF8_FRONTIER_CAP 8

/* the one state every well-formed multi-byte character leads s to, or -2; -2 also when a
 * state inside a character is accepting (a frame ending mid-character: no shortcut) */
static int32_t mc_utf8_target(MaskCache *mc, int32_t s) {
    Auto *au = mc->au;
    if (au->st.a[s].utf8_tgt != -3) return au->st.a[s].utf8_tgt;
    int32_t fast = au_utf8_fast(au, s);
    if (fast != U8_SLOW) {
        au->st.a[s].utf8_tgt = fast;
        au->st.a[s].utf8_fast = 1;
        return fast;
    }
    int32_t target = -2, result = -2;
    SuccVec succ = {0};
    int32_t frontier[UTF8_FRONTIER_CAP + 1], nf, nxt[UTF8_FRONTIER_CAP + 1], nn;
    for (int r = 0; r < 8; r++) {
        frontier[0] = s;
        nf = 1;
        for (int k = 0; k < UTF8_NRANGES[r]; k++) {
            M256 mask = m_range(UTF8_RANGES[r][k][0], UTF8_RANGES[r][k][1]);
            nn = 0;
            for (int32_t x = 0; x < nf; x++) {
                au_successors(au, frontier[x], mask, &succ);
                for (int32_t j = 0; j < succ.n; j++) {
                    int32_t y = succ.a[j].next;
                    if (y < 0) goto none;
                    if (!in_list(nxt, nn, y)) {
                        if (nn >= UTF8_FRONTIER_CAP) goto none;
                        nxt[nn++] = y;
                    }
                }
            }
            if (k + 1 < UTF8_NRANGES[r])
                for (int32_t j = 0; j < nn; j++)
                    if (au->st.a[nxt[j]].accepting) goto none;
            memcpy(frontier, nxt, (size_t)nn * sizeof(int32_t));
            nf = nn;
        }
        if (nf != 1) goto none;
        if (target == -2)
            target = frontier[0];
        else if (frontier[0] != target)
            goto none;
    }
    result = target;
none:
    VFREE(succ);
    au->st.a[s].utf8_tgt = result;
    return result;
}

static int32_t mc_runkey_index(MaskCache *mc, const RunKey *k) {
    for (int32_t i = 0; i < mc->runkeys.n; i++)
        if (runkey_eq(&mc->runkeys.a[i], k)) return i;
    VPUSH(mc->runkeys, *k);
    return mc->runkeys.n - 1;
}

#define STEP_NONE (-2)
#define STEP_FALSE (-1)

/* the one state every byte of the run (and every UTF-8 character) leads c to; STEP_FALSE when
 * all of them are dead; STEP_NONE when neither */
static int32_t mc_step(MaskCache *mc, int32_t c, const RunKey *rk) {
    uint64_t key = ((uint64_t)(uint32_t)c << 16) | (uint64_t)mc_runkey_index(mc, rk);
    int32_t hit = imap_get(&mc->step, key, -3);
    if (hit != -3) return hit;
    Auto *au = mc->au;
    M256 run = M_ZERO;
    run.w[0] = rk->run[0];
    run.w[1] = rk->run[1];
    SuccVec succ = {0};
    au_successors(au, c, run, &succ);
    int32_t out = STEP_NONE;
    int all_dead = 1, all_same = succ.n > 0;
    for (int32_t j = 0; j < succ.n; j++) {
        if (succ.a[j].next >= 0) all_dead = 0;
        if (succ.a[j].next < 0 || succ.a[j].next != succ.a[0].next) all_same = 0;
    }
    if (all_dead) {
        M256 hi = m_and(mc_allowed_bytes(mc, c), M_HIGH);
        out = (rk->utf8 && !m_zero(&hi)) ? STEP_NONE : STEP_FALSE;
    } else if (all_same) {
        int32_t y = succ.a[0].next;
        if (!rk->utf8 || mc_utf8_target(mc, c) == y) out = y;
    }
    VFREE(succ);
    imap_put(&mc->step, key, out);
    return out;
}

typedef struct {
    uint64_t firsts[2];
    uint32_t accmask;
    uint8_t mb, utf8, infinite, truncated;
    RunKey key;
    IVec chain;
    M256 exits;
} Run;

/* from t: the run class and the chain it walks; 0 when there is none. accmask records the
 * chain states where the frame can return */
static int mc_follow(MaskCache *mc, int32_t t, int32_t cap, Run *r) {
    Auto *au = mc->au;
    SuccVec succ = {0};
    au_successors(au, t, m_and(au->st.a[t].umask, M_ASCII), &succ);
    /* group by target, keep the biggest group (first in byte order on ties) */
    int32_t best = -1, bestn = 0;
    M256 run = M_ZERO;
    for (int32_t j = 0; j < succ.n; j++) {
        int32_t y = succ.a[j].next;
        if (y < 0) continue;
        M256 g = M_ZERO;
        int seen_before = 0;
        for (int32_t k = 0; k < j; k++)
            if (succ.a[k].next == y) seen_before = 1;
        if (seen_before) continue;
        for (int32_t k = j; k < succ.n; k++)
            if (succ.a[k].next == y) g = m_or(g, succ.a[k].m);
        int n = m_count(&g);
        if (n > bestn) {
            bestn = n;
            best = y;
            run = g;
        }
    }
    VFREE(succ);
    if (best < 0 || bestn < LOOP_MIN_ASCII) return 0;
    memset(&r->key, 0, sizeof(r->key));
    r->key.run[0] = run.w[0];
    r->key.run[1] = run.w[1];
    r->utf8 = (uint8_t)(mc_utf8_target(mc, t) == best);
    r->key.utf8 = r->utf8;
    r->chain.n = 0;
    VPUSH(r->chain, t);
    /* bytes a token may leave the run through (a superset is fine: the walk decides) */
    r->exits = m_andnot(au->st.a[t].umask, run);
    r->infinite = 0;
    r->truncated = 0;
    r->accmask = au->st.a[t].accepting ? 1u : 0u;
    int32_t c = t;
    while (r->chain.n <= cap) {
        int32_t step = mc_step(mc, c, &r->key);
        if (step == STEP_NONE) return 0;
        if (step == STEP_FALSE) return 1;
        if (step == c) {
            r->infinite = 1;
            return 1;
        }
        if (au->st.a[step].accepting) {
            if (r->chain.n >= 32) return 0;
            r->accmask |= 1u << r->chain.n;
        }
        VPUSH(r->chain, step);
        r->exits = m_or(r->exits, m_andnot(au->st.a[step].umask, run));
        c = step;
    }
    r->truncated = 1;
    return 1;
}

#endif
