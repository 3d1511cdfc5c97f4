"""TIDE errors: deteval --tide vs a plain deteval run vs tidecv (mode ``tide``).

The ``coco`` mode's generated data (COCO-like images, 80 classes, polygon ground truth with
crowd regions, ``--dets-per-image`` results per image); each tool runs as its own process on
the same files: ``deteval coco GT RES`` (plain), ``deteval coco GT RES --tide``, and tidecv
1.0.1 (``TIDE().evaluate(datasets.COCO(GT), datasets.COCOResult(RES))``, then
``get_all_errors()`` and ``count_errors()``, the numbers of ``report["tide"]``). The dAPs of
deteval and tidecv are compared (the counts must be equal).

    python scripts/bench.py tide                            # 5000 images x 100 dets
    python scripts/bench.py tide --images 500 --repeat 1    # quick iteration
"""
import json
import os
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "tide"
LABELS = {"plain": "deteval coco", "tide": "deteval coco --tide", "tidecv": "tidecv 1.0.1"}


def _run_tidecv(gt, dt, out):
    import numpy as np
    for name, value in (("float", float), ("int", int), ("bool", bool)):
        if not hasattr(np, name):
            setattr(np, name, value)  # tidecv 1.0.1 still uses the removed aliases
    from tidecv import TIDE, datasets
    tide = TIDE(0.5, 0.1, TIDE.BOX)
    run = tide.evaluate(datasets.COCO(gt), datasets.COCOResult(dt), name="run")
    errors = tide.get_all_errors()
    counts = {k.short_name: v for k, v in run.count_errors().items()}
    with open(out, "w") as f:
        json.dump({"tide": {"ap50": run.ap, "main": errors["main"]["run"],
                            "special": errors["special"]["run"], "counts": counts}}, f)


RUNNERS = {"tidecv": _run_tidecv}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each deteval command")
    ap.add_argument("--tidecv-repeat", type=int, default=1,
                    help="runs of tidecv (minutes each at 5000 images)")
    ap.add_argument("--skip-tidecv", action="store_true")
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def _compare(outs, failed):
    """Largest |deteval - tidecv| over ap50 and the dAPs, and whether the counts agree."""
    if "tide" in failed or "tidecv" in failed or not os.path.exists(outs["tidecv"]):
        return None
    with open(outs["tide"]) as f:
        ours = json.load(f)["tide"]
    with open(outs["tidecv"]) as f:
        ref = json.load(f)["tide"]
    diff = abs(ours["ap50"] - ref["ap50"])
    for part in ("main", "special"):
        for k, v in ref[part].items():
            diff = max(diff, abs(ours[part][k] - v))
    return diff, ours["counts"] == ref["counts"], ours


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, args.images,
                                           args.dets_per_image, args.seed, True)
    print(f"=== tide: {args.images} images, {info['gt']} GT ({info['crowd']} crowd), "
          f"{info['dets']} results, 80 classes", flush=True)
    runner.warm_imports(args.python, env, ["tidecv", "pycocotools.mask"])
    note = runner.load_note()
    if note:
        print(note)
    outs = {k: os.path.join(d, f"out-tide-{k}.json") for k in LABELS}
    for p in outs.values():
        if os.path.exists(p):
            os.remove(p)
    deteval = [args.python, "-m", "deteval", "coco", gt, dt]
    cmds = {"plain": deteval + ["--json", outs["plain"]],
            "tide": deteval + ["--tide", "--json", outs["tide"]]}
    walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, LABELS)
    if not args.skip_tidecv:
        w, r, f = runner.time_tools(
            {"tidecv": runner.runner_cmd(args.python, MODE, "tidecv", gt, dt, outs["tidecv"])},
            d, env, args.tidecv_repeat, LABELS)
        walls.update(w)
        rss.update(r)
        failed.update(f)
    rows = runner.print_timing_table(walls, rss, LABELS, base="tide")
    if "plain" in rows and "tide" in rows:
        print(f"  deteval --tide / plain deteval: {rows['tide'][0] / rows['plain'][0]:.2f}x "
              f"(the TIDE pass: {rows['tide'][0] - rows['plain'][0]:+.2f} s)")
    if "tidecv" in rows and "tide" in rows:
        print(f"  tidecv / deteval --tide: {rows['tidecv'][0] / rows['tide'][0]:.1f}x")
    found = _compare(outs, failed)
    ok = not failed
    if found is not None:
        diff, same_counts, ours = found
        flag = "" if diff <= 1e-6 and same_counts else "   <<<< FAIL"
        ok = ok and not flag
        print(f"  max |deteval - tidecv| over ap50 and dAPs: {diff:.3g}; counts equal: "
              f"{same_counts}{flag}")
        print("  deteval: ap50 {:.2f}; dAP {}".format(
            ours["ap50"], ", ".join(f"{k} {v:.2f}" for k, v in ours["main"].items())))
    return 0 if ok else 1
