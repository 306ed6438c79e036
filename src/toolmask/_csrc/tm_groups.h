/* Grammar analysis, second part: the cyclic components of the rule graph (groups of rules
 * that reach each other through first references, compiled as one automaton fragment, with a
 * left recursion detected here), the inlining decision and the analysis entry point.
 *
 * A port of the second half of toolmask/automaton/_analysis.py (tm_analysis.h holds the types,
 * the scan, the strongly connected components and the nullable/productive properties).
 */
#ifndef TM_GROUPS_H
#define TM_GROUPS_H

/* ---- cyclic components ------------------------------------------------------------------ */

static int in_list(const int32_t *xs, int32_t n, int32_t x) {
    for (int32_t i = 0; i < n; i++)
        if (xs[i] == x) return 1;
    return 0;
}

/* members of the component that body can start with (through nullable prefixes) */
static void an_first_refs(Analysis *a, int32_t body, int32_t comp, IVec *out) {
    IVec st = {0};
    VPUSH(st, body);
    while (st.n) {
        const Node *n = NODE(a, st.a[--st.n]);
        switch (n->kind) {
        case K_REF:
            if (a->scc_id[n->a] == comp && !in_list(out->a, out->n, n->a)) VPUSH(*out, n->a);
            break;
        case K_SEQ:
            for (int32_t i = 0; i < n->b; i++) {
                int32_t it = KIDS(a, n)[i];
                VPUSH(st, it);
                if (!an_node_prop(a, it, P_NULLABLE)) break;
            }
            break;
        case K_CHOICE:
            for (int32_t i = 0; i < n->b; i++) VPUSH(st, KIDS(a, n)[i]);
            break;
        case K_REPEAT:
            if (n->hi != 0) VPUSH(st, n->a);
            break;
        }
    }
    VFREE(st);
}

typedef struct {
    int32_t rule;
    uint8_t tail;
} RT;
typedef VEC(RT) RTVec;

static void an_internal_refs(Analysis *a, int32_t m, int32_t comp, RTVec *found) {
    typedef struct {
        int32_t node;
        uint8_t tail;
    } NT;
    VEC(NT) st = {0};
    NT first = {a->ir->body.a[m], 1};
    VPUSH(st, first);
    found->n = 0;
    while (st.n) {
        NT x = st.a[--st.n];
        const Node *n = NODE(a, x.node);
        if (n->kind == K_REF) {
            if (a->scc_id[n->a] == comp) {
                RT r = {n->a, x.tail};
                VPUSH(*found, r);
            }
        } else if (n->kind == K_SEQ) {
            int32_t last = n->b - 1;
            while (last >= 0) {
                const Node *it = NODE(a, KIDS(a, n)[last]);
                if (it->kind == K_BYTES && it->b == 0)
                    last--;
                else
                    break;
            }
            for (int32_t j = 0; j < n->b; j++) {
                NT y = {KIDS(a, n)[j], (uint8_t)(x.tail && j >= last)};
                VPUSH(st, y);
            }
        } else if (n->kind == K_CHOICE) {
            for (int32_t j = 0; j < n->b; j++) {
                NT y = {KIDS(a, n)[j], x.tail};
                VPUSH(st, y);
            }
        } else if (n->kind == K_REPEAT) {
            NT y = {n->a, (uint8_t)(x.tail && n->hi >= 0 && n->hi <= 1)};
            VPUSH(st, y);
        }
    }
    VFREE(st);
}

/* is there a non-empty path src -> ... -> dst through allowed nodes? */
static int an_reaches(int32_t src, int32_t dst, IVec *inner, uint8_t *allowed, int32_t nr) {
    uint8_t *seen = tm_xcalloc((size_t)nr, 1);
    IVec st = {0};
    int found = 0;
    for (int32_t i = 0; i < inner[src].n; i++)
        if (allowed[inner[src].a[i]]) VPUSH(st, inner[src].a[i]);
    while (st.n) {
        int32_t v = st.a[--st.n];
        if (v == dst) {
            found = 1;
            break;
        }
        if (seen[v]) continue;
        seen[v] = 1;
        for (int32_t i = 0; i < inner[v].n; i++)
            if (allowed[inner[v].a[i]]) VPUSH(st, inner[v].a[i]);
    }
    VFREE(st);
    free(seen);
    return found;
}

/* any cycle in the "can start with" graph (first[r]: the rules r can start with) is left
 * recursion: -1 with a->err set */
static int an_left_recursion(Analysis *a, const IVec *first, const uint8_t *has_first) {
    int32_t nr = a->nr;
    int rc = 0;
    uint8_t *color = tm_xcalloc((size_t)nr, 1);
    typedef struct {
        int32_t v, i;
    } VI;
    VEC(VI) wk = {0};
    for (int32_t k = 0; k < a->order.n && !rc; k++) {
        int32_t root = a->order.a[k];
        if (!has_first[root] || color[root]) continue;
        VI r0 = {root, 0};
        VPUSH(wk, r0);
        color[root] = 1;
        while (wk.n) {
            VI *x = &wk.a[wk.n - 1];
            if (x->i < first[x->v].n) {
                int32_t w = first[x->v].a[x->i++];
                if (color[w] == 1) {
                    a->err = E_LEFTREC;
                    rc = -1;
                    break;
                }
                if (color[w] == 0) {
                    color[w] = 1;
                    VI y = {w, 0};
                    VPUSH(wk, y);
                }
            } else {
                color[x->v] = 2;
                wk.n--;
            }
        }
        wk.n = 0;
    }
    VFREE(wk);
    free(color);
    return rc;
}

/* a component whose internal references are all tail calls: a regular group, its members
 * sorted by scan position */
static void an_add_group(Analysis *a, const int32_t *mem, int32_t len, int64_t ntails) {
    int32_t gid = a->group_off.n;
    VPUSH(a->group_off, a->group_mem.n);
    int32_t base = a->group_mem.n;
    for (int32_t j = 0; j < len; j++) VPUSH(a->group_mem, mem[j]);
    for (int32_t x = base + 1; x < a->group_mem.n; x++) {
        int32_t v = a->group_mem.a[x], y = x - 1;
        while (y >= base && a->pos_of[a->group_mem.a[y]] > a->pos_of[v]) {
            a->group_mem.a[y + 1] = a->group_mem.a[y];
            y--;
        }
        a->group_mem.a[y + 1] = v;
    }
    int64_t outside = 0;
    for (int32_t j = 0; j < len; j++) {
        a->group_of[mem[j]] = gid;
        outside += a->refcount[mem[j]];
    }
    VPUSH(a->group_refs, (int32_t)(outside - ntails));
}

/* a truly recursive component: a greedy feedback vertex set (by in-degree, then scan
 * position) becomes the rules always called (a->forced); inner and tl are scratch */
static void an_break_cycles(Analysis *a, const int32_t *mem, int32_t len, IVec *inner, RTVec *tl) {
    int32_t nr = a->nr;
    int32_t *indeg = tm_xcalloc((size_t)nr, sizeof(int32_t));
    for (int32_t j = 0; j < len; j++) {
        int32_t m = mem[j];
        inner[m].n = 0;
        for (int32_t i = 0; i < tl[m].n; i++) {
            VPUSH(inner[m], tl[m].a[i].rule);
            indeg[tl[m].a[i].rule]++;
        }
    }
    int32_t *cand = tm_xmalloc((size_t)len * sizeof(int32_t));
    memcpy(cand, mem, (size_t)len * sizeof(int32_t));
    for (int32_t x = 1; x < len; x++) {
        int32_t v = cand[x], y = x - 1;
        while (y >= 0 && (indeg[cand[y]] > indeg[v] ||
                          (indeg[cand[y]] == indeg[v] && a->pos_of[cand[y]] > a->pos_of[v]))) {
            cand[y + 1] = cand[y];
            y--;
        }
        cand[y + 1] = v;
    }
    uint8_t *free_ = tm_xcalloc((size_t)nr, 1);
    for (int32_t x = 0; x < len; x++) {
        int32_t cnd = cand[x];
        if (in_list(inner[cnd].a, inner[cnd].n, cnd)) continue;
        free_[cnd] = 1; /* allowed = free | {c} */
        if (an_reaches(cnd, cnd, inner, free_, nr)) free_[cnd] = 0;
    }
    for (int32_t j = 0; j < len; j++)
        if (!free_[mem[j]]) a->forced[mem[j]] = 1;
    free(free_);
    free(cand);
    free(indeg);
}

static int an_cyclic_components(Analysis *a) {
    int32_t nr = a->nr, nscc = a->scc_off.n - 1;
    IVec *first = tm_xcalloc((size_t)nr, sizeof(IVec));
    uint8_t *has_first = tm_xcalloc((size_t)nr, 1);
    int rc = 0;
    for (int32_t c = 0; c < nscc; c++) {
        if (!a->cyclic[c]) continue;
        if (an_deadline(a) < 0) {
            rc = -1;
            goto out;
        }
        for (int32_t j = a->scc_off.a[c]; j < a->scc_off.a[c + 1]; j++) {
            int32_t m = a->scc_mem.a[j];
            an_first_refs(a, a->ir->body.a[m], c, &first[m]);
            has_first[m] = 1;
        }
    }
    if (an_left_recursion(a, first, has_first) < 0) {
        rc = -1;
        goto out;
    }
    RTVec tails = {0};
    IVec *inner = tm_xcalloc((size_t)nr, sizeof(IVec));
    RTVec *tl = tm_xcalloc((size_t)nr, sizeof(*tl));
    for (int32_t c = 0; c < nscc; c++) {
        if (!a->cyclic[c]) continue;
        int32_t *mem = a->scc_mem.a + a->scc_off.a[c];
        int32_t len = a->scc_off.a[c + 1] - a->scc_off.a[c];
        int all_tail = 1;
        int64_t ntails = 0;
        for (int32_t j = 0; j < len; j++) {
            an_internal_refs(a, mem[j], c, &tails);
            tl[mem[j]].n = 0;
            for (int32_t i = 0; i < tails.n; i++) {
                VPUSH(tl[mem[j]], tails.a[i]);
                if (!tails.a[i].tail) all_tail = 0;
            }
            ntails += tails.n;
        }
        if (all_tail)
            an_add_group(a, mem, len, ntails);
        else
            an_break_cycles(a, mem, len, inner, tl);
    }
    VPUSH(a->group_off, a->group_mem.n);
    for (int32_t i = 0; i < nr; i++) {
        VFREE(inner[i]);
        VFREE(tl[i]);
    }
    free(inner);
    free(tl);
    VFREE(tails);
out:
    for (int32_t i = 0; i < nr; i++) VFREE(first[i]);
    free(first);
    free(has_first);
    return rc;
}

static int32_t an_ngroups(const Analysis *a) { return a->group_off.n ? a->group_off.n - 1 : 0; }

/* ---- inlining --------------------------------------------------------------------------- */

static int64_t an_size(Analysis *a, int32_t name, int64_t cutoff);

static int64_t an_body_size(Analysis *a, int32_t body, int32_t gid, int64_t cutoff) {
    if (cutoff < 0) return 0;
    int64_t total = 0;
    VEC(NF) st = {0};
    NF first = {body, 1};
    VPUSH(st, first);
    while (st.n) {
        NF x = st.a[--st.n];
        const Node *n = NODE(a, x.node);
        switch (n->kind) {
        case K_BYTES:
            total = sat_add(total, sat_mul(x.f, n->b > 1 ? n->b - 1 : 0));
            break;
        case K_SEQ:
            total = sat_add(total, sat_mul(x.f, n->b > 1 ? n->b - 1 : 0));
            for (int32_t i = 0; i < n->b; i++) {
                NF y = {KIDS(a, n)[i], x.f};
                VPUSH(st, y);
            }
            break;
        case K_CHOICE:
            for (int32_t i = 0; i < n->b; i++) {
                NF y = {KIDS(a, n)[i], x.f};
                VPUSH(st, y);
            }
            break;
        case K_REPEAT: {
            if (n->hi == 0) break;
            int64_t copies = n->hi >= 0 ? n->hi : (n->lo > 1 ? n->lo : 1); /* checked by the scan */
            total = sat_add(total, sat_mul(x.f, n->hi >= 0 ? copies : (n->lo > 1 ? n->lo - 1 : 0) + 2));
            NF y = {n->a, sat_mul(x.f, copies)};
            VPUSH(st, y);
            break;
        }
        case K_REF: {
            int32_t r = n->a;
            if (a->forced[r] || (gid >= 0 && a->group_of[r] == gid)) break;
            if (!an_rule_prop(a, r, P_PRODUCTIVE)) break;
            int64_t budget = (cutoff - total) / x.f - 1;
            total = sat_add(total, sat_mul(x.f, 1 + an_size(a, r, budget)));
            break;
        }
        }
        if (total > cutoff) break;
    }
    VFREE(st);
    return total;
}

static int64_t an_size(Analysis *a, int32_t name, int64_t cutoff) {
    if (cutoff < 0) return 0;
    int32_t gid = a->group_of[name];
    int32_t key = gid < 0 ? name : a->nr + gid;
    if (a->exact[key] >= 0) return a->exact[key];
    int64_t lower = a->lower[key];
    if (lower > cutoff) return lower;
    int64_t total = 0;
    if (gid < 0) {
        total = an_body_size(a, a->ir->body.a[name], -1, cutoff);
    } else {
        for (int32_t j = a->group_off.a[gid]; j < a->group_off.a[gid + 1]; j++) {
            int32_t m = a->group_mem.a[j];
            total = sat_add(total, 1 + an_body_size(a, a->ir->body.a[m], gid, cutoff - total - 1));
            if (total > cutoff) break;
        }
    }
    if (total <= cutoff)
        a->exact[key] = total;
    else
        a->lower[key] = lower > total ? lower : total;
    return total;
}

static int an_inline(Analysis *a, int32_t name) {
    int32_t gid = a->group_of[name];
    int32_t key = gid < 0 ? name : a->nr + gid;
    int8_t d = a->inl[key];
    if (d >= 0) return d;
    if (a->forced[name])
        d = 0;
    else if ((gid < 0 ? a->refcount[name] : a->group_refs.a[gid]) <= 1)
        d = 1;
    else
        d = an_size(a, name, INLINE_SMALL) <= INLINE_SMALL;
    a->inl[key] = d;
    return d;
}

/* run the whole up-front analysis; 0 or -1 with a->err */
static int an_init(Analysis *a, IR *ir, const TmLimits *lim) {
    memset(a, 0, sizeof(*a));
    a->ir = ir;
    a->lim = *lim;
    a->deadline = tm_now() + lim->max_compile_seconds;
    int32_t nr = a->nr = ir->nrules;
    a->pos_of = tm_xmalloc((size_t)nr * sizeof(int32_t));
    for (int32_t i = 0; i < nr; i++) a->pos_of[i] = -1;
    a->refs = tm_xcalloc((size_t)nr, sizeof(IVec));
    a->refcount = tm_xcalloc((size_t)nr, sizeof(int32_t));
    a->dirty = tm_xcalloc((size_t)nr, 1);
    a->scc_id = tm_xmalloc((size_t)nr * sizeof(int32_t));
    a->group_of = tm_xmalloc((size_t)nr * sizeof(int32_t));
    a->forced = tm_xcalloc((size_t)nr, 1);
    a->clean = tm_xmalloc((size_t)nr);
    for (int32_t i = 0; i < nr; i++) {
        a->scc_id[i] = -1;
        a->group_of[i] = -1;
        a->clean[i] = -1;
    }
    int32_t nn = ir->nodes.n;
    for (int p = 0; p < 2; p++) {
        a->rprop[p] = tm_xcalloc((size_t)nr, 1);
        a->nprop[p] = tm_xmalloc((size_t)(nn ? nn : 1));
        memset(a->nprop[p], -1, (size_t)(nn ? nn : 1));
    }
    if (an_scan(a) < 0) return -1;
    for (int32_t k = 0; k < a->order.n; k++) {
        IVec *rs = &a->refs[a->order.a[k]];
        for (int32_t i = 0; i < rs->n; i++) a->refcount[rs->a[i]]++;
    }
    an_sccs(a);
    an_props(a);
    if (an_cyclic_components(a) < 0) return -1;
    int32_t nkeys = nr + an_ngroups(a);
    a->inl = tm_xmalloc((size_t)(nkeys ? nkeys : 1));
    memset(a->inl, -1, (size_t)(nkeys ? nkeys : 1));
    a->exact = tm_xmalloc((size_t)(nkeys ? nkeys : 1) * sizeof(int64_t));
    a->lower = tm_xmalloc((size_t)(nkeys ? nkeys : 1) * sizeof(int64_t));
    for (int32_t i = 0; i < nkeys; i++) a->exact[i] = a->lower[i] = -1;
    if (an_deadline(a) < 0) return -1;
    return 0;
}

#endif
