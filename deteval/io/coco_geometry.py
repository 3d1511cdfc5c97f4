"""COCO segmentations and keypoints: the mask and keypoint columns of the tables.

The box columns come from :mod:`deteval.io.coco`; this module adds, row for row, what the
``segm`` and ``keypoints`` iouTypes need, with pycocotools' ``loadRes`` / ``annToRLE`` rules:

* ground truth: ``segmentation`` (polygons, uncompressed or compressed RLE) on the image's
  ``height`` x ``width``; ``keypoints`` (``3K`` numbers) and ``num_keypoints``;
* results: the kind is decided by the first result, as ``loadRes`` does: with a ``bbox``,
  a result's area is the box's ``w * h``; otherwise a segmentation result's area is its mask
  area and a keypoint result's area and box come from its keypoints' extent.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
from typing import List, Optional, Tuple

import msgspec
import numpy as np

from ..errors import InputError, expected
from ..masks import masks_from_segmentations
from ..tables import Detections, GroundTruth
from . import coco as coco_io

__all__ = ["load_ground_truth_geometry", "load_results_geometry", "IOU_TYPES"]


# Typed schemas for the usual results file: msgspec decodes straight into these (several
# times faster than generic dicts); anything unusual falls back to the generic reading,
# which names the problem.
class _Rle(msgspec.Struct, gc=False):  # compressed (pycocotools' loadRes takes only these)
    size: Tuple[int, int]
    counts: str


class _SegmResult(msgspec.Struct, gc=False):
    image_id: int
    category_id: int
    score: float
    segmentation: _Rle
    bbox: Optional[Tuple[float, float, float, float]] = None


class _KeypointResult(msgspec.Struct, gc=False):
    image_id: int
    category_id: int
    score: float
    keypoints: List[float]
    bbox: Optional[List[float]] = None


_SEGM_RESULTS = msgspec.json.Decoder(List[_SegmResult])
_KEYPOINT_RESULTS = msgspec.json.Decoder(List[_KeypointResult])

IOU_TYPES = ("bbox", "segm", "keypoints")


def _data(source, name: str, what: str):
    if isinstance(source, (str, os.PathLike)):
        raw = coco_io._read_bytes(source)
        try:
            import msgspec
            return msgspec.json.decode(raw)
        except Exception:  # msgspec's errors and RecursionError: json names the problem
            return coco_io._parse_json(raw, name)
    return source


def _image_sizes(data: dict, gt: GroundTruth, name: str):
    images = data.get("images", [])
    h = np.zeros(gt.num_images, dtype=np.int64)
    w = np.zeros(gt.num_images, dtype=np.int64)
    iorder = np.argsort(gt.image_ids, kind="stable")
    for i, im in enumerate(images):
        hh, ww = im.get("height"), im.get("width")
        if not (isinstance(hh, int) and isinstance(ww, int) and hh > 0 and ww > 0):
            raise InputError(expected("height/width", "positive integers (segmentation masks "
                                      "are rasterised on the image)", [hh, ww]), name,
                             f"images[{i}] (id {im.get('id')})")
        j = iorder[np.searchsorted(gt.image_ids[iorder], im["id"])]
        h[j], w[j] = hh, ww
    return h, w


def load_ground_truth_geometry(source, iou_type: str,
                               sigmas_count: Optional[int] = None) -> GroundTruth:
    """:func:`deteval.io.coco.load_coco_ground_truth` plus the masks (``segm``) or the
    keypoints (``keypoints``) of every annotation, row for row."""
    gt = coco_io.load_coco_ground_truth(source)
    if iou_type == "bbox":
        return gt
    name = coco_io._source_name(source, "<ground truth>")
    data = _data(source, name, "ground truth")
    anns = data["annotations"]
    if iou_type == "segm":
        h, w = _image_sizes(data, gt, name)
        missing = [i for i, a in enumerate(anns) if "segmentation" not in a]
        if missing:
            i = missing[0]
            raise InputError("Expected a `segmentation` in every annotation for --iou-type "
                             "segm but got none", name, coco_io._where("annotations", i, anns[i]))
        masks = masks_from_segmentations([a["segmentation"] for a in anns], h[gt.image_idx],
                                         w[gt.image_idx], name, "annotations",
                                         [a.get("id") for a in anns])
        return dataclasses.replace(gt, masks=masks, image_sizes=np.stack([h, w], axis=1))
    kps = [a.get("keypoints") for a in anns]
    num = [a.get("num_keypoints") for a in anns]
    want = 3 * sigmas_count if sigmas_count else None
    arr = _keypoint_array(kps, want, name, "annotations", anns)
    bad_num = [i for i, v in enumerate(num) if not coco_io._is_int(v)]
    if bad_num:
        i = bad_num[0]
        raise InputError(expected("num_keypoints", "an integer", num[i]), name,
                         coco_io._where("annotations", i, anns[i]))
    return dataclasses.replace(gt, keypoints=arr, num_keypoints=np.array(num, dtype=np.int64))


def load_results_geometry(source, gt: GroundTruth, iou_type: str) -> Detections:
    """Results for ``segm`` / ``keypoints`` (for ``bbox``, :func:`load_coco_results`)."""
    if iou_type == "bbox":
        return coco_io.load_coco_results(source, gt)
    name = coco_io._source_name(source, "<results>")
    if isinstance(source, (str, os.PathLike)):
        fast = _typed_results(coco_io._read_bytes(source), gt, iou_type, name)
        if fast is not None:
            return fast
    data = _data(source, name, "results")
    if not isinstance(data, list):
        raise InputError(expected("results", "a JSON list of results", type(data).__name__),
                         name)
    n = len(data)
    img = coco_io._id_column(data, "image_id", name, "results")
    coco_io._same_id_type(img, gt.image_ids, data, "image_id", name, "results")
    cat = coco_io._int_column(data, "category_id", name, "results")
    scores = coco_io._float_column(data, "score", name, "results")
    with_box = n > 0 and isinstance(data[0], dict) and "bbox" in data[0] and data[0]["bbox"] != []
    boxes = coco_io._box_column(data, name, "results") if with_box else np.zeros((n, 4))
    det = coco_io._detections_from_columns(img, cat, boxes, scores, gt, name)
    key = "segmentation" if iou_type == "segm" else "keypoints"
    missing = [i for i, r in enumerate(data) if key not in r]
    if missing:
        raise InputError(f"Expected a `{key}` in every result for --iou-type {iou_type} but "
                         f"got none", name, f"results[{missing[0]}]")
    if iou_type == "segm":
        if gt.masks is None or gt.image_sizes is None:
            raise InputError("Expected ground truth loaded with its segmentations", name)
        h, w = gt.image_sizes[det.image_idx, 0], gt.image_sizes[det.image_idx, 1]
        masks = masks_from_segmentations([r["segmentation"] for r in data], h, w, name,
                                         "results")
        area = boxes[:, 2] * boxes[:, 3] if with_box else masks.areas.astype(np.float64)
        if not with_box:
            boxes = _mask_boxes(masks)
        return dataclasses.replace(det, masks=masks, area=area, boxes=boxes)
    K = gt.keypoints.shape[1] if gt.keypoints is not None else None
    arr = _keypoint_array([r["keypoints"] for r in data], 3 * K if K else None, name,
                          "results", data)
    x, y = arr[:, :, 0], arr[:, :, 1]
    if n:
        x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
    else:
        x0 = x1 = y0 = y1 = np.zeros(0)
    if with_box:
        area = boxes[:, 2] * boxes[:, 3]
    else:
        area = (x1 - x0) * (y1 - y0)
        boxes = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1) if n else np.zeros((0, 4))
    return dataclasses.replace(det, keypoints=arr, area=area, boxes=boxes)


def _typed_results(raw: bytes, gt: GroundTruth, iou_type: str, name: str):
    """The usual results file read through msgspec's typed decoding, or None when anything
    is unusual (the generic reading then decides and names the problem)."""
    from ..masks import MaskSet, _decode_strings
    if iou_type == "segm":
        fast = _scanned_segm_results(raw, gt, name)
        if fast is not None:
            return fast
    try:
        with coco_io._no_gc():
            recs = (_SEGM_RESULTS if iou_type == "segm" else _KEYPOINT_RESULTS).decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, OverflowError):
        return None
    n = len(recs)
    if n == 0:
        return None
    img = np.fromiter([r.image_id for r in recs], np.int64, n)
    cat = np.fromiter([r.category_id for r in recs], np.int64, n)
    scores = np.fromiter([r.score for r in recs], np.float64, n)
    with_box = recs[0].bbox is not None and len(recs[0].bbox) != 0
    boxes = np.zeros((n, 4))
    if with_box:
        given = [r.bbox for r in recs]
        if None in given or any(len(b) != 4 for b in given):  # segm: tuples of 4 already
            return None
        boxes = np.fromiter(itertools.chain.from_iterable(given), np.float64,
                            4 * n).reshape(n, 4)
    if not (np.isfinite(scores).all() and np.isfinite(boxes).all()
            and (boxes[:, 2:] >= 0).all()):
        return None
    det = coco_io._detections_from_columns(img, cat, boxes, scores, gt, name)
    if iou_type == "segm":
        if gt.image_sizes is None:
            return None
        segs = [r.segmentation for r in recs]  # sizes (h, w) and string counts, typed
        sizes = np.fromiter(itertools.chain.from_iterable([g.size for g in segs]), np.int64,
                            2 * n).reshape(n, 2)
        strings = [g.counts for g in segs]
        h, w = gt.image_sizes[det.image_idx, 0], gt.image_sizes[det.image_idx, 1]
        if not (np.array_equal(sizes[:, 0], h) and np.array_equal(sizes[:, 1], w)):
            return None
        try:
            counts, lengths, totals, areas = _decode_strings(strings)
        except (ValueError, UnicodeEncodeError):
            return None
        if not np.array_equal(totals, h * w):
            return None
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        masks = MaskSet(counts=counts, offsets=offsets, heights=h.astype(np.int64),
                        widths=w.astype(np.int64), areas=areas)
        area = boxes[:, 2] * boxes[:, 3] if with_box else areas.astype(np.float64)
        return dataclasses.replace(det, masks=masks, area=area,
                                   boxes=boxes if with_box else _mask_boxes(masks))
    K = gt.keypoints.shape[1] if gt.keypoints is not None else None
    if K is None or any(len(r.keypoints) != 3 * K for r in recs):
        return None
    arr = np.fromiter(itertools.chain.from_iterable([r.keypoints for r in recs]), np.float64,
                      3 * K * n).reshape(n, K, 3)
    if not np.isfinite(arr).all():
        return None
    x, y = arr[:, :, 0], arr[:, :, 1]
    x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
    if with_box:
        area = boxes[:, 2] * boxes[:, 3]
    else:
        area = (x1 - x0) * (y1 - y0)
        boxes = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
    return dataclasses.replace(det, keypoints=arr, area=area, boxes=boxes)


def _scanned_segm_results(raw: bytes, gt: GroundTruth, name: str):
    """Segmentation results read and their masks decoded in one compiled pass over the file
    (:func:`deteval._native.scan_coco_segm_results`), or None: the typed reading decides."""
    from .. import _native
    from ..masks import MaskSet
    found = _native.scan_coco_segm_results(raw)
    if found is None or gt.image_sizes is None:
        return None
    n = found.image_id.shape[0]
    boxes = found.bbox
    if not (np.isfinite(found.score).all() and np.isfinite(boxes).all()
            and (boxes[:, 2:] >= 0).all()):
        return None
    det = coco_io._detections_from_columns(found.image_id, found.category_id, boxes,
                                           found.score, gt, name)
    h, w = gt.image_sizes[det.image_idx, 0], gt.image_sizes[det.image_idx, 1]
    if not (np.array_equal(found.height, h) and np.array_equal(found.width, w)
            and np.array_equal(found.totals, h * w)):
        return None
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(found.lengths, out=offsets[1:])
    masks = MaskSet(counts=found.runs, offsets=offsets, heights=h.astype(np.int64),
                    widths=w.astype(np.int64), areas=found.areas)
    with_box = found.with_bbox
    area = boxes[:, 2] * boxes[:, 3] if with_box else found.areas.astype(np.float64)
    return dataclasses.replace(det, masks=masks, area=area,
                               boxes=boxes if with_box else _mask_boxes(masks))


def _mask_boxes(masks) -> np.ndarray:
    """``[x, y, w, h]`` of each mask's foreground (pycocotools' ``toBbox``); zeros when empty."""
    out = np.zeros((len(masks), 4))
    for j in range(len(masks)):
        runs = masks.counts[masks.offsets[j]:masks.offsets[j + 1]].astype(np.int64)
        h = int(masks.heights[j])
        ends = np.cumsum(runs)
        starts = ends - runs
        fg = np.arange(runs.shape[0]) % 2 == 1
        fg &= runs > 0
        if not fg.any() or h == 0:
            continue
        s, e = starts[fg], ends[fg] - 1
        xs = np.concatenate([s // h, e // h])
        col_span = (e // h) > (s // h)
        ys_lo = np.where(col_span, 0, s % h)
        ys_hi = np.where(col_span, h - 1, e % h)
        out[j] = [xs.min(), ys_lo.min(), xs.max() - xs.min() + 1, ys_hi.max() - ys_lo.min() + 1]
    return out


def _keypoint_array(values, length, name, section, records) -> np.ndarray:
    """``(N, K, 3)`` float64 of the ``keypoints`` lists (one numpy conversion; a bad record is
    found and named only when the conversion fails)."""
    n = len(values)
    if n == 0:
        return np.zeros((0, (length or 0) // 3, 3))
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        arr = None
    ok = (arr is not None and arr.ndim == 2 and arr.shape[1] % 3 == 0 and arr.shape[1] > 0
          and (length is None or arr.shape[1] == length) and bool(np.isfinite(arr).all())
          and not any(isinstance(v, bool) for v in values[0]))
    if ok:
        return arr.reshape(n, -1, 3)
    first = values[0] if isinstance(values[0], list) else None
    want = length or (len(first) if first and len(first) % 3 == 0 else None)
    for i, k in enumerate(values):
        if (not isinstance(k, list) or not k or len(k) % 3 or (want and len(k) != want)
                or not all(coco_io._is_number(v) for v in k)):
            where = (coco_io._where(section, i, records[i]) if section == "annotations"
                     else f"{section}[{i}]")
            n_kp = f"{want // 3} keypoints (3 numbers each" + (", one sigma per keypoint: "
                                                                "see --oks-sigmas)" if length
                                                                else ")")
            raise InputError(expected("keypoints", f"a list of {n_kp}" if want else
                                      "a list of 3K numbers x, y, v", k), name, where)
    raise InputError(expected("keypoints", "lists of 3K finite numbers", "another value"), name)
