"""--confusion: supervision's ConfusionMatrix.from_tensors, cell for cell.

Differential tests against supervision 0.31 (float64 tensors per image, every GT image),
hand cases at the boundaries (score exactly at the confidence threshold, IoU exactly at the
IoU threshold, crowd regions, cross-class matches), the vectorised greedy against a slow
sequential greedy written here, VOC, the streaming metric, and the CLI's bad input.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coco_gen import generate_case, metric_batches, shuffle_ground_truth, shuffle_results
from deteval.diagnostics.confusion import confusion_matrix, coco_confusion, voc_confusion
from deteval.io.coco import load_coco_ground_truth, load_coco_results

REPO = Path(__file__).resolve().parents[1]
THRESHOLDS = [(0.5, 0.3), (0.3, 0.5), (0.75, 0.0), (0.1, 1.0), (1.0, 0.2)]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


def supervision_matrix(gt: dict, results: list, iou, conf):
    """supervision on float64 tensors: per GT image, non-crowd targets and every result in
    file order, classes indexed in category-id order."""
    sv = pytest.importorskip("supervision")
    cat_ids = sorted(c["id"] for c in gt["categories"])
    pos = {c: k for k, c in enumerate(cat_ids)}
    names = {c["id"]: c["name"] for c in gt["categories"]}
    preds, targets = [], []
    for im in gt["images"]:
        t = [[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
              a["bbox"][1] + a["bbox"][3], pos[a["category_id"]]]
             for a in gt["annotations"] if a["image_id"] == im["id"] and not a.get("iscrowd", 0)]
        p = [[d["bbox"][0], d["bbox"][1], d["bbox"][0] + d["bbox"][2],
              d["bbox"][1] + d["bbox"][3], pos[d["category_id"]], d["score"]]
             for d in results if d["image_id"] == im["id"]]
        targets.append(np.array(t, dtype=np.float64).reshape(-1, 5))
        preds.append(np.array(p, dtype=np.float64).reshape(-1, 6))
    cm = sv.ConfusionMatrix.from_tensors(preds, targets, [names[c] for c in cat_ids],
                                         conf_threshold=conf, iou_threshold=iou)
    return cm.matrix


def ours(gt: dict, results: list, iou, conf):
    g = load_coco_ground_truth(gt)
    d = load_coco_results(results, g)
    return coco_confusion(g, d, g.class_names, iou, conf)


@pytest.mark.parametrize("seed", range(25))
def test_equals_supervision_on_generated_cases(seed):
    case = generate_case(seed)
    for iou, conf in THRESHOLDS:
        got = ours(case.gt, case.results, iou, conf)
        ref = supervision_matrix(case.gt, case.results, iou, conf)
        assert got.matrix.tolist() == ref.tolist(), (seed, iou, conf)
        K = got.matrix.shape[0] - 1
        assert got.matrix[K, K] == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(25, 400))
def test_equals_supervision_on_generated_cases_sweep(seed):
    case = generate_case(seed)
    for iou, conf in THRESHOLDS:
        assert (ours(case.gt, case.results, iou, conf).matrix.tolist()
                == supervision_matrix(case.gt, case.results, iou, conf).tolist())


@pytest.mark.parametrize("seed", range(6))
def test_shuffled_image_and_category_order(seed):
    case = generate_case(100 + seed)
    gt = shuffle_ground_truth(case.gt, seed)
    res = shuffle_results(case.results, seed)
    assert (ours(gt, res, 0.5, 0.3).matrix.tolist()
            == supervision_matrix(gt, res, 0.5, 0.3).tolist())


def _dataset(boxes_gt, boxes_det, crowd=()):
    """One image; GT (category, box, iscrowd) and detections (category, box, score)."""
    cats = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    anns = [{"id": i + 1, "image_id": 7, "category_id": c, "bbox": b, "area": b[2] * b[3],
             "iscrowd": int(i in crowd)} for i, (c, b) in enumerate(boxes_gt)]
    res = [{"image_id": 7, "category_id": c, "bbox": b, "score": s} for c, b, s in boxes_det]
    return {"images": [{"id": 7}, {"id": 8}], "annotations": anns, "categories": cats}, res


def test_hand_case_boundaries():
    # IoU exactly 0.5 (50 / 100) is not a match (strict >); a score exactly at the
    # threshold is kept (>=); a crowd region is not a target; cross-class match
    gt, res = _dataset(
        [(1, [0, 0, 10, 10]), (2, [100, 100, 10, 10]), (1, [200, 200, 50, 50]),
         (2, [300, 300, 10, 10])],
        [(1, [0, 0, 10, 5], 0.9),          # IoU 0.5 with GT 0: false detection, GT 0 missed
         (1, [100, 100, 10, 10], 0.3),     # score == threshold, class a on GT b: confusion
         (1, [200, 200, 50, 50], 0.8),     # on the crowd region: a false detection
         (2, [300, 300, 10, 10], 0.2999)],  # below the threshold: dropped
        crowd={2})
    m = ours(gt, res, 0.5, 0.3).matrix
    ref = supervision_matrix(gt, res, 0.5, 0.3)
    assert m.tolist() == ref.tolist()
    # rows: a, b, background; columns predicted a, b, background
    assert m.tolist() == [[0, 0, 1], [1, 0, 1], [2, 0, 0]]
    # a slightly lower threshold takes the IoU-0.5 pair
    m2 = ours(gt, res, 0.4999, 0.3).matrix
    assert m2.tolist() == supervision_matrix(gt, res, 0.4999, 0.3).tolist()
    assert m2[0, 0] == 1


def test_same_class_pairs_first_then_iou():
    # the detection overlaps a same-class GT a little and an other-class GT a lot:
    # the same-class pair comes first; the other GT is missed
    gt, res = _dataset([(1, [0, 0, 10, 10]), (2, [1, 0, 10, 10])],
                       [(1, [1, 0, 10, 10], 0.9)])
    m = ours(gt, res, 0.5, 0.3).matrix
    assert m.tolist() == supervision_matrix(gt, res, 0.5, 0.3).tolist()
    assert m.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]


def test_float32_iou_rounding_and_threshold_in_float32():
    # IoU 0.30000001 in double (just above 0.3) rounds to float32(0.3); supervision compares
    # the float32 IoU with the threshold in float32 (numpy 2 casts the Python float), so the
    # pair is no candidate at threshold 0.3, though it is in double
    gt, res = _dataset([(1, [0, 0, 100, 100])], [(1, [0, 0, 100, 30.000001], 0.9)])
    assert 30.000001 * 100 / 10000 > 0.3
    assert np.float32(30.000001 * 100 / 10000) == np.float32(0.3)
    m = ours(gt, res, 0.3, 0.3).matrix
    assert m.tolist() == supervision_matrix(gt, res, 0.3, 0.3).tolist()
    assert m[0, 0] == 0 and m[0, 2] == 1 and m[2, 0] == 1
    for thr in (0.30000001, 0.29999999, 0.2999999):
        assert (ours(gt, res, thr, 0.3).matrix.tolist()
                == supervision_matrix(gt, res, thr, 0.3).tolist()), thr
    assert ours(gt, res, 0.2999999, 0.3).matrix[0, 0] == 1


def slow_greedy(t_img, t_cls, t_box, d_img, d_cls, d_box, d_score, K, iou_thr, conf_thr):
    """The sequential greedy of supervision per image, written plainly."""
    m = np.zeros((K + 1, K + 1), dtype=np.int64)
    for img in sorted(set(t_img.tolist()) | set(d_img.tolist())):
        T = np.flatnonzero(t_img == img)
        D = [j for j in np.flatnonzero(d_img == img) if d_score[j] >= conf_thr]
        pairs = []
        for ti, t in enumerate(T):
            for di, d in enumerate(D):
                a, b = t_box[t], d_box[d]
                iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
                ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
                inter = iw * ih
                union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
                iou = np.float32(inter / union if union > 0 else 0.0)
                if iou > np.float32(iou_thr):
                    pairs.append((t_cls[t] != d_cls[d], -iou, ti, di))
        pairs.sort()
        tt, dd = set(), set()
        for _, _, ti, di in pairs:
            if ti not in tt and di not in dd:
                tt.add(ti)
                dd.add(di)
                m[t_cls[T[ti]], d_cls[D[di]]] += 1
        for ti, t in enumerate(T):
            if ti not in tt:
                m[t_cls[t], K] += 1
        for di, d in enumerate(D):
            if di not in dd:
                m[K, d_cls[d]] += 1
    return m


@pytest.mark.parametrize("seed", range(8))
def test_rounds_equal_the_sequential_greedy_on_crowded_images(seed):
    # many heavily overlapping boxes (long chains of competing pairs), tied IoUs from a
    # coarse grid, three classes
    rng = np.random.default_rng(seed)
    n_img, K = 4, 3
    G, N = 60, 90
    t_img = rng.integers(0, n_img, G)
    d_img = rng.integers(0, n_img, N)
    t_xy = rng.integers(0, 6, (G, 2)) * 2.0
    d_xy = rng.integers(0, 6, (N, 2)) * 2.0
    t_box = np.concatenate([t_xy, t_xy + rng.integers(4, 8, (G, 2))], axis=1)
    d_box = np.concatenate([d_xy, d_xy + rng.integers(4, 8, (N, 2))], axis=1)
    t_cls, d_cls = rng.integers(0, K, G), rng.integers(0, K, N)
    score = np.round(rng.random(N), 1)
    for iou_thr, conf in ((0.5, 0.3), (0.2, 0.0), (0.7, 0.5)):
        got = confusion_matrix(t_img, t_cls, t_box, d_img, d_cls, d_box, score, K, iou_thr,
                               conf)
        ref = slow_greedy(t_img, t_cls, t_box, d_img, d_cls, d_box, score, K, iou_thr, conf)
        assert got.tolist() == ref.tolist()
        assert got[:K].sum(axis=1).tolist() == np.bincount(t_cls, minlength=K).tolist()
        assert got[:, :K].sum(axis=0).tolist() == np.bincount(d_cls[score >= conf],
                                                              minlength=K).tolist()


def test_voc_targets_are_non_difficult_and_boxes_as_written(tmp_path):
    sv = pytest.importorskip("supervision")
    from conftest import write_voc_case
    from deteval.io.voc import load_voc_annotations, load_voc_detections
    rng = np.random.default_rng(3)
    classes = ["cat", "dog"]
    gt_rows, det_rows = [], []
    for i in range(6):
        img = f"im{i}"
        for _ in range(rng.integers(0, 5)):
            x, y = rng.integers(0, 50, 2)
            gt_rows.append((img, classes[rng.integers(0, 2)], x, y, x + rng.integers(5, 30),
                            y + rng.integers(5, 30), bool(rng.random() < 0.3)))
        for _ in range(rng.integers(0, 8)):
            x, y = rng.integers(0, 50, 2)
            det_rows.append((img, classes[rng.integers(0, 2)], round(float(rng.random()), 2),
                             x, y, x + rng.integers(5, 30), y + rng.integers(5, 30)))
    ann, dets = write_voc_case(tmp_path, gt_rows, det_rows, images=[f"im{i}" for i in range(6)])
    g = load_voc_annotations(ann)
    d = load_voc_detections(dets, g)
    got = voc_confusion(g, d, g.class_names, 0.4, 0.2)
    pos = {n: k for k, n in enumerate(g.class_names)}
    preds, targets = [], []
    for img in g.image_ids:
        targets.append(np.array([[r[2], r[3], r[4], r[5], pos[r[1]]] for r in gt_rows
                                 if r[0] == img and not r[6]], dtype=np.float64).reshape(-1, 5))
        # detections in file order: one file per class, class files in name order
        rows = [r for c in sorted(classes) for r in det_rows if r[0] == img and r[1] == c]
        preds.append(np.array([[r[3], r[4], r[5], r[6], pos[r[1]], r[2]] for r in rows],
                              dtype=np.float64).reshape(-1, 6))
    ref = sv.ConfusionMatrix.from_tensors(preds, targets, list(g.class_names),
                                          conf_threshold=0.2, iou_threshold=0.4).matrix
    assert got.matrix.tolist() == ref.tolist()
    assert got.classes == list(g.class_names) + ["background"]


def test_streaming_metric_gives_the_cli_matrix():
    import deteval
    case = generate_case(11)
    gt = case.gt
    metric = deteval.MeanAveragePrecision("coco", box_format="xywh",
                                          class_names={c["id"]: c["name"]
                                                       for c in gt["categories"]})
    ids, preds, targets = metric_batches(gt, case.results)
    for s in range(0, len(ids), 3):  # several batches
        metric.update(preds[s:s + 3], targets[s:s + 3], image_ids=ids[s:s + 3])
    rep = metric.compute(confusion={"iou_threshold": 0.4, "conf_threshold": 0.2})
    assert rep.to_dict()["confusion"]["matrix"] == supervision_matrix(
        gt, case.results, 0.4, 0.2).tolist()
    assert rep.stats == metric.compute().stats  # the plain figures are unchanged
    with pytest.raises(ValueError, match="conf_threshold|--confusion-conf"):
        metric.compute(confusion={"conf_threshold": 1.5})


# ------------------------------------------------------------------------ CLI

@pytest.fixture()
def coco_files(tmp_path):
    case = generate_case(5)
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(case.gt))
    r.write_text(json.dumps(case.results))
    return case, g, r


def test_cli_confusion_report(coco_files, tmp_path):
    case, g, r = coco_files
    out = tmp_path / "out.json"
    proc = run_cli("coco", g, r, "--confusion", "--confusion-iou", "0.3", "--confusion-conf",
                   "0.5", "--json", out)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    c = rep["confusion"]
    assert c["iou_threshold"] == 0.3 and c["conf_threshold"] == 0.5
    cats = sorted(case.gt["categories"], key=lambda x: x["id"])
    assert c["classes"] == [x["name"] for x in cats] + ["background"]
    assert c["matrix"] == supervision_matrix(case.gt, case.results, 0.3, 0.5).tolist()
    assert "Confusion matrix" in proc.stdout
    assert set(rep["stats"]) >= {"AP", "AP50"}  # the plain report is all there


@pytest.mark.parametrize("args, needle", [
    (["--confusion", "--confusion-iou", "0"], "--confusion-iou"),
    (["--confusion", "--confusion-iou", "1.5"], "--confusion-iou"),
    (["--confusion", "--confusion-iou", "nan"], "--confusion-iou"),
    (["--confusion", "--confusion-conf", "-0.1"], "--confusion-conf"),
    (["--confusion", "--confusion-conf", "1.01"], "--confusion-conf"),
    (["--confusion-iou", "0.5"], "only with `--confusion`"),
    (["--confusion-conf", "0.5"], "only with `--confusion`"),
    (["--confusion", "--iou-type", "segm"], "bbox"),
    (["--curves", "--class-agnostic"], "--class-agnostic"),
])
def test_cli_bad_options_exit_2(coco_files, tmp_path, args, needle):
    _, g, r = coco_files
    out = tmp_path / "never.json"
    proc = run_cli("coco", g, r, *args, "--json", out)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_cli_duplicate_category_names_exit_2(tmp_path):
    case = generate_case(5)
    gt = dict(case.gt)
    gt["categories"] = [dict(c, name="same") for c in gt["categories"]]
    if len(gt["categories"]) < 2:
        gt["categories"].append({"id": 12345, "name": "same"})
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(case.results))
    out, csv_dir = tmp_path / "never.json", tmp_path / "csv"
    for flag in ("--confusion", "--curves"):
        proc = run_cli("coco", g, r, flag, "--json", out, "--csv", csv_dir)
        assert proc.returncode == 2 and "unique category names" in proc.stderr
        assert not out.exists() and not csv_dir.exists()
    # the plain evaluation and per-image counts do not need names
    proc = run_cli("coco", g, r, "--per-image")
    assert proc.returncode == 0, proc.stderr


def test_cli_voc_rejects_curves():
    voc = REPO / "fixtures" / "voc"
    proc = run_cli("voc", voc / "VOC2007", voc / "results", "--imageset", "test", "--curves")
    assert proc.returncode == 2 and "--curves" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_voc_confusion(tmp_path):
    voc = REPO / "fixtures" / "voc"
    out = tmp_path / "o.json"
    proc = run_cli("voc", voc / "VOC2007", voc / "results", "--imageset", "test",
                   "--confusion", "--json", out)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    m = np.array(rep["confusion"]["matrix"])
    K = len(rep["classes"])
    assert m.shape == (K + 1, K + 1) and m[K, K] == 0
    # rows sum to the non-difficult objects of each class
    assert m[:K].sum(axis=1).tolist() == [c["num_gt"] for c in rep["classes"]]
