/* boot_curves: the precision envelopes of bootstrap replicates from weighted counts.
 * Included by _kernels.c (one translation unit). deteval.bootstrap has the reference:
 * resampling the match records explicitly and accumulating each replicate.
 *
 * boot_curves(item_image, item_mmin, item_flags, item_dyn, dyn_tp, dyn_fp, class_start,
 *             block_start, block_mixed, draws, npig, thresholds, num_images, num_areas,
 *             num_thresholds, num_maxdets, mode) -> (value, tp)
 *
 *   Items (match records) sorted by (class, -score, image key, order within the image).
 *   item_image int64[N] image key in [0, I); item_mmin uint8[N]: the first max-dets index m
 *   that keeps the item (rank < max_dets[m]); item_flags uint8[N]: bit a (a < 7) = false
 *   positive at every threshold in area range a, bit 7 = "dynamic": the item's outcomes are
 *   rows item_dyn[p] of dyn_tp / dyn_fp (uint64[D*A]: bit t = TP / FP at threshold t in
 *   area a). class_start int64[K+1]; block_start int64[NB+1]: runs of equal score within a
 *   class (every class start is a block start); block_mixed uint8[NB]: some (area,
 *   threshold) has both a TP and an FP in the block. draws int64[B*I]: each replicate's
 *   drawn image keys in draw order; npig int64[B*K*A]: each replicate's counted ground
 *   truth; thresholds float64[R] (increasing).
 *
 *   Replicate b is the dataset whose image j is image draws[b, j]: a class's detections
 *   ranked by (-score, draw position j, order within the image). An image drawn w times
 *   contributes w copies. Runs of equal score whose order cannot matter (no area and
 *   threshold with both a TP and an FP) are counted with weights; the others are expanded
 *   copy by copy in draw order.
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

typedef struct {
    Py_ssize_t lo, hi; /* items of an image-run in a mixed block */
    int64_t pos;       /* a draw position of its image */
} boot_copy;

typedef struct {
    int A, T, M, mode, R;
    const double *thr;
    double eps;
    int64_t *tp, *dfp, *sfp; /* (a, m, t), (a, m, t), (a, m) */
    uint64_t *pend;          /* (a, m): thresholds with a TP not yet followed by an FP */
    int *jptr;               /* (a, m, t) */
    boot_point *stack;       /* (a, m, t) x cap */
    Py_ssize_t *slen, cap;
    const int64_t *npig_k; /* (A) of the current class and replicate */
    const uint8_t *mmin, *flags;
    const int64_t *dyn;
    const uint64_t *dtp, *dfpm;
    uint8_t present; /* area bits with npig > 0 */
} boot_state;

static void
boot_flush(boot_state *s, int am, uint64_t mask)
{
    int a = am / s->M, T = s->T;
    double npig = (double)s->npig_k[a];
    while (mask) {
        int t = __builtin_ctzll(mask);
        int c = am * T + t;
        double tpv = (double)s->tp[c], fpv = (double)(s->sfp[am] + s->dfp[c]);
        double rc = tpv / npig, pr = tpv / (fpv + tpv + s->eps), key;
        boot_point *st = s->stack + (Py_ssize_t)c * s->cap;
        Py_ssize_t n = s->slen[c];
        mask &= mask - 1;
        if (s->mode == 2)
            key = rc;
        else {
            int j = s->jptr[c];
            while (j < s->R && s->thr[j] <= rc)
                j++;
            s->jptr[c] = j;
            key = (double)j;
        }
        while (n > 0 && st[n - 1].pr <= pr)
            n--;
        if (!(n > 0 && st[n - 1].key == key)) {
            st[n].key = key;
            st[n].pr = pr;
            n++;
        }
        s->slen[c] = n;
    }
}

/* one item, counted w times (w copies in a row) */
static inline void
boot_item(boot_state *s, Py_ssize_t p, int64_t w)
{
    int a, m, M = s->M, T = s->T, mm = s->mmin[p];
    uint8_t f = s->flags[p];
    if (f & BOOT_DYNAMIC) {
        const uint64_t *tpm = s->dtp + s->dyn[p] * s->A, *fpm = s->dfpm + s->dyn[p] * s->A;
        for (a = 0; a < s->A; a++) {
            uint64_t tm = tpm[a], fm = fpm[a];
            if (!((s->present >> a) & 1) || !(tm | fm))
                continue;
            for (m = mm; m < M; m++) {
                int am = a * M + m;
                uint64_t fl = s->pend[am] & fm, b;
                if (fl) {
                    boot_flush(s, am, fl);
                    s->pend[am] &= ~fm;
                }
                for (b = fm; b; b &= b - 1)
                    s->dfp[am * T + __builtin_ctzll(b)] += w;
                for (b = tm; b; b &= b - 1)
                    s->tp[am * T + __builtin_ctzll(b)] += w;
                s->pend[am] |= tm;
            }
        }
    }
    else {
        unsigned areas = f & s->present;
        while (areas) {
            a = __builtin_ctz(areas);
            areas &= areas - 1;
            for (m = mm; m < M; m++) {
                int am = a * M + m;
                if (s->pend[am]) {
                    boot_flush(s, am, s->pend[am]);
                    s->pend[am] = 0;
                }
                s->sfp[am] += w;
            }
        }
    }
}

static int
boot_copy_cmp(const void *x, const void *y)
{
    int64_t a = ((const boot_copy *)x)->pos, b = ((const boot_copy *)y)->pos;
    return (a > b) - (a < b);
}

enum {
    B_ITEM_IMAGE, B_ITEM_MMIN, B_ITEM_FLAGS, B_ITEM_DYN, B_DYN_TP, B_DYN_FP, B_CLASS_START,
    B_BLOCK_START, B_BLOCK_MIXED, B_DRAWS, B_NPIG, B_THRESHOLDS, N_BOOT_ARGS
};

static PyObject *
boot_curves(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"item_image", "item_mmin", "item_flags", "item_dyn", "dyn_tp",
                             "dyn_fp", "class_start", "block_start", "block_mixed", "draws",
                             "npig", "thresholds", "num_images", "num_areas",
                             "num_thresholds", "num_maxdets", "mode", NULL};
    PyObject *o[N_BOOT_ARGS], *out_v = NULL, *out_t = NULL, *result = NULL;
    Py_buffer b[N_BOOT_ARGS];
    void *copies[N_BOOT_ARGS] = {NULL};
    Py_ssize_t n = -1, n1, n2, n3, nd = -1, nd2, kk = -1, nb = -1, nbm, bi = -1, np_ = -1,
               r = -1, i, I, B, K, NB, D, cells, max_class = 0;
    int A, T, M, mode, k, ok = 1;
    boot_state s;
    int64_t *wts = NULL, *pstart = NULL, *plist = NULL;
    boot_copy *cp = NULL;
    (void)self;

    memset(b, 0, sizeof b);
    memset(&s, 0, sizeof s);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOniiii:boot_curves", kwlist,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                                     &o[8], &o[9], &o[10], &o[11], &I, &A, &T, &M, &mode))
        return NULL;
    if (I < 1 || A < 1 || A > 7 || T < 1 || T > 64 || M < 1 || mode < 0 || mode > 2 ||
        (mode == 2 && (A != 1 || T != 1 || M != 1))) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: bad sizes or mode");
        return NULL;
    }
    if (get_buf(o[B_ITEM_IMAGE], &b[B_ITEM_IMAGE], 8, &n, "item_image") < 0)
        goto done;
    n1 = n2 = n3 = n;
    if (get_buf(o[B_ITEM_MMIN], &b[B_ITEM_MMIN], 1, &n1, "item_mmin") < 0 ||
        get_buf(o[B_ITEM_FLAGS], &b[B_ITEM_FLAGS], 1, &n2, "item_flags") < 0 ||
        get_buf(o[B_ITEM_DYN], &b[B_ITEM_DYN], 8, &n3, "item_dyn") < 0 ||
        get_buf(o[B_DYN_TP], &b[B_DYN_TP], 8, &nd, "dyn_tp") < 0)
        goto done;
    nd2 = nd;
    if (get_buf(o[B_DYN_FP], &b[B_DYN_FP], 8, &nd2, "dyn_fp") < 0 ||
        get_buf(o[B_CLASS_START], &b[B_CLASS_START], 8, &kk, "class_start") < 0 ||
        get_buf(o[B_BLOCK_START], &b[B_BLOCK_START], 8, &nb, "block_start") < 0)
        goto done;
    nbm = nb - 1;
    if (nb < 1 || kk < 1 || nd % A != 0) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: bad class_start, block_start or dyn");
        goto done;
    }
    if (get_buf(o[B_BLOCK_MIXED], &b[B_BLOCK_MIXED], 1, &nbm, "block_mixed") < 0 ||
        get_buf(o[B_DRAWS], &b[B_DRAWS], 8, &bi, "draws") < 0 ||
        get_buf(o[B_NPIG], &b[B_NPIG], 8, &np_, "npig") < 0 ||
        get_buf(o[B_THRESHOLDS], &b[B_THRESHOLDS], 8, &r, "thresholds") < 0)
        goto done;
    K = kk - 1;
    NB = nb - 1;
    D = nd / A;
    if (bi % I != 0 || np_ != (bi / I) * K * A || r < 1) {
        PyErr_SetString(PyExc_ValueError, "boot_curves: draws, npig or thresholds mis-sized");
        goto done;
    }
    B = bi / I;
    if (privatize(b, copies, N_BOOT_ARGS) < 0)
        goto done;
    {
        const int64_t *img = (const int64_t *)b[B_ITEM_IMAGE].buf;
        const int64_t *dyn = (const int64_t *)b[B_ITEM_DYN].buf;
        const uint8_t *flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
        const uint8_t *mmin = (const uint8_t *)b[B_ITEM_MMIN].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const int64_t *dr = (const int64_t *)b[B_DRAWS].buf;
        Py_ssize_t blk = 0;
        /* validate: indices in range, starts increasing, classes on block boundaries */
        for (i = 0; i < n && ok; i++) {
            if (img[i] < 0 || img[i] >= I || mmin[i] > M)
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
        for (i = 0; i < bi && ok; i++)
            if (dr[i] < 0 || dr[i] >= I)
                ok = 0;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "boot_curves: inconsistent inputs");
            goto done;
        }
    }
    cells = (Py_ssize_t)T * K * A * M;
    out_v = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    out_t = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(B * cells * 8));
    if (!out_v || !out_t)
        goto done;
    s.A = A;
    s.T = T;
    s.M = M;
    s.mode = mode;
    s.R = (int)r;
    s.thr = (const double *)b[B_THRESHOLDS].buf;
    s.eps = mode == 0 ? 2.220446049250313e-16 : 0.0;
    s.cap = mode == 2 ? max_class + 1 : r + 1;
    s.mmin = (const uint8_t *)b[B_ITEM_MMIN].buf;
    s.flags = (const uint8_t *)b[B_ITEM_FLAGS].buf;
    s.dyn = (const int64_t *)b[B_ITEM_DYN].buf;
    s.dtp = (const uint64_t *)b[B_DYN_TP].buf;
    s.dfpm = (const uint64_t *)b[B_DYN_FP].buf;
    s.tp = PyMem_RawCalloc((size_t)A * M * T, sizeof(int64_t));
    s.dfp = PyMem_RawCalloc((size_t)A * M * T, sizeof(int64_t));
    s.sfp = PyMem_RawCalloc((size_t)A * M, sizeof(int64_t));
    s.pend = PyMem_RawCalloc((size_t)A * M, sizeof(uint64_t));
    s.jptr = PyMem_RawCalloc((size_t)A * M * T, sizeof(int));
    s.slen = PyMem_RawCalloc((size_t)A * M * T, sizeof(Py_ssize_t));
    s.stack = PyMem_RawMalloc((size_t)A * M * T * (size_t)s.cap * sizeof(boot_point));
    wts = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    pstart = PyMem_RawMalloc((size_t)(I + 1) * sizeof(int64_t));
    plist = PyMem_RawMalloc((size_t)I * sizeof(int64_t));
    cp = PyMem_RawMalloc((size_t)I * sizeof(boot_copy));
    if (!s.tp || !s.dfp || !s.sfp || !s.pend || !s.jptr || !s.slen || !s.stack || !wts ||
        !pstart || !plist || !cp) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int64_t *img = (const int64_t *)b[B_ITEM_IMAGE].buf;
        const int64_t *cs = (const int64_t *)b[B_CLASS_START].buf;
        const int64_t *bs = (const int64_t *)b[B_BLOCK_START].buf;
        const uint8_t *mixed = (const uint8_t *)b[B_BLOCK_MIXED].buf;
        const int64_t *draws = (const int64_t *)b[B_DRAWS].buf;
        const int64_t *npig = (const int64_t *)b[B_NPIG].buf;
        double *val = (double *)PyByteArray_AS_STRING(out_v);
        double *tpo = (double *)PyByteArray_AS_STRING(out_t);
        Py_ssize_t rep, AMT = (Py_ssize_t)A * M * T;
        Py_BEGIN_ALLOW_THREADS
        for (rep = 0; rep < B; rep++) {
            const int64_t *row = draws + rep * I;
            Py_ssize_t blk = 0, j;
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
            for (k = 0; k < K; k++) {
                Py_ssize_t c, cell;
                int a, m, t;
                s.npig_k = npig + (rep * K + k) * A;
                s.present = 0;
                for (a = 0; a < A; a++)
                    if (s.npig_k[a] > 0)
                        s.present |= (uint8_t)(1u << a);
                memset(s.tp, 0, (size_t)AMT * sizeof(int64_t));
                memset(s.dfp, 0, (size_t)AMT * sizeof(int64_t));
                memset(s.sfp, 0, (size_t)A * M * sizeof(int64_t));
                memset(s.pend, 0, (size_t)A * M * sizeof(uint64_t));
                memset(s.jptr, 0, (size_t)AMT * sizeof(int));
                memset(s.slen, 0, (size_t)AMT * sizeof(Py_ssize_t));
                while (blk < NB && bs[blk] < cs[k])
                    blk++;
                for (; s.present && blk < NB && bs[blk] < cs[k + 1]; blk++) {
                    Py_ssize_t lo = bs[blk], hi = bs[blk + 1], p;
                    if (!mixed[blk]) {
                        for (p = lo; p < hi; p++)
                            if (wts[img[p]])
                                boot_item(&s, p, wts[img[p]]);
                    }
                    else if (img[lo] == img[hi - 1]) { /* one image: its run, w times over */
                        int64_t w = wts[img[lo]], c2;
                        for (c2 = 0; c2 < w; c2++)
                            for (p = lo; p < hi; p++)
                                boot_item(&s, p, 1);
                    }
                    else { /* copies in draw order */
                        Py_ssize_t nc = 0, q, x;
                        for (p = lo; p < hi;) {
                            Py_ssize_t e = p + 1;
                            int64_t im = img[p];
                            while (e < hi && img[e] == im)
                                e++;
                            for (q = pstart[im]; q < pstart[im + 1]; q++) {
                                cp[nc].lo = p;
                                cp[nc].hi = e;
                                cp[nc].pos = plist[q];
                                nc++;
                            }
                            p = e;
                        }
                        if (nc <= 32) {
                            for (q = 1; q < nc; q++) {
                                boot_copy v = cp[q];
                                for (x = q; x > 0 && cp[x - 1].pos > v.pos; x--)
                                    cp[x] = cp[x - 1];
                                cp[x] = v;
                            }
                        }
                        else
                            qsort(cp, (size_t)nc, sizeof(boot_copy), boot_copy_cmp);
                        for (q = 0; q < nc; q++)
                            for (p = cp[q].lo; p < cp[q].hi; p++)
                                boot_item(&s, p, 1);
                    }
                }
                for (c = 0; c < A * M; c++)
                    if (s.pend[c]) {
                        boot_flush(&s, (int)c, s.pend[c]);
                        s.pend[c] = 0;
                    }
                for (a = 0; a < A; a++)
                    for (m = 0; m < M; m++)
                        for (t = 0; t < T; t++) {
                            Py_ssize_t ci = ((Py_ssize_t)a * M + m) * T + t, e;
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
    PyMem_RawFree(s.sfp);
    PyMem_RawFree(s.pend);
    PyMem_RawFree(s.jptr);
    PyMem_RawFree(s.slen);
    PyMem_RawFree(s.stack);
    PyMem_RawFree(wts);
    PyMem_RawFree(pstart);
    PyMem_RawFree(plist);
    PyMem_RawFree(cp);
    return result;
}
