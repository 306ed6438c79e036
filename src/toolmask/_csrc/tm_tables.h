/* The shared run tables of a vocabulary: base bitmasks and exit tries per run class.
 *
 * A base table (the tokens whose first character is selected and whose tail stays in the
 * run) is combined from the class bitmaps (base_build), narrowed from a wider cached table,
 * or bounded from the unbounded one; exit tries (the suffixes of the tokens that leave the
 * run, by exit character) come from the exit index or a candidate scan (tm_vocab.h builds
 * both). Tables are cached per vocabulary, reference counted and trimmed least recently used
 * first; the entry points at the end take the vocabulary's lock.
 */
#ifndef TM_TABLES_H
#define TM_TABLES_H

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

/* e's long tokens (those of its continuation trie: a selected first character, more than
 * CHAIN_CAP tail characters in the run), each with where its tail leaves the run: made once per
 * table, on the first counted run that asks, from the long tokens' first occurrences
 * (Vocab.lev: a few per token), then shared */
static const LongRec *vocab_exit_longs(Vocab *v, ExitTries *e, int32_t *n) {
    tm_lock(&v->lock);
    if (!e->longs_ok) {
        LongVec out = {0};
        const RunKey *key = &e->key;
        for (int32_t k = 0; k < v->longtoks.n; k++) {
            if (!sel_has(e->firsts, e->mb, v->lfirst[k])) continue;
            LongRec r = {v->longtoks.a[k], v->ltail[k], v->lfirst[k], -1};
            for (int32_t x = v->loff[k]; x < v->loff[k + 1]; x++) {
                const LongEv *ev = &v->lev[x];
                if (ev->kind < 128 ? run_has(key, ev->kind) : (ev->kind == LEV_MB && key->utf8)) continue;
                r.run = ev->chr;
                r.exit = ev->kind < 128 ? (int16_t)ev->kind : -2;
                break;
            }
            if (r.run <= CHAIN_CAP) continue; /* leaves within the chain: in the exit tries */
            VPUSH(out, r);
        }
        e->longs = out.a;
        e->nlongs = out.n;
        e->bytes += VBYTES(out);
        v->table_bytes += VBYTES(out);
        e->longs_ok = 1;
    }
    tm_unlock(&v->lock);
    *n = e->nlongs;
    return e->longs;
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
