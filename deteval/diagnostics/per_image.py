"""Per-image counts: which images a number comes from.

``report["images"]``: one entry per ground-truth image, sorted by image id, with
``image_id``, ``file_name``, ``num_gt``, ``num_detections``, ``tp``, ``fp``, ``fn``,
``ignored``, counted from the evaluation's own match records:

* COCO: COCOeval's matching at IoU 0.5, area ``all``, max dets 100 (the records of
  :func:`deteval.match.match_coco`). ``num_gt`` counts the image's *non-ignored* ground
  truth (not crowd, area within ``all``: COCOeval's ``npig``), so ``tp + fn == num_gt``;
  ``num_detections`` counts every result on the image, and ``tp + fp + ignored`` the ones
  COCOeval ranks (the top 100 per image and class); ``ignored`` are the detections matched
  to a crowd region (or unmatched outside the area range).
* VOC: the evaluation's own VOC matching (its IoU threshold and compat): ``num_gt`` the
  non-difficult objects, ``ignored`` the detections whose best object is difficult.

Counts come from ``np.bincount`` over the records: no loop per image or detection.
Other diagnostics attach per-image columns of their own through ``extra`` (TIDE's error
counts per image go there).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..match import IGNORED, TP, CocoMatches, VocMatches
from ..rank import voc_order
from .options import WORST_SHOWN

__all__ = ["PerImage", "coco_per_image", "voc_per_image", "coco_file_names", "WORST_SHOWN",
           "COUNT_COLUMNS"]

COUNT_COLUMNS = ("num_gt", "num_detections", "tp", "fp", "fn", "ignored")


@dataclass(frozen=True)
class PerImage:
    """Per-image counts, one row per ground-truth image in the table's image order.

    Attributes
    ----------
    image_ids : ndarray, shape (I,)
    file_names : list of (str or None), length I
    counts : dict name -> ndarray of int64, shape (I,)
        :data:`COUNT_COLUMNS`.
    extra : dict name -> ndarray of int64, shape (I,)
        Columns other diagnostics attach (e.g. TIDE's error counts per image), appended to
        each entry in insertion order.
    """

    image_ids: np.ndarray
    file_names: List[Optional[str]]
    counts: Dict[str, np.ndarray]
    extra: Dict[str, np.ndarray] = field(default_factory=dict)

    def order(self) -> np.ndarray:
        """Rows sorted by image id (numbers numerically, strings as strings)."""
        return np.argsort(self.image_ids, kind="stable")

    def worst(self, n: int = WORST_SHOWN) -> np.ndarray:
        """The ``n`` rows of most ``fp + fn``, ties by image id."""
        by_id = self.order()
        bad = (self.counts["fp"] + self.counts["fn"])[by_id]
        return by_id[np.argsort(-bad, kind="stable")][:n]

    def entry(self, i: int) -> dict:
        iid = self.image_ids[i]
        d = {"image_id": iid.item() if isinstance(iid, np.generic) else iid,
             "file_name": self.file_names[i]}
        for name in COUNT_COLUMNS:
            d[name] = int(self.counts[name][i])
        for name, col in self.extra.items():
            d[name] = int(col[i])
        return d

    def to_list(self) -> List[dict]:
        return [self.entry(int(i)) for i in self.order()]

    def with_extra(self, columns: Dict[str, np.ndarray]) -> "PerImage":
        """The same counts with more per-image columns (shape (I,) each)."""
        return PerImage(self.image_ids, self.file_names, self.counts,
                        {**self.extra, **{k: np.asarray(v, dtype=np.int64)
                                          for k, v in columns.items()}})


def coco_per_image(gt, det, matches: CocoMatches, t: int, a: int, max_det: int,
                   area_range: tuple, image_key: Optional[np.ndarray] = None,
                   file_names: Optional[List[Optional[str]]] = None) -> PerImage:
    """Per-image counts from COCO records at IoU index ``t`` and area index ``a``.

    Parameters
    ----------
    gt, det : GroundTruth, Detections
    matches : CocoMatches
        :func:`deteval.match.match_coco`'s records of ``gt`` and ``det``.
    t, a : int
        Indices of IoU 0.5 and of the area range ``area_range`` (``all``).
    max_det : int
        Records of rank below it count (100).
    image_key : ndarray of int64, shape (I,), optional
        The image keys the records were matched with (default: ascending image id).
    """
    I = gt.num_images
    if image_key is None:
        image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
    key_to_image = np.empty(I, dtype=np.int64)
    key_to_image[image_key] = np.arange(I)
    sel = matches.rank < max_det
    img = key_to_image[matches.image_key[sel]]
    ign = matches.ignored[sel, a, t]
    hit = matches.matched[sel, a, t] & ~ign
    lo, hi = area_range
    gt_counted = ~gt.crowd & (gt.area >= lo) & (gt.area <= hi)
    num_gt = np.bincount(gt.image_idx[gt_counted], minlength=I)
    tp = np.bincount(img[hit], minlength=I)
    counts = {"num_gt": num_gt, "num_detections": np.bincount(det.image_idx, minlength=I),
              "tp": tp, "fp": np.bincount(img[~hit & ~ign], minlength=I),
              "fn": num_gt - tp, "ignored": np.bincount(img[ign], minlength=I)}
    return PerImage(image_ids=gt.image_ids,
                    file_names=list(file_names) if file_names is not None else [None] * I,
                    counts={k: v.astype(np.int64) for k, v in counts.items()})


def voc_per_image(gt, det, matches: VocMatches, compat: str = "devkit",
                  record_image: Optional[np.ndarray] = None) -> PerImage:
    """Per-image counts from VOC records (:func:`deteval.match.match_voc` of ``gt``, ``det``
    with ``compat``): the records are in the ranked order :func:`deteval.rank.voc_order`
    gives, which maps them back to their rows; or give each record's image as
    ``record_image`` (shape (N,), positions in ``gt.image_ids``)."""
    I = gt.num_images
    if record_image is None:
        order, _ = voc_order(det, compat)
        img = det.image_idx[order]
    else:
        img = np.asarray(record_image, dtype=np.int64)
    o = matches.outcome
    num_gt = np.bincount(gt.image_idx[~gt.difficult], minlength=I)
    tp = np.bincount(img[o == TP], minlength=I)
    counts = {"num_gt": num_gt, "num_detections": np.bincount(det.image_idx, minlength=I),
              "tp": tp, "fp": np.bincount(img[(o != TP) & (o != IGNORED)], minlength=I),
              "fn": num_gt - tp, "ignored": np.bincount(img[o == IGNORED], minlength=I)}
    return PerImage(image_ids=np.asarray(gt.image_ids), file_names=[None] * I,
                    counts={k: v.astype(np.int64) for k, v in counts.items()})


def coco_file_names(source, gt) -> List[Optional[str]]:
    """``images[].file_name`` of a COCO ground-truth file (path or loaded dict) in the
    table's image order; None where an image has none (or it is not a string).

    The loaders do not keep file names; for a path this is one more, skipping decode of
    the file (``msgspec`` reads only the ``images`` ids and names).
    """
    import os
    names: Dict[int, Optional[str]] = {}
    if isinstance(source, dict):
        for im in source.get("images", []):
            if isinstance(im, dict) and "id" in im:
                fn = im.get("file_name")
                names[im["id"]] = fn if isinstance(fn, str) else None
    elif isinstance(source, (str, os.PathLike)):
        import msgspec

        from ..io.files import read_input
        try:
            ds = msgspec.json.decode(read_input(source, "JSON file", refuse_nul=False),
                                     type=_images_type())
            names = {im.id: im.file_name if isinstance(im.file_name, str) else None
                     for im in ds.images}
        except (msgspec.DecodeError, msgspec.ValidationError):
            names = {}
    return [names.get(int(i)) for i in np.asarray(gt.image_ids).tolist()]


_IMAGES_TYPE = None


def _images_type():
    """A msgspec type reading only ``images[].id`` and ``images[].file_name``."""
    global _IMAGES_TYPE
    if _IMAGES_TYPE is None:
        import msgspec
        image = msgspec.defstruct("_Image", [("id", int), ("file_name", object, None)])
        _IMAGES_TYPE = msgspec.defstruct("_Images", [("images", List[image])])
    return _IMAGES_TYPE
