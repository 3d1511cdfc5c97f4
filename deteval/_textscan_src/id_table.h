/* deteval._textscan: the image id table (raw id bytes -> position) and the one byte-string hash.
 *
 * Reference (Python): deteval.io.voc._id_table (a dict of ids).
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_ID_TABLE_H
#define DETEVAL_TEXTSCAN_ID_TABLE_H

/* ---- image id table: raw id token bytes -> position (the last one for a repeat) ---- */

#define ID_TABLE_CAPSULE "deteval._textscan.id_table"

typedef struct {
    PyObject *keys;      /* tuple of bytes, kept alive for the pointers below */
    const char **ptr;
    Py_ssize_t *len;
    int64_t *slot;       /* position, or -1 for an empty slot */
    size_t mask;
} id_table_t;

#define id_hash(s, n) fnv1a((const unsigned char *)(s), (size_t)(n))

ALWAYS_INLINE int64_t
id_lookup(const id_table_t *t, const unsigned char *s, Py_ssize_t n)
{
    size_t j = (size_t)id_hash(s, n) & t->mask;
    for (;;) {
        int64_t pos = t->slot[j];
        if (pos < 0)
            return -1;
        if (t->len[pos] == n && memcmp(t->ptr[pos], s, (size_t)n) == 0)
            return pos;
        j = (j + 1) & t->mask;
    }
}

static void
id_table_free(PyObject *capsule)
{
    id_table_t *t = (id_table_t *)PyCapsule_GetPointer(capsule, ID_TABLE_CAPSULE);
    if (t == NULL)
        return;
    Py_XDECREF(t->keys);
    PyMem_Free(t->ptr);
    PyMem_Free(t->len);
    PyMem_Free(t->slot);
    PyMem_Free(t);
}

/* id_table(keys) -> capsule: keys is a sequence of bytes (the encoded image ids in
 * position order); a token equal to keys[i] maps to i (the last i for a repeat). */
static PyObject *
id_table(PyObject *self, PyObject *arg)
{
    id_table_t *t;
    PyObject *capsule;
    Py_ssize_t n, i;
    size_t cap = 16;
    (void)self;
    t = (id_table_t *)PyMem_Calloc(1, sizeof(*t));
    if (t == NULL)
        return PyErr_NoMemory();
    t->keys = PySequence_Tuple(arg);
    if (t->keys == NULL) {
        PyMem_Free(t);
        return NULL;
    }
    n = PyTuple_GET_SIZE(t->keys);
    while (cap < 2 * (size_t)n + 2)
        cap *= 2;
    t->ptr = (const char **)PyMem_Malloc(sizeof(*t->ptr) * (size_t)(n ? n : 1));
    t->len = (Py_ssize_t *)PyMem_Malloc(sizeof(*t->len) * (size_t)(n ? n : 1));
    t->slot = (int64_t *)PyMem_Malloc(sizeof(*t->slot) * cap);
    t->mask = cap - 1;
    capsule = PyCapsule_New(t, ID_TABLE_CAPSULE, id_table_free);
    if (capsule == NULL) {
        Py_DECREF(t->keys);
        PyMem_Free(t->ptr);
        PyMem_Free(t->len);
        PyMem_Free(t->slot);
        PyMem_Free(t);
        return NULL;
    }
    if (t->ptr == NULL || t->len == NULL || t->slot == NULL) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    memset(t->slot, 0xff, sizeof(*t->slot) * cap); /* all -1 */
    for (i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(t->keys, i);
        size_t j;
        if (!PyBytes_Check(key)) {
            PyErr_Format(PyExc_TypeError, "id_table: key %zd is not bytes", i);
            Py_DECREF(capsule);
            return NULL;
        }
        t->ptr[i] = PyBytes_AS_STRING(key);
        t->len[i] = PyBytes_GET_SIZE(key);
        j = (size_t)id_hash((const unsigned char *)t->ptr[i], t->len[i]) & t->mask;
        for (;;) {
            int64_t pos = t->slot[j];
            if (pos < 0 || (t->len[pos] == t->len[i] &&
                            memcmp(t->ptr[pos], t->ptr[i], (size_t)t->len[i]) == 0)) {
                t->slot[j] = i; /* new, or a repeat: the later position wins */
                break;
            }
            j = (j + 1) & t->mask;
        }
    }
    return capsule;
}

#endif /* DETEVAL_TEXTSCAN_ID_TABLE_H */
