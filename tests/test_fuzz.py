"""Seeded differential fuzzing (hypothesis) of every compiled scanner and kernel against its
Python/numpy reference path.

The default run tries a bounded number of generated inputs per property (derandomized, so
CI is repeatable); ``DETEVAL_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz.py`` is the nightly
mode. ``scripts/sanitize.sh`` runs this file under AddressSanitizer and UBSan.
"""
import json
import os
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import deteval.io.coco as coco_io  # noqa: E402
import deteval.io.voc as voc_io  # noqa: E402
import deteval.match as match  # noqa: E402
import deteval.rank as rank  # noqa: E402
from deteval import masks as dm  # noqa: E402
from deteval._native import kernels, textscan  # noqa: E402
from deteval.tables import Detections, GroundTruth  # noqa: E402

pytestmark = pytest.mark.skipif(kernels is None or textscan is None,
                                reason="compiled extensions not built")

EXAMPLES = int(os.environ.get("DETEVAL_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                suppress_health_check=list(HealthCheck), database=None)


# ----------------------------------------------------------------- RLE strings

@FUZZ
@given(st.binary(max_size=40) | st.text(alphabet=[chr(c) for c in range(40, 115)],
                                        max_size=40).map(str.encode))
def test_rle_decode_equals_reference(s):
    try:
        ref = dm.decode_rle_string(s)
    except ValueError:
        ref = None
    try:
        counts, lengths, totals, areas = kernels.rle_decode([s])
        got = np.frombuffer(counts, dtype=np.uint32)
    except ValueError:
        got = None
    assert (ref is None) == (got is None), s
    if ref is not None:
        assert np.array_equal(ref, got)
        assert np.frombuffer(totals, np.int64)[0] == int(ref.astype(np.int64).sum())
        assert np.frombuffer(areas, np.int64)[0] == int(ref[1::2].astype(np.int64).sum())


@FUZZ
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 6), st.integers(0, 2 ** 32 - 1))
def test_rle_iou_equals_reference(h, w, n, seed):
    rng = np.random.default_rng(seed)
    arrs = (rng.random((n, h, w)) < rng.random()).astype(np.uint8)
    ms = dm.masks_from_arrays(arrs)
    p = int(rng.integers(0, 20))
    pa, pb = rng.integers(0, n, p), rng.integers(0, n, p)
    crowd = rng.random(p) < 0.3
    assert np.array_equal(dm.rle_pair_ious(ms, ms, pa, pb, crowd),
                          dm.rle_pair_ious_reference(ms, ms, pa, pb, crowd))


def test_rle_iou_split_over_threads_equals_one_call(monkeypatch):
    """Large batches of mask pairs are split over threads (the kernel drops the GIL): the
    same IoUs, in the same order, as one call."""
    rng = np.random.default_rng(7)
    arrs = (rng.random((40, 23, 17)) < 0.4).astype(np.uint8)
    ms = dm.masks_from_arrays(arrs)
    pa, pb = rng.integers(0, 40, 5001), rng.integers(0, 40, 5001)
    crowd = rng.random(5001) < 0.2
    monkeypatch.setattr(dm, "_PARALLEL_PAIRS", 10 ** 9)
    one = dm.rle_pair_ious(ms, ms, pa, pb, crowd)
    monkeypatch.setattr(dm, "_PARALLEL_PAIRS", 1)
    monkeypatch.setattr(dm.os, "cpu_count", lambda: 3)
    split = dm.rle_pair_ious(ms, ms, pa, pb, crowd)
    assert np.array_equal(one, split)
    assert np.array_equal(one[:50], dm.rle_pair_ious_reference(ms, ms, pa[:50], pb[:50],
                                                               crowd[:50]))


def _random_polygons(rng, small):
    """An object of one to three polygons on an image of random size: coordinates anywhere
    (outside the image too), on the pixel grid, on tenths of it, with repeated vertices."""
    side = 40 if small else 700
    h, w = int(rng.integers(1, side)), int(rng.integers(1, side))
    polys = []
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(3, 9 if small else 60))
        mode = int(rng.integers(0, 4))
        if mode == 0:
            xy = rng.uniform(-5, max(h, w) + 5, 2 * k)
        elif mode == 1:
            xy = np.round(rng.uniform(-3, max(h, w) + 3, 2 * k) * 4) / 4
        elif mode == 2:
            xy = (rng.integers(-2, max(h, w) + 2, 2 * k)
                  + rng.choice(np.arange(10) / 10, 2 * k))
        else:
            xy = rng.uniform(0, w, 2 * k)
            xy[2:4] = xy[0:2]
        poly = xy.tolist()
        polys.append([int(v) for v in xy] if mode == 2 and rng.random() < 0.3 else poly)
    return polys, h, w


@pytest.mark.parametrize("seed, cases", [(0, 300), (1, 300),
                                         pytest.param(2, 30000, marks=pytest.mark.slow)])
def test_polygon_rasteriser_equals_pycocotools(seed, cases):
    """The compiled rasteriser gives pycocotools' frPyObjects + merge runs, bit for bit."""
    mask_api = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(seed)
    for case in range(cases):
        polys, h, w = _random_polygons(rng, small=case % 2 == 0)
        ref = mask_api.merge(mask_api.frPyObjects(polys, h, w))["counts"]
        want = dm.decode_rle_string(ref if isinstance(ref, bytes) else ref.encode())
        counts, lengths, areas = kernels.rle_from_polygons(
            [polys], np.array([h], dtype=np.int64), np.array([w], dtype=np.int64))
        got = np.frombuffer(counts, dtype=np.uint32)
        assert np.array_equal(got, want), (h, w, polys)
        assert np.frombuffer(lengths, np.int64)[0] == want.shape[0]
        assert np.frombuffer(areas, np.int64)[0] == int(want[1::2].astype(np.int64).sum())


def test_polygon_rasteriser_leaves_what_it_cannot_draw_to_pycocotools():
    """Malformed polygons are ValueError (the loader names them); coordinates beyond its
    exact 32-bit range are OverflowError (the loader then asks pycocotools)."""
    one = np.array([10], dtype=np.int64)
    for bad in ([[0, 0, 1, 1]], [[0, 0, 1, 1, 2]], [[0, 0, 1, float("nan"), 2, 2]],
                [[0, 0, "1", 1, 2, 2]], [], [(0, 0, 1, 1, 2, 2)]):
        with pytest.raises(ValueError):
            kernels.rle_from_polygons([bad], one, one)
    with pytest.raises(OverflowError):
        kernels.rle_from_polygons([[[0, 0, 1e9, 1, 2, 2]]], one, one)


# ------------------------------------------------------------------ ranking

@FUZZ
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, -0.0, 0.5, 1.0, 0.25, 1e-300,
                                                              -3.0, 7.5])), max_size=60))
def test_rank_order_equals_lexsort(rows):
    major = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[1] for r in rows], dtype=np.float64)
    want = np.lexsort((np.arange(len(rows)), -scores, major))
    assert np.array_equal(rank.ranked_order(major, scores), want)


# ------------------------------------------------------------------ matching

def _tables(rng, n_img, n_cls, n_gt, n_det, xyxy):
    def boxes(n):
        xy = np.round(rng.uniform(0, 20, (n, 2)) * 2) / 2
        wh = np.round(rng.uniform(0, 8, (n, 2)) * 2) / 2
        return np.concatenate([xy, xy + wh if xyxy else wh], axis=1)
    gt = GroundTruth(image_idx=rng.integers(0, n_img, n_gt), class_idx=rng.integers(0, n_cls, n_gt),
                     boxes=boxes(n_gt), difficult=rng.random(n_gt) < 0.2,
                     crowd=rng.random(n_gt) < 0.15, area=rng.uniform(0, 80, n_gt),
                     image_ids=np.arange(n_img), class_names=tuple(map(str, range(n_cls))),
                     class_ids=np.arange(n_cls), box_format="xyxy_pixel" if xyxy else "xywh")
    det = Detections(image_idx=rng.integers(0, n_img, n_det),
                     class_idx=rng.integers(0, n_cls, n_det), boxes=boxes(n_det),
                     scores=np.round(rng.random(n_det), 1), order=np.arange(n_det))
    return gt, det


def _both(fn):
    on = fn()
    saved = match._kernels, rank._kernels
    match._kernels = rank._kernels = None
    try:
        off = fn()
    finally:
        match._kernels, rank._kernels = saved
    return on, off


@FUZZ
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 25), st.integers(0, 25),
       st.sampled_from(["devkit", "detectron2"]), st.integers(0, 2 ** 32 - 1))
def test_voc_match_kernel_equals_numpy(n_img, n_cls, n_gt, n_det, compat, seed):
    gt, det = _tables(np.random.default_rng(seed), n_img, n_cls, n_gt, n_det, True)
    on, off = _both(lambda: match.match_voc(gt, det, 0.5, compat))
    for f in ("class_idx", "scores", "tie_key", "outcome", "num_gt", "num_difficult"):
        assert np.array_equal(getattr(on, f), getattr(off, f)), f


@FUZZ
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 25), st.integers(0, 25),
       st.integers(1, 12), st.integers(0, 2 ** 32 - 1))
def test_coco_match_kernel_equals_numpy(n_img, n_cls, n_gt, n_det, max_det, seed):
    gt, det = _tables(np.random.default_rng(seed), n_img, n_cls, n_gt, n_det, False)
    thr = np.array([0.0, 0.3, 0.5, 0.75, 1.0])
    areas = np.array([[0, 1e10], [0, 16], [16, 1e10]])
    on, off = _both(lambda: match.match_coco(gt, det, thr, areas, max_det))
    for f in ("class_idx", "scores", "image_key", "rank", "matched", "ignored", "num_gt"):
        assert np.array_equal(getattr(on, f), getattr(off, f)), f


@FUZZ
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 25), st.integers(0, 130),
       st.integers(0, 2 ** 32 - 1))
def test_tide_kernel_equals_numpy(n_img, n_cls, n_gt, n_det, seed):
    from deteval.diagnostics import tide
    gt, det = _tables(np.random.default_rng(seed), n_img, n_cls, n_gt, n_det, False)
    on = tide.tide_errors(gt, det)
    saved = tide._kernels
    tide._kernels = None
    try:
        off = tide.tide_errors(gt, det)
    finally:
        tide._kernels = saved
    assert on.to_dict() == off.to_dict()
    for f in ("detection_rows", "detection_error", "detection_ignored", "missed_rows"):
        assert np.array_equal(getattr(on, f), getattr(off, f)), f


# ------------------------------------------------------------------ scanners

_NUMBER = st.one_of(st.integers(-10 ** 6, 10 ** 6).map(str),
                    st.floats(-1e6, 1e6, allow_nan=False).map(repr),
                    st.sampled_from(["1e5", "-0", "0.000", "1E-3", "+1", ".5", "5.", "1e400",
                                     "nan", "0x10", "1_0", "", "-", "1.2.3"]))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["a", "000005", "b b", "x"]), _NUMBER, _NUMBER, _NUMBER,
                          _NUMBER, _NUMBER), max_size=12),
       st.sampled_from([" ", "\t", "  "]), st.sampled_from(["\n", "\r\n"]))
def test_detection_scanner_equals_python_parser(rows, sep, nl):
    data = "".join(sep.join(r) + nl for r in rows).encode()
    c = voc_io._scan_detections_c(data)
    try:
        py = voc_io._parse_detection_bytes(data, Path("f.txt"))
    except Exception:  # the reference refuses: the C path must hand it over
        assert c is None
        return
    if c is not None:
        assert [bytes(x) for x in c[0]] == [bytes(x) for x in py[0]]
        assert np.array_equal(c[1].view(np.int64), py[1].view(np.int64))
        assert np.array_equal(c[2], py[2])


@FUZZ
@given(st.lists(st.fixed_dictionaries({
    "image_id": st.integers(-2 ** 64, 2 ** 64) | st.sampled_from(["1", None, 1.5]),
    "category_id": st.integers(0, 5),
    "bbox": st.lists(st.floats(-1e3, 1e3) | st.integers(-10, 10 ** 30), min_size=3, max_size=5),
    "score": st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10 ** 400)}),
    max_size=8))
def test_results_scanner_equals_msgspec(records):
    raw = json.dumps(records).encode()
    got = coco_io._scanned_results(raw)
    if got is None:
        return
    fast = coco_io._RESULTS.decode(raw)
    assert got[0].tolist() == [r.image_id for r in fast]
    assert got[1].tolist() == [r.category_id for r in fast]
    assert np.array_equal(got[2].view(np.int64),
                          np.array([r.score for r in fast], dtype=np.float64).view(np.int64))


@FUZZ
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 19), st.integers(0, 2 ** 32 - 1))
def test_oks_kernel_equals_numpy(n_det, n_gt, k, seed):
    from deteval.keypoints import oks_pairs, oks_pairs_reference
    rng = np.random.default_rng(seed)
    det = np.round(rng.uniform(0, 50, (n_det, k, 3)), 1)
    gt = np.round(rng.uniform(0, 50, (n_gt, k, 3)), 1)
    gt[:, :, 2] = rng.choice([0, 1, 2], (n_gt, k))
    gt[rng.random(n_gt) < 0.3, :, 2] = 0  # people without labelled keypoints
    boxes = np.round(rng.uniform(0, 40, (n_gt, 4)), 1)
    area = np.round(rng.uniform(0, 900, n_gt), 1)
    sigmas = rng.uniform(0.01, 0.2, k)
    pd = np.repeat(np.arange(n_det), n_gt)
    pg = np.tile(np.arange(n_gt), n_det)
    assert np.array_equal(oks_pairs(det, gt, boxes, area, pd, pg, sigmas),
                          oks_pairs_reference(det, gt, boxes, area, pd, pg, sigmas))
