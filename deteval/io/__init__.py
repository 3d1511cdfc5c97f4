"""Loaders: files in, columnar tables (:mod:`deteval.tables`) out."""
from .voc import load_voc_annotations, load_voc_detections, read_imageset
from .coco import load_coco_ground_truth, load_coco_results

__all__ = ["load_voc_annotations", "load_voc_detections", "read_imageset",
           "load_coco_ground_truth", "load_coco_results"]
