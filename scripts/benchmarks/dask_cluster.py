"""Dask: deteval on a local Dask cluster from 64 shards vs one process (mode ``dask``).

Generates the COCO-like data of the ``coco`` mode, splits the results (shuffled, so every
image's detections spread over shards) into ``--shards`` JSON files, then times as separate
processes: ``deteval coco GT RESULTS.json`` (one process) and ``deteval.distributed`` on a
``LocalCluster`` of ``--workers`` processes. It prints wall time, the single process's peak
RSS, the *client* process's own peak RSS (its workers excluded: the figure that must not grow
with the number of detections), and checks that the reports are identical.

    python scripts/bench.py dask --images 20000 --dets-per-image 100 400
"""
import json
import os
import sys

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "dask"


def _run_client(gt, pattern, workers, out):
    """Child: evaluate on a local cluster; report the client's own peak RSS."""
    import resource
    import time
    t0 = time.perf_counter()
    from deteval import distributed
    client = distributed.connect(f"local:{workers}")
    t1 = time.perf_counter()
    try:
        rep = distributed.evaluate_coco(gt, pattern, client=client).to_dict()
    finally:
        distributed.disconnect(client)
    rep["bench"] = {"client_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    "t_cluster_start": t1 - t0, "t_total": time.perf_counter() - t0}
    with open(out, "w") as f:
        json.dump(rep, f)


RUNNERS = {"client": _run_client}


def _prepare(workdir, n, dpi, seed, shards):
    """(data folder, GT path, concatenated results path, shard folder, info) — run in a
    child process by :func:`runner.in_subprocess`."""
    d, gt, dt, info = ensure_data(workdir, n, dpi, seed, False)
    folder = _write_shards(d, dt, shards, seed)
    parts = sorted(p for p in os.listdir(folder) if p.endswith(".json"))
    concat = os.path.join(folder, "all.json")
    if not os.path.exists(concat):
        merged = []
        for p in parts:
            with open(os.path.join(folder, p), "rb") as f:
                merged.extend(json.loads(f.read()))
        runner.dump_json(merged, concat)
    return d, gt, concat, folder, len(parts), info


def _write_shards(d, dt, shards, seed):
    folder = os.path.join(d, f"shards-{shards}")
    done = os.path.join(folder, "done")
    if os.path.exists(done):
        return folder
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    with open(dt, "rb") as f:
        results = json.loads(f.read())
    perm = np.random.default_rng(seed).permutation(len(results))
    for i, rows in enumerate(np.array_split(perm, shards)):
        runner.dump_json([results[j] for j in rows], os.path.join(folder, f"part-{i:03d}.json"))
    open(done, "w").close()
    return folder


def add_arguments(ap):
    ap.add_argument("--images", type=int, nargs="+", default=[20000])
    ap.add_argument("--dets-per-image", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=runner.default_workdir(MODE))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    runner.warm_imports(args.python, env, ["distributed", "dask"])
    ok = True
    rows = []
    for n in args.images:
        for dpi in args.dets_per_image:
            # the single-process run reads the shards' concatenation (the same tie order)
            d, gt, concat, folder, n_parts, info = runner.in_subprocess(
                _prepare, args.workdir, n, dpi, args.seed, args.shards)
            print(f"\n=== {n} images x {dpi} dets/image: {info['dets']} detections in "
                  f"{n_parts} shards", flush=True)
            note = runner.load_note()
            if note:
                print(note)
            out1 = os.path.join(d, "out-single.json")
            out2 = os.path.join(d, "out-dask.json")
            cmds = {"single": [args.python, "-m", "deteval", "coco", gt, concat, "--json", out1],
                    "dask": runner.runner_cmd(args.python, MODE, "client", gt,
                                              os.path.join(folder, "part-*.json"), args.workers,
                                              out2)}
            labels = {"single": "deteval, one process",
                      "dask": f"deteval.distributed, {args.workers} workers"}
            walls, rss, failed = runner.time_tools(cmds, d, env, args.repeat, labels)
            if failed:
                ok = False
                continue
            with open(out1) as f:
                single = json.load(f)
            with open(out2) as f:
                dask_rep = json.load(f)
            same = (single["stats"] == dask_rep["stats"]
                    and single["classes"] == dask_rep["classes"])
            ok = ok and same
            client = dask_rep["bench"]["client_peak_mib"]
            print(f"  single process: {runner.median(walls['single']):.2f} s, peak "
                  f"{max(rss['single']):.0f} MiB")
            print(f"  dask ({args.workers} workers): {runner.median(walls['dask']):.2f} s "
                  f"(cluster start {dask_rep['bench']['t_cluster_start']:.2f} s), client peak "
                  f"{client:.0f} MiB (client + workers: {max(rss['dask']):.0f} MiB)")
            print(f"  identical stats and per-class figures: {same}")
            rows.append((n, dpi, info["dets"], runner.median(walls["single"]),
                         max(rss["single"]), runner.median(walls["dask"]), client))
    if rows:
        print("\n=== summary")
        print(f"  {'images':>7} {'dets/img':>8} {'dets':>9} {'single s':>9} {'single MiB':>11} "
              f"{'dask s':>8} {'client MiB':>11}")
        for n, dpi, nd, ws, ms, wd, mc in rows:
            print(f"  {n:>7} {dpi:>8} {nd:>9} {ws:>9.2f} {ms:>11.0f} {wd:>8.2f} {mc:>11.0f}")
    return 0 if ok else 1
