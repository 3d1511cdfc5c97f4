"""Gaps found by other projects' test suites: custom area ranges without `all`, and
class-agnostic evaluation (pycocotools ``useCats=0``)."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import deteval

sys.path.insert(0, str(Path(__file__).parent))
import coco_gen  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT / "fixtures" / "coco" / "instances_val.json"
RES = ROOT / "fixtures" / "coco" / "results.json"


def test_area_ranges_without_all_leave_plain_figures_undefined_with_a_reason():
    rep = deteval.evaluate_coco(GT, RES, area_ranges={"tiny": (0, 400), "big": (400, 1e10)})
    d = rep.to_dict()
    for name in ("AP", "AP50", "AP75", "AR1", "AR10", "AR100"):
        assert d["stats"][name] is None, name
    assert d["stats"]["AP_tiny"] is not None and d["stats"]["AR_big"] is not None
    assert any("`all` area range" in n for n in d["notes"])
    assert all(c["AP"] is None for c in d["classes"])
    # the per-range figures are those of a run that has `all` too
    full = deteval.evaluate_coco(GT, RES, area_ranges={"all": (0, 1e10), "tiny": (0, 400),
                                                       "big": (400, 1e10)}).to_dict()
    assert d["stats"]["AP_tiny"] == full["stats"]["AP_tiny"]
    assert "notes" not in full


def _pycocotools_agnostic(gt, results):
    pytest.importorskip("pycocotools")
    import contextlib
    import io
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(results)) if results else COCO()
        E = COCOeval(cg, cd, "bbox")
        E.params.useCats = 0
        E.evaluate()
        E.accumulate()
        E.summarize()
    return [None if v == -1 else float(v) for v in E.stats]


NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


@pytest.mark.parametrize("seed", range(12))
def test_class_agnostic_equals_pycocotools_usecats_0(seed):
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    ref = _pycocotools_agnostic(case.gt, case.results)
    rep = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results),
                                class_agnostic=True).to_dict()
    got = [rep["stats"][n] for n in NAMES]
    for n, a, b in zip(NAMES, got, ref):
        assert (a is None) == (b is None), n
        if a is not None:
            assert abs(a - b) <= 1e-12, (n, a, b)
    assert rep["classes"][0]["id"] is None and len(rep["classes"]) == 1
    assert rep["params"]["class_agnostic"] is True


def test_class_agnostic_cli():
    p = subprocess.run([sys.executable, "-m", "deteval", "coco", str(GT), str(RES),
                        "--class-agnostic"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "(all classes)" in p.stdout
    gt = json.loads(GT.read_text())
    ref = _pycocotools_agnostic(gt, json.loads(RES.read_text()))
    assert f"AP           {ref[0]:.4f}" in p.stdout


def test_voc_rows_add_up_with_the_ignored_column():
    rep = deteval.evaluate_voc(ROOT / "fixtures" / "voc" / "VOC2007",
                               ROOT / "fixtures" / "voc" / "results", imageset="test").to_dict()
    assert sum(c["ignored"] for c in rep["classes"]) > 0  # the fixture hits difficult objects
    for c in rep["classes"]:
        assert c["tp"] + c["fp"] + c["ignored"] == c["num_detections"], c["name"]
    p = subprocess.run([sys.executable, "-m", "deteval", "voc", str(ROOT / "fixtures" / "voc" /
                        "VOC2007"), str(ROOT / "fixtures" / "voc" / "results"), "--imageset",
                        "test"], cwd=ROOT, capture_output=True, text=True)
    header = p.stdout.splitlines()[0].split()
    assert header[-1] == "ignored"
    bicycle = next(ln.split() for ln in p.stdout.splitlines() if ln.startswith("bicycle"))
    row = next(c for c in rep["classes"] if c["name"] == "bicycle")
    assert int(bicycle[-1]) == row["ignored"]


def test_ground_truth_without_categories_gives_null_figures(tmp_path):
    """No category at all: every figure is undefined (pycocotools prints -1), never a
    traceback."""
    import json as _json

    from deteval import evaluate_coco
    gt = {"images": [{"id": 1, "width": 10, "height": 10}], "annotations": [],
          "categories": []}
    report = evaluate_coco(gt, [])
    assert report.classes == [] or len(report.to_dict()["classes"]) == 0
    assert all(v is None for v in report.to_dict()["stats"].values())
    assert any("no categories" in n for n in report.to_dict()["notes"])
    _json.dumps(report.to_dict(), allow_nan=False)
