/* toolmask native kernel: shared utilities (256-bit masks, growable arrays, hash tables).
 *
 * Everything here is plain C over malloc'd memory; no Python object is touched. The kernel
 * is a single translation unit (native.c includes the tm_*.h files in order), so every
 * function is static.
 *
 * Allocation failure is fatal (Py_FatalError): every structure is bounded by a Limits cap,
 * so running out of memory means the process is already lost.
 */
#ifndef TM_UTIL_H
#define TM_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__)
#define TM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TM_LIKELY(x) (x)
#define TM_UNLIKELY(x) (x)
#endif

/* ---- memory ---------------------------------------------------------------------------- */

static void *tm_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (TM_UNLIKELY(q == NULL)) Py_FatalError("toolmask native kernel: out of memory");
    return q;
}

static void *tm_xmalloc(size_t n) { return tm_xrealloc(NULL, n); }

static void *tm_xcalloc(size_t k, size_t n) {
    void *q = calloc(k ? k : 1, n ? n : 1);
    if (TM_UNLIKELY(q == NULL)) Py_FatalError("toolmask native kernel: out of memory");
    return q;
}

/* growable array of T: VEC(T) v = {0}; VPUSH(v, x); v.a[i]; v.n */
#define VEC(T)        \
    struct {          \
        T *a;         \
        int32_t n;    \
        int32_t cap;  \
    }

static void tm_vgrow(void **a, int32_t *cap, size_t elem, int32_t need) {
    int64_t c = *cap ? *cap : 4;
    while (c < need) c *= 2;
    if (c > INT32_MAX) Py_FatalError("toolmask native kernel: array too large");
    *a = tm_xrealloc(*a, (size_t)c * elem);
    *cap = (int32_t)c;
}

#define VRESERVE(v, k)                                                              \
    do {                                                                            \
        if ((v).n + (k) > (v).cap)                                                  \
            tm_vgrow((void **)&(v).a, &(v).cap, sizeof(*(v).a), (v).n + (int32_t)(k)); \
    } while (0)
#define VPUSH(v, x)                  \
    do {                             \
        VRESERVE(v, 1);              \
        (v).a[(v).n++] = (x);        \
    } while (0)
#define VFREE(v)          \
    do {                  \
        free((v).a);      \
        (v).a = NULL;     \
        (v).n = (v).cap = 0; \
    } while (0)
#define VBYTES(v) ((int64_t)(v).cap * (int64_t)sizeof(*(v).a))

typedef VEC(int32_t) IVec;

/* ---- 256-bit byte sets ----------------------------------------------------------------- */

/* population count: the instruction where the compiler may use it, else the SWAR sum (a
 * baseline x86-64 build would call libgcc's table-driven __popcountdi2) */
static inline int tm_pop64(uint64_t x) {
#if defined(__POPCNT__) || !defined(__x86_64__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

typedef struct {
    uint64_t w[4];
} M256;

static const M256 M_ZERO = {{0, 0, 0, 0}};
static const M256 M_FULL = {{~0ULL, ~0ULL, ~0ULL, ~0ULL}};
static const M256 M_ASCII = {{~0ULL, ~0ULL, 0, 0}};
static const M256 M_HIGH = {{0, 0, ~0ULL, ~0ULL}};

static inline int m_test(const M256 *m, int b) { return (int)((m->w[b >> 6] >> (b & 63)) & 1); }
static inline void m_set(M256 *m, int b) { m->w[b >> 6] |= 1ULL << (b & 63); }
static inline M256 m_and(M256 a, M256 b) {
    for (int i = 0; i < 4; i++) a.w[i] &= b.w[i];
    return a;
}
static inline M256 m_or(M256 a, M256 b) {
    for (int i = 0; i < 4; i++) a.w[i] |= b.w[i];
    return a;
}
static inline M256 m_andnot(M256 a, M256 b) {
    for (int i = 0; i < 4; i++) a.w[i] &= ~b.w[i];
    return a;
}
static inline int m_zero(const M256 *a) { return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]); }
static inline int m_eq(const M256 *a, const M256 *b) {
    return !((a->w[0] ^ b->w[0]) | (a->w[1] ^ b->w[1]) | (a->w[2] ^ b->w[2]) | (a->w[3] ^ b->w[3]));
}
static inline int m_count(const M256 *a) {
    return tm_pop64(a->w[0]) + tm_pop64(a->w[1]) + tm_pop64(a->w[2]) + tm_pop64(a->w[3]);
}
/* lowest set bit, or -1 */
static inline int m_low(const M256 *a) {
    for (int i = 0; i < 4; i++)
        if (a->w[i]) return i * 64 + __builtin_ctzll(a->w[i]);
    return -1;
}
static inline void m_clear(M256 *m, int b) { m->w[b >> 6] &= ~(1ULL << (b & 63)); }
static M256 m_range(int lo, int hi) { /* inclusive */
    M256 m = M_ZERO;
    for (int b = lo; b <= hi; b++) m_set(&m, b);
    return m;
}
static inline uint64_t m_hash(const M256 *m) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 4; i++) {
        h ^= m->w[i] + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    }
    return h;
}

/* ---- bitmask word loops (16-byte vectors: SSE2 / NEON with GCC and clang) ---------------- */

#if defined(__GNUC__)
typedef uint32_t tm_v4 __attribute__((vector_size(16), aligned(4), may_alias));
#define TM_VEC 1
#else
#define TM_VEC 0
#endif

/* dst[k] |= a[k] for k < n */
static inline void words_or(uint32_t *dst, const uint32_t *a, size_t n) {
    size_t k = 0;
#if TM_VEC
    for (; k + 4 <= n; k += 4) *(tm_v4 *)(dst + k) |= *(const tm_v4 *)(a + k);
#endif
    for (; k < n; k++) dst[k] |= a[k];
}

/* dst[k] |= a0[k] | a1[k] | a2[k] | a3[k] for k < n */
static inline void words_or4(uint32_t *dst, const uint32_t *a0, const uint32_t *a1, const uint32_t *a2,
                             const uint32_t *a3, size_t n) {
    size_t k = 0;
#if TM_VEC
    for (; k + 4 <= n; k += 4)
        *(tm_v4 *)(dst + k) |= *(const tm_v4 *)(a0 + k) | *(const tm_v4 *)(a1 + k) | *(const tm_v4 *)(a2 + k) |
                               *(const tm_v4 *)(a3 + k);
#endif
    for (; k < n; k++) dst[k] |= a0[k] | a1[k] | a2[k] | a3[k];
}

/* dst[k] &= ~a[k] for k < n */
static inline void words_andnot(uint32_t *dst, const uint32_t *a, size_t n) {
    size_t k = 0;
#if TM_VEC
    for (; k + 4 <= n; k += 4) *(tm_v4 *)(dst + k) &= ~*(const tm_v4 *)(a + k);
#endif
    for (; k < n; k++) dst[k] &= ~a[k];
}

/* ---- UTF-8 ------------------------------------------------------------------------------ */

/* the well-formed multi-byte characters (RFC 3629): lead byte range, then continuation
 * ranges, inclusive; UTF8_NRANGES[r] bytes in row r */
static const uint8_t UTF8_RANGES[8][4][2] = {
    {{0xC2, 0xDF}, {0x80, 0xBF}, {0, 0}, {0, 0}},
    {{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}, {0, 0}},
    {{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}, {0, 0}},
    {{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}, {0, 0}},
    {{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}, {0, 0}},
    {{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
    {{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
    {{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
};
static const int UTF8_NRANGES[8] = {2, 3, 3, 3, 3, 4, 4, 4};

/* ---- hashing --------------------------------------------------------------------------- */

static inline uint64_t tm_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t tm_hash_ints(const int32_t *a, int32_t n, uint64_t seed) {
    uint64_t h = tm_mix64(seed ^ (uint64_t)n);
    for (int32_t i = 0; i < n; i++) h = tm_mix64(h ^ (uint32_t)a[i]) + 0x9E3779B97F4A7C15ULL;
    return h;
}

/* ---- int64 -> int32 map (open addressing, linear probing) ------------------------------- */

typedef struct {
    uint64_t *keys; /* key + 1; 0 = empty */
    int32_t *vals;
    int64_t cap, n; /* cap is a power of two */
} IMap;

static void imap_init(IMap *m, int64_t cap) {
    int64_t c = 16;
    while (c < cap * 2) c *= 2;
    m->keys = tm_xcalloc((size_t)c, sizeof(uint64_t));
    m->vals = tm_xmalloc((size_t)c * sizeof(int32_t));
    m->cap = c;
    m->n = 0;
}

static void imap_free(IMap *m) {
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

static int32_t imap_get(const IMap *m, uint64_t key, int32_t dflt) {
    if (!m->cap) return dflt;
    uint64_t k = key + 1, mask = (uint64_t)m->cap - 1;
    for (uint64_t i = tm_mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == k) return m->vals[i];
        if (!m->keys[i]) return dflt;
    }
}

static void imap_put(IMap *m, uint64_t key, int32_t val);

static void imap_grow(IMap *m) {
    IMap old = *m;
    imap_init(m, old.cap);
    for (int64_t i = 0; i < old.cap; i++)
        if (old.keys[i]) imap_put(m, old.keys[i] - 1, old.vals[i]);
    imap_free(&old);
}

static void imap_put(IMap *m, uint64_t key, int32_t val) {
    if (!m->cap) imap_init(m, 8);
    if ((m->n + 1) * 2 > m->cap) imap_grow(m);
    uint64_t k = key + 1, mask = (uint64_t)m->cap - 1;
    for (uint64_t i = tm_mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == k) {
            m->vals[i] = val;
            return;
        }
        if (!m->keys[i]) {
            m->keys[i] = k;
            m->vals[i] = val;
            m->n++;
            return;
        }
    }
}

static int64_t imap_bytes(const IMap *m) { return m->cap * (int64_t)(sizeof(uint64_t) + sizeof(int32_t)); }

/* ---- interning of int arrays: array -> dense id ----------------------------------------- */

typedef struct {
    IVec pool;     /* concatenated arrays */
    IVec off, len; /* per id */
    int32_t *slots; /* id + 1, 0 = empty */
    uint64_t *hashes;
    int64_t cap;
} ArrSet;

static void arrset_init(ArrSet *s) { memset(s, 0, sizeof(*s)); }

static void arrset_free(ArrSet *s) {
    VFREE(s->pool);
    VFREE(s->off);
    VFREE(s->len);
    free(s->slots);
    free(s->hashes);
    memset(s, 0, sizeof(*s));
}

static int32_t arrset_count(const ArrSet *s) { return s->off.n; }

static inline const int32_t *arrset_get(const ArrSet *s, int32_t id, int32_t *n) {
    *n = s->len.a[id];
    return s->pool.a + s->off.a[id];
}

static void arrset_rehash(ArrSet *s) {
    int64_t c = s->cap ? s->cap * 2 : 64;
    free(s->slots);
    free(s->hashes);
    s->slots = tm_xcalloc((size_t)c, sizeof(int32_t));
    s->hashes = tm_xmalloc((size_t)c * sizeof(uint64_t));
    s->cap = c;
    uint64_t mask = (uint64_t)c - 1;
    for (int32_t id = 0; id < s->off.n; id++) {
        uint64_t h = tm_hash_ints(s->pool.a + s->off.a[id], s->len.a[id], 7);
        uint64_t i = h & mask;
        while (s->slots[i]) i = (i + 1) & mask;
        s->slots[i] = id + 1;
        s->hashes[i] = h;
    }
}

/* find: id or -1 */
static int32_t arrset_find(const ArrSet *s, const int32_t *a, int32_t n) {
    if (!s->cap) return -1;
    uint64_t h = tm_hash_ints(a, n, 7), mask = (uint64_t)s->cap - 1;
    for (uint64_t i = h & mask; s->slots[i]; i = (i + 1) & mask) {
        int32_t id = s->slots[i] - 1;
        if (s->hashes[i] == h && s->len.a[id] == n &&
            memcmp(s->pool.a + s->off.a[id], a, (size_t)n * sizeof(int32_t)) == 0)
            return id;
    }
    return -1;
}

/* intern: returns the id; *fresh = 1 when it was added */
static int32_t arrset_add(ArrSet *s, const int32_t *a, int32_t n, int *fresh) {
    int32_t id = arrset_find(s, a, n);
    if (id >= 0) {
        if (fresh) *fresh = 0;
        return id;
    }
    if ((int64_t)(s->off.n + 1) * 2 > s->cap) arrset_rehash(s);
    id = s->off.n;
    VPUSH(s->off, s->pool.n);
    VPUSH(s->len, n);
    VRESERVE(s->pool, n);
    memcpy(s->pool.a + s->pool.n, a, (size_t)n * sizeof(int32_t));
    s->pool.n += n;
    uint64_t h = tm_hash_ints(a, n, 7), mask = (uint64_t)s->cap - 1;
    uint64_t i = h & mask;
    while (s->slots[i]) i = (i + 1) & mask;
    s->slots[i] = id + 1;
    s->hashes[i] = h;
    if (fresh) *fresh = 1;
    return id;
}

static int64_t arrset_bytes(const ArrSet *s) {
    return VBYTES(s->pool) + VBYTES(s->off) + VBYTES(s->len) +
           s->cap * (int64_t)(sizeof(int32_t) + sizeof(uint64_t));
}

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* sort and deduplicate in place; returns the new length */
static int32_t sort_unique(int32_t *a, int32_t n) {
    if (n < 2) return n;
    /* insertion sort for the usual tiny arrays */
    if (n <= 16) {
        for (int32_t i = 1; i < n; i++) {
            int32_t x = a[i], j = i - 1;
            while (j >= 0 && a[j] > x) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = x;
        }
    } else {
        qsort(a, (size_t)n, sizeof(int32_t), cmp_i32);
    }
    int32_t k = 1;
    for (int32_t i = 1; i < n; i++)
        if (a[i] != a[k - 1]) a[k++] = a[i];
    return k;
}

static double tm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
