"""LabelMe folders: one JSON file per image, ``shapes`` of rectangles and polygons.

Each shape becomes its bounding box (the min and max of its points, used as written:
continuous pixel coordinates, no rounding), so a polygon is evaluated by its bounding box
with ``area = w * h``. Images get ids ``1..N`` in sorted JSON file-name order, with the
size of ``imageWidth`` / ``imageHeight``.

Category order: ``labels.txt`` beside the JSON files (the labelme2coco convention: one
name per line, ``__ignore__`` and ``_background_`` skipped), else the ``classes`` list
(``--classes FILE``), else the sorted label names, with a warning. A label that is not in
the list is an error.

References
----------
K. Wada, labelme, ``examples/instance_segmentation/labelme2coco.py``,
https://github.com/wkentaro/labelme
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from ..errors import InputError, expected
from ..tables import GroundTruth
from .dataset import dataset_ground_truth, read_class_file
from .files import read_input

__all__ = ["is_labelme_file", "labelme_files", "load_labelme"]

#: Shapes with an extent; others (points, lines) are skipped with a warning.
SHAPE_TYPES = ("rectangle", "polygon")


def labelme_files(folder) -> List[Path]:
    """The ``*.json`` files of a folder, sorted by file name."""
    return sorted((p for p in Path(folder).iterdir() if p.suffix.lower() == ".json"
                   and p.is_file()), key=lambda p: p.name)


def is_labelme_file(data) -> bool:
    """A LabelMe document: an object with ``shapes`` and an image reference."""
    return isinstance(data, dict) and "shapes" in data and (
        "imagePath" in data or "imageHeight" in data)


def _load_json(path: Path):
    raw = read_input(path, "LabelMe JSON file")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno}" if getattr(exc, "lineno", None) else None
        raise InputError(f"Expected valid JSON but got invalid JSON "
                         f"({getattr(exc, 'msg', exc)})", path, where) from None


def _dimension(doc: dict, key: str, path: Path) -> int:
    v = doc.get(key)
    if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
        raise InputError(expected(key, "a positive integer (the image size in pixels)", v),
                         path)
    return v


def load_labelme(folder, classes: Optional[Sequence[str]] = None) -> GroundTruth:
    """Load a LabelMe folder into a GroundTruth table (see the module docstring).

    Parameters
    ----------
    folder : path
        A folder of LabelMe JSON files (one per image).
    classes : sequence of str, optional
        Category order when the folder has no ``labels.txt`` (``--classes FILE``).
    """
    folder = Path(folder)
    files = labelme_files(folder)
    if not files:
        raise InputError(expected("GROUND_TRUTH", "a folder of LabelMe JSON files", "no .json "
                                  "file"), folder)
    warnings: List[str] = []
    labels_txt = folder / "labels.txt"
    if labels_txt.is_file():
        class_names: Optional[List[str]] = read_class_file(labels_txt)
        order, list_source = "labels.txt", labels_txt
        if classes is not None:
            warnings.append(f"{labels_txt} decides the class order: --classes is not used")
    elif classes is not None:
        class_names, order, list_source = list(classes), "--classes", "--classes"
    else:
        class_names, order, list_source = None, "sorted label names", None
    names, sizes, img, labels, boxes, image_paths = [], [], [], [], [], []
    skipped = {}
    for i, path in enumerate(files):
        doc = _load_json(path)
        if not isinstance(doc, dict) or "shapes" not in doc:
            raise InputError("Expected a LabelMe file (an object with `shapes`) but got "
                             + ("an object without `shapes`" if isinstance(doc, dict)
                                else type(doc).__name__), path)
        shapes = doc["shapes"]
        if not isinstance(shapes, list):
            raise InputError(expected("shapes", "a list", type(shapes).__name__), path)
        h, w = _dimension(doc, "imageHeight", path), _dimension(doc, "imageWidth", path)
        image_path = doc.get("imagePath")
        name = (str(image_path).replace("\\", "/").rsplit("/", 1)[-1]
                if isinstance(image_path, str) and image_path else path.stem)
        names.append(name)
        image_paths.append(str(folder / image_path) if isinstance(image_path, str)
                           and image_path else None)
        sizes.append((h, w))
        for j, shape in enumerate(shapes):
            where = f"shapes[{j}]"
            if not isinstance(shape, dict):
                raise InputError(expected(where, "an object", shape), path, where)
            kind = shape.get("shape_type") or "polygon"  # labelme: polygon by default
            if kind not in SHAPE_TYPES:
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            label = shape.get("label")
            if not isinstance(label, str) or not label.strip():
                raise InputError(expected("label", "a non-empty class name", label), path,
                                 where)
            pts = shape.get("points")
            ok = isinstance(pts, list) and len(pts) >= (2 if kind == "rectangle" else 1) and all(
                isinstance(p, list) and len(p) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in p) for p in pts)
            if not ok or (kind == "rectangle" and len(pts) != 2):
                raise InputError(expected("points", "a list of [x, y] number pairs (two for a "
                                          "rectangle)", pts), path, where)
            xy = np.asarray(pts, dtype=np.float64)
            x0, y0 = xy.min(axis=0)
            x1, y1 = xy.max(axis=0)
            img.append(i)
            labels.append(label.strip())
            boxes.append((x0, y0, x1 - x0, y1 - y0))
    for kind, n in sorted(skipped.items()):
        warnings.append(f"{folder}: skipped {n} LabelMe shape(s) of type {kind!r} (only "
                        "rectangles and polygons have a box)")
    if class_names is None:
        class_names = sorted(set(labels))
        warnings.append(f"{folder}: no labels.txt and no --classes: category ids 1..K "
                        f"follow the sorted label names ({', '.join(class_names[:10])}"
                        f"{' ...' if len(class_names) > 10 else ''})")
    lookup = {n: k for k, n in enumerate(class_names)}
    cls = np.array([lookup.get(n, -1) for n in labels], dtype=np.int64)
    if (cls < 0).any():
        r = int(np.flatnonzero(cls < 0)[0])
        raise InputError(f"Expected labels from the class list ({list_source}) but got "
                         f"{labels[r]!r}, which is not in it", files[img[r]])
    return dataset_ground_truth(
        names, np.array(sizes, dtype=np.int64).reshape(-1, 2), class_names,
        np.array(img, dtype=np.int64), cls, np.array(boxes, dtype=np.float64).reshape(-1, 4),
        source=str(folder), fmt="labelme", warnings=warnings, class_order=order,
        extra={"image_paths": image_paths})
