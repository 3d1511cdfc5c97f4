"""torchmetrics: deteval.MeanAveragePrecision vs torchmetrics' own (mode ``torchmetrics``).

The ``coco`` mode's generated data as per-image torch tensors (``xyxy``), fed to
``MeanAveragePrecision()`` of deteval and of torchmetrics (pycocotools and faster-coco-eval
backends) in batches of 16; each child times ``update`` and ``compute`` in process (the
JSON-to-tensor conversion is not timed) and reports its figures, which must agree.

    python scripts/bench.py torchmetrics --images 5000
"""
import json
import os
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "torchmetrics"
LABELS = {"deteval": "deteval MeanAveragePrecision", "tm-pycocotools":
          "torchmetrics (pycocotools)", "tm-fce": "torchmetrics (faster_coco_eval)"}


def _batches(gt, dt):
    import numpy as np
    import torch
    with open(gt) as f:
        g = json.load(f)
    with open(dt) as f:
        d = json.load(f)
    ids = [im["id"] for im in g["images"]]
    pos = {i: k for k, i in enumerate(ids)}

    def per_image(anns, fields):
        out = [{f: [] for f in fields} for _ in ids]
        for a in anns:
            o = out[pos[a["image_id"]]]
            x, y, w, h = a["bbox"]
            o["boxes"].append([x, y, x + w, y + h])
            o["labels"].append(a["category_id"])
            if "scores" in fields:
                o["scores"].append(a["score"])
            if "iscrowd" in fields:
                o["iscrowd"].append(a.get("iscrowd", 0))
        res = []
        for o in out:
            t = {"boxes": torch.tensor(np.array(o["boxes"], dtype=np.float32).reshape(-1, 4)),
                 "labels": torch.tensor(o["labels"], dtype=torch.int64)}
            if "scores" in fields:
                t["scores"] = torch.tensor(o["scores"], dtype=torch.float32)
            if "iscrowd" in fields:
                t["iscrowd"] = torch.tensor(o["iscrowd"], dtype=torch.int64)
            res.append(t)
        return res

    return (per_image(d, ("boxes", "labels", "scores")),
            per_image(g["annotations"], ("boxes", "labels", "iscrowd")))


def _run(tool, gt, dt, out):
    import time
    preds, target = _batches(gt, dt)
    if tool == "deteval":
        from deteval import MeanAveragePrecision
        metric = MeanAveragePrecision()
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
        from tm_oracle import torchmetrics_map  # torchvision stand-in where none imports
        metric = torchmetrics_map()(backend="pycocotools" if tool == "tm-pycocotools"
                                    else "faster_coco_eval")
    t0 = time.perf_counter()
    for s in range(0, len(preds), 16):
        metric.update(preds[s:s + 16], target[s:s + 16])
    t1 = time.perf_counter()
    res = metric.compute()
    t2 = time.perf_counter()
    with open(out, "w") as f:
        json.dump({"stats": {k: float(v) for k, v in res.items() if v.numel() == 1
                             and k != "classes"}, "t_update": t1 - t0,
                   "t_compute": t2 - t1}, f)


RUNNERS = {t: (lambda gt, dt, out, t=t: _run(t, gt, dt, out)) for t in LABELS}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, args.images,
                                           args.dets_per_image, args.seed, True)
    print(f"=== torchmetrics face: {args.images} images, {info['dets']} detections", flush=True)
    outs = {k: os.path.join(d, f"out-{k}.json") for k in LABELS}
    cmds = {k: runner.runner_cmd(args.python, MODE, k, gt, dt, outs[k]) for k in LABELS}
    walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, LABELS)
    res = {}
    for k in LABELS:
        if k in failed:
            continue
        with open(outs[k]) as f:
            res[k] = json.load(f)
    print(f"\n  {'tool':<34}{'update s':>10}{'compute s':>11}{'peak MiB':>10}")
    for k, r in res.items():
        print(f"  {LABELS[k]:<34}{r['t_update']:>10.2f}{r['t_compute']:>11.2f}"
              f"{max(rss[k]):>10.0f}")
    ok = not failed
    if "deteval" in res:
        base = res["deteval"]["t_update"] + res["deteval"]["t_compute"]
        for k in ("tm-pycocotools", "tm-fce"):
            if k in res:
                other = res[k]["t_update"] + res[k]["t_compute"]
                diff = max(abs(res["deteval"]["stats"][n] - v) for n, v in res[k]["stats"].items())
                ok = ok and diff <= 1e-6
                print(f"  {LABELS[k]} / deteval (update+compute): {other / base:.1f}x; "
                      f"compute alone {res[k]['t_compute'] / res['deteval']['t_compute']:.1f}x; "
                      f"max |difference| {diff:.2g}")
    return 0 if ok else 1
