"""LVIS federated evaluation (lvis-api 0.5.3 ``LVISEval``) and the fixed-AP protocol.

The stages, each over whole columns (no Python loop per image, class or result):

1. **Cut** (:func:`cap_rows`). Standard: the ``max_dets`` (300) highest-scored results of
   each image over all its categories, as ``LVISResults.limit_dets_per_image`` keeps them
   (a stable sort by decreasing score: among equal scores the earlier result in the file
   is kept). Fixed AP [3]_: no per-image cut; the ``max_dets_per_class`` (10,000) highest-
   scored results of each category over the whole file (the same tie rule).
2. **Federated filter** (:func:`federated_rows`). Ground truth with ``area`` outside
   ``(0, inf)`` and results whose area (``w * h``, or the mask area of a segmentation
   result without a box) is outside it are dropped, as lvis-api's ``get_ann_ids`` does.
   A result is evaluated only when its category is *verified* on its image: annotated
   there (a positive) or listed in the image's ``neg_category_ids``; the others are
   dropped. A result of a category listed in the image's ``not_exhaustive_category_ids``
   that matches nothing is ignored (neither TP nor FP).
3. **Match** with :func:`deteval.match.match_coco` (pycocotools' greedy walk; LVIS has no
   crowd regions, an annotation's ``ignore`` flag makes it ignored; no per-(image, class)
   cut). Only the (image, category) groups that hold a result or an object are handed to
   it, each as its own group, so nothing is sized images x categories.
4. **Accumulate** with :func:`deteval.ap.coco_accumulate` (101 recall points, ranking by
   score with ties in image-id order then file order) and summarise:
   ``AP, AP50, AP75, APs, APm, APl`` and the frequency groups ``APr, APc, APf`` (means of
   the defined precision entries of the rare / common / frequent classes), ``AR{max_dets}``
   (lvis-api's ``AR@300``), ``ARs, ARm, ARl``.

References
----------
.. [1] A. Gupta, P. Dollar, R. Girshick, "LVIS: A Dataset for Large Vocabulary Instance
   Segmentation", CVPR 2019.
.. [2] lvis-api 0.5.3: ``LVISResults`` (``limit_dets_per_image``), ``LVISEval``
   (``_prepare``, ``evaluate_img``, ``accumulate``, ``summarize``).
   https://github.com/lvis-dataset/lvis-api
.. [3] A. Dave, P. Dollar, D. Ramanan, A. Kirillov, R. Girshick, "Evaluating Large-Vocabulary
   Object Detectors: The Devil is in the Details", arXiv:2102.01066 (2021): Fixed AP
   (``scripts/evaluate_ap_fixed.py`` of https://github.com/achalddave/large-vocab-devil).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from ._values import number_or_none as _num
from .ap import coco_accumulate, summarize_accumulated
from .errors import InputError, expected
from .match import CocoMatches, match_coco
from .params import (COCO_AREA_RANGES, COCO_IOU_THRESHOLDS, COCO_RECALL_THRESHOLDS,
                     check_choice)
from .rank import group_rank, stable_rank_order
from .report import coco_style_dict
from .tables import Detections, GroundTruth

__all__ = ["LVIS_MAX_DETS", "LVIS_MAX_DETS_PER_CLASS", "LVIS_IOU_TYPES", "LvisReport",
           "evaluate_lvis", "cap_rows", "federated_rows", "lvis_matches"]

#: lvis-api's ``max_dets``: results kept per image (standard protocol).
LVIS_MAX_DETS = 300
#: Fixed AP's results kept per category over the dataset (Dave et al. 2021).
LVIS_MAX_DETS_PER_CLASS = 10000
LVIS_IOU_TYPES = ("bbox", "segm")
_GROUP_NAMES = {"r": "rare", "c": "common", "f": "frequent"}
_NO_CUT = np.iinfo(np.int64).max

PathLike = Union[str, os.PathLike]


# ------------------------------------------------------------------------- stages

def cap_rows(major: np.ndarray, scores: np.ndarray, order: np.ndarray, limit: int
             ) -> np.ndarray:
    """Rows kept by a top-``limit`` cut within each ``major`` group (image or category).

    Rows are ranked by decreasing score within their group, equal scores by ``order``
    (file position): the stable sort of ``LVISResults.limit_dets_per_image`` and of the
    fixed-AP script's per-category cut.

    Parameters
    ----------
    major : ndarray of int64, shape (N,)
    scores : ndarray of float64, shape (N,)
    order : ndarray of int64, shape (N,)
    limit : int

    Returns
    -------
    ndarray of int64, shape (M,)
        Kept rows, ascending.
    """
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    ranked = stable_rank_order(major, scores, order)
    rank = group_rank(major, ranked)
    return np.flatnonzero(rank < limit)


def _pair_keys(image_idx: np.ndarray, class_idx: np.ndarray, num_classes: int) -> np.ndarray:
    return image_idx.astype(np.int64) * num_classes + class_idx


def federated_rows(gt: GroundTruth, fields, det: Detections, det_rows: np.ndarray,
                   det_area: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The federated filter: which ground truth and results are evaluated.

    Parameters
    ----------
    gt : GroundTruth
    fields : deteval.io.lvis.LvisFields
    det : Detections
    det_rows : ndarray of int64, shape (M,)
        Results left by the cut.
    det_area : ndarray of float64, shape (N,)
        Area of every result (``w * h``, or the mask area).

    Returns
    -------
    gt_rows : ndarray of int64, shape (G',)
        Ground truth with ``0 < area < inf``.
    det_rows : ndarray of int64, shape (M',)
        Results with ``0 < area < inf`` whose category is verified on their image.
    not_exhaustive : ndarray of bool, shape (M',)
        Whether the result's category is in its image's ``not_exhaustive_category_ids``.
    """
    K = gt.num_classes
    gt_rows = np.flatnonzero((gt.area > 0) & (gt.area < np.inf))
    positive = _pair_keys(gt.image_idx[gt_rows], gt.class_idx[gt_rows], K)
    negative = _pair_keys(fields.neg_image_idx, fields.neg_class_idx, K)
    verified = np.unique(np.concatenate([positive, negative]))
    a = det_area[det_rows]
    det_rows = det_rows[(a > 0) & (a < np.inf)]
    key = _pair_keys(det.image_idx[det_rows], det.class_idx[det_rows], K)
    det_rows = det_rows[np.isin(key, verified)]
    key = _pair_keys(det.image_idx[det_rows], det.class_idx[det_rows], K)
    ne = np.unique(_pair_keys(fields.ne_image_idx, fields.ne_class_idx, K))
    return gt_rows, det_rows, np.isin(key, ne)


def lvis_matches(gt: GroundTruth, det: Detections, gt_rows: np.ndarray, det_rows: np.ndarray,
                 not_exhaustive: np.ndarray, gt_ignore: np.ndarray, det_area: np.ndarray,
                 iou_thresholds: np.ndarray, area_ranges: np.ndarray,
                 iou_type: str = "bbox") -> CocoMatches:
    """Match the evaluated results with lvis-api's ``evaluate_img`` rules.

    The (image, category) groups that hold an evaluated result or object get dense ids in
    (category, image-id) order; :func:`deteval.match.match_coco` walks them as groups of a
    one-class table (no crowd, ``gt_ignore`` as the ignored objects, no per-group cut),
    and the records are relabelled with their category and image. Unmatched results of a
    not-exhaustive category are then ignored at every area range and threshold.

    Returns
    -------
    CocoMatches
        Records in (class, image key, rank) order; ``num_gt`` of shape (K, A).
    """
    K = gt.num_classes
    image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
    num_images = max(gt.num_images, 1)
    # rows of the results in (class, image key, -score, file order) order
    d_major = det.class_idx[det_rows] * num_images + image_key[det.image_idx[det_rows]]
    ranked = stable_rank_order(d_major, det.scores[det_rows], det.order[det_rows])
    det_rows, not_exhaustive, d_major = det_rows[ranked], not_exhaustive[ranked], d_major[ranked]
    g_major = gt.class_idx[gt_rows] * num_images + image_key[gt.image_idx[gt_rows]]
    groups, inverse = np.unique(np.concatenate([d_major, g_major]), return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    d_group, g_group = inverse[:det_rows.shape[0]], inverse[det_rows.shape[0]:]
    n_groups = max(int(groups.shape[0]), 1)
    group_ids = np.arange(n_groups, dtype=np.int64)
    one_gt = GroundTruth(
        image_idx=g_group, class_idx=np.zeros(gt_rows.shape[0], dtype=np.int64),
        boxes=np.ascontiguousarray(gt.boxes[gt_rows]),
        difficult=np.zeros(gt_rows.shape[0], dtype=bool),
        crowd=np.zeros(gt_rows.shape[0], dtype=bool), area=gt.area[gt_rows],
        image_ids=group_ids, class_names=("(group)",), class_ids=np.zeros(1, dtype=np.int64),
        box_format="xywh")
    one_det = Detections(
        image_idx=d_group, class_idx=np.zeros(det_rows.shape[0], dtype=np.int64),
        boxes=np.ascontiguousarray(det.boxes[det_rows]), scores=det.scores[det_rows],
        order=np.arange(det_rows.shape[0], dtype=np.int64))
    kw = {"gt_ignore": gt_ignore[gt_rows], "det_area": det_area[det_rows]}
    if iou_type == "segm":
        from .masks import rle_pair_ious

        def pair_iou(d, g):
            return rle_pair_ious(det.masks, gt.masks, det_rows[d], gt_rows[g],
                                 np.zeros(g.shape[0], dtype=bool))

        kw["pair_iou"] = pair_iou
    m = match_coco(one_gt, one_det, iou_thresholds, area_ranges, _NO_CUT,
                   image_key=group_ids, **kw)
    # match_coco returns its records in (group, rank) order: the row order built above
    if not np.array_equal(m.image_key, d_group) or not np.array_equal(m.scores,
                                                                       one_det.scores):
        raise AssertionError("lvis_matches: records out of the expected order")
    ignored = m.ignored if m.ignored.flags.writeable else m.ignored.copy()
    ne_rows = np.flatnonzero(not_exhaustive)
    ignored[ne_rows] |= ~m.matched[ne_rows]
    A = area_ranges.shape[0]
    lo, hi = area_ranges[:, 0], area_ranges[:, 1]
    g_area = gt.area[gt_rows]
    counted = ~(gt_ignore[gt_rows][:, None] | (g_area[:, None] < lo) | (g_area[:, None] > hi))
    num_gt = np.zeros((K, A), dtype=np.int64)
    g_class = gt.class_idx[gt_rows]
    for a in range(A):
        num_gt[:, a] = np.bincount(g_class[counted[:, a]], minlength=K)
    return CocoMatches(class_idx=det.class_idx[det_rows], scores=m.scores,
                       image_key=image_key[det.image_idx[det_rows]], rank=m.rank,
                       matched=m.matched, ignored=ignored, num_gt=num_gt)


# ------------------------------------------------------------------------- report

@dataclass(frozen=True)
class LvisReport:
    """Result of an LVIS evaluation. ``report.stats["APr"]``, ``report.classes[i]["AP"]``.

    Attributes
    ----------
    stats : dict name -> float or None
        ``AP, AP50, AP75, APs, APm, APl, APr, APc, APf, AR{max_dets}, ARs, ARm, ARl``
        (``AR`` without a per-image cap); None where lvis-api gives -1.
    classes : list of dict
        One per category (category-id order): ``id, name, frequency`` (``"r"``, ``"c"``,
        ``"f"``), the per-class figures, ``num_gt`` (objects counted for recall, all areas)
        and ``num_results`` (evaluated results).
    precision : ndarray of float64, shape (T, R, K, A)
    recall : ndarray of float64, shape (T, K, A)
    """

    stats: Dict[str, Optional[float]]
    classes: List[dict]
    params: dict
    precision: np.ndarray = field(repr=False)
    recall: np.ndarray = field(repr=False)
    inputs: dict = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    iou_type: str = "bbox"

    protocol = "lvis"

    def to_dict(self) -> dict:
        """The stable JSON report (see README, section LVIS)."""
        return coco_style_dict(self)

    def format_table(self, worst: int = 10) -> str:
        """The figures, a table by frequency group, and the ``worst`` rare classes."""
        p = self.params
        cut = ("fixed AP: no per-image cap, at most "
               f"{p['max_dets_per_class']} results per category" if p["fixed"]
               else f"max {p['max_dets']} results per image")
        lines = [f"LVIS {self.iou_type}  (IoU 0.50:0.95, {cut})"]
        for n, v in self.stats.items():
            lines.append(f"  {n:<6} {'-' if v is None else f'{v:.4f}':>8}")
        head = (f"{'frequency':<10}{'classes':>9}{'with GT':>9}{'AP':>9}{'AP50':>9}"
                f"{'median':>9}{'AP = 0':>8}")
        lines += ["", head, "-" * len(head)]
        for code, stat in (("r", "APr"), ("c", "APc"), ("f", "APf")):
            rows = [c for c in self.classes if c["frequency"] == code]
            aps = [c["AP"] for c in rows if c["AP"] is not None]
            ap50 = [c["AP50"] for c in rows if c["AP50"] is not None]
            v = self.stats[stat]
            lines.append(
                f"{_GROUP_NAMES[code]:<10}{len(rows):>9}{len(aps):>9}"
                f"{'-' if v is None else f'{v:.4f}':>9}"
                f"{f'{np.mean(ap50):.4f}' if ap50 else '-':>9}"
                f"{f'{np.median(aps):.4f}' if aps else '-':>9}"
                f"{sum(a == 0 for a in aps):>8}")
        lines.append("(AP: the group's APr/APc/APf; AP50 and median: over its classes with "
                     "ground truth)")
        rare = sorted((c for c in self.classes if c["frequency"] == "r" and c["AP"] is not None),
                      key=lambda c: (c["AP"], c["id"]))[:worst]
        if rare:
            width = max([len("class")] + [len(c["name"]) for c in rare])
            lines += ["", f"worst rare classes ({len(rare)} lowest AP):",
                      f"{'id':>6}  {'class':<{width}}  {'AP':>7}  {'AP50':>7}  {'GT':>5}  "
                      f"{'results':>7}"]
            for c in rare:
                ap50 = "-" if c["AP50"] is None else f"{c['AP50']:.4f}"
                lines.append(f"{c['id']:>6}  {c['name']:<{width}}  {c['AP']:>7.4f}  "
                             f"{ap50:>7}  {c['num_gt']:>5}  {c['num_results']:>7}")
        undefined = sum(c["AP"] is None for c in self.classes)
        if undefined:
            lines += ["", f"{undefined} of {len(self.classes)} classes have no AP (null in "
                      "the JSON report; lvis-api gives -1): no ground truth of theirs is "
                      "counted. Every class is in the JSON report (--json)."]
        if self.notes:
            lines.append("")
            lines += ["note: " + n for n in self.notes]
        return "\n".join(lines)


# ------------------------------------------------------------------------- driver

def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(expected(name, "a positive integer", value))
    return int(value)


def evaluate_lvis(ground_truth, results, *, iou_type: str = "bbox",
                  max_dets: Optional[int] = None, fixed: bool = False,
                  max_dets_per_class: Optional[int] = None) -> LvisReport:
    """Evaluate detections with the LVIS federated protocol (lvis-api 0.5.3), or Fixed AP.

    Parameters
    ----------
    ground_truth : path or dict
        An LVIS instances file (COCO format plus ``neg_category_ids``,
        ``not_exhaustive_category_ids`` per image and ``frequency`` per category), or
        its loaded dict.
    results : path or list
        A COCO results list (``image_id, category_id, bbox, score``; ``segmentation`` as
        compressed RLE for ``segm``).
    iou_type : {"bbox", "segm"}
    max_dets : int, optional
        Results kept per image (default 300). Not with ``fixed``.
    fixed : bool
        The fixed-AP protocol (Dave et al. 2021): no per-image cap, at most
        ``max_dets_per_class`` results per category over the whole file.
    max_dets_per_class : int, optional
        Default 10,000; only with ``fixed``.

    Returns
    -------
    LvisReport
    """
    from .io.coco_geometry import load_results_geometry
    from .io.lvis import FREQUENCIES, load_lvis_ground_truth
    check_choice("iou_type", iou_type, LVIS_IOU_TYPES)
    if fixed:
        if max_dets is not None:
            raise InputError(expected("max_dets", "unset with the fixed-AP protocol (it has "
                                      "no per-image cap)", max_dets))
        per_class = _check_count("max_dets_per_class", LVIS_MAX_DETS_PER_CLASS
                                 if max_dets_per_class is None else max_dets_per_class)
    else:
        if max_dets_per_class is not None:
            raise InputError(expected("max_dets_per_class", "set only with the fixed-AP "
                                      "protocol (--fixed)", max_dets_per_class))
        max_dets = _check_count("max_dets", LVIS_MAX_DETS if max_dets is None else max_dets)
    gt, fields = load_lvis_ground_truth(ground_truth, iou_type)
    det = load_results_geometry(results, gt, iou_type)
    det_area = det.area if det.area is not None else det.boxes[:, 2] * det.boxes[:, 3]

    if fixed:
        kept = cap_rows(det.class_idx, det.scores, det.order, per_class)
    else:
        kept = cap_rows(det.image_idx, det.scores, det.order, max_dets)
    gt_rows, det_rows, ne = federated_rows(gt, fields, det, kept, det_area)
    thr = COCO_IOU_THRESHOLDS.copy()
    areas = dict(COCO_AREA_RANGES)
    area_arr = np.array(list(areas.values()), dtype=np.float64)
    matches = lvis_matches(gt, det, gt_rows, det_rows, ne, fields.ignore, det_area, thr,
                           area_arr, iou_type)
    precision, recall = coco_accumulate(matches, np.array([_NO_CUT], dtype=np.int64),
                                        COCO_RECALL_THRESHOLDS)
    ar_name = "AR" if fixed else f"AR{max_dets}"
    summary = summarize_accumulated(precision, recall, thr, list(areas), [0], True)
    rename = {"AR0": ar_name}
    stats: Dict[str, Optional[float]] = {}
    for name, v in summary.stats.items():
        stats[rename.get(name, name)] = v
    a_all = list(areas).index("all")
    for code, g in enumerate(("APr", "APc", "APf")):
        idx = np.flatnonzero(fields.frequency == code)
        cell = np.ascontiguousarray(precision[:, :, idx, a_all, 0]).ravel()
        cell = cell[~np.isnan(cell)]
        stats[g] = float(np.mean(cell)) if cell.size else None
    order = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", ar_name,
             "ARs", "ARm", "ARl"]
    stats = {n: stats[n] for n in order}

    K = gt.num_classes
    per_names = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR0"]
    num_results = np.bincount(matches.class_idx, minlength=K)
    classes = []
    for k in range(K):
        row = {"id": int(gt.class_ids[k]), "name": str(gt.class_names[k]),
               "frequency": FREQUENCIES[int(fields.frequency[k])]}
        for n in per_names:
            row[rename.get(n, n)] = _num(summary.per_class[n][k])
        row["num_gt"] = int(matches.num_gt[k, a_all])
        row["num_results"] = int(num_results[k])
        classes.append(row)
    params = {"iou_thresholds": [float(t) for t in thr],
              "area_ranges": {n: [float(lo), float(hi)] for n, (lo, hi) in areas.items()},
              "max_dets": None if fixed else max_dets, "fixed": bool(fixed),
              "max_dets_per_class": per_class if fixed else None,
              "recall_thresholds": len(COCO_RECALL_THRESHOLDS)}
    inputs = {"ground_truth": gt.sources.get("ground_truth"),
              "results": det.sources.get("results"), "num_images": gt.num_images,
              "num_results": len(det), "num_results_kept": int(kept.shape[0]),
              "num_results_evaluated": int(det_rows.shape[0]),
              "ground_truth_sha256": gt.fingerprint()}
    notes = []
    dropped = int(kept.shape[0] - det_rows.shape[0])
    if dropped:
        notes.append(f"{dropped} results not evaluated: their category is neither annotated "
                     "on their image nor in its neg_category_ids (federated filter), or their "
                     "area is 0")
    return LvisReport(stats=stats, classes=classes, params=params,
                      precision=precision[:, :, :, :, 0], recall=recall[:, :, :, 0],
                      inputs=inputs, notes=notes, iou_type=iou_type)
