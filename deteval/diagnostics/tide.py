"""TIDE error decomposition of a COCO bbox evaluation, exactly as tidecv 1.0.1 computes it.

Every false positive (and every detection inside a crowd region) gets one error type, every
missed object is a false negative; fixing one type at a time, with tidecv's own matching and
its own AP, says how many AP points each type costs (dAP). The rules, read from tidecv's
source and checked against it, are in ``docs/diagnostics.md`` section A (the report schema
there too); in short:

* per image, in ground-truth file order: the image's detections sorted by score (stable,
  ties in results-file order), the first 100 of the image over all classes kept;
  greedy matching at IoU ``>= 0.5`` (equal IoUs: the first object in file order);
  an unmatched detection inside a crowd region of its class (``inter / det_area > 0.5``)
  is ignored;
* each kept detection that is not a true positive: ``Bkg`` (image without objects),
  ``Loc`` (same-class IoU in ``[0.1, 0.5]``), ``Cls`` (other-class IoU ``>= 0.5``), ``Dupe``
  (a matched same-class object at ``>= 0.5``), ``Bkg`` (IoU ``<= 0.1`` with everything),
  else ``Both``; an unmatched object no ``Loc``/``Cls`` error can claim is ``Miss``;
* tidecv's AP (101 points ``k/100``, no epsilon, classes with detections but no object
  count as 0) on the original points (``ap50``) and on each rebuild that fixes one type,
  with tidecv's rebuild order (error points first, then the true positives), whose stable
  sort can put a rebuild below ``ap50`` at tied scores: that artefact is reproduced.

Everything is computed over whole columns. The per-image pass (matching, crowd regions, the
error of each detection) runs in the compiled ``_kernels.tide_pass``, or, without it, in numpy:
candidate (detection, object) pairs of each image with array operations and the greedy matching
stepping through the rank within the image (at most 100 vectorised steps, every image at once).
The nine APs share one ranking (each rebuild filters it; only the Cls fix, which moves points
to other classes, ranks its own list) and need only the true positives' precisions.

References
----------
.. [1] D. Bolya, S. Foley, J. Hays, J. Hoffman, "TIDE: A General Toolbox for Identifying
   Object Detection Errors", ECCV 2020. https://github.com/dbolya/tide (tidecv 1.0.1:
   ``quantify.py`` ``TIDEExample`` / ``TIDERun``, ``ap.py`` ``APDataObject.get_ap``,
   ``errors/main_errors.py``, ``errors/error.py`` ``BestGTMatch``).
.. [2] pycocotools ``maskApi.c`` ``bbIou`` (the IoU and the crowd IoU).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from ..errors import InputError, expected
from ..match import candidate_pairs, coco_pair_ious
from ..rank import group_rank, ranked_order, segment_starts
from ..tables import Detections, GroundTruth

from .._native import kernels as _kernels  # None without it: the numpy code is the reference

__all__ = ["ERROR_TYPES", "SPECIAL_TYPES", "POS_THRESHOLD", "BACKGROUND_THRESHOLD",
           "MAX_DETS", "TideResult", "tide_errors",
           "evaluate_coco_with_tide"]

#: The main error types, in tidecv's order (``TIDE._error_types``), by their short names:
#: ClassError, BoxError, OtherError, DuplicateError, BackgroundError, MissedError.
ERROR_TYPES = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
#: FalsePositiveError, FalseNegativeError.
SPECIAL_TYPES = ("FalsePos", "FalseNeg")
CLS, LOC, BOTH, DUPE, BKG, MISS = range(6)
#: ``TIDE(pos_threshold=0.5, background_threshold=0.1)`` and the COCO dataset's ``max_dets``.
POS_THRESHOLD = 0.5
BACKGROUND_THRESHOLD = 0.1
MAX_DETS = 100
_GRID = 100  # tidecv's recall grid k / 100, k = 0..100
_TINY = float(np.nextafter(0.0, 1.0))  # coco_pair_ious keeps iou >= this: every iou > 0


@dataclass(frozen=True)
class TideResult:
    """The TIDE decomposition of one evaluation.

    Attributes
    ----------
    ap50 : float
        tidecv's mAP at IoU 0.5 of the original detections, on its 0-100 scale.
    main : dict str -> float
        ``ERROR_TYPES`` -> dAP: ``max(mAP with that type fixed - ap50, 0)``, 0-100 scale.
    special : dict str -> float
        ``"FalsePos"``, ``"FalseNeg"`` -> dAP (not clamped).
    counts : dict str -> int
        ``ERROR_TYPES`` -> number of errors of that type.
    per_image : dict str -> ndarray of int64, shape (I,)
        ``ERROR_TYPES`` -> errors of that type on each image, indexed like
        ``gt.image_ids`` (``per_image[t].sum() == counts[t]``).
    detection_rows : ndarray of int64, shape (M,)
        Rows of ``det`` that TIDE kept (the first 100 of each image), in processing order:
        image order, then score order within the image.
    detection_error : ndarray of int8, shape (M,)
        Error type of each kept detection (an index into ``ERROR_TYPES``), -1 for a true
        positive.
    detection_ignored : ndarray of bool, shape (M,)
        Inside a crowd region of its class (no AP point; still has an error type).
    missed_rows : ndarray of int64, shape (F,)
        Ground-truth rows of the ``Miss`` errors.
    """

    ap50: float
    main: Dict[str, float]
    special: Dict[str, float]
    counts: Dict[str, int]
    per_image: Dict[str, np.ndarray] = field(repr=False)
    detection_rows: np.ndarray = field(repr=False)
    detection_error: np.ndarray = field(repr=False)
    detection_ignored: np.ndarray = field(repr=False)
    missed_rows: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        """``report["tide"]``: thresholds, ``ap50``, ``main``, ``special``, ``counts``."""
        return {"pos_threshold": POS_THRESHOLD, "background_threshold": BACKGROUND_THRESHOLD,
                "ap50": float(self.ap50),
                "main": {t: float(self.main[t]) for t in ERROR_TYPES},
                "special": {t: float(self.special[t]) for t in SPECIAL_TYPES},
                "counts": {t: int(self.counts[t]) for t in ERROR_TYPES}}

    @property
    def per_image_columns(self) -> Dict[str, np.ndarray]:
        """``tide_<type>``: errors of each type on each image (``gt``'s image order), the
        columns :mod:`deteval.diagnostics.run` adds to ``report["images"]``."""
        return {f"tide_{t}": self.per_image[t] for t in ERROR_TYPES}

    def tables(self) -> list:
        """The printed table (:class:`deteval.diagnostics.export.Table`)."""
        from .export import Table
        d = self.to_dict()
        rows = [[t, d["main"][t], d["counts"][t]] for t in ERROR_TYPES]
        rows += [[t, d["special"][t], None] for t in SPECIAL_TYPES]
        return [Table(title=f"TIDE errors (tidecv; IoU {POS_THRESHOLD:g}, background "
                            f"{BACKGROUND_THRESHOLD:g}; dAP on its 0-100 scale)  AP50 "
                            f"{d['ap50']:.2f}",
                      headers=["error", "dAP", "count"], rows=rows)]


def tide_errors(gt: GroundTruth, det: Detections) -> TideResult:
    """TIDE errors and their dAPs, as ``TIDE(0.5, 0.1, TIDE.BOX).evaluate(gt, det)``.

    Parameters
    ----------
    gt : GroundTruth, shape (G,)
        ``box_format="xywh"``, rows in file order; ``crowd`` rows are ignore regions.
        Images are processed in ``gt.image_ids`` index order (the GT file's ``images``
        order for :func:`deteval.io.coco.load_coco_ground_truth`).
    det : Detections, shape (N,)
        Same class table; ``det.order`` is the results-file order (ties of equal scores).

    Returns
    -------
    TideResult
        The report figures (``to_dict()``) and the error of every kept detection and of
        every image (``per_image``).

    Notes
    -----
    IoU is pycocotools' ``bbIou`` (no +1): ``inter / (area_d + area_g - inter)``, and for
    a crowd region ``inter / area_d``. tidecv's AP of a class with ``nGT > 0`` and points
    ranked by score (stable, insertion order):
    ``prec_i = tp_i / (i + 1)``, ``rec_i = tp_i / nGT``, envelope ``max(prec[i:])``,
    ``AP = 100 / 101 * sum_k p(k / 100)`` with ``p(r)`` the envelope at the first
    ``rec >= r`` (0 past the end). ``nGT == 0`` gives 0. The mAP is the mean over the
    classes with points or objects (0 when there is none: tidecv divides by zero).
    """
    if gt.box_format != "xywh":
        raise InputError(expected("gt.box_format", "'xywh' (TIDE is defined on COCO boxes)",
                                  gt.box_format))
    K = gt.num_classes
    n_img = gt.num_images
    # ---- kept detections: per image, score descending (stable in file order), first 100
    rows = np.arange(len(det), dtype=np.int64)
    if rows.shape[0] and not bool(np.all(det.order[1:] > det.order[:-1])):
        rows = np.argsort(det.order, kind="stable")
    by_score = rows[ranked_order(det.image_idx[rows], det.scores[rows])]
    rank_all = group_rank(det.image_idx, by_score)
    kept = by_score[rank_all[by_score] < MAX_DETS]   # processing order: (image, rank)
    M = kept.shape[0]
    k_img = det.image_idx[kept]
    k_cls = det.class_idx[kept]
    k_score = det.scores[kept]
    k_rank = rank_all[kept]
    k_boxes = np.ascontiguousarray(det.boxes[kept], dtype=np.float64)

    crowd = np.asarray(gt.crowd, dtype=bool)
    obj_rows = np.flatnonzero(~crowd)                # the objects (non-crowd GT), file order
    crowd_rows = np.flatnonzero(crowd)
    obj_img = gt.image_idx[obj_rows]
    obj_cls = gt.class_idx[obj_rows]
    obj_boxes = np.ascontiguousarray(gt.boxes[obj_rows], dtype=np.float64)
    n_obj = obj_rows.shape[0]

    crowd_img = gt.image_idx[crowd_rows]
    crowd_cls = gt.class_idx[crowd_rows]
    crowd_boxes = np.ascontiguousarray(gt.boxes[crowd_rows], dtype=np.float64)
    args = (k_img, k_cls, k_boxes, obj_img, obj_cls, obj_boxes, crowd_img, crowd_cls,
            crowd_boxes, n_img)
    found = _image_pass_compiled(*args) if _kernels is not None else None
    if found is None:
        found = _image_pass(*args, k_rank=k_rank, K=K)
    det_match, target, err, ignored = found
    tp = det_match >= 0
    obj_used = np.zeros(n_obj, dtype=bool)
    obj_used[det_match[tp]] = True

    # Loc / Cls errors on an unmatched object make it "usable"; the first such error
    # (the highest score: the image's detections come in score order) is the one a fix uses
    claims = np.flatnonzero(((err == LOC) | (err == CLS)) & (target >= 0))
    claims = claims[~obj_used[target[claims]]]
    best = np.zeros(M, dtype=bool)
    usable = np.zeros(n_obj, dtype=bool)
    if claims.shape[0]:
        claimed, first = np.unique(target[claims], return_index=True)
        best[claims[first]] = True
        usable[claimed] = True
    missed = ~obj_used & ~usable                     # Miss errors (objects)
    fn = ~obj_used                                   # every false negative

    # ---- counts, per image
    per_image = {}
    counts = {}
    for t, name in enumerate(ERROR_TYPES):
        if t == MISS:
            per_image[name] = np.bincount(obj_img[missed], minlength=n_img).astype(np.int64)
        else:
            per_image[name] = np.bincount(k_img[err == t], minlength=n_img).astype(np.int64)
        counts[name] = int(per_image[name].sum())

    # ---- APs: the original points, and the rebuilds
    num_gt = np.bincount(obj_cls, minlength=K).astype(np.int64)
    point = ~ignored                                 # kept detections with an AP point
    classes = _insertion_classes(obj_img, obj_cls, k_img[point], k_cls[point], n_obj, K)
    # every kept detection by (class, -score), ties in processing order: the original points'
    # ranking (tidecv's stable sort of its insertion order)
    by_score_cls = ranked_order(k_cls, k_score)
    orig = by_score_cls[point[by_score_cls]]
    ap50 = _tidecv_map_ranked(k_cls[orig], tp[orig], num_gt, classes)

    # A rebuild (tidecv's fix_errors) pushes one point per detection error in order, then the
    # true positives in order, and sorts them stably by score: the same ranking with, among
    # equal (class, score), the errors first. Each rebuild filters that one ranking (a fixed
    # Cls error changes class: that rebuild ranks its own list; FalsePos needs no ranking).
    by_rank = _errors_first(by_score_cls, k_cls, k_score, tp)
    r_cls, r_tp, r_err = k_cls[by_rank], tp[by_rank], err[by_rank]
    r_best, r_point = best[by_rank], point[by_rank]
    err_idx = np.flatnonzero(~tp)                    # detection errors, in order
    tp_idx = np.flatnonzero(tp)
    target_cls = np.full(M, -1, dtype=np.int64)
    target_cls[target >= 0] = obj_cls[target[target >= 0]]
    # first error point of each (type, class) in order, and of the fixable (best) Loc / Cls
    # errors in their fixed class: the class order of every rebuild
    e_pt = err_idx[point[err_idx]]
    first = np.full((BKG + 1) * K, M, dtype=np.int64)
    np.minimum.at(first, err[e_pt].astype(np.int64) * K + k_cls[e_pt], e_pt)
    first = first.reshape(BKG + 1, K)
    fixable = {}
    for t in (LOC, CLS):
        rows = np.flatnonzero((err == t) & best)
        fixable[t] = np.full(K, M, dtype=np.int64)
        np.minimum.at(fixable[t], (k_cls if t == LOC else target_cls)[rows], rows)

    def class_order(fixed: int) -> np.ndarray:
        keep = [t for t in range(BKG + 1) if t != fixed]
        f = first[keep].min(axis=0)
        if fixed in (LOC, CLS):
            f = np.minimum(f, fixable[fixed])
        return _rebuild_classes(f, M, classes)

    def rebuild(fixed: int, transform: bool = False, gt_minus=None) -> float:
        n_gt = num_gt.copy()
        if fixed == MISS:
            n_gt -= np.bincount(obj_cls[missed], minlength=K)
        if gt_minus is not None:
            n_gt -= gt_minus
        order = class_order(fixed)
        if transform:  # FalsePositiveError.fix: TPs score 1, FPs 0: per class, TPs first
            n_tp = np.bincount(k_cls[tp_idx], minlength=K)
            total = n_tp + np.bincount(k_cls[e_pt], minlength=K)
            c = np.repeat(np.arange(K, dtype=np.int64), total)
            within = np.arange(c.shape[0], dtype=np.int64) - np.repeat(np.cumsum(total) - total,
                                                                       total)
            return _tidecv_map_ranked(c, within < n_tp[c], n_gt, order)
        if fixed == CLS:
            this = (err == CLS) & best
            e = err_idx[np.where(err == CLS, best, point)[err_idx]]
            pts = np.concatenate([e, tp_idx])
            cls_now = np.where(this, target_cls, k_cls)
            return _tidecv_map(cls_now[pts], k_score[pts], this[pts] | tp[pts], n_gt, order)
        if fixed == LOC:
            this = r_err == LOC
            mask = np.where(this, r_best, r_point)
            return _tidecv_map_ranked(r_cls[mask], (r_tp | (this & r_best))[mask], n_gt, order)
        mask = r_point & (r_err != fixed) if fixed in (DUPE, BKG, BOTH) else r_point
        return _tidecv_map_ranked(r_cls[mask], r_tp[mask], n_gt, order)

    main = {}
    for t, name in enumerate(ERROR_TYPES):
        main[name] = max(rebuild(t) - ap50, 0.0)
    special = {"FalsePos": rebuild(-1, transform=True) - ap50,
               "FalseNeg": rebuild(-1, gt_minus=np.bincount(obj_cls[fn], minlength=K)) - ap50}
    return TideResult(ap50=ap50, main=main, special=special, counts=counts,
                      per_image=per_image, detection_rows=kept, detection_error=err,
                      detection_ignored=ignored, missed_rows=obj_rows[missed])


# ----------------------------------------------------------------------------- steps

def _image_pass(k_img, k_cls, k_boxes, obj_img, obj_cls, obj_boxes, crowd_img, crowd_cls,
                crowd_boxes, n_img, *, k_rank, K):
    """The per-image pass with numpy (the reference of the compiled ``tide_pass``).

    Parameters
    ----------
    k_img, k_cls : ndarray of int64, shape (M,)
        The kept detections in processing order (image, then score order).
    k_boxes : ndarray of float64, shape (M, 4)
    obj_img, obj_cls : ndarray of int64, shape (O,); obj_boxes : shape (O, 4)
        The objects (non-crowd ground truth), in file order.
    crowd_img, crowd_cls : ndarray of int64, shape (C,); crowd_boxes : shape (C, 4)
        The crowd regions.
    n_img : int
    k_rank : ndarray of int64, shape (M,)
        Rank of each kept detection within its image.
    K : int
        Number of classes.

    Returns
    -------
    det_match : ndarray of int64, shape (M,)
        The object a detection matched, -1 if none.
    target : ndarray of int64, shape (M,)
        The object of a Loc / Cls error, else -1.
    err : ndarray of int8, shape (M,)
        Index into ``ERROR_TYPES`` (never ``MISS``), -1 for a true positive.
    ignored : ndarray of bool, shape (M,)
        Unmatched and inside a crowd region of its class (crowd IoU > 0.5).
    """
    M = k_img.shape[0]
    n_obj = obj_img.shape[0]
    # ---- every (kept detection, object of its image) pair with IoU > 0
    pd, po, _ = candidate_pairs(k_img, obj_img)
    pd, po, iou = coco_pair_ious(k_boxes, obj_boxes, np.zeros(n_obj, dtype=bool), pd, po, _TINY)
    same = k_cls[pd] == obj_cls[po]

    # ---- greedy matching, stepping through the rank within the image
    det_match = _greedy_match(pd, po, iou, same, k_rank, M, n_obj)
    tp = det_match >= 0
    obj_used = np.zeros(n_obj, dtype=bool)
    obj_used[det_match[tp]] = True

    # ---- unmatched detections inside a crowd region of their class are ignored
    ignored = np.zeros(M, dtype=bool)
    if crowd_img.shape[0] and M:
        um = np.flatnonzero(~tp)
        cd, cg, _ = candidate_pairs(k_img[um] * K + k_cls[um], crowd_img * K + crowd_cls)
        cd, cg, ciou = coco_pair_ious(k_boxes[um], crowd_boxes,
                                      np.ones(crowd_img.shape[0], dtype=bool), cd, cg, _TINY)
        ignored[um[cd[ciou > POS_THRESHOLD]]] = True

    # ---- the error of every kept detection that is not a true positive
    same_max, same_arg = _first_max(pd[same], iou[same], po[same], M)
    other_max, other_arg = _first_max(pd[~same], iou[~same], po[~same], M)
    dup = same & obj_used[po]
    dup_max, _ = _first_max(pd[dup], iou[dup], po[dup], M)
    any_max, _ = _first_max(pd, iou, po, M)
    img_has_obj = np.bincount(obj_img, minlength=n_img) > 0

    err = np.full(M, -1, dtype=np.int8)
    target = np.full(M, -1, dtype=np.int64)
    todo = ~tp
    rule = todo & ~img_has_obj[k_img]
    err[rule] = BKG
    todo &= ~rule
    rule = todo & (same_max >= BACKGROUND_THRESHOLD) & (same_max <= POS_THRESHOLD)
    err[rule] = LOC
    target[rule] = same_arg[rule]
    todo &= ~rule
    rule = todo & (other_max >= POS_THRESHOLD)
    err[rule] = CLS
    target[rule] = other_arg[rule]
    todo &= ~rule
    rule = todo & (dup_max >= POS_THRESHOLD)
    err[rule] = DUPE
    todo &= ~rule
    rule = todo & (any_max <= BACKGROUND_THRESHOLD)
    err[rule] = BKG
    todo &= ~rule
    err[todo] = BOTH

    return det_match, target, err, ignored


def _image_pass_compiled(k_img, k_cls, k_boxes, obj_img, obj_cls, obj_boxes, crowd_img,
                         crowd_cls, crowd_boxes, n_img):
    """:func:`_image_pass` by the compiled ``_kernels.tide_pass`` (the same rules, IoUs and
    tie-breaks, one image at a time)."""
    i64 = np.int64
    res = _kernels.tide_pass(
        k_image=np.ascontiguousarray(k_img, dtype=i64),
        k_class=np.ascontiguousarray(k_cls, dtype=i64),
        k_boxes=np.ascontiguousarray(k_boxes, dtype=np.float64),
        obj_image=np.ascontiguousarray(obj_img, dtype=i64),
        obj_class=np.ascontiguousarray(obj_cls, dtype=i64),
        obj_boxes=np.ascontiguousarray(obj_boxes, dtype=np.float64),
        crowd_image=np.ascontiguousarray(crowd_img, dtype=i64),
        crowd_class=np.ascontiguousarray(crowd_cls, dtype=i64),
        crowd_boxes=np.ascontiguousarray(crowd_boxes, dtype=np.float64),
        num_images=int(n_img), pos_threshold=POS_THRESHOLD,
        background_threshold=BACKGROUND_THRESHOLD)
    match, target, err, ignored = res
    return (np.frombuffer(match, dtype=np.int64), np.frombuffer(target, dtype=np.int64),
            np.frombuffer(err, dtype=np.int8), np.frombuffer(ignored, dtype=np.uint8).astype(bool))


def _greedy_match(pd, po, iou, same, k_rank, M, n_obj) -> np.ndarray:
    """Object matched by each kept detection (-1: none).

    Detections in processing order take the unmatched same-class object of highest IoU
    if that IoU is ``>= 0.5`` (equal IoUs: the first object in file order). One step per
    rank within the image, every image at once (a step's detections are in different
    images, so they never compete)."""
    det_match = np.full(M, -1, dtype=np.int64)
    e = np.flatnonzero(same & (iou >= POS_THRESHOLD))
    if e.shape[0] == 0:
        return det_match
    e = e[np.argsort(k_rank[pd[e]], kind="stable")]  # rank-major; (det, object) order kept
    ed, eo, ei = pd[e], po[e], iou[e]
    er = k_rank[ed]
    bounds = np.searchsorted(er, np.arange(int(er[-1]) + 2))
    taken = np.zeros(n_obj, dtype=bool)
    for r in range(bounds.shape[0] - 1):
        s, t = bounds[r], bounds[r + 1]
        if s == t:
            continue
        free = ~taken[eo[s:t]]
        d, o, v = ed[s:t][free], eo[s:t][free], ei[s:t][free]
        if d.shape[0] == 0:
            continue
        best, arg = _first_max_compact(d, v, o)
        det_match[best] = arg
        taken[arg] = True
    return det_match


def _first_max_compact(seg, values, payload):
    """Per run of equal ``seg`` (sorted): the run's key and the payload of its first
    maximal value."""
    starts = segment_starts(seg)
    mx = np.maximum.reduceat(values, starts)
    lengths = np.diff(np.append(starts, seg.shape[0]))
    is_max = values == np.repeat(mx, lengths)
    pos = np.where(is_max, np.arange(seg.shape[0]), seg.shape[0])
    first = np.minimum.reduceat(pos, starts)
    return seg[starts], payload[first]


def _first_max(seg, values, payload, size):
    """``(max, payload of the first maximum)`` per index ``0..size-1`` of ``seg`` (sorted;
    values > 0); ``(0, -1)`` where an index has no entry: numpy's ``argmax`` over a row
    whose missing entries are 0."""
    best = np.zeros(size, dtype=np.float64)
    arg = np.full(size, -1, dtype=np.int64)
    if seg.shape[0]:
        starts = segment_starts(seg)
        mx = np.maximum.reduceat(values, starts)
        keys, first = _first_max_compact(seg, values, payload)
        best[keys] = mx
        arg[keys] = first
    return best, arg


def _insertion_classes(obj_img, obj_cls, pt_img, pt_cls, n_obj, K) -> np.ndarray:
    """Classes in the order tidecv's ``ClassedAPDataObject`` creates them: per image,
    first its objects (``add_gt_positives``), then its points (``push``); each list in
    its own order (objects in file order, points in processing order)."""
    span = np.int64(max(n_obj, pt_img.shape[0]) + 1)
    first = np.full(K, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, obj_cls, (obj_img * 2) * span + np.arange(n_obj, dtype=np.int64))
    np.minimum.at(first, pt_cls, (pt_img * 2 + 1) * span
                  + np.arange(pt_img.shape[0], dtype=np.int64))
    seen = np.flatnonzero(first < np.iinfo(np.int64).max)
    return seen[np.argsort(first[seen], kind="stable")]


def _rebuild_classes(first: np.ndarray, none: int, classes: np.ndarray) -> np.ndarray:
    """Class order of a rebuilt ``ClassedAPDataObject``: the classes that have error points,
    by their first one (``first[k]``, ``none`` where a class has none), then the others in
    the original order ``classes``."""
    seen = np.flatnonzero(first < none)
    head = seen[np.argsort(first[seen], kind="stable")]
    rest = classes[~np.isin(classes, head)]
    return np.concatenate([head, rest])


def _errors_first(ranked: np.ndarray, cls: np.ndarray, score: np.ndarray, is_tp: np.ndarray
                  ) -> np.ndarray:
    """``ranked`` (rows by class, then score descending) with, within each run of equal
    (class, score), the non-TP rows first and the TP rows after, each in their order."""
    n = ranked.shape[0]
    if n == 0:
        return ranked
    c, sc, t = cls[ranked], score[ranked], is_tp[ranked]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (c[1:] != c[:-1]) | (sc[1:] != sc[:-1])
    starts = np.flatnonzero(new)
    lengths = np.diff(np.append(starts, n))
    fp = (~t).astype(np.int64)
    fp_before = np.cumsum(fp) - fp                   # non-TP rows before each position
    run_fp0 = np.repeat(fp_before[starts], lengths)
    run_fp = np.repeat(np.append(fp_before[starts[1:]], fp_before[-1] + fp[-1])
                       - fp_before[starts], lengths)
    pos = np.arange(n, dtype=np.int64)
    run_start = np.repeat(starts, lengths)
    fp_rank = fp_before - run_fp0                    # among the run's non-TP rows
    tp_rank = (pos - run_start) - fp_rank            # among the run's TP rows
    new_pos = run_start + np.where(t, run_fp + tp_rank, fp_rank)
    out = np.empty(n, dtype=ranked.dtype)
    out[new_pos] = ranked
    return out


def _tidecv_map(cls, score, is_tp, num_gt, classes) -> float:
    """tidecv's mAP (0-100) of points given in insertion order.

    Parameters
    ----------
    cls, score, is_tp : ndarray, shape (P,)
        The points, in the order they were pushed.
    num_gt : ndarray of int64, shape (K,)
    classes : ndarray of int64
        The classes of the ``ClassedAPDataObject`` in creation order; the mean runs over
        those with points or ``num_gt != 0``, summed in this order.
    """
    order = ranked_order(cls, score)  # class, then score descending, stable
    return _tidecv_map_ranked(cls[order], is_tp[order], num_gt, classes)


def _grid_targets(n_gt: np.ndarray) -> np.ndarray:
    """``t[c, k] = min{v : v / n_gt[c] >= k / 100}`` (doubles, as tidecv compares them):
    the true positives a class needs for its recall to reach the grid point ``k / 100``.

    Parameters
    ----------
    n_gt : ndarray of int64, shape (P,), > 0

    Returns
    -------
    ndarray of int64, shape (P, 101)
    """
    k = np.arange(_GRID + 1, dtype=np.int64)
    grid = k / _GRID                                   # Python's k / 100, k = 0..100
    n = n_gt[:, None]
    t = (k[None, :] * n + _GRID - 1) // _GRID          # ceil(k * n / 100), exactly
    nf = n.astype(np.float64)
    for _ in range(2):  # the doubles can disagree with the fractions by one step
        t -= (t > 0) & ((t - 1) / nf >= grid)
        t += (t / nf) < grid
    return t


def _tidecv_map_ranked(c, is_tp, num_gt, classes) -> float:
    """:func:`_tidecv_map` of points already ranked: by class, then score descending,
    stably in insertion order.

    Notes
    -----
    Recall rises only at a true positive, so the first point with ``rec >= k/100`` is the
    ``t``-th true positive of the class, ``t = min{v : v / nGT >= k/100}`` (the class's first
    point for ``k = 0``), and the envelope there, ``max(prec[i:])``, is the largest
    precision at a true positive from that one on (a false positive's precision is below
    the true positive before it). So every AP comes from the true positives' precisions
    ``m / (position + 1)`` alone.
    """
    K = num_gt.shape[0]
    n_pts = np.bincount(c, minlength=K) if c.shape[0] else np.zeros(K, np.int64)
    nonempty = (num_gt != 0) | (n_pts > 0)
    present = np.flatnonzero((n_pts > 0) & (num_gt > 0))  # nGT == 0: AP 0
    ap = np.zeros(K, dtype=np.float64)
    if present.shape[0]:
        start = np.cumsum(n_pts) - n_pts                  # each class's first point
        tpi = np.flatnonzero(is_tp)
        tc = c[tpi]
        n_tp = np.bincount(tc, minlength=K)
        tp_start = np.cumsum(n_tp) - n_tp
        m = np.arange(1, tpi.shape[0] + 1, dtype=np.int64) - tp_start[tc]  # TPs so far
        prec = m / (tpi - start[tc] + 1).astype(np.float64)
        t = _grid_targets(num_gt[present])                # (P, 101)
        have = n_tp[present][:, None]
        inside = (have > 0) & (t <= have)
        # the envelope at the t-th true positive: maxima of the pieces between consecutive
        # queries, then a right-to-left running maximum (masked queries point at the
        # class's end; the 0 appended keeps the last class's end a valid index)
        q = tp_start[present][:, None] + np.where(inside, np.maximum(t, 1) - 1, have)
        pieces = np.maximum.reduceat(np.append(prec, 0.0), q.ravel()).reshape(q.shape)
        pieces[~inside] = 0.0
        env = np.maximum.accumulate(pieces[:, ::-1], axis=1)[:, ::-1]
        p = np.where(inside, env, 0.0)
        ap[present] = np.cumsum(p, axis=1)[:, -1] / (_GRID + 1) * 100
    total, count = 0.0, 0
    for k in classes.tolist():
        if nonempty[k]:
            total += float(ap[k])
            count += 1
    return total / count if count else 0.0


# ---------------------------------------------------------------------------- report

def evaluate_coco_with_tide(ground_truth, results, **kwargs):
    """:func:`deteval.evaluate_coco` (bbox) with its TIDE errors, as ``deteval coco --tide``:
    a :class:`deteval.diagnostics.run.DiagnosticsReport` (``report.tide``,
    ``report.to_dict()["tide"]``) from the same tables and match records.

    Parameters
    ----------
    ground_truth, results : path, loaded dict / list, or GroundTruth / Detections
        A COCO instances file and a results file, as :func:`deteval.evaluate_coco`, or the
        tables read from them (or from another format, :mod:`deteval.io.detect`).
    **kwargs
        ``iou_thresholds``, ``area_ranges``, ``max_dets`` of the plain evaluation (TIDE's
        own parameters are fixed: IoU 0.5, background 0.1, 100 detections per image).

    Raises
    ------
    InputError
        Bad files, or two categories with the same name.
    """
    from ..evaluate import evaluate_coco
    from .run import check_unique_names, coco_diagnostics
    stages: dict = {}
    report = evaluate_coco(ground_truth, results, stages=stages, **kwargs)
    gt, det = stages["gt"], stages["det"]
    check_unique_names(gt.class_names, gt.sources.get("ground_truth"))
    return coco_diagnostics(report, gt, det, stages["matches"], stages["summary"],
                            sections={"tide": tide_errors(gt, det)})
