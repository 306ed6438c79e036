/* Token masks, computed: local(p) per position (runs from the shared tables, walks of the
 * rest, escapes) and, per state, their composition over its stacks with the escapes resolved
 * against each stack's base, or the exact walk where the caps could act; the fill.
 *
 * See tm_mask.h for the model (its types, walks and runs come first).
 */
#ifndef TM_COMPOSE_H
#define TM_COMPOSE_H

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

/* L's first characters grouped by the state they lead to (targets, firsts; the complete
 * multi-byte characters with their target's group); returns that target, or -2 */
static int32_t local_groups(MaskCache *mc, int32_t L, M256 ab, int32_t *targets, M256 *firsts, int32_t *nt) {
    SuccVec succ = {0};
    au_successors(mc->au, L, m_and(ab, M_ASCII), &succ);
    *nt = 0;
    for (int32_t j = 0; j < succ.n; j++) {
        int32_t y = succ.a[j].next;
        if (y < 0) continue;
        int32_t k = 0;
        while (k < *nt && targets[k] != y) k++;
        if (k == *nt) {
            targets[*nt] = y;
            firsts[*nt] = M_ZERO;
            (*nt)++;
        }
        firsts[k] = m_or(firsts[k], succ.a[j].m);
    }
    VFREE(succ);
    M256 high = m_and(ab, M_HIGH);
    int32_t mb = m_zero(&high) ? -2 : mc_utf8_target(mc, L);
    if (mb >= 0) {
        int32_t k = 0;
        while (k < *nt && targets[k] != mb) k++;
        if (k == *nt) {
            targets[*nt] = mb;
            firsts[*nt] = M_ZERO;
            (*nt)++;
        }
    }
    return mb;
}

/* do the first characters f, leading to t (the multi-byte characters' target when is_mb),
 * get run tables: 1 with the run in r, or 0 when walking them is cheaper (few trie nodes, a
 * narrow second byte, a short run with few nodes, a loop reached at once) or there is no run */
static int local_run(MaskCache *mc, int32_t p, int32_t t, M256 f, int is_mb, Run *r) {
    Vocab *v = mc->v;
    int64_t nodes = 0;
    for (M256 x = f; !m_zero(&x);) {
        int b = m_low(&x);
        m_clear(&x, b);
        nodes += v->trie.hi[b] - v->trie.lo[b];
    }
    if (nodes < TABLE_MIN_NODES && !is_mb) return 0;
    if (!is_mb && live_estimate(v, mc->au->st.a[t].umask, f, WALK_BUDGET) < WALK_BUDGET) return 0;
    int32_t cap = v->max_tail_chars < CHAIN_CAP ? v->max_tail_chars + 1 : CHAIN_CAP;
    if (!mc_follow(mc, t, cap, r)) {
        if (tm_debug) fprintf(stderr, "  pos %d target %d: %lld nodes, no run\n", p, t, (long long)nodes);
        return 0;
    }
    if (tm_debug)
        fprintf(stderr, "  pos %d target %d: run %016llx%016llx utf8 %d chain %d inf %d trunc %d acc %x nodes %lld\n", p, t,
                (unsigned long long)r->key.run[1], (unsigned long long)r->key.run[0], r->utf8, r->chain.n, r->infinite,
                r->truncated, r->accmask, (long long)nodes);
    if (v->max_tail_chars < CHAIN_CAP) r->truncated = 0; /* no token is longer */
    r->firsts[0] = f.w[0];
    r->firsts[1] = f.w[1];
    r->mb = (uint8_t)is_mb;
    int32_t steps = r->chain.n;
    if (!r->infinite && !vocab_has_tables(v, &r->key, &r->exits, r->firsts, r->mb)) {
        /* a short run: a token stays alive for at most its first character, steps more, and
         * the few bytes after the exit; when the trie holds few such nodes under these first
         * bytes, walking them beats building the run's tables */
        int64_t maxd = 4 + (int64_t)steps * (r->utf8 ? 4 : 1) + WALK_SLACK;
        int64_t est = 0;
        M256 fb = f;
        if (r->mb) fb = m_or(fb, m_range(0xC2, 0xF4));
        while (!m_zero(&fb)) {
            int b = m_low(&fb);
            m_clear(&fb, b);
            est += vocab_walk_estimate(v, b, maxd);
        }
        if (est < WALK_BUDGET) return 0;
    }
    if (r->infinite && steps <= 2 && !r->mb && nodes < BULK_WALK_NODES &&
        tm_pop64(r->key.run[0]) + tm_pop64(r->key.run[1]) >= BULK_WALK_RUN &&
        !vocab_has_tables(v, &r->key, &r->exits, r->firsts, r->mb)) {
        /* a loop reached within one character (a key's rest after a declared name's prefix, a
         * pattern's class): below it the walk takes whole subtrees at once (walk_range),
         * cheaper than new tables for a run class no one shares */
        if (tm_debug) fprintf(stderr, "  pos %d target %d: loop walk of %lld nodes\n", p, t, (long long)nodes);
        return 0;
    }
    return 1;
}

/* ---- counted runs: the long tokens by count ------------------------------------------------
 *
 * A counted string (maxLength 80) is a chain of one state per character copy; the run's
 * chain is followed CHAIN_CAP characters, and the long tokens (more tail characters than
 * that) used to be walked from its last state, building one state per copy up to the longest
 * token (~1.9 us each: 60-100 states, most of a counted string's first mask). When the chain's
 * last state is a copy m of a counted repetition, they are decided by count instead: the
 * copies m..hi-1 of one unrolling have the same language but for the counts (each the item
 * up to hi - k more times, then the same continuation), so every run character leads copy k
 * to copy k + 1 exactly as it leads m to m + 1 (checked once, on the states themselves), a
 * copy accepts iff m does, and a byte no copy m state takes is taken by none. */

/* the position of state s when its only stack is one frame (the local states' shape), or -1 */
static int32_t mc_frame_pos(Auto *au, int32_t s) {
    const St *S = &au->st.a[s];
    if (S->nstk != 1) return -1;
    SNode x = au->sn.a[st_stacks(au, S)[0]];
    return x.parent < 0 ? x.pos : -1;
}

/* is the chain's last state `last` copy m (lo <= m < hi) of a counted repetition: its position
 * that of copy m's NFA state alone, the run leading it to copy m + 1's the same way, neither
 * accepting, and copy hi (the last: nothing of the run left) neither accepting nor taking a
 * run character. Builds copy m + 1's and copy hi's states (not those between). */
static int mc_counted(MaskCache *mc, const Run *r, int32_t last, int32_t *m_out, int64_t *hi_out) {
    Auto *au = mc->au;
    int32_t q = mc_frame_pos(au, last);
    if (q < 0 || au->st.a[last].accepting) return 0;
    M256 run = M_ZERO;
    run.w[0] = r->key.run[0];
    run.w[1] = r->key.run[1];
    int32_t nk;
    const RepCopies *found = NULL;
    int64_t k1 = 0;
    const int32_t *kern = arrset_get(&au->kernels, q, &nk);
    for (int32_t i = 0; i < nk && !found; i++) {
        const NState *S = AU_NS(au, kern[i]);
        for (int32_t e = 0; e < S->byte.n && !found; e++) {
            M256 both = m_and(S->byte.a[e].m, run);
            if (!m_zero(&both)) found = nfa_copy_of(au, S->byte.a[e].to, &k1);
        }
    }
    if (!found) return 0;
    RepCopies rc = *found;
    int64_t m = k1 - 1;
    if (m < 1 || m < rc.lo || m >= rc.hi || rc.hi > INT32_MAX / 2) return 0;
    int32_t cm = rc.copy1 + (int32_t)m - 1, cn = cm + 1, ch = rc.copy1 + (int32_t)rc.hi - 1;
    if (dfa_pos_of(au, &cm, 1) != q) return 0;
    int32_t s1 = mc_step(mc, last, &r->key);
    if (s1 < 0 || au->st.a[s1].accepting) return 0;
    int32_t q1 = mc_frame_pos(au, s1);
    if (q1 < 0 || q1 != dfa_pos_of(au, &cn, 1)) return 0;
    int32_t qh = dfa_pos_of(au, &ch, 1);
    if (qh < 0) return 0;
    /* its row and umask before a state is made of it; a run character reaching copy hi leaves
     * the frame one stack there (no call, no return) */
    if (!AU_POS(au, qh)->done && dfa_expand(au, qh) < 0) return 0;
    if (AU_POS(au, qh)->final || AU_POS(au, qh)->ncalls) return 0;
    int32_t sh = mc_local_state(mc, qh);
    if (sh < 0 || mc_step(mc, sh, &r->key) != STEP_FALSE) return 0;
    *m_out = (int32_t)m;
    *hi_out = rc.hi;
    return 1;
}

/* the long tokens of a truncated chain (ex->cont) by count when its last state is a copy of a
 * counted repetition (mc_counted): a token whose tail stays in the run is allowed iff the
 * copies last that long; one that leaves it dies in the run or at its exit byte when no copy
 * takes that byte. 0 (nothing added) when that does not decide every one: the caller walks. */
static int mc_counted_longs(MaskCache *mc, const Run *r, ExitTries *ex, WalkOut *o) {
    Auto *au = mc->au;
    int32_t nchain = r->chain.n;
    if (r->infinite || !r->truncated || nchain != CHAIN_CAP + 1 || r->accmask || !ex->cont) return 0;
    int32_t last = r->chain.a[nchain - 1], m, nlongs;
    int64_t hi;
    if (!mc_counted(mc, r, last, &m, &hi)) return 0;
    const LongRec *longs = vocab_exit_longs(mc->v, ex, &nlongs);
    M256 um = au->st.a[last].umask;
    /* the copy a token is at after its first c tail characters: m + c - CHAIN_CAP */
    for (int32_t k = 0; k < nlongs; k++) {
        const LongRec *x = &longs[k];
        if (x->exit == -1 || !sel_has(o->sel, o->sel_mb, x->first)) continue;
        if ((int64_t)m + x->run - CHAIN_CAP > hi) continue; /* dies inside the run */
        if (x->exit < 0 || m_test(&um, (uint8_t)x->exit)) return 0; /* a live exit: walked */
    }
    for (int32_t k = 0; k < nlongs; k++) {
        const LongRec *x = &longs[k];
        if (x->exit == -1 && sel_has(o->sel, o->sel_mb, x->first) && (int64_t)m + x->run - CHAIN_CAP <= hi)
            VPUSH(*o->ids, x->id);
    }
    wo_note(o, &au->st.a[last]);
    mc->counted_runs++;
    if (tm_debug) fprintf(stderr, "  counted run: copy %d of %lld, %d long tokens by count\n", m, (long long)hi, nlongs);
    return 1;
}

/* the run's tables into res (held), its exits walked from the chain states where they leave
 * (into o's ids and escapes), and its run escape when the frame can return inside it */
static void local_run_tables(MaskCache *mc, PosLocal *res, const Run *r, const int32_t *excl, int32_t nexcl,
                             WalkOut *o) {
    Auto *au = mc->au;
    Vocab *v = mc->v;
    int32_t steps = r->chain.n;
    BaseMask *bm = vocab_base(v, &r->key, r->firsts, r->mb, r->infinite ? -1 : steps);
    res->bases[res->nbase++] = bm;
    ExitTries *ex = vocab_exits(v, &r->key, &r->exits, r->firsts, r->mb);
    res->exits[res->nexit++] = ex;
    /* the run's chain states, copied: walks may grow the state table */
    int32_t nchain = r->chain.n;
    int32_t *chain = tm_xmalloc((size_t)nchain * sizeof(int32_t));
    memcpy(chain, r->chain.a, (size_t)nchain * sizeof(int32_t));
    WalkOut eo = *o;
    eo.has_sel = 1;
    eo.sel[0] = r->firsts[0];
    eo.sel[1] = r->firsts[1];
    eo.sel_mb = r->mb;
    /* the tokens that leave the run, or outlast its chain: long runs of one class (dashes in
     * an email's domain label) walked by count */
    eo.counted = 1;
    int32_t ids0 = o->ids->n, esc0 = o->esc->n;
    for (int32_t q = 0; q < ex->np; q++) {
        if (!ex->tries[q]) continue;
        int32_t c;
        if (q < steps)
            c = chain[q];
        else if (r->infinite)
            c = chain[nchain - 1];
        else
            continue;
        walk_first(mc, c, ex->tries[q], au->st.a[c].umask, 1, &eo);
    }
    int32_t last = chain[nchain - 1];
    if (r->infinite && !((r->accmask >> (nchain - 1)) & 1)) {
        /* a loop that does not return: the long tokens that stay in it are in the base table;
         * those that leave it late are walked from the loop state at their exit */
        if (ex->late) walk_first(mc, last, ex->late, au->st.a[last].umask, 1, &eo);
    } else if (ex->cont && (r->infinite || r->truncated)) {
        /* tokens longer than the chain: by count in a counted repetition, else an exact walk
         * of their rest from its last state */
        if (!mc_counted_longs(mc, r, ex, &eo)) walk_first(mc, last, ex->cont, au->st.a[last].umask, 1, &eo);
    }
    o->maxdepth = eo.maxdepth;
    o->maxstacks = eo.maxstacks;
    if (nexcl) { /* the exceptions' tokens are not U's: walked from where they leave */
        drop_excluded(o->ids, ids0, excl, nexcl);
        for (int32_t e = esc0; e < o->esc->n; e++) {
            o->esc->a[e].excl = excl;
            o->esc->a[e].nexcl = nexcl;
        }
    }
    if (r->accmask) {
        RunEsc e;
        memset(&e, 0, sizeof(e));
        e.key = r->key;
        e.firsts[0] = r->firsts[0];
        e.firsts[1] = r->firsts[1];
        e.mb = r->mb;
        e.infinite = r->infinite;
        e.nchain = nchain;
        e.accmask = r->accmask;
        res->resc = tm_xrealloc(res->resc, (size_t)(res->nresc + 1) * sizeof(RunEsc));
        res->resc[res->nresc++] = e;
    }
    free(chain);
}

/* ---- a run's exceptions: first characters whose state is the loop's but for a few paths -----
 *
 * A key of an object that allows undeclared keys: after its opening quote, most first
 * characters lead into the loop U of any string character (an undeclared key), and the first
 * letters of the declared names into states that follow those names (a trie of declared
 * prefixes, each also an undeclared key) and fall back into U at the first character off them.
 * A token t = c + tail whose first character c leads to such a state has the fate it would
 * have from U as a run character, unless it leaves the run (a quote, a backslash) while still
 * on a declared prefix: its path joins U's at its first character off the prefixes, with the
 * same bytes left. So c joins the run's selection (the base table of the whole class, the
 * exit tries walked from U), and only the prefixes are walked: their exits exactly from the
 * state where they leave, those tokens left out of U's exit walk. Checked on the way, else
 * nothing is kept and c is walked as before: every run character a prefix state meets in
 * the trie is alive (a token that stays in the run is in the base table), no prefix state
 * accepts, and with a run that takes multi-byte characters each prefix state's characters
 * lead to U. */

/* trie nodes an exception walk visits at most (the children of the prefix nodes) */
#define EXC_BUDGET 4096

/* walk the first bytes `first` from L along the states other than U: tokens that stay in the
 * run or reach U are left to the run's tables; those that leave the run before reaching U are
 * walked exactly (into o) and their ids added to excl. 0 when a check fails (the caller
 * rolls o and excl back). */
static int exc_walk(MaskCache *mc, int32_t L, int32_t U, const Run *r, M256 first, WalkOut *o, IVec *excl) {
    Auto *au = mc->au;
    const Vocab *v = mc->v;
    const Trie *t = &v->trie;
    const uint8_t *byte = t->byte;
    const uint16_t *depth = t->depth;
    const int32_t *skip = t->skip, *ends = t->ends;
    int32_t *st = tm_xmalloc((size_t)(t->max_depth + 2) * sizeof(int32_t)); /* walk_range has mc's */
    int64_t visited = 0;
    int ok = 1;
    st[0] = L;
    while (ok && !m_zero(&first)) {
        int b = m_low(&first);
        m_clear(&first, b);
        int32_t i = t->lo[b], hi = t->hi[b];
        while (i < hi) {
            if (++visited > EXC_BUDGET) {
                ok = 0;
                break;
            }
            int32_t d = depth[i], prev = st[d - 1];
            int c = byte[i];
            if (c < 0x80 && run_has(&r->key, (uint8_t)c)) {
                int32_t nx = au_advance(au, prev, c);
                if (nx == U) { /* joins the loop: the run's tables */
                    i = skip[i];
                    continue;
                }
                if (nx < 0 || au->st.a[nx].accepting) {
                    ok = 0;
                    break;
                }
                wo_note(o, &au->st.a[nx]); /* a token ending here stays in the run: the base table */
                st[d] = nx;
                i++;
                continue;
            }
            if (c >= 0x80 && r->utf8) { /* a multi-byte character: into U, or no shortcut */
                if (mc_utf8_virtual(mc, prev) != U) {
                    ok = 0;
                    break;
                }
                i = skip[i];
                continue;
            }
            /* leaves the run at prev: walked exactly, and left out of U's exit walk */
            int32_t end = skip[i];
            for (int32_t j = i; j < end; j++)
                if (ends[j] >= 0) {
                    const int32_t *e = t->end_ids.a + ends[j];
                    for (int32_t x = 1; x <= e[0]; x++) VPUSH(*excl, e[x]);
                }
            walk_range(mc, prev, d - 1, t, i, end, 1, o);
            i = end;
        }
    }
    mc->nodes += visited;
    free(st);
    return ok;
}

/* merge into the run r (a loop reached at once: U = its first state, no return inside it) the
 * groups of first characters not handled yet (done[k] clear) whose states follow a few
 * prefixes before falling into U (exc_walk); their ids left to the prefixes into *excl
 * (sorted), done[k] set */
static void exc_merge(MaskCache *mc, int32_t p, int32_t L, Run *r, const int32_t *targets, const M256 *firsts,
                      int32_t nt, int32_t mb, uint8_t *done, WalkOut *o, IVec *excl) {
    if (!r->infinite || r->chain.n != 1 || r->accmask) return;
    int32_t U = r->chain.a[0];
    M256 run = M_ZERO;
    run.w[0] = r->key.run[0];
    run.w[1] = r->key.run[1];
    for (int32_t k = 0; k < nt; k++) {
        if (done[k] || targets[k] == U || targets[k] == mb) continue;
        M256 f = m_and(firsts[k], M_ASCII), outside = m_andnot(f, run);
        if (m_zero(&f) || !m_zero(&outside) || (f.w[0] & r->firsts[0]) || (f.w[1] & r->firsts[1])) continue;
        int32_t nids = o->ids->n, nesc = o->esc->n, nexcl = excl->n;
        if (!exc_walk(mc, L, U, r, f, o, excl)) {
            o->ids->n = nids;
            o->esc->n = nesc;
            excl->n = nexcl;
            if (tm_debug) fprintf(stderr, "  pos %d target %d: no exception walk\n", p, targets[k]);
            continue;
        }
        done[k] = 1;
        r->firsts[0] |= f.w[0];
        r->firsts[1] |= f.w[1];
        mc->exc_merged++;
        if (tm_debug) fprintf(stderr, "  pos %d target %d: %d first bytes into the run of %d\n", p, targets[k], m_count(&f), U);
    }
    excl->n = sort_unique(excl->a, excl->n);
}

/* walk the first bytes of wfirst from L (the partial first characters' trie too when the
 * complete ones went to a run) */
static void local_walk_rest(MaskCache *mc, int32_t p, int32_t L, M256 wfirst, int mb_done, int nbase, WalkOut *o) {
    Vocab *v = mc->v;
    if (mb_done) {
        walk_first(mc, L, &v->partial, m_and(wfirst, M_HIGH), 1, o);
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
                (long long)est, nbase);
    }
    walk_first(mc, L, &v->trie, wfirst, 1, o);
}

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
    M256 ab = mc_allowed_bytes(mc, L);
    if (!m_zero(&ab)) {
        int32_t targets[260], nt;
        M256 firsts[260], wfirst = ab;
        int32_t mb = local_groups(mc, L, ab, targets, firsts, &nt);
        int mb_done = 0;
        Run r;
        memset(&r, 0, sizeof(r));
        uint8_t done[260]; /* a group given tables: its own, or a run's as its exceptions */
        memset(done, 0, sizeof(done));
        IVec excl = {0};
        for (int32_t k = 0; k < nt && res.nbase < MAX_RUNS; k++) {
            if (done[k] || !local_run(mc, p, targets[k], firsts[k], targets[k] == mb, &r)) continue;
            done[k] = 1;
            if (!res.excl) exc_merge(mc, p, L, &r, targets, firsts, nt, mb, done, &o, &excl);
            if (excl.n && !res.excl) { /* the exceptions of this run (one per position) */
                res.excl = excl.a;
                res.nexcl = excl.n;
                mc->exc_tokens += excl.n;
                mc->bytes += (int64_t)excl.cap * 4;
                memset(&excl, 0, sizeof(excl));
                local_run_tables(mc, &res, &r, res.excl, res.nexcl, &o);
            } else {
                local_run_tables(mc, &res, &r, NULL, 0, &o);
            }
            wfirst.w[0] &= ~r.firsts[0];
            wfirst.w[1] &= ~r.firsts[1];
            if (r.mb) mb_done = 1;
        }
        VFREE(excl);
        VFREE(r.chain);
        local_walk_rest(mc, p, L, wfirst, mb_done, res.nbase, &o);
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
        if (e->nexcl && in_sorted(e->excl, e->nexcl, id)) continue;
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
    IVec ids = {0};
    WalkOut o;
    memset(&o, 0, sizeof(o));
    o.ids = &ids;
    mc->exact_walks++;
    walk_first(mc, sid, &mc->v->trie, mc_allowed_bytes(mc, sid), 0, &o);
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
                int32_t ids0 = ids.n;
                walk_range(mc, k, es.trie->depth[es.node], es.trie, es.node + 1, es.trie->skip[es.node], 0, &o);
                drop_excluded(&ids, ids0, es.excl, es.nexcl);
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
