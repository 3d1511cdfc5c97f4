"""Which format is this path? Detection by content, and the readers of every format pair.

Ground truth: COCO instances JSON, a YOLO dataset (``data.yaml``), a LabelMe folder, CVAT
for images 1.1 XML, a VOC folder. Results: a COCO results JSON list, a folder of YOLO
prediction files, a folder of VOC ``comp4_det_*_<class>.txt`` files. A path is looked at
(the first bytes of a file, a few files of a folder), not judged by its name alone; a path
that matches no format, or more than one, is refused naming what was expected.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, expected
from ..tables import Detections, GroundTruth
from .dataset import ImageNames, dataset_ground_truth, image_names, read_class_file

__all__ = ["detect_ground_truth", "detect_results", "load_ground_truth", "load_results",
           "load_pair", "GROUND_TRUTH_FORMATS", "RESULTS_FORMATS"]

GROUND_TRUTH_FORMATS = ("coco", "yolo", "labelme", "cvat", "voc")
RESULTS_FORMATS = ("coco", "yolo", "voc")

_GT_EXPECTED = ("a COCO instances JSON file, a YOLO data.yaml (or its folder), a LabelMe "
                "folder, a CVAT for images XML file or a VOC folder")
_RES_EXPECTED = ("a COCO results JSON file, a folder of YOLO prediction .txt files or a "
                 "folder of VOC comp4_det_*_<class>.txt files")


def _head(path, n: int = 1 << 16) -> bytes:
    from .files import check_regular_files
    check_regular_files([path], "file")  # a FIFO or a device is never opened
    try:
        with open(path, "rb") as fh:
            data = fh.read(n)
    except OSError as exc:
        raise InputError(f"Expected a readable file but got: {exc.strerror}", path) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.lstrip()


def _sniff_file(path) -> Optional[str]:
    """What a file's first bytes say it is: ``coco``, ``coco-results``, ``labelme-file``,
    ``cvat``, ``cvat-video``, ``voc-file``, ``yaml`` or None."""
    head = _head(path)
    if head.startswith(b"["):
        return "coco-results"
    if head.startswith(b"{"):
        if b'"shapes"' in head and (b'"imagePath"' in head or b'"imageHeight"' in head):
            return "labelme-file"
        if b'"images"' in head or b'"annotations"' in head or b'"categories"' in head:
            return "coco"
        return None
    if head.startswith(b"<"):
        m = re.search(rb"<(annotations|annotation)[\s>/]", head)
        if m is None:
            return None
        if m.group(1) == b"annotation":
            return "voc-file"
        return "cvat-video" if re.search(rb"<track[\s>]", head) else "cvat"
    if re.search(rb"(?m)^names\s*:", head):
        return "yaml"
    return None


def detect_ground_truth(path) -> Tuple[str, Path]:
    """``(format, path to read)`` of a ground-truth path (see the module docstring)."""
    p = Path(path)
    if not p.exists():
        raise InputError(expected("GROUND_TRUTH", _GT_EXPECTED, str(p)) + " (no such file or "
                         "folder)", p)
    if p.is_file():
        kind = _sniff_file(p)
        if kind == "coco":
            return "coco", p
        if kind in ("cvat", "cvat-video"):
            return "cvat", p  # the reader refuses the video schema, naming the line
        if kind == "yaml" or (kind is None and p.suffix in (".yaml", ".yml")):
            return "yolo", p
        if kind is None and (p.suffix.lower() == ".json" or _head(p)[:1] in (b"", b"{")):
            return "coco", p  # the COCO reader says what is wrong with it
        hint = {"coco-results": " (a results list: it goes second, as RESULTS)",
                "labelme-file": " (one LabelMe file: pass its folder)",
                "voc-file": " (one VOC annotation: pass its folder)"}.get(kind, "")
        raise InputError(expected("GROUND_TRUTH", _GT_EXPECTED, "a file of another kind")
                         + hint, p)
    found: List[Tuple[str, Path]] = []
    from .yolo import find_data_yaml
    y = find_data_yaml(p)
    if y is not None and _sniff_file(y) == "yaml":
        found.append(("yolo", y))
    if (p / "Annotations").is_dir():
        found.append(("voc", p))
    else:
        xmls = sorted(q for q in p.iterdir() if q.suffix == ".xml" and q.is_file())
        kinds = {}
        for q in xmls[:3]:
            kinds.setdefault(_sniff_file(q), q)
        if "voc-file" in kinds:
            found.append(("voc", p))
        for k in ("cvat", "cvat-video"):
            if k in kinds and len(xmls) == 1:
                found.append(("cvat", kinds[k]))
    jsons = sorted(q for q in p.iterdir() if q.suffix.lower() == ".json" and q.is_file())
    if jsons:
        kinds = [_sniff_file(q) for q in jsons[:3]]
        if "labelme-file" in kinds:  # (a bad file among them: the reader names it)
            found.append(("labelme", p))
        elif kinds[0] == "coco" and len(jsons) == 1:
            found.append(("coco", jsons[0]))
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(expected("GROUND_TRUTH", _GT_EXPECTED, "a folder holding none of "
                                  "them"), p)
    raise InputError("Expected `GROUND_TRUTH` to be one dataset but the folder holds several: "
                     + ", ".join(f"{f} ({q})" for f, q in found)
                     + "; pass the one to evaluate", p)


def _first_line_fields(path) -> Optional[List[bytes]]:
    for line in _head(path, 4096).splitlines():
        if line.split():
            return line.split()
    return None


def _numbers(tokens) -> Optional[List[float]]:
    try:
        return [float(t) for t in tokens]
    except ValueError:
        return None


def detect_results(path, gt: GroundTruth) -> Tuple[str, Path]:
    """``(format, path)`` of a results path for the ground truth ``gt``."""
    p = Path(path)
    if not p.exists():
        raise InputError(expected("RESULTS", _RES_EXPECTED, str(p)) + " (no such file or "
                         "folder)", p)
    if p.is_file():
        kind = _sniff_file(p)
        if kind == "coco-results":
            return "coco", p
        if kind == "coco" or (kind is None and (p.suffix.lower() == ".json"
                                                 or _head(p)[:1] in (b"", b"{", b"["))):
            return "coco", p  # the reader says what is wrong (a dataset, bad JSON...)
        raise InputError(expected("RESULTS", _RES_EXPECTED, "a file of another kind"), p)
    with os.scandir(p) as it:
        files = sorted(e.name for e in it if e.name.endswith(".txt") and e.name != "classes.txt"
                       and e.is_file())
    if not files:
        if any(os.scandir(p)):
            raise InputError(expected("RESULTS", _RES_EXPECTED, "a folder without .txt "
                                      "files"), p)
        return "yolo", p  # an empty folder: no detections (a warning says so)
    names = image_names(gt)
    by_image = any(names.find(f[:-4]) >= 0 for f in files)
    classes = set(gt.class_names)

    def names_a_class(stem: str) -> bool:
        return stem in classes or any(stem[i + 1:] in classes for i, ch in enumerate(stem)
                                      if ch == "_")

    by_class_name = any(names_a_class(f[:-4]) for f in files[:50])
    files = [os.path.join(p, f) for f in files[:20]]
    yolo_content = voc_content = True
    for q in files[:20]:
        tokens = _first_line_fields(q)
        if tokens is None:
            continue
        values = _numbers(tokens[1:]) if len(tokens) == 6 else None
        cls = _numbers(tokens[:1])
        yolo_content &= (values is not None and cls is not None and cls[0].is_integer()
                         and all(-0.01 <= v <= 1.01 for v in values[:4]))
        voc_content &= (values is not None and values[3] >= values[1]
                        and values[4] >= values[2])
    # names decide when only one format's names fit (the reader then names any bad line);
    # the content decides between two; YOLO-looking lines named by no image go to the YOLO
    # reader, which names the first unknown file
    if by_image != by_class_name:
        yolo, voc = by_image, by_class_name
    elif by_image:
        yolo, voc = yolo_content, voc_content
    else:
        yolo, voc = yolo_content, False
    if yolo and not voc:
        return "yolo", p
    if voc and not yolo:
        return "voc", p
    if yolo and voc:
        raise InputError("Expected RESULTS to be one format but the folder reads both as YOLO "
                         "predictions (files named by image) and as VOC detection files (files "
                         "named by class); rename the files", p)
    raise InputError(expected("RESULTS", _RES_EXPECTED, "a folder of other .txt files")
                     + " (YOLO files are named by image stem with lines `class cx cy w h "
                     "conf`; VOC files end in _<class>.txt with lines `image score x1 y1 x2 "
                     "y2`)", p)


# ------------------------------------------------------------------ ground truth


def load_ground_truth(path, *, split: Optional[str] = None,
                      classes: Optional[Sequence[str]] = None) -> GroundTruth:
    """A ground truth of any format (detected) as a GroundTruth table with COCO boxes.

    ``sources["format"]`` names the format; ``sources["warnings"]`` holds messages for
    the user (category order guessed, shapes skipped...).
    """
    fmt, where = detect_ground_truth(path)
    if split is not None and fmt != "yolo":
        raise InputError(expected("--split", "given only with a YOLO dataset", split),
                         path)
    if classes is not None and fmt not in ("labelme", "cvat", "voc"):
        raise InputError(expected("--classes", "given only with LabelMe, CVAT or VOC ground "
                                  "truth (the others name their classes)", "a class list"),
                         path)
    if fmt == "coco":
        return _coco_ground_truth(where)
    if fmt == "yolo":
        from .yolo import load_yolo_dataset
        return load_yolo_dataset(where, split)
    if fmt == "labelme":
        from .labelme import load_labelme
        return load_labelme(where, classes)
    if fmt == "cvat":
        from .cvat import load_cvat
        return load_cvat(where, classes)
    return load_voc_as_coco(where, classes)


@functools.lru_cache(maxsize=None)
def _coco_images_type():
    """msgspec type of a COCO file's ``images`` (id, file name, size)."""
    import msgspec

    class CocoImage(msgspec.Struct):
        id: int
        file_name: str = ""
        width: int = 0
        height: int = 0

    return msgspec.defstruct("CocoImages", [("images", List[CocoImage])])


def _coco_ground_truth(path) -> GroundTruth:
    """The COCO reader's table plus each image's file name and size (for results that
    name images, and YOLO predictions)."""
    import msgspec
    from .coco import load_coco_ground_truth
    gt = load_coco_ground_truth(path)
    try:
        doc = msgspec.json.decode(Path(path).read_bytes(), type=_coco_images_type())
    except (msgspec.DecodeError, msgspec.ValidationError, OSError):
        return dataclasses.replace(gt, sources={**gt.sources, "format": "coco"})
    sizes = np.array([(im.height, im.width) for im in doc.images], dtype=np.int64).reshape(-1, 2)
    names = [im.file_name or None for im in doc.images]
    return dataclasses.replace(gt, image_sizes=sizes, sources={
        **gt.sources, "format": "coco", "file_names": names, "warnings": []})


def load_voc_as_coco(folder, classes: Optional[Sequence[str]] = None) -> GroundTruth:
    """A VOC folder as COCO boxes: pixel ``xmin..xmax`` (1-based, inclusive) covers the
    continuous span ``[xmin - 1, xmax]``, so ``x = xmin - 1`` and ``w = xmax - xmin + 1``
    (the devkit's ``+1`` widths; py-faster-rcnn and detectron2 subtract 1 the same way).

    Images get ids ``1..N`` in sorted annotation-file order; categories ``1..K`` in the
    ``classes`` order (``--classes FILE``), else in sorted name order. ``difficult``
    objects are kept as ordinary objects (COCO has no difficult flag) and counted in a
    warning.
    """
    from .voc import load_voc_annotations, resolve_voc_layout
    xml_dir, _ = resolve_voc_layout(folder)
    voc = load_voc_annotations(folder, None, None)
    present = list(voc.class_names)
    warnings = []
    if classes is not None:
        class_names = list(classes)
        missing = [c for c in present if c not in class_names]
        if missing:
            raise InputError(f"Expected every VOC class name in --classes but got "
                             f"{missing[0]!r}, which is not in it", folder)
        order = "--classes"
    else:
        class_names, order = present, "sorted class names"
    remap = np.array([class_names.index(c) for c in present], dtype=np.int64)
    b = voc.boxes
    boxes = np.column_stack((b[:, 0] - 1, b[:, 1] - 1, b[:, 2] - b[:, 0] + 1,
                             b[:, 3] - b[:, 1] + 1)) if len(b) else np.zeros((0, 4))
    ndiff = int(voc.difficult.sum())
    if ndiff:
        warnings.append(f"{folder}: {ndiff} difficult object(s) are evaluated as ordinary "
                        "objects (COCO has no difficult flag)")
    stems = [str(s) for s in voc.image_ids]
    names, sizes = _voc_image_info(xml_dir, stems)
    gt = dataset_ground_truth(
        names, sizes, class_names, voc.image_idx, remap[voc.class_idx] if len(b) else
        voc.class_idx, boxes, source=str(folder), fmt="voc", difficult=voc.difficult,
        warnings=warnings, class_order=order, extra={"stems": stems})
    return gt


_FILENAME = re.compile(rb"<filename>\s*([^<]*?)\s*</filename>")
_WIDTH = re.compile(rb"<size>.*?<width>\s*(\d+)\s*</width>", re.S)
_HEIGHT = re.compile(rb"<size>.*?<height>\s*(\d+)\s*</height>", re.S)


def _voc_image_info(xml_dir: Path, stems: Sequence[str]):
    """File names and ``(height, width)`` (0 where ``<size>`` is absent) of each annotation
    file. The file name is ``<filename>`` when its stem is the annotation's stem, else the
    stem itself (VOC detection files name images by it)."""
    names, sizes = [], np.zeros((len(stems), 2), dtype=np.int64)
    for i, s in enumerate(stems):
        data = (xml_dir / f"{s}.xml").read_bytes()
        m = _FILENAME.search(data)
        name = m.group(1).decode("utf-8", "replace") if m else s
        names.append(name if name.rsplit(".", 1)[0] == s else s)
        w, h = _WIDTH.search(data), _HEIGHT.search(data)
        if w and h:
            sizes[i] = int(h.group(1)), int(w.group(1))
    return names, sizes


# ------------------------------------------------------------------ results


def load_results(path, gt: GroundTruth) -> Detections:
    """Results of any format (detected) for ``gt`` (from :func:`load_ground_truth`)."""
    fmt, where = detect_results(path, gt)
    if fmt == "coco":
        return load_named_coco_results(where, gt)
    if fmt == "yolo":
        from .yolo import load_yolo_predictions
        if not any(os.scandir(where)):
            none = np.zeros(0, dtype=np.int64)
            return Detections(image_idx=none, class_idx=none, boxes=np.zeros((0, 4)),
                              scores=np.zeros(0), order=none, sources={
                                  "results": str(where), "format": "yolo",
                                  "warnings": [f"{where}: an empty folder: no detections"]})
        if gt.image_sizes is None or (gt.image_sizes <= 0).any():
            bad = 0 if gt.image_sizes is None else int(np.flatnonzero(
                (gt.image_sizes <= 0).any(axis=1))[0])
            raise InputError("Expected the ground truth to give every image's width and "
                             "height (to denormalise YOLO predictions) but image "
                             f"{_image_label(gt, bad)} has none", gt.sources.get("ground_truth"))
        return load_yolo_predictions(where, gt)
    return load_voc_results(where, gt)


def _image_label(gt: GroundTruth, i: int) -> str:
    names = gt.sources.get("file_names")
    name = names[i] if names else None
    return f"{gt.image_ids[i]}" + (f" ({name})" if name else "")


def load_named_coco_results(path, gt: GroundTruth) -> Detections:
    """A COCO results list whose ``image_id`` is an id, a file name or a file stem, and
    whose ``category_id`` is an id (or a class name)."""
    from . import coco
    try:
        return coco.load_coco_results(path, gt)  # integer ids: the fast reader
    except InputError:
        pass
    raw = coco._read_bytes(path)
    data = coco._parse_json(raw, str(path))
    if not isinstance(data, list):
        return coco.load_coco_results(path, gt)  # its message (a dataset? ...)
    name = str(path)

    def where(i):
        return f"results[{i}]"

    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise InputError(expected(f"results[{i}]", "an object", r), name, where(i))
        for key in ("image_id", "category_id", "bbox", "score"):
            if key not in r:
                raise InputError(f"Expected a `{key}` field but got none", name, where(i))
    images = ImageNames(gt.image_ids, gt.sources.get("file_names"))
    image_idx = images.positions([r["image_id"] for r in data], name, where)
    by_id = {int(c): k for k, c in enumerate(gt.class_ids.tolist())}
    by_name = {c: k for k, c in enumerate(gt.class_names)}
    cats = [r["category_id"] for r in data]
    class_idx = np.fromiter(((by_name.get(c, -1) if isinstance(c, str) else
                              by_id.get(c, -1) if isinstance(c, int) and not isinstance(c, bool)
                              else -1) for c in cats), np.int64, len(cats))
    if (class_idx < 0).any():
        i = int(np.flatnonzero(class_idx < 0)[0])
        raise InputError(expected("category_id", f"a category id 1..{len(gt.class_names)} or "
                                  "a class name of the ground truth", cats[i]), name, where(i))
    boxes = coco._box_column(data, name, "results")
    scores = coco._float_column(data, "score", name, "results")
    return Detections(image_idx=image_idx, class_idx=class_idx, boxes=boxes, scores=scores,
                      order=np.arange(len(data), dtype=np.int64),
                      sources={"results": name, "format": "coco"})


def load_voc_results(folder, gt: GroundTruth) -> Detections:
    """VOC per-class files ``<anything>_<class>.txt`` (lines ``image score x1 y1 x2 y2``,
    1-based inclusive pixels) as COCO boxes ``[x1 - 1, y1 - 1, x2 - x1 + 1, y2 - y1 + 1]``;
    the image is named by its stem (or file name, or id)."""
    from .files import quote
    from .voc import _detection_columns, _read_text_bytes, find_detection_files
    files, unused = find_detection_files(folder, gt.class_names)
    names = ImageNames(gt.image_ids, gt.sources.get("file_names"))
    parts = []
    for k, cls in enumerate(gt.class_names):
        if cls not in files:
            continue
        path = files[cls]
        ids, values, line_numbers = _detection_columns(_read_text_bytes(path), path)
        uniq, inverse = np.unique(ids, return_inverse=True) if len(ids) else (ids, ids)
        pos = np.array([names.find(bytes(u).decode("utf-8", "replace")) for u in uniq],
                       dtype=np.int64)
        img = pos[inverse.reshape(-1)] if len(ids) else np.zeros(0, dtype=np.int64)
        if (img < 0).any():
            r = int(np.flatnonzero(img < 0)[0])
            raise InputError(f"Expected an image of the ground truth (its stem, file name or "
                             f"id) but got {quote(bytes(ids[r]))}", path,
                             f"line {line_numbers[r]}")
        parts.append((img, np.full(len(img), k, dtype=np.int64), values.reshape(-1, 5)))
    if parts:
        img = np.concatenate([p[0] for p in parts])
        cls = np.concatenate([p[1] for p in parts])
        v = np.concatenate([p[2] for p in parts])
    else:
        img = cls = np.zeros(0, dtype=np.int64)
        v = np.zeros((0, 5))
    boxes = np.column_stack((v[:, 1] - 1, v[:, 2] - 1, v[:, 3] - v[:, 1] + 1,
                             v[:, 4] - v[:, 2] + 1)) if len(v) else np.zeros((0, 4))
    warnings = [f"{folder}: {u} names no class of the ground truth: not read" for u in unused]
    return Detections(image_idx=img, class_idx=cls, boxes=boxes,
                      scores=np.ascontiguousarray(v[:, 0]),
                      order=np.arange(len(img), dtype=np.int64),
                      sources={"results": str(folder), "format": "voc", "warnings": warnings})


def load_pair(ground_truth, results, *, split: Optional[str] = None,
              classes_file=None) -> Optional[Tuple[GroundTruth, Detections, List[str]]]:
    """``(gt, det, warnings)`` of any ground truth and results formats, or None when both
    are COCO JSON files and no option needs this path (the ordinary COCO readers then run,
    with segm and keypoints)."""
    if split is None and classes_file is None and _coco_side(ground_truth, _OTHER_GT) and \
            _coco_side(results, ()) and (not Path(results).is_file() or _integer_ids(results)):
        return None
    classes = read_class_file(classes_file) if classes_file is not None else None
    gt = load_ground_truth(ground_truth, split=split, classes=classes)
    det = load_results(results, gt)
    warnings = list(gt.sources.get("warnings", [])) + list(det.sources.get("warnings", []))
    if gt.sources.get("format") == "voc" and gt.sources.get("class_order") != "--classes" \
            and det.sources.get("format") in ("coco", "yolo"):
        warnings.append(f"{ground_truth}: VOC classes have no ids: category ids 1..K follow "
                        "the sorted class names (" + ", ".join(gt.class_names[:10])
                        + (" ..." if len(gt.class_names) > 10 else "") + "); give "
                        "--classes FILE to set the order")
    return gt, det, warnings


_OTHER_GT = ("cvat", "cvat-video", "yaml", "labelme-file", "voc-file", "coco-results")


def _coco_side(path, other_kinds) -> bool:
    """True for what the COCO readers judge: a COCO file, a missing path, a FIFO, a file
    that is none of ``other_kinds`` (their messages say what is wrong)."""
    p = Path(path)
    if p.is_dir():
        return False
    if not p.is_file():
        return True
    if p.suffix.lower() in (".yaml", ".yml", ".xml"):
        return False
    try:
        return _sniff_file(p) not in other_kinds
    except InputError:
        return True


def _integer_ids(path) -> bool:
    """True if the first result's ``image_id`` is an integer (the usual COCO file)."""
    m = re.search(rb'"image_id"\s*:\s*(.)', _head(path, 4096))
    return m is None or m.group(1) != b'"'
