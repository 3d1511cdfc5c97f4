"""``pycocotools.cocoeval.COCOeval`` for the drop-in, over deteval's engine.

``evaluate()`` matches with :func:`deteval.match.match_coco` (the compiled walk for boxes,
mask IoU and OKS from :mod:`deteval.masks` / :mod:`deteval.keypoints`); ``accumulate()``
is :func:`deteval.ap.coco_accumulate`; ``summarize()`` prints pycocotools' twelve (ten for
keypoints) lines. ``evalImgs`` and ``ious`` are rebuilt from the columns when first read.
The arrays are pycocotools' bit for bit, with its -1 for undefined entries (this is the
compatibility layer: its conventions rule here).

References
----------
.. [1] pycocotools ``cocoeval.py`` (2.0.x): ``evaluate``, ``evaluateImg``, ``accumulate``,
   ``summarize``, ``Params``. https://github.com/cocodataset/cocoapi
"""
from __future__ import annotations

import copy
import datetime
import time
from collections import defaultdict

import numpy as np

from ..ap import coco_accumulate
from ..match import CocoMatches
from . import _engine

__all__ = ["COCOeval", "Params"]


class Params:
    """Evaluation parameters, as pycocotools' ``Params`` (edit them before ``evaluate()``).

    Attributes
    ----------
    imgIds, catIds : list
        Images and categories evaluated (default: all of the ground truth, sorted).
    iouThrs : ndarray, shape (T,)
        ``0.50:0.05:0.95``.
    recThrs : ndarray, shape (R,)
        ``0:0.01:1``.
    maxDets : list of int
        ``[1, 10, 100]`` (keypoints ``[20]``).
    areaRng : list of [lo, hi]; areaRngLbl : list of str
        all / small / medium / large (keypoints: all / medium / large).
    useCats : int
        1: per category; 0: categories ignored (class-agnostic).
    kpt_oks_sigmas : ndarray, shape (17,)
        Keypoints only.
    """

    def setDetParams(self):
        self.imgIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2],
                        [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ["all", "small", "medium", "large"]
        self.useCats = 1

    def setKpParams(self):
        self.imgIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [20]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ["all", "medium", "large"]
        self.useCats = 1
        self.kpt_oks_sigmas = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62,
                                        1.07, 1.07, .87, .87, .89, .89]) / 10.0

    def __init__(self, iouType="segm"):
        if iouType == "segm" or iouType == "bbox":
            self.setDetParams()
        elif iouType == "keypoints":
            self.setKpParams()
        else:
            raise Exception("iouType not supported")
        self.iouType = iouType
        self.useSegm = None  # deprecated, as in pycocotools


def _accumulate_any_order(matches, max_dets, rec_thrs):
    """:func:`coco_accumulate` with recall thresholds in any order, as pycocotools reads them:
    it stops at the first threshold (in the given order) that recall never reaches, leaving
    that one and every later one at 0 (for increasing thresholds, exactly the unreachable
    ones)."""
    by_thr = np.argsort(rec_thrs, kind="stable")
    pr, rc, sc = coco_accumulate(matches, max_dets, rec_thrs[by_thr], with_scores=True)
    if np.array_equal(by_thr, np.arange(by_thr.shape[0])):
        return pr, rc, sc
    back = np.empty_like(by_thr)
    back[by_thr] = np.arange(by_thr.shape[0])
    pr, sc = pr[:, back], sc[:, back]
    with np.errstate(invalid="ignore"):
        unreached = rec_thrs[None, :, None, None, None] > rc[:, None]  # NaN: False
    stopped = np.logical_or.accumulate(unreached, axis=1)
    pr[stopped] = 0.0
    sc[stopped] = 0.0
    return pr, rc, sc


class COCOeval:
    """pycocotools' ``COCOeval``: same constructor, parameters, methods and results.

    Parameters
    ----------
    cocoGt, cocoDt : COCO
        Ground truth and results (:class:`deteval.compat.COCO`, or pycocotools' own).
    iouType : {"segm", "bbox", "keypoints"}
    fixes : bool, keyword-only
        False (default): pycocotools' results exactly, mistakes included. True: a ground
        truth or detection whose annotation id is 0 (or a detection id below 0) is matched
        like any other, and ``summarize()`` reads the AP and area lines at
        ``params.maxDets[-1]`` and the AR lines at each ``params.maxDets`` value (keypoints:
        at ``params.maxDets[-1]`` rather than a fixed 20); keypoints with ``useCats=0`` are
        matched by OKS across categories (pycocotools looks the OKS up under category -1,
        finds none and matches nothing); annotations whose ids repeat are each evaluated
        (pycocotools looks annotations up by id: the last record with an id stands for all).

    Attributes
    ----------
    params : Params
    evalImgs : list of dict or None
        Built from the match records when first read (``K * A * I`` entries).
    ious : dict
        ``(imgId, catId) -> (D, G)`` array; built when first read.
    eval : dict
        ``params``, ``counts`` ``[T, R, K, A, M]``, ``date``, ``precision`` (T, R, K, A, M),
        ``recall`` (T, K, A, M), ``scores`` (T, R, K, A, M); -1 where undefined.
    stats : ndarray, shape (12,) (keypoints (10,))
    """

    def __init__(self, cocoGt=None, cocoDt=None, iouType="segm", *, fixes=False):
        if not iouType:
            print("iouType not specified. use default iouType segm")
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self._evalImgs = defaultdict(list)
        self.eval = {}
        self.params = Params(iouType=iouType)
        self._paramsEval = {}
        self.stats = []
        self._ious = {}
        self.fixes = bool(fixes)
        self._state = None
        self._external_eval_imgs = False
        if cocoGt is not None:
            self.params.imgIds = sorted(cocoGt.getImgIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    # ------------------------------------------------------------ lazy results

    @property
    def evalImgs(self):
        """Per (category, area range, image) results, built on first read."""
        if self._evalImgs is None:
            self._evalImgs = _engine.eval_imgs(self._state)
        return self._evalImgs

    @evalImgs.setter
    def evalImgs(self, value):
        self._evalImgs = value
        self._external_eval_imgs = True  # accumulate() then reads these dicts

    @property
    def ious(self):
        """``(imgId, catId) -> IoU matrix``, built on first read."""
        if self._ious is None:
            self._ious = _engine.ious(self._state)
        return self._ious

    @ious.setter
    def ious(self, value):
        self._ious = value

    @property
    def _gts(self):
        """``(image id, category id) -> ground-truth dicts`` of the evaluation, built on
        first read (pycocotools' ``_gts``, without the ``ignore`` key it writes)."""
        return self._grouped("gt_anns")

    @property
    def _dts(self):
        """``(image id, category id) -> result dicts`` of the evaluation (pycocotools'
        ``_dts``), built on first read."""
        return self._grouped("dt_anns")

    def _grouped(self, which):
        state = self._state
        out = defaultdict(list)
        if state is None:
            return out
        key = "grouped_" + which
        if key not in state.extra:
            for a in getattr(state, which):
                out[a["image_id"], a["category_id"]].append(a)
            state.extra[key] = out
        return state.extra[key]

    # ------------------------------------------------------------ evaluation

    def evaluate(self):
        """Match every detection of ``params.imgIds`` x ``params.catIds`` (per area range and
        IoU threshold); prints pycocotools' progress lines."""
        tic = time.time()
        print("Running per image evaluation...")
        p = self.params
        if p.useSegm is not None:
            p.iouType = "segm" if p.useSegm == 1 else "bbox"
            print("useSegm (deprecated) is not None. Running {} evaluation".format(p.iouType))
        print("Evaluate annotation type *{}*".format(p.iouType))
        p.imgIds = list(np.unique(p.imgIds))
        if p.useCats:
            p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self.params = p
        self._prepare()
        self._paramsEval = copy.deepcopy(self.params)
        print("DONE (t={:0.2f}s).".format(time.time() - tic))

    def _prepare(self):
        """Select and match what ``params`` asks for (pycocotools' ``_prepare`` gathers the
        annotations; here they are also matched, and ``evalImgs`` / ``ious`` become
        available on demand)."""
        p = self.params
        self._state = _engine.build_state(self.cocoGt, self.cocoDt, p, self.fixes)
        self._evalImgs = None if len(p.imgIds) and len(self._state.cat_ids) and len(
            p.areaRng) else []
        self._external_eval_imgs = False
        self._ious = None
        self.eval = {}

    def _ensure_state(self):
        if self._state is None:
            self._prepare()
        return self._state

    def computeIoU(self, imgId, catId):
        """IoU matrix ``(D, G)`` of one image and category (``[]`` if either is empty), as
        pycocotools' ``computeIoU``: detections in score order cut to ``maxDets[-1]``."""
        self._ensure_state()
        return self.ious[imgId, catId]

    def computeOks(self, imgId, catId):
        """OKS matrix ``(D, G)`` of one image and category, as pycocotools' ``computeOks``."""
        self._ensure_state()
        return self.ious[imgId, catId]

    def evaluateImg(self, imgId, catId, aRng, maxDet):
        """pycocotools' ``evaluateImg`` dict (or None) of one image, category and area range,
        read from the evaluation of ``params`` (``maxDet`` must be ``params.maxDets[-1]`` and
        ``aRng`` one of ``params.areaRng``)."""
        state = self._ensure_state()
        if maxDet != state.max_det or not any(list(aRng) == list(r) for r in state.area_rng):
            raise NotImplementedError(
                "deteval.compat evaluates per image only at params.maxDets[-1] and the "
                f"params.areaRng ranges; got maxDet={maxDet!r}, aRng={aRng!r}")
        if self._evalImgs is None or self._external_eval_imgs:
            self._evalImgs = _engine.eval_imgs(state)
            self._external_eval_imgs = False
        pos = state.extra.get("positions")
        if pos is None:
            pos = ({v: i for i, v in enumerate(state.img_ids)},
                   {v: k for k, v in reversed(list(enumerate(state.cat_ids)))})
            state.extra["positions"] = pos
        a = next(j for j, r in enumerate(state.area_rng) if list(aRng) == list(r))
        I, A = len(state.img_ids), len(state.area_rng)
        return self._evalImgs[pos[1][catId] * A * I + a * I + pos[0][imgId]]

    def accumulate(self, p=None):
        """Precision, recall and scores per (IoU threshold, recall threshold, category, area
        range, max detections) into ``self.eval``; prints pycocotools' progress lines.

        Parameters
        ----------
        p : Params, optional
            Default ``self.params``. A different one selects, as pycocotools, the
            categories, area ranges, max-detections values and images of the evaluation
            that it also lists, with its own recall thresholds.
        """
        print("Accumulating evaluation results...")
        tic = time.time()
        state = self._state
        if state is None and self._external_eval_imgs:
            state = True  # per-image results assigned by the caller: accumulated from them
        if state is None or (self._evalImgs is not None and not self._evalImgs):
            print("Please run evaluate() first")
        if state is None:  # pycocotools fails here too (an AttributeError on _paramsEval)
            raise AttributeError("COCOeval.accumulate() needs the results of evaluate(): "
                                 "call evaluate() first")
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        T, R = len(p.iouThrs), len(p.recThrs)
        K = len(p.catIds) if p.useCats else 1
        A, M = len(p.areaRng), len(p.maxDets)
        precision = np.full((T, R, K, A, M), -1.0)
        recall = np.full((T, K, A, M), -1.0)
        scores = np.full((T, R, K, A, M), -1.0)
        if state is not None:
            pe = self._paramsEval
            set_k = set(pe.catIds if pe.useCats else [-1])
            set_a = set(map(tuple, pe.areaRng))
            set_m = set(pe.maxDets)
            set_i = set(pe.imgIds)
            k_list = [n for n, k in enumerate(p.catIds) if k in set_k]
            m_list = [m for m in p.maxDets if m in set_m]
            a_list = [n for n, a in enumerate(map(tuple, p.areaRng)) if a in set_a]
            i_list = [n for n, i in enumerate(p.imgIds) if i in set_i]
            if k_list and a_list and m_list and self._external_eval_imgs:
                self._accumulate_external(p, k_list, a_list, m_list, i_list, precision,
                                          recall, scores)
            elif k_list and a_list and m_list:
                full = self._accumulate_cells(state, np.asarray(m_list, dtype=np.int64),
                                              np.asarray(p.recThrs, dtype=np.float64).reshape(-1),
                                              i_list, len(pe.imgIds))
                pr, rc, sc = full
                nk, na, nm = len(k_list), len(a_list), len(m_list)
                if (pr.shape == precision.shape and k_list == list(range(K))
                        and a_list == list(range(A))):
                    precision, recall, scores = pr, rc, sc  # the usual call: no copies
                else:
                    kk, aa = np.asarray(k_list), np.asarray(a_list)
                    sel = np.ix_(np.arange(T), np.arange(R), kk, aa, np.arange(nm))
                    precision[:, :, :nk, :na, :nm] = pr[sel]
                    scores[:, :, :nk, :na, :nm] = sc[sel]
                    recall[:, :nk, :na, :nm] = rc[np.ix_(np.arange(T), kk, aa, np.arange(nm))]
        self.eval = {
            "params": p,
            "counts": [T, R, K, A, M],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision,
            "recall": recall,
            "scores": scores,
        }
        print("DONE (t={:0.2f}s).".format(time.time() - tic))

    def _accumulate_external(self, p, k_list, a_list, m_list, i_list, precision, recall,
                             scores):
        """accumulate() from ``evalImgs`` dicts assigned by the caller."""
        pe = self._paramsEval
        I0, A0 = len(pe.imgIds), len(pe.areaRng)
        T = len(p.iouThrs)
        rec_thrs = np.asarray(p.recThrs, dtype=np.float64).reshape(-1)
        nk, nm = len(k_list), len(m_list)
        for a, a0 in enumerate(a_list):
            m = _engine.matches_from_eval_imgs(self._evalImgs, k_list, a0, i_list, I0, A0, T)
            pr, rc, sc = _accumulate_any_order(m, np.asarray(m_list, dtype=np.int64), rec_thrs)
            for arr in (pr, rc, sc):
                arr[np.isnan(arr)] = -1
            precision[:, :, :nk, a, :nm] = pr[:, :, :, 0, :]
            scores[:, :, :nk, a, :nm] = sc[:, :, :, 0, :]
            recall[:, :nk, a, :nm] = rc[:, :, 0, :]

    @staticmethod
    def _accumulate_cells(state, max_dets, rec_thrs, i_list, num_images):
        """:func:`coco_accumulate` of the records (restricted to the images ``i_list``),
        NaN turned into -1; recall thresholds in any order."""
        m = state.matches
        if len(i_list) != num_images:
            keep_img = np.zeros(num_images, dtype=bool)
            keep_img[np.asarray(i_list, dtype=np.int64)] = True
            keep = keep_img[m.image_key]
            gt = state.gt
            K, A = m.num_gt.shape
            num_gt = np.zeros((K, A), dtype=np.int64)
            in_img = keep_img[gt.image_idx]
            for a in range(A):
                num_gt[:, a] = np.bincount(gt.class_idx[in_img & ~state.gt_ignored[:, a]],
                                           minlength=K)
            m = CocoMatches(class_idx=m.class_idx[keep], scores=m.scores[keep],
                            image_key=m.image_key[keep], rank=m.rank[keep],
                            matched=m.matched[keep], ignored=m.ignored[keep], num_gt=num_gt)
        pr, rc, sc = _accumulate_any_order(m, max_dets, rec_thrs)
        for arr in (pr, rc, sc):
            np.copyto(arr, -1.0, where=np.isnan(arr))
        return pr, rc, sc

    def summarize(self):
        """Print pycocotools' summary lines and set ``stats`` (12 values; keypoints 10)."""
        p = self.params
        fixes = self.fixes

        def one(ap=1, iouThr=None, areaRng="all", maxDets=100):
            i_str = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
            title = "Average Precision" if ap == 1 else "Average Recall"
            kind = "(AP)" if ap == 1 else "(AR)"
            iou_str = ("{:0.2f}:{:0.2f}".format(p.iouThrs[0], p.iouThrs[-1])
                       if iouThr is None else "{:0.2f}".format(iouThr))
            aind = [i for i, lbl in enumerate(p.areaRngLbl) if lbl == areaRng]
            mind = [i for i, m in enumerate(p.maxDets) if m == maxDets]
            s = self.eval["precision"] if ap == 1 else self.eval["recall"]
            if iouThr is not None:
                s = s[np.where(iouThr == p.iouThrs)[0]]
            s = s[:, :, :, aind, mind] if ap == 1 else s[:, :, aind, mind]
            defined = s[s > -1]
            mean_s = -1 if len(defined) == 0 else np.mean(defined)
            print(i_str.format(title, kind, iou_str, areaRng, maxDets, mean_s))
            return mean_s

        def dets():
            md = p.maxDets

            def last():  # pycocotools reads position 2 (IndexError with fewer values)
                return md[-1] if fixes else md[2]

            def ar(i):
                return md[min(i, len(md) - 1)] if fixes else md[i]

            stats = np.zeros((12,))
            stats[0] = one(1, maxDets=last()) if fixes else one(1)
            stats[1] = one(1, iouThr=.5, maxDets=last())
            stats[2] = one(1, iouThr=.75, maxDets=last())
            stats[3] = one(1, areaRng="small", maxDets=last())
            stats[4] = one(1, areaRng="medium", maxDets=last())
            stats[5] = one(1, areaRng="large", maxDets=last())
            stats[6] = one(0, maxDets=ar(0))
            stats[7] = one(0, maxDets=ar(1))
            stats[8] = one(0, maxDets=ar(2))
            stats[9] = one(0, areaRng="small", maxDets=last())
            stats[10] = one(0, areaRng="medium", maxDets=last())
            stats[11] = one(0, areaRng="large", maxDets=last())
            return stats

        def kps():
            md = p.maxDets[-1] if fixes else 20
            stats = np.zeros((10,))
            stats[0] = one(1, maxDets=md)
            stats[1] = one(1, maxDets=md, iouThr=.5)
            stats[2] = one(1, maxDets=md, iouThr=.75)
            stats[3] = one(1, maxDets=md, areaRng="medium")
            stats[4] = one(1, maxDets=md, areaRng="large")
            stats[5] = one(0, maxDets=md)
            stats[6] = one(0, maxDets=md, iouThr=.5)
            stats[7] = one(0, maxDets=md, iouThr=.75)
            stats[8] = one(0, maxDets=md, areaRng="medium")
            stats[9] = one(0, maxDets=md, areaRng="large")
            return stats

        if not self.eval:
            raise Exception("Please run accumulate() first")
        iou_type = self.params.iouType
        if iou_type == "segm" or iou_type == "bbox":
            self.stats = dets()
        elif iou_type == "keypoints":
            self.stats = kps()

    def __str__(self):
        self.summarize()
