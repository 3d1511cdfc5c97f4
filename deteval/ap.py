"""AP stage: match records in, curves, average precision and named summary figures out.

Pure functions from arrays to numbers and arrays (presentation is :mod:`deteval.report`).

* :func:`voc_curves` / :func:`voc07_ap` / :func:`voc12_ap` / :func:`summarize_voc`:
  PASCAL VOC per-class AP and mAP.
* :func:`coco_accumulate`: pycocotools' ``accumulate`` for every class, area range,
  max-detections value and IoU threshold at once; :func:`coco_stat_specs` and
  :func:`summarize_coco`: its ``summarize``, by name, overall and per class.
* :func:`precision_recall_at_k`, :func:`average_precision_raw`, :func:`fbeta_score`:
  ranked-list metrics (non-interpolated).

References
----------
.. [1] PASCAL VOC devkit (2012), ``VOCevaldet.m`` (cumulative TP/FP, precision, recall) and
   ``VOCap.m`` (area under the monotone precision envelope); the VOC2007 11-point rule in
   ``VOCevaldet.m``. http://host.robots.ox.ac.uk/pascal/VOC/voc2012/
.. [2] py-faster-rcnn / detectron2 ``voc_eval.py``: ``voc_ap`` (``use_07_metric``).
.. [3] pycocotools ``cocoeval.py``: ``COCOeval.accumulate`` (precision at 101 recall
   points from the right-to-left maximum of precision) and ``COCOeval.summarize``
   (means of the entries ``> -1``). https://github.com/cocodataset/cocoapi
.. [4] M. Everingham et al., "The PASCAL Visual Object Classes (VOC) Challenge", IJCV 2010.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .match import TP, FP, CocoMatches, VocMatches
from .params import COCO_RECALL_THRESHOLDS
from .rank import ranked_order, stable_rank_order

__all__ = ["VOC07_GRID_MATLAB", "VOC07_GRID_NUMPY", "voc_curves", "voc07_ap", "voc12_ap",
           "voc_average_precision", "VocSummary", "summarize_voc", "coco_accumulate",
           "coco_stat_specs", "CocoSummary", "summarize_coco",
           "summarize_accumulated", "precision_recall_at_k",
           "average_precision_raw", "fbeta_score"]

#: MATLAB's ``0:0.1:1`` (the colon operator fills from both ends: 0.6 and 0.7 are
#: the doubles nearest 0.6 and 0.7). The official devkit's grid.
VOC07_GRID_MATLAB = np.array([0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7, 0.8,
                              0.9, 1.0])
#: ``np.arange(0.0, 1.1, 0.1)`` as py-faster-rcnn / detectron2 ``voc_eval`` uses it.
VOC07_GRID_NUMPY = np.arange(0.0, 1.1, 0.1)


# ----------------------------------------------------------------------------- VOC

def voc_curves(matches: VocMatches, compat: str = "devkit"
               ) -> List[Tuple[np.ndarray, np.ndarray, int, int]]:
    """Recall/precision curve of every class from VOC match records.

    Detections are ranked by decreasing score, ties by ``tie_key``; ignored
    detections count as neither TP nor FP. ``rec = tp / npos``;
    ``prec = tp / (tp + fp)``, NaN where ``tp + fp == 0`` (devkit) or
    ``tp / max(tp + fp, eps)`` (detectron2).

    Returns
    -------
    list of (recall, precision, tp, fp), one per class
        recall, precision : ndarray of float64, shape (n_k,) over the class's
        ranked detections (recall is NaN-free only when ``npos > 0``).
    """
    order = stable_rank_order(matches.class_idx, matches.scores, matches.tie_key)
    cls = matches.class_idx[order]
    outcome = matches.outcome[order]
    K = matches.num_gt.shape[0]
    bounds = np.searchsorted(cls, np.arange(K + 1))
    curves = []
    eps = np.finfo(np.float64).eps
    for k in range(K):
        o = outcome[bounds[k]:bounds[k + 1]]
        tp = np.cumsum(o == TP).astype(np.float64)
        fp = np.cumsum(o == FP).astype(np.float64)
        npos = matches.num_gt[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            rec = tp / float(npos)
            if compat == "devkit":
                prec = tp / (fp + tp)
            else:
                prec = tp / np.maximum(tp + fp, eps)
        curves.append((rec, prec, int(tp[-1]) if tp.size else 0,
                       int(fp[-1]) if fp.size else 0))
    return curves


def voc07_ap(recall: np.ndarray, precision: np.ndarray, grid: np.ndarray = VOC07_GRID_MATLAB
             ) -> float:
    """VOC2007 11-point interpolated AP.

    ``ap = sum over t in grid of max(precision[recall >= t]) / 11``, 0 for a ``t``
    no recall reaches; NaN precision is skipped (MATLAB ``max``), and a ``t`` whose
    precisions are all NaN counts 0. Summed one term at a time in grid order.

    Parameters
    ----------
    recall, precision : ndarray of float64, shape (n,)
        Recall non-decreasing.
    grid : ndarray of float64, shape (11,)
        :data:`VOC07_GRID_MATLAB` (devkit) or :data:`VOC07_GRID_NUMPY` (detectron2).
    """
    n = recall.shape[0]
    # max(precision[i:]) ignoring NaN; recall is sorted so recall >= t is a suffix
    envelope = np.fmax.accumulate(precision[::-1])[::-1] if n else precision
    first = np.searchsorted(recall, grid, side="left")
    ap = 0.0
    for i in first:
        p = envelope[i] if i < n else 0.0
        if p != p:  # every precision NaN (only ignored detections so far)
            p = 0.0
        ap = ap + p / 11
    return float(ap)


def voc12_ap(recall: np.ndarray, precision: np.ndarray, summation: str = "sequential"
             ) -> float:
    """VOC2010+ AP: area under the precision envelope.

    ``mrec = [0, recall, 1]``, ``mpre = [0, precision, 0]``; from the end
    ``mpre[i] = max(mpre[i], mpre[i+1])`` (NaN ignored); then
    ``sum (mrec[i] - mrec[i-1]) * mpre[i]`` over the ``i`` where recall changes,
    left to right (``summation="sequential"``, the devkit) or with ``np.sum``
    (``"pairwise"``, detectron2).
    """
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([0.0], precision, [0.0]))
    mpre = np.fmax.accumulate(mpre[::-1])[::-1]
    i = np.flatnonzero(mrec[1:] != mrec[:-1])
    terms = (mrec[i + 1] - mrec[i]) * mpre[i + 1]
    if summation == "pairwise":
        return float(np.sum(terms))
    return float(np.cumsum(terms)[-1]) if terms.size else 0.0


def voc_average_precision(recall: np.ndarray, precision: np.ndarray, metric: str,
                          compat: str) -> float:
    """AP of one class under ``metric`` ("voc07" or "voc12") and ``compat``."""
    if metric == "voc07":
        return voc07_ap(recall, precision,
                        VOC07_GRID_MATLAB if compat == "devkit" else VOC07_GRID_NUMPY)
    return voc12_ap(recall, precision, "sequential" if compat == "devkit" else "pairwise")


@dataclass(frozen=True)
class VocSummary:
    """Per-class VOC figures from :func:`summarize_voc`.

    Attributes
    ----------
    ap : ndarray of float64, shape (K,)
        NaN for a class without non-difficult ground truth (undefined, left out of mAP).
    tp, fp, ignored, num_detections : ndarray of int64, shape (K,)
        Final counts over every ranked detection of the class; ``ignored`` counts the
        detections whose best ground truth is difficult (``tp + fp + ignored ==
        num_detections``).
    num_gt, num_difficult : ndarray of int64, shape (K,)
    mAP : float or None
        Mean of the defined ``ap``; None when no class has one.
    """

    ap: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    ignored: np.ndarray
    num_detections: np.ndarray
    num_gt: np.ndarray
    num_difficult: np.ndarray
    mAP: Optional[float]


def summarize_voc(matches: VocMatches, metric: str, compat: str) -> VocSummary:
    """Curves and AP of every class from merged match records, then the mAP.

    ``mAP = mean(ap[k] for k with num_gt[k] > 0)`` (``np.mean``, class order).
    """
    curves = voc_curves(matches, compat)
    K = matches.num_gt.shape[0]
    ap = np.full(K, np.nan)
    tp = np.zeros(K, dtype=np.int64)
    fp = np.zeros(K, dtype=np.int64)
    for k, (rec, prec, tp_k, fp_k) in enumerate(curves):
        tp[k], fp[k] = tp_k, fp_k
        if matches.num_gt[k] > 0:
            ap[k] = voc_average_precision(rec, prec, metric, compat)
    num_det = np.bincount(matches.class_idx, minlength=K).astype(np.int64)
    defined = ap[~np.isnan(ap)]
    mAP = float(np.mean(defined.tolist())) if defined.size else None
    return VocSummary(ap=ap, tp=tp, fp=fp, ignored=num_det - tp - fp, num_detections=num_det,
                      num_gt=matches.num_gt.astype(np.int64),
                      num_difficult=matches.num_difficult.astype(np.int64), mAP=mAP)


# ---------------------------------------------------------------------------- COCO

def _rows_any(x: np.ndarray) -> np.ndarray:
    """``x.any(axis=1)`` for a 2-D bool array, eight bytes at a time."""
    n, w = x.shape
    if w == 0:
        return np.zeros(n, dtype=bool)
    pad = (-w) % 8
    if pad:
        x = np.concatenate([x, np.zeros((n, pad), dtype=bool)], axis=1)
    return (np.ascontiguousarray(x).view(np.uint64) != 0).any(axis=1)


def coco_rank_order(matches: CocoMatches) -> np.ndarray:
    """Permutation ranking records by (class, -score, image key, rank), stably.

    Equivalent to ``np.lexsort((rank, image_key, -scores, class_idx))`` but built
    from stable single-key sorts, skipping the first two when the records are
    already in (class, image key, rank) order, as :func:`match_coco` returns them.
    """
    n = matches.scores.shape[0]
    cls, key, rank = matches.class_idx, matches.image_key, matches.rank
    span = int(key.max()) + 1 if n else 1
    cls_key = cls * span + key
    d_ck = np.diff(cls_key)
    if n and bool(np.all((d_ck > 0) | ((d_ck == 0) & (np.diff(rank) > 0)))):
        return ranked_order(cls, matches.scores)
    by_tie = np.lexsort((rank, key))
    return by_tie[ranked_order(cls[by_tie], matches.scores[by_tie])]


def coco_accumulate(matches: CocoMatches, max_dets: np.ndarray,
                    rec_thresholds: np.ndarray = COCO_RECALL_THRESHOLDS,
                    with_scores: bool = False):
    """pycocotools' ``accumulate``: precision and recall arrays.

    For class ``k``, area range ``a`` and max-detections ``m``: each image's first
    ``m`` detections (score order), ranked by decreasing score (ties: ascending
    image key, then rank). TP = matched and not ignored, FP = unmatched and not
    ignored; ``rc = tp / npig``, ``pr = tp / (fp + tp + spacing(1))``; the
    precision at recall threshold ``r`` is ``max(pr[rc >= r])`` (0 if none).

    Only true positives need their ``(rc, pr)``: recall rises only at a TP, and
    between TPs precision falls, so every suffix maximum of ``pr`` that a recall
    threshold selects is attained at a TP. Each TP's ``pr`` is computed from the
    same integer counts as pycocotools, so the result is bit-identical.

    Parameters
    ----------
    matches : CocoMatches
    max_dets : ndarray of int64, shape (M,)
    rec_thresholds : ndarray of float64, shape (R,)
    with_scores : bool
        Also return pycocotools' ``eval['scores']``.

    Returns
    -------
    precision : ndarray of float64, shape (T, R, K, A, M)
        NaN where the class has no non-ignored GT for that area range.
    recall : ndarray of float64, shape (T, K, A, M)
        NaN likewise.
    scores : ndarray of float64, shape (T, R, K, A, M), only with ``with_scores``
        The score of the ranked detection at which recall first reaches ``r``: the first
        TP with ``rc >= r`` (for ``r <= 0``, the first ranked detection, whatever its
        outcome); 0 where recall never reaches ``r``; NaN where precision is.
    """
    N, A, T = matches.matched.shape
    K = matches.num_gt.shape[0]
    R, M = rec_thresholds.shape[0], max_dets.shape[0]
    precision = np.full((T, R, K, A, M), np.nan)
    recall = np.full((T, K, A, M), np.nan)
    score_at = np.full((T, R, K, A, M), np.nan) if with_scores else None
    order = coco_rank_order(matches)
    cls = matches.class_idx[order]
    rank = matches.rank[order]
    ranked_scores = matches.scores[order]
    class_start = np.searchsorted(cls, np.arange(K))  # first ranked position of each class
    eps = np.spacing(1)
    counted = ~matches.ignored  # (N, A, T), record order
    tp_nat = matches.matched & counted
    fp_nat = ~matches.matched & counted
    # Most detections are matched at no threshold: for them "ignored" is the area
    # test alone (the same at every t), so their FP status is one flag per area
    # range. Only the few matched somewhere need the per-threshold reductions.
    fp_all_na = counted[:, :, 0].copy() if T else np.zeros((N, A), dtype=bool)
    fp_some_na = np.zeros((N, A), dtype=bool)
    tp_some_na = np.zeros((N, A), dtype=bool)
    some = np.flatnonzero(_rows_any(matches.matched.reshape(N, A * T)))
    fp_all_na[some] = fp_nat[some].all(axis=2)
    fp_some_na[some] = fp_nat[some].any(axis=2) & ~fp_all_na[some]
    tp_some_na[some] = tp_nat[some].any(axis=2)
    # FP status per (detection, area range), in ranked order
    fp_all_na, fp_some_na, tp_some_na = fp_all_na[order], fp_some_na[order], tp_some_na[order]
    for a in range(A):
        npig = matches.num_gt[:, a]
        present = npig > 0
        tp_nt, fp_nt = tp_nat[:, a, :], fp_nat[:, a, :]
        fp_all, fp_some, tp_some = fp_all_na[:, a], fp_some_na[:, a], tp_some_na[:, a]
        for m in range(M):
            sel = (rank < max_dets[m]) & present[cls]
            fp_static = np.cumsum(fp_all & sel)  # static FPs at positions <= p
            dyn_pos = np.flatnonzero(fp_some & sel)
            dt, di = np.nonzero(fp_nt[order[dyn_pos]].T)
            dyn_key = dt * (N + 1) + dyn_pos[di]  # sorted: by t, then position
            tp_pos = np.flatnonzero(tp_some & sel)
            t_i, ti = np.nonzero(tp_nt[order[tp_pos]].T)  # sorted by (t, position)
            p_i = tp_pos[ti]
            k_i = cls[p_i]
            s_i = class_start[k_i]

            def fp_count_before(pos):  # FPs at ranked positions < pos, at each TP's t
                static = np.where(pos > 0, fp_static[np.maximum(pos - 1, 0)], 0)
                return static + np.searchsorted(dyn_key, t_i * (N + 1) + pos)

            fp_before = fp_count_before(p_i) - fp_count_before(s_i)
            run = t_i * K + k_i
            run_start = np.searchsorted(run, run)  # first TP of the same (t, class)
            tp = (np.arange(run.shape[0]) - run_start + 1).astype(np.float64)
            rc = tp / npig[k_i]
            pr = tp / (fp_before.astype(np.float64) + tp + eps)
            tp_total = np.bincount(run, minlength=T * K).reshape(T, K)
            with np.errstate(divide="ignore", invalid="ignore"):
                rec = tp_total / npig[None, :]
            # j = number of recall thresholds reached; q[r] = max pr over TPs with j > r
            j = np.searchsorted(rec_thresholds, rc, side="right")
            q = np.zeros((T, K, R + 1))
            key = run * (R + 1) + j
            if key.shape[0]:
                starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
                q.ravel()[key[starts]] = np.maximum.reduceat(pr, starts)
            q = np.maximum.accumulate(q[:, :, ::-1], axis=2)[:, :, ::-1]
            prec = q[:, :, 1:]  # (T, K, R)
            prec[:, ~present] = np.nan
            rec[:, ~present] = np.nan
            precision[:, :, :, a, m] = prec.transpose(0, 2, 1)
            recall[:, :, a, m] = rec
            if with_scores:
                score_at[:, :, :, a, m] = _scores_at_recall(
                    key, ranked_scores[p_i], ranked_scores, cls, sel, present, rec_thresholds,
                    T, K).transpose(0, 2, 1)
    if with_scores:
        return precision, recall, score_at
    return precision, recall


def _scores_at_recall(key, tp_scores, ranked_scores, cls, sel, present, rec_thresholds, T, K
                      ) -> np.ndarray:
    """pycocotools' ``scores`` of one (area range, max dets) cell, shape (T, K, R).

    ``key = (t * K + k) * (R + 1) + j`` of each TP in (t, class, rank) order, ``j`` the
    number of recall thresholds its recall reaches: the score at threshold ``r`` is that of
    the first TP with ``j > r``, a backward fill over ``j``."""
    R = rec_thresholds.shape[0]
    filled = np.zeros((T, K, R + 2))
    have = np.zeros((T, K, R + 2), dtype=bool)
    if key.shape[0]:
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        flat = (key[starts] // (R + 1)) * (R + 2) + key[starts] % (R + 1)
        filled.ravel()[flat] = tp_scores[starts]
        have.ravel()[flat] = True
    have[:, :, R + 1] = True  # sentinel: score 0 where recall never reaches r
    pos = np.where(have, np.arange(R + 2), R + 1)
    nxt = np.minimum.accumulate(pos[:, :, ::-1], axis=2)[:, :, ::-1]
    out = np.take_along_axis(filled, nxt, axis=2)[:, :, 1:R + 1]
    # thresholds r <= 0 are reached at the first ranked detection, TP or not
    sel_pos = np.flatnonzero(sel)
    first_k, first_at = np.unique(cls[sel_pos], return_index=True)
    low = rec_thresholds <= 0
    if low.any() and first_k.shape[0]:
        top = ranked_scores[sel_pos[first_at]]
        out[:, first_k[:, None], np.flatnonzero(low)[None, :]] = top[:, None]
    out[:, ~present] = np.nan
    return out


_AREA_SUFFIX = {"small": "s", "medium": "m", "large": "l"}


def _thr_name(t: float) -> str:
    v = round(float(t) * 100, 6)
    return f"AP{int(v)}" if v == int(v) else f"AP{v:g}"


def coco_stat_specs(iou_thresholds: np.ndarray, area_names: Sequence[str],
                    max_dets: Sequence[int], default_thresholds: bool,
                    iou_type: str = "bbox") -> List[tuple]:
    """Named summary figures: ``(name, kind, iou_index or None, area_index, maxdet_index)``.

    AP figures use the largest max-detections value; ``AR{m}`` one per value.
    With the default thresholds: AP, AP50, AP75 (pycocotools' 12); otherwise AP and
    one ``AP{100 t}`` per threshold. Area ranges ``small``/``medium``/``large`` are
    ``APs``/``APm``/``APl``; other names ``AP_<name>``. Without an ``all`` range the
    plain figures (AP, AP50, ..., AR{m}) have area index None: they are undefined, as
    pycocotools' summary gives -1 for them (never another range's figures).
    """
    all_a = list(area_names).index("all") if "all" in area_names else None
    last = len(max_dets) - 1
    if iou_type == "keypoints":  # pycocotools' _summarizeKps: AP and AR alike, at one maxDet
        specs = []
        others = [(a, n) for a, n in enumerate(area_names) if a != all_a]
        for kind in ("AP", "AR"):
            specs.append((kind, kind, None, all_a, last))
            for i, t in enumerate(iou_thresholds):
                if not default_thresholds or float(t) in (0.5, 0.75):
                    specs.append((kind + _thr_name(t)[2:], kind, i, all_a, last))
            for a, n in others:
                specs.append((kind + _AREA_SUFFIX.get(n, "_" + n), kind, None, a, last))
        return specs
    specs = [("AP", "AP", None, all_a, last)]
    for i, t in enumerate(iou_thresholds):
        if not default_thresholds or float(t) in (0.5, 0.75):
            specs.append((_thr_name(t), "AP", i, all_a, last))
    others = [(a, n) for a, n in enumerate(area_names) if a != all_a]
    for a, n in others:
        specs.append(("AP" + _AREA_SUFFIX.get(n, "_" + n), "AP", None, a, last))
    for m, md in enumerate(max_dets):
        specs.append((f"AR{md}", "AR", None, all_a, m))
    for a, n in others:
        specs.append(("AR" + _AREA_SUFFIX.get(n, "_" + n), "AR", None, a, last))
    return specs


def _mean_defined(values: np.ndarray) -> Optional[float]:
    v = values[~np.isnan(values)]
    return float(np.mean(v)) if v.size else None


@dataclass(frozen=True)
class CocoSummary:
    """pycocotools' ``accumulate`` + ``summarize``, by name (:func:`summarize_coco`).

    Attributes
    ----------
    precision : ndarray of float64, shape (T, R, K, A, M)
        NaN where pycocotools has -1.
    recall : ndarray of float64, shape (T, K, A, M)
    stats : dict name -> float or None
        The named figures of :func:`coco_stat_specs`, None where pycocotools gives -1.
    per_class : dict name -> list of (float or None), length K
    """

    precision: np.ndarray
    recall: np.ndarray
    stats: Dict[str, Optional[float]]
    per_class: Dict[str, List[Optional[float]]]


def summarize_coco(matches: CocoMatches, iou_thresholds: np.ndarray, area_names: Sequence[str],
                   max_dets: Sequence[int], rec_thresholds: np.ndarray = COCO_RECALL_THRESHOLDS,
                   default_thresholds: bool = True, iou_type: str = "bbox") -> CocoSummary:
    """:func:`coco_accumulate` the merged records, then :func:`summarize_accumulated`."""
    md = np.asarray(max_dets, dtype=np.int64)
    precision, recall = coco_accumulate(matches, md, rec_thresholds)
    return summarize_accumulated(precision, recall, iou_thresholds, area_names, max_dets,
                                 default_thresholds, iou_type)


def summarize_accumulated(precision: np.ndarray, recall: np.ndarray, iou_thresholds: np.ndarray,
                          area_names: Sequence[str], max_dets: Sequence[int],
                          default_thresholds: bool = True, iou_type: str = "bbox"
                          ) -> CocoSummary:
    """pycocotools' ``summarize`` of accumulated arrays, by name, overall and per class.

    Each figure is the mean of the defined precision (recall) entries over the
    selected thresholds, recall points and classes, in pycocotools' array order
    ``(T, R, K)`` so the floating-point sum is the same.

    Parameters
    ----------
    precision : ndarray of float64, shape (T, R, K, A, M)
    recall : ndarray of float64, shape (T, K, A, M)
        As :func:`coco_accumulate` returns them (NaN where undefined).
    """
    specs = coco_stat_specs(iou_thresholds, list(area_names), list(max_dets),
                            default_thresholds, iou_type)

    cache = {}

    def cell(kind, a, m):  # contiguous (T, R, K) precision or (T, K) recall of one cell
        if (kind, a, m) not in cache:
            src = precision[:, :, :, a, m] if kind == "AP" else recall[:, :, a, m]
            cache[kind, a, m] = np.ascontiguousarray(src)
        return cache[kind, a, m]

    def figure(kind, t, a, m):
        if a is None:  # no such area range: undefined
            return None
        s = cell(kind, a, m)
        if t is not None:
            s = s[t:t + 1]
        return _mean_defined(s.ravel())

    stats = {name: figure(kind, t, a, m) for name, kind, t, a, m in specs}
    # Per class: a class is absent from a cell as a whole (every entry NaN) or not at
    # all, so its figure is the plain mean of its row, in (T, R) order; a row-wise
    # mean over contiguous rows sums each row exactly as a 1-D mean does.
    K = precision.shape[2]
    per_class = {}
    for name, kind, t, a, m in specs:
        if a is None:
            per_class[name] = [None] * K
            continue
        s = cell(kind, a, m)
        if t is not None:
            s = s[t:t + 1]
        rows = np.ascontiguousarray(np.moveaxis(s, -1, 0))
        rows = rows.reshape(K, rows[0].size if K else 0)  # K = 0: no category at all
        means = rows.mean(axis=1) if rows.shape[1] else np.full(K, np.nan)
        per_class[name] = [None if np.isnan(v) else float(v) for v in means]
    return CocoSummary(precision=precision, recall=recall, stats=stats, per_class=per_class)


# ------------------------------------------------------------------ ranked lists

def precision_recall_at_k(relevance, num_relevant: int) -> Tuple[np.ndarray, np.ndarray]:
    """Precision and recall at every cutoff of a ranked list.

    Parameters
    ----------
    relevance : array-like of bool, shape (n,)
        Relevance (TP) of each item, best-ranked first.
    num_relevant : int
        Number of relevant items in total (> 0).

    Returns
    -------
    precision, recall : ndarray of float64, shape (n,)
        ``P(k) = hits(k) / k`` and ``r(k) = hits(k) / num_relevant``, k = 1..n.
    """
    rel = np.asarray(relevance, dtype=bool).ravel()
    if num_relevant <= 0:
        raise ValueError(f"Expected `num_relevant` to be a positive integer but got "
                         f"{num_relevant!r}")
    hits = np.cumsum(rel).astype(np.float64)
    k = np.arange(1, rel.shape[0] + 1, dtype=np.float64)
    return hits / k, hits / float(num_relevant)


def average_precision_raw(relevance, num_relevant: int) -> float:
    """Non-interpolated AP: ``sum_k P(k) * (r(k) - r(k-1))``.

    Relevant items never retrieved contribute 0 (they count in ``num_relevant``).
    """
    precision, recall = precision_recall_at_k(relevance, num_relevant)
    delta = np.diff(np.concatenate(([0.0], recall)))
    return float(np.sum(precision * delta))


def fbeta_score(precision, recall, beta: float = 1.0):
    """F-beta: ``(1 + beta^2) P R / (beta^2 P + R)``; 0 where ``P = R = 0``."""
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    b2 = float(beta) ** 2
    denom = b2 * p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(denom > 0, (1 + b2) * p * r / np.where(denom > 0, denom, 1.0), 0.0)
    return float(f) if f.ndim == 0 else f
