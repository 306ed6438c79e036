/* toolmask._native: the compiled hot path (automaton, token tries, masks).
 *
 * One translation unit: the tm_*.h files hold the kernel (plain C over malloc'd memory), this
 * file the CPython types that expose it. Every entry point runs with the GIL held and holds
 * the automaton's lock (tm_sync.h) while it touches the kernel's structures, because a batch
 * fill (fill_batch, below) computes masks on native threads without the GIL. See
 * docs/masks.md ("The compiled kernel", "Filling a batch").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tm_util.h"
#include "tm_sync.h"
#include "tm_ir.h"
#include "tm_analysis.h"
#include "tm_auto.h"
#include "tm_vocab.h"
#include "tm_mask.h"
#include "tm_pool.h"

static PyObject *BuildError;

/* ---- Flat: a flattened grammar and its canonical key ------------------------------------- */

typedef struct {
    PyObject_HEAD IR ir;
    int has_ir;
    PyObject *names; /* list of rule names */
    PyObject *texts; /* list of special texts */
    PyObject *key;   /* bytes */
} FlatObject;

static void Flat_dealloc(FlatObject *self) {
    if (self->has_ir) ir_free(&self->ir);
    Py_XDECREF(self->names);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->key);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Flat_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *grammar;
    static char *kwlist[] = {"grammar", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &grammar)) return NULL;
    FlatObject *self = (FlatObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->names = ir_flatten(&self->ir, grammar, &self->texts);
    if (!self->names) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_ir = 1;
    self->key = ir_serialise(&self->ir);
    if (!self->key) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *Flat_get_key(FlatObject *self, void *c) {
    (void)c;
    Py_INCREF(self->key);
    return self->key;
}

static PyObject *Flat_get_nodes(FlatObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(self->has_ir ? self->ir.nodes.n : -1);
}

static PyObject *Flat_get_texts(FlatObject *self, void *c) {
    (void)c;
    return PyList_AsTuple(self->texts);
}

static PyGetSetDef Flat_getset[] = {
    {"key", (getter)Flat_get_key, NULL, "canonical serialisation of the flat IR (bytes)", NULL},
    {"nodes", (getter)Flat_get_nodes, NULL, "distinct IR nodes", NULL},
    {"texts", (getter)Flat_get_texts, NULL,
     "the special-token texts, in the order the key's special nodes index them", NULL},
    {NULL}};

static PyTypeObject FlatType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolmask._native.Flat",
    .tp_basicsize = sizeof(FlatObject),
    .tp_dealloc = (destructor)Flat_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A grammar read into flat, content-deduplicated arrays (consumed by Automaton).",
    .tp_new = Flat_new,
    .tp_getset = Flat_getset,
};

/* ---- Automaton and State handles ---------------------------------------------------------- */

typedef struct AutoObject_ {
    PyObject_HEAD Auto au;
    PyObject *names, *texts, *text_index, *limits;
    int ok;
    int lock_ok;
    TmLock lock; /* guards au and the caches of every Masks over it (tm_sync.h) */
} AutoObject;

#define AU_LOCK(a) tl_wlock(&(a)->lock)
#define AU_UNLOCK(a) tl_wunlock(&(a)->lock)

static PyTypeObject AutoType;
static PyTypeObject StateType;

static PyObject *state_handle(AutoObject *a, int32_t sid) {
    if (sid < 0) Py_RETURN_NONE;
    St *s = &a->au.st.a[sid];
    if (s->handle) {
        Py_INCREF(s->handle);
        return s->handle;
    }
    StateObject *h = PyObject_New(StateObject, &StateType);
    if (!h) return NULL;
    Py_INCREF(a);
    h->owner = a;
    h->sid = sid;
    a->au.st.a[sid].handle = (PyObject *)h; /* the table may have moved: re-index */
    return (PyObject *)h;
}

static void State_dealloc(StateObject *self) {
    AutoObject *a = self->owner;
    if (a) {
        AU_LOCK(a);
        if (self->sid >= 0 && self->sid < a->au.st.n && a->au.st.a[self->sid].handle == (PyObject *)self)
            a->au.st.a[self->sid].handle = NULL;
        AU_UNLOCK(a);
    }
    Py_XDECREF(a);
    PyObject_Free(self);
}

static int get_sid(AutoObject *a, PyObject *o, int32_t *sid) {
    if (Py_TYPE(o) != &StateType || ((StateObject *)o)->owner != a) {
        PyErr_SetString(PyExc_TypeError, "not a state of this automaton");
        return -1;
    }
    au_maybe_compact(&a->au, NULL, 0); /* a safe point: the argument is held by its handle */
    *sid = ((StateObject *)o)->sid;
    return 0;
}

static PyObject *stacks_of(AutoObject *a, int32_t sid) {
    Auto *au = &a->au;
    St *s = &au->st.a[sid];
    PyObject *set = PyFrozenSet_New(NULL);
    if (!set) return NULL;
    const int32_t *stk = st_stacks(au, s);
    for (int32_t i = 0; i < s->nstk; i++) {
        int32_t d = au->sn.a[stk[i]].depth;
        PyObject *t = PyTuple_New(d);
        if (!t) {
            Py_DECREF(set);
            return NULL;
        }
        int32_t x = stk[i];
        for (int32_t k = d - 1; k >= 0; k--) {
            PyTuple_SET_ITEM(t, k, PyLong_FromLong(au->sn.a[x].pos));
            x = au->sn.a[x].parent;
        }
        if (PySet_Add(set, t) < 0) {
            Py_DECREF(t);
            Py_DECREF(set);
            return NULL;
        }
        Py_DECREF(t);
    }
    return set;
}

static PyObject *State_get_accepting(StateObject *self, void *c) {
    (void)c;
    AU_LOCK(self->owner);
    int r = self->owner->au.st.a[self->sid].accepting;
    AU_UNLOCK(self->owner);
    return PyBool_FromLong(r);
}

static PyObject *State_get_stacks(StateObject *self, void *c) {
    (void)c;
    AU_LOCK(self->owner);
    PyObject *r = stacks_of(self->owner, self->sid);
    AU_UNLOCK(self->owner);
    return r;
}

static PyObject *State_get_is_dead(StateObject *self, void *c) {
    (void)c;
    AU_LOCK(self->owner);
    St *s = &self->owner->au.st.a[self->sid];
    int r = !s->nstk && !s->accepting;
    AU_UNLOCK(self->owner);
    return PyBool_FromLong(r);
}

static PyObject *State_repr(StateObject *self) {
    AU_LOCK(self->owner);
    St *s = &self->owner->au.st.a[self->sid];
    int sid = (int)self->sid, nstk = (int)s->nstk, acc = s->accepting;
    AU_UNLOCK(self->owner);
    return PyUnicode_FromFormat("NativeState(#%d, stacks=%d, accepting=%s)", sid, nstk, acc ? "True" : "False");
}

static PyGetSetDef State_getset[] = {
    {"accepting", (getter)State_get_accepting, NULL, "the start rule can end here", NULL},
    {"stacks", (getter)State_get_stacks, NULL, "frozenset of stacks (tuples of positions)", NULL},
    {"is_dead", (getter)State_get_is_dead, NULL, "no parse alive and none ended", NULL},
    {NULL}};

static PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolmask._native.State",
    .tp_basicsize = sizeof(StateObject),
    .tp_dealloc = (destructor)State_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An interned automaton state (one object per state while referenced).",
    .tp_repr = (reprfunc)State_repr,
    .tp_getset = State_getset,
};

static int read_limits(PyObject *lim, TmLimits *out) {
#define RD(f)                                                 \
    {                                                         \
        PyObject *v = PyObject_GetAttrString(lim, #f);        \
        if (!v) return -1;                                    \
        out->f = PyLong_AsLongLong(v);                        \
        Py_DECREF(v);                                         \
        if (out->f == -1 && PyErr_Occurred()) return -1;      \
    }
    RD(max_rules)
    RD(max_automaton_states)
    RD(max_repeat_unroll)
    RD(max_stack_depth)
    RD(max_stacks)
    RD(max_cached_states)
#undef RD
    PyObject *v = PyObject_GetAttrString(lim, "max_compile_seconds");
    if (!v) return -1;
    out->max_compile_seconds = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) return -1;
    return 0;
}

static const char *ERR_NAMES[] = {"none", "left_recursion", "max_repeat_unroll", "max_automaton_states",
                                  "max_compile_seconds", "internal"};

static PyObject *Auto_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *flat, *limits;
    static char *kwlist[] = {"flat", "limits", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O", kwlist, &FlatType, &flat, &limits)) return NULL;
    FlatObject *f = (FlatObject *)flat;
    if (!f->has_ir) {
        PyErr_SetString(PyExc_ValueError, "this Flat grammar was already used");
        return NULL;
    }
    TmLimits lim;
    memset(&lim, 0, sizeof(lim));
    if (read_limits(limits, &lim) < 0) return NULL;
    AutoObject *self = (AutoObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->text_index = PyDict_New();
    if (!self->text_index) {
        Py_DECREF(self);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(f->texts); i++) {
        PyObject *k = PyLong_FromSsize_t(i);
        if (!k || PyDict_SetItem(self->text_index, PyList_GET_ITEM(f->texts, i), k) < 0) {
            Py_XDECREF(k);
            Py_DECREF(self);
            return NULL;
        }
        Py_DECREF(k);
    }
    memset(&self->au, 0, sizeof(self->au));
    tl_init(&self->lock);
    self->lock_ok = 1;
    self->au.ir = f->ir; /* take the arrays */
    f->has_ir = 0;
    memset(&f->ir, 0, sizeof(f->ir));
    Py_INCREF(f->names);
    self->names = f->names;
    Py_INCREF(f->texts);
    self->texts = f->texts;
    Py_INCREF(limits);
    self->limits = limits;
    self->ok = 1;
    if (au_init(&self->au, &lim) < 0) {
        int err = self->au.err;
        Py_DECREF(self);
        PyErr_SetObject(BuildError, PyUnicode_FromString(ERR_NAMES[err >= 0 && err <= E_INTERNAL ? err : E_INTERNAL]));
        return NULL;
    }
    return (PyObject *)self;
}

static void Auto_dealloc(AutoObject *self) {
    if (self->ok) au_free(&self->au);
    if (self->lock_ok) tl_destroy(&self->lock);
    Py_XDECREF(self->names);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->text_index);
    Py_XDECREF(self->limits);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Auto_get_initial(AutoObject *self, void *c) {
    (void)c;
    AU_LOCK(self);
    PyObject *r = state_handle(self, self->au.initial);
    AU_UNLOCK(self);
    return r;
}

static PyObject *Auto_get_dead(AutoObject *self, void *c) {
    (void)c;
    AU_LOCK(self);
    PyObject *r = state_handle(self, self->au.dead);
    AU_UNLOCK(self);
    return r;
}

static PyObject *Auto_get_n_positions(AutoObject *self, void *c) {
    (void)c;
    AU_LOCK(self);
    long n = self->au.pos.n;
    AU_UNLOCK(self);
    return PyLong_FromLong(n);
}

static PyObject *Auto_get_entry_names(AutoObject *self, void *c) {
    (void)c;
    AU_LOCK(self);
    int32_t n = self->au.entry_rule.n;
    int32_t *rules = tm_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    memcpy(rules, self->au.entry_rule.a, (size_t)n * sizeof(int32_t));
    AU_UNLOCK(self);
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t && i < n; i++) {
        PyObject *nm = PyList_GET_ITEM(self->names, rules[i]);
        Py_INCREF(nm);
        PyTuple_SET_ITEM(t, i, nm);
    }
    free(rules);
    return t;
}

static PyObject *Auto_get_limits(AutoObject *self, void *c) {
    (void)c;
    Py_INCREF(self->limits);
    return self->limits;
}

static PyObject *Auto_get_texts(AutoObject *self, void *c) {
    (void)c;
    return PyList_AsTuple(self->texts);
}

static PyObject *Auto_get_nfa_states(AutoObject *self, void *c) {
    (void)c;
    AU_LOCK(self);
    long n = self->au.ns.n;
    AU_UNLOCK(self);
    return PyLong_FromLong(n);
}

static PyObject *m256_to_int(M256 m) {
    unsigned char buf[32];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 8; k++) buf[i * 8 + k] = (unsigned char)(m.w[i] >> (8 * k));
#if PY_VERSION_HEX >= 0x030D0000
    return PyLong_FromUnsignedNativeBytes(buf, 32, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
#else
    return _PyLong_FromByteArray(buf, 32, 1, 0);
#endif
}

static PyObject *Auto_advance(AutoObject *self, PyObject *args) {
    PyObject *s;
    int b;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "Oi", &s, &b)) return NULL;
    if (b < 0 || b > 255) {
        PyErr_SetString(PyExc_ValueError, "byte out of range");
        return NULL;
    }
    AU_LOCK(self);
    PyObject *r = get_sid(self, s, &sid) < 0 ? NULL : state_handle(self, au_advance(&self->au, sid, b));
    AU_UNLOCK(self);
    return r;
}

static PyObject *Auto_advance_bytes(AutoObject *self, PyObject *args) {
    PyObject *s;
    Py_buffer buf;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "Oy*", &s, &buf)) return NULL;
    AU_LOCK(self);
    PyObject *r = NULL;
    if (get_sid(self, s, &sid) == 0) {
        const uint8_t *p = buf.buf;
        for (Py_ssize_t i = 0; i < buf.len && sid >= 0; i++) {
            au_maybe_compact(&self->au, &sid, 1);
            sid = au_advance(&self->au, sid, p[i]);
        }
        r = state_handle(self, sid);
    }
    AU_UNLOCK(self);
    PyBuffer_Release(&buf);
    return r;
}

static PyObject *Auto_advance_special(AutoObject *self, PyObject *args) {
    PyObject *s, *text;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "OU", &s, &text)) return NULL;
    PyObject *idx = PyDict_GetItemWithError(self->text_index, text);
    if (!idx && PyErr_Occurred()) return NULL;
    int32_t ti = idx ? (int32_t)PyLong_AsLong(idx) : -1;
    AU_LOCK(self);
    PyObject *r = NULL;
    if (get_sid(self, s, &sid) == 0) {
        if (ti < 0) {
            Py_INCREF(Py_None);
            r = Py_None;
        } else {
            r = state_handle(self, au_advance_special(&self->au, sid, ti));
        }
    }
    AU_UNLOCK(self);
    return r;
}

static PyObject *Auto_is_accepting(AutoObject *self, PyObject *s) {
    int32_t sid;
    AU_LOCK(self);
    int r = get_sid(self, s, &sid) < 0 ? -1 : self->au.st.a[sid].accepting;
    AU_UNLOCK(self);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Auto_allowed_bytes(AutoObject *self, PyObject *s) {
    int32_t sid;
    AU_LOCK(self);
    if (get_sid(self, s, &sid) < 0) {
        AU_UNLOCK(self);
        return NULL;
    }
    M256 m = au_allowed_bytes(&self->au, sid);
    AU_UNLOCK(self);
    return m256_to_int(m);
}

static PyObject *Auto_allowed_specials(AutoObject *self, PyObject *s) {
    int32_t sid;
    IVec sp = {0};
    AU_LOCK(self);
    if (get_sid(self, s, &sid) < 0) {
        AU_UNLOCK(self);
        return NULL;
    }
    au_allowed_specials(&self->au, sid, &sp);
    AU_UNLOCK(self);
    PyObject *out = PyFrozenSet_New(NULL);
    for (int32_t i = 0; out && i < sp.n; i++)
        if (PySet_Add(out, PyList_GET_ITEM(self->texts, sp.a[i])) < 0) Py_CLEAR(out);
    VFREE(sp);
    return out;
}

static PyObject *Auto_is_finished(AutoObject *self, PyObject *s) {
    int32_t sid;
    AU_LOCK(self);
    int r = get_sid(self, s, &sid) < 0 ? -1 : au_is_finished(&self->au, sid);
    AU_UNLOCK(self);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Auto_successors(AutoObject *self, PyObject *args) {
    PyObject *s, *mask;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "OO", &s, &mask)) return NULL;
    M256 m;
    if (py_to_m256(mask, &m) < 0) return NULL;
    AU_LOCK(self);
    if (get_sid(self, s, &sid) < 0) {
        AU_UNLOCK(self);
        return NULL;
    }
    SuccVec succ = {0};
    au_successors(&self->au, sid, m, &succ);
    PyObject *out = PyList_New(succ.n);
    for (int32_t i = 0; out && i < succ.n; i++) {
        PyObject *h = state_handle(self, succ.a[i].next);
        PyObject *sub = m256_to_int(succ.a[i].m);
        if (!h || !sub) {
            Py_XDECREF(h);
            Py_XDECREF(sub);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, PyTuple_Pack(2, sub, h));
        Py_DECREF(h);
        Py_DECREF(sub);
    }
    AU_UNLOCK(self);
    VFREE(succ);
    return out;
}

static PyObject *Auto_cached_states(AutoObject *self, PyObject *unused) {
    (void)unused;
    AU_LOCK(self);
    long n = self->au.st.n;
    AU_UNLOCK(self);
    return PyLong_FromLong(n);
}

static PyObject *Auto_memory_bytes(AutoObject *self, PyObject *unused) {
    (void)unused;
    AU_LOCK(self);
    long long n = au_bytes(&self->au);
    AU_UNLOCK(self);
    return PyLong_FromLongLong(n);
}

static PyObject *Auto_stacks(AutoObject *self, PyObject *s) {
    int32_t sid;
    AU_LOCK(self);
    PyObject *r = get_sid(self, s, &sid) < 0 ? NULL : stacks_of(self, sid);
    AU_UNLOCK(self);
    return r;
}

static PyMethodDef Auto_methods[] = {
    {"advance", (PyCFunction)Auto_advance, METH_VARARGS, "advance(state, byte) -> state | None"},
    {"advance_bytes", (PyCFunction)Auto_advance_bytes, METH_VARARGS, "advance_bytes(state, data) -> state | None"},
    {"advance_special", (PyCFunction)Auto_advance_special, METH_VARARGS,
     "advance_special(state, text) -> state | None"},
    {"is_accepting", (PyCFunction)Auto_is_accepting, METH_O, "the start rule can end here"},
    {"allowed_bytes", (PyCFunction)Auto_allowed_bytes, METH_O, "256-bit mask of the bytes advance takes"},
    {"allowed_specials", (PyCFunction)Auto_allowed_specials, METH_O, "special texts accepted here"},
    {"is_finished", (PyCFunction)Auto_is_finished, METH_O, "accepting and nothing can follow"},
    {"successors", (PyCFunction)Auto_successors, METH_VARARGS, "[(byte subset, next state or None)]"},
    {"cached_states", (PyCFunction)Auto_cached_states, METH_NOARGS, "interned states"},
    {"memory_bytes", (PyCFunction)Auto_memory_bytes, METH_NOARGS, "bytes held by the automaton"},
    {"stacks", (PyCFunction)Auto_stacks, METH_O, "the stacks of a state"},
    {NULL}};

static PyGetSetDef Auto_getset[] = {
    {"initial", (getter)Auto_get_initial, NULL, "the initial state", NULL},
    {"dead", (getter)Auto_get_dead, NULL, "the dead state", NULL},
    {"n_positions", (getter)Auto_get_n_positions, NULL, "DFA positions created so far", NULL},
    {"entry_names", (getter)Auto_get_entry_names, NULL, "rules compiled as call targets so far", NULL},
    {"limits", (getter)Auto_get_limits, NULL, "the Limits it was built under", NULL},
    {"nfa_states", (getter)Auto_get_nfa_states, NULL, "NFA states built so far", NULL},
    {"texts", (getter)Auto_get_texts, NULL, "the special-token texts the grammar names", NULL},
    {NULL}};

static PyTypeObject AutoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolmask._native.Automaton",
    .tp_basicsize = sizeof(AutoObject),
    .tp_dealloc = (destructor)Auto_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The byte-level pushdown automaton of a grammar (compiled kernel).",
    .tp_new = Auto_new,
    .tp_methods = Auto_methods,
    .tp_getset = Auto_getset,
};

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
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "nodes", (long long)c.nodes, "bulk_nodes",
                         (long long)c.bulk_nodes, "hits", (long long)c.hits, "misses", (long long)c.misses,
                         "position_misses", (long long)c.local_misses, "exact_walks", (long long)c.exact_walks,
                         "positions", (long long)locals, "states", (long long)reps, "bytes", (long long)c.bytes);
}

static PyObject *Masks_memory_bytes(MasksObject *self, PyObject *unused) {
    (void)unused;
    AU_LOCK(self->auto_);
    long long n = self->mc.bytes + (int64_t)self->mc.npl * (int64_t)sizeof(PosLocal) + (int64_t)self->mc.nreps * 8 +
                  imap_bytes(&self->mc.step);
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
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *mo = PySequence_Fast_GET_ITEM(mseq, i), *so = PySequence_Fast_GET_ITEM(sseq, i);
        if (mo == Py_None) {
            j.kind[i] = RK_ALL;
            continue;
        }
        MasksObject *m = as_masks(mo);
        if (!m) {
            j.kind[i] = RK_PYTHON;
            continue;
        }
        if (words < 0) words = m->mc.v->words;
        if (m->mc.v->words != words) {
            PyErr_Format(PyExc_ValueError, "row %zd: masks of %d words in a batch of %d", i, (int)m->mc.v->words,
                         (int)words);
            goto done;
        }
        if (so == Py_None) {
            j.kind[i] = RK_STOPPED;
            continue;
        }
        if (check_state(m, so) < 0) goto done;
        Py_INCREF(m);
        j.m[i] = m;
        Py_INCREF(so);
        j.h[i] = (StateObject *)so;
        /* the work estimate: is the mask cached? (a peek under the shared lock) */
        int how = tl_rlock(&m->auto_->lock);
        int32_t sid = ((StateObject *)so)->sid;
        int cached = m->mc.epoch == m->auto_->au.epoch && sid < m->mc.nreps && m->mc.reps[sid];
        tl_runlock(&m->auto_->lock, how);
        est += cached ? FILL_WARM_NS_PER_WORD * (double)words : FILL_COLD_NS;
    }
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
    int extra = 0;
    if (force)
        extra = max_threads - 1;
    else if (max_threads > 1)
        extra = (int)(est / FILL_GRAIN_NS);
    if (extra > max_threads - 1) extra = max_threads - 1;
    if (extra > j.n - 1) extra = j.n - 1;
    if (extra < 0) extra = 0;
    int used;
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

static PyMethodDef module_methods[] = {
    {"fill_batch", native_fill_batch, METH_VARARGS,
     "fill_batch(masks, states, out, flags, max_threads=1, force=0) -> (threads, cold rows, python rows)"},
    {"pool_threads", native_pool_threads, METH_NOARGS, "native pool threads started so far"},
    {NULL}};

/* ---- module ------------------------------------------------------------------------------- */

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "toolmask._native",
    "The compiled hot path of toolmask: automaton, token tries and masks (see docs/masks.md).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&FlatType) < 0 || PyType_Ready(&AutoType) < 0 || PyType_Ready(&StateType) < 0 ||
        PyType_Ready(&VocabType) < 0 || PyType_Ready(&MasksType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    pool_init();
    BuildError = PyErr_NewException("toolmask._native.BuildError", PyExc_Exception, NULL);
    if (!BuildError) return NULL;
    Py_INCREF(BuildError);
    PyModule_AddObject(m, "BuildError", BuildError);
#define ADD(name, t)                                     \
    Py_INCREF(&t);                                       \
    if (PyModule_AddObject(m, name, (PyObject *)&t) < 0) \
        return NULL;
    ADD("Flat", FlatType)
    ADD("Automaton", AutoType)
    ADD("State", StateType)
    ADD("Vocab", VocabType)
    ADD("Masks", MasksType)
#undef ADD
    if (PyModule_AddIntConstant(m, "ROW_ACCEPTING", ROW_ACCEPTING) < 0 ||
        PyModule_AddIntConstant(m, "ROW_FINISHED", ROW_FINISHED) < 0 ||
        PyModule_AddIntConstant(m, "ROW_PYTHON", ROW_PYTHON) < 0 ||
        PyModule_AddIntConstant(m, "THREADS", TM_THREADS) < 0)
        return NULL;
    return m;
}
