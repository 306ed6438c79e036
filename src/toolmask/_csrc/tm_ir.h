/* The grammar IR as flat C arrays (content-deduplicated), read from the Python IR objects.
 *
 * Every rule of the grammar is flattened (the cache key covers the whole grammar, as
 * Grammar.fingerprint does). Nodes are hash-consed by content: two equal subtrees get one id
 * whatever the sharing of the Python objects, so the serialisation used as the cache key is
 * canonical, and node ids can key the analysis memos exactly as Python keys them by identity
 * (equal nodes have equal properties).
 *
 * Cost: one attribute read per node object (memoised by object identity, so a shared subtree
 * is read once), O(total size) hashing.
 */
#ifndef TM_IR_H
#define TM_IR_H

enum { K_BYTES = 1, K_CLASS, K_SEQ, K_CHOICE, K_REPEAT, K_REF, K_SPECIAL };

typedef struct {
    uint8_t kind;
    int32_t a, b;   /* BYTES: offset,len in bpool; CLASS: mask index; SEQ/CHOICE: offset,count in
                       kids; REPEAT: item; REF: rule; SPECIAL: text */
    int64_t lo, hi; /* REPEAT bounds, hi = -1 for unbounded (saturated to TM_BIG) */
} Node;

#define TM_BIG ((int64_t)1 << 60)

typedef struct {
    VEC(Node) nodes;
    VEC(M256) masks;
    VEC(uint8_t) bpool;
    IVec kids;
    int32_t nrules;
    IVec body; /* rule -> node */
    int32_t start;
    int32_t ntexts;
    /* hash-consing */
    int32_t *slots;
    uint64_t *hashes;
    int64_t cap;
} IR;

static void ir_free(IR *ir) {
    VFREE(ir->nodes);
    VFREE(ir->masks);
    VFREE(ir->bpool);
    VFREE(ir->kids);
    VFREE(ir->body);
    free(ir->slots);
    free(ir->hashes);
    ir->slots = NULL;
    ir->hashes = NULL;
    ir->cap = 0;
}

static int64_t ir_bytes(const IR *ir) {
    return VBYTES(ir->nodes) + VBYTES(ir->masks) + VBYTES(ir->bpool) + VBYTES(ir->kids) +
           VBYTES(ir->body) + ir->cap * (int64_t)(sizeof(int32_t) + sizeof(uint64_t));
}

static uint64_t ir_node_hash(const IR *ir, const Node *n, const int32_t *kids, const uint8_t *bytes,
                             const M256 *mask) {
    uint64_t h = tm_mix64(n->kind * 0x100000001B3ULL);
    switch (n->kind) {
    case K_BYTES:
        for (int32_t i = 0; i < n->b; i++) h = tm_mix64(h ^ bytes[i]) + 1;
        h ^= (uint64_t)n->b;
        break;
    case K_CLASS:
        h ^= m_hash(mask);
        break;
    case K_SEQ:
    case K_CHOICE:
        h ^= tm_hash_ints(kids, n->b, 3);
        break;
    case K_REPEAT:
        h = tm_mix64(h ^ (uint64_t)n->a) ^ tm_mix64((uint64_t)n->lo * 31 + (uint64_t)n->hi);
        break;
    default:
        h = tm_mix64(h ^ (uint64_t)n->a);
    }
    (void)ir;
    return h;
}

static int ir_node_eq(const IR *ir, int32_t id, const Node *n, const int32_t *kids,
                      const uint8_t *bytes, const M256 *mask) {
    const Node *o = &ir->nodes.a[id];
    if (o->kind != n->kind) return 0;
    switch (n->kind) {
    case K_BYTES:
        return o->b == n->b && memcmp(ir->bpool.a + o->a, bytes, (size_t)n->b) == 0;
    case K_CLASS:
        return m_eq(&ir->masks.a[o->a], mask);
    case K_SEQ:
    case K_CHOICE:
        return o->b == n->b && memcmp(ir->kids.a + o->a, kids, (size_t)n->b * sizeof(int32_t)) == 0;
    case K_REPEAT:
        return o->a == n->a && o->lo == n->lo && o->hi == n->hi;
    default:
        return o->a == n->a;
    }
}

static void ir_rehash(IR *ir) {
    int64_t c = ir->cap ? ir->cap * 2 : 256;
    free(ir->slots);
    free(ir->hashes);
    ir->slots = tm_xcalloc((size_t)c, sizeof(int32_t));
    ir->hashes = tm_xmalloc((size_t)c * sizeof(uint64_t));
    ir->cap = c;
    uint64_t mask = (uint64_t)c - 1;
    for (int32_t id = 0; id < ir->nodes.n; id++) {
        const Node *n = &ir->nodes.a[id];
        uint64_t h = ir_node_hash(ir, n, ir->kids.a + (n->kind == K_SEQ || n->kind == K_CHOICE ? n->a : 0),
                                  ir->bpool.a + (n->kind == K_BYTES ? n->a : 0),
                                  n->kind == K_CLASS ? &ir->masks.a[n->a] : NULL);
        uint64_t i = h & mask;
        while (ir->slots[i]) i = (i + 1) & mask;
        ir->slots[i] = id + 1;
        ir->hashes[i] = h;
    }
}

/* intern a node whose payload is given out of line (kids / bytes / mask); returns its id */
static int32_t ir_intern(IR *ir, Node n, const int32_t *kids, const uint8_t *bytes, const M256 *mask) {
    uint64_t h = ir_node_hash(ir, &n, kids, bytes, mask);
    if (ir->cap) {
        uint64_t m = (uint64_t)ir->cap - 1;
        for (uint64_t i = h & m; ir->slots[i]; i = (i + 1) & m)
            if (ir->hashes[i] == h && ir_node_eq(ir, ir->slots[i] - 1, &n, kids, bytes, mask))
                return ir->slots[i] - 1;
    }
    if ((int64_t)(ir->nodes.n + 1) * 2 > ir->cap) ir_rehash(ir);
    switch (n.kind) {
    case K_BYTES:
        n.a = ir->bpool.n;
        VRESERVE(ir->bpool, n.b);
        memcpy(ir->bpool.a + ir->bpool.n, bytes, (size_t)n.b);
        ir->bpool.n += n.b;
        break;
    case K_CLASS:
        n.a = ir->masks.n;
        VPUSH(ir->masks, *mask);
        break;
    case K_SEQ:
    case K_CHOICE:
        n.a = ir->kids.n;
        VRESERVE(ir->kids, n.b);
        memcpy(ir->kids.a + ir->kids.n, kids, (size_t)n.b * sizeof(int32_t));
        ir->kids.n += n.b;
        break;
    }
    int32_t id = ir->nodes.n;
    VPUSH(ir->nodes, n);
    uint64_t m = (uint64_t)ir->cap - 1, i = h & m;
    while (ir->slots[i]) i = (i + 1) & m;
    ir->slots[i] = id + 1;
    ir->hashes[i] = h;
    return id;
}

/* ---- reading the Python objects ---------------------------------------------------------- */

typedef struct {
    PyObject *Bytes, *ByteClass, *Seq, *Choice, *Repeat, *RuleRef, *Special;
    PyObject *s_value, *s_mask, *s_items, *s_item, *s_min, *s_max, *s_name, *s_text, *s_rules,
        *s_start, *s_body;
} IRTypes;

static IRTypes irt;
static int irt_ready = 0;

static int irt_setup(void) {
    if (irt_ready) return 0;
    PyObject *mod = PyImport_ImportModule("toolmask.grammar._ir");
    if (!mod) return -1;
#define GETCLS(f)                                          \
    irt.f = PyObject_GetAttrString(mod, #f);               \
    if (!irt.f) {                                          \
        Py_DECREF(mod);                                    \
        return -1;                                         \
    }
    GETCLS(Bytes) GETCLS(ByteClass) GETCLS(Seq) GETCLS(Choice) GETCLS(Repeat) GETCLS(RuleRef)
        GETCLS(Special)
#undef GETCLS
    Py_DECREF(mod);
#define STR(f) irt.s_##f = PyUnicode_InternFromString(#f);
    STR(value) STR(mask) STR(items) STR(item) STR(min) STR(max) STR(name) STR(text) STR(rules)
        STR(start) STR(body)
#undef STR
    irt_ready = 1;
    return 0;
}

static int py_to_m256(PyObject *o, M256 *out) {
    unsigned char buf[33];
    memset(buf, 0, sizeof(buf));
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "ByteClass mask is not an int");
        return -1;
    }
#if PY_VERSION_HEX >= 0x030D0000
    Py_ssize_t need = PyLong_AsNativeBytes(
        o, buf, 32, Py_ASNATIVEBYTES_LITTLE_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER);
    if (need < 0) return -1;
    if (need > 32) {
        PyErr_SetString(PyExc_ValueError, "ByteClass mask wider than 256 bits");
        return -1;
    }
#else
    if (_PyLong_AsByteArray((PyLongObject *)o, buf, 32, 1, 0) < 0) return -1;
#endif
    for (int i = 0; i < 4; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--) w = (w << 8) | buf[i * 8 + k];
        out->w[i] = w;
    }
    return 0;
}

static int64_t py_to_bound(PyObject *o) {
    if (o == Py_None) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -2;
    if (overflow > 0 || v > TM_BIG) return TM_BIG;
    if (v < 0) return 0;
    return (int64_t)v;
}

/* A choice of at least LIT_TRIE_MIN literals (and nothing else) is read as its trie: common
 * prefixes once, then a choice of what follows, a group of at most LIT_TRIE_GROUP literals below
 * one prefix as a choice of their rests (the same language; the literals sorted and made
 * unique). The automaton then holds one branch per distinct next byte instead of one per
 * literal: a choice of hundreds of names or enum values costs O(branches) per step. The
 * reference builder reads such a choice the same way (grammar.passes.literal_tries), so both
 * backends build the same positions. */
#define LIT_TRIE_MIN 8
#define LIT_TRIE_GROUP 4
/* branch points nested at most this deep (below, the rests are one choice): the IR stays shallow
 * for every reader that recurses on it */
#define LIT_TRIE_DEPTH 48

typedef struct {
    const uint8_t *p;
    int32_t len;
} LitRef;

static int lit_cmp(const void *a, const void *b) {
    const LitRef *x = a, *y = b;
    int32_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, (size_t)n) : 0;
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

static int32_t lit_bytes(IR *ir, const uint8_t *p, int32_t len) {
    Node n;
    memset(&n, 0, sizeof(n));
    n.kind = K_BYTES;
    n.b = len;
    return ir_intern(ir, n, NULL, p, NULL);
}

static int32_t lit_group(IR *ir, uint8_t kind, const int32_t *kids, int32_t k) {
    Node n;
    memset(&n, 0, sizeof(n));
    n.kind = kind;
    n.b = k;
    return ir_intern(ir, n, kids, NULL, NULL);
}

/* the trie of lits[lo, hi) past their first depth bytes (sorted, distinct, hi - lo >= 1), level
 * branch points deep */
static int32_t lit_trie(IR *ir, const LitRef *lits, int32_t lo, int32_t hi, int32_t depth,
                        int32_t level) {
    const LitRef *first = &lits[lo], *last = &lits[hi - 1];
    if (hi - lo == 1) return lit_bytes(ir, first->p + depth, first->len - depth);
    int32_t k = depth, m = first->len < last->len ? first->len : last->len;
    while (k < m && first->p[k] == last->p[k]) k++;
    int32_t alts[257] = {0}, na = 0, node; /* zeroed: gcc cannot see that na > 0 */
    if (hi - lo <= LIT_TRIE_GROUP || level >= LIT_TRIE_DEPTH) { /* the rests, one choice */
        int32_t *rests = hi - lo <= 257 ? alts : tm_xcalloc((size_t)(hi - lo), sizeof(int32_t));
        for (int32_t i = lo; i < hi; i++) rests[na++] = lit_bytes(ir, lits[i].p + k, lits[i].len - k);
        node = lit_group(ir, K_CHOICE, rests, na);
        if (rests != alts) free(rests);
    } else {
        int32_t i = lo;
        if (first->len == k) { /* a literal ends here (sorted: the shortest comes first) */
            alts[na++] = lit_bytes(ir, first->p, 0);
            i++;
        }
        while (i < hi) {
            int32_t j = i + 1;
            while (j < hi && lits[j].p[k] == lits[i].p[k]) j++;
            alts[na++] = lit_trie(ir, lits, i, j, k, level + 1);
            i = j;
        }
        node = lit_group(ir, K_CHOICE, alts, na);
    }
    if (k == depth) return node;
    int32_t pair[2] = {lit_bytes(ir, first->p + depth, k - depth), node};
    return lit_group(ir, K_SEQ, pair, 2);
}

/* kids[0, n) read as a choice: its trie when they are at least LIT_TRIE_MIN literals, else -1 */
static int32_t ir_literal_choice(IR *ir, const int32_t *kids, int32_t n) {
    if (n < LIT_TRIE_MIN) return -1;
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        const Node *o = &ir->nodes.a[kids[i]];
        if (o->kind != K_BYTES) return -1;
        total += o->b;
    }
    /* the literals copied out of the pool: interning the trie's nodes may move it */
    uint8_t *buf = tm_xmalloc((size_t)total);
    LitRef *lits = tm_xmalloc((size_t)n * sizeof(LitRef));
    int64_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        const Node *o = &ir->nodes.a[kids[i]];
        memcpy(buf + at, ir->bpool.a + o->a, (size_t)o->b);
        lits[i].p = buf + at;
        lits[i].len = o->b;
        at += o->b;
    }
    qsort(lits, (size_t)n, sizeof(LitRef), lit_cmp);
    int32_t u = 0;
    for (int32_t i = 0; i < n; i++)
        if (u == 0 || lit_cmp(&lits[u - 1], &lits[i]) != 0) lits[u++] = lits[i];
    int32_t id = lit_trie(ir, lits, 0, u, 0, 0);
    free(lits);
    free(buf);
    return id;
}

typedef struct {
    PyObject *obj;   /* borrowed: kept alive by its parent (or the grammar) */
    PyObject *items; /* new reference for SEQ/CHOICE, else NULL */
    int32_t i, n, kbase;
    uint8_t kind;
} FFrame;

typedef struct {
    IMap memo;        /* object address -> node id */
    PyObject *names;  /* dict: rule name -> index */
    PyObject *texts;  /* dict: special text -> index */
    PyObject *text_list;
    IVec kidstack;
    VEC(FFrame) fr;
} FlatCtx;

static int flat_kind(PyObject *o) {
    PyObject *t = (PyObject *)Py_TYPE(o);
    if (t == irt.Seq) return K_SEQ;
    if (t == irt.Bytes) return K_BYTES;
    if (t == irt.ByteClass) return K_CLASS;
    if (t == irt.Choice) return K_CHOICE;
    if (t == irt.RuleRef) return K_REF;
    if (t == irt.Repeat) return K_REPEAT;
    if (t == irt.Special) return K_SPECIAL;
    PyErr_Format(PyExc_TypeError, "not a grammar node: %R", o);
    return -1;
}

/* a leaf node's id (or a REPEAT with its item id given); -1 on error */
static int32_t flat_leaf(IR *ir, FlatCtx *cx, PyObject *o, int kind) {
    Node n;
    memset(&n, 0, sizeof(n));
    n.kind = (uint8_t)kind;
    PyObject *v;
    int32_t id = -1;
    switch (kind) {
    case K_BYTES: {
        v = PyObject_GetAttr(o, irt.s_value);
        if (!v) return -1;
        char *buf;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(v, &buf, &len) < 0) {
            Py_DECREF(v);
            return -1;
        }
        n.b = (int32_t)len;
        id = ir_intern(ir, n, NULL, (const uint8_t *)buf, NULL);
        Py_DECREF(v);
        return id;
    }
    case K_CLASS: {
        M256 m;
        v = PyObject_GetAttr(o, irt.s_mask);
        if (!v) return -1;
        int r = py_to_m256(v, &m);
        Py_DECREF(v);
        if (r < 0) return -1;
        return ir_intern(ir, n, NULL, NULL, &m);
    }
    case K_REF: {
        v = PyObject_GetAttr(o, irt.s_name);
        if (!v) return -1;
        PyObject *idx = PyDict_GetItemWithError(cx->names, v);
        if (!idx) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "undefined rule %R", v);
            Py_DECREF(v);
            return -1;
        }
        Py_DECREF(v);
        n.a = (int32_t)PyLong_AsLong(idx);
        return ir_intern(ir, n, NULL, NULL, NULL);
    }
    case K_SPECIAL: {
        v = PyObject_GetAttr(o, irt.s_text);
        if (!v) return -1;
        PyObject *idx = PyDict_GetItemWithError(cx->texts, v);
        if (!idx) {
            if (PyErr_Occurred()) {
                Py_DECREF(v);
                return -1;
            }
            PyObject *k = PyLong_FromSsize_t(PyList_GET_SIZE(cx->text_list));
            if (!k || PyDict_SetItem(cx->texts, v, k) < 0 || PyList_Append(cx->text_list, v) < 0) {
                Py_XDECREF(k);
                Py_DECREF(v);
                return -1;
            }
            n.a = (int32_t)PyLong_AsLong(k);
            Py_DECREF(k);
        } else {
            n.a = (int32_t)PyLong_AsLong(idx);
        }
        Py_DECREF(v);
        ir->ntexts = (int32_t)PyList_GET_SIZE(cx->text_list);
        return ir_intern(ir, n, NULL, NULL, NULL);
    }
    }
    return -1;
}

/* flatten one node tree (iterative post-order); returns the root id or -1 */
static int32_t flat_tree(IR *ir, FlatCtx *cx, PyObject *root) {
    int32_t got = imap_get(&cx->memo, (uint64_t)(uintptr_t)root, -1);
    if (got >= 0) return got;
    cx->fr.n = 0;
    int32_t result = -1;
    PyObject *cur = root;
    for (;;) {
        /* descend into cur */
        int32_t id = imap_get(&cx->memo, (uint64_t)(uintptr_t)cur, -1);
        if (id < 0) {
            int kind = flat_kind(cur);
            if (kind < 0) goto fail;
            if (kind == K_SEQ || kind == K_CHOICE || kind == K_REPEAT) {
                FFrame f;
                memset(&f, 0, sizeof(f));
                f.obj = cur;
                f.kind = (uint8_t)kind;
                f.kbase = cx->kidstack.n;
                if (kind == K_REPEAT) {
                    f.items = PyObject_GetAttr(cur, irt.s_item);
                    if (!f.items) goto fail;
                    f.n = 1;
                } else {
                    f.items = PyObject_GetAttr(cur, irt.s_items);
                    if (!f.items) goto fail;
                    if (!PyTuple_Check(f.items)) {
                        Py_DECREF(f.items);
                        PyErr_SetString(PyExc_TypeError, "Seq/Choice items must be a tuple");
                        goto fail;
                    }
                    f.n = (int32_t)PyTuple_GET_SIZE(f.items);
                }
                VPUSH(cx->fr, f);
                goto next_child;
            }
            id = flat_leaf(ir, cx, cur, kind);
            if (id < 0) goto fail;
            imap_put(&cx->memo, (uint64_t)(uintptr_t)cur, id);
        }
        /* cur is done with id: hand it to the parent */
        for (;;) {
            if (cx->fr.n == 0) {
                result = id;
                goto done;
            }
            VPUSH(cx->kidstack, id);
        next_child:;
            FFrame *f = &cx->fr.a[cx->fr.n - 1];
            if (f->i < f->n) {
                cur = f->kind == K_REPEAT ? f->items : PyTuple_GET_ITEM(f->items, f->i);
                f->i++;
                break; /* descend */
            }
            /* all children done: build this node */
            Node n;
            memset(&n, 0, sizeof(n));
            n.kind = f->kind;
            int32_t *kids = cx->kidstack.a + f->kbase;
            if (f->kind == K_REPEAT) {
                n.a = kids[0];
                PyObject *lo = PyObject_GetAttr(f->obj, irt.s_min);
                PyObject *hi = lo ? PyObject_GetAttr(f->obj, irt.s_max) : NULL;
                if (!hi) {
                    Py_XDECREF(lo);
                    goto fail;
                }
                n.lo = py_to_bound(lo);
                n.hi = py_to_bound(hi);
                Py_DECREF(lo);
                Py_DECREF(hi);
                if (n.lo == -2 || n.hi == -2) goto fail;
                if (n.lo < 0) n.lo = 0;
                id = ir_intern(ir, n, NULL, NULL, NULL);
            } else {
                n.b = f->n;
                id = f->kind == K_CHOICE ? ir_literal_choice(ir, kids, f->n) : -1;
                if (id < 0) id = ir_intern(ir, n, kids, NULL, NULL);
            }
            imap_put(&cx->memo, (uint64_t)(uintptr_t)f->obj, id);
            cx->kidstack.n = f->kbase;
            Py_DECREF(f->items);
            cx->fr.n--;
        }
    }
done:
    return result;
fail:
    while (cx->fr.n > 0) {
        Py_XDECREF(cx->fr.a[cx->fr.n - 1].items);
        cx->fr.n--;
    }
    cx->kidstack.n = 0;
    return -1;
}

/* flatten the whole grammar; fills ir and returns the list of rule names (new ref) and the
 * list of special texts (new ref via *texts), or NULL on error */
static PyObject *ir_flatten(IR *ir, PyObject *grammar, PyObject **texts_out) {
    if (irt_setup() < 0) return NULL;
    memset(ir, 0, sizeof(*ir));
    FlatCtx cx;
    memset(&cx, 0, sizeof(cx));
    PyObject *rules = NULL, *start = NULL, *names = NULL;
    cx.names = PyDict_New();
    cx.texts = PyDict_New();
    cx.text_list = PyList_New(0);
    if (!cx.names || !cx.texts || !cx.text_list) goto fail;
    rules = PyObject_GetAttr(grammar, irt.s_rules);
    if (!rules) goto fail;
    if (!PyTuple_Check(rules)) {
        PyErr_SetString(PyExc_TypeError, "Grammar.rules must be a tuple");
        goto fail;
    }
    Py_ssize_t nr = PyTuple_GET_SIZE(rules);
    names = PyList_New(nr);
    if (!names) goto fail;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *nm = PyObject_GetAttr(PyTuple_GET_ITEM(rules, i), irt.s_name);
        if (!nm) goto fail;
        PyList_SET_ITEM(names, i, nm);
        PyObject *k = PyLong_FromSsize_t(i);
        if (!k || PyDict_SetItem(cx.names, nm, k) < 0) {
            Py_XDECREF(k);
            goto fail;
        }
        Py_DECREF(k);
    }
    ir->nrules = (int32_t)nr;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *body = PyObject_GetAttr(PyTuple_GET_ITEM(rules, i), irt.s_body);
        if (!body) goto fail;
        int32_t id = flat_tree(ir, &cx, body);
        Py_DECREF(body);
        if (id < 0) goto fail;
        VPUSH(ir->body, id);
    }
    start = PyObject_GetAttr(grammar, irt.s_start);
    if (!start) goto fail;
    PyObject *si = PyDict_GetItemWithError(cx.names, start);
    if (!si) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "start rule %R is not defined", start);
        goto fail;
    }
    ir->start = (int32_t)PyLong_AsLong(si);
    ir->ntexts = (int32_t)PyList_GET_SIZE(cx.text_list);
    Py_DECREF(rules);
    Py_DECREF(start);
    Py_DECREF(cx.names);
    Py_DECREF(cx.texts);
    imap_free(&cx.memo);
    VFREE(cx.kidstack);
    VFREE(cx.fr);
    *texts_out = cx.text_list;
    return names;
fail:
    Py_XDECREF(rules);
    Py_XDECREF(start);
    Py_XDECREF(names);
    Py_XDECREF(cx.names);
    Py_XDECREF(cx.texts);
    Py_XDECREF(cx.text_list);
    imap_free(&cx.memo);
    VFREE(cx.kidstack);
    VFREE(cx.fr);
    ir_free(ir);
    return NULL;
}

/* the canonical serialisation of the flat IR (nodes, rule bodies, start): a bytes object */
static PyObject *ir_serialise(const IR *ir) {
    int64_t size = 16 + (int64_t)ir->nodes.n * 21 + (int64_t)ir->kids.n * 4 + ir->bpool.n +
                   (int64_t)ir->masks.n * 32 + (int64_t)ir->body.n * 4;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) return NULL;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
#define PUT32(x)                      \
    do {                              \
        uint32_t _v = (uint32_t)(x);  \
        memcpy(p, &_v, 4);            \
        p += 4;                       \
    } while (0)
#define PUT64(x)                      \
    do {                              \
        uint64_t _v = (uint64_t)(x);  \
        memcpy(p, &_v, 8);            \
        p += 8;                       \
    } while (0)
    PUT32(ir->nodes.n);
    PUT32(ir->nrules);
    PUT32(ir->start);
    PUT32(ir->ntexts);
    for (int32_t i = 0; i < ir->nodes.n; i++) {
        const Node *n = &ir->nodes.a[i];
        *p++ = n->kind;
        switch (n->kind) {
        case K_BYTES:
            PUT32(n->b);
            memcpy(p, ir->bpool.a + n->a, (size_t)n->b);
            p += n->b;
            break;
        case K_CLASS:
            memcpy(p, &ir->masks.a[n->a], 32);
            p += 32;
            break;
        case K_SEQ:
        case K_CHOICE:
            PUT32(n->b);
            memcpy(p, ir->kids.a + n->a, (size_t)n->b * 4);
            p += (size_t)n->b * 4;
            break;
        case K_REPEAT:
            PUT32(n->a);
            PUT64(n->lo);
            PUT64(n->hi);
            break;
        default:
            PUT32(n->a);
        }
    }
    for (int32_t r = 0; r < ir->body.n; r++) PUT32(ir->body.a[r]);
#undef PUT32
#undef PUT64
    int64_t used = p - (uint8_t *)PyBytes_AS_STRING(out);
    if (_PyBytes_Resize(&out, (Py_ssize_t)used) < 0) return NULL;
    return out;
}

#endif
