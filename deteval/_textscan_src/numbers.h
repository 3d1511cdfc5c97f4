/* deteval._textscan: shared number parsing: Python float() bit for bit (exact fast path, SWAR digits).
 *
 * Reference (Python): float() / PyOS_string_to_double.
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_NUMBERS_H
#define DETEVAL_TEXTSCAN_NUMBERS_H


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

#endif /* DETEVAL_TEXTSCAN_NUMBERS_H */
