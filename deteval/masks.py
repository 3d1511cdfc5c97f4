"""Mask geometry: COCO run-length masks as columns, and their IoUs.

A set of masks is one :class:`MaskSet`: every mask's runs concatenated into one ``uint32``
array (``counts[offsets[j]:offsets[j + 1]]`` is mask ``j``, column-major runs alternating
background / foreground, background first, as COCO stores them), with each mask's height,
width and foreground area. The IoU step (:func:`rle_pair_ious`) reads candidate pairs from
these columns in one compiled call.

Polygons and uncompressed RLE are turned into runs by pycocotools' own mask primitives
(``pycocotools.mask``, the reference C implementation of COCO RLE, imported only when a
segmentation is read), so rasterisation is pycocotools' bit for bit; compressed RLE strings
are decoded here.

References
----------
.. [1] pycocotools ``mask.py`` / ``maskApi.c``: ``frPyObjects``, ``merge``, ``rleFrString``,
   ``rleIou``; ``coco.py`` ``annToRLE``. https://github.com/cocodataset/cocoapi
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._native import kernels as _kernels
from .errors import InputError, expected

__all__ = ["MaskSet", "decode_rle_string", "masks_from_segmentations", "masks_from_arrays",
           "rle_pair_ious", "rle_pair_ious_reference"]


@dataclass(frozen=True)
class MaskSet:
    """Run-length masks as columns.

    Attributes
    ----------
    counts : ndarray of uint32, shape (C,)
        Every mask's runs, concatenated.
    offsets : ndarray of int64, shape (M + 1,)
    heights, widths : ndarray of int64, shape (M,)
    areas : ndarray of int64, shape (M,)
        Foreground pixels (the sum of the odd-position runs).
    """

    counts: np.ndarray
    offsets: np.ndarray
    heights: np.ndarray
    widths: np.ndarray
    areas: np.ndarray

    def __len__(self) -> int:
        return int(self.heights.shape[0])

    def take(self, rows: np.ndarray) -> "MaskSet":
        """The masks ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = np.diff(self.offsets)[rows]
        offsets = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = self.offsets[rows]
        idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return MaskSet(counts=self.counts[idx], offsets=offsets, heights=self.heights[rows],
                       widths=self.widths[rows], areas=self.areas[rows])

    @staticmethod
    def concatenate(parts: Sequence["MaskSet"]) -> "MaskSet":
        lengths = np.concatenate([np.diff(p.offsets) for p in parts]) if parts else \
            np.zeros(0, dtype=np.int64)
        offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        cat = (lambda f: np.concatenate([getattr(p, f) for p in parts]))
        return MaskSet(counts=cat("counts").astype(np.uint32), offsets=offsets,
                       heights=cat("heights").astype(np.int64),
                       widths=cat("widths").astype(np.int64),
                       areas=cat("areas").astype(np.int64))


def decode_rle_string(s: bytes) -> np.ndarray:
    """Runs of one compressed COCO RLE string (the reference for the compiled decoder).

    Each run is 5-bit groups written as ``chr(48 + group)``; bit ``0x20`` says another group
    follows, bit ``0x10`` of the last group makes the value negative; from the third run on,
    the value is the difference to the run two places back.
    """
    runs: List[int] = []
    p, n = 0, len(s)
    while p < n:
        x, k, more = 0, 0, True
        while more:
            if p >= n:
                raise ValueError("truncated count")
            c = s[p] - 48
            if not 0 <= c <= 63:
                raise ValueError(f"character {p} is not a count digit")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(runs) > 2:
            x += runs[-2]
        if not 0 <= x < 2 ** 32:
            raise ValueError(f"run {len(runs)} is {x}")
        runs.append(x)
    return np.array(runs, dtype=np.uint32)


def _decode_strings(strings: List[bytes]):
    """``(counts, lengths, totals, areas)`` of compressed strings (compiled when built)."""
    if _kernels is not None:
        counts, lengths, totals, areas = _kernels.rle_decode(strings)
        return (np.frombuffer(counts, dtype=np.uint32), np.frombuffer(lengths, dtype=np.int64),
                np.frombuffer(totals, dtype=np.int64), np.frombuffer(areas, dtype=np.int64))
    parts = [decode_rle_string(s) for s in strings]
    lengths = np.array([p.shape[0] for p in parts], dtype=np.int64)
    counts = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    totals, areas = _run_sums(counts, offsets)
    return counts, lengths, totals, areas


def _finite_coordinates(p) -> bool:
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return arr.ndim == 1 and bool(np.isfinite(arr).all())


def _mask_api():
    try:
        from pycocotools import mask as mask_api
    except ImportError:  # pragma: no cover - pycocotools is a dependency
        raise InputError("Expected pycocotools (its mask primitives rasterise polygons) to be "
                         "installed for segmentation but it is not: pip install pycocotools"
                         ) from None
    return mask_api


def _run_list(counts: list) -> Optional[np.ndarray]:
    """The uint32 runs of an uncompressed RLE's ``counts``, or None unless every item is an
    integer (not a bool) in [0, 2^32)."""
    if bool in map(type, counts):
        return None
    try:
        arr = np.asarray(counts)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu" or arr.min() < 0
                                       or arr.max() >= 2 ** 32)):
        return None
    return arr.astype(np.uint32)


def _check_polygons(polys, polys_at, source, where) -> None:
    """InputError naming the first polygon pycocotools would misread."""
    for i, seg in zip(polys_at, polys):
        if not seg or not all(isinstance(p, list) for p in seg):
            raise InputError(expected("segmentation", "a list of polygons [[x1, y1, ...]] "
                                      "or an RLE {size, counts}", seg), source, where(i))
        for p in seg:
            if len(p) % 2 or len(p) < 6 or not _finite_coordinates(p):
                raise InputError(expected("segmentation polygon", "an even number (at least "
                                          "6) of finite coordinates x1, y1, x2, y2, ... "
                                          "(pycocotools would misread it)",
                                          p), source, where(i))


def _draw_polygons(polys, polys_at, heights, widths):
    """``(counts, lengths, areas)`` of the polygon objects drawn by the compiled rasteriser
    (pycocotools' ``frPyObjects`` + ``merge``, bit for bit), or None: not built, or
    something it leaves to pycocotools (a malformed polygon, which
    :func:`_check_polygons` then names; coordinates beyond 1e8; images beyond 2^31
    pixels)."""
    if _kernels is None:
        return None
    rows = np.asarray(polys_at, dtype=np.int64)
    try:
        counts, lengths, areas = _kernels.rle_from_polygons(
            polys, np.ascontiguousarray(np.asarray(heights, dtype=np.int64)[rows]),
            np.ascontiguousarray(np.asarray(widths, dtype=np.int64)[rows]))
    except (ValueError, OverflowError):
        return None
    return (np.frombuffer(counts, dtype=np.uint32), np.frombuffer(lengths, dtype=np.int64),
            np.frombuffer(areas, dtype=np.int64))


def masks_from_segmentations(segmentations: Sequence[Any], heights: np.ndarray,
                             widths: np.ndarray, source: str, section: str,
                             ids: Optional[Sequence[Any]] = None) -> MaskSet:
    """Run-length masks of COCO ``segmentation`` values, as pycocotools' ``annToRLE``.

    Parameters
    ----------
    segmentations : sequence
        Per object: a list of polygons (``[[x1, y1, x2, y2, ...], ...]``: rasterised and
        merged by pycocotools), an uncompressed RLE (``{"size": [h, w], "counts": [...]}``) or
        a compressed one (``counts`` a string).
    heights, widths : ndarray of int64, shape (M,)
        The object's image size.
    source, section : str
        For messages (``file``, ``annotations``/``results``).

    Raises
    ------
    InputError
        A polygon with an odd number of coordinates or fewer than three points, counts of
        the wrong type, counts that do not sum to ``h * w``, a ``size`` that is not the
        image's.
    """
    m = len(segmentations)
    strings: List[Optional[bytes]] = [None] * m
    direct: dict = {}

    def where(i):
        return f"{section}[{i}]" + (f" (id {ids[i]})" if ids is not None and
                                     section != "results" else "")

    polys_at, polys = [], []
    for i, seg in enumerate(segmentations):
        if isinstance(seg, list):  # polygons: checked where they are drawn
            polys_at.append(i)
            polys.append(seg)
            continue
        h, w = int(heights[i]), int(widths[i])
        if isinstance(seg, dict) and "counts" in seg and "size" in seg:
            size = seg["size"]
            if (not isinstance(size, (list, tuple)) or len(size) != 2
                    or [int(v) if isinstance(v, int) else v for v in size] != [h, w]):
                raise InputError(expected("segmentation size", f"the image's [{h}, {w}]", size),
                                 source, where(i))
            counts = seg["counts"]
            if isinstance(counts, (str, bytes)):
                strings[i] = counts.encode("ascii", "replace") if isinstance(counts, str) \
                    else counts
            elif isinstance(counts, list) and (runs := _run_list(counts)) is not None:
                direct[i] = runs
            else:
                raise InputError(expected("segmentation counts", "a compressed RLE string or a "
                                          "list of non-negative integers", counts), source,
                                 where(i))
        else:
            raise InputError(expected("segmentation", "a list of polygons or an RLE "
                                      "{size, counts}", seg), source, where(i))
    drawn = None  # the polygons' runs, when the compiled rasteriser drew them
    if polys:
        drawn = _draw_polygons(polys, polys_at, heights, widths)
        if drawn is None:
            _check_polygons(polys, polys_at, source, where)
            api = _mask_api()
            for i, seg in zip(polys_at, polys):
                rles = api.frPyObjects(seg, int(heights[i]), int(widths[i]))
                strings[i] = api.merge(rles)["counts"]
    drawn_at = set(polys_at) if drawn is not None else set()
    order = [i for i in range(m) if strings[i] is not None]
    lists = [i for i in range(m) if strings[i] is None and i not in drawn_at]
    parts_counts, parts_len, parts_tot, parts_area = [], [], [], []
    if order:
        try:
            c, ln, tot, ar = _decode_strings([strings[i] for i in order])
        except ValueError:  # find and name the bad one
            for i in order:
                try:
                    decode_rle_string(strings[i])
                except ValueError as exc:
                    raise InputError(expected("segmentation counts", "a compressed COCO RLE "
                                              f"string ({exc})", strings[i]), source,
                                     where(i)) from None
            raise
        parts_counts.append(c)
        parts_len.append(ln)
        parts_tot.append(tot)
        parts_area.append(ar)
    if lists:
        c = [direct[i] for i in lists]
        ln = np.array([x.shape[0] for x in c], dtype=np.int64)
        c = np.concatenate(c)
        tot, ar = _run_sums(c, np.concatenate([[0], np.cumsum(ln)]).astype(np.int64))
        parts_counts.append(c)
        parts_len.append(ln)
        parts_tot.append(tot)
        parts_area.append(ar)
    if drawn is not None:
        c, ln, ar = drawn
        parts_counts.append(c)
        parts_len.append(ln)
        parts_tot.append(np.asarray(heights, dtype=np.int64)[polys_at]
                         * np.asarray(widths, dtype=np.int64)[polys_at])
        parts_area.append(ar)
        lists = lists + polys_at
    row_order = np.array(order + lists, dtype=np.int64)  # as decoded: strings, lists, drawn
    counts = (np.concatenate(parts_counts).astype(np.uint32, copy=False) if parts_counts
              else np.zeros(0, dtype=np.uint32))
    lengths_dec = np.concatenate(parts_len) if parts_len else np.zeros(0, dtype=np.int64)
    totals = np.empty(m, dtype=np.int64)
    areas = np.empty(m, dtype=np.int64)
    if m:
        totals[row_order] = np.concatenate(parts_tot)
        areas[row_order] = np.concatenate(parts_area)
    offsets_dec = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(lengths_dec, out=offsets_dec[1:])
    heights = np.asarray(heights, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    bad = totals != heights * widths
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"Expected segmentation counts summing to height x width = "
                         f"{int(heights[i]) * int(widths[i])} but got {int(totals[i])} "
                         "(a mask larger or smaller than its image)", source, where(i))
    decoded = MaskSet(counts=counts, offsets=offsets_dec, heights=heights[row_order],
                      widths=widths[row_order], areas=areas[row_order])
    if not lists or not order:  # one kind: rows are already in order (or one reorder)
        if np.array_equal(row_order, np.arange(m)):
            return decoded
    inverse = np.empty(m, dtype=np.int64)
    inverse[row_order] = np.arange(m)
    return decoded.take(inverse)


def _run_sums(counts: np.ndarray, offsets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Total pixels and foreground pixels of each mask."""
    m = offsets.shape[0] - 1
    c = counts.astype(np.int64)
    owner = np.repeat(np.arange(m), np.diff(offsets))
    odd = (np.arange(c.shape[0]) - offsets[owner]) % 2 == 1
    totals = np.bincount(owner, weights=c, minlength=m).astype(np.int64)
    areas = np.bincount(owner[odd], weights=c[odd], minlength=m).astype(np.int64)
    return totals, areas


def masks_from_arrays(masks: Any) -> MaskSet:
    """Run-length masks of binary arrays ``(N, H, W)`` (any nonzero is foreground)."""
    arr = np.asarray(masks)
    if arr.ndim != 3:
        raise InputError(expected("masks", "binary arrays of shape (N, H, W)", arr.shape))
    n, h, w = arr.shape
    flat = (arr != 0).transpose(0, 2, 1).reshape(n, h * w)  # column-major, like COCO
    runs, lengths = [], []
    for row in flat:  # one vectorised pass per mask
        change = np.flatnonzero(row[1:] != row[:-1]) + 1
        edges = np.concatenate([[0], change, [h * w]])
        r = np.diff(edges)
        if row.size and row[0]:
            r = np.concatenate([[0], r])
        runs.append(r.astype(np.uint32))
        lengths.append(r.shape[0])
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    counts = np.concatenate(runs) if runs else np.zeros(0, dtype=np.uint32)
    _, areas = _run_sums(counts, offsets)
    return MaskSet(counts=counts, offsets=offsets, heights=np.full(n, h, dtype=np.int64),
                   widths=np.full(n, w, dtype=np.int64), areas=areas)


_PARALLEL_PAIRS = 20000  # mask pairs above which the IoUs are split over threads


def rle_pair_ious(masks_a: MaskSet, masks_b: MaskSet, pair_a: np.ndarray, pair_b: np.ndarray,
                  crowd_b: np.ndarray) -> np.ndarray:
    """IoU of mask ``masks_a[pair_a[p]]`` (a detection) with ``masks_b[pair_b[p]]`` (ground
    truth).

    ``iou = |a & b| / |a | b|``, or ``|a & b| / |a|`` when ``b`` is a crowd region;
    0 without intersection (pycocotools' ``rleIou``).

    Parameters
    ----------
    masks_a, masks_b : MaskSet
        Detections and ground truth.
    pair_a, pair_b : ndarray of int64, shape (P,)
    crowd_b : ndarray of bool, shape (P,)

    Returns
    -------
    ndarray of float64, shape (P,)
    """
    if _kernels is None:
        return rle_pair_ious_reference(masks_a, masks_b, pair_a, pair_b, crowd_b)
    sets = (np.ascontiguousarray(masks_a.counts, dtype=np.uint32),
            np.ascontiguousarray(masks_a.offsets, dtype=np.int64),
            np.ascontiguousarray(masks_a.areas, dtype=np.int64),
            np.ascontiguousarray(masks_b.counts, dtype=np.uint32),
            np.ascontiguousarray(masks_b.offsets, dtype=np.int64),
            np.ascontiguousarray(masks_b.areas, dtype=np.int64))
    pair_a = np.ascontiguousarray(pair_a, dtype=np.int64)
    pair_b = np.ascontiguousarray(pair_b, dtype=np.int64)
    crowd = np.ascontiguousarray(crowd_b, dtype=bool).view(np.uint8)

    def part(lo, hi):
        return np.frombuffer(_kernels.rle_iou(*sets, pair_a[lo:hi], pair_b[lo:hi],
                                              crowd[lo:hi]), dtype=np.float64)

    n = pair_a.shape[0]
    workers = min(os.cpu_count() or 1, 4)
    if workers < 2 or n < _PARALLEL_PAIRS:
        return part(0, n)
    from concurrent.futures import ThreadPoolExecutor
    bounds = np.linspace(0, n, workers + 1).astype(np.int64)  # the kernel drops the GIL
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(part, bounds[:-1], bounds[1:]))
    return np.concatenate(parts)


def _dense(masks: MaskSet, j: int) -> np.ndarray:
    runs = masks.counts[masks.offsets[j]:masks.offsets[j + 1]].astype(np.int64)
    values = np.arange(runs.shape[0]) % 2 == 1
    return np.repeat(values, runs)


def rle_pair_ious_reference(masks_a: MaskSet, masks_b: MaskSet, pair_a, pair_b,
                            crowd_b) -> np.ndarray:
    """:func:`rle_pair_ious` by decoding each pair to pixels (slow; the test oracle and
    the path without the compiled kernels)."""
    out = np.zeros(len(pair_a), dtype=np.float64)
    for p, (a, b, c) in enumerate(zip(pair_a, pair_b, crowd_b)):
        da, db = _dense(masks_a, int(a)), _dense(masks_b, int(b))
        inter = int(np.count_nonzero(da & db))
        if inter:
            union = int(np.count_nonzero(da)) if c else int(np.count_nonzero(da | db))
            out[p] = inter / union
    return out
