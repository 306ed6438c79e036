/* The vocabulary index: flat token tries and the run tables shared by every grammar.
 *
 * A port of the data side of toolmask/mask/_compute.py (VocabIndex, TokenTrie, run_tables):
 *
 *  - Trie: text tokens in depth-first order (byte, depth, skip = index past the subtree, the
 *    ids ending at the node); a walk is one loop that jumps to skip[i] at a dead byte.
 *  - per token: the class of its first character (an ASCII byte, FIRST_MB for a complete
 *    multi-byte UTF-8 character, FIRST_OTHER for a partial or invalid one), its length, and
 *    the number of characters in its tail; per byte, the length of the UTF-8 character that
 *    starts there (0: not a well-formed character).
 *  - run tables, per vocabulary and run class (a set of ASCII bytes, plus every complete
 *    multi-byte character when utf8): for each token the tail character where it first
 *    leaves the run; "base" bitmasks of the tokens whose whole tail stays in the run (shared
 *    by every position and grammar that has the run: the cross-position cache of string
 *    bodies); tries of the exit suffixes grouped by exit character.
 *
 * Shared tables are reference counted: a position's cached mask holds the tables it uses, and
 * the bounded caches here only drop tables nobody holds.
 */
#ifndef TM_VOCAB_H
#define TM_VOCAB_H

#define FIRST_MB 128
#define FIRST_OTHER 129
#define TAIL_NONE 0xFFFF
#define LOOP_MIN_ASCII 8
#define TABLE_MIN_NODES 4096

typedef struct {
    int32_t n, max_depth;
    uint8_t *byte;
    uint16_t *depth;
    int32_t *skip;
    int32_t *ends; /* offset into end_ids of [count, ids...], or -1 */
    IVec end_ids;
    int32_t lo[256], hi[256];
} Trie;

static void trie_free(Trie *t) {
    free(t->byte);
    free(t->depth);
    free(t->skip);
    free(t->ends);
    VFREE(t->end_ids);
    memset(t, 0, sizeof(*t));
}

static int64_t trie_bytes(const Trie *t) { return (int64_t)t->n * 15 + VBYTES(t->end_ids); }

/* sorting (data, id) items: a file-static context, used only under the GIL */
typedef struct {
    int32_t off, len, id;
} TItem;
static const uint8_t *tsort_pool;

static int titem_cmp(const void *x, const void *y) {
    const TItem *a = x, *b = y;
    int32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(tsort_pool + a->off, tsort_pool + b->off, (size_t)n);
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* build from items whose bytes live in pool (items are sorted in place) */
static void trie_build(Trie *t, const uint8_t *pool, TItem *items, int32_t n) {
    memset(t, 0, sizeof(*t));
    tsort_pool = pool;
    qsort(items, (size_t)n, sizeof(TItem), titem_cmp);
    VEC(uint8_t) byte = {0};
    VEC(uint16_t) depth = {0};
    IVec skip = {0}, ends = {0}, path = {0};
    const uint8_t *prev = NULL;
    int32_t prevlen = 0;
    for (int32_t k = 0; k < n; k++) {
        const uint8_t *data = pool + items[k].off;
        int32_t len = items[k].len;
        if (len <= 0) continue;
        if (prev && len == prevlen && memcmp(prev, data, (size_t)len) == 0 && path.n) {
            int32_t node = path.a[path.n - 1];
            t->end_ids.a[ends.a[node]]++;
            VPUSH(t->end_ids, items[k].id);
            continue;
        }
        int32_t lcp = 0, lim = prev ? (prevlen < len ? prevlen : len) : 0;
        while (lcp < lim && prev[lcp] == data[lcp]) lcp++;
        while (path.n > lcp) skip.a[path.a[--path.n]] = byte.n;
        for (int32_t d = lcp; d < len; d++) {
            VPUSH(path, byte.n);
            VPUSH(byte, data[d]);
            VPUSH(depth, (uint16_t)(d + 1 > 65535 ? 65535 : d + 1));
            VPUSH(ends, -1);
            VPUSH(skip, 0);
        }
        int32_t node = path.a[path.n - 1];
        ends.a[node] = t->end_ids.n;
        VPUSH(t->end_ids, 1);
        VPUSH(t->end_ids, items[k].id);
        if (len > t->max_depth) t->max_depth = len;
        prev = data;
        prevlen = len;
    }
    while (path.n) skip.a[path.a[--path.n]] = byte.n;
    t->n = byte.n;
    t->byte = byte.a ? byte.a : tm_xmalloc(1);
    t->depth = depth.a ? depth.a : tm_xmalloc(2);
    t->skip = skip.a ? skip.a : tm_xmalloc(4);
    t->ends = ends.a ? ends.a : tm_xmalloc(4);
    VFREE(path);
    for (int b = 0; b < 256; b++) t->lo[b] = t->hi[b] = 0;
    int32_t i = 0;
    while (i < t->n) {
        t->lo[t->byte[i]] = i;
        t->hi[t->byte[i]] = t->skip[i];
        i = t->skip[i];
    }
    tsort_pool = NULL;
}

/* ---- run tables ------------------------------------------------------------------------- */

typedef struct {
    uint64_t run[2]; /* ASCII bytes of the run */
    uint8_t utf8;
} RunKey;

typedef struct RunInfo {
    RunKey key;
    int32_t refs;
    uint64_t last_use;
    uint16_t *exit_char; /* per token: tail character of the first exit, TAIL_NONE if none */
    uint16_t *exit_byte; /* per token: byte offset of that exit */
} RunInfo;

typedef struct BaseMask {
    RunKey key;
    uint64_t firsts[2];
    uint8_t mb;
    int32_t steps; /* -1: unbounded */
    int32_t refs;
    uint64_t last_use;
    uint32_t *bits; /* words */
    int32_t count;
} BaseMask;

typedef struct ExitTries {
    RunKey key;
    M256 exits;
    int32_t refs;
    uint64_t last_use;
    int32_t np;    /* tries[p] for p < np */
    Trie **tries;  /* NULL where empty */
    int64_t bytes;
} ExitTries;

typedef struct {
    int32_t size, words, ntext;
    uint8_t *text;
    int32_t *tok_off, *tok_len;
    uint8_t *flat;
    int64_t nflat;
    int16_t *first_cls;
    uint8_t *first_len;
    uint16_t *tail_chars;
    uint8_t *clen;
    int32_t max_tail_chars;
    Trie trie, partial;
    /* shared tables */
    VEC(RunInfo *) runs;
    VEC(BaseMask *) bases;
    VEC(ExitTries *) exits;
    uint64_t clock;
    int32_t max_tables;
    int64_t table_bytes;
} Vocab;

static int utf8_len(uint8_t lead) {
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

/* is data[0..n) one well-formed UTF-8 character of n >= 2 bytes (RFC 3629) */
static int utf8_valid(const uint8_t *d, int n) {
    uint8_t c0 = d[0];
    uint8_t lo = 0x80, hi = 0xBF;
    if (n == 2) return c0 >= 0xC2 && c0 <= 0xDF && d[1] >= 0x80 && d[1] <= 0xBF;
    if (c0 == 0xE0) lo = 0xA0;
    if (c0 == 0xED) hi = 0x9F;
    if (c0 == 0xF0) lo = 0x90;
    if (c0 == 0xF4) hi = 0x8F;
    if (d[1] < lo || d[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (d[i] < 0x80 || d[i] > 0xBF) return 0;
    return 1;
}

static void vocab_free(Vocab *v) {
    free(v->text);
    free(v->tok_off);
    free(v->tok_len);
    free(v->flat);
    free(v->first_cls);
    free(v->first_len);
    free(v->tail_chars);
    free(v->clen);
    trie_free(&v->trie);
    trie_free(&v->partial);
    for (int32_t i = 0; i < v->runs.n; i++) {
        free(v->runs.a[i]->exit_char);
        free(v->runs.a[i]->exit_byte);
        free(v->runs.a[i]);
    }
    VFREE(v->runs);
    for (int32_t i = 0; i < v->bases.n; i++) {
        free(v->bases.a[i]->bits);
        free(v->bases.a[i]);
    }
    VFREE(v->bases);
    for (int32_t i = 0; i < v->exits.n; i++) {
        ExitTries *e = v->exits.a[i];
        for (int32_t p = 0; p < e->np; p++)
            if (e->tries[p]) {
                trie_free(e->tries[p]);
                free(e->tries[p]);
            }
        free(e->tries);
        free(e);
    }
    VFREE(v->exits);
}

/* tokens: token bytes per id (text ids only; others empty) */
static void vocab_init(Vocab *v, int32_t size, const uint8_t *text, const int32_t *lens,
                       const uint8_t *flat, int64_t nflat, int32_t max_tables) {
    memset(v, 0, sizeof(*v));
    v->size = size;
    v->words = (size + 31) / 32;
    v->max_tables = max_tables;
    v->text = tm_xmalloc((size_t)(size ? size : 1));
    memcpy(v->text, text, (size_t)size);
    v->tok_off = tm_xmalloc((size_t)(size ? size : 1) * sizeof(int32_t));
    v->tok_len = tm_xmalloc((size_t)(size ? size : 1) * sizeof(int32_t));
    v->flat = tm_xmalloc((size_t)(nflat ? nflat : 1));
    memcpy(v->flat, flat, (size_t)nflat);
    v->nflat = nflat;
    v->first_cls = tm_xmalloc((size_t)(size ? size : 1) * sizeof(int16_t));
    v->first_len = tm_xcalloc((size_t)(size ? size : 1), 1);
    v->tail_chars = tm_xcalloc((size_t)(size ? size : 1), sizeof(uint16_t));
    v->clen = tm_xcalloc((size_t)(nflat ? nflat : 1), 1);
    int64_t off = 0;
    TItem *items = tm_xmalloc((size_t)(size ? size : 1) * sizeof(TItem));
    TItem *partial = tm_xmalloc((size_t)(size ? size : 1) * sizeof(TItem));
    int32_t ni = 0, np = 0;
    for (int32_t i = 0; i < size; i++) {
        v->tok_off[i] = (int32_t)off;
        v->tok_len[i] = lens[i];
        v->first_cls[i] = FIRST_OTHER;
        const uint8_t *t = flat + off;
        int32_t n = lens[i];
        if (n > 0 && text[i]) {
            v->ntext++;
            int32_t j = 0, chars = 0;
            while (j < n) {
                uint8_t c = t[j];
                int sz = c < 0x80 ? 1 : utf8_len(c);
                if (sz && j + sz <= n && (sz == 1 || utf8_valid(t + j, sz))) {
                    v->clen[off + j] = (uint8_t)sz;
                } else {
                    sz = 1;
                    v->clen[off + j] = 0;
                }
                if (j == 0) {
                    if (v->clen[off] && sz >= 1) {
                        v->first_cls[i] = t[0] < 0x80 ? t[0] : FIRST_MB;
                        v->first_len[i] = (uint8_t)sz;
                    }
                }
                j += sz;
                chars++;
            }
            int32_t tail = chars - 1;
            v->tail_chars[i] = (uint16_t)(tail > 65534 ? 65534 : tail);
            if (tail > v->max_tail_chars) v->max_tail_chars = tail;
            TItem it = {(int32_t)off, n, i};
            items[ni++] = it;
            if (v->first_cls[i] == FIRST_OTHER) partial[np++] = it;
        }
        off += n;
    }
    trie_build(&v->trie, v->flat, items, ni);
    trie_build(&v->partial, v->flat, partial, np);
    free(items);
    free(partial);
}

static int64_t vocab_bytes(const Vocab *v) {
    int64_t n = (int64_t)v->size * (1 + 4 + 4 + 2 + 1 + 2) + v->nflat * 2;
    n += trie_bytes(&v->trie) + trie_bytes(&v->partial);
    return n + v->table_bytes;
}

static int runkey_eq(const RunKey *a, const RunKey *b) {
    return a->run[0] == b->run[0] && a->run[1] == b->run[1] && a->utf8 == b->utf8;
}

static inline int run_has(const RunKey *k, uint8_t c) { return (int)((k->run[c >> 6] >> (c & 63)) & 1); }

/* drop unreferenced tables, least recently used first, while more than max_tables are held */
static void vocab_trim(Vocab *v) {
    for (;;) {
        int32_t total = v->runs.n + v->bases.n + v->exits.n;
        if (total <= v->max_tables) return;
        uint64_t best = UINT64_MAX;
        int which = -1;
        int32_t at = -1;
        for (int32_t i = 0; i < v->runs.n; i++)
            if (!v->runs.a[i]->refs && v->runs.a[i]->last_use < best) {
                best = v->runs.a[i]->last_use;
                which = 0;
                at = i;
            }
        for (int32_t i = 0; i < v->bases.n; i++)
            if (!v->bases.a[i]->refs && v->bases.a[i]->last_use < best) {
                best = v->bases.a[i]->last_use;
                which = 1;
                at = i;
            }
        for (int32_t i = 0; i < v->exits.n; i++)
            if (!v->exits.a[i]->refs && v->exits.a[i]->last_use < best) {
                best = v->exits.a[i]->last_use;
                which = 2;
                at = i;
            }
        if (which < 0) return;
        if (which == 0) {
            RunInfo *r = v->runs.a[at];
            v->table_bytes -= (int64_t)v->size * 4;
            free(r->exit_char);
            free(r->exit_byte);
            free(r);
            v->runs.a[at] = v->runs.a[--v->runs.n];
        } else if (which == 1) {
            BaseMask *b = v->bases.a[at];
            v->table_bytes -= (int64_t)v->words * 4;
            free(b->bits);
            free(b);
            v->bases.a[at] = v->bases.a[--v->bases.n];
        } else {
            ExitTries *e = v->exits.a[at];
            v->table_bytes -= e->bytes;
            for (int32_t p = 0; p < e->np; p++)
                if (e->tries[p]) {
                    trie_free(e->tries[p]);
                    free(e->tries[p]);
                }
            free(e->tries);
            free(e);
            v->exits.a[at] = v->exits.a[--v->exits.n];
        }
    }
}

/* per token: where its tail first leaves the run (one pass over the token bytes) */
static RunInfo *vocab_run(Vocab *v, const RunKey *key) {
    for (int32_t i = 0; i < v->runs.n; i++)
        if (runkey_eq(&v->runs.a[i]->key, key)) {
            v->runs.a[i]->last_use = ++v->clock;
            return v->runs.a[i];
        }
    RunInfo *r = tm_xcalloc(1, sizeof(RunInfo));
    r->key = *key;
    r->exit_char = tm_xmalloc((size_t)(v->size ? v->size : 1) * sizeof(uint16_t));
    r->exit_byte = tm_xmalloc((size_t)(v->size ? v->size : 1) * sizeof(uint16_t));
    for (int32_t i = 0; i < v->size; i++) {
        r->exit_char[i] = TAIL_NONE;
        r->exit_byte[i] = 0;
        if (v->first_cls[i] == FIRST_OTHER) continue;
        const uint8_t *t = v->flat + v->tok_off[i];
        const uint8_t *cl = v->clen + v->tok_off[i];
        int32_t n = v->tok_len[i], j = v->first_len[i], k = 0;
        while (j < n) {
            uint8_t c = t[j];
            int sz = cl[j];
            int inside = c < 0x80 ? run_has(key, c) : (sz > 1 && key->utf8);
            if (!inside) {
                r->exit_char[i] = (uint16_t)(k > 65534 ? 65534 : k);
                r->exit_byte[i] = (uint16_t)(j > 65535 ? 65535 : j);
                break;
            }
            j += sz ? sz : 1;
            k++;
        }
    }
    r->last_use = ++v->clock;
    v->table_bytes += (int64_t)v->size * 4;
    VPUSH(v->runs, r);
    return r;
}

static inline int sel_has(const uint64_t firsts[2], uint8_t mb, int16_t cls) {
    if (cls < 128) return (int)((firsts[cls >> 6] >> (cls & 63)) & 1);
    return cls == FIRST_MB && mb;
}

/* tokens whose first character is selected and whose tail stays in the run (and has fewer
 * than steps characters, unless steps < 0) */
static BaseMask *vocab_base(Vocab *v, const RunKey *key, const uint64_t firsts[2], int mb, int32_t steps) {
    if (steps > v->max_tail_chars) steps = -1;
    for (int32_t i = 0; i < v->bases.n; i++) {
        BaseMask *b = v->bases.a[i];
        if (runkey_eq(&b->key, key) && b->firsts[0] == firsts[0] && b->firsts[1] == firsts[1] &&
            b->mb == mb && b->steps == steps) {
            b->last_use = ++v->clock;
            b->refs++;
            return b;
        }
    }
    RunInfo *r = vocab_run(v, key);
    r->refs++;
    BaseMask *b = tm_xcalloc(1, sizeof(BaseMask));
    b->key = *key;
    b->firsts[0] = firsts[0];
    b->firsts[1] = firsts[1];
    b->mb = (uint8_t)mb;
    b->steps = steps;
    b->bits = tm_xcalloc((size_t)(v->words ? v->words : 1), sizeof(uint32_t));
    for (int32_t i = 0; i < v->size; i++) {
        int16_t cls = v->first_cls[i];
        if (cls == FIRST_OTHER || !sel_has(firsts, (uint8_t)mb, cls)) continue;
        if (r->exit_char[i] != TAIL_NONE) continue;
        if (steps >= 0 && v->tail_chars[i] >= steps) continue;
        b->bits[i >> 5] |= 1u << (i & 31);
        b->count++;
    }
    r->refs--;
    b->refs = 1;
    b->last_use = ++v->clock;
    v->table_bytes += (int64_t)v->words * 4;
    VPUSH(v->bases, b);
    vocab_trim(v);
    return b;
}

/* tries of the suffixes of tokens leaving the run at tail character p through a byte of
 * exits (tokens with a complete first character; the caller filters by first character) */
static ExitTries *vocab_exits(Vocab *v, const RunKey *key, const M256 *exits) {
    for (int32_t i = 0; i < v->exits.n; i++) {
        ExitTries *e = v->exits.a[i];
        if (runkey_eq(&e->key, key) && m_eq(&e->exits, exits)) {
            e->last_use = ++v->clock;
            e->refs++;
            return e;
        }
    }
    RunInfo *r = vocab_run(v, key);
    r->refs++;
    ExitTries *e = tm_xcalloc(1, sizeof(ExitTries));
    e->key = *key;
    e->exits = *exits;
    e->np = v->max_tail_chars + 1;
    e->tries = tm_xcalloc((size_t)(e->np ? e->np : 1), sizeof(Trie *));
    int32_t *count = tm_xcalloc((size_t)(e->np ? e->np : 1), sizeof(int32_t));
    int32_t total = 0;
    for (int32_t i = 0; i < v->size; i++) {
        if (r->exit_char[i] == TAIL_NONE) continue;
        uint8_t xb = v->flat[v->tok_off[i] + r->exit_byte[i]];
        if (!m_test(exits, xb)) continue;
        count[r->exit_char[i]]++;
        total++;
    }
    TItem *items = tm_xmalloc((size_t)(total ? total : 1) * sizeof(TItem));
    int32_t *start = tm_xcalloc((size_t)(e->np + 1), sizeof(int32_t));
    for (int32_t p = 0; p < e->np; p++) start[p + 1] = start[p] + count[p];
    int32_t *fill = tm_xmalloc((size_t)(e->np ? e->np : 1) * sizeof(int32_t));
    memcpy(fill, start, (size_t)e->np * sizeof(int32_t));
    for (int32_t i = 0; i < v->size; i++) {
        if (r->exit_char[i] == TAIL_NONE) continue;
        int32_t at = v->tok_off[i] + r->exit_byte[i];
        if (!m_test(exits, v->flat[at])) continue;
        TItem it = {at, v->tok_len[i] - r->exit_byte[i], i};
        items[fill[r->exit_char[i]]++] = it;
    }
    e->bytes = (int64_t)e->np * 8;
    for (int32_t p = 0; p < e->np; p++) {
        if (!count[p]) continue;
        e->tries[p] = tm_xmalloc(sizeof(Trie));
        trie_build(e->tries[p], v->flat, items + start[p], count[p]);
        e->bytes += trie_bytes(e->tries[p]);
    }
    free(items);
    free(start);
    free(fill);
    free(count);
    r->refs--;
    e->refs = 1;
    e->last_use = ++v->clock;
    v->table_bytes += e->bytes;
    VPUSH(v->exits, e);
    vocab_trim(v);
    return e;
}

#endif
