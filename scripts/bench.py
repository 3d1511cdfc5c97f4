#!/usr/bin/env python
"""COCO bbox benchmark: deteval vs faster-coco-eval vs pycocotools.

Generates a deterministic, COCO-like ground truth + detections pair (seeded),
then runs each evaluator as a separate full process (startup + loading +
evaluation + writing a JSON report), alternating between tools, and reports
wall time, peak RSS and the agreement of the 12 summary figures.

    python scripts/bench.py                          # 5000 images, all tools
    python scripts/bench.py --images 500 --repeat 1  # quick iteration
    python scripts/bench.py --images 1000 5000 20000 --skip pycocotools
    python scripts/bench.py --images 5000 --streaming  # + MeanAveragePrecision

Internal sub-mode (used for the child processes, one per measurement):

    python scripts/bench.py --run {pycocotools,fce,deteval-api,deteval-stream} GT DT OUT
"""
import os
import sys

STAT_NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl",
              "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]

GEN_VERSION = 2  # bump when the generator changes: cached data is keyed on it


# --------------------------------------------------------------------------
# child runners (kept import-light: only what each tool needs)
# --------------------------------------------------------------------------

def _write_report(out_path, stats, extra=None):
    import json
    vals = []
    for v in list(stats)[:12]:
        v = float(v)
        vals.append(None if v == -1.0 or v != v else v)
    report = {"stats": dict(zip(STAT_NAMES, vals))}
    if extra:
        report.update(extra)
    with open(out_path, "w") as f:
        json.dump(report, f)


def _run_pycocotools(gt, dt, out):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    cgt = COCO(gt)
    cdt = cgt.loadRes(dt)
    ev = COCOeval(cgt, cdt, "bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    _write_report(out, ev.stats)


def _run_fce(gt, dt, out):
    from faster_coco_eval import COCO, COCOeval_faster
    cgt = COCO(gt)
    cdt = cgt.loadRes(dt)
    ev = COCOeval_faster(cgt, cdt, iouType="bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    _write_report(out, ev.stats[:12])


def _stats_from_result(res):
    """Best-effort extraction of the 12 figures from a deteval result object."""
    if res is None:
        return None
    for cand in (res, getattr(res, "stats", None),
                 res.get("stats") if isinstance(res, dict) else None):
        if cand is None:
            continue
        if isinstance(cand, dict) and all(k in cand for k in STAT_NAMES):
            return [(-1.0 if cand[k] is None else float(cand[k])) for k in STAT_NAMES]
        if not isinstance(cand, (dict, str)):
            try:
                seq = list(cand)
            except TypeError:
                continue
            if len(seq) >= 12:
                return [(-1.0 if v is None else float(v)) for v in seq[:12]]
    if hasattr(res, "as_dict"):
        return _stats_from_result(res.as_dict())
    if hasattr(res, "to_dict"):
        return _stats_from_result(res.to_dict())
    return None


def _run_deteval_api(gt, dt, out):
    """One-shot in-process deteval.evaluate_coco(gt_path, results_path)."""
    import time
    t0 = time.perf_counter()
    import deteval
    t1 = time.perf_counter()
    res = deteval.evaluate_coco(gt, dt)
    t2 = time.perf_counter()
    stats = _stats_from_result(res)
    _write_report(out, stats if stats is not None else [float("nan")] * 12,
                  {"t_import": t1 - t0, "t_eval": t2 - t1,
                   "stats_found": stats is not None})


def _load_per_image(gt, dt):
    """JSON -> per-image numpy arrays (untimed preparation for streaming)."""
    import numpy as np
    import orjson
    with open(gt, "rb") as f:
        g = orjson.loads(f.read())
    with open(dt, "rb") as f:
        d = orjson.loads(f.read())
    img_ids = [im["id"] for im in g["images"]]
    pos = {iid: i for i, iid in enumerate(img_ids)}

    def group(anns, fields):
        idx = np.fromiter((pos[a["image_id"]] for a in anns), np.int64, len(anns))
        order = np.argsort(idx, kind="stable")
        bounds = np.searchsorted(idx[order], np.arange(len(img_ids) + 1))
        cols = {}
        for name, fn, dtype in fields:
            if name == "boxes":
                arr = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
            else:
                arr = np.fromiter((fn(a) for a in anns), dtype, len(anns))
            cols[name] = arr[order]
        return [{k: v[bounds[i]:bounds[i + 1]] for k, v in cols.items()}
                for i in range(len(img_ids))]

    targets = group(g["annotations"], [
        ("boxes", None, None),
        ("labels", lambda a: a["category_id"], np.int64),
        ("iscrowd", lambda a: a.get("iscrowd", 0), np.int64),
        ("area", lambda a: a["area"], np.float64),
    ])
    preds = group(d, [
        ("boxes", None, None),
        ("scores", lambda a: a["score"], np.float64),
        ("labels", lambda a: a["category_id"], np.int64),
    ])
    return img_ids, preds, targets


def _run_deteval_stream(gt, dt, out, batch=16):
    """MeanAveragePrecision(protocol="coco").update() in batches + compute()."""
    import time
    import deteval
    if not hasattr(deteval, "MeanAveragePrecision"):
        _write_report(out, [float("nan")] * 12, {"missing": True})
        return
    img_ids, preds, targets = _load_per_image(gt, dt)
    t0 = time.perf_counter()
    metric = deteval.MeanAveragePrecision(protocol="coco", box_format="xywh")
    t1 = time.perf_counter()
    for s in range(0, len(img_ids), batch):
        metric.update(preds[s:s + batch], targets[s:s + batch],
                      image_ids=img_ids[s:s + batch])
    t2 = time.perf_counter()
    res = metric.compute()
    t3 = time.perf_counter()
    stats = _stats_from_result(res)
    _write_report(out, stats if stats is not None else [float("nan")] * 12,
                  {"t_init": t1 - t0, "t_update": t2 - t1, "t_compute": t3 - t2,
                   "t_eval": t3 - t0, "stats_found": stats is not None,
                   "result_type": type(res).__name__})


RUNNERS = {
    "pycocotools": _run_pycocotools,
    "fce": _run_fce,
    "deteval-api": _run_deteval_api,
    "deteval-stream": _run_deteval_stream,
}


# --------------------------------------------------------------------------
# data generation
# --------------------------------------------------------------------------

COCO_CATEGORIES = [
    (1, "person"), (2, "bicycle"), (3, "car"), (4, "motorcycle"), (5, "airplane"),
    (6, "bus"), (7, "train"), (8, "truck"), (9, "boat"), (10, "traffic light"),
    (11, "fire hydrant"), (13, "stop sign"), (14, "parking meter"), (15, "bench"),
    (16, "bird"), (17, "cat"), (18, "dog"), (19, "horse"), (20, "sheep"), (21, "cow"),
    (22, "elephant"), (23, "bear"), (24, "zebra"), (25, "giraffe"), (27, "backpack"),
    (28, "umbrella"), (31, "handbag"), (32, "tie"), (33, "suitcase"), (34, "frisbee"),
    (35, "skis"), (36, "snowboard"), (37, "sports ball"), (38, "kite"),
    (39, "baseball bat"), (40, "baseball glove"), (41, "skateboard"), (42, "surfboard"),
    (43, "tennis racket"), (44, "bottle"), (46, "wine glass"), (47, "cup"), (48, "fork"),
    (49, "knife"), (50, "spoon"), (51, "bowl"), (52, "banana"), (53, "apple"),
    (54, "sandwich"), (55, "orange"), (56, "broccoli"), (57, "carrot"), (58, "hot dog"),
    (59, "pizza"), (60, "donut"), (61, "cake"), (62, "chair"), (63, "couch"),
    (64, "potted plant"), (65, "bed"), (67, "dining table"), (70, "toilet"), (72, "tv"),
    (73, "laptop"), (74, "mouse"), (75, "remote"), (76, "keyboard"), (77, "cell phone"),
    (78, "microwave"), (79, "oven"), (80, "toaster"), (81, "sink"), (82, "refrigerator"),
    (84, "book"), (85, "clock"), (86, "vase"), (87, "scissors"), (88, "teddy bear"),
    (89, "hair drier"), (90, "toothbrush"),
]
# Rough COCO val2017 instance-frequency ranks (most frequent first) for the
# Zipf-like class prior; person gets ~30% of all instances as in COCO.
_FREQ_ORDER = [1, 3, 62, 84, 44, 47, 67, 51, 10, 31, 28, 9, 16, 15, 8, 2, 73, 72,
               19, 27, 4, 64, 86, 18, 38, 21, 6, 20, 57, 85, 32, 56, 52, 46, 25,
               17, 41, 33, 53, 55, 63, 37, 5, 65, 59, 7, 61, 22, 42, 24, 43, 35,
               39, 40, 70, 75, 60, 23, 81, 54, 76, 79, 48, 50, 49, 77, 36, 11, 74,
               82, 90, 34, 78, 88, 58, 13, 14, 87, 80, 89]
_IMAGE_SIZES = [((640, 480), 0.35), ((480, 640), 0.14), ((640, 427), 0.22),
                ((427, 640), 0.07), ((640, 426), 0.06), ((500, 375), 0.04),
                ((640, 360), 0.05), ((612, 612), 0.03), ((375, 500), 0.04)]


def _data_dir(workdir, n_images, dets_per_image, seed, segm):
    tag = f"coco-n{n_images}-d{dets_per_image}-s{seed}-{'poly' if segm else 'nosegm'}-g{GEN_VERSION}"
    return os.path.join(workdir, tag)


def generate(n_images, dets_per_image, seed, segm=True):
    """Return (instances_dict, results_list). Deterministic given arguments."""
    import numpy as np
    rng = np.random.default_rng(seed)

    cat_ids = np.array([c for c, _ in COCO_CATEGORIES], dtype=np.int64)
    assert len(cat_ids) == 80 and sorted(_FREQ_ORDER) == list(cat_ids)
    # class prior: person 30%, the rest Zipf(0.9) over the remaining ranks
    ranks = np.arange(1, 80, dtype=np.float64)
    rest = ranks ** -0.9
    prior_by_rank = np.concatenate([[0.30], 0.70 * rest / rest.sum()])
    prior = np.empty(80)
    order_pos = {c: i for i, c in enumerate(_FREQ_ORDER)}
    for k, c in enumerate(cat_ids):
        prior[k] = prior_by_rank[order_pos[int(c)]]

    # images: COCO-like sparse ids and sizes
    img_ids = np.sort(rng.choice(np.arange(1, 600_000), size=n_images, replace=False))
    sz_probs = np.array([p for _, p in _IMAGE_SIZES])
    sz_idx = rng.choice(len(_IMAGE_SIZES), size=n_images, p=sz_probs / sz_probs.sum())
    img_wh = np.array([_IMAGE_SIZES[i][0] for i in sz_idx], dtype=np.float64)

    # heavy-tailed objects per image: ~1% empty, else 1 + NegBin(r=0.95, mean 6.4)
    r, mu = 0.95, 6.4
    n_obj = 1 + rng.negative_binomial(r, r / (r + mu), size=n_images)
    n_obj[rng.random(n_images) < 0.01] = 0
    n_obj = np.minimum(n_obj, 95)

    images = []
    anns = []
    dets_img, dets_cat, dets_box, dets_score = [], [], [], []
    ann_id = 0
    small_max, med_max = 32.0 ** 2, 96.0 ** 2

    def clip_boxes(b, W, H):
        # b: (k,4) xywh -> clipped xywh with w,h >= 1
        x1 = np.clip(b[:, 0], 0, W - 1)
        y1 = np.clip(b[:, 1], 0, H - 1)
        x2 = np.clip(b[:, 0] + b[:, 2], x1 + 1, W)
        y2 = np.clip(b[:, 1] + b[:, 3], y1 + 1, H)
        return np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)

    def jitter(b, s, W, H):
        k = len(b)
        w, h = b[:, 2], b[:, 3]
        cx = b[:, 0] + w / 2 + rng.normal(0, 1, k) * s * w
        cy = b[:, 1] + h / 2 + rng.normal(0, 1, k) * s * h
        nw = w * np.exp(rng.normal(0, 1, k) * s)
        nh = h * np.exp(rng.normal(0, 1, k) * s)
        return clip_boxes(np.stack([cx - nw / 2, cy - nh / 2, nw, nh], axis=1), W, H)

    def random_boxes(k, W, H):
        area = np.exp(rng.uniform(np.log(64), np.log(0.5 * W * H), k))
        ar = np.exp(rng.normal(0, 0.6, k))
        w = np.minimum(np.sqrt(area * ar), W)
        h = np.minimum(np.sqrt(area / ar), H)
        x = rng.uniform(0, 1, k) * (W - w)
        y = rng.uniform(0, 1, k) * (H - h)
        return clip_boxes(np.stack([x, y, w, h], axis=1), W, H)

    # file order is not id order (as in COCO's instances_val2017.json); the
    # results come per image in the same (dataset/dataloader) order
    for i in rng.permutation(n_images):
        W, H = img_wh[i]
        iid = int(img_ids[i])
        images.append({"id": iid, "width": int(W), "height": int(H),
                       "file_name": f"{iid:012d}.jpg", "license": 1,
                       "coco_url": "", "date_captured": "2013-11-14 11:18:45",
                       "flickr_url": ""})
        n = int(n_obj[i])

        # ---- ground truth for this image
        if n:
            k_cats = min(n, 1 + rng.poisson(1.6), 80)
            cats = rng.choice(80, size=k_cats, replace=False, p=prior)
            mix = rng.dirichlet(np.full(k_cats, 0.8))
            g_cat = cats[rng.choice(k_cats, size=n, p=mix)]
            crowd = rng.random(n) < 0.0105
            # target (segmentation) area per size bucket
            bucket = rng.choice(3, size=n, p=[0.41, 0.345, 0.245])
            lo = np.array([np.log(12.0), np.log(small_max), np.log(med_max)])
            hi = np.array([np.log(small_max), np.log(med_max), np.log(0.6 * W * H)])
            seg_area = np.exp(rng.uniform(lo[bucket], hi[bucket]))
            # crowd regions: big boxes
            seg_area[crowd] = np.exp(rng.uniform(np.log(4000.0), np.log(0.7 * W * H),
                                                 crowd.sum()))
            fill = rng.uniform(0.55, 0.95, n)
            fill[crowd] = rng.uniform(0.4, 0.8, crowd.sum())
            box_area = seg_area / fill
            ar = np.exp(rng.normal(0, 0.55, n))
            bw = np.minimum(np.sqrt(box_area * ar), W)
            bh = np.minimum(np.sqrt(box_area / ar), H)
            bx = rng.uniform(0, 1, n) * (W - bw)
            by = rng.uniform(0, 1, n) * (H - bh)
            gbox = np.round(clip_boxes(np.stack([bx, by, bw, bh], axis=1), W, H), 2)
            garea = np.round(gbox[:, 2] * gbox[:, 3] * fill, 4)
            gcat_ids = cat_ids[g_cat]
            for j in range(n):
                ann_id += 1
                x, y, w, h = gbox[j].tolist()
                ann = {"id": ann_id, "image_id": iid, "category_id": int(gcat_ids[j]),
                       "bbox": [x, y, w, h], "area": float(garea[j]),
                       "iscrowd": int(crowd[j])}
                if segm:
                    if crowd[j]:
                        # valid uncompressed column-major RLE of the box
                        x0, y0 = int(x), int(y)
                        ww, hh = max(1, int(w)), max(1, int(h))
                        ww, hh = min(ww, int(W) - x0), min(hh, int(H) - y0)
                        counts = [x0 * int(H) + y0]
                        for _c in range(ww - 1):
                            counts += [hh, int(H) - hh]
                        counts += [hh, int(W * H) - sum(counts) - hh]
                        ann["segmentation"] = {"counts": counts, "size": [int(H), int(W)]}
                    else:
                        nv = int(min(40, 6 + np.sqrt(garea[j]) / 4))
                        th = np.sort(rng.uniform(0, 2 * np.pi, nv))
                        rad = rng.uniform(0.75, 1.0, nv)
                        px = x + w / 2 + np.cos(th) * rad * w / 2
                        py = y + h / 2 + np.sin(th) * rad * h / 2
                        ann["segmentation"] = [np.round(np.stack([px, py], 1).ravel(), 2).tolist()]
                anns.append(ann)
        else:
            g_cat = np.zeros(0, np.int64)
            crowd = np.zeros(0, bool)
            gbox = np.zeros((0, 4))
            garea = np.zeros(0)

        # ---- detections for this image
        boxes, labels, scores = [], [], []
        if n:
            nc = ~crowd
            small = garea < small_max
            large = garea >= med_max
            p_det = np.where(small, 0.55, np.where(large, 0.93, 0.82))
            s_jit = np.where(small, 0.16, np.where(large, 0.06, 0.10))
            det = nc & (rng.random(n) < p_det)
            if det.any():
                b = jitter(gbox[det], s_jit[det][:, None].ravel(), W, H)
                a_ = np.where(small[det], 2.5, np.where(large[det], 6.0, 4.0))
                sc = rng.beta(a_, 2.0)
                lab = g_cat[det].copy()
                wrong = rng.random(len(lab)) < 0.07  # confused class
                lab[wrong] = rng.choice(80, size=wrong.sum(), p=prior)
                boxes.append(b); labels.append(lab); scores.append(sc)
                # duplicates of detected objects (NMS leftovers)
                dup = rng.random(len(lab)) < 0.35
                if dup.any():
                    reps = rng.integers(1, 4, dup.sum())
                    src = np.repeat(np.flatnonzero(dup), reps)
                    boxes.append(jitter(b[src], 2.0 * s_jit[det][src], W, H))
                    labels.append(lab[src])
                    scores.append(sc[src] * rng.uniform(0.1, 0.85, len(src)))
            # wrong-class detections on GT objects
            wc = nc & (rng.random(n) < 0.2)
            if wc.any():
                boxes.append(jitter(gbox[wc], 0.12, W, H))
                labels.append(rng.choice(80, size=wc.sum(), p=prior))
                scores.append(rng.beta(1.5, 5.0, wc.sum()))
            # detections inside crowd regions (should be ignored, not FPs)
            if crowd.any():
                src = np.repeat(np.flatnonzero(crowd), rng.integers(2, 6, crowd.sum()))
                cb = gbox[src]
                fw = rng.uniform(0.15, 0.5, len(src))
                fh = rng.uniform(0.3, 0.9, len(src))
                sub = np.stack([cb[:, 0] + rng.uniform(0, 1, len(src)) * cb[:, 2] * (1 - fw),
                                cb[:, 1] + rng.uniform(0, 1, len(src)) * cb[:, 3] * (1 - fh),
                                cb[:, 2] * fw, cb[:, 3] * fh], axis=1)
                boxes.append(clip_boxes(sub, W, H))
                labels.append(g_cat[src])
                scores.append(rng.beta(3.0, 3.0, len(src)))
        # background false positives (often of classes present in the image)
        nb = rng.poisson(4)
        if nb:
            boxes.append(random_boxes(nb, W, H))
            lab = rng.choice(80, size=nb, p=prior)
            if n:
                same = rng.random(nb) < 0.5
                lab[same] = g_cat[rng.integers(0, n, same.sum())]
            labels.append(lab)
            scores.append(rng.beta(1.2, 6.0, nb))
        have = sum(len(s) for s in scores)
        fill_n = max(0, dets_per_image - have)
        if fill_n:
            # low-score tail of a top-k detector output: loose localisations of
            # GT objects and random boxes, many tied 3-decimal scores
            near = rng.random(fill_n) < (0.5 if n else 0.0)
            k_near = int(near.sum())
            fb = random_boxes(fill_n, W, H)
            flab = rng.choice(80, size=fill_n, p=prior)
            if k_near:
                src = rng.integers(0, n, k_near)
                fb[near] = jitter(gbox[src], 0.3, W, H)
                keep_cls = rng.random(k_near) < 0.6
                fl = flab[near]
                fl[keep_cls] = g_cat[src][keep_cls]
                flab[near] = fl
            boxes.append(fb); labels.append(flab)
            scores.append(np.minimum(rng.exponential(0.03, fill_n), 0.3))
        B = np.concatenate(boxes)
        L = np.concatenate(labels)
        S = np.concatenate(scores)
        # scores with 3 or 4 decimals -> plenty of ties
        dec3 = rng.random(len(S)) < 0.5
        S = np.where(dec3, np.round(S, 3), np.round(S, 4))
        S = np.clip(S, 0.0001, 1.0)
        if len(S) > dets_per_image:
            keep = np.argsort(-S, kind="stable")[:dets_per_image]
            B, L, S = B[keep], L[keep], S[keep]
        # a detector's output order: shuffled, not sorted by score
        perm = rng.permutation(len(S))
        B, L, S = np.round(B[perm], 2), L[perm], S[perm]
        dets_img.append(np.full(len(S), iid, np.int64))
        dets_cat.append(cat_ids[L])
        dets_box.append(B)
        dets_score.append(S)

    # annotations are not grouped by image in the file either (GT order matters
    # for pycocotools' matching on exact IoU ties, so keep it non-trivial)
    anns = [anns[k] for k in rng.permutation(len(anns))]
    D_img = np.concatenate(dets_img).tolist()
    D_cat = np.concatenate(dets_cat).tolist()
    D_box = np.concatenate(dets_box).tolist()
    D_sc = np.concatenate(dets_score).tolist()
    results = [{"image_id": a, "category_id": c, "bbox": b, "score": s}
               for a, c, b, s in zip(D_img, D_cat, D_box, D_sc)]
    instances = {
        "info": {"description": f"deteval synthetic COCO-like benchmark (seed {seed})",
                 "version": "1.0", "year": 2017},
        "licenses": [{"id": 1, "name": "synthetic", "url": ""}],
        "images": images,
        "annotations": anns,
        "categories": [{"id": c, "name": nm, "supercategory": "object"}
                       for c, nm in COCO_CATEGORIES],
    }
    return instances, results


def _dump_json(obj, path):
    tmp = path + ".tmp"
    try:
        import orjson
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(obj))
    except ImportError:
        import json
        with open(tmp, "w") as f:
            json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def ensure_data(workdir, n_images, dets_per_image, seed, segm):
    """Generate (or reuse) instances.json/results.json; returns (dir, gt, dt, info)."""
    import json
    d = _data_dir(workdir, n_images, dets_per_image, seed, segm)
    gt, dt, meta = (os.path.join(d, "instances.json"), os.path.join(d, "results.json"),
                    os.path.join(d, "meta.json"))
    if os.path.exists(meta) and os.path.exists(gt) and os.path.exists(dt):
        with open(meta) as f:
            info = json.load(f)
        info["reused"] = True
        return d, gt, dt, info
    os.makedirs(d, exist_ok=True)
    import time
    t0 = time.perf_counter()
    inst, res = generate(n_images, dets_per_image, seed, segm)
    _dump_json(inst, gt)
    _dump_json(res, dt)
    info = describe(inst, res)
    info["gen_seconds"] = round(time.perf_counter() - t0, 2)
    with open(meta, "w") as f:
        json.dump(info, f, indent=1)
    info["reused"] = False
    return d, gt, dt, info


def describe(inst, res):
    import numpy as np
    anns = inst["annotations"]
    n_img = len(inst["images"])
    per_img = np.zeros(n_img, np.int64)
    pos = {im["id"]: i for i, im in enumerate(inst["images"])}
    for a in anns:
        per_img[pos[a["image_id"]]] += 1
    area = np.array([a["area"] for a in anns], np.float64)
    crowd = np.array([a["iscrowd"] for a in anns], bool)
    boxa = np.array([a["bbox"][2] * a["bbox"][3] for a in anns], np.float64)
    scores = np.array([r["score"] for r in res], np.float64)
    nc = ~crowd
    return {
        "images": n_img,
        "gt": len(anns),
        "gt_per_image_mean": round(float(per_img.mean()), 2),
        "images_no_gt": int((per_img == 0).sum()),
        "images_50plus": int((per_img >= 50).sum()),
        "max_gt_per_image": int(per_img.max()),
        "crowd": int(crowd.sum()),
        "crowd_pct": round(100.0 * crowd.mean(), 2),
        "small_pct": round(100.0 * float((area[nc] < 1024).mean()), 1),
        "medium_pct": round(100.0 * float(((area[nc] >= 1024) & (area[nc] < 9216)).mean()), 1),
        "large_pct": round(100.0 * float((area[nc] >= 9216).mean()), 1),
        "area_over_boxarea_mean": round(float((area / boxa).mean()), 3),
        "categories_used": len({a["category_id"] for a in anns}),
        "person_pct": round(100.0 * float(np.mean([a["category_id"] == 1 for a in anns])), 1),
        "dets": len(res),
        "distinct_scores": int(len(np.unique(scores))),
    }


# --------------------------------------------------------------------------
# orchestration
# --------------------------------------------------------------------------

TOOLS = ["deteval", "fce", "pycocotools"]
LABEL = {"deteval": "deteval", "fce": "faster-coco-eval", "pycocotools": "pycocotools",
         "deteval-api": "deteval.evaluate_coco", "deteval-stream": "MeanAveragePrecision"}


def child_env(args):
    """Environment for the children.

    The sandbox sets PYTHONDONTWRITEBYTECODE, which would make every child
    recompile deteval (editable install, no __pycache__) while the peers ship
    precompiled .pyc files. Give all children a bytecode cache under the
    workdir instead (PYTHONPYCACHEPREFIX), warmed by warm_imports().
    """
    env = dict(os.environ)
    if not args.keep_env:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(args.workdir, "pycache")
    return env


def warm_imports(args, tools):
    """Untimed: fill the bytecode cache (peer imports, deteval sources, CLI --help)."""
    import subprocess
    mods = {"fce": ["faster_coco_eval"],
            "pycocotools": ["pycocotools.coco", "pycocotools.cocoeval"]}
    code = ["import importlib, json, numpy"]
    for t in tools:
        for m in mods.get(t, []):
            code.append(f"try:\n    importlib.import_module({m!r})\nexcept Exception:\n    pass")
    code.append("try:\n    import compileall, os, deteval\n"
                "    compileall.compile_dir(os.path.dirname(deteval.__file__), quiet=2)\n"
                "except Exception:\n    pass")
    kw = dict(env=args.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    subprocess.run([args.python, "-c", "\n".join(code)], **kw)
    if "deteval" in tools:
        subprocess.run([args.python, "-m", "deteval", "coco", "--help"], **kw)


def run_child(tool, gt, dt, out, python, env=None):
    """Run one tool as a child process; return (wall_s, peak_rss_MiB, rc, stderr)."""
    import subprocess
    import tempfile
    import time
    here = os.path.abspath(__file__)
    if tool == "deteval":
        cmd = [python, "-m", "deteval", "coco", gt, dt, "--json", out]
    else:
        cmd = [python, here, "--run", tool, gt, dt, out]
    if os.path.exists(out):
        os.remove(out)
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                             cwd=os.path.dirname(os.path.abspath(out)))
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return wall, ru.ru_maxrss / 1024.0, p.returncode, stderr


def read_stats(out):
    import json
    with open(out) as f:
        rep = json.load(f)
    st = rep["stats"]
    return [st.get(k) for k in STAT_NAMES], rep


def max_abs_diff(a, b):
    m = 0.0
    for x, y in zip(a, b):
        if x is None or y is None:
            if (x is None) != (y is None):
                return float("inf")
            continue
        m = max(m, abs(x - y))
    return m


def _median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def bench_scale(args, n_images):
    d, gt, dt, info = ensure_data(args.workdir, n_images, args.dets_per_image,
                                  args.seed, not args.no_segm)
    mb = (os.path.getsize(gt) / 2**20, os.path.getsize(dt) / 2**20)
    print(f"\n=== {n_images} images: {info['gt']} GT ({info['gt_per_image_mean']}/img, "
          f"{info['images_no_gt']} empty, {info['images_50plus']} with 50+, max "
          f"{info['max_gt_per_image']}), crowd {info['crowd_pct']}%, "
          f"S/M/L {info['small_pct']}/{info['medium_pct']}/{info['large_pct']}%, "
          f"{info['dets']} dets ({info['distinct_scores']} distinct scores)")
    print(f"    data: {d} ({'reused' if info['reused'] else 'generated'}; "
          f"instances {mb[0]:.1f} MiB, results {mb[1]:.1f} MiB)", flush=True)

    tools = [t for t in args.tools if t not in args.skip]
    if "deteval" in tools:
        try:
            import importlib.util
            ok = importlib.util.find_spec("deteval.__main__") is not None
        except Exception:
            ok = False
        if not ok:
            print("    deteval: no `python -m deteval` entry point yet -> skipped")
            tools.remove("deteval")

    warm_imports(args, tools)
    load0 = os.getloadavg()[0]
    if load0 > 0.7:
        print(f"    note: 1-min load average {load0:.2f} on {os.cpu_count()} CPUs before "
              f"timing: other work is running, timings may be noisy")
    times = {t: [] for t in tools}
    rss = {t: [] for t in tools}
    stats = {}
    failed = set()
    for rep in range(args.repeat):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)] if tools else []
        for t in order:
            if t in failed:
                continue
            out = os.path.join(d, f"out-{t}.json")
            wall, peak, rc, err = run_child(t, gt, dt, out, args.python, args.env)
            if rc != 0 or not os.path.exists(out):
                failed.add(t)
                print(f"    [{rep + 1}/{args.repeat}] {LABEL[t]}: FAILED (rc={rc})")
                print("      " + "\n      ".join(err.strip().splitlines()[-15:]))
                continue
            try:
                st, _ = read_stats(out)
            except Exception as e:  # malformed report
                failed.add(t)
                print(f"    [{rep + 1}/{args.repeat}] {LABEL[t]}: bad report {out}: {e!r}")
                continue
            if t in stats and max_abs_diff(stats[t], st) != 0.0:
                print(f"    WARNING: {LABEL[t]} gave different figures across runs")
            stats[t] = st
            times[t].append(wall)
            rss[t].append(peak)
            print(f"    [{rep + 1}/{args.repeat}] {LABEL[t]:<17} {wall:8.2f} s  "
                  f"{peak:8.1f} MiB", flush=True)

    done = [t for t in tools if times[t]]
    rows = {}
    print(f"\n  {'tool':<18}{'median s':>10}{'min s':>10}{'max s':>10}{'peak RSS MiB':>14}")
    for t in done:
        rows[t] = (_median(times[t]), min(times[t]), max(rss[t]))
        print(f"  {LABEL[t]:<18}{rows[t][0]:>10.2f}{rows[t][1]:>10.2f}{max(times[t]):>10.2f}"
              f"{rows[t][2]:>14.1f}")
    load1 = os.getloadavg()[0]
    if max(load0, load1) > 0.7 or any(max(times[t]) > 1.25 * min(times[t]) for t in done):
        print(f"  (noisy: load average {load0:.2f} -> {load1:.2f}; compare min s too)")
    if "deteval" in rows:
        base = rows["deteval"]
        if "fce" in rows:
            print(f"  faster-coco-eval / deteval time: {rows['fce'][0] / base[0]:.2f}x "
                  f"(min/min {rows['fce'][1] / base[1]:.2f}x)"
                  f"   deteval RSS / fce RSS: {base[2] / rows['fce'][2]:.2f}")
        if "pycocotools" in rows:
            print(f"  pycocotools / deteval time:      {rows['pycocotools'][0] / base[0]:.2f}x "
                  f"(min/min {rows['pycocotools'][1] / base[1]:.2f}x)")
    elif "fce" in rows and "pycocotools" in rows:
        print(f"  pycocotools / faster-coco-eval time: "
              f"{rows['pycocotools'][0] / rows['fce'][0]:.2f}x "
              f"(min/min {rows['pycocotools'][1] / rows['fce'][1]:.2f}x)")

    # agreement
    ok = True
    print()
    ref = "pycocotools" if "pycocotools" in stats else None
    if "deteval" in stats:
        for other, tol in (("pycocotools", 1e-12), ("fce", None)):
            if other in stats:
                diff = max_abs_diff(stats["deteval"], stats[other])
                bad = tol is not None and not diff <= tol
                flag = ("   <<<<<<<<<< FAIL: exceeds %g >>>>>>>>>>" % tol) if bad else ""
                print(f"  max |deteval - {LABEL[other]}| over 12 stats: {diff:.3g}{flag}")
                if bad:
                    ok = False
                    _print_stats_table(stats, ["deteval", other])
    if "fce" in stats and ref:
        diff = max_abs_diff(stats["fce"], stats[ref])
        print(f"  max |faster-coco-eval - pycocotools| over 12 stats: {diff:.3g}")
    first = next((t for t in ("pycocotools", "deteval", "fce") if t in stats), None)
    if first:
        print("  " + "  ".join(f"{k}={'null' if v is None else f'{v:.4f}'}"
                               for k, v in zip(STAT_NAMES, stats[first])))
    if failed:
        ok = False

    if args.streaming:
        ok = bench_streaming(args, gt, dt, d, stats) and ok
    return ok, rows, info


def _print_stats_table(stats, tools):
    print("    " + f"{'stat':<6}" + "".join(f"{LABEL[t]:>24}" for t in tools))
    for i, k in enumerate(STAT_NAMES):
        vals = []
        for t in tools:
            v = stats[t][i]
            vals.append(f"{'null' if v is None else repr(v):>24}")
        print(f"    {k:<6}" + "".join(vals))


def bench_streaming(args, gt, dt, d, stats):
    import json
    import subprocess
    print("\n  streaming API (in-process timings; JSON->arrays conversion not timed)")
    probe = subprocess.run(
        [args.python, "-c", "import deteval, sys; sys.exit(0 if all(hasattr(deteval, n) for n "
         "in ('MeanAveragePrecision', 'evaluate_coco')) else 3)"],
        env=args.env, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        print("    deteval.MeanAveragePrecision (or evaluate_coco) missing -> skipped")
        return True
    t = {"deteval-api": [], "deteval-stream": []}
    reps = {}
    for rep in range(args.repeat):
        for mode in (("deteval-api", "deteval-stream") if rep % 2 == 0
                     else ("deteval-stream", "deteval-api")):
            out = os.path.join(d, f"out-{mode}.json")
            wall, peak, rc, err = run_child(mode, gt, dt, out, args.python, args.env)
            if rc != 0:
                last = err.strip().splitlines()[-1:] or [""]
                if "evaluate_coco" in err and "AttributeError" in err:
                    print("    deteval.evaluate_coco missing -> streaming comparison skipped")
                else:
                    print(f"    {LABEL[mode]} FAILED (rc={rc}):")
                    print("      " + "\n      ".join(err.strip().splitlines()[-15:]))
                return "AttributeError" in last
            with open(out) as f:
                r = json.load(f)
            if r.get("missing"):
                print("    deteval.MeanAveragePrecision missing -> skipped")
                return True
            r["peak"] = peak
            t[mode].append(r["t_eval"])
            reps[mode] = r
    api, st = _median(t["deteval-api"]), _median(t["deteval-stream"])
    r = reps["deteval-stream"]
    print(f"    evaluate_coco(gt_path, results_path): {api:8.2f} s (median)  "
          f"peak RSS {reps['deteval-api']['peak']:.1f} MiB")
    print(f"    MeanAveragePrecision update+compute:  {st:8.2f} s (median; last run "
          f"update {r['t_update']:.2f} + compute {r['t_compute']:.2f})  "
          f"peak RSS {r['peak']:.1f} MiB (incl. the arrays)")
    print(f"    streaming / one-shot: {st / api:.2f}x")
    ok = True
    for mode in ("deteval-api", "deteval-stream"):
        if not reps[mode].get("stats_found"):
            print(f"    note: could not read the 12 stats from {LABEL[mode]}'s result "
                  f"({reps[mode].get('result_type', '?')}); agreement not checked")
            continue
        s = [reps[mode]["stats"][k] for k in STAT_NAMES]
        for other in ("pycocotools", "deteval"):
            if other in stats:
                diff = max_abs_diff(s, stats[other])
                bad = not diff <= 1e-12
                print(f"    max |{LABEL[mode]} - {LABEL[other]}|: {diff:.3g}"
                      + ("   <<<<<<<<<< FAIL >>>>>>>>>>" if bad else ""))
                ok = ok and not bad
                break
    return ok


def main(argv=None):
    import argparse
    import tempfile
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, nargs="+", default=[5000],
                    help="scale(s) to run, in turn (default 5000)")
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    ap.add_argument("--skip", nargs="+", choices=TOOLS, default=[])
    ap.add_argument("--streaming", action="store_true",
                    help="also time deteval.MeanAveragePrecision vs evaluate_coco")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "deteval-bench"),
                    help="data/output directory; data is reused per parameter set")
    ap.add_argument("--no-segm", action="store_true",
                    help="omit GT segmentation polygons/RLEs (smaller instances.json)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the child processes")
    ap.add_argument("--keep-env", action="store_true",
                    help="run children with the environment unchanged (no bytecode "
                         "cache under the workdir)")
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    args.env = child_env(args)

    all_ok = True
    summary = []
    for n in args.images:
        ok, rows, info = bench_scale(args, n)
        all_ok = all_ok and ok
        summary.append((n, rows, info))
    if len(summary) > 1:
        print("\n=== summary (median wall s / peak RSS MiB)")
        hdr = f"  {'images':>7} {'GT':>8}" + "".join(f"{LABEL[t]:>26}" for t in TOOLS)
        print(hdr)
        for n, rows, info in summary:
            cells = "".join(
                f"{(f'{rows[t][0]:.2f} s / {rows[t][2]:.0f} MiB') if t in rows else '-':>26}"
                for t in TOOLS)
            print(f"  {n:>7} {info['gt']:>8}{cells}")
    if not all_ok:
        print("\n!!!!!!!!!! BENCHMARK FAILURE: disagreement or failed run (see above) !!!!!!!!!!")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--run":
        if len(sys.argv) != 6 or sys.argv[2] not in RUNNERS:
            sys.exit(f"usage: {sys.argv[0]} --run {{{','.join(RUNNERS)}}} GT DT OUT")
        RUNNERS[sys.argv[2]](*sys.argv[3:6])
        sys.exit(0)
    sys.exit(main())
