/* deteval._textscan: one VOC detection file's lines `<image_id> <score> <x1> <y1> <x2> <y2>` (scan_detections).
 *
 * Reference (Python): deteval.io.voc._parse_detection_bytes.
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_DETECTIONS_H
#define DETEVAL_TEXTSCAN_DETECTIONS_H

typedef struct {
    /* output rows, written straight into the result bytearrays (allocated for the most
     * rows the input can hold: a row takes >= 12 bytes with its line end) */
    double *values;     /* 5 per row (or, when box is set, score[r] and box[4r..4r+3]) */
    double *score, *box;
    int64_t *id_start, *id_len, *line;
    const id_table_t *table; /* optional: image_idx[r] = position of the id, or -1 */
    int64_t *image_idx;
    Py_ssize_t rows;
    int64_t *slow;      /* pairs (value index, token start), token length in slow_len */
    int64_t *slow_len;
    Py_ssize_t nslow, slow_cap;
    /* error */
    int err_kind;       /* 0 none, 1 fields, 2 number, 3 binary, -1 out of memory */
    int64_t err_line, err_start, err_len;
} scan_t;

enum { ERR_NONE = 0, ERR_FIELDS = 1, ERR_NUMBER = 2, ERR_BINARY = 3, ERR_NOMEM = -1 };

static int
push_slow(scan_t *st, int64_t index, int64_t start, int64_t len)
{
    if (st->nslow == st->slow_cap) {
        Py_ssize_t cap = st->slow_cap ? st->slow_cap * 2 : 256;
        int64_t *a = (int64_t *)PyMem_RawRealloc(st->slow, (size_t)cap * 2 * sizeof(int64_t));
        if (a == NULL)
            return -1;
        st->slow = a;
        a = (int64_t *)PyMem_RawRealloc(st->slow_len, (size_t)cap * sizeof(int64_t));
        if (a == NULL)
            return -1;
        st->slow_len = a;
        st->slow_cap = cap;
    }
    st->slow[2 * st->nslow] = index;
    st->slow[2 * st->nslow + 1] = start;
    st->slow_len[st->nslow] = len;
    st->nslow++;
    return 0;
}

/* byte classes, as bytes.split() / bytes.splitlines() see them */
enum { C_TOKEN = 0, C_BLANK = 1, C_EOL = 2, C_NUL = 3 };
static unsigned char CLS[256];

static void
init_classes(void)
{
    CLS[' '] = CLS['\t'] = CLS['\v'] = CLS['\f'] = C_BLANK;
    CLS['\n'] = CLS['\r'] = C_EOL;
    CLS[0] = C_NUL;
}

#define SKIP_BLANKS() while (IN(p, end) && CLS[*p] == C_BLANK) p++
#define SKIP_TOKEN() while (IN(p, end) && CLS[*p] == C_TOKEN) p++

/* The GIL-free part: tokenize, count fields, fast-parse numbers.
 * sentinel: buf[n] is readable and NUL. */
/* sentinel: buf[n] is readable and NUL; padded: also 16 readable bytes from buf[n] */
ALWAYS_INLINE void
scan_impl(const char *buf, Py_ssize_t n, scan_t *st, const int sentinel, const int padded)
{
    const unsigned char *base = (const unsigned char *)buf;
    const unsigned char *p = base, *end = base + n, *line_start, *t, *q;
    int64_t lineno = 1;
    Py_ssize_t r;
    int k;
    while (p < end) {
        line_start = p;
        SKIP_BLANKS();
        if (p < end && CLS[*p] != C_EOL) {
            /* a non-blank line: the id, then five numbers */
            t = p;
            SKIP_TOKEN();
            if (p < end && *p == 0)
                goto binary;
            r = st->rows;
            st->id_start[r] = t - base;
            st->id_len[r] = p - t;
            if (st->table != NULL)
                st->image_idx[r] = id_lookup(st->table, t, p - t);
            st->line[r] = lineno;
            for (k = 0; k < 5; k++) {
                double *slot = st->box == NULL ? &st->values[5 * r + k]
                               : k ? &st->box[4 * r + k - 1] : &st->score[r];
                SKIP_BLANKS();
                if (p >= end || CLS[*p] == C_EOL)
                    goto fields;
                t = p;
#if DETEVAL_SWAR
                q = padded ? swar_number(p, slot) : NULL;
                if (q == NULL)
                    q = fast_number(p, end, slot, sentinel);
#else
                q = fast_number(p, end, slot, sentinel);
#endif
                if (q != NULL && (q == end || CLS[*q] == C_BLANK || CLS[*q] == C_EOL)) {
                    p = q;
                    continue;
                }
                SKIP_TOKEN();
                if (p < end && *p == 0)
                    goto binary;
                *slot = 0.0;
                if (push_slow(st, 5 * r + k, t - base, p - t) < 0)
                    goto nomem;
            }
            SKIP_BLANKS();
            if (p < end && CLS[*p] != C_EOL)
                goto fields;
            st->rows = r + 1;
        }
        /* line end: "\n", "\r" or "\r\n" (as bytes.splitlines) */
        if (p < end) {
            if (*p == '\r' && p + 1 < end && p[1] == '\n')
                p += 2;
            else
                p++;
            lineno++;
        }
    }
    return;
fields:
    /* the slow tokens of this line do not count; a NUL in the line wins */
    while (st->nslow > 0 && st->slow[2 * (st->nslow - 1)] >= 5 * (int64_t)st->rows)
        st->nslow--;
    for (p = line_start; p < end && CLS[*p] != C_EOL; p++)
        if (*p == 0)
            goto binary;
    st->err_kind = ERR_FIELDS;
    st->err_line = lineno;
    st->err_start = line_start - base;
    st->err_len = p - line_start;
    return;
binary:
    while (st->nslow > 0 && st->slow[2 * (st->nslow - 1)] >= 5 * (int64_t)st->rows)
        st->nslow--;
    st->err_kind = ERR_BINARY;
    st->err_line = lineno;
    st->err_start = p - base;
    st->err_len = 1;
    return;
nomem:
    st->err_kind = ERR_NOMEM;
}

static void
scan_sentinel(const char *buf, Py_ssize_t n, scan_t *st)
{
    scan_impl(buf, n, st, 1, 0);
}

static void
scan_padded(const char *buf, Py_ssize_t n, scan_t *st)
{
    scan_impl(buf, n, st, 1, 1);
}

static void
scan_checked(const char *buf, Py_ssize_t n, scan_t *st)
{
    scan_impl(buf, n, st, 0, 0);
}

static void
scan(const char *buf, Py_ssize_t n, scan_t *st, int sentinel)
{
    if (sentinel)
        scan_sentinel(buf, n, st);
    else
        scan_checked(buf, n, st);
}

static PyObject *
scan_detections(PyObject *self, PyObject *args)
{
    Py_buffer view;
    scan_t st;
    /* values, id_start, id_len, line, image_idx */
    PyObject *out[5] = {NULL, NULL, NULL, NULL, NULL};
    const Py_ssize_t row_size[5] = {5 * sizeof(double), sizeof(int64_t), sizeof(int64_t),
                                    sizeof(int64_t), sizeof(int64_t)};
    PyObject *error = NULL, *result = NULL, *arg, *table = Py_None;
    Py_ssize_t i, max_rows;
    int sentinel, nout;
    (void)self;

    if (!PyArg_ParseTuple(args, "O|O:scan_detections", &arg, &table))
        return NULL;
    memset(&st, 0, sizeof(st));
    if (table != Py_None) {
        st.table = (const id_table_t *)PyCapsule_GetPointer(table, ID_TABLE_CAPSULE);
        if (st.table == NULL)
            return NULL;
    }
    nout = st.table != NULL ? 5 : 4;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    /* bytes objects always have a NUL after their data */
    sentinel = PyBytes_CheckExact(arg) && view.buf == (void *)PyBytes_AS_STRING(arg);
    max_rows = view.len / 12 + 1;
    for (i = 0; i < nout; i++) {
        if (max_rows > PY_SSIZE_T_MAX / row_size[i]) {
            PyErr_NoMemory();
            goto done;
        }
        out[i] = PyByteArray_FromStringAndSize(NULL, max_rows * row_size[i]);
        if (out[i] == NULL)
            goto done;
    }
    st.values = (double *)PyByteArray_AS_STRING(out[0]);
    st.id_start = (int64_t *)PyByteArray_AS_STRING(out[1]);
    st.id_len = (int64_t *)PyByteArray_AS_STRING(out[2]);
    st.line = (int64_t *)PyByteArray_AS_STRING(out[3]);
    if (st.table != NULL)
        st.image_idx = (int64_t *)PyByteArray_AS_STRING(out[4]);
    if (view.len > (1 << 16)) {
        Py_BEGIN_ALLOW_THREADS
        scan((const char *)view.buf, view.len, &st, sentinel);
        Py_END_ALLOW_THREADS
    }
    else
        scan((const char *)view.buf, view.len, &st, sentinel);
    if (st.err_kind == ERR_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    /* slow tokens, in file order (all lie before any scan error) */
    for (i = 0; i < st.nslow; i++) {
        int64_t index = st.slow[2 * i], start = st.slow[2 * i + 1];
        int rc = slow_float((const char *)view.buf + start, (Py_ssize_t)st.slow_len[i],
                            &st.values[index]);
        if (rc < 0)
            goto done;
        if (rc == 0) {
            st.err_kind = ERR_NUMBER;
            st.err_line = st.line[index / 5];
            st.err_start = start;
            st.err_len = st.slow_len[i];
            st.rows = (Py_ssize_t)(index / 5);
            break;
        }
    }
    if (st.err_kind != ERR_NONE) {
        const char *kind = st.err_kind == ERR_FIELDS ? "fields"
                           : st.err_kind == ERR_NUMBER ? "number" : "binary";
        error = Py_BuildValue("(LsLL)", (long long)st.err_line, kind,
                              (long long)st.err_start, (long long)st.err_len);
    }
    else {
        error = Py_None;
        Py_INCREF(error);
    }
    if (error == NULL)
        goto done;
    for (i = 0; i < nout; i++)
        if (PyByteArray_Resize(out[i], st.rows * row_size[i]) < 0)
            goto done;
    if (st.table != NULL)
        result = PyTuple_Pack(6, out[0], out[1], out[2], out[3], error, out[4]);
    else
        result = PyTuple_Pack(5, out[0], out[1], out[2], out[3], error);
done:
    for (i = 0; i < 5; i++)
        Py_XDECREF(out[i]);
    Py_XDECREF(error);
    PyMem_RawFree(st.slow);
    PyMem_RawFree(st.slow_len);
    PyBuffer_Release(&view);
    return result;
}

#endif /* DETEVAL_TEXTSCAN_DETECTIONS_H */
