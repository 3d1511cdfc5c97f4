"""Matching engine: tables in, per-detection match records out.

One engine, two rule sets:

* :func:`match_voc`: PASCAL VOC (devkit, or py-faster-rcnn/detectron2 compat):
  the best GT over *all* GT of the class in the image; a claimed best GT makes
  the detection a duplicate (FP); a difficult best GT makes it ignored.
* :func:`match_coco`: pycocotools ``COCOeval`` (bbox): the best *unmatched* GT,
  non-ignored GT preferred, crowd regions matchable many times, per area range
  and IoU threshold, detections cut to ``max_dets`` per image and class.

Both build the (detection, GT) candidate pairs of each (image, class) group with
array operations (no Python loop per group or per detection). The COCO walk is
sequential only within a group, so it steps through detection *rank* with all
groups at once: at most ``max(max_dets)`` vectorised steps. The compiled
``_kernels.voc_match`` / ``_kernels.coco_match`` run the same walks group by group and
give the same records; the numpy code here is the reference.

The rules are stated in ``docs/semantics.md``.

References
----------
.. [1] PASCAL VOC devkit (2012), ``VOCevaldet.m``: per-detection assignment to the
   best-overlapping ground truth (``ov >= 0.5``; difficult -> ignored, claimed -> false
   positive). http://host.robots.ox.ac.uk/pascal/VOC/voc2012/
.. [2] py-faster-rcnn / detectron2 ``voc_eval.py`` (``ovmax > ovthresh``).
.. [3] pycocotools ``cocoeval.py``: ``COCOeval.computeIoU`` (``maskUtils.iou`` with the
   crowd rule) and ``COCOeval.evaluateImg`` (the greedy match per IoU threshold,
   non-ignored ground truth first). https://github.com/cocodataset/cocoapi
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from .rank import group_rank, ranked_order, segment_starts, small_int, voc_order
from .tables import Detections, GroundTruth

from ._native import kernels as _kernels  # None without it: the numpy code is the reference

__all__ = ["candidate_pairs", "iou_voc", "coco_pair_ious", "VocMatches", "CocoMatches",
           "match_voc", "match_coco", "concatenate_records", "TP", "FP", "IGNORED"]

TP, FP, IGNORED = 1, 0, -1


def candidate_pairs(det_group: np.ndarray, gt_group: np.ndarray
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All (detection, GT) pairs that share a group.

    Parameters
    ----------
    det_group : ndarray of int64, shape (N,)
        Group key of each detection (e.g. ``image_idx * K + class_idx``).
    gt_group : ndarray of int64, shape (G,)
        Group key of each GT.

    Returns
    -------
    pair_det : ndarray of int64, shape (P,)
        Detection row of each pair; pairs are ordered by detection row.
    pair_gt : ndarray of int64, shape (P,)
        GT row of each pair; within one detection, in GT row order.
    gt_order : ndarray of int64, shape (G,)
        The stable sort of GT rows by group (used to build the pairs).
    """
    gt_order = np.argsort(gt_group, kind="stable")
    sorted_groups = gt_group[gt_order]
    # one lookup per detection into the table of distinct GT groups
    groups, first_gt, per_group = np.unique(sorted_groups, return_index=True,
                                            return_counts=True)
    if groups.shape[0]:
        g = np.minimum(np.searchsorted(groups, det_group), groups.shape[0] - 1)
        found = groups[g] == det_group
        start = first_gt[g]
        count = np.where(found, per_group[g], 0)
    else:
        start = count = np.zeros(det_group.shape[0], dtype=np.int64)
    pair_det = np.repeat(np.arange(det_group.shape[0], dtype=np.int64), count)
    first = np.cumsum(count) - count
    within = np.arange(pair_det.shape[0], dtype=np.int64) - first[pair_det]
    pair_gt = gt_order[start[pair_det] + within]
    return pair_det, pair_gt, gt_order


def iou_voc(det_xyxy: np.ndarray, gt_xyxy: np.ndarray) -> np.ndarray:
    """IoU of paired boxes with the VOC devkit's +1 pixel convention.

    ``iw = min(x2, gx2) - max(x1, gx1) + 1`` (``ih`` likewise);
    ``union = (x2-x1+1)(y2-y1+1) + (gx2-gx1+1)(gy2-gy1+1) - iw*ih``.
    Pairs with ``iw <= 0`` or ``ih <= 0`` get ``-inf`` (the devkit skips them), and so
    do pairs whose IoU is undefined (NaN: coordinates near the float limit overflow the
    union; the devkit's ``ov > ovmax`` skips them too).

    Parameters
    ----------
    det_xyxy, gt_xyxy : ndarray of float64, shape (P, 4)

    Returns
    -------
    ndarray of float64, shape (P,)
    """
    d, g = det_xyxy, gt_xyxy
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iw = np.minimum(d[:, 2], g[:, 2]) - np.maximum(d[:, 0], g[:, 0]) + 1.0
        ih = np.minimum(d[:, 3], g[:, 3]) - np.maximum(d[:, 1], g[:, 1]) + 1.0
        inter = iw * ih
        union = ((d[:, 2] - d[:, 0] + 1.0) * (d[:, 3] - d[:, 1] + 1.0)
                 + (g[:, 2] - g[:, 0] + 1.0) * (g[:, 3] - g[:, 1] + 1.0) - inter)
        valid = (iw > 0) & (ih > 0)
        iou = np.where(valid, inter / np.where(valid, union, 1.0), -np.inf)
    iou[np.isnan(iou)] = -np.inf
    return iou


def coco_pair_ious(det_xywh: np.ndarray, gt_xywh: np.ndarray, gt_crowd: np.ndarray,
                   pair_det: np.ndarray, pair_gt: np.ndarray, lowest: float
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IoU of candidate pairs exactly as pycocotools' ``bbIou``, keeping ``iou >= lowest``.

    ``iw = min(dx+dw, gx+gw) - max(dx, gx)`` (``ih`` likewise), 0 if either is
    ``<= 0``; ``union = dw*dh + gw*gh - iw*ih``, or ``dw*dh`` for a crowd GT;
    the same operations in the same order, so the same doubles.

    Works column by column and drops pairs without horizontal overlap first, so
    most pairs cost a few operations. Returns the kept ``pair_det, pair_gt, iou``.
    """
    # boxes near 1e308 overflow to inf/NaN IoUs, which the rules handle: no warnings
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dx, dy, dw, dh = (np.ascontiguousarray(c) for c in det_xywh.T)
        gx, gy, gw, gh = (np.ascontiguousarray(c) for c in gt_xywh.T)
        iw = np.minimum(dw[pair_det] + dx[pair_det], gw[pair_gt] + gx[pair_gt])
        iw -= np.maximum(dx[pair_det], gx[pair_gt])
        keep = iw > 0 if lowest > 0 else np.ones(iw.shape, dtype=bool)
        pd, pg, iw = pair_det[keep], pair_gt[keep], iw[keep]
        ih = np.minimum(dh[pd] + dy[pd], gh[pg] + gy[pg]) - np.maximum(dy[pd], gy[pg])
        valid = (iw > 0) & (ih > 0)
        inter = iw * ih
        det_area = dw[pd] * dh[pd]
        union = np.where(gt_crowd[pg], det_area, det_area + gw[pg] * gh[pg] - inter)
        iou = np.where(valid, inter / np.where(valid, union, 1.0), 0.0)
    keep = iou >= lowest
    return pd[keep], pg[keep], iou[keep]


# ----------------------------------------------------------------------------- VOC

@dataclass(frozen=True)
class VocMatches:
    """Per-detection VOC match records; concatenable across shards.

    Attributes
    ----------
    class_idx : ndarray of int64, shape (N,)
    scores : ndarray of float64, shape (N,)
    tie_key : ndarray of int64, shape (N,)
        Order among equal scores (file position for the devkit, the position in
        ``np.argsort(-score)`` for detectron2 compat).
    outcome : ndarray of int8, shape (N,)
        1 true positive, 0 false positive, -1 ignored (best GT difficult).
    num_gt : ndarray of int64, shape (K,)
        Non-difficult GT per class (``npos``).
    num_difficult : ndarray of int64, shape (K,)
    """

    class_idx: np.ndarray
    scores: np.ndarray
    tie_key: np.ndarray
    outcome: np.ndarray
    num_gt: np.ndarray
    num_difficult: np.ndarray

    @staticmethod
    def concatenate(parts: Sequence["VocMatches"]) -> "VocMatches":
        """Merge shards of the same detection files (devkit tie keys are file positions)."""
        return concatenate_records(parts)


def concatenate_records(parts):
    """Merge match records of one type: per-detection arrays are concatenated along
    their first axis, per-class ground-truth counts (``num_*``) are summed."""
    parts = list(parts)
    kind = type(parts[0])
    values = {}
    for f in dataclasses.fields(kind):
        arrays = [getattr(p, f.name) for p in parts]
        values[f.name] = (np.sum(arrays, axis=0) if f.name.startswith("num_")
                          else np.concatenate(arrays, axis=0))
    return kind(**values)


def _voc_outcomes_compiled(gt: GroundTruth, det: Detections, order: np.ndarray,
                           iou_threshold: float, compat: str) -> Optional[np.ndarray]:
    """:func:`match_voc`'s outcomes in ranked order from the compiled kernel (the
    same rules, IoUs and tie-breaks as the numpy code below), or None without it."""
    if _kernels is None or gt.num_classes == 0:
        return None
    i64 = np.int64
    res = _kernels.voc_match(
        order=np.ascontiguousarray(order, dtype=i64),
        det_image=np.ascontiguousarray(det.image_idx, dtype=i64),
        det_class=np.ascontiguousarray(det.class_idx, dtype=i64),
        det_boxes=np.ascontiguousarray(det.boxes, dtype=np.float64),
        gt_image=np.ascontiguousarray(gt.image_idx, dtype=i64),
        gt_class=np.ascontiguousarray(gt.class_idx, dtype=i64),
        gt_boxes=np.ascontiguousarray(gt.boxes, dtype=np.float64),
        gt_difficult=np.ascontiguousarray(gt.difficult, dtype=bool).view(np.uint8),
        num_groups_per_image=gt.num_classes, iou_threshold=float(iou_threshold),
        inclusive=compat == "devkit")
    return None if res is None else np.frombuffer(res, dtype=np.int8)


def match_voc(gt: GroundTruth, det: Detections, iou_threshold: float = 0.5,
              compat: str = "devkit", file_order_ties: bool = False) -> VocMatches:
    """Match detections to ground truth with the PASCAL VOC rules.

    For each detection, the best GT is the one of highest IoU (+1 convention) over
    *all* GT of its class in its image (strict ``>``: the first in file order wins
    ties). If ``best_iou >= iou_threshold`` (``>`` under ``compat="detectron2"``):
    a difficult best GT makes the detection ignored; otherwise it is a TP if it is
    the highest-ranked detection with that best GT, else an FP (duplicate, no
    fallback to another GT). Below the threshold or with no GT: FP.

    ``file_order_ties=True`` ranks equal scores by ``det.order`` under either compat
    (the streaming metric's rule); the threshold rule still follows ``compat``.

    Returns
    -------
    VocMatches
        Records in ranked order (class, then rank).
    """
    K = gt.num_classes
    order, tie_key = voc_order(det, "devkit" if file_order_ties else compat)
    outcome = _voc_outcomes_compiled(gt, det, order, iou_threshold, compat)
    if outcome is None:
        outcome = _voc_outcomes(gt, det, order, iou_threshold, compat)
    num_gt = np.bincount(gt.class_idx[~gt.difficult], minlength=K).astype(np.int64)
    num_difficult = np.bincount(gt.class_idx[gt.difficult], minlength=K).astype(np.int64)
    # records in ranked order: accumulation finds them sorted
    return VocMatches(class_idx=det.class_idx[order], scores=det.scores[order],
                      tie_key=tie_key[order], outcome=outcome, num_gt=num_gt,
                      num_difficult=num_difficult)


def _voc_outcomes(gt: GroundTruth, det: Detections, order: np.ndarray, iou_threshold: float,
                  compat: str) -> np.ndarray:
    """:func:`match_voc`'s outcomes (int8: TP, FP, IGNORED) in ranked order, with numpy:
    the best GT of every detection from its candidate pairs, then the first claim of
    each GT in ranked order."""
    K = gt.num_classes
    n = len(det)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    det_group = det.image_idx * K + det.class_idx
    gt_group = gt.image_idx * K + gt.class_idx
    pair_det, pair_gt, _ = candidate_pairs(det_group, gt_group)
    ov = iou_voc(det.boxes[pair_det], gt.boxes[pair_gt])

    best_iou = np.full(n, -np.inf)
    best_gt = np.full(n, -1, dtype=np.int64)
    if pair_det.shape[0]:
        starts = segment_starts(pair_det)
        dets = pair_det[starts]
        seg_max = np.maximum.reduceat(ov, starts)
        is_max = ov == np.repeat(seg_max, np.diff(np.append(starts, ov.shape[0])))
        pos = np.where(is_max, np.arange(ov.shape[0]), ov.shape[0])
        first = np.minimum.reduceat(pos, starts)  # first GT in file order wins ties
        best_iou[dets] = seg_max
        found = np.isfinite(seg_max)  # -inf: no pair overlaps
        best_gt[dets[found]] = pair_gt[first[found]]

    hit = best_iou >= iou_threshold if compat == "devkit" else best_iou > iou_threshold
    hit &= best_gt >= 0
    outcome = np.zeros(n, dtype=np.int8)
    hit_difficult = hit.copy()
    hit_difficult[hit] = gt.difficult[best_gt[hit]]
    outcome[hit_difficult] = IGNORED
    claim = np.flatnonzero(hit & ~hit_difficult)
    if claim.shape[0]:
        # the first claim of each GT in ranked order is the TP; later claims are FP
        by_gt = claim[np.lexsort((rank[claim], best_gt[claim]))]
        first_claim = np.ones(by_gt.shape[0], dtype=bool)
        first_claim[1:] = best_gt[by_gt[1:]] != best_gt[by_gt[:-1]]
        outcome[by_gt[first_claim]] = TP

    return outcome[order]


# ---------------------------------------------------------------------------- COCO

@dataclass(frozen=True)
class CocoMatches:
    """Per-detection COCO match records; concatenable across shards.

    Only detections within the ``max(max_dets)`` highest-scored of their
    (image, class) group are kept, as pycocotools does.

    Attributes
    ----------
    class_idx : ndarray of int64, shape (N,)
    scores : ndarray of float64, shape (N,)
    image_key : ndarray of int64, shape (N,)
        Sort key of the detection's image: images are accumulated in ascending
        image-id order.
    rank : ndarray of int64, shape (N,)
        Position within its (image, class) group in score order (ties: file order).
    matched : ndarray of bool, shape (N, A, T)
        Matched at area range ``a`` and IoU threshold ``t``.
    ignored : ndarray of bool, shape (N, A, T)
        Matched to an ignored GT, or unmatched and outside the area range.
    num_gt : ndarray of int64, shape (K, A)
        Non-ignored GT per class and area range (``npig``).
    """

    class_idx: np.ndarray
    scores: np.ndarray
    image_key: np.ndarray
    rank: np.ndarray
    matched: np.ndarray
    ignored: np.ndarray
    num_gt: np.ndarray

    @staticmethod
    def concatenate(parts: Sequence["CocoMatches"]) -> "CocoMatches":
        """Merge shards that share class tables and image keys."""
        return concatenate_records(parts)


_NOT_IGNORED_BONUS = np.int64(1) << np.int64(62)  # above every IoU's float64 bit pattern


def match_coco(gt: GroundTruth, det: Detections, iou_thresholds: np.ndarray,
               area_ranges: np.ndarray, max_det: int,
               image_key: Optional[np.ndarray] = None, *,
               pair_iou: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None,
               det_area: Optional[np.ndarray] = None,
               gt_ignore: Optional[np.ndarray] = None) -> CocoMatches:
    """Match detections to ground truth with pycocotools' ``evaluateImg`` rules.

    Parameters
    ----------
    gt, det : GroundTruth, Detections
        ``box_format="xywh"``; ``gt.area`` is the annotation's ``area`` field.
    iou_thresholds : ndarray of float64, shape (T,)
    area_ranges : ndarray of float64, shape (A, 2)
        Inclusive ``[lo, hi]``: a GT is ignored if crowd or ``area < lo or area > hi``.
    max_det : int
        Detections kept per (image, class) group, highest scores first.
    image_key : ndarray of int64, shape (I,), optional
        Accumulation order of the images; default ascending ``gt.image_ids``.
    pair_iou : callable, optional
        ``pair_iou(det_rows, gt_rows) -> iou`` for candidate pairs (rows of ``det`` and
        ``gt`` in the same image and class): mask IoU (segm) or OKS (keypoints). Default:
        the box IoU (and the compiled walk).
    det_area : ndarray of float64, shape (N,), optional
        The detections' ``area`` for the area-range test; default the box's ``w * h``.
    gt_ignore : ndarray of bool, shape (G,), optional
        Ground truth ignored in every area range (default ``gt.crowd``; keypoints add
        objects without labelled keypoints). Crowd regions stay re-matchable either way.

    Notes
    -----
    For each threshold ``t`` and each detection in score order, the match is the
    available GT (not yet matched at ``t``, or crowd) with ``iou >= min(t, 1-1e-10)``
    and the highest IoU, non-ignored GT first; among equal IoUs the later GT in
    file order wins. The walk is sequential within a group only, so the loop runs
    over detection rank with every group at once.
    """
    K = gt.num_classes
    A, T = area_ranges.shape[0], iou_thresholds.shape[0]
    if image_key is None:
        image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
    # group = (image key, class); any consistent key works for matching, this one
    # also leaves the records one cheap class sort away from accumulation order
    det_group = image_key[det.image_idx] * K + det.class_idx
    # rows are in file order: a stable sort by score, then by group, ranks each group
    by_score = ranked_order(det_group, det.scores)
    rank = group_rank(det_group, by_score)
    kept = by_score[rank[by_score] < max_det]  # (image key, class, rank) order
    # records in (class, image key, rank) order; matching steps through rank order
    rec = kept[np.argsort(small_int(det.class_idx[kept]), kind="stable")]
    n = rec.shape[0]
    rec_rank = rank[rec]
    gt_group = image_key[gt.image_idx] * K + gt.class_idx
    lo, hi = area_ranges[:, 0], area_ranges[:, 1]
    base_ignore = gt.crowd if gt_ignore is None else gt_ignore
    gt_ignored = base_ignore[:, None] | (gt.area[:, None] < lo) | (gt.area[:, None] > hi)  # (G, A)
    rec_boxes = np.ascontiguousarray(det.boxes[rec], dtype=np.float64)
    if det_area is None:
        with np.errstate(over="ignore"):  # boxes near 1e308: area inf, no warning
            rec_area = rec_boxes[:, 2] * rec_boxes[:, 3]
    else:
        rec_area = np.asarray(det_area, dtype=np.float64)[rec]
    det_outside = (rec_area[:, None] < lo) | (rec_area[:, None] > hi)  # (N, A)
    AT = A * T
    thr = np.minimum(iou_thresholds, 1 - 1e-10)
    compiled = None
    if (pair_iou is None and _kernels is not None and n and len(gt) and K
            and int(image_key.min()) >= 0):
        compiled = _kernels.coco_match(
            rec_group=np.ascontiguousarray(det_group[rec], dtype=np.int64),
            rec_boxes=rec_boxes,
            gt_group=np.ascontiguousarray(gt_group, dtype=np.int64),
            gt_boxes=np.ascontiguousarray(gt.boxes, dtype=np.float64),
            gt_crowd=np.ascontiguousarray(gt.crowd, dtype=bool).view(np.uint8),
            gt_ignored=np.ascontiguousarray(gt_ignored, dtype=bool).view(np.uint8),
            thresholds=np.ascontiguousarray(thr, dtype=np.float64),
            num_groups=int(image_key.max()) * K + K)
    if compiled is not None:  # the same walk, group by group, in C
        matched = np.frombuffer(compiled[0], dtype=bool).reshape(n, AT)
        ignored = np.frombuffer(compiled[1], dtype=bool).reshape(n, AT)
    else:
        matched, ignored = _coco_walk(det, gt, rec, rec_rank, det_group, gt_group,
                                      gt_ignored, thr, A, T, pair_iou)
    matched = matched.reshape(n, A, T)
    ignored = ignored.reshape(n, A, T) | (~matched & det_outside[:, :, None])
    gt_ignored = gt_ignored.T

    num_gt = np.zeros((K, A), dtype=np.int64)
    for a in range(A):
        num_gt[:, a] = np.bincount(gt.class_idx[~gt_ignored[a]], minlength=K)
    return CocoMatches(class_idx=det.class_idx[rec], scores=det.scores[rec],
                       image_key=image_key[det.image_idx[rec]], rank=rec_rank,
                       matched=matched, ignored=ignored, num_gt=num_gt)


def _coco_walk(det: Detections, gt: GroundTruth, rec: np.ndarray, rec_rank: np.ndarray,
               det_group: np.ndarray, gt_group: np.ndarray, gt_ignored: np.ndarray,
               thr: np.ndarray, A: int, T: int, pair_iou=None) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`match_coco`'s walk with numpy: ``(matched, matched_ignored)``, each
    ``(N, A*T)`` bool over the records ``rec``, stepping through rank with every
    (image, class) group at once."""
    n = rec.shape[0]
    loop = np.argsort(small_int(rec_rank), kind="stable")  # record positions, rank-major
    pair_det, pair_gt, _ = candidate_pairs(det_group[rec[loop]], gt_group)
    lowest = float(thr.min()) if T else 1.0
    if pair_iou is None:
        pair_det, pair_gt, iou = coco_pair_ious(det.boxes[rec[loop]], gt.boxes, gt.crowd,
                                                pair_det, pair_gt, lowest)
    else:
        iou = np.asarray(pair_iou(rec[loop][pair_det], pair_gt), dtype=np.float64)
        keep = iou >= lowest
        pair_det, pair_gt, iou = pair_det[keep], pair_gt[keep], iou[keep]
    AT = A * T
    thr = np.tile(thr, A)  # (AT,), index a * T + t
    gt_taken = np.zeros((len(gt), AT), dtype=bool)
    matched = np.zeros((n, AT), dtype=bool)
    ignored = np.zeros((n, AT), dtype=bool)
    if pair_det.shape[0]:
        pair_rank = rec_rank[loop[pair_det]]
        bounds = np.searchsorted(pair_rank, np.arange(pair_rank[-1] + 2))
        # key: IoU's bit pattern (monotonic for IoU >= 0), plus a bonus above every IoU
        # for a non-ignored GT, so one maximum picks "non-ignored first, then best IoU"
        ign_rep = np.repeat(gt_ignored, T, axis=1)  # (G, AT)
        base_key = np.where(ign_rep[pair_gt], 0, _NOT_IGNORED_BONUS) + iou.view(np.int64)[:, None]
        above = iou[:, None] >= thr[None, :]  # (P, AT)
        crowd = gt.crowd[pair_gt]
        for r in range(len(bounds) - 1):
            s, e = bounds[r], bounds[r + 1]
            if s == e:
                continue
            pg, pd = pair_gt[s:e], pair_det[s:e]
            elig = above[s:e] & (~gt_taken[pg] | crowd[s:e, None])
            key = np.where(elig, base_key[s:e], -1)  # (P, AT)
            starts = segment_starts(pd)
            best = np.maximum.reduceat(key, starts, axis=0)  # (S, AT)
            lengths = np.diff(np.append(starts, e - s))
            is_best = (key == np.repeat(best, lengths, axis=0)) & (key >= 0)
            rows = np.where(is_best, np.arange(e - s)[:, None], -1)
            last = np.maximum.reduceat(rows, starts, axis=0)  # the later GT wins ties
            seg, at = np.nonzero(last >= 0)
            gt_taken[pg[last[seg, at]], at] = True
            d = loop[pd[starts[seg]]]
            matched[d, at] = True
            ignored[d, at] = best[seg, at] < _NOT_IGNORED_BONUS
    return matched, ignored
