/* The byte-level pushdown automaton: lazy NFA, lazy DFA positions and the runtime.
 *
 * A port of toolmask/automaton/_nfa.py, _dfa.py and _runtime.py (see docs/automaton.md for the
 * derivation); the comments there apply. Differences are representation only:
 *
 *  - a stack is a hash-consed node (parent stack, top position): push and pop are O(1) and
 *    equal stacks are one id;
 *  - a state is an interned sorted array of stack ids plus the accepting flag, numbered densely;
 *    its memo is a 256-entry table of next-state ids, filled per atom as in Python;
 *  - caps that raise LimitError in Python return -1 with au->err set (E_STATES); callers turn
 *    them into rejections exactly where Python catches LimitError.
 */
#ifndef TM_AUTO_H
#define TM_AUTO_H

typedef struct {
    int32_t node, to, gid, gexit;
    uint8_t chk;
    uint8_t mb;   /* a multi-byte alternative of a UTF-8 choice (its lead byte edge) */
    int32_t from; /* > 0: the rest of such an alternative (a sequence) from item `from` */
} Task;
typedef VEC(Task) TaskVec;
typedef struct {
    M256 m;
    int32_t to;
} BEdge;
typedef VEC(BEdge) BEdgeVec;
typedef struct {
    int32_t a, b;
} Pair;
typedef VEC(Pair) PairVec;

typedef struct {
    IVec eps;
    BEdgeVec byte;
    PairVec call;    /* (entry, to) */
    PairVec special; /* (text, to) */
    TaskVec pending;
    /* multi-byte characters from this state (see nfa_mb_choice): 0 = none, -1 = not known
     * (several choices, or other high-byte edges), t + 1 = every complete multi-byte
     * character leads to NFA state t through edges of one UTF-8 choice, and no other
     * high-byte edge leaves this state */
    int32_t mb_to;
    uint8_t expanded, is_exit;
    uint8_t mid; /* inside a multi-byte alternative of a UTF-8 choice (after its lead byte) */
    uint8_t inner; /* between two items of a sequence or two bytes of a literal (see
                      dfa_atom_targets) */
} NState;
/* NFA states in pages of NS_PAGE (a state never moves: growing copies no state) */
#define NS_PAGE_BITS 8
#define NS_PAGE (1 << NS_PAGE_BITS)
typedef struct {
    NState **pages;
    int32_t n, npages;
} NStateVec;

typedef struct {
    M256 m;
    int32_t q;
} Edge;
typedef struct {
    int32_t x0, q;
    uint8_t tail;
} Call;

typedef struct {
    Edge *edges;
    Call *calls;
    Pair *specials; /* (text, position) */
    M256 umask;
    int32_t nedges, ncalls, nspecials;
    int32_t clo_off, clo_n; /* static closure: clo_n suffixes at clo_pool[clo_off...] as [len, e...] */
    int32_t u8; /* pos_utf8 memo: U8_UNKNOWN, U8_NONE, U8_DEAD, or q + 1 */
    uint8_t done, final, consuming, clo_ok, returns;
} Pos;
typedef VEC(Pos) PosVec;

typedef struct {
    int32_t parent, pos, depth;
} SNode;
typedef VEC(SNode) SNodeVec;

/* the Python handle of a state (its layout is shared with native.c) */
struct AutoObject_;
typedef struct {
    PyObject_HEAD struct AutoObject_ *owner;
    int32_t sid;
} StateObject;

#define TR_UNKNOWN (-2)
#define TR_DEAD (-1)

typedef struct {
    M256 umask, allowed;
    int32_t *trans;   /* 256 next-state ids (TR_UNKNOWN / TR_DEAD) or NULL */
    Pair *spec;       /* (text, next or TR_DEAD) memo */
    PyObject *handle; /* the live Python handle of this state, or NULL (borrowed) */
    int32_t stk_off;  /* in the intern pool: [accepting, stack ids...] */
    int32_t nstk, nspec, maxdepth;
    int32_t utf8_tgt; /* mask module memo: -3 unknown */
    uint64_t loop[2]; /* ASCII bytes (NUL never) that lead the state to itself (st_loop_set) */
    uint8_t accepting, allowed_ok, spec_ok, utf8_flags, loop_ok;
    uint8_t utf8_fast; /* utf8_tgt came from au_utf8_fast */
} St;
typedef VEC(St) StVec;

/* bump allocation for the NFA states' edge vectors, which live as long as the automaton */
typedef struct {
    VEC(char *) chunks;
    char *cur;
    size_t left;
    int64_t bytes;
} Arena;

#define ARENA_CHUNK (64 * 1024)

static void *arena_alloc(Arena *ar, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > ar->left) {
        size_t sz = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        char *c = tm_xmalloc(sz);
        VPUSH(ar->chunks, c);
        ar->cur = c;
        ar->left = sz;
        ar->bytes += (int64_t)sz;
    }
    void *p = ar->cur;
    ar->cur += n;
    ar->left -= n;
    return p;
}

static void arena_free(Arena *ar) {
    for (int32_t i = 0; i < ar->chunks.n; i++) free(ar->chunks.a[i]);
    VFREE(ar->chunks);
    memset(ar, 0, sizeof(*ar));
}

typedef struct Auto {
    IR ir;
    Analysis an;
    TmLimits lim;
    int err;
    /* NFA */
    NStateVec ns;
    Arena arena;       /* the NFA states' vectors (NSPUSH) */
    TaskVec nx_tasks;  /* nfa_expand's work list (it never re-enters itself) */
    IVec entries, entry_rule;
    int32_t *entry_of;
    IMap shared;
    int32_t *group_exit;
    int64_t max_nstates;
    int nfa_broken;
    int8_t *mbchoice; /* per IR node: 0 unknown, 1 a UTF-8 choice (nfa_mb_choice), 2 not */
    /* DFA */
    ArrSet kernels;
    PosVec pos;
    IVec starts; /* entry -> position, -1 */
    int64_t pos_cap;
    int dfa_broken;
    IVec clo_pool;
    int32_t *stamp;
    int64_t stamp_cap;
    int32_t cur_stamp;
    /* runtime */
    SNodeVec sn;
    IMap sn_index;
    ArrSet intern; /* state key: [accepting, sorted stack ids] */
    StVec st;
    int32_t *sn_mark;
    int64_t sn_mark_cap;
    int32_t sn_stamp;
    int32_t initial, dead;
    int64_t epoch; /* bumped when states are renumbered (compaction) */
    int64_t next_compact;
    IVec scratch, scratch2, kscratch, kstack;
    /* dfa_expand's scratch (it never re-enters itself) */
    BEdgeVec dx_edges;
    PairVec dx_calls, dx_specials;
    VEC(M256) dx_masks, dx_atoms, dx_nw;
    IVec dx_key, dx_ts, dx_memo;
    VEC(Edge) dx_out;
    /* target NFA sets of the edges not resolved yet (Edge.q = -2 - offset): [len, states...] */
    IVec lazy;
    int32_t max_cached;
    /* bumped whenever a structure counted by au_bytes grows or is rebuilt: au_bytes is
     * memoised on it (the compiler asks every cached automaton its size on every compile) */
    int64_t mut, bytes_mut, bytes_memo;
    /* transition tables come from slabs of TRANS_SLAB tables (freed by compaction and au_free) */
    VEC(int32_t *) slabs;
    int32_t slab_used;
} Auto;

#define TRANS_SLAB 64

static int32_t *au_trans_alloc(Auto *au) {
    if (!au->slabs.n || au->slab_used == TRANS_SLAB) {
        int32_t *slab = tm_xmalloc((size_t)TRANS_SLAB * 256 * sizeof(int32_t));
        VPUSH(au->slabs, slab);
        au->slab_used = 0;
    }
    int32_t *t = au->slabs.a[au->slabs.n - 1] + (size_t)au->slab_used++ * 256;
    au->mut++;
    for (int i = 0; i < 256; i++) t[i] = TR_UNKNOWN;
    return t;
}

static void au_free_slabs(Auto *au) {
    for (int32_t i = 0; i < au->slabs.n; i++) free(au->slabs.a[i]);
    VFREE(au->slabs);
    au->slab_used = 0;
}

#define AU_NS(au, i) (&(au)->ns.pages[(i) >> NS_PAGE_BITS][(i) & (NS_PAGE - 1)])

static void ns_grow(Arena *ar, void **a, int32_t *cap, int32_t n, size_t elem) {
    int32_t c = *cap ? *cap * 2 : 2;
    void *p = arena_alloc(ar, (size_t)c * elem);
    if (n) memcpy(p, *a, (size_t)n * elem);
    *a = p;
    *cap = c;
}

/* push onto a vector of an NFA state (arena storage: never realloc'd or freed) */
#define NSPUSH(au, v, x)                                                                \
    do {                                                                                \
        if ((v).n == (v).cap) ns_grow(&(au)->arena, (void **)&(v).a, &(v).cap, (v).n, sizeof(*(v).a)); \
        (v).a[(v).n++] = (x);                                                          \
    } while (0)
#define AU_POS(au, p) (&(au)->pos.a[p])
#define AU_ST(au, s) (&(au)->st.a[s])

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
        case K_BYTES: {
            if (!n->b) {
                NSPUSH(au, AU_NS(au, s)->eps, t.to);
                break;
            }
            const uint8_t *v = ir->bpool.a + n->a;
            if (!t.mb && v[0] >= 0x80) AU_NS(au, s)->mb_to = -1;
            int32_t cur = s;
            for (int32_t i = 0; i < n->b - 1; i++) {
                int32_t nxt = nfa_new_state(au, 1);
                if (nxt < 0) {
                    rc = -1;
                    goto out;
                }
                AU_NS(au, nxt)->inner = 1;
                BEdge e = {M_ZERO, nxt};
                m_set(&e.m, v[i]);
                NSPUSH(au, AU_NS(au, cur)->byte, e);
                cur = nxt;
            }
            BEdge e = {M_ZERO, t.to};
            m_set(&e.m, v[n->b - 1]);
            NSPUSH(au, AU_NS(au, cur)->byte, e);
            break;
        }
        case K_SEQ: {
            if (!n->b) {
                NSPUSH(au, AU_NS(au, s)->eps, t.to);
                break;
            }
            const int32_t *items = ir->kids.a + n->a;
            int32_t last = n->b - 1;
            if (t.mb || t.from > 0) {
                /* a multi-byte character: its intermediate states one at a time, as bytes
                 * reach them (a counted string would otherwise build ~18 per character) */
                int32_t f = t.from;
                if (f == last) {
                    Task x = {items[f], t.to, t.gid, t.gexit, t.chk, 0, 0};
                    VPUSH(tasks, x);
                    break;
                }
                int32_t nx = nfa_new_state(au, 0);
                if (nx < 0) {
                    rc = -1;
                    goto out;
                }
                AU_NS(au, nx)->mid = 1;
                Task cont = {t.node, t.to, t.gid, t.gexit, t.chk, 0, f + 1};
                NSPUSH(au, AU_NS(au, nx)->pending, cont);
                Task x = {items[f], nx, t.gid, t.gexit, t.chk, (uint8_t)(f == 0), 0};
                VPUSH(tasks, x);
                break;
            }
            if (t.chk && !an_node_prop(&au->an, t.node, P_PRODUCTIVE)) break;
            int32_t nxt = t.to;
            if (last) {
                nxt = nfa_new_state(au, 0);
                if (nxt < 0) {
                    rc = -1;
                    goto out;
                }
                AU_NS(au, nxt)->inner = 1;
            }
            Task first = {items[0], nxt, t.gid, t.gexit, t.chk};
            VPUSH(tasks, first);
            for (int32_t i = 1; i <= last; i++) {
                int32_t cur = nxt;
                nxt = t.to;
                if (i != last) {
                    nxt = nfa_new_state(au, 0);
                    if (nxt < 0) {
                        rc = -1;
                        goto out;
                    }
                    AU_NS(au, nxt)->inner = 1;
                }
                Task x = {ir->kids.a[n->a + i], nxt, t.gid, t.gexit, t.chk};
                NSPUSH(au, AU_NS(au, cur)->pending, x);
            }
            break;
        }
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
static int dfa_atom_targets(Auto *au, const M256 *atom) {
    IVec *ts = &au->dx_ts;
    ts->n = 0;
    const BEdgeVec *E = &au->dx_edges;
    for (int32_t i = 0; i < E->n; i++) {
        M256 both = m_and(E->a[i].m, *atom);
        if (!m_zero(&both)) VPUSH(*ts, E->a[i].to);
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

/* compute the row of position p (idempotent); -1 on a cap.
 *
 * The byte edges of the kernel's NFA states are split into atoms (maximal byte sets every
 * edge treats alike); an atom leads to the position of its targets' closure, atoms with the
 * same position are merged into one edge. An atom whose targets are all inside multi-byte
 * characters (the states after a lead byte of a UTF-8 choice) is left unresolved until a
 * byte takes it (dfa_resolve): a mask rarely needs them (pos_utf8), and a counted string
 * would otherwise build ~17 such positions per character copy. */
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
        if (S->byte.n == 1 && !S->call.n && !S->special.n) {
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
    }
    BEdgeVec *E = &au->dx_edges;
    PairVec *C = &au->dx_calls, *SP = &au->dx_specials;
    E->n = C->n = SP->n = 0;
    int final = 0;
    for (int32_t i = 0; i < klen; i++) {
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
    int rc = 0;
    Edge *edges = NULL;
    int32_t nedges = 0;
    M256 uni = M_ZERO;
    if (E->n) {
        /* the distinct masks, in order of first appearance */
        au->dx_masks.n = 0;
        int total = 0;
        for (int32_t i = 0; i < E->n; i++) {
            int seen = 0;
            for (int32_t x = 0; x < au->dx_masks.n && !seen; x++) seen = m_eq(&au->dx_masks.a[x], &E->a[i].m);
            if (seen) continue;
            VPUSH(au->dx_masks, E->a[i].m);
            uni = m_or(uni, E->a[i].m);
            total += m_count(&E->a[i].m);
        }
        /* atoms */
        au->dx_atoms.n = 0;
        if (total == m_count(&uni)) {
            VRESERVE(au->dx_atoms, au->dx_masks.n);
            memcpy(au->dx_atoms.a, au->dx_masks.a, (size_t)au->dx_masks.n * sizeof(M256));
            au->dx_atoms.n = au->dx_masks.n;
        } else {
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
        }
        /* each atom's position; atoms with the same position merged. memo: [len, q, ts...] */
        au->dx_out.n = 0;
        au->dx_memo.n = 0;
        for (int32_t x = 0; x < au->dx_atoms.n; x++) {
            M256 atom = au->dx_atoms.a[x];
            int lazy = dfa_atom_targets(au, &atom);
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
                if (q < 0) {
                    rc = -1;
                    break;
                }
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
        if (rc == 0) {
            nedges = au->dx_out.n;
            edges = tm_xmalloc((size_t)(nedges ? nedges : 1) * sizeof(Edge));
            memcpy(edges, au->dx_out.a, (size_t)nedges * sizeof(Edge));
        }
    }
    Call *calls = NULL;
    int32_t ncalls = 0;
    if (rc == 0 && C->n) {
        calls = tm_xmalloc((size_t)C->n * sizeof(Call));
        for (int32_t i = 0; i < C->n && rc == 0; i++) {
            int32_t k = C->a[i].a, first = 1;
            for (int32_t j = 0; j < i && first; j++) first = C->a[j].a != k;
            if (!first) continue;
            int32_t x0 = dfa_start(au, k);
            if (x0 < 0) {
                rc = -1;
                break;
            }
            dfa_key_targets(au, C, k);
            int32_t q = dfa_pos_of(au, au->dx_ts.a, au->dx_ts.n);
            if (q < 0) {
                rc = -1;
                break;
            }
            Call c = {x0, q, (uint8_t)dfa_bare_exit(au, q)};
            int dup = 0;
            for (int32_t y = 0; y < ncalls; y++)
                if (calls[y].x0 == c.x0 && calls[y].q == c.q && calls[y].tail == c.tail) dup = 1;
            if (!dup) calls[ncalls++] = c;
        }
    }
    Pair *specials = NULL;
    int32_t nspecials = 0;
    if (rc == 0 && SP->n) {
        specials = tm_xmalloc((size_t)SP->n * sizeof(Pair));
        for (int32_t i = 0; i < SP->n && rc == 0; i++) {
            int32_t k = SP->a[i].a, first = 1;
            for (int32_t j = 0; j < i && first; j++) first = SP->a[j].a != k;
            if (!first) continue;
            dfa_key_targets(au, SP, k);
            int32_t q = dfa_pos_of(au, au->dx_ts.a, au->dx_ts.n);
            if (q < 0) {
                rc = -1;
                break;
            }
            specials[nspecials].a = k;
            specials[nspecials].b = q;
            nspecials++;
        }
    }
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
    n += VBYTES(au->lazy);
    au->bytes_mut = au->mut;
    au->bytes_memo = n;
    return n;
}

#endif
