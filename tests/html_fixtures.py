"""Realistic reports for the HTML page and plot tests.

The evaluation part (stats, classes, PR curves) is real: a seeded generated COCO dataset
evaluated by deteval, the curves taken from its COCOeval precision array. The diagnostics
sections (``tide``, ``confusion``, ``images``, ``uncertainty``, ``curves.best_f1``) follow
the report schema of the diagnostics and uncertainty issues; their numbers are consistent
with how the detections were generated (each detection knows the object it came from) but
are not computed by the reference tools: the page only displays them.
"""
from __future__ import annotations

import numpy as np

from deteval import evaluate_coco
from deteval.html import coco_curves

WORDS = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
         "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
         "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
         "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard"]


def class_names(num_classes: int):
    if num_classes <= len(WORDS):
        return WORDS[:num_classes]
    return [f"{WORDS[k % len(WORDS)]}_{k:04d}" for k in range(num_classes)]


def generate(num_classes=30, num_images=400, seed=0):
    """A COCO ground-truth dict, a results list and the generation record (per detection:
    image index, GT class or -1 for background, predicted class)."""
    rng = np.random.default_rng(seed)
    names = class_names(num_classes)
    freq = 1.0 / np.arange(1, num_classes + 1) ** 0.8
    freq /= freq.sum()
    skill = rng.uniform(0.35, 0.95, num_classes)  # per-class detector quality
    images, anns, dets, record = [], [], [], []
    aid = 1
    for i in range(num_images):
        W, H = 640, 480
        images.append({"id": i + 1, "file_name": f"{i + 1:012d}.jpg", "width": W, "height": H})
        n = rng.poisson(3.0)
        for _ in range(n):
            k = int(rng.choice(num_classes, p=freq))
            w, h = rng.uniform(12, 260), rng.uniform(12, 220)
            x, y = rng.uniform(0, W - w), rng.uniform(0, H - h)
            anns.append({"id": aid, "image_id": i + 1, "category_id": k + 1,
                         "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0})
            aid += 1
            if rng.random() < 0.55 + 0.4 * skill[k]:  # detected
                pred = k if rng.random() < 0.9 + 0.1 * skill[k] else int(rng.integers(num_classes))
                jitter = (1.0 - skill[k]) * 0.45
                bx = [x + rng.normal(0, jitter * w), y + rng.normal(0, jitter * h),
                      w * np.exp(rng.normal(0, jitter)), h * np.exp(rng.normal(0, jitter))]
                score = float(np.clip(rng.beta(2 + 5 * skill[k], 2), 0.01, 1))
                dets.append({"image_id": i + 1, "category_id": pred + 1, "bbox": bx,
                             "score": round(score, 4)})
                record.append((i, k, pred))
                if rng.random() < 0.05:  # duplicate
                    dets.append({"image_id": i + 1, "category_id": pred + 1,
                                 "bbox": [v * 1.02 for v in bx], "score": round(score * 0.6, 4)})
                    record.append((i, -1, pred))
            else:
                record.append((i, k, -1))  # missed
        for _ in range(rng.poisson(1.2)):  # background false positives
            k = int(rng.choice(num_classes, p=freq))
            w, h = rng.uniform(12, 200), rng.uniform(12, 200)
            dets.append({"image_id": i + 1, "category_id": k + 1,
                         "bbox": [rng.uniform(0, W - w), rng.uniform(0, H - h), w, h],
                         "score": round(float(rng.beta(1.5, 5)), 4)})
            record.append((i, -1, k))
    gt = {"images": images, "annotations": anns,
          "categories": [{"id": k + 1, "name": n} for k, n in enumerate(names)]}
    return gt, dets, record


def realistic_report(num_classes=30, num_images=400, seed=0, diagnostics=True):
    """A report dict with every section the page can show (see the module docstring)."""
    gt, dets, record = generate(num_classes, num_images, seed)
    report = evaluate_coco(gt, dets)
    d = report.to_dict()
    d["inputs"].update({"ground_truth": "data/instances_val.json",
                        "results": "runs/exp42/detections_val.json"})
    names = [c["name"] for c in d["classes"]]
    d["curves"] = coco_curves(report.precision, d["params"]["iou_thresholds"], names)
    if not diagnostics:
        return d
    rng = np.random.default_rng(seed + 1)
    K = num_classes
    best = {}
    rec = np.asarray(d["curves"]["recall"])
    for name in names:
        p = d["curves"]["iou"]["0.5"]["per_class"][name]
        if p is None:
            best[name] = None
            continue
        p = np.asarray(p)
        f1 = np.where(p + rec > 0, 2 * p * rec / np.maximum(p + rec, 1e-12), 0)
        i = int(np.argmax(f1))
        best[name] = {"score": round(float(rng.uniform(0.2, 0.6)), 4),
                      "precision": float(p[i]), "recall": float(rec[i]), "f1": float(f1[i])}
    d["curves"]["best_f1"] = best
    m = np.zeros((K + 1, K + 1), dtype=np.int64)
    per_image = {}
    for i, g, p in record:
        m[K if g < 0 else g, K if p < 0 else p] += 1
        c = per_image.setdefault(i, {"tp": 0, "fp": 0, "fn": 0})
        if g >= 0 and p == g:
            c["tp"] += 1
        elif g >= 0 and p < 0:
            c["fn"] += 1
        elif g >= 0:
            c["fn"] += 1
            c["fp"] += 1
        else:
            c["fp"] += 1
    d["confusion"] = {"iou_threshold": 0.5, "conf_threshold": 0.3,
                      "classes": names + ["background"], "matrix": m.tolist()}
    ngt = np.bincount([a["image_id"] - 1 for a in gt["annotations"]], minlength=num_images)
    ndet = np.bincount([r["image_id"] - 1 for r in dets], minlength=num_images)
    d["images"] = [{"image_id": i + 1, "file_name": f"{i + 1:012d}.jpg", "num_gt": int(ngt[i]),
                    "num_detections": int(ndet[i]),
                    **per_image.get(i, {"tp": 0, "fp": 0, "fn": 0}), "ignored": 0}
                   for i in range(num_images)]
    ap50 = 100 * d["stats"]["AP50"]
    d["tide"] = {"pos_threshold": 0.5, "background_threshold": 0.1, "ap50": ap50,
                 "main": {"Cls": 3.12, "Loc": 7.85, "Both": 0.91, "Dupe": 0.44, "Bkg": 4.02,
                          "Miss": 2.37},
                 "special": {"FalsePos": 12.6, "FalseNeg": 9.8},
                 "counts": {"Cls": 211, "Loc": 840, "Both": 97, "Dupe": 55, "Bkg": 512,
                            "Miss": 301}}
    iv, pci = {}, {}
    for k, v in d["stats"].items():
        if v is not None:
            w = float(rng.uniform(0.008, 0.02))
            iv[k] = [v - w, v + w * 0.9]
    for c in d["classes"]:
        if c["AP"] is not None:
            w = float(rng.uniform(0.02, 0.08))
            pci[c["name"]] = {"AP": [max(c["AP"] - w, 0), min(c["AP"] + w, 1)]}
    d["uncertainty"] = {"method": "image bootstrap", "samples": 1000, "seed": 0,
                        "confidence": 0.95, "intervals": iv, "per_class_intervals": pci}
    return d
