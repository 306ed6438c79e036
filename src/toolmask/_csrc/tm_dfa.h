/* The automaton's lazy DFA positions: sets of NFA states (kernels) and their byte rows,
 * the stacks (hash-consed nodes) and the static closures of positions through calls.
 *
 * A port of toolmask/automaton/_dfa.py (tm_auto.h holds the types, tm_nfa.h builds the NFA
 * states a kernel is made of).
 */
#ifndef TM_DFA_H
#define TM_DFA_H

/* ---- DFA positions ---------------------------------------------------------------------- */

static void au_stamp_grow(Auto *au) {
    if (au->stamp_cap >= au->ns.n) return;
    int64_t c = au->stamp_cap ? au->stamp_cap : 256;
    while (c < au->ns.n) c *= 2;
    au->stamp = tm_xrealloc(au->stamp, (size_t)c * sizeof(int32_t));
    memset(au->stamp + au->stamp_cap, 0, (size_t)(c - au->stamp_cap) * sizeof(int32_t));
    au->stamp_cap = c;
}

/* the kernel of the epsilon closure of seeds (expanding NFA states on the way), sorted into
 * out; -1 on a cap */
static int dfa_kernel(Auto *au, const int32_t *seeds, int32_t nseeds, IVec *out) {
    out->n = 0;
    if (++au->cur_stamp == INT32_MAX) {
        memset(au->stamp, 0, (size_t)au->stamp_cap * sizeof(int32_t));
        au->cur_stamp = 1;
    }
    int32_t stamp = au->cur_stamp;
    IVec stack = au->kstack; /* scratch, given back below */
    memset(&au->kstack, 0, sizeof(IVec));
    stack.n = 0;
    au_stamp_grow(au);
    for (int32_t i = 0; i < nseeds; i++) {
        if (au->stamp[seeds[i]] != stamp) {
            au->stamp[seeds[i]] = stamp;
            VPUSH(stack, seeds[i]);
        }
    }
    int rc = 0;
    while (stack.n) {
        int32_t s = stack.a[--stack.n];
        if (!AU_NS(au, s)->expanded) {
            if (nfa_expand(au, s) < 0) {
                rc = -1;
                break;
            }
            au_stamp_grow(au);
        }
        NState *S = AU_NS(au, s);
        if (S->byte.n || S->call.n || S->special.n || S->is_exit) VPUSH(*out, s);
        for (int32_t i = 0; i < S->eps.n; i++) {
            int32_t t = S->eps.a[i];
            if (au->stamp[t] != stamp) {
                au->stamp[t] = stamp;
                VPUSH(stack, t);
            }
        }
    }
    if (au->kstack.a) VFREE(au->kstack);
    au->kstack = stack;
    if (rc == 0) out->n = sort_unique(out->a, out->n);
    return rc;
}

static int32_t dfa_position(Auto *au, const IVec *key) {
    int32_t p = arrset_find(&au->kernels, key->a, key->n);
    if (p >= 0) return p;
    p = arrset_count(&au->kernels);
    if (p >= au->pos_cap || au->dfa_broken) {
        au->dfa_broken = 1;
        au->err = E_STATES;
        return -1;
    }
    arrset_add(&au->kernels, key->a, key->n, NULL);
    Pos z;
    memset(&z, 0, sizeof(z));
    VPUSH(au->pos, z);
    au->mut++;
    return p;
}

static int32_t dfa_pos_of(Auto *au, const int32_t *seeds, int32_t n) {
    IVec k = au->kscratch; /* scratch (re-entrant: taken, then given back) */
    memset(&au->kscratch, 0, sizeof(IVec));
    k.n = 0;
    int32_t p = -1;
    if (dfa_kernel(au, seeds, n, &k) == 0) p = dfa_position(au, &k);
    if (au->kscratch.a) VFREE(au->kscratch);
    au->kscratch = k;
    return p;
}

static int32_t dfa_start(Auto *au, int32_t eid) {
    int32_t p = au->starts.a[eid];
    if (p >= 0) return p;
    p = dfa_pos_of(au, &au->entries.a[eid], 1);
    if (p < 0) return -1;
    au->starts.a[eid] = p;
    return p;
}

static int dfa_bare_exit(Auto *au, int32_t q) {
    int32_t n;
    const int32_t *k = arrset_get(&au->kernels, q, &n);
    for (int32_t i = 0; i < n; i++)
        if (!AU_NS(au, k[i])->is_exit) return 0;
    return 1;
}

/* the position of a lazy edge's target set (Edge.q = -2 - offset into au->lazy); -1 on a cap */
static int32_t dfa_resolve(Auto *au, int32_t p, int32_t e) {
    int32_t off = -2 - AU_POS(au, p)->edges[e].q;
    int32_t n = au->lazy.a[off];
    int32_t local[8];
    int32_t *ts = n <= 8 ? local : tm_xmalloc((size_t)n * sizeof(int32_t));
    memcpy(ts, au->lazy.a + off + 1, (size_t)n * sizeof(int32_t));
    int32_t q = dfa_pos_of(au, ts, n);
    if (ts != local) free(ts);
    if (q >= 0) AU_POS(au, p)->edges[e].q = q;
    return q;
}

/* the targets of the edges that intersect atom, sorted and unique, into au->dx_ts; whether
 * the atom's position can wait until a byte takes it: its targets are all inside multi-byte
 * characters, or all inside sequences (after a string's backslash: the escape's next byte;
 * a counted string would otherwise build that position for every character copy, and a mask
 * walks it only where a token has a backslash there) */
static int dfa_atom_targets(Auto *au, const M256 *atom, int32_t x) {
    IVec *ts = &au->dx_ts;
    ts->n = 0;
    const BEdgeVec *E = &au->dx_edges;
    if (au->dx_disjoint) { /* atom x is mask x: its edges' targets, grouped by dfa_atoms */
        int32_t lo = au->dx_goff.a[x], hi = au->dx_goff.a[x + 1];
        VRESERVE(*ts, hi - lo);
        memcpy(ts->a, au->dx_gto.a + lo, (size_t)(hi - lo) * sizeof(int32_t));
        ts->n = hi - lo;
    } else {
        for (int32_t i = 0; i < E->n; i++) {
            M256 both = m_and(E->a[i].m, *atom);
            if (!m_zero(&both)) VPUSH(*ts, E->a[i].to);
        }
    }
    ts->n = sort_unique(ts->a, ts->n);
    int mid = ts->n > 0, inner = ts->n > 0;
    for (int32_t i = 0; i < ts->n && (mid || inner); i++) {
        mid = mid && AU_NS(au, ts->a[i])->mid;
        inner = inner && AU_NS(au, ts->a[i])->inner;
    }
    return mid || inner;
}

/* the tos of the pairs with key k, sorted and unique, into au->dx_ts */
static void dfa_key_targets(Auto *au, const PairVec *v, int32_t k) {
    IVec *ts = &au->dx_ts;
    ts->n = 0;
    for (int32_t i = 0; i < v->n; i++)
        if (v->a[i].a == k) VPUSH(*ts, v->a[i].b);
    ts->n = sort_unique(ts->a, ts->n);
}

/* a kernel of one NFA state with one byte edge (a literal's inside): its row without atoms;
 * -1 on a cap */
static int dfa_expand_single(Auto *au, int32_t p, const NState *S) {
    M256 m = S->byte.a[0].m;
    int32_t t = S->byte.a[0].to, isx = S->is_exit;
    int32_t q;
    if (AU_NS(au, t)->mid) { /* lazy */
        q = -2 - au->lazy.n;
        VPUSH(au->lazy, 1);
        VPUSH(au->lazy, t);
    } else {
        q = dfa_pos_of(au, &t, 1);
        if (q < 0) return -1;
    }
    Pos *P = AU_POS(au, p);
    P->edges = tm_xmalloc(sizeof(Edge));
    P->edges[0].m = m;
    P->edges[0].q = q;
    P->nedges = 1;
    P->umask = m;
    P->final = (uint8_t)isx;
    P->consuming = 1;
    P->done = 1;
    au->mut++;
    return 0;
}

/* the byte edges, calls and specials of the kernel's NFA states into au->dx_edges, dx_calls,
 * dx_specials; whether one of them is an exit */
static int dfa_gather(Auto *au, const IVec *key) {
    BEdgeVec *E = &au->dx_edges;
    PairVec *C = &au->dx_calls, *SP = &au->dx_specials;
    E->n = C->n = SP->n = 0;
    int final = 0;
    for (int32_t i = 0; i < key->n; i++) {
        NState *S = AU_NS(au, key->a[i]);
        if (S->is_exit) final = 1;
        VRESERVE(*E, S->byte.n);
        memcpy(E->a + E->n, S->byte.a, (size_t)S->byte.n * sizeof(BEdge));
        E->n += S->byte.n;
        VRESERVE(*C, S->call.n);
        memcpy(C->a + C->n, S->call.a, (size_t)S->call.n * sizeof(Pair));
        C->n += S->call.n;
        VRESERVE(*SP, S->special.n);
        memcpy(SP->a + SP->n, S->special.a, (size_t)S->special.n * sizeof(Pair));
        SP->n += S->special.n;
    }
    return final;
}

/* the atoms of au->dx_edges (maximal byte sets every edge treats alike) into au->dx_atoms;
 * returns the union of the edges' masks */
static M256 dfa_atoms(Auto *au) {
    const BEdgeVec *E = &au->dx_edges;
    M256 uni = M_ZERO;
    /* the distinct masks, in order of first appearance */
    au->dx_masks.n = 0;
    au->dx_mof.n = 0;
    VRESERVE(au->dx_mof, E->n);
    int total = 0;
    for (int32_t i = 0; i < E->n; i++) {
        int32_t x = 0;
        while (x < au->dx_masks.n && !m_eq(&au->dx_masks.a[x], &E->a[i].m)) x++;
        au->dx_mof.a[au->dx_mof.n++] = x;
        if (x < au->dx_masks.n) continue;
        VPUSH(au->dx_masks, E->a[i].m);
        uni = m_or(uni, E->a[i].m);
        total += m_count(&E->a[i].m);
    }
    au->dx_atoms.n = 0;
    au->dx_disjoint = total == m_count(&uni);
    if (au->dx_disjoint) { /* the masks are the atoms; their edges' targets grouped by mask */
        int32_t nm = au->dx_masks.n;
        au->dx_goff.n = 0;
        VRESERVE(au->dx_goff, nm + 1);
        memset(au->dx_goff.a, 0, (size_t)(nm + 1) * sizeof(int32_t));
        au->dx_goff.n = nm + 1;
        for (int32_t i = 0; i < E->n; i++) au->dx_goff.a[au->dx_mof.a[i] + 1]++;
        for (int32_t x = 0; x < nm; x++) au->dx_goff.a[x + 1] += au->dx_goff.a[x];
        au->dx_gto.n = 0;
        VRESERVE(au->dx_gto, E->n);
        au->dx_gto.n = E->n;
        for (int32_t i = 0; i < E->n; i++) au->dx_gto.a[au->dx_goff.a[au->dx_mof.a[i]]++] = E->a[i].to;
        for (int32_t x = nm; x > 0; x--) au->dx_goff.a[x] = au->dx_goff.a[x - 1];
        au->dx_goff.a[0] = 0;
        VRESERVE(au->dx_atoms, au->dx_masks.n);
        memcpy(au->dx_atoms.a, au->dx_masks.a, (size_t)au->dx_masks.n * sizeof(M256));
        au->dx_atoms.n = au->dx_masks.n;
        return uni;
    }
    for (int32_t x = 0; x < au->dx_masks.n; x++) {
        M256 m = au->dx_masks.a[x], rest = m;
        au->dx_nw.n = 0;
        for (int32_t y = 0; y < au->dx_atoms.n; y++) {
            M256 a = au->dx_atoms.a[y], both = m_and(a, m);
            if (!m_zero(&both)) {
                VPUSH(au->dx_nw, both);
                if (!m_eq(&a, &both)) {
                    M256 d = m_andnot(a, both);
                    VPUSH(au->dx_nw, d);
                }
                rest = m_andnot(rest, a);
            } else {
                VPUSH(au->dx_nw, a);
            }
        }
        if (!m_zero(&rest)) VPUSH(au->dx_nw, rest);
        au->dx_atoms.n = 0;
        VRESERVE(au->dx_atoms, au->dx_nw.n);
        memcpy(au->dx_atoms.a, au->dx_nw.a, (size_t)au->dx_nw.n * sizeof(M256));
        au->dx_atoms.n = au->dx_nw.n;
    }
    return uni;
}

/* each atom's position (lazy where dfa_atom_targets says it can wait), atoms with the same
 * position merged into one edge; the edges into *out (malloc'd). -1 on a cap */
static int dfa_atom_edges(Auto *au, Edge **out, int32_t *nout) {
    /* memo: [len, q, ts...] */
    au->dx_out.n = 0;
    au->dx_memo.n = 0;
    for (int32_t x = 0; x < au->dx_atoms.n; x++) {
        M256 atom = au->dx_atoms.a[x];
        int lazy = dfa_atom_targets(au, &atom, x);
        IVec *ts = &au->dx_ts;
        int32_t q = -1;
        if (lazy) {
            q = -2 - au->lazy.n;
            VPUSH(au->lazy, ts->n);
            VRESERVE(au->lazy, ts->n);
            memcpy(au->lazy.a + au->lazy.n, ts->a, (size_t)ts->n * sizeof(int32_t));
            au->lazy.n += ts->n;
            Edge ed = {atom, q};
            VPUSH(au->dx_out, ed);
            continue;
        }
        for (int32_t y = 0; y < au->dx_memo.n; y += 2 + au->dx_memo.a[y])
            if (au->dx_memo.a[y] == ts->n &&
                memcmp(au->dx_memo.a + y + 2, ts->a, (size_t)ts->n * sizeof(int32_t)) == 0) {
                q = au->dx_memo.a[y + 1];
                break;
            }
        if (q < 0) {
            q = dfa_pos_of(au, ts->a, ts->n);
            if (q < 0) return -1;
            ts = &au->dx_ts;
            VPUSH(au->dx_memo, ts->n);
            VPUSH(au->dx_memo, q);
            VRESERVE(au->dx_memo, ts->n);
            memcpy(au->dx_memo.a + au->dx_memo.n, ts->a, (size_t)ts->n * sizeof(int32_t));
            au->dx_memo.n += ts->n;
        }
        int merged = 0;
        for (int32_t y = 0; y < au->dx_out.n && !merged; y++)
            if (au->dx_out.a[y].q == q) {
                au->dx_out.a[y].m = m_or(au->dx_out.a[y].m, atom);
                merged = 1;
            }
        if (!merged) {
            Edge ed = {atom, q};
            VPUSH(au->dx_out, ed);
        }
    }
    *nout = au->dx_out.n;
    *out = tm_xmalloc((size_t)(*nout ? *nout : 1) * sizeof(Edge));
    memcpy(*out, au->dx_out.a, (size_t)*nout * sizeof(Edge));
    return 0;
}

/* the calls of au->dx_calls, one per (entry, return position), into *out (malloc'd); -1 on a
 * cap */
static int dfa_call_edges(Auto *au, Call **out, int32_t *nout) {
    PairVec *C = &au->dx_calls;
    Call *calls = tm_xmalloc((size_t)(C->n ? C->n : 1) * sizeof(Call));
    int32_t ncalls = 0;
    *out = calls;
    *nout = 0;
    for (int32_t i = 0; i < C->n; i++) {
        int32_t k = C->a[i].a, first = 1;
        for (int32_t j = 0; j < i && first; j++) first = C->a[j].a != k;
        if (!first) continue;
        int32_t x0 = dfa_start(au, k);
        if (x0 < 0) return -1;
        dfa_key_targets(au, C, k);
        int32_t q = dfa_pos_of(au, au->dx_ts.a, au->dx_ts.n);
        if (q < 0) return -1;
        Call c = {x0, q, (uint8_t)dfa_bare_exit(au, q)};
        int dup = 0;
        for (int32_t y = 0; y < ncalls; y++)
            if (calls[y].x0 == c.x0 && calls[y].q == c.q && calls[y].tail == c.tail) dup = 1;
        if (!dup) calls[ncalls++] = c;
        *nout = ncalls;
    }
    return 0;
}

/* the special tokens of au->dx_specials, one per text, into *out (malloc'd); -1 on a cap */
static int dfa_special_edges(Auto *au, Pair **out, int32_t *nout) {
    PairVec *SP = &au->dx_specials;
    Pair *specials = tm_xmalloc((size_t)(SP->n ? SP->n : 1) * sizeof(Pair));
    *out = specials;
    *nout = 0;
    for (int32_t i = 0; i < SP->n; i++) {
        int32_t k = SP->a[i].a, first = 1;
        for (int32_t j = 0; j < i && first; j++) first = SP->a[j].a != k;
        if (!first) continue;
        dfa_key_targets(au, SP, k);
        int32_t q = dfa_pos_of(au, au->dx_ts.a, au->dx_ts.n);
        if (q < 0) return -1;
        specials[*nout].a = k;
        specials[*nout].b = q;
        (*nout)++;
    }
    return 0;
}

/* compute the row of position p (idempotent); -1 on a cap.
 *
 * The byte edges of the kernel's NFA states are split into atoms (maximal byte sets every
 * edge treats alike); an atom leads to the position of its targets' closure, atoms with the
 * same position are merged into one edge. An atom whose targets are all inside multi-byte
 * characters (the states after a lead byte of a UTF-8 choice) or inside sequences is left
 * unresolved until a byte takes it (dfa_resolve): a mask rarely needs them (pos_utf8), and a
 * counted string would otherwise build ~17 such positions per character copy. */
static int dfa_expand(Auto *au, int32_t p) {
    if (AU_POS(au, p)->done) return 0;
    if (au->dfa_broken) {
        au->err = E_STATES;
        return -1;
    }
    int32_t klen;
    const int32_t *kp = arrset_get(&au->kernels, p, &klen);
    /* copy: the kernel pool may move while positions are created */
    IVec *key = &au->dx_key;
    key->n = 0;
    VRESERVE(*key, klen);
    memcpy(key->a, kp, (size_t)klen * sizeof(int32_t));
    key->n = klen;
    if (klen == 1) {
        NState *S = AU_NS(au, key->a[0]);
        if (S->byte.n == 1 && !S->call.n && !S->special.n) return dfa_expand_single(au, p, S);
    }
    int final = dfa_gather(au, key);
    Edge *edges = NULL;
    Call *calls = NULL;
    Pair *specials = NULL;
    int32_t nedges = 0, ncalls = 0, nspecials = 0;
    M256 uni = M_ZERO;
    int rc = 0;
    if (au->dx_edges.n) {
        uni = dfa_atoms(au);
        rc = dfa_atom_edges(au, &edges, &nedges);
    }
    if (rc == 0 && au->dx_calls.n) rc = dfa_call_edges(au, &calls, &ncalls);
    if (rc == 0 && au->dx_specials.n) rc = dfa_special_edges(au, &specials, &nspecials);
    if (rc < 0) {
        free(edges);
        free(calls);
        free(specials);
        return -1;
    }
    Pos *P = AU_POS(au, p);
    P->edges = edges;
    P->nedges = nedges;
    P->umask = uni;
    P->calls = calls;
    P->ncalls = ncalls;
    P->specials = specials;
    P->nspecials = nspecials;
    P->final = (uint8_t)final;
    P->consuming = (uint8_t)(!m_zero(&uni) || nspecials);
    P->done = 1;
    au->mut++;
    return 0;
}

/* ---- stacks ----------------------------------------------------------------------------- */

static inline int32_t sn_depth(const Auto *au, int32_t s) { return s < 0 ? 0 : au->sn.a[s].depth; }

static int32_t sn_push(Auto *au, int32_t base, int32_t pos) {
    uint64_t key = ((uint64_t)(uint32_t)(base + 1) << 32) | (uint32_t)pos;
    int32_t id = imap_get(&au->sn_index, key, -1);
    if (id >= 0) return id;
    id = au->sn.n;
    SNode n = {base, pos, sn_depth(au, base) + 1};
    VPUSH(au->sn, n);
    au->mut++;
    imap_put(&au->sn_index, key, id);
    return id;
}

/* a set of stack ids being built: stamp marks for O(1) dedupe */
static void au_set_begin(Auto *au) {
    if (++au->sn_stamp == INT32_MAX) {
        memset(au->sn_mark, 0, (size_t)au->sn_mark_cap * sizeof(int32_t));
        au->sn_stamp = 1;
    }
}

static inline void au_set_add(Auto *au, IVec *set, int32_t id) {
    if (id >= au->sn_mark_cap) {
        int64_t c = au->sn_mark_cap ? au->sn_mark_cap : 256;
        while (c <= id) c *= 2;
        au->sn_mark = tm_xrealloc(au->sn_mark, (size_t)c * sizeof(int32_t));
        memset(au->sn_mark + au->sn_mark_cap, 0, (size_t)(c - au->sn_mark_cap) * sizeof(int32_t));
        au->sn_mark_cap = c;
    }
    if (au->sn_mark[id] != au->sn_stamp) {
        au->sn_mark[id] = au->sn_stamp;
        VPUSH(*set, id);
    }
}

/* ---- static closures -------------------------------------------------------------------- */

/* 1 computed, 0 overflow (None in Python), -1 cap error */
static int au_static_closure(Auto *au, int32_t p) {
    if (!AU_POS(au, p)->done && dfa_expand(au, p) < 0) return -1;
    if (!AU_POS(au, p)->ncalls) { /* no calls: the position itself, returning if final */
        int32_t off = au->clo_pool.n;
        int consuming = AU_POS(au, p)->consuming;
        if (consuming) {
            VPUSH(au->clo_pool, 1);
            VPUSH(au->clo_pool, p);
        }
        Pos *P = AU_POS(au, p);
        P->clo_off = off;
        P->clo_n = consuming ? 1 : 0;
        P->returns = P->final;
        P->clo_ok = 1;
        au->mut++;
        return 1;
    }
    int64_t max_depth = au->lim.max_stack_depth, budget = 4 * au->lim.max_stacks + 16;
    ArrSet seen;
    arrset_init(&seen);
    IVec work = {0}, out = {0}, buf = {0};
    int returns = 0, rc = 1;
    int32_t first[1] = {p};
    VPUSH(work, arrset_add(&seen, first, 1, NULL));
    while (work.n) {
        int32_t sid = work.a[--work.n];
        int32_t len;
        const int32_t *s0 = arrset_get(&seen, sid, &len);
        buf.n = 0;
        VRESERVE(buf, len + 1);
        memcpy(buf.a, s0, (size_t)len * sizeof(int32_t));
        buf.n = len;
        int32_t top = buf.a[len - 1];
        if (!AU_POS(au, top)->done && dfa_expand(au, top) < 0) {
            rc = -1;
            goto done;
        }
        Pos *P = AU_POS(au, top);
        if (P->consuming) VPUSH(out, sid);
        if (P->final) {
            if (len == 1)
                returns = 1;
            else {
                int fresh;
                int32_t nid = arrset_add(&seen, buf.a, len - 1, &fresh);
                if (fresh) VPUSH(work, nid);
            }
        }
        P = AU_POS(au, top);
        for (int32_t c = 0; c < P->ncalls; c++) {
            Call cl = P->calls[c];
            int32_t nlen;
            if (cl.tail) {
                buf.a[len - 1] = cl.x0;
                nlen = len;
            } else {
                VRESERVE(buf, len + 1);
                buf.a[len - 1] = cl.q;
                buf.a[len] = cl.x0;
                nlen = len + 1;
            }
            if (nlen <= max_depth) {
                int fresh;
                int32_t nid = arrset_add(&seen, buf.a, nlen, &fresh);
                if (fresh) VPUSH(work, nid);
            }
            /* restore buf to the current stack */
            int32_t l2;
            const int32_t *again = arrset_get(&seen, sid, &l2);
            memcpy(buf.a, again, (size_t)l2 * sizeof(int32_t));
            P = AU_POS(au, top);
        }
        if (arrset_count(&seen) > budget || out.n > au->lim.max_stacks) {
            rc = 0;
            goto done;
        }
    }
    {
        Pos *P = AU_POS(au, p);
        P->clo_off = au->clo_pool.n;
        P->clo_n = out.n;
        for (int32_t i = 0; i < out.n; i++) {
            int32_t len;
            const int32_t *s = arrset_get(&seen, out.a[i], &len);
            VPUSH(au->clo_pool, len);
            for (int32_t k = 0; k < len; k++) VPUSH(au->clo_pool, s[k]);
        }
        P = AU_POS(au, p);
        P->returns = (uint8_t)returns;
        P->clo_ok = 1;
        au->mut++;
    }
done:
    arrset_free(&seen);
    VFREE(work);
    VFREE(out);
    VFREE(buf);
    return rc;
}

/* add the closed stacks of base + (p,) to set; 1/0: whether the parse can end; -1 overflow
 * (None in Python); -2 cap error (LimitError in Python) */
static int au_close(Auto *au, int32_t base, int32_t p, IVec *set) {
    int64_t max_depth = au->lim.max_stack_depth;
    for (;;) {
        if (!AU_POS(au, p)->clo_ok) {
            int r = au_static_closure(au, p);
            if (r < 0) return -2;
            if (r == 0) return -1;
        }
        Pos *P = AU_POS(au, p);
        int64_t room = max_depth - sn_depth(au, base);
        const int32_t *c = au->clo_pool.a + P->clo_off;
        for (int32_t i = 0; i < P->clo_n; i++) {
            int32_t len = *c++;
            if (len <= room) {
                int32_t s = base;
                for (int32_t k = 0; k < len; k++) s = sn_push(au, s, c[k]);
                au_set_add(au, set, s);
            }
            c += len;
        }
        P = AU_POS(au, p);
        if (!P->returns) return 0;
        if (base < 0) return 1;
        p = au->sn.a[base].pos;
        base = au->sn.a[base].parent;
    }
}

/* ---- UTF-8 targets of positions and states ---------------------------------------------- */

#define U8_UNKNOWN 0
#define U8_NONE (-1) /* not known without expanding the characters' positions */
#define U8_DEAD (-2) /* no multi-byte character is taken here */

/* the position every complete multi-byte character leads p to (through intermediate
 * positions that are neither final nor calling), U8_DEAD, or U8_NONE; from the NFA states of
 * p's kernel (NState.mb_to), so the intermediate positions are never built. Memoised. */
static int32_t pos_utf8(Auto *au, int32_t p) {
    int32_t u = AU_POS(au, p)->u8;
    if (u != U8_UNKNOWN) return u > 0 ? u - 1 : u;
    int32_t klen;
    const int32_t *k = arrset_get(&au->kernels, p, &klen);
    int32_t tos[8], nt = 0, r = U8_DEAD;
    for (int32_t i = 0; i < klen; i++) {
        int32_t m = AU_NS(au, k[i])->mb_to;
        if (m == 0) continue;
        if (m < 0 || (!in_list(tos, nt, m - 1) && nt == 8)) {
            r = U8_NONE;
            break;
        }
        if (!in_list(tos, nt, m - 1)) tos[nt++] = m - 1;
    }
    if (r == U8_DEAD && nt) {
        int32_t q = dfa_pos_of(au, tos, nt);
        r = q < 0 ? U8_NONE : q;
    }
    AU_POS(au, p)->u8 = r >= 0 ? r + 1 : r;
    return r;
}

#endif
