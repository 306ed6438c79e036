/* A keyed 128-bit digest of a byte range, at memory speed: how the server recognises a tool
 * list it has read before by hashing only the request's own bytes (see server/_body.py).
 *
 * Not a cryptographic hash. Its use is equality of texts the server compares anyway: the key
 * (a secret drawn per process) keeps a client from aiming at another text's digest, and the
 * length and every byte's position take part, so reordered or shifted blocks differ.
 *
 * Layout: sixteen 64-bit lanes read 128 bytes a block. Per word w of lane j:
 *     d = w ^ key[j + b % 8];  acc[j] += lo32(d) * hi32(d);  acc[j ^ 1] += w
 * (b the block's number), and after every 8 blocks each lane is scrambled:
 *     acc[j] = (acc[j] ^ acc[j] >> 47 ^ key[8 + j]) * P32.
 * The last partial block is read zero-padded. The lanes fold into two 64-bit halves by
 * 64x64->128-bit products with different key words, each mixed with the length.
 * The AVX2 and AVX-512 paths compute exactly the scalar path's arithmetic (checked by the
 * tests), so a digest never depends on the CPU it was made on. */

#ifndef TM_DIGEST_H
#define TM_DIGEST_H

#include <stdint.h>
#include <string.h>

#define DG_LANES 16
#define DG_BLOCK (DG_LANES * 8)
#define DG_WINDOW 8
#define DG_KEYS (DG_LANES + DG_WINDOW) /* 24 words: 192 bytes of secret */
#define DG_P32 0x9E3779B1ULL
#define DG_P1 0x9E3779B185EBCA87ULL
#define DG_P2 0xC2B2AE3D27D4EB4FULL

static inline uint64_t dg_read64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w; /* little-endian hosts; a big-endian host reads other words, its own digests */
}

static void dg_block_scalar(uint64_t *acc, const uint8_t *p, const uint64_t *key) {
    for (int j = 0; j < DG_LANES; j++) {
        uint64_t w = dg_read64(p + 8 * j);
        uint64_t d = w ^ key[j];
        acc[j] += (d & 0xFFFFFFFFULL) * (d >> 32);
        acc[j ^ 1] += w;
    }
}

static void dg_scramble_scalar(uint64_t *acc, const uint64_t *key) {
    for (int j = 0; j < DG_LANES; j++) {
        uint64_t a = acc[j];
        acc[j] = (a ^ (a >> 47) ^ key[j]) * DG_P32;
    }
}

/* the full blocks of [p, p + n) into acc, from block number 0; returns the blocks read */
static size_t dg_blocks_scalar(uint64_t *acc, const uint8_t *p, size_t n, const uint64_t *key) {
    size_t blocks = n / DG_BLOCK;
    for (size_t b = 0; b < blocks; b++) {
        dg_block_scalar(acc, p + b * DG_BLOCK, key + b % DG_WINDOW);
        if (b % DG_WINDOW == DG_WINDOW - 1) dg_scramble_scalar(acc, key + DG_WINDOW);
    }
    return blocks;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DG_X86_VECTORS 1

/* AVX2: four 4-lane vectors a block, a window's 8 blocks unrolled (key offsets constant) */
__attribute__((target("avx2"))) static size_t dg_blocks_avx2(uint64_t *acc, const uint8_t *p, size_t n,
                                                             const uint64_t *key) {
    size_t blocks = n / DG_BLOCK, b = 0;
    __m256i a[4];
    for (int v = 0; v < 4; v++) a[v] = _mm256_loadu_si256((const __m256i *)(acc + 4 * v));
    const __m256i p32 = _mm256_set1_epi64x((long long)DG_P32);
    for (; b + DG_WINDOW <= blocks; b += DG_WINDOW) {
#pragma GCC unroll 8
        for (int j = 0; j < DG_WINDOW; j++) {
            const uint8_t *q = p + (b + j) * DG_BLOCK;
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                __m256i w = _mm256_loadu_si256((const __m256i *)(q + 32 * v));
                __m256i d = _mm256_xor_si256(w, _mm256_loadu_si256((const __m256i *)(key + j + 4 * v)));
                __m256i prod = _mm256_mul_epu32(d, _mm256_srli_epi64(d, 32));
                /* w's words swapped within each pair: lane j gets word j ^ 1 */
                __m256i sw = _mm256_shuffle_epi32(w, _MM_SHUFFLE(1, 0, 3, 2));
                a[v] = _mm256_add_epi64(a[v], _mm256_add_epi64(prod, sw));
            }
        }
        for (int v = 0; v < 4; v++) {
            __m256i x = _mm256_xor_si256(a[v], _mm256_srli_epi64(a[v], 47));
            x = _mm256_xor_si256(x, _mm256_loadu_si256((const __m256i *)(key + DG_WINDOW + 4 * v)));
            __m256i lo = _mm256_mul_epu32(x, p32);
            __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), p32);
            a[v] = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
        }
    }
    for (int v = 0; v < 4; v++) _mm256_storeu_si256((__m256i *)(acc + 4 * v), a[v]);
    for (; b < blocks; b++) dg_block_scalar(acc, p + b * DG_BLOCK, key + b % DG_WINDOW);
    return blocks;
}

/* AVX-512F: two 8-lane vectors a block, the window's 16 key vectors held in registers */
__attribute__((target("avx512f"))) static size_t dg_blocks_avx512(uint64_t *acc, const uint8_t *p, size_t n,
                                                                  const uint64_t *key) {
    size_t blocks = n / DG_BLOCK, b = 0;
    __m512i a0 = _mm512_loadu_si512(acc), a1 = _mm512_loadu_si512(acc + 8);
    __m512i k0[DG_WINDOW], k1[DG_WINDOW];
    for (int j = 0; j < DG_WINDOW; j++) {
        k0[j] = _mm512_loadu_si512(key + j);
        k1[j] = _mm512_loadu_si512(key + j + 8);
    }
    const __m512i s0 = _mm512_loadu_si512(key + DG_WINDOW), s1 = _mm512_loadu_si512(key + DG_WINDOW + 8);
    const __m512i p32 = _mm512_set1_epi64((long long)DG_P32);
    const _MM_PERM_ENUM swap = (_MM_PERM_ENUM)_MM_SHUFFLE(1, 0, 3, 2);
    for (; b + DG_WINDOW <= blocks; b += DG_WINDOW) {
#pragma GCC unroll 8
        for (int j = 0; j < DG_WINDOW; j++) {
            const uint8_t *q = p + (b + j) * DG_BLOCK;
            __m512i w0 = _mm512_loadu_si512(q), w1 = _mm512_loadu_si512(q + 64);
            __m512i d0 = _mm512_xor_si512(w0, k0[j]), d1 = _mm512_xor_si512(w1, k1[j]);
            __m512i m0 = _mm512_mul_epu32(d0, _mm512_srli_epi64(d0, 32));
            __m512i m1 = _mm512_mul_epu32(d1, _mm512_srli_epi64(d1, 32));
            a0 = _mm512_add_epi64(a0, _mm512_add_epi64(m0, _mm512_shuffle_epi32(w0, swap)));
            a1 = _mm512_add_epi64(a1, _mm512_add_epi64(m1, _mm512_shuffle_epi32(w1, swap)));
        }
        __m512i x0 = _mm512_xor_si512(_mm512_xor_si512(a0, _mm512_srli_epi64(a0, 47)), s0);
        __m512i x1 = _mm512_xor_si512(_mm512_xor_si512(a1, _mm512_srli_epi64(a1, 47)), s1);
        a0 = _mm512_add_epi64(_mm512_mul_epu32(x0, p32),
                              _mm512_slli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x0, 32), p32), 32));
        a1 = _mm512_add_epi64(_mm512_mul_epu32(x1, p32),
                              _mm512_slli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x1, 32), p32), 32));
    }
    _mm512_storeu_si512(acc, a0);
    _mm512_storeu_si512(acc + 8, a1);
    for (; b < blocks; b++) dg_block_scalar(acc, p + b * DG_BLOCK, key + b % DG_WINDOW);
    return blocks;
}

/* the widest path this CPU has: 2 AVX-512F, 1 AVX2, 0 none */
static int dg_level(void) {
    static int level = -1;
    if (level < 0) {
        __builtin_cpu_init();
        level = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return level;
}
#else
#define DG_X86_VECTORS 0
static int dg_level(void) { return 0; }
#endif

static inline uint64_t dg_fold(uint64_t a, uint64_t b) {
    __uint128_t m = (__uint128_t)a * b;
    return (uint64_t)m ^ (uint64_t)(m >> 64);
}

static inline uint64_t dg_avalanche(uint64_t h) {
    h ^= h >> 37;
    h *= DG_P2;
    h ^= h >> 32;
    return h;
}

/* The digest of [p, p + n) under key (DG_KEYS words) into out[0..1]. level: the widest
 * path to take, 0 scalar, 1 AVX2, 2 AVX-512F, each only where the CPU has it (the same result
 * whichever is taken). */
static void tm_digest(const uint8_t *p, size_t n, const uint64_t *secret, int level, uint64_t out[2]) {
    /* the key's words made distinct whatever the secret (a secret of one repeated word would
     * otherwise give every block of a window the same words: blocks swapped, same digest) */
    uint64_t key[DG_KEYS];
    for (int i = 0; i < DG_KEYS; i++) key[i] = secret[i] + DG_P1 * (uint64_t)(i + 1);
    uint64_t acc[DG_LANES];
    for (int j = 0; j < DG_LANES; j++) acc[j] = key[j] ^ DG_P1 * (uint64_t)(j + 1);
    size_t blocks;
    int have = dg_level();
    if (level > have) level = have;
#if DG_X86_VECTORS
    if (level == 2)
        blocks = dg_blocks_avx512(acc, p, n, key);
    else if (level == 1)
        blocks = dg_blocks_avx2(acc, p, n, key);
    else
#endif
        blocks = dg_blocks_scalar(acc, p, n, key);
    size_t done = blocks * DG_BLOCK;
    if (done < n) {
        uint8_t last[DG_BLOCK] = {0};
        memcpy(last, p + done, n - done);
        dg_block_scalar(acc, last, key + blocks % DG_WINDOW);
    }
    uint64_t h1 = (uint64_t)n * DG_P1, h2 = ((uint64_t)n + 1) * DG_P2;
    for (int j = 0; j < DG_LANES; j += 2) {
        h1 += dg_fold(acc[j] ^ key[DG_WINDOW + j], acc[j + 1] ^ key[DG_WINDOW + j + 1]);
        h2 += dg_fold(acc[j] ^ key[j + 1], acc[j + 1] ^ key[j]);
        h1 = (h1 << 23) | (h1 >> 41);
        h2 = (h2 << 29) | (h2 >> 35);
    }
    out[0] = dg_avalanche(h1);
    out[1] = dg_avalanche(h2 ^ out[0]);
}

#endif
