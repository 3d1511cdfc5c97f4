"""Columnar tables passed between the pipeline stages.

Loaders (``deteval.io``) produce a :class:`GroundTruth` and a :class:`Detections`
table: one numpy array per field, with ``image_idx`` / ``class_idx`` positions
into the id tables ``image_ids`` / ``class_names``.  No per-object dicts.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["GroundTruth", "Detections", "BOX_FORMATS", "fingerprint_rows", "merge_classes"]

#: ``"xyxy_pixel"``: VOC inclusive pixel corners (width = x2 - x1 + 1);
#: ``"xywh"``: COCO continuous ``[x, y, w, h]``.
BOX_FORMATS = ("xyxy_pixel", "xywh")


@dataclass(frozen=True)
class GroundTruth:
    """Ground-truth objects, one row per object, in file order.

    Attributes
    ----------
    image_idx : ndarray of int64, shape (G,)
        Position of the object's image in ``image_ids``.
    class_idx : ndarray of int64, shape (G,)
        Position of the object's class in ``class_names``.
    boxes : ndarray of float64, shape (G, 4)
        In ``box_format``.
    difficult : ndarray of bool, shape (G,)
        VOC ``<difficult>`` flag (all False for COCO).
    crowd : ndarray of bool, shape (G,)
        COCO ``iscrowd`` flag (all False for VOC).
    area : ndarray of float64, shape (G,)
        COCO annotation ``area`` (the segmentation area); box area for VOC.
    image_ids : ndarray, shape (I,)
        External image ids (str for VOC, int for COCO), in evaluation order.
    class_names : tuple of str, length K
    class_ids : ndarray of int64, shape (K,), optional
        External category ids (COCO).
    box_format : str
        One of :data:`BOX_FORMATS`.
    """

    image_idx: np.ndarray
    class_idx: np.ndarray
    boxes: np.ndarray
    difficult: np.ndarray
    crowd: np.ndarray
    area: np.ndarray
    image_ids: np.ndarray
    class_names: Tuple[str, ...]
    class_ids: Optional[np.ndarray] = None
    box_format: str = "xyxy_pixel"
    sources: dict = field(default_factory=dict)
    masks: Optional[Any] = None  # deteval.masks.MaskSet, one mask per row (segm)
    keypoints: Optional[np.ndarray] = None  # (G, K, 3) x, y, visibility (keypoints)
    num_keypoints: Optional[np.ndarray] = None  # (G,) int64 (keypoints)
    image_sizes: Optional[np.ndarray] = None  # (I, 2) int64 height, width per image (segm)

    def __len__(self) -> int:
        return int(self.image_idx.shape[0])

    @property
    def num_images(self) -> int:
        return int(len(self.image_ids))

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def fingerprint(self) -> str:
        """SHA-256 of the objects' content (:func:`fingerprint_rows`), independent of file
        paths and image order: two reports are comparable only when computed on the same
        ground truth."""
        return _ground_truth_fingerprint(self)


@dataclass(frozen=True)
class Detections:
    """Detections, one row per detection, in file order.

    Attributes
    ----------
    image_idx, class_idx : ndarray of int64, shape (N,)
        Positions into the ground truth's ``image_ids`` / ``class_names``.
    boxes : ndarray of float64, shape (N, 4)
        Same ``box_format`` as the ground truth.
    scores : ndarray of float64, shape (N,)
        Confidence; finite.
    order : ndarray of int64, shape (N,)
        File order: the tie-break key among equal scores (line or record number).
    """

    image_idx: np.ndarray
    class_idx: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    order: np.ndarray
    sources: dict = field(default_factory=dict)
    masks: Optional[Any] = None  # deteval.masks.MaskSet, one mask per row (segm)
    keypoints: Optional[np.ndarray] = None  # (N, K, 3) (keypoints)
    area: Optional[np.ndarray] = None  # (N,) the area-range area when not the box's w*h

    def __len__(self) -> int:
        return int(self.scores.shape[0])


def fingerprint_rows(image_ids, class_keys, boxes, difficult, crowd, area) -> str:
    """SHA-256 of ground-truth objects, independent of file paths and image order.

    Parameters
    ----------
    image_ids : sequence, shape (G,)
        External image id of each object.
    class_keys : sequence, shape (G,)
        Category id (COCO) or class name (VOC) of each object.
    boxes : ndarray of float64, shape (G, 4)
    difficult, crowd : ndarray of bool, shape (G,)
    area : ndarray of float64, shape (G,)

    Objects are hashed in (image id, original order) order, so loading a file and
    streaming the same images in another order give the same fingerprint.
    """
    image_keys = np.asarray(image_ids).astype(str)
    class_str = np.asarray(class_keys).astype(str)
    images, image_rank = np.unique(image_keys, return_inverse=True)  # sorted id strings
    classes, class_rank = np.unique(class_str, return_inverse=True)
    order = np.argsort(image_rank.reshape(-1), kind="stable")
    h = hashlib.sha256()
    for table in (images, classes):
        h.update("\x1f".join(table.tolist()).encode())
        h.update(b"\x1e")
    for arr, dtype in ((image_rank, np.int64), (class_rank, np.int64), (boxes, np.float64),
                       (difficult, bool), (crowd, bool), (area, np.float64)):
        rows = np.asarray(arr, dtype=dtype)
        h.update(np.ascontiguousarray(rows[order] if len(order) else rows).tobytes())
    return "sha256:" + h.hexdigest()


def _ground_truth_fingerprint(gt: "GroundTruth") -> str:
    if gt.class_ids is not None:
        keys = gt.class_ids[gt.class_idx]
    else:
        keys = np.array(gt.class_names, dtype=object)[gt.class_idx] if len(gt) else []
    return fingerprint_rows(gt.image_ids[gt.image_idx], keys, gt.boxes, gt.difficult,
                            gt.crowd, gt.area)


def merge_classes(gt: GroundTruth, det: Detections) -> Tuple[GroundTruth, Detections]:
    """The tables with every class merged into one (class-agnostic evaluation).

    pycocotools with ``useCats=0`` gathers an image's objects (and detections) class by
    class in category order, each class in file order, and that order decides its ties
    (stable score sorts; the later of equally good ground-truth objects wins). The rows are
    put in that order — a stable sort by class — and every ``class_idx`` becomes 0.
    """
    g = np.argsort(gt.class_idx, kind="stable")
    d = np.argsort(det.class_idx, kind="stable")
    merged_gt = GroundTruth(
        image_idx=gt.image_idx[g], class_idx=np.zeros(g.shape[0], dtype=np.int64),
        boxes=gt.boxes[g], difficult=gt.difficult[g], crowd=gt.crowd[g], area=gt.area[g],
        image_ids=gt.image_ids, class_names=("(all classes)",),
        class_ids=np.array([-1], dtype=np.int64), box_format=gt.box_format,
        sources=dict(gt.sources))
    merged_det = Detections(
        image_idx=det.image_idx[d], class_idx=np.zeros(d.shape[0], dtype=np.int64),
        boxes=det.boxes[d], scores=det.scores[d], order=np.arange(d.shape[0], dtype=np.int64),
        sources=dict(det.sources))
    return merged_gt, merged_det
