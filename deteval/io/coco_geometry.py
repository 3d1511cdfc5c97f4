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
import os
from typing import Optional

import numpy as np

from ..errors import InputError, expected
from ..masks import masks_from_segmentations
from ..tables import Detections, GroundTruth
from . import coco as coco_io

__all__ = ["load_ground_truth_geometry", "load_results_geometry", "IOU_TYPES"]

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
    kps, num = [], []
    for i, a in enumerate(anns):
        k = a.get("keypoints")
        if not isinstance(k, list) or len(k) % 3 or not all(
                coco_io._is_number(v) for v in k):
            raise InputError(expected("keypoints", "a list of 3K numbers x, y, v", k), name,
                             coco_io._where("annotations", i, a))
        nk = a.get("num_keypoints")
        if not coco_io._is_int(nk):
            raise InputError(expected("num_keypoints", "an integer", nk), name,
                             coco_io._where("annotations", i, a))
        kps.append(k)
        num.append(nk)
    lengths = {len(k) for k in kps}
    if len(lengths) > 1 or (sigmas_count is not None and lengths and
                            lengths != {3 * sigmas_count}):
        i = next(i for i, k in enumerate(kps) if len(k) != (3 * sigmas_count if sigmas_count
                                                              else len(kps[0])))
        raise InputError(expected("keypoints", f"{sigmas_count or len(kps[0]) // 3} keypoints "
                                  "(3 numbers each, one sigma per keypoint; see --oks-sigmas)",
                                  f"{len(kps[i]) // 3} keypoints"), name,
                         coco_io._where("annotations", i, anns[i]))
    K = lengths.pop() // 3 if lengths else (sigmas_count or 0)
    arr = np.array(kps, dtype=np.float64).reshape(len(kps), K, 3)
    return dataclasses.replace(gt, keypoints=arr, num_keypoints=np.array(num, dtype=np.int64))


def load_results_geometry(source, gt: GroundTruth, iou_type: str) -> Detections:
    """Results for ``segm`` / ``keypoints`` (for ``bbox``, :func:`load_coco_results`)."""
    if iou_type == "bbox":
        return coco_io.load_coco_results(source, gt)
    name = coco_io._source_name(source, "<results>")
    data = _data(source, name, "results")
    if not isinstance(data, list):
        raise InputError(expected("results", "a JSON list of results", type(data).__name__),
                         name)
    n = len(data)
    img = coco_io._int_column(data, "image_id", name, "results")
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
    kps = []
    for i, r in enumerate(data):
        k = r["keypoints"]
        if (not isinstance(k, list) or (K is not None and len(k) != 3 * K) or len(k) % 3
                or not k or not all(coco_io._is_number(v) for v in k)):
            raise InputError(expected("keypoints", f"a list of {3 * K if K else '3K'} numbers "
                                      "x, y, v", k), name, f"results[{i}]")
        kps.append(k)
    arr = np.array(kps, dtype=np.float64).reshape(n, -1, 3) if n else np.zeros((0, K or 0, 3))
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
