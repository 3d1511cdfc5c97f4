"""Ranking: the orders in which detections are walked and accumulated.

Every order here is a permutation computed once per evaluation with sorts over whole
columns (no Python loop per (image, class) group): detections ranked by decreasing score
within a major key (class, or (image, class) group), with the tie-breaks the references
use: file order for pycocotools and the devkit (stable sorts), ``np.argsort(-score)`` for
py-faster-rcnn / detectron2 ``voc_eval``. The compiled ``_kernels.rank_order`` (radix
sorts) gives the same permutations as the numpy code, which stays the reference.

References
----------
.. [1] pycocotools ``cocoeval.py``: ``evaluateImg`` (``np.argsort(-score, kind='mergesort')``)
   and ``accumulate`` (the same, over the concatenated images).
.. [2] PASCAL VOC devkit ``VOCevaldet.m`` (``sort(-confidence)``, stable in MATLAB).
.. [3] py-faster-rcnn ``voc_eval.py`` (``np.argsort(-confidence)``, quicksort).
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from .tables import Detections

from ._native import kernels as _kernels  # None without it: the numpy code is the reference

__all__ = ["ranked_order", "stable_rank_order", "voc_order", "group_rank", "segment_starts",
           "small_int"]


def segment_starts(keys: np.ndarray) -> np.ndarray:
    """Start positions of runs of equal values in a sorted key array."""
    if keys.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.empty(keys.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    return np.flatnonzero(new)


def small_int(a: np.ndarray) -> np.ndarray:
    """The same integers in 16 bits when they fit (numpy radix-sorts those)."""
    if a.shape[0] and a.min() >= -(2 ** 15) and a.max() < 2 ** 15:
        return a.astype(np.int16)
    return a


def group_rank(group: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rank of each row within its group, rows ranked by ``order``.

    Parameters
    ----------
    group : ndarray of int64, shape (N,)
    order : ndarray of int64, shape (N,)
        A permutation of ``arange(N)`` that sorts rows by (group, ...).

    Returns
    -------
    ndarray of int64, shape (N,): 0 for the first row of each group in ``order``.
    """
    n = group.shape[0]
    rank = np.empty(n, dtype=np.int64)
    if n == 0:
        return rank
    g = group[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(g[1:], g[:-1], out=new[1:])
    start = np.flatnonzero(new)
    pos = np.arange(n, dtype=np.int64)
    rank[order] = pos - np.repeat(start, np.diff(np.append(start, n)))
    return rank


def ranked_order(major: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Permutation sorting rows by (major ascending, score descending), stably.

    Equal to ``np.lexsort((np.arange(n), -scores, major))``, computed as one sort
    of unique int64 keys ``(major * U + score rank) * n + row`` (``U`` distinct
    scores), which numpy sorts several times faster than a stable argsort.

    Parameters
    ----------
    major : ndarray of int64, shape (N,), values >= 0
    scores : ndarray of float64, shape (N,), no NaN

    Returns
    -------
    ndarray of int64, shape (N,)
    """
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if _kernels is not None:  # the same permutation by radix sorts
        return np.frombuffer(_kernels.rank_order(np.ascontiguousarray(major, dtype=np.int64),
                                                 np.ascontiguousarray(scores, dtype=np.float64),
                                                 None), dtype=np.int64)
    by_value = np.argsort(scores)  # any order among equal scores will do here
    ordered = scores[by_value]
    step = np.empty(n, dtype=np.int64)
    step[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=step[1:], casting="unsafe")
    level = np.cumsum(step)
    u = int(level[-1]) + 1
    span = int(major.max()) + 1
    if span * u * n >= 2 ** 62:  # keys would not fit: two stable sorts instead
        order = np.argsort(-scores, kind="stable")
        return order[np.argsort(major[order], kind="stable")]
    # the keys of rows by_value[0], by_value[1], ...; sorting makes their order moot
    key = major[by_value].astype(np.int64)
    key *= u
    key += (u - 1) - level  # the score's descending level: 0 for the highest score
    key *= n
    key += by_value
    key.sort()
    return key % n


def stable_rank_order(class_idx: np.ndarray, scores: np.ndarray, tie_key: np.ndarray
                      ) -> np.ndarray:
    """Permutation sorting rows by (class, -score, tie_key), like ``np.lexsort``.

    Rows already in that order (as :func:`match_voc` returns its records) are
    recognised in O(n); rows in tie-key order (as loaders produce them) need one
    :func:`ranked_order`.
    """
    n = scores.shape[0]
    if n:  # already ranked: nothing to sort
        c, sc, tk = class_idx, scores, tie_key
        same_c = c[1:] == c[:-1]
        same_s = same_c & (sc[1:] == sc[:-1])
        if bool(np.all((c[1:] > c[:-1]) | (same_c & (sc[1:] < sc[:-1]))
                       | (same_s & (tk[1:] > tk[:-1])))):
            return np.arange(n)
    if n and bool(np.all(tie_key[1:] > tie_key[:-1])):
        return ranked_order(class_idx, scores)
    if _kernels is not None:
        return np.frombuffer(_kernels.rank_order(
            np.ascontiguousarray(class_idx, dtype=np.int64),
            np.ascontiguousarray(scores, dtype=np.float64),
            np.ascontiguousarray(tie_key, dtype=np.int64)), dtype=np.int64)
    by_tie = np.argsort(tie_key, kind="stable")
    return by_tie[ranked_order(class_idx[by_tie], scores[by_tie])]


def voc_order(det: Detections, compat: str = "devkit") -> Tuple[np.ndarray, np.ndarray]:
    """Ranked order of the detections and the tie key that reproduces it.

    devkit: stable sort by decreasing score, ties in file order; the tie key is the
    file position (``det.order``), so records of several shards of the same files
    merge into the same order. detectron2: ``np.argsort(-confidence)`` (numpy's
    default sort) over each class's detections in file order, as py-faster-rcnn's
    ``voc_eval`` does; that order exists only for a whole file, and the tie key is
    the position in it.

    Returns
    -------
    order : ndarray of int64, shape (N,)
        Rows sorted by (class, rank).
    tie_key : ndarray of int64, shape (N,)
    """
    n = len(det)
    if compat == "devkit":
        return stable_rank_order(det.class_idx, det.scores, det.order), det.order.copy()
    # detectron2: one argsort per class over that class's file order (a loop over
    # classes, not over (image, class) groups)
    tie_key = np.empty(n, dtype=np.int64)
    by_class = np.lexsort((det.order, det.class_idx))
    cls_sorted = det.class_idx[by_class]
    bounds = np.searchsorted(cls_sorted, np.arange(cls_sorted.max() + 2 if n else 1))
    order = np.empty(n, dtype=np.int64)
    for k in range(len(bounds) - 1):
        rows = by_class[bounds[k]:bounds[k + 1]]
        if rows.shape[0]:
            ranked = rows[np.argsort(-det.scores[rows])]
            order[bounds[k]:bounds[k + 1]] = ranked
            tie_key[ranked] = bounds[k] + np.arange(rows.shape[0])
    return order, tie_key
