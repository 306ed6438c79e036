/* The vocabulary index: tries, per-token character tables, class bitmaps and the exit
 * index, from which the run tables shared by every grammar are made.
 *
 * A port of the data side of toolmask/mask/_compute.py (VocabIndex, TokenTrie, run_tables):
 *
 *  - tries of the text tokens and of the partial first characters (tm_trie.h);
 *  - per token: the class of its first character (an ASCII byte, FIRST_MB for a complete
 *    multi-byte UTF-8 character, FIRST_OTHER for a partial or invalid one), its length, and
 *    the number of characters in its tail; per byte, the length of the UTF-8 character that
 *    starts there (0: not a well-formed character).
 *  - run tables, per vocabulary and run class (a set of ASCII bytes, plus every complete
 *    multi-byte character when utf8): for each token the tail character where it first
 *    leaves the run; "base" bitmasks of the tokens whose whole tail stays in the run (shared
 *    by every position and grammar that has the run: the cross-position cache of string
 *    bodies); tries of the exit suffixes grouped by exit character (tm_tables.h), made from
 *    the class bitmaps and the exit index built here with the vocabulary.
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

/* a long token of a run class (more than CHAIN_CAP tail characters, the first CHAIN_CAP + 1 in
 * the run): how far its tail stays in the run, and the byte it leaves through */
typedef struct {
    int32_t id;
    int32_t run;   /* tail characters in the run before the exit (all of them when it stays) */
    int16_t first; /* first_cls */
    int16_t exit;  /* the ASCII byte it leaves the run through; -1: the whole tail stays in the
                      run; -2: a byte >= 0x80 (a character the run does not take, or none) */
} LongRec;
typedef VEC(LongRec) LongVec;

/* the first occurrence of a character kind in a long token's tail: an ASCII byte, a complete
 * multi-byte character (LEV_MB), a byte of no complete character (LEV_BAD) */
#define LEV_MB 128
#define LEV_BAD 129
typedef struct {
    uint16_t chr; /* its tail character index */
    uint8_t kind; /* the ASCII byte, LEV_MB or LEV_BAD */
} LongEv;

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
    LongRec *longs; /* the tokens of cont, each with where it leaves the run: made on the first
                       counted run that decides them by count (vocab_exit_longs) */
    int32_t nlongs;
    uint8_t longs_ok;
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
    free(e->longs);
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
    /* per long token k (longtoks.a[k]), the first occurrence of each character kind in its tail,
     * in tail order: lev[loff[k] .. loff[k + 1]) (what a counted run reads to decide the long
     * tokens by count, vocab_exit_longs: the first kind outside the run is where it leaves) */
    LongEv *lev;
    int32_t *loff;
    int16_t *lfirst;   /* per long token k: first_cls */
    uint16_t *ltail;   /* per long token k: tail_chars */
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
    free(v->lev);
    free(v->loff);
    free(v->lfirst);
    free(v->ltail);
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

/* the token bitmaps (Vocab): lenmask, firstmask, tailbits, then firstbits and groupbits from
 * them. O(150 * words + text tokens) */
static void class_bitmaps_build(Vocab *v) {
    size_t w = (size_t)(v->words ? v->words : 1);
    v->lenmask = tm_xcalloc(w * (LEN_CAP + 1), sizeof(uint32_t));
    v->firstmask = tm_xcalloc(w, sizeof(uint32_t));
    v->tailbits = tm_xcalloc(w * 130, sizeof(uint32_t));
    for (int32_t i = 0; i < v->size; i++) {
        uint32_t bit = 1u << (i & 31);
        if (v->tail_chars[i] < LEN_CAP) v->lenmask[(size_t)(v->tail_chars[i] + 1) * w + (i >> 5)] |= bit;
        if (v->first_cls[i] == FIRST_OTHER) continue;
        v->firstmask[i >> 5] |= bit;
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
    for (int s = 1; s <= LEN_CAP; s++)
        for (size_t k = 0; k < w; k++) v->lenmask[(size_t)s * w + k] |= v->lenmask[(size_t)(s - 1) * w + k];
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

/* per token: offset, length, first character class and length, tail characters, tail byte
 * set and flags; per byte, its character length; the tries of the text tokens and of those
 * with a partial first character. O(token bytes), then the sorts. */
static void vocab_chars(Vocab *v, const uint8_t *text, const int32_t *lens) {
    int32_t size = v->size;
    const uint8_t *flat = v->flat;
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
}

/* the candidate lists: tokens by first byte, by ASCII byte of the tail (and any byte >= 0x80),
 * the long tokens; the depth profile of each first byte's bucket */
static void vocab_lists(Vocab *v) {
    int32_t size = v->size;
    const uint8_t *flat = v->flat;
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
    /* the long tokens' first occurrences (a few per token: their tails repeat characters) */
    int32_t nl = v->longtoks.n;
    VEC(LongEv) ev = {0};
    v->loff = tm_xmalloc((size_t)(nl + 1) * sizeof(int32_t));
    v->lfirst = tm_xmalloc((size_t)(nl + 1) * sizeof(int16_t));
    v->ltail = tm_xmalloc((size_t)(nl + 1) * sizeof(uint16_t));
    for (int32_t k = 0; k < nl; k++) {
        int32_t i = v->longtoks.a[k], n = v->tok_len[i], j = v->first_len[i], chr = 0;
        v->lfirst[k] = v->first_cls[i];
        v->ltail[k] = v->tail_chars[i];
        const uint8_t *t = flat + v->tok_off[i], *cl = v->clen + v->tok_off[i];
        uint64_t seen[3] = {0, 0, 0}; /* ASCII bytes, then LEV_MB and LEV_BAD */
        v->loff[k] = ev.n;
        while (j < n && chr < 65535) {
            int sz = cl[j];
            int kind = sz == 0 ? LEV_BAD : (sz > 1 ? LEV_MB : t[j]);
            if (!((seen[kind >> 6] >> (kind & 63)) & 1)) {
                seen[kind >> 6] |= 1ULL << (kind & 63);
                LongEv e = {(uint16_t)chr, (uint8_t)kind};
                VPUSH(ev, e);
            }
            j += sz ? sz : 1;
            chr++;
        }
    }
    v->loff[nl] = ev.n;
    v->lev = ev.a ? ev.a : tm_xmalloc(sizeof(LongEv));
    v->mark = tm_xcalloc((size_t)(size ? size : 1), sizeof(int32_t));
    for (int b = 0; b < 256; b++) {
        for (int32_t i = v->trie.lo[b]; i < v->trie.hi[b]; i++)
            if (v->trie.depth[i] <= 16) v->dcount[b][v->trie.depth[i]]++;
        for (int d = 1; d <= 16; d++) v->dcount[b][d] += v->dcount[b][d - 1];
    }
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
    vocab_chars(v, text, lens);
    vocab_lists(v);
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
    n += (int64_t)v->inv_off[129] * 4 + VBYTES(v->longtoks) + (int64_t)(v->longtoks.n + 1) * 8 +
         (int64_t)v->loff[v->longtoks.n] * (int64_t)sizeof(LongEv);
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

#endif
