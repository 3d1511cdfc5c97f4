"""Precision–recall curves and best-F1 operating points, from COCOeval's own matching.

* :func:`pr_curves`: COCOeval's ``eval["precision"][t, :, k, area all, maxDets 100]`` at IoU
  0.5 and 0.75, per class (``None`` where pycocotools fills -1), and their mean over the
  defined classes at every recall threshold. These are slices of
  :func:`deteval.ap.coco_accumulate`'s array: no work beyond the evaluation's.
* :func:`best_f1`: per class, the score threshold of highest F1 on the *raw*
  (uninterpolated) ranked list at IoU 0.5, area ``all``, max dets 100: the records of
  :func:`deteval.match.match_coco` minus the ignored ones, cut only between distinct
  scores. ``f1 = 2 TP / (TP + FP + nGT)`` (so equal F1 values are equal doubles), ties to
  the highest score; ``precision = TP / (TP + FP)``, ``recall = TP / nGT``.

Both run on whole columns (sorts, cumulative sums, segment reductions): no loop per class
or per detection.

References
----------
.. [1] pycocotools ``cocoeval.py``: ``COCOeval.evaluateImg`` (per image and class the top
   ``maxDets`` detections, ``dtIgnore``) and ``COCOeval.accumulate`` (``precision`` of
   shape ``[T, R, K, A, M]``, -1 for a class without non-ignored ground truth).
   https://github.com/cocodataset/cocoapi
.. [2] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., 1979 (the F-measure).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..match import CocoMatches
from ..params import COCO_AREA_RANGES, COCO_IOU_THRESHOLDS, COCO_RECALL_THRESHOLDS
from ..rank import ranked_order, segment_starts

__all__ = ["CURVE_IOUS", "CURVE_MAX_DETS", "BestF1", "best_f1", "pr_curves",
           "CurvesResult", "standard_cell"]

#: The two curves: pycocotools' IoU thresholds 0.5 (t = 0) and 0.75 (t = 5), by name.
CURVE_IOUS = {"0.5": float(COCO_IOU_THRESHOLDS[0]), "0.75": float(COCO_IOU_THRESHOLDS[5])}
CURVE_MAX_DETS = 100
ALL_AREA = COCO_AREA_RANGES["all"]


@dataclass(frozen=True)
class BestF1:
    """Best-F1 operating point of every class.

    Attributes
    ----------
    defined : ndarray of bool, shape (K,)
        False where the class has no non-ignored ground truth or no ranked detection.
    score, precision, recall, f1 : ndarray of float64, shape (K,)
        NaN where not defined.
    """

    defined: np.ndarray
    score: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray


def best_f1(class_idx: np.ndarray, scores: np.ndarray, is_tp: np.ndarray,
            num_gt: np.ndarray) -> BestF1:
    """Best-F1 threshold of every class from a raw ranked list.

    Parameters
    ----------
    class_idx : ndarray of int64, shape (N,)
    scores : ndarray of float64, shape (N,)
    is_tp : ndarray of bool, shape (N,)
        True positive (else false positive); ignored detections must be left out.
    num_gt : ndarray of int64, shape (K,)
        ``nGT``: non-ignored ground truth per class.

    Returns
    -------
    BestF1
        At each distinct score ``s`` of class ``k``: ``TP(s)``, ``FP(s)`` over the
        detections with score ``>= s``; the ``s`` of maximal ``2 TP / (TP + FP + nGT)``,
        the highest such ``s`` on ties.
    """
    K = num_gt.shape[0]
    out = {n: np.full(K, np.nan) for n in ("score", "precision", "recall", "f1")}
    defined = np.zeros(K, dtype=bool)
    n = scores.shape[0]
    if n:
        order = ranked_order(class_idx, scores)  # (class, score descending)
        cls, sc, tp = class_idx[order], scores[order], is_tp[order]
        ctp = np.cumsum(tp, dtype=np.int64)
        cfp = np.cumsum(~tp, dtype=np.int64)
        starts = segment_starts(cls)
        before = starts - 1
        tp0 = np.where(before >= 0, ctp[np.maximum(before, 0)], 0)
        fp0 = np.where(before >= 0, cfp[np.maximum(before, 0)], 0)
        lengths = np.diff(np.append(starts, n))
        # last row of each run of one (class, score): a cut never splits tied scores
        last = np.ones(n, dtype=bool)
        last[:-1] = (cls[1:] != cls[:-1]) | (sc[1:] != sc[:-1])
        rows = np.flatnonzero(last)
        seg = np.repeat(np.arange(starts.shape[0]), lengths)[rows]
        k = cls[rows]
        TP = ctp[rows] - tp0[seg]
        FP = cfp[rows] - fp0[seg]
        ngt = num_gt[k]
        ok = ngt > 0
        rows, seg, k, TP, FP, ngt = rows[ok], seg[ok], k[ok], TP[ok], FP[ok], ngt[ok]
        if rows.shape[0]:
            f1 = (2 * TP) / (TP + FP + ngt)
            s = segment_starts(k)
            best = np.maximum.reduceat(f1, s)
            is_best = f1 == np.repeat(best, np.diff(np.append(s, f1.shape[0])))
            idx = np.where(is_best, np.arange(f1.shape[0]), f1.shape[0])
            first = np.minimum.reduceat(idx, s)  # the highest score among the best
            kk = k[first]
            defined[kk] = True
            out["score"][kk] = sc[rows[first]]
            out["precision"][kk] = TP[first] / (TP[first] + FP[first])
            out["recall"][kk] = TP[first] / ngt[first]
            out["f1"][kk] = f1[first]
    return BestF1(defined=defined, **out)


def records_best_f1(matches: CocoMatches, t: int, a: int, max_det: int) -> BestF1:
    """:func:`best_f1` of COCO match records at IoU index ``t``, area index ``a``, keeping
    each image and class's first ``max_det`` records and dropping the ignored ones."""
    keep = ~matches.ignored[:, a, t] & (matches.rank < max_det)
    return best_f1(matches.class_idx[keep], matches.scores[keep],
                   matches.matched[keep, a, t], matches.num_gt[:, a])


def standard_cell(iou_thresholds: np.ndarray, area_ranges: Dict[str, tuple],
                  max_dets: Sequence[int]) -> Optional[tuple]:
    """``(t50, t75, a_all, m100)`` indices of the curves' cell in an evaluation's
    parameters, or None when they are not all there (a dedicated pass is then needed)."""
    thr = [float(v) for v in iou_thresholds]
    names = list(area_ranges)
    areas = [tuple(float(x) for x in area_ranges[n]) for n in names]
    md = [int(m) for m in max_dets]
    t = [thr.index(v) if v in thr else None for v in CURVE_IOUS.values()]
    a = areas.index(tuple(ALL_AREA)) if tuple(ALL_AREA) in areas else None
    m = md.index(CURVE_MAX_DETS) if CURVE_MAX_DETS in md else None
    if None in t or a is None or m is None or max(md) < CURVE_MAX_DETS:
        return None
    return t[0], t[1], a, m


@dataclass(frozen=True)
class CurvesResult:
    """``report["curves"]``: the two PR curves per class, their means, best-F1 points.

    Attributes
    ----------
    precision : dict name -> ndarray of float64, shape (R, K)
        Per curve name (``"0.5"``, ``"0.75"``): COCOeval's interpolated precision, NaN
        columns for the classes pycocotools fills with -1.
    best : BestF1
    class_names : list of str
    """

    precision: Dict[str, np.ndarray]
    best: BestF1
    class_names: List[str]

    def mean(self, name: str) -> Optional[np.ndarray]:
        """Mean over the defined classes at each recall threshold (None if none)."""
        p = self.precision[name]
        cols = ~np.isnan(p).all(axis=0)
        if not cols.any():
            return None
        return np.ascontiguousarray(p[:, cols]).mean(axis=1)

    def to_dict(self) -> dict:
        iou = {}
        for name, p in self.precision.items():
            per = {}
            for k, cname in enumerate(self.class_names):
                col = p[:, k]
                per[cname] = None if np.isnan(col).all() else [float(v) for v in col]
            m = self.mean(name)
            iou[name] = {"per_class": per, "mean": None if m is None else [float(v) for v in m]}
        b = self.best
        best = {}
        for k, cname in enumerate(self.class_names):
            best[cname] = (None if not b.defined[k] else
                           {"score": float(b.score[k]), "precision": float(b.precision[k]),
                            "recall": float(b.recall[k]), "f1": float(b.f1[k])})
        return {"recall": [float(r) for r in COCO_RECALL_THRESHOLDS], "iou": iou,
                "best_f1": best}


def pr_curves(precision: np.ndarray, t50: int, t75: int, a: int, m: int,
              best: BestF1, class_names: Sequence[str]) -> CurvesResult:
    """The curves of an accumulated precision array (:func:`deteval.ap.coco_accumulate`).

    Parameters
    ----------
    precision : ndarray of float64, shape (T, R, K, A, M)
        NaN where pycocotools has -1.
    t50, t75, a, m : int
        Indices of IoU 0.5, IoU 0.75, area ``all`` and max dets 100.
    """
    return CurvesResult(precision={"0.5": np.array(precision[t50, :, :, a, m]),
                                   "0.75": np.array(precision[t75, :, :, a, m])},
                        best=best, class_names=[str(c) for c in class_names])
