/* boot_curves: the precision envelopes of bootstrap replicates from weighted counts.
 * Included by _kernels.c (one translation unit). deteval.bootstrap has the reference:
 * resampling the match records explicitly and accumulating each replicate.
 *
 * boot_curves(item_image, item_mmin, item_flags, item_dyn, dyn_tp, dyn_fp, class_start,
 *             block_start, block_mixed, run_start, run_image, draws, npig, thresholds,
 *             num_images, num_areas, num_thresholds, num_maxdets, mode) -> (value, tp)
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
 *   drawn image keys in draw order; npig int64[B*K*A]: each replicate's counted ground
 *   truth; thresholds float64[R] (increasing).
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
 *   recall's numerator); both NaN where npig == 0.
 */

#define BOOT_DYNAMIC 0x80

typedef struct {
    double key; /* recall-threshold count j (modes 0, 1) or recall (mode 2) */
    double pr;
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
    boot_point *stack;         /* (a, c) x cap */
    Py_ssize_t *slen, cap;
    const int64_t *npig_k;     /* (A) of the current class and replicate */
    const uint8_t *mmin, *flags;
    const int32_t *dyn;
    const uint64_t *dtp, *dfpm;
    unsigned present;          /* area bits with npig > 0 */
} boot_state;

/* evaluate the points of the cells in mask of area a (their last TP before an FP) */
static void
boot_flush(boot_state *s, int a, uint64_t mask)
{
    int T = s->T, MT = s->MT, m;
    double npig = (double)s->npig_k[a];
    int64_t cum[64], acc = 0;
    const int64_t *tp = s->tp + a * MT, *dfp = s->dfp + a * MT, *layer = s->layer + a * s->M;
    for (m = 0; m < s->M; m++) {
        acc += layer[m];
        cum[m] = acc;
    }
    while (mask) {
        int c = __builtin_ctzll(mask);
        Py_ssize_t ci = (Py_ssize_t)a * MT + c;
        double tpv = (double)tp[c], fpv = (double)(cum[c / T] + dfp[c]);
        double rc = tpv / npig, pr = tpv / (fpv + tpv + s->eps), key;
        boot_point *st = s->stack + ci * s->cap;
        Py_ssize_t n = s->slen[ci];
        mask &= mask - 1;
        if (s->mode == 2)
            key = rc;
        else {
            int j = s->jptr[ci];
            while (j < s->R && s->thr[j] <= rc)
                j++;
            s->jptr[ci] = j;
            key = (double)j;
        }
        while (n > 0 && st[n - 1].pr <= pr)
            n--;
        if (!(n > 0 && st[n - 1].key == key)) {
            st[n].key = key;
            st[n].pr = pr;
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
            for (b = FM; b; b &= b - 1)
                s->dfp[a * s->MT + __builtin_ctzll(b)] += w;
            for (b = TM; b; b &= b - 1)
                s->tp[a * s->MT + __builtin_ctzll(b)] += w;
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

enum {
    B_ITEM_IMAGE, B_ITEM_MMIN, B_ITEM_FLAGS, B_ITEM_DYN, B_DYN_TP, B_DYN_FP, B_CLASS_START,
    B_BLOCK_START, B_BLOCK_MIXED, B_RUN_START, B_RUN_IMAGE, B_DRAWS, B_NPIG, B_THRESHOLDS,
    N_BOOT_ARGS
};

static PyObject *
boot_curves(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"item_image", "item_mmin", "item_flags", "item_dyn", "dyn_tp",
                             "dyn_fp", "class_start", "block_start", "block_mixed",
                             "run_start", "run_image", "draws", "npig", "thresholds",
                             "num_images", "num_areas", "num_thresholds", "num_maxdets", "mode",
                             NULL};
    PyObject *o[N_BOOT_ARGS], *out_v = NULL, *out_t = NULL, *result = NULL;
    Py_buffer b[N_BOOT_ARGS];
    void *copies[N_BOOT_ARGS] = {NULL};
    Py_ssize_t n = -1, n1, n2, n3, nd = -1, nd2, kk = -1, nb = -1, nbm, nr = -1, nr1, bi = -1,
               np_ = -1, r = -1, i, I, B, K, NB, NR, D, cells, max_class = 0;
    int A, T, M, mode, k, ok = 1;
    boot_state s;
    int64_t *wts = NULL, *bstart = NULL, *img_rs = NULL, *mb_of = NULL;
    int32_t *img_runs = NULL, *run_mb = NULL, *bucket = NULL, *bfill = NULL;
    (void)self;

    memset(b, 0, sizeof b);
    memset(&s, 0, sizeof s);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOOOniiii:boot_curves", kwlist,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                                     &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &I, &A, &T,
                                     &M, &mode))
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
        get_buf(o[B_NPIG], &b[B_NPIG], 8, &np_, "npig") < 0 ||
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
    if (bi % I != 0 || np_ != (bi / I) * K * A || r < 1) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: draws, npig or thresholds mis-sized");
        goto done;
    }
    B = bi / I;
    if (privatize(b, copies, N_BOOT_ARGS) < 0)
        goto done;
    mb_of = PyMem_RawMalloc((size_t)(NB + 1) * sizeof(int64_t));
    run_mb = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
    img_rs = PyMem_RawCalloc((size_t)I + 1, sizeof(int64_t));
    img_runs = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
    if (!mb_of || !run_mb || !img_rs || !img_runs) {
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
            if (run >= NR || rs[run] != bs[blk])
                ok = 0;
            while (ok && run < NR && rs[run] < bs[blk + 1]) {
                Py_ssize_t q, end = rs[run + 1] < bs[blk + 1] ? rs[run + 1] : bs[blk + 1];
                for (q = rs[run]; ok && q < end; q++)
                    if (img[q] != rimg[run])
                        ok = 0;
                run_mb[run] = (int32_t)nmb;
                run++;
            }
            nmb++;
        }
        if (run != NR)
            ok = 0;
        for (i = 0; i < bi && ok; i++)
            if (dr[i] < 0 || dr[i] >= I)
                ok = 0;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "boot_curves: inconsistent inputs");
            goto done;
        }
        /* image -> its runs */
        for (i = 0; i < NR; i++)
            img_rs[rimg[i] + 1]++;
        for (i = 0; i < I; i++)
            img_rs[i + 1] += img_rs[i];
        {
            int64_t *fill = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
            if (!fill) {
                PyErr_NoMemory();
                goto done;
            }
            memcpy(fill, img_rs, (size_t)I * sizeof(int64_t));
            for (i = 0; i < NR; i++)
                img_runs[fill[rimg[i]]++] = (int32_t)i;
            PyMem_RawFree(fill);
        }
        bstart = PyMem_RawMalloc((size_t)(nmb + 1) * sizeof(int64_t));
        bfill = PyMem_RawMalloc((size_t)(nmb + 1) * sizeof(int32_t));
    }
    cells = (Py_ssize_t)T * K * A * M;
    out_v = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    out_t = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    if (!out_v || !out_t)
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
    s.slen = PyMem_RawCalloc((size_t)A * s.MT, sizeof(Py_ssize_t));
    s.stack = PyMem_RawMalloc((size_t)A * s.MT * (size_t)s.cap * sizeof(boot_point));
    wts = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    bucket = PyMem_RawMalloc(sizeof(int32_t));
    if (!s.tp || !s.dfp || !s.layer || !s.pend || !s.jptr || !s.slen || !s.stack || !wts ||
        !bstart || !bfill || !bucket) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int32_t *img = (const int32_t *)b[B_ITEM_IMAGE].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const uint8_t *mixed = (const uint8_t *)b[B_BLOCK_MIXED].buf;
        const int64_t *rs = (const int64_t *)b[B_RUN_START].buf;
        const int32_t *rimg = (const int32_t *)b[B_RUN_IMAGE].buf;
        const int64_t *draws = (const int64_t *)b[B_DRAWS].buf;
        const int64_t *npig = (const int64_t *)b[B_NPIG].buf;
        double *val = (double *)PyByteArray_AS_STRING(out_v);
        double *tpo = (double *)PyByteArray_AS_STRING(out_t);
        Py_ssize_t rep, AMT = (Py_ssize_t)A * s.MT, nmb = 0, cap_bucket = 0;
        for (i = 0; i < NB; i++)
            nmb += mixed[i] != 0;
        Py_BEGIN_ALLOW_THREADS
        for (rep = 0; rep < B; rep++) {
            const int64_t *row = draws + rep * I;
            Py_ssize_t blk = 0, j, q;
            memset(wts, 0, (size_t)I * sizeof(int64_t));
            for (j = 0; j < I; j++)
                wts[row[j]]++;
            /* each mixed block's image-runs, copy by copy, in draw order */
            memset(bstart, 0, (size_t)(nmb + 1) * sizeof(int64_t));
            for (q = 0; q < NR; q++)
                bstart[run_mb[q] + 1] += wts[rimg[q]];
            for (q = 0; q < nmb; q++)
                bstart[q + 1] += bstart[q];
            if (bstart[nmb] >= INT32_MAX) {
                ok = 0;
                break;
            }
            if (bstart[nmb] > cap_bucket) {
                int32_t *nb_ = PyMem_RawRealloc(bucket, (size_t)bstart[nmb] * sizeof(int32_t));
                if (!nb_) {
                    ok = 0;
                    break;
                }
                bucket = nb_;
                cap_bucket = bstart[nmb];
            }
            for (q = 0; q <= nmb; q++)
                bfill[q] = (int32_t)bstart[q];
            for (j = 0; j < I && NR; j++) {
                int64_t im = row[j];
                for (q = img_rs[im]; q < img_rs[im + 1]; q++) {
                    int32_t rr = img_runs[q];
                    bucket[bfill[run_mb[rr]]++] = rr;
                }
            }
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
                memset(s.slen, 0, (size_t)AMT * sizeof(Py_ssize_t));
                while (blk < NB && bs[blk] < cs[k])
                    blk++;
                for (; blk < NB && bs[blk] < cs[k + 1]; blk++) {
                    Py_ssize_t lo = bs[blk], hi = bs[blk + 1], p;
                    if (!s.present)
                        continue;
                    if (mb_of[blk] < 0) {
                        for (p = lo; p < hi; p++) {
                            int64_t w = wts[img[p]];
                            if (w)
                                boot_item(&s, p, w);
                        }
                    }
                    else {
                        int64_t mb = mb_of[blk];
                        for (q = bstart[mb]; q < bstart[mb + 1]; q++) {
                            int64_t rr = bucket[q];
                            Py_ssize_t end = rs[rr + 1] < hi ? rs[rr + 1] : hi;
                            for (p = rs[rr]; p < end; p++)
                                boot_item(&s, p, 1);
                        }
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
    result = PyTuple_Pack(2, out_v, out_t);
done:
    Py_XDECREF(out_v);
    Py_XDECREF(out_t);
    for (i = 0; i < N_BOOT_ARGS; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    free_copies(copies, N_BOOT_ARGS);
    PyMem_RawFree(s.tp);
    PyMem_RawFree(s.dfp);
    PyMem_RawFree(s.layer);
    PyMem_RawFree(s.pend);
    PyMem_RawFree(s.jptr);
    PyMem_RawFree(s.slen);
    PyMem_RawFree(s.stack);
    PyMem_RawFree(wts);
    PyMem_RawFree(bstart);
    PyMem_RawFree(bfill);
    PyMem_RawFree(bucket);
    PyMem_RawFree(mb_of);
    PyMem_RawFree(run_mb);
    PyMem_RawFree(img_rs);
    PyMem_RawFree(img_runs);
    return result;
}
