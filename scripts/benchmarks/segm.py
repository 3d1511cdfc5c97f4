"""COCO segm: deteval vs faster-coco-eval vs pycocotools on masks (mode ``segm``).

The ``coco`` mode's generated images and polygon ground truth (crowd regions as RLE), and
per image ``--dets-per-image`` results with compressed-RLE masks (a jittered polygon inside
each result box, rasterised by pycocotools) and their boxes, as Mask R-CNN-style detectors
write them. Each tool runs as its own process, alternating, on the same files.

    python scripts/bench.py segm --images 1000 --dets-per-image 50
"""
import os
import sys

from benchmarks import peers, runner
from benchmarks.coco_data import ensure_data

MODE = "segm"
LABELS = {"deteval": "deteval --iou-type segm", "fce": "faster-coco-eval",
          "pycocotools": "pycocotools"}


def _to_masks(d, gt, dt, seed):
    """results.json (boxes) -> results-segm.json (the same results with RLE masks)."""
    out = os.path.join(d, "results-segm.json")
    if os.path.exists(out):
        return out
    import json

    import numpy as np
    from pycocotools import mask as mask_api
    with open(gt) as f:
        images = {im["id"]: (im["height"], im["width"]) for im in json.load(f)["images"]}
    with open(dt) as f:
        results = json.load(f)
    rng = np.random.default_rng(seed)
    ang = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    for r in results:
        h, w = images[r["image_id"]]
        x, y, bw, bh = r["bbox"]
        rad = rng.uniform(0.35, 0.5, 12)
        px = np.clip(x + bw / 2 + rad * bw * np.cos(ang), 0, w)
        py = np.clip(y + bh / 2 + rad * bh * np.sin(ang), 0, h)
        rle = mask_api.frPyObjects([np.stack([px, py], 1).ravel().tolist()], h, w)[0]
        r["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
    runner.dump_json(results, out)
    return out


def _prepare(workdir, n, dpi, seed):
    d, gt, dt, info = ensure_data(workdir, n, dpi, seed, True)
    return d, gt, _to_masks(d, gt, dt, seed), info


def _run(tool, gt, dt, out):
    (peers.run_fce if tool == "fce" else peers.run_pycocotools)(gt, dt, out, "segm")


RUNNERS = {"pycocotools": lambda gt, dt, out: _run("pycocotools", gt, dt, out),
           "fce": lambda gt, dt, out: _run("fce", gt, dt, out)}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--dets-per-image", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=runner.default_workdir("coco"))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt, info = runner.in_subprocess(_prepare, args.workdir, args.images,
                                           args.dets_per_image, args.seed)
    print(f"=== segm: {args.images} images, {info['gt']} GT (polygons, crowd as RLE), "
          f"{info['dets']} RLE results", flush=True)
    runner.warm_imports(args.python, env, ["pycocotools.cocoeval", "faster_coco_eval"])
    note = runner.load_note()
    if note:
        print(note)
    outs = {k: os.path.join(d, f"out-segm-{k}.json") for k in LABELS}
    cmds = {"deteval": [args.python, "-m", "deteval", "coco", gt, dt, "--iou-type", "segm",
                        "--json", outs["deteval"]],
            "fce": runner.runner_cmd(args.python, MODE, "fce", gt, dt, outs["fce"]),
            "pycocotools": runner.runner_cmd(args.python, MODE, "pycocotools", gt, dt,
                                             outs["pycocotools"])}
    return 0 if peers.compare(cmds, outs, d, env, args.repeat, LABELS) else 1
