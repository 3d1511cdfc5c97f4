"""One-shot evaluation: each function runs the pipeline's stages by name.

``load`` (:mod:`deteval.io`: files -> columnar tables) -> ``match`` (:mod:`deteval.match`:
tables -> per-detection match records) -> ``ap`` (:mod:`deteval.ap`: records -> curves,
AP and named figures) -> ``report`` (:mod:`deteval.report`: figures -> result objects and
their JSON/table forms).
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from .ap import summarize_coco, summarize_voc
from .errors import InputError, expected
from .match import match_coco, match_voc
from .params import (COCO_RECALL_THRESHOLDS, VOC_COMPATS, VOC_DEFAULT_METRIC,
                     VOC_IOU_THRESHOLD, VOC_METRICS, check_choice, check_iou, coco_params)
from .report import CocoReport, VocReport, coco_report, voc_report
from .tables import Detections, GroundTruth, merge_classes

__all__ = ["evaluate_voc", "evaluate_coco"]

PathLike = Union[str, os.PathLike]


def evaluate_voc(annotations: Union[PathLike, GroundTruth],
                 detections: Union[PathLike, Detections], *,
                 imageset: Optional[PathLike] = None, metric: str = VOC_DEFAULT_METRIC,
                 iou_threshold: float = VOC_IOU_THRESHOLD, compat: str = "devkit",
                 classes: Optional[Sequence[str]] = None,
                 stages: Optional[dict] = None, bootstrap: Optional[int] = None,
                 seed: int = 0, confidence: float = 0.95) -> VocReport:
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
    stages : dict, optional
        Filled with the pipeline's intermediate results by name (``gt``, ``det``,
        ``matches``, ``summary``), for diagnostics that reuse the one matching pass.
    bootstrap, seed, confidence : optional
        ``bootstrap=N``: image-bootstrap intervals from ``N`` replicates drawn with
        ``numpy.random.default_rng(seed)`` (see :mod:`deteval.bootstrap`), in
        ``report.uncertainty``.

    Returns
    -------
    VocReport
    """
    check_choice("metric", metric, VOC_METRICS)
    check_choice("compat", compat, VOC_COMPATS)
    if bootstrap is not None:
        from .bootstrap import check_bootstrap_params, check_seed
        check_bootstrap_params(bootstrap, confidence)
        check_seed(seed)
    iou_threshold = check_iou("iou_threshold", iou_threshold)
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
              "ground_truth_sha256": gt.fingerprint()}
    unused = det.sources.get("unused_files")
    if unused:
        inputs["unused_detection_files"] = unused
    summary = summarize_voc(matches, metric, compat)
    if stages is not None:
        stages.update(gt=gt, det=det, matches=matches, summary=summary)
    report = voc_report(summary, gt.class_names, metric, compat, iou_threshold,
                        inputs=inputs, class_notes=notes)
    if bootstrap is not None:
        from .bootstrap import voc_records, voc_uncertainty
        report = replace(report, uncertainty=voc_uncertainty(
            voc_records(gt, det, matches, compat), metric, compat, gt.class_names, bootstrap,
            seed, confidence))
    return report


def evaluate_coco(ground_truth: Union[PathLike, dict, GroundTruth],
                  results: Union[PathLike, list, Detections], *,
                  iou_thresholds: Optional[Iterable[float]] = None,
                  area_ranges: Optional[Dict[str, Tuple[float, float]]] = None,
                  max_dets: Optional[Sequence[int]] = None,
                  class_agnostic: bool = False, iou_type: str = "bbox",
                  oks_sigmas: Optional[Sequence[float]] = None,
                  stages: Optional[dict] = None, bootstrap: Optional[int] = None,
                  seed: int = 0, confidence: float = 0.95) -> CocoReport:
    """Evaluate detections with the COCO protocol (pycocotools ``COCOeval``).

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
    max_dets : sequence of int, optional
        Increasing; AP figures use the largest. Default ``1, 10, 100`` (keypoints: ``20``).
    iou_type : {"bbox", "segm", "keypoints"}
        What is matched: boxes, masks (``segmentation``) or keypoints (OKS), as pycocotools'
        ``iouType``. Keypoints default to pycocotools' keypoint parameters (max dets 20,
        area ranges all / medium / large) and report ``AP, AP50, AP75, APm, APl, AR, AR50,
        AR75, ARm, ARl``.
    oks_sigmas : sequence of float, optional
        Per-keypoint sigmas (keypoints); default the 17 COCO person sigmas. Their number
        must equal the keypoint count.
    class_agnostic : bool
        Ignore categories when matching (pycocotools' ``useCats=0``): the report then has
        one class row, ``{"id": None, "name": "(all classes)"}``.
    stages : dict, optional
        Filled with the pipeline's intermediate results by name (``gt``, ``det``,
        ``matches``, ``summary``), for diagnostics that reuse the one matching pass.
    bootstrap, seed, confidence : optional
        ``bootstrap=N``: image-bootstrap intervals of every figure from ``N`` replicates
        drawn with ``numpy.random.default_rng(seed)`` (see :mod:`deteval.bootstrap`), in
        ``report.uncertainty``.

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
    from .io.coco_geometry import load_ground_truth_geometry, load_results_geometry
    thr, areas, md, default = coco_params(iou_thresholds, area_ranges, max_dets, iou_type)
    if bootstrap is not None:
        from .bootstrap import check_bootstrap_params, check_seed
        check_bootstrap_params(bootstrap, confidence)
        check_seed(seed)
    sigmas = None
    if iou_type == "keypoints":
        sigmas = _oks_sigmas(oks_sigmas)
    elif oks_sigmas is not None:
        raise InputError(expected("oks_sigmas", "None unless iou_type='keypoints'", oks_sigmas))
    if class_agnostic and iou_type != "bbox":
        raise InputError(expected("class_agnostic", "False with segm or keypoints (not "
                                  "supported yet)", class_agnostic))
    gt = (ground_truth if isinstance(ground_truth, GroundTruth)
          else load_ground_truth_geometry(ground_truth, iou_type,
                                          None if sigmas is None else len(sigmas)))
    det = (results if isinstance(results, Detections)
           else load_results_geometry(results, gt, iou_type))
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    inputs = {"ground_truth": gt.sources.get("ground_truth"),
              "results": det.sources.get("results"), "num_images": gt.num_images,
              "num_detections": len(det), "ground_truth_sha256": gt.fingerprint()}
    class_ids = gt.class_ids
    if class_agnostic:
        gt, det = merge_classes(gt, det)
        class_ids = [None]
    geometry = _geometry(gt, det, iou_type, sigmas)
    matches = match_coco(gt, det, thr, area_arr, md[-1], **geometry)
    summary = summarize_coco(matches, thr, list(areas), md, COCO_RECALL_THRESHOLDS, default,
                             iou_type)
    if stages is not None:
        stages.update(gt=gt, det=det, matches=matches, summary=summary)
    report = coco_report(summary, class_ids, gt.class_names, thr, areas, md,
                         COCO_RECALL_THRESHOLDS, inputs=inputs, iou_type=iou_type)
    if class_agnostic:
        report.params["class_agnostic"] = True
    if not len(gt.class_names):
        report.notes.append("the ground truth has no categories: every figure is undefined "
                            "(pycocotools prints -1)")
    if sigmas is not None:
        report.params["oks_sigmas"] = [float(v) for v in sigmas]
    if bootstrap is not None:
        from .bootstrap import coco_uncertainty
        report = replace(report, uncertainty=coco_uncertainty(
            gt, matches, area_arr, list(areas), thr, md, COCO_RECALL_THRESHOLDS, default,
            iou_type, [c["name"] for c in report.classes], bootstrap, seed, confidence,
            gt_ignore=geometry.get("gt_ignore")))
    return report


def _oks_sigmas(oks_sigmas) -> np.ndarray:
    from .keypoints import COCO_PERSON_SIGMAS
    if oks_sigmas is None:
        return COCO_PERSON_SIGMAS.copy()
    try:
        sig = np.array([float(v) for v in oks_sigmas], dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(expected("oks_sigmas", "a list of positive numbers", oks_sigmas)
                         ) from None
    if sig.size == 0 or not np.all(np.isfinite(sig) & (sig > 0)):
        raise InputError(expected("oks_sigmas", "a non-empty list of positive numbers",
                                  list(oks_sigmas)))
    return sig


def _geometry(gt: GroundTruth, det: Detections, iou_type: str, sigmas) -> dict:
    """The IoU step of ``iou_type`` for :func:`match_coco` (masks, OKS; boxes by default)."""
    if iou_type == "bbox":
        return {}
    if iou_type == "segm":
        from .masks import rle_pair_ious

        def pair_iou(det_rows, gt_rows):
            return rle_pair_ious(det.masks, gt.masks, det_rows, gt_rows, gt.crowd[gt_rows])

        return {"pair_iou": pair_iou, "det_area": det.area}
    from .keypoints import oks_pairs

    def pair_oks(det_rows, gt_rows):
        return oks_pairs(det.keypoints, gt.keypoints, gt.boxes, gt.area, det_rows, gt_rows,
                         sigmas)

    return {"pair_iou": pair_oks, "det_area": det.area,
            "gt_ignore": gt.crowd | (gt.num_keypoints == 0)}
