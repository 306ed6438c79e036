/* The automaton's lazy NFA: one state per item of a rule body, expanded on first use.
 *
 * A port of toolmask/automaton/_nfa.py (tm_auto.h holds the types). Rule references become
 * epsilon edges (inlined and same-group rules) or calls (entries of other rules); repetitions
 * are unrolled into copies of their item; a string's UTF-8 character choice is recognised once
 * per IR node so that its multi-byte alternatives are expanded one state at a time.
 */
#ifndef TM_NFA_H
#define TM_NFA_H

/* ---- NFA ------------------------------------------------------------------------------- */

static int32_t nfa_new_state(Auto *au, int expanded) {
    int32_t n = au->ns.n;
    if (n >= au->max_nstates) {
        au->nfa_broken = 1;
        au->err = E_STATES;
        return -1;
    }
    NState s;
    memset(&s, 0, sizeof(s));
    s.expanded = (uint8_t)expanded;
    if ((n >> NS_PAGE_BITS) >= au->ns.npages) {
        au->ns.pages = tm_xrealloc(au->ns.pages, (size_t)(au->ns.npages + 1) * sizeof(NState *));
        au->ns.pages[au->ns.npages++] = tm_xmalloc((size_t)NS_PAGE * sizeof(NState));
    }
    *AU_NS(au, n) = s;
    au->ns.n = n + 1;
    au->mut++;
    return n;
}

static int32_t nfa_copy_start(Auto *au, int32_t rule, int32_t to, int32_t gid) {
    uint64_t key = ((uint64_t)(uint32_t)rule << 32) | (uint32_t)to;
    int32_t s = imap_get(&au->shared, key, -1);
    if (s >= 0) return s;
    int chk = !an_clean(&au->an, rule);
    s = nfa_new_state(au, 0);
    if (s < 0) return -1;
    Task t = {au->ir.body.a[rule], to, gid, gid >= 0 ? to : -1, (uint8_t)chk};
    NSPUSH(au, AU_NS(au, s)->pending, t);
    imap_put(&au->shared, key, s);
    return s;
}

static int32_t nfa_entry(Auto *au, int32_t rule) {
    int32_t eid = au->entry_of[rule];
    if (eid >= 0) return eid;
    int32_t gid = au->an.group_of[rule], ex, start;
    if (gid >= 0) {
        ex = au->group_exit[gid];
        if (ex < 0) {
            ex = nfa_new_state(au, 1);
            if (ex < 0) return -1;
            AU_NS(au, ex)->is_exit = 1;
            au->group_exit[gid] = ex;
        }
        start = nfa_copy_start(au, rule, ex, gid);
    } else {
        ex = nfa_new_state(au, 1);
        if (ex < 0) return -1;
        AU_NS(au, ex)->is_exit = 1;
        start = nfa_copy_start(au, rule, ex, -1);
    }
    if (start < 0) return -1;
    eid = au->entries.n;
    VPUSH(au->entries, start);
    VPUSH(au->entry_rule, rule);
    VPUSH(au->starts, -1);
    au->entry_of[rule] = eid;
    return eid;
}

static int nfa_ref(Auto *au, int32_t s, int32_t rule, int32_t to, int32_t gid, int32_t gexit) {
    Analysis *a = &au->an;
    if (!an_rule_prop(a, rule, P_PRODUCTIVE)) return 0;
    int32_t rgid = a->group_of[rule];
    if (gid >= 0 && rgid == gid) {
        int32_t t = nfa_copy_start(au, rule, gexit, gid);
        if (t < 0) return -1;
        NSPUSH(au, AU_NS(au, s)->eps, t);
    } else if (an_inline(a, rule)) {
        int32_t t = nfa_copy_start(au, rule, to, rgid);
        if (t < 0) return -1;
        NSPUSH(au, AU_NS(au, s)->eps, t);
    } else {
        int32_t e = nfa_entry(au, rule);
        if (e < 0) return -1;
        Pair c = {e, to};
        NSPUSH(au, AU_NS(au, s)->call, c);
    }
    return 0;
}

static void nfa_add(Auto *au, int32_t s, TaskVec *tasks, int32_t cur, Task t) {
    if (cur == s)
        VPUSH(*tasks, t);
    else
        NSPUSH(au, AU_NS(au, cur)->pending, t);
}

static int nfa_repeat(Auto *au, int32_t s, TaskVec *tasks, const Node *node, Task t) {
    if (node->hi == 0) {
        NSPUSH(au, AU_NS(au, s)->eps, t.to);
        return 0;
    }
    int32_t item = node->a;
    if (t.chk && !an_node_prop(&au->an, item, P_PRODUCTIVE)) {
        if (node->lo == 0) NSPUSH(au, AU_NS(au, s)->eps, t.to);
        return 0;
    }
    int32_t cur = s;
    int64_t mandatory = node->hi >= 0 ? node->lo : (node->lo > 1 ? node->lo - 1 : 0);
    /* a counted repetition's copies are created one after another (copy k at copy1 + k - 1):
     * recorded so that a mask can tell which copy a state is at (nfa_copy_of, mc_counted) */
    if (node->hi > 1) {
        RepCopies rc = {au->ns.n, node->lo, node->hi, (uint8_t)(au->ir.nodes.a[item].kind == K_CLASS)};
        VPUSH(au->reps, rc);
    }
    for (int64_t k = 0; k < mandatory; k++) {
        int32_t nxt = nfa_new_state(au, 0);
        if (nxt < 0) return -1;
        Task x = {item, nxt, t.gid, t.gexit, t.chk};
        nfa_add(au, s, tasks, cur, x);
        cur = nxt;
    }
    if (node->hi < 0) {
        int32_t back = nfa_new_state(au, 1);
        if (back < 0) return -1;
        int32_t loop = nfa_new_state(au, 0);
        if (loop < 0) return -1;
        Task x = {item, back, t.gid, t.gexit, t.chk};
        NSPUSH(au, AU_NS(au, loop)->pending, x);
        NSPUSH(au, AU_NS(au, cur)->eps, loop);
        NSPUSH(au, AU_NS(au, back)->eps, loop);
        VPUSH(AU_NS(au, node->lo == 0 ? loop : back)->eps, t.to);
        return 0;
    }
    for (int64_t k = 0; k < node->hi - node->lo; k++) {
        NSPUSH(au, AU_NS(au, cur)->eps, t.to);
        int32_t nxt = nfa_new_state(au, 0);
        if (nxt < 0) return -1;
        Task x = {item, nxt, t.gid, t.gexit, t.chk};
        nfa_add(au, s, tasks, cur, x);
        cur = nxt;
    }
    NSPUSH(au, AU_NS(au, cur)->eps, t.to);
    return 0;
}

/* the unrolling whose copy k (>= 1) starts at NFA state s, with *k; NULL when s starts none */
static const RepCopies *nfa_copy_of(const Auto *au, int32_t s, int64_t *k) {
    int32_t lo = 0, hi = au->reps.n; /* the first unrolling with copy1 > s is at hi */
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (au->reps.a[mid].copy1 <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo) return NULL;
    const RepCopies *r = &au->reps.a[lo - 1];
    if ((int64_t)s - r->copy1 >= r->hi) return NULL;
    *k = (int64_t)s - r->copy1 + 1;
    return r;
}

/* ---- UTF-8 choices -------------------------------------------------------------------------
 *
 * A string's character is a choice whose multi-byte alternatives are every well-formed UTF-8
 * character, each a sequence of byte classes. Expanded per copy of a repetition (a counted
 * string: one copy per character), the multi-byte alternatives create ~17 intermediate
 * positions per copy, which a mask only needs to learn that every such character leads to
 * the same next state. So the choice is recognised here, once per IR node, and the NFA
 * state where it is expanded records its continuation (NState.mb_to): then the position's
 * target over a whole multi-byte character is known from its kernel without expanding the
 * intermediate positions (pos_utf8), and the mask module's "UTF-8 target" of a state is one
 * closure per stack (au_utf8_fast). The byte-level automaton is unchanged. */

/* a multi-byte alternative: a sequence of byte classes whose first class is high */
static int nfa_is_mb_alt(Auto *au, int32_t node) {
    const Node *n = &au->ir.nodes.a[node];
    if (n->kind != K_SEQ || n->b < 2) return 0;
    const Node *f = &au->ir.nodes.a[au->ir.kids.a[n->a]];
    if (f->kind != K_CLASS) return 0;
    const M256 *m = &au->ir.masks.a[f->a];
    return (m->w[2] | m->w[3]) != 0;
}

/* does every non-multi-byte alternative start with an ASCII byte for sure (so that the
 * state's high-byte edges are the multi-byte alternatives' own) */
static int nfa_ascii_start(Auto *au, int32_t node) {
    const Node *n = &au->ir.nodes.a[node];
    if (n->kind == K_SEQ && n->b >= 1) n = &au->ir.nodes.a[au->ir.kids.a[n->a]];
    if (n->kind == K_CLASS) {
        const M256 *m = &au->ir.masks.a[n->a];
        return !(m->w[2] | m->w[3]);
    }
    if (n->kind == K_BYTES) return n->b >= 1 && au->ir.bpool.a[n->a] < 0x80;
    return 0;
}

/* is node a choice whose multi-byte alternatives are exactly the well-formed multi-byte UTF-8
 * characters (each lead byte C2-F4 in exactly one alternative, with the continuation classes
 * RFC 3629 gives it), every other alternative starting with an ASCII byte? Memoised. */
static int nfa_mb_choice(Auto *au, int32_t node) {
    if (!au->mbchoice) au->mbchoice = tm_xcalloc((size_t)(au->ir.nodes.n ? au->ir.nodes.n : 1), 1);
    if (au->mbchoice[node]) return au->mbchoice[node] == 1;
    const IR *ir = &au->ir;
    const Node *n = &ir->nodes.a[node];
    int ok = n->kind == K_CHOICE;
    uint8_t covered[256];
    memset(covered, 0, sizeof(covered));
    for (int32_t i = 0; ok && i < n->b; i++) {
        int32_t kid = ir->kids.a[n->a + i];
        if (!nfa_is_mb_alt(au, kid)) {
            ok = nfa_ascii_start(au, kid);
            continue;
        }
        const Node *sq = &ir->nodes.a[kid];
        const int32_t *items = ir->kids.a + sq->a;
        for (int32_t k = 0; ok && k < sq->b; k++) ok = ir->nodes.a[items[k]].kind == K_CLASS;
        if (!ok) break;
        const M256 *lead = &ir->masks.a[ir->nodes.a[items[0]].a];
        for (int b = 0x80; ok && b < 256; b++) {
            if (!m_test(lead, b)) continue;
            int r = -1;
            for (int x = 0; x < 8; x++)
                if (b >= UTF8_RANGES[x][0][0] && b <= UTF8_RANGES[x][0][1]) r = x;
            if (r < 0 || covered[b] || UTF8_NRANGES[r] != sq->b) {
                ok = 0;
                break;
            }
            covered[b] = 1;
            for (int k = 1; ok && k < sq->b; k++) {
                M256 want = m_range(UTF8_RANGES[r][k][0], UTF8_RANGES[r][k][1]);
                ok = m_eq(&ir->masks.a[ir->nodes.a[items[k]].a], &want);
            }
        }
    }
    for (int b = 0xC2; ok && b <= 0xF4; b++) ok = covered[b];
    au->mbchoice[node] = ok ? 1 : 2;
    return ok;
}

/* a literal from NFA state s: a chain of byte edges through states inside it; -1 on a cap */
static int nfa_bytes(Auto *au, int32_t s, const Node *n, Task t) {
    if (!n->b) {
        NSPUSH(au, AU_NS(au, s)->eps, t.to);
        return 0;
    }
    const uint8_t *v = au->ir.bpool.a + n->a;
    if (!t.mb && v[0] >= 0x80) AU_NS(au, s)->mb_to = -1;
    int32_t cur = s;
    for (int32_t i = 0; i < n->b - 1; i++) {
        int32_t nxt = nfa_new_state(au, 1);
        if (nxt < 0) return -1;
        AU_NS(au, nxt)->inner = 1;
        BEdge e = {M_ZERO, nxt};
        m_set(&e.m, v[i]);
        NSPUSH(au, AU_NS(au, cur)->byte, e);
        cur = nxt;
    }
    BEdge e = {M_ZERO, t.to};
    m_set(&e.m, v[n->b - 1]);
    NSPUSH(au, AU_NS(au, cur)->byte, e);
    return 0;
}

/* a sequence from NFA state s: its first item is a task of s, each later one pending on the
 * state between; a multi-byte character's items one state at a time, as bytes reach them (a
 * counted string would otherwise build ~18 states per character). -1 on a cap */
static int nfa_seq(Auto *au, int32_t s, TaskVec *tasks, const Node *n, Task t) {
    if (!n->b) {
        NSPUSH(au, AU_NS(au, s)->eps, t.to);
        return 0;
    }
    const int32_t *items = au->ir.kids.a + n->a;
    int32_t last = n->b - 1;
    if (t.mb || t.from > 0) {
        int32_t f = t.from;
        if (f == last) {
            Task x = {items[f], t.to, t.gid, t.gexit, t.chk, 0, 0};
            VPUSH(*tasks, x);
            return 0;
        }
        int32_t nx = nfa_new_state(au, 0);
        if (nx < 0) return -1;
        AU_NS(au, nx)->mid = 1;
        Task cont = {t.node, t.to, t.gid, t.gexit, t.chk, 0, f + 1};
        NSPUSH(au, AU_NS(au, nx)->pending, cont);
        Task x = {items[f], nx, t.gid, t.gexit, t.chk, (uint8_t)(f == 0), 0};
        VPUSH(*tasks, x);
        return 0;
    }
    if (t.chk && !an_node_prop(&au->an, t.node, P_PRODUCTIVE)) return 0;
    int32_t nxt = t.to;
    if (last) {
        nxt = nfa_new_state(au, 0);
        if (nxt < 0) return -1;
        AU_NS(au, nxt)->inner = 1;
    }
    Task first = {items[0], nxt, t.gid, t.gexit, t.chk};
    VPUSH(*tasks, first);
    for (int32_t i = 1; i <= last; i++) {
        int32_t cur = nxt;
        nxt = t.to;
        if (i != last) {
            nxt = nfa_new_state(au, 0);
            if (nxt < 0) return -1;
            AU_NS(au, nxt)->inner = 1;
        }
        Task x = {items[i], nxt, t.gid, t.gexit, t.chk};
        NSPUSH(au, AU_NS(au, cur)->pending, x);
    }
    return 0;
}

/* build the pending tasks of NFA state s; afterwards its edges are complete */
static int nfa_expand(Auto *au, int32_t s) {
    if (AU_NS(au, s)->expanded) return 0;
    if (au->nfa_broken) {
        au->err = E_STATES;
        return -1;
    }
    TaskVec tasks = au->nx_tasks; /* the work list, starting with the pending tasks */
    memset(&au->nx_tasks, 0, sizeof(TaskVec));
    tasks.n = 0;
    {
        TaskVec *pend = &AU_NS(au, s)->pending;
        VRESERVE(tasks, pend->n);
        memcpy(tasks.a, pend->a, (size_t)pend->n * sizeof(Task));
        tasks.n = pend->n;
        memset(pend, 0, sizeof(TaskVec)); /* its arena storage is simply left */
    }
    AU_NS(au, s)->expanded = 1;
    au->mut++;
    IR *ir = &au->ir;
    int rc = 0;
    while (tasks.n) {
        Task t = tasks.a[--tasks.n];
        const Node *n = &ir->nodes.a[t.node];
        switch (n->kind) {
        case K_CLASS: {
            const M256 *m = &ir->masks.a[n->a];
            if (!t.mb && (m->w[2] | m->w[3])) AU_NS(au, s)->mb_to = -1;
            if (!m_zero(m)) {
                BEdge e = {*m, t.to};
                NSPUSH(au, AU_NS(au, s)->byte, e);
            }
            break;
        }
        case K_BYTES:
            if (nfa_bytes(au, s, n, t) < 0) {
                rc = -1;
                goto out;
            }
            break;
        case K_SEQ:
            if (nfa_seq(au, s, &tasks, n, t) < 0) {
                rc = -1;
                goto out;
            }
            break;
        case K_CHOICE: {
            int mbc = !t.mb && nfa_mb_choice(au, t.node);
            if (mbc) {
                NState *S = AU_NS(au, s);
                S->mb_to = S->mb_to == 0 ? t.to + 1 : (S->mb_to == t.to + 1 ? S->mb_to : -1);
            }
            for (int32_t i = 0; i < n->b; i++) {
                int32_t item = ir->kids.a[n->a + i];
                if (!t.chk || an_node_prop(&au->an, item, P_PRODUCTIVE)) {
                    Task x = {item, t.to, t.gid, t.gexit, t.chk, (uint8_t)(mbc && nfa_is_mb_alt(au, item))};
                    VPUSH(tasks, x);
                }
            }
            break;
        }
        case K_REPEAT:
            if (nfa_repeat(au, s, &tasks, n, t) < 0) {
                rc = -1;
                goto out;
            }
            break;
        case K_REF:
            if (nfa_ref(au, s, n->a, t.to, t.gid, t.gexit) < 0) {
                rc = -1;
                goto out;
            }
            break;
        case K_SPECIAL: {
            Pair p = {n->a, t.to};
            NSPUSH(au, AU_NS(au, s)->special, p);
            break;
        }
        }
    }
out:
    if (au->nx_tasks.a) VFREE(au->nx_tasks);
    au->nx_tasks = tasks;
    return rc;
}

#endif
