"""Seeded random COCO cases and a pycocotools oracle for the differential tests.

``generate_case(seed)`` builds a small COCO instances dict and a results list
that mix ordinary objects with the corner cases where COCOeval's rules are easy
to get wrong (see ``FEATURES``).  Annotation ids start at 1: pycocotools
treats a match to GT id 0 as "unmatched" (a pycocotools bug that deteval does
not copy), so parity is only defined for ids >= 1.

``pycocotools_figures(gt, results, ...)`` runs pycocotools' COCOeval (bbox)
on deep copies of the inputs and returns the figures deteval reports, by name.
"""
from __future__ import annotations

import contextlib
import copy
import io
import math
import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

__all__ = [
    "FEATURES",
    "DEFAULT_AREA_RANGES",
    "DEFAULT_MAX_DETS",
    "Case",
    "generate_case",
    "pycocotools_eval",
    "pycocotools_figures",
    "figure_names",
    "threshold_name",
    "area_suffix",
    "empty_results_figures",
    "shuffle_results",
    "shuffle_ground_truth",
    "dataset_to_results",
    "shrink_case",
]

DEFAULT_AREA_RANGES = {
    "all": (0.0, 1e10),
    "small": (0.0, 32.0 ** 2),
    "medium": (32.0 ** 2, 96.0 ** 2),
    "large": (96.0 ** 2, 1e10),
}
DEFAULT_MAX_DETS = (1, 10, 100)
_SHORT_AREA_NAMES = {"small": "s", "medium": "m", "large": "l"}

#: IoU thresholds of pycocotools as exact fractions: integer boxes built from
#: them give ``inter/union`` = the nearest double to the fraction, equal to the
#: ``np.linspace(.5, .95, 10)`` value or just off it (9/10 = 0.9 vs
#: linspace's 0.8999999999999999), so the ``iou >= t`` boundary is exercised.
THRESHOLD_FRACTIONS = [(1, 2), (11, 20), (3, 5), (13, 20), (7, 10), (3, 4),
                       (4, 5), (17, 20), (9, 10), (19, 20)]

#: Corner cases a generated case may contain (``Case.features``).
FEATURES = (
    "crowd_over_objects",    # crowd region covering objects, detections inside it
    "crowd_only_image",      # an image whose only GT is crowd
    "image_without_gt",      # an image with no GT at all (maybe detections)
    "class_gt_no_dets",      # a category with GT and no detection
    "class_dets_no_gt",      # a category with detections and no GT
    "area_boundary_gt",      # GT area exactly 32**2 / 96**2
    "area_boundary_det",     # detection w*h exactly 32**2 / 96**2
    "exact_iou",             # integer boxes with IoU exactly at a threshold fraction
    "equal_iou",             # one detection equidistant to two GT boxes
    "equal_iou_float",       # the same with non-dyadic float coordinates
    "tied_scores",           # coarse scores: ties within and across images
    "many_dets",             # > 100 detections for one image and class
    "float_coords",          # non-integer coordinates
    "area_field_differs",    # GT `area` field != box area
    "ignore_field",          # a non-crowd GT with `ignore: 1` (pycocotools overwrites it)
    "result_extra_fields",   # results carrying a (wrong) `area` / `id` field
    "zero_ids",              # image id 0 and category id 0
)


@dataclass
class Case:
    seed: int
    gt: dict
    results: List[dict]
    features: frozenset = field(default_factory=frozenset)

    def __repr__(self) -> str:  # keep pytest output short
        return (f"Case(seed={self.seed}, images={len(self.gt['images'])}, "
                f"gt={len(self.gt['annotations'])}, dets={len(self.results)}, "
                f"features={sorted(self.features)})")


class _Builder:
    def __init__(self, rng: random.Random, float_coords: bool, tied_scores: bool):
        self.rng = rng
        self.float_coords = float_coords
        self.tied_scores = tied_scores
        self.score_levels = sorted({round(rng.uniform(0.05, 1.0), 2)
                                    for _ in range(rng.randint(2, 5))})
        self.anns: List[dict] = []
        self.dets: List[dict] = []
        self.features: set = set()

    # -- numbers -------------------------------------------------------------
    def coord(self, v: float):
        if self.float_coords:
            digits = self.rng.choice((1, 2, 3, None))
            return v if digits is None else round(v, digits)
        return int(round(v))

    def size(self, lo: float = 3.0, hi: float = 260.0):
        # log-uniform sizes span the small / medium / large buckets
        v = math.exp(self.rng.uniform(math.log(lo), math.log(hi)))
        out = self.coord(v)
        return out if out > 0 else (1 if not self.float_coords else 0.5)

    def score(self) -> float:
        if self.tied_scores and self.rng.random() < 0.8:
            return self.rng.choice(self.score_levels)
        return self.rng.random()

    def random_box(self):
        w, h = self.size(), self.size()
        return [self.coord(self.rng.uniform(0, 500)), self.coord(self.rng.uniform(0, 400)), w, h]

    def jitter(self, box, strength: Optional[float] = None):
        x, y, w, h = box
        s = self.rng.uniform(0.0, 0.45) if strength is None else strength
        nx = x + self.rng.uniform(-1, 1) * s * w
        ny = y + self.rng.uniform(-1, 1) * s * h
        nw = w * (1 + self.rng.uniform(-1, 1) * s)
        nh = h * (1 + self.rng.uniform(-1, 1) * s)
        nw, nh = self.coord(max(nw, 0.5)), self.coord(max(nh, 0.5))
        if nw <= 0:
            nw = 1
        if nh <= 0:
            nh = 1
        return [self.coord(nx), self.coord(ny), nw, nh]

    # -- records -------------------------------------------------------------
    def gt(self, img, cat, box, crowd: int = 0, area=None, **extra):
        rec = {"image_id": img, "category_id": cat, "bbox": list(box),
               "area": box[2] * box[3] if area is None else area,
               "iscrowd": crowd, "segmentation": []}
        rec.update(extra)
        self.anns.append(rec)
        return rec

    def det(self, img, cat, box, score=None):
        rec = {"image_id": img, "category_id": cat, "bbox": list(box),
               "score": self.score() if score is None else score}
        self.dets.append(rec)
        return rec


def _group_preserving_shuffle(rng: random.Random, items: list, key) -> list:
    """A random permutation of ``items`` that keeps, within each ``key`` group,
    the original relative order (the positions of the group are shuffled,
    the members are not)."""
    perm = list(range(len(items)))
    rng.shuffle(perm)
    groups: Dict[object, List[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(key(it), []).append(i)
    cursor = {k: 0 for k in groups}
    out = []
    for p in perm:
        k = key(items[p])
        out.append(items[groups[k][cursor[k]]])
        cursor[k] += 1
    return out


def generate_case(seed: int) -> Case:
    """A random COCO (ground truth, results) pair; the same seed gives the same case."""
    rng = random.Random(seed)
    p = 0.4  # probability of each optional corner case
    on = {f: rng.random() < p for f in FEATURES}
    b = _Builder(rng, float_coords=on["float_coords"], tied_scores=on["tied_scores"])
    for f in ("float_coords", "tied_scores"):
        if on[f]:
            b.features.add(f)

    # ids: non-contiguous, shuffled in the file
    n_images = rng.randint(1, 12)
    image_ids = rng.sample(range(1, 100000), n_images)
    n_cats = rng.randint(1, 5)
    cat_ids = rng.sample(range(1, 100), n_cats)
    if on["zero_ids"]:
        image_ids[0] = 0
        cat_ids[0] = 0
        b.features.add("zero_ids")

    cats_no_dets = set()
    cats_no_gt = set()
    if n_cats >= 2 and on["class_gt_no_dets"]:
        cats_no_dets.add(cat_ids[-1])
    if n_cats >= 2 and on["class_dets_no_gt"]:
        cats_no_gt.add(cat_ids[0])
    gt_cats = [c for c in cat_ids if c not in cats_no_gt]
    det_cats = [c for c in cat_ids if c not in cats_no_dets]

    p_det = rng.uniform(0.3, 1.0)       # chance a GT object gets a detection
    p_dup = rng.uniform(0.0, 0.4)       # chance of a second (duplicate) detection
    fp_rate = rng.uniform(0.0, 3.0)     # random false positives per image and class

    special_images = list(image_ids)
    rng.shuffle(special_images)
    empty_img = crowd_only_img = None
    if len(special_images) >= 2 and on["image_without_gt"]:
        empty_img = special_images.pop()
        b.features.add("image_without_gt")
    if len(special_images) >= 2 and on["crowd_only_image"]:
        crowd_only_img = special_images.pop()
        b.features.add("crowd_only_image")

    def object_dets(img, cat, box):
        if cat in cats_no_dets:
            return
        if rng.random() < p_det:
            b.det(img, cat, b.jitter(box))
            if rng.random() < p_dup:
                b.det(img, cat, b.jitter(box))

    def gt_area(box):
        if on["area_field_differs"] and rng.random() < 0.5:
            b.features.add("area_field_differs")
            a = box[2] * box[3] * rng.uniform(0.3, 1.15)
            return a if b.float_coords or rng.random() < 0.5 else float(int(a))
        return None

    for img in image_ids:
        for cat in cat_ids:
            if img == empty_img:
                pass
            elif img == crowd_only_img:
                if cat in gt_cats and rng.random() < 0.7:
                    box = b.random_box()
                    b.gt(img, cat, box, crowd=1, area=gt_area(box))
            elif cat in gt_cats:
                for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4))):
                    box = b.random_box()
                    extra = {}
                    if on["ignore_field"] and rng.random() < 0.3:
                        extra["ignore"] = 1
                        b.features.add("ignore_field")
                    elif rng.random() < 0.2:
                        extra["ignore"] = 0
                    b.gt(img, cat, box, area=gt_area(box), **extra)
                    object_dets(img, cat, box)
            if cat in det_cats:
                for _ in range(int(fp_rate + rng.random())):
                    b.det(img, cat, b.random_box())

    normal_images = special_images  # images that may carry any GT
    if not normal_images:
        normal_images = list(image_ids)
    pick_img = lambda: rng.choice(normal_images)  # noqa: E731
    pick_cat = lambda: rng.choice(gt_cats) if gt_cats else cat_ids[0]  # noqa: E731

    if cats_no_dets and any(a["category_id"] in cats_no_dets for a in b.anns):
        b.features.add("class_gt_no_dets")
    if cats_no_gt and any(d["category_id"] in cats_no_gt for d in b.dets):
        b.features.add("class_dets_no_gt")

    # crowd region over objects, with detections on the objects and inside the crowd
    if on["crowd_over_objects"]:
        b.features.add("crowd_over_objects")
        for _ in range(rng.randint(1, 3)):
            img, cat = pick_img(), pick_cat()
            cx, cy = rng.uniform(0, 300), rng.uniform(0, 250)
            cw, ch = rng.uniform(60, 300), rng.uniform(60, 250)
            crowd = [b.coord(cx), b.coord(cy), b.coord(cw), b.coord(ch)]
            objs = []
            for _ in range(rng.randint(1, 3)):
                w, h = b.coord(rng.uniform(8, cw / 2)), b.coord(rng.uniform(8, ch / 2))
                w, h = max(w, 1), max(h, 1)
                box = [b.coord(cx + rng.uniform(0, cw - w)), b.coord(cy + rng.uniform(0, ch - h)), w, h]
                objs.append(box)
            # crowd first or last in the file: GT order matters only among non-ignored
            if rng.random() < 0.5:
                b.gt(img, cat, crowd, crowd=1, area=gt_area(crowd))
                for box in objs:
                    b.gt(img, cat, box, area=gt_area(box))
            else:
                for box in objs:
                    b.gt(img, cat, box, area=gt_area(box))
                b.gt(img, cat, crowd, crowd=1, area=gt_area(crowd))
            for box in objs:
                if rng.random() < 0.8:
                    b.det(img, cat, b.jitter(box, 0.1))
            for _ in range(rng.randint(1, 4)):  # detections within the crowd region
                w, h = b.coord(rng.uniform(5, cw)), b.coord(rng.uniform(5, ch))
                w, h = max(w, 1), max(h, 1)
                b.det(img, cat, [b.coord(cx + rng.uniform(0, cw - w)),
                                 b.coord(cy + rng.uniform(0, ch - h)), w, h])
            if rng.random() < 0.5:  # a detection equal to the crowd box
                b.det(img, cat, list(crowd))

    if on["area_boundary_gt"]:
        b.features.add("area_boundary_gt")
        for _ in range(rng.randint(1, 4)):
            img, cat = pick_img(), pick_cat()
            side = rng.choice((32, 96))
            kind = rng.randrange(3)
            if kind == 0:      # square box with area = side**2
                box = [rng.randint(0, 300), rng.randint(0, 300), side, side]
                area = None
            elif kind == 1:    # non-square box with the same area
                w = rng.choice((side // 2, side * 2, side // 4))
                box = [rng.randint(0, 300), rng.randint(0, 300), w, side * side // w]
                area = None
            else:              # the `area` field on the boundary, the box not
                box = [rng.randint(0, 300), rng.randint(0, 300),
                       side + rng.randint(-10, 10), side + rng.randint(1, 12)]
                area = float(side * side)
            b.gt(img, cat, box, area=area)
            if cat not in cats_no_dets:
                b.det(img, cat, b.jitter(box, rng.choice((0.0, 0.05, 0.2))))

    if on["area_boundary_det"]:
        b.features.add("area_boundary_det")
        for _ in range(rng.randint(1, 5)):
            img, cat = pick_img(), rng.choice(det_cats)
            side = rng.choice((32, 96))
            w = rng.choice((side, side // 2, side * 2, side // 4, side * 4))
            b.det(img, cat, [rng.randint(0, 300), rng.randint(0, 300), w, side * side // w])
        if b.float_coords:  # 25.6 * 40 == 1024 exactly in binary? either way both agree
            img, cat = pick_img(), rng.choice(det_cats)
            b.det(img, cat, [rng.uniform(0, 300), rng.uniform(0, 300), 25.6, 40.0])

    if on["exact_iou"]:
        b.features.add("exact_iou")
        for _ in range(rng.randint(1, 5)):
            img, cat = pick_img(), pick_cat()
            num, den = rng.choice(THRESHOLD_FRACTIONS)
            k = rng.randint(1, 6)
            W, H = den * k, rng.randint(5, 120)
            x, y = rng.randint(0, 300), rng.randint(0, 300)
            w = num * k
            mode = rng.randrange(3)
            if mode == 0:     # detection inside the GT: IoU = w / W
                gt_box, dt_box = [x, y, W, H], [x + rng.randint(0, W - w), y, w, H]
            elif mode == 1:   # GT inside the detection: IoU = w / W
                gt_box, dt_box = [x + rng.randint(0, W - w), y, w, H], [x, y, W, H]
            else:             # same, transposed
                gt_box, dt_box = [x, y, H, W], [x, y + rng.randint(0, W - w), H, w]
            b.gt(img, cat, gt_box)
            if cat not in cats_no_dets:
                b.det(img, cat, dt_box)

    if on["equal_iou"]:
        b.features.add("equal_iou")
        for _ in range(rng.randint(1, 4)):
            img, cat = pick_img(), pick_cat()
            W, H = rng.randint(10, 150), rng.randint(10, 150)
            d = 2 * rng.randint(1, W // 3)
            x, y = rng.randint(0, 300), rng.randint(0, 300)
            g1, g2 = [x, y, W, H], [x + d, y, W, H]
            dt = [x + d // 2, y, W, H]
            if rng.random() < 0.5:
                g1, g2 = g2, g1
            # one of the two may be ignored: crowd, or area outside a bucket
            kind = rng.randrange(4)
            b.gt(img, cat, g1, crowd=1 if kind == 1 else 0)
            b.gt(img, cat, g2, area=(rng.choice((100.0, 5000.0, 20000.0)) if kind == 2 else None))
            if cat not in cats_no_dets:
                score = rng.uniform(0.2, 1.0)
                b.det(img, cat, dt, score=score)
                if kind == 3:  # a second equidistant detection competing for them
                    b.det(img, cat, dt, score=score * rng.uniform(0.5, 1.0))
                elif rng.random() < 0.8:
                    # a lower-scored detection on one of the two: whether it finds its GT
                    # free depends on which GT the equidistant detection took
                    b.det(img, cat, list(rng.choice((g1, g2))), score=score * rng.uniform(0.5, 0.99))

    if on["equal_iou_float"]:
        b.features.add("equal_iou_float")
        for _ in range(rng.randint(1, 3)):
            img, cat = pick_img(), pick_cat()
            W, H = rng.uniform(10, 150), rng.uniform(10, 150)
            d = rng.uniform(0.1, W / 2)
            x, y = rng.uniform(0, 300), rng.uniform(0, 300)
            g1, g2 = [x, y, W, H], [x + d, y, W, H]
            b.gt(img, cat, g1)
            b.gt(img, cat, g2)
            if cat not in cats_no_dets:
                score = rng.uniform(0.2, 1.0)
                b.det(img, cat, [x + d / 2, y, W, H], score=score)
                if rng.random() < 0.8:
                    b.det(img, cat, list(rng.choice((g1, g2))), score=score * rng.uniform(0.5, 0.99))

    if on["many_dets"]:
        b.features.add("many_dets")
        img, cat = pick_img(), rng.choice(det_cats)
        objs = [b.random_box() for _ in range(rng.randint(0, 8))]
        for box in objs:
            b.gt(img, cat, box)
        for _ in range(rng.randint(101, 140)):
            if objs and rng.random() < 0.3:
                b.det(img, cat, b.jitter(rng.choice(objs)))
            else:
                b.det(img, cat, b.random_box())

    if on["result_extra_fields"]:
        b.features.add("result_extra_fields")
        for dt in b.dets:
            if rng.random() < 0.3:
                dt["area"] = rng.uniform(1, 1e5)
            if rng.random() < 0.2:
                dt["id"] = rng.randint(0, 5)

    # -- assemble ---------------------------------------------------------------
    anns = _group_preserving_shuffle(rng, b.anns, key=lambda a: (a["image_id"], a["category_id"]))
    ann_ids = rng.sample(range(1, 10 ** 6), len(anns))
    gt_annotations = []
    for ann_id, a in zip(ann_ids, anns):
        rec = {"id": ann_id}
        rec.update(a)
        gt_annotations.append(rec)
    images = [{"id": i, "file_name": f"{i:06d}.jpg", "width": 640, "height": 480} for i in image_ids]
    categories = [{"id": c, "name": f"class_{c}", "supercategory": "thing"} for c in cat_ids]
    rng.shuffle(categories)
    results = list(b.dets)
    rng.shuffle(results)
    gt = {"info": {"description": f"deteval random case {seed}"}, "images": images,
          "annotations": gt_annotations, "categories": categories}
    return Case(seed=seed, gt=gt, results=results, features=frozenset(b.features))


# ---------------------------------------------------------------------------
# property helpers
# ---------------------------------------------------------------------------
def shuffle_results(results: Sequence[dict], seed: int) -> List[dict]:
    """Shuffle a results list without changing what COCOeval computes.

    Among detections of the same image and category with the same score, the
    file order is the tie-break (stable sort), so those keep their relative order.
    """
    rng = random.Random(seed)
    return _group_preserving_shuffle(
        rng, list(results), key=lambda d: (d["image_id"], d["category_id"], d["score"]))


def shuffle_ground_truth(gt: dict, seed: int) -> dict:
    """Shuffle images, categories and annotations of a GT dict without changing
    its meaning: GT order within one image and category is kept (it decides
    equal-IoU matches)."""
    rng = random.Random(seed)
    out = dict(gt)
    out["images"] = list(gt["images"])
    rng.shuffle(out["images"])
    out["categories"] = list(gt["categories"])
    rng.shuffle(out["categories"])
    out["annotations"] = _group_preserving_shuffle(
        rng, list(gt["annotations"]), key=lambda a: (a["image_id"], a["category_id"]))
    return out


def dataset_to_results(dataset: dict) -> List[dict]:
    """A COCO dataset-style dict whose annotations carry ``score`` -> results list."""
    return [{"image_id": a["image_id"], "category_id": a["category_id"],
             "bbox": list(a["bbox"]), "score": a["score"]} for a in dataset["annotations"]]


# ---------------------------------------------------------------------------
# pycocotools oracle
# ---------------------------------------------------------------------------
def metric_batches(gt: dict, results: Sequence[dict]):
    """``(image_ids, preds, targets)``: the COCO files as the streaming metric's per-image
    inputs (``box_format="xywh"``), images in the ground truth's order."""
    ids = [im["id"] for im in gt["images"]]
    preds, targets = [], []
    for i in ids:
        a = [x for x in gt["annotations"] if x["image_id"] == i]
        d = [x for x in results if x["image_id"] == i]
        targets.append({"boxes": np.array([x["bbox"] for x in a], float).reshape(-1, 4),
                        "labels": np.array([x["category_id"] for x in a], dtype=np.int64),
                        "iscrowd": np.array([x.get("iscrowd", 0) for x in a]),
                        "area": np.array([x["area"] for x in a], float)})
        preds.append({"boxes": np.array([x["bbox"] for x in d], float).reshape(-1, 4),
                      "labels": np.array([x["category_id"] for x in d], dtype=np.int64),
                      "scores": np.array([x["score"] for x in d], float)})
    return ids, preds, targets


def area_suffix(name: str) -> str:
    """Stat-name suffix of an area range: small/medium/large -> s/m/l, else ``_<name>``."""
    return _SHORT_AREA_NAMES.get(name, "_" + name)


def threshold_name(t: float) -> str:
    """``AP<100 t>`` for one IoU threshold: 0.5 -> AP50, 0.333 -> AP33.3."""
    v = round(float(t) * 100, 6)
    return f"AP{int(v)}" if v == int(v) else f"AP{v:g}"


def _specs(iou_thresholds, area_names, max_dets):
    """deteval's named figures: ``(name, kind, iou index list or None, area index, maxdet index)``.

    AP figures at the largest max-dets value, AR{m} for each value.  Default
    thresholds (None): AP, AP50, AP75 (as summarize() finds them, by value);
    custom thresholds: AP and one AP<100 t> per threshold.  Area ranges
    small/medium/large -> APs/APm/APl (ARs/...), other names AP_<name>/AR_<name>.
    """
    a_all = list(area_names).index("all")
    last = len(max_dets) - 1
    specs = [("AP", "AP", None, a_all, last)]
    if iou_thresholds is None:
        thrs = np.linspace(0.5, 0.95, 10)
        for name, thr in (("AP50", 0.5), ("AP75", 0.75)):
            specs.append((name, "AP", list(np.where(thr == thrs)[0]), a_all, last))
    else:
        for i, t in enumerate(iou_thresholds):
            specs.append((threshold_name(t), "AP", [i], a_all, last))
    others = [(a, n) for a, n in enumerate(area_names) if n != "all"]
    specs += [("AP" + area_suffix(n), "AP", None, a, last) for a, n in others]
    specs += [(f"AR{md}", "AR", None, a_all, m) for m, md in enumerate(max_dets)]
    specs += [("AR" + area_suffix(n), "AR", None, a, last) for a, n in others]
    return specs


def figure_names(area_ranges=None, max_dets=DEFAULT_MAX_DETS, iou_thresholds=None) -> List[str]:
    """Names of the figures, in report order, for these parameters."""
    area_names = list(DEFAULT_AREA_RANGES if area_ranges is None else area_ranges)
    return [s[0] for s in _specs(iou_thresholds, area_names, tuple(max_dets))]


def pycocotools_eval(gt: dict, results: Sequence[dict], iou_thresholds=None,
                     area_ranges=None, max_dets=DEFAULT_MAX_DETS):
    """Run COCOeval(bbox) evaluate() + accumulate() on deep copies; stdout suppressed."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    if len(results) == 0:
        raise ValueError("pycocotools cannot evaluate an empty results list")
    gt = copy.deepcopy(gt)
    results = copy.deepcopy(list(results))
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(results)
        E = COCOeval(coco_gt, coco_dt, "bbox")
        if iou_thresholds is not None:
            E.params.iouThrs = np.asarray(iou_thresholds, dtype=np.float64)
        if area_ranges is not None:
            E.params.areaRng = [[float(lo), float(hi)] for lo, hi in area_ranges.values()]
            E.params.areaRngLbl = list(area_ranges)
        E.params.maxDets = list(max_dets)
        E.evaluate()
        E.accumulate()
    return E


def _mean(x: np.ndarray) -> Optional[float]:
    x = x[x > -1]
    return None if x.size == 0 else float(np.mean(x))


def _figures(E, specs, k) -> Dict[str, Optional[float]]:
    """``k``: a category index, or ``slice(None)`` for all categories."""
    prec = E.eval["precision"]   # T, R, K, A, M
    rec = E.eval["recall"]       # T, K, A, M
    out: Dict[str, Optional[float]] = {}
    for name, kind, t, a, m in specs:
        if kind == "AP":
            s = prec if t is None else prec[t]
            out[name] = _mean(s[:, :, k, a, m])
        else:
            out[name] = _mean(rec[:, k, a, m])
    return out


def pycocotools_figures(gt: dict, results: Sequence[dict], iou_thresholds=None,
                        area_ranges=None, max_dets=DEFAULT_MAX_DETS) -> dict:
    """pycocotools' figures for deteval's report, by name.

    Returns ``{"stats": {name: value}, "classes": {category_id: {name: value}}}``
    with None where pycocotools has -1 / no entry; names as in ``_specs``.
    Computed from ``eval['precision']`` / ``eval['recall']`` the way summarize()
    does, so custom parameters are honoured.
    """
    max_dets = tuple(max_dets)
    area_names = list(DEFAULT_AREA_RANGES if area_ranges is None else area_ranges)
    specs = _specs(iou_thresholds, area_names, max_dets)
    E = pycocotools_eval(gt, results, iou_thresholds, area_ranges, max_dets)
    stats = _figures(E, specs, slice(None))
    classes = {int(cat_id): _figures(E, specs, k)
               for k, cat_id in enumerate(E.params.catIds)}
    return {"stats": stats, "classes": classes}


def empty_results_figures(gt: dict, iou_thresholds=None, area_ranges=None,
                          max_dets=DEFAULT_MAX_DETS) -> dict:
    """The figures for an empty results list, by hand: 0.0 for every (class,
    area range) with at least one non-crowd GT whose ``area`` is in the range,
    None elsewhere; an overall figure is 0.0 when any class has one, else None."""
    area_ranges = DEFAULT_AREA_RANGES if area_ranges is None else area_ranges
    area_names = list(area_ranges)
    specs = _specs(iou_thresholds, area_names, tuple(max_dets))
    has = {name: set() for name in area_names}
    for a in gt["annotations"]:
        if a.get("iscrowd"):
            continue
        for name, (lo, hi) in area_ranges.items():
            if lo <= a["area"] <= hi:
                has[name].add(a["category_id"])

    def fig(cats):
        out = {}
        for name, kind, t, a, m in specs:
            defined = bool(has[area_names[a]] & cats) and (t is None or len(t) > 0)
            out[name] = 0.0 if defined else None
        return out

    all_cats = {c["id"] for c in gt["categories"]}
    return {"stats": fig(all_cats), "classes": {c: fig({c}) for c in sorted(all_cats)}}


# ---------------------------------------------------------------------------
# debugging aid
# ---------------------------------------------------------------------------
def shrink_case(case: Case, fails, max_rounds: int = 20) -> Case:
    """Greedily drop images, annotations, results and categories while
    ``fails(gt, results)`` stays true; returns the smaller case (for bug reports)."""
    gt, results = copy.deepcopy(case.gt), copy.deepcopy(case.results)
    assert fails(gt, results), "the case does not fail to begin with"

    def attempt(new_gt, new_results):
        try:
            return fails(new_gt, new_results)
        except Exception:  # a shrunk case that breaks differently is not wanted
            return False

    for _ in range(max_rounds):
        changed = False
        for img in [i["id"] for i in gt["images"]]:
            g = dict(gt, images=[i for i in gt["images"] if i["id"] != img],
                     annotations=[a for a in gt["annotations"] if a["image_id"] != img])
            r = [d for d in results if d["image_id"] != img]
            if g["images"] and attempt(g, r):
                gt, results, changed = g, r, True
        for cat in [c["id"] for c in gt["categories"]]:
            g = dict(gt, categories=[c for c in gt["categories"] if c["id"] != cat],
                     annotations=[a for a in gt["annotations"] if a["category_id"] != cat])
            r = [d for d in results if d["category_id"] != cat]
            if g["categories"] and attempt(g, r):
                gt, results, changed = g, r, True
        for key in ("annotations", "results"):
            chunk = max(1, len(gt["annotations"] if key == "annotations" else results) // 2)
            while chunk >= 1:
                i = 0
                while True:
                    items = gt["annotations"] if key == "annotations" else results
                    if i >= len(items):
                        break
                    kept = items[:i] + items[i + chunk:]
                    g, r = (dict(gt, annotations=kept), results) if key == "annotations" else (gt, kept)
                    if (key == "annotations" or kept) and attempt(g, r):
                        gt, results, changed = g, r, True
                    else:
                        i += chunk
                chunk //= 2
        if not changed:
            break
    return Case(seed=case.seed, gt=gt, results=results, features=case.features)
