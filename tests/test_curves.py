"""--curves: pycocotools' precision arrays and best-F1 operating points.

``per_class`` against COCOeval's ``eval["precision"][t, :, k, 0, 2]`` (t = 0 and 5) at 1e-12
on seeded generated cases (crowd regions, ties, more than 100 detections per image, classes
with detections and no ground truth, shuffled image and category order); ``best_f1`` against
a slow reference written here on COCOeval's own ``evalImgs`` (scores exact, the rest at
1e-12); the curves of a run with other parameters (a dedicated pass) equal the default run's.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coco_gen import (generate_case, metric_batches, pycocotools_eval, shuffle_ground_truth,
                      shuffle_results)
from deteval.diagnostics.curves import best_f1
from deteval.diagnostics.run import coco_diagnostics
from deteval.evaluate import evaluate_coco

REPO = Path(__file__).resolve().parents[1]


def curves_of(gt, results, **kw):
    stages = {}
    rep = evaluate_coco(gt, results, stages=stages, **kw)
    d = coco_diagnostics(rep, stages["gt"], stages["det"], stages["matches"],
                         stages["summary"], curves=True).to_dict()
    return d["curves"]


def reference_best_f1(E, cat_id):
    """Best-F1 of one class from COCOeval's evalImgs (area all, max dets 100, IoU 0.5)."""
    pts, n_gt = [], 0
    for e in E.evalImgs:
        if e is None or e["category_id"] != cat_id or list(e["aRng"]) != [0, 1e10]:
            continue
        n_gt += int(np.sum(np.asarray(e["gtIgnore"]) == 0))
        for j, s in enumerate(e["dtScores"]):
            if not e["dtIgnore"][0][j]:
                pts.append((s, e["dtMatches"][0][j] > 0))
    if n_gt == 0 or not pts:
        return None
    best = None
    for s in sorted({p[0] for p in pts}, reverse=True):  # highest score first: ties keep it
        tp = sum(1 for p in pts if p[0] >= s and p[1])
        fp = sum(1 for p in pts if p[0] >= s and not p[1])
        f1 = (2 * tp) / (tp + fp + n_gt)
        if best is None or f1 > best["f1"]:
            best = {"score": s, "precision": tp / (tp + fp), "recall": tp / n_gt, "f1": f1}
    return best


def check_against_pycocotools(gt, results):
    pytest.importorskip("pycocotools")
    if not results:
        return
    got = curves_of(gt, results)
    E = pycocotools_eval(gt, results)
    cat_ids = sorted(c["id"] for c in gt["categories"])
    names = {c["id"]: c["name"] for c in gt["categories"]}
    assert got["recall"] == np.linspace(0, 1, 101).tolist()
    for iou, t in (("0.5", 0), ("0.75", 5)):
        block = got["iou"][iou]
        defined = []
        for k, cid in enumerate(cat_ids):
            ref = E.eval["precision"][t, :, k, 0, 2]
            mine = block["per_class"][names[cid]]
            if (ref == -1).all():
                assert mine is None
                continue
            assert mine is not None and len(mine) == 101
            np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-12)
            defined.append(ref)
        if not defined:
            assert block["mean"] is None
        else:
            ref_mean = [float(np.mean(np.array([d[r] for d in defined]))) for r in range(101)]
            np.testing.assert_allclose(block["mean"], ref_mean, rtol=0, atol=1e-12)
            # its average over r is the AP50 / AP75 stat
            p = E.eval["precision"][t, :, :, 0, 2]
            assert abs(np.mean(block["mean"]) - np.mean(p[p > -1])) <= 1e-12
    for cid in cat_ids:
        ref = reference_best_f1(E, cid)
        mine = got["best_f1"][names[cid]]
        if ref is None:
            assert mine is None
            continue
        assert mine["score"] == ref["score"]  # exact
        for key in ("precision", "recall", "f1"):
            assert abs(mine[key] - ref[key]) <= 1e-12


@pytest.mark.parametrize("seed", range(30))
def test_equals_pycocotools_on_generated_cases(seed):
    case = generate_case(seed)
    check_against_pycocotools(case.gt, case.results)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 300))
def test_equals_pycocotools_sweep(seed):
    case = generate_case(seed)
    check_against_pycocotools(case.gt, case.results)


@pytest.mark.parametrize("seed", range(5))
def test_shuffled_order(seed):
    case = generate_case(200 + seed)
    check_against_pycocotools(shuffle_ground_truth(case.gt, seed),
                              shuffle_results(case.results, seed))


@pytest.mark.parametrize("seed", [1, 7, 19])
def test_other_parameters_take_a_dedicated_pass_with_the_same_curves(seed):
    case = generate_case(seed)
    if not case.results:
        pytest.skip("no results")
    default = curves_of(case.gt, case.results)
    other = curves_of(case.gt, case.results, iou_thresholds=[0.6, 0.8], max_dets=[1, 10],
                      area_ranges={"small": (0, 32 ** 2)})
    assert other == default


def test_best_f1_hand_case():
    # class 0: scores 0.9 TP, 0.8 FP, 0.8 TP, 0.5 TP, 0.4 FP; nGT 4
    #   s=0.9: TP1 FP0 f1=2/5; s=0.8: TP2 FP1 f1=4/7; s=0.5: TP3 FP1 f1=6/8; s=0.4: 6/9
    # class 1: only FPs -> its top score and zeros; class 2: nGT 0 -> undefined
    # class 3: tie of F1 between two thresholds -> the higher score
    #   0.7 TP (f1 2/3 with nGT 2), 0.6 FP, 0.5 FP (f1 2/5), ... 0.3 TP: TP2 FP2 f1 4/6
    cls = np.array([0, 0, 0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    sc = np.array([0.9, 0.8, 0.8, 0.5, 0.4, 0.6, 0.2, 0.9, 0.7, 0.6, 0.5, 0.3])
    tp = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 1], dtype=bool)
    b = best_f1(cls, sc, tp, np.array([4, 3, 0, 2]))
    assert b.defined.tolist() == [True, True, False, True]
    assert b.score[0] == 0.5 and b.f1[0] == 6 / 8 and b.precision[0] == 3 / 4
    assert b.recall[0] == 3 / 4
    assert b.score[1] == 0.6 and b.f1[1] == 0 and b.precision[1] == 0 and b.recall[1] == 0
    assert b.score[3] == 0.7 and b.f1[3] == 2 / 3


def test_cli_curves_report(tmp_path):
    case = generate_case(3)
    g, r, out = tmp_path / "gt.json", tmp_path / "res.json", tmp_path / "o.json"
    g.write_text(json.dumps(case.gt))
    r.write_text(json.dumps(case.results))
    proc = subprocess.run([sys.executable, "-m", "deteval", "coco", g, r, "--curves",
                           "--json", out], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    assert set(rep["curves"]) == {"recall", "iou", "best_f1"}
    assert set(rep["curves"]["iou"]) == {"0.5", "0.75"}
    names = [c["name"] for c in case.gt["categories"]]
    assert set(rep["curves"]["best_f1"]) == set(names)
    assert set(rep["curves"]["iou"]["0.5"]["per_class"]) == set(names)
    assert rep["curves"] == curves_of(case.gt, case.results)
    assert "best-F1" in proc.stdout


def test_streaming_metric_curves_equal_the_cli():
    import deteval
    case = generate_case(21)
    gt = case.gt
    metric = deteval.MeanAveragePrecision("coco", box_format="xywh",
                                          class_names={c["id"]: c["name"]
                                                       for c in gt["categories"]})
    ids, preds, targets = metric_batches(gt, case.results)
    metric.update(preds, targets, image_ids=ids)
    assert metric.compute(curves=True).to_dict()["curves"] == curves_of(gt, case.results)
    voc = deteval.MeanAveragePrecision("voc12")
    with pytest.raises(ValueError, match="curves"):
        voc.compute(curves=True)
