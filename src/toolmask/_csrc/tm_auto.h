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
 *
 * This file holds the types; tm_nfa.h builds the NFA, tm_dfa.h the DFA positions and stacks,
 * tm_runtime.h the states and the automaton itself (native.c includes them in that order).
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
    int32_t *trans; /* 256 next-state ids (TR_UNKNOWN / TR_DEAD) or NULL */
    /* mask module memo (mc_cnt), next to trans (a walk reads both per trie node): the counted
     * repetition (index in Auto.reps) of the one copy state its positions hold, -1 none, -2
     * more than one or not one frame, -3 unknown; the state one copy on from this one, once a
     * walk met it (-1 not yet); how many copies on a walk may stand for by this state (-1:
     * none); the copy's index and a hash of the rest of the state */
    int32_t cnt_rep, cnt_next, cnt_room, cnt_k;
    uint64_t cnt_sig;
    M256 umask, allowed;
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

/* one unrolling of a counted repetition item{lo,hi}: copy k (1 <= k <= hi) starts at NFA
 * state copy1 + k - 1 (created together, so the unrollings' ranges are disjoint and in
 * increasing order); the language from copy k is item{max(lo-k,0), hi-k} then the
 * repetition's continuation, the same for every copy but for the counts */
typedef struct {
    int32_t copy1;
    int64_t lo, hi;
    uint8_t cls; /* the item is one byte class: a copy's states are its copy states alone */
} RepCopies;

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
    IVec dx_mof;     /* per edge of dx_edges: the index of its mask in dx_masks */
    IVec dx_goff, dx_gto; /* disjoint masks: mask x's edge targets at dx_gto[dx_goff[x] ..] */
    int dx_disjoint; /* the masks are disjoint: they are the atoms, atom x the edges of mask x */
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
    VEC(RepCopies) reps; /* the counted repetitions unrolled so far (nfa_copy_of) */
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

#endif
