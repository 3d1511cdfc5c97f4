/* deteval._textscan: COCO results JSON, a strict subset (scan_coco_results).
 *
 * Reference (Python): msgspec / json decoding in deteval.io.coco.load_coco_results.
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_COCO_RESULTS_H
#define DETEVAL_TEXTSCAN_COCO_RESULTS_H

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

/* The segmentation columns of scan_coco_segm_results: per record the RLE's size and its
 * decoded runs (all records' runs in one growing array). */
typedef struct {
    int64_t *h, *w, *len, *total, *area;
    uint32_t *runs;
    Py_ssize_t nruns, runcap;
    int bbox; /* -1: not yet known, 0: no record has a bbox, 1: every record has one */
} js_segm;

typedef struct {
    int64_t *img, *cat;
    double *score, *bbox;
    Py_ssize_t n, cap;
    js_segm *segm; /* NULL: plain box results */
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
        if (c->segm) {
            js_segm *g = c->segm;
            int64_t **cols[5] = {&g->h, &g->w, &g->len, &g->total, &g->area};
            int k;
            for (k = 0; k < 5; k++) {
                if ((a = PyMem_RawRealloc(*cols[k], (size_t)cap * sizeof(int64_t))) == NULL)
                    return -1;
                *cols[k] = (int64_t *)a;
            }
        }
        c->cap = cap;
    }
    return 0;
}

/* The compressed COCO RLE string at j->p (printable ASCII '0'..'o'; JSON's escape of '\\'
 * is the only escape) decoded into record r's runs, as deteval._kernels.rle_decode does.
 * 1: decoded, 0: outside the subset (the typed reader then decides), -1: out of memory. */
static int
js_rle_counts(js_t *j, js_segm *g, Py_ssize_t r)
{
    const unsigned char *p = j->p;
    Py_ssize_t m = 0, start = g->nruns;
    int64_t sum = 0, fg = 0;
    if (p >= j->end || *p != '"')
        return 0;
    p++;
    for (;;) {
        int64_t x;
        Py_ssize_t q = 0;
        if (p >= j->end)
            return 0;
        if (*p == '"')
            break;
        if (rle_read_count(p, j->end - p, &q, 1, &x) != RLE_COUNT_OK)
            return 0; /* also a closing quote inside a count */
        p += q;
        if (m > 2)
            x += (int64_t)g->runs[start + m - 2];
        if (x < 0 || x > (int64_t)UINT32_MAX)
            return 0;
        if (g->nruns == g->runcap) {
            Py_ssize_t cap = g->runcap ? 2 * g->runcap : 1 << 16;
            void *a = PyMem_RawRealloc(g->runs, (size_t)cap * sizeof(uint32_t));
            if (a == NULL)
                return -1;
            g->runs = (uint32_t *)a;
            g->runcap = cap;
        }
        g->runs[g->nruns++] = (uint32_t)x;
        sum += x;
        if (m & 1)
            fg += x;
        m++;
    }
    j->p = p + 1;
    g->len[r] = m;
    g->total[r] = sum;
    g->area[r] = fg;
    return 1;
}

/* {"size": [h, w], "counts": "<compressed RLE>"} (each key once, no others) into record r.
 * 1: scanned, 0: outside the subset, -1: out of memory. */
static int
js_segmentation(js_t *j, js_segm *g, Py_ssize_t r)
{
    int seen = 0;
    if (j->p >= j->end || *j->p != '{')
        return 0;
    j->p++;
    js_ws(j);
    for (;;) {
        const unsigned char *key;
        size_t kn;
        int next;
        if (!js_string(j, &key, &kn, 0))
            return 0;
        js_ws(j);
        if (j->p >= j->end || *j->p != ':')
            return 0;
        j->p++;
        js_ws(j);
        if (kn == 4 && memcmp(key, "size", 4) == 0 && !(seen & 1)) {
            if (j->p >= j->end || *j->p != '[')
                return 0;
            j->p++;
            js_ws(j);
            if (!js_int(j, &g->h[r]) || js_next(j, ']') != 1 || !js_int(j, &g->w[r]) ||
                js_next(j, ']') != 2)
                return 0;
            seen |= 1;
        } else if (kn == 6 && memcmp(key, "counts", 6) == 0 && !(seen & 2)) {
            int rc = js_rle_counts(j, g, r);
            if (rc <= 0)
                return rc;
            seen |= 2;
        } else {
            return 0;
        }
        if ((next = js_next(j, '}')) == 0)
            return 0;
        if (next == 2)
            break;
    }
    return seen == 3;
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
            } else if (c->segm && kn == 12 && memcmp(key, "segmentation", 12) == 0) {
                int rc;
                if (seen & 16)
                    return 0;
                if ((rc = js_segmentation(j, c->segm, r)) <= 0)
                    return rc;
                seen |= 16;
            } else if (!js_skip_value(j, 1)) {
                return 0;
            }
            if ((next = js_next(j, '}')) == 0)
                return 0;
            if (next == 2)
                break;
        }
        if (c->segm) { /* a segmentation each; a bbox in every record or in none */
            int with_box = (seen & 8) != 0;
            if ((seen & 23) != 23 || (c->segm->bbox >= 0 && c->segm->bbox != with_box))
                return 0;
            c->segm->bbox = with_box;
            if (!with_box)
                for (k = 0; k < 4; k++)
                    c->bbox[4 * r + k] = 0.0;
        } else if (seen != 15)
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

/* The columns of a results file, with the segmentation columns when `segm` (see the
 * comments of scan_coco_results above and of scan_coco_segm_results below). */
static PyObject *
scan_results_file(PyObject *arg, int segm)
{
    Py_buffer view;
    js_t j;
    js_cols c;
    js_segm g;
    int rc;
    PyObject *result = NULL;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    memset(&c, 0, sizeof c);
    memset(&g, 0, sizeof g);
    g.bbox = -1;
    c.segm = segm ? &g : NULL;
    j.p = (const unsigned char *)view.buf;
    j.end = j.p + view.len;
    rc = js_scan_results(&j, &c); /* with the GIL: numbers may need PyOS_string_to_double */
    if (rc < 0)
        PyErr_NoMemory();
    else if (rc == 0 || (segm && c.n == 0)) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
    else if (!segm)
        result = Py_BuildValue(
            "(ny#y#y#y#)", c.n, (const char *)(c.img ? (void *)c.img : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.cat ? (void *)c.cat : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.score ? (void *)c.score : (void *)""),
            (Py_ssize_t)(c.n * 8), (const char *)(c.bbox ? (void *)c.bbox : (void *)""),
            (Py_ssize_t)(c.n * 32));
    else {
        Py_ssize_t n8 = c.n * 8;
        result = Py_BuildValue(
            "(ny#y#y#y#Oy#y#y#y#y#y#)", c.n, (const char *)c.img, n8, (const char *)c.cat, n8,
            (const char *)c.score, n8, (const char *)c.bbox, c.n * 32,
            g.bbox ? Py_True : Py_False, (const char *)g.h, n8, (const char *)g.w, n8,
            (const char *)(g.runs ? (void *)g.runs : (void *)""), g.nruns * 4,
            (const char *)g.len, n8, (const char *)g.total, n8, (const char *)g.area, n8);
    }
    PyMem_RawFree(c.img);
    PyMem_RawFree(c.cat);
    PyMem_RawFree(c.score);
    PyMem_RawFree(c.bbox);
    PyMem_RawFree(g.h);
    PyMem_RawFree(g.w);
    PyMem_RawFree(g.len);
    PyMem_RawFree(g.total);
    PyMem_RawFree(g.area);
    PyMem_RawFree(g.runs);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
scan_coco_results(PyObject *self, PyObject *arg)
{
    (void)self;
    return scan_results_file(arg, 0);
}

/* scan_coco_segm_results(data) -> None or (n, image_id, category_id, score, bbox, with_bbox,
 *                                           height, width, runs, lengths, totals, areas)
 * Segmentation results inside the subset of scan_coco_results, where each record also has
 * "segmentation": {"size": [h, w], "counts": "<compressed RLE>"} (nothing else in it) and
 * "bbox" is in every record or in none (bbox then zeros, with_bbox False). The counts are
 * decoded as deteval._kernels.rle_decode does: runs (uint32, all records'), and per record
 * int64 lengths, totals (pixels) and areas (foreground pixels). Anything else: None. */
static PyObject *
scan_coco_segm_results(PyObject *self, PyObject *arg)
{
    (void)self;
    return scan_results_file(arg, 1);
}

#endif /* DETEVAL_TEXTSCAN_COCO_RESULTS_H */
