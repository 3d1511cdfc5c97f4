"""One-shot evaluation: load, match, accumulate, report."""
from __future__ import annotations

import os
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from .ap import COCO_IOU_THRESHOLDS, COCO_RECALL_THRESHOLDS
from .errors import InputError, expected
from .match import match_coco, match_voc
from .report import (DEFAULT_AREA_RANGES, CocoReport, VocReport, build_coco_report,
                     build_voc_report, ground_truth_fingerprint)
from .tables import Detections, GroundTruth

__all__ = ["evaluate_voc", "evaluate_coco", "check_choice", "coco_params"]

PathLike = Union[str, os.PathLike]


def check_choice(name: str, value, choices: Sequence) -> None:
    """Raise ``Expected `name` to be one of ... but got ...`` for a bad option."""
    if value not in choices:
        raise InputError(f"Expected `{name}` to be one of {', '.join(map(repr, choices))} "
                         f"but got {value!r}")


def _check_iou(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (0.0 <= v <= 1.0):
        raise InputError(expected(name, "a number in [0, 1]", value))
    return v


def evaluate_voc(annotations: Union[PathLike, GroundTruth],
                 detections: Union[PathLike, Detections], *,
                 imageset: Optional[PathLike] = None, metric: str = "voc12",
                 iou_threshold: float = 0.5, compat: str = "devkit",
                 classes: Optional[Sequence[str]] = None) -> VocReport:
    """Evaluate detections with the PASCAL VOC protocol.

    Parameters
    ----------
    annotations : path or GroundTruth
        A folder of ``<image_id>.xml`` files, a VOC year folder (``Annotations/``,
        ``ImageSets/Main/``), or a loaded table.
    detections : path or Detections
        A folder of per-class files ``<anything>_<class>.txt`` with lines
        ``<image_id> <score> <xmin> <ymin> <xmax> <ymax>``, or a loaded table.
    imageset : path or str, optional
        Image-set file, or a split name with a year folder. Default: every XML.
    metric : {"voc12", "voc07"}
        Area under the precision envelope (VOC2010+) or 11-point (VOC2007).
    iou_threshold : float
        Match threshold (inclusive under the devkit, exclusive under detectron2).
    compat : {"devkit", "detectron2"}
        The official devkit, or py-faster-rcnn / detectron2 ``voc_eval``.
    classes : sequence of str, optional
        Classes to evaluate; default every class in the ground truth.

    Returns
    -------
    VocReport
    """
    check_choice("metric", metric, ("voc07", "voc12"))
    check_choice("compat", compat, ("devkit", "detectron2"))
    iou_threshold = _check_iou("iou_threshold", iou_threshold)
    if classes is not None:
        classes = [str(c).strip() for c in classes]
        if not classes or any(not c for c in classes):
            raise InputError(expected("classes", "a list of non-empty class names", classes))
    from .io.voc import load_voc_annotations, load_voc_detections
    gt = (annotations if isinstance(annotations, GroundTruth)
          else load_voc_annotations(annotations, imageset, classes))
    det = (detections if isinstance(detections, Detections)
           else load_voc_detections(detections, gt))
    matches = match_voc(gt, det, iou_threshold, compat)
    notes = {}
    for cls in det.sources.get("missing_files", []):
        notes[cls] = "no detection file: 0 detections, AP 0"
    inputs = {"annotations": gt.sources.get("annotations"),
              "imageset": gt.sources.get("imageset"),
              "detections": det.sources.get("detections"),
              "num_images": gt.num_images, "num_detections": len(det),
              "ground_truth_sha256": ground_truth_fingerprint(gt)}
    unused = det.sources.get("unused_files")
    if unused:
        inputs["unused_detection_files"] = unused
    return build_voc_report(matches, gt.class_names, metric, compat, iou_threshold,
                            inputs=inputs, class_notes=notes)


def coco_params(iou_thresholds=None, area_ranges=None, max_dets=(1, 10, 100)
                ) -> Tuple[np.ndarray, Dict[str, Tuple[float, float]], Tuple[int, ...], bool]:
    """Validate COCO parameters; defaults are pycocotools' (bbox)."""
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
    if area_ranges is None:
        areas = dict(DEFAULT_AREA_RANGES)
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


def evaluate_coco(ground_truth: Union[PathLike, dict, GroundTruth],
                  results: Union[PathLike, list, Detections], *,
                  iou_thresholds: Optional[Iterable[float]] = None,
                  area_ranges: Optional[Dict[str, Tuple[float, float]]] = None,
                  max_dets: Sequence[int] = (1, 10, 100)) -> CocoReport:
    """Evaluate detections with the COCO protocol (pycocotools ``COCOeval``, bbox).

    Parameters
    ----------
    ground_truth : path, dict or GroundTruth
        A COCO instances file, its loaded dict, or a loaded table.
    results : path, list or Detections
        A results file (list of ``image_id``, ``category_id``, ``bbox`` [x,y,w,h],
        ``score``), the loaded list, or a loaded table.
    iou_thresholds : iterable of float, optional
        Default ``0.50:0.05:0.95``.
    area_ranges : dict name -> (lo, hi), optional
        Default all / small / medium / large with pycocotools' bounds.
    max_dets : sequence of int
        Increasing; AP figures use the largest.

    Returns
    -------
    CocoReport
        ``stats`` by name (``AP``, ``AP50``, ..., ``ARl``) and per-class figures;
        ``None`` where pycocotools would print -1.

    Notes
    -----
    Matches are recorded by position, so a GT with annotation id 0 can be a true
    positive (pycocotools never counts it).
    """
    from .io.coco import load_coco_ground_truth, load_coco_results
    thr, areas, md, default = coco_params(iou_thresholds, area_ranges, max_dets)
    gt = (ground_truth if isinstance(ground_truth, GroundTruth)
          else load_coco_ground_truth(ground_truth))
    det = results if isinstance(results, Detections) else load_coco_results(results, gt)
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    matches = match_coco(gt, det, thr, area_arr, md[-1])
    inputs = {"ground_truth": gt.sources.get("ground_truth"),
              "results": det.sources.get("results"), "num_images": gt.num_images,
              "num_detections": len(det), "ground_truth_sha256": ground_truth_fingerprint(gt)}
    return build_coco_report(matches, gt.class_ids, gt.class_names, thr, areas, md,
                             COCO_RECALL_THRESHOLDS, default, inputs=inputs)
