"""TIDE error decomposition (``--tide``) against tidecv 1.0.1, and hand cases.

The differential tests run ``TIDE(0.5, 0.1, TIDE.BOX).evaluate(datasets.COCO(gt),
datasets.COCOResult(res))`` on seeded generated files (every error type, IoU exactly 0.5 and
0.1, boxes half inside a crowd region, 2-decimal score ties, more than 100 detections on an
image, a class with detections and no object, images without objects or without detections,
shuffled image and category order) and compare dAPs within 1e-6 and counts exactly.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import random

import numpy as np
import pytest

from deteval.diagnostics.tide import ERROR_TYPES, SPECIAL_TYPES, tide_errors
from deteval.io.coco import load_coco_ground_truth, load_coco_results


def _tidecv():
    """tidecv, with the numpy aliases it still uses restored."""
    for name, value in (("float", float), ("int", int), ("bool", bool)):
        if not hasattr(np, name):
            setattr(np, name, value)
    return pytest.importorskip("tidecv", reason="tidecv (test extra) is not installed")


def tidecv_figures(gt_path, res_path) -> dict:
    """report["tide"] as tidecv computes it (same keys and scale)."""
    tidecv = _tidecv()
    from tidecv import TIDE, datasets
    from tidecv.errors.main_errors import (BackgroundError, BoxError, ClassError,
                                           DuplicateError, MissedError, OtherError)
    with contextlib.redirect_stdout(io.StringIO()):
        tide = TIDE(0.5, 0.1, TIDE.BOX)
        run = tide.evaluate(datasets.COCO(str(gt_path)), datasets.COCOResult(str(res_path)),
                            name="run")
        counts = run.count_errors()
        try:
            errors = tide.get_all_errors()
        except ZeroDivisionError:  # a rebuild without any class: tidecv divides by zero
            errors = None
    names = {ClassError: "Cls", BoxError: "Loc", OtherError: "Both", DuplicateError: "Dupe",
             BackgroundError: "Bkg", MissedError: "Miss"}
    assert tidecv  # imported for its side effect above
    return {"ap50": run.ap, "main": None if errors is None else dict(errors["main"]["run"]),
            "special": None if errors is None else dict(errors["special"]["run"]),
            "counts": {names[k]: v for k, v in counts.items()}}


# ------------------------------------------------------------------------ generator

def _box(rng, W=200, H=160):
    w = rng.choice([rng.randint(2, 80), round(rng.uniform(2, 80), 2)])
    h = rng.choice([rng.randint(2, 80), round(rng.uniform(2, 80), 2)])
    x = round(rng.uniform(0, W - w), rng.choice([0, 2]))
    y = round(rng.uniform(0, H - h), rng.choice([0, 2]))
    return [x, y, w, h]


def _jitter(rng, b, s):
    x, y, w, h = b
    return [round(x + rng.gauss(0, s * w), 2), round(y + rng.gauss(0, s * h), 2),
            round(max(0.5, w * (1 + rng.gauss(0, s))), 2),
            round(max(0.5, h * (1 + rng.gauss(0, s))), 2)]


def generate_case(seed: int, many: bool = False):
    """A COCO instances dict and a results list with every TIDE situation."""
    rng = random.Random(seed)
    n_cls = rng.randint(2, 6)
    cat_ids = rng.sample(range(1, 30), n_cls + 1)        # the last one: no object at all
    cats = [{"id": c, "name": f"c{c}"} for c in cat_ids]
    rng.shuffle(cats)
    obj_cats = cat_ids[:-1]
    n_img = rng.randint(2, 9)
    img_ids = rng.sample(range(1, 1000), n_img)           # file order is not id order
    images = [{"id": i, "width": 200, "height": 160, "file_name": f"{i}.jpg"} for i in img_ids]
    anns, res = [], []

    def score():
        return round(rng.random(), rng.choice([2, 2, 3]))

    for n, iid in enumerate(img_ids):
        kind = rng.random()
        n_obj = 0 if kind < 0.12 and n else rng.randint(1, 7)
        objs = []
        for j in range(n_obj):
            b = _box(rng)
            c = rng.choice(obj_cats)
            crowd = rng.random() < 0.12 and (n + j) > 0  # one object at least (tidecv's mean)
            anns.append({"image_id": iid, "category_id": c, "bbox": b, "iscrowd": int(crowd)})
            objs.append((b, c, crowd))
        no_dets = n_obj and rng.random() < 0.12
        if no_dets:
            continue
        for b, c, crowd in objs:
            x, y, w, h = b
            if crowd:  # boxes inside the region: half inside (not ignored), mostly inside
                res.append({"image_id": iid, "category_id": c, "score": score(),
                            "bbox": [x + w / 2, y, w, h / 2 if rng.random() < 0.5 else h]})
                res.append({"image_id": iid, "category_id": c, "score": score(),
                            "bbox": [x + w / 4, y + h / 4, w / 3, h / 3]})
                continue
            r = rng.random()
            if r < 0.7:
                res.append({"image_id": iid, "category_id": c, "score": score(),
                            "bbox": _jitter(rng, b, 0.05)})
            for _ in range(rng.choice([0, 0, 1, 2])):  # duplicates, loose boxes
                res.append({"image_id": iid, "category_id": c, "score": score(),
                            "bbox": _jitter(rng, b, rng.choice([0.05, 0.3, 0.6]))})
            if rng.random() < 0.3:  # wrong class on the object
                res.append({"image_id": iid, "category_id": rng.choice(cat_ids),
                            "score": score(), "bbox": _jitter(rng, b, 0.05)})
            if rng.random() < 0.25:  # IoU exactly 0.5 / 0.1 with integer-friendly halves
                frac = rng.choice([2, 10])
                res.append({"image_id": iid, "category_id": rng.choice([c, rng.choice(cat_ids)]),
                            "score": score(), "bbox": [x, y, w, h / frac]})
        for _ in range(rng.choice([0, 1, 2, 3])):  # background
            res.append({"image_id": iid, "category_id": rng.choice(cat_ids), "score": score(),
                        "bbox": _box(rng)})
        if many and rng.random() < 0.5:  # more than 100 on the image, tied scores
            for _ in range(rng.randint(95, 130)):
                src = rng.choice(objs)[0] if objs and rng.random() < 0.6 else _box(rng)
                res.append({"image_id": iid, "category_id": rng.choice(cat_ids),
                            "score": round(rng.random(), 2), "bbox": _jitter(rng, src, 0.2)})
    rng.shuffle(anns)
    for k, a in enumerate(anns):
        x, y, w, h = a["bbox"]
        a.update(id=k + 1, area=w * h, segmentation=[[x, y, x + w, y, x + w, y + h, x, y + h]])
    rng.shuffle(res)
    return {"images": images, "annotations": anns, "categories": cats}, res


def _write(tmp_path, gt, res, tag=""):
    gp, rp = tmp_path / f"gt{tag}.json", tmp_path / f"res{tag}.json"
    gp.write_text(json.dumps(gt))
    rp.write_text(json.dumps(res))
    return gp, rp


def _ours(gp, rp) -> dict:
    g = load_coco_ground_truth(gp)
    return tide_errors(g, load_coco_results(rp, g)).to_dict()


def _assert_close(ours, ref, tol=1e-6):
    assert ours["counts"] == ref["counts"]
    assert abs(ours["ap50"] - ref["ap50"]) <= tol, (ours["ap50"], ref["ap50"])
    if ref["main"] is None:  # tidecv raised; a mean over no class is 0 here
        assert all(math.isfinite(v) and v >= 0 for v in ours["main"].values())
        return
    for t in ERROR_TYPES:
        assert abs(ours["main"][t] - ref["main"][t]) <= tol, (t, ours["main"], ref["main"])
    for t in SPECIAL_TYPES:
        assert abs(ours["special"][t] - ref["special"][t]) <= tol, (t, ours["special"],
                                                                     ref["special"])


@pytest.mark.parametrize("seed", range(40))
def test_matches_tidecv_seeded(tmp_path, seed):
    _tidecv()
    gt, res = generate_case(seed, many=seed % 4 == 3)
    gp, rp = _write(tmp_path, gt, res)
    _assert_close(_ours(gp, rp), tidecv_figures(gp, rp))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40, 400))
def test_matches_tidecv_sweep(tmp_path, seed):
    _tidecv()
    gt, res = generate_case(seed, many=seed % 3 == 0)
    gp, rp = _write(tmp_path, gt, res)
    _assert_close(_ours(gp, rp), tidecv_figures(gp, rp))


def test_generated_cases_cover_every_error_type(tmp_path):
    """The seeded subset above exercises each error type (else the parity says little)."""
    total = dict.fromkeys(ERROR_TYPES, 0)
    for seed in range(40):
        gt, res = generate_case(seed, many=seed % 4 == 3)
        gp, rp = _write(tmp_path, gt, res, tag=str(seed))
        for t, v in _ours(gp, rp)["counts"].items():
            total[t] += v
    assert all(v > 0 for v in total.values()), total


@pytest.mark.parametrize("seed", range(0, 40, 5))
def test_numpy_path_matches_tidecv(tmp_path, seed, monkeypatch):
    """The numpy reference (no compiled kernel) against tidecv too."""
    _tidecv()
    from deteval.diagnostics import tide
    monkeypatch.setattr(tide, "_kernels", None)
    gt, res = generate_case(seed, many=True)
    gp, rp = _write(tmp_path, gt, res)
    _assert_close(_ours(gp, rp), tidecv_figures(gp, rp))


def test_compiled_pass_equals_numpy(tmp_path, monkeypatch):
    """The compiled per-image pass gives the numpy reference's records, bit for bit."""
    from deteval.diagnostics import tide
    if tide._kernels is None:
        pytest.skip("compiled extension not built")
    for seed in range(60):
        gt, res = generate_case(seed, many=seed % 2 == 0)
        g = load_coco_ground_truth(gt)
        d = load_coco_results(res, g)
        a = tide.tide_errors(g, d)
        monkeypatch.setattr(tide, "_kernels", None)
        b = tide.tide_errors(g, d)
        monkeypatch.undo()
        assert a.to_dict() == b.to_dict()
        for name in ("detection_rows", "detection_error", "detection_ignored", "missed_rows"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (seed, name)
        for t in ERROR_TYPES:
            assert np.array_equal(a.per_image[t], b.per_image[t])


# ------------------------------------------------------------------------ hand cases

def _case(images, anns, res, cats=((1, "a"), (2, "b"))):
    gt = {"images": [{"id": i, "width": 100, "height": 100, "file_name": f"{i}.jpg"}
                     for i in images],
          "annotations": [dict(a, id=k + 1, area=a["bbox"][2] * a["bbox"][3])
                          for k, a in enumerate(anns)],
          "categories": [{"id": c, "name": n} for c, n in cats]}
    g = load_coco_ground_truth(gt)
    return g, tide_errors(g, load_coco_results(res, g))


def _obj(img, cat, box, crowd=0):
    x, y, w, h = box
    return {"image_id": img, "category_id": cat, "bbox": list(box), "iscrowd": crowd,
            "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]}


def _det(img, cat, box, score):
    return {"image_id": img, "category_id": cat, "bbox": list(box), "score": score}


def test_each_rule_by_hand():
    g, r = _case([7, 3, 5], [
        _obj(7, 1, (0, 0, 10, 10)),
        _obj(7, 2, (50, 50, 10, 10)),      # missed
        _obj(3, 1, (0, 0, 10, 10)),        # matched at IoU exactly 0.5
    ], [
        _det(7, 1, (0, 0, 10, 10), 0.9),   # TP
        _det(7, 1, (0, 0, 10, 10), 0.8),   # Dupe
        _det(7, 2, (0, 0, 10, 10), 0.7),   # Cls (target matched)
        _det(7, 1, (0, 0, 10, 5), 0.6),    # Loc: same-class IoU exactly 0.5, object matched
        _det(7, 1, (80, 0, 10, 10), 0.5),  # Bkg: no overlap
        _det(7, 1, (5, 0, 10, 10), 0.4),   # Loc: same-class IoU 1/3
        _det(3, 1, (0, 0, 10, 5), 0.3),    # TP at IoU exactly 0.5
        _det(5, 2, (0, 0, 10, 10), 0.2),   # Bkg: image without objects
    ])
    assert r.counts == {"Cls": 1, "Loc": 2, "Both": 0, "Dupe": 1, "Bkg": 2, "Miss": 1}
    # per image, in the ground-truth file's image order (7, 3, 5)
    assert r.per_image["Bkg"].tolist() == [1, 0, 1]
    assert r.per_image["Miss"].tolist() == [1, 0, 0]
    assert r.per_image["Loc"].tolist() == [2, 0, 0]
    err = dict(zip(r.detection_rows.tolist(), r.detection_error.tolist()))
    assert [err[i] for i in range(8)] == [-1, 3, 0, 1, 4, 1, -1, 4]


def test_both_and_background_thresholds():
    # same-class IoU below 0.1 and other-class IoU in (0.1, 0.5): Both;
    # IoU exactly 0.1 with everything: Loc (same class, 0.1 <= IoU) or Bkg (other class)
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10)), _obj(1, 2, (20, 0, 10, 10))], [
        _det(1, 1, (20, 0, 10, 4), 0.9),   # other-class IoU 0.4: Both
        _det(1, 1, (0, 0, 10, 1), 0.8),    # same-class IoU exactly 0.1: Loc
        _det(1, 2, (0, 0, 10, 1), 0.7),    # other-class IoU 0.1 only: Bkg (<= 0.1)
    ])
    assert r.detection_error.tolist() == [2, 1, 4]


def test_crowd_half_inside_is_not_ignored():
    g, r = _case([1], [_obj(1, 1, (0, 0, 20, 20), crowd=1), _obj(1, 1, (60, 60, 10, 10))], [
        _det(1, 1, (10, 0, 20, 10), 0.9),  # half inside: crowd IoU exactly 0.5 -> not ignored
        _det(1, 1, (2, 2, 10, 10), 0.8),   # inside -> ignored (still an error: Bkg)
        _det(1, 2, (2, 2, 10, 10), 0.7),   # inside a region of another class: not ignored
    ])
    assert r.detection_ignored.tolist() == [False, True, False]
    assert r.counts["Bkg"] == 3 and r.counts["Miss"] == 1


def test_class_without_objects_counts_zero_in_the_mean():
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10))], [
        _det(1, 1, (0, 0, 10, 10), 0.9),
        _det(1, 2, (60, 60, 10, 10), 0.5),  # class b: no object, one Bkg point
    ])
    assert r.ap50 == 50.0              # (100 + 0) / 2; COCOeval would leave b out
    assert r.main["Bkg"] == 50.0       # fixed: b has no point and no object, out of the mean
    assert r.main["Cls"] == 0.0


def test_tied_scores_rebuild_artefact():
    """An error point enters a rebuild before the true positives, so at equal scores a
    rebuild that fixes nothing ranks the FP first: FalseNeg is negative (tidecv's own)."""
    g, r = _case([1, 2], [_obj(1, 1, (0, 0, 10, 10))], [
        _det(2, 1, (0, 0, 10, 10), 0.5),   # image 2 has no object: Bkg
        _det(1, 1, (0, 0, 10, 10), 0.5),   # TP, processed first (image order)
    ])
    assert r.ap50 == 100.0
    assert r.special["FalseNeg"] == -50.0
    assert r.special["FalsePos"] == 0.0
    assert r.main["Dupe"] == 0.0 and r.main["Bkg"] == 0.0


def test_more_than_100_detections_keep_the_first_100_over_all_classes():
    dets = [_det(1, 1 + k % 2, (50, 50, 5, 5), 0.5) for k in range(130)]
    dets.append(_det(1, 1, (0, 0, 10, 10), 0.1))  # the TP, ranked 131st: vanishes
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10))], dets)
    assert r.detection_rows.tolist() == list(range(100))  # ties: file order
    assert r.counts["Bkg"] == 100 and r.counts["Miss"] == 1
    assert r.ap50 == 0.0


def test_loc_fix_uses_the_best_error_per_object():
    # two Loc errors on one free object: only the higher-scored one becomes a TP
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10))], [
        _det(1, 1, (0, 0, 10, 4), 0.9),
        _det(1, 1, (0, 0, 10, 3), 0.8),
    ])
    assert r.counts == {"Cls": 0, "Loc": 2, "Both": 0, "Dupe": 0, "Bkg": 0, "Miss": 0}
    assert r.ap50 == 0.0
    # fixed: TP 0.9 then FP 0.8 -> precision 1 at recall 1
    assert r.main["Loc"] == 100.0


def test_no_class_at_all_is_zero():
    g, r = _case([1], [], [])
    assert r.ap50 == 0.0 and r.main == dict.fromkeys(ERROR_TYPES, 0.0)
    assert r.counts == dict.fromkeys(ERROR_TYPES, 0)


def test_to_dict_schema():
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10))], [_det(1, 1, (0, 0, 10, 10), 0.9)])
    d = r.to_dict()
    assert list(d) == ["pos_threshold", "background_threshold", "ap50", "main", "special",
                       "counts"]
    assert list(d["main"]) == list(ERROR_TYPES) and list(d["counts"]) == list(ERROR_TYPES)
    assert list(d["special"]) == ["FalsePos", "FalseNeg"]
    assert all(type(v) is int for v in d["counts"].values())
    json.dumps(d, allow_nan=False)


# ------------------------------------------------------------------- streaming metric

def _metric_inputs(gt, res):
    """Per image in the ground-truth file's order: preds and targets (results-file order)."""
    preds, targets = [], []
    for im in gt["images"]:
        rs = [r for r in res if r["image_id"] == im["id"]]
        gs = [a for a in gt["annotations"] if a["image_id"] == im["id"]]
        preds.append({"boxes": np.array([r["bbox"] for r in rs]).reshape(-1, 4),
                      "scores": np.array([r["score"] for r in rs]),
                      "labels": np.array([r["category_id"] for r in rs], dtype=np.int64)})
        targets.append({"boxes": np.array([a["bbox"] for a in gs]).reshape(-1, 4),
                        "labels": np.array([a["category_id"] for a in gs], dtype=np.int64),
                        "iscrowd": np.array([a["iscrowd"] for a in gs]),
                        "area": np.array([a["area"] for a in gs])})
    return preds, targets, [im["id"] for im in gt["images"]]


@pytest.mark.parametrize("seed", [1, 7, 11])
def test_streaming_metric_tide_equals_files(seed):
    from deteval import MeanAveragePrecision
    gt, res = generate_case(seed, many=True)
    g = load_coco_ground_truth(gt)
    expected = tide_errors(g, load_coco_results(res, g)).to_dict()
    preds, targets, ids = _metric_inputs(gt, res)
    names = {c["id"]: c["name"] for c in gt["categories"]}
    one = MeanAveragePrecision("coco", box_format="xywh", class_names=names)
    one.update(preds, targets, image_ids=ids)
    report = one.compute(tide=True)
    assert report.to_dict()["tide"] == expected
    assert "tide" not in one.compute().to_dict()
    # batches and a merge of two shards: the same figures
    half = len(ids) // 2
    a = MeanAveragePrecision("coco", box_format="xywh", class_names=names)
    b = MeanAveragePrecision("coco", box_format="xywh", class_names=names)
    for k in range(half):
        a.update(preds[k:k + 1], targets[k:k + 1], image_ids=ids[k:k + 1])
    b.update(preds[half:], targets[half:], image_ids=ids[half:])
    assert a.merge(b).compute(tide=True).tide == expected


def test_streaming_metric_tide_needs_coco_boxes():
    from deteval import MeanAveragePrecision, MetricInputError
    m = MeanAveragePrecision("voc12")
    with pytest.raises(MetricInputError, match="tide"):
        m.compute(tide=True)
    m = MeanAveragePrecision("coco", class_names={1: "a", 2: "a"})
    with pytest.raises(MetricInputError, match="unique category names"):
        m.compute(tide=True)


# ------------------------------------------------------------------------------- CLI

def test_cli_tide_adds_the_key_and_a_table(tmp_path, capsys):
    from deteval.cli import main
    gt, res = generate_case(3, many=True)
    gp, rp = _write(tmp_path, gt, res)
    plain, with_tide = tmp_path / "plain.json", tmp_path / "tide.json"
    assert main(["coco", str(gp), str(rp), "--json", str(plain)]) == 0
    capsys.readouterr()
    assert main(["coco", str(gp), str(rp), "--tide", "--json", str(with_tide)]) == 0
    out = capsys.readouterr().out
    assert "TIDE errors" in out and "Miss" in out
    a, b = json.loads(plain.read_text()), json.loads(with_tide.read_text())
    assert b.pop("tide") == _ours(gp, rp)
    assert a == b  # the plain evaluation is unchanged


def test_cli_tide_per_image_columns_add_up_to_the_counts(tmp_path, capsys):
    """With --per-image, every image entry carries its TIDE error counts (tide_<type>), and
    they add up to the report's counts; the image entries are the per-image report's."""
    from deteval.cli import main
    gt, res = generate_case(5, many=True)
    gp, rp = _write(tmp_path, gt, res)
    both, alone = tmp_path / "both.json", tmp_path / "alone.json"
    assert main(["coco", str(gp), str(rp), "--tide", "--per-image", "--json", str(both)]) == 0
    assert main(["coco", str(gp), str(rp), "--per-image", "--json", str(alone)]) == 0
    out = capsys.readouterr().out
    assert "tide_Miss" in out
    d, plain = json.loads(both.read_text()), json.loads(alone.read_text())
    assert len(d["images"]) == len(gt["images"])
    for t in ERROR_TYPES:
        assert sum(e[f"tide_{t}"] for e in d["images"]) == d["tide"]["counts"][t]
    strip = [{k: v for k, v in e.items() if not k.startswith("tide_")} for e in d["images"]]
    assert strip == plain["images"]


@pytest.mark.parametrize("extra", [["--iou-type", "segm"], ["--class-agnostic"],
                                   ["--dask", "local:1"]])
def test_cli_tide_with_unsupported_options_exits_2(tmp_path, capsys, extra):
    from deteval.cli import main
    gt, res = generate_case(3)
    gp, rp = _write(tmp_path, gt, res)
    out = tmp_path / "out.json"
    assert main(["coco", str(gp), str(rp), "--tide", "--json", str(out), *extra]) == 2
    assert "--tide" in capsys.readouterr().err and not out.exists()


def test_cli_tide_with_voc_exits_2(tmp_path, capsys):
    from deteval.cli import main
    assert main(["voc", str(tmp_path), str(tmp_path), "--tide"]) == 2
    err = capsys.readouterr().err
    assert "--tide" in err and "deteval coco" in err and "Traceback" not in err


def test_cli_tide_duplicate_category_names_exit_2(tmp_path, capsys):
    from deteval.cli import main
    gt, res = generate_case(3)
    gt["categories"][1]["name"] = gt["categories"][0]["name"]
    gp, rp = _write(tmp_path, gt, res)
    out = tmp_path / "out.json"
    assert main(["coco", str(gp), str(rp), "--tide", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unique category names" in err and gt["categories"][0]["name"] in err
    assert not out.exists()
    assert main(["coco", str(gp), str(rp), "--json", str(out)]) == 0  # without: fine


def test_scores_of_minus_one_or_less_still_pick_the_best_error():
    """tidecv starts its best-score search at -1 and raises KeyError when every candidate
    scores <= -1; here the highest-scored candidate is the one fixed, whatever the scores."""
    g, r = _case([1], [_obj(1, 1, (0, 0, 10, 10))], [
        _det(1, 1, (0, 0, 10, 4), -2.0),
        _det(1, 1, (0, 0, 10, 3), -3.0),
    ])
    assert r.counts["Loc"] == 2 and r.main["Loc"] == 100.0


def test_per_image_counts_add_up(tmp_path):
    gt, res = generate_case(5, many=True)
    g = load_coco_ground_truth(gt)
    r = tide_errors(g, load_coco_results(res, g))
    for t in ERROR_TYPES:
        assert r.per_image[t].shape == (g.num_images,)
        assert int(r.per_image[t].sum()) == r.counts[t]
    # the detection errors per image, recounted from the per-detection records
    img = load_coco_results(res, g).image_idx[r.detection_rows]
    for code, t in enumerate(ERROR_TYPES[:-1]):
        assert r.per_image[t].tolist() == np.bincount(img[r.detection_error == code],
                                                      minlength=g.num_images).tolist()


@pytest.mark.parametrize("seed", range(30))
def test_tidecv_ap_equals_classed_ap_data_object(seed):
    """The AP stage alone against tidecv's ClassedAPDataObject: random points with tied
    scores, classes with nGT 0, classes without points, recalls landing on k/100."""
    _tidecv()
    from tidecv.ap import ClassedAPDataObject

    from deteval.diagnostics.tide import _tidecv_map
    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 6))
    n = int(rng.integers(0, 400))
    cls = rng.integers(0, K, n)
    score = np.round(rng.random(n), int(rng.integers(1, 3)))
    num_gt = rng.integers(0, 60, K) * rng.integers(0, 2, K)
    num_gt[rng.integers(0, K)] = rng.choice([25, 50, 100, 7])  # recalls hit k/100 exactly
    is_tp = np.zeros(n, dtype=bool)
    for k in range(K):  # at most nGT true positives per class
        rows = np.flatnonzero(cls == k)
        pick = rng.permutation(rows)[:int(rng.integers(0, num_gt[k] + 1))]
        is_tp[pick] = rng.random(pick.shape[0]) < 0.8
    ref = ClassedAPDataObject()
    first_seen = []
    events = [("gt", k) for k in rng.permutation(K) if num_gt[k]] + [("pt", i) for i in range(n)]
    for kind, v in events:  # classes are created in this order
        k = int(v) if kind == "gt" else int(cls[v])
        if k not in first_seen:
            first_seen.append(k)
        if kind == "gt":
            ref.add_gt_positives(k, int(num_gt[k]))
        else:
            ref.push(k, int(v), float(score[v]), bool(is_tp[v]))
    try:
        expected = ref.get_mAP()
    except ZeroDivisionError:
        expected = 0.0
    got = _tidecv_map(cls.astype(np.int64), score, is_tp, num_gt.astype(np.int64),
                      np.array(first_seen, dtype=np.int64))
    assert got == expected


def _random_tables(seed):
    """Tables straight from numpy: boxes on a coarse integer grid (many equal IoUs, IoUs of
    exactly 0.5 and 0.1, boxes half inside crowd regions), few distinct scores."""
    from deteval.tables import Detections, GroundTruth
    rng = np.random.default_rng(seed)
    n_img, K = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    G, N = int(rng.integers(0, 30)), int(rng.integers(0, 300))

    def boxes(n):
        xy = rng.integers(0, 6, (n, 2)) * 2.0
        wh = rng.choice([2.0, 4.0, 8.0, 10.0, 20.0], (n, 2))
        return np.concatenate([xy, wh], axis=1)

    gt = GroundTruth(image_idx=rng.integers(0, n_img, G), class_idx=rng.integers(0, K, G),
                     boxes=boxes(G), difficult=np.zeros(G, bool), crowd=rng.random(G) < 0.2,
                     area=np.ones(G), image_ids=np.arange(n_img) * 7 + 3,
                     class_names=tuple(f"c{k}" for k in range(K)),
                     class_ids=np.arange(K) + 1, box_format="xywh")
    det = Detections(image_idx=rng.integers(0, n_img, N), class_idx=rng.integers(0, K, N),
                     boxes=boxes(N), scores=rng.integers(0, 5, N) / 4.0,
                     order=np.arange(N))
    return gt, det


def test_compiled_pass_equals_numpy_on_grid_boxes(monkeypatch):
    from deteval.diagnostics import tide
    if tide._kernels is None:
        pytest.skip("compiled extension not built")
    for seed in range(150):
        g, d = _random_tables(seed)
        a = tide.tide_errors(g, d)
        monkeypatch.setattr(tide, "_kernels", None)
        b = tide.tide_errors(g, d)
        monkeypatch.undo()
        assert a.to_dict() == b.to_dict(), seed
        assert np.array_equal(a.detection_error, b.detection_error), seed
        assert np.array_equal(a.detection_ignored, b.detection_ignored), seed
        assert np.array_equal(a.missed_rows, b.missed_rows), seed


def _tables_to_files(tmp_path, g, d, tag=""):
    images = [{"id": int(i), "width": 100, "height": 100, "file_name": f"{i}.jpg"}
              for i in g.image_ids]
    anns = []
    for r in range(len(g)):
        x, y, w, h = g.boxes[r].tolist()
        anns.append({"id": r + 1, "image_id": int(g.image_ids[g.image_idx[r]]),
                     "category_id": int(g.class_ids[g.class_idx[r]]), "bbox": [x, y, w, h],
                     "area": w * h, "iscrowd": int(g.crowd[r]),
                     "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]})
    cats = [{"id": int(c), "name": n} for c, n in zip(g.class_ids, g.class_names)]
    res = [{"image_id": int(g.image_ids[d.image_idx[r]]),
            "category_id": int(g.class_ids[d.class_idx[r]]),
            "bbox": d.boxes[r].tolist(), "score": float(d.scores[r])} for r in range(len(d))]
    return _write(tmp_path, {"images": images, "annotations": anns, "categories": cats},
                  res, tag)


@pytest.mark.parametrize("seed", range(12))
def test_grid_boxes_match_tidecv(tmp_path, seed):
    """Many exact IoU ties (first object wins), scores in five levels, crowd regions."""
    _tidecv()
    gp, rp = _tables_to_files(tmp_path, *_random_tables(seed))
    _assert_close(_ours(gp, rp), tidecv_figures(gp, rp))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 300))
def test_grid_boxes_match_tidecv_sweep(tmp_path, seed):
    _tidecv()
    gp, rp = _tables_to_files(tmp_path, *_random_tables(seed))
    _assert_close(_ours(gp, rp), tidecv_figures(gp, rp))


def test_voc_tables_are_refused():
    from deteval.errors import InputError
    from deteval.tables import Detections, GroundTruth
    gt = GroundTruth(image_idx=np.zeros(0, np.int64), class_idx=np.zeros(0, np.int64),
                     boxes=np.zeros((0, 4)), difficult=np.zeros(0, bool),
                     crowd=np.zeros(0, bool), area=np.zeros(0), image_ids=np.array(["a"]),
                     class_names=("x",))
    det = Detections(image_idx=np.zeros(0, np.int64), class_idx=np.zeros(0, np.int64),
                     boxes=np.zeros((0, 4)), scores=np.zeros(0), order=np.zeros(0, np.int64))
    with pytest.raises(InputError, match="xywh"):
        tide_errors(gt, det)


def test_cli_html_implies_tide_only_where_defined(tmp_path, capsys):
    """--html asks for --tide on bbox; with --class-agnostic the page goes without it."""
    pytest.importorskip("deteval.html")
    from deteval.cli import main
    gt, res = generate_case(3)
    gp, rp = _write(tmp_path, gt, res)
    page, out = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["coco", str(gp), str(rp), "--html", str(page), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["tide"] == _ours(gp, rp)
    assert main(["coco", str(gp), str(rp), "--class-agnostic", "--html", str(page),
                 "--json", str(out)]) == 0
    assert "tide" not in json.loads(out.read_text())
    assert main(["coco", str(gp), str(rp), "--class-agnostic", "--tide"]) == 2


def test_evaluate_with_tide_takes_tables_or_files(tmp_path):
    from deteval.diagnostics.tide import evaluate_coco_with_tide
    gt, res = generate_case(9, many=True)
    gp, rp = _write(tmp_path, gt, res)
    g = load_coco_ground_truth(gp)
    from_tables = evaluate_coco_with_tide(g, load_coco_results(rp, g)).to_dict()
    from_files = evaluate_coco_with_tide(gp, rp).to_dict()
    assert from_tables["tide"] == from_files["tide"] == _ours(gp, rp)
    assert from_tables["stats"] == from_files["stats"]
