/* deteval._textscan: VOC annotation XML, a strict subset (scan_voc_annotations) and its binary columns.
 *
 * Reference (Python): deteval.io.voc (lxml + the XSLT _OBJECT_LINES_XSL, and _read_objects).
 * Part of the one extension built from deteval/_textscan.c (a unity build: every part
 * is included there once, after the system headers; all functions are static). */
#ifndef DETEVAL_TEXTSCAN_VOC_XML_H
#define DETEVAL_TEXTSCAN_VOC_XML_H

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

#define xs_grow grow_array

#define xs_fnv(s, n) fnv1a((const unsigned char *)(s), (n))

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

#endif /* DETEVAL_TEXTSCAN_VOC_XML_H */
