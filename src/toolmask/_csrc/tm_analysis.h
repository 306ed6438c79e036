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
 *
 * This file holds the types, the scan, the strongly connected components and the
 * properties; tm_groups.h the cyclic components, inlining and the entry point an_init.
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

#endif
