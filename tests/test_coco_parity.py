"""Differential tests: deteval.evaluate_coco against pycocotools COCOeval (bbox).

Random cases come from ``coco_gen.generate_case(seed)`` (GT annotation ids from 1;
see coco_gen).  Every figure must agree to 1e-12, None with None.

    pytest tests/test_coco_parity.py            # the default subset (seeds 0-39)
    pytest -m slow tests/test_coco_parity.py    # the sweep: 500 more seeds, 100 per custom parameter set
"""
from __future__ import annotations

import copy
import json
import math
import random

import pytest

pytest.importorskip("pycocotools")

import deteval  # noqa: E402
from coco_gen import (  # noqa: E402
    FEATURES,
    empty_results_figures,
    figure_names,
    generate_case,
    pycocotools_figures,
    shuffle_ground_truth,
    shuffle_results,
)

TOL = 1e-12
DEFAULT_SEEDS = range(40)
SLOW_SEEDS = range(40, 540)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def run_deteval(gt, results, **params) -> dict:
    return deteval.evaluate_coco(gt, results, **params).to_dict()


def figures_only(report: dict) -> dict:
    """The report without its ``inputs`` block (file names, sizes, content hashes)."""
    return {k: v for k, v in report.items() if k != "inputs"}


def _diffs(got: dict, want: dict, where: str):
    out = []
    for name, w in want.items():
        if name not in got:
            out.append(f"{where}: {name} missing (want {w!r})")
            continue
        g = got[name]
        if w is None or g is None:
            if not (w is None and g is None):
                out.append(f"{where}: {name} = {g!r}, want {w!r}")
        elif not isinstance(g, float) or math.isnan(g) or abs(g - w) > TOL:
            out.append(f"{where}: {name} = {g!r}, want {w!r} (diff {abs(g - w) if isinstance(g, float) else '?'})")
    return out


def assert_matches(report: dict, want: dict, gt: dict, exact_keys: bool = True):
    """``report``: deteval's to_dict(); ``want``: pycocotools_figures() shape."""
    problems = []
    assert report["protocol"] == "coco"
    stats = report["stats"]
    if exact_keys:
        assert set(stats) == set(want["stats"]), (sorted(stats), sorted(want["stats"]))
    problems += _diffs(stats, want["stats"], "stats")
    classes = report["classes"]
    names = {c["id"]: c["name"] for c in gt["categories"]}
    assert [c["id"] for c in classes] == sorted(names), "classes: every GT category, in id order"
    for c in classes:
        assert c["name"] == names[c["id"]]
        problems += _diffs(c, want["classes"][c["id"]], f"class {c['id']}")
    assert not problems, "\n".join(problems[:25]) + (f"\n... {len(problems)} in all" if len(problems) > 25 else "")


def check_case(case, **params):
    want = (pycocotools_figures(case.gt, case.results, **params) if case.results
            else empty_results_figures(case.gt, **params))
    gt_before, res_before = copy.deepcopy(case.gt), copy.deepcopy(case.results)
    report = run_deteval(case.gt, case.results, **params)
    assert case.gt == gt_before and case.results == res_before, "deteval mutated its input"
    assert_matches(report, want, case.gt)
    return report


# ---------------------------------------------------------------------------
# the generator itself
# ---------------------------------------------------------------------------
def test_default_subset_covers_every_feature():
    seen = set()
    for seed in DEFAULT_SEEDS:
        seen |= generate_case(seed).features
    assert seen == set(FEATURES), set(FEATURES) - seen


def test_generator_is_deterministic_and_ids_start_at_one():
    a, b = generate_case(7), generate_case(7)
    assert a.gt == b.gt and a.results == b.results
    for seed in DEFAULT_SEEDS:
        assert min(x["id"] for x in generate_case(seed).gt["annotations"]) >= 1


# ---------------------------------------------------------------------------
# parity
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_parity_default_params(seed):
    check_case(generate_case(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_parity_default_params_sweep(seed):
    check_case(generate_case(seed))


CUSTOM_PARAMS = {
    "iou_0.3_0.5": dict(iou_thresholds=[0.3, 0.5]),
    # thresholds written as decimals (linspace gives 0.8999999999999999 for 0.9);
    # the generator's exact-fraction IoUs land on them
    "iou_exact_fractions": dict(iou_thresholds=[0.6, 0.7, 0.75]),
    "maxdets_1_5_20": dict(max_dets=(1, 5, 20)),
    "custom_areas": dict(area_ranges={"all": (0.0, 1e10), "tiny": (0.0, 16.0 ** 2),
                                      "mid": (16.0 ** 2, 64.0 ** 2), "big": (64.0 ** 2, 1e10)}),
    "everything": dict(iou_thresholds=[0.3, 0.5, 0.75], max_dets=(1, 5, 20),
                       area_ranges={"all": (0.0, 1e10), "tiny": (0.0, 16.0 ** 2),
                                    "huge": (128.0 ** 2, 1e10)}),
}


@pytest.mark.parametrize("name", sorted(CUSTOM_PARAMS))
@pytest.mark.parametrize("seed", [1, 4, 9, 17, 23, 38])
def test_parity_custom_params(seed, name):
    params = CUSTOM_PARAMS[name]
    case = generate_case(seed)
    report = check_case(case, **params)
    want_names = figure_names(params.get("area_ranges"), params.get("max_dets", (1, 10, 100)),
                              params.get("iou_thresholds"))
    assert set(report["stats"]) == set(want_names)  # by name; order is not part of the contract


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CUSTOM_PARAMS))
@pytest.mark.parametrize("seed", range(100, 200))
def test_parity_custom_params_sweep(seed, name):
    check_case(generate_case(seed), **CUSTOM_PARAMS[name])


# ---------------------------------------------------------------------------
# empty results: pycocotools crashes, so the expectation is worked out by hand
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 3, 5, 11, 26])
def test_empty_results(seed):
    case = generate_case(seed)
    want = empty_results_figures(case.gt)
    assert_matches(run_deteval(case.gt, []), want, case.gt)
    # cross-check the hand rule: pycocotools with one detection of a category the GT
    # does not have (ignored by COCOeval) is the same evaluation as no detections
    dummy = [{"image_id": case.gt["images"][0]["id"], "category_id": -987654,
              "bbox": [0, 0, 1, 1], "score": 0.5}]
    assert pycocotools_figures(case.gt, dummy) == want


def test_empty_results_custom_params():
    case = generate_case(2)
    params = CUSTOM_PARAMS["everything"]
    assert_matches(run_deteval(case.gt, [], **params),
                   empty_results_figures(case.gt, **params), case.gt)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------
PROPERTY_SEEDS = [0, 2, 5, 8, 13, 21, 34]


@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_results_order_does_not_matter(seed):
    # equal-score detections of one image and class keep their relative order:
    # file order is the tie-break there, in pycocotools and in deteval
    case = generate_case(seed)
    base = figures_only(run_deteval(case.gt, case.results))
    for k in range(3):
        assert figures_only(run_deteval(case.gt, shuffle_results(case.results, 1000 * seed + k))) == base


@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_ground_truth_order_does_not_matter(seed):
    # images, categories and annotations shuffled (annotations keep their order
    # within one image and category, which decides equal-IoU matches)
    case = generate_case(seed)
    base = figures_only(run_deteval(case.gt, case.results))
    for k in range(3):
        assert figures_only(run_deteval(shuffle_ground_truth(case.gt, 1000 * seed + k), case.results)) == base


def test_image_order_alone_does_not_matter():
    for seed in PROPERTY_SEEDS:
        case = generate_case(seed)
        gt = dict(case.gt)
        gt["images"] = list(reversed(case.gt["images"]))
        assert figures_only(run_deteval(gt, case.results)) == figures_only(run_deteval(case.gt, case.results))


def test_full_shuffle_with_within_image_ties_can_change_pycocotools():
    # documents why shuffle_results() keeps tied detections in order: with a
    # plain shuffle, pycocotools' own figures change (stable sort on file order)
    gt = {"images": [{"id": 1, "file_name": "1.jpg", "width": 20, "height": 20}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100.0, "iscrowd": 0}]}
    good = {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.5}
    poor = {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 6], "score": 0.5}  # IoU 0.6
    a = pycocotools_figures(gt, [good, poor])
    b = pycocotools_figures(gt, [poor, good])
    # [good, poor]: good is the TP at every threshold -> AP 1; [poor, good]: poor takes
    # the GT at thresholds <= 0.6 (good is then an FP ranked after it, harmless);
    # above 0.6 poor is an FP ranked before good -> AP (3 + 7 * 0.5) / 10
    assert a["stats"]["AP"] > 0.99 and b["stats"]["AP"] < 0.7
    assert_matches(run_deteval(gt, [good, poor]), a, gt)
    assert_matches(run_deteval(gt, [poor, good]), b, gt)


@pytest.mark.parametrize("seed", [6, 19])
def test_paths_and_objects_give_the_same_report(seed, tmp_path):
    case = generate_case(seed)
    gt_path, res_path = tmp_path / "gt.json", tmp_path / "results.json"
    gt_path.write_text(json.dumps(case.gt))
    res_path.write_text(json.dumps(case.results))
    from_objects = figures_only(run_deteval(case.gt, case.results))
    assert figures_only(run_deteval(str(gt_path), str(res_path))) == from_objects
    assert figures_only(run_deteval(gt_path, res_path)) == from_objects


def test_shuffled_cases_still_match_pycocotools():
    # the same cases, reordered, against pycocotools on the reordered input
    for seed in (3, 12):
        case = generate_case(seed)
        rng = random.Random(seed)
        gt = shuffle_ground_truth(case.gt, rng.randrange(10 ** 6))
        results = shuffle_results(case.results, rng.randrange(10 ** 6))
        assert_matches(run_deteval(gt, results), pycocotools_figures(gt, results), gt)
