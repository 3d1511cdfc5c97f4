"""--per-image: per-image TP / FP / FN / ignored counts.

COCO against a slow reference written here on COCOeval's own per-(image, class) matching
(``evalImgs`` at IoU 0.5, area all, max dets 100); VOC against a slow devkit matcher written
here; the order of the entries and of the worst images; file names; the streaming metric.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coco_gen import generate_case, metric_batches, pycocotools_eval, shuffle_ground_truth
from deteval.diagnostics.run import coco_diagnostics, voc_diagnostics
from deteval.evaluate import evaluate_coco, evaluate_voc

REPO = Path(__file__).resolve().parents[1]


def per_image_of(gt, results, **kw):
    stages = {}
    rep = evaluate_coco(gt, results, stages=stages, **kw)
    return coco_diagnostics(rep, stages["gt"], stages["det"], stages["matches"],
                            stages["summary"], per_image=True).images


def slow_coco_reference(gt, results):
    """image id -> counts from COCOeval's evalImgs (area all, max dets 100, IoU 0.5)."""
    E = pycocotools_eval(gt, results)
    out = {im["id"]: dict(num_gt=0, num_detections=0, tp=0, fp=0, fn=0, ignored=0)
           for im in gt["images"]}
    for r in results:
        out[r["image_id"]]["num_detections"] += 1
    for e in E.evalImgs:
        if e is None or list(e["aRng"]) != [0, 1e10]:
            continue
        row = out[e["image_id"]]
        gt_counted = int(np.sum(np.asarray(e["gtIgnore"]) == 0))
        row["num_gt"] += gt_counted
        tp = 0
        for j in range(len(e["dtIds"])):
            if e["dtIgnore"][0][j]:
                row["ignored"] += 1
            elif e["dtMatches"][0][j] > 0:
                tp += 1
            else:
                row["fp"] += 1
        row["tp"] += tp
        row["fn"] += gt_counted - tp
    return out


def check_coco(gt, results):
    pytest.importorskip("pycocotools")
    images = per_image_of(gt, results)
    entries = images.to_list()
    assert [e["image_id"] for e in entries] == sorted(im["id"] for im in gt["images"])
    names = {im["id"]: im.get("file_name") for im in gt["images"]}
    if not results:
        return entries
    ref = slow_coco_reference(gt, results)
    for e in entries:
        want = ref[e["image_id"]]
        got = {k: e[k] for k in want}
        assert got == want, e["image_id"]
        assert e["tp"] + e["fn"] == e["num_gt"]
    assert all(e["file_name"] is None for e in entries) or \
        [e["file_name"] for e in entries] == [names[e["image_id"]] for e in entries]
    return entries


@pytest.mark.parametrize("seed", range(30))
def test_coco_counts_equal_the_slow_reference(seed):
    case = generate_case(seed)
    check_coco(case.gt, case.results)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 300))
def test_coco_counts_sweep(seed):
    case = generate_case(seed)
    check_coco(case.gt, case.results)


def test_coco_counts_with_shuffled_ground_truth_and_other_parameters():
    case = generate_case(8)
    gt = shuffle_ground_truth(case.gt, 1)
    a = per_image_of(gt, case.results).to_list()
    b = per_image_of(gt, case.results, iou_thresholds=[0.3], max_dets=[5]).to_list()
    assert a == b  # a dedicated pass at the standard cell when the parameters lack it
    if case.results:
        ref = slow_coco_reference(gt, case.results)
        assert all({k: e[k] for k in ref[e["image_id"]]} == ref[e["image_id"]] for e in a)


def test_worst_images_order():
    from deteval.diagnostics.per_image import PerImage
    counts = {k: np.zeros(5, dtype=np.int64) for k in
              ("num_gt", "num_detections", "tp", "fp", "fn", "ignored")}
    counts["fp"][:] = [3, 1, 3, 0, 5]
    counts["fn"][:] = [0, 2, 0, 0, 0]
    img = PerImage(np.array([30, 10, 20, 40, 50]), [None] * 5, counts)
    # most fp + fn first (5), then the ties at 3 by image id: 10, 20, 30
    assert [int(img.image_ids[i]) for i in img.worst(4)] == [50, 10, 20, 30]
    assert [e["image_id"] for e in img.to_list()] == [10, 20, 30, 40, 50]
    extra = img.with_extra({"tide_Cls": np.arange(5)})
    assert extra.to_list()[0]["tide_Cls"] == 1 and list(extra.to_list()[0])[-1] == "tide_Cls"


def slow_voc_reference(gt_rows, det_rows, images, thr=0.5):
    """The devkit's matching per class, written plainly: image -> counts."""
    out = {i: dict(num_gt=0, num_detections=0, tp=0, fp=0, fn=0, ignored=0) for i in images}
    for g in gt_rows:
        if not g[6]:
            out[g[0]]["num_gt"] += 1
    for d in det_rows:
        out[d[0]]["num_detections"] += 1
    for cls in sorted({r[1] for r in gt_rows} | {r[1] for r in det_rows}):
        dets = [d for d in det_rows if d[1] == cls]
        dets = sorted(dets, key=lambda d: -d[2])  # stable: file order among ties
        claimed = set()
        for d in dets:
            best, best_j = -np.inf, None
            for j, g in enumerate(gt_rows):
                if g[0] != d[0] or g[1] != cls:
                    continue
                iw = min(d[5], g[4]) - max(d[3], g[2]) + 1
                ih = min(d[6], g[5]) - max(d[4], g[3]) + 1
                if iw > 0 and ih > 0:
                    inter = iw * ih
                    ov = inter / ((d[5] - d[3] + 1) * (d[6] - d[4] + 1)
                                  + (g[4] - g[2] + 1) * (g[5] - g[3] + 1) - inter)
                    if ov > best:
                        best, best_j = ov, j
            row = out[d[0]]
            if best >= thr and best_j is not None:
                if gt_rows[best_j][6]:
                    row["ignored"] += 1
                elif best_j not in claimed:
                    claimed.add(best_j)
                    row["tp"] += 1
                else:
                    row["fp"] += 1
            else:
                row["fp"] += 1
    for row in out.values():
        row["fn"] = row["num_gt"] - row["tp"]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_voc_counts_equal_the_slow_reference(tmp_path, seed):
    from conftest import write_voc_case
    rng = np.random.default_rng(seed)
    classes = ["cat", "dog", "emu"]
    images = [f"im{i}" for i in range(7)]
    gt_rows, det_rows = [], []
    for img in images:
        for _ in range(rng.integers(0, 5)):
            x, y = rng.integers(0, 40, 2)
            gt_rows.append((img, classes[rng.integers(0, 3)], x, y, x + rng.integers(5, 25),
                            y + rng.integers(5, 25), bool(rng.random() < 0.2)))
        for _ in range(rng.integers(0, 9)):
            x, y = rng.integers(0, 40, 2)
            det_rows.append((img, classes[rng.integers(0, 3)], round(float(rng.random()), 1),
                             x, y, x + rng.integers(5, 25), y + rng.integers(5, 25)))
    # file order: one file per class in name order (as the loader reads them)
    det_rows = [r for c in sorted(classes) for r in det_rows if r[1] == c]
    ann, dets = write_voc_case(tmp_path, gt_rows, det_rows, images=images)
    stages = {}
    rep = evaluate_voc(ann, dets, stages=stages)
    got = voc_diagnostics(rep, stages["gt"], stages["det"], stages["matches"],
                          per_image=True).images.to_list()
    ref = slow_voc_reference(gt_rows, det_rows, images)
    assert [e["image_id"] for e in got] == sorted(images)
    for e in got:
        assert {k: e[k] for k in ref[e["image_id"]]} == ref[e["image_id"]]
        assert e["file_name"] is None
    # the per-image counts add up to the report's per-class counts
    assert sum(e["tp"] for e in got) == sum(c.tp for c in rep.classes)
    assert sum(e["fp"] for e in got) == sum(c.fp for c in rep.classes)


def test_cli_per_image_report_and_worst_table(tmp_path):
    case = generate_case(12)
    g, r, out = tmp_path / "gt.json", tmp_path / "res.json", tmp_path / "o.json"
    g.write_text(json.dumps(case.gt))
    r.write_text(json.dumps(case.results))
    proc = subprocess.run([sys.executable, "-m", "deteval", "coco", g, r, "--per-image",
                           "--json", out], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    entries = rep["images"]
    assert [e["image_id"] for e in entries] == sorted(im["id"] for im in case.gt["images"])
    names = {im["id"]: im["file_name"] for im in case.gt["images"]}
    assert all(e["file_name"] == names[e["image_id"]] for e in entries)
    assert list(entries[0]) == ["image_id", "file_name", "num_gt", "num_detections", "tp",
                                "fp", "fn", "ignored"]
    assert "Worst images" in proc.stdout
    worst = sorted(entries, key=lambda e: (-(e["fp"] + e["fn"]), e["image_id"]))[:20]
    lines = proc.stdout.split("Worst images")[1].splitlines()[3:3 + len(worst)]
    assert [int(line.split()[0]) for line in lines] == [e["image_id"] for e in worst]


def test_cli_voc_per_image(tmp_path):
    voc = REPO / "fixtures" / "voc"
    out = tmp_path / "o.json"
    proc = subprocess.run([sys.executable, "-m", "deteval", "voc", voc / "VOC2007",
                           voc / "results", "--imageset", "test", "--per-image", "--json",
                           out], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    assert len(rep["images"]) == rep["inputs"]["num_images"]
    assert sum(e["tp"] for e in rep["images"]) == sum(c["tp"] for c in rep["classes"])
    assert sum(e["num_gt"] for e in rep["images"]) == sum(c["num_gt"] for c in rep["classes"])
    assert sum(e["num_detections"] for e in rep["images"]) == rep["inputs"]["num_detections"]


def test_streaming_metric_per_image():
    import deteval
    case = generate_case(4)
    gt = case.gt
    metric = deteval.MeanAveragePrecision("coco", box_format="xywh")
    ids, preds, targets = metric_batches(gt, case.results)
    half = len(ids) // 2
    other = deteval.MeanAveragePrecision("coco", box_format="xywh")
    metric.update(preds[:half], targets[:half], image_ids=ids[:half])
    other.update(preds[half:], targets[half:], image_ids=ids[half:])
    metric.merge(other)
    got = metric.compute(per_image=True).to_dict()["images"]
    want = per_image_of(gt, case.results).to_list()
    for e in want:
        e["file_name"] = None
    assert got == want


def test_streaming_metric_voc_diagnostics_equal_the_cli():
    import deteval
    stages = {}
    voc = REPO / "fixtures" / "voc"
    rep = evaluate_voc(voc / "VOC2007", voc / "results", imageset="test", stages=stages)
    gt, det = stages["gt"], stages["det"]
    want = voc_diagnostics(rep, gt, det, stages["matches"], confusion=(0.5, 0.3),
                           per_image=True).to_dict()
    metric = deteval.MeanAveragePrecision("voc12", box_format="xyxy",
                                          class_names=list(gt.class_names))
    preds, targets = [], []
    for i in range(gt.num_images):
        g, d = gt.image_idx == i, det.image_idx == i
        o = np.argsort(det.order[d], kind="stable")  # file order within the image
        targets.append({"boxes": gt.boxes[g], "labels": gt.class_idx[g],
                        "difficult": gt.difficult[g]})
        preds.append({"boxes": det.boxes[d][o], "labels": det.class_idx[d][o],
                      "scores": det.scores[d][o]})
    metric.update(preds, targets, image_ids=[str(i) for i in gt.image_ids])
    got = metric.compute(confusion=True, per_image=True).to_dict()
    assert got["mAP"] == want["mAP"]
    assert got["confusion"] == want["confusion"]
    assert got["images"] == want["images"]


def test_sections_attach_per_image_columns_and_report_keys():
    # the hook TIDE uses: a section's per-image columns join every entry, its key the report
    class Section:
        def __init__(self, n):
            self.per_image_columns = {"tide_Miss": np.arange(n)}

        def to_dict(self):
            return {"ap50": 1.0}

    case = generate_case(6)
    stages = {}
    rep = evaluate_coco(case.gt, case.results, stages=stages)
    g = stages["gt"]
    out = coco_diagnostics(rep, g, stages["det"], stages["matches"], stages["summary"],
                           per_image=True, sections={"tide": Section(g.num_images)}).to_dict()
    assert out["tide"] == {"ap50": 1.0}
    pos = {int(i): k for k, i in enumerate(g.image_ids)}
    assert all(e["tide_Miss"] == pos[e["image_id"]] for e in out["images"])
