/* toolmask._native: the compiled hot path (automaton, token tries, masks).
 *
 * One translation unit: the tm_*.h files hold the kernel (plain C over malloc'd memory), this
 * file the CPython types that expose it. Every entry point runs with the GIL held and creates
 * Python objects only before or after touching the kernel's structures, so concurrent calls
 * from several threads are serialised by the GIL and never see a half-built structure.
 * See docs/masks.md ("The compiled kernel").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tm_util.h"
#include "tm_ir.h"
#include "tm_analysis.h"
#include "tm_auto.h"
#include "tm_vocab.h"
#include "tm_mask.h"

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

static PyGetSetDef Flat_getset[] = {
    {"key", (getter)Flat_get_key, NULL, "canonical serialisation of the flat IR (bytes)", NULL},
    {"nodes", (getter)Flat_get_nodes, NULL, "distinct IR nodes", NULL},
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
} AutoObject;

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
    if (a && self->sid >= 0 && self->sid < a->au.st.n && a->au.st.a[self->sid].handle == (PyObject *)self)
        a->au.st.a[self->sid].handle = NULL;
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
    return PyBool_FromLong(self->owner->au.st.a[self->sid].accepting);
}

static PyObject *State_get_stacks(StateObject *self, void *c) {
    (void)c;
    return stacks_of(self->owner, self->sid);
}

static PyObject *State_get_is_dead(StateObject *self, void *c) {
    (void)c;
    St *s = &self->owner->au.st.a[self->sid];
    return PyBool_FromLong(!s->nstk && !s->accepting);
}

static PyObject *State_repr(StateObject *self) {
    St *s = &self->owner->au.st.a[self->sid];
    return PyUnicode_FromFormat("NativeState(#%d, stacks=%d, accepting=%s)", (int)self->sid, (int)s->nstk,
                                s->accepting ? "True" : "False");
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
    Py_XDECREF(self->names);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->text_index);
    Py_XDECREF(self->limits);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Auto_get_initial(AutoObject *self, void *c) {
    (void)c;
    return state_handle(self, self->au.initial);
}

static PyObject *Auto_get_dead(AutoObject *self, void *c) {
    (void)c;
    return state_handle(self, self->au.dead);
}

static PyObject *Auto_get_n_positions(AutoObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(self->au.pos.n);
}

static PyObject *Auto_get_entry_names(AutoObject *self, void *c) {
    (void)c;
    PyObject *t = PyTuple_New(self->au.entry_rule.n);
    if (!t) return NULL;
    for (int32_t i = 0; i < self->au.entry_rule.n; i++) {
        PyObject *nm = PyList_GET_ITEM(self->names, self->au.entry_rule.a[i]);
        Py_INCREF(nm);
        PyTuple_SET_ITEM(t, i, nm);
    }
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
    return PyLong_FromLong(self->au.ns.n);
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
    if (get_sid(self, s, &sid) < 0) return NULL;
    if (b < 0 || b > 255) {
        PyErr_SetString(PyExc_ValueError, "byte out of range");
        return NULL;
    }
    return state_handle(self, au_advance(&self->au, sid, b));
}

static PyObject *Auto_advance_bytes(AutoObject *self, PyObject *args) {
    PyObject *s;
    Py_buffer buf;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "Oy*", &s, &buf)) return NULL;
    if (get_sid(self, s, &sid) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *p = buf.buf;
    for (Py_ssize_t i = 0; i < buf.len && sid >= 0; i++) {
        au_maybe_compact(&self->au, &sid, 1);
        sid = au_advance(&self->au, sid, p[i]);
    }
    PyBuffer_Release(&buf);
    return state_handle(self, sid);
}

static PyObject *Auto_advance_special(AutoObject *self, PyObject *args) {
    PyObject *s, *text;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "OU", &s, &text)) return NULL;
    if (get_sid(self, s, &sid) < 0) return NULL;
    PyObject *idx = PyDict_GetItemWithError(self->text_index, text);
    if (!idx) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    return state_handle(self, au_advance_special(&self->au, sid, (int32_t)PyLong_AsLong(idx)));
}

static PyObject *Auto_is_accepting(AutoObject *self, PyObject *s) {
    int32_t sid;
    if (get_sid(self, s, &sid) < 0) return NULL;
    return PyBool_FromLong(self->au.st.a[sid].accepting);
}

static PyObject *Auto_allowed_bytes(AutoObject *self, PyObject *s) {
    int32_t sid;
    if (get_sid(self, s, &sid) < 0) return NULL;
    return m256_to_int(au_allowed_bytes(&self->au, sid));
}

static PyObject *Auto_allowed_specials(AutoObject *self, PyObject *s) {
    int32_t sid;
    if (get_sid(self, s, &sid) < 0) return NULL;
    IVec sp = {0};
    au_allowed_specials(&self->au, sid, &sp);
    PyObject *out = PyFrozenSet_New(NULL);
    for (int32_t i = 0; out && i < sp.n; i++)
        if (PySet_Add(out, PyList_GET_ITEM(self->texts, sp.a[i])) < 0) Py_CLEAR(out);
    VFREE(sp);
    return out;
}

static PyObject *Auto_is_finished(AutoObject *self, PyObject *s) {
    int32_t sid;
    if (get_sid(self, s, &sid) < 0) return NULL;
    return PyBool_FromLong(au_is_finished(&self->au, sid));
}

static PyObject *Auto_successors(AutoObject *self, PyObject *args) {
    PyObject *s, *mask;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "OO", &s, &mask)) return NULL;
    if (get_sid(self, s, &sid) < 0) return NULL;
    M256 m;
    if (py_to_m256(mask, &m) < 0) return NULL;
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
    VFREE(succ);
    return out;
}

static PyObject *Auto_cached_states(AutoObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(self->au.st.n);
}

static PyObject *Auto_memory_bytes(AutoObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(au_bytes(&self->au));
}

static PyObject *Auto_stacks(AutoObject *self, PyObject *s) {
    int32_t sid;
    if (get_sid(self, s, &sid) < 0) return NULL;
    return stacks_of(self, sid);
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
    return PyLong_FromLongLong(vocab_bytes(&self->v));
}

static PyObject *Vocab_info(VocabObject *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:L}", "size", self->v.size, "trie_nodes", self->v.trie.n,
                         "partial_nodes", self->v.partial.n, "max_tail_chars", self->v.max_tail_chars, "bases",
                         self->v.bases.n, "exit_tables", self->v.exits.n, "table_bytes",
                         (long long)self->v.table_bytes);
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
    mc->epoch = mc->au->epoch;
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

static PyObject *Masks_fill(MasksObject *self, PyObject *args) {
    PyObject *s, *out;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "OO", &s, &out)) return NULL;
    if (get_sid(self->auto_, s, &sid) < 0) return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(out, &buf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    int32_t words = self->mc.v->words;
    if (buf.itemsize != 4 || buf.len != (Py_ssize_t)words * 4 ||
        (buf.format && strcmp(buf.format, "i") != 0 && strcmp(buf.format, "=i") != 0 &&
         strcmp(buf.format, "<i") != 0 && strcmp(buf.format, "I") != 0 && strcmp(buf.format, "l") != 0)) {
        PyBuffer_Release(&buf);
        PyErr_Format(PyExc_ValueError, "bitmask must be %d contiguous int32 words", (int)words);
        return NULL;
    }
    mc_fill(&self->mc, sid, (uint32_t *)buf.buf);
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

static PyObject *Masks_stats(MasksObject *self, PyObject *unused) {
    (void)unused;
    MaskCache *mc = &self->mc;
    int64_t locals = 0, reps = 0;
    for (int32_t i = 0; i < mc->npl; i++) locals += mc->pl[i].ok;
    for (int32_t i = 0; i < mc->nreps; i++) reps += mc->reps[i] != NULL;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "nodes", (long long)mc->nodes, "bulk_nodes",
                         (long long)mc->bulk_nodes, "hits", (long long)mc->hits, "misses",
                         (long long)mc->misses, "position_misses", (long long)mc->local_misses, "exact_walks",
                         (long long)mc->exact_walks, "positions", (long long)locals, "states", (long long)reps,
                         "bytes", (long long)mc->bytes);
}

static PyObject *Masks_memory_bytes(MasksObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(self->mc.bytes + (int64_t)self->mc.npl * (int64_t)sizeof(PosLocal) +
                               (int64_t)self->mc.nreps * 8 + imap_bytes(&self->mc.step));
}

static PyObject *Masks_clear(MasksObject *self, PyObject *unused) {
    (void)unused;
    mc_clear_all(&self->mc);
    Py_RETURN_NONE;
}

static PyObject *Masks_advance_token(MasksObject *self, PyObject *args) {
    PyObject *s;
    int tid;
    int32_t sid;
    if (!PyArg_ParseTuple(args, "Oi", &s, &tid)) return NULL;
    if (get_sid(self->auto_, s, &sid) < 0) return NULL;
    Vocab *v = self->mc.v;
    if (tid < 0 || tid >= v->size || !v->text[tid] || !v->tok_len[tid]) Py_RETURN_NONE;
    const uint8_t *p = v->flat + v->tok_off[tid];
    for (int32_t i = 0; i < v->tok_len[tid] && sid >= 0; i++) {
        au_maybe_compact(&self->auto_->au, &sid, 1);
        sid = au_advance(&self->auto_->au, sid, p[i]);
    }
    return state_handle(self->auto_, sid);
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

/* ---- module ------------------------------------------------------------------------------- */

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "toolmask._native",
    "The compiled hot path of toolmask: automaton, token tries and masks (see docs/masks.md).", -1, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&FlatType) < 0 || PyType_Ready(&AutoType) < 0 || PyType_Ready(&StateType) < 0 ||
        PyType_Ready(&VocabType) < 0 || PyType_Ready(&MasksType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
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
    return m;
}
