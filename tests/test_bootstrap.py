"""Bootstrap replicates (deteval.bootstrap) against pycocotools on explicitly resampled data."""
import numpy as np
import pytest

from deteval.ap import summarize_coco
from deteval.bootstrap import (coco_gt_counts, percentile_interval, replicate_draws,
                               resample_coco_matches)
from deteval.io.coco import load_coco_ground_truth, load_coco_results
from deteval.match import match_coco
from deteval.params import COCO_RECALL_THRESHOLDS, coco_params

from coco_gen import generate_case, pycocotools_figures

pytest.importorskip("pycocotools")


def explicit_resample(gt: dict, results: list, draws: np.ndarray):
    """The dataset whose image j (id j + 1) is the draws[j]-th image by ascending id."""
    ids = sorted(im["id"] for im in gt["images"])
    by_id = {im["id"]: im for im in gt["images"]}
    images, anns, res = [], [], []
    for j, d in enumerate(draws):
        old = ids[int(d)]
        images.append({**by_id[old], "id": j + 1})
        for a in gt["annotations"]:
            if a["image_id"] == old:
                anns.append({**a, "image_id": j + 1, "id": len(anns) + 1})
        for r in results:
            if r["image_id"] == old:
                res.append({**r, "image_id": j + 1})
    return {**gt, "images": images, "annotations": anns}, res


def deteval_replicate(gt_dict, results, draws):
    thr, areas, md, default = coco_params(None, None, None, "bbox")
    gt = load_coco_ground_truth(gt_dict)
    det = load_coco_results(results, gt)
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
    matches = match_coco(gt, det, thr, area_arr, md[-1])
    counts = coco_gt_counts(gt, area_arr, image_key)
    rep = resample_coco_matches(matches, counts, draws)
    return summarize_coco(rep, thr, list(areas), md, COCO_RECALL_THRESHOLDS, default).stats


@pytest.mark.parametrize("case_seed", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("boot_seed", [0, 7])
def test_replicate_equals_pycocotools_on_resampled_dataset(case_seed, boot_seed):
    case = generate_case(case_seed)
    n = len(case.gt["images"])
    draws = replicate_draws(n, 3, boot_seed)
    for row in draws:
        got = deteval_replicate(case.gt, case.results, row)
        want = pycocotools_figures(*explicit_resample(case.gt, case.results, row))["stats"]
        assert set(want) <= set(got)
        for name, w in want.items():
            g = got[name]
            if w is None:
                assert g is None, (name, g)
            else:
                assert g == pytest.approx(w, abs=1e-12), (name, g, w)


def test_tied_scores_across_duplicated_images():
    # every detection scores 0.5: the order among copies is the draw order
    gt = {"images": [{"id": 1, "width": 100, "height": 100}, {"id": 2, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100, "iscrowd": 0},
                          {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100, "iscrowd": 0}]}
    res = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.5},
           {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.5},
           {"image_id": 2, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.5}]
    for row in (np.array([1, 0]), np.array([0, 1]), np.array([1, 1]), np.array([0, 0])):
        got = deteval_replicate(gt, res, row)
        want = pycocotools_figures(*explicit_resample(gt, res, row))["stats"]
        for name, w in want.items():
            assert (got[name] is None) if w is None else got[name] == pytest.approx(w, abs=1e-12)


def test_replicate_draws_are_numpy_rows():
    want = np.random.default_rng(3).integers(0, 17, size=(5, 17))
    np.testing.assert_array_equal(replicate_draws(17, 5, 3), want)


def test_percentile_interval_equals_numpy_and_counts_nulls():
    vals = [0.1, None, 0.4, 0.2, float("nan"), 0.9, 0.3]
    iv, nulls = percentile_interval(vals, 0.5)
    ok = np.array([0.1, 0.4, 0.2, 0.9, 0.3])
    assert iv == (np.percentile(ok, 25.0), np.percentile(ok, 75.0)) == (0.2, 0.4)
    assert nulls == 2
    assert percentile_interval([None, None]) == (None, 2)


@pytest.mark.parametrize("samples,confidence", [(0, 0.95), (-3, 0.95), (10, 0.0), (10, 1.0),
                                                (10, 1.5)])
def test_bad_parameters_raise_input_error(samples, confidence):
    from deteval.bootstrap import check_bootstrap_params
    from deteval.errors import InputError
    with pytest.raises(InputError, match="bootstrap|confidence"):
        check_bootstrap_params(samples, confidence)
