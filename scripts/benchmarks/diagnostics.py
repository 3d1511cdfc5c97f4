"""Diagnostics: deteval --confusion --curves --per-image [--tide] vs supervision + pycocotools [+ tidecv] (mode ``diagnostics``).

The ``coco`` mode's generated data (default 5000 images x 80 classes x 100 detections).
Timed, each as its own process on the same files:

* ``deteval``: the plain ``deteval coco GT RES --json`` run (the baseline);
* ``deteval-diag``: the same run with ``--confusion --curves --per-image`` (and ``--tide``
  when ``deteval.diagnostics.tide`` is importable);
* the peers giving the same numbers: supervision (``ConfusionMatrix.from_tensors`` on
  float64 tensors per image), pycocotools (``COCOeval`` for the curves, and its
  ``evalImgs`` for the per-image counts and the best-F1 points), tidecv (with ``--tide``).

It prints the time of each, diagnostics / plain (target at most 3x) and peers / diagnostics
(target at least 20x), and checks the figures: confusion matrix and per-image counts equal,
curves within 1e-12, best-F1 scores equal (TIDE: counts equal, dAPs within 1e-6).

    python scripts/bench.py diagnostics                      # 5000 images
    python scripts/bench.py diagnostics --images 500 --repeat 1
"""
import json
import os
import subprocess
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "diagnostics"
LABELS = {"deteval": "deteval (plain)", "deteval-diag": "deteval + diagnostics",
          "supervision": "supervision (confusion)", "pycocotools": "pycocotools (curves, "
          "per image)", "tidecv": "tidecv (TIDE)"}


# ------------------------------------------------------------------ child runners

def _load(gt, dt):
    with open(gt) as f:
        g = json.load(f)
    with open(dt) as f:
        d = json.load(f)
    return g, d


def _run_supervision(gt, dt, out):
    import numpy as np
    import supervision as sv
    g, d = _load(gt, dt)
    cats = sorted(c["id"] for c in g["categories"])
    pos = {c: k for k, c in enumerate(cats)}
    names = {c["id"]: c["name"] for c in g["categories"]}
    by_img_t = {im["id"]: [] for im in g["images"]}
    by_img_p = {im["id"]: [] for im in g["images"]}
    for a in g["annotations"]:
        if not a.get("iscrowd", 0):
            x, y, w, h = a["bbox"]
            by_img_t[a["image_id"]].append([x, y, x + w, y + h, pos[a["category_id"]]])
    for r in d:
        x, y, w, h = r["bbox"]
        by_img_p[r["image_id"]].append([x, y, x + w, y + h, pos[r["category_id"]], r["score"]])
    targets = [np.array(by_img_t[i], dtype=np.float64).reshape(-1, 5) for i in by_img_t]
    preds = [np.array(by_img_p[i], dtype=np.float64).reshape(-1, 6) for i in by_img_t]
    cm = sv.ConfusionMatrix.from_tensors(preds, targets, [names[c] for c in cats],
                                         conf_threshold=0.3, iou_threshold=0.5)
    with open(out, "w") as f:
        json.dump({"matrix": cm.matrix.tolist()}, f)


def _run_pycocotools(gt, dt, out):
    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    cgt = COCO(gt)
    ev = COCOeval(cgt, cgt.loadRes(dt), "bbox")
    ev.evaluate()
    ev.accumulate()
    cats = ev.params.catIds
    names = {c["id"]: c["name"] for c in cgt.dataset["categories"]}
    curves = {}
    for iou, t in (("0.5", 0), ("0.75", 5)):
        per = {}
        for k, cid in enumerate(cats):
            p = ev.eval["precision"][t, :, k, 0, 2]
            per[names[cid]] = None if (p == -1).all() else p.tolist()
        curves[iou] = per
    # per image and best-F1 from evalImgs at area all, IoU 0.5
    images = {i: dict(num_gt=0, tp=0, fp=0, ignored=0) for i in cgt.getImgIds()}
    pts = {cid: [] for cid in cats}
    n_gt = {cid: 0 for cid in cats}
    for e in ev.evalImgs:
        if e is None or list(e["aRng"]) != [0, 1e10]:
            continue
        row = images[e["image_id"]]
        g_cnt = int(np.sum(np.asarray(e["gtIgnore"]) == 0))
        row["num_gt"] += g_cnt
        n_gt[e["category_id"]] += g_cnt
        ign = np.asarray(e["dtIgnore"][0], dtype=bool)
        hit = np.asarray(e["dtMatches"][0]) > 0
        row["ignored"] += int(ign.sum())
        row["tp"] += int((hit & ~ign).sum())
        row["fp"] += int((~hit & ~ign).sum())
        sc = np.asarray(e["dtScores"])
        pts[e["category_id"]].extend(zip(sc[~ign].tolist(), hit[~ign].tolist()))
    best = {}
    for cid in cats:
        p = pts[cid]
        if not p or n_gt[cid] == 0:
            best[names[cid]] = None
            continue
        p.sort(key=lambda x: -x[0])
        tp = fp = 0
        top = None
        for i, (s, hit) in enumerate(p):
            tp += hit
            fp += not hit
            if i + 1 < len(p) and p[i + 1][0] == s:
                continue
            f1 = (2 * tp) / (tp + fp + n_gt[cid])
            if top is None or f1 > top[3]:
                top = (s, tp / (tp + fp), tp / n_gt[cid], f1)
        best[names[cid]] = dict(zip(("score", "precision", "recall", "f1"), top))
    with open(out, "w") as f:
        json.dump({"curves": curves, "images": {str(k): v for k, v in images.items()},
                   "best_f1": best}, f)


def _run_tidecv(gt, dt, out):
    import numpy as np
    np.float = float  # tidecv 1.0.1 uses the removed alias
    np.int = int
    from tidecv import TIDE, datasets
    tide = TIDE(0.5, 0.1, TIDE.BOX)
    run = tide.evaluate(datasets.COCO(gt), datasets.COCOResult(dt))
    errs = tide.get_all_errors()
    name = next(iter(errs["main"]))
    counts = {e.short_name: n for e, n in run.count_errors().items()}
    with open(out, "w") as f:
        json.dump({"main": errs["main"][name], "special": errs["special"][name],
                   "counts": counts, "ap50": run.ap}, f)


RUNNERS = {"supervision": _run_supervision, "pycocotools": _run_pycocotools,
           "tidecv": _run_tidecv}


# ------------------------------------------------------------------ orchestration

def _has_tide(python, env, cwd):
    code = "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('deteval.diagnostics.tide') else 3)"
    return subprocess.run([python, "-c", code], env=env, cwd=cwd).returncode == 0


def _check(outs, failed):
    """The figures of every tool against deteval's; returns True when all agree."""
    import numpy as np
    if "deteval-diag" in failed:
        return False
    with open(outs["deteval-diag"]) as f:
        rep = json.load(f)
    ok = True

    def say(what, good, detail=""):
        nonlocal ok
        ok = ok and good
        print(f"  {what:<52} {'equal' if good else 'DIFFERENT <<<< FAIL'} {detail}")

    if "supervision" in outs and "supervision" not in failed:
        with open(outs["supervision"]) as f:
            say("confusion matrix vs supervision", json.load(f)["matrix"]
                == rep["confusion"]["matrix"])
    if "pycocotools" in outs and "pycocotools" not in failed:
        with open(outs["pycocotools"]) as f:
            ref = json.load(f)
        worst = 0.0
        same_null = True
        for iou, per in ref["curves"].items():
            for name, curve in per.items():
                mine = rep["curves"]["iou"][iou]["per_class"][name]
                if (curve is None) != (mine is None):
                    same_null = False
                elif curve is not None:
                    worst = max(worst, float(np.max(np.abs(np.array(curve) - np.array(mine)))))
        say("PR curves vs pycocotools eval['precision']", same_null and worst <= 1e-12,
            f"(max |diff| {worst:.3g})")
        mine = {str(e["image_id"]): e for e in rep["images"]}
        say("per-image tp/fp/fn/ignored vs pycocotools evalImgs", all(
            mine[k]["tp"] == v["tp"] and mine[k]["fp"] == v["fp"]
            and mine[k]["ignored"] == v["ignored"] and mine[k]["num_gt"] == v["num_gt"]
            and mine[k]["fn"] == v["num_gt"] - v["tp"] for k, v in ref["images"].items())
            and len(mine) == len(ref["images"]))
        b_ok = True
        for name, b in ref["best_f1"].items():
            m = rep["curves"]["best_f1"][name]
            if (b is None) != (m is None):
                b_ok = False
            elif b is not None:
                b_ok = b_ok and m["score"] == b["score"] and all(
                    abs(m[k] - b[k]) <= 1e-12 for k in ("precision", "recall", "f1"))
        say("best-F1 points vs evalImgs (score exact)", b_ok)
    if "tidecv" in outs and "tidecv" not in failed and "tide" in rep:
        with open(outs["tidecv"]) as f:
            ref = json.load(f)
        t = rep["tide"]
        good = all(t["counts"].get(k) == v for k, v in ref["counts"].items()) and all(
            abs(t["main"][k] - v) <= 1e-6 for k, v in ref["main"].items())
        say("TIDE counts and dAPs vs tidecv", good)
    return ok


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each deteval command")
    ap.add_argument("--peer-repeat", type=int, default=1, help="runs of each peer")
    ap.add_argument("--skip-peers", action="store_true", help="time deteval only")
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, args.images,
                                           args.dets_per_image, args.seed, True)
    print(f"=== diagnostics: {args.images} images, {info['gt']} GT, {info['dets']} detections "
          f"({args.dets_per_image}/image), 80 classes", flush=True)
    tide = _has_tide(args.python, env, d)
    flags = ["--confusion", "--curves", "--per-image"] + (["--tide"] if tide else [])
    print(f"    diagnostics: {' '.join(flags)}" + ("" if tide else
          "   (deteval.diagnostics.tide not importable: TIDE and tidecv left out)"))
    outs = {k: os.path.join(d, f"out-diag-{k}.json") for k in LABELS}
    cmds = {"deteval": [args.python, "-m", "deteval", "coco", gt, dt, "--json",
                        outs["deteval"]],
            "deteval-diag": [args.python, "-m", "deteval", "coco", gt, dt, *flags,
                             "--json", outs["deteval-diag"]]}
    peers = {} if args.skip_peers else {
        k: runner.runner_cmd(args.python, MODE, k, gt, dt, outs[k])
        for k in ("supervision", "pycocotools") + (("tidecv",) if tide else ())}
    runner.warm_imports(args.python, env, ["supervision", "pycocotools.cocoeval", "tidecv"])
    note = runner.load_note()
    if note:
        print(note)
    walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, LABELS)
    if peers:
        w2, r2, f2 = runner.time_tools(peers, d, env, args.peer_repeat, LABELS)
        walls.update(w2)
        rss.update(r2)
        failed.update(f2)
    rows = runner.print_timing_table(walls, rss, LABELS, base="deteval")
    if "deteval" in rows and "deteval-diag" in rows:
        ratio = rows["deteval-diag"][0] / rows["deteval"][0]
        print(f"\n  diagnostics / plain run: {ratio:.2f}x (target <= 3x)"
              + ("" if ratio <= 3 else "   <<<< over target"))
    done = [k for k in peers if k in rows]
    if done and "deteval-diag" in rows:
        total = sum(rows[k][0] for k in done)
        speed = total / rows["deteval-diag"][0]
        print(f"  peers ({' + '.join(done)}): {total:.2f} s; peers / deteval with "
              f"diagnostics: {speed:.1f}x (target >= 20x)"
              + ("" if speed >= 20 else "   <<<< under target"))
    print()
    ok = _check({k: outs[k] for k in ["deteval-diag", *peers]}, failed) and not failed
    if not ok:
        print("\n!!!!!!!!!! BENCHMARK FAILURE: disagreement or failed run (see above) !!!!!!!!!!")
    return 0 if ok else 1
