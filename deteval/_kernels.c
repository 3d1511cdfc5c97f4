/* deteval._kernels: compiled kernels of the matching stage (optional).
 *
 * deteval.match has a numpy implementation of everything here; it is the reference,
 * and the tests compare the two on random and edge-case inputs. Inputs are
 * C-contiguous buffers (numpy arrays) of the stated types, checked for length here;
 * outputs are bytearrays for numpy.frombuffer.
 *
 * rank_order(major, scores, tie) -> order
 *     major: int64[N] (>= 0), scores: float64[N] (no NaN), tie: int64[N] or None.
 *     The permutation sorting rows by (major ascending, score descending, tie
 *     ascending, row ascending), i.e. np.lexsort((tie, -scores, major)): stable LSD
 *     radix sorts (8-bit digits, constant digits skipped) on order-preserving 64-bit
 *     keys. -0.0 and 0.0 are equal scores, as in any comparison.
 *
 * voc_match(order, det_image, det_class, det_boxes, gt_image, gt_class, gt_boxes,
 *           gt_difficult, num_groups_per_image, iou_threshold, inclusive) -> outcome
 *     order: int64[N], detections in ranked order; det_image/det_class: int64[N];
 *     det_boxes: float64[N*4]; gt_image/gt_class: int64[G]; gt_boxes: float64[G*4];
 *     gt_difficult: uint8[G]; groups are image * num_groups_per_image + class.
 *     outcome: int8 per ranked position: 1 TP, 0 FP, -1 ignored, with the VOC rules
 *     of deteval.match.match_voc (best GT over all GT of the group, first in row
 *     order among equal IoU, a NaN IoU skipped like a pair without overlap; IoU >= threshold if inclusive else >; difficult best GT:
 *     ignored; a claimed best GT: FP). IoU uses the +1 pixel convention with the same
 *     operations in the same order as deteval.match.iou_voc, so the same doubles
 *     (built with -ffp-contract=off: no fused multiply-add). Returns None when the
 *     dense group table would be too large (the caller uses numpy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* a C-contiguous buffer of n items of `size` bytes (n < 0: any n, returned) */
static int
get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t size, Py_ssize_t *n, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % size != 0 || (*n >= 0 && view->len / size != *n)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes, got %zd bytes",
                     what, *n, size, view->len);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    *n = view->len / size;
    return 0;
}


/* Replace each exported buffer by a private copy of its bytes (and release the export).
 * The kernels validate indices and then read them, some with the GIL released: reading
 * only private copies means another thread writing into the caller's arrays (numpy
 * releases the GIL in its own loops) cannot change what was checked. copies[i] is freed
 * by the caller; views keep .buf pointing at the copy and .obj == NULL. */
static int
privatize(Py_buffer *views, void **copies, int count)
{
    int i;
    for (i = 0; i < count; i++) {
        void *mem;
        copies[i] = NULL;
        if (views[i].obj == NULL)
            continue;
        mem = PyMem_RawMalloc(views[i].len ? (size_t)views[i].len : 1);
        if (mem == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(mem, views[i].buf, (size_t)views[i].len);
        PyBuffer_Release(&views[i]);
        views[i].buf = mem;
        copies[i] = mem;
    }
    return 0;
}

static void
free_copies(void **copies, int count)
{
    int i;
    for (i = 0; i < count; i++)
        PyMem_RawFree(copies[i]);
}

/* Outcome of a VOC detection, as deteval.match's TP / FP / IGNORED */
enum outcome { OUTCOME_FP = 0, OUTCOME_TP = 1, OUTCOME_IGNORED = -1 };

/* ---------------------------------------------------------------- rank_order */

typedef struct {
    uint64_t key;
    int64_t row;
} pair_t;

/* stable LSD radix sort of src[0..n) by key, dst: scratch of n; returns the buffer that
 * holds the sorted pairs (src or dst) */
static pair_t *
radix_sort(pair_t *src, pair_t *dst, Py_ssize_t n)
{
    Py_ssize_t count[8][256];
    Py_ssize_t i;
    int d, b;
    memset(count, 0, sizeof count);
    for (i = 0; i < n; i++) {
        uint64_t k = src[i].key;
        for (d = 0; d < 8; d++)
            count[d][(k >> (8 * d)) & 0xff]++;
    }
    for (d = 0; d < 8; d++) {
        Py_ssize_t sum = 0, c;
        int shift = 8 * d, trivial = 0;
        pair_t *t;
        for (b = 0; b < 256; b++)
            if (count[d][b] == n)
                trivial = 1;
        if (trivial)
            continue; /* every key has the same digit here */
        for (b = 0; b < 256; b++) {
            c = count[d][b];
            count[d][b] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            dst[count[d][(src[i].key >> shift) & 0xff]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* stable insertion sort of a[0..n) by key */
static void
insertion_sort(pair_t *a, Py_ssize_t n)
{
    Py_ssize_t j, q;
    for (j = 1; j < n; j++) {
        pair_t x = a[j];
        for (q = j; q > 0 && a[q - 1].key > x.key; q--)
            a[q] = a[q - 1];
        a[q] = x;
    }
}

/* stable MSD radix sort of a[0..n) by key, from byte `d` (7: most significant) down;
 * tmp: scratch of n. Digits shared by all keys are skipped; small buckets finish with
 * an insertion sort, so a few passes sort keys with many distinct values. */
static void
msd_sort(pair_t *a, pair_t *tmp, Py_ssize_t n, int d)
{
    Py_ssize_t count[256], pos[256], i, sum;
    int b, shift;
    for (; d >= 0; d--) {
        if (n <= 32) {
            insertion_sort(a, n);
            return;
        }
        shift = 8 * d;
        memset(count, 0, sizeof count);
        for (i = 0; i < n; i++)
            count[(a[i].key >> shift) & 0xff]++;
        for (b = 0; b < 256; b++)
            if (count[b] == n)
                break;
        if (b == 256)
            break; /* this digit splits the keys */
    }
    if (d < 0)
        return; /* all keys equal: input order stands */
    for (sum = 0, b = 0; b < 256; b++) {
        pos[b] = sum;
        sum += count[b];
    }
    for (i = 0; i < n; i++)
        tmp[pos[(a[i].key >> shift) & 0xff]++] = a[i];
    memcpy(a, tmp, (size_t)n * sizeof(pair_t));
    for (sum = 0, b = 0; b < 256; b++) {
        if (count[b] > 1)
            msd_sort(a + sum, tmp + sum, count[b], d - 1);
        sum += count[b];
    }
}

static uint64_t
desc_score_key(double s)
{
    uint64_t u;
    if (s == 0.0)
        s = 0.0; /* -0.0 sorts with 0.0 */
    memcpy(&u, &s, sizeof u);
    u = (u >> 63) ? ~u : (u | ((uint64_t)1 << 63)); /* ascending with s */
    return ~u;                                       /* descending */
}

static PyObject *
rank_order(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"major", "scores", "tie", NULL};
    PyObject *major_o, *scores_o, *tie_o, *out = NULL;
    Py_buffer major = {0}, scores = {0}, tie = {0};
    Py_ssize_t n = -1, i;
    pair_t *p = NULL, *tmp = NULL;
    int64_t *order;
    const int64_t *mj, *tk = NULL;
    const double *sc;
    int tie_sorted = 1, major_ok = 1;
    Py_buffer views[3];
    void *copies[3] = {NULL, NULL, NULL};
    int v;
    (void)self;
    memset(views, 0, sizeof views);

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:rank_order", kwlist, &major_o, &scores_o, &tie_o))
        return NULL;
    if (get_buf(scores_o, &scores, sizeof(double), &n, "scores") < 0)
        return NULL;
    if (get_buf(major_o, &major, sizeof(int64_t), &n, "major") < 0)
        goto done;
    if (tie_o != Py_None && get_buf(tie_o, &tie, sizeof(int64_t), &n, "tie") < 0)
        goto done;
    views[0] = major;
    views[1] = scores;
    views[2] = tie;
    memset(&major, 0, sizeof major);
    memset(&scores, 0, sizeof scores);
    memset(&tie, 0, sizeof tie);
    if (privatize(views, copies, 3) < 0)
        goto done;
    mj = (const int64_t *)views[0].buf;
    sc = (const double *)views[1].buf;
    if (tie_o != Py_None)
        tk = (const int64_t *)views[2].buf;
    out = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    p = (pair_t *)PyMem_RawMalloc(sizeof(pair_t) * (size_t)(n ? n : 1));
    tmp = (pair_t *)PyMem_RawMalloc(sizeof(pair_t) * (size_t)(n ? n : 1));
    if (out == NULL || p == NULL || tmp == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    order = (int64_t *)PyByteArray_AS_STRING(out);
    for (i = 0; i < n; i++) {
        if (mj[i] < 0)
            major_ok = 0;
        if (sc[i] != sc[i])
            major_ok = 0; /* NaN */
        if (tk != NULL && i && tk[i] < tk[i - 1])
            tie_sorted = 0;
    }
    if (!major_ok) {
        PyErr_SetString(PyExc_ValueError, "rank_order: expected major >= 0 and no NaN score");
        Py_CLEAR(out);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    {
        /* Rows grouped by major with a stable counting sort when the majors are few
         * enough for a count table, then each group (cache-sized, typically) sorted
         * by tie and then by score with stable radix sorts: (major, score desc, tie,
         * row). Otherwise the same LSD passes over the whole array, major last. */
        pair_t *cur = p;
        int64_t max_major = 0;
        Py_ssize_t *bound = NULL;
        for (i = 0; i < n; i++)
            if (mj[i] > max_major)
                max_major = mj[i];
        if (n && max_major < 4 * (int64_t)n + 65536)
            bound = (Py_ssize_t *)PyMem_RawCalloc((size_t)max_major + 2, sizeof(Py_ssize_t));
        if (bound != NULL) {
            int64_t m;
            for (i = 0; i < n; i++)
                bound[mj[i] + 1]++;
            for (m = 0; m <= max_major; m++)
                bound[m + 1] += bound[m];
            for (i = 0; i < n; i++) /* bound[m] advances to the end of group m */
                p[bound[mj[i]]++].row = i;
            for (m = max_major + 1; m > 0; m--)
                bound[m] = bound[m - 1];
            bound[0] = 0;
            for (m = 0; m <= max_major; m++) {
                Py_ssize_t a = bound[m], e = bound[m + 1], len = e - a, j;
                pair_t *res = p + a, *other = tmp + a;
                if (len < 2)
                    continue;
                if (!tie_sorted) {
                    for (j = 0; j < len; j++)
                        res[j].key = (uint64_t)tk[res[j].row] ^ ((uint64_t)1 << 63);
                    msd_sort(res, other, len, 7);
                }
                for (j = 0; j < len; j++)
                    res[j].key = desc_score_key(sc[res[j].row]);
                msd_sort(res, other, len, 7);
            }
            PyMem_RawFree(bound);
        }
        else {
            for (i = 0; i < n; i++)
                cur[i].row = i;
            if (!tie_sorted) {
                for (i = 0; i < n; i++)
                    cur[i].key = (uint64_t)tk[i] ^ ((uint64_t)1 << 63);
                cur = radix_sort(cur, cur == p ? tmp : p, n);
            }
            for (i = 0; i < n; i++)
                cur[i].key = desc_score_key(sc[cur[i].row]);
            cur = radix_sort(cur, cur == p ? tmp : p, n);
            for (i = 0; i < n; i++)
                cur[i].key = (uint64_t)mj[cur[i].row];
            cur = radix_sort(cur, cur == p ? tmp : p, n);
        }
        for (i = 0; i < n; i++)
            order[i] = cur[i].row;
    }
    Py_END_ALLOW_THREADS
done:
    PyMem_RawFree(p);
    PyMem_RawFree(tmp);
    if (scores.obj)
        PyBuffer_Release(&scores);
    if (major.obj)
        PyBuffer_Release(&major);
    if (tie.obj)
        PyBuffer_Release(&tie);
    for (v = 0; v < 3; v++)
        if (views[v].obj)
            PyBuffer_Release(&views[v]);
    free_copies(copies, 3);
    return out;
}

/* Counting sort of g rows by key a[i] * mult + (b ? b[i] : 0), each in [0, groups): rows
 * of key k are rows[start[k]] .. rows[start[k + 1] - 1], in row order. start holds
 * groups + 1 zeroed entries. Returns the largest group's size. GIL not needed. */
static Py_ssize_t
group_rows(const int64_t *a, const int64_t *b, int64_t mult, Py_ssize_t g, size_t groups,
           int64_t *start, int64_t *rows)
{
    Py_ssize_t i, largest = 0;
    size_t q;
    for (i = 0; i < g; i++)
        start[a[i] * mult + (b ? b[i] : 0) + 1]++;
    for (q = 0; q < groups; q++) {
        if (start[q + 1] > largest)
            largest = (Py_ssize_t)start[q + 1];
        start[q + 1] += start[q];
    }
    for (i = 0; i < g; i++) /* start[k] advances to the end of group k */
        rows[start[a[i] * mult + (b ? b[i] : 0)]++] = i;
    for (q = groups; q > 0; q--)
        start[q] = start[q - 1];
    start[0] = 0;
    return largest;
}

/* ----------------------------------------------------------------- voc_match */

/* argument positions of voc_match */
enum {
    V_ORDER = 0, V_DET_IMAGE = 1, V_DET_CLASS = 2, V_DET_BOXES = 3, V_GT_IMAGE = 4,
    V_GT_CLASS = 5, V_GT_BOXES = 6, V_GT_DIFFICULT = 7, N_VOC_MATCH_ARGS
};

static PyObject *
voc_match(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "order", "det_image", "det_class", "det_boxes", "gt_image", "gt_class", "gt_boxes",
        "gt_difficult", "num_groups_per_image", "iou_threshold", "inclusive", NULL};
    PyObject *o[N_VOC_MATCH_ARGS], *out = NULL;
    Py_buffer b[N_VOC_MATCH_ARGS];
    long long per_image;
    double thr;
    int inclusive, k;
    Py_ssize_t n = -1, g = -1, n4, g4, i;
    int64_t max_image = 0;
    int64_t *start = NULL;
    int64_t *gt_sorted = NULL;
    unsigned char *claimed = NULL;
    size_t groups = 0;
    void *copies[8] = {NULL};
    (void)self;

    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOLdp:voc_match", kwlist, &o[V_ORDER], &o[V_DET_IMAGE], &o[V_DET_CLASS], &o[V_DET_BOXES], &o[V_GT_IMAGE],
                          &o[V_GT_CLASS], &o[V_GT_BOXES], &o[V_GT_DIFFICULT], &per_image, &thr, &inclusive))
        return NULL;
    if (get_buf(o[V_ORDER], &b[V_ORDER], 8, &n, "order") < 0 || get_buf(o[V_DET_IMAGE], &b[V_DET_IMAGE], 8, &n, "det_image") < 0 ||
        get_buf(o[V_DET_CLASS], &b[V_DET_CLASS], 8, &n, "det_class") < 0)
        goto done;
    n4 = 4 * n;
    if (get_buf(o[V_DET_BOXES], &b[V_DET_BOXES], 8, &n4, "det_boxes") < 0 ||
        get_buf(o[V_GT_IMAGE], &b[V_GT_IMAGE], 8, &g, "gt_image") < 0 || get_buf(o[V_GT_CLASS], &b[V_GT_CLASS], 8, &g, "gt_class") < 0)
        goto done;
    g4 = 4 * g;
    if (get_buf(o[V_GT_BOXES], &b[V_GT_BOXES], 8, &g4, "gt_boxes") < 0 ||
        get_buf(o[V_GT_DIFFICULT], &b[V_GT_DIFFICULT], 1, &g, "gt_difficult") < 0)
        goto done;
    if (privatize(b, copies, 8) < 0)
        goto done;
    {
        const int64_t *order = (const int64_t *)b[V_ORDER].buf, *di = (const int64_t *)b[V_DET_IMAGE].buf,
                      *dc = (const int64_t *)b[V_DET_CLASS].buf, *gi = (const int64_t *)b[V_GT_IMAGE].buf,
                      *gc = (const int64_t *)b[V_GT_CLASS].buf;
        const double *db = (const double *)b[V_DET_BOXES].buf, *gb = (const double *)b[V_GT_BOXES].buf;
        const unsigned char *gd = (const unsigned char *)b[V_GT_DIFFICULT].buf;
        signed char *res;
        size_t limit;
        if (per_image <= 0) {
            PyErr_SetString(PyExc_ValueError, "voc_match: expected num_groups_per_image > 0");
            goto done;
        }
        for (i = 0; i < n; i++) {
            if (order[i] < 0 || order[i] >= n || di[i] < 0 || dc[i] < 0 || dc[i] >= per_image) {
                PyErr_SetString(PyExc_ValueError, "voc_match: index out of range");
                goto done;
            }
            if (di[i] > max_image)
                max_image = di[i];
        }
        for (i = 0; i < g; i++) {
            if (gi[i] < 0 || gc[i] < 0 || gc[i] >= per_image) {
                PyErr_SetString(PyExc_ValueError, "voc_match: index out of range");
                goto done;
            }
            if (gi[i] > max_image)
                max_image = gi[i];
        }
        /* dense group table only when it is not much larger than the data */
        limit = 4 * (size_t)(n + g) + ((size_t)1 << 22);
        if ((uint64_t)max_image >= (uint64_t)(limit / (size_t)per_image)) {
            Py_INCREF(Py_None);
            out = Py_None;
            goto done;
        }
        groups = ((size_t)max_image + 1) * (size_t)per_image;
        out = PyByteArray_FromStringAndSize(NULL, n);
        start = (int64_t *)PyMem_RawCalloc(groups + 1, sizeof(int64_t));
        gt_sorted = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(g ? g : 1));
        claimed = (unsigned char *)PyMem_RawCalloc((size_t)(g ? g : 1), 1);
        if (out == NULL || start == NULL || gt_sorted == NULL || claimed == NULL) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            Py_CLEAR(out);
            goto done;
        }
        res = (signed char *)PyByteArray_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        group_rows(gi, gc, per_image, g, groups, start, gt_sorted);
        for (i = 0; i < n; i++) {
            int64_t d = order[i], a, e, j, best_gt = -1;
            size_t grp = (size_t)(di[d] * per_image + dc[d]);
            const double *bb = db + 4 * d;
            double best = -INFINITY;
            int hit;
            a = start[grp];
            e = start[grp + 1];
            for (j = a; j < e; j++) {
                int64_t r = gt_sorted[j];
                const double *gg = gb + 4 * r;
                double iw = (bb[2] < gg[2] ? bb[2] : gg[2]) - (bb[0] > gg[0] ? bb[0] : gg[0]) + 1.0;
                double ih = (bb[3] < gg[3] ? bb[3] : gg[3]) - (bb[1] > gg[1] ? bb[1] : gg[1]) + 1.0;
                double inter = iw * ih;
                double uni = (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0) +
                             (gg[2] - gg[0] + 1.0) * (gg[3] - gg[1] + 1.0) - inter;
                double ov = (iw > 0 && ih > 0) ? inter / uni : -INFINITY;
                if (ov > best) { /* a NaN IoU (overflowing boxes) is skipped, as -inf */
                    best = ov;
                    best_gt = r;
                }
            }
            hit = best_gt >= 0 && (inclusive ? best >= thr : best > thr);
            if (!hit)
                res[i] = OUTCOME_FP;
            else if (gd[best_gt])
                res[i] = OUTCOME_IGNORED;
            else if (claimed[best_gt])
                res[i] = OUTCOME_FP;
            else {
                claimed[best_gt] = 1;
                res[i] = OUTCOME_TP;
            }
        }
        Py_END_ALLOW_THREADS
    }
done:
    for (k = 0; k < 8; k++)
        if (b[k].obj)
            PyBuffer_Release(&b[k]);
    free_copies(copies, 8);
    PyMem_RawFree(start);
    PyMem_RawFree(gt_sorted);
    PyMem_RawFree(claimed);
    return out;
}

/* ---------------------------------------------------------------- coco_match */

/* coco_match(rec_group, rec_boxes, gt_group, gt_boxes, gt_crowd, gt_ignored, thresholds,
 *            num_groups) -> (matched, matched_ignored) or None
 *
 * rec_group: int64[N], the (image, class) group of each record, records contiguous by
 * group and in rank order within it; rec_boxes: float64[N*4] (x, y, w, h); gt_group:
 * int64[G]; gt_boxes: float64[G*4]; gt_crowd: uint8[G]; gt_ignored: uint8[G*A] (GT
 * ignored at area range a); thresholds: float64[T], already min(t, 1 - 1e-10).
 * Outputs, bytearrays of N*A*T uint8 at [n, a, t]: matched, and matched to an ignored
 * GT. pycocotools' evaluateImg walk: per area range and threshold, each record in rank
 * order takes the GT of highest IoU >= threshold that is not taken (a crowd GT always
 * is available), non-ignored GT first, the later GT (row order) among equal IoUs. The
 * IoU is pycocotools' bbIou with the operations of deteval.match.coco_pair_ious (same
 * doubles); a NaN IoU never matches. None when the dense group table would be too large. */
/* argument positions of coco_match */
enum {
    C_REC_GROUP = 0, C_REC_BOXES = 1, C_GT_GROUP = 2, C_GT_BOXES = 3, C_GT_CROWD = 4,
    C_GT_IGNORED = 5, C_THRESHOLDS = 6, N_COCO_MATCH_ARGS
};

static PyObject *
coco_match(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "rec_group", "rec_boxes", "gt_group", "gt_boxes", "gt_crowd", "gt_ignored",
        "thresholds", "num_groups", NULL};
    PyObject *o[N_COCO_MATCH_ARGS], *out_m = NULL, *out_i = NULL, *result = NULL;
    Py_buffer b[N_COCO_MATCH_ARGS];
    long long num_groups;
    Py_ssize_t n = -1, n4, g = -1, g4, ga = -1, t_count = -1, i, a_count, at;
    int64_t *start = NULL, *gt_sorted = NULL, *cand = NULL;
    unsigned char *taken = NULL;
    double *ious = NULL;
    int k;
    void *copies[7] = {NULL};
    (void)self;

    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOL:coco_match", kwlist, &o[C_REC_GROUP], &o[C_REC_BOXES], &o[C_GT_GROUP], &o[C_GT_BOXES], &o[C_GT_CROWD],
                          &o[C_GT_IGNORED], &o[C_THRESHOLDS], &num_groups))
        return NULL;
    if (get_buf(o[C_REC_GROUP], &b[C_REC_GROUP], 8, &n, "rec_group") < 0)
        goto done;
    n4 = 4 * n;
    if (get_buf(o[C_REC_BOXES], &b[C_REC_BOXES], 8, &n4, "rec_boxes") < 0 || get_buf(o[C_GT_GROUP], &b[C_GT_GROUP], 8, &g, "gt_group") < 0)
        goto done;
    g4 = 4 * g;
    if (get_buf(o[C_GT_BOXES], &b[C_GT_BOXES], 8, &g4, "gt_boxes") < 0 || get_buf(o[C_GT_CROWD], &b[C_GT_CROWD], 1, &g, "gt_crowd") < 0 ||
        get_buf(o[C_GT_IGNORED], &b[C_GT_IGNORED], 1, &ga, "gt_ignored") < 0 ||
        get_buf(o[C_THRESHOLDS], &b[C_THRESHOLDS], 8, &t_count, "thresholds") < 0)
        goto done;
    if (g == 0 ? ga != 0 : ga % g != 0) {
        PyErr_SetString(PyExc_ValueError, "coco_match: gt_ignored must hold G*A flags");
        goto done;
    }
    a_count = g ? ga / g : 0;
    if (g == 0) { /* no GT: nothing matches; A is unknown here, the caller sizes it */
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    at = a_count * t_count;
    if (privatize(b, copies, 7) < 0)
        goto done;
    {
        const int64_t *rg = (const int64_t *)b[C_REC_GROUP].buf, *gg = (const int64_t *)b[C_GT_GROUP].buf;
        const double *rb = (const double *)b[C_REC_BOXES].buf, *gb = (const double *)b[C_GT_BOXES].buf;
        const double *thr = (const double *)b[C_THRESHOLDS].buf;
        const unsigned char *crowd = (const unsigned char *)b[C_GT_CROWD].buf;
        const unsigned char *gign = (const unsigned char *)b[C_GT_IGNORED].buf;
        unsigned char *mt, *mi;
        size_t limit = 4 * (size_t)(n + g) + ((size_t)1 << 22), groups;
        Py_ssize_t max_gt = 0;
        if (num_groups <= 0 || (uint64_t)num_groups > (uint64_t)limit) {
            if (num_groups <= 0) {
                PyErr_SetString(PyExc_ValueError, "coco_match: expected num_groups > 0");
                goto done;
            }
            Py_INCREF(Py_None);
            result = Py_None;
            goto done;
        }
        groups = (size_t)num_groups;
        for (i = 0; i < n; i++)
            if (rg[i] < 0 || (uint64_t)rg[i] >= (uint64_t)groups) {
                PyErr_SetString(PyExc_ValueError, "coco_match: group out of range");
                goto done;
            }
        for (i = 0; i < g; i++)
            if (gg[i] < 0 || (uint64_t)gg[i] >= (uint64_t)groups) {
                PyErr_SetString(PyExc_ValueError, "coco_match: group out of range");
                goto done;
            }
        if (at > 0 && n > PY_SSIZE_T_MAX / at) {
            PyErr_NoMemory();
            goto done;
        }
        out_m = PyByteArray_FromStringAndSize(NULL, n * at);
        out_i = PyByteArray_FromStringAndSize(NULL, n * at);
        start = (int64_t *)PyMem_RawCalloc(groups + 1, sizeof(int64_t));
        gt_sorted = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)g);
        taken = (unsigned char *)PyMem_RawCalloc((size_t)g * (size_t)(at ? at : 1), 1);
        if (out_m == NULL || out_i == NULL || start == NULL || gt_sorted == NULL || taken == NULL) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto done;
        }
        mt = (unsigned char *)PyByteArray_AS_STRING(out_m);
        mi = (unsigned char *)PyByteArray_AS_STRING(out_i);
        memset(mt, 0, (size_t)(n * at));
        memset(mi, 0, (size_t)(n * at));
        max_gt = group_rows(gg, NULL, 1, g, groups, start, gt_sorted);
        ious = (double *)PyMem_RawMalloc(sizeof(double) * (size_t)(max_gt ? max_gt : 1));
        cand = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(max_gt ? max_gt : 1));
        if (ious == NULL || cand == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < n; i++) {
            int64_t grp = rg[i], j0 = start[grp], j1 = start[grp + 1], j;
            const double *d = rb + 4 * i;
            double lowest = 1.0, det_area = d[2] * d[3];
            int a, t, pass;
            Py_ssize_t c, ncand = 0, u;
            if (j0 == j1)
                continue;
            for (t = 0; t < t_count; t++)
                if (thr[t] < lowest)
                    lowest = thr[t];
            /* candidates: the group's GT (row order) with IoU >= the lowest threshold */
            for (j = j0; j < j1; j++) {
                int64_t row = gt_sorted[j];
                const double *e = gb + 4 * row;
                double iw = (d[2] + d[0] < e[2] + e[0] ? d[2] + d[0] : e[2] + e[0]) -
                            (d[0] > e[0] ? d[0] : e[0]);
                double ih = (d[3] + d[1] < e[3] + e[1] ? d[3] + d[1] : e[3] + e[1]) -
                            (d[1] > e[1] ? d[1] : e[1]);
                double iou = 0.0;
                if (iw > 0 && ih > 0) {
                    double inter = iw * ih;
                    double uni = crowd[row] ? det_area : det_area + e[2] * e[3] - inter;
                    iou = inter / uni;
                }
                if (iou >= lowest) { /* (a NaN IoU is no candidate) */
                    ious[ncand] = iou;
                    cand[ncand++] = row;
                }
            }
            for (a = 0; a < a_count; a++) {
                for (t = 0; t < t_count && ncand; t++) {
                    Py_ssize_t slot = a * t_count + t;
                    int64_t m = -1;
                    double cur = thr[t];
                    for (pass = 0; pass < 2 && m < 0; pass++) { /* non-ignored, then ignored */
                        for (u = 0; u < ncand; u++) {
                            int64_t row = cand[u];
                            if (gign[row * a_count + a] != pass)
                                continue;
                            if (taken[row * at + slot] && !crowd[row])
                                continue;
                            if (!(ious[u] >= cur))
                                continue;
                            cur = ious[u];
                            m = row;
                        }
                    }
                    if (m >= 0) {
                        taken[m * at + slot] = 1;
                        c = i * at + slot;
                        mt[c] = 1;
                        mi[c] = gign[m * a_count + a];
                    }
                }
            }
        }
        Py_END_ALLOW_THREADS
        result = PyTuple_Pack(2, out_m, out_i);
    }
done:
    for (k = 0; k < 7; k++)
        if (b[k].obj)
            PyBuffer_Release(&b[k]);
    free_copies(copies, 7);
    Py_XDECREF(out_m);
    Py_XDECREF(out_i);
    PyMem_RawFree(start);
    PyMem_RawFree(gt_sorted);
    PyMem_RawFree(taken);
    PyMem_RawFree(ious);
    PyMem_RawFree(cand);
    return result;
}

/* ------------------------------------------------------------------ COCO RLE masks
 * Column-major run-length masks as COCO stores them: runs alternate background /
 * foreground, starting with background. References (Python): deteval.masks
 * decode_rle_string and rle_pair_ious_reference. */

/* rle_decode(strings) -> (counts: bytearray of uint32 runs, lengths, totals, areas: bytearrays
 * of int64 per string: runs, pixels, foreground pixels)
 * The compressed COCO string format: each count is written as 5-bit groups (chars
 * '0'+group, bit 0x20 = more groups follow, bit 0x10 of the last group = negative), and
 * from the third count on it is stored as the difference to the count two places back.
 * A string with a character outside '0'..'o', a truncated group or a count outside
 * [0, 2^32) raises ValueError naming the string's position. */
static PyObject *
rle_decode(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"strings", NULL};
    PyObject *seq, *fast = NULL, *counts = NULL, *lengths = NULL, *totals_o = NULL,
             *areas_o = NULL, *result = NULL;
    Py_ssize_t n, i, total = 0, cap = 1024;
    uint32_t *buf = NULL;
    int64_t *lens = NULL, *pix = NULL, *fg = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:rle_decode", kwlist, &seq))
        return NULL;
    fast = PySequence_Fast(seq, "rle_decode: expected a sequence of bytes");
    if (!fast)
        return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    buf = PyMem_RawMalloc(cap * sizeof(uint32_t));
    lens = PyMem_RawMalloc((n ? n : 1) * sizeof(int64_t));
    pix = PyMem_RawMalloc((n ? n : 1) * sizeof(int64_t));
    fg = PyMem_RawMalloc((n ? n : 1) * sizeof(int64_t));
    if (!buf || !lens || !pix || !fg) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        char *s;
        Py_ssize_t len, p = 0, m = 0;
        int64_t sum = 0, sum_fg = 0;
        if (PyUnicode_Check(item)) { /* a str straight from JSON: its UTF-8 bytes */
            const char *u = PyUnicode_AsUTF8AndSize(item, &len);
            if (u == NULL)
                goto done;
            s = (char *)u;
        }
        else if (PyBytes_AsStringAndSize(item, &s, &len) < 0)
            goto done;
        while (p < len) {
            int64_t x = 0;
            int k = 0, more = 1;
            while (more) {
                int c;
                if (p >= len || k > 12) {
                    PyErr_Format(PyExc_ValueError, "rle_decode: string %zd: truncated count", i);
                    goto done;
                }
                c = (unsigned char)s[p] - 48;
                if (c < 0 || c > 63) {
                    PyErr_Format(PyExc_ValueError,
                                 "rle_decode: string %zd: character %zd is not a count digit", i,
                                 p);
                    goto done;
                }
                x |= (int64_t)(c & 0x1f) << (5 * k);
                more = c & 0x20;
                p++;
                k++;
                if (!more && (c & 0x10))
                    x |= (int64_t)(-1) * ((int64_t)1 << (5 * k));
            }
            if (m > 2)
                x += (int64_t)buf[total + m - 2];
            if (x < 0 || x > (int64_t)UINT32_MAX) {
                PyErr_Format(PyExc_ValueError, "rle_decode: string %zd: run %zd is %lld", i, m,
                             (long long)x);
                goto done;
            }
            if (total + m >= cap) {
                uint32_t *grown;
                cap *= 2;
                grown = PyMem_RawRealloc(buf, cap * sizeof(uint32_t));
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                buf = grown;
            }
            buf[total + m] = (uint32_t)x;
            sum += x;
            if (m & 1)
                sum_fg += x;
            m++;
        }
        lens[i] = m;
        pix[i] = sum;
        fg[i] = sum_fg;
        total += m;
    }
    counts = PyByteArray_FromStringAndSize((const char *)buf, total * sizeof(uint32_t));
    lengths = PyByteArray_FromStringAndSize((const char *)lens, n * sizeof(int64_t));
    totals_o = PyByteArray_FromStringAndSize((const char *)pix, n * sizeof(int64_t));
    areas_o = PyByteArray_FromStringAndSize((const char *)fg, n * sizeof(int64_t));
    if (counts && lengths && totals_o && areas_o)
        result = PyTuple_Pack(4, counts, lengths, totals_o, areas_o);
done:
    Py_XDECREF(counts);
    Py_XDECREF(lengths);
    Py_XDECREF(totals_o);
    Py_XDECREF(areas_o);
    Py_XDECREF(fast);
    PyMem_RawFree(buf);
    PyMem_RawFree(lens);
    PyMem_RawFree(pix);
    PyMem_RawFree(fg);
    return result;
}

/* rle_iou(counts_a, offsets_a, areas_a, counts_b, offsets_b, pair_a, pair_b, crowd_b)
 *   -> bytearray of float64
 * IoU of masks a (detections) and b (ground truth) for each pair, as pycocotools' rleIou:
 * i = foreground pixels of both, u = of either (of a alone when b is a crowd region);
 * 0 when i == 0. Mask j of a set = counts[offsets[j]:offsets[j+1]] (uint32 runs);
 * areas_a: int64 foreground pixels of each mask a. Masks of a pair cover the same image (the caller
 * checks sizes). Runs with the GIL held: nothing the caller owns is read unlocked. */
/* argument positions of rle_iou */
enum {
    R_COUNTS_A = 0, R_OFFSETS_A = 1, R_AREAS_A = 2, R_COUNTS_B = 3, R_OFFSETS_B = 4,
    R_PAIR_A = 5, R_PAIR_B = 6, R_CROWD_B = 7, N_RLE_IOU_ARGS
};

static PyObject *
rle_iou(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "counts_a", "offsets_a", "areas_a", "counts_b", "offsets_b", "pair_a", "pair_b",
        "crowd_b", NULL};
    PyObject *o[8], *out = NULL;
    Py_buffer b[8];
    Py_ssize_t nca = -1, noa = -1, nma, ncb = -1, nob = -1, nmb, np_ = -1, np2, np3, p;
    const uint32_t *cnta, *cntb;
    const int64_t *offa, *offb, *area, *pa, *pb;
    const uint8_t *crowd;
    double *iou;
    int k;
    void *copies[4] = {NULL, NULL, NULL, NULL};
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOO:rle_iou", kwlist, &o[R_COUNTS_A], &o[R_OFFSETS_A], &o[R_AREAS_A], &o[R_COUNTS_B], &o[R_OFFSETS_B], &o[R_PAIR_A],
                          &o[R_PAIR_B], &o[R_CROWD_B]))
        return NULL;
    if (get_buf(o[R_COUNTS_A], &b[R_COUNTS_A], 4, &nca, "counts_a") < 0 ||
        get_buf(o[R_OFFSETS_A], &b[R_OFFSETS_A], 8, &noa, "offsets_a") < 0 ||
        get_buf(o[R_COUNTS_B], &b[R_COUNTS_B], 4, &ncb, "counts_b") < 0 ||
        get_buf(o[R_OFFSETS_B], &b[R_OFFSETS_B], 8, &nob, "offsets_b") < 0)
        goto done;
    nma = noa - 1;
    nmb = nob - 1;
    if (nma < 0 || nmb < 0) {
        PyErr_SetString(PyExc_ValueError, "offsets: expected at least one item");
        goto done;
    }
    if (get_buf(o[R_AREAS_A], &b[R_AREAS_A], 8, &nma, "areas_a") < 0 ||
        get_buf(o[R_PAIR_A], &b[R_PAIR_A], 8, &np_, "pair_a") < 0)
        goto done;
    np2 = np_;
    np3 = np_;
    if (get_buf(o[R_PAIR_B], &b[R_PAIR_B], 8, &np2, "pair_b") < 0 ||
        get_buf(o[R_CROWD_B], &b[R_CROWD_B], 1, &np3, "crowd_b") < 0)
        goto done;
    {
        Py_buffer idx[4] = {b[R_OFFSETS_A], b[R_OFFSETS_B], b[R_PAIR_A], b[R_PAIR_B]};
        memset(&b[R_OFFSETS_A], 0, sizeof b[R_OFFSETS_A]);
        memset(&b[R_OFFSETS_B], 0, sizeof b[R_OFFSETS_B]);
        memset(&b[R_PAIR_A], 0, sizeof b[R_PAIR_A]);
        memset(&b[R_PAIR_B], 0, sizeof b[R_PAIR_B]);
        if (privatize(idx, copies, 4) < 0) {
            for (k = 0; k < 4; k++)
                if (idx[k].obj)
                    PyBuffer_Release(&idx[k]);
            goto done;
        }
        b[R_OFFSETS_A].buf = idx[0].buf;
        b[R_OFFSETS_B].buf = idx[1].buf;
        b[R_PAIR_A].buf = idx[2].buf;
        b[R_PAIR_B].buf = idx[3].buf;
    }
    cnta = b[R_COUNTS_A].buf;
    offa = b[R_OFFSETS_A].buf;
    area = b[R_AREAS_A].buf;
    cntb = b[R_COUNTS_B].buf;
    offb = b[R_OFFSETS_B].buf;
    pa = b[R_PAIR_A].buf;
    pb = b[R_PAIR_B].buf;
    crowd = b[R_CROWD_B].buf;
    for (p = 0; p < noa; p++)
        if (offa[p] < 0 || offa[p] > nca || (p && offa[p] < offa[p - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets_a: not increasing within counts_a");
            goto done;
        }
    for (p = 0; p < nob; p++)
        if (offb[p] < 0 || offb[p] > ncb || (p && offb[p] < offb[p - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets_b: not increasing within counts_b");
            goto done;
        }
    out = PyByteArray_FromStringAndSize(NULL, np_ * (Py_ssize_t)sizeof(double));
    if (!out)
        goto done;
    iou = (double *)PyByteArray_AS_STRING(out);
    for (p = 0; p < np_; p++) {
        int64_t a = pa[p], g = pb[p];
        const uint32_t *ra, *rb;
        Py_ssize_t ka, kb, ia = 1, ib = 1;
        uint64_t ca, cb, c, ct = 1, inter = 0, uni = 0;
        int va = 0, vb = 0;
        if (a < 0 || a >= nma || g < 0 || g >= nmb) {
            PyErr_SetString(PyExc_ValueError, "pair index outside the masks");
            Py_CLEAR(out);
            goto done;
        }
        ra = cnta + offa[a];
        rb = cntb + offb[g];
        ka = offa[a + 1] - offa[a];
        kb = offb[g + 1] - offb[g];
        ca = ka ? ra[0] : 0;
        cb = kb ? rb[0] : 0;
        while (ct > 0) {
            c = ca < cb ? ca : cb;
            if (va || vb) {
                uni += c;
                if (va && vb)
                    inter += c;
            }
            ct = 0;
            ca -= c;
            if (!ca && ia < ka) {
                ca = ra[ia++];
                va = !va;
            }
            ct += ca;
            cb -= c;
            if (!cb && ib < kb) {
                cb = rb[ib++];
                vb = !vb;
            }
            ct += cb;
        }
        if (inter == 0)
            iou[p] = 0.0;
        else
            iou[p] = (double)inter / (double)(crowd[p] ? (uint64_t)area[a] : uni);
    }
done:
    for (k = 0; k < 8; k++)
        if (b[k].obj)
            PyBuffer_Release(&b[k]);
    free_copies(copies, 4);
    return out;
}

/* ----------------------------------------------------------------- keypoint OKS terms */

/* argument positions of oks_terms */
enum {
    O_DET_X = 0, O_DET_Y, O_GT_X, O_GT_Y, O_GT_VIS, O_GT_BOX, O_GT_AREA, O_PAIR_DET,
    O_PAIR_GT, O_VARIANCES, N_OKS_TERMS_ARGS
};

/* oks_terms(det_x, det_y, gt_x, gt_y, gt_visible, gt_box, gt_area_eps, pair_det, pair_gt,
 *           variances) -> (neg_e: bytearray float64 P*K, counts: bytearray int64 P)
 * For each pair, -e_i of pycocotools' computeOks for the ground truth's labelled keypoints
 * (all K when it has none, then with the distance to the box around its bbox), written
 * left-aligned in keypoint order; counts[p] of them. e_i = (dx*dx + dy*dy) / var_i / area / 2
 * with the same IEEE operations, in the same order, as numpy's; the caller applies np.exp
 * and numpy's summation (deteval.keypoints). Coordinates (N, K) / (G, K), C order. */
static PyObject *
oks_terms(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"det_x", "det_y", "gt_x", "gt_y", "gt_visible", "gt_box",
                             "gt_area_eps", "pair_det", "pair_gt", "variances", NULL};
    PyObject *o[N_OKS_TERMS_ARGS], *neg = NULL, *cnt = NULL, *result = NULL;
    Py_buffer b[N_OKS_TERMS_ARGS];
    void *copies[N_OKS_TERMS_ARGS] = {NULL};
    Py_ssize_t nk = -1, nd, gk = -1, ng, k = -1, np_ = -1, np2, g4, ga, vis_n, p;
    int i;
    (void)self;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOO:oks_terms", kwlist, &o[0],
                                     &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                                     &o[9]))
        return NULL;
    if (get_buf(o[O_VARIANCES], &b[O_VARIANCES], 8, &k, "variances") < 0 ||
        get_buf(o[O_DET_X], &b[O_DET_X], 8, &nk, "det_x") < 0)
        goto done;
    if (k <= 0 || nk % k) {
        PyErr_SetString(PyExc_ValueError, "oks_terms: det_x must hold N*K values");
        goto done;
    }
    nd = nk / k;
    if (get_buf(o[O_DET_Y], &b[O_DET_Y], 8, &nk, "det_y") < 0 ||
        get_buf(o[O_GT_X], &b[O_GT_X], 8, &gk, "gt_x") < 0)
        goto done;
    if (gk % k) {
        PyErr_SetString(PyExc_ValueError, "oks_terms: gt_x must hold G*K values");
        goto done;
    }
    ng = gk / k;
    g4 = 4 * ng;
    ga = ng;
    vis_n = gk;
    if (get_buf(o[O_GT_Y], &b[O_GT_Y], 8, &gk, "gt_y") < 0 ||
        get_buf(o[O_GT_VIS], &b[O_GT_VIS], 1, &vis_n, "gt_visible") < 0 ||
        get_buf(o[O_GT_BOX], &b[O_GT_BOX], 8, &g4, "gt_box") < 0 ||
        get_buf(o[O_GT_AREA], &b[O_GT_AREA], 8, &ga, "gt_area_eps") < 0 ||
        get_buf(o[O_PAIR_DET], &b[O_PAIR_DET], 8, &np_, "pair_det") < 0)
        goto done;
    np2 = np_;
    if (get_buf(o[O_PAIR_GT], &b[O_PAIR_GT], 8, &np2, "pair_gt") < 0)
        goto done;
    if (privatize(b, copies, N_OKS_TERMS_ARGS) < 0)
        goto done;
    neg = PyByteArray_FromStringAndSize(NULL, np_ * k * (Py_ssize_t)sizeof(double));
    cnt = PyByteArray_FromStringAndSize(NULL, np_ * (Py_ssize_t)sizeof(int64_t));
    if (neg == NULL || cnt == NULL)
        goto done;
    {
        const double *dx_ = b[O_DET_X].buf, *dy_ = b[O_DET_Y].buf, *gx_ = b[O_GT_X].buf,
                     *gy_ = b[O_GT_Y].buf, *box = b[O_GT_BOX].buf, *area = b[O_GT_AREA].buf,
                     *var = b[O_VARIANCES].buf;
        const unsigned char *vis = b[O_GT_VIS].buf;
        const int64_t *pd = b[O_PAIR_DET].buf, *pg = b[O_PAIR_GT].buf;
        double *out = (double *)PyByteArray_AS_STRING(neg);
        int64_t *counts = (int64_t *)PyByteArray_AS_STRING(cnt);
        for (p = 0; p < np_; p++) {
            int64_t d = pd[p], g = pg[p], c = 0;
            const double *xd, *yd, *xg, *yg;
            const unsigned char *v;
            double *row = out + p * k;
            int labelled = 0;
            if (d < 0 || d >= nd || g < 0 || g >= ng) {
                PyErr_SetString(PyExc_ValueError, "oks_terms: pair index out of range");
                Py_CLEAR(neg);
                goto done;
            }
            xd = dx_ + d * k;
            yd = dy_ + d * k;
            xg = gx_ + g * k;
            yg = gy_ + g * k;
            v = vis + g * k;
            for (i = 0; i < k; i++)
                labelled += v[i] != 0;
            if (labelled) {
                for (i = 0; i < k; i++) {
                    double ex, ey, e;
                    if (!v[i])
                        continue;
                    ex = xd[i] - xg[i];
                    ey = yd[i] - yg[i];
                    e = ex * ex;
                    e = e + ey * ey;
                    e = e / var[i];
                    e = e / area[g];
                    e = e / 2;
                    row[c++] = -e;
                }
            }
            else {
                const double *bb = box + 4 * g;
                double x0 = bb[0] - bb[2], x1 = bb[0] + bb[2] * 2;
                double y0 = bb[1] - bb[3], y1 = bb[1] + bb[3] * 2;
                for (i = 0; i < k; i++) {
                    double a1 = x0 - xd[i], a2 = xd[i] - x1, b1 = y0 - yd[i], b2 = yd[i] - y1;
                    double ex = (a1 > 0.0 ? a1 : 0.0) + (a2 > 0.0 ? a2 : 0.0);
                    double ey = (b1 > 0.0 ? b1 : 0.0) + (b2 > 0.0 ? b2 : 0.0);
                    double e = ex * ex;
                    e = e + ey * ey;
                    e = e / var[i];
                    e = e / area[g];
                    e = e / 2;
                    row[c++] = -e;
                }
            }
            for (i = (int)c; i < k; i++)
                row[i] = 0.0;
            counts[p] = c;
        }
    }
    result = PyTuple_Pack(2, neg, cnt);
done:
    for (i = 0; i < N_OKS_TERMS_ARGS; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    free_copies(copies, N_OKS_TERMS_ARGS);
    Py_XDECREF(neg);
    Py_XDECREF(cnt);
    return result;
}

/* ------------------------------------------------------------ bootstrap replicates */
#include "_kernels_src/bootstrap.h"

static PyMethodDef methods[] = {
    {"rank_order", (PyCFunction)(void (*)(void))rank_order, METH_VARARGS | METH_KEYWORDS,
     "rank_order(major, scores, tie) -> bytearray of int64: np.lexsort((tie, -scores, major))\n"
     "(tie may be None: row order)."},
    {"voc_match", (PyCFunction)(void (*)(void))voc_match, METH_VARARGS | METH_KEYWORDS,
     "voc_match(order, det_image, det_class, det_boxes, gt_image, gt_class, gt_boxes,\n"
     "gt_difficult, num_groups_per_image, iou_threshold, inclusive) -> bytearray of int8\n"
     "outcomes per ranked position (1 TP, 0 FP, -1 ignored), or None."},
    {"coco_match", (PyCFunction)(void (*)(void))coco_match, METH_VARARGS | METH_KEYWORDS,
     "coco_match(rec_group, rec_boxes, gt_group, gt_boxes, gt_crowd, gt_ignored, thresholds,\n"
     "num_groups) -> (matched, matched_ignored) bytearrays of N*A*T uint8, or None."},
    {"rle_decode", (PyCFunction)(void (*)(void))rle_decode, METH_VARARGS | METH_KEYWORDS,
     "rle_decode(strings) -> (counts, lengths, totals, areas): compressed COCO RLE strings to\n"
     "uint32 runs (concatenated), and the runs, pixels and foreground pixels of each."},
    {"rle_iou", (PyCFunction)(void (*)(void))rle_iou, METH_VARARGS | METH_KEYWORDS,
     "rle_iou(counts_a, offsets_a, areas_a, counts_b, offsets_b, pair_a, pair_b, crowd_b)\n"
     "-> bytearray of float64: pycocotools' rleIou for each (a, b) pair of masks."},
    {"oks_terms", (PyCFunction)(void (*)(void))oks_terms, METH_VARARGS | METH_KEYWORDS,
     "oks_terms(det_x, det_y, gt_x, gt_y, gt_visible, gt_box, gt_area_eps, pair_det, pair_gt,\n"
     "variances) -> (neg_e, counts): computeOks' exponents per pair, left-aligned."},
    {"boot_curves", (PyCFunction)(void (*)(void))boot_curves, METH_VARARGS | METH_KEYWORDS,
     "boot_curves(item_image, item_mmin, item_flags, item_dyn, dyn_tp, dyn_fp, class_start,\n"
     "block_start, block_mixed, run_start, run_image, draws, gt_start, gt_cell, gt_count,\n"
     "thresholds, num_images, num_areas, num_thresholds, num_maxdets, mode)\n"
     "-> (value, tp, npig) bytearrays: bootstrap replicates' envelope sums, TP counts and\n"
     "ground-truth counts (see _kernels_src/bootstrap.h)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "deteval._kernels",
    "Compiled matching kernels (optional; deteval.match falls back to numpy).", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
