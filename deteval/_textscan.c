/* deteval._textscan: readers for VOC text inputs (optional; deteval.io.voc has the
 * reference Python/lxml code and uses it for anything these functions decline).
 *
 *   scan_detections(data[, table])   one detection file's bytes (below)
 *   id_table(keys)                   image id bytes -> position, for the scanners
 *   scan_detection_files(paths, table)  read + scan every class file into shared columns
 *   scan_voc_annotations(datas)      annotation XML bytes -> XSLT-format object lines
 *   scan_voc_files(paths)            read + scan annotation XML files into columns
 *   scan_coco_results(data)          COCO results JSON bytes -> columns (a strict subset)
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

/* SWAR fast path for the common forms [-]d{1,7}[.d{0,7}] (no exponent): up to 8 digits
 * tested and converted at once from little-endian 8-byte loads. Needs at least 16
 * readable bytes from p (callers pad their buffers). Returns the end of the number and
 * sets *out exactly as fast_number would, or NULL to let fast_number decide. */
#if DETEVAL_FAST_FLOAT && defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DETEVAL_SWAR 1
static const uint64_t POW10_INT[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

/* number of leading ASCII digits of the 8 bytes in w (first byte lowest) */
ALWAYS_INLINE int
swar_digits(uint64_t w)
{
    uint64_t hi = w ^ 0x3030303030303030ULL; /* a digit becomes 0x00..0x09 */
    uint64_t nd = (((hi & 0x7F7F7F7F7F7F7F7FULL) + 0x7676767676767676ULL) | hi) &
                  0x8080808080808080ULL;     /* high bit set on every non-digit byte */
    return nd ? __builtin_ctzll(nd) >> 3 : 8;
}

/* value of the first k (1..7) digits of w */
ALWAYS_INLINE uint64_t
swar_value(uint64_t w, int k)
{
    uint64_t v = (w & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - k)); /* leading zeros below */
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;
    return (v * 10000 + (v >> 32)) & 0x00000000FFFFFFFFULL;
}

ALWAYS_INLINE const unsigned char *
swar_number(const unsigned char *p, double *out)
{
    uint64_t w, m;
    int neg = 0, n1, n2 = 0;
    double v;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    memcpy(&w, p, 8);
    n1 = swar_digits(w);
    if (n1 == 0 || n1 == 8)
        return NULL;
    m = swar_value(w, n1);
    p += n1;
    if (*p == '.') {
        p++;
        memcpy(&w, p, 8);
        n2 = swar_digits(w);
        if (n2 == 8)
            return NULL;
        if (n2) {
            m = m * POW10_INT[n2] + swar_value(w, n2);
            p += n2;
        }
    }
    if (*p == 'e' || *p == 'E')
        return NULL;
    /* at most 14 digits: m < 10^14 < 2^53, and 10^n2 is exact */
    v = n2 ? (double)m / POW10[n2] : (double)m * POW10[0];
    *out = neg ? -v : v;
    return p;
}
#else
#define DETEVAL_SWAR 0
#endif

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

/* ---- image id table: raw id token bytes -> position (the last one for a repeat) ---- */

#define ID_TABLE_CAPSULE "deteval._textscan.id_table"

typedef struct {
    PyObject *keys;      /* tuple of bytes, kept alive for the pointers below */
    const char **ptr;
    Py_ssize_t *len;
    int64_t *slot;       /* position, or -1 for an empty slot */
    size_t mask;
} id_table_t;

static uint64_t
id_hash(const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

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


/* ---- scan_voc_annotations: VOC annotation XML, a strict subset -------------------
 *
 * scan_voc_annotations(datas) -> (out: bytes, fallback: bytes)
 *
 * For each file i (bytes) inside the subset below, appends one record per <object>
 * child of the root, in document order, exactly as deteval.io.voc._OBJECT_LINES (the
 * XSLT) writes it for the lxml-parsed file:
 *   i+1 \t count(name) \t normalize-space(name) \t count(bndbox) \t
 *   normalize-space(bndbox/xmin) \t ...ymin \t ...xmax \t ...ymax \t
 *   normalize-space(difficult[1]) \t
 * fallback[i] = 1 for a file outside the subset (nothing is written for it; the caller
 * parses it with lxml), else 0.
 *
 * The subset (anything else falls back, never an error): optional UTF-8 BOM; optional
 * <?xml version="1.0" [encoding="utf-8|us-ascii|ascii"] [standalone="yes|no"]?> at the
 * very start (no encoding other than utf-8 after a BOM); bytes 0x20..0x7e, \t, \n, \r
 * only; no '&', no '>' in text, no comment/CDATA/PI/DOCTYPE; element names
 * [A-Za-z_][A-Za-z0-9_.-]*, at most XS_MAXNAME bytes; no attributes; start tags
 * <n>, <n S>, <n/>, <n S/>; end tags </n S?> matching the open element; one root
 * element named "annotation"; only whitespace outside it; depth <= XS_MAXDEPTH; file
 * size <= XS_MAXFILE (far below libxml2's limits without huge_tree); a field element
 * (object/name, object/difficult, object/bndbox/{xmin,ymin,xmax,ymax}) has no child
 * element (so its string value is its one raw text run).
 */
#define XS_MAXDEPTH 64
#define XS_MAXNAME 200
#define XS_MAXFILE ((size_t)1 << 20)

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} xs_buf;

static void
xs_put(xs_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        char *nb;
        while (cap < b->len + n)
            cap *= 2;
        nb = (char *)PyMem_RawRealloc(b->buf, cap);
        if (nb == NULL) {
            b->oom = 1;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
}

/* byte classes of the subset */
#define XS_C_TEXT 1  /* allowed in character data: 0x20..0x7e but '<' '&' '>', and XS_C_WS */
#define XS_C_WS 2    /* XML (and XPath) whitespace: space \t \n \r */
#define XS_C_START 4 /* first byte of an element name: [A-Za-z_] */
#define XS_C_NAME 8  /* later bytes of a name: [A-Za-z0-9_.-] */
static unsigned char XS_CLASS[256];

static void
xs_init_classes(void)
{
    int c;
    for (c = 0x20; c <= 0x7e; c++)
        if (c != '<' && c != '&' && c != '>')
            XS_CLASS[c] |= XS_C_TEXT;
    XS_CLASS[' '] |= XS_C_WS;
    XS_CLASS['\t'] |= XS_C_WS | XS_C_TEXT;
    XS_CLASS['\n'] |= XS_C_WS | XS_C_TEXT;
    XS_CLASS['\r'] |= XS_C_WS | XS_C_TEXT;
    for (c = 0; c < 256; c++)
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
            XS_CLASS[c] |= XS_C_START | XS_C_NAME;
        else if ((c >= '0' && c <= '9') || c == '.' || c == '-')
            XS_CLASS[c] |= XS_C_NAME;
}

#define xs_ws(c) (XS_CLASS[(unsigned char)(c)] & XS_C_WS)
#define xs_namestart(c) (XS_CLASS[(unsigned char)(c)] & XS_C_START)
#define xs_namechar(c) (XS_CLASS[(unsigned char)(c)] & XS_C_NAME)

/* XPath normalize-space of the text s[0..n), then a tab */
static void
xs_put_norm(xs_buf *b, const unsigned char *s, size_t n)
{
    size_t i = 0, j;
    int first = 1;
    while (i < n) {
        while (i < n && xs_ws(s[i]))
            i++;
        if (i == n)
            break;
        j = i;
        while (j < n && !xs_ws(s[j]))
            j++;
        if (!first)
            xs_put(b, " ", 1);
        xs_put(b, (const char *)s + i, j - i);
        first = 0;
        i = j;
    }
    xs_put(b, "\t", 1);
}

static void
xs_put_int(xs_buf *b, long v)
{
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "%ld\t", v);
    xs_put(b, tmp, (size_t)k);
}

static int
xs_is(const unsigned char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    return n == k && memcmp(s, word, k) == 0;
}

/* ASCII case-insensitive equality */
static int
xs_is_ci(const unsigned char *s, size_t n, const char *word)
{
    size_t k = strlen(word), i;
    if (n != k)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        if (c != (unsigned char)word[i])
            return 0;
    }
    return 1;
}

/* matches the literal `word` at s[*i]; advances past it */
static int
xs_lit(const unsigned char *s, size_t n, size_t *i, const char *word)
{
    size_t k = strlen(word);
    if (n - *i < k || memcmp(s + *i, word, k) != 0)
        return 0;
    *i += k;
    return 1;
}

static size_t
xs_skip_ws(const unsigned char *s, size_t n, size_t *i)
{
    size_t start = *i;
    while (*i < n && xs_ws(s[*i]))
        (*i)++;
    return *i - start;
}

/* Eq then a quoted value (no quote or '<' '&' inside, printable ASCII): its span */
static int
xs_eq_value(const unsigned char *s, size_t n, size_t *i, const unsigned char **v, size_t *vn)
{
    unsigned char q;
    size_t start;
    xs_skip_ws(s, n, i);
    if (*i >= n || s[*i] != '=')
        return 0;
    (*i)++;
    xs_skip_ws(s, n, i);
    if (*i >= n || (s[*i] != '"' && s[*i] != '\''))
        return 0;
    q = s[(*i)++];
    start = *i;
    while (*i < n && s[*i] != q) {
        if (s[*i] < 0x21 || s[*i] > 0x7e || s[*i] == '<' || s[*i] == '&')
            return 0;
        (*i)++;
    }
    if (*i >= n)
        return 0;
    *v = s + start;
    *vn = *i - start;
    (*i)++;
    return 1;
}

/* the XML declaration at s[*i] (which starts with "<?xml"); 1 if in the subset */
static int
xs_decl(const unsigned char *s, size_t n, size_t *i, int bom)
{
    const unsigned char *v;
    size_t vn, sp;
    *i += 5;
    if (xs_skip_ws(s, n, i) == 0)
        return 0;
    if (!xs_lit(s, n, i, "version") || !xs_eq_value(s, n, i, &v, &vn) || !xs_is(v, vn, "1.0"))
        return 0;
    sp = xs_skip_ws(s, n, i);
    if (sp && xs_lit(s, n, i, "encoding")) {
        if (!xs_eq_value(s, n, i, &v, &vn))
            return 0;
        if (!xs_is_ci(v, vn, "utf-8") &&
            (bom || !(xs_is_ci(v, vn, "us-ascii") || xs_is_ci(v, vn, "ascii"))))
            return 0;
        sp = xs_skip_ws(s, n, i);
    }
    if (sp && xs_lit(s, n, i, "standalone")) {
        if (!xs_eq_value(s, n, i, &v, &vn) || !(xs_is(v, vn, "yes") || xs_is(v, vn, "no")))
            return 0;
        xs_skip_ws(s, n, i);
    }
    return xs_lit(s, n, i, "?>");
}

enum { XS_OTHER, XS_ROOT, XS_OBJECT, XS_BNDBOX, XS_FIELD };
enum { XS_NAME, XS_XMIN, XS_YMIN, XS_XMAX, XS_YMAX, XS_DIFFICULT, XS_NFIELDS };

typedef struct {
    const unsigned char *name;
    size_t len;
    int role, field;
    size_t text_start;
} xs_elem;

typedef struct {
    long n_name, n_bndbox;
    const unsigned char *text[XS_NFIELDS];
    size_t text_len[XS_NFIELDS];
} xs_object;

/* ---- binary columns (scan_voc_files) ---- */

typedef struct {
    /* per object */
    double *boxes;            /* 4 per object */
    int64_t *name_idx;        /* into the name table; -1 for an object that is not ok */
    unsigned char *difficult; /* normalize-space(difficult[1]) == "1" */
    unsigned char *ok;        /* passes the fast checks (else the file is re-read) */
    size_t n, cap;
    /* distinct normalized names: arena + offsets, open-addressing hash of indices */
    char *arena;
    size_t arena_len, arena_cap;
    size_t *name_off, *name_len;
    size_t n_names, names_cap;
    int64_t *hash;
    size_t hash_cap;
    /* scratch for normalize-space */
    char *tmp;
    size_t tmp_cap;
    int oom;
} xs_cols;

static int
xs_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : 1024;
    void *np_;
    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    np_ = PyMem_RawRealloc(*p, c * elem);
    if (np_ == NULL)
        return -1;
    *p = np_;
    *cap = c;
    return 0;
}

static uint64_t
xs_fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* index of the name s[0..n) in the table, added if new; -1 when out of memory */
static int64_t
xs_intern(xs_cols *c, const char *s, size_t n)
{
    size_t mask, j;
    if (c->hash_cap < 2 * (c->n_names + 1)) { /* (re)build the hash at twice the size */
        size_t cap = c->hash_cap ? c->hash_cap * 2 : 64, k;
        int64_t *h;
        while (cap < 2 * (c->n_names + 1))
            cap *= 2;
        h = (int64_t *)PyMem_RawMalloc(cap * sizeof(int64_t));
        if (h == NULL)
            return -1;
        for (k = 0; k < cap; k++)
            h[k] = -1;
        for (k = 0; k < c->n_names; k++) {
            j = (size_t)xs_fnv(c->arena + c->name_off[k], c->name_len[k]) & (cap - 1);
            while (h[j] >= 0)
                j = (j + 1) & (cap - 1);
            h[j] = (int64_t)k;
        }
        PyMem_RawFree(c->hash);
        c->hash = h;
        c->hash_cap = cap;
    }
    mask = c->hash_cap - 1;
    j = (size_t)xs_fnv(s, n) & mask;
    while (c->hash[j] >= 0) {
        size_t k = (size_t)c->hash[j];
        if (c->name_len[k] == n && memcmp(c->arena + c->name_off[k], s, n) == 0)
            return (int64_t)k;
        j = (j + 1) & mask;
    }
    if (xs_grow((void **)&c->arena, &c->arena_cap, c->arena_len + n + 1, 1) < 0 ||
        xs_grow((void **)&c->name_off, &c->names_cap, c->n_names + 1, sizeof(size_t)) < 0)
        return -1;
    /* name_len shares names_cap: grow it to the same capacity */
    {
        size_t *nl = (size_t *)PyMem_RawRealloc(c->name_len, c->names_cap * sizeof(size_t));
        if (nl == NULL)
            return -1;
        c->name_len = nl;
    }
    memcpy(c->arena + c->arena_len, s, n);
    c->name_off[c->n_names] = c->arena_len;
    c->name_len[c->n_names] = n;
    c->arena_len += n;
    c->hash[j] = (int64_t)c->n_names;
    return (int64_t)c->n_names++;
}

/* XPath normalize-space of s[0..n) into c->tmp; its length, or (size_t)-1 on OOM */
static size_t
xs_norm_tmp(xs_cols *c, const unsigned char *s, size_t n)
{
    size_t i = 0, j, len = 0;
    if (xs_grow((void **)&c->tmp, &c->tmp_cap, n + 1, 1) < 0)
        return (size_t)-1;
    while (i < n) {
        while (i < n && xs_ws(s[i]))
            i++;
        if (i == n)
            break;
        j = i;
        while (j < n && !xs_ws(s[j]))
            j++;
        if (len)
            c->tmp[len++] = ' ';
        memcpy(c->tmp + len, s + i, j - i);
        len += j - i;
        i = j;
    }
    return len;
}

/* float(normalize-space(text)) by the exact fast path; 0 if the text needs the
 * reference reader (empty, inner space, non-finite, a form the fast path declines) */
static int
xs_coord(const unsigned char *s, size_t n, double *v)
{
    const unsigned char *p = s, *e = s + n, *q;
    if (s == NULL)
        return 0;
    while (p < e && xs_ws(*p))
        p++;
    while (e > p && xs_ws(e[-1]))
        e--;
    if (p == e)
        return 0;
    q = fast_number(p, e, v, 0);
    return q == e;
}

static void
xs_emit_cols(xs_cols *c, const xs_object *o)
{
    size_t r = c->n;
    double b[4];
    int ok, k;
    int64_t idx = -1;
    const unsigned char *d;
    size_t dn;
    if (c->oom)
        return;
    if (r + 1 > c->cap) {
        size_t cap = c->cap;
        if (xs_grow((void **)&c->boxes, &cap, r + 1, 4 * sizeof(double)) < 0) {
            c->oom = 1;
            return;
        }
        if ((c->name_idx = (int64_t *)PyMem_RawRealloc(c->name_idx, cap * sizeof(int64_t))) == NULL ||
            (c->difficult = (unsigned char *)PyMem_RawRealloc(c->difficult, cap)) == NULL ||
            (c->ok = (unsigned char *)PyMem_RawRealloc(c->ok, cap)) == NULL) {
            c->oom = 1; /* the failed pointer is lost with its block only on exit paths */
            return;
        }
        c->cap = cap;
    }
    ok = o->n_name == 1 && o->n_bndbox == 1;
    for (k = 0; k < 4; k++) {
        b[k] = 0.0;
        if (ok && !xs_coord(o->text[XS_XMIN + k], o->text_len[XS_XMIN + k], &b[k]))
            ok = 0;
    }
    if (ok && !(b[0] <= b[2] && b[1] <= b[3]))
        ok = 0;
    if (ok) {
        size_t len = xs_norm_tmp(c, o->text[XS_NAME], o->text_len[XS_NAME]);
        if (len == (size_t)-1) {
            c->oom = 1;
            return;
        }
        if (len == 0)
            ok = 0;
        else if ((idx = xs_intern(c, c->tmp, len)) < 0) {
            c->oom = 1;
            return;
        }
    }
    d = o->text[XS_DIFFICULT];
    dn = o->text_len[XS_DIFFICULT];
    if (d != NULL) {
        while (dn && xs_ws(*d)) {
            d++;
            dn--;
        }
        while (dn && xs_ws(d[dn - 1]))
            dn--;
    }
    memcpy(c->boxes + 4 * r, b, sizeof b);
    c->name_idx[r] = ok ? idx : -1;
    c->difficult[r] = (unsigned char)(d != NULL && dn == 1 && d[0] == '1');
    c->ok[r] = (unsigned char)ok;
    c->n = r + 1;
}

/* where object records go: text lines (scan_voc_annotations) or columns */
typedef struct {
    xs_buf *text;
    xs_cols *cols;
} xs_sink;

static void
xs_emit(xs_sink *sink, long fileno, const xs_object *o)
{
    int k;
    xs_buf *out = sink->text;
    if (sink->cols != NULL) {
        xs_emit_cols(sink->cols, o);
        return;
    }
    xs_put_int(out, fileno);
    xs_put_int(out, o->n_name);
    xs_put_norm(out, o->text[XS_NAME], o->text_len[XS_NAME]);
    xs_put_int(out, o->n_bndbox);
    for (k = XS_XMIN; k <= XS_DIFFICULT; k++)
        xs_put_norm(out, o->text[k], o->text_len[k]);
}

/* close the top element (content ends at `end`); object records are written here */
static void
xs_close(xs_elem *e, const unsigned char *s, size_t end, xs_object *o, xs_sink *out,
         long fileno)
{
    if (e->role == XS_FIELD) {
        if (o->text[e->field] == NULL) { /* the first one in document order */
            o->text[e->field] = s + e->text_start;
            o->text_len[e->field] = end - e->text_start;
        }
    } else if (e->role == XS_OBJECT) {
        xs_emit(out, fileno, o);
    }
}

/* 0: scanned (records appended), 1: outside the subset (nothing appended) */
static int
xs_scan_one(const unsigned char *s, size_t n, long fileno, xs_sink *out)
{
    static const char *coords[4] = {"xmin", "ymin", "xmax", "ymax"};
    xs_elem stack[XS_MAXDEPTH];
    xs_object obj;
    size_t i = 0, saved = out->text ? out->text->len : 0;
    size_t saved_n = out->cols ? out->cols->n : 0;
    int depth = 0, seen_root = 0, bom = 0;

    memset(&obj, 0, sizeof obj);
    if (n > XS_MAXFILE)
        return 1;
    if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF) {
        i = 3;
        bom = 1;
    }
    if (n - i >= 5 && memcmp(s + i, "<?xml", 5) == 0 && !xs_decl(s, n, &i, bom))
        goto fallback;
    while (i < n) {
        unsigned char c = s[i];
        size_t lt, start, len;
        if (c != '<') { /* character data up to the next '<' */
            unsigned char allowed = depth ? XS_C_TEXT : XS_C_WS;
            while (i < n && (XS_CLASS[s[i]] & allowed))
                i++;
            if (i < n && s[i] != '<')
                goto fallback;
            continue;
        }
        lt = i++;
        if (i < n && s[i] == '/') { /* end tag */
            i++;
            start = i;
            if (i >= n || !xs_namestart(s[i]))
                goto fallback;
            while (i < n && xs_namechar(s[i]))
                i++;
            len = i - start;
            xs_skip_ws(s, n, &i);
            if (i >= n || s[i] != '>' || depth == 0 || stack[depth - 1].len != len ||
                memcmp(stack[depth - 1].name, s + start, len) != 0)
                goto fallback;
            i++;
            xs_close(&stack[depth - 1], s, lt, &obj, out, fileno);
            depth--;
            continue;
        }
        /* start tag */
        start = i;
        if (i >= n || !xs_namestart(s[i]) || (depth == 0 && seen_root) || depth == XS_MAXDEPTH)
            goto fallback;
        while (i < n && xs_namechar(s[i]))
            i++;
        len = i - start;
        if (len > XS_MAXNAME)
            goto fallback;
        {
            xs_elem *e = &stack[depth];
            int empty, k;
            xs_skip_ws(s, n, &i);
            if (i < n && s[i] == '>') {
                empty = 0;
                i++;
            } else if (n - i >= 2 && s[i] == '/' && s[i + 1] == '>') {
                empty = 1;
                i += 2;
            } else {
                goto fallback; /* an attribute, or not a tag */
            }
            e->name = s + start;
            e->len = len;
            e->role = XS_OTHER;
            e->field = 0;
            e->text_start = i;
            if (depth == 0) {
                if (!xs_is(s + start, len, "annotation"))
                    goto fallback;
                e->role = XS_ROOT;
                seen_root = 1;
            } else {
                int parent = stack[depth - 1].role;
                if (parent == XS_FIELD)
                    goto fallback; /* its string value would include this */
                if (parent == XS_ROOT && xs_is(s + start, len, "object")) {
                    e->role = XS_OBJECT;
                    memset(&obj, 0, sizeof obj);
                } else if (parent == XS_OBJECT) {
                    if (xs_is(s + start, len, "name")) {
                        e->role = XS_FIELD;
                        e->field = XS_NAME;
                        obj.n_name++;
                    } else if (xs_is(s + start, len, "difficult")) {
                        e->role = XS_FIELD;
                        e->field = XS_DIFFICULT;
                    } else if (xs_is(s + start, len, "bndbox")) {
                        e->role = XS_BNDBOX;
                        obj.n_bndbox++;
                    }
                } else if (parent == XS_BNDBOX) {
                    for (k = 0; k < 4; k++)
                        if (xs_is(s + start, len, coords[k])) {
                            e->role = XS_FIELD;
                            e->field = XS_XMIN + k;
                        }
                }
            }
            if (empty)
                xs_close(e, s, i, &obj, out, fileno); /* empty content: text_start == i */
            else
                depth++;
        }
    }
    if (!seen_root || depth != 0 || (out->text && out->text->oom) ||
        (out->cols && out->cols->oom))
        goto fallback;
    return 0;
fallback:
    if (out->text)
        out->text->len = saved;
    if (out->cols)
        out->cols->n = saved_n;
    return 1;
}

static PyObject *
scan_voc_annotations(PyObject *self, PyObject *arg)
{
    PyObject *seq, *result = NULL, *out_bytes = NULL, *fb_bytes = NULL;
    Py_ssize_t n, k;
    const unsigned char **data = NULL;
    size_t *size = NULL;
    char *fb;
    xs_buf out = {NULL, 0, 0, 0};
    xs_sink sink = {&out, NULL};
    (void)self;

    seq = PySequence_Tuple(arg); /* owns the bytes objects while the GIL is released */
    if (seq == NULL)
        return NULL;
    n = PyTuple_GET_SIZE(seq);
    fb_bytes = PyBytes_FromStringAndSize(NULL, n);
    data = (const unsigned char **)PyMem_Malloc(sizeof(*data) * (size_t)(n ? n : 1));
    size = (size_t *)PyMem_Malloc(sizeof(*size) * (size_t)(n ? n : 1));
    if (fb_bytes == NULL || data == NULL || size == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(seq, k);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "scan_voc_annotations: item %zd is not bytes", k);
            goto done;
        }
        data[k] = (const unsigned char *)PyBytes_AS_STRING(item);
        size[k] = (size_t)PyBytes_GET_SIZE(item);
    }
    fb = PyBytes_AS_STRING(fb_bytes);
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < n; k++)
        fb[k] = (char)xs_scan_one(data[k], size[k], (long)(k + 1), &sink);
    Py_END_ALLOW_THREADS
    if (out.oom) {
        PyErr_NoMemory();
        goto done;
    }
    out_bytes = PyBytes_FromStringAndSize(out.buf ? out.buf : "", (Py_ssize_t)out.len);
    if (out_bytes == NULL)
        goto done;
    result = PyTuple_Pack(2, out_bytes, fb_bytes);
done:
    Py_XDECREF(out_bytes);
    Py_XDECREF(fb_bytes);
    PyMem_Free(data);
    PyMem_Free(size);
    PyMem_RawFree(out.buf);
    Py_DECREF(seq);
    return result;
}

/* ---- scan_voc_files: read the annotation files and scan them into columns ----------
 *
 * scan_voc_files(paths) -> (fallback, counts, names, name_idx, boxes, difficult, ok)
 *
 * paths: a sequence of str/bytes/os.PathLike. Each file is read here (without the GIL);
 * a file that cannot be opened or read, is not a regular file, is larger than
 * XS_MAXFILE or lies outside the subset of scan_voc_annotations gets fallback[i] = 1
 * and no objects (the caller reads it with Python and lxml, which raises the precise
 * error). For the other files, one row per <object> in document order:
 *   counts: bytes, n_files int64 (objects per file)
 *   names: list of str, distinct normalize-space(name) values (may hold names of
 *          files that fell back: use the indices that occur)
 *   name_idx: bytes, int64 per object (-1 when ok is 0)
 *   boxes: bytes, 4 float64 per object (xmin ymin xmax ymax; meaningless when ok is 0)
 *   difficult: bytes, uint8 per object
 *   ok: bytes, uint8 per object: count(name) = count(bndbox) = 1, a non-empty name,
 *       four coordinates float() reads exactly by the fast path (finite), xmin <= xmax
 *       and ymin <= ymax. A file with an object that is not ok must be re-read by the
 *       reference reader, which accepts it or names the problem.
 */
#include <sys/stat.h>
#ifndef S_ISREG
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
#endif
#ifdef _WIN32
#include <stdio.h>
#else
#include <fcntl.h>
#include <unistd.h>
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#endif

/* the whole file (at most `limit` bytes) into *buf (capacity *cap, NUL-terminated);
 * 0 on success */
static int
xs_read_file_limit(const char *path, unsigned char **buf, size_t *cap, size_t *len,
                   size_t limit)
{
    size_t n = 0;
#ifdef _WIN32
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    for (;;) {
        size_t got;
        if (n + 65536 + 1 > *cap && xs_grow((void **)buf, cap, n + 65536 + 1, 1) < 0) {
            fclose(f);
            return -1;
        }
        got = fread(*buf + n, 1, *cap - n - 1, f);
        n += got;
        if (n > limit) {
            fclose(f);
            return -1;
        }
        if (got == 0) {
            int bad = ferror(f);
            fclose(f);
            if (bad)
                return -1;
            break;
        }
    }
#else
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > limit) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t got;
        size_t need;
        /* room for the expected size, one more byte to see the end, and the NUL */
        need = n + 4097;
        if (need < (size_t)st.st_size + 2)
            need = (size_t)st.st_size + 2;
        if (xs_grow((void **)buf, cap, need, 1) < 0) {
            close(fd);
            return -1;
        }
        got = read(fd, *buf + n, *cap - n - 1);
        if (got < 0) {
            close(fd);
            return -1;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > limit) {
            close(fd);
            return -1;
        }
    }
    close(fd);
#endif
    if (*buf == NULL && xs_grow((void **)buf, cap, 1, 1) < 0)
        return -1;
    (*buf)[n] = 0;
    *len = n;
    return 0;
}

/* The paths of a sequence (str, bytes, os.PathLike) in the filesystem encoding: *paths,
 * a new tuple owning the encoded bytes (keep it while the GIL is released), and *cpath,
 * their char pointers (PyMem_Free it). Returns their number, or -1 with an error set
 * (including a path with an embedded NUL, which PyUnicode_FSConverter refuses). */
static Py_ssize_t
encode_paths(PyObject *arg, PyObject **paths, const char ***cpath)
{
    PyObject *seq = PySequence_Tuple(arg);
    Py_ssize_t n, k;
    *paths = NULL;
    *cpath = NULL;
    if (seq == NULL)
        return -1;
    n = PyTuple_GET_SIZE(seq);
    *paths = PyTuple_New(n);
    *cpath = (const char **)PyMem_Malloc(sizeof(**cpath) * (size_t)(n ? n : 1));
    if (*paths == NULL || *cpath == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail;
    }
    for (k = 0; k < n; k++) {
        PyObject *enc = NULL;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(seq, k), &enc))
            goto fail;
        PyTuple_SET_ITEM(*paths, k, enc);
        (*cpath)[k] = PyBytes_AS_STRING(enc);
    }
    Py_DECREF(seq);
    return n;
fail:
    Py_DECREF(seq);
    Py_CLEAR(*paths);
    PyMem_Free((void *)*cpath);
    *cpath = NULL;
    return -1;
}

static PyObject *
scan_voc_files(PyObject *self, PyObject *arg)
{
    PyObject *paths = NULL, *result = NULL, *names = NULL;
    PyObject *fb_bytes = NULL, *counts_bytes = NULL;
    Py_ssize_t n, k;
    const char **cpath = NULL;
    char *fb;
    int64_t *counts;
    unsigned char *buf = NULL;
    size_t cap = 0, len, before;
    xs_cols cols;
    xs_sink sink = {NULL, &cols};
    (void)self;

    memset(&cols, 0, sizeof cols);
    n = encode_paths(arg, &paths, &cpath);
    if (n < 0)
        return NULL;
    fb_bytes = PyBytes_FromStringAndSize(NULL, n);
    counts_bytes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (fb_bytes == NULL || counts_bytes == NULL)
        goto done;
    fb = PyBytes_AS_STRING(fb_bytes);
    counts = (int64_t *)PyBytes_AS_STRING(counts_bytes);
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < n && !cols.oom; k++) {
        before = cols.n;
        if (xs_read_file_limit(cpath[k], &buf, &cap, &len, XS_MAXFILE) != 0)
            fb[k] = 1;
        else
            fb[k] = (char)xs_scan_one(buf, len, (long)(k + 1), &sink);
        counts[k] = (int64_t)(cols.n - before);
    }
    Py_END_ALLOW_THREADS
    if (cols.oom) {
        PyErr_NoMemory();
        goto done;
    }
    names = PyList_New((Py_ssize_t)cols.n_names);
    if (names == NULL)
        goto done;
    for (k = 0; k < (Py_ssize_t)cols.n_names; k++) {
        PyObject *s = PyUnicode_DecodeASCII(cols.arena + cols.name_off[k],
                                            (Py_ssize_t)cols.name_len[k], NULL);
        if (s == NULL)
            goto done;
        PyList_SET_ITEM(names, k, s);
    }
    result = Py_BuildValue(
        "(OONy#y#y#y#)", fb_bytes, counts_bytes, names,
        (const char *)(cols.name_idx ? (void *)cols.name_idx : (void *)""),
        (Py_ssize_t)(cols.n * sizeof(int64_t)),
        (const char *)(cols.boxes ? (void *)cols.boxes : (void *)""),
        (Py_ssize_t)(cols.n * 4 * sizeof(double)),
        (const char *)(cols.difficult ? (void *)cols.difficult : (void *)""),
        (Py_ssize_t)cols.n,
        (const char *)(cols.ok ? (void *)cols.ok : (void *)""), (Py_ssize_t)cols.n);
    names = NULL; /* the N format stole it */
done:
    Py_XDECREF(names);
    Py_XDECREF(fb_bytes);
    Py_XDECREF(counts_bytes);
    Py_XDECREF(paths);
    PyMem_Free((void *)cpath);
    PyMem_RawFree(buf);
    PyMem_RawFree(cols.boxes);
    PyMem_RawFree(cols.name_idx);
    PyMem_RawFree(cols.difficult);
    PyMem_RawFree(cols.ok);
    PyMem_RawFree(cols.arena);
    PyMem_RawFree(cols.name_off);
    PyMem_RawFree(cols.name_len);
    PyMem_RawFree(cols.hash);
    PyMem_RawFree(cols.tmp);
    return result;
}

/* ---- scan_detection_files: read and scan several detection files into shared columns
 *
 * scan_detection_files(paths, table) -> (status, counts, scores, boxes, image_idx)
 *
 * For each file (str/bytes/os.PathLike), in order: status[i] = 0 when the file was
 * read here, holds no NUL byte, scans without error, every number takes the exact fast
 * path, every value is finite with xmin <= xmax and ymin <= ymax, and every image id is
 * a key of `table` (an id_table); its rows are then appended to the columns and
 * counts[i] is their number. Otherwise status[i] = 1 and nothing is appended: the
 * caller reads that file with the reference path, which decides and names any problem.
 *   status: bytes, uint8 per file; counts: bytes, int64 per file
 *   scores: bytearray, float64 per row; boxes: bytearray, 4 float64 per row
 *   image_idx: bytearray, int64 per row (positions in the table)
 */
static PyObject *
scan_detection_files(PyObject *self, PyObject *args)
{
    PyObject *paths_arg, *table_arg, *paths = NULL, *result = NULL;
    PyObject *status_b = NULL, *counts_b = NULL, *out[3] = {NULL, NULL, NULL};
    const id_table_t *table;
    Py_ssize_t n, k, max_rows = 0, max_file_rows = 1, total = 0;
    const char **cpath = NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, len;
    scan_t st;
    int64_t *scratch = NULL;
    char *status;
    int64_t *counts;
    double *scores, *boxes;
    int64_t *img;
    int nomem = 0;
    (void)self;

    memset(&st, 0, sizeof st);
    if (!PyArg_ParseTuple(args, "OO:scan_detection_files", &paths_arg, &table_arg))
        return NULL;
    table = (const id_table_t *)PyCapsule_GetPointer(table_arg, ID_TABLE_CAPSULE);
    if (table == NULL)
        return NULL;
    n = encode_paths(paths_arg, &paths, &cpath);
    if (n < 0)
        return NULL;
    status_b = PyBytes_FromStringAndSize(NULL, n);
    counts_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (status_b == NULL || counts_b == NULL)
        goto done;
    for (k = 0; k < n; k++) {
        struct stat sb;
        /* room for the rows the file can hold at its current size (a row takes >= 12
         * bytes with its line end); a file that grows falls back */
        if (stat(cpath[k], &sb) == 0 && S_ISREG(sb.st_mode)) {
            Py_ssize_t rows = (Py_ssize_t)(sb.st_size / 12) + 1;
            if (rows > PY_SSIZE_T_MAX / 64 - max_rows) {
                PyErr_NoMemory();
                goto done;
            }
            max_rows += rows;
            if (rows > max_file_rows)
                max_file_rows = rows;
        }
    }
    out[0] = PyByteArray_FromStringAndSize(NULL, max_rows * (Py_ssize_t)sizeof(double));
    out[1] = PyByteArray_FromStringAndSize(NULL, max_rows * 4 * (Py_ssize_t)sizeof(double));
    out[2] = PyByteArray_FromStringAndSize(NULL, max_rows * (Py_ssize_t)sizeof(int64_t));
    scratch = (int64_t *)PyMem_RawMalloc((size_t)max_file_rows * 3 * sizeof(int64_t));
    if (out[0] == NULL || out[1] == NULL || out[2] == NULL || scratch == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    status = PyBytes_AS_STRING(status_b);
    counts = (int64_t *)PyBytes_AS_STRING(counts_b);
    scores = (double *)PyByteArray_AS_STRING(out[0]);
    boxes = (double *)PyByteArray_AS_STRING(out[1]);
    img = (int64_t *)PyByteArray_AS_STRING(out[2]);
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < n; k++) {
        Py_ssize_t rows, r;
        int ok;
        status[k] = 1;
        counts[k] = 0;
        if (xs_read_file_limit(cpath[k], &buf, &cap, &len, (size_t)-1) != 0)
            continue;
        rows = (Py_ssize_t)(len / 12) + 1;
        if (rows > max_file_rows || rows > max_rows - total || memchr(buf, 0, len) != NULL)
            continue;
        if (xs_grow((void **)&buf, &cap, len + 1 + 16, 1) < 0) { /* the SWAR padding */
            nomem = 1;
            break;
        }
        st.values = NULL;
        st.score = scores + total;
        st.box = boxes + 4 * total;
        st.image_idx = img + total;
        st.id_start = scratch;
        st.id_len = scratch + max_file_rows;
        st.line = scratch + 2 * max_file_rows;
        st.table = table;
        st.rows = 0;
        st.nslow = 0;
        st.err_kind = ERR_NONE;
        scan_padded((const char *)buf, (Py_ssize_t)len, &st);
        if (st.err_kind == ERR_NOMEM) {
            nomem = 1;
            break;
        }
        if (st.err_kind != ERR_NONE || st.nslow != 0)
            continue;
        ok = 1;
        for (r = 0; r < st.rows && ok; r++) {
            const double *b = st.box + 4 * r;
            double sc = st.score[r];
            if (st.image_idx[r] < 0 || sc - sc != 0.0 || b[0] - b[0] != 0.0 ||
                b[1] - b[1] != 0.0 || b[2] - b[2] != 0.0 || b[3] - b[3] != 0.0 ||
                b[2] < b[0] || b[3] < b[1])
                ok = 0; /* unknown id, inf/nan, or xmax < xmin */
        }
        if (!ok)
            continue;
        status[k] = 0;
        counts[k] = st.rows;
        total += st.rows;
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyByteArray_Resize(out[0], total * (Py_ssize_t)sizeof(double)) < 0 ||
        PyByteArray_Resize(out[1], total * 4 * (Py_ssize_t)sizeof(double)) < 0 ||
        PyByteArray_Resize(out[2], total * (Py_ssize_t)sizeof(int64_t)) < 0)
        goto done;
    result = PyTuple_Pack(5, status_b, counts_b, out[0], out[1], out[2]);
done:
    for (k = 0; k < 3; k++)
        Py_XDECREF(out[k]);
    Py_XDECREF(status_b);
    Py_XDECREF(counts_b);
    Py_XDECREF(paths);
    PyMem_Free((void *)cpath);
    PyMem_RawFree(buf);
    PyMem_RawFree(scratch);
    PyMem_RawFree(st.slow);
    PyMem_RawFree(st.slow_len);
    return result;
}


/* ---- scan_coco_results: a COCO results JSON file, a strict subset ----------------
 *
 * scan_coco_results(data) -> None or (n, image_id, category_id, score, bbox)
 *
 * data: the bytes of a results file. Inside the subset, returns n records with raw
 * buffers: image_id, category_id (int64 each), score (float64), bbox (4 float64 per
 * record), in file order, with the values msgspec decodes into deteval.io.coco._Result.
 * Anything else returns None and the caller decodes the file as before (which accepts
 * it or names the bad record). The subset: JSON whitespace around tokens; one top-level
 * array of objects; in each object the keys "image_id" and "category_id" (integer
 * literals within int64), "bbox" (an array of exactly 4 numbers) and "score" (a number),
 * each exactly once, in any order, plus any other keys whose values are skipped (strings
 * of printable ASCII with escapes, numbers, true/false/null, nested arrays/objects up to
 * depth 32); keys are printable ASCII without escapes. Numbers follow JSON's grammar; a
 * float value is fast_number's exact fast path or else PyOS_string_to_double (float()'s
 * correctly rounded conversion; tokens under 64 bytes), an integer literal in a float
 * field is the double of that integer (so "-0" is 0.0).
 */
typedef struct {
    const unsigned char *p, *end;
} js_t;

static void
js_ws(js_t *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* a JSON number token at j->p: its extent and whether it is an integer literal */
static int
js_number_span(js_t *j, const unsigned char **s, const unsigned char **e, int *is_int)
{
    const unsigned char *p = j->p, *end = j->end;
    *s = p;
    *is_int = 1;
    if (p < end && *p == '-')
        p++;
    if (p >= end || (unsigned char)(*p - '0') >= 10)
        return 0;
    if (*p == '0')
        p++;
    else
        while (p < end && (unsigned char)(*p - '0') < 10)
            p++;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || (unsigned char)(*p - '0') >= 10)
            return 0;
        while (p < end && (unsigned char)(*p - '0') < 10)
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || (unsigned char)(*p - '0') >= 10)
            return 0;
        while (p < end && (unsigned char)(*p - '0') < 10)
            p++;
    }
    *e = p;
    j->p = p;
    return 1;
}

static int
js_int(js_t *j, int64_t *out)
{
    const unsigned char *s, *e, *p;
    int is_int, neg;
    uint64_t v = 0;
    if (!js_number_span(j, &s, &e, &is_int) || !is_int)
        return 0;
    p = s;
    neg = (*p == '-');
    if (neg)
        p++;
    for (; p < e; p++) {
        if (v > (UINT64_C(9223372036854775808) - (uint64_t)(*p - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (!neg && v > UINT64_C(9223372036854775807))
        return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static int
js_float(js_t *j, double *out)
{
    const unsigned char *s, *e, *q;
    int is_int;
    if (!js_number_span(j, &s, &e, &is_int))
        return 0;
    q = fast_number(s, e, out, 0);
    if (q != e) { /* Python's own correctly rounded conversion (float()'s); GIL held */
        char tmp[64], *stop;
        double x;
        if (e - s >= (Py_ssize_t)sizeof tmp)
            return 0;
        memcpy(tmp, s, (size_t)(e - s));
        tmp[e - s] = 0;
        x = PyOS_string_to_double(tmp, &stop, PyExc_OverflowError);
        if (x == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (stop != tmp + (e - s))
            return 0;
        *out = x;
    }
    if (is_int && *out == 0.0)
        *out = 0.0; /* the double of the integer 0, also for "-0" */
    return 1;
}

static int
js_string(js_t *j, const unsigned char **s, size_t *n, int allow_escapes)
{
    const unsigned char *p = j->p;
    if (p >= j->end || *p != '"')
        return 0;
    p++;
    *s = p;
    for (;;) {
        if (p >= j->end || *p < 0x20 || *p > 0x7e)
            return 0;
        if (*p == '"')
            break;
        if (*p == '\\') {
            if (!allow_escapes || p + 1 >= j->end)
                return 0;
            p++;
            if (*p == 'u') {
                int k;
                for (k = 1; k <= 4; k++)
                    if (p + k >= j->end || !((p[k] >= '0' && p[k] <= '9') ||
                                             ((p[k] | 0x20) >= 'a' && (p[k] | 0x20) <= 'f')))
                        return 0;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || *p == 0) {
                return 0;
            }
        }
        p++;
    }
    *n = (size_t)(p - *s);
    j->p = p + 1;
    return 1;
}

/* after a value inside an array or object: 1 after a ',' (another value follows),
 * 2 after the closing bracket `close`, 0 on anything else */
static int
js_next(js_t *j, unsigned char close)
{
    js_ws(j);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        js_ws(j);
        return 1;
    }
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 2;
    }
    return 0;
}

static int
js_skip_value(js_t *j, int depth)
{
    const unsigned char *s, *e;
    size_t n;
    int is_int;
    if (depth > 32 || j->p >= j->end)
        return 0;
    switch (*j->p) {
    case '"':
        return js_string(j, &s, &n, 1);
    case '[':
        j->p++;
        js_ws(j);
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 1;
        }
        for (;;) {
            int next;
            if (!js_skip_value(j, depth + 1) || (next = js_next(j, ']')) == 0)
                return 0;
            if (next == 2)
                return 1;
        }
    case '{':
        j->p++;
        js_ws(j);
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return 1;
        }
        for (;;) {
            int next;
            if (!js_string(j, &s, &n, 1))
                return 0;
            js_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return 0;
            j->p++;
            js_ws(j);
            if (!js_skip_value(j, depth + 1) || (next = js_next(j, '}')) == 0)
                return 0;
            if (next == 2)
                return 1;
        }
    case 't':
        if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
            j->p += 4;
            return 1;
        }
        return 0;
    case 'f':
        if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
            j->p += 5;
            return 1;
        }
        return 0;
    case 'n':
        if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
            j->p += 4;
            return 1;
        }
        return 0;
    default:
        return js_number_span(j, &s, &e, &is_int);
    }
}

typedef struct {
    int64_t *img, *cat;
    double *score, *bbox;
    Py_ssize_t n, cap;
} js_cols;

static int
js_push(js_cols *c)
{
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 4096;
        void *a = PyMem_RawRealloc(c->img, (size_t)cap * sizeof(int64_t));
        if (a == NULL)
            return -1;
        c->img = (int64_t *)a;
        if ((a = PyMem_RawRealloc(c->cat, (size_t)cap * sizeof(int64_t))) == NULL)
            return -1;
        c->cat = (int64_t *)a;
        if ((a = PyMem_RawRealloc(c->score, (size_t)cap * sizeof(double))) == NULL)
            return -1;
        c->score = (double *)a;
        if ((a = PyMem_RawRealloc(c->bbox, (size_t)cap * 4 * sizeof(double))) == NULL)
            return -1;
        c->bbox = (double *)a;
        c->cap = cap;
    }
    return 0;
}

/* 1: scanned, 0: outside the subset, -1: out of memory */
static int
js_scan_results(js_t *j, js_cols *c)
{
    js_ws(j);
    if (j->p >= j->end || *j->p != '[')
        return 0;
    j->p++;
    js_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        goto tail;
    }
    for (;;) {
        int seen = 0, k, next;
        Py_ssize_t r;
        if (js_push(c) < 0)
            return -1;
        r = c->n;
        if (j->p >= j->end || *j->p != '{')
            return 0;
        j->p++;
        js_ws(j);
        for (;;) {
            const unsigned char *key;
            size_t kn;
            if (!js_string(j, &key, &kn, 0))
                return 0;
            js_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return 0;
            j->p++;
            js_ws(j);
            if (kn == 8 && memcmp(key, "image_id", 8) == 0) {
                if ((seen & 1) || !js_int(j, &c->img[r]))
                    return 0;
                seen |= 1;
            } else if (kn == 11 && memcmp(key, "category_id", 11) == 0) {
                if ((seen & 2) || !js_int(j, &c->cat[r]))
                    return 0;
                seen |= 2;
            } else if (kn == 5 && memcmp(key, "score", 5) == 0) {
                if ((seen & 4) || !js_float(j, &c->score[r]))
                    return 0;
                seen |= 4;
            } else if (kn == 4 && memcmp(key, "bbox", 4) == 0) {
                if ((seen & 8) || j->p >= j->end || *j->p != '[')
                    return 0;
                j->p++;
                for (k = 0; k < 4; k++) {
                    js_ws(j);
                    if (!js_float(j, &c->bbox[4 * r + k]))
                        return 0;
                    js_ws(j);
                    if (j->p >= j->end || *j->p != (k < 3 ? ',' : ']'))
                        return 0;
                    j->p++;
                }
                seen |= 8;
            } else if (!js_skip_value(j, 1)) {
                return 0;
            }
            if ((next = js_next(j, '}')) == 0)
                return 0;
            if (next == 2)
                break;
        }
        if (seen != 15)
            return 0;
        c->n = r + 1;
        if ((next = js_next(j, ']')) == 0)
            return 0;
        if (next == 2)
            break;
    }
tail:
    js_ws(j);
    return j->p == j->end;
}

static PyObject *
scan_coco_results(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    js_t j;
    js_cols c;
    int rc;
    PyObject *result = NULL;
    (void)self;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    memset(&c, 0, sizeof c);
    j.p = (const unsigned char *)view.buf;
    j.end = j.p + view.len;
    rc = js_scan_results(&j, &c); /* with the GIL: numbers may need PyOS_string_to_double */
    if (rc < 0)
        PyErr_NoMemory();
    else if (rc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
    else
        result = Py_BuildValue(
            "(ny#y#y#y#)", c.n, (const char *)(c.img ? (void *)c.img : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.cat ? (void *)c.cat : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.score ? (void *)c.score : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.bbox ? (void *)c.bbox : (void *)""),
            (Py_ssize_t)(c.n * 32));
    PyMem_RawFree(c.img);
    PyMem_RawFree(c.cat);
    PyMem_RawFree(c.score);
    PyMem_RawFree(c.bbox);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_detections", scan_detections, METH_VARARGS,
     "scan_detections(data[, table]) -> (values, id_start, id_len, line, error[, image_idx])\n\n"
     "Scan `<image_id> <score> <xmin> <ymin> <xmax> <ymax>` lines of a bytes-like object.\n"
     "values: bytearray of N*5 float64; id_start, id_len, line: bytearrays of N int64\n"
     "(line numbers 1-based, as bytes.splitlines() counts them); error: None or\n"
     "(line_number, kind, token_start, token_len) with kind 'fields', 'number' or\n"
     "'binary'. Numbers equal Python's float() of the token bit for bit. With an id_table,\n"
     "image_idx (bytearray of N int64) holds each id's position in it, or -1."},
    {"scan_detection_files", scan_detection_files, METH_VARARGS,
     "scan_detection_files(paths, table) -> (status, counts, scores, boxes, image_idx)\n\n"
     "Read and scan detection files into shared columns; status[i] is 1 for a file left\n"
     "to the reference path (see the C source)."},
    {"scan_coco_results", scan_coco_results, METH_O,
     "scan_coco_results(data) -> None or (n, image_id, category_id, score, bbox)\n\n"
     "Columns of a COCO results JSON file inside a strict subset (see the C source);\n"
     "None: decode the file with msgspec / json as before."},
    {"id_table", id_table, METH_O,
     "id_table(keys) -> table for scan_detections: keys is a sequence of bytes; a token\n"
     "equal to keys[i] maps to i (the last i for a repeated key)."},
    {"scan_voc_annotations", scan_voc_annotations, METH_O,
     "scan_voc_annotations(datas) -> (out, fallback)\n\n"
     "Object records (as deteval.io.voc._OBJECT_LINES writes them) of the VOC annotation\n"
     "files (a list of bytes) inside a strict XML subset; fallback[i] is 1 for a file\n"
     "outside it (nothing written; parse it with lxml), else 0."},
    {"scan_voc_files", scan_voc_files, METH_O,
     "scan_voc_files(paths) -> (fallback, counts, names, name_idx, boxes, difficult, ok)\n\n"
     "Read and scan VOC annotation files into columns (see the C source for the layout);\n"
     "fallback[i] is 1 for a file left to Python and lxml."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "deteval._textscan",
    "Fast scanner for VOC detection text files (optional; deteval falls back to Python).",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__textscan(void)
{
    init_classes();
    xs_init_classes();
    return PyModule_Create(&module);
}
