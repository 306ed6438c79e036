/* The automaton's runtime: states (interned sets of stacks) and their transition memos,
 * advancing by a byte or a special token, the allowed bytes and successors of a state,
 * compaction of the caches, and building and freeing an automaton.
 *
 * A port of toolmask/automaton/_runtime.py (tm_auto.h holds the types, tm_dfa.h the positions).
 */
#ifndef TM_RUNTIME_H
#define TM_RUNTIME_H

/* ---- states ----------------------------------------------------------------------------- */

static inline const int32_t *st_stacks(const Auto *au, const St *s) { return au->intern.pool.a + s->stk_off + 1; }

static int32_t au_make(Auto *au, IVec *set, int accepting) {
    int32_t n = sort_unique(set->a, set->n);
    set->n = n;
    IVec *k = &au->scratch2;
    k->n = 0;
    VRESERVE(*k, n + 1);
    k->a[0] = accepting ? 1 : 0;
    memcpy(k->a + 1, set->a, (size_t)n * sizeof(int32_t));
    k->n = n + 1;
    int fresh;
    int32_t id = arrset_add(&au->intern, k->a, k->n, &fresh);
    if (!fresh) return id;
    St s;
    memset(&s, 0, sizeof(s));
    s.stk_off = au->intern.off.a[id];
    s.nstk = n;
    s.accepting = (uint8_t)(accepting != 0);
    s.utf8_tgt = -3;
    s.cnt_rep = -3;
    s.cnt_next = -1;
    s.cnt_room = -1;
    int32_t md = 0;
    for (int32_t i = 0; i < n; i++) {
        const SNode *x = &au->sn.a[set->a[i]];
        s.umask = m_or(s.umask, AU_POS(au, x->pos)->umask);
        if (x->depth > md) md = x->depth;
    }
    s.maxdepth = md;
    VPUSH(au->st, s);
    au->mut++;
    return id;
}

static int32_t au_advance_miss(Auto *au, int32_t sid, int b);

#define U8_SLOW (-3)

/* the state every complete multi-byte character leads sid to, from the positions' targets
 * (pos_utf8): one closure per stack, as the last byte of the character would do; -2 when no
 * such character is taken (or the result is dead); U8_SLOW when a stack's position has no
 * known target or a cap acts (the caller then follows the characters byte by byte) */
static int32_t au_utf8_fast(Auto *au, int32_t sid) {
    int nst = AU_ST(au, sid)->nstk;
    int32_t local[32];
    int32_t *stk = 2 * nst <= 32 ? local : tm_xmalloc((size_t)(2 * nst) * sizeof(int32_t));
    int32_t *tgt = stk + nst; /* copied: creating states may move the intern pool */
    memcpy(stk, st_stacks(au, AU_ST(au, sid)), (size_t)nst * sizeof(int32_t));
    int32_t out = -2;
    int any = 0;
    for (int i = 0; i < nst; i++) {
        tgt[i] = pos_utf8(au, au->sn.a[stk[i]].pos);
        if (tgt[i] == U8_NONE) {
            out = U8_SLOW;
            goto done;
        }
        any |= tgt[i] >= 0;
    }
    if (any) {
        IVec *set = &au->scratch;
        set->n = 0;
        au_set_begin(au);
        int accepting = 0;
        for (int i = 0; i < nst; i++) {
            if (tgt[i] < 0) continue;
            int r = au_close(au, au->sn.a[stk[i]].parent, tgt[i], set);
            if (r < 0 || set->n > au->lim.max_stacks) {
                out = U8_SLOW;
                goto done;
            }
            accepting = accepting || r;
        }
        if (set->n || accepting) out = au_make(au, set, accepting);
    }
done:
    if (stk != local) free(stk);
    return out;
}

static inline int32_t au_advance(Auto *au, int32_t sid, int b) {
    const int32_t *t = au->st.a[sid].trans;
    if (TM_LIKELY(t != NULL)) {
        int32_t r = t[b];
        if (r != TR_UNKNOWN) return r;
    }
    return au_advance_miss(au, sid, b);
}

static void st_fill(Auto *au, int32_t sid, const M256 *atom, int32_t out) {
    St *S = AU_ST(au, sid);
    if (!S->trans) {
        int32_t *t = au_trans_alloc(au);
        S = AU_ST(au, sid);
        S->trans = t;
    }
    for (int w = 0; w < 4; w++) {
        uint64_t x = atom->w[w];
        while (x) {
            int b = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            S->trans[b] = out;
        }
    }
}

static int32_t au_advance_miss(Auto *au, int32_t sid, int b) {
    St *S = AU_ST(au, sid);
    if (S->trans && S->trans[b] != TR_UNKNOWN) return S->trans[b];
    if (!m_test(&S->umask, b)) {
        M256 one = M_ZERO;
        m_set(&one, b);
        st_fill(au, sid, &one, TR_DEAD);
        return TR_DEAD;
    }
    M256 atom = M_FULL;
    IVec *set = &au->scratch;
    set->n = 0;
    au_set_begin(au);
    int accepting = 0; /* -1: over a cap (dead for the atom) */
    int nst = S->nstk;
    /* copy the stacks: creating states may move the intern pool */
    int32_t local[16];
    int32_t *stk = nst <= 16 ? local : tm_xmalloc((size_t)nst * sizeof(int32_t));
    memcpy(stk, st_stacks(au, S), (size_t)nst * sizeof(int32_t));
    int err = 0;
    for (int i = 0; i < nst; i++) {
        SNode x = au->sn.a[stk[i]];
        Pos *P = AU_POS(au, x.pos);
        int found = 0;
        for (int32_t e = 0; e < P->nedges; e++) {
            if (m_test(&P->edges[e].m, b)) {
                atom = m_and(atom, P->edges[e].m);
                int32_t q = P->edges[e].q;
                found = 1;
                if (q < -1 && (q = dfa_resolve(au, x.pos, e)) < 0) {
                    err = 1;
                    break;
                }
                if (accepting >= 0) {
                    int r = au_close(au, x.parent, q, set);
                    if (r == -2) {
                        err = 1;
                        break;
                    }
                    if (r == -1 || set->n > au->lim.max_stacks)
                        accepting = -1;
                    else
                        accepting = accepting || r;
                }
                break;
            }
        }
        if (err) break;
        if (!found) atom = m_andnot(atom, AU_POS(au, x.pos)->umask);
    }
    if (stk != local) free(stk);
    if (err) { /* a cap of the lazy construction: reject this byte, never raise */
        M256 one = M_ZERO;
        m_set(&one, b);
        st_fill(au, sid, &one, TR_DEAD);
        return TR_DEAD;
    }
    int32_t out;
    if (accepting < 0 || (!set->n && !accepting))
        out = TR_DEAD;
    else
        out = au_make(au, set, accepting);
    st_fill(au, sid, &atom, out);
    return out;
}

/* the bytes that every stack of the state treats exactly like b */
static M256 au_atom(Auto *au, int32_t sid, int b) {
    M256 atom = M_FULL;
    St *S = AU_ST(au, sid);
    const int32_t *stk = st_stacks(au, S);
    for (int32_t i = 0; i < S->nstk; i++) {
        Pos *P = AU_POS(au, au->sn.a[stk[i]].pos);
        int found = 0;
        for (int32_t e = 0; e < P->nedges; e++)
            if (m_test(&P->edges[e].m, b)) {
                atom = m_and(atom, P->edges[e].m);
                found = 1;
                break;
            }
        if (!found) atom = m_andnot(atom, P->umask);
    }
    return atom;
}

static M256 au_allowed_bytes(Auto *au, int32_t sid) {
    St *S = AU_ST(au, sid);
    if (S->allowed_ok) return S->allowed;
    M256 allowed = M_ZERO, todo = S->umask;
    while (!m_zero(&todo)) {
        int b = m_low(&todo);
        M256 atom = au_atom(au, sid, b);
        if (au_advance(au, sid, b) != TR_DEAD) allowed = m_or(allowed, atom);
        todo = m_andnot(todo, atom);
    }
    S = AU_ST(au, sid);
    S->allowed = allowed;
    S->allowed_ok = 1;
    return allowed;
}

/* successors: partition mask by where its bytes lead; fills up to cap (atom, next) pairs */
typedef struct {
    M256 m;
    int32_t next;
} Succ;
typedef VEC(Succ) SuccVec;

static void au_successors(Auto *au, int32_t sid, M256 mask, SuccVec *out) {
    out->n = 0;
    M256 todo = mask;
    while (!m_zero(&todo)) {
        int b = m_low(&todo);
        M256 atom = m_and(au_atom(au, sid, b), todo);
        Succ s = {atom, au_advance(au, sid, b)};
        VPUSH(*out, s);
        todo = m_andnot(todo, atom);
    }
}

/* the ASCII bytes b (NUL excluded) with advance(sid, b) == sid: one advance per atom of the
 * state's ASCII bytes, memoised */
static const uint64_t *st_loop_set(Auto *au, int32_t sid) {
    if (!AU_ST(au, sid)->loop_ok) {
        M256 m = m_and(AU_ST(au, sid)->umask, M_ASCII);
        m_clear(&m, 0);
        SuccVec succ = {0};
        au_successors(au, sid, m, &succ);
        uint64_t l0 = 0, l1 = 0;
        for (int32_t j = 0; j < succ.n; j++)
            if (succ.a[j].next == sid) {
                l0 |= succ.a[j].m.w[0];
                l1 |= succ.a[j].m.w[1];
            }
        VFREE(succ);
        St *S = AU_ST(au, sid);
        S->loop[0] = l0;
        S->loop[1] = l1;
        S->loop_ok = 1;
    }
    return AU_ST(au, sid)->loop;
}

/* the texts of the special edges at the tops of the state (unique) */
static void au_special_names(Auto *au, int32_t sid, IVec *out) {
    out->n = 0;
    St *S = AU_ST(au, sid);
    const int32_t *stk = st_stacks(au, S);
    for (int32_t i = 0; i < S->nstk; i++) {
        Pos *P = AU_POS(au, au->sn.a[stk[i]].pos);
        for (int32_t k = 0; k < P->nspecials; k++)
            if (!in_list(out->a, out->n, P->specials[k].a)) VPUSH(*out, P->specials[k].a);
    }
}

static int32_t au_advance_special(Auto *au, int32_t sid, int32_t text) {
    St *S = AU_ST(au, sid);
    for (int32_t i = 0; i < S->nspec; i++)
        if (S->spec[i].a == text) return S->spec[i].b;
    int nst = S->nstk;
    int32_t *stk = tm_xmalloc((size_t)(nst ? nst : 1) * sizeof(int32_t));
    memcpy(stk, st_stacks(au, S), (size_t)nst * sizeof(int32_t));
    IVec set = {0};
    au_set_begin(au);
    int accepting = 0, found = 0, err = 0;
    for (int i = 0; i < nst; i++) {
        SNode x = au->sn.a[stk[i]];
        Pos *P = AU_POS(au, x.pos);
        int32_t q = -1;
        for (int32_t k = 0; k < P->nspecials; k++)
            if (P->specials[k].a == text) {
                q = P->specials[k].b;
                break;
            }
        if (q < 0) continue;
        found = 1;
        int r = au_close(au, x.parent, q, &set);
        if (r == -2) {
            err = 1;
            break;
        }
        if (r == -1 || set.n > au->lim.max_stacks) {
            accepting = 0;
            set.n = 0;
            break;
        }
        accepting = accepting || r;
    }
    free(stk);
    int32_t out = TR_DEAD;
    if (found && !err && (set.n || accepting)) out = au_make(au, &set, accepting);
    VFREE(set);
    S = AU_ST(au, sid);
    Pair memo = {text, out};
    S->spec = tm_xrealloc(S->spec, (size_t)(S->nspec + 1) * sizeof(Pair));
    S->spec[S->nspec++] = memo;
    au->mut++;
    return out;
}

/* specials accepted in the state, into out (text ids) */
static void au_allowed_specials(Auto *au, int32_t sid, IVec *out) {
    IVec names = {0};
    au_special_names(au, sid, &names);
    out->n = 0;
    for (int32_t i = 0; i < names.n; i++)
        if (au_advance_special(au, sid, names.a[i]) != TR_DEAD) VPUSH(*out, names.a[i]);
    VFREE(names);
}

static int au_is_finished(Auto *au, int32_t sid) {
    if (!AU_ST(au, sid)->accepting) return 0;
    M256 a = au_allowed_bytes(au, sid);
    if (!m_zero(&a)) return 0;
    IVec sp = {0};
    au_allowed_specials(au, sid, &sp);
    int r = sp.n == 0;
    VFREE(sp);
    return r;
}

/* ---- cache generations ------------------------------------------------------------------
 *
 * Past limits.max_cached_states interned states, the automaton starts a new generation: every
 * state that nobody references is dropped with its memo, and the survivors (the initial and
 * dead states, every state with a live Python handle, and the ids in keep[]) are renumbered
 * densely, with the stacks they use. Handles are updated in place, so a state held by a
 * matcher stays valid and keeps its identity. Called only at safe points (the start of an
 * entry point, between the bytes of advance_bytes) where no other state id is held in C.
 * The next generation starts when twice the survivors or max_cached_states exist, whichever
 * is more, so held states never make this quadratic.
 */
static void au_compact(Auto *au, int32_t *keep, int nkeep) {
    au->mut++;
    int32_t n = au->st.n;
    int32_t *map = tm_xmalloc((size_t)n * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) map[i] = au->st.a[i].handle ? 1 : 0;
    map[au->initial] = 1;
    map[au->dead] = 1;
    for (int k = 0; k < nkeep; k++)
        if (keep[k] >= 0) map[keep[k]] = 1;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) map[i] = map[i] ? m++ : -1;
    /* stack nodes reachable from the survivors (parents have smaller ids than children) */
    int32_t nsn = au->sn.n;
    int32_t *smap = tm_xmalloc((size_t)(nsn ? nsn : 1) * sizeof(int32_t));
    for (int32_t i = 0; i < nsn; i++) smap[i] = -1;
    for (int32_t i = 0; i < n; i++) {
        if (map[i] < 0) continue;
        St *s = &au->st.a[i];
        const int32_t *stk = st_stacks(au, s);
        for (int32_t j = 0; j < s->nstk; j++)
            for (int32_t x = stk[j]; x >= 0 && smap[x] < 0; x = au->sn.a[x].parent) smap[x] = 0;
    }
    SNodeVec nsnv = {0};
    for (int32_t i = 0; i < nsn; i++) {
        if (smap[i] < 0) continue;
        smap[i] = nsnv.n;
        SNode x = au->sn.a[i];
        x.parent = x.parent >= 0 ? smap[x.parent] : -1;
        VPUSH(nsnv, x);
    }
    IMap nidx;
    imap_init(&nidx, nsnv.n + 16);
    for (int32_t i = 0; i < nsnv.n; i++) {
        uint64_t key = ((uint64_t)(uint32_t)(nsnv.a[i].parent + 1) << 32) | (uint32_t)nsnv.a[i].pos;
        imap_put(&nidx, key, i);
    }
    ArrSet nint;
    arrset_init(&nint);
    StVec nst = {0};
    IVec key = {0};
    for (int32_t i = 0; i < n; i++) {
        St *s = &au->st.a[i];
        if (map[i] < 0) {
            free(s->spec);
            continue;
        }
        const int32_t *stk = st_stacks(au, s);
        key.n = 0;
        VPUSH(key, s->accepting ? 1 : 0);
        for (int32_t j = 0; j < s->nstk; j++) VPUSH(key, smap[stk[j]]);
        int32_t id = arrset_add(&nint, key.a, key.n, NULL);
        St t = *s;
        free(t.spec);
        t.trans = NULL;
        t.spec = NULL;
        t.nspec = 0;
        t.utf8_tgt = -3;
        t.utf8_fast = 0;
        t.cnt_next = -1;
        t.stk_off = nint.off.a[id];
        if (t.handle) ((StateObject *)t.handle)->sid = id;
        VPUSH(nst, t);
    }
    VFREE(key);
    for (int k = 0; k < nkeep; k++)
        if (keep[k] >= 0) keep[k] = map[keep[k]];
    au->initial = map[au->initial];
    au->dead = map[au->dead];
    VFREE(au->st);
    au->st = nst;
    arrset_free(&au->intern);
    au->intern = nint;
    VFREE(au->sn);
    au->sn = nsnv;
    imap_free(&au->sn_index);
    au->sn_index = nidx;
    free(au->sn_mark);
    au->sn_mark = NULL;
    au->sn_mark_cap = 0;
    au->sn_stamp = 0;
    free(map);
    free(smap);
    au_free_slabs(au); /* every memo was dropped above */
    au->epoch++;
    int64_t next = 2 * (int64_t)au->st.n;
    au->next_compact = next > au->max_cached ? next : au->max_cached;
}

static inline void au_maybe_compact(Auto *au, int32_t *keep, int nkeep) {
    if (TM_UNLIKELY(au->st.n >= au->next_compact)) au_compact(au, keep, nkeep);
}

/* ---- build and free --------------------------------------------------------------------- */

static void au_free(Auto *au) {
    arena_free(&au->arena);
    VFREE(au->nx_tasks);
    for (int32_t i = 0; i < au->ns.npages; i++) free(au->ns.pages[i]);
    free(au->ns.pages);
    memset(&au->ns, 0, sizeof(au->ns));
    VFREE(au->entries);
    VFREE(au->reps);
    VFREE(au->entry_rule);
    free(au->entry_of);
    free(au->mbchoice);
    imap_free(&au->shared);
    free(au->group_exit);
    arrset_free(&au->kernels);
    for (int32_t i = 0; i < au->pos.n; i++) {
        free(au->pos.a[i].edges);
        free(au->pos.a[i].calls);
        free(au->pos.a[i].specials);
    }
    VFREE(au->pos);
    VFREE(au->starts);
    VFREE(au->clo_pool);
    free(au->stamp);
    VFREE(au->sn);
    imap_free(&au->sn_index);
    arrset_free(&au->intern);
    for (int32_t i = 0; i < au->st.n; i++) free(au->st.a[i].spec);
    VFREE(au->st);
    au_free_slabs(au);
    VFREE(au->kscratch);
    VFREE(au->dx_edges);
    VFREE(au->dx_calls);
    VFREE(au->dx_specials);
    VFREE(au->dx_masks);
    VFREE(au->dx_atoms);
    VFREE(au->dx_nw);
    VFREE(au->dx_key);
    VFREE(au->dx_ts);
    VFREE(au->dx_memo);
    VFREE(au->dx_mof);
    VFREE(au->dx_goff);
    VFREE(au->dx_gto);
    VFREE(au->dx_out);
    VFREE(au->lazy);
    VFREE(au->kstack);
    free(au->sn_mark);
    VFREE(au->scratch);
    VFREE(au->scratch2);
    an_free(&au->an);
    ir_free(&au->ir);
}

/* after ir is filled: analysis, initial state. 0, or -1 with au->err */
static int au_init(Auto *au, const TmLimits *lim) {
    au->lim = *lim;
    au->max_nstates = 2 * lim->max_automaton_states;
    au->pos_cap = lim->max_automaton_states;
    au->max_cached = (int32_t)(lim->max_cached_states > 16 ? (lim->max_cached_states < INT32_MAX ? lim->max_cached_states : INT32_MAX) : 16);
    au->next_compact = au->max_cached;
    arrset_init(&au->kernels);
    arrset_init(&au->intern);
    if (an_init(&au->an, &au->ir, lim) < 0) {
        au->err = au->an.err;
        return -1;
    }
    au->entry_of = tm_xmalloc((size_t)(au->ir.nrules ? au->ir.nrules : 1) * sizeof(int32_t));
    for (int32_t i = 0; i < au->ir.nrules; i++) au->entry_of[i] = -1;
    int32_t ng = an_ngroups(&au->an);
    au->group_exit = tm_xmalloc((size_t)(ng ? ng : 1) * sizeof(int32_t));
    for (int32_t i = 0; i < ng; i++) au->group_exit[i] = -1;
    IVec empty = {0};
    au->dead = au_make(au, &empty, 0);
    VFREE(empty);
    int32_t eid = nfa_entry(au, au->ir.start);
    if (eid < 0) return -1;
    int32_t start = dfa_start(au, eid);
    if (start < 0) return -1;
    IVec set = {0};
    au_set_begin(au);
    int r = au_close(au, -1, start, &set);
    if (r == -2) {
        VFREE(set);
        return -1;
    }
    au->initial = r == -1 ? au->dead : au_make(au, &set, r);
    VFREE(set);
    if (tm_now() > au->an.deadline) {
        au->err = E_DEADLINE;
        return -1;
    }
    return 0;
}

static int64_t au_bytes(Auto *au) {
    if (au->bytes_memo && au->bytes_mut == au->mut) return au->bytes_memo;
    int64_t n = ir_bytes(&au->ir) + an_bytes(&au->an);
    n += (int64_t)au->ns.npages * NS_PAGE * (int64_t)sizeof(NState) + arrset_bytes(&au->kernels) + VBYTES(au->pos) + VBYTES(au->clo_pool);
    n += au->arena.bytes + VBYTES(au->nx_tasks);
    for (int32_t i = 0; i < au->pos.n; i++) {
        const Pos *p = &au->pos.a[i];
        n += (int64_t)p->nedges * sizeof(Edge) + (int64_t)p->ncalls * sizeof(Call) +
             (int64_t)p->nspecials * sizeof(Pair);
    }
    n += VBYTES(au->sn) + imap_bytes(&au->sn_index) + arrset_bytes(&au->intern) + VBYTES(au->st);
    n += (int64_t)au->slabs.n * TRANS_SLAB * 256 * (int64_t)sizeof(int32_t);
    for (int32_t i = 0; i < au->st.n; i++) n += (int64_t)au->st.a[i].nspec * sizeof(Pair);
    n += au->stamp_cap * 4 + au->sn_mark_cap * 4 + imap_bytes(&au->shared);
    if (au->mbchoice) n += au->ir.nodes.n;
    n += VBYTES(au->lazy) + VBYTES(au->reps);
    au->bytes_mut = au->mut;
    au->bytes_memo = n;
    return n;
}

#endif
