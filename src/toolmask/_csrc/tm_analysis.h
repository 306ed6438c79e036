/* Static analysis of the flat IR: a port of toolmask/automaton/_analysis.py.
 *
 * The same decisions as the Python reference, in the same order where order matters
 * (reachable rules in scan order, regular groups, call targets of true recursion, inlining
 * sizes), so that both backends build automata with the same stack structure. Nullable and
 * productive are computed eagerly (least fixpoint per strongly connected component, callees
 * first), which gives the values the Python computes on demand.
 *
 * Errors (left recursion, repetition and state caps, the compile deadline) are detected,
 * not described: the caller re-runs the Python analysis to raise the located error.
 */
#ifndef TM_ANALYSIS_H
#define TM_ANALYSIS_H

#define INLINE_SMALL 64
enum { P_NULLABLE = 0, P_PRODUCTIVE = 1 };
enum { E_NONE = 0, E_LEFTREC, E_UNROLL, E_STATES, E_DEADLINE, E_INTERNAL };

typedef struct {
    int64_t max_schema_bytes, max_schema_depth, max_rules, max_grammar_nodes, max_automaton_states,
        max_dfa_states, max_repeat_unroll, max_stack_depth, max_stacks, max_cached_states;
    double max_compile_seconds;
} TmLimits;

typedef struct {
    IR *ir;
    TmLimits lim;
    double deadline;
    int err;
    int has_specials;
    int32_t nr;        /* rules */
    IVec order;        /* reachable rules, scan order */
    int32_t *pos_of;   /* rule -> index in order, -1 unreachable */
    IVec *refs;        /* rule -> references (with multiplicity) */
    int32_t *refcount;
    uint8_t *dirty;
    /* components */
    IVec scc_off, scc_mem;
    int32_t *scc_id;
    uint8_t *cyclic;
    int32_t *group_of; /* rule -> group or -1 */
    IVec group_off, group_mem, group_refs;
    uint8_t *forced;
    /* properties */
    int8_t *rprop[2];
    int8_t *nprop[2];
    int8_t *clean;
    /* inlining: key = rule, or nr + group */
    int8_t *inl;
    int64_t *exact, *lower;
} Analysis;

static void an_free(Analysis *a) {
    VFREE(a->order);
    free(a->pos_of);
    if (a->refs)
        for (int32_t i = 0; i < a->nr; i++) VFREE(a->refs[i]);
    free(a->refs);
    free(a->refcount);
    free(a->dirty);
    VFREE(a->scc_off);
    VFREE(a->scc_mem);
    free(a->scc_id);
    free(a->cyclic);
    free(a->group_of);
    VFREE(a->group_off);
    VFREE(a->group_mem);
    VFREE(a->group_refs);
    free(a->forced);
    for (int i = 0; i < 2; i++) {
        free(a->rprop[i]);
        free(a->nprop[i]);
    }
    free(a->clean);
    free(a->inl);
    free(a->exact);
    free(a->lower);
    memset(a, 0, sizeof(*a));
}

static int64_t an_bytes(const Analysis *a) {
    int64_t n = VBYTES(a->order) + (int64_t)a->nr * 40 + VBYTES(a->scc_mem) + VBYTES(a->group_mem);
    if (a->refs)
        for (int32_t i = 0; i < a->nr; i++) n += VBYTES(a->refs[i]);
    n += (int64_t)a->ir->nodes.n * 2;
    return n;
}

static inline int64_t sat_add(int64_t x, int64_t y) {
    int64_t r = x + y;
    return r > TM_BIG || r < x ? TM_BIG : r;
}
static inline int64_t sat_mul(int64_t x, int64_t y) {
    if (x == 0 || y == 0) return 0;
    if (x > TM_BIG / y) return TM_BIG;
    int64_t r = x * y;
    return r > TM_BIG ? TM_BIG : r;
}

#define NODE(a, i) (&(a)->ir->nodes.a[i])
#define KIDS(a, n) ((a)->ir->kids.a + (n)->a)

static int an_deadline(Analysis *a) {
    if (tm_now() > a->deadline) {
        a->err = E_DEADLINE;
        return -1;
    }
    return 0;
}

/* copies of r's item that unrolling makes; -1 (and err) past max_repeat_unroll */
static int64_t an_copies(Analysis *a, const Node *r) {
    int64_t copies = r->hi >= 0 ? r->hi : (r->lo > 1 ? r->lo : 1);
    if (copies > a->lim.max_repeat_unroll) {
        a->err = E_UNROLL;
        return -1;
    }
    return copies;
}

typedef struct {
    int32_t node;
    int64_t f;
} NF;

static int an_scan_repeat(Analysis *a, int32_t rule, int32_t rep, IVec *found) {
    int64_t cap = 2 * a->lim.max_automaton_states, total = 0;
    VEC(NF) st = {0};
    NF first = {rep, 1};
    VPUSH(st, first);
    int rc = 0;
    while (st.n) {
        NF x = st.a[--st.n];
        const Node *n = NODE(a, x.node);
        switch (n->kind) {
        case K_REPEAT: {
            if (n->hi == 0) {
                NF y = {n->a, 0};
                VPUSH(st, y);
                continue;
            }
            int64_t copies = an_copies(a, n);
            if (copies < 0) {
                rc = -1;
                goto out;
            }
            total = sat_add(total, sat_mul(x.f, n->hi >= 0 ? copies : (n->lo > 1 ? n->lo - 1 : 0) + 2));
            NF y = {n->a, sat_mul(x.f, copies)};
            VPUSH(st, y);
            break;
        }
        case K_SEQ:
        case K_CHOICE:
            if (n->kind == K_SEQ) total = sat_add(total, sat_mul(x.f, n->b > 1 ? n->b - 1 : 0));
            if (!n->b) a->dirty[rule] = 1;
            for (int32_t i = n->b - 1; i >= 0; i--) {
                NF y = {KIDS(a, n)[i], x.f};
                VPUSH(st, y);
            }
            break;
        case K_BYTES:
            total = sat_add(total, sat_mul(x.f, n->b > 1 ? n->b - 1 : 0));
            break;
        case K_CLASS:
            if (m_zero(&a->ir->masks.a[n->a])) a->dirty[rule] = 1;
            break;
        case K_REF:
            VPUSH(*found, n->a);
            break;
        case K_SPECIAL:
            a->has_specials = 1;
            break;
        }
        if (total > cap) {
            a->err = E_STATES;
            rc = -1;
            goto out;
        }
    }
out:
    VFREE(st);
    return rc;
}

static int an_scan(Analysis *a) {
    IR *ir = a->ir;
    IVec todo = {0}, stack = {0};
    uint8_t *seen = tm_xcalloc((size_t)a->nr, 1);
    int rc = 0;
    VPUSH(todo, ir->start);
    while (todo.n) {
        int32_t name = todo.a[--todo.n];
        if (seen[name]) continue;
        if (an_deadline(a) < 0) {
            rc = -1;
            goto out;
        }
        seen[name] = 1;
        a->pos_of[name] = a->order.n;
        VPUSH(a->order, name);
        IVec *found = &a->refs[name];
        stack.n = 0;
        VPUSH(stack, ir->body.a[name]);
        while (stack.n) {
            const Node *n = NODE(a, stack.a[--stack.n]);
            switch (n->kind) {
            case K_CLASS:
                if (m_zero(&ir->masks.a[n->a])) a->dirty[name] = 1;
                break;
            case K_SEQ:
            case K_CHOICE:
                if (!n->b) a->dirty[name] = 1;
                for (int32_t i = n->b - 1; i >= 0; i--) VPUSH(stack, KIDS(a, n)[i]);
                break;
            case K_REF:
                VPUSH(*found, n->a);
                break;
            case K_REPEAT:
                if (n->hi < 0 && n->lo <= 1)
                    VPUSH(stack, n->a);
                else if (n->hi == 1)
                    VPUSH(stack, n->a);
                else {
                    if (an_copies(a, n) < 0 || an_scan_repeat(a, name, (int32_t)(n - ir->nodes.a), found) < 0) {
                        rc = -1;
                        goto out;
                    }
                }
                break;
            case K_SPECIAL:
                a->has_specials = 1;
                break;
            }
        }
        /* todo.extend(r for r in found if r not in refs) */
        for (int32_t i = 0; i < found->n; i++)
            if (!seen[found->a[i]]) VPUSH(todo, found->a[i]);
    }
out:
    VFREE(todo);
    VFREE(stack);
    free(seen);
    return rc;
}

/* succ[n]: unique references in first-occurrence order */
static void an_succ(Analysis *a, int32_t r, IVec *out) {
    out->n = 0;
    IVec *rs = &a->refs[r];
    for (int32_t i = 0; i < rs->n; i++) {
        int dup = 0;
        for (int32_t j = 0; j < out->n; j++)
            if (out->a[j] == rs->a[i]) {
                dup = 1;
                break;
            }
        if (!dup) VPUSH(*out, rs->a[i]);
    }
}

/* Tarjan's algorithm, iterative; components come out callees first */
static void an_sccs(Analysis *a) {
    int32_t nr = a->nr;
    IVec *succ = tm_xcalloc((size_t)nr, sizeof(IVec));
    for (int32_t k = 0; k < a->order.n; k++) an_succ(a, a->order.a[k], &succ[a->order.a[k]]);
    int32_t *index = tm_xmalloc((size_t)nr * sizeof(int32_t)), *low = tm_xmalloc((size_t)nr * sizeof(int32_t));
    uint8_t *on = tm_xcalloc((size_t)nr, 1);
    for (int32_t i = 0; i < nr; i++) index[i] = -1;
    IVec stack = {0};
    typedef struct {
        int32_t v, i;
    } VI;
    VEC(VI) wk = {0};
    int32_t counter = 0;
    for (int32_t k = 0; k < a->order.n; k++) {
        int32_t root = a->order.a[k];
        if (index[root] >= 0) continue;
        wk.n = 0;
        VI r0 = {root, 0};
        VPUSH(wk, r0);
        while (wk.n) {
            VI x = wk.a[--wk.n];
            int32_t v = x.v, i = x.i;
            if (i == 0) {
                index[v] = low[v] = counter++;
                VPUSH(stack, v);
                on[v] = 1;
            }
            IVec *edges = &succ[v];
            int recursed = 0;
            while (i < edges->n) {
                int32_t w = edges->a[i++];
                if (index[w] < 0) {
                    VI back = {v, i}, down = {w, 0};
                    VPUSH(wk, back);
                    VPUSH(wk, down);
                    recursed = 1;
                    break;
                }
                if (on[w] && index[w] < low[v]) low[v] = index[w];
            }
            if (recursed) continue;
            if (low[v] == index[v]) {
                VPUSH(a->scc_off, a->scc_mem.n);
                int32_t id = a->scc_off.n - 1;
                for (;;) {
                    int32_t w = stack.a[--stack.n];
                    on[w] = 0;
                    VPUSH(a->scc_mem, w);
                    a->scc_id[w] = id;
                    if (w == v) break;
                }
            }
            if (wk.n) {
                int32_t parent = wk.a[wk.n - 1].v;
                if (low[v] < low[parent]) low[parent] = low[v];
            }
        }
    }
    VPUSH(a->scc_off, a->scc_mem.n);
    int32_t nscc = a->scc_off.n - 1;
    a->cyclic = tm_xcalloc((size_t)(nscc + 1), 1);
    for (int32_t c = 0; c < nscc; c++) {
        int32_t len = a->scc_off.a[c + 1] - a->scc_off.a[c];
        int32_t m0 = a->scc_mem.a[a->scc_off.a[c]];
        int self = 0;
        for (int32_t j = 0; j < succ[m0].n; j++)
            if (succ[m0].a[j] == m0) self = 1;
        a->cyclic[c] = len > 1 || self;
    }
    for (int32_t i = 0; i < nr; i++) VFREE(succ[i]);
    free(succ);
    free(index);
    free(low);
    free(on);
    VFREE(stack);
    VFREE(wk);
}

/* ---- nullable / productive ------------------------------------------------------------- */

typedef struct {
    int32_t node, i;
    int8_t acc;
} EvFrame;

/* two-valued evaluation of prop on node; rule values from rprop (all known or current
 * fixpoint values); memoised per node when use_memo */
static int an_eval(Analysis *a, int32_t root, int prop, int use_memo) {
    int8_t *memo = a->nprop[prop];
    int8_t *known = a->rprop[prop];
    int nullable = prop == P_NULLABLE;
    VEC(EvFrame) st = {0};
    int32_t n = root;
    int v = 0;
    for (;;) {
        const Node *x = NODE(a, n);
        int leaf = 1;
        switch (x->kind) {
        case K_SEQ:
        case K_CHOICE:
            if (use_memo && memo[n] >= 0) {
                v = memo[n];
            } else if (x->b) {
                EvFrame f = {n, 1, (int8_t)(x->kind == K_SEQ)};
                VPUSH(st, f);
                n = KIDS(a, x)[0];
                leaf = 0;
            } else {
                v = x->kind == K_SEQ;
            }
            break;
        case K_REPEAT:
            if (x->lo == 0 || x->hi == 0) {
                v = 1;
            } else if (use_memo && memo[n] >= 0) {
                v = memo[n];
            } else {
                EvFrame f = {n, -1, 0};
                VPUSH(st, f);
                n = x->a;
                leaf = 0;
            }
            break;
        case K_REF:
            v = known[x->a] > 0;
            break;
        case K_BYTES:
            v = nullable ? x->b == 0 : 1;
            break;
        case K_CLASS:
            v = nullable ? 0 : !m_zero(&a->ir->masks.a[x->a]);
            break;
        default: /* SPECIAL */
            v = !nullable;
        }
        if (!leaf) continue;
        /* return v to the enclosing frames */
        int descend = 0;
        while (st.n) {
            EvFrame *f = &st.a[st.n - 1];
            const Node *fx = NODE(a, f->node);
            if (f->i < 0) { /* repeat passes its item's value through */
                if (use_memo) memo[f->node] = (int8_t)v;
                st.n--;
                continue;
            }
            int in_seq = fx->kind == K_SEQ;
            if (v == !in_seq) { /* decisive */
                if (use_memo) memo[f->node] = (int8_t)v;
                st.n--;
                continue;
            }
            if (f->i < fx->b) {
                n = KIDS(a, fx)[f->i++];
                descend = 1;
                break;
            }
            v = f->acc;
            if (use_memo) memo[f->node] = (int8_t)v;
            st.n--;
        }
        if (!descend) break;
    }
    VFREE(st);
    return v;
}

static void an_props(Analysis *a) {
    IR *ir = a->ir;
    for (int prop = 0; prop < 2; prop++) {
        int8_t *known = a->rprop[prop];
        int32_t nscc = a->scc_off.n - 1;
        for (int32_t c = 0; c < nscc; c++) {
            int32_t *mem = a->scc_mem.a + a->scc_off.a[c];
            int32_t len = a->scc_off.a[c + 1] - a->scc_off.a[c];
            if (!a->cyclic[c]) {
                known[mem[0]] = (int8_t)an_eval(a, ir->body.a[mem[0]], prop, 1);
                continue;
            }
            for (int32_t j = 0; j < len; j++) known[mem[j]] = 0;
            int changed = 1;
            while (changed) {
                changed = 0;
                for (int32_t j = 0; j < len; j++)
                    if (!known[mem[j]] && an_eval(a, ir->body.a[mem[j]], prop, 0)) {
                        known[mem[j]] = 1;
                        changed = 1;
                    }
            }
        }
    }
}

static inline int an_node_prop(Analysis *a, int32_t node, int prop) {
    int8_t m = a->nprop[prop][node];
    if (m >= 0) return m;
    return an_eval(a, node, prop, 1);
}

static inline int an_rule_prop(Analysis *a, int32_t rule, int prop) { return a->rprop[prop][rule] > 0; }

static int an_clean(Analysis *a, int32_t rule) {
    int8_t c = a->clean[rule];
    if (c >= 0) return c;
    c = !a->dirty[rule];
    IVec *rs = &a->refs[rule];
    for (int32_t i = 0; c && i < rs->n; i++)
        if (!an_rule_prop(a, rs->a[i], P_PRODUCTIVE)) c = 0;
    a->clean[rule] = (int8_t)c;
    return c;
}

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
    /* any cycle in the "can start with" graph is left recursion */
    {
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
        if (rc) goto out;
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
        if (all_tail) {
            /* members sorted by scan position */
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
            continue;
        }
        /* truly recursive: greedy feedback vertex set */
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
