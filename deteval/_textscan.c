/* deteval._textscan: one-pass scanner for VOC detection text files.
 *
 * scan_detections(data) scans lines of `<image_id> <score> <xmin> <ymin> <xmax> <ymax>`
 * and returns raw native-endian buffers for numpy.frombuffer:
 *
 *     (values: bytearray, N*5 float64,
 *      id_start: bytearray, N int64 (byte offset of the id token),
 *      id_len: bytearray, N int64,
 *      line: bytearray, N int64 (1-based line numbers),
 *      error: None or (line_number, kind, token_start, token_len))
 *
 * kind is "fields" (a non-blank line without exactly 6 tokens; token = the line),
 * "number" (a value token that Python's float() rejects) or "binary" (a NUL byte).
 * On error the buffers hold the rows before the error; the error is the first one in
 * file order.
 *
 * Lines and tokens follow bytes.splitlines() and bytes.split(): a line ends at "\n",
 * "\r" or "\r\n"; whitespace is space, \t, \v, \f (and the line ends).
 *
 * Numbers equal Python's float(token) bit for bit: a fast exact path handles
 * [+-]digits[.digits][(e|E)[+-]digits] whose decimal mantissa m is <= 2^53 and whose
 * power of ten |e| <= 22 (m and 10^e are then exact doubles, so one IEEE multiply or
 * divide is correctly rounded, as is Python's strtod); anything else goes through
 * PyOS_string_to_double (or PyFloat_FromString for tokens with '_'), i.e. float()'s own
 * code. nan/inf are accepted like float() does; the caller checks finiteness.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#define DETEVAL_FAST_FLOAT 0 /* x87 extended precision: double rounding, use strtod only */
#else
#define DETEVAL_FAST_FLOAT 1
#endif

static const double POW10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#define MAX_EXACT_MANTISSA (((uint64_t)1) << 53)

/* Fast exact parse of the number at s (not beyond e): [+-]digits[.digits][(e|E)[+-]digits]
 * with at least one mantissa digit. Returns the end of the number and sets *out if the
 * exact path applies (the caller checks a separator follows), else NULL. */
#if defined(__GNUC__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

/* With a sentinel (a NUL right after the data, as in every bytes object), loops need no
 * bounds checks: no loop continues over a NUL. */
#define IN(q, e) (sentinel || (q) < (e))

ALWAYS_INLINE const unsigned char *
fast_number(const unsigned char *p, const unsigned char *e, double *out, const int sentinel)
{
#if DETEVAL_FAST_FLOAT
    int neg = 0, any = 0;
    uint64_t m = 0;
    int64_t frac = 0, ex = 0, e10;
    double v;
    if (IN(p, e) && (*p == '+' || *p == '-')) {
        neg = (*p == '-');
        p++;
    }
    while (IN(p, e) && (unsigned char)(*p - '0') < 10) {
        m = m * 10 + (uint64_t)(*p - '0');
        if (m > MAX_EXACT_MANTISSA)
            return NULL;
        p++;
        any = 1;
    }
    if (IN(p, e) && *p == '.') {
        p++;
        while (IN(p, e) && (unsigned char)(*p - '0') < 10) {
            m = m * 10 + (uint64_t)(*p - '0');
            if (m > MAX_EXACT_MANTISSA)
                return NULL;
            frac++;
            p++;
            any = 1;
        }
    }
    if (!any)
        return NULL;
    if (IN(p, e) && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        p++;
        if (IN(p, e) && (*p == '+' || *p == '-')) {
            eneg = (*p == '-');
            p++;
        }
        if (!IN(p, e) || (unsigned char)(*p - '0') >= 10)
            return NULL;
        while (IN(p, e) && (unsigned char)(*p - '0') < 10) {
            if (ex < 1000000000)
                ex = ex * 10 + (*p - '0');
            p++;
        }
        if (eneg)
            ex = -ex;
    }
    e10 = ex - frac;
    if (m == 0)
        v = 0.0;
    else if (e10 < -22 || e10 > 22)
        return NULL;
    else if (e10 >= 0)
        v = (double)m * POW10[e10];
    else
        v = (double)m / POW10[-e10];
    *out = neg ? -v : v;
    return p;
#else
    (void)p; (void)e; (void)out; (void)sentinel;
    return NULL;
#endif
}

/* Python's float() of a token (no whitespace inside). GIL held.
 * Returns 1 on success, 0 if float() rejects it, -1 on a Python error to propagate. */
static int
slow_float(const char *s, Py_ssize_t n, double *out)
{
    char small[128];
    char *buf = small, *end;
    double x;
    int rc;
    if (memchr(s, '_', (size_t)n) != NULL) {
        /* underscores between digits: float()'s own handling */
        PyObject *b = PyBytes_FromStringAndSize(s, n), *f;
        if (b == NULL)
            return -1;
        f = PyFloat_FromString(b);
        Py_DECREF(b);
        if (f == NULL) {
            if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                return 0;
            }
            return -1;
        }
        *out = PyFloat_AS_DOUBLE(f);
        Py_DECREF(f);
        return 1;
    }
    if ((size_t)n >= sizeof(small)) {
        buf = (char *)PyMem_Malloc((size_t)n + 1);
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    x = PyOS_string_to_double(buf, &end, NULL);
    if (x == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            rc = 0;
        }
        else
            rc = -1;
    }
    else if (end != buf + n)
        rc = 0;
    else {
        *out = x;
        rc = 1;
    }
    if (buf != small)
        PyMem_Free(buf);
    return rc;
}

typedef struct {
    /* output rows, written straight into the result bytearrays (allocated for the most
     * rows the input can hold: a row takes >= 12 bytes with its line end) */
    double *values;     /* 5 per row */
    int64_t *id_start, *id_len, *line;
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
ALWAYS_INLINE void
scan_impl(const char *buf, Py_ssize_t n, scan_t *st, const int sentinel)
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
            st->line[r] = lineno;
            for (k = 0; k < 5; k++) {
                double *slot = &st->values[5 * r + k];
                SKIP_BLANKS();
                if (p >= end || CLS[*p] == C_EOL)
                    goto fields;
                t = p;
                q = fast_number(p, end, slot, sentinel);
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
    scan_impl(buf, n, st, 1);
}

static void
scan_checked(const char *buf, Py_ssize_t n, scan_t *st)
{
    scan_impl(buf, n, st, 0);
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
scan_detections(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    scan_t st;
    PyObject *out[4] = {NULL, NULL, NULL, NULL};  /* values, id_start, id_len, line */
    const Py_ssize_t row_size[4] = {5 * sizeof(double), sizeof(int64_t), sizeof(int64_t),
                                    sizeof(int64_t)};
    PyObject *error = NULL, *result = NULL;
    Py_ssize_t i, max_rows;
    int sentinel;
    (void)self;

    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    memset(&st, 0, sizeof(st));
    /* bytes objects always have a NUL after their data */
    sentinel = PyBytes_CheckExact(arg) && view.buf == (void *)PyBytes_AS_STRING(arg);
    max_rows = view.len / 12 + 1;
    for (i = 0; i < 4; i++) {
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
    for (i = 0; i < 4; i++)
        if (PyByteArray_Resize(out[i], st.rows * row_size[i]) < 0)
            goto done;
    result = PyTuple_Pack(5, out[0], out[1], out[2], out[3], error);
done:
    for (i = 0; i < 4; i++)
        Py_XDECREF(out[i]);
    Py_XDECREF(error);
    PyMem_RawFree(st.slow);
    PyMem_RawFree(st.slow_len);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_detections", scan_detections, METH_O,
     "scan_detections(data) -> (values, id_start, id_len, line, error)\n\n"
     "Scan `<image_id> <score> <xmin> <ymin> <xmax> <ymax>` lines of a bytes-like object.\n"
     "values: bytearray of N*5 float64; id_start, id_len, line: bytearrays of N int64\n"
     "(line numbers 1-based, as bytes.splitlines() counts them); error: None or\n"
     "(line_number, kind, token_start, token_len) with kind 'fields', 'number' or\n"
     "'binary'. Numbers equal Python's float() of the token bit for bit."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "deteval._textscan",
    "Fast scanner for VOC detection text files (optional; deteval falls back to Python).",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__textscan(void)
{
    init_classes();
    return PyModule_Create(&module);
}
