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

#include "_rle_count.h"

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
    Py_ssize_t n, i, total = 0, chars = 0;
    const char **text = NULL;
    Py_ssize_t *text_len = NULL;
    uint32_t *buf;
    int64_t *lens, *pix, *fg;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:rle_decode", kwlist, &seq))
        return NULL;
    fast = PySequence_Fast(seq, "rle_decode: expected a sequence of bytes");
    if (!fast)
        return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    text = PyMem_RawMalloc((n ? n : 1) * sizeof(char *));
    text_len = PyMem_RawMalloc((n ? n : 1) * sizeof(Py_ssize_t));
    if (!text || !text_len) {
        PyErr_NoMemory();
        goto done;
    }
    /* every count takes at least one character: the characters bound the counts */
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        char *bytes;
        if (PyUnicode_Check(item)) { /* a str straight from JSON: its UTF-8 bytes */
            text[i] = PyUnicode_AsUTF8AndSize(item, &text_len[i]);
            if (text[i] == NULL)
                goto done;
        }
        else {
            if (PyBytes_AsStringAndSize(item, &bytes, &text_len[i]) < 0)
                goto done;
            text[i] = bytes;
        }
        chars += text_len[i];
    }
    counts = PyByteArray_FromStringAndSize(NULL, (chars ? chars : 1) * sizeof(uint32_t));
    lengths = PyByteArray_FromStringAndSize(NULL, n * sizeof(int64_t));
    totals_o = PyByteArray_FromStringAndSize(NULL, n * sizeof(int64_t));
    areas_o = PyByteArray_FromStringAndSize(NULL, n * sizeof(int64_t));
    if (!counts || !lengths || !totals_o || !areas_o)
        goto done;
    buf = (uint32_t *)PyByteArray_AS_STRING(counts);
    lens = (int64_t *)PyByteArray_AS_STRING(lengths);
    pix = (int64_t *)PyByteArray_AS_STRING(totals_o);
    fg = (int64_t *)PyByteArray_AS_STRING(areas_o);
    for (i = 0; i < n; i++) {
        const unsigned char *s = (const unsigned char *)text[i];
        Py_ssize_t len = text_len[i], p = 0, m = 0;
        uint32_t *run = buf + total;
        int64_t sum = 0, sum_fg = 0;
        while (p < len) {
            int64_t x;
            int rc = rle_read_count(s, len, &p, 0, &x);
            if (rc == RLE_COUNT_TRUNCATED) {
                PyErr_Format(PyExc_ValueError, "rle_decode: string %zd: truncated count", i);
                goto done;
            }
            if (rc == RLE_COUNT_BAD_CHAR) {
                PyErr_Format(PyExc_ValueError,
                             "rle_decode: string %zd: character %zd is not a count digit", i, p);
                goto done;
            }
            if (m > 2)
                x += (int64_t)run[m - 2];
            if (x < 0 || x > (int64_t)UINT32_MAX) {
                PyErr_Format(PyExc_ValueError, "rle_decode: string %zd: run %zd is %lld", i, m,
                             (long long)x);
                goto done;
            }
            run[m] = (uint32_t)x;
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
    if (PyByteArray_Resize(counts, total * sizeof(uint32_t)) < 0)
        goto done;
    result = PyTuple_Pack(4, counts, lengths, totals_o, areas_o);
done:
    Py_XDECREF(counts);
    Py_XDECREF(lengths);
    Py_XDECREF(totals_o);
    Py_XDECREF(areas_o);
    Py_XDECREF(fast);
    PyMem_RawFree(text);
    PyMem_RawFree(text_len);
    return result;
}

/* A position inside a run list: run i, `left` pixels of it still ahead, foreground when i
 * is odd. */
typedef struct {
    const uint32_t *runs;
    Py_ssize_t n, i;
    uint64_t left;
} run_cursor;

/* The cursor at pixel `pos` of the runs (past the end: left == 0). */
static void
cursor_at(run_cursor *c, const uint32_t *runs, Py_ssize_t n, uint64_t pos)
{
    uint64_t at = 0;
    Py_ssize_t i = 0;
    while (i < n && at + runs[i] <= pos)
        at += runs[i++];
    c->runs = runs;
    c->n = n;
    c->i = i;
    c->left = i < n ? at + runs[i] - pos : 0;
}

/* Move the cursor `step` pixels on (step <= left); onto the next non-empty run at a run's
 * end. */
static void
cursor_advance(run_cursor *c, uint64_t step)
{
    c->left -= step;
    while (!c->left && c->i + 1 < c->n)
        c->left = c->runs[++c->i];
    if (!c->left)
        c->i = c->n;
}

/* [lo, hi): pixel span that holds every foreground pixel of a mask (lo >= hi: none). */
static void
foreground_span(const uint32_t *runs, Py_ssize_t n, uint64_t *lo, uint64_t *hi)
{
    uint64_t total = 0;
    Py_ssize_t i;
    for (i = 0; i < n; i++)
        total += runs[i];
    *lo = n >= 2 ? runs[0] : total;
    *hi = (n & 1) ? total - runs[n - 1] : total;
}

/* rle_iou(counts_a, offsets_a, areas_a, counts_b, offsets_b, areas_b, pair_a, pair_b, crowd_b)
 *   -> bytearray of float64
 * IoU of masks a (detections) and b (ground truth) for each pair, as pycocotools' rleIou:
 * i = foreground pixels of both, u = of either (of a alone when b is a crowd region);
 * 0 when i == 0. Mask j of a set = counts[offsets[j]:offsets[j+1]] (uint32 runs);
 * areas_a, areas_b: int64 foreground pixels of each mask. Masks of a pair cover the same
 * image (the caller checks sizes).
 * Only the pixels where both masks can have foreground are walked (the span from the later
 * first foreground run to the earlier last one): i is counted there, and u = area_a + area_b - i
 * is the same integer as pycocotools' pixel count. The pair loop runs without the GIL on
 * private copies of the indices; the runs and areas are only read (a caller mutating them
 * meanwhile gets wrong figures, never an out-of-bounds read). */
/* argument positions of rle_iou */
enum {
    R_COUNTS_A = 0, R_OFFSETS_A, R_AREAS_A, R_COUNTS_B, R_OFFSETS_B, R_AREAS_B, R_PAIR_A,
    R_PAIR_B, R_CROWD_B, N_RLE_IOU_ARGS
};

static PyObject *
rle_iou(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "counts_a", "offsets_a", "areas_a", "counts_b", "offsets_b", "areas_b", "pair_a",
        "pair_b", "crowd_b", NULL};
    PyObject *o[N_RLE_IOU_ARGS], *out = NULL;
    Py_buffer b[N_RLE_IOU_ARGS];
    Py_ssize_t nca = -1, noa = -1, nma, ncb = -1, nob = -1, nmb, np_ = -1, np2, np3, p;
    const uint32_t *cnta, *cntb;
    const int64_t *offa, *offb, *area, *arb, *pa, *pb;
    const uint8_t *crowd;
    uint64_t *span = NULL;  /* lo, hi of each mask a, then of each mask b; lo > hi: not yet */
    double *iou;
    int k;
    void *copies[4] = {NULL, NULL, NULL, NULL};
    (void)self;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOO:rle_iou", kwlist,
                                     &o[R_COUNTS_A], &o[R_OFFSETS_A], &o[R_AREAS_A],
                                     &o[R_COUNTS_B], &o[R_OFFSETS_B], &o[R_AREAS_B],
                                     &o[R_PAIR_A], &o[R_PAIR_B], &o[R_CROWD_B]))
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
        get_buf(o[R_AREAS_B], &b[R_AREAS_B], 8, &nmb, "areas_b") < 0 ||
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
    arb = b[R_AREAS_B].buf;
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
    for (p = 0; p < np_; p++)
        if (pa[p] < 0 || pa[p] >= nma || pb[p] < 0 || pb[p] >= nmb) {
            PyErr_SetString(PyExc_ValueError, "pair index outside the masks");
            goto done;
        }
    span = malloc(sizeof(uint64_t) * 2 * (size_t)(nma + nmb + 1));
    if (!span) {
        PyErr_NoMemory();
        goto done;
    }
    for (p = 0; p < nma + nmb; p++) {
        span[2 * p] = 1;
        span[2 * p + 1] = 0;
    }
    out = PyByteArray_FromStringAndSize(NULL, np_ * (Py_ssize_t)sizeof(double));
    if (!out)
        goto done;
    iou = (double *)PyByteArray_AS_STRING(out);
    /* the loop touches no Python object (the index arrays are private copies), so other
     * threads may run: deteval.masks splits large batches over threads */
    Py_BEGIN_ALLOW_THREADS
    for (p = 0; p < np_; p++) {
        int64_t a = pa[p], g = pb[p];
        const uint32_t *ra = cnta + offa[a], *rb = cntb + offb[g];
        Py_ssize_t ka = offa[a + 1] - offa[a], kb = offb[g + 1] - offb[g];
        uint64_t *sa = span + 2 * a, *sb = span + 2 * (nma + g), lo, hi, inter = 0, step;
        run_cursor ca, cb;
        if (sa[0] > sa[1])
            foreground_span(ra, ka, &sa[0], &sa[1]);
        if (sb[0] > sb[1])
            foreground_span(rb, kb, &sb[0], &sb[1]);
        lo = sa[0] > sb[0] ? sa[0] : sb[0];
        hi = sa[1] < sb[1] ? sa[1] : sb[1];
        if (lo < hi) {
            cursor_at(&ca, ra, ka, lo);
            cursor_at(&cb, rb, kb, lo);
            while (lo < hi && ca.left && cb.left) {
                step = ca.left < cb.left ? ca.left : cb.left;
                if (hi - lo < step)
                    step = hi - lo;
                if ((ca.i & 1) && (cb.i & 1))
                    inter += step;
                lo += step;
                cursor_advance(&ca, step);
                cursor_advance(&cb, step);
            }
        }
        if (inter == 0)
            iou[p] = 0.0;
        else
            iou[p] = (double)inter / (double)(crowd[p] ? (uint64_t)area[a]
                                              : (uint64_t)area[a] + (uint64_t)arb[g] - inter);
    }
    Py_END_ALLOW_THREADS
done:
    free(span);
    for (k = 0; k < N_RLE_IOU_ARGS; k++)
        if (b[k].obj)
            PyBuffer_Release(&b[k]);
    free_copies(copies, 4);
    return out;
}

/* ------------------------------------------------------------ polygon rasterisation
 * pycocotools' annToRLE for polygon ground truth (frPyObjects, then merge), bit for bit:
 * the polygon is drawn at 5x resolution, every column crossing of its boundary is brought
 * back to a pixel boundary, and the sorted crossings are the run ends. Several polygons of
 * one object are united. Reference: pycocotools.mask (frPyObjects + merge), against which
 * tests/test_fuzz.py checks random polygons. */

/* A growable array of 32-bit values. */
typedef struct {
    uint32_t *v;
    Py_ssize_t n, cap;
} u32_array;

static int
u32_reserve(u32_array *a, Py_ssize_t need)
{
    if (need <= a->cap)
        return 0;
    {
        Py_ssize_t cap = a->cap ? a->cap : 256;
        uint32_t *v;
        while (cap < need)
            cap *= 2;
        v = realloc(a->v, sizeof(uint32_t) * (size_t)cap);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    return 0;
}

static int
u32_push(u32_array *a, uint32_t x)
{
    if (u32_reserve(a, a->n + 1) < 0)
        return -1;
    a->v[a->n++] = x;
    return 0;
}

/* Scratch space reused across polygons: the 5x vertices, the pixel positions of the column
 * crossings. */
typedef struct {
    int *vx, *vy;
    Py_ssize_t vcap;
    u32_array pos, sorted, buckets;
} poly_scratch;

/* Sort the crossing positions ascending: by bucket pos / h (at most one image column and
 * its end), then by insertion within the few crossings of a bucket. */
static int
sort_positions(poly_scratch *s, uint32_t h)
{
    Py_ssize_t n = s->pos.n, i, nb;
    uint32_t lo = UINT32_MAX, hi = 0, *v = s->pos.v, *out, *count;
    if (n < 2)
        return 0;
    for (i = 0; i < n; i++) {
        uint32_t key = v[i] / h;
        if (key < lo)
            lo = key;
        if (key > hi)
            hi = key;
    }
    nb = (Py_ssize_t)(hi - lo) + 2;
    if (u32_reserve(&s->buckets, nb) < 0 || u32_reserve(&s->sorted, n) < 0)
        return -1;
    count = s->buckets.v;
    out = s->sorted.v;
    memset(count, 0, sizeof(uint32_t) * (size_t)nb);
    for (i = 0; i < n; i++)
        count[v[i] / h - lo + 1]++;
    for (i = 1; i < nb; i++)
        count[i] += count[i - 1];
    for (i = 0; i < n; i++)
        out[count[v[i] / h - lo]++] = v[i];
    for (i = 1; i < n; i++) {
        uint32_t x = out[i];
        Py_ssize_t j = i;
        while (j > 0 && out[j - 1] > x) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    memcpy(v, out, sizeof(uint32_t) * (size_t)n);
    return 0;
}

static int
int_reserve(int **a, int **b, Py_ssize_t *cap, Py_ssize_t need)
{
    if (need <= *cap)
        return 0;
    {
        Py_ssize_t c = *cap ? *cap : 256;
        int *na, *nb;
        while (c < need)
            c *= 2;
        na = realloc(*a, sizeof(int) * (size_t)c);
        if (na)
            *a = na;
        nb = realloc(*b, sizeof(int) * (size_t)c);
        if (nb)
            *b = nb;
        if (!na || !nb) {
            PyErr_NoMemory();
            return -1;
        }
        *cap = c;
    }
    return 0;
}

/* A crossing of the 5x boundary between 5x columns `col` and `col + 1`, at 5x row `row`
 * (the upper of the two points): when the column boundary is a pixel boundary inside the
 * image, the pixel position (column-major) from which the mask's state flips. */
static int
add_crossing(poly_scratch *s, int col, int row, int h, int w)
{
    const double scale = 5.0;
    double cx = ((double)col + .5) / scale - .5, cy;
    if (floor(cx) != cx || cx < 0 || cx > (double)w - 1)
        return 0;
    cy = ((double)row + .5) / scale - .5;
    if (cy < 0)
        cy = 0;
    else if (cy > h)
        cy = h;
    cy = ceil(cy);
    return u32_push(&s->pos, (uint32_t)((int)cx * h + (int)cy));
}

/* Runs (starting with background) of one polygon of k vertices xy[2k] on an h x w image,
 * appended to `out`.
 * The polygon is drawn on the 5x grid: each edge as the 5x pixels along its longer axis
 * (one per step, the other coordinate rounded half up and truncated toward zero), from the
 * endpoint with the smaller coordinate on that axis. Wherever consecutive drawn pixels change
 * column, the boundary crosses the line between them; only lines at 5x column 5n + 2 (the
 * pixel boundary between image columns n and n + 1, n in [0, w)) flip the mask, at the row
 * of the upper pixel brought back to image rows. Edges along x change column at every step,
 * so only their steps onto those lines are drawn; edges along y are walked pixel by pixel. */
static int
polygon_runs(const double *xy, Py_ssize_t k, int h, int w, poly_scratch *s, u32_array *out)
{
    const double scale = 5.0;
    Py_ssize_t j, total;
    uint32_t prev;
    if (int_reserve(&s->vx, &s->vy, &s->vcap, k + 1) < 0)
        return -1;
    for (j = 0; j < k; j++) {
        s->vx[j] = (int)(scale * xy[2 * j] + .5);
        s->vy[j] = (int)(scale * xy[2 * j + 1] + .5);
    }
    s->vx[k] = s->vx[0];
    s->vy[k] = s->vy[0];
    s->pos.n = 0;
    for (j = 0; j < k; j++) {
        int x0 = s->vx[j], x1 = s->vx[j + 1], y0 = s->vy[j], y1 = s->vy[j + 1];
        int dx = abs(x1 - x0), dy = abs(y1 - y0), t;
        if (dx >= dy) {
            double slope;
            int col;
            if (!dx)
                continue;  /* a repeated vertex: no column change */
            if (x0 > x1) {
                t = x0; x0 = x1; x1 = t;
                t = y0; y0 = y1; y1 = t;
            }
            slope = (double)(y1 - y0) / dx;
            /* steps col -> col + 1 for col in [x0, x1); the first col = 2 (mod 5) */
            col = x0 + ((2 - x0) % 5 + 5) % 5;
            for (; col < x1; col += 5) {
                int ta = col - x0;
                int ra = (int)(y0 + slope * ta + .5), rb = (int)(y0 + slope * (ta + 1) + .5);
                if (add_crossing(s, col, ra < rb ? ra : rb, h, w) < 0)
                    return -1;
            }
        } else {
            double slope;
            int c, lo, hi, up;
            if (y0 > y1) {
                t = x0; x0 = x1; x1 = t;
                t = y0; y0 = y1; y1 = t;
            }
            if (x0 == x1)
                continue;  /* a vertical edge: no column change */
            slope = (double)(x1 - x0) / dy;
            up = x1 > x0;
            lo = up ? x0 : x1;
            hi = up ? x1 : x0;
            /* the column moves by at most one per step, monotonically (columns below 2,
             * where truncation toward zero bends it, never flip the mask): find the step
             * onto or off each line 5n + 2 by a guess from the slope, corrected with the
             * drawing's own arithmetic */
            c = lo > 2 ? lo + ((2 - lo) % 5 + 5) % 5 : 2;
            for (; c < hi; c += 5) {
                /* the first t with col(t) past c: >= c + 1 going up, <= c going down */
                double guess = up ? (c + .5 - x0) / slope : (x0 - .5 - c) / -slope;
                int target = up ? c + 1 : c;
                t = guess < 1 ? 1 : guess > dy ? dy : (int)ceil(guess);
                if (up) {
                    while (t > 1 && (int)(x0 + slope * (t - 1) + .5) >= target)
                        t--;
                    while (t <= dy && (int)(x0 + slope * t + .5) < target)
                        t++;
                } else {
                    while (t > 1 && (int)(x0 + slope * (t - 1) + .5) <= target)
                        t--;
                    while (t <= dy && (int)(x0 + slope * t + .5) > target)
                        t++;
                }
                if (t <= dy && add_crossing(s, c, y0 + t - 1, h, w) < 0)
                    return -1;
            }
        }
    }
    /* the image's end, after every crossing (each is at most h * w) */
    if (sort_positions(s, (uint32_t)h) < 0 || u32_push(&s->pos, (uint32_t)h * (uint32_t)w) < 0)
        return -1;
    total = s->pos.n;
    /* run lengths between flips; two flips at one place cancel (a zero run joins its
     * neighbours) */
    if (u32_reserve(out, out->n + total) < 0)
        return -1;
    prev = 0;
    for (j = 0; j < total; j++) {
        uint32_t at = s->pos.v[j];
        s->pos.v[j] = at - prev;
        prev = at;
    }
    out->v[out->n++] = s->pos.v[0];
    for (j = 1; j < total;) {
        if (s->pos.v[j] > 0)
            out->v[out->n++] = s->pos.v[j++];
        else if (++j < total)
            out->v[out->n - 1] += s->pos.v[j++];
    }
    return 0;
}

/* Union of masks a and b (runs of the same image), as maximal runs starting with
 * background, appended to `out`. */
static int
runs_union(const uint32_t *a, Py_ssize_t na, const uint32_t *b, Py_ssize_t nb, u32_array *out)
{
    run_cursor ca, cb;
    int value = 0;
    uint64_t run = 0;
    cursor_at(&ca, a, na, 0);
    cursor_at(&cb, b, nb, 0);
    while (ca.left && cb.left) {
        uint64_t step = ca.left < cb.left ? ca.left : cb.left;
        int v = (ca.i & 1) || (cb.i & 1);
        if (v != value) {
            if (u32_push(out, (uint32_t)run) < 0)
                return -1;
            run = 0;
            value = v;
        }
        run += step;
        cursor_advance(&ca, step);
        cursor_advance(&cb, step);
    }
    return u32_push(out, (uint32_t)run);
}

/* The coordinates of one polygon as doubles (into *xy, grown as needed); -1 with ValueError
 * when it is not a list of an even number (>= 6) of finite numbers, OverflowError when a
 * coordinate is too large to draw exactly in 32-bit integers. */
static Py_ssize_t
polygon_coordinates(PyObject *poly, double **xy, Py_ssize_t *cap, Py_ssize_t obj)
{
    Py_ssize_t n, i;
    if (!PyList_Check(poly)) {
        PyErr_Format(PyExc_ValueError, "object %zd: a polygon is not a list", obj);
        return -1;
    }
    n = PyList_GET_SIZE(poly);
    if (n % 2 || n < 6) {
        PyErr_Format(PyExc_ValueError, "object %zd: a polygon of %zd coordinates", obj, n);
        return -1;
    }
    if (n > *cap) {
        double *v = realloc(*xy, sizeof(double) * (size_t)n);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        *xy = v;
        *cap = n;
    }
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(poly, i);
        double v;
        if (!PyFloat_Check(item) && !PyLong_Check(item)) {
            PyErr_Format(PyExc_ValueError, "object %zd: a coordinate is not a number", obj);
            return -1;
        }
        v = PyFloat_AsDouble(item);
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "object %zd: a coordinate is out of range", obj);
            return -1;
        }
        if (!isfinite(v)) {
            PyErr_Format(PyExc_ValueError, "object %zd: a coordinate is not finite", obj);
            return -1;
        }
        if (fabs(v) > 1e8) {
            PyErr_Format(PyExc_OverflowError, "object %zd: a coordinate is out of range", obj);
            return -1;
        }
        (*xy)[i] = v;
    }
    return n / 2;
}

/* rle_from_polygons(objects, heights, widths)
 *   -> (counts: bytearray of uint32 runs, lengths, areas: bytearrays of int64 per object)
 * objects[i]: a non-empty list of polygons, each a list of x1, y1, x2, y2, ... numbers;
 * heights/widths: int64 image size of each object. ValueError naming the object for a
 * malformed polygon; OverflowError when a coordinate or an image is too large for the
 * exact 32-bit drawing (the caller then uses pycocotools itself). */
static PyObject *
rle_from_polygons(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"objects", "heights", "widths", NULL};
    PyObject *seq, *fast = NULL, *oh, *ow, *counts = NULL, *lengths = NULL, *areas = NULL,
             *result = NULL;
    Py_buffer bh, bw;
    Py_ssize_t n = -1, nw, i, j, xycap = 0;
    const int64_t *hs, *ws;
    double *xy = NULL;
    poly_scratch s;
    u32_array all = {NULL, 0, 0}, one = {NULL, 0, 0}, acc = {NULL, 0, 0};
    int64_t *lens, *fg;
    (void)self;
    memset(&s, 0, sizeof s);
    memset(&bh, 0, sizeof bh);
    memset(&bw, 0, sizeof bw);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:rle_from_polygons", kwlist, &seq, &oh,
                                     &ow))
        return NULL;
    fast = PySequence_Fast(seq, "rle_from_polygons: expected a sequence of objects");
    if (!fast)
        return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    nw = n;
    if (get_buf(oh, &bh, 8, &n, "heights") < 0 || get_buf(ow, &bw, 8, &nw, "widths") < 0)
        goto done;
    hs = bh.buf;
    ws = bw.buf;
    lengths = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    areas = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!lengths || !areas)
        goto done;
    lens = (int64_t *)PyByteArray_AS_STRING(lengths);
    fg = (int64_t *)PyByteArray_AS_STRING(areas);
    for (i = 0; i < n; i++) {
        PyObject *obj = PySequence_Fast_GET_ITEM(fast, i);
        Py_ssize_t parts, start = all.n, r;
        int64_t h = hs[i], w = ws[i], area = 0;
        if (h < 1 || w < 1 || h > 0x7fffffff / w) {
            PyErr_Format(PyExc_OverflowError, "object %zd: image size %lld x %lld", i,
                         (long long)h, (long long)w);
            goto done;
        }
        if (!PyList_Check(obj) || !(parts = PyList_GET_SIZE(obj))) {
            PyErr_Format(PyExc_ValueError, "object %zd: not a non-empty list of polygons", i);
            goto done;
        }
        for (j = 0; j < parts; j++) {
            Py_ssize_t k = polygon_coordinates(PyList_GET_ITEM(obj, j), &xy, &xycap, i);
            if (k < 0)
                goto done;
            if (parts == 1) {
                if (polygon_runs(xy, k, (int)h, (int)w, &s, &all) < 0)
                    goto done;
                break;
            }
            one.n = 0;
            if (polygon_runs(xy, k, (int)h, (int)w, &s, &one) < 0)
                goto done;
            if (j == 0) {
                if (u32_reserve(&acc, one.n) < 0)
                    goto done;
                memcpy(acc.v, one.v, sizeof(uint32_t) * (size_t)one.n);
                acc.n = one.n;
            } else {
                /* acc | one, through `all`'s tail, then back into acc */
                Py_ssize_t mark = all.n;
                if (runs_union(acc.v, acc.n, one.v, one.n, &all) < 0 ||
                    u32_reserve(&acc, all.n - mark) < 0)
                    goto done;
                memcpy(acc.v, all.v + mark, sizeof(uint32_t) * (size_t)(all.n - mark));
                acc.n = all.n - mark;
                all.n = mark;
            }
        }
        if (parts > 1) {
            if (u32_reserve(&all, all.n + acc.n) < 0)
                goto done;
            memcpy(all.v + all.n, acc.v, sizeof(uint32_t) * (size_t)acc.n);
            all.n += acc.n;
        }
        for (r = start + 1; r < all.n; r += 2)
            area += all.v[r];
        lens[i] = all.n - start;
        fg[i] = area;
    }
    counts = PyByteArray_FromStringAndSize((const char *)all.v,
                                           all.n * (Py_ssize_t)sizeof(uint32_t));
    if (!counts)
        goto done;
    result = PyTuple_Pack(3, counts, lengths, areas);
done:
    Py_XDECREF(counts);
    Py_XDECREF(lengths);
    Py_XDECREF(areas);
    Py_XDECREF(fast);
    if (bh.obj)
        PyBuffer_Release(&bh);
    if (bw.obj)
        PyBuffer_Release(&bw);
    free(xy);
    free(s.vx);
    free(s.vy);
    free(s.sorted.v);
    free(s.buckets.v);
    free(s.pos.v);
    free(all.v);
    free(one.v);
    free(acc.v);
    return result;
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

/* ------------------------------------------------------------------ tide_pass
 * tide_pass(k_image, k_class, k_boxes, obj_image, obj_class, obj_boxes, crowd_image,
 *           crowd_class, crowd_boxes, num_images, pos_threshold, background_threshold)
 *   -> (det_match: int64[M], target: int64[M], error: int8[M], ignored: uint8[M])
 * The per-image pass of deteval.diagnostics.tide (tidecv's TIDEExample and error rules),
 * whose numpy code is the reference. k_*: the kept detections in processing order (image
 * ascending, then score order); obj_*: the non-crowd ground truth in file order; crowd_*:
 * the crowd regions. IoU as pycocotools' bbIou (the same operations as
 * deteval.match.coco_pair_ious); a pair without overlap, or with a NaN IoU, is no pair.
 * Greedy: each detection takes the untaken same-class object of highest IoU (the first
 * in row order among equal IoUs) if that IoU >= pos; an unmatched detection with crowd IoU
 * (inter / det area) > pos against a crowd region of its class is ignored; then each
 * unmatched detection's error (0 Cls, 1 Loc, 2 Both, 3 Dupe, 4 Bkg; -1 for a TP) and
 * its target object (Loc, Cls; else -1), by the first rule that holds: image without
 * objects -> Bkg; bg <= max same-class IoU <= pos -> Loc (first argmax); max other-class
 * IoU >= pos -> Cls (first argmax); max same-class IoU with a matched object >= pos ->
 * Dupe; max IoU <= bg -> Bkg; else Both. */
enum {
    T_K_IMAGE = 0, T_K_CLASS, T_K_BOXES, T_OBJ_IMAGE, T_OBJ_CLASS, T_OBJ_BOXES,
    T_CROWD_IMAGE, T_CROWD_CLASS, T_CROWD_BOXES, N_TIDE_ARGS
};

static inline double
box_iou(const double *d, const double *e, int crowd)
{
    double iw = (d[2] + d[0] < e[2] + e[0] ? d[2] + d[0] : e[2] + e[0]) -
                (d[0] > e[0] ? d[0] : e[0]);
    double ih, inter, uni;
    if (!(iw > 0))
        return 0.0;
    ih = (d[3] + d[1] < e[3] + e[1] ? d[3] + d[1] : e[3] + e[1]) - (d[1] > e[1] ? d[1] : e[1]);
    if (!(ih > 0))
        return 0.0;
    inter = iw * ih;
    uni = crowd ? d[2] * d[3] : d[2] * d[3] + e[2] * e[3] - inter;
    inter = inter / uni;
    return inter > 0 ? inter : 0.0; /* NaN: no pair */
}

static PyObject *
tide_pass(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "k_image", "k_class", "k_boxes", "obj_image", "obj_class", "obj_boxes", "crowd_image",
        "crowd_class", "crowd_boxes", "num_images", "pos_threshold", "background_threshold",
        NULL};
    PyObject *o[N_TIDE_ARGS], *out_m = NULL, *out_t = NULL, *out_e = NULL, *out_i = NULL,
             *result = NULL;
    Py_buffer b[N_TIDE_ARGS];
    long long num_images;
    double pos, bg;
    Py_ssize_t m = -1, m4, g = -1, g4, c = -1, c4, i;
    int64_t *ostart = NULL, *orows = NULL, *cstart = NULL, *crows = NULL;
    double *iou = NULL, *lb = NULL;
    int64_t *lc = NULL;
    unsigned char *used = NULL;
    int k;
    void *copies[N_TIDE_ARGS] = {NULL};
    (void)self;

    memset(b, 0, sizeof b);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOLdd:tide_pass", kwlist,
                                     &o[T_K_IMAGE], &o[T_K_CLASS], &o[T_K_BOXES],
                                     &o[T_OBJ_IMAGE], &o[T_OBJ_CLASS], &o[T_OBJ_BOXES],
                                     &o[T_CROWD_IMAGE], &o[T_CROWD_CLASS], &o[T_CROWD_BOXES],
                                     &num_images, &pos, &bg))
        return NULL;
    if (get_buf(o[T_K_IMAGE], &b[T_K_IMAGE], 8, &m, "k_image") < 0 ||
        get_buf(o[T_K_CLASS], &b[T_K_CLASS], 8, &m, "k_class") < 0)
        goto done;
    m4 = 4 * m;
    if (get_buf(o[T_K_BOXES], &b[T_K_BOXES], 8, &m4, "k_boxes") < 0 ||
        get_buf(o[T_OBJ_IMAGE], &b[T_OBJ_IMAGE], 8, &g, "obj_image") < 0 ||
        get_buf(o[T_OBJ_CLASS], &b[T_OBJ_CLASS], 8, &g, "obj_class") < 0)
        goto done;
    g4 = 4 * g;
    if (get_buf(o[T_OBJ_BOXES], &b[T_OBJ_BOXES], 8, &g4, "obj_boxes") < 0 ||
        get_buf(o[T_CROWD_IMAGE], &b[T_CROWD_IMAGE], 8, &c, "crowd_image") < 0 ||
        get_buf(o[T_CROWD_CLASS], &b[T_CROWD_CLASS], 8, &c, "crowd_class") < 0)
        goto done;
    c4 = 4 * c;
    if (get_buf(o[T_CROWD_BOXES], &b[T_CROWD_BOXES], 8, &c4, "crowd_boxes") < 0)
        goto done;
    if (privatize(b, copies, N_TIDE_ARGS) < 0)
        goto done;
    {
        const int64_t *ki = (const int64_t *)b[T_K_IMAGE].buf, *kc = (const int64_t *)b[T_K_CLASS].buf,
                      *oi = (const int64_t *)b[T_OBJ_IMAGE].buf, *oc = (const int64_t *)b[T_OBJ_CLASS].buf,
                      *ci = (const int64_t *)b[T_CROWD_IMAGE].buf, *cc = (const int64_t *)b[T_CROWD_CLASS].buf;
        const double *kb = (const double *)b[T_K_BOXES].buf, *ob = (const double *)b[T_OBJ_BOXES].buf,
                     *cb = (const double *)b[T_CROWD_BOXES].buf;
        int64_t *match, *target;
        signed char *err;
        unsigned char *ign;
        size_t images;
        Py_ssize_t largest = 0, d0, d1, most_dets = 0;
        if (num_images < 0 || (uint64_t)num_images > (uint64_t)(4 * (size_t)(m + g + c) + ((size_t)1 << 22))) {
            PyErr_SetString(PyExc_ValueError, "tide_pass: num_images out of range");
            goto done;
        }
        images = (size_t)num_images;
        for (i = 0; i < m; i++)
            if (ki[i] < 0 || (uint64_t)ki[i] >= (uint64_t)images || (i && ki[i] < ki[i - 1])) {
                PyErr_SetString(PyExc_ValueError, "tide_pass: k_image out of range or not sorted");
                goto done;
            }
        for (i = 0; i < g; i++)
            if (oi[i] < 0 || (uint64_t)oi[i] >= (uint64_t)images) {
                PyErr_SetString(PyExc_ValueError, "tide_pass: obj_image out of range");
                goto done;
            }
        for (i = 0; i < c; i++)
            if (ci[i] < 0 || (uint64_t)ci[i] >= (uint64_t)images) {
                PyErr_SetString(PyExc_ValueError, "tide_pass: crowd_image out of range");
                goto done;
            }
        out_m = PyByteArray_FromStringAndSize(NULL, 8 * m);
        out_t = PyByteArray_FromStringAndSize(NULL, 8 * m);
        out_e = PyByteArray_FromStringAndSize(NULL, m);
        out_i = PyByteArray_FromStringAndSize(NULL, m);
        ostart = (int64_t *)PyMem_RawCalloc(images + 1, sizeof(int64_t));
        orows = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(g ? g : 1));
        cstart = (int64_t *)PyMem_RawCalloc(images + 1, sizeof(int64_t));
        crows = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(c ? c : 1));
        used = (unsigned char *)PyMem_RawCalloc((size_t)(g ? g : 1), 1);
        if (!out_m || !out_t || !out_e || !out_i || !ostart || !orows || !cstart || !crows || !used) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto done;
        }
        match = (int64_t *)PyByteArray_AS_STRING(out_m);
        target = (int64_t *)PyByteArray_AS_STRING(out_t);
        err = (signed char *)PyByteArray_AS_STRING(out_e);
        ign = (unsigned char *)PyByteArray_AS_STRING(out_i);
        largest = group_rows(oi, NULL, 1, g, images, ostart, orows);
        group_rows(ci, NULL, 1, c, images, cstart, crows);
        for (d0 = 0; d0 < m; d0 = d1) {
            for (d1 = d0 + 1; d1 < m && ki[d1] == ki[d0]; d1++)
                ;
            if (d1 - d0 > most_dets)
                most_dets = d1 - d0;
        }
        if (largest && most_dets > PY_SSIZE_T_MAX / 8 / largest) {
            PyErr_NoMemory();
            goto done;
        }
        iou = (double *)PyMem_RawMalloc(sizeof(double) * (size_t)(largest && most_dets ? largest * most_dets : 1));
        lb = (double *)PyMem_RawMalloc(sizeof(double) * 4 * (size_t)(largest ? largest : 1));
        lc = (int64_t *)PyMem_RawMalloc(sizeof(int64_t) * (size_t)(largest ? largest : 1));
        if (iou == NULL || lb == NULL || lc == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (d0 = 0; d0 < m; d0 = d1) {
            int64_t img = ki[d0], g0 = ostart[img], g1 = ostart[img + 1], n_o = g1 - g0, j, d;
            for (d1 = d0 + 1; d1 < m && ki[d1] == img; d1++)
                ;
            /* the image's objects, contiguous (local index j; used[] by local index) */
            for (j = 0; j < n_o; j++) {
                int64_t r = orows[g0 + j];
                memcpy(lb + 4 * j, ob + 4 * r, 4 * sizeof(double));
                lc[j] = oc[r];
                used[j] = 0;
            }
            for (d = d0; d < d1; d++) {
                const double *db = kb + 4 * d;
                double *row = iou + (d - d0) * n_o;
                for (j = 0; j < n_o; j++)
                    row[j] = box_iou(db, lb + 4 * j, 0);
            }
            /* greedy matching in processing order */
            for (d = d0; d < d1; d++) {
                const double *row = iou + (d - d0) * n_o;
                int64_t best = -1;
                double bv = -1.0;
                for (j = 0; j < n_o; j++) {
                    if (lc[j] == kc[d] && !used[j] && row[j] > bv) {
                        bv = row[j];
                        best = j;
                    }
                }
                match[d] = -1;
                if (best >= 0 && bv >= pos) {
                    match[d] = orows[g0 + best];
                    used[best] = 1;
                }
            }
            for (d = d0; d < d1; d++) {
                const double *row = iou + (d - d0) * n_o;
                double same = 0.0, other = 0.0, dup = 0.0, any = 0.0;
                int64_t same_arg = -1, other_arg = -1, q;
                ign[d] = 0;
                err[d] = -1;
                target[d] = -1;
                if (match[d] >= 0)
                    continue;
                for (q = cstart[img]; q < cstart[img + 1]; q++) {
                    int64_t r = crows[q];
                    if (cc[r] == kc[d] && box_iou(kb + 4 * d, cb + 4 * r, 1) > pos) {
                        ign[d] = 1;
                        break;
                    }
                }
                if (n_o == 0) {
                    err[d] = 4;
                    continue;
                }
                for (j = 0; j < n_o; j++) {
                    double v = row[j];
                    if (v > any)
                        any = v;
                    if (lc[j] == kc[d]) {
                        if (v > same) {
                            same = v;
                            same_arg = j;
                        }
                        if (used[j] && v > dup)
                            dup = v;
                    } else if (v > other) {
                        other = v;
                        other_arg = j;
                    }
                }
                if (bg <= same && same <= pos) {
                    err[d] = 1;
                    target[d] = same_arg >= 0 ? orows[g0 + same_arg] : -1;
                } else if (other >= pos) {
                    err[d] = 0;
                    target[d] = other_arg >= 0 ? orows[g0 + other_arg] : -1;
                } else if (dup >= pos)
                    err[d] = 3;
                else if (any <= bg)
                    err[d] = 4;
                else
                    err[d] = 2;
            }
        }
        Py_END_ALLOW_THREADS
        result = PyTuple_Pack(4, out_m, out_t, out_e, out_i);
    }
done:
    for (k = 0; k < N_TIDE_ARGS; k++)
        if (b[k].obj)
            PyBuffer_Release(&b[k]);
    free_copies(copies, N_TIDE_ARGS);
    Py_XDECREF(out_m);
    Py_XDECREF(out_t);
    Py_XDECREF(out_e);
    Py_XDECREF(out_i);
    PyMem_RawFree(ostart);
    PyMem_RawFree(orows);
    PyMem_RawFree(cstart);
    PyMem_RawFree(crows);
    PyMem_RawFree(used);
    PyMem_RawFree(iou);
    PyMem_RawFree(lb);
    PyMem_RawFree(lc);
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
     "rle_iou(counts_a, offsets_a, areas_a, counts_b, offsets_b, areas_b, pair_a, pair_b, crowd_b)\n"
     "-> bytearray of float64: pycocotools' rleIou for each (a, b) pair of masks."},
    {"rle_from_polygons", (PyCFunction)(void (*)(void))rle_from_polygons,
     METH_VARARGS | METH_KEYWORDS,
     "rle_from_polygons(objects, heights, widths) -> (counts, lengths, areas): pycocotools'\n"
     "frPyObjects + merge of each object's polygons, as uint32 runs."},
    {"oks_terms", (PyCFunction)(void (*)(void))oks_terms, METH_VARARGS | METH_KEYWORDS,
     "oks_terms(det_x, det_y, gt_x, gt_y, gt_visible, gt_box, gt_area_eps, pair_det, pair_gt,\n"
     "variances) -> (neg_e, counts): computeOks' exponents per pair, left-aligned."},
    {"tide_pass", (PyCFunction)(void (*)(void))tide_pass, METH_VARARGS | METH_KEYWORDS,
     "tide_pass(k_image, k_class, k_boxes, obj_image, obj_class, obj_boxes, crowd_image,\n"
     "crowd_class, crowd_boxes, num_images, pos_threshold, background_threshold)\n"
     "-> (det_match, target, error, ignored): TIDE's per-image matching and error types."},
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
