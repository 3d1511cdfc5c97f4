"""Keypoint geometry: object keypoint similarity (OKS) of candidate pairs, as pycocotools.

For a detection ``d`` and a ground-truth person ``g`` with ``k1`` labelled keypoints
(visibility ``v > 0``)::

    e_i = (dx_i^2 + dy_i^2) / (2 sigma_i)^2 / (area_g + spacing(1)) / 2
    OKS = sum(exp(-e_i) over the labelled i) / k1

with ``dx_i = xd_i - xg_i``. A ground truth with no labelled keypoint uses every keypoint,
and ``dx_i`` is then the distance from ``xd_i`` to the box ``[x - w, x + 2w]`` around the
ground truth's bbox (0 inside it), ``dy_i`` likewise. The sums are numpy's over each pair's
``k1`` terms in keypoint order, so the doubles are pycocotools'.

References
----------
.. [1] pycocotools ``cocoeval.py``: ``COCOeval.computeOks``; ``Params.setKpParams``
   (``kpt_oks_sigmas``). https://github.com/cocodataset/cocoapi
.. [2] COCO keypoint evaluation, https://cocodataset.org/#keypoints-eval
"""
from __future__ import annotations

import numpy as np

__all__ = ["COCO_PERSON_SIGMAS", "oks_pairs"]

#: pycocotools' ``kpt_oks_sigmas`` for the 17 COCO person keypoints.
COCO_PERSON_SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07,
                               1.07, .87, .87, .89, .89]) / 10.0


def oks_pairs(det_keypoints: np.ndarray, gt_keypoints: np.ndarray, gt_boxes_xywh: np.ndarray,
              gt_area: np.ndarray, pair_det: np.ndarray, pair_gt: np.ndarray,
              sigmas: np.ndarray) -> np.ndarray:
    """OKS of detection ``pair_det[p]`` with ground truth ``pair_gt[p]``.

    Parameters
    ----------
    det_keypoints : ndarray of float64, shape (N, K, 3)
        ``x, y, v`` per keypoint (``v`` unused for detections).
    gt_keypoints : ndarray of float64, shape (G, K, 3)
    gt_boxes_xywh : ndarray of float64, shape (G, 4)
    gt_area : ndarray of float64, shape (G,)
    pair_det, pair_gt : ndarray of int64, shape (P,)
    sigmas : ndarray of float64, shape (K,)

    Returns
    -------
    ndarray of float64, shape (P,)
    """
    P = pair_det.shape[0]
    out = np.zeros(P, dtype=np.float64)
    if P == 0:
        return out
    variances = (sigmas * 2) ** 2
    d = det_keypoints[pair_det]
    g = gt_keypoints[pair_gt]
    xd, yd = d[:, :, 0], d[:, :, 1]
    xg, yg, vg = g[:, :, 0], g[:, :, 1], g[:, :, 2]
    labelled = vg > 0
    k1 = np.count_nonzero(labelled, axis=1)
    dx = xd - xg
    dy = yd - yg
    none = k1 == 0
    if none.any():  # distances to the box around the ground truth's bbox
        bb = gt_boxes_xywh[pair_gt[none]]
        x0 = (bb[:, 0] - bb[:, 2])[:, None]
        x1 = (bb[:, 0] + bb[:, 2] * 2)[:, None]
        y0 = (bb[:, 1] - bb[:, 3])[:, None]
        y1 = (bb[:, 1] + bb[:, 3] * 2)[:, None]
        z = np.zeros_like(xd[none])
        dx[none] = np.maximum(z, x0 - xd[none]) + np.maximum(z, xd[none] - x1)
        dy[none] = np.maximum(z, y0 - yd[none]) + np.maximum(z, yd[none] - y1)
        labelled[none] = True
    area = gt_area[pair_gt][:, None] + np.spacing(1)
    e = (dx ** 2 + dy ** 2) / variances / area / 2
    terms = np.exp(-e)
    counts = np.count_nonzero(labelled, axis=1)
    # numpy's sum over each pair's own terms: pairs with the same count share one
    # row-wise sum (a row-wise sum of a contiguous array adds like a 1-D sum)
    for c in np.unique(counts):
        rows = np.flatnonzero(counts == c)
        compact = terms[rows][labelled[rows]].reshape(rows.shape[0], c)
        out[rows] = np.ascontiguousarray(compact).sum(axis=1) / c
    return out
