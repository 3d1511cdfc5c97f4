"""The compiled reader of segmentation results (one pass: columns and decoded masks) against
the typed msgspec reading it replaces: equal tables, or None and the typed reading decides."""
import dataclasses
import json

import numpy as np
import pytest

import deteval.io.coco_geometry as geometry
from deteval import _native
from deteval.io.coco_geometry import load_ground_truth_geometry

mask_api = pytest.importorskip("pycocotools.mask")
pytestmark = pytest.mark.skipif(_native.textscan is None, reason="compiled extensions not built")


def _case(rng, n_images=4, per_image=6):
    images = [{"id": i + 1, "width": int(rng.integers(5, 40)), "height": int(rng.integers(5, 40)),
               "file_name": f"{i + 1}.jpg"} for i in range(n_images)]
    gt = {"images": images, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
          "annotations": []}
    results = []
    for im in images:
        h, w = im["height"], im["width"]
        for k in range(per_image):
            m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
            rle = mask_api.encode(np.asfortranarray(m))
            gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": im["id"],
                                      "category_id": int(rng.integers(1, 3)), "iscrowd": 0,
                                      "segmentation": {"size": [h, w],
                                                       "counts": rle["counts"].decode()},
                                      "area": float(m.sum()), "bbox": [0, 0, w, h]})
            results.append({"image_id": im["id"], "category_id": int(rng.integers(1, 3)),
                            "score": float(np.round(rng.random(), 2)),
                            "segmentation": {"size": [h, w], "counts": rle["counts"].decode()},
                            "bbox": [float(v) for v in rng.uniform(0, 5, 4)]})
    return gt, results


def _tables_equal(a, b):
    for f in dataclasses.fields(a):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if isinstance(va, np.ndarray):
            assert np.array_equal(va, vb), f.name
        elif dataclasses.is_dataclass(va):
            for g in dataclasses.fields(va):
                assert np.array_equal(getattr(va, g.name), getattr(vb, g.name)), g.name


def _both(raw, gt, monkeypatch):
    scanned = geometry._scanned_segm_results(raw, gt, "r.json")
    with monkeypatch.context() as m:
        m.setattr(geometry, "_scanned_segm_results", lambda *a: None)
        typed = geometry._typed_results(raw, gt, "segm", "r.json")
    return scanned, typed


@pytest.mark.parametrize("seed", range(12))
def test_scanned_equals_typed(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    gt_d, res = _case(rng)
    if seed % 3 == 1:  # no bbox anywhere: boxes from the masks
        for r in res:
            del r["bbox"]
    if seed % 4 == 2:  # keys in another order, other keys, other whitespace
        res = [{"note": [1, {"x": None}], "segmentation": dict(reversed(list(
            r["segmentation"].items()))), **{k: v for k, v in r.items()
                                            if k != "segmentation"}} for r in res]
    gp = tmp_path / "gt.json"
    gp.write_text(json.dumps(gt_d))
    gt = load_ground_truth_geometry(str(gp), "segm")
    raw = json.dumps(res, indent=None if seed % 2 else 1).encode()
    scanned, typed = _both(raw, gt, monkeypatch)
    assert scanned is not None and typed is not None
    _tables_equal(scanned, typed)


@pytest.mark.parametrize("edit", ["bbox_in_some", "uncompressed", "escape_u", "bad_char",
                                  "size_three", "extra_key", "truncated", "int_score"])
def test_outside_the_subset_is_left_to_the_typed_reading(tmp_path, monkeypatch, edit):
    rng = np.random.default_rng(5)
    gt_d, res = _case(rng, 2, 3)
    gp = tmp_path / "gt.json"
    gp.write_text(json.dumps(gt_d))
    gt = load_ground_truth_geometry(str(gp), "segm")
    r0 = res[0]
    if edit == "bbox_in_some":
        del res[1]["bbox"]
    elif edit == "uncompressed":
        r0["segmentation"]["counts"] = [r0["segmentation"]["size"][0] *
                                        r0["segmentation"]["size"][1]]
    elif edit == "escape_u":
        r0["segmentation"]["counts"] = "\u0030" + r0["segmentation"]["counts"]
    elif edit == "bad_char":
        r0["segmentation"]["counts"] = "~" + r0["segmentation"]["counts"]
    elif edit == "size_three":
        r0["segmentation"]["size"] = r0["segmentation"]["size"] + [1]
    elif edit == "extra_key":
        r0["segmentation"]["other"] = 1
    elif edit == "truncated":
        r0["segmentation"]["counts"] = r0["segmentation"]["counts"] + "o"
    elif edit == "int_score":
        r0["score"] = 1
    raw = json.dumps(res, ensure_ascii=edit != "escape_u").encode()
    if edit == "escape_u":
        raw = raw.replace(b'"counts": "0', b'"counts": "\\u0030', 1)
    scanned, typed = _both(raw, gt, monkeypatch)
    if edit == "int_score":  # an integer score is a float field's value: still scanned
        _tables_equal(scanned, typed)
    else:
        assert scanned is None


def test_backslash_counts_decode(tmp_path, monkeypatch):
    """A count digit 92 ('\\\\'), which JSON writes as two backslashes, is read as one."""
    h, w = 1, 200
    m = np.zeros((h, w), np.uint8)
    m[0, 44:120] = 1  # runs 44, 76, 80: 44 encodes with the digit 92
    rle = mask_api.encode(np.asfortranarray(m))
    counts = rle["counts"].decode()
    assert "\\" in counts
    gt_d = {"images": [{"id": 1, "width": w, "height": h}], "categories": [{"id": 1, "name": "a"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 76.0,
                             "bbox": [44, 0, 76, 1],
                             "segmentation": {"size": [h, w], "counts": counts}}]}
    gp = tmp_path / "gt.json"
    gp.write_text(json.dumps(gt_d))
    gt = load_ground_truth_geometry(str(gp), "segm")
    raw = json.dumps([{"image_id": 1, "category_id": 1, "score": 0.5,
                       "segmentation": {"size": [h, w], "counts": counts}}]).encode()
    scanned, typed = _both(raw, gt, monkeypatch)
    assert scanned is not None
    _tables_equal(scanned, typed)
    assert scanned.masks.areas.tolist() == [76]
