"""COCO loaders: instances JSON (ground truth) and results JSON (detections).

Records become columns with list comprehensions and one numpy conversion per
field; when a conversion fails, a slow pass finds the first bad record so the
message can name it.
"""
from __future__ import annotations

import gc
import math
import itertools
import json as _json
import os
from contextlib import contextmanager
from typing import Any, List, Optional, Sequence, Tuple, Union

import msgspec
import numpy as np

from ..errors import InputError, expected
from ..tables import Detections, GroundTruth
from .files import read_input

from .. import _native
from .._native import textscan as _textscan  # None without it: the Python code is the reference

__all__ = ["load_coco_ground_truth", "load_coco_results"]

# Typed schemas for the fast path: msgspec decodes straight into these (skipping
# fields deteval does not use, such as segmentations) about 4x faster than a
# generic JSON parser builds dicts. Any decode or validation failure falls back
# to the standard library and the record-by-record checks, which name the record.


class _Result(msgspec.Struct, gc=False):
    image_id: int
    category_id: int
    bbox: Tuple[float, float, float, float]
    score: float


class _Image(msgspec.Struct, gc=False):
    id: int


class _Category(msgspec.Struct, gc=False):
    id: int
    name: str = ""


class _Annotation(msgspec.Struct, gc=False):
    image_id: int
    category_id: int
    bbox: Tuple[float, float, float, float]
    area: float = float("nan")
    iscrowd: int = 0
    id: Optional[int] = None


class _Dataset(msgspec.Struct, gc=False):
    images: List[_Image]
    annotations: List[_Annotation]
    categories: List[_Category]


_RESULTS = msgspec.json.Decoder(List[_Result])
_DATASET = msgspec.json.Decoder(_Dataset)


@contextmanager
def _no_gc():
    """Pause the cyclic GC while millions of acyclic objects are allocated."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_bytes(path) -> bytes:
    return read_input(path, "JSON file", refuse_nul=False)


Source = Union[str, os.PathLike, dict, list]


def _parse_json(data: bytes, path) -> Any:
    if not data.strip():
        raise InputError("Expected JSON but got an empty file", path)
    try:
        with _no_gc():
            return _json.loads(data)
    except RecursionError:
        raise InputError("Expected JSON nested at most a few hundred levels deep but got "
                         "deeper nesting", path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        where = None
        lineno = getattr(exc, "lineno", None)
        if lineno is not None:
            where = f"line {lineno} column {getattr(exc, 'colno', '?')}"
        reason = getattr(exc, "msg", None) or str(exc)
        if b"\x00" in data[:4096] or not _looks_textual(data[:4096]):
            reason = "binary data, not text"
        raise InputError(f"Expected valid JSON but got invalid JSON ({reason})", path,
                         where) from None


def _looks_textual(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _source_name(source: Source, default: str) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else default


def _record_error(records: Sequence[Any], key: str, check, source: str, section: str,
                  wanted: str) -> InputError:
    """Find the first record whose ``key`` fails ``check`` and describe it."""
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            return InputError(expected(f"{section}[{i}]", "an object", rec), source,
                              _where(section, i, rec))
        if key not in rec:
            return InputError(f"Expected a `{key}` field but got none", source,
                              _where(section, i, rec))
        if not check(rec[key]):
            return InputError(expected(key, wanted, rec[key]), source, _where(section, i, rec))
    return InputError(f"Expected `{key}` to be {wanted} in every record", source, section)


def _where(section: str, i: int, rec: Any) -> str:
    rid = rec.get("id") if isinstance(rec, dict) else None
    return f"{section}[{i}]" + (f" (id {rid})" if rid is not None and section != "results" else "")


_INT64 = (-(2 ** 63), 2 ** 63)


def _is_int(v: Any) -> bool:
    """An integer that fits int64 (ids outside it are errors, never wrapped)."""
    return isinstance(v, int) and not isinstance(v, bool) and _INT64[0] <= v < _INT64[1]


def _is_number(v: Any) -> bool:
    """A number whose double is finite (an integer too large for a double is not)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _is_box(v: Any) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) == 4 and all(_is_number(x) for x in v))


def _int_column(records, key, source, section) -> np.ndarray:
    try:
        values = [r[key] for r in records]
        col = np.array(values)
    except (KeyError, TypeError, ValueError):
        raise _record_error(records, key, _is_int, source, section, "an integer") from None
    if len(records) == 0:
        return np.zeros(0, dtype=np.int64)
    if (col.shape != (len(records),) or col.dtype.kind not in "iu"
            or (col.dtype.kind == "u" and int(col.max()) >= _INT64[1])):
        raise _record_error(records, key, _is_int, source, section,
                            "an integer in [-2^63, 2^63)")
    return col.astype(np.int64, copy=False)


def _id_column(records, key, source, section) -> np.ndarray:
    """Image ids: all integers (int64) or all strings (a numpy str array, which sorts as
    pycocotools sorts string ids: ``"10"`` before ``"9"``); mixed types name the first
    record whose id is not of the first record's type."""
    try:
        values = [r[key] for r in records]
    except (KeyError, TypeError):
        return _int_column(records, key, source, section)  # names the bad record
    is_str = [isinstance(v, str) for v in values]
    if not any(is_str):
        return _int_column(records, key, source, section)
    if not all(is_str):
        i = next(j for j, v in enumerate(is_str) if v != is_str[0])
        kind = "a string" if is_str[0] else "an integer"
        raise InputError(expected(key, f"{kind} like the first record's `{key}` (ids of one "
                                  f"type: all integers or all strings)", values[i]), source,
                         _where(section, i, records[i]))
    return np.array(values, dtype=str).reshape(len(values))


def _id_text(v) -> str:
    return repr(str(v)) if isinstance(v, (str, np.str_)) else str(int(v))


def _same_id_type(ids: np.ndarray, table: np.ndarray, records, key, source, section) -> None:
    """Ids that look up ``table`` (the ground truth's image ids) must be of its type."""
    if not len(ids) or (ids.dtype.kind == "U") == (table.dtype.kind == "U"):
        return
    want = "a string" if table.dtype.kind == "U" else "an integer"
    i = 0
    rec = records[i] if records is not None else {key: ids[0].item()}
    raise InputError(expected(key, f"{want} like the ground truth's image ids",
                              rec.get(key) if isinstance(rec, dict) else ids[0].item()),
                     source, _where(section, i, rec))


def _float_column(records, key, source, section, wanted="a finite number") -> np.ndarray:
    try:
        col = np.array([r[key] for r in records])
    except (KeyError, TypeError, ValueError):
        raise _record_error(records, key, _is_number, source, section, wanted) from None
    if len(records) == 0:
        return np.zeros(0)
    if col.shape != (len(records),) or col.dtype.kind not in "iuf" or not np.isfinite(col).all():
        raise _record_error(records, key, _is_number, source, section, wanted)
    return col.astype(np.float64, copy=False)


def _box_column(records, source, section) -> np.ndarray:
    wanted = "four finite numbers [x, y, w, h]"
    try:
        col = np.array([r["bbox"] for r in records])
    except (KeyError, TypeError, ValueError):
        raise _record_error(records, "bbox", _is_box, source, section, wanted) from None
    if len(records) == 0:
        return np.zeros((0, 4))
    if (col.shape != (len(records), 4) or col.dtype.kind not in "iuf"
            or not np.isfinite(col).all()):
        raise _record_error(records, "bbox", _is_box, source, section, wanted)
    col = col.astype(np.float64, copy=False)
    negative = (col[:, 2] < 0) | (col[:, 3] < 0)
    if negative.any():
        i = int(np.flatnonzero(negative)[0])
        raise InputError(expected("bbox", "[x, y, w, h] with w >= 0 and h >= 0",
                                  records[i]["bbox"]), source, _where(section, i, records[i]))
    return col


def _section(data: dict, key: str, source: str) -> list:
    if key not in data:
        raise InputError(f"Expected a top-level `{key}` key but got only "
                         f"{sorted(data)[:8]}", source)
    value = data[key]
    if not isinstance(value, list):
        raise InputError(expected(key, "a list", type(value).__name__), source)
    return value


def _index(ids_sorted: np.ndarray, order: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Positions of ``query`` ids in the id table, -1 where absent."""
    if ids_sorted.shape[0] == 0:
        return np.full(query.shape[0], -1, dtype=np.int64)
    pos = np.searchsorted(ids_sorted, query)
    pos = np.minimum(pos, ids_sorted.shape[0] - 1)
    found = ids_sorted[pos] == query
    return np.where(found, order[pos], -1)


def _check_unique(ids: np.ndarray, records, source, section) -> None:
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = np.flatnonzero(s[1:] == s[:-1])
    if dup.shape[0]:
        first, second = int(order[dup[0]]), int(order[dup[0] + 1])
        raise InputError(f"Expected unique ids but got id {_id_text(s[dup[0]])} twice "
                         f"({section}[{first}] and {section}[{second}])", source,
                         f"{section}[{second}]")


def load_coco_ground_truth(source: Source) -> GroundTruth:
    """Load a COCO instances file (or its loaded dict) into a GroundTruth table.

    ``area`` is the annotation's ``area`` field (its segmentation area), as
    pycocotools uses it for area ranges; a missing ``area`` falls back to ``w*h``.
    A missing ``iscrowd`` means 0.
    """
    name = _source_name(source, "<ground truth>")
    if isinstance(source, (str, os.PathLike)):
        raw = _read_bytes(source)
        try:
            with _no_gc():
                fast = _DATASET.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            data = _parse_json(raw, name)  # slow path: names the bad record
        else:
            try:
                return _ground_truth_from_structs(fast, name)
            except OverflowError:  # an id outside int64: the slow path names the record
                data = _parse_json(raw, name)
    else:
        data = source
    if not isinstance(data, dict):
        raise InputError(expected("ground truth", "a JSON object with images, annotations "
                                  "and categories", type(data).__name__), name)
    images = _section(data, "images", name)
    anns = _section(data, "annotations", name)
    cats = _section(data, "categories", name)

    image_ids = _id_column(images, "id", name, "images")
    _check_unique(image_ids, images, name, "images")
    cat_ids = _int_column(cats, "id", name, "categories")
    _check_unique(cat_ids, cats, name, "categories")
    cat_names = []
    for i, c in enumerate(cats):
        n = c.get("name", str(c["id"]))
        cat_names.append(str(n))
    # classes in category-id order
    corder = np.argsort(cat_ids, kind="stable")
    class_ids = cat_ids[corder]
    class_names = tuple(cat_names[i] for i in corder)

    ann_image = _id_column(anns, "image_id", name, "annotations")
    _same_id_type(ann_image, image_ids, anns, "image_id", name, "annotations")
    ann_cat = _int_column(anns, "category_id", name, "annotations")
    boxes = _box_column(anns, name, "annotations")
    if anns and all("area" in a for a in anns):
        area = _float_column(anns, "area", name, "annotations")
    else:
        area = np.array([a["area"] if "area" in a else a["bbox"][2] * a["bbox"][3]
                         for a in anns], dtype=np.float64)
        if area.shape[0] and not np.isfinite(area).all():
            raise _record_error(anns, "area", _is_number, name, "annotations", "a finite number")
    crowd_raw = [a.get("iscrowd", 0) for a in anns]
    if not all(v in (0, 1) for v in crowd_raw):  # True/False compare equal to 1/0
        i = next(i for i, v in enumerate(crowd_raw) if v not in (0, 1))
        raise InputError(expected("iscrowd", "0 or 1", crowd_raw[i]), name,
                         _where("annotations", i, anns[i]))
    crowd = np.array(crowd_raw, dtype=bool).reshape(-1)
    return _ground_truth_from_columns(image_ids, class_ids, class_names, ann_image, ann_cat,
                                      boxes, area, crowd, anns, name)


def _ground_truth_from_structs(ds: "_Dataset", name: str) -> GroundTruth:
    """Columns of a fast-decoded dataset; value checks are vectorised."""
    with _no_gc():
        anns = ds.annotations
        n = len(anns)
        image_ids = np.fromiter([i.id for i in ds.images], np.int64, len(ds.images))
        _check_unique(image_ids, None, name, "images")
        cat_ids = np.fromiter([c.id for c in ds.categories], np.int64, len(ds.categories))
        _check_unique(cat_ids, None, name, "categories")
        corder = np.argsort(cat_ids, kind="stable")
        class_ids = cat_ids[corder]
        class_names = tuple(ds.categories[i].name or str(ds.categories[i].id) for i in corder)
        ann_image = np.fromiter([a.image_id for a in anns], np.int64, n)
        ann_cat = np.fromiter([a.category_id for a in anns], np.int64, n)
        boxes = np.fromiter(itertools.chain.from_iterable([a.bbox for a in anns]), np.float64,
                            4 * n).reshape(n, 4)
        area = np.fromiter([a.area for a in anns], np.float64, n)
        crowd_raw = np.fromiter([a.iscrowd for a in anns], np.int64, n)
    missing_area = np.isnan(area)
    area[missing_area] = boxes[missing_area, 2] * boxes[missing_area, 3]
    bad = ~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    bad |= ~np.isfinite(area) | ((crowd_raw != 0) & (crowd_raw != 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rec = msgspec.structs.asdict(anns[i])
        if not (np.isfinite(boxes[i]).all() and boxes[i, 2] >= 0 and boxes[i, 3] >= 0):
            msg = expected("bbox", "four finite numbers [x, y, w, h] with w >= 0 and h >= 0",
                           list(rec["bbox"]))
        elif not np.isfinite(area[i]):
            msg = expected("area", "a finite number", rec["area"])
        else:
            msg = expected("iscrowd", "0 or 1", rec["iscrowd"])
        raise InputError(msg, name, _where("annotations", i, rec))
    return _ground_truth_from_columns(image_ids, class_ids, class_names, ann_image, ann_cat,
                                      boxes, area, crowd_raw.astype(bool), None, name, anns)


def _ground_truth_from_columns(image_ids, class_ids, class_names, ann_image, ann_cat, boxes,
                               area, crowd, anns, name, anns_fast=None) -> GroundTruth:
    def where(i):
        return _where("annotations", i, anns[i] if anns is not None else
                      msgspec.structs.asdict(anns_fast[i]))

    iorder = np.argsort(image_ids, kind="stable")
    image_idx = _index(image_ids[iorder], iorder, ann_image)
    if (image_idx < 0).any():
        i = int(np.flatnonzero(image_idx < 0)[0])
        raise InputError(f"Expected `image_id` to be one of the ids in `images` but got "
                         f"{_id_text(ann_image[i])}", name, where(i))
    class_idx = _index(class_ids, np.arange(class_ids.shape[0]), ann_cat)
    if (class_idx < 0).any():
        i = int(np.flatnonzero(class_idx < 0)[0])
        raise InputError(f"Expected `category_id` to be one of the ids in `categories` but "
                         f"got {int(ann_cat[i])}", name, where(i))
    return GroundTruth(
        image_idx=image_idx, class_idx=class_idx, boxes=boxes,
        difficult=np.zeros(boxes.shape[0], dtype=bool), crowd=crowd, area=area,
        image_ids=image_ids, class_names=class_names, class_ids=class_ids,
        box_format="xywh", sources={"ground_truth": name})


def load_coco_results(source: Source, gt: GroundTruth) -> Detections:
    """Load a COCO results list (``image_id``, ``category_id``, ``bbox``, ``score``).

    Every result must refer to an image and a category of ``gt``. An empty list is
    valid.
    """
    name = _source_name(source, "<results>")
    if isinstance(source, (str, os.PathLike)):
        raw = _read_bytes(source)
        columns = _scanned_results(raw)
        if columns is not None:
            img, cat, scores, boxes = columns
            if np.isfinite(scores).all() and np.isfinite(boxes).all() and (
                    boxes[:, 2:] >= 0).all():
                return _detections_from_columns(img, cat, boxes, scores, gt, name)
        try:
            with _no_gc():
                fast = _RESULTS.decode(raw)
                n = len(fast)
                img = np.fromiter([r.image_id for r in fast], np.int64, n)
                cat = np.fromiter([r.category_id for r in fast], np.int64, n)
                scores = np.fromiter([r.score for r in fast], np.float64, n)
                boxes = np.fromiter(itertools.chain.from_iterable([r.bbox for r in fast]),
                                    np.float64, 4 * n).reshape(n, 4)
                del fast
        except (msgspec.DecodeError, msgspec.ValidationError, OverflowError, RecursionError):
            data = _parse_json(raw, name)  # slow path: names the bad record
        else:
            if np.isfinite(scores).all() and np.isfinite(boxes).all() and (
                    boxes[:, 2:] >= 0).all():
                return _detections_from_columns(img, cat, boxes, scores, gt, name)
            data = _parse_json(raw, name)
    else:
        data = source
    if not isinstance(data, list):
        hint = ""
        if isinstance(data, dict) and "annotations" in data:
            hint = " (a dataset-style file? its `annotations` list is the results list)"
        raise InputError(expected("results", "a JSON list of {image_id, category_id, bbox, "
                                  "score}", type(data).__name__) + hint, name)
    img = _id_column(data, "image_id", name, "results")
    _same_id_type(img, gt.image_ids, data, "image_id", name, "results")
    cat = _int_column(data, "category_id", name, "results")
    boxes = _box_column(data, name, "results")
    scores = _float_column(data, "score", name, "results", "a finite number")
    return _detections_from_columns(img, cat, boxes, scores, gt, name)


def _scanned_results(raw: bytes):
    """``(image_id, category_id, score, bbox)`` columns from the C scanner, or None
    (no extension, or a file outside its subset: msgspec decodes it instead)."""
    if _textscan is None:
        return None
    found = _native.scan_coco_results(raw)
    if found is None:
        return None
    return found.image_id, found.category_id, found.score, found.bbox


def _detections_from_columns(img, cat, boxes, scores, gt: GroundTruth, name: str) -> Detections:
    n = scores.shape[0]
    _same_id_type(img, gt.image_ids, None, "image_id", name, "results")
    iorder = np.argsort(gt.image_ids, kind="stable")
    image_idx = _index(gt.image_ids[iorder], iorder, img)
    if (image_idx < 0).any():
        bad = np.unique(img[image_idx < 0])
        i = int(np.flatnonzero(image_idx < 0)[0])
        shown = ", ".join(_id_text(b) for b in bad[:10]) + (" ..." if bad.shape[0] > 10 else "")
        raise InputError(f"Expected `image_id` to be an image of the ground truth but got "
                         f"{bad.shape[0]} unknown id(s): {shown}", name, f"results[{i}]")
    class_idx = _index(gt.class_ids, np.arange(gt.class_ids.shape[0]), cat)
    if (class_idx < 0).any():
        bad = np.unique(cat[class_idx < 0])
        i = int(np.flatnonzero(class_idx < 0)[0])
        raise InputError(f"Expected `category_id` to be a category of the ground truth but "
                         f"got unknown id(s): {', '.join(str(int(b)) for b in bad[:10])}",
                         name, f"results[{i}]")
    return Detections(image_idx=image_idx, class_idx=class_idx, boxes=boxes, scores=scores,
                      order=np.arange(n, dtype=np.int64), sources={"results": name})
