"""deteval lvis: parity with lvis-api 0.5.3, the fixed-AP protocol, the report, bad input.

Differential tests run lvis-api (``tests/lvis_oracle.py``, with its ``np.float`` shim) on
seeded random federated cases: every stat and every per-class figure must agree to 1e-12,
and undefined figures (lvis-api's -1) must be None on both sides.
"""
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.errors import InputError
from deteval.lvis import evaluate_lvis

from lvis_oracle import generate_lvis_case, lvis_api, lvis_api_figures

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-12


def assert_same(ref, rep, where=""):
    assert list(ref["stats"]) == list(rep.stats), where
    for k, v in ref["stats"].items():
        w = rep.stats[k]
        assert (v is None) == (w is None), f"{where} {k}: lvis-api {v}, deteval {w}"
        if v is not None:
            assert abs(v - w) <= TOL, f"{where} {k}: lvis-api {v!r}, deteval {w!r}"
    assert len(rep.classes) == len(ref["classes"])
    for c in rep.classes:
        for k, v in ref["classes"][c["id"]].items():
            w = c[k]
            assert (v is None) == (w is None), f"{where} class {c['id']} {k}: {v} vs {w}"
            if v is not None:
                assert abs(v - w) <= TOL, f"{where} class {c['id']} {k}: {v!r} vs {w!r}"


def run_both(gt, res, **kw):
    ref = lvis_api_figures(gt, res, **kw)
    rep = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), **kw)
    return ref, rep


# ------------------------------------------------------------------ differential

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_dets", [300, 15])
def test_parity_random(seed, max_dets):
    """Not-exhaustive and negative categories, results on unverified categories, ignored
    and area-0 objects, zero-area results, tied scores; cap 15 binds on most images."""
    lvis_api()
    gt, res = generate_lvis_case(seed)
    ref, rep = run_both(gt, res, max_dets=max_dets)
    assert_same(ref, rep, f"seed {seed}")
    if max_dets == 15:
        assert rep.inputs["num_results_kept"] < rep.inputs["num_results"]  # the cap bound
    assert rep.inputs["num_results_evaluated"] < rep.inputs["num_results_kept"]  # federated


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 306))
def test_parity_random_sweep(seed):
    lvis_api()
    gt, res = generate_lvis_case(seed, num_images=8 + seed % 9, num_cats=10 + seed % 30,
                                 tie_levels=3 + seed % 20)
    for md in (300, 5 + seed % 20):
        ref, rep = run_both(gt, res, max_dets=md)
        assert_same(ref, rep, f"seed {seed} max_dets {md}")


@pytest.mark.parametrize("seed", [0, 1])
def test_parity_more_than_300_results_per_image(seed):
    """The default cap of 300 over all categories of an image, with ties at the cut."""
    lvis_api()
    gt, res = generate_lvis_case(100 + seed, num_images=4, num_cats=8,
                                 results_per_image=(280, 380), tie_levels=6)
    counts = np.bincount([r["image_id"] for r in res])
    assert counts.max() > 300
    ref, rep = run_both(gt, res)
    assert_same(ref, rep, f"seed {seed}")
    assert "AR300" in rep.stats


def test_parity_ties_decide_the_cut():
    """Every score equal: which results survive the per-image cut is file order alone."""
    lvis_api()
    gt, res = generate_lvis_case(7, num_images=5, num_cats=6, results_per_image=(20, 40),
                                 tie_levels=1)
    for md in (3, 10):
        ref, rep = run_both(gt, res, max_dets=md)
        assert_same(ref, rep, f"max_dets {md}")
        rev = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res[::-1]), max_dets=md)
        assert rev.stats != rep.stats  # the order matters, and is followed


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("per_class", [10000, 6])
def test_parity_fixed_ap(seed, per_class):
    """--fixed against lvis-api run as Dave et al.'s evaluate_ap_fixed.py runs it."""
    lvis_api()
    gt, res = generate_lvis_case(200 + seed)
    ref, rep = run_both(gt, res, fixed=True, max_dets_per_class=per_class)
    assert_same(ref, rep, f"seed {seed}")
    assert "AR" in rep.stats and rep.params["fixed"] is True


@pytest.mark.parametrize("with_box", [True, False])
def test_parity_segm(with_box):
    """segm: mask IoU; a result's area is its box's w*h when it has a box, else its mask
    area (as LVISResults decides from the first result)."""
    lvis_api()
    pytest.importorskip("pycocotools")
    gt, res = generate_lvis_case(300, num_images=6, num_cats=10, segm=True)
    if not with_box:
        for r in res:
            del r["bbox"]
    ref, rep = run_both(gt, res, iou_type="segm", max_dets=20)
    assert_same(ref, rep)
    assert rep.iou_type == "segm"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_parity_sweep_fixed_and_segm(seed):
    lvis_api()
    gt, res = generate_lvis_case(400 + seed)
    ref, rep = run_both(gt, res, fixed=True, max_dets_per_class=3 + seed)
    assert_same(ref, rep, f"fixed seed {seed}")
    gt, res = generate_lvis_case(500 + seed, num_images=5, num_cats=8, segm=True)
    ref, rep = run_both(gt, res, iou_type="segm", max_dets=10 + seed)
    assert_same(ref, rep, f"segm seed {seed}")


# ------------------------------------------------------------------ hand cases

def _hand_gt(freq="r"):
    """Two images, one category (id 1) annotated on both; category 2 verified absent on
    image 10 and unverified on image 20."""
    return {"images": [{"id": 10, "height": 100, "width": 100, "neg_category_ids": [2],
                        "not_exhaustive_category_ids": []},
                       {"id": 20, "height": 100, "width": 100, "neg_category_ids": [],
                        "not_exhaustive_category_ids": []}],
            "annotations": [{"id": 1, "image_id": 10, "category_id": 1,
                             "bbox": [10, 10, 40, 40], "area": 1600},
                            {"id": 2, "image_id": 20, "category_id": 1,
                             "bbox": [10, 10, 40, 40], "area": 1600}],
            "categories": [{"id": 1, "name": "a", "frequency": freq},
                           {"id": 2, "name": "b", "frequency": "f"}]}


def _r(img, cat, score, box=(10, 10, 40, 40)):
    return {"image_id": img, "category_id": cat, "bbox": list(box), "score": score}


FAR = (60, 60, 30, 30)
EPS = np.spacing(1)


def test_fixed_equals_standard_without_binding_caps():
    """Where neither cap binds, fixed AP is the standard protocol without a per-image cap."""
    gt, res = generate_lvis_case(11, results_per_image=(0, 30))
    fixed = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), fixed=True)
    std = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), max_dets=10 ** 6)
    s_fixed = dict(fixed.stats)
    s_fixed["AR1000000"] = s_fixed.pop("AR")
    assert s_fixed == std.stats
    assert [c["AP"] for c in fixed.classes] == [c["AP"] for c in std.classes]
    # with the per-image cap binding, the standard protocol differs
    assert evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), max_dets=5).stats != std.stats


def test_fixed_per_class_cap_hand_case():
    """Category 1: an FP at 0.95 and a TP at 0.9 on image 10, a TP at 0.8 on image 20.

    k = 3: ranks FP, TP, TP: precision 1/2 then 2/3; the envelope is 2/3 at every recall
    point: AP = 2/3. k = 2: the TP at 0.8 is cut: recall 1/2 at precision 1/2: AP = 0.5 *
    51 / 101 (the recall points 0, 0.01, ..., 0.5). The standard protocol with 1 result per
    image keeps the FP on image 10 and the TP on image 20: the same figures as k = 2.
    """
    res = [_r(10, 1, 0.9), _r(20, 1, 0.8), _r(10, 1, 0.95, FAR)]
    k3 = evaluate_lvis(_hand_gt(), res, fixed=True, max_dets_per_class=3)
    assert k3.stats["AP"] == pytest.approx(2 / (3 + EPS), abs=1e-15)
    assert k3.stats["AR"] == 1.0
    k2 = evaluate_lvis(_hand_gt(), res, fixed=True, max_dets_per_class=2)
    half = 1 / (2 + EPS)
    assert k2.stats["AP"] == pytest.approx(half * 51 / 101, abs=1e-15)
    assert k2.stats["AR"] == 0.5
    assert k2.stats["APr"] == k2.stats["AP"] and k2.stats["APf"] is None
    std = evaluate_lvis(_hand_gt(), res, max_dets=1)
    assert std.stats["AP"] == k2.stats["AP"] and std.stats["AR1"] == 0.5


def test_fixed_cap_counts_results_the_federated_filter_drops():
    """The per-category cut comes first, over the whole file (as the fixed-AP script
    applies it before lvis-api): a category-1 result on an image where category 1 is...
    annotated counts; here the quota of 1 goes to the highest score even though that
    result is later dropped (category 2 on image 20 is unverified)."""
    res = [_r(10, 2, 0.99, FAR), _r(20, 2, 0.98, FAR), _r(10, 1, 0.5)]
    r1 = evaluate_lvis(_hand_gt(), res, fixed=True, max_dets_per_class=1)
    # category 2: its one kept result (image 10, verified negative) is an FP, no GT: None
    b = next(c for c in r1.classes if c["id"] == 2)
    assert b["AP"] is None and b["num_results"] == 1
    res = [_r(20, 1, 0.99, FAR), _r(10, 1, 0.5)]
    assert evaluate_lvis(_hand_gt(), res, fixed=True, max_dets_per_class=1).stats["AP"] == 0.0
    assert evaluate_lvis(_hand_gt(), res, fixed=True, max_dets_per_class=2).stats["AP"] > 0


def test_fixed_cap_ties_keep_file_order():
    res = [_r(20, 1, 0.9, FAR), _r(10, 1, 0.9)]
    assert evaluate_lvis(_hand_gt(), res, fixed=True,
                         max_dets_per_class=1).stats["AP"] == 0.0
    assert evaluate_lvis(_hand_gt(), res[::-1], fixed=True,
                         max_dets_per_class=1).stats["AP"] > 0.0


def test_not_exhaustive_unmatched_results_are_ignored():
    gt = _hand_gt()
    res = [_r(10, 1, 0.99, FAR), _r(10, 1, 0.5)]
    assert evaluate_lvis(copy.deepcopy(gt), res).classes[0]["AP50"] < 1.0
    gt["images"][0]["not_exhaustive_category_ids"] = [1]
    rep = evaluate_lvis(gt, res)
    assert rep.classes[0]["AP50"] == pytest.approx(1 / (1 + EPS) * 51 / 101, abs=1e-15)


# ------------------------------------------------------------------ CLI and report

def _write(tmp_path, gt, res):
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(res))
    return g, r


def test_cli_report(tmp_path, capsys):
    gt, res = generate_lvis_case(3)
    g, r = _write(tmp_path, gt, res)
    out = tmp_path / "out.json"
    assert main(["lvis", str(g), str(r), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rep = json.loads(out.read_text())
    assert rep["protocol"] == "lvis" and rep["iou_type"] == "bbox"
    assert list(rep["stats"]) == ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc",
                                  "APf", "AR300", "ARs", "ARm", "ARl"]
    assert {c["frequency"] for c in rep["classes"]} <= {"r", "c", "f"}
    assert any(c["AP"] is None for c in rep["classes"])  # classes without GT: null, not -1
    assert all(c["AP"] is None or 0 <= c["AP"] <= 1 for c in rep["classes"])
    assert "-1" not in json.dumps(rep["stats"])
    direct = evaluate_lvis(g, r)
    assert rep["stats"] == direct.stats
    for word in ("rare", "common", "frequent", "worst rare classes", "APr"):
        assert word in text
    assert main(["lvis", str(g), str(r), "--fixed", "--max-dets-per-class", "5"]) == 0
    assert "fixed AP" in capsys.readouterr().out


def _bad(tmp_path, capsys, gt, res, *extra):
    g, r = _write(tmp_path, gt, res)
    out = tmp_path / "out.json"
    code = main(["lvis", str(g), str(r), "--json", str(out), *extra])
    err = capsys.readouterr()
    assert code == 2
    assert not out.exists()
    assert "Traceback" not in err.err and err.out == ""
    return err.err, g, r


def test_bad_missing_frequency(tmp_path, capsys):
    gt = _hand_gt()
    del gt["categories"][1]["frequency"]
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert str(g) in err and "categories[1] (id 2)" in err and "`frequency`" in err


def test_bad_frequency_value(tmp_path, capsys):
    gt = _hand_gt()
    gt["categories"][0]["frequency"] = "rare"
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert "categories[0] (id 1)" in err and "'rare'" in err


def test_bad_negative_category_unknown(tmp_path, capsys):
    gt = _hand_gt()
    gt["images"][1]["neg_category_ids"] = [2, 77]
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert str(g) in err and "images[1] (id 20)" in err and "77" in err
    assert "neg_category_ids" in err


def test_bad_missing_not_exhaustive(tmp_path, capsys):
    gt = _hand_gt()
    del gt["images"][0]["not_exhaustive_category_ids"]
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert "images[0] (id 10)" in err and "not_exhaustive_category_ids" in err


def test_bad_results_unknown_image(tmp_path, capsys):
    err, _, r = _bad(tmp_path, capsys, _hand_gt(), [_r(10, 1, 0.5), _r(99, 1, 0.5)])
    assert str(r) in err and "results[1]" in err and "99" in err


def test_bad_plain_coco_ground_truth(tmp_path, capsys):
    gt = _hand_gt()
    for im in gt["images"]:
        del im["neg_category_ids"], im["not_exhaustive_category_ids"]
    for c in gt["categories"]:
        del c["frequency"]
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert str(g) in err and "deteval coco" in err


def test_bad_annotation_ids(tmp_path, capsys):
    gt = _hand_gt()
    gt["annotations"][1]["id"] = 1
    err, _, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert "unique ids" in err and "annotations[1]" in err


def test_bad_option_combinations(tmp_path, capsys):
    err, _, _ = _bad(tmp_path, capsys, _hand_gt(), [_r(10, 1, 0.5)], "--fixed",
                     "--max-dets", "100")
    assert "--max-dets" in err
    err, _, _ = _bad(tmp_path, capsys, _hand_gt(), [_r(10, 1, 0.5)],
                     "--max-dets-per-class", "100")
    assert "--max-dets-per-class" in err
    err, _, _ = _bad(tmp_path, capsys, _hand_gt(), [_r(10, 1, 0.5)], "--max-dets", "0")
    assert "max_dets" in err


def test_bad_input_subprocess_exit_2(tmp_path):
    gt = _hand_gt()
    del gt["categories"][0]["frequency"]
    g, r = _write(tmp_path, gt, [_r(10, 1, 0.5)])
    p = subprocess.run([sys.executable, "-m", "deteval", "lvis", str(g), str(r)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stdout == ""
    assert "categories[0] (id 1)" in p.stderr


def test_empty_results(tmp_path):
    rep = evaluate_lvis(_hand_gt(), [])
    assert rep.stats["AP"] == 0.0 and rep.stats["APr"] == 0.0 and rep.stats["APf"] is None


def test_numpy_path_equals_compiled(monkeypatch):
    """Without the compiled kernels (the numpy reference walk and sorts): the same figures."""
    from deteval import match, rank
    gt, res = generate_lvis_case(21, results_per_image=(0, 60))
    compiled = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), max_dets=25)
    monkeypatch.setattr(match, "_kernels", None)
    monkeypatch.setattr(rank, "_kernels", None)
    plain = evaluate_lvis(copy.deepcopy(gt), copy.deepcopy(res), max_dets=25)
    assert plain.stats == compiled.stats
    assert plain.classes == compiled.classes


def test_bad_results_unknown_category(tmp_path, capsys):
    """lvis-api drops such results silently (after they took a place in the per-image cut);
    deteval refuses them, naming the record."""
    err, _, r = _bad(tmp_path, capsys, _hand_gt(), [_r(10, 1, 0.5), _r(10, 5, 0.5)])
    assert str(r) in err and "results[1]" in err and "category_id" in err


def test_bad_not_exhaustive_unknown_category(tmp_path, capsys):
    gt = _hand_gt()
    gt["images"][0]["not_exhaustive_category_ids"] = ["x"]
    err, g, _ = _bad(tmp_path, capsys, gt, [_r(10, 1, 0.5)])
    assert "images[0] (id 10)" in err and "not_exhaustive_category_ids" in err


def test_plain_coco_fixture_points_to_deteval_coco(capsys):
    coco = ROOT / "fixtures" / "coco"
    assert main(["lvis", str(coco / "instances_val.json"), str(coco / "results.json")]) == 2
    err = capsys.readouterr().err
    assert "instances_val.json" in err and "use `deteval coco`" in err


def test_compare_lvis_reports(tmp_path, capsys):
    """`deteval compare` gates LVIS reports like COCO ones (stats by name, per class by id)."""
    gt, res = generate_lvis_case(5)
    g, r = _write(tmp_path, gt, res)
    # every third result moved off its object: TPs become FPs, nothing improves
    worse = [dict(x, bbox=[x["bbox"][0] + (900 if i % 3 == 0 else 0)] + x["bbox"][1:])
             for i, x in enumerate(res)]
    w = tmp_path / "worse.json"
    w.write_text(json.dumps(worse))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["lvis", str(g), str(r), "--json", str(a)]) == 0
    assert main(["lvis", str(g), str(w), "--json", str(b)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(a), "--per-class"]) == 0
    assert main(["compare", str(a), str(b), "--metrics", "AP,APr"]) == 1
    out = capsys.readouterr().out
    assert "APr" in out
