"""LVIS loaders: the federated fields of an LVIS ground truth, beside the COCO columns.

An LVIS ground truth is a COCO instances file whose images also list the categories
verified absent (``neg_category_ids``) and the categories whose positive annotations may
be incomplete (``not_exhaustive_category_ids``), and whose categories carry a
``frequency`` (``"r"`` rare, ``"c"`` common, ``"f"`` frequent). The boxes, areas and
segmentations are read by :mod:`deteval.io.coco` / :mod:`deteval.io.coco_geometry`; this
module reads the federated fields into flat ``(image_idx, class_idx)`` pair columns (never
an images x categories table) and checks them.

References
----------
.. [1] A. Gupta, P. Dollar, R. Girshick, "LVIS: A Dataset for Large Vocabulary Instance
   Segmentation", CVPR 2019 (federated annotation, section 3).
.. [2] lvis-api 0.5.3 (``lvis/lvis.py``, ``lvis/eval.py``): the fields it reads.
   https://github.com/lvis-dataset/lvis-api
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import msgspec
import numpy as np

from ..errors import InputError, expected
from ..tables import GroundTruth
from . import coco as coco_io

__all__ = ["LvisFields", "FREQUENCIES", "load_lvis_ground_truth"]

#: lvis-api's frequency labels, in group order (rare, common, frequent).
FREQUENCIES = ("r", "c", "f")


class _Image(msgspec.Struct, gc=False):
    id: int
    neg_category_ids: Any = None
    not_exhaustive_category_ids: Any = None


class _Category(msgspec.Struct, gc=False):
    id: int
    frequency: Any = None


class _Annotation(msgspec.Struct, gc=False):
    id: Any = None
    ignore: Any = 0


class _Dataset(msgspec.Struct, gc=False):
    images: List[_Image]
    annotations: List[_Annotation]
    categories: List[_Category]


_DATASET = msgspec.json.Decoder(_Dataset)


@dataclass(frozen=True)
class LvisFields:
    """The federated fields of an LVIS ground truth, row for row with its GroundTruth.

    Attributes
    ----------
    neg_image_idx, neg_class_idx : ndarray of int64, shape (P_neg,)
        One pair per (image, category) listed in the image's ``neg_category_ids``.
    ne_image_idx, ne_class_idx : ndarray of int64, shape (P_ne,)
        One pair per (image, category) listed in ``not_exhaustive_category_ids``.
    frequency : ndarray of int64, shape (K,)
        Index into :data:`FREQUENCIES` of each class (classes in category-id order).
    ignore : ndarray of bool, shape (G,)
        The annotation's ``ignore`` flag (absent: False), as lvis-api reads it.
    annotation_ids : ndarray of int64, shape (G,)
    """

    neg_image_idx: np.ndarray
    neg_class_idx: np.ndarray
    ne_image_idx: np.ndarray
    ne_class_idx: np.ndarray
    frequency: np.ndarray
    ignore: np.ndarray
    annotation_ids: np.ndarray


def load_lvis_ground_truth(source, iou_type: str = "bbox") -> Tuple[GroundTruth, LvisFields]:
    """Load an LVIS ground truth: the COCO table (with masks for ``segm``) and its
    federated fields.

    Raises
    ------
    InputError
        A plain COCO file (no federated fields: use ``deteval coco``), an image without
        ``neg_category_ids`` / ``not_exhaustive_category_ids``, a list naming a category
        the file does not define, a category without a ``frequency`` in ``r, c, f``, an
        annotation without an integer ``id`` or with a repeated one.
    """
    from .coco_geometry import load_ground_truth_geometry
    gt = load_ground_truth_geometry(source, iou_type)
    name = coco_io._source_name(source, "<ground truth>")
    images, anns, cats = _federated_records(source, name)
    return gt, _fields(gt, images, anns, cats, name)


def _federated_records(source, name: str):
    """``(images, annotations, categories)`` as lists of objects with attributes (typed
    decoding) or dicts (anything unusual), in file order."""
    if isinstance(source, (str, os.PathLike)):
        raw = coco_io._read_bytes(source)
        try:
            with coco_io._no_gc():
                ds = _DATASET.decode(raw)
            return ds.images, ds.annotations, ds.categories
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            data = coco_io._parse_json(raw, name)
    else:
        data = source
    return data["images"], data["annotations"], data["categories"]


def _get(rec, key, default=None):
    return rec.get(key, default) if isinstance(rec, dict) else getattr(rec, key, default)


def _as_dict(rec) -> dict:
    return rec if isinstance(rec, dict) else msgspec.structs.asdict(rec)


def _is_id_list(v) -> bool:
    return isinstance(v, list) and all(coco_io._is_int(x) for x in v)


def _pairs(gt: GroundTruth, images, key: str, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """The (image_idx, class_idx) pairs of one per-image category list."""
    lists = [_get(im, key) for im in images]
    if not all(_is_id_list(v) for v in lists):
        i = next(i for i, v in enumerate(lists) if not _is_id_list(v))
        where = coco_io._where("images", i, _as_dict(images[i]))
        if lists[i] is None:
            raise InputError(f"Expected a `{key}` list (LVIS federated annotation) but got "
                             "none", name, where)
        raise InputError(expected(key, "a list of category ids", lists[i]), name, where)
    lengths = np.fromiter((len(v) for v in lists), np.int64, len(lists))
    cats = np.fromiter((c for v in lists for c in v), np.int64, int(lengths.sum()))
    iorder = np.argsort(gt.image_ids, kind="stable")
    ids = np.fromiter((_get(im, "id") for im in images), np.int64, len(images))
    image_idx = coco_io._index(gt.image_ids[iorder], iorder, ids)
    class_idx = coco_io._index(gt.class_ids, np.arange(gt.num_classes), cats)
    if (class_idx < 0).any():
        j = int(np.flatnonzero(class_idx < 0)[0])
        i = int(np.searchsorted(np.cumsum(lengths), j, side="right"))
        raise InputError(f"Expected `{key}` to name categories of the ground truth but got "
                         f"unknown category id {int(cats[j])}", name,
                         coco_io._where("images", i, _as_dict(images[i])))
    return np.repeat(image_idx, lengths), class_idx


def _fields(gt: GroundTruth, images, anns, cats, name: str) -> LvisFields:
    has_neg = any(_get(im, "neg_category_ids") is not None for im in images)
    has_freq = any(_get(c, "frequency") is not None for c in cats)
    if not has_neg and not has_freq:
        raise InputError("Expected an LVIS ground truth (images with `neg_category_ids` and "
                         "`not_exhaustive_category_ids`, categories with `frequency`) but got "
                         "a plain COCO file: use `deteval coco` for it", name)
    neg = _pairs(gt, images, "neg_category_ids", name)
    ne = _pairs(gt, images, "not_exhaustive_category_ids", name)
    freq_raw = [_get(c, "frequency") for c in cats]
    bad = [i for i, f in enumerate(freq_raw) if f not in FREQUENCIES]
    if bad:
        i = bad[0]
        where = coco_io._where("categories", i, _as_dict(cats[i]))
        if freq_raw[i] is None:
            raise InputError("Expected a `frequency` ('r', 'c' or 'f': the LVIS frequency "
                             "groups) but got none", name, where)
        raise InputError(expected("frequency", "'r', 'c' or 'f'", freq_raw[i]), name, where)
    cat_ids = np.fromiter((_get(c, "id") for c in cats), np.int64, len(cats))
    freq_file = np.array([FREQUENCIES.index(f) for f in freq_raw], dtype=np.int64)
    frequency = np.empty(gt.num_classes, dtype=np.int64)
    frequency[coco_io._index(gt.class_ids, np.arange(gt.num_classes), cat_ids)] = freq_file
    ids_raw = [_get(a, "id") for a in anns]
    try:
        ann_ids = np.array(ids_raw).reshape(-1)
        typed = ann_ids.dtype.kind == "i" and ann_ids.shape == (len(anns),)
    except (TypeError, ValueError, OverflowError):
        typed = False
    if not typed and not all(coco_io._is_int(v) for v in ids_raw):
        i = next(i for i, v in enumerate(ids_raw) if not coco_io._is_int(v))
        raise InputError(expected("id", "an integer (lvis-api indexes annotations by id)",
                                  ids_raw[i]), name, f"annotations[{i}]")
    ann_ids = np.array(ids_raw, dtype=np.int64).reshape(-1)
    coco_io._check_unique(ann_ids, None, name, "annotations")
    ign_raw = [_get(a, "ignore", 0) for a in anns]
    if not all(v in (0, 1) and not isinstance(v, float) or v is None for v in ign_raw):
        i = next(i for i, v in enumerate(ign_raw)
                 if not (v in (0, 1) and not isinstance(v, float) or v is None))
        raise InputError(expected("ignore", "0 or 1", ign_raw[i]), name,
                         coco_io._where("annotations", i, _as_dict(anns[i])))
    ignore = np.array([bool(v) for v in ign_raw], dtype=bool).reshape(-1)
    return LvisFields(neg_image_idx=neg[0], neg_class_idx=neg[1], ne_image_idx=ne[0],
                      ne_class_idx=ne[1], frequency=frequency, ignore=ignore,
                      annotation_ids=ann_ids)
