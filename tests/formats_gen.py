"""One generated dataset written in every format deteval reads (test helper).

Power-of-two image sizes and quarter-pixel boxes: every conversion between the formats is
exact in binary floating point, so every format must give exactly the figures of the COCO
version. The writers here are written from the formats' documentation, independently of
``deteval.convert``.

Class order is deliberately not sorted (``CLASSES``): the YOLO ``names``, LabelMe
``labels.txt`` and CVAT ``<meta>`` carry it; VOC (no ids) needs ``--classes FILE``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

import numpy as np

CLASSES = ["person", "cat", "zebra", "dog"]
SIZES = [(32, 32), (64, 32), (32, 64), (128, 64), (64, 128), (64, 64)]  # (W, H)


def _f(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


@dataclass
class Data:
    names: List[str]                 # image file names, sorted (ids 1..N)
    sizes: List[tuple]               # (W, H)
    gt: list = field(default_factory=list)    # (image index, class index, x, y, w, h, kind)
    dets: list = field(default_factory=list)  # (image index, class index, x, y, w, h, score)


def generate(seed: int, n_images: int = 12, max_objects: int = 6, dets_per_image: int = 8,
             empty_images: int = 2, ties: bool = False) -> Data:
    """A dataset: ``kind`` is "box" or "poly" (a polygon whose bounding box is the box).
    The last ``empty_images`` images have no objects. ``ties``: scores from {1/8, ..., 1},
    so equal scores are broken by order (every writer keeps the per-image order)."""
    rng = np.random.default_rng(seed)
    names = [f"img_{i:03d}.{'png' if i % 2 else 'jpg'}" for i in range(n_images)]
    sizes = [SIZES[int(rng.integers(len(SIZES)))] for _ in range(n_images)]
    data = Data(names, sizes)

    def box(W, H):
        w = int(rng.integers(4, 4 * W // 2 + 1)) / 4  # quarter pixels
        h = int(rng.integers(4, 4 * H // 2 + 1)) / 4
        x = int(rng.integers(0, int(4 * (W - w)) + 1)) / 4
        y = int(rng.integers(0, int(4 * (H - h)) + 1)) / 4
        return x, y, w, h

    scores = rng.permutation(n_images * (dets_per_image + max_objects) + 1)
    s = 0
    for i, (W, H) in enumerate(sizes):
        objs = [] if i >= n_images - empty_images else [
            (int(rng.integers(len(CLASSES))), *box(W, H), "poly" if rng.random() < 0.3
             else "box") for _ in range(int(rng.integers(1, max_objects + 1)))]
        for (c, x, y, w, h, kind) in objs:
            data.gt.append((i, c, x, y, w, h, kind))
        for k in range(int(rng.integers(0, dets_per_image + 1))):
            if objs and rng.random() < 0.6:  # near an object: a few quarter pixels off
                c, x, y, w, h, _ = objs[int(rng.integers(len(objs)))]
                dx, dy = (int(v) / 4 for v in rng.integers(-4, 5, 2))
                x2, y2 = min(max(x + dx, 0), W - w), min(max(y + dy, 0), H - h)
                if rng.random() < 0.2:
                    c = int(rng.integers(len(CLASSES)))
                det = (c, x2, y2, w, h)
            else:
                det = (int(rng.integers(len(CLASSES))), *box(W, H))
            score = int(rng.integers(1, 9)) / 8 if ties else (int(scores[s]) + 1) / 1024
            data.dets.append((i, *det, score))
            s += 1
    return data


def write_images(data: Data, folder: Path) -> None:
    """Tiny real PNG / JPEG files of the right sizes."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    for name, (W, H) in zip(data.names, data.sizes):
        Image.new("RGB", (W, H), (40, 90, 160)).save(folder / name)


def coco_gt(data: Data) -> dict:
    return {"images": [{"id": i + 1, "file_name": n, "width": W, "height": H}
                       for i, (n, (W, H)) in enumerate(zip(data.names, data.sizes))],
            "annotations": [{"id": j + 1, "image_id": i + 1, "category_id": c + 1,
                             "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0}
                            for j, (i, c, x, y, w, h, _) in enumerate(data.gt)],
            "categories": [{"id": k + 1, "name": n} for k, n in enumerate(CLASSES)]}


def coco_results(data: Data, by: str = "id") -> list:
    """``by``: "id" (1..N), "name" (file name) or "stem"."""
    def key(i):
        return {"id": i + 1, "name": data.names[i], "stem": data.names[i].rsplit(".", 1)[0]}[by]
    return [{"image_id": key(i), "category_id": c + 1, "bbox": [x, y, w, h], "score": s}
            for (i, c, x, y, w, h, s) in data.dets]


def write_coco(data: Data, root: Path):
    root.mkdir(parents=True, exist_ok=True)
    (root / "gt.json").write_text(json.dumps(coco_gt(data)))
    (root / "results.json").write_text(json.dumps(coco_results(data)))
    return root / "gt.json", root / "results.json"


def write_yolo(data: Data, root: Path, names_as_dict: bool = False) -> Path:
    """data.yaml (``path`` absent: its folder), images/val, labels/val."""
    write_images(data, root / "images" / "val")
    (root / "labels" / "val").mkdir(parents=True, exist_ok=True)
    for i, (name, (W, H)) in enumerate(zip(data.names, data.sizes)):
        rows = [(c, (x + w / 2) / W, (y + h / 2) / H, w / W, h / H)
                for (j, c, x, y, w, h, _) in data.gt if j == i]
        if rows or i % 3:  # some empty images have no label file at all
            (root / "labels" / "val" / (name.rsplit(".", 1)[0] + ".txt")).write_text(
                "".join(" ".join([str(c)] + [_f(v) for v in r]) + "\n" for c, *r in rows))
    names = ("\n".join(f"  {k}: {n}" for k, n in enumerate(CLASSES)) if names_as_dict else
             "\n".join(f"  - {n}" for n in CLASSES))
    (root / "data.yaml").write_text(f"train: images/train\nval: images/val\nnames:\n{names}\n")
    return root / "data.yaml"


def write_yolo_predictions(data: Data, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, (name, (W, H)) in enumerate(zip(data.names, data.sizes)):
        rows = [(c, (x + w / 2) / W, (y + h / 2) / H, w / W, h / H, s)
                for (j, c, x, y, w, h, s) in data.dets if j == i]
        if rows:
            (folder / (name.rsplit(".", 1)[0] + ".txt")).write_text(
                "".join(" ".join([str(c)] + [_f(v) for v in r]) + "\n" for c, *r in rows))
    return folder


def write_labelme(data: Data, folder: Path, labels_txt: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, (name, (W, H)) in enumerate(zip(data.names, data.sizes)):
        shapes = []
        for (j, c, x, y, w, h, kind) in data.gt:
            if j != i:
                continue
            if kind == "box":  # corners in the "wrong" order: any two opposite corners
                pts = [[x + w, y + h], [x, y]]
                shapes.append({"label": CLASSES[c], "points": pts, "shape_type": "rectangle"})
            else:
                pts = [[x + w / 2, y], [x + w, y + h / 4], [x + w / 4, y + h], [x, y + h / 2]]
                shapes.append({"label": CLASSES[c], "points": pts, "shape_type": "polygon",
                               "group_id": None, "flags": {}})
        doc = {"version": "5.4.1", "flags": {}, "shapes": shapes, "imagePath": name,
               "imageData": None, "imageHeight": H, "imageWidth": W}
        (folder / (name.rsplit(".", 1)[0] + ".json")).write_text(json.dumps(doc, indent=2))
    if labels_txt:
        (folder / "labels.txt").write_text("__ignore__\n_background_\n" + "\n".join(CLASSES)
                                          + "\n")
    return folder


def write_cvat(data: Data, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    labels = "".join(f"<label><name>{n}</name><color>#ff0000</color><type>any</type>"
                     f"<attributes/></label>" for n in CLASSES)
    parts = ['<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n<version>1.1</version>\n'
             f"<meta><task><id>1</id><name>t</name><labels>{labels}</labels></task></meta>\n"]
    for i in reversed(range(len(data.names))):  # file order is not id order
        W, H = data.sizes[i]
        parts.append(f'<image id="{i}" name="{data.names[i]}" width="{W}" height="{H}">\n')
        for (j, c, x, y, w, h, kind) in data.gt:
            if j != i:
                continue
            if kind == "box":
                parts.append(f'  <box label="{CLASSES[c]}" source="manual" occluded="0" '
                             f'xtl="{_f(x)}" ytl="{_f(y)}" xbr="{_f(x + w)}" ybr="{_f(y + h)}" '
                             'z_order="0"></box>\n')
            else:
                pts = [(x + w / 2, y), (x + w, y + h / 4), (x + w / 4, y + h), (x, y + h / 2)]
                parts.append(f'  <polygon label="{CLASSES[c]}" source="manual" occluded="0" '
                             f'points="{";".join(f"{_f(a)},{_f(b)}" for a, b in pts)}" '
                             'z_order="0"></polygon>\n')
        parts.append("</image>\n")
    parts.append("</annotations>\n")
    path.write_text("".join(parts))
    return path


def write_voc(data: Data, root: Path) -> Path:
    """VOC year layout: Annotations/<stem>.xml with 1-based inclusive corners."""
    ann = root / "Annotations"
    ann.mkdir(parents=True, exist_ok=True)
    for i, (name, (W, H)) in enumerate(zip(data.names, data.sizes)):
        objs = "".join(
            f"<object><name>{CLASSES[c]}</name><difficult>0</difficult><bndbox>"
            f"<xmin>{_f(x + 1)}</xmin><ymin>{_f(y + 1)}</ymin><xmax>{_f(x + w)}</xmax>"
            f"<ymax>{_f(y + h)}</ymax></bndbox></object>"
            for (j, c, x, y, w, h, _) in data.gt if j == i)
        (ann / (name.rsplit(".", 1)[0] + ".xml")).write_text(
            f"<annotation><filename>{name}</filename><size><width>{W}</width><height>{H}"
            f"</height><depth>3</depth></size>{objs}</annotation>")
    (root / "classes.txt").write_text("\n".join(CLASSES) + "\n")
    return root


def write_voc_results(data: Data, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k, cls in enumerate(CLASSES):
        lines = [f"{data.names[i].rsplit('.', 1)[0]} {_f(s)} {_f(x + 1)} {_f(y + 1)} "
                 f"{_f(x + w)} {_f(y + h)}\n" for (i, c, x, y, w, h, s) in data.dets if c == k]
        (folder / f"comp4_det_test_{cls}.txt").write_text("".join(lines))
    return folder
