"""deteval.evaluate_coco on the real COCO reference cases in tests/data/reference.

The data is read in place (never copied into the repo); the expected figures are
pycocotools 2.0.11's, stored in each case's ``expected_pycocotools.json``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import deteval
from coco_gen import dataset_to_results

REFERENCE = Path(__file__).resolve().parent / "data" / "reference"
TOL = 1e-12

# expected_pycocotools.json names -> deteval's stat names
STAT_NAMES = {"AP": "AP", "AP50": "AP50", "AP75": "AP75", "APsmall": "APs", "APmedium": "APm",
              "APlarge": "APl", "AR1": "AR1", "AR10": "AR10", "AR100": "AR100",
              "ARsmall": "ARs", "ARmedium": "ARm", "ARlarge": "ARl"}
ORDER = list(STAT_NAMES.values())

# case -> (ground truth file, detections file); a dict-style detections file is converted
CASES = {
    "coco_val2014_fake100_cocoapi": ("instances_val2014_100.json",
                                     "instances_val2014_fakebbox100_results.json"),
    "coco_val2014_fake100_bboxarea_nocrowd": ("sampled_gts_bbox_area.json", "cocoapi_results.json"),
    "coco_val2014_fake100_bboxarea_nocrowd/dataset_style_dets": ("sampled_gts_bbox_area.json",
                                                                 "sampled_bbox_results.json"),
    "coco_fce_shapes3": ("gt_dataset.json", "dt_dataset.json"),
}
TOY10 = "voc_padilla_toy10"


def case_dir(name: str) -> Path:
    d = REFERENCE / name.split("/")[0]
    assert (d / "expected_pycocotools.json").is_file(), f"test data missing: {d}"
    return d


def none_if_absent(v):
    return None if v == -1 else v


def close(got, want) -> bool:
    if want is None or got is None:
        return want is None and got is None
    return isinstance(got, float) and not math.isnan(got) and abs(got - want) <= TOL


def load_results(path: Path):
    data = json.loads(path.read_text())
    return dataset_to_results(data) if isinstance(data, dict) else None


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_case(name):
    d = case_dir(name)
    expected = json.loads((d / "expected_pycocotools.json").read_text())
    gt_file, dt_file = CASES[name]
    converted = load_results(d / dt_file)
    results = converted if converted is not None else d / dt_file  # a list file: by path
    report = deteval.evaluate_coco(d / gt_file, results).to_dict()

    problems = []
    stats = report["stats"]
    for src_name, value in expected["stats_dict"].items():
        got, want = stats[STAT_NAMES[src_name]], none_if_absent(value)
        if not close(got, want):
            problems.append(f"stats {STAT_NAMES[src_name]}: {got!r}, want {want!r}")
    # the array form agrees with the dict form
    assert [none_if_absent(v) for v in expected["stats"]] == \
        [none_if_absent(expected["stats_dict"][k]) for k in STAT_NAMES]

    classes = {c["id"]: c for c in report["classes"]}
    assert [c["id"] for c in report["classes"]] == sorted(int(k) for k in expected["per_category"])
    for cat_id, figures in expected["per_category"].items():
        c = classes[int(cat_id)]
        assert c["name"] == figures["name"]
        for key in ("AP", "AP50", "AP75", "AR100"):
            if key in figures and not close(c[key], none_if_absent(figures[key])):
                problems.append(f"class {cat_id} ({figures['name']}) {key}: {c[key]!r}, "
                                f"want {none_if_absent(figures[key])!r}")
    assert not problems, "\n".join(problems)


def test_toy10_gt_id_zero_is_matched():
    """The GT file has annotation id 0.  pycocotools counts the correct match to it
    as a false positive; deteval matches by position and gives the figures
    pycocotools gives once the ids are renumbered from 1."""
    d = case_dir(TOY10)
    expected = json.loads((d / "expected_pycocotools.json").read_text())
    gt_path = d / "gts_coco_format" / "toy_example_coco.JSON"
    assert 0 in [a["id"] for a in json.loads(gt_path.read_text())["annotations"]]
    results = load_results(d / "dets_coco_format" / "coco_dets.json")
    assert results is not None and len(results) == expected["n_detections"]

    report = deteval.evaluate_coco(gt_path, results).to_dict()
    correct = dict(zip(ORDER, map(none_if_absent, expected["informational_if_gt_annotation_ids_renumbered_from_1"])))
    buggy = {STAT_NAMES[k]: none_if_absent(v) for k, v in expected["stats_dict"].items()}

    problems = [f"stats {k}: {report['stats'][k]!r}, want {w!r}"
                for k, w in correct.items() if not close(report["stats"][k], w)]
    # one category: its figures are the overall ones
    (cat,) = report["classes"]
    assert (cat["id"], cat["name"]) == (0, "cat")
    problems += [f"class cat {k}: {cat[k]!r}, want {w!r}"
                 for k, w in correct.items() if not close(cat[k], w)]
    assert not problems, "\n".join(problems)

    # and it is not pycocotools' (buggy) figure for the file as it is
    for key in ("AP", "AP50", "AP75", "AR1", "AR100"):
        assert abs(report["stats"][key] - buggy[key]) > 0.05, key
    assert abs(report["stats"]["AP"] - 0.4952168788307403) > 0.1


def test_toy10_matches_pycocotools_after_renumbering():
    """The same case through the pycocotools oracle with ids + 1: equal to deteval
    on the original file, figure by figure (stats and the class)."""
    pytest.importorskip("pycocotools")
    from coco_gen import pycocotools_figures

    d = case_dir(TOY10)
    gt = json.loads((d / "gts_coco_format" / "toy_example_coco.JSON").read_text())
    results = load_results(d / "dets_coco_format" / "coco_dets.json")
    original = deteval.evaluate_coco(gt, results).to_dict()
    for a in gt["annotations"]:
        a["id"] += 1
    want = pycocotools_figures(gt, results)
    renumbered = deteval.evaluate_coco(gt, results).to_dict()
    assert renumbered["stats"] == original["stats"]
    for k, w in want["stats"].items():
        assert close(original["stats"][k], w), k
        assert close(original["classes"][0][k], want["classes"][0][k]), k
