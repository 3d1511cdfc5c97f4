"""Split-and-merge of match records equals one pass (engine level).

Shards are image subsets of the same loaded tables: each shard is matched on its
own, the records are concatenated, and AP is computed once from the merged records.
"""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from deteval.ap import summarize_coco, summarize_voc
from deteval.io import coco as coco_io
from deteval.io import voc as voc_io
from deteval.match import CocoMatches, VocMatches, match_coco, match_voc
from deteval.params import COCO_AREA_RANGES as DEFAULT_AREA_RANGES
from deteval.params import COCO_IOU_THRESHOLDS, COCO_RECALL_THRESHOLDS
from deteval.report import coco_report, voc_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _shard(table, keep_rows):
    """The same table restricted to some rows (every other field unchanged)."""
    values = {}
    for f in dataclasses.fields(table):
        v = getattr(table, f.name)
        is_row_array = isinstance(v, np.ndarray) and f.name not in (
            "image_ids", "class_ids") and v.shape[:1] == keep_rows.shape
        values[f.name] = v[keep_rows] if is_row_array else v
    return type(table)(**values)


def _image_splits(num_images, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, num_images)  # three shards of random images
    return [labels == s for s in range(3)]


@pytest.mark.parametrize("metric", ["voc07", "voc12"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_voc_split_and_merge_equals_one_pass(metric, seed):
    gt = voc_io.load_voc_annotations(FIXTURES / "voc" / "VOC2007", "test")
    det = voc_io.load_voc_detections(FIXTURES / "voc" / "results", gt)
    one = voc_report(summarize_voc(match_voc(gt, det), metric, "devkit"), gt.class_names, metric,
                     "devkit", 0.5)
    parts = []
    for images in _image_splits(gt.num_images, seed):
        parts.append(match_voc(_shard(gt, images[gt.image_idx]),
                               _shard(det, images[det.image_idx])))
    merged = VocMatches.concatenate(parts[::-1])  # shard order does not matter either
    two = voc_report(summarize_voc(merged, metric, "devkit"), gt.class_names, metric, "devkit",
                     0.5)
    assert two.mAP == one.mAP
    assert [c.to_dict() for c in two.classes] == [c.to_dict() for c in one.classes]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coco_split_and_merge_equals_one_pass(seed):
    gt = coco_io.load_coco_ground_truth(FIXTURES / "coco" / "instances_val.json")
    det = coco_io.load_coco_results(FIXTURES / "coco" / "results.json", gt)
    areas = np.array(list(DEFAULT_AREA_RANGES.values()))
    md = (1, 10, 100)

    def report(matches):
        summary = summarize_coco(matches, COCO_IOU_THRESHOLDS, list(DEFAULT_AREA_RANGES), md,
                                 COCO_RECALL_THRESHOLDS, True)
        return coco_report(summary, gt.class_ids, gt.class_names, COCO_IOU_THRESHOLDS,
                           DEFAULT_AREA_RANGES, md, COCO_RECALL_THRESHOLDS)

    one = report(match_coco(gt, det, COCO_IOU_THRESHOLDS, areas, md[-1]))
    parts = [match_coco(_shard(gt, images[gt.image_idx]), _shard(det, images[det.image_idx]),
                        COCO_IOU_THRESHOLDS, areas, md[-1])
             for images in _image_splits(gt.num_images, seed)]
    two = report(CocoMatches.concatenate(parts[::-1]))
    assert two.stats == one.stats
    assert two.classes == one.classes
    np.testing.assert_array_equal(two.precision, one.precision)
