"""pycocotools drop-ins: deteval.compat vs pycocotools vs COCOeval_faster (mode ``compat``).

``evaluate()`` + ``accumulate()`` of deteval.compat, pycocotools and faster-coco-eval's
``COCOeval_faster``.

The ``coco`` mode's generated data (default 600 images, 80 classes, 100 detections per
image). Each tool runs as its own child process, alternating, on the same files: it loads
the ground truth and the results with its own ``COCO`` / ``loadRes`` (not timed), then times
``evaluate()`` + ``accumulate()`` in the process with ``time.perf_counter`` (the issue's
measure), then ``summarize()`` (not timed). The table gives the in-process time (median of
the runs), the whole child's wall time and peak RSS, and the ratios; the summary figures of
the three are compared (deteval.compat and pycocotools must agree to 1e-12).

    python scripts/bench.py compat --images 600 --dets-per-image 100 --repeat 3
    python scripts/bench.py compat --iou-type segm --images 600 --dets-per-image 50
"""
import contextlib
import io
import json
import os
import sys
import time

from benchmarks import runner
from benchmarks.coco_data import ensure_data

MODE = "compat"
LABELS = {"compat": "deteval.compat", "pycocotools": "pycocotools",
          "fce": "faster-coco-eval COCOeval_faster"}


def _classes(tool):
    if tool == "compat":
        from deteval.compat import COCO, COCOeval
        return COCO, COCOeval, {}
    if tool == "fce":
        from faster_coco_eval import COCO, COCOeval_faster
        return COCO, COCOeval_faster, {}
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    return COCO, COCOeval, {}


def _run(tool, gt, dt, out, iou_type="bbox"):
    coco_cls, eval_cls, kw = _classes(tool)
    with contextlib.redirect_stdout(io.StringIO()):
        cgt = coco_cls(gt)
        cdt = cgt.loadRes(dt)
        ev = eval_cls(cgt, cdt, iou_type, **kw)
        t0 = time.perf_counter()
        ev.evaluate()
        ev.accumulate()
        seconds = time.perf_counter() - t0
        ev.summarize()
    stats = [None if (float(v) == -1.0 or v != v) else float(v) for v in ev.stats]
    with open(out, "w") as f:
        json.dump({"stats_list": stats, "seconds": seconds}, f)


RUNNERS = {k: (lambda tool: (lambda gt, dt, out, iou_type="bbox":
                             _run(tool, gt, dt, out, iou_type)))(k) for k in LABELS}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=600)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--iou-type", choices=("bbox", "segm"), default="bbox",
                    help="segm: the segm mode's RLE results (polygon ground truth)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    if args.iou_type == "segm":
        from benchmarks.segm import _prepare
        d, gt, dt, info = runner.in_subprocess(_prepare, args.workdir, args.images,
                                               args.dets_per_image, args.seed)
    else:
        d, gt, dt, info = runner.in_subprocess(ensure_data, args.workdir, args.images,
                                               args.dets_per_image, args.seed, False)
    print(f"=== compat ({args.iou_type}): {args.images} images, {info['gt']} GT, "
          f"{info['dets']} results ({info['categories_used']} categories); "
          f"evaluate()+accumulate() in process", flush=True)
    runner.warm_imports(args.python, env, ["pycocotools.cocoeval", "faster_coco_eval",
                                           "deteval.compat"], deteval_cli=None)
    note = runner.load_note()
    if note:
        print(note)
    cmds, outs, inproc = {}, {}, {k: [] for k in LABELS}
    for k in LABELS:
        outs[k] = os.path.join(d, f"out-compat-{args.iou_type}-{k}.json")
        cmds[k] = runner.runner_cmd(args.python, MODE, k, gt, dt, outs[k], args.iou_type)
    walls, rss, failed = {k: [] for k in LABELS}, {k: [] for k in LABELS}, {}
    names = list(LABELS)
    for r in range(args.repeat):
        for k in names[r % len(names):] + names[:r % len(names)]:
            if k in failed:
                continue
            w, m, rc, text = runner.run_child(cmds[k], d, env)
            if rc != 0:
                failed[k] = text
                print(f"    [{r + 1}/{args.repeat}] {LABELS[k]}: FAILED (rc={rc})")
                print("      " + "\n      ".join(text.strip().splitlines()[-15:]))
                continue
            with open(outs[k]) as f:
                inproc[k].append(json.load(f)["seconds"])
            walls[k].append(w)
            rss[k].append(m)
            print(f"    [{r + 1}/{args.repeat}] {LABELS[k]:<36} eval+acc {inproc[k][-1]:7.3f} s"
                  f"   process {w:6.2f} s  {m:7.1f} MiB", flush=True)
    done = [k for k in names if inproc[k]]
    if "compat" not in done:
        return 1
    base = runner.median(inproc["compat"])
    print(f"\n  {'tool':<36}{'eval+acc s':>12}{'x compat':>10}{'process s':>11}{'peak MiB':>10}")
    for k in done:
        med = runner.median(inproc[k])
        print(f"  {LABELS[k]:<36}{med:>12.3f}{med / base:>9.1f}x{runner.median(walls[k]):>11.2f}"
              f"{max(rss[k]):>10.1f}")
    figs = {}
    for k in done:
        with open(outs[k]) as f:
            figs[k] = json.load(f)["stats_list"]
    ok = not failed
    for other in ("pycocotools", "fce"):
        if other in figs:
            diff = runner.max_abs_diff(figs["compat"], figs[other])
            flag = "" if other != "pycocotools" or diff <= 1e-12 else "   <<<< FAIL"
            ok = ok and not flag
            print(f"  max |deteval.compat - {LABELS[other]}| over the 12 stats: {diff:.3g}{flag}")
    return 0 if ok else 1
