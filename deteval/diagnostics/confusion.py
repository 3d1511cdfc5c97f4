"""Detection confusion matrix, exactly as supervision's ``ConfusionMatrix.from_tensors``.

Rows are ground-truth classes, columns predicted classes, the last row and column the
background (``matrix[target_class, predicted_class]``, supervision's own orientation). The
rules (``/shared/docs/diagnostics.md`` section B), per image:

1. detections with ``score >= conf_threshold`` (doubles) are kept, no per-image cap;
2. IoU of every (target, kept detection) pair from the corners in double,
   ``inter / (area_t + area_d - inter)`` (0 when the union is not positive), then rounded
   to float32 (supervision's ``box_iou_batch`` returns float32);
3. candidates: pairs, any classes, with float32 IoU ``> iou_threshold``, the threshold
   itself compared in float32 (numpy 2 casts a Python float to the array's float32);
4. greedy over the candidates ordered by (same class first, float32 IoU descending,
   target index, detection index): a pair is taken when neither side is taken yet;
5. untaken targets count as missed (column K), untaken kept detections as false
   detections (row K).

The greedy is sequential per image; here it runs for every image at once in rounds: a
candidate that comes first (in that order) among the remaining candidates of its target
*and* of its detection is taken by the sequential greedy too (nothing before it can take
either side), so every round takes all such pairs, then drops the pairs touching a taken
target or detection. Each round takes at least the first remaining pair of every image;
in practice a handful of rounds finish, each a few array passes over the candidates.

References
----------
.. [1] supervision 0.31, ``supervision/metrics/detection.py``:
   ``ConfusionMatrix.from_tensors``, ``evaluate_detection_batch``,
   ``_confusion_matrix_from_iou``; ``supervision/detection/utils/iou_and_nms.py``:
   ``box_iou_batch``. https://github.com/roboflow/supervision
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from ..errors import InputError, expected
from ..match import candidate_pairs
from .options import DEFAULT_CONF_THRESHOLD, DEFAULT_IOU_THRESHOLD

__all__ = ["ConfusionResult", "confusion_matrix", "check_confusion_thresholds",
           "DEFAULT_IOU_THRESHOLD", "DEFAULT_CONF_THRESHOLD"]


@dataclass(frozen=True)
class ConfusionResult:
    """A confusion matrix with its parameters.

    Attributes
    ----------
    iou_threshold, conf_threshold : float
    classes : list of str, length K + 1
        The class names in class order, then ``"background"``.
    matrix : ndarray of int64, shape (K + 1, K + 1)
        ``matrix[i, j]``: ground-truth class ``i`` (row) predicted as class ``j`` (column);
        index K is the background.
    """

    iou_threshold: float
    conf_threshold: float
    classes: List[str]
    matrix: np.ndarray

    def to_dict(self) -> dict:
        return {"iou_threshold": float(self.iou_threshold),
                "conf_threshold": float(self.conf_threshold),
                "classes": list(self.classes),
                "matrix": [[int(v) for v in row] for row in self.matrix]}


def check_confusion_thresholds(iou_threshold, conf_threshold) -> tuple:
    """The thresholds as floats: IoU in (0, 1], confidence in [0, 1]; else InputError."""
    try:
        iou = float(iou_threshold)
    except (TypeError, ValueError):
        iou = float("nan")
    if not (0.0 < iou <= 1.0):
        raise InputError(expected("--confusion-iou", "a number in (0, 1]", iou_threshold))
    try:
        conf = float(conf_threshold)
    except (TypeError, ValueError):
        conf = float("nan")
    if not (0.0 <= conf <= 1.0):
        raise InputError(expected("--confusion-conf", "a number in [0, 1]", conf_threshold))
    return iou, conf


def supervision_iou(target_xyxy: np.ndarray, det_xyxy: np.ndarray) -> np.ndarray:
    """IoU of paired boxes as supervision's ``box_iou_batch``: double, then float32.

    Parameters
    ----------
    target_xyxy, det_xyxy : ndarray of float64, shape (P, 4)
        Corners ``[x1, y1, x2, y2]``.

    Returns
    -------
    ndarray of float32, shape (P,)
        ``inter / (area_t + area_d - inter)``, with ``inter = max(0, min(x2) - max(x1)) *
        max(0, min(y2) - max(y1))`` and ``area = (x2 - x1)(y2 - y1)``; 0 where the union is
        not positive.
    """
    t, d = target_xyxy, det_xyxy
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        iw = np.minimum(t[:, 2], d[:, 2]) - np.maximum(t[:, 0], d[:, 0])
        ih = np.minimum(t[:, 3], d[:, 3]) - np.maximum(t[:, 1], d[:, 1])
        np.clip(iw, 0.0, None, out=iw)
        np.clip(ih, 0.0, None, out=ih)
        inter = iw * ih
        area_t = (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])
        area_d = (d[:, 2] - d[:, 0]) * (d[:, 3] - d[:, 1])
        union = area_t + area_d - inter
        positive = union > 0
        # the double quotient rounded to float32, as np.divide(..., out=float32) does
        iou = np.where(positive, inter / np.where(positive, union, 1.0), 0.0)
    return iou.astype(np.float32)


def _overlapping_pairs(t_xyxy, d_xyxy, pair_gt, pair_det):
    """The pairs whose boxes overlap horizontally (``min(x2) - max(x1) > 0``), column by
    column: the only ones whose IoU can exceed a positive threshold."""
    tx1, tx2 = np.ascontiguousarray(t_xyxy[:, 0]), np.ascontiguousarray(t_xyxy[:, 2])
    dx1, dx2 = np.ascontiguousarray(d_xyxy[:, 0]), np.ascontiguousarray(d_xyxy[:, 2])
    iw = np.minimum(tx2[pair_gt], dx2[pair_det])
    iw -= np.maximum(tx1[pair_gt], dx1[pair_det])
    keep = iw > 0
    return pair_gt[keep], pair_det[keep]


def confusion_matrix(target_image: np.ndarray, target_class: np.ndarray,
                     target_xyxy: np.ndarray, det_image: np.ndarray, det_class: np.ndarray,
                     det_xyxy: np.ndarray, det_scores: np.ndarray, num_classes: int,
                     iou_threshold: float = DEFAULT_IOU_THRESHOLD,
                     conf_threshold: float = DEFAULT_CONF_THRESHOLD) -> np.ndarray:
    """supervision's confusion matrix over every image at once.

    Parameters
    ----------
    target_image, target_class : ndarray of int64, shape (G,)
        Image and class (``0..K-1``) of every target, rows in file order (the target index
        within an image is its rank among the image's rows).
    target_xyxy : ndarray of float64, shape (G, 4)
    det_image, det_class : ndarray of int64, shape (N,)
        Detections, rows in file order likewise.
    det_xyxy : ndarray of float64, shape (N, 4)
    det_scores : ndarray of float64, shape (N,)
    num_classes : int
        K.
    iou_threshold, conf_threshold : float

    Returns
    -------
    ndarray of int64, shape (K + 1, K + 1)
        ``matrix[target class, predicted class]``; index K is the background.
    """
    K = int(num_classes)
    kept = np.flatnonzero(det_scores >= conf_threshold)
    d_img, d_cls, d_box = det_image[kept], det_class[kept], det_xyxy[kept]
    G, N = target_image.shape[0], kept.shape[0]
    pair_det, pair_gt, _ = candidate_pairs(d_img, target_image)
    # IoU > threshold > 0 needs a positive intersection: drop the others cheaply first
    pair_gt, pair_det = _overlapping_pairs(target_xyxy, d_box, pair_gt, pair_det)
    iou = supervision_iou(target_xyxy[pair_gt], d_box[pair_det])
    # supervision compares the float32 IoU with a Python float: numpy 2 compares in float32
    cand = iou > np.float32(iou_threshold)
    pair_det, pair_gt, iou = pair_det[cand], pair_gt[cand], iou[cand]
    same = d_cls[pair_det] == target_class[pair_gt]
    # per image: same class first, IoU descending, target row, detection row
    order = np.lexsort((pair_det, pair_gt, -iou, ~same, target_image[pair_gt]))
    pt, pd = pair_gt[order], pair_det[order]
    t_taken = np.zeros(G, dtype=bool)
    d_taken = np.zeros(N, dtype=bool)
    take_t: list = []
    take_d: list = []
    pos = np.arange(pt.shape[0], dtype=np.int64)
    while pt.shape[0]:
        first_t = np.full(G, pt.shape[0], dtype=np.int64)
        first_d = np.full(N, pt.shape[0], dtype=np.int64)
        np.minimum.at(first_t, pt, pos)
        np.minimum.at(first_d, pd, pos)
        dominant = (first_t[pt] == pos) & (first_d[pd] == pos)
        tt, dd = pt[dominant], pd[dominant]
        take_t.append(tt)
        take_d.append(dd)
        t_taken[tt] = True
        d_taken[dd] = True
        rest = ~(t_taken[pt] | d_taken[pd])
        pt, pd = pt[rest], pd[rest]
        pos = np.arange(pt.shape[0], dtype=np.int64)
    tt = np.concatenate(take_t) if take_t else np.zeros(0, dtype=np.int64)
    dd = np.concatenate(take_d) if take_d else np.zeros(0, dtype=np.int64)
    W = K + 1
    cells = np.concatenate([target_class[tt] * W + d_cls[dd],
                            target_class[~t_taken] * W + K,
                            K * W + d_cls[~d_taken]])
    return np.bincount(cells, minlength=W * W).reshape(W, W).astype(np.int64)


def coco_confusion(gt, det, class_names: Sequence[str],
                   iou_threshold: float = DEFAULT_IOU_THRESHOLD,
                   conf_threshold: float = DEFAULT_CONF_THRESHOLD) -> ConfusionResult:
    """:func:`confusion_matrix` of COCO tables (``xywh``): targets are the non-crowd ground
    truth ``[x, y, x + w, y + h]``, detections every result, both in file order."""
    t = np.flatnonzero(~gt.crowd)
    return _result(gt.image_idx[t], gt.class_idx[t], _corners(gt.boxes[t]), det.image_idx,
                   det.class_idx, _corners(det.boxes), det.scores, det.order, class_names,
                   iou_threshold, conf_threshold)


def voc_confusion(gt, det, class_names: Sequence[str],
                  iou_threshold: float = DEFAULT_IOU_THRESHOLD,
                  conf_threshold: float = DEFAULT_CONF_THRESHOLD) -> ConfusionResult:
    """:func:`confusion_matrix` of VOC tables: targets are the non-difficult objects, boxes
    as written (IoU without the devkit's +1 pixel), detections in file order."""
    t = np.flatnonzero(~gt.difficult)
    return _result(gt.image_idx[t], gt.class_idx[t], gt.boxes[t], det.image_idx,
                   det.class_idx, det.boxes, det.scores, det.order, class_names,
                   iou_threshold, conf_threshold)


def _corners(xywh: np.ndarray) -> np.ndarray:
    return np.stack([xywh[:, 0], xywh[:, 1], xywh[:, 0] + xywh[:, 2],
                     xywh[:, 1] + xywh[:, 3]], axis=1) if xywh.shape[0] else np.zeros((0, 4))


def _result(t_img, t_cls, t_box, d_img, d_cls, d_box, d_score, d_order, class_names,
            iou_threshold, conf_threshold) -> ConfusionResult:
    rows = np.argsort(d_order, kind="stable")  # file order (the detection index)
    if not np.array_equal(rows, np.arange(rows.shape[0])):
        d_img, d_cls, d_box, d_score = d_img[rows], d_cls[rows], d_box[rows], d_score[rows]
    m = confusion_matrix(t_img, t_cls, t_box, d_img, d_cls, d_box, d_score, len(class_names),
                         iou_threshold, conf_threshold)
    return ConfusionResult(iou_threshold=float(iou_threshold),
                           conf_threshold=float(conf_threshold),
                           classes=[str(c) for c in class_names] + ["background"], matrix=m)
