"""Image-level bootstrap of COCO figures from match records (issue 16, partial).

Replicate ``b`` resamples images with replacement: the draws are row ``b`` of
``numpy.random.default_rng(seed).integers(0, I, size=(samples, I))``, indices into
the image keys (ascending image ids). Each draw is a distinct image numbered by its
draw position, so tied scores across images are ordered by draw position, then by
rank within the image -- exactly pycocotools on the explicitly resampled dataset
whose image ``j`` is the ``j``-th draw.

Matching is per image, so it is never re-run: each replicate's records are the
original records of the drawn images, relabelled with their draw position, and
accumulated by :func:`deteval.ap.coco_accumulate`. Memory is one replicate's
records at a time; it does not grow with ``samples``.
"""
from dataclasses import replace
from typing import Dict, Iterator, Optional, Tuple

import numpy as np

from .errors import InputError, expected
from .match import CocoMatches


def check_bootstrap_params(samples, confidence) -> None:
    """Raise :class:`InputError` unless ``samples >= 1`` (int) and ``0 < confidence < 1``."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise InputError(expected("bootstrap", "an integer >= 1", samples))
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise InputError(expected("confidence", "a number in the open interval (0, 1)",
                                  confidence))


def replicate_draws(num_images: int, samples: int, seed: int = 0) -> np.ndarray:
    """Draws of every replicate, shape ``(samples, num_images)``, int64.

    ``numpy.random.default_rng(seed).integers(0, I, size=(samples, I))``.
    """
    return np.random.default_rng(seed).integers(0, num_images, size=(samples, num_images))


def coco_gt_counts(gt, area_ranges: np.ndarray, image_key: np.ndarray,
                   gt_ignore: Optional[np.ndarray] = None) -> np.ndarray:
    """Non-ignored ground truth per image key, class and area range, shape ``(I, K, A)``.

    The per-image split of :attr:`CocoMatches.num_gt` (same ignore rule as
    :func:`deteval.match.match_coco`).
    """
    I, K, A = gt.num_images, gt.num_classes, area_ranges.shape[0]
    base = gt.crowd if gt_ignore is None else gt_ignore
    lo, hi = area_ranges[:, 0], area_ranges[:, 1]
    counted = ~(base[:, None] | (gt.area[:, None] < lo) | (gt.area[:, None] > hi))  # (G, A)
    cell = image_key[gt.image_idx] * K + gt.class_idx
    out = np.zeros((I * K, A), dtype=np.int64)
    for a in range(A):
        out[:, a] = np.bincount(cell[counted[:, a]], minlength=I * K)
    return out.reshape(I, K, A)


def resample_coco_matches(matches: CocoMatches, gt_counts: np.ndarray,
                          draws: np.ndarray) -> CocoMatches:
    """The records of the resampled dataset whose image ``j`` is image key ``draws[j]``.

    Parameters
    ----------
    matches : CocoMatches
    gt_counts : ndarray of int64, shape (I, K, A)
        From :func:`coco_gt_counts`.
    draws : ndarray of int64, shape (I,)
        Image keys drawn, in draw order.

    Returns
    -------
    CocoMatches
        Records ordered by (draw position, class, rank) with ``image_key`` the draw
        position; ``num_gt = gt_counts[draws].sum(0)``.
    """
    I = gt_counts.shape[0]
    by_image = np.lexsort((matches.rank, matches.class_idx, matches.image_key))
    start = np.searchsorted(matches.image_key[by_image], np.arange(I + 1))
    n_per = (start[1:] - start[:-1])[draws]
    total = int(n_per.sum())
    pos = np.repeat(np.arange(draws.shape[0]), n_per)
    offset = np.arange(total) - np.repeat(np.cumsum(n_per) - n_per, n_per)
    idx = by_image[start[:-1][draws][pos] + offset]
    return replace(matches, class_idx=matches.class_idx[idx], scores=matches.scores[idx],
                   image_key=pos.astype(np.int64), rank=matches.rank[idx],
                   matched=matches.matched[idx], ignored=matches.ignored[idx],
                   num_gt=gt_counts[draws].sum(axis=0))


def iter_coco_replicates(matches: CocoMatches, gt_counts: np.ndarray, samples: int,
                         seed: int = 0) -> Iterator[CocoMatches]:
    """Yield each replicate's records, one at a time (see :func:`resample_coco_matches`)."""
    for draws in replicate_draws(gt_counts.shape[0], samples, seed):
        yield resample_coco_matches(matches, gt_counts, draws)


def percentile_interval(values, confidence: float = 0.95
                        ) -> Tuple[Optional[Tuple[float, float]], int]:
    """``numpy.percentile`` at ``(1-c)/2`` and ``(1+c)/2`` of the defined values.

    Returns the interval (``None`` if no value is defined) and the number of null
    (None/NaN) replicates left out.
    """
    v = np.array([np.nan if x is None else float(x) for x in values], dtype=np.float64)
    ok = ~np.isnan(v)
    if not ok.any():
        return None, int((~ok).sum())
    q = np.percentile(v[ok], [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return (float(q[0]), float(q[1])), int((~ok).sum())


def coco_bootstrap(matches: CocoMatches, gt_counts: np.ndarray, summarize,
                   samples: int = 1000, seed: int = 0, confidence: float = 0.95) -> Dict:
    """The report's ``uncertainty`` section for named COCO figures.

    ``summarize(matches) -> dict name -> float or None`` computes one replicate's
    figures (e.g. ``summarize_coco(...).stats``).
    """
    check_bootstrap_params(samples, confidence)
    replicates: Dict[str, list] = {}
    for rep in iter_coco_replicates(matches, gt_counts, samples, seed):
        for name, value in summarize(rep).items():
            replicates.setdefault(name, []).append(value)
    intervals, nulls = {}, {}
    for name, vals in replicates.items():
        iv, n_null = percentile_interval(vals, confidence)
        intervals[name] = None if iv is None else list(iv)
        if n_null:
            nulls[name] = n_null
    return {"method": "image bootstrap", "samples": samples, "seed": seed,
            "confidence": confidence, "intervals": intervals, "null_replicates": nulls,
            "replicates": replicates}
