"""CVAT "for images 1.1" XML: ``<image>`` elements holding ``<box>`` and ``<polygon>``.

A box is ``[xtl, ytl, xbr - xtl, ybr - ytl]`` (CVAT's continuous corners, as written); a
polygon is its bounding box. Images get ids ``1..N`` in sorted ``name`` order with
``width`` / ``height`` as their size; categories ids ``1..K`` in the order of the labels in
``<meta>``. Other shapes (points, polylines, masks...) are skipped with a warning. The
video schema (``<track>`` elements) is refused.

References
----------
CVAT, "CVAT for images / video export formats",
https://docs.cvat.ai/docs/manual/advanced/xml_format/
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from ..errors import InputError, expected
from ..tables import GroundTruth
from .dataset import dataset_ground_truth
from .files import XML_MAX_BYTES, check_regular_files, read_input

__all__ = ["load_cvat", "is_cvat_images"]


@functools.lru_cache(maxsize=None)
def _parser():
    from lxml import etree
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           dtd_validation=False, huge_tree=True, remove_comments=True)


def _parse(path):
    from lxml import etree
    check_regular_files([path], "CVAT XML file", 16 * XML_MAX_BYTES)
    data = read_input(path, "CVAT XML file")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InputError("Expected CVAT XML without DTD or entity declarations but got a "
                         "<!DOCTYPE>/<!ENTITY> (refused: untrusted XML)", path)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"Expected well-formed XML but got a syntax error: {exc.msg}", path,
                         f"line {line}" if line else None) from None
    return root


def is_cvat_images(root) -> bool:
    """An ``<annotations>`` document with ``<image>`` elements (or none, but no track)."""
    return root is not None and root.tag == "annotations" and root.find("track") is None


def _float(elem, key: str, path) -> float:
    text = elem.get(key)
    try:
        if text is None or "_" in text:
            raise ValueError
        v = float(text)
    except ValueError:
        raise InputError(expected(key, "a number", text), path,
                         f"line {elem.sourceline}") from None
    if not math.isfinite(v):
        raise InputError(expected(key, "a finite number", text), path, f"line {elem.sourceline}")
    return v


def _size(elem, key: str, path) -> int:
    text = elem.get(key)
    if text is None or not text.strip().isdigit() or int(text) <= 0:
        raise InputError(expected(key, "a positive integer (the image size in pixels)", text),
                         path, f"line {elem.sourceline}")
    return int(text)


def load_cvat(path, classes: Optional[Sequence[str]] = None) -> GroundTruth:
    """Load a CVAT for images 1.1 XML file into a GroundTruth table.

    Parameters
    ----------
    path : path
        The XML file (``annotations.xml`` of a CVAT export).
    classes : sequence of str, optional
        Category order when ``<meta>`` lists no labels (``--classes FILE``).
    """
    path = Path(path)
    root = _parse(path)
    if root.tag != "annotations":
        raise InputError(expected("root element", "<annotations> (CVAT for images 1.1)",
                                  f"<{root.tag}>"), path, f"line {root.sourceline}")
    track = root.find("track")
    if track is not None:
        raise InputError("Expected CVAT for images 1.1 (<image> elements) but got the video "
                         "schema (<track> elements): export the task as \"CVAT for images\"",
                         path, f"line {track.sourceline}")
    meta_labels: List[str] = []
    meta = root.find("meta")
    if meta is not None:
        for el in meta.iter("label"):
            name = el.findtext("name")
            if name is not None and name.strip() and name.strip() not in meta_labels:
                meta_labels.append(name.strip())
    warnings: List[str] = []
    if meta_labels:
        class_names, order = meta_labels, "CVAT <meta> labels"
        if classes is not None:
            warnings.append(f"{path}: the <meta> labels decide the class order: --classes is "
                            "not used")
    elif classes is not None:
        class_names, order = list(classes), "--classes"
    else:
        class_names, order = None, "sorted label names"
    images = root.findall("image")
    entries = []
    for im in images:
        name = im.get("name")
        if not name:
            raise InputError(expected("name", "the image's file name", name), path,
                             f"line {im.sourceline}")
        entries.append((name, im))
    entries.sort(key=lambda e: e[0])
    names = [n for n, _ in entries]
    dup = [a for a, b in zip(names, names[1:]) if a == b]
    if dup:
        raise InputError(f"Expected each image once but got {dup[0]!r} twice", path)
    if not entries:
        raise InputError("Expected <image> elements but got none", path)
    sizes, img, labels, boxes, lines = [], [], [], [], []
    skipped = {}
    for i, (name, im) in enumerate(entries):
        sizes.append((_size(im, "height", path), _size(im, "width", path)))
        for shape in im:
            if not isinstance(shape.tag, str):
                continue
            if shape.tag not in ("box", "polygon"):
                if shape.tag != "tag":
                    skipped[shape.tag] = skipped.get(shape.tag, 0) + 1
                continue
            label = shape.get("label")
            if not label or not label.strip():
                raise InputError(expected("label", "a class name", label), path,
                                 f"line {shape.sourceline}")
            if shape.tag == "box":
                x0, y0 = _float(shape, "xtl", path), _float(shape, "ytl", path)
                x1, y1 = _float(shape, "xbr", path), _float(shape, "ybr", path)
                if x1 < x0 or y1 < y0:
                    raise InputError(f"Expected xtl <= xbr and ytl <= ybr but got "
                                     f"({x0:g}, {y0:g}, {x1:g}, {y1:g})", path,
                                     f"line {shape.sourceline}")
            else:
                xy = _points(shape, path)
                x0, y0 = xy.min(axis=0)
                x1, y1 = xy.max(axis=0)
            img.append(i)
            labels.append(label.strip())
            boxes.append((x0, y0, x1 - x0, y1 - y0))
            lines.append(shape.sourceline)
    for kind, n in sorted(skipped.items()):
        warnings.append(f"{path}: skipped {n} CVAT <{kind}> shape(s) (only <box> and "
                        "<polygon> are read)")
    if class_names is None:
        class_names = sorted(set(labels))
        warnings.append(f"{path}: no labels in <meta> and no --classes: category ids 1..K "
                        f"follow the sorted label names")
    lookup = {n: k for k, n in enumerate(class_names)}
    cls = np.array([lookup.get(n, -1) for n in labels], dtype=np.int64)
    if (cls < 0).any():
        r = int(np.flatnonzero(cls < 0)[0])
        raise InputError(f"Expected labels from the class list ({order}) but got "
                         f"{labels[r]!r}, which is not in it", path, f"line {lines[r]}")
    return dataset_ground_truth(
        names, np.array(sizes, dtype=np.int64).reshape(-1, 2), class_names,
        np.array(img, dtype=np.int64), cls, np.array(boxes, dtype=np.float64).reshape(-1, 4),
        source=str(path), fmt="cvat", warnings=warnings, class_order=order)


def _points(shape, path) -> np.ndarray:
    text = shape.get("points") or ""
    try:
        pts = [tuple(float(v) for v in p.split(",")) for p in text.split(";") if p.strip()]
        if not pts or any(len(p) != 2 for p in pts) or "_" in text:
            raise ValueError
    except ValueError:
        raise InputError(expected("points", "x1,y1;x2,y2;... numbers", text), path,
                         f"line {shape.sourceline}") from None
    xy = np.array(pts, dtype=np.float64)
    if not np.isfinite(xy).all():
        raise InputError(expected("points", "finite numbers", text), path,
                         f"line {shape.sourceline}")
    return xy
