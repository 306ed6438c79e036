/* toolmask._native: the Automaton and State types (CPython objects over tm_runtime.h).
 *
 * An Automaton object owns an Auto and the reader-writer lock that guards it (tm_sync.h);
 * State objects are interned handles of its states, one per live state, so `is` compares
 * states. Part of native.c's translation unit.
 */
#ifndef TM_PY_AUTO_H
#define TM_PY_AUTO_H

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

#endif
