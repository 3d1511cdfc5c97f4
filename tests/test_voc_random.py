"""Randomized differential tests: deteval.evaluate_voc against tests/voc_oracle.py.

Generated cases stress the rules that are easy to get subtly wrong: tied scores, IoUs of
exactly 0.5 / 0.75 (integer and binary-fraction boxes built to hit the ratio exactly),
difficult objects (and missing <difficult> tags), duplicate detections, float coordinates,
images without GT, detection files for classes without GT, empty detection files.

A seeded subset runs by default; the full sweep is ``pytest -m slow``.
Comparison: tp/fp/counts and per-class AP exactly (the rules fix every summation order);
mAP to 1e-12 (the order of the mean is not specified).
"""

import random

import numpy as np
import pytest

import deteval

try:
    import voc_oracle as oracle
except ImportError:  # tests/ made a package by someone else
    from tests import voc_oracle as oracle

TOL = 1e-12
CONFIGS = [(m, c) for m in ("voc07", "voc12") for c in ("devkit", "detectron2")]
GT_CLASSES = ["bird", "car", "cat", "dog"]
EXTRA_CLASSES = ["zebra"]  # detections only, never in GT
TIE_SCORES = [0.1, 0.3, 0.5, 0.7, 0.9]
FRACTIONS = [0.25, 0.5, 0.75]


def _box(rng, floats):
    x1 = rng.randint(1, 40)
    y1 = rng.randint(1, 40)
    w = rng.randint(1, 24)
    h = rng.randint(1, 24)
    x2, y2 = x1 + w - 1, y1 + h - 1
    if floats:
        mode = rng.random()
        if mode < 0.5:  # binary fractions: arithmetic stays exact
            x1 += rng.choice(FRACTIONS)
            y2 += rng.choice(FRACTIONS)
        else:  # arbitrary decimals
            x1 = round(x1 + rng.random(), 2)
            y1 = round(y1 + rng.random(), 3)
            x2 = round(x2 + rng.random(), 1)
    return [x1, y1, max(x1, x2), max(y1, y2)]


def _exact_ratio_box(rng, g, threshold):
    """A box whose IoU with g is exactly 0.5 (or 0.75) by construction, or None."""
    x1, y1, x2, y2 = g
    w = x2 - x1 + 1
    h = y2 - y1 + 1
    choices = []
    # contained: keep the width, cut the height to h/2 (IoU .5) or 3h/4 (IoU .75)
    choices.append([x1, y1, x2, y1 + h / 2 - 1])
    choices.append([x1, y1 + h / 4, x2, y2])  # 3h/4 high, at the bottom -> .75
    # shifted by s = w/3 horizontally: inter 2s*h, union 4s*h -> .5
    choices.append([x1 + w / 3, y1, x2 + w / 3, y2])
    b = rng.choice(choices)
    if b[2] < b[0] or b[3] < b[1]:  # deteval rejects xmax < xmin (e.g. 3h/4 of a 1-px box)
        b = list(g)
    # keep integer boxes integer when the division was exact
    return [int(v) if float(v).is_integer() else v for v in b]


def make_case(seed, *, unique_scores=False, allow_floats=True):
    rng = random.Random(seed)
    n_images = rng.randint(1, 5)
    images = [f"{rng.choice(['img', '2007_', 'x'])}{i:03d}" for i in rng.sample(range(1000),
                                                                                  n_images)]
    classes = rng.sample(GT_CLASSES, rng.randint(1, 3))
    floats = allow_floats and rng.random() < 0.3
    gt = []
    for img in images:
        if rng.random() < 0.2:
            continue  # image without GT
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            diff = None if r < 0.1 else (True if r < 0.3 else False)
            gt.append((img, rng.choice(classes), *_box(rng, floats), diff))
    threshold = rng.choice([0.5, 0.5, 0.5, 0.75, 0.3])
    det_classes = list(classes)
    if rng.random() < 0.3:
        det_classes.append(rng.choice(EXTRA_CLASSES))
    dets = []
    empty = []
    used_scores = set()

    def score():
        if unique_scores:
            while True:
                s = round(rng.random(), 6)
                if s not in used_scores:
                    used_scores.add(s)
                    return s
        if rng.random() < 0.5:
            return rng.choice(TIE_SCORES)
        return round(rng.random(), rng.choice([2, 6]))

    for cls in det_classes:
        # > 16 detections so that np.argsort leaves insertion sort and really permutes ties
        n = rng.randint(17, 40) if rng.random() < 0.2 else rng.randint(0, 8)
        if n == 0 and rng.random() < 0.5:
            empty.append(cls)  # empty file; otherwise no file at all
            continue
        cls_gt = [g for g in gt if g[1] == cls]
        mine = []
        for _ in range(n):
            kind = rng.random()
            if cls_gt and kind < 0.35:  # on (or jittered from) a GT
                g = rng.choice(cls_gt)
                b = list(g[2:6])
                if rng.random() < 0.5:
                    b = [b[0] + rng.randint(-2, 2), b[1] + rng.randint(-2, 2),
                         b[2] + rng.randint(-2, 2), b[3] + rng.randint(-2, 2)]
                    if b[2] < b[0] or b[3] < b[1]:
                        b = list(g[2:6])
                mine.append((g[0], cls, score(), *b))
            elif cls_gt and kind < 0.6:  # IoU exactly at 0.5 / 0.75
                g = rng.choice(cls_gt)
                mine.append((g[0], cls, score(), *_exact_ratio_box(rng, g[2:6], threshold)))
            elif mine and kind < 0.75:  # duplicate of an earlier detection's box
                d = rng.choice(mine)
                mine.append((d[0], cls, score(), *d[3:7]))
            else:
                mine.append((rng.choice(images), cls, score(), *_box(rng, floats)))
        dets.extend(mine)
    # random line order; the writer keeps list order inside each class's file, and that
    # file order is what the tie-breaking rules (stable sort / np.argsort) see
    rng.shuffle(dets)
    explicit = None
    if rng.random() < 0.15:
        explicit = sorted(set(rng.sample(classes, 1) + det_classes[-1:]))
    return {"gt": gt, "dets": dets, "images": images, "empty": empty,
            "threshold": threshold, "classes": explicit, "sep": rng.choice([" ", "\t", "  "])}


def _write(tmp_path, writer, case, name="case"):
    return writer(tmp_path / name, case["gt"], case["dets"], images=case["images"],
                  empty_det_classes=case["empty"], sep=case["sep"])


def _oracle_gt(gt):
    return [g[:6] + (bool(g[6]),) for g in gt]


def _compare(d, o, metric, where):
    by = {c["name"]: c for c in d["classes"]}
    assert [c["name"] for c in d["classes"]] == sorted(o["classes"]), where
    for name, oc in o["classes"].items():
        c = by[name]
        got = tuple(c[k] for k in ("num_gt", "num_difficult", "num_detections", "tp", "fp"))
        want = tuple(oc[k] for k in ("num_gt", "num_difficult", "num_detections", "tp", "fp"))
        assert got == want, (where, name)
        if oc["ap"] is None:
            assert c["ap"] is None, (where, name)
        else:
            # bit-exact: the rules fix every summation order (11-point: ap += p/11 in grid
            # order; all-point: left to right for devkit, np.sum for detectron2)
            assert c["ap"] == oc["ap"], (where, name, c["ap"], oc["ap"])
    if o["mAP"] is None:
        assert d["mAP"] is None, where
    else:
        assert abs(d["mAP"] - o["mAP"]) <= TOL, (where, d["mAP"], o["mAP"])


def check_case(seed, tmp_path, writer):
    case = make_case(seed)
    ann, res = _write(tmp_path, writer, case)
    gt = _oracle_gt(case["gt"])
    for metric, compat in CONFIGS:
        kw = dict(metric=metric, compat=compat, iou_threshold=case["threshold"],
                  classes=case["classes"])
        d = deteval.evaluate_voc(str(ann), str(res), **kw).to_dict()
        o = oracle.evaluate(gt, case["dets"], **kw)
        _compare(d, o, metric, (seed, metric, compat))


DEFAULT_SEEDS = list(range(60))


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_vs_oracle(seed, tmp_path, voc_case_writer):
    check_case(seed, tmp_path, voc_case_writer)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(20))
def test_random_vs_oracle_full(block, tmp_path, voc_case_writer):
    for seed in range(1000 + block * 50, 1000 + (block + 1) * 50):
        check_case(seed, tmp_path / str(seed), voc_case_writer)


def test_generator_hits_the_hard_cases():
    """The generator really produces ties, exact-threshold IoUs, difficult hits, etc."""
    ties = at_thr = diff_hits = floats = empty_imgs = extra = unstable = 0
    for seed in DEFAULT_SEEDS:
        case = make_case(seed)
        gt = _oracle_gt(case["gt"])
        for cls in {d[1] for d in case["dets"]}:
            s = [d[2] for d in case["dets"] if d[1] == cls]
            ties += len(s) != len(set(s))
            unstable += oracle.sort_order(s, "detectron2") != oracle.sort_order(s, "devkit")
            at_thr += oracle.count_ious_equal(gt, case["dets"], cls, case["threshold"])
        diff_hits += sum(1 for g in gt if g[6])
        floats += any(isinstance(v, float) for g in gt for v in g[2:6])
        empty_imgs += len(set(case["images"]) - {g[0] for g in gt})
        extra += any(d[1] in EXTRA_CLASSES for d in case["dets"])
    assert min(ties, at_thr, diff_hits, floats, empty_imgs, extra, unstable) >= 5, \
        (ties, at_thr, diff_hits, floats, empty_imgs, extra, unstable)


# ------------------------------------------------------------------- properties

def _run(ann, res, **kw):
    return deteval.evaluate_voc(str(ann), str(res), **kw).to_dict()


def _aps(d):
    return {c["name"]: c["ap"] for c in d["classes"]}


@pytest.mark.parametrize("seed", range(10))
def test_permuting_images_and_untied_lines_changes_nothing(seed, tmp_path, voc_case_writer):
    # All scores distinct: renaming the images (so the XML files sort differently) and
    # shuffling the detection lines must give bit-identical results, both compats.
    case = make_case(500 + seed, unique_scores=True)
    rng = random.Random(seed)
    ann, res = _write(tmp_path, voc_case_writer, case, "orig")
    new_names = [f"p{i:03d}" for i in range(len(case["images"]))]
    rng.shuffle(new_names)
    ren = dict(zip(case["images"], new_names))
    perm = dict(case)
    perm["images"] = [ren[i] for i in case["images"]]
    perm["gt"] = [(ren[g[0]],) + tuple(g[1:]) for g in case["gt"]]  # XML order kept
    perm["dets"] = [(ren[d[0]],) + tuple(d[1:]) for d in case["dets"]]
    rng.shuffle(perm["dets"])
    ann2, res2 = _write(tmp_path, voc_case_writer, perm, "perm")
    for metric, compat in CONFIGS:
        kw = dict(metric=metric, compat=compat, iou_threshold=case["threshold"],
                  classes=case["classes"])
        a, b = _run(ann, res, **kw), _run(ann2, res2, **kw)
        keys = ("name", "ap", "num_gt", "num_difficult", "num_detections", "tp", "fp")
        assert [{k: c[k] for k in keys} for c in a["classes"]] == \
            [{k: c[k] for k in keys} for c in b["classes"]], (metric, compat)
        assert a["mAP"] == b["mAP"]


@pytest.mark.parametrize("seed", range(10))
def test_perfect_detector_scores_one(seed, tmp_path, voc_case_writer):
    # Non-overlapping GT (one per 50-px cell), difficult ones included; one exact detection
    # per non-difficult GT, tied scores allowed.  voc12 -> 1 (to 1e-12), voc07 -> 11/11.
    rng = random.Random(seed)
    gt, dets = [], []
    images = [f"im{i}" for i in range(rng.randint(1, 4))]
    for img in images:
        for cell in rng.sample(range(16), rng.randint(0, 5)):
            cx, cy = 1 + 50 * (cell % 4), 1 + 50 * (cell // 4)
            b = [cx, cy, cx + rng.randint(0, 40), cy + rng.randint(0, 40)]
            if rng.random() < 0.3 and b[2] > b[0]:
                b[0] += 0.5
            g = (img, rng.choice(["cat", "dog"]), *b, rng.random() < 0.2)
            gt.append(g)
            if not g[6]:
                dets.append((img, g[1], rng.choice([0.2, 0.5, 0.8, rng.random()]), *b))
    if not any(not g[6] for g in gt):
        gt.append((images[0], "cat", 300, 300, 320, 320, False))
        dets.append((images[0], "cat", 0.9, 300, 300, 320, 320))
    rng.shuffle(dets)
    ann, res = voc_case_writer(tmp_path, gt, dets, images=images)
    for compat in ("devkit", "detectron2"):
        d12 = _run(ann, res, metric="voc12", compat=compat)
        d07 = _run(ann, res, metric="voc07", compat=compat)
        for c in d12["classes"]:
            if c["num_gt"]:
                assert abs(c["ap"] - 1.0) <= TOL and c["fp"] == 0
        for c in d07["classes"]:
            if c["num_gt"]:
                assert c["ap"] == 1.0000000000000002


@pytest.mark.parametrize("seed", range(15))
def test_low_scored_extra_detection(seed, tmp_path, voc_case_writer):
    # Appending a detection scored below all others: if it is not a TP the AP of every
    # class stays exactly the same (it can never rise); if it is a TP the AP cannot drop.
    # devkit with ties; detectron2 only with distinct scores (np.argsort of a longer array
    # may reorder tied groups).
    for compat in ("devkit", "detectron2"):
        s = 2000 + seed
        while not make_case(s)["gt"]:
            s += 100
        case = make_case(s, unique_scores=(compat == "detectron2"))
        cls = sorted({g[1] for g in case["gt"]})[0]
        rng = random.Random(seed)
        low = min([d[2] for d in case["dets"]] + [1.0]) / 2
        cls_gt = [g for g in case["gt"] if g[1] == cls]
        if rng.random() < 0.5 and cls_gt:
            g = rng.choice(cls_gt)
            extra = (g[0], cls, low, *g[2:6])
        else:
            extra = (rng.choice(case["images"]), cls, low, *_box(rng, False))
        more = dict(case)
        more["dets"] = case["dets"] + [extra]
        more["empty"] = [c for c in case["empty"] if c != cls]
        ann, res = _write(tmp_path, voc_case_writer, case, f"a{compat}")
        ann2, res2 = _write(tmp_path, voc_case_writer, more, f"b{compat}")
        for metric in ("voc07", "voc12"):
            kw = dict(metric=metric, compat=compat, iou_threshold=case["threshold"])
            a = {c["name"]: c for c in _run(ann, res, **kw)["classes"]}
            b = {c["name"]: c for c in _run(ann2, res2, **kw)["classes"]}
            assert b[cls]["num_detections"] == a[cls]["num_detections"] + 1
            for name in a:
                if name != cls or a[name]["ap"] is None:
                    assert a[name]["ap"] == b[name]["ap"]
                elif b[cls]["tp"] == a[cls]["tp"]:
                    assert b[cls]["ap"] == a[cls]["ap"], (metric, compat)
                else:
                    assert b[cls]["ap"] >= a[cls]["ap"] - TOL, (metric, compat)
