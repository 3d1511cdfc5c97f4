"""Image-level bootstrap of COCO and VOC figures from match records (issue 16).

Replicate ``b`` resamples images with replacement: the draws are row ``b`` of
``numpy.random.default_rng(seed).integers(0, I, size=(samples, I))``, indices into
the image keys (ascending image ids). Each draw is a distinct image numbered by its
draw position, so tied scores across images -- copies of one image included -- are
ordered by draw position, then by the order within the image (COCO: rank, the
image's stable score order; VOC: position in the detection files): exactly
pycocotools on the explicitly resampled dataset whose image ``j`` is the ``j``-th
draw (VOC: the devkit on files written in draw order).

Matching is per image, so it is never re-run. Two ways to get a replicate's figures
from the original records:

* the reference (:func:`resample_coco_matches`, :func:`resample_voc_matches`): the
  original records of the drawn images, relabelled with their draw position and
  accumulated by :func:`deteval.ap.coco_accumulate` / :func:`deteval.ap.summarize_voc`;
* the weighted path (:func:`coco_replicate_figures`, :func:`voc_replicate_figures`):
  records ranked once; a replicate's counts are cumulative sums of image weights
  (an image drawn ``k`` times has weight ``k``), and only runs of tied scores that mix
  true and false positives are expanded copy by copy in draw order (the compiled
  ``_kernels.boot_curves``). Memory: ``O(N + block * (I + cells))``, never
  ``samples x detections``.

References
----------
.. [1] B. Efron, R. Tibshirani, "An Introduction to the Bootstrap", 1993 (percentile
   intervals, ch. 13).
"""
from dataclasses import dataclass, replace
from typing import Dict, Iterator, Optional, Sequence, Tuple

import numpy as np

from ._native import kernels as _kernels  # None without it: the reference path runs
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


def percentile_interval(values, confidence: float = 0.95
                        ) -> Tuple[Optional[Tuple[float, float]], int]:
    """``numpy.percentile(defined, [100 * (1 - c) / 2, 100 * (1 + c) / 2])`` (linear
    interpolation) of the defined values.

    Returns the interval (``None`` if no value is defined) and the number of null
    (None/NaN) replicates left out.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        v = values.astype(np.float64, copy=False)
    else:
        v = np.array([np.nan if x is None else float(x) for x in values], dtype=np.float64)
    ok = ~np.isnan(v)
    if not ok.any():
        return None, int((~ok).sum())
    q = np.percentile(v[ok], [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return (float(q[0]), float(q[1])), int((~ok).sum())


# ----------------------------------------------------------------- weighted path

#: Replicates evaluated per call of the compiled kernel.
_BLOCK = 32


def iter_draw_blocks(num_images: int, samples: int, seed: int = 0, block: int = _BLOCK
                     ) -> Iterator[np.ndarray]:
    """The rows of :func:`replicate_draws`, ``block`` rows at a time.

    One generator drawing ``(block, I)`` after ``(block, I)`` gives the same rows as
    one ``(samples, I)`` call (tested), so memory stays ``O(block * I)``.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, samples, block):
        yield rng.integers(0, num_images, size=(min(block, samples - start), num_images))


@dataclass(frozen=True)
class RankedItems:
    """Match records ranked once for the weighted path (:func:`rank_items`).

    Attributes
    ----------
    image : ndarray of int32, shape (N,)
        Image key of each ranked record.
    mmin : ndarray of uint8, shape (N,)
        First max-dets index keeping the record (``rank < max_dets[m]``).
    flags : ndarray of uint8, shape (N,)
        Bit ``a``: false positive at every threshold in area range ``a``; bit 7: the
        outcomes vary with the threshold (row ``dyn`` of ``dyn_tp``/``dyn_fp``).
    dyn : ndarray of int32, shape (N,)
    dyn_tp, dyn_fp : ndarray of uint64, shape (D, A)
        Bit ``t``: true (false) positive at threshold ``t``.
    class_start : ndarray of int64, shape (K + 1,)
    block_start : ndarray of int64, shape (NB + 1,)
        Runs of equal score within a class.
    block_mixed : ndarray of uint8, shape (NB,)
        The run holds a true and a false positive at some (area, threshold): its order
        matters, so it is expanded in draw order.
    run_start : ndarray of int64, shape (NR + 1,)
        The image-runs (records of one image) of the mixed blocks, in ranked order.
    run_image : ndarray of int32, shape (NR,)
    """

    image: np.ndarray
    mmin: np.ndarray
    flags: np.ndarray
    dyn: np.ndarray
    dyn_tp: np.ndarray
    dyn_fp: np.ndarray
    class_start: np.ndarray
    block_start: np.ndarray
    block_mixed: np.ndarray
    run_start: np.ndarray
    run_image: np.ndarray


def _bits(x: np.ndarray) -> np.ndarray:
    """``(n, A, T)`` bool -> ``(n, A)`` uint64 with bit ``t`` = ``x[:, a, t]``."""
    T = x.shape[2]
    weights = np.left_shift(np.uint64(1), np.arange(T, dtype=np.uint64))
    return np.bitwise_or.reduce(np.where(x, weights, np.uint64(0)), axis=2) if T else \
        np.zeros(x.shape[:2], np.uint64)


def rank_items(class_idx: np.ndarray, scores: np.ndarray, image_key: np.ndarray,
               within: np.ndarray, tp: np.ndarray, fp: np.ndarray, mmin: np.ndarray,
               num_classes: int, order: Optional[np.ndarray] = None) -> RankedItems:
    """Rank records by (class, -score, image key, ``within``) and encode their outcomes.

    Parameters
    ----------
    class_idx, image_key, within : ndarray of int64, shape (N,)
    scores : ndarray of float64, shape (N,)
    tp, fp : ndarray of bool, shape (N, A, T)
        True / false positive at area range ``a`` and threshold ``t`` (neither: ignored).
    mmin : ndarray of uint8, shape (N,)
    order : ndarray of int64, shape (N,), optional
        That ranking when already known.
    """
    n, A, T = tp.shape
    if order is None:
        order = np.lexsort((within, image_key, -scores, class_idx))
    cls, sc = class_idx[order], scores[order]
    tp, fp = tp[order], fp[order]
    dynamic = tp.any(axis=(1, 2)) | (fp.any(axis=2) != fp.all(axis=2)).any(axis=1)
    flags = np.zeros(n, dtype=np.uint8)
    static_fp = fp[:, :, 0] if T else np.zeros((n, A), bool)
    for a in range(A):
        flags |= (static_fp[:, a] & ~dynamic).astype(np.uint8) << np.uint8(a)
    flags[dynamic] |= np.uint8(0x80)
    dyn = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(dynamic)
    dyn[rows] = np.arange(rows.shape[0])
    dyn_tp, dyn_fp = _bits(tp[rows]), _bits(fp[rows])
    class_start = np.searchsorted(cls, np.arange(num_classes + 1)).astype(np.int64)
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = (cls[1:] != cls[:-1]) | (sc[1:] != sc[:-1])
    starts = np.flatnonzero(new)
    block_start = np.append(starts, n).astype(np.int64)
    if n:
        all_t = np.uint64((1 << T) - 1) if T < 64 else np.uint64(2 ** 64 - 1)
        tp_m = np.zeros((n, A), np.uint64)
        fp_m = np.where(static_fp & ~dynamic[:, None], all_t, np.uint64(0))
        tp_m[rows], fp_m[rows] = dyn_tp, dyn_fp
        mixed = (np.bitwise_or.reduceat(tp_m, starts, axis=0)
                 & np.bitwise_or.reduceat(fp_m, starts, axis=0)).any(axis=1)
    else:
        mixed = np.zeros(0, dtype=bool)
    image = image_key[order].astype(np.int32)
    # image-runs of the mixed blocks: a new run at each block start or image change
    in_mixed = np.repeat(mixed, np.diff(block_start))
    run_new = new.copy()
    if n:
        run_new[1:] |= image[1:] != image[:-1]
    run_first = np.flatnonzero(run_new & in_mixed)
    return RankedItems(image=image, mmin=mmin[order].astype(np.uint8),
                       flags=flags, dyn=dyn.astype(np.int32), dyn_tp=dyn_tp, dyn_fp=dyn_fp,
                       class_start=class_start, block_start=block_start,
                       block_mixed=mixed.astype(np.uint8),
                       run_start=np.append(run_first, n).astype(np.int64),
                       run_image=image[run_first].astype(np.int32))


def rank_coco_items(matches: CocoMatches, max_dets: Sequence[int]) -> RankedItems:
    """:func:`rank_items` of COCO records: ties within an image by rank."""
    counted = ~matches.ignored
    md = np.asarray(max_dets, dtype=np.int64)
    mmin = np.searchsorted(md, matches.rank, side="right").astype(np.uint8)
    from .ap import coco_rank_order  # (class, -score, image key, rank), as accumulation
    return rank_items(matches.class_idx, matches.scores, matches.image_key, matches.rank,
                      matches.matched & counted, ~matches.matched & counted, mmin,
                      matches.num_gt.shape[0], order=coco_rank_order(matches))


def weighted_available(num_areas: int, num_thresholds: int) -> bool:
    """Whether the compiled weighted path can run (else the reference path runs)."""
    return _kernels is not None and 1 <= num_areas <= 7 and 1 <= num_thresholds <= 64


@dataclass(frozen=True)
class GtCounts:
    """Per-image counted ground truth, sparse (CSR over images).

    ``start`` int64 (I + 1,); ``cell`` int64 (E,): ``k * A + a``; ``count`` int64 (E,).
    """

    start: np.ndarray
    cell: np.ndarray
    count: np.ndarray
    num_classes: int
    num_areas: int

    @staticmethod
    def from_dense(counts: np.ndarray) -> "GtCounts":
        """From ``(I, K, A)`` counts (:func:`coco_gt_counts`)."""
        I, K, A = counts.shape
        flat = counts.reshape(I, K * A)
        img, cell = np.nonzero(flat)
        start = np.searchsorted(img, np.arange(I + 1)).astype(np.int64)
        return GtCounts(start, cell.astype(np.int64), flat[img, cell].astype(np.int64), K, A)


def boot_curves(items: RankedItems, draws: np.ndarray, gt: GtCounts,
                thresholds: np.ndarray, num_thresholds: int, num_maxdets: int, mode: int
                ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled kernel on a block of replicates.

    Parameters
    ----------
    draws : ndarray of int64, shape (B, I)
    gt : GtCounts
    mode : {0, 1, 2}
        COCO, VOC07, VOC12 (see ``deteval/_kernels_src/bootstrap.h``).

    Returns
    -------
    value, tp : ndarray of float64, shape (B, T, K, A, M)
        COCO: the sum over recall thresholds of the interpolated precision; VOC07: the
        sum of the 11 points; VOC12: the area under the envelope -- at the largest
        max-dets only (the one AP figures use; 0 at the others). ``tp``: final true
        positives. NaN where ``npig == 0``.
    npig : ndarray of int64, shape (B, K, A)
        Each replicate's counted ground truth.
    """
    B, I = draws.shape
    K, A = gt.num_classes, gt.num_areas
    c = np.ascontiguousarray
    v, t, n = _kernels.boot_curves(
        item_image=c(items.image, np.int32), item_mmin=c(items.mmin, np.uint8),
        item_flags=c(items.flags, np.uint8), item_dyn=c(items.dyn, np.int32),
        dyn_tp=c(items.dyn_tp, np.uint64).ravel(), dyn_fp=c(items.dyn_fp, np.uint64).ravel(),
        class_start=c(items.class_start, np.int64), block_start=c(items.block_start, np.int64),
        block_mixed=c(items.block_mixed, np.uint8), run_start=c(items.run_start, np.int64),
        run_image=c(items.run_image, np.int32), draws=c(draws, np.int64),
        gt_start=c(gt.start, np.int64), gt_cell=c(gt.cell, np.int64),
        gt_count=c(gt.count, np.int64), thresholds=c(thresholds, np.float64), num_images=I,
        num_areas=A, num_thresholds=num_thresholds, num_maxdets=num_maxdets, mode=mode)
    shape = (B, num_thresholds, K, A, num_maxdets)
    return (np.frombuffer(v, dtype=np.float64).reshape(shape),
            np.frombuffer(t, dtype=np.float64).reshape(shape),
            np.frombuffer(n, dtype=np.int64).reshape(B, K, A))


def coco_figures_from_curves(value: np.ndarray, tp: np.ndarray, npig: np.ndarray,
                             specs: Sequence[tuple], num_recall: int
                             ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """pycocotools' ``summarize`` of a block of replicates, from :func:`boot_curves`.

    An AP figure is ``sum value / (nT * R * K_present)`` over its thresholds and the
    classes present (``npig > 0``); an AR figure the mean of ``tp / npig`` over the
    same; per class the same over its row. Equal to the means over pycocotools'
    ``precision``/``recall`` arrays up to the order of summation.

    Returns
    -------
    stats : dict name -> ndarray of float64, shape (B,)
    per_class : dict name -> ndarray of float64, shape (B, K)
        NaN where undefined.
    """
    B, T, K = value.shape[:3]
    stats, per_class = {}, {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, kind, t, a, m in specs:
            if a is None:
                stats[name] = np.full(B, np.nan)
                per_class[name] = np.full((B, K), np.nan)
                continue
            ts = slice(None) if t is None else slice(t, t + 1)
            nt = T if t is None else 1
            present = npig[:, :, a] > 0  # (B, K)
            n_present = present.sum(axis=1)
            if kind == "AP":
                cls_sum = value[:, ts, :, a, m].sum(axis=1)  # (B, K), NaN if absent
                total = np.where(present, cls_sum, 0.0).sum(axis=1)
                stats[name] = np.where(n_present > 0, total / (nt * num_recall * n_present),
                                       np.nan)
                per_class[name] = cls_sum / (nt * num_recall)
            else:
                rec = tp[:, ts, :, a, m] / npig[:, None, :, a]  # (B, nt, K)
                cls_sum = rec.sum(axis=1)
                total = np.where(present, cls_sum, 0.0).sum(axis=1)
                stats[name] = np.where(n_present > 0, total / (nt * n_present), np.nan)
                per_class[name] = cls_sum / nt
    return stats, per_class


class _Progress:
    """A tqdm bar on stderr, only when stderr is a terminal, tqdm is installed and the
    work is expected to take more than ``after`` seconds (judged after the first block)."""

    def __init__(self, total: int, desc: str, after: float = 2.0):
        import sys
        import time
        self.total, self.desc, self.after = total, desc, after
        self.done, self.bar = 0, None
        self.t0 = time.perf_counter()
        self.tty = bool(getattr(sys.stderr, "isatty", lambda: False)())

    def update(self, n: int) -> None:
        import time
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        if not self.tty or self.done >= self.total:
            return
        spent = time.perf_counter() - self.t0
        if spent / self.done * self.total <= self.after:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self.tty = False
            return
        import sys
        self.bar = tqdm(total=self.total, initial=self.done, desc=self.desc, unit="replicate",
                        file=sys.stderr, leave=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _run_blocks(fn, blocks, threaded: bool, bar):
    """``(first replicate, fn(draws))`` for each block of draws, in order; the compiled
    kernel releases the GIL, so blocks run on up to ``os.cpu_count()`` threads (at most
    two blocks in flight per thread: memory stays bounded)."""
    import os
    workers = min(os.cpu_count() or 1, 8) if threaded else 1
    start = 0
    try:
        if workers == 1:
            for draws in blocks:
                yield start, fn(draws)
                start += draws.shape[0]
                if bar is not None:
                    bar.update(draws.shape[0])
            return
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(workers) as pool:
            pending = deque()
            for draws in blocks:
                pending.append((draws.shape[0], pool.submit(fn, draws)))
                while len(pending) >= 2 * workers:
                    n, fut = pending.popleft()
                    yield start, fut.result()
                    start += n
                    if bar is not None:
                        bar.update(n)
            while pending:
                n, fut = pending.popleft()
                yield start, fut.result()
                start += n
                if bar is not None:
                    bar.update(n)
    finally:
        if bar is not None:
            bar.close()


def coco_replicate_figures(matches: CocoMatches, gt_counts: np.ndarray,
                           iou_thresholds: np.ndarray, area_names: Sequence[str],
                           max_dets: Sequence[int], rec_thresholds: np.ndarray,
                           default_thresholds: bool = True, iou_type: str = "bbox",
                           samples: int = 1000, seed: int = 0, method: str = "auto",
                           progress: bool = True
                           ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """Every replicate's named COCO figures, overall and per class.

    Parameters
    ----------
    matches : CocoMatches
    gt_counts : ndarray of int64, shape (I, K, A)
        From :func:`coco_gt_counts`.
    iou_thresholds, area_names, max_dets, rec_thresholds, default_thresholds, iou_type
        As :func:`deteval.ap.summarize_coco`.
    method : {"auto", "weighted", "naive"}
        The compiled weighted path, or the reference: each replicate's records
        resampled explicitly (:func:`resample_coco_matches`) and summarized by
        :func:`deteval.ap.summarize_coco`. ``auto``: weighted when available.

    Returns
    -------
    stats : dict name -> ndarray of float64, shape (samples,)
    per_class : dict name -> ndarray of float64, shape (samples, K)
        NaN where a replicate's figure is undefined.
    """
    from .ap import coco_stat_specs, summarize_coco
    I, K, A = gt_counts.shape
    T = matches.matched.shape[2]
    M, R = len(max_dets), rec_thresholds.shape[0]
    md = np.asarray(max_dets, dtype=np.int64)
    specs = coco_stat_specs(iou_thresholds, list(area_names), list(max_dets),
                            default_thresholds, iou_type)
    if method == "auto":
        method = "weighted" if weighted_available(A, T) else "naive"
    stats = {name: np.empty(samples) for name, *_ in specs}
    per_class = {name: np.empty((samples, K)) for name, *_ in specs}
    if I == 0:  # nothing to draw: every replicate is empty, every figure undefined
        for name in stats:
            stats[name][:] = np.nan
            per_class[name][:] = np.nan
        return stats, per_class
    bar = _Progress(samples, "bootstrap") if progress else None
    items = rank_coco_items(matches, md) if method == "weighted" else None
    sparse = GtCounts.from_dense(gt_counts)

    def weighted(draws):
        value, tp, npig = boot_curves(items, draws, sparse, rec_thresholds, T, M, 0)
        return coco_figures_from_curves(value, tp, npig, specs, R)

    def naive(draws):
        st = {name: np.empty(draws.shape[0]) for name in stats}
        pc = {name: np.empty((draws.shape[0], K)) for name in stats}
        for b, row in enumerate(draws):
            rep = resample_coco_matches(matches, gt_counts, row)
            summary = summarize_coco(rep, iou_thresholds, area_names, md, rec_thresholds,
                                     default_thresholds, iou_type)
            for name in stats:
                v = summary.stats[name]
                st[name][b] = np.nan if v is None else v
                pc[name][b] = [np.nan if x is None else x for x in summary.per_class[name]]
        return st, pc

    blocks = iter_draw_blocks(I, samples, seed)
    for start, (st, pc) in _run_blocks(weighted if method == "weighted" else naive, blocks,
                                       method == "weighted", bar):
        for name in stats:
            stats[name][start:start + st[name].shape[0]] = st[name]
            per_class[name][start:start + st[name].shape[0]] = pc[name]
    return stats, per_class


# ------------------------------------------------------------------------- VOC

@dataclass(frozen=True)
class VocRecords:
    """VOC match records with what places them among the images.

    Attributes
    ----------
    matches : VocMatches
    image_key : ndarray of int64, shape (N,)
        Rank of each record's image among the image ids sorted ascending.
    within : ndarray of int64, shape (N,)
        Order of the record among its image's records (the file position): the tie
        order after the draw position.
    gt_counts : ndarray of int64, shape (I, K, 1)
        Non-difficult ground truth per image key and class.
    """

    matches: object
    image_key: np.ndarray
    within: np.ndarray
    gt_counts: np.ndarray


def voc_records_of(matches, image_key: np.ndarray, within: np.ndarray, gt_image_key: np.ndarray,
                   gt_class: np.ndarray, gt_difficult: np.ndarray, num_images: int
                   ) -> VocRecords:
    """:class:`VocRecords` from columns (the streaming metric's records)."""
    counts = np.zeros((num_images, matches.num_gt.shape[0], 1), dtype=np.int64)
    keep = ~gt_difficult
    np.add.at(counts[:, :, 0], (gt_image_key[keep], gt_class[keep]), 1)
    return VocRecords(matches=matches, image_key=image_key, within=within, gt_counts=counts)


def voc_records(gt, det, matches, compat: str = "devkit",
                file_order_ties: bool = False) -> VocRecords:
    """:class:`VocRecords` of :func:`deteval.match.match_voc`'s records of ``det``."""
    from .rank import voc_order
    order, _ = voc_order(det, "devkit" if file_order_ties else compat)
    ids = np.asarray(gt.image_ids)
    image_key = np.empty(ids.shape[0], dtype=np.int64)
    image_key[np.argsort(ids, kind="stable")] = np.arange(ids.shape[0])
    I, K = ids.shape[0], gt.num_classes
    counts = np.zeros((I, K, 1), dtype=np.int64)
    keep = ~gt.difficult
    np.add.at(counts[:, :, 0], (image_key[gt.image_idx[keep]], gt.class_idx[keep]), 1)
    return VocRecords(matches=matches, image_key=image_key[det.image_idx[order]],
                      within=det.order[order].astype(np.int64), gt_counts=counts)


def resample_voc_matches(records: VocRecords, draws: np.ndarray):
    """The reference: the records of the resampled dataset whose image ``j`` is image key
    ``draws[j]``, ties ordered by (draw position, file position within the image), as the
    devkit ranks detection files written in draw order."""
    m = records.matches
    I = records.gt_counts.shape[0]
    by_image = np.lexsort((records.within, records.image_key))
    start = np.searchsorted(records.image_key[by_image], np.arange(I + 1))
    n_per = (start[1:] - start[:-1])[draws]
    pos = np.repeat(np.arange(draws.shape[0]), n_per)
    offset = np.arange(int(n_per.sum())) - np.repeat(np.cumsum(n_per) - n_per, n_per)
    idx = by_image[start[:-1][draws][pos] + offset]
    width = int(records.within.max()) + 1 if records.within.shape[0] else 1
    num_gt = records.gt_counts[draws].sum(axis=0)[:, 0]
    return replace(m, class_idx=m.class_idx[idx], scores=m.scores[idx],
                   tie_key=pos.astype(np.int64) * width + records.within[idx],
                   outcome=m.outcome[idx], num_gt=num_gt)


def voc_replicate_figures(records: VocRecords, metric: str, compat: str, samples: int,
                          seed: int = 0, method: str = "auto", progress: bool = True
                          ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """Every replicate's VOC mAP and per-class AP.

    Returns
    -------
    stats : {"mAP": ndarray of float64, shape (samples,)}
    per_class : {"AP": ndarray of float64, shape (samples, K)}
        NaN where undefined (no non-difficult ground truth drawn).
    """
    from .ap import VOC07_GRID_MATLAB, VOC07_GRID_NUMPY, summarize_voc
    from .match import TP, FP
    I, K, _ = records.gt_counts.shape
    m = records.matches
    if method == "auto":
        method = "weighted" if weighted_available(1, 1) else "naive"
    stats = {"mAP": np.empty(samples)}
    per_class = {"AP": np.empty((samples, K))}
    if I == 0:  # nothing to draw: every figure undefined
        stats["mAP"][:] = np.nan
        per_class["AP"][:] = np.nan
        return stats, per_class
    bar = _Progress(samples, "bootstrap") if progress else None
    mode = 1 if metric == "voc07" else 2
    grid = VOC07_GRID_MATLAB if compat == "devkit" else VOC07_GRID_NUMPY
    items = sparse = None
    if method == "weighted":
        items = rank_items(m.class_idx, m.scores, records.image_key, records.within,
                           (m.outcome == TP)[:, None, None], (m.outcome == FP)[:, None, None],
                           np.zeros(m.class_idx.shape[0], np.uint8), K)
        sparse = GtCounts.from_dense(records.gt_counts)

    def weighted(draws):
        value, _, npig = boot_curves(items, draws, sparse, grid if mode == 1 else np.zeros(1),
                                     1, 1, mode)
        ap = value[:, 0, :, 0, 0] / (11 if mode == 1 else 1)  # (B, K), NaN: no GT drawn
        with np.errstate(invalid="ignore"):
            n_def = (~np.isnan(ap)).sum(axis=1)
            mAP = np.where(n_def > 0, np.nansum(ap, axis=1) / np.maximum(n_def, 1), np.nan)
        return {"mAP": mAP}, {"AP": ap}

    def naive(draws):
        st, pc = {"mAP": np.empty(draws.shape[0])}, {"AP": np.empty((draws.shape[0], K))}
        for b, row in enumerate(draws):
            summary = summarize_voc(resample_voc_matches(records, row), metric, compat)
            st["mAP"][b] = np.nan if summary.mAP is None else summary.mAP
            pc["AP"][b] = summary.ap
        return st, pc

    for start, (st, pc) in _run_blocks(weighted if method == "weighted" else naive,
                                       iter_draw_blocks(I, samples, seed),
                                       method == "weighted", bar):
        n = st["mAP"].shape[0]
        stats["mAP"][start:start + n] = st["mAP"]
        per_class["AP"][start:start + n] = pc["AP"]
    return stats, per_class


# ------------------------------------------------------------ report section

def _interval_or_none(values: np.ndarray, confidence: float):
    iv, nulls = percentile_interval(values, confidence)
    return (None if iv is None else [iv[0], iv[1]]), nulls


def uncertainty_section(stats: Dict[str, np.ndarray], per_class: Dict[str, np.ndarray],
                        class_names: Sequence[str], samples: int, seed: int,
                        confidence: float) -> Dict:
    """The report's ``uncertainty`` section (the stable contract).

    ``intervals`` / ``per_class_intervals``: :func:`percentile_interval` of the defined
    replicates (None when none is defined); ``null_replicates`` (every figure) and
    ``per_class_null_replicates`` (only counts > 0): the replicates left out because the
    figure is undefined in them; ``replicates``: every replicate's figure, None where
    undefined, in replicate order.
    """
    intervals, nulls, reps = {}, {}, {}
    for name, values in stats.items():
        intervals[name], nulls[name] = _interval_or_none(values, confidence)
        reps[name] = [None if v != v else float(v) for v in values.tolist()]
    names = list(class_names)
    keys = [n if names.count(n) == 1 else f"{n} ({i})" for i, n in enumerate(names)]
    pci, pcn = {}, {}
    for k, key in enumerate(keys):
        row, row_nulls = {}, {}
        for name, values in per_class.items():
            row[name], n_null = _interval_or_none(values[:, k], confidence)
            if n_null:
                row_nulls[name] = n_null
        pci[key] = row
        if row_nulls:
            pcn[key] = row_nulls
    return {"method": "image bootstrap", "samples": int(samples), "seed": int(seed),
            "confidence": float(confidence), "intervals": intervals,
            "null_replicates": nulls, "per_class_intervals": pci,
            "per_class_null_replicates": pcn, "replicates": reps}


def check_seed(seed) -> int:
    """``seed`` as a non-negative int, else :class:`InputError`."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(expected("seed", "an integer >= 0", seed))
    return int(seed)


def coco_uncertainty(gt, matches: CocoMatches, area_ranges: np.ndarray, area_names,
                     iou_thresholds: np.ndarray, max_dets, rec_thresholds: np.ndarray,
                     default_thresholds: bool, iou_type: str, class_names, samples: int,
                     seed: int = 0, confidence: float = 0.95,
                     gt_ignore: Optional[np.ndarray] = None, method: str = "auto",
                     progress: bool = True) -> Dict:
    """The ``uncertainty`` section of a COCO evaluation from its match records.

    ``gt`` is the evaluated :class:`~deteval.tables.GroundTruth`, or the per-image counts
    ``(I, K, A)`` of :func:`coco_gt_counts` directly.
    """
    check_bootstrap_params(samples, confidence)
    seed = check_seed(seed)
    if isinstance(gt, np.ndarray):
        counts = gt
    else:
        image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
        counts = coco_gt_counts(gt, area_ranges, image_key, gt_ignore)
    stats, per_class = coco_replicate_figures(
        matches, counts, iou_thresholds, list(area_names), max_dets, rec_thresholds,
        default_thresholds, iou_type, samples=samples, seed=seed, method=method,
        progress=progress)
    return uncertainty_section(stats, per_class, class_names, samples, seed, confidence)


def voc_uncertainty(records: VocRecords, metric: str, compat: str, class_names,
                    samples: int, seed: int = 0, confidence: float = 0.95,
                    method: str = "auto", progress: bool = True) -> Dict:
    """The ``uncertainty`` section of a VOC evaluation (figure ``mAP``, per class ``AP``)."""
    check_bootstrap_params(samples, confidence)
    seed = check_seed(seed)
    stats, per_class = voc_replicate_figures(records, metric, compat, samples, seed, method,
                                             progress)
    return uncertainty_section(stats, per_class, class_names, samples, seed, confidence)
