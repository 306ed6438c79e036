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
#define TAIL_MB 1
#define TAIL_BAD 2
#define LOOP_MIN_ASCII 8
/* a run's chain is followed this many characters at most; tokens that stay in the run longer
 * are walked from there (the continuation trie), so a maxLength of 1000 costs what 16 does */
#define CHAIN_CAP 16
#define TABLE_MIN_NODES 4096
/* the longest chain a base table's length bound can come from (a chain has at most CHAIN_CAP + 1
 * states): lengths up to this are a bitmask each (Vocab.lenmask) */
#define LEN_CAP (CHAIN_CAP + 1)

typedef struct {
    int32_t n, max_depth;
    uint8_t *byte;
    uint16_t *depth;
    int32_t *skip;
    int32_t *ends; /* offset into end_ids of [count, ids...], or -1 */
    /* per node, 2 words: the ASCII bytes of the nodes below it, and flags: SUB_HIGH (a byte
     * >= 0x80 below it), SUB_BAD (below it, a byte that makes the path from the root invalid
     * UTF-8: not a prefix of well-formed characters). A walk that reaches a state looping on
     * all of them takes the whole subtree at once (walk_range). */
    uint64_t *sub;
    uint8_t *subf;
    IVec end_ids;
    int32_t lo[256], hi[256];
} Trie;

static void trie_free(Trie *t) {
    free(t->byte);
    free(t->depth);
    free(t->skip);
    free(t->ends);
    free(t->sub);
    free(t->subf);
    VFREE(t->end_ids);
    memset(t, 0, sizeof(*t));
}

static int64_t trie_bytes(const Trie *t) {
    return (int64_t)t->n * (t->sub ? 32 : 15) + VBYTES(t->end_ids);
}

#define SUB_HIGH 1
#define SUB_BAD 2
/* tries with fewer nodes have no subtree summaries (Trie.sub = NULL) */
#define SUB_MIN_NODES 2048

/* UTF-8 decoding one byte at a time: state = continuation bytes still expected (0-3) in the
 * low bits, the allowed range of the next one above; returns the next state or -1 (invalid) */
static int utf8_step(int st, uint8_t b) {
    int need = st & 3;
    if (!need) {
        if (b < 0x80) return 0;
        if (b >= 0xC2 && b <= 0xDF) return 1 | (0x80 << 2) | (0xBF << 10);
        if (b == 0xE0) return 2 | (0xA0 << 2) | (0xBF << 10);
        if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return 2 | (0x80 << 2) | (0xBF << 10);
        if (b == 0xED) return 2 | (0x80 << 2) | (0x9F << 10);
        if (b == 0xF0) return 3 | (0x90 << 2) | (0xBF << 10);
        if (b >= 0xF1 && b <= 0xF3) return 3 | (0x80 << 2) | (0xBF << 10);
        if (b == 0xF4) return 3 | (0x80 << 2) | (0x8F << 10);
        return -1;
    }
    int lo = (st >> 2) & 0xFF, hi = (st >> 10) & 0xFF;
    if (b < lo || b > hi) return -1;
    return (need - 1) ? ((need - 1) | (0x80 << 2) | (0xBF << 10)) : 0;
}

/* sorting (data, id) items by bytes, then id: MSD radix sort on the byte at depth d (items
 * shorter than d+1 first), insertion sort for small groups. O(total bytes examined). */
typedef struct {
    int32_t off, len, id;
} TItem;

static int titem_less(const uint8_t *pool, const TItem *a, const TItem *b, int32_t d) {
    int32_t la = a->len - d, lb = b->len - d, n = la < lb ? la : lb;
    int c = n > 0 ? memcmp(pool + a->off + d, pool + b->off + d, (size_t)n) : 0;
    if (c) return c < 0;
    if (la != lb) return la < lb;
    return a->id < b->id;
}

static void titem_sort(const uint8_t *pool, TItem *items, int32_t n, int32_t d, TItem *tmp) {
    while (n > 1) {
        if (n <= 24) {
            for (int32_t i = 1; i < n; i++) {
                TItem x = items[i];
                int32_t j = i - 1;
                while (j >= 0 && titem_less(pool, &x, &items[j], d)) {
                    items[j + 1] = items[j];
                    j--;
                }
                items[j + 1] = x;
            }
            return;
        }
        int32_t count[257];
        memset(count, 0, sizeof(count));
        for (int32_t i = 0; i < n; i++) count[items[i].len > d ? pool[items[i].off + d] + 1 : 0]++;
        int32_t start[258];
        start[0] = 0;
        for (int k = 0; k < 257; k++) start[k + 1] = start[k] + count[k];
        int32_t fill[257];
        memcpy(fill, start, sizeof(fill));
        for (int32_t i = 0; i < n; i++) tmp[fill[items[i].len > d ? pool[items[i].off + d] + 1 : 0]++] = items[i];
        memcpy(items, tmp, (size_t)n * sizeof(TItem));
        /* ended items: by id */
        if (count[0] > 1) {
            for (int32_t i = 1; i < count[0]; i++) {
                TItem x = items[i];
                int32_t j = i - 1;
                while (j >= 0 && items[j].id > x.id) {
                    items[j + 1] = items[j];
                    j--;
                }
                items[j + 1] = x;
            }
        }
        /* recurse on all buckets but the largest, loop on the largest */
        int big = 1;
        for (int k = 2; k < 257; k++)
            if (count[k] > count[big]) big = k;
        for (int k = 1; k < 257; k++)
            if (k != big && count[k] > 1) titem_sort(pool, items + start[k], count[k], d + 1, tmp);
        items += start[big];
        n = count[big];
        d++;
    }
}

/* build from items whose bytes live in pool (items are sorted in place, unless sorted says
 * they already are: by bytes, then id) */
static void trie_build(Trie *t, const uint8_t *pool, TItem *items, int32_t n, int sorted) {
    memset(t, 0, sizeof(*t));
    if (!sorted) {
        TItem *tmp = tm_xmalloc((size_t)(n ? n : 1) * sizeof(TItem));
        titem_sort(pool, items, n, 0, tmp);
        free(tmp);
    }
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
    /* subtree byte sets and flags, children before parents; a node is bad when the bytes
     * from the root to it are not a prefix of well-formed UTF-8 (decoded along each path).
     * Small tries (most exit tries) go without: their walks are short anyway */
    if (t->n < SUB_MIN_NODES) return;
    t->sub = tm_xcalloc((size_t)(t->n ? t->n : 1) * 2, sizeof(uint64_t));
    t->subf = tm_xcalloc((size_t)(t->n ? t->n : 1), 1);
    uint8_t *bad = tm_xcalloc((size_t)(t->n ? t->n : 1), 1);
    {
        /* decoder state per depth: dst[d] after the node at depth d (the root: 0) */
        int *dst = tm_xmalloc((size_t)(t->max_depth + 2) * sizeof(int));
        dst[0] = 0;
        for (int32_t x = 0; x < t->n; x++) {
            int d = t->depth[x];
            int prev = dst[d - 1];
            int nx = prev < 0 ? -1 : utf8_step(prev, t->byte[x]);
            dst[d] = nx;
            bad[x] = nx < 0;
        }
        free(dst);
    }
    for (int32_t x = t->n - 1; x >= 0; x--) {
        uint64_t a0 = 0, a1 = 0;
        uint8_t f = 0;
        for (int32_t c = x + 1; c < t->skip[x]; c = t->skip[c]) {
            uint8_t b = t->byte[c];
            if (b >= 0x80)
                f |= SUB_HIGH;
            else if (b < 64)
                a0 |= 1ULL << b;
            else
                a1 |= 1ULL << (b - 64);
            if (bad[c]) f |= SUB_BAD;
            a0 |= t->sub[2 * c];
            a1 |= t->sub[2 * c + 1];
            f |= t->subf[c];
        }
        t->sub[2 * x] = a0;
        t->sub[2 * x + 1] = a1;
        t->subf[x] = f;
    }
    free(bad);
}

/* ---- run tables ------------------------------------------------------------------------- */

typedef struct {
    uint64_t run[2]; /* ASCII bytes of the run */
    uint8_t utf8;
} RunKey;

typedef struct BaseMask {
    RunKey key;
    uint64_t firsts[2];
    uint8_t mb;
    int32_t steps; /* -1: unbounded */
    int32_t refs;
    uint64_t last_use;
    uint32_t *bits; /* words */
    uint8_t any;    /* some bit is set */
} BaseMask;

typedef struct ExitTries {
    RunKey key;
    M256 exits;
    uint64_t firsts[2];
    uint8_t mb;
    int32_t refs;
    uint64_t last_use;
    int32_t np;    /* tries[p] for p < np (= CHAIN_CAP + 1) */
    Trie **tries;  /* NULL where empty */
    Trie *cont;    /* tokens with more than CHAIN_CAP tail characters in the run (whether
                      they leave it later or not): their suffix from tail character CHAIN_CAP;
                      NULL if none */
    Trie *late;    /* those of them that leave the run through a byte of exits: their suffix
                      from there (a looping run walks these from its loop state, the tokens
                      that stay being in its base table); NULL if none */
    int64_t bytes;
} ExitTries;

static void trie_drop(Trie *t) {
    if (!t) return;
    trie_free(t);
    free(t);
}

static void exit_tries_free(ExitTries *e) {
    for (int32_t p = 0; p < e->np; p++) trie_drop(e->tries[p]);
    free(e->tries);
    trie_drop(e->cont);
    trie_drop(e->late);
    free(e);
}

/* the exit index: per exit class (an ASCII byte that is neither a letter nor a digit, or
 * XBAD: a byte of no complete character), one record per token whose tail holds it, at its
 * first occurrence; and one per long token (more than CHAIN_CAP tail characters) at tail
 * character CHAIN_CAP (see exit_index_build) */
#define XCLASSES 130
#define XBAD 129
typedef struct {
    uint64_t pre[2]; /* the ASCII bytes of the tail characters before the exit */
    int32_t id;
    int32_t off, len; /* the suffix from the exit: flat[off .. off + len) */
    int16_t first;    /* first_cls */
    uint16_t p;       /* the exit's tail character index */
    uint8_t flags;    /* TAIL_MB / TAIL_BAD: such characters before the exit */
    uint8_t byte;     /* flat[off] */
} ExitRec;

/* is x an exit class of the index: bytes that are not letters or digits (structure, spaces,
 * controls: few tokens each), and bytes of no complete character */
static inline int xclass_indexed(int x) {
    if (x == XBAD) return 1;
    if (x >= 128) return 0;
    return !((x >= '0' && x <= '9') || (x >= 'A' && x <= 'Z') || (x >= 'a' && x <= 'z'));
}

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
    uint64_t *tailset;  /* per token: the ASCII bytes of its tail (2 words) */
    uint8_t *tailflags; /* per token: TAIL_MB (a complete multi-byte character in the tail),
                           TAIL_BAD (a byte of no complete character in the tail) */
    Trie trie, partial;
    int32_t dcount[256][17]; /* nodes of bucket b at depth <= d (d <= 16) */
    /* candidates for the shared tables: tokens by first byte (text tokens with a complete
     * first character), tokens by ASCII byte present in the tail (inv[128]: any byte >= 0x80),
     * tokens with more than CHAIN_CAP tail characters */
    int32_t byfirst_off[257];
    int32_t *byfirst;
    int32_t inv_off[130];
    int32_t *inv;
    IVec longtoks;
    int32_t *mark; /* per token stamp, for deduplicating candidates */
    /* bitmasks (words each): lenmask + s * words = the tokens with fewer than s tail characters
     * (s <= LEN_CAP); firstmask = the tokens with a complete first character */
    uint32_t *lenmask, *firstmask;
    /* per ASCII byte c (0-127), the tokens (with a complete first character) whose tail holds
     * c, as a bitmask of words; 128: a complete multi-byte character in the tail (TAIL_MB),
     * 129: a byte of no complete character (TAIL_BAD). A run's base table is the selected
     * first characters less the OR of the bitmasks of the bytes outside the run. */
    uint32_t *tailbits;
    /* the class bitmaps (see base_build): firstbits + c * words, the tokens whose first
     * character is the ASCII byte c (128: a complete multi-byte one); groupbits + g * words,
     * the OR of tailbits over the bytes of ASCII block g, and + (NGROUPS + g) * words, of
     * firstbits */
    uint32_t *firstbits, *groupbits;
    /* the exit index (see exit_index_build): records of exit class x at xrec[xoff[x] ..
     * xoff[x + 1]), x < XCLASSES; the long tokens' records at lrec[0 .. nlrec) */
    ExitRec *xrec, *lrec;
    int32_t xoff[XCLASSES + 1], nlrec;
    int32_t mark_stamp;
    /* shared tables */
    VEC(BaseMask *) bases;
    VEC(ExitTries *) exits;
    uint64_t clock;
    int32_t max_tables;
    int64_t table_bytes;
    /* how tables were made (diagnostics, Vocab.info): base tables combined from the class
     * bitmaps, narrowed from a wider one, bounded from an unbounded one, counted by a pass;
     * exit tries from the exit index, from a candidate scan */
    int64_t n_built, n_narrowed, n_bounded, n_passed, n_indexed, n_scanned;
    /* guards the shared tables (bases, exits, their refs and clock, table_bytes) and the
     * candidate marks; the rest of the vocabulary is immutable after vocab_init */
    TmMutex lock;
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
    tm_mutex_destroy(&v->lock);
    free(v->text);
    free(v->tok_off);
    free(v->tok_len);
    free(v->flat);
    free(v->first_cls);
    free(v->first_len);
    free(v->tail_chars);
    free(v->clen);
    free(v->tailset);
    free(v->tailflags);
    free(v->byfirst);
    free(v->inv);
    VFREE(v->longtoks);
    free(v->mark);
    free(v->lenmask);
    free(v->firstmask);
    free(v->tailbits);
    free(v->firstbits);
    free(v->groupbits);
    free(v->xrec);
    free(v->lrec);
    trie_free(&v->trie);
    trie_free(&v->partial);
    for (int32_t i = 0; i < v->bases.n; i++) {
        free(v->bases.a[i]->bits);
        free(v->bases.a[i]);
    }
    VFREE(v->bases);
    for (int32_t i = 0; i < v->exits.n; i++) {
        exit_tries_free(v->exits.a[i]);
    }
    VFREE(v->exits);
}

/* ---- class bitmaps and the exit index: what every run class's tables are made of ------- */

/* the blocks of ASCII the character classes of JSON and of its formats are made of: controls,
 * space and punctuation, digits, punctuation, upper case letters, punctuation, lower case
 * letters, punctuation (a class that takes or leaves a whole block costs one bitmap for it) */
#define NGROUPS 8
static const uint8_t GROUP_LO[NGROUPS] = {0x00, 0x20, 0x30, 0x3A, 0x41, 0x5B, 0x61, 0x7B};
static const uint8_t GROUP_HI[NGROUPS] = {0x1F, 0x2F, 0x39, 0x40, 0x5A, 0x60, 0x7A, 0x7F};

/* the bytes of block g as two words */
static void group_mask(int g, uint64_t out[2]) {
    out[0] = out[1] = 0;
    for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++) out[c >> 6] |= 1ULL << (c & 63);
}

/* firstbits, groupbits (Vocab): from tailbits and the first-character lists. O(130 * words +
 * text tokens) */
static void class_bitmaps_build(Vocab *v) {
    size_t w = (size_t)(v->words ? v->words : 1);
    v->firstbits = tm_xcalloc(w * 129, sizeof(uint32_t));
    v->groupbits = tm_xcalloc(w * 2 * NGROUPS, sizeof(uint32_t));
    for (int32_t i = 0; i < v->size; i++) {
        int16_t f = v->first_cls[i];
        if (f == FIRST_OTHER) continue;
        v->firstbits[(size_t)(f < 128 ? f : 128) * w + (i >> 5)] |= 1u << (i & 31);
    }
    for (int g = 0; g < NGROUPS; g++)
        for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++) {
            words_or(v->groupbits + (size_t)g * w, v->tailbits + (size_t)c * w, w);
            words_or(v->groupbits + (size_t)(NGROUPS + g) * w, v->firstbits + (size_t)c * w, w);
        }
}

/* fill the exit records of token i (pass 2) or count them (pass 1: out NULL). With want_long,
 * the long token's record instead: the tail characters 0 .. CHAIN_CAP, the suffix from
 * CHAIN_CAP */
static void exit_records_of(const Vocab *v, int32_t i, int32_t *count, ExitRec *out, int32_t *fill, ExitRec *lrec,
                            int32_t *nlong) {
    const uint8_t *t = v->flat + v->tok_off[i];
    const uint8_t *cl = v->clen + v->tok_off[i];
    int32_t n = v->tok_len[i], j = v->first_len[i], k = 0;
    uint64_t pre[2] = {0, 0}, seen[2] = {0, 0};
    uint8_t flags = 0, bad_seen = 0;
    int is_long = v->tail_chars[i] > CHAIN_CAP;
    while (j < n) {
        uint8_t c = t[j];
        int sz = cl[j];
        int x = sz == 0 ? XBAD : (sz > 1 ? -1 : c);
        int first_time = x == XBAD ? !bad_seen : (x >= 0 && !((seen[x >> 6] >> (x & 63)) & 1));
        if (k == CHAIN_CAP && is_long && lrec) {
            ExitRec r = {{pre[0], pre[1]}, i, v->tok_off[i] + j, n - j, v->first_cls[i], (uint16_t)k, flags, c};
            /* the long record's set covers tail character CHAIN_CAP too */
            if (x == XBAD)
                r.flags |= TAIL_BAD;
            else if (x < 0)
                r.flags |= TAIL_MB;
            else
                r.pre[x >> 6] |= 1ULL << (x & 63);
            lrec[(*nlong)++] = r;
        }
        if (x >= 0 && first_time && xclass_indexed(x)) {
            if (out) {
                ExitRec r = {{pre[0], pre[1]}, i, v->tok_off[i] + j, n - j, v->first_cls[i],
                             (uint16_t)(k > 65535 ? 65535 : k), flags, c};
                out[fill[x]++] = r;
            } else {
                count[x]++;
            }
        }
        if (x == XBAD) {
            bad_seen = 1;
            flags |= TAIL_BAD;
        } else if (x < 0) {
            flags |= TAIL_MB;
        } else {
            seen[x >> 6] |= 1ULL << (x & 63);
            pre[x >> 6] |= 1ULL << (x & 63);
        }
        j += sz ? sz : 1;
        k++;
    }
}

/* sort recs[0..n) by suffix, then token id (trie order) */
static void exit_records_sort(const Vocab *v, ExitRec *recs, int32_t n) {
    if (n < 2) return;
    TItem *items = tm_xmalloc((size_t)n * sizeof(TItem)), *tmp = tm_xmalloc((size_t)n * sizeof(TItem));
    /* records are made in token order: the record index breaks ties as the id would */
    for (int32_t k = 0; k < n; k++) {
        TItem it = {recs[k].off, recs[k].len, k};
        items[k] = it;
    }
    titem_sort(v->flat, items, n, 0, tmp);
    ExitRec *copy = tm_xmalloc((size_t)n * sizeof(ExitRec));
    memcpy(copy, recs, (size_t)n * sizeof(ExitRec));
    for (int32_t k = 0; k < n; k++) recs[k] = copy[items[k].id];
    free(copy);
    free(tmp);
    free(items);
}

/* the exit index (Vocab.xrec, .lrec): per exit class x, the tokens (with a complete first
 * character) whose tail holds x, each at the first occurrence, in trie order of the suffix
 * from there. A run's exit tries keep the records whose class leaves the run, whose earlier
 * tail characters stay in it and whose first character is selected: a scan of a few
 * thousand contiguous records, already sorted, instead of a pass over per-token tables (a
 * cache miss per token). The long tokens' records give the continuation tries the same way.
 * O(text tokens + tail bytes), then the sorts. */
static void exit_index_build(Vocab *v) {
    int32_t count[XCLASSES], fill[XCLASSES];
    memset(count, 0, sizeof(count));
    for (int32_t i = 0; i < v->size; i++)
        if (v->first_cls[i] != FIRST_OTHER) exit_records_of(v, i, count, NULL, NULL, NULL, NULL);
    v->xoff[0] = 0;
    for (int x = 0; x < XCLASSES; x++) v->xoff[x + 1] = v->xoff[x] + count[x];
    v->xrec = tm_xmalloc((size_t)(v->xoff[XCLASSES] + 1) * sizeof(ExitRec));
    v->lrec = tm_xmalloc((size_t)(v->longtoks.n + 1) * sizeof(ExitRec));
    memcpy(fill, v->xoff, sizeof(fill));
    v->nlrec = 0;
    for (int32_t i = 0; i < v->size; i++)
        if (v->first_cls[i] != FIRST_OTHER) exit_records_of(v, i, NULL, v->xrec, fill, v->lrec, &v->nlrec);
    for (int x = 0; x < XCLASSES; x++) exit_records_sort(v, v->xrec + v->xoff[x], count[x]);
    exit_records_sort(v, v->lrec, v->nlrec);
}

/* tokens: token bytes per id (text ids only; others empty) */
static void vocab_init(Vocab *v, int32_t size, const uint8_t *text, const int32_t *lens,
                       const uint8_t *flat, int64_t nflat, int32_t max_tables) {
    memset(v, 0, sizeof(*v));
    tm_mutex_init(&v->lock);
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
    v->tailset = tm_xcalloc((size_t)(size ? size : 1) * 2, sizeof(uint64_t));
    v->tailflags = tm_xcalloc((size_t)(size ? size : 1), 1);
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
                } else if (!v->clen[off + j]) {
                    v->tailflags[i] |= TAIL_BAD;
                } else if (sz > 1) {
                    v->tailflags[i] |= TAIL_MB;
                } else {
                    v->tailset[2 * i + (c >> 6)] |= 1ULL << (c & 63);
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
    trie_build(&v->trie, v->flat, items, ni, 0);
    trie_build(&v->partial, v->flat, partial, np, 0);
    free(items);
    free(partial);
    /* candidate lists */
    memset(v->byfirst_off, 0, sizeof(v->byfirst_off));
    memset(v->inv_off, 0, sizeof(v->inv_off));
    for (int32_t i = 0; i < size; i++) {
        if (v->first_cls[i] == FIRST_OTHER) continue;
        v->byfirst_off[flat[v->tok_off[i]] + 1]++;
        for (int c = 0; c < 128; c++)
            if ((v->tailset[2 * i + (c >> 6)] >> (c & 63)) & 1) v->inv_off[c + 1]++;
        if (v->tailflags[i]) v->inv_off[129]++;
        if (v->tail_chars[i] > CHAIN_CAP) VPUSH(v->longtoks, i);
    }
    for (int b = 0; b < 256; b++) v->byfirst_off[b + 1] += v->byfirst_off[b];
    for (int c = 0; c < 129; c++) v->inv_off[c + 1] += v->inv_off[c];
    v->byfirst = tm_xmalloc((size_t)(v->byfirst_off[256] + 1) * sizeof(int32_t));
    v->inv = tm_xmalloc((size_t)(v->inv_off[129] + 1) * sizeof(int32_t));
    {
        int32_t fill_f[256], fill_i[129];
        memcpy(fill_f, v->byfirst_off, sizeof(fill_f));
        memcpy(fill_i, v->inv_off, sizeof(fill_i));
        for (int32_t i = 0; i < size; i++) {
            if (v->first_cls[i] == FIRST_OTHER) continue;
            v->byfirst[fill_f[flat[v->tok_off[i]]]++] = i;
            for (int w = 0; w < 2; w++) {
                uint64_t x = v->tailset[2 * i + w];
                while (x) {
                    int c = w * 64 + __builtin_ctzll(x);
                    x &= x - 1;
                    v->inv[fill_i[c]++] = i;
                }
            }
            if (v->tailflags[i]) v->inv[fill_i[128]++] = i;
        }
    }
    v->mark = tm_xcalloc((size_t)(size ? size : 1), sizeof(int32_t));
    /* length and first-character bitmasks (for run tables built by set operations) */
    {
        size_t w = (size_t)(v->words ? v->words : 1);
        v->lenmask = tm_xcalloc(w * (LEN_CAP + 1), sizeof(uint32_t));
        v->firstmask = tm_xcalloc(w, sizeof(uint32_t));
        for (int32_t i = 0; i < size; i++) {
            if (v->first_cls[i] != FIRST_OTHER) v->firstmask[i >> 5] |= 1u << (i & 31);
            if (v->tail_chars[i] < LEN_CAP) v->lenmask[(size_t)(v->tail_chars[i] + 1) * w + (i >> 5)] |= 1u << (i & 31);
        }
        v->tailbits = tm_xcalloc(w * 130, sizeof(uint32_t));
        for (int32_t i = 0; i < size; i++) {
            if (v->first_cls[i] == FIRST_OTHER) continue;
            uint32_t bit = 1u << (i & 31);
            for (int h = 0; h < 2; h++) {
                uint64_t x = v->tailset[2 * i + h];
                while (x) {
                    int c = h * 64 + __builtin_ctzll(x);
                    x &= x - 1;
                    v->tailbits[(size_t)c * w + (i >> 5)] |= bit;
                }
            }
            if (v->tailflags[i] & TAIL_MB) v->tailbits[128 * w + (i >> 5)] |= bit;
            if (v->tailflags[i] & TAIL_BAD) v->tailbits[129 * w + (i >> 5)] |= bit;
        }
        /* lenmask[s] held the tokens with exactly s - 1 tail characters: accumulate */
        for (int s2 = 1; s2 <= LEN_CAP; s2++)
            for (size_t k = 0; k < w; k++) v->lenmask[(size_t)s2 * w + k] |= v->lenmask[(size_t)(s2 - 1) * w + k];
    }
    /* depth profile per bucket (walk cost estimates) */
    for (int b = 0; b < 256; b++) {
        for (int32_t i = v->trie.lo[b]; i < v->trie.hi[b]; i++)
            if (v->trie.depth[i] <= 16) v->dcount[b][v->trie.depth[i]]++;
        for (int d = 1; d <= 16; d++) v->dcount[b][d] += v->dcount[b][d - 1];
    }
    class_bitmaps_build(v);
    exit_index_build(v);
}

/* nodes a walk of bucket b visits at most when tokens can only survive max_depth bytes */
static int64_t vocab_walk_estimate(const Vocab *v, int b, int64_t max_depth) {
    if (max_depth > 16) return v->trie.hi[b] - v->trie.lo[b];
    return v->dcount[b][max_depth < 1 ? 1 : max_depth];
}

static int64_t vocab_bytes(const Vocab *v) {
    int64_t n = (int64_t)v->size * (1 + 4 + 4 + 2 + 1 + 2 + 17 + 4 + 4) + v->nflat * 2;
    n += (int64_t)v->inv_off[129] * 4 + VBYTES(v->longtoks);
    n += (int64_t)v->words * 4 * (LEN_CAP + 2 + 130 + 129 + 2 * NGROUPS);
    n += (int64_t)(v->xoff[XCLASSES] + v->nlrec) * (int64_t)sizeof(ExitRec);
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
        int32_t total = v->bases.n + v->exits.n;
        if (total <= v->max_tables) return;
        uint64_t best = UINT64_MAX;
        int which = -1;
        int32_t at = -1;
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
        if (which == 1) {
            BaseMask *b = v->bases.a[at];
            v->table_bytes -= (int64_t)v->words * 4;
            free(b->bits);
            free(b);
            v->bases.a[at] = v->bases.a[--v->bases.n];
        } else {
            ExitTries *e = v->exits.a[at];
            v->table_bytes -= e->bytes;
            exit_tries_free(e);
            v->exits.a[at] = v->exits.a[--v->exits.n];
        }
    }
}

/* does the tail of token i stay in the run? (its byte set and flags; no pass over bytes) */
static inline int tail_in_run(const Vocab *v, const RunKey *key, int32_t i) {
    if ((v->tailset[2 * i] & ~key->run[0]) | (v->tailset[2 * i + 1] & ~key->run[1])) return 0;
    uint8_t f = v->tailflags[i];
    return !(f & TAIL_BAD) && (!(f & TAIL_MB) || key->utf8);
}

/* byte offset of tail character k of token i */
static int32_t tail_char_offset(const Vocab *v, int32_t i, int32_t k) {
    const uint8_t *cl = v->clen + v->tok_off[i];
    int32_t n = v->tok_len[i], j = v->first_len[i];
    while (k > 0 && j < n) {
        j += cl[j] ? cl[j] : 1;
        k--;
    }
    return j;
}

/* where the tail of token i first leaves the run: tail character index and byte offset */
static void tail_exit(const Vocab *v, const RunKey *key, int32_t i, int32_t *chr, int32_t *at) {
    const uint8_t *t = v->flat + v->tok_off[i];
    const uint8_t *cl = v->clen + v->tok_off[i];
    int32_t n = v->tok_len[i], j = v->first_len[i], k = 0;
    while (j < n) {
        uint8_t c = t[j];
        int sz = cl[j];
        int inside = c < 0x80 ? run_has(key, c) : (sz > 1 && key->utf8);
        if (!inside) break;
        j += sz ? sz : 1;
        k++;
    }
    *chr = k;
    *at = j;
}

/* candidates: the tokens whose first character is selected (firsts, or a complete multi-byte
 * one when mb), or, when exits is given and that is fewer, the tokens whose tail holds a byte
 * of exits (deduplicated); plus the long tokens when with_long. Costs O(candidates). */
static void vocab_candidates(Vocab *v, const uint64_t firsts[2], int mb, const M256 *exits, int with_long,
                             IVec *out) {
    out->n = 0;
    int64_t nf = 0, ne = 0;
    for (int b = 0; b < 128; b++)
        if ((firsts[b >> 6] >> (b & 63)) & 1) nf += v->byfirst_off[b + 1] - v->byfirst_off[b];
    if (mb) nf += v->byfirst_off[256] - v->byfirst_off[0xC2];
    int use_exits = 0;
    if (exits) {
        for (int c = 0; c < 128; c++)
            if (m_test(exits, c)) ne += v->inv_off[c + 1] - v->inv_off[c];
        M256 hi = m_and(*exits, M_HIGH);
        if (!m_zero(&hi)) ne += v->inv_off[129] - v->inv_off[128];
        use_exits = ne < nf;
    }
    if (++v->mark_stamp == INT32_MAX) {
        memset(v->mark, 0, (size_t)v->size * sizeof(int32_t));
        v->mark_stamp = 1;
    }
    int32_t stamp = v->mark_stamp;
#define CAND(id)                          \
    do {                                  \
        int32_t _i = (id);                \
        if (v->mark[_i] != stamp) {       \
            v->mark[_i] = stamp;          \
            VPUSH(*out, _i);              \
        }                                 \
    } while (0)
    if (use_exits) {
        for (int c = 0; c < 128; c++)
            if (m_test(exits, c))
                for (int32_t k = v->inv_off[c]; k < v->inv_off[c + 1]; k++) CAND(v->inv[k]);
        M256 hi = m_and(*exits, M_HIGH);
        if (!m_zero(&hi))
            for (int32_t k = v->inv_off[128]; k < v->inv_off[129]; k++) CAND(v->inv[k]);
    } else {
        for (int b = 0; b < 128; b++)
            if ((firsts[b >> 6] >> (b & 63)) & 1)
                for (int32_t k = v->byfirst_off[b]; k < v->byfirst_off[b + 1]; k++) CAND(v->byfirst[k]);
        if (mb)
            for (int32_t k = v->byfirst_off[0xC2]; k < v->byfirst_off[256]; k++) CAND(v->byfirst[k]);
    }
    if (with_long)
        for (int32_t k = 0; k < v->longtoks.n; k++) CAND(v->longtoks.a[k]);
#undef CAND
}

static inline int sel_has(const uint64_t firsts[2], uint8_t mb, int16_t cls) {
    if (cls < 128) return (int)((firsts[cls >> 6] >> (cls & 63)) & 1);
    return cls == FIRST_MB && mb;
}

/* tokens whose first character is one of firsts (ASCII bytes), or a complete multi-byte one
 * when mb. O(1). */
static int64_t vocab_first_count(const Vocab *v, const uint64_t firsts[2], int mb) {
    int64_t n = 0;
    for (int w = 0; w < 2; w++) {
        uint64_t x = firsts[w];
        while (x) {
            int b = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            n += v->byfirst_off[b + 1] - v->byfirst_off[b];
        }
    }
    if (mb) n += v->byfirst_off[256] - v->byfirst_off[128];
    return n;
}

/* a selection of first characters (has, has_mb) includes another (want, want_mb); *extra: the
 * tokens the larger one has in addition */
static int firsts_cover(const Vocab *v, const uint64_t has[2], int has_mb, const uint64_t want[2], int want_mb,
                        int64_t *extra) {
    if ((want[0] & ~has[0]) | (want[1] & ~has[1])) return 0;
    if (want_mb && !has_mb) return 0;
    uint64_t more[2] = {has[0] & ~want[0], has[1] & ~want[1]};
    *extra = vocab_first_count(v, more, has_mb && !want_mb);
    return 1;
}

/* clear the bits of the tokens in list[lo..hi); the number cleared */
static int64_t clear_listed(uint32_t *bits, const int32_t *list, int32_t lo, int32_t hi) {
    int64_t n = 0;
    for (int32_t k = lo; k < hi; k++) {
        int32_t i = list[k];
        uint32_t bit = 1u << (i & 31);
        n += (bits[i >> 5] & bit) != 0;
        bits[i >> 5] &= ~bit;
    }
    return n;
}

/* a list this short is cheaper walked than a bitmap of `words` words OR-ed */
static inline int list_is_short(const Vocab *v, int32_t n) { return (int64_t)n * 8 < v->words; }

/* is some word nonzero */
static int words_any(const uint32_t *bits, int32_t words) {
    for (int32_t k = 0; k < words; k++)
        if (bits[k]) return 1;
    return 0;
}

/* a narrowing (narrow_firsts) of a table costs a copy and a bitmap pass per dropped first
 * byte; past this many, base_build is cheaper */
#define NARROW_MAX 8

/* the bitmap passes narrowing wider to (firsts, mb) costs (short lists count for nothing) */
static int narrow_cost(const Vocab *v, const BaseMask *wider, const uint64_t firsts[2], int mb) {
    int n = 0;
    for (int w = 0; w < 2; w++) {
        uint64_t x = wider->firsts[w] & ~firsts[w];
        while (x) {
            int c = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            n += !list_is_short(v, v->byfirst_off[c + 1] - v->byfirst_off[c]);
        }
    }
    return n + (wider->mb && !mb);
}

/* clear from bits (a copy of wider's) the tokens of the first characters wider selects and
 * (firsts, mb) does not: each a first byte's bitmap, or its list when short */
static void narrow_firsts(const Vocab *v, uint32_t *bits, const BaseMask *wider, const uint64_t firsts[2], int mb) {
    size_t w = (size_t)v->words;
    for (int h = 0; h < 2; h++) {
        uint64_t x = wider->firsts[h] & ~firsts[h];
        while (x) {
            int c = h * 64 + __builtin_ctzll(x);
            x &= x - 1;
            int32_t lo = v->byfirst_off[c], hi = v->byfirst_off[c + 1];
            if (list_is_short(v, hi - lo))
                clear_listed(bits, v->byfirst, lo, hi);
            else
                words_andnot(bits, v->firstbits + (size_t)c * w, w);
        }
    }
    if (wider->mb && !mb) words_andnot(bits, v->firstbits + (size_t)128 * w, w);
}

/* bitmaps to OR, lists whose tokens to set or clear (base_build's plan) */
typedef struct {
    const uint32_t *src[2 * XCLASSES];
    int32_t n;
} BitSrcs;
typedef struct {
    const int32_t *list;
    int32_t lo, hi;
} ListRef;
typedef struct {
    ListRef a[2 * XCLASSES];
    int32_t n;
} ListRefs;


/* the plan for the tokens whose first character is selected: per ASCII block, its bitmap
 * less the unselected bytes', or the selected bytes' (whichever is fewer); short lists are
 * set or cleared one token at a time */
static void base_plan_firsts(const Vocab *v, const uint64_t firsts[2], int mb, BitSrcs *in, BitSrcs *out,
                             ListRefs *set, ListRefs *clear) {
    size_t w = (size_t)v->words;
    for (int g = 0; g < NGROUPS; g++) {
        int nsel = 0, nuns = 0;
        for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++) {
            int32_t k = v->byfirst_off[c + 1] - v->byfirst_off[c];
            if (!k || list_is_short(v, k)) continue;
            if ((firsts[c >> 6] >> (c & 63)) & 1)
                nsel++;
            else
                nuns++;
        }
        int whole = nsel > nuns + 1;
        if (whole) in->src[in->n++] = v->groupbits + (size_t)(NGROUPS + g) * w;
        for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++) {
            int32_t lo = v->byfirst_off[c], hi = v->byfirst_off[c + 1];
            if (lo == hi) continue;
            int selected = (int)((firsts[c >> 6] >> (c & 63)) & 1);
            if (selected == whole) continue;
            ListRef r = {v->byfirst, lo, hi};
            if (list_is_short(v, hi - lo)) {
                if (whole)
                    clear->a[clear->n++] = r;
                else
                    set->a[set->n++] = r;
            } else if (whole) {
                out->src[out->n++] = v->firstbits + (size_t)c * w;
            } else {
                in->src[in->n++] = v->firstbits + (size_t)c * w;
            }
        }
    }
    if (mb) in->src[in->n++] = v->firstbits + (size_t)128 * w;
}

/* the plan for the tokens whose tail leaves the run: per ASCII block outside the run, its
 * bitmap; else the outside bytes' bitmaps or short lists; bytes of no complete character,
 * and complete multi-byte characters unless the run takes them */
static void base_plan_tails(const Vocab *v, const RunKey *key, BitSrcs *out, ListRefs *clear) {
    size_t w = (size_t)v->words;
    for (int g = 0; g < NGROUPS; g++) {
        uint64_t gm[2], live[2] = {0, 0};
        group_mask(g, gm);
        for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++)
            if (v->inv_off[c + 1] > v->inv_off[c]) live[c >> 6] |= 1ULL << (c & 63);
        uint64_t outside[2] = {live[0] & ~key->run[0], live[1] & ~key->run[1]};
        if (!(outside[0] | outside[1])) continue;
        if (outside[0] == live[0] && outside[1] == live[1] && tm_pop64(live[0]) + tm_pop64(live[1]) > 1) {
            out->src[out->n++] = v->groupbits + (size_t)g * w;
            continue;
        }
        for (int c = GROUP_LO[g]; c <= GROUP_HI[g]; c++) {
            if (!((outside[c >> 6] >> (c & 63)) & 1)) continue;
            ListRef r = {v->inv, v->inv_off[c], v->inv_off[c + 1]};
            if (list_is_short(v, r.hi - r.lo))
                clear->a[clear->n++] = r;
            else
                out->src[out->n++] = v->tailbits + (size_t)c * w;
        }
    }
    out->src[out->n++] = v->tailbits + (size_t)XBAD * w;
    if (!key->utf8) out->src[out->n++] = v->tailbits + (size_t)128 * w;
}

/* dst |= the OR of srcs (four bitmaps per pass over dst) */
static void words_or_all(uint32_t *dst, const BitSrcs *srcs, size_t w) {
    for (int32_t x = 0; x < srcs->n; x += 4) {
        const uint32_t *a0 = srcs->src[x], *a1 = x + 1 < srcs->n ? srcs->src[x + 1] : a0,
                       *a2 = x + 2 < srcs->n ? srcs->src[x + 2] : a0, *a3 = x + 3 < srcs->n ? srcs->src[x + 3] : a0;
        words_or4(dst, a0, a1, a2, a3, w);
    }
}

/* fill b (no length bound) from the class bitmaps: the selected first characters (block and
 * byte bitmaps, short lists) less the tokens whose tail holds a byte outside the run (the
 * same). For the classes JSON schemas use (a string character, digits, letters, the
 * characters of a format or a pattern) a dozen bitmap passes and a few thousand listed tokens:
 * O(words * bitmaps + listed tokens), never a pass over the tokens. */
static void base_build(Vocab *v, BaseMask *b) {
    size_t w = (size_t)v->words;
    uint32_t *bits = b->bits;
    BitSrcs in = {{0}, 0}, out = {{0}, 0};
    ListRefs set = {{{0}}, 0}, clear = {{{0}}, 0};
    base_plan_firsts(v, b->firsts, b->mb, &in, &out, &set, &clear);
    base_plan_tails(v, &b->key, &out, &clear);
    words_or_all(bits, &in, w);
    for (int32_t k = 0; k < set.n; k++)
        for (int32_t j = set.a[k].lo; j < set.a[k].hi; j++) {
            int32_t i = set.a[k].list[j];
            bits[i >> 5] |= 1u << (i & 31);
        }
    if (out.n) {
        uint32_t *acc = tm_xcalloc(w ? w : 1, sizeof(uint32_t));
        words_or_all(acc, &out, w);
        words_andnot(bits, acc, w);
        free(acc);
    }
    for (int32_t k = 0; k < clear.n; k++) clear_listed(bits, clear.a[k].list, clear.a[k].lo, clear.a[k].hi);
    b->any = words_any(bits, v->words);
}

/* tokens whose first character is selected and whose tail stays in the run (and has fewer
 * than steps characters, unless steps < 0).
 *
 * Cached per (run, steps, first characters), and built from what is cached where it can be:
 * a length-bounded table is the unbounded one AND the vocabulary's bitmask of the tokens with
 * fewer than steps tail characters (the positions of a counted string, maxLength, differ only
 * by steps); a selection of first characters included in a cached table's (a key of an object
 * that allows other keys: every character but the first letters of the declared names)
 * narrows that table (a copy, the tokens of the dropped first characters cleared) when that
 * clears fewer tokens than a build would visit; else base_build. */
static BaseMask *vocab_base_u(Vocab *v, const RunKey *key, const uint64_t firsts[2], int mb, int32_t steps) {
    if (steps > v->max_tail_chars) steps = -1;
    BaseMask *wider = NULL;
    int64_t wider_extra = 0;
    for (int32_t i = 0; i < v->bases.n; i++) {
        BaseMask *b = v->bases.a[i];
        if (!runkey_eq(&b->key, key) || b->steps != steps) continue;
        if (b->firsts[0] == firsts[0] && b->firsts[1] == firsts[1] && b->mb == mb) {
            b->last_use = ++v->clock;
            b->refs++;
            return b;
        }
        int64_t extra;
        if (firsts_cover(v, b->firsts, b->mb, firsts, mb, &extra) && (!wider || extra < wider_extra)) {
            wider = b;
            wider_extra = extra;
        }
    }
    BaseMask *unbounded = NULL;
    if (steps >= 0 && steps <= LEN_CAP) unbounded = vocab_base_u(v, key, firsts, mb, -1);
    BaseMask *b = tm_xcalloc(1, sizeof(BaseMask));
    b->key = *key;
    b->firsts[0] = firsts[0];
    b->firsts[1] = firsts[1];
    b->mb = (uint8_t)mb;
    b->steps = steps;
    b->bits = tm_xcalloc((size_t)(v->words ? v->words : 1), sizeof(uint32_t));
    if (unbounded) {
        const uint32_t *len = v->lenmask + (size_t)steps * (size_t)v->words;
        for (int32_t k = 0; k < v->words; k++) b->bits[k] = unbounded->bits[k] & len[k];
        b->any = words_any(b->bits, v->words);
        unbounded->refs--;
        v->n_bounded++;
    } else if (wider && narrow_cost(v, wider, firsts, mb) <= NARROW_MAX) {
        memcpy(b->bits, wider->bits, (size_t)v->words * sizeof(uint32_t));
        wider->last_use = ++v->clock;
        narrow_firsts(v, b->bits, wider, firsts, mb);
        b->any = words_any(b->bits, v->words);
        v->n_narrowed++;
    } else if (steps < 0) {
        base_build(v, b);
        v->n_built++;
    } else { /* a bound past LEN_CAP (no chain is that long): one pass */
        v->n_passed++;
        for (int c = 0; c < 256; c++) {
            if (c < 128 ? !((firsts[c >> 6] >> (c & 63)) & 1) : !mb) continue;
            for (int32_t k = v->byfirst_off[c]; k < v->byfirst_off[c + 1]; k++) {
                int32_t i = v->byfirst[k];
                if (v->tail_chars[i] >= steps || !tail_in_run(v, key, i)) continue;
                b->bits[i >> 5] |= 1u << (i & 31);
                b->any = 1;
            }
        }
    }
    b->refs = 1;
    b->last_use = ++v->clock;
    v->table_bytes += (int64_t)v->words * 4;
    VPUSH(v->bases, b);
    vocab_trim(v);
    return b;
}

/* a cached exit table usable for these first characters: the exact one, else one for a
 * wider selection holding at most as many extra tokens as the selection itself (its walks
 * filter by first character, so extra suffixes cost walk nodes, never a wrong mask); NULL */
static ExitTries *vocab_find_exits(const Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2],
                                   int mb) {
    ExitTries *wider = NULL;
    int64_t wider_extra = 0;
    for (int32_t i = 0; i < v->exits.n; i++) {
        ExitTries *e = v->exits.a[i];
        if (!runkey_eq(&e->key, key) || !m_eq(&e->exits, exits)) continue;
        if (e->firsts[0] == firsts[0] && e->firsts[1] == firsts[1] && e->mb == mb) return e;
        int64_t extra;
        if (firsts_cover(v, e->firsts, e->mb, firsts, mb, &extra) && (!wider || extra < wider_extra)) {
            wider = e;
            wider_extra = extra;
        }
    }
    if (wider && wider_extra <= vocab_first_count(v, firsts, mb)) return wider;
    return NULL;
}

static int vocab_has_tables(Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2], int mb) {
    tm_lock(&v->lock);
    int r = vocab_find_exits(v, key, exits, firsts, mb) != NULL;
    tm_unlock(&v->lock);
    return r;
}

/* the exits kept for a run's tries: (exit character, suffix), and the continuation's suffixes */
typedef struct {
    int32_t p;
    TItem it;
} PItem;
typedef VEC(PItem) PItemVec;
typedef VEC(TItem) TItemVec;

/* can the exit index give the tries of (key, exits): every ASCII byte of exits outside the
 * run is an indexed class, and a high byte of exits can only be left through as a byte of
 * no complete character (the run takes complete multi-byte characters) */
static int exits_indexed(const RunKey *key, const M256 *exits) {
    for (int c = 0; c < 128; c++)
        if (m_test(exits, c) && !run_has(key, (uint8_t)c) && !xclass_indexed(c)) return 0;
    M256 hi = m_and(*exits, M_HIGH);
    return m_zero(&hi) || key->utf8;
}

/* does a record's prefix stay in the run */
static inline int rec_in_run(const RunKey *key, const ExitRec *r) {
    if ((r->pre[0] & ~key->run[0]) | (r->pre[1] & ~key->run[1])) return 0;
    return !(r->flags & TAIL_BAD) && (!(r->flags & TAIL_MB) || key->utf8);
}

/* the kept exits and continuation suffixes from the exit index, already in trie order (the
 * classes in byte order, each sorted by suffix). O(records of the exit classes + long
 * tokens), sequential. */
static void exits_from_index(const Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2], int mb,
                             PItemVec *kept, TItemVec *cont, TItemVec *late) {
    M256 hi = m_and(*exits, M_HIGH);
    for (int x = 0; x < XCLASSES; x++) {
        if (x < 128 ? !m_test(exits, x) || run_has(key, (uint8_t)x) : x != XBAD || m_zero(&hi)) continue;
        for (int32_t k = v->xoff[x]; k < v->xoff[x + 1]; k++) {
            const ExitRec *r = &v->xrec[k];
            if (!sel_has(firsts, (uint8_t)mb, r->first) || !rec_in_run(key, r) || !m_test(exits, r->byte)) continue;
            PItem it = {r->p, {r->off, r->len, r->id}};
            if (r->p > CHAIN_CAP)
                VPUSH(*late, it.it);
            else
                VPUSH(*kept, it);
        }
    }
    for (int32_t k = 0; k < v->nlrec; k++) {
        const ExitRec *r = &v->lrec[k];
        if (!sel_has(firsts, (uint8_t)mb, r->first) || !rec_in_run(key, r)) continue;
        TItem it = {r->off, r->len, r->id};
        VPUSH(*cont, it);
    }
}

/* the same from the candidate tokens (vocab_candidates), unsorted: where an exit byte is a
 * letter or a digit (a number's exponent, a format's separator letter), so that its class is
 * not indexed; the candidates are then the few tokens of the selected first characters */
static void exits_from_candidates(Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2], int mb,
                                  PItemVec *kept, TItemVec *cont, TItemVec *late) {
    IVec cand = {0};
    vocab_candidates(v, firsts, mb, exits, 1, &cand);
    for (int32_t k = 0; k < cand.n; k++) {
        int32_t i = cand.a[k];
        if (v->first_cls[i] == FIRST_OTHER || !sel_has(firsts, (uint8_t)mb, v->first_cls[i])) continue;
        int32_t chr, at = v->tok_len[i];
        if (tail_in_run(v, key, i)) {
            if (v->tail_chars[i] <= CHAIN_CAP) continue;
            chr = v->tail_chars[i];
        } else {
            tail_exit(v, key, i, &chr, &at);
        }
        int32_t pos = v->tok_off[i] + at;
        int leaves = at < v->tok_len[i] && m_test(exits, v->flat[pos]);
        if (chr > CHAIN_CAP) { /* outlasts the chain: continue from tail character CHAIN_CAP */
            int32_t off = tail_char_offset(v, i, CHAIN_CAP);
            TItem it = {v->tok_off[i] + off, v->tok_len[i] - off, i};
            VPUSH(*cont, it);
            if (leaves) {
                TItem lt = {pos, v->tok_len[i] - at, i};
                VPUSH(*late, lt);
            }
            continue;
        }
        if (!leaves) continue;
        PItem x = {chr, {pos, v->tok_len[i] - at, i}};
        VPUSH(*kept, x);
    }
    VFREE(cand);
}

/* the trie of items (NULL if none; sorted: already in trie order), its bytes added to *bytes */
static Trie *exit_trie(const Vocab *v, TItemVec *items, int sorted, int64_t *bytes) {
    if (!items->n) return NULL;
    Trie *t = tm_xmalloc(sizeof(Trie));
    trie_build(t, v->flat, items->a, items->n, sorted);
    *bytes += trie_bytes(t);
    return t;
}

/* tries of the suffixes of tokens leaving the run at tail character p through a byte of
 * exits (tokens with a complete first character among firsts, or more: the caller filters
 * by first character) */
static ExitTries *vocab_exits_u(Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2], int mb) {
    ExitTries *found = vocab_find_exits(v, key, exits, firsts, mb);
    if (found) {
        found->last_use = ++v->clock;
        found->refs++;
        return found;
    }
    ExitTries *e = tm_xcalloc(1, sizeof(ExitTries));
    e->key = *key;
    e->exits = *exits;
    e->firsts[0] = firsts[0];
    e->firsts[1] = firsts[1];
    e->mb = (uint8_t)mb;
    e->np = CHAIN_CAP + 1;
    e->tries = tm_xcalloc((size_t)e->np, sizeof(Trie *));
    PItemVec kept = {0};
    TItemVec cont = {0}, late = {0};
    int sorted = exits_indexed(key, exits);
    if (sorted)
        exits_from_index(v, key, exits, firsts, mb, &kept, &cont, &late);
    else
        exits_from_candidates(v, key, exits, firsts, mb, &kept, &cont, &late);
    if (sorted)
        v->n_indexed++;
    else
        v->n_scanned++;
    /* group by exit character, keeping the order within each group */
    int32_t *start = tm_xcalloc((size_t)(e->np + 1), sizeof(int32_t));
    for (int32_t k = 0; k < kept.n; k++) start[kept.a[k].p + 1]++;
    for (int32_t q = 0; q < e->np; q++) start[q + 1] += start[q];
    TItem *items = tm_xmalloc((size_t)(kept.n ? kept.n : 1) * sizeof(TItem));
    int32_t fill[CHAIN_CAP + 1];
    memcpy(fill, start, sizeof(fill));
    for (int32_t k = 0; k < kept.n; k++) items[fill[kept.a[k].p]++] = kept.a[k].it;
    VFREE(kept);
    e->bytes = (int64_t)e->np * 8;
    for (int32_t q = 0; q < e->np; q++) {
        if (start[q + 1] == start[q]) continue;
        e->tries[q] = tm_xmalloc(sizeof(Trie));
        trie_build(e->tries[q], v->flat, items + start[q], start[q + 1] - start[q], sorted);
        e->bytes += trie_bytes(e->tries[q]);
    }
    e->cont = exit_trie(v, &cont, sorted, &e->bytes);
    e->late = exit_trie(v, &late, sorted, &e->bytes);
    VFREE(cont);
    VFREE(late);
    free(items);
    free(start);
    e->refs = 1;
    e->last_use = ++v->clock;
    v->table_bytes += e->bytes;
    VPUSH(v->exits, e);
    vocab_trim(v);
    return e;
}

/* ---- the locked entry points (what the mask module calls) ------------------------------- */

/* the base table (see vocab_base_u), held: release it with vocab_release_base */
static BaseMask *vocab_base(Vocab *v, const RunKey *key, const uint64_t firsts[2], int mb, int32_t steps) {
    tm_lock(&v->lock);
    BaseMask *b = vocab_base_u(v, key, firsts, mb, steps);
    tm_unlock(&v->lock);
    return b;
}

/* the exit tries (see vocab_exits_u), held: release them with vocab_release_exits */
static ExitTries *vocab_exits(Vocab *v, const RunKey *key, const M256 *exits, const uint64_t firsts[2], int mb) {
    tm_lock(&v->lock);
    ExitTries *e = vocab_exits_u(v, key, exits, firsts, mb);
    tm_unlock(&v->lock);
    return e;
}

static void vocab_release(Vocab *v, BaseMask **bases, int nb, ExitTries **exits, int ne, int trim) {
    tm_lock(&v->lock);
    for (int i = 0; i < nb; i++) bases[i]->refs--;
    for (int i = 0; i < ne; i++) exits[i]->refs--;
    if (trim) vocab_trim(v);
    tm_unlock(&v->lock);
}

static void vocab_release_exits(Vocab *v, ExitTries *e) { vocab_release(v, NULL, 0, &e, 1, 0); }

static int64_t vocab_bytes_locked(Vocab *v) {
    tm_lock(&v->lock);
    int64_t n = vocab_bytes(v);
    tm_unlock(&v->lock);
    return n;
}

#endif
