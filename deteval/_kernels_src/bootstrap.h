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
 *   threshold with both a TP and an FP) are counted with weights. In the others ("mixed")
 *   only the copies of image-runs holding a TP-capable ("dynamic") item are placed one by
 *   one, in draw order; the static false positives between two of them are counted per
 *   area in slots. One walk over the draws j = 0, 1, ... visiting the mixed image-runs of
 *   image draws[b, j] fills every block's dynamic list in draw order and every static copy
 *   into the slot after the dynamic copies drawn before it (no sort).
 *
 *   Precision envelopes are needed only at the largest max-dets (every AP figure uses it;
 *   the other max-dets give AR, i.e. only final TP counts): the state per class is the TP
 *   counts per (area, max-dets, threshold) and the FP counts per (area, threshold) of the
 *   largest max-dets. value at the other max-dets is 0.
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

/* State of one class in one replicate. tp per (a, m, t); the false positives of the
 * largest max-dets per (a, t): fsp[a] (the items FP at every threshold) + dfp[a][t]. */
typedef struct {
    int A, T, M, MT, mode, R;
    const double *thr;
    double eps;
    int64_t *tp, *dfp, *fsp;   /* (a, m * T + t), (a, t), (a) */
    uint64_t *pend;            /* (a): thresholds with a TP not yet followed by an FP */
    int *jptr;                 /* (a, t) */
    int64_t *tpthr;            /* (a, R + 1): least tp with tp / npig >= thr[j]; INT64_MAX */
    uint8_t *thr_ready;        /* (a): tpthr computed for the current class */
    boot_point *stack;         /* (a, t) x cap */
    boot_point *top;           /* (a, t): a copy of each stack's top (compact: stays cached) */
    Py_ssize_t *slen, cap;
    const int64_t *npig_k;     /* (A) of the current class and replicate */
    const uint8_t *mmin, *flags;
    const int32_t *dyn;
    const uint64_t *dtp, *dfpm;
    unsigned present;          /* area bits with npig > 0 */
    int oom;                   /* a stack could not grow */
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

/* evaluate the points of the thresholds in mask of area a (their last TP before an FP) */
static void
boot_flush(boot_state *s, int a, uint64_t mask)
{
    int T = s->T;
    double npig = (double)s->npig_k[a];
    const int64_t *tp = s->tp + (Py_ssize_t)a * s->MT + (Py_ssize_t)(s->M - 1) * T;
    const int64_t *dfp = s->dfp + (Py_ssize_t)a * T;
    const int64_t *tt = s->tpthr + (Py_ssize_t)a * (s->R + 1);
    int64_t fs = s->fsp[a];
    if (s->mode != 2 && !s->thr_ready[a])
        boot_thresholds(s, a);
    while (mask) {
        int t = __builtin_ctzll(mask);
        Py_ssize_t ci = (Py_ssize_t)a * T + t;
        int64_t tpv = tp[t], den = fs + dfp[t] + tpv;
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
        /* the common case, decided from the cached top (no stack access): the top has
         * the same recall-threshold count and a higher precision ratio */
        if (n > 0 && s->top[ci].key == key && boot_ratio_cmp(&s->top[ci], tpv, den) > 0)
            continue;
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
            if (n >= s->cap) {
                /* mode 2 only (modes 0, 1 keep at most R points, one per threshold count;
                 * mode 2 has one cell): the copies of duplicated images can make more
                 * envelope corners than the class has records */
                boot_point *grown = PyMem_RawRealloc(s->stack, (size_t)(2 * s->cap) *
                                                     sizeof(boot_point));
                if (!grown) {
                    s->oom = 1;
                    return;
                }
                s->stack = grown;
                s->cap *= 2;
                st = s->stack + ci * s->cap;
            }
            if (!have_pr)
                pr = (double)tpv / ((double)(den - tpv) + (double)tpv + s->eps);
            st[n].key = key;
            st[n].pr = pr;
            st[n].tp = tpv;
            st[n].den = den;
            n++;
        }
        if (n > 0)
            s->top[ci] = st[n - 1];
        s->slen[ci] = n;
    }
}

/* a false positive at every threshold of area a, w copies (w > 0) */
static inline void
boot_static_fp(boot_state *s, int a, int64_t w)
{
    if (s->pend[a]) {
        boot_flush(s, a, s->pend[a]);
        s->pend[a] = 0;
    }
    s->fsp[a] += w;
}

/* one item, counted w times (w copies in a row; w > 0) */
static inline void
boot_item(boot_state *s, Py_ssize_t p, int64_t w)
{
    int a, mm = s->mmin[p], T = s->T;
    uint8_t f = s->flags[p];
    if (mm >= s->M)
        return;
    if (f & BOOT_DYNAMIC) {
        const uint64_t *tpm = s->dtp + (Py_ssize_t)s->dyn[p] * s->A;
        const uint64_t *fpm = s->dfpm + (Py_ssize_t)s->dyn[p] * s->A;
        for (a = 0; a < s->A; a++) {
            uint64_t tm = tpm[a], fm = fpm[a], fl;
            int64_t *tpc, *dfp;
            int c, t;
            if (!((s->present >> a) & 1) || !(tm | fm))
                continue;
            fl = s->pend[a] & fm;
            if (fl) {
                boot_flush(s, a, fl);
                s->pend[a] &= ~fm;
            }
            /* dense, branch-free (vectorised) adds */
            tpc = s->tp + (Py_ssize_t)a * s->MT + (Py_ssize_t)mm * T;
            {
                int64_t add[64];
                for (t = 0; t < T; t++)
                    add[t] = (int64_t)((tm >> t) & 1) * w;
                for (c = mm; c < s->M; c++, tpc += T)
                    for (t = 0; t < T; t++)
                        tpc[t] += add[t];
            }
            dfp = s->dfp + (Py_ssize_t)a * T;
            for (t = 0; t < T; t++)
                dfp[t] += (int64_t)((fm >> t) & 1) * w;
            s->pend[a] |= tm;
        }
    }
    else {
        unsigned areas = f & s->present;
        while (areas) {
            a = __builtin_ctz(areas);
            areas &= areas - 1;
            boot_static_fp(s, a, w);
        }
    }
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
               ng = -1, ne = -1, ne2 = -1, r = -1, i, I, B, K, NB, NR, D, cells, max_class = 0,
               nmb = 0;
    int A, T, M, mode, k, ok = 1;
    boot_state s;
    /* per mixed block: its first run, dynamic copies, slot / dynamic-list offsets, fill */
    int64_t *wts = NULL, *mb_of = NULL, *mb_run0 = NULL, *mb_nd = NULL, *mb_soff = NULL,
            *mb_doff = NULL, *img_rs = NULL, *run_cnt = NULL;
    int32_t *slots = NULL; /* per replicate: at most I draws x the longest image-run */
    int32_t *img_runs = NULL, *run_mb = NULL, *dseq = NULL, *dyn_runs = NULL, *mem_mb = NULL;
    int32_t *mem_cnt = NULL; /* per membership (image-major): block (-1 - block if dynamic)
                                and static counts per area, read sequentially */
    uint8_t *run_dyn = NULL;
    Py_ssize_t cap_slots = 0, cap_dseq = 0, n_dyn_runs = 0;
    (void)self;

    memset(b, 0, sizeof b);
    memset(&s, 0, sizeof s);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOOOOOniiii:boot_curves", kwlist,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                                     &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                                     &o[15], &I, &A, &T, &M, &mode))
        return NULL;
    if (I < 1 || I >= INT32_MAX || A < 1 || A > 7 || T < 1 || T > 64 || M < 1 || M > 64 ||
        mode < 0 || mode > 2 || (mode == 2 && (A != 1 || T != 1 || M != 1))) {
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
        get_buf(o[B_GT_CELL], &b[B_GT_CELL], 8, &ne, "gt_cell") < 0)
        goto done;
    ne2 = ne;
    if (get_buf(o[B_GT_COUNT], &b[B_GT_COUNT], 8, &ne2, "gt_count") < 0 ||
        get_buf(o[B_THRESHOLDS], &b[B_THRESHOLDS], 8, &r, "thresholds") < 0)
        goto done;
    K = kk - 1;
    NB = nb - 1;
    NR = nr - 1;
    D = nd / A;
    if (n >= INT32_MAX || nb >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: too many items");
        goto done;
    }
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
    run_mb = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
    run_cnt = PyMem_RawCalloc((size_t)(NR + 1) * (size_t)A, sizeof(int64_t));
    img_rs = PyMem_RawCalloc((size_t)I + 1, sizeof(int64_t));
    img_runs = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
    dyn_runs = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
    if (!mb_of || !mb_run0 || !run_dyn || !run_mb || !run_cnt || !img_rs || !img_runs ||
        !dyn_runs) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int32_t *img = (const int32_t *)b[B_ITEM_IMAGE].buf;
        const int32_t *dyn = (const int32_t *)b[B_ITEM_DYN].buf;
        const uint8_t *flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
        const uint8_t *mmin = (const uint8_t *)b[B_ITEM_MMIN].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const uint8_t *mixed = (const uint8_t *)b[B_BLOCK_MIXED].buf;
        const int64_t *rs = (const int64_t *)b[B_RUN_START].buf;
        const int32_t *rimg = (const int32_t *)b[B_RUN_IMAGE].buf;
        const int64_t *dr = (const int64_t *)b[B_DRAWS].buf;
        Py_ssize_t blk = 0, run = 0;
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
                    else if (mmin[q] < M) {
                        int a;
                        for (a = 0; a < A; a++)
                            run_cnt[run * A + a] += (flags[q] >> a) & 1;
                    }
                }
                run_mb[run] = (int32_t)nmb;
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
        /* image -> its runs in mixed blocks; the runs holding a dynamic item */
        for (i = 0; i < NR; i++) {
            img_rs[rimg[i] + 1]++;
            if (run_dyn[i])
                dyn_runs[n_dyn_runs++] = (int32_t)i;
        }
        for (i = 0; i < I; i++)
            img_rs[i + 1] += img_rs[i];
        {
            int64_t *fill = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
            mem_mb = PyMem_RawMalloc((size_t)(NR + 1) * sizeof(int32_t));
            mem_cnt = PyMem_RawMalloc((size_t)(NR + 1) * (size_t)A * sizeof(int32_t));
            if (!fill || !mem_mb || !mem_cnt) {
                PyMem_RawFree(fill);
                PyErr_NoMemory();
                goto done;
            }
            memcpy(fill, img_rs, (size_t)I * sizeof(int64_t));
            for (i = 0; i < NR; i++) {
                int64_t q = fill[rimg[i]]++;
                int a;
                img_runs[q] = (int32_t)i;
                mem_mb[q] = run_dyn[i] ? -1 - run_mb[i] : run_mb[i];
                for (a = 0; a < A; a++) {
                    if (run_cnt[i * A + a] >= INT32_MAX)
                        ok = 0;
                    mem_cnt[q * A + a] = (int32_t)run_cnt[i * A + a];
                }
            }
            PyMem_RawFree(fill);
            {
                int64_t longest = 0; /* static items of one image-run, per area */
                for (i = 0; i < NR * A; i++)
                    if (run_cnt[i] > longest)
                        longest = run_cnt[i];
                if ((double)longest * (double)I >= (double)INT32_MAX)
                    ok = 0;
            }
            if (!ok) {
                PyErr_SetString(PyExc_ValueError, "boot_curves: image-runs too long for "
                                                  "32-bit slot counts");
                goto done;
            }
        }
    }
    mb_nd = PyMem_RawCalloc((size_t)nmb + 1, sizeof(int64_t));
    mb_soff = PyMem_RawCalloc((size_t)nmb + 1, sizeof(int64_t));
    mb_doff = PyMem_RawCalloc((size_t)nmb + 1, sizeof(int64_t));
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
    s.cap = mode == 2 ? max_class + 2 : r + 1;
    s.mmin = (const uint8_t *)b[B_ITEM_MMIN].buf;
    s.flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
    s.dyn = (const int32_t *)b[B_ITEM_DYN].buf;
    s.dtp = (const uint64_t *)b[B_DYN_TP].buf;
    s.dfpm = (const uint64_t *)b[B_DYN_FP].buf;
    s.tp = PyMem_RawCalloc((size_t)A * s.MT, sizeof(int64_t));
    s.dfp = PyMem_RawCalloc((size_t)A * T, sizeof(int64_t));
    s.fsp = PyMem_RawCalloc((size_t)A, sizeof(int64_t));
    s.pend = PyMem_RawCalloc((size_t)A, sizeof(uint64_t));
    s.jptr = PyMem_RawCalloc((size_t)A * T, sizeof(int));
    s.tpthr = PyMem_RawMalloc((size_t)A * (size_t)(r + 1) * sizeof(int64_t));
    s.thr_ready = PyMem_RawCalloc((size_t)A, 1);
    s.slen = PyMem_RawCalloc((size_t)A * T, sizeof(Py_ssize_t));
    s.stack = PyMem_RawMalloc((size_t)A * T * (size_t)s.cap * sizeof(boot_point));
    s.top = PyMem_RawCalloc((size_t)A * T, sizeof(boot_point));
    wts = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    if (!s.tp || !s.dfp || !s.fsp || !s.pend || !s.jptr || !s.tpthr || !s.thr_ready ||
        !s.slen || !s.stack || !s.top || !wts || !mb_nd || !mb_soff || !mb_doff) {
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
        Py_ssize_t rep;
        Py_BEGIN_ALLOW_THREADS
        for (rep = 0; rep < B && ok; rep++) {
            const int64_t *row = draws + rep * I;
            Py_ssize_t blk = 0, j, q, mb;
            memset(wts, 0, (size_t)I * sizeof(int64_t));
            for (j = 0; j < I; j++)
                wts[row[j]]++;
            /* counted ground truth: sum of the drawn images' counts */
            memset(npig + rep * K * A, 0, (size_t)(K * A) * sizeof(int64_t));
            for (j = 0; j < I; j++)
                if (wts[j])
                    for (q = gs[j]; q < gs[j + 1]; q++)
                        npig[rep * K * A + gcell[q]] += wts[j] * gcount[q];
            /* mixed blocks: dynamic copies in draw order, static copies into slots */
            if (nmb) {
                Py_ssize_t so = 0, dofs = 0;
                memset(mb_nd, 0, (size_t)nmb * sizeof(int64_t));
                for (q = 0; q < n_dyn_runs; q++)
                    mb_nd[run_mb[dyn_runs[q]]] += wts[rimg[dyn_runs[q]]];
                for (mb = 0; mb < nmb; mb++) {
                    mb_soff[mb] = so * A;  /* the fill pointers: slot, dynamic list */
                    mb_doff[mb] = dofs;
                    so += mb_nd[mb] + 1;
                    dofs += mb_nd[mb];
                }
                if (so * A > cap_slots) {
                    int32_t *m2 = PyMem_RawRealloc(slots, (size_t)(so * A) * sizeof(int32_t));
                    if (!m2) {
                        ok = 0;
                        break;
                    }
                    slots = m2;
                    cap_slots = so * A;
                }
                if (dofs > cap_dseq || !dseq) {
                    int32_t *m3 = PyMem_RawRealloc(dseq, (size_t)(dofs + 1) * sizeof(int32_t));
                    if (!m3) {
                        ok = 0;
                        break;
                    }
                    dseq = m3;
                    cap_dseq = dofs;
                }
                memset(slots, 0, (size_t)(so * A) * sizeof(int32_t));
                for (j = 0; j < I; j++) {
                    int64_t im = row[j];
                    for (q = img_rs[im]; q < img_rs[im + 1]; q++) {
                        int32_t m_ = mem_mb[q];
                        if (m_ < 0) { /* a dynamic copy: the next slot begins after it */
                            m_ = -1 - m_;
                            dseq[mb_doff[m_]++] = img_runs[q];
                            mb_soff[m_] += A;
                        }
                        else {
                            int32_t *sl = slots + mb_soff[m_];
                            const int32_t *cnt = mem_cnt + q * A;
                            int a;
                            for (a = 0; a < A; a++)
                                sl[a] += cnt[a];
                        }
                    }
                }
                /* back to the starts */
                so = dofs = 0;
                for (mb = 0; mb < nmb; mb++) {
                    mb_soff[mb] = so * A;
                    mb_doff[mb] = dofs;
                    so += mb_nd[mb] + 1;
                    dofs += mb_nd[mb];
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
                memset(s.tp, 0, (size_t)A * s.MT * sizeof(int64_t));
                memset(s.dfp, 0, (size_t)A * T * sizeof(int64_t));
                memset(s.fsp, 0, (size_t)A * sizeof(int64_t));
                memset(s.pend, 0, (size_t)A * sizeof(uint64_t));
                memset(s.jptr, 0, (size_t)A * T * sizeof(int));
                memset(s.slen, 0, (size_t)A * T * sizeof(Py_ssize_t));
                memset(s.thr_ready, 0, (size_t)A);
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
                            if (!w || mm8[p] >= M)
                                continue;
                            if (f & BOOT_DYNAMIC) {
                                boot_item(&s, p, w);
                                continue;
                            }
                            areas = f & s.present;
                            while (areas) {
                                int a2 = __builtin_ctz(areas);
                                areas &= areas - 1;
                                boot_static_fp(&s, a2, w);
                            }
                        }
                    }
                    else {
                        Py_ssize_t d, nd_ = mb_nd[mb_of[blk]];
                        const int32_t *sl = slots + mb_soff[mb_of[blk]];
                        const int32_t *ds = dseq + mb_doff[mb_of[blk]];
                        Py_ssize_t run1 = mb_run0[mb_of[blk] + 1];
                        for (d = 0; d <= nd_; d++, sl += A) {
                            for (a = 0; a < A; a++)
                                if (sl[a] && ((s.present >> a) & 1))
                                    boot_static_fp(&s, a, (int64_t)sl[a]);
                            if (d < nd_) {
                                int32_t rr = ds[d];
                                Py_ssize_t end = rr + 1 < run1 ? rs[rr + 1] : hi;
                                for (p = rs[rr]; p < end; p++)
                                    boot_item(&s, p, 1);
                            }
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
                            Py_ssize_t ci = (Py_ssize_t)a * T + t, e;
                            double v = 0.0, prev = 0.0;
                            const boot_point *st = s.stack + ci * s.cap;
                            cell = (((rep * T + t) * K + k) * A + a) * M + m;
                            if (!((s.present >> a) & 1)) {
                                val[cell] = tpo[cell] = NAN;
                                continue;
                            }
                            tpo[cell] = (double)s.tp[(Py_ssize_t)a * s.MT + m * T + t];
                            if (m != M - 1) {
                                val[cell] = 0.0;
                                continue;
                            }
                            for (e = 0; e < s.slen[ci]; e++) {
                                v += st[e].pr * (st[e].key - prev);
                                prev = st[e].key;
                            }
                            val[cell] = v;
                        }
            }
        }
        Py_END_ALLOW_THREADS
        if (!ok || s.oom) {
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
    PyMem_RawFree(s.fsp);
    PyMem_RawFree(s.pend);
    PyMem_RawFree(s.jptr);
    PyMem_RawFree(s.tpthr);
    PyMem_RawFree(s.thr_ready);
    PyMem_RawFree(s.slen);
    PyMem_RawFree(s.stack);
    PyMem_RawFree(s.top);
    PyMem_RawFree(wts);
    PyMem_RawFree(mb_of);
    PyMem_RawFree(mb_run0);
    PyMem_RawFree(mb_nd);
    PyMem_RawFree(mb_soff);
    PyMem_RawFree(mb_doff);
    PyMem_RawFree(slots);
    PyMem_RawFree(img_rs);
    PyMem_RawFree(run_cnt);
    PyMem_RawFree(img_runs);
    PyMem_RawFree(run_mb);
    PyMem_RawFree(dseq);
    PyMem_RawFree(dyn_runs);
    PyMem_RawFree(run_dyn);
    PyMem_RawFree(mem_mb);
    PyMem_RawFree(mem_cnt);
    return result;
}
