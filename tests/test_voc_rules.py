"""Hand-built VOC cases, one or more per rule of docs/semantics.md sections 1 and 2.

Boxes are (x1, y1, x2, y2), 1-based inclusive (area = (x2-x1+1)*(y2-y1+1)).
Expected values are derived by hand in the comments; ``_acc`` reproduces the 11-point
accumulation ``ap += p/11`` term by term so that float results can be compared exactly.
"""

import math

import numpy as np
import pytest

import deteval

try:
    import voc_oracle as oracle
except ImportError:  # tests/ made a package by someone else
    from tests import voc_oracle as oracle

TOL = 1e-12
COMPATS = ["devkit", "detectron2"]


def _acc(ps):
    """11-point AP from the 11 per-grid-point precisions, accumulated like the devkit."""
    assert len(ps) == 11
    ap = 0.0
    for p in ps:
        ap = ap + p / 11
    return ap


@pytest.fixture
def run(tmp_path, voc_case_writer):
    """run(gt, dets, **evaluate_voc kwargs) -> (to_dict(), {name: class dict}).

    Also checks every figure against the oracle (same rules, written independently)."""
    counter = [0]

    def _run(gt, dets, *, images=None, empty_det_classes=(), check_oracle=True, **kw):
        counter[0] += 1
        root = tmp_path / f"case{counter[0]}"
        ann, res = voc_case_writer(root, gt, dets, images=images,
                                   empty_det_classes=empty_det_classes)
        d = deteval.evaluate_voc(str(ann), str(res), **kw).to_dict()
        by = {c["name"]: c for c in d["classes"]}
        if check_oracle:
            o = oracle.evaluate(
                [(g[0], g[1], *g[2:6], g[6] if not isinstance(g[6], str) else g[6].strip() == "1")
                 for g in gt],
                dets, metric=kw.get("metric", "voc12"), iou_threshold=kw.get("iou_threshold", 0.5),
                compat=kw.get("compat", "devkit"), classes=kw.get("classes"))
            assert sorted(by) == sorted(o["classes"])
            for name, oc in o["classes"].items():
                c = by[name]
                for k in ("num_gt", "num_difficult", "num_detections", "tp", "fp"):
                    assert c[k] == oc[k], (name, k)
                if oc["ap"] is None:
                    assert c["ap"] is None, name
                else:
                    assert c["ap"] == pytest.approx(oc["ap"], abs=TOL, rel=0), name
        return d, by

    return _run


# ---------------------------------------------------------------- rule 3/5: threshold

@pytest.mark.parametrize("compat", COMPATS)
def test_iou_exactly_half(run, compat):
    # GT (1,1,10,10): area 10*10 = 100.  Det (1,1,10,5): area 10*5 = 50, inside the GT:
    # inter 50, union 100 + 50 - 50 = 100, IoU = 0.5 exactly.
    # devkit: 0.5 >= 0.5 -> TP; detectron2: 0.5 > 0.5 is false -> FP.
    gt = [("a", "cat", 1, 1, 10, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 5)]
    for metric in ("voc07", "voc12"):
        d, by = run(gt, dets, metric=metric, compat=compat)
        c = by["cat"]
        if compat == "devkit":
            assert (c["tp"], c["fp"]) == (1, 0)
            assert c["ap"] == (1.0000000000000002 if metric == "voc07" else 1.0)
        else:
            assert (c["tp"], c["fp"]) == (0, 1)
            assert c["ap"] == 0.0


@pytest.mark.parametrize("compat", COMPATS)
def test_iou_exactly_at_custom_threshold(run, compat):
    # GT (1,1,4,4): area 16.  Det (1,1,4,3): area 12 inside it -> IoU 12/16 = 0.75 exactly.
    gt = [("a", "cat", 1, 1, 4, 4, False)]
    dets = [("a", "cat", 0.9, 1, 1, 4, 3)]
    d, by = run(gt, dets, metric="voc12", compat=compat, iou_threshold=0.75)
    assert d["iou_threshold"] == 0.75
    assert by["cat"]["tp"] == (1 if compat == "devkit" else 0)
    assert by["cat"]["ap"] == (1.0 if compat == "devkit" else 0.0)


@pytest.mark.parametrize("compat", COMPATS)
def test_plus_one_convention(run, compat):
    # GT (1,1,10,10): area 100.  Det (1,1,10,6): area 60 inside -> IoU 0.6 with the +1.
    # Without the +1: GT 9*9 = 81, det 9*5 = 45 -> 0.556, also TP; so use threshold 0.58:
    # +1 gives 0.6 >= 0.58 (TP), no +1 gives 0.556 (FP).
    gt = [("a", "cat", 1, 1, 10, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 6)]
    d, by = run(gt, dets, metric="voc12", compat=compat, iou_threshold=0.58)
    assert (by["cat"]["tp"], by["cat"]["ap"]) == (1, 1.0)
    # Touching boxes: det (11,1,20,10) shares no pixel column with (1,1,10,10):
    # iw = 10 - 11 + 1 = 0 -> no overlap -> FP even at a tiny threshold.
    d, by = run(gt, [("a", "cat", 0.9, 11, 1, 20, 10)], metric="voc12", compat=compat,
                iou_threshold=0.01)
    assert (by["cat"]["tp"], by["cat"]["fp"], by["cat"]["ap"]) == (0, 1, 0.0)
    # One shared pixel column: det (10,1,19,10): iw = 10-10+1 = 1, inter 10, union 190
    # -> IoU 0.0526 >= 0.05 -> TP.
    d, by = run(gt, [("a", "cat", 0.9, 10, 1, 19, 10)], metric="voc12", compat=compat,
                iou_threshold=0.05)
    assert (by["cat"]["tp"], by["cat"]["ap"]) == (1, 1.0)


# ---------------------------------------------------------------------- rule 2: order

def test_tied_scores_stable_file_order_devkit(run):
    # One GT in image a.  File order: D1 (image b, no GT -> FP), D2 (exact on the GT -> TP),
    # both scored 0.8.  Stable sort keeps D1 first: flags FP, TP.
    # rec = [0, 1], prec = [0, 1/2].
    # voc12: mrec [0,0,1,1], envelope [.5,.5,.5,0]; recall changes once: 1 * 0.5 = 0.5.
    # voc07: every t has p = 0.5 -> 11 terms of 0.5/11.
    gt = [("a", "cat", 1, 1, 10, 10, False)]
    d1 = ("b", "cat", 0.8, 1, 1, 10, 10)
    d2 = ("a", "cat", 0.8, 1, 1, 10, 10)
    _, by = run(gt, [d1, d2], metric="voc12", images=["a", "b"])
    assert by["cat"]["ap"] == 0.5
    _, by = run(gt, [d1, d2], metric="voc07", images=["a", "b"])
    assert by["cat"]["ap"] == _acc([0.5] * 11)
    # reversed file order: TP first -> perfect
    _, by = run(gt, [d2, d1], metric="voc12", images=["a", "b"])
    assert by["cat"]["ap"] == 1.0
    _, by = run(gt, [d2, d1], metric="voc07", images=["a", "b"])
    assert by["cat"]["ap"] == 1.0000000000000002


@pytest.mark.parametrize("compat", COMPATS)
def test_tied_scores_large_group(run, compat):
    # 20 detections in file order; indices 0, 5, 10, 15 score 0.9, the rest 0.5 / 0.1.
    # One GT in image a; only detection 15 is on it, all others are in image b (FP).
    # The 0.9 group ranks first; AP (voc12) = precision at the TP = 1/k, k = rank of det 15.
    # devkit (stable): det 15 is 4th of the group -> AP 1/4.
    # detectron2: k from np.argsort(-confidence) (quicksort; on AVX-512 builds this group
    # comes out as 0, 5, 15, 10, giving 1/3).
    scores = [0.9, 0.5, 0.5, 0.5, 0.1] * 4
    gt = [("a", "cat", 1, 1, 10, 10, False)]
    dets = [("a" if i == 15 else "b", "cat", s, 1, 1, 10, 10) for i, s in enumerate(scores)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    if compat == "devkit":
        k = 4
    else:
        order = [int(i) for i in np.argsort(-np.array(scores))]
        k = order.index(15) + 1
    assert by["cat"]["ap"] == 1.0 / k
    assert (by["cat"]["tp"], by["cat"]["fp"]) == (1, 19)


# ------------------------------------------------------------------ rule 4/5: best GT

@pytest.mark.parametrize("compat", COMPATS)
def test_duplicate_no_fallback_to_free_second_gt(run, compat):
    # G1 (1,1,10,10) and G2 (3,1,12,10), both 10x10.
    # D1 0.9 (1,1,10,10): IoU(G1) = 1 -> TP, claims G1.
    # D2 0.8 (1,1,11,10) (11x10 = 110): IoU(G1) = 100/110 = .909, IoU(G2) = 90/120 = .75.
    #   Best is G1, already claimed -> FP, even though G2 (>= 0.5) is free.
    # npos 2: rec [.5,.5], prec [1,.5].
    # voc12: .5 * 1 + .5 * 0 = 0.5 (a fallback would give 2 TPs and AP 1).
    # voc07: t = 0 .. 0.5 -> p = 1 (6 points), t >= 0.6 -> 0.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "cat", 3, 1, 12, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("a", "cat", 0.8, 1, 1, 11, 10)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    assert (by["cat"]["tp"], by["cat"]["fp"], by["cat"]["ap"]) == (1, 1, 0.5)
    _, by = run(gt, dets, metric="voc07", compat=compat)
    assert by["cat"]["ap"] == _acc([1.0] * 6 + [0.0] * 5)


@pytest.mark.parametrize("compat", COMPATS)
def test_equal_iou_first_gt_wins(run, compat):
    # G1 (1,1,10,10), G2 (3,1,12,10).  D1 0.9 (2,1,11,10): inter 9*10 = 90 with both,
    # union 110 with both -> equal IoU .818; strict '>' keeps the first GT (G1) -> TP on G1.
    # D2 0.8 (1,1,10,10): IoU(G1) = 1 (claimed), IoU(G2) = 80/120 -> best G1 -> FP.
    # Had D1 taken G2, D2 would be a TP.  tp 1, fp 1, AP (voc12) 0.5.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "cat", 3, 1, 12, 10, False)]
    dets = [("a", "cat", 0.9, 2, 1, 11, 10), ("a", "cat", 0.8, 1, 1, 10, 10)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    assert (by["cat"]["tp"], by["cat"]["fp"], by["cat"]["ap"]) == (1, 1, 0.5)
    # GT order swapped in the XML: now the first GT is (3,1,12,10) -> D1 claims it and D2
    # gets (1,1,10,10): 2 TPs.
    _, by = run(gt[::-1], dets, metric="voc12", compat=compat)
    assert (by["cat"]["tp"], by["cat"]["fp"], by["cat"]["ap"]) == (2, 0, 1.0)


@pytest.mark.parametrize("compat", COMPATS)
def test_best_gt_difficult_is_ignored(run, compat):
    # G1 difficult (1,1,10,10), G2 (3,1,12,10), G3 (50,50,60,60).  npos 2, 1 difficult.
    # D1 0.9 (1,1,10,10): best G1 (IoU 1, difficult) -> ignored; no fallback to G2
    #   (IoU 80/120 = .667 >= .5, free).
    # D2 0.8 (50,50,60,60): TP on G3.
    # D3 0.7 (100,100,110,110): no overlap -> FP.
    # cum tp [0,1,1], fp [0,0,1]; rec [0,.5,.5]; prec [NaN (devkit) / 0 (detectron2), 1, .5].
    # voc12: envelope at recall .5 is 1 -> .5 * 1 = 0.5.
    # voc07: t = 0 .. 0.5 -> 1, t >= 0.6 -> 0 (6 points).
    gt = [("a", "cat", 1, 1, 10, 10, True), ("a", "cat", 3, 1, 12, 10, False),
          ("a", "cat", 50, 50, 60, 60, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("a", "cat", 0.8, 50, 50, 60, 60),
            ("a", "cat", 0.7, 100, 100, 110, 110)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    c = by["cat"]
    assert (c["num_gt"], c["num_difficult"], c["num_detections"]) == (2, 1, 3)
    assert (c["tp"], c["fp"], c["ap"]) == (1, 1, 0.5)
    _, by = run(gt, dets, metric="voc07", compat=compat)
    assert by["cat"]["ap"] == _acc([1.0] * 6 + [0.0] * 5)


@pytest.mark.parametrize("compat", COMPATS)
def test_difficult_below_threshold_is_fp(run, compat):
    # A detection whose best GT is difficult but with IoU < 0.5 is an FP, not ignored.
    # G difficult (1,1,10,10); det (1,1,10,3): IoU 30/100 = .3 -> FP.
    # Plus a normal GT (50,50,60,60) found by a lower-scored det: flags FP, TP.
    # rec [0, 1], prec [0, .5] -> voc12 0.5.
    gt = [("a", "cat", 1, 1, 10, 10, True), ("a", "cat", 50, 50, 60, 60, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 3), ("a", "cat", 0.8, 50, 50, 60, 60)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    assert (by["cat"]["tp"], by["cat"]["fp"], by["cat"]["ap"]) == (1, 1, 0.5)


# ---------------------------------------------------------- rule 1: difficult parsing

@pytest.mark.parametrize("compat", COMPATS)
def test_difficult_tag_parsing(run, compat):
    # difficult iff the trimmed text of <difficult> is exactly "1".
    # Each class has one GT, found exactly by one detection.
    cases = {"missing": None, "empty": "", "zero": "0", "one": "1", "spaced": "  1\n ",
             "word": "true"}
    difficult = {"missing": False, "empty": False, "zero": False, "one": True,
                 "spaced": True, "word": False}
    gt = [("a", name, 1, 1, 10, 10, tag) for name, tag in cases.items()]
    dets = [("a", name, 0.9, 1, 1, 10, 10) for name in cases]
    d, by = run(gt, dets, metric="voc12", compat=compat)
    for name, diff in difficult.items():
        c = by[name]
        if diff:
            # only a difficult GT: ap undefined, detection ignored
            assert (c["num_gt"], c["num_difficult"], c["ap"], c["tp"], c["fp"]) == \
                (0, 1, None, 0, 0), name
        else:
            assert (c["num_gt"], c["num_difficult"], c["ap"], c["tp"]) == (1, 0, 1.0, 1), name
    assert d["mAP"] == 1.0  # 4 classes at 1.0, the 2 undefined ones left out


# ------------------------------------------------------------- rule 6: NaN precision

@pytest.mark.parametrize("compat", COMPATS)
def test_nan_precision_at_top(run, compat):
    # Images a, b: one difficult GT each; c, d: one normal GT each; e: no GT.  npos 2.
    # D1 .9 a (ignored), D2 .8 b (ignored), D3 .7 c (TP), D4 .6 e (FP), D5 .5 d (TP).
    # cum tp [0,0,1,1,2], fp [0,0,0,1,1]; rec [0,0,.5,.5,1]
    # prec devkit [NaN,NaN,1,.5,2/3] (detectron2: 0, 0 via eps; same envelope).
    # voc12: envelope [1,1,1,1,2/3,2/3,0] over mrec [0,0,0,.5,.5,1,1]
    #        -> .5*1 + .5*(2/3) = 0.8333...
    # voc07: t=0 -> max(1,.5,2/3) = 1; t=.1...5 -> 1; t=.6..1 -> 2/3.
    box = (1, 1, 10, 10)
    gt = [("a", "cat", *box, True), ("b", "cat", *box, True),
          ("c", "cat", *box, False), ("d", "cat", *box, False)]
    dets = [("a", "cat", 0.9, *box), ("b", "cat", 0.8, *box), ("c", "cat", 0.7, *box),
            ("e", "cat", 0.6, *box), ("d", "cat", 0.5, *box)]
    imgs = ["a", "b", "c", "d", "e"]
    _, by = run(gt, dets, metric="voc12", compat=compat, images=imgs)
    c = by["cat"]
    assert (c["num_gt"], c["num_difficult"], c["tp"], c["fp"]) == (2, 2, 2, 1)
    assert c["ap"] == pytest.approx(0.5 + 0.5 * (2 / 3), abs=TOL, rel=0)
    assert not math.isnan(c["ap"])
    _, by = run(gt, dets, metric="voc07", compat=compat, images=imgs)
    assert by["cat"]["ap"] == pytest.approx(_acc([1.0] * 6 + [2 / 3] * 5), abs=TOL, rel=0)


@pytest.mark.parametrize("compat", COMPATS)
@pytest.mark.parametrize("metric", ["voc07", "voc12"])
def test_all_detections_ignored(run, compat, metric):
    # Every detection hits a difficult GT, so the devkit's precision is NaN everywhere.
    # voc12: envelope max(NaN, 0) = 0 -> AP 0.  voc07: the devkit literally gives NaN
    # (max of all-NaN at t=0); deteval (decision, see voc_oracle) gives 0.0, like detectron2.
    gt = [("a", "cat", 1, 1, 10, 10, True), ("a", "cat", 50, 50, 60, 60, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10)]
    _, by = run(gt, dets, metric=metric, compat=compat)
    c = by["cat"]
    assert (c["num_gt"], c["tp"], c["fp"]) == (1, 0, 0)
    assert c["ap"] == 0.0


# ------------------------------------------------------------ rule 7: 11-point grid

@pytest.mark.parametrize("compat", COMPATS)
def test_11pt_grid_recall_three_fifths(run, compat):
    # npos 5, three exact TPs and nothing else: rec [.2,.4,.6] (3/5 == 0.6 exactly), prec 1.
    # MATLAB grid (devkit): t = 0 .. 0.6 reached -> 7 points at 1 -> 7/11.
    # numpy grid (detectron2): t6 = 0.6000000000000001 > 0.6 -> 6 points -> 6/11.
    gt = [(f"i{k}", "cat", 1, 1, 10, 10, False) for k in range(5)]
    dets = [(f"i{k}", "cat", 0.9 - k / 10, 1, 1, 10, 10) for k in range(3)]
    _, by = run(gt, dets, metric="voc07", compat=compat)
    n = 7 if compat == "devkit" else 6
    assert by["cat"]["ap"] == _acc([1.0] * n + [0.0] * (11 - n))
    # voc12 is grid-free: .6 * 1
    _, by = run(gt, dets, metric="voc12", compat=compat)
    assert by["cat"]["ap"] == pytest.approx(0.6, abs=TOL, rel=0)


@pytest.mark.parametrize("compat", COMPATS)
def test_11pt_grid_recall_three_tenths(run, compat):
    # npos 10, three exact TPs: rec [.1,.2,.3]; 3/10 == 0.3 < 0.30000000000000004, which is
    # t3 on BOTH grids, so only t = 0, .1, .2 are reached -> 3/11 under both compats.
    gt = [(f"i{k}", "cat", 1, 1, 10, 10, False) for k in range(10)]
    dets = [(f"i{k}", "cat", 0.9 - k / 10, 1, 1, 10, 10) for k in range(3)]
    _, by = run(gt, dets, metric="voc07", compat=compat)
    assert by["cat"]["ap"] == _acc([1.0] * 3 + [0.0] * 8)


@pytest.mark.parametrize("compat", COMPATS)
def test_11pt_grid_recall_seven_tenths(run, compat):
    # npos 10, seven exact TPs: 7/10 == 0.7 reaches MATLAB's t7 = 0.7 but not numpy's
    # 0.7000000000000001.  devkit: 8 points at 1; detectron2: 7 points.
    gt = [(f"i{k}", "cat", 1, 1, 10, 10, False) for k in range(10)]
    dets = [(f"i{k}", "cat", 0.95 - k / 20, 1, 1, 10, 10) for k in range(7)]
    _, by = run(gt, dets, metric="voc07", compat=compat)
    n = 8 if compat == "devkit" else 7
    assert by["cat"]["ap"] == _acc([1.0] * n + [0.0] * (11 - n))


@pytest.mark.parametrize("compat", COMPATS)
def test_perfect_detector(run, compat):
    # 4 GT over 3 images (one image has 2), each found exactly, distinct scores.
    # voc07: 11 * (1/11) accumulated = 1.0000000000000002; voc12: .25 * 4 = 1.0 exactly.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "cat", 40, 40, 60, 60, False),
          ("b", "cat", 5, 5, 30, 30, False), ("c", "cat", 2, 3, 4, 5, False)]
    dets = [(g[0], "cat", 0.9 - i / 10, *g[2:6]) for i, g in enumerate(gt)]
    _, by = run(gt, dets, metric="voc07", compat=compat)
    assert by["cat"]["ap"] == 1.0000000000000002
    d, by = run(gt, dets, metric="voc12", compat=compat)
    assert by["cat"]["ap"] == 1.0
    assert d["mAP"] == 1.0


# ------------------------------------------------------------------ rule 9: edge cases

@pytest.mark.parametrize("compat", COMPATS)
@pytest.mark.parametrize("metric", ["voc07", "voc12"])
def test_empty_detection_file(run, compat, metric):
    # cat has GT and an empty result file -> AP 0; dog found perfectly -> mAP = (0 + x)/2.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "dog", 20, 20, 30, 30, False)]
    dets = [("a", "dog", 0.9, 20, 20, 30, 30)]
    d, by = run(gt, dets, metric=metric, compat=compat, empty_det_classes=["cat"])
    assert (by["cat"]["ap"], by["cat"]["num_detections"], by["cat"]["num_gt"]) == (0.0, 0, 1)
    one = 1.0000000000000002 if metric == "voc07" else 1.0
    assert by["dog"]["ap"] == one
    assert d["mAP"] == pytest.approx(one / 2, abs=TOL, rel=0)


@pytest.mark.parametrize("compat", COMPATS)
def test_class_with_gt_but_no_file(run, compat):
    # dog has GT but no comp4_det_test_dog.txt at all -> reported with AP 0.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "dog", 20, 20, 30, 30, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10)]
    d, by = run(gt, dets, metric="voc12", compat=compat)
    assert [c["name"] for c in d["classes"]] == ["cat", "dog"]
    assert (by["dog"]["ap"], by["dog"]["num_detections"], by["dog"]["tp"], by["dog"]["fp"]) == \
        (0.0, 0, 0, 0)
    assert d["mAP"] == 0.5


@pytest.mark.parametrize("compat", COMPATS)
def test_class_with_only_difficult_gt(run, compat):
    # bird: one difficult GT only -> npos 0 -> ap None, left out of the mean.
    # Its detection on the difficult object is ignored, its other detection is an FP.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "bird", 20, 20, 30, 30, True)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("a", "bird", 0.9, 20, 20, 30, 30),
            ("a", "bird", 0.8, 60, 60, 70, 70)]
    for metric in ("voc07", "voc12"):
        d, by = run(gt, dets, metric=metric, compat=compat)
        b = by["bird"]
        assert (b["ap"], b["num_gt"], b["num_difficult"], b["num_detections"], b["tp"],
                b["fp"]) == (None, 0, 1, 2, 0, 1)
        assert d["mAP"] == by["cat"]["ap"] == (1.0000000000000002 if metric == "voc07" else 1.0)


def test_no_class_with_positive_gt_gives_undefined_map(run):
    gt = [("a", "bird", 20, 20, 30, 30, True)]
    d, by = run(gt, [], metric="voc12")
    assert by["bird"]["ap"] is None
    assert d["mAP"] is None


def test_classes_argument(run):
    # classes restricts the report and the mean; a listed class with no GT at all has
    # ap None (npos 0), its detections are all FPs.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "dog", 20, 20, 30, 30, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("a", "cow", 0.9, 1, 1, 10, 10)]
    d, by = run(gt, dets, metric="voc12", classes=["cat"])
    assert list(by) == ["cat"] and d["mAP"] == 1.0
    d, by = run(gt, dets, metric="voc12", classes=["cow", "cat"])
    assert [c["name"] for c in d["classes"]] == ["cat", "cow"]
    assert (by["cow"]["ap"], by["cow"]["num_gt"], by["cow"]["fp"]) == (None, 0, 1)
    assert d["mAP"] == 1.0
    # only classes without any GT are requested: every AP undefined, mAP undefined
    d, by = run(gt, dets, metric="voc12", classes=["cow"])
    assert (by["cow"]["ap"], by["cow"]["num_gt"], by["cow"]["fp"]) == (None, 0, 1)
    assert d["mAP"] is None


def test_annotations_without_any_object(run):
    # every XML has no <object>; detections for a requested class are all FPs.
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("b", "cat", 0.8, 1, 1, 10, 10)]
    d, by = run([], dets, metric="voc12", classes=["cat"], images=["a", "b"])
    assert (by["cat"]["ap"], by["cat"]["num_gt"], by["cat"]["tp"], by["cat"]["fp"]) == \
        (None, 0, 0, 2)
    assert d["mAP"] is None


@pytest.mark.parametrize("compat", COMPATS)
def test_float_coordinates(run, compat):
    # Coordinates used as written, +1 still applied, no rounding:
    # a: GT (1,1,10,10.25): 10 x 10.25 = 102.5; det .9 (1,1,10,5): 50 inside -> IoU
    #    50/102.5 = .488 -> FP   (a GT rounded to 10 would give exactly .5, TP for devkit)
    # b: GT (1,1,10,10): 100.
    #    det .8 (1,1,10,4.75): 10 x 4.75 = 47.5 -> .475 -> FP (rounded to 5: .5)
    #    det .7 (1,1,10,5.25): 52.5 -> .525 -> TP          (rounded to 5: .5, FP detectron2)
    # npos 2; flags FP FP TP; rec [0,0,.5], prec [0,0,1/3].
    # voc12: .5 * 1/3; voc07: t = 0 .. .5 -> 1/3, t >= .6 -> 0.
    gt = [("a", "cat", 1, 1, 10, 10.25, False), ("b", "cat", 1, 1, 10, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 5), ("b", "cat", 0.8, 1, 1, 10, 4.75),
            ("b", "cat", 0.7, 1.0, 1.0, 10.0, 5.25)]
    _, by = run(gt, dets, metric="voc12", compat=compat)
    assert (by["cat"]["tp"], by["cat"]["fp"]) == (1, 2)
    assert by["cat"]["ap"] == pytest.approx(0.5 / 3, abs=TOL, rel=0)
    _, by = run(gt, dets, metric="voc07", compat=compat)
    assert by["cat"]["ap"] == pytest.approx(_acc([1 / 3] * 6 + [0.0] * 5), abs=TOL, rel=0)
    # exact half with binary fractions: GT (0.75,0.75,9.75,9.75) 10x10, det (.75,.75,9.75,4.75)
    # 10x5 inside -> 0.5 exactly: devkit TP, detectron2 FP.
    gt = [("a", "cat", 0.75, 0.75, 9.75, 9.75, False)]
    _, by = run(gt, [("a", "cat", 0.9, 0.75, 0.75, 9.75, 4.75)], metric="voc12", compat=compat)
    assert by["cat"]["tp"] == (1 if compat == "devkit" else 0)


def test_imageset_restricts_gt(tmp_path, voc_case_writer):
    # Two images with one cat each; the image set lists only 'a': npos 1, AP 1.
    gt = [("a", "cat", 1, 1, 10, 10, False), ("b", "cat", 1, 1, 10, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10)]
    ann, res = voc_case_writer(tmp_path, gt, dets)
    iset = tmp_path / "set.txt"
    iset.write_text("a\n\n")
    d = deteval.evaluate_voc(str(ann), str(res), imageset=str(iset)).to_dict()
    (c,) = d["classes"]
    assert (c["num_gt"], c["tp"], c["ap"]) == (1, 1, 1.0)
    d = deteval.evaluate_voc(str(ann), str(res)).to_dict()
    (c,) = d["classes"]
    assert (c["num_gt"], c["tp"], c["ap"]) == (2, 1, 0.5)


def test_year_folder_layout(tmp_path, voc_case_writer):
    gt = [("000001", "cat", 1, 1, 10, 10, False), ("000002", "cat", 1, 1, 10, 10, False)]
    dets = [("000001", "cat", 0.9, 1, 1, 10, 10)]
    root = tmp_path / "VOC2007"
    ann, res = voc_case_writer(root, gt, dets)
    (root / "ImageSets" / "Main").mkdir(parents=True)
    (root / "ImageSets" / "Main" / "test.txt").write_text("000001\n")
    (root / "ImageSets" / "Main" / "trainval.txt").write_text("000001\n000002\n")
    d = deteval.evaluate_voc(str(root), str(res), imageset="test").to_dict()
    assert d["classes"][0]["ap"] == 1.0 and d["classes"][0]["num_gt"] == 1
    d = deteval.evaluate_voc(str(root), str(res), imageset="trainval").to_dict()
    assert d["classes"][0]["ap"] == 0.5 and d["classes"][0]["num_gt"] == 2


def test_detection_for_unknown_image_is_an_error(tmp_path, voc_case_writer):
    gt = [("a", "cat", 1, 1, 10, 10, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("zzz_unknown", "cat", 0.8, 1, 1, 10, 10)]
    ann, res = voc_case_writer(tmp_path, gt, dets, images=["a"])
    with pytest.raises(deteval.InputError) as ei:
        deteval.evaluate_voc(str(ann), str(res))
    msg = str(ei.value)
    assert "zzz_unknown" in msg and "comp4_det_test_cat.txt" in msg
    assert issubclass(deteval.InputError, ValueError)


def test_detection_outside_imageset_is_an_error(tmp_path, voc_case_writer):
    gt = [("img_in", "cat", 1, 1, 10, 10, False), ("img_outside", "cat", 1, 1, 10, 10, False)]
    dets = [("img_outside", "cat", 0.9, 1, 1, 10, 10)]
    ann, res = voc_case_writer(tmp_path, gt, dets)
    iset = tmp_path / "set.txt"
    iset.write_text("img_in\n")
    with pytest.raises(deteval.InputError, match="img_outside"):
        deteval.evaluate_voc(str(ann), str(res), imageset=str(iset))


def test_duplicate_id_in_imageset_is_an_error(tmp_path, voc_case_writer):
    gt = [("dup_id", "cat", 1, 1, 10, 10, False), ("other", "cat", 1, 1, 10, 10, False)]
    ann, res = voc_case_writer(tmp_path, gt, [("dup_id", "cat", 0.9, 1, 1, 10, 10)])
    iset = tmp_path / "set.txt"
    iset.write_text("dup_id\nother\ndup_id\n")
    with pytest.raises(deteval.InputError, match="dup_id"):
        deteval.evaluate_voc(str(ann), str(res), imageset=str(iset))


def test_detection_file_whitespace(tmp_path, voc_case_writer):
    # any whitespace between fields (tabs, several spaces), trailing blank line
    gt = [("a", "cat", 1, 1, 10, 10, False), ("b", "cat", 1, 1, 10, 10, False)]
    ann, res = voc_case_writer(tmp_path, gt, [])
    (res / "comp4_det_test_cat.txt").write_text("a\t0.9\t1\t1\t10\t10\n b   0.8 1  1 10 10 \n\n")
    d = deteval.evaluate_voc(str(ann), str(res), metric="voc12").to_dict()
    assert (d["classes"][0]["tp"], d["classes"][0]["ap"]) == (2, 1.0)


def test_mean_is_arithmetic_mean(run):
    # cat AP 1 (perfect), dog AP .5 (FP then TP), horse AP 0 (only an FP):
    # mAP = (1 + .5 + 0) / 3
    gt = [("a", "cat", 1, 1, 10, 10, False), ("a", "dog", 20, 20, 30, 30, False),
          ("a", "horse", 40, 40, 50, 50, False)]
    dets = [("a", "cat", 0.9, 1, 1, 10, 10), ("a", "dog", 0.9, 60, 60, 70, 70),
            ("a", "dog", 0.8, 20, 20, 30, 30), ("a", "horse", 0.9, 60, 60, 70, 70)]
    d, by = run(gt, dets, metric="voc12")
    assert [by[k]["ap"] for k in ("cat", "dog", "horse")] == [1.0, 0.5, 0.0]
    assert d["mAP"] == pytest.approx(1.5 / 3, abs=TOL, rel=0)
    assert d["protocol"] == "voc" and d["metric"] == "voc12" and d["compat"] == "devkit"
