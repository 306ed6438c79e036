/* toolmask._native: the Vocab and Masks types and fill_batch (CPython objects over
 * tm_vocab.h and tm_compose.h).
 *
 * A Vocab object owns a vocabulary index; a Masks object one mask cache over an Automaton and
 * a Vocab (it holds both). fill_batch fills the rows of a batch on the calling thread and the
 * pool's (tm_pool.h), with the GIL released. Part of native.c's translation unit.
 */
#ifndef TM_PY_MASKS_H
#define TM_PY_MASKS_H

/* ---- Vocab -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD Vocab v;
    int ok;
} VocabObject;

static PyObject *Vocab_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *tokens;
    Py_buffer text;
    int max_tables = 256;
    static char *kwlist[] = {"token_bytes", "text", "max_tables", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oy*|i", kwlist, &tokens, &text, &max_tables)) return NULL;
    PyObject *seq = PySequence_Fast(tokens, "token_bytes must be a sequence of bytes");
    if (!seq) {
        PyBuffer_Release(&text);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (text.len != n) {
        PyErr_SetString(PyExc_ValueError, "text flags and token_bytes differ in length");
        Py_DECREF(seq);
        PyBuffer_Release(&text);
        return NULL;
    }
    int32_t *lens = tm_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "token_bytes items must be bytes");
            free(lens);
            Py_DECREF(seq);
            PyBuffer_Release(&text);
            return NULL;
        }
        lens[i] = (int32_t)PyBytes_GET_SIZE(b);
        total += lens[i];
    }
    uint8_t *flat = tm_xmalloc((size_t)(total ? total : 1));
    int64_t off = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
        memcpy(flat + off, PyBytes_AS_STRING(b), (size_t)lens[i]);
        off += lens[i];
    }
    Py_DECREF(seq);
    VocabObject *self = (VocabObject *)type->tp_alloc(type, 0);
    if (!self) {
        free(lens);
        free(flat);
        PyBuffer_Release(&text);
        return NULL;
    }
    vocab_init(&self->v, (int32_t)n, text.buf, lens, flat, total, max_tables);
    self->ok = 1;
    free(lens);
    free(flat);
    PyBuffer_Release(&text);
    return (PyObject *)self;
}

static void Vocab_dealloc(VocabObject *self) {
    if (self->ok) vocab_free(&self->v);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Vocab_memory_bytes(VocabObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(vocab_bytes_locked(&self->v));
}

static PyObject *Vocab_info(VocabObject *self, PyObject *unused) {
    (void)unused;
    Vocab *v = &self->v;
    tm_lock(&v->lock);
    int bases = v->bases.n, exits = v->exits.n;
    long long tb = (long long)v->table_bytes, made[6] = {v->n_built, v->n_narrowed, v->n_bounded,
                                                          v->n_passed, v->n_indexed, v->n_scanned};
    tm_unlock(&v->lock);
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:i,s:i,s:L,s:L,s:L,s:L,s:L,s:L}", "size", v->size,
                         "trie_nodes", v->trie.n, "partial_nodes", v->partial.n, "max_tail_chars",
                         v->max_tail_chars, "bases", bases, "exit_tables", exits, "table_bytes", tb,
                         "exit_records", v->xoff[XCLASSES], "long_records", v->nlrec, "bases_built", made[0],
                         "bases_narrowed", made[1], "bases_bounded", made[2], "bases_passed", made[3],
                         "exits_indexed", made[4], "exits_scanned", made[5]);
}

static PyMethodDef Vocab_methods[] = {
    {"memory_bytes", (PyCFunction)Vocab_memory_bytes, METH_NOARGS, "bytes held (tries, token tables, run tables)"},
    {"info", (PyCFunction)Vocab_info, METH_NOARGS, "sizes (diagnostics)"},
    {NULL}};

static PyTypeObject VocabType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolmask._native.Vocab",
    .tp_basicsize = sizeof(VocabObject),
    .tp_dealloc = (destructor)Vocab_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A vocabulary's token tries and shared run tables (compiled kernel).",
    .tp_new = Vocab_new,
    .tp_methods = Vocab_methods,
};

/* ---- Masks -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD MaskCache mc;
    AutoObject *auto_;
    VocabObject *vocab;
    int ok;
} MasksObject;

static PyObject *Masks_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *a, *v, *spec, *eos;
    long long max_bytes;
    static char *kwlist[] = {"automaton", "vocab", "special_ids", "eos_ids", "max_bytes", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!OOL", kwlist, &AutoType, &a, &VocabType, &v, &spec, &eos,
                                     &max_bytes))
        return NULL;
    PyObject *sp = PySequence_Fast(spec, "special_ids must be a sequence of sequences of ints");
    if (!sp) return NULL;
    PyObject *es = PySequence_Fast(eos, "eos_ids must be a sequence of ints");
    if (!es) {
        Py_DECREF(sp);
        return NULL;
    }
    MasksObject *self = (MasksObject *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(sp);
        Py_DECREF(es);
        return NULL;
    }
    MaskCache *mc = &self->mc;
    memset(mc, 0, sizeof(*mc));
    mc->au = &((AutoObject *)a)->au;
    mc->v = &((VocabObject *)v)->v;
    AU_LOCK((AutoObject *)a);
    mc->epoch = mc->au->epoch;
    AU_UNLOCK((AutoObject *)a);
    mc->max_bytes = max_bytes;
    Py_INCREF(a);
    self->auto_ = (AutoObject *)a;
    Py_INCREF(v);
    self->vocab = (VocabObject *)v;
    self->ok = 1;
    int32_t size = mc->v->size;
    mc->nspec = (int32_t)PySequence_Fast_GET_SIZE(sp);
    mc->spec_ids = tm_xcalloc((size_t)(mc->nspec ? mc->nspec : 1), sizeof(IVec));
    for (int32_t i = 0; i < mc->nspec; i++) {
        PyObject *ids = PySequence_Fast(PySequence_Fast_GET_ITEM(sp, i), "special_ids items must be sequences");
        if (!ids) goto fail;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(ids); k++) {
            long t = PyLong_AsLong(PySequence_Fast_GET_ITEM(ids, k));
            if (t < 0 || t >= size) {
                Py_DECREF(ids);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "special id out of range");
                goto fail;
            }
            VPUSH(mc->spec_ids[i], (int32_t)t);
        }
        Py_DECREF(ids);
    }
    mc->neos = (int32_t)PySequence_Fast_GET_SIZE(es);
    mc->eos = tm_xmalloc((size_t)(mc->neos ? mc->neos : 1) * sizeof(int32_t));
    for (int32_t i = 0; i < mc->neos; i++) {
        long t = PyLong_AsLong(PySequence_Fast_GET_ITEM(es, i));
        if (t < 0 || t >= size) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "EOS id out of range");
            goto fail;
        }
        mc->eos[i] = (int32_t)t;
    }
    Py_DECREF(sp);
    Py_DECREF(es);
    return (PyObject *)self;
fail:
    Py_DECREF(sp);
    Py_DECREF(es);
    Py_DECREF(self);
    return NULL;
}

static void Masks_dealloc(MasksObject *self) {
    if (self->ok) mc_free(&self->mc);
    Py_XDECREF(self->auto_);
    Py_XDECREF(self->vocab);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- filling rows ----------------------------------------------------------------------- *
 *
 * A row is one (Masks, state) pair. A warm row (its state's mask is cached) is copied under the
 * automaton's shared lock; a cold one computes under the exclusive lock. Neither touches a
 * Python object besides reading the state handle's sid, which only changes under the
 * exclusive lock (compaction), so both run without the GIL. */

/* 0: written (flags set); 1: the mask is not cached (nothing written) */
static int row_fill_shared(MasksObject *m, StateObject *h, uint32_t *out, uint8_t *flags) {
    AutoObject *a = m->auto_;
    int how = tl_rlock(&a->lock);
    StRep *r = NULL;
    if (a->au.st.n < a->au.next_compact) r = mc_rep_peek(&m->mc, h->sid);
    if (r) {
        mc_fill_rep(&m->mc, r, out);
        *flags = r->flags;
    }
    tl_runlock(&a->lock, how);
    return r ? 0 : 1;
}

/* compute (if needed) and write, under the exclusive lock */
static void row_fill_excl(MasksObject *m, StateObject *h, uint32_t *out, uint8_t *flags) {
    AutoObject *a = m->auto_;
    tl_wlock(&a->lock);
    au_maybe_compact(&a->au, NULL, 0); /* handles are updated in place: h->sid stays right */
    StRep *r = mc_rep(&m->mc, h->sid);
    mc_fill_rep(&m->mc, r, out);
    *flags = r->flags;
    tl_wunlock(&a->lock);
}

/* 0 written; 1 not cached and another thread holds the lock (nothing written) */
static int row_fill_try(MasksObject *m, StateObject *h, uint32_t *out, uint8_t *flags) {
    if (!row_fill_shared(m, h, out, flags)) return 0;
    AutoObject *a = m->auto_;
    if (!tl_trywlock(&a->lock)) return 1;
    tl_wunlock(&a->lock); /* re-taken (recursively cheap) by row_fill_excl */
    row_fill_excl(m, h, out, flags);
    return 0;
}

static int check_state(MasksObject *m, PyObject *o) {
    if (Py_TYPE(o) != &StateType || ((StateObject *)o)->owner != m->auto_) {
        PyErr_SetString(PyExc_TypeError, "not a state of this automaton");
        return -1;
    }
    return 0;
}

/* out as int32 words: exactly `rows` rows of `words` (exact), or at least `rows` rows */
static int get_bitmask(Py_buffer *buf, PyObject *out, int32_t words, Py_ssize_t rows, int exact) {
    if (PyObject_GetBuffer(out, buf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    Py_ssize_t row = (Py_ssize_t)words * 4;
    if (buf->itemsize != 4 || (exact ? buf->len != row * rows : (buf->len < row * rows || buf->len % row)) ||
        (buf->format && strcmp(buf->format, "i") != 0 && strcmp(buf->format, "=i") != 0 &&
         strcmp(buf->format, "<i") != 0 && strcmp(buf->format, "I") != 0 && strcmp(buf->format, "l") != 0)) {
        PyBuffer_Release(buf);
        if (exact)
            PyErr_Format(PyExc_ValueError, "bitmask must be %d contiguous int32 words", (int)words);
        else
            PyErr_Format(PyExc_ValueError, "bitmask must be C-contiguous int32 [rows >= %zd, %d]", rows, (int)words);
        return -1;
    }
    return 0;
}

static PyObject *Masks_fill(MasksObject *self, PyObject *args) {
    PyObject *s, *out;
    if (!PyArg_ParseTuple(args, "OO", &s, &out)) return NULL;
    if (check_state(self, s) < 0) return NULL;
    Py_buffer buf;
    if (get_bitmask(&buf, out, self->mc.v->words, 1, 1) < 0) return NULL;
    uint8_t flags;
    if (row_fill_shared(self, (StateObject *)s, (uint32_t *)buf.buf, &flags))
        row_fill_excl(self, (StateObject *)s, (uint32_t *)buf.buf, &flags);
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

static PyObject *Masks_stats(MasksObject *self, PyObject *unused) {
    (void)unused;
    MaskCache *mc = &self->mc;
    int64_t locals = 0, reps = 0;
    AU_LOCK(self->auto_);
    for (int32_t i = 0; i < mc->npl; i++) locals += mc->pl[i].ok;
    for (int32_t i = 0; i < mc->nreps; i++) reps += mc->reps[i] != NULL;
    MaskCache c = *mc;
    AU_UNLOCK(self->auto_);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "nodes", (long long)c.nodes, "bulk_nodes",
                         (long long)c.bulk_nodes, "hits", (long long)c.hits, "misses", (long long)c.misses,
                         "position_misses", (long long)c.local_misses, "exact_walks", (long long)c.exact_walks,
                         "counted_runs", (long long)c.counted_runs, "exception_groups", (long long)c.exc_merged,
                         "exception_tokens", (long long)c.exc_tokens, "counted_moves", (long long)c.cnt_moves,
                         "positions", (long long)locals, "states", (long long)reps, "bytes", (long long)c.bytes);
}

static PyObject *Masks_memory_bytes(MasksObject *self, PyObject *unused) {
    (void)unused;
    AU_LOCK(self->auto_);
    long long n = self->mc.bytes + (int64_t)self->mc.npl * (int64_t)sizeof(PosLocal) + (int64_t)self->mc.nreps * 8 +
                  imap_bytes(&self->mc.step) + imap_bytes(&self->mc.shifted);
    AU_UNLOCK(self->auto_);
    return PyLong_FromLongLong(n);
}

static PyObject *Masks_clear(MasksObject *self, PyObject *unused) {
    (void)unused;
    AU_LOCK(self->auto_);
    mc_clear_all(&self->mc);
    AU_UNLOCK(self->auto_);
    Py_RETURN_NONE;
}

static PyObject *Masks_advance_token(MasksObject *self, PyObject *args) {
    PyObject *s;
    int tid;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "Oi", &s, &tid)) return NULL;
    Vocab *v = self->mc.v;
    AU_LOCK(self->auto_);
    if (get_sid(self->auto_, s, &sid) < 0) {
        AU_UNLOCK(self->auto_);
        return NULL;
    }
    PyObject *r;
    if (tid < 0 || tid >= v->size || !v->text[tid] || !v->tok_len[tid]) {
        Py_INCREF(Py_None);
        r = Py_None;
    } else {
        const uint8_t *p = v->flat + v->tok_off[tid];
        for (int32_t i = 0; i < v->tok_len[tid] && sid >= 0; i++) {
            au_maybe_compact(&self->auto_->au, &sid, 1);
            sid = au_advance(&self->auto_->au, sid, p[i]);
        }
        r = state_handle(self->auto_, sid);
    }
    AU_UNLOCK(self->auto_);
    return r;
}

static PyMethodDef Masks_methods[] = {
    {"fill", (PyCFunction)Masks_fill, METH_VARARGS, "fill(state, out): write the state's bitmask into out"},
    {"advance_token", (PyCFunction)Masks_advance_token, METH_VARARGS,
     "advance_token(state, id): the state after a text token's bytes, or None"},
    {"stats", (PyCFunction)Masks_stats, METH_NOARGS, "counters and sizes"},
    {"memory_bytes", (PyCFunction)Masks_memory_bytes, METH_NOARGS, "bytes held by the cached masks"},
    {"clear", (PyCFunction)Masks_clear, METH_NOARGS, "drop every cached mask"},
    {NULL}};

static PyTypeObject MasksType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolmask._native.Masks",
    .tp_basicsize = sizeof(MasksObject),
    .tp_dealloc = (destructor)Masks_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Token masks of one automaton over one vocabulary (compiled kernel).",
    .tp_new = Masks_new,
    .tp_methods = Masks_methods,
};

/* ---- fill_batch ------------------------------------------------------------------------- *
 *
 * fill_batch(masks, states, out, flags, max_threads, force) fills row i of out (int32
 * [rows >= n, W]) for n rows and sets flags[i] (uint8): ROW_ACCEPTING | ROW_FINISHED.
 *
 *   masks[i]: a Masks, an object whose .native is one (NativeMaskCache), or None: an
 *             unconstrained row (all ones, flags 0); anything else is a row the caller fills
 *             (flags ROW_PYTHON, row untouched);
 *   states[i]: a State of that Masks' automaton, or None for a matcher that accepted an EOS
 *             (all zeros, flags ROW_ACCEPTING | ROW_FINISHED).
 *
 * Rows go to the caller and up to max_threads - 1 pool threads with the GIL released: each
 * thread takes rows in turn; a warm row is copied under its automaton's shared lock, a cold
 * one is computed at once if its automaton's exclusive lock is free, else it is deferred to a
 * second pass (after the warm rows) where it waits for the lock. With force = 0 the number of
 * threads comes from the work (FILL_GRAIN_NS per thread, a cold row counted as
 * FILL_COLD_NS, a warm one as its words); force = 1 uses max_threads (capped by n).
 * Returns (threads used, cold rows, rows left to the caller).
 */
#define ROW_PYTHON 0x80
#define FILL_GRAIN_NS 50000.0   /* one more thread per this much estimated work */
#define FILL_COLD_NS 60000.0    /* a row whose mask is not cached yet */
#define FILL_WARM_NS_PER_WORD 0.5
#define FILL_GIL_NS 40000.0     /* release the GIL for a single thread past this much work */

enum { RK_NATIVE = 0, RK_ALL = 1, RK_STOPPED = 2, RK_PYTHON = 3 };

typedef struct {
    MasksObject **m;
    StateObject **h;
    uint8_t *kind;
    uint8_t *st; /* 0 todo, 1 done, 2 deferred, 3 taken */
    uint32_t *out;
    uint8_t *flags;
    int32_t n, words;
    int32_t next, pending, cold;
} BatchJob;

static void batch_row_simple(BatchJob *j, int32_t i) {
    uint32_t *row = j->out + (size_t)i * (size_t)j->words;
    switch (j->kind[i]) {
    case RK_ALL:
        memset(row, 0xFF, (size_t)j->words * 4);
        j->flags[i] = 0;
        break;
    case RK_STOPPED:
        memset(row, 0, (size_t)j->words * 4);
        j->flags[i] = ROW_ACCEPTING | ROW_FINISHED;
        break;
    default:
        j->flags[i] = ROW_PYTHON;
    }
}

static void batch_work(void *arg) {
    BatchJob *j = arg;
    for (;;) {
        int32_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_ACQ_REL);
        if (i >= j->n) break;
        if (j->kind[i] != RK_NATIVE) {
            batch_row_simple(j, i);
            __atomic_store_n(&j->st[i], 1, __ATOMIC_RELEASE);
        } else {
            uint32_t *row = j->out + (size_t)i * (size_t)j->words;
            MasksObject *m = j->m[i];
            StateObject *h = j->h[i];
            if (!row_fill_shared(m, h, row, &j->flags[i])) {
                __atomic_store_n(&j->st[i], 1, __ATOMIC_RELEASE);
            } else if (tl_trywlock(&m->auto_->lock)) {
                tl_wunlock(&m->auto_->lock);
                row_fill_excl(m, h, row, &j->flags[i]);
                __atomic_fetch_add(&j->cold, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&j->st[i], 1, __ATOMIC_RELEASE);
            } else {
                __atomic_store_n(&j->st[i], 2, __ATOMIC_RELEASE); /* its grammar is busy: later */
            }
        }
        __atomic_fetch_sub(&j->pending, 1, __ATOMIC_ACQ_REL);
    }
    /* deferred rows: once every row has had its first pass, take them one by one */
    int idle = 0;
    for (;;) {
        int32_t left = __atomic_load_n(&j->pending, __ATOMIC_ACQUIRE);
        int any = 0;
        for (int32_t i = 0; i < j->n; i++) {
            uint8_t two = 2;
            if (__atomic_load_n(&j->st[i], __ATOMIC_ACQUIRE) != 2 ||
                !__atomic_compare_exchange_n(&j->st[i], &two, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                continue;
            any = 1;
            row_fill_excl(j->m[i], j->h[i], j->out + (size_t)i * (size_t)j->words, &j->flags[i]);
            __atomic_fetch_add(&j->cold, 1, __ATOMIC_RELAXED);
        }
        if (!any && left == 0) break;
        if (!any) { /* rows still in another thread's first pass: spin a little, then yield */
            if (++idle < 64)
                cpu_relax();
            else
                tm_yield();
        }
    }
}

static MasksObject *as_masks(PyObject *o) {
    if (Py_TYPE(o) == &MasksType) return (MasksObject *)o;
    PyObject *n = PyObject_GetAttrString(o, "native");
    if (!n) {
        PyErr_Clear();
        return NULL;
    }
    MasksObject *m = Py_TYPE(n) == &MasksType ? (MasksObject *)n : NULL;
    Py_DECREF(n);
    return m; /* borrowed: o holds it */
}

/* read the rows of a batch into j (kind, masks and states held), the bitmask width (-1: no
 * native row) and the work estimate; -1 with an exception set */
static int batch_rows(BatchJob *j, PyObject *mseq, PyObject *sseq, int32_t *words, double *est) {
    for (Py_ssize_t i = 0; i < j->n; i++) {
        PyObject *mo = PySequence_Fast_GET_ITEM(mseq, i), *so = PySequence_Fast_GET_ITEM(sseq, i);
        if (mo == Py_None) {
            j->kind[i] = RK_ALL;
            continue;
        }
        MasksObject *m = as_masks(mo);
        if (!m) {
            j->kind[i] = RK_PYTHON;
            continue;
        }
        if (*words < 0) *words = m->mc.v->words;
        if (m->mc.v->words != *words) {
            PyErr_Format(PyExc_ValueError, "row %zd: masks of %d words in a batch of %d", i, (int)m->mc.v->words,
                         (int)*words);
            return -1;
        }
        if (so == Py_None) {
            j->kind[i] = RK_STOPPED;
            continue;
        }
        if (check_state(m, so) < 0) return -1;
        Py_INCREF(m);
        j->m[i] = m;
        Py_INCREF(so);
        j->h[i] = (StateObject *)so;
        /* the work estimate: is the mask cached? (a peek under the shared lock) */
        int how = tl_rlock(&m->auto_->lock);
        int32_t sid = ((StateObject *)so)->sid;
        int cached = m->mc.epoch == m->auto_->au.epoch && sid < m->mc.nreps && m->mc.reps[sid];
        tl_runlock(&m->auto_->lock, how);
        *est += cached ? FILL_WARM_NS_PER_WORD * (double)*words : FILL_COLD_NS;
    }
    return 0;
}

/* pool threads besides the caller: max_threads - 1 when forced, else one per FILL_GRAIN_NS of
 * estimated work, at most max_threads - 1 and one per row */
static int batch_extra_threads(int max_threads, int force, double est, int32_t n) {
    int extra = 0;
    if (force)
        extra = max_threads - 1;
    else if (max_threads > 1)
        extra = (int)(est / FILL_GRAIN_NS);
    if (extra > max_threads - 1) extra = max_threads - 1;
    if (extra > n - 1) extra = n - 1;
    return extra < 0 ? 0 : extra;
}

static PyObject *native_fill_batch(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *ml, *sl, *out, *flags_obj;
    int max_threads = 1, force = 0;
    if (!PyArg_ParseTuple(args, "OOOO|ii", &ml, &sl, &out, &flags_obj, &max_threads, &force)) return NULL;
    PyObject *mseq = PySequence_Fast(ml, "masks must be a sequence");
    if (!mseq) return NULL;
    PyObject *sseq = PySequence_Fast(sl, "states must be a sequence");
    if (!sseq) {
        Py_DECREF(mseq);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(mseq);
    PyObject *result = NULL;
    Py_buffer obuf = {0}, fbuf = {0};
    int have_o = 0, have_f = 0;
    BatchJob j;
    memset(&j, 0, sizeof(j));
    if (PySequence_Fast_GET_SIZE(sseq) != n) {
        PyErr_SetString(PyExc_ValueError, "masks and states differ in length");
        goto done;
    }
    if (n > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "too many rows");
        goto done;
    }
    j.n = (int32_t)n;
    j.m = tm_xcalloc((size_t)(n ? n : 1), sizeof(MasksObject *));
    j.h = tm_xcalloc((size_t)(n ? n : 1), sizeof(StateObject *));
    j.kind = tm_xcalloc((size_t)(n ? n : 1), 1);
    j.st = tm_xcalloc((size_t)(n ? n : 1), 1);
    if (PyObject_GetBuffer(flags_obj, &fbuf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
    have_f = 1;
    if (fbuf.itemsize != 1 || fbuf.len < n) {
        PyErr_Format(PyExc_ValueError, "flags must be a writable uint8 buffer of at least %zd bytes", n);
        goto done;
    }
    j.flags = fbuf.buf;
    int32_t words = -1;
    double est = 0;
    if (batch_rows(&j, mseq, sseq, &words, &est) < 0) goto done;
    if (words < 0) { /* no native row: the width comes from out */
        if (PyObject_GetBuffer(out, &obuf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        have_o = 1;
        Py_ssize_t ndim = obuf.ndim;
        words = ndim >= 2 ? (int32_t)obuf.shape[ndim - 1] : (int32_t)(n ? obuf.len / 4 / n : 0);
        PyBuffer_Release(&obuf);
        have_o = 0;
        if (words <= 0 && n) {
            PyErr_SetString(PyExc_ValueError, "cannot tell the bitmask width");
            goto done;
        }
    }
    j.words = words;
    if (n) {
        if (get_bitmask(&obuf, out, words, n, 0) < 0) goto done;
        have_o = 1;
        j.out = obuf.buf;
    }
    j.next = 0;
    j.pending = j.n;
    int extra = batch_extra_threads(max_threads, force, est, j.n), used;
    if (extra > 0 || est >= FILL_GIL_NS) {
        Py_BEGIN_ALLOW_THREADS used = pool_run(batch_work, &j, extra);
        Py_END_ALLOW_THREADS
    } else {
        used = pool_run(batch_work, &j, 0);
    }
    int32_t python = 0;
    for (Py_ssize_t i = 0; i < n; i++) python += j.kind[i] == RK_PYTHON;
    result = Py_BuildValue("(iii)", used, (int)j.cold, (int)python);
done:
    if (j.m)
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_XDECREF(j.m[i]);
            Py_XDECREF(j.h[i]);
        }
    free(j.m);
    free(j.h);
    free(j.kind);
    free(j.st);
    if (have_o) PyBuffer_Release(&obuf);
    if (have_f) PyBuffer_Release(&fbuf);
    Py_DECREF(mseq);
    Py_DECREF(sseq);
    return result;
}

static PyObject *native_pool_threads(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
#if TM_THREADS
    pthread_mutex_lock(&pool.mu);
    int n = pool.n;
    pthread_mutex_unlock(&pool.mu);
    return PyLong_FromLong(n);
#else
    return PyLong_FromLong(0);
#endif
}

#endif
