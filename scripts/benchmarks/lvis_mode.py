"""LVIS: deteval lvis vs lvis-api vs faster-coco-eval (lvis_style) on federated data (mode ``lvis``).

Generated LVIS-v1-like data: 1203 categories (337 rare, 461 common, 405 frequent, a
Zipf-like prior over them), per image a few annotated categories with several objects
each, verified-absent categories (``neg_category_ids``) and some not-exhaustive ones; 300
results per image (400 on a fifth of the images, so lvis-api's cut to 300 per image
binds) spread over annotated, negative and unverified categories, scores with 4 decimals
(ties). Every tool runs as its own process on the same files:

* ``deteval lvis GT RESULTS --json OUT``;
* lvis-api 0.5.3 (``LVIS``, ``LVISResults``, ``LVISEval``; with the ``np.float`` shim it
  needs on numpy 2);
* faster-coco-eval ``COCOeval_faster(..., lvis_style=True)``, ``maxDets=[300]``, after the
  top-300-per-image cut done in Python (without it its figures differ from lvis-api's).

    python scripts/bench.py lvis --images 1000 5000
    python scripts/bench.py lvis --images 5000 --tools deteval   # skip the slow peers
"""
import json
import os
import sys

from benchmarks import runner

MODE = "lvis"
GEN_VERSION = 1
LABELS = {"deteval": "deteval lvis", "lvis_api": "lvis-api 0.5.3",
          "fce": "faster-coco-eval lvis_style"}
STATS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", "AR300", "ARs",
         "ARm", "ARl"]
NUM_CATS = (337, 461, 405)  # LVIS v1: rare, common, frequent


def generate(n_images, seed):
    """``(ground_truth, results)``: deterministic given the arguments."""
    import numpy as np
    rng = np.random.default_rng(seed)
    K = sum(NUM_CATS)
    freq = np.array(["f"] * NUM_CATS[2] + ["c"] * NUM_CATS[1] + ["r"] * NUM_CATS[0])
    perm = rng.permutation(K)  # category ids 1..K, frequency groups interleaved
    cat_ids = perm + 1
    prior = np.arange(1, K + 1, dtype=np.float64) ** -1.1  # frequent categories first
    prior /= prior.sum()
    cats = [{"id": int(cat_ids[k]), "name": f"category_{int(cat_ids[k])}",
             "synset": f"synset_{int(cat_ids[k])}", "frequency": str(freq[k])}
            for k in range(K)]
    cats.sort(key=lambda c: c["id"])
    images, anns, results = [], [], []
    aid = 1
    for i in range(n_images):
        img_id = 100000 + 7 * i
        W, H = int(rng.choice([640, 480, 500])), int(rng.choice([480, 427, 375, 640]))
        pos = np.unique(rng.choice(K, 1 + int(rng.poisson(2.5)), p=prior))
        neg = np.setdiff1d(np.unique(rng.choice(K, int(rng.integers(0, 12)), p=prior)), pos)
        ne = pos[rng.random(pos.shape[0]) < 0.15]
        images.append({"id": img_id, "height": H, "width": W,
                       "coco_url": f"http://example/{img_id}.jpg",
                       "neg_category_ids": [int(cat_ids[k]) for k in neg],
                       "not_exhaustive_category_ids": [int(cat_ids[k]) for k in ne]})
        objs = []
        for k in pos:
            for _ in range(1 + int(rng.poisson(2.0))):
                side = float(np.exp(rng.uniform(np.log(6), np.log(300))))
                w = min(side * rng.uniform(0.6, 1.6), W - 1.0)
                h = min(side * rng.uniform(0.6, 1.6), H - 1.0)
                x, y = rng.uniform(0, W - w), rng.uniform(0, H - h)
                box = [round(x, 2), round(y, 2), round(w, 2), round(h, 2)]
                anns.append({"id": aid, "image_id": img_id, "category_id": int(cat_ids[k]),
                             "bbox": box, "area": round(w * h * rng.uniform(0.55, 0.9), 2)})
                aid += 1
                objs.append((k, box))
        n_res = 400 if i % 5 == 0 else 300
        kind = rng.random(n_res)
        sides = np.exp(rng.uniform(np.log(6), np.log(300), n_res))
        for j in range(n_res):
            if objs and kind[j] < 0.35:
                k, (x, y, w, h) = objs[int(rng.integers(0, len(objs)))]
                s = rng.choice([0.03, 0.1, 0.25])
                box = [x + rng.normal(0, s * w), y + rng.normal(0, s * h),
                       w * rng.uniform(1 - s, 1 + s), h * rng.uniform(1 - s, 1 + s)]
            else:
                if neg.shape[0] and kind[j] < 0.45:
                    k = int(neg[int(rng.integers(0, neg.shape[0]))])
                else:
                    k = int(rng.choice(K, p=prior))
                w, h = sides[j] * rng.uniform(0.6, 1.6), sides[j] * rng.uniform(0.6, 1.6)
                box = [rng.uniform(0, W - 1), rng.uniform(0, H - 1), w, h]
            results.append({"image_id": img_id, "category_id": int(cat_ids[k]),
                            "bbox": [round(float(v), 2) for v in box],
                            "score": round(float(rng.random()), 4)})
    gt = {"info": {"description": "generated LVIS-v1-like"}, "licenses": [],
          "images": images, "annotations": anns, "categories": cats}
    return gt, results


def _prepare(workdir, n, seed):
    d = os.path.join(workdir, f"lvis-n{n}-s{seed}-g{GEN_VERSION}")
    gt, dt = os.path.join(d, "lvis_val.json"), os.path.join(d, "results.json")
    if not (os.path.exists(gt) and os.path.exists(dt)):
        os.makedirs(d, exist_ok=True)
        inst, res = generate(n, seed)
        runner.dump_json(inst, gt)
        runner.dump_json(res, dt)
    with open(gt) as f:
        g = json.load(f)
    return d, gt, dt, {"gt": len(g["annotations"]), "cats": len(g["categories"]),
                       "results_bytes": os.path.getsize(dt)}


def _write(out, values):
    with open(out, "w") as f:
        json.dump({"stats_list": [None if v is None or v == -1 or v != v else float(v)
                                  for v in values]}, f)


def run_lvis_api(gt, dt, out):
    import logging

    import numpy as np
    np.float = float  # lvis-api 0.5.3 uses np.float (removed in numpy 1.24)
    np.int = int
    logging.getLogger("lvis").setLevel(logging.ERROR)
    from lvis import LVIS, LVISEval, LVISResults
    lgt = LVIS(gt)
    ev = LVISEval(lgt, LVISResults(lgt, dt), "bbox")
    ev.run()
    r = ev.results
    _write(out, [r[k] for k in ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc",
                                "APf", "AR@300", "ARs@300", "ARm@300", "ARl@300"]])


def run_fce(gt, dt, out):
    from collections import defaultdict

    from faster_coco_eval import COCO, COCOeval_faster
    with open(dt) as f:
        results = json.load(f)
    by_image = defaultdict(list)  # lvis-api's cut: 300 per image, stable by score
    for r in results:
        by_image[r["image_id"]].append(r)
    results = [r for rs in by_image.values()
               for r in sorted(rs, key=lambda r: r["score"], reverse=True)[:300]]
    cgt = COCO(gt)
    ev = COCOeval_faster(cgt, cgt.loadRes(results), iouType="bbox", lvis_style=True,
                         print_function=lambda *a, **k: None)
    ev.params.maxDets = [300]
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    s = ev.stats_as_dict
    _write(out, [s[k] for k in ["AP_all", "AP_50", "AP_75", "AP_small", "AP_medium",
                                "AP_large", "APr", "APc", "APf", "AR_all", "AR_small",
                                "AR_medium", "AR_large"]])


RUNNERS = {"lvis_api": run_lvis_api, "fce": run_fce}


def add_arguments(ap):
    ap.add_argument("--images", type=int, nargs="+", default=[1000])
    ap.add_argument("--tools", nargs="+", default=list(LABELS), choices=list(LABELS),
                    help="tools to run (lvis-api takes about 3 minutes at 5000 images)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=runner.default_workdir(MODE))
    ap.add_argument("--python", default=sys.executable)


def _read(out, tool):
    with open(out) as f:
        rep = json.load(f)
    return list(rep["stats"].values()) if tool == "deteval" else rep["stats_list"]


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    runner.warm_imports(args.python, env, ["lvis", "faster_coco_eval"],
                        deteval_cli=("lvis", "--help"))
    ok = True
    for n in args.images:
        d, gt, dt, info = runner.in_subprocess(_prepare, args.workdir, n, args.seed)
        print(f"=== lvis: {n} images, {info['cats']} categories, {info['gt']} GT, results "
              f"file {info['results_bytes'] / 2 ** 20:.0f} MiB (300 per image, 400 on a "
              f"fifth)", flush=True)
        note = runner.load_note()
        if note:
            print(note)
        outs = {k: os.path.join(d, f"out-{k}.json") for k in LABELS}
        cmds = {"deteval": [args.python, "-m", "deteval", "lvis", gt, dt, "--json",
                            outs["deteval"]],
                "lvis_api": runner.runner_cmd(args.python, MODE, "lvis_api", gt, dt,
                                              outs["lvis_api"]),
                "fce": runner.runner_cmd(args.python, MODE, "fce", gt, dt, outs["fce"])}
        cmds = {k: v for k, v in cmds.items() if k in args.tools}
        walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, LABELS)
        rows = runner.print_timing_table(walls, rss, LABELS, base="deteval")
        ok = ok and not failed
        figs = {k: _read(outs[k], k) for k in cmds if k not in failed}
        if "deteval" in figs:
            for other in ("lvis_api", "fce"):
                if other in figs:
                    diff = runner.max_abs_diff(figs["deteval"], figs[other])
                    flag = "" if other != "lvis_api" or diff <= 1e-12 else "   <<<< FAIL"
                    ok = ok and not flag
                    print(f"  max |deteval - {LABELS[other]}| over the 13 figures: "
                          f"{diff:.3g}{flag}")
            for other in ("lvis_api", "fce"):
                if other in rows and "deteval" in rows:
                    print(f"  {LABELS[other]} / deteval: time "
                          f"{rows[other][0] / rows['deteval'][0]:.1f}x, peak RSS "
                          f"{rows[other][2] / rows['deteval'][2]:.1f}x")
    return 0 if ok else 1
