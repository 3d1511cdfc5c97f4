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

from ._native import kernels as _kernels

__all__ = ["COCO_PERSON_SIGMAS", "oks_pairs", "oks_pairs_reference", "numpy_sum_rows"]

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
    K = variances.shape[0]
    if _kernels is not None and K <= _PAIRWISE_BLOCK:
        # the exponents in one compiled pass (the same IEEE operations as below); np.exp
        # and numpy's summation order stay numpy's
        c64 = np.ascontiguousarray
        neg, counts = _kernels.oks_terms(
            det_x=c64(det_keypoints[:, :, 0], dtype=np.float64),
            det_y=c64(det_keypoints[:, :, 1], dtype=np.float64),
            gt_x=c64(gt_keypoints[:, :, 0], dtype=np.float64),
            gt_y=c64(gt_keypoints[:, :, 1], dtype=np.float64),
            gt_visible=c64(gt_keypoints[:, :, 2] > 0).view(np.uint8),
            gt_box=c64(gt_boxes_xywh, dtype=np.float64),
            gt_area_eps=c64(gt_area + np.spacing(1), dtype=np.float64),
            pair_det=c64(pair_det, dtype=np.int64), pair_gt=c64(pair_gt, dtype=np.int64),
            variances=c64(variances, dtype=np.float64))
        terms = np.exp(np.frombuffer(neg, dtype=np.float64).reshape(P, K))
        counts = np.frombuffer(counts, dtype=np.int64)
        return numpy_sum_rows(terms, counts) / counts
    return oks_pairs_reference(det_keypoints, gt_keypoints, gt_boxes_xywh, gt_area, pair_det,
                               pair_gt, sigmas)


def oks_pairs_reference(det_keypoints, gt_keypoints, gt_boxes_xywh, gt_area, pair_det,
                        pair_gt, sigmas) -> np.ndarray:
    """:func:`oks_pairs` in numpy alone (the reference of the compiled exponents)."""
    P = pair_det.shape[0]
    out = np.zeros(P, dtype=np.float64)
    if P == 0:
        return out
    variances = (sigmas * 2) ** 2
    # contiguous (P, K) planes: one gather per coordinate, no strided arithmetic
    xd = np.ascontiguousarray(det_keypoints[:, :, 0])[pair_det]
    yd = np.ascontiguousarray(det_keypoints[:, :, 1])[pair_det]
    gt_labelled = gt_keypoints[:, :, 2] > 0
    k1_gt = np.count_nonzero(gt_labelled, axis=1)
    labelled = gt_labelled[pair_gt]
    k1 = k1_gt[pair_gt]
    dx = xd - np.ascontiguousarray(gt_keypoints[:, :, 0])[pair_gt]
    dy = yd - np.ascontiguousarray(gt_keypoints[:, :, 1])[pair_gt]
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
    # e = (dx**2 + dy**2) / variances / area / 2, in place (x**2 is x*x in numpy)
    e = np.multiply(dx, dx, out=dx)
    e += np.multiply(dy, dy, out=dy)
    e /= variances
    e /= area
    e /= 2
    np.negative(e, out=e)
    terms = np.exp(e, out=e)
    counts = np.count_nonzero(labelled, axis=1)
    # each pair's labelled terms, left-aligned in keypoint order, then summed as numpy's
    # np.sum sums them (pycocotools sums the labelled terms of one pair with np.sum)
    left = np.argsort(~labelled, axis=1, kind="stable")
    compact = np.take_along_axis(terms, left, axis=1)
    if terms.shape[1] <= _PAIRWISE_BLOCK:
        out[:] = numpy_sum_rows(compact, counts) / counts
    else:  # rows longer than numpy's block: one row-wise np.sum per distinct length
        for c in np.unique(counts):
            rows = np.flatnonzero(counts == c)
            out[rows] = np.ascontiguousarray(compact[rows, :c]).sum(axis=1) / c
    return out


_PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE: up to it, a sum is one unrolled block


def numpy_sum_rows(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``np.sum(a[p, :n[p]])`` for every row ``p``, bit for bit, vectorised over rows.

    numpy adds ``n < 8`` numbers left to right; up to 128 numbers it keeps eight running
    sums ``r[j] = a[j] + a[j + 8] + ...`` over the largest multiple of 8, combines them as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` and adds the rest left to right
    (its ``pairwise_sum``). Rows must have at most 128 entries.

    Parameters
    ----------
    a : ndarray of float64, shape (P, W)
    n : ndarray of int64, shape (P,)
        Entries of each row to add, ``1 <= n <= W <= 128``.
    """
    P, W = a.shape
    res = np.zeros(P)
    small = n < 8
    for j in range(min(W, 7)):
        res = np.where(small & (j < n), res + a[:, j], res)
    big = ~small
    if big.any():
        r = [a[:, j].copy() if j < W else np.zeros(P) for j in range(8)]
        full = n - n % 8
        i = 8
        while i + 8 <= W:
            m = big & (i + 8 <= full)
            if not m.any():
                break
            for j in range(8):
                r[j] = np.where(m, r[j] + a[:, i + j], r[j])
            i += 8
        acc = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(8, W):
            m = big & (i >= full) & (i < n)
            acc = np.where(m, acc + a[:, i], acc)
        res = np.where(big, acc, res)
    return res
