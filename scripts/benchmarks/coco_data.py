"""COCO-like benchmark data: a deterministic, seeded generator of ground truth + results.

Shared by the COCO-family modes (``coco``, and the modes that evaluate the same kind of
data). ``ensure_data`` caches each parameter set under the work folder.
"""
import os

from benchmarks.runner import dump_json

GEN_VERSION = 2  # bump when the generator changes: cached data is keyed on it

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


def data_dir(workdir, n_images, dets_per_image, seed, segm):
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


def ensure_data(workdir, n_images, dets_per_image, seed, segm):
    """Generate (or reuse) instances.json/results.json; returns (dir, gt, dt, info)."""
    import json
    d = data_dir(workdir, n_images, dets_per_image, seed, segm)
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
    dump_json(inst, gt)
    dump_json(res, dt)
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
