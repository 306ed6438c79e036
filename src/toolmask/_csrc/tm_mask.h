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
    /* (state, run class) -> _step result */
    IMap step;
    VEC(RunKey) runkeys;
    int32_t *wst; /* walk stack of states per depth */
    int32_t wst_cap;
} MaskCache;

static void pl_clear(MaskCache *mc, PosLocal *pl) {
    if (pl->nbase || pl->nexit) vocab_release(mc->v, pl->bases, pl->nbase, pl->exits, pl->nexit, 0);
    free(pl->ids);
    free(pl->dense);
    free(pl->esc);
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

static int32_t *mc_wst(MaskCache *mc, int32_t need) {
    if (need > mc->wst_cap) {
        mc->wst = tm_xrealloc(mc->wst, (size_t)need * sizeof(int32_t));
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
    int32_t maxdepth, maxstacks;
} WalkOut;

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

/* walk nodes [lo, hi) of t whose parent (at depth d0) is in state root; LOCAL: a token counts
 * when some stack survives it and escapes are recorded; EXACT: a token counts when alive */
static void walk_range(MaskCache *mc, int32_t root, int32_t d0, const Trie *t, int32_t lo, int32_t hi,
                       int local, WalkOut *o) {
    Auto *au = mc->au;
    const Vocab *v = mc->v;
    int32_t *st = mc_wst(mc, t->max_depth + 2);
    st[d0] = root;
    const uint8_t *byte = t->byte;
    const uint16_t *depth = t->depth;
    const int32_t *skip = t->skip, *ends = t->ends;
    int32_t i = lo;
    int64_t visited = 0, bulk = 0;
    while (i < hi) {
        visited++;
        int32_t d = depth[i];
        int32_t prev = st[d - 1];
        const int32_t *tr = au->st.a[prev].trans;
        int32_t nx = tr ? tr[byte[i]] : TR_UNKNOWN;
        if (TM_UNLIKELY(nx == TR_UNKNOWN)) nx = au_advance_miss(au, prev, byte[i]);
        if (nx < 0) {
            i = skip[i];
            continue;
        }
        const St *S = &au->st.a[nx];
        if (local && S->accepting) {
            Esc e;
            e.trie = t;
            e.node = i;
            e.has_sel = (uint8_t)o->has_sel;
            e.sel[0] = o->sel[0];
            e.sel[1] = o->sel[1];
            e.sel_mb = o->sel_mb;
            VPUSH(*o->esc, e);
        }
        if (ends[i] >= 0 && (!local || S->nstk)) add_ids(v, t, i, o);
        wo_note(o, S);
        if (skip[i] > i + 1) {
            if (!S->nstk) {
                i = skip[i];
                continue;
            }
            /* a state that loops on every byte below i (a string body, a key's rest, a
             * pattern's repeated class): every token below stays in it, alive. Not when it
             * accepts in LOCAL mode (each node would be an escape). */
            const uint64_t *sub = t->sub ? t->sub + 2 * (size_t)i : NULL;
            uint8_t subf = sub ? t->subf[i] : SUB_BAD;
            if (sub && skip[i] - i > BULK_MIN && !(subf & SUB_BAD) && !(local && S->accepting) &&
                !(sub[0] & ~S->umask.w[0]) && !(sub[1] & ~S->umask.w[1]) &&
                au_advance(au, nx, byte[i + 1]) == nx) {
                const uint64_t *loop = st_loop_set(au, nx);
                if (!(sub[0] & ~loop[0]) && !(sub[1] & ~loop[1]) && (!(subf & SUB_HIGH) || mc_utf8_loops(mc, nx))) {
                    int32_t end = skip[i];
                    for (int32_t j = i + 1; j < end; j++)
                        if (ends[j] >= 0) add_ids(v, t, j, o);
                    bulk += end - i - 1;
                    i = end;
                    continue;
                }
            }
            st[d] = nx;
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
        M256 hi = m_and(au_allowed_bytes(au, c), M_HIGH);
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

/* ---- local(p) --------------------------------------------------------------------------- */

static void pl_ensure(MaskCache *mc, int32_t p) {
    if (p < mc->npl) return;
    int32_t n = mc->npl ? mc->npl : 64;
    while (n <= p) n *= 2;
    mc->pl = tm_xrealloc(mc->pl, (size_t)n * sizeof(PosLocal));
    memset(mc->pl + mc->npl, 0, (size_t)(n - mc->npl) * sizeof(PosLocal));
    mc->npl = n;
}

static int32_t mc_local_state(MaskCache *mc, int32_t p) {
    Auto *au = mc->au;
    IVec set = {0};
    VPUSH(set, sn_push(au, -1, p));
    int32_t s = au_make(au, &set, 0);
    VFREE(set);
    return s;
}

/* at most how many trie nodes a walk of the first bytes `first` visits when the state after
 * them takes only the bytes of umask (each child of a first byte: its subtree when umask
 * takes its byte, else itself), counted until budget: a run whose second byte is narrow
 * (a number after its minus sign) is walked rather than given tables */
static int64_t live_estimate(const Vocab *v, M256 umask, M256 first, int64_t budget) {
    const Trie *t = &v->trie;
    int64_t n = 0;
    while (!m_zero(&first) && n < budget) {
        int b = m_low(&first);
        m_clear(&first, b);
        int32_t lo = t->lo[b], hi = t->hi[b];
        if (lo == hi) continue;
        n++;
        for (int32_t c = lo + 1; c < hi && n < budget; c = t->skip[c]) n += m_test(&umask, t->byte[c]) ? t->skip[c] - c : 1;
    }
    return n;
}

static int tm_debug = -1;

static void mc_compute_local(MaskCache *mc, int32_t p) {
    Auto *au = mc->au;
    Vocab *v = mc->v;
    mc->local_misses++;
    if (tm_debug < 0) tm_debug = getenv("TOOLMASK_KERNEL_DEBUG") != NULL;
    int64_t nodes0 = mc->nodes;
    PosLocal res;
    memset(&res, 0, sizeof(res));
    IVec ids = {0};
    EscVec esc = {0};
    WalkOut o;
    memset(&o, 0, sizeof(o));
    o.ids = &ids;
    o.esc = &esc;
    int32_t L = mc_local_state(mc, p);
    wo_note(&o, &au->st.a[L]);
    M256 ab = au_allowed_bytes(au, L);
    M256 wfirst = ab;
    int mb_done = 0;
    if (!m_zero(&ab)) {
        /* first characters grouped by the state they lead to */
        SuccVec succ = {0};
        au_successors(au, L, m_and(ab, M_ASCII), &succ);
        int32_t targets[260];
        M256 firsts[260];
        int32_t nt = 0;
        for (int32_t j = 0; j < succ.n; j++) {
            int32_t y = succ.a[j].next;
            if (y < 0) continue;
            int32_t k = 0;
            while (k < nt && targets[k] != y) k++;
            if (k == nt) {
                targets[nt] = y;
                firsts[nt] = M_ZERO;
                nt++;
            }
            firsts[k] = m_or(firsts[k], succ.a[j].m);
        }
        VFREE(succ);
        M256 high = m_and(ab, M_HIGH);
        int32_t mb = m_zero(&high) ? -2 : mc_utf8_target(mc, L);
        if (mb >= 0) {
            int32_t k = 0;
            while (k < nt && targets[k] != mb) k++;
            if (k == nt) {
                targets[nt] = mb;
                firsts[nt] = M_ZERO;
                nt++;
            }
        }
        Run r;
        memset(&r, 0, sizeof(r));
        for (int32_t k = 0; k < nt && res.nbase < MAX_RUNS; k++) {
            int32_t t = targets[k];
            int64_t nodes = 0;
            M256 f = firsts[k];
            while (!m_zero(&f)) {
                int b = m_low(&f);
                m_clear(&f, b);
                nodes += v->trie.hi[b] - v->trie.lo[b];
            }
            if (nodes < TABLE_MIN_NODES && t != mb) continue;
            if (t != mb && live_estimate(v, au->st.a[t].umask, firsts[k], WALK_BUDGET) < WALK_BUDGET) continue;
            int32_t cap = v->max_tail_chars < CHAIN_CAP ? v->max_tail_chars + 1 : CHAIN_CAP;
            if (!mc_follow(mc, t, cap, &r)) {
                if (tm_debug) fprintf(stderr, "  pos %d target %d: %lld nodes, no run\n", p, t, (long long)nodes);
                continue;
            }
            if (tm_debug)
                fprintf(stderr, "  pos %d target %d: run %016llx%016llx utf8 %d chain %d inf %d trunc %d acc %x nodes %lld\n", p,
                        t, (unsigned long long)r.key.run[1], (unsigned long long)r.key.run[0], r.utf8, r.chain.n,
                        r.infinite, r.truncated, r.accmask, (long long)nodes);
            if (v->max_tail_chars < CHAIN_CAP) r.truncated = 0; /* no token is longer */
            r.firsts[0] = firsts[k].w[0];
            r.firsts[1] = firsts[k].w[1];
            r.mb = (uint8_t)(t == mb);
            int32_t steps = r.chain.n;
            if (!r.infinite && !vocab_has_tables(v, &r.key, &r.exits, r.firsts, r.mb)) {
                /* a short run: a token stays alive for at most its first character, steps
                 * more, and the few bytes after the exit; when the trie holds few such nodes
                 * under these first bytes, walking them beats building the run's tables */
                int64_t maxd = 4 + (int64_t)steps * (r.utf8 ? 4 : 1) + WALK_SLACK;
                int64_t est = 0;
                M256 fb = firsts[k];
                if (r.mb) fb = m_or(fb, m_range(0xC2, 0xF4));
                while (!m_zero(&fb)) {
                    int b = m_low(&fb);
                    m_clear(&fb, b);
                    est += vocab_walk_estimate(v, b, maxd);
                }
                if (est < WALK_BUDGET) continue;
            }
            if (r.infinite && steps <= 2 && !r.mb && nodes < BULK_WALK_NODES &&
                tm_pop64(r.key.run[0]) + tm_pop64(r.key.run[1]) >= BULK_WALK_RUN &&
                !vocab_has_tables(v, &r.key, &r.exits, r.firsts, r.mb)) {
                /* a loop reached within one character (a key's rest after a declared name's
                 * prefix, a pattern's class): below it the walk takes whole subtrees at once
                 * (walk_range), cheaper than new tables for a run class no one shares */
                if (tm_debug) fprintf(stderr, "  pos %d target %d: loop walk of %lld nodes\n", p, t, (long long)nodes);
                continue;
            }
            BaseMask *bm = vocab_base(v, &r.key, r.firsts, r.mb, r.infinite ? -1 : steps);
            res.bases[res.nbase++] = bm;
            ExitTries *ex = vocab_exits(v, &r.key, &r.exits, r.firsts, r.mb);
            res.exits[res.nexit++] = ex;
            /* the run's chain states, copied: walks may grow the state table */
            int32_t nchain = r.chain.n;
            int32_t *chain = tm_xmalloc((size_t)nchain * sizeof(int32_t));
            memcpy(chain, r.chain.a, (size_t)nchain * sizeof(int32_t));
            WalkOut eo = o;
            eo.has_sel = 1;
            eo.sel[0] = r.firsts[0];
            eo.sel[1] = r.firsts[1];
            eo.sel_mb = r.mb;
            for (int32_t q = 0; q < ex->np; q++) {
                if (!ex->tries[q]) continue;
                int32_t c;
                if (q < steps)
                    c = chain[q];
                else if (r.infinite)
                    c = chain[nchain - 1];
                else
                    continue;
                walk_first(mc, c, ex->tries[q], au->st.a[c].umask, 1, &eo);
            }
            if (r.infinite && !((r.accmask >> (nchain - 1)) & 1)) {
                /* a loop that does not return: the long tokens that stay in it are in the base
                 * table; those that leave it late are walked from the loop state at their exit */
                int32_t c = chain[nchain - 1];
                if (ex->late) walk_first(mc, c, ex->late, au->st.a[c].umask, 1, &eo);
            } else if (ex->cont && (r.infinite || r.truncated)) {
                /* tokens longer than the chain: exact walk of their rest from its last state */
                int32_t c = chain[nchain - 1];
                walk_first(mc, c, ex->cont, au->st.a[c].umask, 1, &eo);
            }
            o.maxdepth = eo.maxdepth;
            o.maxstacks = eo.maxstacks;
            if (r.accmask) {
                RunEsc e;
                memset(&e, 0, sizeof(e));
                e.key = r.key;
                e.firsts[0] = r.firsts[0];
                e.firsts[1] = r.firsts[1];
                e.mb = r.mb;
                e.infinite = r.infinite;
                e.nchain = nchain;
                e.accmask = r.accmask;
                res.resc = tm_xrealloc(res.resc, (size_t)(res.nresc + 1) * sizeof(RunEsc));
                res.resc[res.nresc++] = e;
            }
            free(chain);
            wfirst.w[0] &= ~r.firsts[0];
            wfirst.w[1] &= ~r.firsts[1];
            if (r.mb) mb_done = 1;
        }
        VFREE(r.chain);
        if (mb_done) {
            walk_first(mc, L, &v->partial, m_and(wfirst, M_HIGH), 1, &o);
            wfirst = m_and(wfirst, M_ASCII);
        }
        if (tm_debug) {
            int64_t est = 0;
            M256 f = wfirst;
            while (!m_zero(&f)) {
                int b = m_low(&f);
                m_clear(&f, b);
                est += v->trie.hi[b] - v->trie.lo[b];
            }
            fprintf(stderr, "pos %d: walk first bytes %d (bucket nodes %lld), runs %d\n", p, m_count(&wfirst),
                    (long long)est, res.nbase);
        }
        walk_first(mc, L, &v->trie, wfirst, 1, &o);
    }
    if (tm_debug) fprintf(stderr, "pos %d: %lld nodes walked\n", p, (long long)(mc->nodes - nodes0));
    if (ids.n > v->words) { /* a bitmask is smaller */
        res.dense = tm_xcalloc((size_t)v->words, sizeof(uint32_t));
        for (int32_t j = 0; j < ids.n; j++) res.dense[ids.a[j] >> 5] |= 1u << (ids.a[j] & 31);
        VFREE(ids);
        mc->bytes += (int64_t)v->words * 4;
    }
    res.ids = ids.a;
    res.nids = ids.n;
    res.esc = esc.a;
    res.nesc = esc.n;
    res.maxdepth = o.maxdepth;
    res.maxstacks = o.maxstacks;
    res.ok = 1;
    mc->bytes += (int64_t)ids.cap * 4 + (int64_t)esc.cap * (int64_t)sizeof(Esc) + (int64_t)sizeof(PosLocal) +
                 (int64_t)res.nresc * (int64_t)sizeof(RunEsc);
    pl_ensure(mc, p);
    mc->pl[p] = res;
}

static PosLocal *mc_local(MaskCache *mc, int32_t p) {
    pl_ensure(mc, p);
    if (!mc->pl[p].ok) mc_compute_local(mc, p);
    return &mc->pl[p];
}

/* ---- the state's mask -------------------------------------------------------------------- */

static void add_end_ids(const Vocab *v, const Esc *e, IVec *ids) {
    const Trie *t = e->trie;
    if (t->ends[e->node] < 0) return;
    const int32_t *x = t->end_ids.a + t->ends[e->node];
    for (int32_t j = 1; j <= x[0]; j++) {
        int32_t id = x[j];
        if (e->has_sel && !sel_has(e->sel, e->sel_mb, v->first_cls[id])) continue;
        VPUSH(*ids, id);
    }
}

/* the state after base's frame returns into it (close(parent, top)); TR_DEAD if none */
static int32_t mc_continuation(MaskCache *mc, int32_t base) {
    Auto *au = mc->au;
    IVec set = {0};
    au_set_begin(au);
    int r = au_close(au, au->sn.a[base].parent, au->sn.a[base].pos, &set);
    int32_t k = TR_DEAD;
    if (r >= 0 && (set.n || r) && set.n <= au->lim.max_stacks) k = au_make(au, &set, r);
    VFREE(set);
    return k;
}

static void mc_dense_walk(MaskCache *mc, int32_t sid, uint32_t *dense) {
    Auto *au = mc->au;
    IVec ids = {0};
    WalkOut o;
    memset(&o, 0, sizeof(o));
    o.ids = &ids;
    mc->exact_walks++;
    walk_first(mc, sid, &mc->v->trie, au_allowed_bytes(au, sid), 0, &o);
    for (int32_t j = 0; j < ids.n; j++) dense[ids.a[j] >> 5] |= 1u << (ids.a[j] & 31);
    VFREE(ids);
}

static StRep *mc_compute_rep(MaskCache *mc, int32_t sid) {
    Auto *au = mc->au;
    Vocab *v = mc->v;
    mc->misses++;
    StRep *rep = tm_xcalloc(1, sizeof(StRep));
    int32_t nst = au->st.a[sid].nstk;
    int32_t *stk = tm_xmalloc((size_t)(nst ? nst : 1) * sizeof(int32_t));
    memcpy(stk, st_stacks(au, &au->st.a[sid]), (size_t)nst * sizeof(int32_t));
    IVec parts = {0}, ids = {0};
    int64_t bound = 0;
    int fallback = 0;
    for (int32_t i = 0; i < nst && !fallback; i++) {
        SNode x = au->sn.a[stk[i]];
        PosLocal *pl = mc_local(mc, x.pos);
        if ((int64_t)sn_depth(au, x.parent) + pl->maxdepth > au->lim.max_stack_depth) {
            fallback = 1;
            break;
        }
        bound += pl->maxstacks;
        if (!in_list(parts.a, parts.n, x.pos)) VPUSH(parts, x.pos);
        if (!pl->nesc && !pl->nresc) continue;
        if (x.parent < 0) { /* the document can end here: tokens that end exactly there */
            for (int32_t e = 0; e < pl->nesc; e++) add_end_ids(v, &mc->pl[x.pos].esc[e], &ids);
            continue;
        }
        int32_t k = mc_continuation(mc, x.parent);
        if (k < 0) continue;
        WalkOut o;
        memset(&o, 0, sizeof(o));
        o.ids = &ids;
        wo_note(&o, &au->st.a[k]);
        int32_t nesc = mc->pl[x.pos].nesc;
        for (int32_t e = 0; e < nesc; e++) {
            Esc es = mc->pl[x.pos].esc[e];
            add_end_ids(v, &es, &ids);
            if (es.trie->skip[es.node] > es.node + 1 && au->st.a[k].nstk) {
                o.has_sel = es.has_sel;
                o.sel[0] = es.sel[0];
                o.sel[1] = es.sel[1];
                o.sel_mb = es.sel_mb;
                walk_range(mc, k, es.trie->depth[es.node], es.trie, es.node + 1, es.trie->skip[es.node], 0, &o);
            }
        }
        /* runs the frame can return inside: tokens that leave the run through a byte the
         * continuation takes, at a chain state that returns */
        int32_t nresc = mc->pl[x.pos].nresc;
        for (int32_t e = 0; e < nresc && !fallback; e++) {
            RunEsc re = mc->pl[x.pos].resc[e];
            M256 kb = au->st.a[k].umask, inrun = M_ZERO;
            inrun.w[0] = re.key.run[0];
            inrun.w[1] = re.key.run[1];
            if (re.key.utf8) inrun = m_or(inrun, M_HIGH);
            M256 both = m_and(kb, inrun);
            if (!m_zero(&both)) { /* the caller would go on with run characters: exact walk */
                fallback = 1;
                break;
            }
            o.has_sel = 1;
            o.sel[0] = re.firsts[0];
            o.sel[1] = re.firsts[1];
            o.sel_mb = re.mb;
            while (!m_zero(&kb)) {
                int b = m_low(&kb);
                m_clear(&kb, b);
                M256 one = M_ZERO;
                m_set(&one, b);
                ExitTries *ex = vocab_exits(v, &re.key, &one, re.firsts, re.mb);
                for (int32_t q = 0; q < ex->np; q++) {
                    if (!ex->tries[q]) continue;
                    int j = q < re.nchain ? q : (re.infinite ? re.nchain - 1 : -1);
                    if (j < 0 || !((re.accmask >> j) & 1)) continue;
                    walk_first(mc, k, ex->tries[q], au->st.a[k].umask, 0, &o);
                }
                vocab_release_exits(v, ex);
            }
        }
        bound += o.maxstacks;
    }
    free(stk);
    if (bound > au->lim.max_stacks) fallback = 1;
    if (fallback) {
        VFREE(parts);
        ids.n = 0;
        rep->dense = tm_xcalloc((size_t)(v->words ? v->words : 1), sizeof(uint32_t));
        mc_dense_walk(mc, sid, rep->dense);
        mc->bytes += (int64_t)v->words * 4;
    } else {
        rep->parts = parts.a;
        rep->nparts = parts.n;
        mc->bytes += (int64_t)parts.cap * 4;
    }
    /* special tokens the grammar names here; EOS when the state accepts */
    IVec sp = {0};
    au_allowed_specials(au, sid, &sp);
    for (int32_t j = 0; j < sp.n; j++) {
        int32_t t = sp.a[j];
        if (t < mc->nspec)
            for (int32_t k = 0; k < mc->spec_ids[t].n; k++) VPUSH(ids, mc->spec_ids[t].a[k]);
    }
    VFREE(sp);
    if (au->st.a[sid].accepting)
        for (int32_t j = 0; j < mc->neos; j++) VPUSH(ids, mc->eos[j]);
    rep->flags = (uint8_t)((au->st.a[sid].accepting ? ROW_ACCEPTING : 0) | (au_is_finished(au, sid) ? ROW_FINISHED : 0));
    rep->ids = ids.a;
    rep->nids = ids.n;
    mc->bytes += (int64_t)ids.cap * 4 + (int64_t)sizeof(StRep);
    return rep;
}

static StRep *mc_rep(MaskCache *mc, int32_t sid) {
    mc_sync(mc);
    if (sid >= mc->nreps) {
        int32_t n = mc->nreps ? mc->nreps : 64;
        while (n <= sid) n *= 2;
        mc->reps = tm_xrealloc(mc->reps, (size_t)n * sizeof(StRep *));
        memset(mc->reps + mc->nreps, 0, (size_t)(n - mc->nreps) * sizeof(StRep *));
        mc->nreps = n;
    }
    StRep *r = mc->reps[sid];
    if (r) {
        __atomic_fetch_add(&mc->hits, 1, __ATOMIC_RELAXED);
        return r;
    }
    if (mc->bytes > mc->max_bytes) mc_clear_all(mc);
    r = mc_compute_rep(mc, sid);
    mc->reps[sid] = r;
    return r;
}

static inline void set_bits(uint32_t *out, const int32_t *ids, int32_t n) {
    for (int32_t j = 0; j < n; j++) out[ids[j] >> 5] |= 1u << (ids[j] & 31);
}

/* the cached mask of sid, or NULL: reads only (what a shared lock allows); counts a hit */
static StRep *mc_rep_peek(MaskCache *mc, int32_t sid) {
    if (mc->epoch != mc->au->epoch || sid >= mc->nreps) return NULL;
    StRep *r = mc->reps[sid];
    if (r) __atomic_fetch_add(&mc->hits, 1, __ATOMIC_RELAXED);
    return r;
}

/* write r's mask: reads only */
static void mc_fill_rep(const MaskCache *mc, const StRep *r, uint32_t *out) {
    int32_t words = mc->v->words;
    if (r->dense) {
        memcpy(out, r->dense, (size_t)words * 4);
    } else {
        int nb = 0;
        for (int32_t k = 0; k < r->nparts; k++) {
            PosLocal *pl = &mc->pl[r->parts[k]];
            for (int b = 0; b <= pl->nbase; b++) {
                const uint32_t *bits;
                if (b < pl->nbase) {
                    if (!pl->bases[b]->any) continue;
                    bits = pl->bases[b]->bits;
                } else if (pl->dense) {
                    bits = pl->dense;
                } else {
                    continue;
                }
                if (!nb++)
                    memcpy(out, bits, (size_t)words * 4);
                else
                    words_or(out, bits, (size_t)words);
            }
        }
        if (!nb) memset(out, 0, (size_t)words * 4);
        for (int32_t k = 0; k < r->nparts; k++) {
            PosLocal *pl = &mc->pl[r->parts[k]];
            set_bits(out, pl->ids, pl->nids);
        }
    }
    set_bits(out, r->ids, r->nids);
    /* padding bits past the vocabulary stay clear */
    int32_t size = mc->v->size;
    if (size & 31) out[words - 1] &= (1u << (size & 31)) - 1;
}

static void mc_fill(MaskCache *mc, int32_t sid, uint32_t *out) { mc_fill_rep(mc, mc_rep(mc, sid), out); }

#endif
