/* toolmask._native: the compiled hot path (automaton, token tries, masks).
 *
 * One translation unit: the tm_*.h files hold the kernel (plain C over malloc'd memory), this
 * file and the py_*.h files it includes the CPython types that expose it (Flat here, Automaton
 * and State in py_auto.h, Vocab, Masks and fill_batch in py_masks.h). Every entry point runs with the GIL held and holds
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
#include "tm_groups.h"
#include "tm_auto.h"
#include "tm_nfa.h"
#include "tm_dfa.h"
#include "tm_runtime.h"
#include "tm_trie.h"
#include "tm_vocab.h"
#include "tm_tables.h"
#include "tm_mask.h"
#include "tm_compose.h"
#include "tm_pool.h"
#include "tm_digest.h"

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

#include "py_auto.h"
#include "py_masks.h"


/* digest(data, start, end, key, level=2) -> 16 bytes: tm_digest of data[start:end] under key
 * (192 bytes); level: the widest path taken, 0 scalar, 1 AVX2, 2 AVX-512 (the same digest:
 * tests compare them) */
static PyObject *native_digest(PyObject *self, PyObject *args) {
    Py_buffer data, key;
    Py_ssize_t start, end;
    int level = 2;
    if (!PyArg_ParseTuple(args, "y*nny*|i", &data, &start, &end, &key, &level)) return NULL;
    PyObject *res = NULL;
    if (key.len != DG_KEYS * 8) {
        PyErr_Format(PyExc_ValueError, "digest key: expected %d bytes, got %zd", DG_KEYS * 8, key.len);
    } else if (start < 0 || end < start || end > data.len) {
        PyErr_Format(PyExc_ValueError, "digest range [%zd, %zd) outside 0..%zd", start, end, data.len);
    } else {
        uint64_t k[DG_KEYS], out[2];
        memcpy(k, key.buf, sizeof k);
        const uint8_t *p = (const uint8_t *)data.buf + start;
        size_t n = (size_t)(end - start);
        if (n >= (1u << 16)) {
            Py_BEGIN_ALLOW_THREADS tm_digest(p, n, k, level, out);
            Py_END_ALLOW_THREADS
        } else {
            tm_digest(p, n, k, level, out);
        }
        res = PyBytes_FromStringAndSize((const char *)out, sizeof out);
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&key);
    return res;
}

static PyMethodDef module_methods[] = {
    {"fill_batch", native_fill_batch, METH_VARARGS,
     "fill_batch(masks, states, out, flags, max_threads=1, force=0) -> (threads, cold rows, python rows)"},
    {"pool_threads", native_pool_threads, METH_NOARGS, "native pool threads started so far"},
    {"digest", native_digest, METH_VARARGS,
     "digest(data, start, end, key, level=2) -> 16 bytes: keyed digest of data[start:end]"},
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
