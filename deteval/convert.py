"""``deteval convert``: ground truth of any readable format to COCO, YOLO or VOC.

The source is read by :mod:`deteval.io.detect` (the same tables the evaluation uses), so
a converted dataset gives the figures of its source. Numbers are written without rounding
(the shortest text that reads back as the same double), so COCO -> YOLO -> COCO gives the
same boxes up to the last bit the normalised YOLO values can hold (exactly, for power-of-
two image sizes). What the target cannot hold is said in the returned notes:

* YOLO detect format: no crowd flag (crowd objects are not written), no difficult flag
  (difficult objects become ordinary), no segmentation (boxes only);
* VOC: no crowd flag (crowd objects are written as ``<difficult>1</difficult>``, the VOC
  way of ignoring an object), no segmentation;
* COCO: no difficult flag (difficult objects become ordinary).

Boxes: COCO ``[x, y, w, h]``; YOLO ``cx = (x + w / 2) / W``, ``cy = (y + h / 2) / H``,
``w / W``, ``h / H``; VOC ``xmin = x + 1``, ``ymin = y + 1``, ``xmax = x + w``,
``ymax = y + h`` (1-based inclusive pixel corners, the inverse of the VOC reader).

A folder target is built beside ``OUT`` and renamed into place: on any error nothing is
written. ``OUT`` must not exist (or be an empty folder).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import List, Optional, Sequence
from xml.sax.saxutils import escape

import numpy as np

from .errors import InputError, expected
from .tables import GroundTruth

__all__ = ["TARGETS", "convert", "to_coco_dict"]

TARGETS = ("coco", "yolo", "voc")


def _text(v: float) -> str:
    """A number as the shortest text that reads back as the same double."""
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 2 ** 53 else repr(v)


def convert(source, target: str, out, *, classes_file=None, split: Optional[str] = None
            ) -> List[str]:
    """Convert the ground truth at ``source`` (any readable format) to ``target``.

    Parameters
    ----------
    source : path
        COCO JSON, YOLO ``data.yaml`` (or its folder), LabelMe folder, CVAT XML, VOC folder.
    target : {"coco", "yolo", "voc"}
    out : path
        A JSON file (``coco``) or a new folder (``yolo``, ``voc``).
    classes_file : path, optional
        Class order for LabelMe / CVAT / VOC sources.
    split : str, optional
        YOLO source split (default ``val``).

    Returns
    -------
    list of str
        Notes: what the target cannot represent, what was guessed.
    """
    from .io.dataset import read_class_file
    from .io.detect import load_ground_truth
    if target not in TARGETS:
        raise InputError(expected("--to", " or ".join(TARGETS), target))
    classes = read_class_file(classes_file) if classes_file is not None else None
    gt = load_ground_truth(source, split=split, classes=classes)
    notes = list(gt.sources.get("warnings", []))
    fmt = gt.sources.get("format")
    if fmt in ("labelme", "cvat") and target != fmt:
        notes.append("polygons are written as their bounding boxes")
    if fmt == "coco" and target != "coco":
        notes.append("boxes only: segmentations, keypoints and other annotation fields are "
                     "not written")
        with np.errstate(invalid="ignore"):
            other = int((gt.area != gt.boxes[:, 2] * gt.boxes[:, 3]).sum())
        if other:
            notes.append(f"{other} object(s) have an `area` other than w*h (a segmentation's): "
                         f"{target.upper()} stores boxes, read back with area w*h")
    if fmt == "coco" and target != "coco":
        order = sorted(range(gt.num_images), key=lambda i: (gt.sources.get("file_names")
                                                             or [""] * gt.num_images)[i] or "")
        same_images = gt.image_ids[order].tolist() == list(range(1, gt.num_images + 1))
        same_classes = gt.class_ids.tolist() == list(range(1, gt.num_classes + 1))
        if not (same_images and same_classes):
            notes.append(f"{target.upper()} stores no ids: read back, images are 1..N in "
                         "sorted file-name order and categories 1..K in class order")
    if target == "coco":
        ndiff = int(gt.difficult.sum())
        if ndiff and fmt != "voc":  # the VOC reader already said so
            notes.append(f"{ndiff} difficult object(s) written as ordinary objects (COCO has "
                         "no difficult flag)")
        text = json.dumps(to_coco_dict(gt), allow_nan=False)
        from .outfile import write_output
        write_output(out, text + "\n", what="OUT")
        return notes
    if target == "yolo":
        files = _yolo_files(gt, notes)
    else:
        files = _voc_files(gt, notes)
    links = _source_images(gt, source)
    if links is not None and target == "yolo":
        _check_image_sizes(gt, links)
    img_dir = "images/val" if target == "yolo" else "JPEGImages"
    if links is None:
        notes.append(f"source images not found: copy them into {Path(out) / img_dir} "
                     + ("before reading the dataset (YOLO sizes come from the images)"
                        if target == "yolo" else "if needed"))
    _write_folder(Path(out), files, links, img_dir, gt)
    return notes


def to_coco_dict(gt: GroundTruth) -> dict:
    """The COCO instances dict of a GroundTruth with COCO boxes (``box_format="xywh"``).

    Images carry ``file_name`` and ``width`` / ``height`` when known; annotations
    ``id`` 1..G in row order, ``area``, ``iscrowd``.
    """
    names = gt.sources.get("file_names") or [None] * gt.num_images
    sizes = gt.image_sizes
    images = []
    for i, image_id in enumerate(gt.image_ids.tolist()):
        im = {"id": int(image_id)}
        if names[i]:
            im["file_name"] = names[i]
        if sizes is not None and sizes[i, 0] > 0:
            im["height"], im["width"] = int(sizes[i, 0]), int(sizes[i, 1])
        images.append(im)
    class_ids = gt.class_ids if gt.class_ids is not None else np.arange(1, gt.num_classes + 1)
    image_ids, cat_ids = gt.image_ids[gt.image_idx], class_ids[gt.class_idx]
    anns = [{"id": j + 1, "image_id": int(i), "category_id": int(c), "bbox": b,
             "area": float(a), "iscrowd": int(k)}
            for j, (i, c, b, a, k) in enumerate(zip(image_ids.tolist(), cat_ids.tolist(),
                                                    gt.boxes.tolist(), gt.area.tolist(),
                                                    gt.crowd.tolist()))]
    cats = [{"id": int(c), "name": n} for c, n in zip(class_ids.tolist(), gt.class_names)]
    return {"images": images, "annotations": anns, "categories": cats}


def _stems(gt: GroundTruth) -> List[str]:
    names = gt.sources.get("file_names") or [None] * gt.num_images
    stems = []
    seen = {}
    for i, n in enumerate(names):
        base = (n or str(gt.image_ids[i])).replace("\\", "/").rsplit("/", 1)[-1]
        s = base.rsplit(".", 1)[0] if "." in base[1:] else base
        if s in seen:
            raise InputError(f"Expected one image per file stem (the target names files by it) "
                             f"but got {names[seen[s]]!r} and {n!r}",
                             gt.sources.get("ground_truth"))
        seen[s] = i
        stems.append(s)
    return stems


def _yolo_files(gt: GroundTruth, notes: List[str]) -> dict:
    """relative path -> text of a YOLO dataset (data.yaml and one label file per image)."""
    import yaml
    sizes = gt.image_sizes
    if sizes is None or (sizes <= 0).any():
        bad = 0 if sizes is None else int(np.flatnonzero((sizes <= 0).any(axis=1))[0])
        raise InputError(f"Expected every image's width and height (YOLO coordinates are "
                         f"normalised by them) but image id {gt.image_ids[bad]} has none",
                         gt.sources.get("ground_truth"))
    keep = ~gt.crowd
    if (~keep).any():
        notes.append(f"{int((~keep).sum())} crowd object(s) not written (YOLO has no crowd "
                     "flag)")
    if gt.difficult.any() and gt.sources.get("format") != "voc":
        notes.append(f"{int(gt.difficult.sum())} difficult object(s) written as ordinary "
                     "objects (YOLO has no difficult flag)")
    stems = _stems(gt)
    img, cls, b = gt.image_idx[keep], gt.class_idx[keep], gt.boxes[keep]
    W = sizes[img, 1].astype(np.float64)
    H = sizes[img, 0].astype(np.float64)
    cx, cy = (b[:, 0] + b[:, 2] / 2) / W, (b[:, 1] + b[:, 3] / 2) / H
    rows = np.column_stack((cx, cy, b[:, 2] / W, b[:, 3] / H))
    lines = [[] for _ in range(gt.num_images)]
    for i, k, r in zip(img.tolist(), cls.tolist(), rows.tolist()):
        lines[i].append(f"{k} " + " ".join(_text(v) for v in r) + "\n")
    files = {f"labels/val/{s}.txt": "".join(ls) for s, ls in zip(stems, lines)}
    files["data.yaml"] = yaml.safe_dump(
        {"train": "images/val", "val": "images/val",
         "names": {k: n for k, n in enumerate(gt.class_names)}},
        sort_keys=False, allow_unicode=True)
    return files


def _voc_files(gt: GroundTruth, notes: List[str]) -> dict:
    """relative path -> text of a VOC folder (Annotations/<stem>.xml)."""
    stems = _stems(gt)
    names = gt.sources.get("file_names") or [None] * gt.num_images
    if gt.crowd.any():
        notes.append(f"{int(gt.crowd.sum())} crowd object(s) written as <difficult>1"
                     "</difficult> (VOC has no crowd flag; difficult objects are ignored "
                     "like crowd regions, but matched by IoU, not intersection over the "
                     "detection)")
    per_image = [[] for _ in range(gt.num_images)]
    for i, k, b, d in zip(gt.image_idx.tolist(), gt.class_idx.tolist(), gt.boxes.tolist(),
                          (gt.difficult | gt.crowd).tolist()):
        x, y, w, h = b
        per_image[i].append(
            f"\t<object>\n\t\t<name>{escape(gt.class_names[k])}</name>\n"
            f"\t\t<pose>Unspecified</pose>\n\t\t<truncated>0</truncated>\n"
            f"\t\t<difficult>{int(d)}</difficult>\n\t\t<bndbox>\n"
            f"\t\t\t<xmin>{_text(x + 1)}</xmin>\n\t\t\t<ymin>{_text(y + 1)}</ymin>\n"
            f"\t\t\t<xmax>{_text(x + w)}</xmax>\n\t\t\t<ymax>{_text(y + h)}</ymax>\n"
            f"\t\t</bndbox>\n\t</object>\n")
    files = {}
    sizes = gt.image_sizes
    for i, s in enumerate(stems):
        size = ""
        if sizes is not None and sizes[i, 0] > 0:
            size = (f"\t<size>\n\t\t<width>{int(sizes[i, 1])}</width>\n\t\t<height>"
                    f"{int(sizes[i, 0])}</height>\n\t\t<depth>3</depth>\n\t</size>\n")
        fname = escape((names[i] or s).replace("\\", "/").rsplit("/", 1)[-1])
        files[f"Annotations/{s}.xml"] = (
            f"<annotation>\n\t<folder>VOC</folder>\n\t<filename>{fname}</filename>\n{size}"
            + "".join(per_image[i]) + "</annotation>\n")
    files["ImageSets/Main/val.txt"] = "".join(s + "\n" for s in stems)
    return files


def _source_images(gt: GroundTruth, source) -> Optional[List[Path]]:
    """The image file of every image of the source dataset, or None if any is missing."""
    fmt = gt.sources.get("format")
    names = gt.sources.get("file_names") or []
    found: List[Optional[str]] = list(gt.sources.get("image_paths") or [None] * len(names))
    root = Path(gt.sources.get("ground_truth") or source)
    base = root.parent if root.is_file() else root
    folders = {"coco": [base, base / "images"], "cvat": [base / "images", base],
               "voc": [base / "JPEGImages", base], "labelme": [base]}.get(fmt, [])
    out = []
    for i, n in enumerate(names):
        p = found[i] if i < len(found) else None
        if p is None and n:
            p = next((str(f / n) for f in folders if (f / n).is_file()), None)
        if p is None or not os.path.isfile(p):
            return None
        out.append(Path(p))
    return out if out else None


def _check_image_sizes(gt: GroundTruth, images: Sequence[Path]) -> None:
    """The YOLO dataset is read back with the images' header sizes: they must be the sizes
    the coordinates were normalised by."""
    from .io.dataset import image_size
    for i, path in enumerate(images):
        w, h = image_size(path)
        want_h, want_w = (int(v) for v in gt.image_sizes[i])
        if (w, h) != (want_w, want_h):
            raise InputError(f"Expected the image to be {want_w}x{want_h} as the source says "
                             f"(YOLO coordinates are normalised by it) but its header says "
                             f"{w}x{h}", path)


def _write_folder(out: Path, files: dict, links: Optional[Sequence[Path]], img_dir: str,
                  gt: GroundTruth) -> None:
    """Build the folder beside ``out`` and rename it into place (nothing written on error)."""
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        raise InputError(expected("OUT", "a new or empty folder", "an existing "
                                  + ("folder with files" if out.is_dir() else "file")), out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(expected("OUT", "a path in an existing folder", str(out))
                         + " (no parent folder)", out)
    tmp = parent / f".{out.name}.deteval-tmp-{os.getpid()}"
    try:
        for rel, text in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        if links is not None:
            (tmp / img_dir).mkdir(parents=True, exist_ok=True)
            for src in links:
                dst = tmp / img_dir / src.name
                try:
                    os.symlink(os.path.abspath(src), dst)
                except OSError:
                    shutil.copyfile(src, dst)
        if out.exists():
            out.rmdir()
        os.rename(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"Expected a writable OUT folder but got: {exc.strerror or exc}",
                         out) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
