"""Reading a YOLO dataset and its predictions vs the same data as COCO JSON (mode ``formats``).

The ``coco`` mode's generated images, objects and results, made exactly representable in
both formats (power-of-two image sizes, quarter-pixel boxes, no crowd, ``area = w*h``),
written twice: as COCO JSON (instances + results) and as a YOLO dataset (``data.yaml``,
``images/val`` with real JPEG/PNG files whose headers give the sizes, ``labels/val``) with a
folder of YOLO prediction files (``class cx cy w h conf``). Each measurement is its own
child process:

* ``read``: loading only, both sides through deteval's readers (the time inside the
  process is reported too, without the interpreter start);
* ``deteval coco``: the whole command on each side (the figures must be identical).

    python scripts/bench.py formats --images 5000 --dets-per-image 100
"""
import json
import os
import shutil
import sys

from benchmarks import runner
from benchmarks.coco_data import generate

MODE = "formats"
GEN_VERSION = 1
LABELS = {"read-coco": "read COCO JSON (gt + results)",
          "read-yolo": "read YOLO (labels+headers, preds)",
          "eval-coco": "deteval coco gt.json results.json",
          "eval-yolo": "deteval coco data.yaml preds/"}


def _pow2(v):
    p = 1
    while p < v:
        p *= 2
    return p


def _f(v):
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


def _prepare(workdir, n, dpi, seed):
    """Write both versions (cached per parameter set); return their paths and counts."""
    d = os.path.join(workdir, f"formats-n{n}-d{dpi}-s{seed}-g{GEN_VERSION}")
    paths = {"gt": os.path.join(d, "coco", "gt.json"),
             "res": os.path.join(d, "coco", "results.json"),
             "yaml": os.path.join(d, "yolo", "data.yaml"), "pred": os.path.join(d, "pred")}
    info_path = os.path.join(d, "info.json")
    if os.path.exists(info_path):
        with open(info_path) as f:
            return d, paths, json.load(f)
    import numpy as np
    from PIL import Image
    shutil.rmtree(d, ignore_errors=True)
    inst, results = generate(n, dpi, seed, segm=False)
    images = sorted(inst["images"], key=lambda im: im["file_name"])
    for k, im in enumerate(images):
        im["width"], im["height"] = _pow2(im["width"]), _pow2(im["height"])
        if k % 4 == 3:
            im["file_name"] = im["file_name"][:-4] + ".png"
    pos = {im["id"]: k for k, im in enumerate(images)}
    cats = sorted(inst["categories"], key=lambda c: c["id"])
    cat_pos = {c["id"]: k for k, c in enumerate(cats)}

    def quarter(b):
        return [float(np.floor(4 * v) / 4) for v in b]

    anns = [a for a in inst["annotations"] if not a.get("iscrowd")]
    for j, a in enumerate(anns):
        a["bbox"] = quarter(a["bbox"])
        a["area"] = a["bbox"][2] * a["bbox"][3]
        a["id"] = j + 1
    for r in results:
        r["bbox"] = quarter(r["bbox"])
    results.sort(key=lambda r: pos[r["image_id"]])  # the YOLO reading order
    os.makedirs(os.path.join(d, "coco"))
    runner.dump_json({"images": images, "annotations": anns, "categories": cats}, paths["gt"])
    runner.dump_json(results, paths["res"])
    img_dir = os.path.join(d, "yolo", "images", "val")
    lab_dir = os.path.join(d, "yolo", "labels", "val")
    os.makedirs(img_dir)
    os.makedirs(lab_dir)
    os.makedirs(paths["pred"])
    templates = {}
    for im in images:  # real image files (one encoded per size and kind, then copied)
        key = (im["width"], im["height"], im["file_name"][-3:])
        if key not in templates:
            t = os.path.join(d, f"template_{key[0]}x{key[1]}.{key[2]}")
            Image.new("RGB", key[:2], (90, 120, 30)).save(t)
            templates[key] = t
        shutil.copyfile(templates[key], os.path.join(img_dir, im["file_name"]))
    by_image = {im["id"]: [] for im in images}
    for a in anns:
        by_image[a["image_id"]].append(a)
    dets = {im["id"]: [] for im in images}
    for r in results:
        dets[r["image_id"]].append(r)
    for im in images:
        W, H = im["width"], im["height"]
        stem = im["file_name"][:-4]

        def line(c, b, *extra):
            x, y, w, h = b
            return " ".join([str(cat_pos[c])] + [_f(v) for v in ((x + w / 2) / W,
                            (y + h / 2) / H, w / W, h / H, *extra)]) + "\n"

        if by_image[im["id"]]:
            with open(os.path.join(lab_dir, stem + ".txt"), "w") as f:
                f.write("".join(line(a["category_id"], a["bbox"]) for a in by_image[im["id"]]))
        if dets[im["id"]]:
            with open(os.path.join(paths["pred"], stem + ".txt"), "w") as f:
                f.write("".join(line(r["category_id"], r["bbox"], r["score"])
                                for r in dets[im["id"]]))
    with open(paths["yaml"], "w") as f:
        f.write("val: images/val\nnames:\n" + "".join(f"  {k}: {c['name']}\n"
                                                       for k, c in enumerate(cats)))
    info = {"images": len(images), "gt": len(anns), "dets": len(results)}
    with open(info_path, "w") as f:
        json.dump(info, f)
    return d, paths, info


def _read(kind, gt, res, out):
    """Child: load one side with deteval's readers; write the time inside the process."""
    import time
    t0 = time.perf_counter()
    if kind == "yolo":
        from deteval.io.detect import load_pair
        g, det, _ = load_pair(gt, res)
    else:
        from deteval.io.coco import load_coco_ground_truth, load_coco_results
        g = load_coco_ground_truth(gt)
        det = load_coco_results(res, g)
    seconds = time.perf_counter() - t0
    with open(out, "w") as f:
        json.dump({"seconds": seconds, "objects": len(g), "detections": len(det)}, f)


RUNNERS = {"read": _read}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", default=runner.default_workdir(MODE))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, p, info = runner.in_subprocess(_prepare, args.workdir, args.images,
                                      args.dets_per_image, args.seed)
    print(f"=== formats: {info['images']} images, {info['gt']} objects, {info['dets']} "
          f"detections; COCO JSON vs YOLO dataset (labels + image headers) + predictions",
          flush=True)
    runner.warm_imports(args.python, env, ["msgspec", "yaml", "imagesize"])
    note = runner.load_note()
    if note:
        print(note)
    outs = {k: os.path.join(d, f"out-{k}.json") for k in LABELS}
    cmds = {"read-coco": runner.runner_cmd(args.python, MODE, "read", "coco", p["gt"], p["res"],
                                           outs["read-coco"]),
            "read-yolo": runner.runner_cmd(args.python, MODE, "read", "yolo", p["yaml"],
                                           p["pred"], outs["read-yolo"]),
            "eval-coco": [args.python, "-m", "deteval", "coco", p["gt"], p["res"], "--json",
                          outs["eval-coco"]],
            "eval-yolo": [args.python, "-m", "deteval", "coco", p["yaml"], p["pred"], "--json",
                          outs["eval-yolo"]]}
    inner = {"read-coco": [], "read-yolo": []}
    walls, rss, failed = {k: [] for k in cmds}, {k: [] for k in cmds}, {}
    names = list(cmds)
    for r in range(args.repeat):  # rotating order, one round at a time: inner times kept
        order = names[r % len(names):] + names[:r % len(names)]
        w, m, f = runner.time_tools({k: cmds[k] for k in order if k not in failed}, d, env,
                                    1, LABELS)
        for k in w:
            walls[k] += w[k]
            rss[k] += m[k]
        failed.update(f)
        for k in inner:
            if k not in failed:
                with open(outs[k]) as fh:
                    inner[k].append(json.load(fh)["seconds"])
    print("\n  whole child process (interpreter start, imports, reading; eval rows: the "
          "whole command)")
    rows = runner.print_timing_table({k: walls[k] for k in ("read-coco", "read-yolo")},
                                     rss, LABELS, base="read-coco")
    runner.print_timing_table({k: walls[k] for k in ("eval-coco", "eval-yolo")},
                                      rss, LABELS, base="eval-coco")
    ok = not failed
    if inner["read-coco"] and inner["read-yolo"]:
        a, b = runner.median(inner["read-coco"]), runner.median(inner["read-yolo"])
        print(f"\n  reading inside the process (median of {args.repeat}): COCO JSON {a:.3f} s, "
              f"YOLO {b:.3f} s, YOLO / COCO = {b / a:.2f}x (target <= 2x)")
        with open(outs["read-coco"]) as f1, open(outs["read-yolo"]) as f2:
            x, y = json.load(f1), json.load(f2)
        same = x["objects"] == y["objects"] and x["detections"] == y["detections"]
        print(f"  same object and detection counts: {same}")
        ok = ok and same
    if "read-coco" in rows and "read-yolo" in rows:
        print(f"  whole read process YOLO / COCO: "
              f"{rows['read-yolo'][0] / rows['read-coco'][0]:.2f}x")
    if not failed.get("eval-coco") and not failed.get("eval-yolo"):
        with open(outs["eval-coco"]) as f1, open(outs["eval-yolo"]) as f2:
            s1, s2 = json.load(f1)["stats"], json.load(f2)["stats"]
        diff = runner.max_abs_diff(list(s1.values()), list(s2.values()))
        print(f"  max |figures YOLO - figures COCO|: {diff:.3g}"
              + ("" if diff == 0 else "   <<<< FAIL"))
        ok = ok and diff == 0
    return 0 if ok else 1
