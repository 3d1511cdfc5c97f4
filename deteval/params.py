"""Evaluation parameters: every default and its validation, in one home.

The COCO parameters are pycocotools' ``Params`` (bbox): IoU thresholds ``0.50:0.05:0.95``,
101 recall points, max detections ``1, 10, 100`` and the all / small / medium / large area
ranges. The VOC options are the metric (``voc07`` 11-point, ``voc12`` area), the IoU
threshold and the protocol (``devkit`` or ``detectron2``). Validation raises
:class:`~deteval.errors.InputError` with the ``Expected `x` to be ... but got ...`` pattern;
the CLI help strings and the streaming metric read the same defaults from here.

References
----------
.. [1] pycocotools ``cocoeval.py``, class ``Params`` (``setDetParams``).
.. [2] PASCAL VOC devkit ``VOCevaldet.m`` (IoU 0.5) and ``VOCap.m`` / the VOC2007 11-point rule.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Sequence, Tuple

import numpy as np

from .errors import InputError, expected

__all__ = ["COCO_IOU_THRESHOLDS", "COCO_RECALL_THRESHOLDS", "COCO_MAX_DETS",
           "COCO_AREA_RANGES", "COCO_KEYPOINT_MAX_DETS", "COCO_KEYPOINT_AREA_RANGES",
           "COCO_IOU_TYPES", "VOC_METRICS", "VOC_COMPATS", "VOC_IOU_THRESHOLD",
           "check_choice", "check_iou", "coco_params"]

#: pycocotools' ``iouThrs``: 0.5:0.05:0.95.
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1,
                                  endpoint=True)
#: pycocotools' ``recThrs``: 101 points.
COCO_RECALL_THRESHOLDS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1,
                                     endpoint=True)
#: pycocotools' ``maxDets``.
COCO_MAX_DETS = (1, 10, 100)
#: pycocotools' ``areaRng`` under its ``areaRngLbl`` names.
COCO_AREA_RANGES = {"all": (0.0, 1e5 ** 2), "small": (0.0, 32.0 ** 2),
                    "medium": (32.0 ** 2, 96.0 ** 2), "large": (96.0 ** 2, 1e5 ** 2)}

#: pycocotools' keypoint parameters (``setKpParams``): one max-detections value and no
#: ``small`` range.
COCO_KEYPOINT_MAX_DETS = (20,)
COCO_KEYPOINT_AREA_RANGES = {"all": (0.0, 1e5 ** 2), "medium": (32.0 ** 2, 96.0 ** 2),
                             "large": (96.0 ** 2, 1e5 ** 2)}
COCO_IOU_TYPES = ("bbox", "segm", "keypoints")

#: ``voc12``: area under the precision envelope (VOC2010+); ``voc07``: 11-point.
VOC_METRICS = ("voc07", "voc12")
VOC_DEFAULT_METRIC = "voc12"
#: ``devkit``: the official devkit; ``detectron2``: py-faster-rcnn / detectron2 ``voc_eval``.
VOC_COMPATS = ("devkit", "detectron2")
VOC_IOU_THRESHOLD = 0.5


def check_choice(name: str, value, choices: Sequence) -> None:
    """Raise ``Expected `name` to be one of ... but got ...`` for a bad option."""
    if value not in choices:
        raise InputError(f"Expected `{name}` to be one of {', '.join(map(repr, choices))} "
                         f"but got {value!r}")


def check_iou(name: str, value) -> float:
    """``value`` as a float in [0, 1], or an InputError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (0.0 <= v <= 1.0):
        raise InputError(expected(name, "a number in [0, 1]", value))
    return v


def coco_params(iou_thresholds: Optional[Iterable[float]] = None,
                area_ranges: Optional[Dict[str, Tuple[float, float]]] = None,
                max_dets: Optional[Sequence[int]] = COCO_MAX_DETS, iou_type: str = "bbox"
                ) -> Tuple[np.ndarray, Dict[str, Tuple[float, float]], Tuple[int, ...], bool]:
    """Validate COCO parameters; ``None`` means pycocotools' default for ``iou_type``.

    Returns
    -------
    iou_thresholds : ndarray of float64, shape (T,)
    area_ranges : dict name -> (lo, hi)
    max_dets : tuple of int, increasing
    default_thresholds : bool
        Whether the thresholds are pycocotools' ten (the figures are then named
        AP50 / AP75 only).
    """
    default = iou_thresholds is None
    if default:
        thr = COCO_IOU_THRESHOLDS.copy()
    else:
        try:
            thr = np.array([float(t) for t in iou_thresholds], dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(expected("iou_thresholds", "a list of numbers in [0, 1]",
                                      iou_thresholds)) from None
        if thr.size == 0 or not np.all((thr >= 0) & (thr <= 1)):
            raise InputError(expected("iou_thresholds", "a non-empty list of numbers in [0, 1]",
                                      list(iou_thresholds)))
        default = thr.shape == COCO_IOU_THRESHOLDS.shape and bool(
            np.all(thr == COCO_IOU_THRESHOLDS))
    check_choice("iou_type", iou_type, COCO_IOU_TYPES)
    if max_dets is None:
        max_dets = COCO_KEYPOINT_MAX_DETS if iou_type == "keypoints" else COCO_MAX_DETS
    if area_ranges is None:
        areas = dict(COCO_KEYPOINT_AREA_RANGES if iou_type == "keypoints" else COCO_AREA_RANGES)
    else:
        try:
            areas = {str(k): (float(v[0]), float(v[1])) for k, v in dict(area_ranges).items()}
        except (TypeError, ValueError, IndexError):
            raise InputError(expected("area_ranges", "a mapping name -> (lo, hi)",
                                      area_ranges)) from None
        if not areas or any(not (lo <= hi) for lo, hi in areas.values()):
            raise InputError(expected("area_ranges", "non-empty ranges with lo <= hi",
                                      area_ranges))
    try:
        md = tuple(int(m) for m in max_dets)
    except (TypeError, ValueError):
        raise InputError(expected("max_dets", "a list of positive integers", max_dets)) from None
    if not md or any(m <= 0 for m in md) or list(md) != sorted(set(md)):
        raise InputError(expected("max_dets", "increasing positive integers", list(max_dets)))
    return thr, areas, md, default
