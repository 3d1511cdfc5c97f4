"""COCO bbox: deteval vs faster-coco-eval vs pycocotools (mode ``coco``).

Generates a deterministic, COCO-like ground truth + detections pair (seeded, see
:mod:`coco_data`), then runs each evaluator as a separate full process (startup + loading +
evaluation + writing a JSON report), alternating between tools, and reports wall time, peak
RSS and the agreement of the 12 summary figures.

    python scripts/bench.py coco                          # 5000 images, all tools
    python scripts/bench.py coco --images 500 --repeat 1  # quick iteration
    python scripts/bench.py coco --images 1000 5000 20000 --skip pycocotools
    python scripts/bench.py coco --images 5000 --streaming  # + MeanAveragePrecision
"""
import os
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data
from benchmarks.runner import max_abs_diff

MODE = "coco"

STAT_NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl",
              "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


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
# orchestration
# --------------------------------------------------------------------------

TOOLS = ["deteval", "fce", "pycocotools"]
LABEL = {"deteval": "deteval", "fce": "faster-coco-eval", "pycocotools": "pycocotools",
         "deteval-api": "deteval.evaluate_coco", "deteval-stream": "MeanAveragePrecision"}
_PEER_MODULES = {"fce": ["faster_coco_eval"],
                 "pycocotools": ["pycocotools.coco", "pycocotools.cocoeval"]}


def run_child(tool, gt, dt, out, python, env=None):
    """Run one tool as a child process; return (wall_s, peak_rss_MiB, rc, stderr)."""
    if tool == "deteval":
        cmd = [python, "-m", "deteval", "coco", gt, dt, "--json", out]
    else:
        cmd = runner.runner_cmd(python, MODE, tool, gt, dt, out)
    if os.path.exists(out):
        os.remove(out)
    return runner.run_child(cmd, os.path.dirname(os.path.abspath(out)), env)


def read_stats(out):
    import json
    with open(out) as f:
        rep = json.load(f)
    st = rep["stats"]
    return [st.get(k) for k in STAT_NAMES], rep


_median = runner.median


def bench_scale(args, n_images):
    d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, n_images,
                                           args.dets_per_image, args.seed, not args.no_segm)
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

    runner.warm_imports(args.python, args.env,
                        [m for t in tools for m in _PEER_MODULES.get(t, [])],
                        ("coco", "--help") if "deteval" in tools else ())
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




def add_arguments(ap):
    ap.add_argument("--images", type=int, nargs="+", default=[5000],
                    help="scale(s) to run, in turn (default 5000)")
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    ap.add_argument("--skip", nargs="+", choices=TOOLS, default=[])
    ap.add_argument("--streaming", action="store_true",
                    help="also time deteval.MeanAveragePrecision vs evaluate_coco")
    ap.add_argument("--workdir", default=runner.default_workdir(MODE),
                    help="data/output directory; data is reused per parameter set")
    ap.add_argument("--no-segm", action="store_true",
                    help="omit GT segmentation polygons/RLEs (smaller instances.json)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the child processes")
    ap.add_argument("--keep-env", action="store_true",
                    help="run children with the environment unchanged (no bytecode "
                         "cache under the workdir)")


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    args.env = runner.child_env(args.workdir, args.keep_env)

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
