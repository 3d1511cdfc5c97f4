#!/usr/bin/env python
"""VOC: deteval against the classic py-faster-rcnn `voc_eval` loop (mode ``voc``).

    python scripts/bench.py voc [--images 4952] [--dets-per-image 100] [--repeat 3] [--workdir DIR]

Generates a VOC2007-test-sized case deterministically (VOC XML + devkit-style
comp4_det_test_<cls>.txt files), then times, as separate processes and including
XML parsing, over --repeat alternating runs:

  deteval (devkit)       python -m deteval voc ... --metric voc07
  deteval (detectron2)   python -m deteval voc ... --metric voc07 --compat detectron2
  classic voc_eval       python scripts/bench.py --run voc classic ...

and prints median wall time, peak RSS and the mAPs (classic and deteval --compat
detectron2 should agree to ~1e-12).

The classic implementation alone:

    python scripts/bench.py --run voc classic ANNOTATIONS DETECTIONS IMAGESET OUT.json
"""
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

from benchmarks import runner

MODE = "voc"

VOC_CLASSES = [
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
]
# object counts of VOC2007 test, used as class frequencies
VOC07_TEST_COUNTS = [285, 337, 459, 263, 505, 213, 1201, 358, 756, 244,
                     206, 489, 348, 325, 4528, 480, 242, 239, 282, 308]
SIZES = np.array([(500, 375), (375, 500), (500, 333), (333, 500), (500, 500), (486, 500)])
SCALES = np.array([0.06, 0.12, 0.25, 0.45, 0.75])
SCALE_P = np.array([0.2, 0.25, 0.25, 0.18, 0.12])
SEED = 4952


# ============================================================================ generator

def random_boxes(rng, n, w, h):
    """n boxes (x1, y1, x2, y2) in the 0-based frame [0, w-1] x [0, h-1]."""
    s = rng.choice(SCALES, size=n, p=SCALE_P)
    bw = np.clip(rng.normal(s, s / 4) * (w - 1), 8, w - 1)
    bh = np.clip(rng.normal(s, s / 4) * (h - 1) * rng.uniform(0.7, 1.5, n), 8, h - 1)
    x1 = rng.uniform(0, 1, n) * (w - 1 - bw)
    y1 = rng.uniform(0, 1, n) * (h - 1 - bh)
    return np.stack([x1, y1, x1 + bw, y1 + bh], axis=1)


def jitter_boxes(rng, boxes, amount, w, h):
    bw = boxes[:, 2] - boxes[:, 0]
    bh = boxes[:, 3] - boxes[:, 1]
    d = rng.normal(0, 1, boxes.shape) * np.asarray(amount).reshape(-1, 1) * np.stack([bw, bh, bw, bh], 1)
    return clip_boxes(boxes + d, w, h)


def shift_boxes(rng, boxes, w, h):
    bw = boxes[:, 2] - boxes[:, 0]
    bh = boxes[:, 3] - boxes[:, 1]
    n = len(boxes)
    dx = rng.choice([-1.0, 1.0], n) * rng.uniform(0.35, 0.6, n) * bw
    dy = rng.choice([-1.0, 1.0], n) * rng.uniform(0.0, 0.3, n) * bh
    return clip_boxes(boxes + np.stack([dx, dy, dx, dy], 1), w, h)


def clip_boxes(b, w, h):
    x1 = np.clip(b[:, 0], 0, w - 3)
    y1 = np.clip(b[:, 1], 0, h - 3)
    x2 = np.maximum(np.minimum(b[:, 2], w - 1), x1 + 2)
    y2 = np.maximum(np.minimum(b[:, 3], h - 1), y1 + 2)
    return np.stack([x1, y1, x2, y2], 1)


XML_HEAD = """<annotation>
\t<folder>VOC2007</folder>
\t<filename>{id}.jpg</filename>
\t<source>
\t\t<database>The VOC2007 Database</database>
\t\t<annotation>PASCAL VOC2007</annotation>
\t\t<image>flickr</image>
\t</source>
\t<size>
\t\t<width>{w}</width>
\t\t<height>{h}</height>
\t\t<depth>3</depth>
\t</size>
\t<segmented>0</segmented>
"""
XML_OBJ = """\t<object>
\t\t<name>{name}</name>
\t\t<pose>{pose}</pose>
\t\t<truncated>{trunc}</truncated>
\t\t<difficult>{diff}</difficult>
\t\t<bndbox>
\t\t\t<xmin>{x1}</xmin>
\t\t\t<ymin>{y1}</ymin>
\t\t\t<xmax>{x2}</xmax>
\t\t\t<ymax>{y2}</ymax>
\t\t</bndbox>
\t</object>
"""
POSES = ["Unspecified", "Frontal", "Left", "Right", "Rear"]


def generate(root, n_images, dets_per_image, seed=SEED):
    """Write root/VOC2007/{Annotations,ImageSets/Main/test.txt} and root/results/*.txt."""
    rng = np.random.default_rng(seed)
    ann_dir = os.path.join(root, "VOC2007", "Annotations")
    set_dir = os.path.join(root, "VOC2007", "ImageSets", "Main")
    det_dir = os.path.join(root, "results")
    for d in (ann_dir, set_dir, det_dir):
        os.makedirs(d, exist_ok=True)
    n_cls = len(VOC_CLASSES)
    cls_p = np.array(VOC07_TEST_COUNTS, float)
    cls_p /= cls_p.sum()

    # VOC-like ids: a sorted subset of 1..(2*n) (VOC2007 test ids interleave with trainval)
    ids = np.sort(rng.choice(np.arange(1, 2 * n_images + 2), size=n_images, replace=False))
    ids = [f"{i:06d}" for i in ids]
    det_lines = [[] for _ in range(n_cls)]
    n_obj_total = n_diff_total = 0

    for image_id in ids:
        w, h = (int(v) for v in SIZES[rng.integers(len(SIZES))])
        n = min(1 + int(rng.poisson(2.0)), 30)
        cls = rng.choice(n_cls, size=n, p=cls_p)
        gt = np.round(random_boxes(rng, n, w, h))  # 0-based integer pixels
        area = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
        diff = rng.random(n) < np.where(area < 45 * 45, 0.5, 0.1)
        trunc = rng.random(n) < 0.3
        pose = rng.integers(len(POSES), size=n)
        n_obj_total += n
        n_diff_total += int(diff.sum())
        xml = [XML_HEAD.format(id=image_id, w=w, h=h)]
        for k in range(n):
            x1, y1, x2, y2 = (int(v) + 1 for v in gt[k])  # 1-based in the file
            xml.append(XML_OBJ.format(name=VOC_CLASSES[cls[k]], pose=POSES[pose[k]], trunc=int(trunc[k]),
                                      diff=int(diff[k]), x1=x1, y1=y1, x2=x2, y2=y2))
        xml.append("</annotation>\n")
        with open(os.path.join(ann_dir, image_id + ".xml"), "w", newline="\n") as f:
            f.write("".join(xml))

        # simulated detector: (class, score, box) groups
        c_parts, s_parts, b_parts = [], [], []
        hit = rng.random(n) < np.where(diff, 0.5, 0.8)
        c_parts.append(cls[hit])
        s_parts.append(rng.beta(6, 2, hit.sum()))
        b_parts.append(jitter_boxes(rng, gt[hit], rng.choice([0.02, 0.05, 0.1], hit.sum()), w, h))
        dup = hit & (rng.random(n) < 0.3)
        c_parts.append(cls[dup])
        s_parts.append(rng.beta(3, 3, dup.sum()))
        b_parts.append(jitter_boxes(rng, gt[dup], np.full(dup.sum(), 0.1), w, h))
        mis = rng.random(n) < 0.25
        c_parts.append(cls[mis])
        s_parts.append(rng.beta(2, 4, mis.sum()))
        b_parts.append(shift_boxes(rng, gt[mis], w, h))
        conf = rng.random(n) < 0.15
        c_parts.append((cls[conf] + rng.integers(1, n_cls, conf.sum())) % n_cls)
        s_parts.append(rng.beta(2, 4, conf.sum()))
        b_parts.append(jitter_boxes(rng, gt[conf], np.full(conf.sum(), 0.05), w, h))
        n_bg = max(dets_per_image - sum(len(c) for c in c_parts), 0)
        c_parts.append(rng.integers(n_cls, size=n_bg))
        s_parts.append(rng.beta(1, 8, n_bg) * 0.6)
        b_parts.append(random_boxes(rng, n_bg, w, h))
        c = np.concatenate(c_parts)
        s = np.round(np.concatenate(s_parts), 6)
        b = np.concatenate(b_parts) + 1.0  # to the 1-based frame
        keep = np.argsort(-s, kind="stable")[:dets_per_image]  # a detector keeps its top-k
        for j in keep:
            x1, y1, x2, y2 = b[j]
            det_lines[c[j]].append(f"{image_id} {s[j]:.6f} {x1:.1f} {y1:.1f} {x2:.1f} {y2:.1f}\n")

    with open(os.path.join(set_dir, "test.txt"), "w", newline="\n") as f:
        f.write("".join(i + "\n" for i in ids))
    for k, name in enumerate(VOC_CLASSES):
        with open(os.path.join(det_dir, f"comp4_det_test_{name}.txt"), "w", newline="\n") as f:
            f.write("".join(det_lines[k]))
    return {
        "images": n_images,
        "objects": n_obj_total,
        "difficult": n_diff_total,
        "detections": sum(len(x) for x in det_lines),
        "year_dir": os.path.join(root, "VOC2007"),
        "ann_dir": ann_dir,
        "imageset": os.path.join(set_dir, "test.txt"),
        "det_dir": det_dir,
    }


# ============================================================================ classic voc_eval
# A straightforward rendering of py-faster-rcnn / detectron2 `voc_eval` (semantics.md section 2).

def parse_rec(filename):
    tree = ET.parse(filename)
    objects = []
    for obj in tree.findall("object"):
        d = obj.find("difficult")  # the original crashes when the tag is missing
        bbox = obj.find("bndbox")
        objects.append({
            "name": obj.find("name").text,
            "difficult": int(d.text) if d is not None and d.text else 0,
            "bbox": [float(bbox.find("xmin").text), float(bbox.find("ymin").text),
                     float(bbox.find("xmax").text), float(bbox.find("ymax").text)],
        })
    return objects


def voc_ap(rec, prec, use_07_metric=True):
    if use_07_metric:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            if np.sum(rec >= t) == 0:
                p = 0
            else:
                p = np.max(prec[rec >= t])
            ap = ap + p / 11.0
    else:
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        for i in range(mpre.size - 1, 0, -1):
            mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
        i = np.where(mrec[1:] != mrec[:-1])[0]
        ap = np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])
    return ap


def voc_eval(detpath, recs, imagenames, classname, ovthresh=0.5, use_07_metric=True):
    class_recs = {}
    npos = 0
    n_difficult = 0
    for imagename in imagenames:
        R = [obj for obj in recs[imagename] if obj["name"] == classname]
        bbox = np.array([x["bbox"] for x in R])
        difficult = np.array([x["difficult"] for x in R]).astype(bool)
        det = [False] * len(R)
        npos = npos + sum(~difficult)
        n_difficult += int(difficult.sum())
        class_recs[imagename] = {"bbox": bbox, "difficult": difficult, "det": det}

    with open(detpath) as f:
        lines = f.readlines()
    splitlines = [x.strip().split(" ") for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines]).reshape(-1, 4)

    nd = len(image_ids)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    if nd > 0:
        sorted_ind = np.argsort(-confidence)
        BB = BB[sorted_ind, :]
        image_ids = [image_ids[x] for x in sorted_ind]

    for d in range(nd):
        R = class_recs[image_ids[d]]
        bb = BB[d, :].astype(float)
        ovmax = -np.inf
        BBGT = R["bbox"].astype(float)
        if BBGT.size > 0:
            ixmin = np.maximum(BBGT[:, 0], bb[0])
            iymin = np.maximum(BBGT[:, 1], bb[1])
            ixmax = np.minimum(BBGT[:, 2], bb[2])
            iymax = np.minimum(BBGT[:, 3], bb[3])
            iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
            ih = np.maximum(iymax - iymin + 1.0, 0.0)
            inters = iw * ih
            uni = ((bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                   + (BBGT[:, 2] - BBGT[:, 0] + 1.0) * (BBGT[:, 3] - BBGT[:, 1] + 1.0) - inters)
            overlaps = inters / uni
            ovmax = np.max(overlaps)
            jmax = np.argmax(overlaps)
        if ovmax > ovthresh:
            if not R["difficult"][jmax]:
                if not R["det"][jmax]:
                    tp[d] = 1.0
                    R["det"][jmax] = 1
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0

    fp = np.cumsum(fp)
    tp = np.cumsum(tp)
    stats = {"num_gt": int(npos), "num_difficult": n_difficult, "num_detections": nd,
             "tp": int(tp[-1]) if nd else 0, "fp": int(fp[-1]) if nd else 0}
    if npos == 0:
        return None, stats
    if nd == 0:
        return 0.0, stats
    rec = tp / float(npos)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    return float(voc_ap(rec, prec, use_07_metric)), stats


def run_classic(ann, det_dir, imageset=None, metric="voc07", iou=0.5, classes=None, json_out=None):
    if os.path.isdir(os.path.join(ann, "Annotations")):
        if imageset is None:
            imageset = os.path.join(ann, "ImageSets", "Main", "test.txt")
        ann = os.path.join(ann, "Annotations")
    if imageset is not None:
        with open(imageset) as f:
            imagenames = [x.strip() for x in f.readlines() if x.strip()]
    else:
        imagenames = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ann, "*.xml")))
    recs = {name: parse_rec(os.path.join(ann, name + ".xml")) for name in imagenames}
    if classes is None:
        prefix = os.path.join(det_dir, "comp4_det_test_")
        classes = sorted(p[len(prefix):-4] for p in glob.glob(prefix + "*.txt"))
    out = []
    for cls in classes:
        ap, stats = voc_eval(os.path.join(det_dir, f"comp4_det_test_{cls}.txt"), recs, imagenames, cls,
                             ovthresh=iou, use_07_metric=(metric == "voc07"))
        out.append({"name": cls, "ap": ap, **stats})
    aps = [c["ap"] for c in out if c["ap"] is not None]
    result = {"mAP": float(np.mean(aps)) if aps else None, "classes": out}
    if json_out:
        with open(json_out, "w") as f:
            json.dump(result, f, indent=1)
    else:
        print(json.dumps(result, indent=1))
    return result


# ============================================================================ timing harness

def timed(cmd, log_path, env=None):
    """Run cmd as a child in the log's folder; return (wall seconds, peak RSS MiB)."""
    wall, peak, rc, text = runner.run_child(cmd, os.path.dirname(os.path.abspath(log_path)),
                                            env, log_path)
    if rc != 0:
        raise RuntimeError(f"command failed ({rc}): {' '.join(cmd)}\n{text[-3000:]}")
    return wall, peak


def bench(args):
    own_tmp = args.workdir is None
    root = tempfile.mkdtemp(prefix="deteval_bench_voc_") if own_tmp else os.path.abspath(args.workdir)
    os.makedirs(root, exist_ok=True)
    try:
        t0 = time.perf_counter()
        case = generate(root, args.images, args.dets_per_image, seed=args.seed)
        print(f"generated {case['images']} images, {case['objects']} objects "
              f"({case['difficult']} difficult, {100.0 * case['difficult'] / case['objects']:.1f}%), "
              f"{case['detections']} detections in {time.perf_counter() - t0:.1f} s  [{root}]")

        py = sys.executable
        common = [case["ann_dir"], case["det_dir"], "--imageset", case["imageset"], "--metric", "voc07"]
        out = {k: os.path.join(root, f"out_{k}.json") for k in ("devkit", "detectron2", "classic")}
        cmds = {
            "devkit": [py, "-m", "deteval", "voc", *common, "--json", out["devkit"]],
            "detectron2": [py, "-m", "deteval", "voc", *common, "--compat", "detectron2",
                           "--json", out["detectron2"]],
            "classic": runner.runner_cmd(py, MODE, "classic", case["ann_dir"], case["det_dir"],
                                         case["imageset"], out["classic"]),
        }
        labels = {"devkit": "deteval (devkit)", "detectron2": "deteval (--compat detectron2)",
                  "classic": "classic voc_eval (py-faster-rcnn)"}
        walls = {k: [] for k in cmds}
        rss = {k: [] for k in cmds}
        env = runner.child_env(root)
        for k, cmd in cmds.items():  # untimed warm-up: fills the bytecode cache
            timed(cmd, os.path.join(root, f"log_{k}.txt"), env)
        for r in range(args.repeat):
            for k, cmd in cmds.items():  # alternate the implementations within each round
                w, m = timed(cmd, os.path.join(root, f"log_{k}.txt"), env)
                walls[k].append(w)
                rss[k].append(m)
                print(f"  round {r + 1}/{args.repeat}  {labels[k]:36s} {w:8.2f} s  {m:7.0f} MiB", flush=True)

        res = {}
        for k, path in out.items():
            with open(path) as f:
                res[k] = json.load(f)
        med = {k: statistics.median(v) for k, v in walls.items()}
        print()
        print(f"VOC2007-sized case: {args.images} images, {args.dets_per_image} dets/image, "
              f"median of {args.repeat}, python {sys.version.split()[0]}, numpy {np.__version__}")
        print(f"{'implementation':38s} {'median s':>9s} {'peak RSS MiB':>13s} {'classic/this':>13s} {'mAP (voc07)':>20s}")
        for k in cmds:
            print(f"{labels[k]:38s} {med[k]:9.3f} {max(rss[k]):13.0f} {med['classic'] / med[k]:12.1f}x "
                  f"{res[k]['mAP']:20.16f}")

        # agreement check: classic vs deteval --compat detectron2 (same protocol)
        a, b = res["classic"]["mAP"], res["detectron2"]["mAP"]
        by_name = {c["name"]: c for c in res["detectron2"]["classes"]}
        worst, worst_cls, count_mismatch = 0.0, None, []
        for c in res["classic"]["classes"]:
            d = by_name.get(c["name"])
            if d is None:
                count_mismatch.append(f"{c['name']}: missing in deteval output")
                continue
            if c["ap"] is not None and d["ap"] is not None and abs(c["ap"] - d["ap"]) > worst:
                worst, worst_cls = abs(c["ap"] - d["ap"]), c["name"]
            for key in ("num_gt", "num_difficult", "num_detections", "tp", "fp"):
                if key in d and d[key] != c[key]:
                    count_mismatch.append(f"{c['name']}.{key}: classic {c[key]} deteval {d[key]}")
        print()
        print(f"mAP classic               {a!r}")
        print(f"mAP deteval detectron2    {b!r}   |diff| = {abs(a - b):.3g}"
              f"   (largest per-class |diff| {worst:.3g}{' in ' + worst_cls if worst_cls else ''})")
        print(f"mAP deteval devkit        {res['devkit']['mAP']!r}   (official devkit protocol; "
              f"differs by stable tie order, IoU >= 0.5 and the MATLAB t grid)")
        ok = abs(a - b) <= 1e-12 and not count_mismatch
        for m in count_mismatch[:20]:
            print("  count mismatch:", m)
        print("AGREE (<= 1e-12)" if ok else "DISAGREE: investigate (tied scores can legitimately reorder)")
        return 0 if ok else 1
    finally:
        if own_tmp and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def _run_classic_child(ann, det_dir, imageset, json_out):
    run_classic(ann, det_dir, imageset=imageset, metric="voc07", json_out=json_out)


RUNNERS = {"classic": _run_classic_child}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=4952)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", help="generate into this folder (kept) instead of a temporary one")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--generate-only", action="store_true", help="write the case and stop")


def run(args):
    if args.generate_only:
        root = args.workdir or tempfile.mkdtemp(prefix="deteval_bench_voc_")
        case = generate(root, args.images, args.dets_per_image, seed=args.seed)
        print(json.dumps(case, indent=1))
        return 0
    return bench(args)
