/* boot_curves: the precision envelopes of bootstrap replicates from weighted counts.
 * Included by _kernels.c (one translation unit). deteval.bootstrap has the reference:
 * resampling the match records explicitly and accumulating each replicate.
 *
 * boot_curves(item_image, item_mmin, item_flags, item_dyn, dyn_tp, dyn_fp, class_start,
 *             block_start, block_mixed, run_start, run_image, draws, gt_start, gt_cell,
 *             gt_count, thresholds, num_images, num_areas, num_thresholds, num_maxdets,
 *             mode) -> (value, tp, npig)
 *
 *   Items (match records) sorted by (class, -score, image key, order within the image).
 *   item_image int32[N] image key in [0, I); item_mmin uint8[N]: the first max-dets index m
 *   that keeps the item (rank < max_dets[m]); item_flags uint8[N]: bit a (a < 7) = false
 *   positive at every threshold in area range a, bit 7 = "dynamic": the item's outcomes are
 *   rows item_dyn[p] (int32) of dyn_tp / dyn_fp (uint64[D*A]: bit t = TP / FP at threshold t in
 *   area a). class_start int64[K+1]; block_start int64[NB+1]: runs of equal score within a
 *   class (every class start is a block start); block_mixed uint8[NB]: some (area,
 *   threshold) has both a TP and an FP in the block. run_start int64[NR+1]: starts of the
 *   image-runs (items of one image) of the mixed blocks, in item order, then N; a run
 *   ends at the next run's start or its block's end; run_image int32[NR] their images. draws int64[B*I]: each replicate's
 *   drawn image keys in draw order; gt_start int64[I+1], gt_cell int64[E] (k * A + a),
 *   gt_count int64[E]: each image's counted ground truth per class and area range (CSR);
 *   thresholds float64[R] (increasing).
 *
 *   Replicate b is the dataset whose image j is image draws[b, j]: a class's detections
 *   ranked by (-score, draw position j, order within the image). An image drawn w times
 *   contributes w copies. Runs of equal score whose order cannot matter (no area and
 *   threshold with both a TP and an FP) are counted with weights; the others are expanded
 *   copy by copy in draw order: walking the draws j = 0, 1, ... and appending each
 *   image-run of image draws[b, j] to its block's list puts every list in draw order
 *   (a counting sort, no comparison sort).
 *
 *   Precision/recall points: tp = TPs so far, fp = FPs so far; only the last TP before
 *   each FP (and the class's last TP) can be a maximum of the envelope (between FPs
 *   precision rises with each TP), so only those are evaluated.
 *   mode 0 (COCO): pr = tp / ((fp + tp) + spacing(1)), rc = tp / npig; value = sum over r
 *     of max(pr of points with rc >= thresholds[r]) (0 if none): R times pycocotools' AP
 *     of the cell.
 *   mode 1 (VOC07): the same without the spacing(1) term: value = sum of the 11 points.
 *   mode 2 (VOC12, A = M = T = 1): value = the area under the precision envelope,
 *     sum_i pr_i (rc_i - rc_{i-1}) over the envelope's corners.
 *   value, tp: float64[B*T*K*A*M], order (b, t, k, a, m); tp = the final TP count (the
 *   recall's numerator); both NaN where npig == 0. npig: int64[B*K*A], each replicate's
 *   counted ground truth (the recall's denominator).
 */

#define BOOT_DYNAMIC 0x80

typedef struct {
    double key;   /* recall-threshold count j (modes 0, 1) or recall (mode 2) */
    double pr;    /* precision */
    int64_t tp;   /* the point's counts: pr = tp / (den (+ eps)) */
    int64_t den;  /* fp + tp */
} boot_point;

/* State of one class in one replicate. Cells c = m * T + t (M * T <= 64) per area a;
 * false positives of the "static" items (FP at every threshold) are kept per first
 * max-dets index (layer): the FPs of cell (a, m) are sum(layer[a][0..m]) + dfp[a][c]. */
typedef struct {
    int A, T, M, MT, mode, R;
    const double *thr;
    double eps;
    int64_t *tp, *dfp, *layer; /* (a, c), (a, c), (a, m) */
    uint64_t *pend;            /* (a): cells with a TP not yet followed by an FP */
    uint64_t ge[65];           /* cells of the max-dets indices >= m */
    int *jptr;                 /* (a, c) */
    int64_t *tpthr;            /* (a, R + 1): least tp with tp / npig >= thr[j]; INT64_MAX */
    uint8_t *thr_ready;        /* (a): tpthr computed for the current class */
    boot_point *stack;         /* (a, c) x cap */
    Py_ssize_t *slen, cap;
    const int64_t *npig_k;     /* (A) of the current class and replicate */
    const uint8_t *mmin, *flags;
    const int32_t *dyn;
    const uint64_t *dtp, *dfpm;
    unsigned present;          /* area bits with npig > 0 */
} boot_state;

/* tpthr[j] = the least tp >= 0 whose recall fl(tp / npig) reaches thr[j] (recall is
 * monotone in tp, so j = #{tpthr <= tp} is the searchsorted count of the recall) */
static void
boot_thresholds(boot_state *s, int a)
{
    double npig = (double)s->npig_k[a];
    int64_t *tt = s->tpthr + (Py_ssize_t)a * (s->R + 1);
    int j;
    for (j = 0; j < s->R; j++) {
        double x = ceil(s->thr[j] * npig);
        int64_t t;
        if (!(x < 9e15)) { /* beyond any count */
            tt[j] = INT64_MAX;
            continue;
        }
        t = x < 0 ? 0 : (int64_t)x;
        while (t > 0 && (double)(t - 1) / npig >= s->thr[j])
            t--;
        while ((double)t / npig < s->thr[j])
            t++;
        tt[j] = t;
    }
    tt[s->R] = INT64_MAX;
    s->thr_ready[a] = 1;
}

/* sign of (x.tp / x.den) - (tp / den), exactly */
static inline int
boot_ratio_cmp(const boot_point *x, int64_t tp, int64_t den)
{
#ifdef __SIZEOF_INT128__
    __int128 l = (__int128)x->tp * den, r = (__int128)tp * x->den;
#else
    long double l = (long double)x->tp * den, r = (long double)tp * x->den;
#endif
    return (l > r) - (l < r);
}

/* evaluate the points of the cells in mask of area a (their last TP before an FP) */
static void
boot_flush(boot_state *s, int a, uint64_t mask)
{
    int T = s->T, MT = s->MT, m;
    double npig = (double)s->npig_k[a];
    int64_t cum[64], acc = 0;
    const int64_t *tp = s->tp + a * MT, *dfp = s->dfp + a * MT, *layer = s->layer + a * s->M;
    const int64_t *tt = s->tpthr + (Py_ssize_t)a * (s->R + 1);
    for (m = 0; m < s->M; m++) {
        acc += layer[m];
        cum[m] = acc;
    }
    if (s->mode != 2 && !s->thr_ready[a])
        boot_thresholds(s, a);
    while (mask) {
        int c = __builtin_ctzll(mask);
        Py_ssize_t ci = (Py_ssize_t)a * MT + c;
        int64_t tpv = tp[c], den = cum[c / T] + dfp[c] + tpv;
        boot_point *st = s->stack + ci * s->cap;
        Py_ssize_t n = s->slen[ci];
        double key, pr = 0.0;
        int have_pr = 0;
        mask &= mask - 1;
        if (s->mode == 2)
            key = (double)tpv / npig;
        else {
            int j = s->jptr[ci];
            while (tpv >= tt[j])
                j++;
            s->jptr[ci] = j;
            key = (double)j;
        }
        /* drop the points the new one dominates (precision <= the new one's): compared
         * as exact ratios; equal ratios by their doubles (the spacing(1) term) */
        while (n > 0) {
            int cmp = boot_ratio_cmp(&st[n - 1], tpv, den);
            if (cmp == 0) {
                if (!have_pr) {
                    pr = (double)tpv / ((double)(den - tpv) + (double)tpv + s->eps);
                    have_pr = 1;
                }
                cmp = st[n - 1].pr <= pr ? -1 : 1;
            }
            if (cmp > 0)
                break;
            n--;
        }
        if (!(n > 0 && st[n - 1].key == key)) {
            if (!have_pr)
                pr = (double)tpv / ((double)(den - tpv) + (double)tpv + s->eps);
            st[n].key = key;
            st[n].pr = pr;
            st[n].tp = tpv;
            st[n].den = den;
            n++;
        }
        s->slen[ci] = n;
    }
}

/* one item, counted w times (w copies in a row) */
static inline void
boot_item(boot_state *s, Py_ssize_t p, int64_t w)
{
    int a, mm = s->mmin[p];
    uint8_t f = s->flags[p];
    uint64_t ge;
    if (mm >= s->M)
        return;
    ge = s->ge[mm];
    if (f & BOOT_DYNAMIC) {
        const uint64_t *tpm = s->dtp + (Py_ssize_t)s->dyn[p] * s->A;
        const uint64_t *fpm = s->dfpm + (Py_ssize_t)s->dyn[p] * s->A;
        for (a = 0; a < s->A; a++) {
            uint64_t tm = tpm[a], fm = fpm[a], TM = 0, FM = 0, fl, b;
            int m;
            if (!((s->present >> a) & 1) || !(tm | fm))
                continue;
            for (m = mm; m < s->M; m++) {
                TM |= tm << (m * s->T);
                FM |= fm << (m * s->T);
            }
            fl = s->pend[a] & FM;
            if (fl) {
                boot_flush(s, a, fl);
                s->pend[a] &= ~FM;
            }
            {   /* dense, branch-free (vectorised) adds over the cells */
                int64_t *dfp = s->dfp + a * s->MT, *tpc = s->tp + a * s->MT;
                int c, MT = s->MT;
                for (c = 0; c < MT; c++) {
                    dfp[c] += (int64_t)((FM >> c) & 1) * w;
                    tpc[c] += (int64_t)((TM >> c) & 1) * w;
                }
            }
            (void)b;
            s->pend[a] |= TM;
        }
    }
    else {
        unsigned areas = f & s->present;
        while (areas) {
            uint64_t fl;
            a = __builtin_ctz(areas);
            areas &= areas - 1;
            fl = s->pend[a] & ge;
            if (fl) {
                boot_flush(s, a, fl);
                s->pend[a] &= ~ge;
            }
            s->layer[a * s->M + mm] += w;
        }
    }
}

typedef struct {
    int64_t pos; /* a draw position of the run's image */
    int64_t run;
} boot_copy;

static int
boot_copy_cmp(const void *x, const void *y)
{
    int64_t a = ((const boot_copy *)x)->pos, b = ((const boot_copy *)y)->pos;
    return (a > b) - (a < b);
}

/* A block of tied scores whose order matters, in draw order. Only the copies of its
 * image-runs holding a "dynamic" item (TP somewhere) are placed one by one; the static
 * false positives between two of them are counted per (area, max-dets layer) in slots:
 * slot d holds those drawn after dynamic copy d-1 and before copy d. Applying a slot
 * flushes the pending TPs its FPs follow (with the counts before the slot: a slot holds
 * no TP), then adds its counts. Returns -1 when out of memory. */
static int
boot_mixed_block(boot_state *s, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t run0,
                 Py_ssize_t run1, const int64_t *rs, const int32_t *rimg,
                 const uint8_t *run_dyn, const int32_t *img, const int64_t *wts,
                 const int64_t *pstart, const int64_t *plist, boot_copy **dcp,
                 Py_ssize_t *cap_dc, int64_t **slotp, Py_ssize_t *cap_slots)
{
    Py_ssize_t nd = 0, r, q, p, d, x, AM = (Py_ssize_t)s->A * s->M;
    boot_copy *dc;
    int64_t *slots, *dcpos;
    for (r = run0; r < run1; r++)
        if (run_dyn[r])
            nd += wts[rimg[r]];
    if (nd == 0) { /* no TP drawn: order does not matter */
        for (p = lo; p < hi; p++)
            if (wts[img[p]])
                boot_item(s, p, wts[img[p]]);
        return 0;
    }
    if (nd > *cap_dc) {
        boot_copy *m = PyMem_RawRealloc(*dcp, (size_t)nd * (sizeof(boot_copy) +
                                                            sizeof(int64_t)));
        if (!m)
            return -1;
        *dcp = m;
        *cap_dc = nd;
    }
    if ((nd + 1) * AM > *cap_slots) {
        int64_t *m = PyMem_RawRealloc(*slotp, (size_t)((nd + 1) * AM) * sizeof(int64_t));
        if (!m)
            return -1;
        *slotp = m;
        *cap_slots = (nd + 1) * AM;
    }
    dc = *dcp;
    slots = *slotp;
    nd = 0;
    for (r = run0; r < run1; r++)
        if (run_dyn[r])
            for (q = pstart[rimg[r]]; q < pstart[rimg[r] + 1]; q++) {
                dc[nd].pos = plist[q];
                dc[nd].run = r;
                nd++;
            }
    if (nd <= 32) {
        for (q = 1; q < nd; q++) {
            boot_copy v = dc[q];
            for (x = q; x > 0 && dc[x - 1].pos > v.pos; x--)
                dc[x] = dc[x - 1];
            dc[x] = v;
        }
    }
    else
        qsort(dc, (size_t)nd, sizeof(boot_copy), boot_copy_cmp);
    memset(slots, 0, (size_t)((nd + 1) * AM) * sizeof(int64_t));
    dcpos = (int64_t *)(dc + nd); /* the sorted positions, contiguous (room reserved) */
    for (q = 0; q < nd; q++)
        dcpos[q] = dc[q].pos;
    for (r = run0; r < run1; r++) {
        Py_ssize_t end = r + 1 < run1 ? rs[r + 1] : hi;
        int64_t im = rimg[r];
        if (run_dyn[r])
            continue;
        for (q = pstart[im]; q < pstart[im + 1]; q++) {
            int64_t pos = plist[q];
            Py_ssize_t a0 = 0; /* slot: the number of dynamic copies drawn before pos */
            int64_t *sl;
            if (nd <= 16) {
                for (x = 0; x < nd; x++)
                    a0 += dcpos[x] < pos;
            }
            else { /* branch-free binary search */
                Py_ssize_t len = nd;
                const int64_t *base = dcpos;
                while (len > 1) {
                    Py_ssize_t half = len / 2;
                    base = base[half - 1] < pos ? base + half : base;
                    len -= half;
                }
                a0 = (base - dcpos) + (*base < pos);
            }
            sl = slots + a0 * AM;
            for (p = rs[r]; p < end; p++) {
                unsigned areas = s->flags[p] & s->present;
                int mm = s->mmin[p];
                if (mm >= s->M)
                    continue;
                while (areas) {
                    int a = __builtin_ctz(areas);
                    areas &= areas - 1;
                    sl[a * s->M + mm]++;
                }
            }
        }
    }
    for (d = 0; d <= nd; d++) {
        const int64_t *sl = slots + d * AM;
        int a, l;
        for (a = 0; a < s->A; a++)
            for (l = 0; l < s->M; l++) {
                int64_t c = sl[a * s->M + l];
                uint64_t fl;
                if (!c)
                    continue;
                fl = s->pend[a] & s->ge[l];
                if (fl) {
                    boot_flush(s, a, fl);
                    s->pend[a] &= ~fl;
                }
                s->layer[a * s->M + l] += c;
            }
        if (d < nd) {
            r = dc[d].run;
            for (p = rs[r]; p < (r + 1 < run1 ? rs[r + 1] : hi); p++)
                boot_item(s, p, 1);
        }
    }
    return 0;
}

enum {
    B_ITEM_IMAGE, B_ITEM_MMIN, B_ITEM_FLAGS, B_ITEM_DYN, B_DYN_TP, B_DYN_FP, B_CLASS_START,
    B_BLOCK_START, B_BLOCK_MIXED, B_RUN_START, B_RUN_IMAGE, B_DRAWS, B_GT_START, B_GT_CELL,
    B_GT_COUNT, B_THRESHOLDS, N_BOOT_ARGS
};

static PyObject *
boot_curves(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"item_image", "item_mmin", "item_flags", "item_dyn", "dyn_tp",
                             "dyn_fp", "class_start", "block_start", "block_mixed",
                             "run_start", "run_image", "draws", "gt_start", "gt_cell",
                             "gt_count", "thresholds",
                             "num_images", "num_areas", "num_thresholds", "num_maxdets", "mode",
                             NULL};
    PyObject *o[N_BOOT_ARGS], *out_v = NULL, *out_t = NULL, *out_n = NULL, *result = NULL;
    Py_buffer b[N_BOOT_ARGS];
    void *copies[N_BOOT_ARGS] = {NULL};
    Py_ssize_t n = -1, n1, n2, n3, nd = -1, nd2, kk = -1, nb = -1, nbm, nr = -1, nr1, bi = -1,
               ng = -1, ne = -1, ne2 = -1, r = -1, i, I, B, K, NB, NR, D, cells, max_class = 0;
    int A, T, M, mode, k, ok = 1;
    boot_state s;
    int64_t *wts = NULL, *pstart = NULL, *plist = NULL, *mb_of = NULL, *mb_run0 = NULL,
            *slots = NULL;
    uint8_t *run_dyn = NULL;
    boot_copy *dc = NULL;
    Py_ssize_t cap_dc = 0, cap_slots = 0;
    (void)self;

    memset(b, 0, sizeof b);
    memset(&s, 0, sizeof s);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOOOOOniiii:boot_curves", kwlist,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                                     &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                                     &o[15], &I, &A, &T, &M, &mode))
        return NULL;
    if (I < 1 || I >= INT32_MAX || A < 1 || A > 7 || T < 1 || M < 1 || M * T > 64 || mode < 0 || mode > 2 ||
        (mode == 2 && (A != 1 || T != 1 || M != 1))) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: bad sizes or mode");
        return NULL;
    }
    if (get_buf(o[B_ITEM_IMAGE], &b[B_ITEM_IMAGE], 4, &n, "item_image") < 0)
        goto done;
    n1 = n2 = n3 = n;
    if (get_buf(o[B_ITEM_MMIN], &b[B_ITEM_MMIN], 1, &n1, "item_mmin") < 0 ||
        get_buf(o[B_ITEM_FLAGS], &b[B_ITEM_FLAGS], 1, &n2, "item_flags") < 0 ||
        get_buf(o[B_ITEM_DYN], &b[B_ITEM_DYN], 4, &n3, "item_dyn") < 0 ||
        get_buf(o[B_DYN_TP], &b[B_DYN_TP], 8, &nd, "dyn_tp") < 0)
        goto done;
    nd2 = nd;
    if (get_buf(o[B_DYN_FP], &b[B_DYN_FP], 8, &nd2, "dyn_fp") < 0 ||
        get_buf(o[B_CLASS_START], &b[B_CLASS_START], 8, &kk, "class_start") < 0 ||
        get_buf(o[B_BLOCK_START], &b[B_BLOCK_START], 8, &nb, "block_start") < 0 ||
        get_buf(o[B_RUN_START], &b[B_RUN_START], 8, &nr, "run_start") < 0)
        goto done;
    nbm = nb - 1;
    nr1 = nr - 1;
    if (nb < 1 || kk < 1 || nr < 1 || nd % A != 0) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: bad class_start, block_start, "
                                          "run_start or dyn");
        goto done;
    }
    if (get_buf(o[B_BLOCK_MIXED], &b[B_BLOCK_MIXED], 1, &nbm, "block_mixed") < 0 ||
        get_buf(o[B_RUN_IMAGE], &b[B_RUN_IMAGE], 4, &nr1, "run_image") < 0 ||
        get_buf(o[B_DRAWS], &b[B_DRAWS], 8, &bi, "draws") < 0 ||
        get_buf(o[B_GT_START], &b[B_GT_START], 8, &ng, "gt_start") < 0 ||
        get_buf(o[B_GT_CELL], &b[B_GT_CELL], 8, &ne, "gt_cell") < 0 ||
        get_buf(o[B_THRESHOLDS], &b[B_THRESHOLDS], 8, &r, "thresholds") < 0)
        goto done;
    K = kk - 1;
    NB = nb - 1;
    NR = nr - 1;
    if (n >= INT32_MAX || nb >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: too many items");
        goto done;
    }
    D = nd / A;
    ne2 = ne;
    if (get_buf(o[B_GT_COUNT], &b[B_GT_COUNT], 8, &ne2, "gt_count") < 0)
        goto done;
    if (bi % I != 0 || ng != I + 1 || r < 1) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: draws, gt_start or thresholds "
                                          "mis-sized");
        goto done;
    }
    B = bi / I;
    if (privatize(b, copies, N_BOOT_ARGS) < 0)
        goto done;
    mb_of = PyMem_RawMalloc((size_t)(NB + 1) * sizeof(int64_t));
    mb_run0 = PyMem_RawMalloc((size_t)(NB + 2) * sizeof(int64_t));
    run_dyn = PyMem_RawCalloc((size_t)NR + 1, 1);
    if (!mb_of || !mb_run0 || !run_dyn) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int32_t *img = (const int32_t *)b[B_ITEM_IMAGE].buf;
        const int32_t *dyn = (const int32_t *)b[B_ITEM_DYN].buf;
        const uint8_t *flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const uint8_t *mixed = (const uint8_t *)b[B_BLOCK_MIXED].buf;
        const int64_t *rs = (const int64_t *)b[B_RUN_START].buf;
        const int32_t *rimg = (const int32_t *)b[B_RUN_IMAGE].buf;
        const int64_t *dr = (const int64_t *)b[B_DRAWS].buf;
        Py_ssize_t blk = 0, nmb = 0, run = 0;
        /* validate: indices in range, starts increasing, classes on block boundaries,
         * the runs tiling the mixed blocks */
        for (i = 0; i < n && ok; i++) {
            if (img[i] < 0 || img[i] >= I)
                ok = 0;
            else if ((flags[i] & BOOT_DYNAMIC) && (dyn[i] < 0 || dyn[i] >= D))
                ok = 0;
        }
        if (cs[0] != 0 || cs[K] != n || bs[0] != 0 || bs[NB] != n)
            ok = 0;
        for (k = 0; k < K && ok; k++) {
            if (cs[k + 1] < cs[k])
                ok = 0;
            if (cs[k + 1] - cs[k] > max_class)
                max_class = cs[k + 1] - cs[k];
        }
        for (i = 0; i < NB && ok; i++)
            if (bs[i + 1] <= bs[i])
                ok = 0;
        for (k = 0; k <= K && ok; k++) {
            while (blk < NB && bs[blk] < cs[k])
                blk++;
            if (cs[k] != n && bs[blk] != cs[k])
                ok = 0;
        }
        if (rs[0] < 0 || rs[NR] > n)
            ok = 0;
        for (i = 0; i < NR && ok; i++)
            if (rimg[i] < 0 || rimg[i] >= I || rs[i + 1] <= rs[i])
                ok = 0;
        for (blk = 0; blk < NB && ok; blk++) {
            mb_of[blk] = -1;
            if (!mixed[blk])
                continue;
            mb_of[blk] = nmb;
            mb_run0[nmb] = run;
            if (run >= NR || rs[run] != bs[blk])
                ok = 0;
            while (ok && run < NR && rs[run] < bs[blk + 1]) {
                Py_ssize_t q, end = rs[run + 1] < bs[blk + 1] ? rs[run + 1] : bs[blk + 1];
                for (q = rs[run]; ok && q < end; q++) {
                    if (img[q] != rimg[run])
                        ok = 0;
                    if (flags[q] & BOOT_DYNAMIC)
                        run_dyn[run] = 1;
                }
                run++;
            }
            nmb++;
        }
        mb_run0[nmb] = run;
        if (run != NR)
            ok = 0;
        for (i = 0; i < bi && ok; i++)
            if (dr[i] < 0 || dr[i] >= I)
                ok = 0;
        {
            const int64_t *gs = (const int64_t *)b[B_GT_START].buf;
            const int64_t *gcell = (const int64_t *)b[B_GT_CELL].buf;
            const int64_t *gcount = (const int64_t *)b[B_GT_COUNT].buf;
            if (gs[0] != 0 || gs[I] != ne)
                ok = 0;
            for (i = 0; i < I && ok; i++)
                if (gs[i + 1] < gs[i])
                    ok = 0;
            for (i = 0; i < ne && ok; i++)
                if (gcell[i] < 0 || gcell[i] >= K * A || gcount[i] < 0)
                    ok = 0;
        }
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "boot_curves: inconsistent inputs");
            goto done;
        }
    }
    cells = (Py_ssize_t)T * K * A * M;
    out_v = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    out_t = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    out_n = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * K * A * 8));
    if (!out_v || !out_t || !out_n)
        goto done;
    s.A = A;
    s.T = T;
    s.M = M;
    s.MT = M * T;
    s.mode = mode;
    s.R = (int)r;
    s.thr = (const double *)b[B_THRESHOLDS].buf;
    s.eps = mode == 0 ? 2.220446049250313e-16 : 0.0;
    s.cap = mode == 2 ? max_class + 1 : r + 1;
    s.mmin = (const uint8_t *)b[B_ITEM_MMIN].buf;
    s.flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
    s.dyn = (const int32_t *)b[B_ITEM_DYN].buf;
    s.dtp = (const uint64_t *)b[B_DYN_TP].buf;
    s.dfpm = (const uint64_t *)b[B_DYN_FP].buf;
    {
        int m;
        uint64_t all = s.MT == 64 ? ~(uint64_t)0 : (((uint64_t)1 << s.MT) - 1);
        for (m = 0; m <= M; m++)
            s.ge[m] = m * T >= 64 ? 0 : all & ~((((uint64_t)1) << (m * T)) - 1);
    }
    s.tp = PyMem_RawCalloc((size_t)A * s.MT, sizeof(int64_t));
    s.dfp = PyMem_RawCalloc((size_t)A * s.MT, sizeof(int64_t));
    s.layer = PyMem_RawCalloc((size_t)A * M, sizeof(int64_t));
    s.pend = PyMem_RawCalloc((size_t)A, sizeof(uint64_t));
    s.jptr = PyMem_RawCalloc((size_t)A * s.MT, sizeof(int));
    s.tpthr = PyMem_RawMalloc((size_t)A * (size_t)(r + 1) * sizeof(int64_t));
    s.thr_ready = PyMem_RawCalloc((size_t)A, 1);
    s.slen = PyMem_RawCalloc((size_t)A * s.MT, sizeof(Py_ssize_t));
    s.stack = PyMem_RawMalloc((size_t)A * s.MT * (size_t)s.cap * sizeof(boot_point));
    wts = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    pstart = PyMem_RawMalloc((size_t)(I + 1) * sizeof(int64_t));
    plist = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    if (!s.tp || !s.dfp || !s.layer || !s.pend || !s.jptr || !s.slen || !s.stack || !wts ||
        !s.tpthr || !s.thr_ready ||
        !pstart || !plist) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int32_t *img = (const int32_t *)b[B_ITEM_IMAGE].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const int64_t *rs = (const int64_t *)b[B_RUN_START].buf;
        const int32_t *rimg = (const int32_t *)b[B_RUN_IMAGE].buf;
        const int64_t *draws = (const int64_t *)b[B_DRAWS].buf;
        const int64_t *gs = (const int64_t *)b[B_GT_START].buf;
        const int64_t *gcell = (const int64_t *)b[B_GT_CELL].buf;
        const int64_t *gcount = (const int64_t *)b[B_GT_COUNT].buf;
        double *val = (double *)PyByteArray_AS_STRING(out_v);
        double *tpo = (double *)PyByteArray_AS_STRING(out_t);
        int64_t *npig = (int64_t *)PyByteArray_AS_STRING(out_n);
        Py_ssize_t rep, AMT = (Py_ssize_t)A * s.MT;
        Py_BEGIN_ALLOW_THREADS
        for (rep = 0; rep < B && ok; rep++) {
            const int64_t *row = draws + rep * I;
            Py_ssize_t blk = 0, j, q;
            /* weights and, per image, its draw positions in ascending order */
            memset(wts, 0, (size_t)I * sizeof(int64_t));
            for (j = 0; j < I; j++)
                wts[row[j]]++;
            pstart[0] = 0;
            for (j = 0; j < I; j++)
                pstart[j + 1] = pstart[j] + wts[j];
            for (j = 0; j < I; j++)
                plist[pstart[row[j]]++] = j;
            for (j = I; j > 0; j--)
                pstart[j] = pstart[j - 1];
            pstart[0] = 0;
            /* counted ground truth: sum of the drawn images' counts */
            memset(npig + rep * K * A, 0, (size_t)(K * A) * sizeof(int64_t));
            for (j = 0; j < I; j++)
                if (wts[j])
                    for (q = gs[j]; q < gs[j + 1]; q++)
                        npig[rep * K * A + gcell[q]] += wts[j] * gcount[q];
            for (k = 0; k < K; k++) {
                Py_ssize_t cell;
                int a, m, t;
                s.npig_k = npig + (rep * K + k) * A;
                s.present = 0;
                for (a = 0; a < A; a++)
                    if (s.npig_k[a] > 0)
                        s.present |= 1u << a;
                memset(s.tp, 0, (size_t)AMT * sizeof(int64_t));
                memset(s.dfp, 0, (size_t)AMT * sizeof(int64_t));
                memset(s.layer, 0, (size_t)A * M * sizeof(int64_t));
                memset(s.pend, 0, (size_t)A * sizeof(uint64_t));
                memset(s.jptr, 0, (size_t)AMT * sizeof(int));
                memset(s.thr_ready, 0, (size_t)A);
                memset(s.slen, 0, (size_t)AMT * sizeof(Py_ssize_t));
                while (blk < NB && bs[blk] < cs[k])
                    blk++;
                for (; blk < NB && bs[blk] < cs[k + 1]; blk++) {
                    Py_ssize_t lo = bs[blk], hi = bs[blk + 1], p;
                    if (!s.present)
                        continue;
                    if (mb_of[blk] < 0) {
                        const uint8_t *fl8 = s.flags, *mm8 = s.mmin;
                        for (p = lo; p < hi; p++) {
                            int64_t w = wts[img[p]];
                            unsigned f = fl8[p], areas;
                            int mm = mm8[p];
                            uint64_t nz, ge;
                            if (f & BOOT_DYNAMIC) {
                                if (w)
                                    boot_item(&s, p, w);
                                continue;
                            }
                            if (mm >= M)
                                continue;
                            /* a static false positive, branch-light: a zero weight adds 0
                             * and flushes nothing */
                            nz = (uint64_t)0 - (uint64_t)(w != 0);
                            ge = s.ge[mm] & nz;
                            areas = f & s.present;
                            while (areas) {
                                int a = __builtin_ctz(areas);
                                uint64_t fl = s.pend[a] & ge;
                                areas &= areas - 1;
                                if (fl) {
                                    boot_flush(&s, a, fl);
                                    s.pend[a] &= ~fl;
                                }
                                s.layer[a * M + mm] += w;
                            }
                        }
                    }
                    else if (boot_mixed_block(&s, lo, hi, mb_run0[mb_of[blk]],
                                              mb_run0[mb_of[blk] + 1], rs, rimg, run_dyn,
                                              img, wts, pstart, plist, &dc, &cap_dc, &slots,
                                              &cap_slots) < 0) {
                        ok = 0;
                        break;
                    }
                }
                for (a = 0; a < A; a++)
                    if (s.pend[a]) {
                        boot_flush(&s, a, s.pend[a]);
                        s.pend[a] = 0;
                    }
                for (a = 0; a < A; a++)
                    for (m = 0; m < M; m++)
                        for (t = 0; t < T; t++) {
                            Py_ssize_t ci = (Py_ssize_t)a * s.MT + m * T + t, e;
                            double v = 0.0, prev = 0.0;
                            const boot_point *st = s.stack + ci * s.cap;
                            cell = (((rep * T + t) * K + k) * A + a) * M + m;
                            if (!((s.present >> a) & 1)) {
                                val[cell] = tpo[cell] = NAN;
                                continue;
                            }
                            for (e = 0; e < s.slen[ci]; e++) {
                                v += st[e].pr * (st[e].key - prev);
                                prev = st[e].key;
                            }
                            val[cell] = v;
                            tpo[cell] = (double)s.tp[ci];
                        }
            }
        }
        Py_END_ALLOW_THREADS
        if (!ok) {
            PyErr_NoMemory();
            goto done;
        }
    }
    result = PyTuple_Pack(3, out_v, out_t, out_n);
done:
    Py_XDECREF(out_v);
    Py_XDECREF(out_t);
    Py_XDECREF(out_n);
    for (i = 0; i < N_BOOT_ARGS; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    free_copies(copies, N_BOOT_ARGS);
    PyMem_RawFree(s.tp);
    PyMem_RawFree(s.dfp);
    PyMem_RawFree(s.layer);
    PyMem_RawFree(s.pend);
    PyMem_RawFree(s.jptr);
    PyMem_RawFree(s.tpthr);
    PyMem_RawFree(s.thr_ready);
    PyMem_RawFree(s.slen);
    PyMem_RawFree(s.stack);
    PyMem_RawFree(wts);
    PyMem_RawFree(pstart);
    PyMem_RawFree(plist);
    PyMem_RawFree(mb_of);
    PyMem_RawFree(mb_run0);
    PyMem_RawFree(run_dyn);
    PyMem_RawFree(dc);
    PyMem_RawFree(slots);
    return result;
}
