#!/usr/bin/env python
"""Write the small VOC and COCO fixtures under fixtures/ (deterministic).

    python scripts/make_fixtures.py [--out fixtures]

Everything comes from one seeded numpy RNG and is formatted with fixed
precision, so re-running the script rewrites byte-identical files.

VOC (fixtures/voc/):
  VOC2007/Annotations/<id>.xml       40 images, 6 classes, some difficult objects,
                                     one object without a <difficult> tag, one empty image
  VOC2007/ImageSets/Main/test.txt    the image ids
  results/comp4_det_test_<cls>.txt   simulated detector output, one file per class

COCO (fixtures/coco/):
  instances_val.json                 30 images, 6 categories with COCO's ids, a few crowd regions
  results.json                       simulated detector output
"""
import argparse
import json
import os

import numpy as np

SEED = 20240607

VOC_CLASSES = ["bicycle", "car", "cat", "chair", "dog", "person"]
VOC_CLASS_WEIGHTS = [0.10, 0.20, 0.10, 0.17, 0.11, 0.32]
VOC_SIZES = [(500, 375), (375, 500), (500, 333), (333, 500), (500, 500), (486, 500)]
POSES = ["Unspecified", "Frontal", "Left", "Right", "Rear"]

COCO_CATEGORIES = [
    (1, "person", "person"),
    (2, "bicycle", "vehicle"),
    (3, "car", "vehicle"),
    (17, "cat", "animal"),
    (18, "dog", "animal"),
    (62, "chair", "furniture"),
]
COCO_CAT_WEIGHTS = [0.34, 0.09, 0.20, 0.10, 0.11, 0.16]
COCO_SIZES = [(640, 480), (480, 640), (640, 427), (427, 640), (640, 360), (612, 612)]


# ----------------------------------------------------------------------------- helpers

VOC_SCALES = ([0.08, 0.15, 0.3, 0.5, 0.8], [0.15, 0.3, 0.3, 0.17, 0.08])
COCO_SCALES = ([0.03, 0.06, 0.12, 0.25, 0.45, 0.75], [0.2, 0.2, 0.2, 0.2, 0.12, 0.08])


def random_box(rng, w, h, min_side=12, scales=VOC_SCALES):
    """A box (x1, y1, x2, y2) in continuous coordinates inside [0, w] x [0, h]."""
    scale = rng.choice(scales[0], p=scales[1])
    bw = float(np.clip(rng.normal(scale, scale / 4) * w, min_side, w))
    bh = float(np.clip(rng.normal(scale, scale / 4) * h * rng.uniform(0.7, 1.5), min_side, h))
    x1 = rng.uniform(0, w - bw)
    y1 = rng.uniform(0, h - bh)
    return x1, y1, x1 + bw, y1 + bh


def jitter(rng, box, amount, w, h):
    """Move each side by a normal amount relative to the box size, clip to the image."""
    x1, y1, x2, y2 = box
    bw, bh = x2 - x1, y2 - y1
    d = rng.normal(0, amount, 4) * np.array([bw, bh, bw, bh])
    nx1 = min(max(x1 + d[0], 0.0), w - 2)
    ny1 = min(max(y1 + d[1], 0.0), h - 2)
    nx2 = max(min(x2 + d[2], w), nx1 + 2)
    ny2 = max(min(y2 + d[3], h), ny1 + 2)
    return nx1, ny1, nx2, ny2


def shift(rng, box, w, h):
    """A mislocalized box: shifted by about half its size (IoU typically 0.2-0.45)."""
    x1, y1, x2, y2 = box
    bw, bh = x2 - x1, y2 - y1
    dx = rng.choice([-1, 1]) * rng.uniform(0.35, 0.6) * bw
    dy = rng.choice([-1, 1]) * rng.uniform(0.0, 0.3) * bh
    nx1 = min(max(x1 + dx, 0.0), w - 2)
    ny1 = min(max(y1 + dy, 0.0), h - 2)
    return nx1, ny1, max(min(x2 + dx, w), nx1 + 2), max(min(y2 + dy, h), ny1 + 2)


def score(rng, kind):
    a, b = {"tp": (6, 2), "dup": (3, 3), "mis": (2, 4), "bg": (1.2, 6), "conf": (2, 4)}[kind]
    return float(rng.beta(a, b))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


# ----------------------------------------------------------------------------- VOC

def voc_xml(image_id, w, h, objects):
    lines = [
        "<annotation>",
        "\t<folder>VOC2007</folder>",
        f"\t<filename>{image_id}.jpg</filename>",
        "\t<source>",
        "\t\t<database>The VOC2007 Database</database>",
        "\t\t<annotation>PASCAL VOC2007</annotation>",
        "\t\t<image>flickr</image>",
        "\t</source>",
        "\t<size>",
        f"\t\t<width>{w}</width>",
        f"\t\t<height>{h}</height>",
        "\t\t<depth>3</depth>",
        "\t</size>",
        "\t<segmented>0</segmented>",
    ]
    for o in objects:
        lines += [
            "\t<object>",
            f"\t\t<name>{o['name']}</name>",
            f"\t\t<pose>{o['pose']}</pose>",
            f"\t\t<truncated>{o['truncated']}</truncated>",
        ]
        if o["difficult"] is not None:
            lines.append(f"\t\t<difficult>{o['difficult']}</difficult>")
        x1, y1, x2, y2 = o["box"]
        lines += [
            "\t\t<bndbox>",
            f"\t\t\t<xmin>{x1}</xmin>",
            f"\t\t\t<ymin>{y1}</ymin>",
            f"\t\t\t<xmax>{x2}</xmax>",
            f"\t\t\t<ymax>{y2}</ymax>",
            "\t\t</bndbox>",
            "\t</object>",
        ]
    lines.append("</annotation>")
    return "\n".join(lines) + "\n"


def make_voc(rng, out, n_images=40):
    ids = sorted(rng.choice(np.arange(1, 9964), size=n_images, replace=False).tolist())
    ids = [f"{i:06d}" for i in ids]
    empty_image = ids[n_images // 2]
    no_difficult_tag_done = False

    images = []
    for image_id in ids:
        w, h = VOC_SIZES[rng.integers(len(VOC_SIZES))]
        objects = []
        n_obj = 0 if image_id == empty_image else 1 + int(rng.poisson(2.2))
        for _ in range(n_obj):
            cls = VOC_CLASSES[rng.choice(len(VOC_CLASSES), p=VOC_CLASS_WEIGHTS)]
            bx1, by1, bx2, by2 = random_box(rng, w - 1, h - 1)
            # VOC pixel coordinates: integers, 1-based, inclusive
            box = (int(round(bx1)) + 1, int(round(by1)) + 1, int(round(bx2)) + 1, int(round(by2)) + 1)
            small = (box[2] - box[0]) * (box[3] - box[1]) < 40 * 40
            difficult = int(rng.random() < (0.45 if small else 0.1))
            truncated = int(rng.random() < 0.3)
            obj = {"name": cls, "pose": POSES[rng.integers(len(POSES))], "truncated": truncated,
                   "difficult": difficult, "box": box}
            if not no_difficult_tag_done and len(images) >= 3 and not difficult:
                obj["difficult"] = None  # one object with no <difficult> tag (means 0)
                no_difficult_tag_done = True
            objects.append(obj)
        images.append((image_id, w, h, objects))
        write(os.path.join(out, "VOC2007", "Annotations", f"{image_id}.xml"), voc_xml(image_id, w, h, objects))

    write(os.path.join(out, "VOC2007", "ImageSets", "Main", "test.txt"), "".join(i + "\n" for i in ids))

    # simulated detector; boxes are written in VOC's 1-based pixel frame
    dets = {c: [] for c in VOC_CLASSES}

    def add(cls, image_id, s, box):
        dets[cls].append((image_id, s, box))

    for image_id, w, h, objects in images:
        w, h = w - 1, h - 1  # 0-based frame: coordinates in [0, w-1] x [0, h-1]
        for o in objects:
            x1, y1, x2, y2 = o["box"]
            box = (x1 - 1.0, y1 - 1.0, x2 - 1.0, y2 - 1.0)
            hard = o["difficult"] == 1
            if rng.random() < (0.55 if hard else 0.82):
                add(o["name"], image_id, score(rng, "mis" if hard else "tp"), jitter(rng, box, 0.05, w, h))
                if rng.random() < 0.25:
                    add(o["name"], image_id, score(rng, "dup"), jitter(rng, box, 0.08, w, h))
            if rng.random() < 0.2:
                add(o["name"], image_id, score(rng, "mis"), shift(rng, box, w, h))
            if rng.random() < 0.12:
                other = VOC_CLASSES[rng.integers(len(VOC_CLASSES))]
                if other != o["name"]:
                    add(other, image_id, score(rng, "conf"), jitter(rng, box, 0.05, w, h))
        for _ in range(int(rng.poisson(1.5))):
            cls = VOC_CLASSES[rng.choice(len(VOC_CLASSES), p=VOC_CLASS_WEIGHTS)]
            add(cls, image_id, score(rng, "bg"), random_box(rng, w, h))

    for cls in VOC_CLASSES:
        rows = dets[cls]
        # a few exact ties: copy the score of another detection of the same class
        for _ in range(2):
            i, j = rng.choice(len(rows), size=2, replace=False)
            rows[i] = (rows[i][0], rows[j][1], rows[i][2])
        # detection files are in image order, like a detector run over the image set
        lines = []
        for image_id, s, (x1, y1, x2, y2) in rows:
            lines.append(f"{image_id} {s:.6f} {x1 + 1:.1f} {y1 + 1:.1f} {x2 + 1:.1f} {y2 + 1:.1f}\n")
        write(os.path.join(out, "results", f"comp4_det_test_{cls}.txt"), "".join(lines))


# ----------------------------------------------------------------------------- COCO

def r2(x):
    return round(float(x), 2)


def dump_records(key, records, last):
    body = ",\n".join("    " + json.dumps(r, separators=(", ", ": ")) for r in records)
    return f'  "{key}": [\n{body}\n  ]' + ("" if last else ",") + "\n"


def make_coco(rng, out, n_images=30):
    ids = sorted(rng.choice(np.arange(1000, 582000), size=n_images, replace=False).tolist())
    images, annotations, truth = [], [], []
    ann_id = 1
    crowd_left = 2
    empty_image = ids[7]
    for image_id in ids:
        w, h = COCO_SIZES[rng.integers(len(COCO_SIZES))]
        images.append({"id": image_id, "file_name": f"{image_id:012d}.jpg", "width": w, "height": h})
        n_obj = 0 if image_id == empty_image else 1 + int(rng.poisson(3.0))
        objs = []
        for _ in range(n_obj):
            k = int(rng.choice(len(COCO_CATEGORIES), p=COCO_CAT_WEIGHTS))
            x1, y1, x2, y2 = random_box(rng, w, h, min_side=4, scales=COCO_SCALES)
            bw, bh = x2 - x1, y2 - y1
            iscrowd = 0
            if crowd_left and k == 0 and bw * bh > 0.15 * w * h:
                iscrowd, crowd_left = 1, crowd_left - 1
            # segmentation area: a fraction of the box, as for real masks
            area = r2(bw * bh * (rng.uniform(0.92, 1.0) if iscrowd else rng.uniform(0.45, 0.85)))
            ann = {"id": ann_id, "image_id": image_id, "category_id": COCO_CATEGORIES[k][0],
                   "bbox": [r2(x1), r2(y1), r2(bw), r2(bh)], "area": area, "iscrowd": iscrowd}
            annotations.append(ann)
            objs.append((k, (x1, y1, x2, y2), iscrowd))
            ann_id += 1
        truth.append((image_id, w, h, objs))

    results = []

    def add(k, image_id, s, box):
        x1, y1, x2, y2 = box
        results.append({"image_id": image_id, "category_id": COCO_CATEGORIES[k][0],
                        "bbox": [r2(x1), r2(y1), r2(x2 - x1), r2(y2 - y1)], "score": round(s, 3)})

    for image_id, w, h, objs in truth:
        for k, box, iscrowd in objs:
            if iscrowd:  # detections of individual people inside the crowd region
                x1, y1, x2, y2 = box
                for _ in range(3):
                    cx, cy = rng.uniform(x1, x2), rng.uniform(y1, y2)
                    pw, ph = (x2 - x1) * 0.15, (y2 - y1) * 0.5
                    add(k, image_id, score(rng, "dup"),
                        (max(cx - pw / 2, 0), max(cy - ph / 2, 0), min(cx + pw / 2, w), min(cy + ph / 2, h)))
                continue
            small = (box[2] - box[0]) * (box[3] - box[1]) < 32 * 32
            if rng.random() < (0.6 if small else 0.85):
                add(k, image_id, score(rng, "tp"), jitter(rng, box, rng.choice([0.05, 0.1, 0.15] if small else [0.02, 0.05, 0.1]), w, h))
                if rng.random() < 0.3:
                    add(k, image_id, score(rng, "dup"), jitter(rng, box, 0.12, w, h))
            if rng.random() < 0.2:
                add(k, image_id, score(rng, "mis"), shift(rng, box, w, h))
            if rng.random() < 0.1:
                other = int(rng.integers(len(COCO_CATEGORIES)))
                if other != k:
                    add(other, image_id, score(rng, "conf"), jitter(rng, box, 0.05, w, h))
        for _ in range(int(rng.poisson(3.0))):
            k = int(rng.choice(len(COCO_CATEGORIES), p=COCO_CAT_WEIGHTS))
            add(k, image_id, score(rng, "bg"), random_box(rng, w, h, min_side=4, scales=COCO_SCALES))

    # a few exact ties within a category (scores have 3 decimals, so some occur anyway)
    for _ in range(3):
        i = int(rng.integers(len(results)))
        same = [j for j, r in enumerate(results) if r["category_id"] == results[i]["category_id"] and j != i]
        results[int(rng.choice(same))]["score"] = results[i]["score"]

    categories = [{"id": cid, "name": name, "supercategory": sup} for cid, name, sup in COCO_CATEGORIES]
    gt = "{\n"
    gt += '  "info": {"description": "deteval test fixture (synthetic, COCO format)", "version": "1.0"},\n'
    gt += '  "licenses": [],\n'
    gt += dump_records("images", images, False)
    gt += dump_records("annotations", annotations, False)
    gt += dump_records("categories", categories, True)
    gt += "}\n"
    write(os.path.join(out, "instances_val.json"), gt)
    dt = "[\n" + ",\n".join("  " + json.dumps(r, separators=(", ", ": ")) for r in results) + "\n]\n"
    write(os.path.join(out, "results.json"), dt)


README = """\
# Test fixtures

Small synthetic but realistically formatted evaluation inputs. `voc/` holds a PASCAL VOC2007-style
tree (`VOC2007/Annotations/*.xml` for 40 images of 6 classes, with difficult objects, one object
without a `<difficult>` tag and one image without objects; `VOC2007/ImageSets/Main/test.txt`) and
the output of a simulated detector in the devkit's `results/comp4_det_test_<class>.txt` format
(jittered true positives, duplicates, mislocalized, confused-class and background detections, a
few tied scores). `coco/` holds a COCO `instances_val.json` (30 images, 6 categories with COCO's
non-contiguous ids, segmentation-style areas, two crowd regions) and a matching `results.json`.
All files are generated deterministically; `python scripts/make_fixtures.py` regenerates them
byte for byte.
"""


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "fixtures"))
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    make_voc(rng, os.path.join(args.out, "voc"))
    make_coco(rng, os.path.join(args.out, "coco"))
    write(os.path.join(args.out, "README.md"), README)


if __name__ == "__main__":
    main()
