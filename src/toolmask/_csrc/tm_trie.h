/* Flat token tries: the tokens of a vocabulary (or of a run's exits) in depth-first order.
 *
 * A port of toolmask/mask/_trie.py (TokenTrie): per node its byte, depth, skip (the index past
 * its subtree) and the ids ending there, so a walk is one loop that jumps to skip[i] at a dead
 * byte; large tries also carry per node the ASCII bytes below it and two flags (a byte >= 0x80
 * below; a path below that is not a prefix of well-formed UTF-8), for walks that take whole
 * subtrees at once. Items are sorted by an MSD radix sort, or come presorted.
 */
#ifndef TM_TRIE_H
#define TM_TRIE_H

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

#endif
