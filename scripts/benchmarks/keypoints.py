"""COCO keypoints: deteval vs faster-coco-eval vs pycocotools on OKS (mode ``keypoints``).

Generated person images (about three people each, 17 keypoints with COCO's visibility mix,
some people without labelled keypoints, a few crowd regions) and ``--dets-per-image``
keypoint results per image (jittered copies of the people and false alarms, tied scores).

    python scripts/bench.py keypoints --images 5000 --dets-per-image 20
"""
import os
import sys

from benchmarks import peers, runner

MODE = "keypoints"
LABELS = {"deteval": "deteval --iou-type keypoints", "fce": "faster-coco-eval",
          "pycocotools": "pycocotools"}


def generate(n_images, dets_per_image, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    K = 17
    images, anns, results = [], [], []
    aid = 1
    for i in range(n_images):
        img_id = i + 1
        images.append({"id": img_id, "height": 480, "width": 640, "file_name": f"{img_id}.jpg"})
        people = []
        for _ in range(int(rng.poisson(3))):
            w, h = rng.uniform(20, 200), rng.uniform(40, 300)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            v = rng.choice([0, 1, 2], K, p=[0.35, 0.1, 0.55])
            if rng.random() < 0.1:
                v[:] = 0
            kx = np.where(v > 0, np.round(x + rng.uniform(0, w, K), 1), 0)
            ky = np.where(v > 0, np.round(y + rng.uniform(0, h, K), 1), 0)
            anns.append({"id": aid, "image_id": img_id, "category_id": 1,
                         "keypoints": np.stack([kx, ky, v], 1).ravel().tolist(),
                         "num_keypoints": int((v > 0).sum()),
                         "area": float(round(w * h * rng.uniform(0.5, 0.9), 1)),
                         "bbox": [round(x, 1), round(y, 1), round(w, 1), round(h, 1)],
                         "iscrowd": int(rng.random() < 0.02)})
            aid += 1
            people.append((x, y, w, h))
        for _ in range(dets_per_image):
            if people and rng.random() < 0.6:
                x, y, w, h = people[int(rng.integers(0, len(people)))]
                x, y = x + rng.normal(0, 5), y + rng.normal(0, 5)
            else:
                w, h = rng.uniform(20, 200), rng.uniform(40, 300)
                x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            kx = np.round(x + rng.uniform(0, w, K), 1)
            ky = np.round(y + rng.uniform(0, h, K), 1)
            results.append({"image_id": img_id, "category_id": 1,
                            "keypoints": np.stack([kx, ky, np.ones(K)], 1).ravel().tolist(),
                            "score": round(float(rng.random()), 3)})
    return ({"images": images, "annotations": anns,
             "categories": [{"id": 1, "name": "person", "supercategory": "person",
                             "keypoints": [f"k{i}" for i in range(K)]}]}, results)


def _prepare(workdir, n, dpi, seed):
    d = os.path.join(workdir, f"keypoints-n{n}-d{dpi}-s{seed}")
    gt, dt = os.path.join(d, "person_keypoints.json"), os.path.join(d, "results.json")
    if not (os.path.exists(gt) and os.path.exists(dt)):
        os.makedirs(d, exist_ok=True)
        inst, res = generate(n, dpi, seed)
        runner.dump_json(inst, gt)
        runner.dump_json(res, dt)
    return d, gt, dt


RUNNERS = {"pycocotools": lambda gt, dt, out: peers.run_pycocotools(gt, dt, out, "keypoints"),
           "fce": lambda gt, dt, out: peers.run_fce(gt, dt, out, "keypoints")}


def add_arguments(ap):
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--dets-per-image", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=runner.default_workdir(MODE))
    ap.add_argument("--python", default=sys.executable)


def run(args):
    os.makedirs(args.workdir, exist_ok=True)
    env = runner.child_env(args.workdir)
    d, gt, dt = runner.in_subprocess(_prepare, args.workdir, args.images, args.dets_per_image,
                                     args.seed)
    print(f"=== keypoints: {args.images} images, {args.dets_per_image} results per image",
          flush=True)
    runner.warm_imports(args.python, env, ["pycocotools.cocoeval", "faster_coco_eval"])
    outs = {k: os.path.join(d, f"out-{k}.json") for k in LABELS}
    cmds = {"deteval": [args.python, "-m", "deteval", "coco", gt, dt, "--iou-type", "keypoints",
                        "--json", outs["deteval"]],
            "fce": runner.runner_cmd(args.python, MODE, "fce", gt, dt, outs["fce"]),
            "pycocotools": runner.runner_cmd(args.python, MODE, "pycocotools", gt, dt,
                                             outs["pycocotools"])}
    return 0 if peers.compare(cmds, outs, d, env, args.repeat, LABELS) else 1
