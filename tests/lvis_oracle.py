"""Seeded random LVIS cases and the lvis-api 0.5.3 oracle for the differential tests.

``generate_lvis_case(seed, ...)`` builds a small federated ground truth (positive,
negative and not-exhaustive categories per image, ``ignore`` flags, ``iscrowd`` flags (unread by lvis-api), area-0 objects,
annotation ``area`` fields that differ from the box) and a results list that mixes results
on positive, negative, not-exhaustive and unverified categories, with tied scores and more
results on some images than the per-image cap. ``lvis_api_figures`` runs lvis-api (with
the ``np.float`` shim it needs on current numpy) and returns every figure deteval reports,
by name, with -1 as None.
"""
from __future__ import annotations

import copy
import json
import os
import random
import tempfile
from collections import defaultdict
from typing import Dict, List, Optional

import numpy as np

FREQ = ("r", "c", "f")
STAT_NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf"]


def lvis_api():
    """The lvis package, importable on numpy 2 (it uses the removed ``np.float``)."""
    import pytest
    if not hasattr(np, "float"):
        np.float = float  # test helper only: lvis-api 0.5.3 calls np.float
    if not hasattr(np, "int"):
        np.int = int
    return pytest.importorskip("lvis", reason="lvis-api (lvis) is the reference tool")


def _box(rng, w_img, h_img):
    w = rng.choice([rng.uniform(3, 30), rng.uniform(30, 95), rng.uniform(95, 180)])
    h = w * rng.uniform(0.5, 1.5)
    x = rng.uniform(0, max(w_img - w, 1))
    y = rng.uniform(0, max(h_img - h, 1))
    return [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]


def _jitter(rng, b, s):
    x, y, w, h = b
    return [round(x + rng.gauss(0, s * w), 2), round(y + rng.gauss(0, s * h), 2),
            round(max(w * rng.uniform(1 - s, 1 + s), 0.5), 2),
            round(max(h * rng.uniform(1 - s, 1 + s), 0.5), 2)]


def generate_lvis_case(seed: int, num_images: int = 12, num_cats: int = 25,
                       results_per_image=(0, 40), segm: bool = False, tie_levels: int = 12):
    """A random LVIS ground truth (dict) and results (list).

    Scores take ``tie_levels`` distinct values (many ties, also across the cap);
    ``results_per_image`` is the (min, max) count per image.
    """
    rng = random.Random(seed)
    cat_ids = rng.sample(range(1, 4 * num_cats), num_cats)
    cats = [{"id": c, "name": f"cat{c}", "frequency": rng.choice(FREQ),
             "synset": f"s{c}"} for c in cat_ids]
    image_ids = rng.sample(range(1, 10 * num_images), num_images)
    images, anns = [], []
    for img in image_ids:
        h_img, w_img = rng.randint(120, 260), rng.randint(120, 260)
        pos = rng.sample(cat_ids, rng.randint(0, 4))
        rest = [c for c in cat_ids if c not in pos]
        neg = rng.sample(rest, rng.randint(0, min(4, len(rest))))
        ne = rng.sample(pos, rng.randint(0, len(pos))) if pos and rng.random() < 0.5 else []
        if rng.random() < 0.2 and rest:  # not-exhaustive lists may name other categories
            ne.append(rng.choice(rest))
        images.append({"id": img, "height": h_img, "width": w_img, "neg_category_ids": neg,
                       "not_exhaustive_category_ids": ne, "file_name": f"{img}.jpg"})
        for c in pos:
            for _ in range(rng.randint(1, 3)):
                b = _box(rng, w_img, h_img)
                a = {"image_id": img, "category_id": c, "bbox": b,
                     "area": round(b[2] * b[3] * rng.choice([1.0, 1.0, 0.8, 0.5]), 3)}
                r = rng.random()
                if r < 0.04:
                    a["area"] = 0.0  # dropped by lvis-api's get_ann_ids (area > 0)
                elif r < 0.1:
                    a["ignore"] = 1
                elif r < 0.14:
                    a["iscrowd"] = 1  # lvis-api never reads iscrowd: an ordinary object
                if segm:
                    x, y, w, h = b
                    a["segmentation"] = [[x, y, x + w, y, x + w * 0.8, y + h, x, y + h * 0.7]]
                anns.append(a)
    rng.shuffle(anns)
    for i, a in enumerate(anns):
        a["id"] = i + 1
    gt = {"images": images, "annotations": anns, "categories": cats,
          "info": {}, "licenses": []}
    by_image = defaultdict(list)
    for a in anns:
        by_image[a["image_id"]].append(a)
    levels = [round(rng.uniform(0.05, 1.0), 3) for _ in range(tie_levels)]
    results = []
    for im in images:
        img = im["id"]
        objs = by_image[img]
        verified = list({a["category_id"] for a in objs} | set(im["neg_category_ids"]))
        for _ in range(rng.randint(*results_per_image)):
            r = rng.random()
            if objs and r < 0.55:
                o = rng.choice(objs)
                cat = o["category_id"] if rng.random() < 0.85 else rng.choice(cat_ids)
                b = _jitter(rng, o["bbox"], rng.choice([0.02, 0.08, 0.2]))
            else:
                cat = rng.choice(verified) if verified and r < 0.8 else rng.choice(cat_ids)
                b = _box(rng, im["width"], im["height"])
            if rng.random() < 0.02:
                b[2] = 0.0  # zero area: dropped by lvis-api
            results.append({"image_id": img, "category_id": cat, "bbox": b,
                            "score": rng.choice(levels)})
    rng.shuffle(results)
    if segm:
        from pycocotools import mask as mask_api
        sizes = {im["id"]: (im["height"], im["width"]) for im in images}
        for r in results:
            h, w = sizes[r["image_id"]]
            x, y, bw, bh = r["bbox"]
            poly = [x, y, x + bw, y + 0.1 * bh, x + bw * 0.9, y + bh, x + 0.1 * bw, y + bh]
            rle = mask_api.frPyObjects([poly], h, w)[0]
            r["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
    return gt, results


def fixed_ap_results(results: List[dict], per_class: int) -> List[dict]:
    """The fixed-AP cut as Dave et al.'s ``evaluate_ap_fixed.py`` applies it before
    lvis-api: per category (in order of first appearance), a stable sort by decreasing
    score, the first ``per_class`` kept."""
    by_cat = defaultdict(list)
    for r in results:
        by_cat[r["category_id"]].append(r)
    out = []
    for _, rs in by_cat.items():
        out.extend(sorted(rs, key=lambda r: r["score"], reverse=True)[:per_class])
    return out


def _mean(x: np.ndarray) -> Optional[float]:
    x = x[x > -1]
    return float(np.mean(x)) if x.size else None


def lvis_api_figures(gt: dict, results: List[dict], iou_type: str = "bbox",
                     max_dets: int = 300, fixed: bool = False,
                     max_dets_per_class: int = 10000) -> Dict[str, object]:
    """lvis-api's figures: ``{"stats": {name: value}, "classes": {cat_id: {name: value}}}``
    with deteval's names (``AR@300`` -> ``AR300``, ``ARs@300`` -> ``ARs``; fixed: ``AR``)."""
    lvis = lvis_api()
    from lvis import LVIS, LVISEval, LVISResults
    import logging
    logging.getLogger("lvis").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gt.json")
        with open(path, "w") as f:
            json.dump(gt, f)
        lgt = LVIS(path)
    res = copy.deepcopy(results)
    if fixed:
        res = fixed_ap_results(res, max_dets_per_class)
        ldt = LVISResults(lgt, res, max_dets=-1)
    else:
        ldt = LVISResults(lgt, res, max_dets=max_dets)
    ev = LVISEval(lgt, ldt, iou_type)
    if fixed:
        ev.params.max_dets = -1
    else:
        ev.params.max_dets = max_dets
    ev.run()
    del lvis
    ar = "AR" if fixed else f"AR{max_dets}"
    md = -1 if fixed else max_dets
    names = {"AR@{}".format(md): ar}
    for s in "sml":
        names[f"AR{s}@{md}"] = f"AR{s}"
    stats = {names.get(k, k): (None if float(v) == -1 else float(v))
             for k, v in ev.results.items()}
    P, R = ev.eval["precision"], ev.eval["recall"]  # (T, R, K, A), (T, K, A)
    t50 = int(np.flatnonzero(ev.params.iou_thrs == 0.5)[0])
    t75 = int(np.flatnonzero(ev.params.iou_thrs == 0.75)[0])
    classes = {}
    for k, cid in enumerate(ev.params.cat_ids):
        classes[cid] = {"AP": _mean(P[:, :, k, 0]), "AP50": _mean(P[t50, :, k, 0]),
                        "AP75": _mean(P[t75, :, k, 0]), "APs": _mean(P[:, :, k, 1]),
                        "APm": _mean(P[:, :, k, 2]), "APl": _mean(P[:, :, k, 3]),
                        ar: _mean(R[:, k, 0])}
    return {"stats": stats, "classes": classes}
