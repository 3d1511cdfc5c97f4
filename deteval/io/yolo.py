"""YOLO datasets (``data.yaml``, ``images/`` and ``labels/``) and YOLO prediction files.

A label line is ``class cx cy w h`` and a prediction line ``class cx cy w h conf``, with
coordinates normalised by the image's width and height. They are denormalised with the
image's true size (from its header, never decoding pixels) and without rounding::

    x = (cx - w / 2) * W,   y = (cy - h / 2) * H,   width = w * W,   height = h * H

(Ultralytics' ``xywhn2xyxy`` corner; with power-of-two sizes and quarter-pixel boxes every
step is exact). Class ``k`` is category id ``k + 1``; images get ids ``1..N`` in sorted
file-name order.

References
----------
Ultralytics, "Object detection datasets overview", https://docs.ultralytics.com/datasets/detect/
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, expected
from ..tables import Detections, GroundTruth
from .dataset import (IMAGE_EXTENSIONS, NORMALISED_TOLERANCE, dataset_ground_truth, image_names,
                      first_bad_line, image_sizes, join_files, parse_rows, read_file)

from .. import _native
from .._native import textscan as _textscan  # None without it: numpy parses the lines

__all__ = ["find_data_yaml", "read_data_yaml", "load_yolo_dataset", "load_yolo_predictions",
           "label_path"]

_LABEL_FIELDS = ("class", "cx", "cy", "w", "h")
_PRED_FIELDS = ("class", "cx", "cy", "w", "h", "conf")


def find_data_yaml(path) -> Optional[Path]:
    """The dataset YAML: ``path`` itself, or ``data.yaml`` (else the one ``*.yaml``) in
    the folder ``path``; None if there is none."""
    p = Path(path)
    if p.is_file():
        return p
    if not p.is_dir():
        return None
    for name in ("data.yaml", "data.yml"):
        if (p / name).is_file():
            return p / name
    found = sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
    return found[0] if len(found) == 1 else None


def _yaml_lines(text: str) -> dict:
    """Top-level key -> 1-based line of the key (for messages)."""
    import yaml
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark.line + 1 for k, _ in node.value
            if isinstance(k, yaml.ScalarNode)}


class _KeyLines:
    """Top-level key -> line, computed on first use (only messages need it)."""

    def __init__(self, text: str):
        self.text, self._lines = text, None

    def _get(self) -> dict:
        if self._lines is None:
            self._lines = _yaml_lines(self.text)
        return self._lines

    def __contains__(self, key) -> bool:
        return key in self._get()

    def __getitem__(self, key) -> int:
        return self._get()[key]


def read_data_yaml(path) -> Tuple[dict, "_KeyLines"]:
    """``(data, key_lines)`` of a dataset YAML (a mapping with ``names``)."""
    import yaml
    from .files import read_input
    raw = read_input(path, "YAML file")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = raw.decode("utf-8-sig")
        data = yaml.load(text, Loader=loader)
    except UnicodeDecodeError:
        raise InputError("Expected a UTF-8 YAML file but got other bytes", path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"Expected valid YAML but got: {getattr(exc, 'problem', exc)}", path,
                         f"line {mark.line + 1}" if mark is not None else None) from None
    if not isinstance(data, dict):
        raise InputError(expected("data.yaml", "a mapping with `names` and the split folders",
                                  type(data).__name__), path)
    return data, _KeyLines(text)


def _class_names(data: dict, lines: dict, path) -> List[str]:
    def where():
        return f"line {lines['names']}" if "names" in lines else None

    if "names" not in data:
        raise InputError("Expected a `names` key (the class names) but got none", path)
    names = data["names"]
    if isinstance(names, dict):
        keys = list(names)
        if not all(isinstance(k, int) and not isinstance(k, bool) for k in keys) or \
                sorted(keys) != list(range(len(keys))):
            raise InputError(expected("names", "a list, or a dict with keys 0..K-1",
                                      sorted(map(str, keys))[:8]), path, where())
        names = [names[k] for k in range(len(keys))]
    if not isinstance(names, list) or not names:
        raise InputError(expected("names", "a non-empty list of class names", names), path,
                         where())
    out = [str(n) for n in names]
    if len(set(out)) != len(out):
        dup = next(n for n in out if out.count(n) > 1)
        raise InputError(f"Expected each class name once in `names` but got {dup!r} twice",
                         path, where())
    nc = data.get("nc")
    if nc is not None and nc != len(out):
        raise InputError(f"Expected `nc` to equal the number of `names` ({len(out)}) but got "
                         f"{nc!r}", path, f"line {lines['nc']}" if "nc" in lines else None)
    return out


def _root(data: dict, yaml_path: Path) -> Path:
    base = yaml_path.parent
    p = data.get("path")
    if p is None or p == "":
        return base
    p = Path(str(p)).expanduser()
    return p if p.is_absolute() else base / p


def label_path(image: str) -> str:
    """The label file of an image (Ultralytics ``img2label_paths``): the last
    ``/images/`` of the path becomes ``/labels/`` and the extension ``.txt``."""
    sa, sb = f"{os.sep}images{os.sep}", f"{os.sep}labels{os.sep}"
    return sb.join(image.rsplit(sa, 1)).rsplit(".", 1)[0] + ".txt"


def _is_image(name: str) -> bool:
    return "." in name and name.rsplit(".", 1)[1].lower() in IMAGE_EXTENSIONS


def _split_images(entry, root: Path, yaml_path: Path, split: str, where) -> Tuple[List[str],
                                                                                  List[Path]]:
    """Image paths of a split entry (a folder, an image-list .txt, or a list of them),
    and the folders searched (``where()``: the key's line, for messages)."""
    entries = entry if isinstance(entry, list) else [entry]
    images: List[str] = []
    folders: List[Path] = []
    for e in entries:
        if not isinstance(e, str) or not e:
            raise InputError(expected(split, "a folder or an image-list file (or a list of "
                                      "them)", e), yaml_path, where())
        p = Path(e).expanduser()
        p = p if p.is_absolute() else root / p
        if p.is_dir():
            folders.append(p)
            for dirpath, _, files in os.walk(p):
                images.extend(os.path.join(dirpath, f) for f in files if _is_image(f))
        elif p.is_file() and p.suffix == ".txt":
            from .files import read_input
            for line in read_input(p, "image-list text file").decode(
                    "utf-8", "replace").splitlines():
                line = line.strip()
                if line:
                    q = Path(line)
                    if not q.is_absolute():
                        q = (p.parent / line) if line.startswith("./") else root / line
                    images.append(os.path.normpath(str(q)))
        else:
            raise InputError(f"Expected the `{split}` split folder to exist but there is no "
                             f"{p}", yaml_path, where())
    return images, folders


def load_yolo_dataset(path, split: Optional[str] = None) -> GroundTruth:
    """Load a YOLO detection dataset (``data.yaml``) into a GroundTruth table.

    Parameters
    ----------
    path : path
        The dataset YAML, or the folder holding ``data.yaml``.
    split : str, optional
        The split key of the YAML (default ``"val"``).

    Returns
    -------
    GroundTruth
        Images ``1..N`` in sorted file-name order (then path), ``image_sizes`` from the
        image headers, categories ``1..K`` in ``names`` order, ``boxes`` COCO
        ``[x, y, w, h]`` (see the module docstring).
    """
    yaml_path = find_data_yaml(path)
    if yaml_path is None:
        raise InputError(expected("GROUND_TRUTH", "a YOLO data.yaml or a folder holding one",
                                  str(path)), path)
    split = "val" if split is None else split
    data, lines = read_data_yaml(yaml_path)
    class_names = _class_names(data, lines, yaml_path)
    root = _root(data, yaml_path)
    def where():
        return f"line {lines[split]}" if split in lines else None

    if split not in data or data[split] in (None, ""):
        raise InputError(f"Expected a `{split}` split in the dataset YAML but got only "
                         f"{sorted(map(str, data))[:8]}", yaml_path)
    images, folders = _split_images(data[split], root, yaml_path, split, where)
    if not images:
        raise InputError(f"Expected images in the `{split}` split but found none", yaml_path,
                         where())
    images.sort(key=lambda p: (os.path.basename(p), p))
    names = [os.path.basename(p) for p in images]
    _check_unique_stems(names, images, yaml_path)
    labels = [label_path(p) for p in images]
    _check_orphan_labels(labels, yaml_path)
    # an image without a label file has no objects
    chunks = [read_file(lp, missing_ok=True) or b"" for lp in labels]
    sizes = image_sizes(images)
    fast = _scan_rows(chunks, len(class_names), 5)
    if fast is not None:
        values, file_idx = fast
    else:
        values, file_idx = _rows(chunks, labels, 5, _LABEL_FIELDS, "class cx cy w h")
    cls = _check_rows(values, file_idx, chunks, labels, len(class_names), 5)
    boxes = denormalise(values[:, 1:5], sizes[file_idx])
    return dataset_ground_truth(
        names, sizes, class_names, file_idx, cls, boxes, source=str(yaml_path), fmt="yolo",
        class_order="data.yaml names", extra={"split": split, "image_paths": images})


def _check_unique_stems(names: Sequence[str], paths: Sequence[str], source) -> None:
    stems = {}
    for n, p in zip(names, paths):
        s = n.rsplit(".", 1)[0]
        if s in stems:
            raise InputError(f"Expected one image per file stem (labels and predictions are "
                             f"named by it) but got {stems[s]} and {p}", source)
        stems[s] = p


def _check_orphan_labels(labels: Sequence[str], source) -> None:
    """A label file without an image is an error (it would be silently unused)."""
    wanted = set(labels)
    for folder in sorted({os.path.dirname(p) for p in labels}):
        try:
            listing = os.listdir(folder)
        except OSError:
            continue
        for name in sorted(listing):
            if not name.endswith(".txt") or name == "classes.txt":
                continue
            full = os.path.join(folder, name)
            if full not in wanted and os.path.isfile(full):
                raise InputError(f"Expected an image for every label file but {name} has "
                                 f"none in the split", full)


def denormalise(cxcywh: np.ndarray, sizes_hw: np.ndarray) -> np.ndarray:
    """COCO ``[x, y, w, h]`` pixels of normalised ``cx cy w h`` rows.

    Parameters
    ----------
    cxcywh : ndarray of float64, shape (R, 4)
    sizes_hw : ndarray of int64, shape (R, 2)
        Height and width of each row's image.
    """
    W = sizes_hw[:, 1].astype(np.float64)
    H = sizes_hw[:, 0].astype(np.float64)
    out = np.empty((cxcywh.shape[0], 4))
    out[:, 0] = (cxcywh[:, 0] - cxcywh[:, 2] / 2) * W
    out[:, 1] = (cxcywh[:, 1] - cxcywh[:, 3] / 2) * H
    out[:, 2] = cxcywh[:, 2] * W
    out[:, 3] = cxcywh[:, 3] * H
    return out


def _rows(chunks, paths, nfields, names, what):
    """``(values, file_idx)`` of every non-blank line of the files; InputError naming the
    file and line of the first line without ``nfields`` numbers."""
    data, first_line = join_files(chunks)
    parsed = parse_rows(data, nfields)
    if parsed is None:
        for chunk, path in zip(chunks, paths):
            bad = first_bad_line(chunk, nfields, what, names)
            if bad is not None:
                raise InputError(bad[1] + _hint(bad[1], nfields), path, f"line {bad[0]}")
        # every token reads as a number, some not as a plain decimal (nan, inf...): the
        # reference reader, line by line (the value checks then name the line)
        rows, files = [], []
        for f, chunk in enumerate(chunks):
            for line in chunk.splitlines():
                if line.split():
                    rows.append([float(t) for t in line.split()])
                    files.append(f)
        return (np.array(rows, dtype=np.float64).reshape(-1, nfields),
                np.array(files, dtype=np.int64))
    values, line = parsed
    file_idx = np.searchsorted(first_line, line - 1, side="right") - 1
    return values, file_idx.astype(np.int64)


def _hint(message: str, nfields: int) -> str:
    """What a wrong field count usually means."""
    import re
    m = re.search(r"but got (\d+):", message)
    if m is None:
        return ""
    got = int(m.group(1))
    if nfields == 6 and got == 5:
        return " (predictions need their confidence: Ultralytics writes it with save_conf=True)"
    if nfields == 5 and got >= 7 and got % 2:
        return " (a segmentation label? only detection labels `class cx cy w h` are read)"
    return ""


def _row_error(i: int, file_idx, chunks, paths, message: str):
    """InputError naming the file and line of row ``i``."""
    f = int(file_idx[i])
    k = i - int(np.searchsorted(file_idx, f, side="left"))  # row within the file
    lines = [j for j, l in enumerate(chunks[f].splitlines(), 1) if l.split()]
    return InputError(message, paths[f], f"line {lines[k]}")


def _check_rows(values, file_idx, chunks, paths, num_classes: int, nfields: int) -> np.ndarray:
    """Class positions of rows ``class cx cy w h [conf]``: integral classes in
    ``[0, num_classes)``, finite values, coordinates in [0, 1] (a small tolerance)."""
    if not np.isfinite(values).all():
        i, j = np.argwhere(~np.isfinite(values))[0]
        raise _row_error(int(i), file_idx, chunks, paths,
                         expected(_PRED_FIELDS[j], "a finite number", float(values[i, j])))
    cls = values[:, 0]
    bad = (cls != np.floor(cls)) | (cls < 0) | (cls >= num_classes)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _row_error(i, file_idx, chunks, paths, expected(
            "class", f"a class index in 0..{num_classes - 1} (one per `names` entry)",
            _num(cls[i])))
    tol = NORMALISED_TOLERANCE
    coords = values[:, 1:5]
    lower = np.array([-tol, -tol, 0.0, 0.0])  # a width or height is never negative
    out = (coords < lower) | (coords > 1 + tol)
    if out.any():
        i, j = np.argwhere(out)[0]
        raise _row_error(int(i), file_idx, chunks, paths, expected(
            _LABEL_FIELDS[j + 1], f"a normalised coordinate in [0, 1] (tolerance {tol:g})",
            _num(coords[i, j])) + (" (pixel coordinates? YOLO files hold coordinates "
                                   "divided by the image width and height)"
                                   if coords[i, j] > 1 + tol else ""))
    return cls.astype(np.int64)


def _num(v: float):
    return int(v) if float(v).is_integer() else float(v)


def load_yolo_predictions(folder, gt: GroundTruth) -> Detections:
    """Load a folder of YOLO prediction files (``<image stem>.txt``, lines
    ``class cx cy w h conf``) for ``gt``.

    Each file names its image by its stem (or file name, or id). ``gt.image_sizes``
    denormalises the coordinates. Rows are in sorted file-name order, then line order
    (the tie-break order among equal scores).
    """
    folder = Path(folder)
    if gt.image_sizes is None:
        raise InputError("Expected ground truth with image sizes to denormalise YOLO "
                         "predictions but got none", gt.sources.get("ground_truth"))
    try:
        with os.scandir(folder) as it:
            files = sorted(e.name for e in it if e.name.endswith(".txt")
                           and e.name != "classes.txt")
    except OSError as exc:
        raise InputError(f"Expected a folder of YOLO prediction files but got: "
                         f"{exc.strerror}", folder) from None
    lookup = image_names(gt)
    image_of_file = lookup.positions([f[:-4] for f in files], folder, lambda i: files[i])
    base = str(folder)
    paths = [os.path.join(base, f) for f in files]
    chunks = [read_file(p) for p in paths]
    names = paths
    k = len(gt.class_names)
    fast = _scan_rows(chunks, k, 6)
    if fast is not None:
        values, file_idx = fast
    else:
        values, file_idx = _rows(chunks, names, 6, _PRED_FIELDS, "class cx cy w h conf")
    cls = _check_rows(values, file_idx, chunks, names, k, 6)
    image_idx = image_of_file[file_idx]
    boxes = denormalise(values[:, 1:5], gt.image_sizes[image_idx])
    return Detections(image_idx=image_idx, class_idx=cls, boxes=boxes,
                      scores=np.ascontiguousarray(values[:, 5]),
                      order=np.arange(values.shape[0], dtype=np.int64),
                      sources={"results": str(folder), "format": "yolo"})


def _scan_rows(chunks, num_classes: int, nfields: int):
    """The C scanner's ``(values, file_idx)`` of ``class`` + ``nfields - 1`` numbers per
    line, file by file, or None (no extension, or a line it does not accept: the numpy
    path decides and names the problem). The scanner reads 6 fields; label lines (5) get
    a sixth, ``0``, appended to every line."""
    if _textscan is None:
        return None
    table = _native.id_table([str(c).encode() for c in range(num_classes)])
    scan = _textscan.scan_detections
    values, classes, counts = [], [], np.zeros(len(chunks), dtype=np.int64)
    pad = nfields == 5
    for f, chunk in enumerate(chunks):
        if pad and chunk:
            if chunk[-1:] != b"\n":
                chunk += b"\n"
            chunk = chunk.replace(b"\n", b" 0\n")
        v, _, _, _, error, cls = scan(chunk, table)
        if error is not None:
            return None
        values.append(v)
        classes.append(cls)
        counts[f] = len(cls) >> 3
    cls = np.frombuffer(b"".join(classes), dtype=np.int64)
    if (cls < 0).any():
        return None
    rest = np.frombuffer(b"".join(values), dtype=np.float64).reshape(-1, 5)
    out = np.empty((rest.shape[0], nfields))
    out[:, 0] = cls
    out[:, 1:] = rest[:, :nfields - 1]
    return out, np.repeat(np.arange(len(chunks), dtype=np.int64), counts)
