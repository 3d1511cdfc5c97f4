"""COCO bbox image bootstrap: one evaluation vs N replicates (mode ``bootstrap``).

The ``coco`` mode's generated data (default 5000 images, 80 classes, 100 detections per
image). Each measurement is a full ``deteval coco`` process (startup, loading, matching,
figures, JSON report): without ``--bootstrap``, then with ``--bootstrap N`` (default 1000),
alternating. Prints wall time, peak RSS and the ratio (issue 16's target: at most 10x one
evaluation) and checks that both runs report the same figures. Then, in one child process,
CPU seconds (all threads) of ``evaluate_coco`` without and with ``bootstrap=N``: on a shared
machine wall times swing with the other work, CPU time much less. Optionally also the
reference path (each replicate re-accumulated from explicitly resampled records) on a few
replicates, for the per-replicate cost.

    python scripts/bench.py bootstrap                         # 5000 images, 1000 replicates
    python scripts/bench.py bootstrap --images 1000 --samples 200 --repeat 1
    python scripts/bench.py bootstrap --reference 3           # + the reference path
"""
import json
import os
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "bootstrap"


def _reference(gt, dt, out, samples):
    """In-process: seconds per replicate of the weighted path and of the reference path."""
    import time

    import numpy as np

    from deteval import bootstrap as boot
    from deteval.io.coco import load_coco_ground_truth, load_coco_results
    from deteval.match import match_coco
    from deteval.params import COCO_RECALL_THRESHOLDS, coco_params
    samples = int(samples)
    thr, areas, md, default = coco_params(None, None, None, "bbox")
    g = load_coco_ground_truth(gt)
    d = load_coco_results(dt, g)
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    key = np.argsort(np.argsort(g.image_ids, kind="stable"), kind="stable")
    matches = match_coco(g, d, thr, area_arr, md[-1])
    counts = boot.coco_gt_counts(g, area_arr, key)
    res = {}
    for method in ("weighted", "naive"):
        t0 = time.perf_counter()
        st, _ = boot.coco_replicate_figures(matches, counts, thr, list(areas), md,
                                            COCO_RECALL_THRESHOLDS, default, "bbox",
                                            samples=samples, seed=0, method=method,
                                            progress=False)
        res[method] = {"s_per_replicate": (time.perf_counter() - t0) / samples,
                       "AP": st["AP"].tolist()}
    with open(out, "w") as f:
        json.dump(res, f)


def _cpu(gt, dt, out, samples):
    """In-process: wall and CPU seconds (every thread) of one evaluation and of one with
    ``bootstrap=samples``."""
    import time

    import deteval
    res = {}
    for name, kw in (("one", {}), ("boot", {"bootstrap": int(samples)})):
        w0, c0 = time.perf_counter(), time.process_time()
        deteval.evaluate_coco(gt, dt, **kw)
        res[name] = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}
    with open(out, "w") as f:
        json.dump(res, f)


RUNNERS = {"reference": _reference, "cpu": _cpu}
LABELS = {"one": "deteval coco (one evaluation)", "boot": "deteval coco --bootstrap N"}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--samples", type=int, default=1000, help="replicates (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", type=int, default=0, metavar="N",
                    help="also time N replicates of the reference path (in-process)")
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, args.images,
                                           args.dets_per_image, args.seed, True)
    print(f"=== bootstrap: {args.images} images, {info['gt']} GT, {info['dets']} detections "
          f"({info['distinct_scores']} distinct scores), {args.samples} replicates; "
          f"{os.cpu_count()} CPUs", flush=True)
    runner.warm_imports(args.python, env)
    note = runner.load_note()
    if note:
        print(note)
    outs = {"one": os.path.join(d, "out-boot-one.json"),
            "boot": os.path.join(d, "out-boot-n.json")}
    cmds = {"one": [args.python, "-m", "deteval", "coco", gt, dt, "--json", outs["one"]],
            "boot": [args.python, "-m", "deteval", "coco", gt, dt, "--bootstrap",
                     str(args.samples), "--json", outs["boot"]]}
    walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, LABELS)
    rows = runner.print_timing_table(walls, rss, LABELS, base="one")
    ok = not failed
    if not failed:
        with open(outs["one"]) as f:
            one = json.load(f)
        with open(outs["boot"]) as f:
            rep = json.load(f)
        same = one["stats"] == rep["stats"]
        u = rep["uncertainty"]
        print(f"\n  bootstrap / one evaluation: {rows['boot'][0] / rows['one'][0]:.2f}x time "
              f"(median), {rows['boot'][2] / rows['one'][2]:.2f}x peak RSS "
              f"(+{rows['boot'][2] - rows['one'][2]:.0f} MiB)")
        print(f"  same figures with and without --bootstrap: {same}")
        print("  " + "  ".join(f"{k} {rep['stats'][k]:.4f} [{v[0]:.4f}, {v[1]:.4f}]"
                               for k, v in list(u["intervals"].items())[:3] if v))
        ok = ok and same
    out = os.path.join(d, "out-boot-cpu.json")
    w, m, rc, text = runner.run_child(
        runner.runner_cmd(args.python, MODE, "cpu", gt, dt, out, args.samples), d, env)
    if rc == 0:
        with open(out) as f:
            c = json.load(f)
        print(f"\n  in one process, evaluate_coco: one evaluation {c['one']['wall']:.2f} s wall, "
              f"{c['one']['cpu']:.2f} s CPU; bootstrap={args.samples}: "
              f"{c['boot']['wall']:.2f} s wall, {c['boot']['cpu']:.2f} s CPU (all threads)"
              f"\n  CPU time ratio: {c['boot']['cpu'] / c['one']['cpu']:.2f}x; "
              f"wall ratio {c['boot']['wall'] / c['one']['wall']:.2f}x; load average now "
              f"{os.getloadavg()[0]:.2f}")
    else:
        print("  CPU measurement FAILED\n      " + "\n      ".join(text.splitlines()[-10:]))
        ok = False
    if args.reference:
        out = os.path.join(d, "out-boot-reference.json")
        w, m, rc, text = runner.run_child(
            runner.runner_cmd(args.python, MODE, "reference", gt, dt, out, args.reference),
            d, env)
        if rc != 0:
            print("  reference path FAILED\n      " + "\n      ".join(text.splitlines()[-10:]))
            return 1
        with open(out) as f:
            r = json.load(f)
        wr, nr = r["weighted"], r["naive"]
        diff = max(abs(a - b) for a, b in zip(wr["AP"], nr["AP"]))
        print(f"\n  per replicate, in-process ({args.reference} replicates, set-up included): "
              f"weighted "
              f"{1000 * wr['s_per_replicate']:.1f} ms, reference (re-accumulation) "
              f"{1000 * nr['s_per_replicate']:.1f} ms: "
              f"{nr['s_per_replicate'] / wr['s_per_replicate']:.1f}x; "
              f"max |AP weighted - reference| {diff:.3g}")
        ok = ok and diff <= 1e-12
    return 0 if ok else 1
