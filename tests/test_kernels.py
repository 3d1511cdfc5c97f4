"""The optional compiled kernels (deteval._kernels) against the numpy reference.

``rank_order`` must be ``np.lexsort((tie, -scores, major))`` exactly, and everything
built on the kernels (``ranked_order``, ``stable_rank_order``, ``match_voc``,
``evaluate_voc``, ``evaluate_coco``) must give bit-identical results with the kernels
and with ``deteval.match._kernels`` set to None (the numpy code paths).

    pytest -m slow tests/test_kernels.py    # the larger random sweeps
"""
import copy
import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import deteval
import deteval.io.voc as voc
import deteval.match as match
import deteval.rank as rank
from deteval.match import VocMatches
from deteval.tables import Detections, GroundTruth

kernels = match._kernels
pytestmark = pytest.mark.skipif(kernels is None, reason="deteval._kernels not built "
                                "(no C compiler at install time); numpy is used")

REPO = Path(__file__).resolve().parents[1]
I64 = np.int64


def c_rank(major, scores, tie=None):
    out = kernels.rank_order(np.ascontiguousarray(major, dtype=I64),
                             np.ascontiguousarray(scores, dtype=np.float64),
                             None if tie is None else np.ascontiguousarray(tie, dtype=I64))
    assert isinstance(out, bytearray)
    return np.frombuffer(out, dtype=I64)


def lexsort_rank(major, scores, tie=None):
    n = len(scores)
    tie = np.arange(n, dtype=I64) if tie is None else tie
    return np.lexsort((tie, -np.asarray(scores, dtype=np.float64), major)).astype(I64)


# ------------------------------------------------------------------ random inputs

SPECIAL_SCORES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, 5e-324, -5e-324,
                           2.2250738585072014e-308, 1.7976931348623157e308,
                           -1.7976931348623157e308, 1e-300, 0.1, 0.30000000000000004, 0.3])


def random_scores(rng, n):
    kind = rng.integers(6)
    if kind == 0:  # a few levels: many ties
        return rng.choice(np.array([0.1, 0.5, 0.9, 0.0, -0.0]), n)
    if kind == 1:  # special values, -0.0 with 0.0, +-inf
        return rng.choice(SPECIAL_SCORES, n)
    if kind == 2:  # many exponents, both signs
        return rng.standard_normal(n) * 10.0 ** rng.integers(-320, 308, n)
    if kind == 3:  # detector-like, rounded (ties)
        return np.round(rng.random(n), int(rng.integers(1, 4)))
    if kind == 4:  # negative and positive, some ties
        return np.round(rng.uniform(-5, 5, n), 2)
    s = rng.random(n)  # mixture
    mask = rng.random(n) < 0.3
    s[mask] = rng.choice(SPECIAL_SCORES, int(mask.sum()))
    return s


def random_major(rng, n):
    kind = rng.integers(6)
    if kind == 0:  # one group: one long segment (radix when > 32)
        return np.full(n, int(rng.integers(0, 3)), dtype=I64)
    if kind == 1:  # few groups
        return rng.integers(0, 4, n).astype(I64)
    if kind == 2:  # many groups: short segments (insertion sort)
        return rng.integers(0, max(1, n // 3) + 1, n).astype(I64)
    if kind == 3:  # huge values: the whole-array LSD path
        return rng.integers(0, 10 ** 15, n).astype(I64)
    if kind == 4:  # huge but few distinct values (long segments on the LSD path)
        return rng.choice(np.array([0, 7, 10 ** 15, 2 ** 62, 2 ** 63 - 1], dtype=I64), n)
    # just around the count-table limit (4 n + 65536)
    return rng.choice(np.array([0, 1, 4 * n + 65535, 4 * n + 65536], dtype=I64), n)


def random_tie(rng, n):
    kind = rng.integers(5)
    if kind == 0:
        return None
    if kind == 1:  # ascending (the rows are already in tie order), with duplicates
        return np.sort(rng.integers(-5, 50, n)).astype(I64)
    if kind == 2:  # strictly ascending
        return np.arange(n, dtype=I64) * 3 - 7
    if kind == 3:  # unsorted with duplicates
        return rng.integers(-3, 4, n).astype(I64)
    return rng.integers(-2 ** 63, 2 ** 63 - 1, n, dtype=I64)  # full int64 range


def random_sizes(rng, count, big):
    sizes = [0, 1, 2, 3, 31, 32, 33, 34, 64, 65, 200]
    extra = [1000, 3000, 5000] if big else [1000, 2500]
    return [int(rng.choice(sizes + extra)) for _ in range(count)]


def check_rank_case(rng, n):
    major, scores, tie = random_major(rng, n), random_scores(rng, n), random_tie(rng, n)
    want = lexsort_rank(major, scores, tie)
    got = c_rank(major, scores, tie)
    assert got.dtype == I64 and got.shape == (n,)
    assert np.array_equal(got, want), (n, major[:5], scores[:5], None if tie is None else
                                       tie[:5])


# --------------------------------------------------------------------- rank_order


@pytest.mark.parametrize("seed", range(4))
def test_rank_order_equals_lexsort(seed):
    rng = np.random.default_rng(seed)
    for n in random_sizes(rng, 60, big=False):
        check_rank_case(rng, n)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_rank_order_equals_lexsort_sweep(seed):
    rng = np.random.default_rng(1000 + seed)
    for n in random_sizes(rng, 200, big=True):
        check_rank_case(rng, n)


@pytest.mark.parametrize("n", [0, 1, 2, 32, 33, 100, 1000])
@pytest.mark.parametrize("major_kind", ["one", "few", "many", "huge"])
@pytest.mark.parametrize("tie_kind", ["none", "ascending", "unsorted"])
def test_rank_order_every_path(n, major_kind, tie_kind):
    """Each path (counting sort + insertion or radix per segment, whole-array LSD) with
    every kind of tie key, on scores full of ties, signed zeros and infinities."""
    rng = np.random.default_rng(n * 7 + len(major_kind) * 3 + len(tie_kind))
    major = {"one": np.zeros(n, dtype=I64),
             "few": rng.integers(0, 3, n).astype(I64),
             "many": rng.integers(0, n + 1, n).astype(I64),
             "huge": rng.integers(0, 10 ** 15, n).astype(I64) * rng.integers(0, 2, n)}[
        major_kind]
    scores = rng.choice(SPECIAL_SCORES[:8], n)
    tie = {"none": None, "ascending": np.sort(rng.integers(0, 5, n)).astype(I64),
           "unsorted": rng.integers(-2, 3, n).astype(I64)}[tie_kind]
    assert np.array_equal(c_rank(major, scores, tie), lexsort_rank(major, scores, tie))


def test_rank_order_hand_examples():
    # major ascending, then score descending, then tie ascending, then row
    major = np.array([1, 0, 1, 0, 0, 1], dtype=I64)
    scores = np.array([0.5, 0.5, 0.9, 0.7, 0.5, 0.5])
    assert c_rank(major, scores).tolist() == [3, 1, 4, 2, 0, 5]
    tie = np.array([0, 9, 0, 0, 2, -1], dtype=I64)
    assert c_rank(major, scores, tie).tolist() == [3, 4, 1, 2, 5, 0]
    # -0.0 and 0.0 are equal scores: row (or tie) order decides
    z = np.array([-0.0, 0.0, -0.0, 0.0])
    assert c_rank(np.zeros(4, dtype=I64), z).tolist() == [0, 1, 2, 3]
    assert c_rank(np.zeros(4, dtype=I64), z, np.array([3, 2, 1, 0], dtype=I64)).tolist() == \
        [3, 2, 1, 0]
    # infinities and the extremes of the double range
    s = np.array([-np.inf, 5e-324, np.inf, -5e-324, 1.7976931348623157e308, 0.0])
    assert c_rank(np.zeros(6, dtype=I64), s).tolist() == [2, 4, 1, 5, 3, 0]
    # huge majors (no count table) keep the same order
    big = np.array([10 ** 15, 0, 2 ** 63 - 1, 10 ** 15], dtype=I64)
    assert c_rank(big, np.array([0.1, 0.2, 0.3, 0.4])).tolist() == [1, 3, 0, 2]
    assert c_rank(np.zeros(0, dtype=I64), np.zeros(0)).tolist() == []


def test_rank_order_long_segment_radix_vs_insertion():
    """Segments of 32 rows (insertion sort) and 33 rows (radix) give lexsort's order."""
    rng = np.random.default_rng(3)
    for length in (31, 32, 33, 34, 100):
        major = np.repeat(np.arange(5, dtype=I64), length)
        rng.shuffle(major)
        scores = rng.choice(np.array([0.25, -0.0, 0.0, 0.5, -1e-300]), major.shape[0])
        for tie in (None, rng.integers(0, 3, major.shape[0]).astype(I64)):
            assert np.array_equal(c_rank(major, scores, tie), lexsort_rank(major, scores, tie))


def test_rank_order_errors():
    ok_major, ok_scores = np.zeros(3, dtype=I64), np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError):
        kernels.rank_order(np.array([0, -1, 2], dtype=I64), ok_scores, None)
    with pytest.raises(ValueError):
        kernels.rank_order(np.array([0, 1, -(2 ** 63)], dtype=I64), ok_scores, None)
    with pytest.raises(ValueError):
        kernels.rank_order(ok_major, np.array([0.1, np.nan, 0.3]), None)
    with pytest.raises(ValueError):
        kernels.rank_order(ok_major, np.array([0.1, -np.nan, 0.3]), ok_major)
    with pytest.raises(ValueError):  # lengths
        kernels.rank_order(np.zeros(2, dtype=I64), ok_scores, None)
    with pytest.raises(ValueError):
        kernels.rank_order(ok_major, np.zeros(4), None)
    with pytest.raises(ValueError):
        kernels.rank_order(ok_major, ok_scores, np.zeros(2, dtype=I64))
    with pytest.raises(ValueError):  # 4-byte items: not int64
        kernels.rank_order(np.zeros(3, dtype=np.int32), ok_scores, None)
    with pytest.raises(ValueError):  # a buffer that is not a whole number of items
        kernels.rank_order(b"\0" * 20, ok_scores, None)
    with pytest.raises((ValueError, BufferError, TypeError)):  # not C-contiguous
        kernels.rank_order(np.zeros(6, dtype=I64)[::2], ok_scores, None)
    with pytest.raises(TypeError):
        kernels.rank_order(ok_major, ok_scores)
    with pytest.raises(TypeError):
        kernels.rank_order(ok_major, [0.1, 0.2, 0.3], None)
    # still usable afterwards
    assert c_rank(ok_major, ok_scores).tolist() == [2, 1, 0]


# --------------------------------------------------- ranked_order / stable_rank_order


def _both(monkeypatch, fn, *args):
    on = fn(*args)
    with monkeypatch.context() as m:
        m.setattr(match, "_kernels", None)
        m.setattr(rank, "_kernels", None)
        off = fn(*args)
    return on, off


def check_rankers(monkeypatch, rng, n):
    major = random_major(rng, n)
    scores = random_scores(rng, n)
    on, off = _both(monkeypatch, rank.ranked_order, major, scores)
    want = lexsort_rank(major, scores)
    assert np.array_equal(on, want) and np.array_equal(off, want)
    assert on.dtype == off.dtype == I64
    for tie in (np.arange(n, dtype=I64) * 2 + 5,  # increasing: one ranked_order
                rng.integers(-3, 3, n).astype(I64),  # unsorted with duplicates
                rng.permutation(n).astype(I64)):
        on, off = _both(monkeypatch, rank.stable_rank_order, major, scores, tie)
        want = lexsort_rank(major, scores, tie)
        assert np.array_equal(on, want) and np.array_equal(off, want)
        assert np.asarray(on).dtype.kind == np.asarray(off).dtype.kind == "i"
    # rows already ranked are recognised either way
    order = lexsort_rank(major, scores, tie)
    on, off = _both(monkeypatch, rank.stable_rank_order, major[order], scores[order],
                    tie[order])
    assert np.array_equal(on, np.arange(n)) and np.array_equal(off, np.arange(n))


@pytest.mark.parametrize("seed", range(3))
def test_ranked_order_same_with_and_without_kernels(monkeypatch, seed):
    rng = np.random.default_rng(50 + seed)
    for n in random_sizes(rng, 25, big=False):
        check_rankers(monkeypatch, rng, n)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_ranked_order_same_with_and_without_kernels_sweep(monkeypatch, seed):
    rng = np.random.default_rng(5000 + seed)
    for n in random_sizes(rng, 100, big=True):
        check_rankers(monkeypatch, rng, n)


# ----------------------------------------------------------------------- match_voc


def make_tables(rng, *, n_images=None, n_classes=None, n_det=None, floats=None,
                sparse_images=False):
    """Random GroundTruth / Detections tables (box_format "xyxy_pixel") full of the cases
    the VOC rules decide: integer boxes (IoU ties, IoU exactly 0.5 / 0.7 / 1.0), duplicate
    GT boxes, difficult GT, images without GT, a class without detections and one without
    GT, duplicate detections, tied scores, a det.order that is not arange."""
    I = int(rng.integers(1, 25)) if n_images is None else n_images
    K = int(rng.integers(1, 6)) if n_classes is None else n_classes
    floats = bool(rng.random() < 0.3) if floats is None else floats
    gt_classes = list(range(K))
    if K >= 2 and rng.random() < 0.5:
        gt_classes.remove(K - 1)  # detections only
    det_classes = list(range(K))
    if K >= 2 and rng.random() < 0.5:
        det_classes.remove(0)  # GT only

    def box():
        x1, y1 = int(rng.integers(0, 30)), int(rng.integers(0, 30))
        w, h = int(rng.integers(0, 14)), int(rng.integers(0, 14))
        b = [x1, y1, x1 + w, y1 + h]
        if floats and rng.random() < 0.5:
            b[0] += float(rng.choice([0.25, 0.5]))
            b[3] += float(rng.choice([0.25, 0.5, 0.1]))
            b[2] = max(b[2], b[0])
        return b

    g_img, g_cls, g_box, g_diff = [], [], [], []
    for i in range(I):
        if rng.random() < 0.25:
            continue  # image without GT
        for _ in range(int(rng.integers(1, 6))):
            c = int(rng.choice(gt_classes))
            b = box() if not g_box or rng.random() < 0.8 or g_img[-1] != i else list(g_box[-1])
            g_img.append(i)
            g_cls.append(c)
            g_box.append(b)
            g_diff.append(bool(rng.random() < 0.25))
    G = len(g_img)
    N = int(rng.integers(0, 300)) if n_det is None else n_det
    d_img, d_cls, d_box = [], [], []
    for _ in range(N):
        kind = rng.random()
        if G and kind < 0.55:
            j = int(rng.integers(G))
            c = g_cls[j] if g_cls[j] in det_classes or not det_classes else \
                int(rng.choice(det_classes))
            x1, y1, x2, y2 = g_box[j]
            if kind < 0.2:  # exact copy: IoU 1
                b = [x1, y1, x2, y2]
            elif kind < 0.4:  # contained, a fraction of the height: IoU k/h exactly
                h = y2 - y1 + 1
                keep = max(1, int(round(h * float(rng.choice([0.5, 0.7, 0.75, 1.0])))))
                b = [x1, y1, x2, y1 + keep - 1]
            else:  # jittered
                b = [x1 + int(rng.integers(-2, 3)), y1 + int(rng.integers(-2, 3)),
                     x2 + int(rng.integers(-2, 3)), y2 + int(rng.integers(-2, 3))]
                b = [min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])]
            d_img.append(g_img[j])
            d_cls.append(c)
            d_box.append(b)
        elif d_box and kind < 0.7:  # duplicate detection
            j = int(rng.integers(len(d_box)))
            d_img.append(d_img[j])
            d_cls.append(d_cls[j])
            d_box.append(list(d_box[j]))
        else:
            d_img.append(int(rng.integers(I)))
            d_cls.append(int(rng.choice(det_classes)) if det_classes else 0)
            d_box.append(box())
    N = len(d_img)
    scores = random_scores(rng, N) if rng.random() < 0.3 else \
        rng.choice(np.array([0.1, 0.3, 0.5, 0.5, 0.9, 0.0, -0.0, -0.25]), N)
    scores = np.where(np.isfinite(scores), scores, 0.75)  # scores are finite
    okind = rng.integers(4)
    if okind == 0:
        order = np.arange(N, dtype=I64)
    elif okind == 1:
        order = rng.permutation(N).astype(I64) * 3 + 11
    elif okind == 2:
        order = np.arange(N, dtype=I64)[::-1].copy()
    else:  # shards of several files: repeats
        order = rng.integers(0, max(1, N // 2), N).astype(I64)
    img_scale = 10 ** 7 if sparse_images else 1  # sparse: no dense group table in C
    gt = GroundTruth(
        image_idx=np.array(g_img, dtype=I64) * img_scale, class_idx=np.array(g_cls, dtype=I64),
        boxes=np.array(g_box, dtype=np.float64).reshape(-1, 4),
        difficult=np.array(g_diff, dtype=bool), crowd=np.zeros(G, dtype=bool),
        area=np.ones(G), image_ids=np.array([f"im{i}" for i in range(I * img_scale)]
                                            if not sparse_images else [], dtype=object),
        class_names=tuple(f"c{k}" for k in range(K)), box_format="xyxy_pixel")
    det = Detections(image_idx=np.array(d_img, dtype=I64) * img_scale,
                     class_idx=np.array(d_cls, dtype=I64),
                     boxes=np.array(d_box, dtype=np.float64).reshape(-1, 4),
                     scores=np.asarray(scores, dtype=np.float64), order=order)
    return gt, det


def assert_same_matches(a: VocMatches, b: VocMatches, where=""):
    for f in ("class_idx", "scores", "tie_key", "outcome", "num_gt", "num_difficult"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype, (where, f, x.dtype, y.dtype)
        assert x.shape == y.shape, (where, f)
        assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes(), \
            (where, f)


def match_both(monkeypatch, gt, det, thr, compat, fot):
    on = match.match_voc(gt, det, thr, compat, fot)
    with monkeypatch.context() as m:
        m.setattr(match, "_kernels", None)
        m.setattr(rank, "_kernels", None)
        off = match.match_voc(gt, det, thr, compat, fot)
    return on, off


THRESHOLDS = [0.5, 0.0, 0.7, 1.0]
COMPATS = ["devkit", "detectron2"]


def check_match_case(monkeypatch, rng, **kw):
    gt, det = make_tables(rng, **kw)
    if not kw.get("sparse_images"):  # the kernel answers (no numpy fallback inside)
        order, _ = rank.voc_order(det)
        assert match._voc_outcomes_compiled(gt, det, order, 0.5, "devkit") is not None
    stats = np.zeros(3, dtype=np.int64)
    for thr in THRESHOLDS:
        for compat in COMPATS:
            for fot in (False, True):
                on, off = match_both(monkeypatch, gt, det, thr, compat, fot)
                assert_same_matches(on, off, (thr, compat, fot))
                assert on.outcome.dtype == np.int8 and on.outcome.shape == (len(det),)
                stats += [(on.outcome == v).sum() for v in (1, 0, -1)]
    return stats


@pytest.mark.parametrize("seed", range(12))
def test_match_voc_same_with_and_without_kernels(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    stats = check_match_case(monkeypatch, rng)
    if seed == 0:
        assert stats.min() > 0, stats  # TP, FP and ignored outcomes all occur


def test_match_voc_generator_hits_hard_cases(monkeypatch):
    """The generated tables really produce IoUs exactly at 0.5 / 0.7 / 1.0, equal best
    IoUs over two GT, all three outcomes, and outcomes that differ between thresholds."""
    at_thr = equal_best = 0
    outcomes = np.zeros(3, dtype=np.int64)
    for seed in range(12):
        rng = np.random.default_rng(seed)
        gt, det = make_tables(rng)
        K = gt.num_classes
        pd, pg, _ = match.candidate_pairs(det.image_idx * K + det.class_idx,
                                          gt.image_idx * K + gt.class_idx)
        ov = match.iou_voc(det.boxes[pd], gt.boxes[pg])
        at_thr += int(np.isin(ov, [0.5, 0.7, 1.0]).sum())
        for d in np.unique(pd):
            o = ov[pd == d]
            equal_best += int(np.isfinite(o.max()) and (o == o.max()).sum() > 1)
        outcomes += check_match_case(monkeypatch, np.random.default_rng(seed))
    assert at_thr > 50 and equal_best > 10 and outcomes.min() > 50, (at_thr, equal_best,
                                                                     outcomes)


@pytest.mark.parametrize("seed", range(3))
def test_match_voc_sparse_images(monkeypatch, seed):
    """Image indices too sparse for the dense group table: the kernel declines (None) and
    the numpy code answers; the results still agree."""
    rng = np.random.default_rng(300 + seed)
    gt, det = make_tables(rng, n_det=100, sparse_images=True)
    if len(det):
        order, _ = rank.voc_order(det)
        assert match._voc_outcomes_compiled(gt, det, order, 0.5, "devkit") is None
    for compat in COMPATS:
        on, off = match_both(monkeypatch, gt, det, 0.5, compat, False)
        assert_same_matches(on, off, compat)


def test_match_voc_no_detections_no_gt(monkeypatch):
    rng = np.random.default_rng(1)
    gt, det = make_tables(rng, n_det=0)
    for compat in COMPATS:
        on, off = match_both(monkeypatch, gt, det, 0.5, compat, False)
        assert_same_matches(on, off)
        assert on.outcome.shape == (0,)
    empty_gt = GroundTruth(image_idx=np.zeros(0, dtype=I64), class_idx=np.zeros(0, dtype=I64),
                           boxes=np.zeros((0, 4)), difficult=np.zeros(0, dtype=bool),
                           crowd=np.zeros(0, dtype=bool), area=np.zeros(0),
                           image_ids=np.array(["a", "b"], dtype=object),
                           class_names=("x", "y"))
    _, det = make_tables(np.random.default_rng(2), n_images=2, n_classes=2, n_det=50)
    for compat in COMPATS:
        on, off = match_both(monkeypatch, empty_gt, det, 0.5, compat, True)
        assert_same_matches(on, off)
        assert (on.outcome == 0).all() and on.num_gt.tolist() == [0, 0]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(150))
def test_match_voc_same_with_and_without_kernels_sweep(monkeypatch, seed):
    rng = np.random.default_rng(10000 + seed)
    big = seed % 10 == 0
    check_match_case(monkeypatch, rng, n_det=int(rng.integers(1000, 4000)) if big else None,
                     n_images=int(rng.integers(1, 200)) if big else None)


def _table(rows_gt, rows_det, class_names=("car", "dog")):
    """GT rows (image, class, x1, y1, x2, y2, difficult), detection rows
    (image, class, score, x1, y1, x2, y2), file order."""
    gt = GroundTruth(
        image_idx=np.array([r[0] for r in rows_gt], dtype=I64),
        class_idx=np.array([r[1] for r in rows_gt], dtype=I64),
        boxes=np.array([r[2:6] for r in rows_gt], dtype=np.float64).reshape(-1, 4),
        difficult=np.array([r[6] for r in rows_gt], dtype=bool),
        crowd=np.zeros(len(rows_gt), dtype=bool), area=np.ones(len(rows_gt)),
        image_ids=np.array([f"im{i}" for i in range(6)], dtype=object),
        class_names=class_names, box_format="xyxy_pixel")
    det = Detections(
        image_idx=np.array([r[0] for r in rows_det], dtype=I64),
        class_idx=np.array([r[1] for r in rows_det], dtype=I64),
        boxes=np.array([r[3:7] for r in rows_det], dtype=np.float64).reshape(-1, 4),
        scores=np.array([r[2] for r in rows_det], dtype=np.float64),
        order=np.arange(len(rows_det), dtype=I64))
    return gt, det


HAND_GT = [
    (0, 0, 0, 0, 9, 9, False),  # g0: claimed by d0 (TP); d1 is its duplicate (FP)
    (1, 0, 0, 0, 9, 9, True),  # g1: difficult: d2 ignored
    (2, 0, 0, 0, 9, 9, False),  # g2: d3 has IoU exactly 0.5 with it
    (3, 0, 0, 0, 9, 9, True),  # g3: difficult best GT of d4 ...
    (3, 0, 0, 0, 9, 7, False),  # g4: ... although this one has IoU 0.8: d4 ignored
    (4, 0, 0, 0, 9, 9, False),  # g5, g6: identical boxes; the first in row order wins
    (4, 0, 0, 0, 9, 9, False),  #   d5 -> g5 TP, d6 -> g5 again (claimed) FP, no fallback
    (5, 1, 0, 0, 9, 9, False),  # g7 (dog): d7 overlaps nothing, d8 is TP
]
HAND_DET = [
    (0, 0, 0.9, 0, 0, 9, 9),  # d0
    (0, 0, 0.8, 0, 0, 9, 9),  # d1
    (1, 0, 0.7, 0, 0, 9, 9),  # d2
    (2, 0, 0.6, 0, 0, 9, 4),  # d3: inside g2, half its height: IoU 50/100 = 0.5
    (3, 0, 0.5, 0, 0, 9, 9),  # d4
    (4, 0, 0.4, 0, 0, 9, 9),  # d5
    (4, 0, 0.4, 0, 0, 9, 9),  # d6: tied score, later in file: ranked after d5
    (5, 1, 0.3, 20, 20, 29, 29),  # d7
    (5, 1, 0.2, 0, 0, 9, 9),  # d8
    (5, 0, 0.95, 0, 0, 9, 9),  # d9: car on an image without car GT: FP, ranked first
]


@pytest.mark.parametrize("use_kernels", [True, False])
@pytest.mark.parametrize("compat", COMPATS)
def test_match_voc_hand_built(monkeypatch, use_kernels, compat):
    if not use_kernels:
        monkeypatch.setattr(match, "_kernels", None)
        monkeypatch.setattr(rank, "_kernels", None)
    gt, det = _table(HAND_GT, HAND_DET)
    assert match.iou_voc(det.boxes[3:4], gt.boxes[2:3]).tolist() == [0.5]
    m = match.match_voc(gt, det, 0.5, compat)
    # ranked: car d9 .95, d0 .9, d1 .8, d2 .7, d3 .6, d4 .5, d5 .4, d6 .4; dog d7 .3, d8 .2
    assert m.class_idx.tolist() == [0] * 8 + [1] * 2
    assert m.scores.tolist() == [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.4, 0.3, 0.2]
    at_half = 1 if compat == "devkit" else 0  # inclusive under the devkit only
    assert m.outcome.tolist() == [0, 1, 0, -1, at_half, -1, 1, 0, 0, 1]
    # devkit: the file position (det.order); detectron2: the position in the per-class
    # np.argsort(-score) order
    assert m.tie_key.tolist() == ([9, 0, 1, 2, 3, 4, 5, 6, 7, 8] if compat == "devkit" else
                                  list(range(10)))
    assert m.num_gt.tolist() == [5, 1] and m.num_difficult.tolist() == [2, 0]
    # threshold 1.0: only identical boxes; exclusive (detectron2): nothing at all
    m1 = match.match_voc(gt, det, 1.0, compat)
    if compat == "devkit":
        assert m1.outcome.tolist() == [0, 1, 0, -1, 0, -1, 1, 0, 0, 1]
    else:
        assert m1.outcome.tolist() == [0] * 10
    # threshold 0.0 (devkit: any overlap; detectron2: IoU > 0, same here)
    m0 = match.match_voc(gt, det, 0.0, compat)
    assert m0.outcome.tolist() == [0, 1, 0, -1, 1, -1, 1, 0, 0, 1]


def test_match_voc_hand_built_kernel_direct():
    """The kernel itself, on the hand-built case: outcomes per ranked position."""
    gt, det = _table(HAND_GT, HAND_DET)
    order, _ = rank.voc_order(det)
    for inclusive, want3 in ((True, 1), (False, 0)):
        res = kernels.voc_match(
            order, det.image_idx, det.class_idx, det.boxes, gt.image_idx, gt.class_idx,
            gt.boxes, gt.difficult.view(np.uint8), gt.num_classes, 0.5, inclusive)
        assert isinstance(res, bytearray)
        assert np.frombuffer(res, dtype=np.int8).tolist() == \
            [0, 1, 0, -1, want3, -1, 1, 0, 0, 1]


def _random_float_pairs(rng, n):
    """Overlapping (det, GT) box pairs with decimal coordinates of several magnitudes."""
    scale = 10.0 ** rng.integers(-1, 7, n)[:, None]
    g = rng.random((n, 2)) * scale
    g = np.concatenate([g, g + rng.random((n, 2)) * scale], axis=1)
    d = g + (rng.random((n, 4)) - 0.5) * scale * 0.3
    d[:, 2] = np.maximum(d[:, 2], d[:, 0])
    d[:, 3] = np.maximum(d[:, 3], d[:, 1])
    unit = 10.0 ** rng.integers(0, 4, n)[:, None]  # 0 to 3 decimals
    return np.round(d * unit) / unit, np.round(g * unit) / unit


def _single_outcome(d, g, thr, inclusive):
    res = kernels.voc_match(np.zeros(1, dtype=I64), np.zeros(1, dtype=I64),
                            np.zeros(1, dtype=I64), d, np.zeros(1, dtype=I64),
                            np.zeros(1, dtype=I64), g, np.zeros(1, dtype=np.uint8), 1, thr,
                            inclusive)
    return np.frombuffer(res, dtype=np.int8)[0]


@pytest.mark.parametrize("seed", range(2))
def test_voc_match_iou_bit_identical_to_iou_voc(seed):
    """With the threshold set to numpy's IoU of the pair, the kernel's IoU must be >= it
    (inclusive hit), not > it (exclusive miss) and < the next double up: the same double
    as deteval.match.iou_voc (no fused multiply-add, same operation order)."""
    rng = np.random.default_rng(seed)
    d, g = _random_float_pairs(rng, 1500)
    ious = match.iou_voc(d, g)
    checked = 0
    for k in range(len(ious)):
        iou = float(ious[k])
        if not np.isfinite(iou):
            continue
        assert _single_outcome(d[k], g[k], iou, True) == 1, (d[k], g[k], iou)
        assert _single_outcome(d[k], g[k], iou, False) == 0, (d[k], g[k], iou)
        assert _single_outcome(d[k], g[k], float(np.nextafter(iou, 2.0)), True) == 0
        checked += 1
    assert checked > 1000


# ------------------------------------------------------------- voc_match validation


def _valid_args(n=3, g=2, per=2):
    return dict(order=np.arange(n, dtype=I64), det_image=np.zeros(n, dtype=I64),
                det_class=np.zeros(n, dtype=I64), det_boxes=np.tile([0., 0., 9., 9.], n),
                gt_image=np.zeros(g, dtype=I64), gt_class=np.zeros(g, dtype=I64),
                gt_boxes=np.tile([0., 0., 9., 9.], g), gt_difficult=np.zeros(g, dtype=np.uint8),
                per=per, thr=0.5, inclusive=True)


def _call(a):
    return kernels.voc_match(a["order"], a["det_image"], a["det_class"], a["det_boxes"],
                             a["gt_image"], a["gt_class"], a["gt_boxes"], a["gt_difficult"],
                             a["per"], a["thr"], a["inclusive"])


def test_voc_match_valid_call():
    assert np.frombuffer(_call(_valid_args()), dtype=np.int8).tolist() == [1, 0, 0]
    empty = _valid_args(n=0, g=0)
    assert _call(empty) == bytearray()


BAD_LENGTHS = {
    "order short": ("order", np.arange(2, dtype=I64)),
    "det_image long": ("det_image", np.zeros(4, dtype=I64)),
    "det_class short": ("det_class", np.zeros(2, dtype=I64)),
    "det_boxes 3 per row": ("det_boxes", np.zeros(9)),
    "det_boxes one short": ("det_boxes", np.zeros(11)),
    "gt_class long": ("gt_class", np.zeros(3, dtype=I64)),
    "gt_boxes short": ("gt_boxes", np.zeros(7)),
    "gt_boxes long": ("gt_boxes", np.zeros(12)),
    "gt_difficult long": ("gt_difficult", np.zeros(3, dtype=np.uint8)),
    "gt_difficult short": ("gt_difficult", np.zeros(1, dtype=np.uint8)),
    "gt_difficult as int64": ("gt_difficult", np.zeros(2, dtype=I64)),
    "order as int32": ("order", np.arange(3, dtype=np.int32)),
    "det_boxes partial item": ("det_boxes", b"\0" * 95),
}


@pytest.mark.parametrize("name", sorted(BAD_LENGTHS))
def test_voc_match_wrong_lengths(name):
    field, value = BAD_LENGTHS[name]
    a = _valid_args()
    a[field] = value
    with pytest.raises(ValueError):
        _call(a)


BAD_INDICES = {
    "order -1": ("order", [0, -1, 2]),
    "order n": ("order", [0, 1, 3]),
    "order huge": ("order", [0, 1, 2 ** 62]),
    "det_image -1": ("det_image", [0, -1, 0]),
    "det_image min": ("det_image", [0, -(2 ** 63), 0]),
    "det_class -1": ("det_class", [0, 0, -1]),
    "det_class = per": ("det_class", [0, 2, 0]),
    "gt_image -1": ("gt_image", [-1, 0]),
    "gt_class -1": ("gt_class", [0, -1]),
    "gt_class = per": ("gt_class", [2, 0]),
    "gt_class huge": ("gt_class", [2 ** 62, 0]),
}


@pytest.mark.parametrize("name", sorted(BAD_INDICES))
def test_voc_match_out_of_range_indices(name):
    field, value = BAD_INDICES[name]
    a = _valid_args()
    a[field] = np.array(value, dtype=I64)
    with pytest.raises(ValueError, match="out of range"):
        _call(a)


def test_voc_match_bad_group_count_and_types():
    for per in (0, -1):
        a = _valid_args()
        a["per"] = per
        with pytest.raises(ValueError):
            _call(a)
    a = _valid_args()
    a["per"] = 2 ** 40  # a dense table would be far too large: declined, not allocated
    assert _call(a) is None
    a = _valid_args()
    a["det_image"] = np.array([0, 10 ** 12, 0], dtype=I64)
    assert _call(a) is None
    a = _valid_args()
    a["order"] = [0, 1, 2]  # not a buffer
    with pytest.raises(TypeError):
        _call(a)
    with pytest.raises(TypeError):
        kernels.voc_match(*list(_valid_args().values())[:8])


_HUGE_INDEX_SCRIPT = textwrap.dedent("""
    import numpy as np
    from deteval import _kernels
    i64 = np.int64
    box = np.array([0., 0., 9., 9.])
    for per, di, gi in (({per}, {di}, {gi}),):
        try:
            r = _kernels.voc_match(np.zeros(1, i64), np.array([di], i64), np.zeros(1, i64), box,
                                   np.array([gi], i64), np.zeros(1, i64), box,
                                   np.zeros(1, np.uint8), per, 0.5, True)
        except ValueError:
            print("ValueError")
        else:
            print("returned", None if r is None else list(r))
""")


@pytest.mark.parametrize("per, di, gi", [(1, 0, 2 ** 63 - 1), (2, 0, 2 ** 63 - 1),
                                         (2, 2 ** 63 - 1, 0)])
def test_voc_match_int64_max_image_index(per, di, gi):
    """An image index of 2**63-1 must be refused (ValueError) or declined (None), never
    used. Run in a child process: an overflowing range check would corrupt the heap."""
    proc = subprocess.run([sys.executable, "-c",
                           _HUGE_INDEX_SCRIPT.format(per=per, di=di, gi=gi)],
                          capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout.strip() in ("ValueError", "returned None"), proc.stdout


def test_match_voc_overflowing_boxes(monkeypatch):
    big = (-1e308, -1e308, 1e308, 1e308)
    gt, det = _table([(0, 0, *big, False)], [(0, 0, 0.5, *big)])
    with np.errstate(all="ignore"):
        on, off = match_both(monkeypatch, gt, det, 0.5, "devkit", False)
    assert off.outcome.tolist() == [0]  # the NaN IoU is skipped, as the devkit's ov > ovmax
    assert_same_matches(on, off)


def test_match_voc_infinite_box_coordinates(monkeypatch):
    inf = np.inf
    gt, det = _table([(0, 0, inf, 0, inf, 9, False), (0, 0, 0, 0, 9, 9, False)],
                     [(0, 0, 0.5, 0, 0, inf, 9)])
    with np.errstate(all="ignore"):
        on, off = match_both(monkeypatch, gt, det, 0.0, "devkit", False)
    assert off.outcome.tolist() == [1]
    assert_same_matches(on, off)


# ------------------------------------------------------------------ end to end


def _no_c(m):
    m.setattr(match, "_kernels", None)
    m.setattr(rank, "_kernels", None)
    m.setattr(voc, "_textscan", None)


@pytest.mark.parametrize("metric", ["voc07", "voc12"])
@pytest.mark.parametrize("compat", COMPATS)
def test_evaluate_voc_fixtures_same_with_and_without_c(monkeypatch, metric, compat):
    args = (REPO / "fixtures" / "voc" / "VOC2007", REPO / "fixtures" / "voc" / "results")
    kw = dict(imageset="test", metric=metric, compat=compat)
    on = deteval.evaluate_voc(*args, **kw).to_dict()
    with monkeypatch.context() as m:
        _no_c(m)
        assert voc._textscan is None and match._kernels is None
        off = deteval.evaluate_voc(*args, **kw).to_dict()
    assert on == off
    assert on["mAP"] is not None and len(on["classes"]) >= 5
    assert any(c["tp"] for c in on["classes"]) and any(c["fp"] for c in on["classes"])


def _coco_gen():
    try:
        import coco_gen
    except ImportError:  # tests/ made a package by someone else
        from tests import coco_gen
    return coco_gen


def check_coco_seed(monkeypatch, seed):
    case = _coco_gen().generate_case(seed)
    on = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results)).to_dict()
    with monkeypatch.context() as m:
        m.setattr(match, "_kernels", None)
        m.setattr(rank, "_kernels", None)
        off = deteval.evaluate_coco(copy.deepcopy(case.gt),
                                    copy.deepcopy(case.results)).to_dict()
    assert on == off, case


@pytest.mark.parametrize("seed", range(8))
def test_evaluate_coco_same_with_and_without_kernels(monkeypatch, seed):
    check_coco_seed(monkeypatch, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 200))
def test_evaluate_coco_same_with_and_without_kernels_sweep(monkeypatch, seed):
    check_coco_seed(monkeypatch, seed)


def test_evaluate_coco_tied_scores_many_groups(monkeypatch):
    """A larger generated dataset: many images, coarse (tied) scores, > max_dets
    detections per group, so the ranked order and the max_dets cut both matter."""
    rng = np.random.default_rng(7)
    images = [{"id": int(i), "width": 200, "height": 200} for i in rng.permutation(400) + 1]
    cats = [{"id": c, "name": f"c{c}"} for c in (3, 1, 2)]
    anns, results = [], []
    for img in images:
        for _ in range(int(rng.integers(0, 4))):
            x, y = (int(v) for v in rng.integers(0, 150, 2))
            w, h = (int(v) for v in rng.integers(1, 50, 2))
            anns.append({"id": len(anns) + 1, "image_id": img["id"], "category_id":
                         int(rng.choice([1, 2, 3])), "bbox": [x, y, w, h], "area": w * h,
                         "iscrowd": int(rng.random() < 0.05)})
    for _ in range(12000):
        img = images[int(rng.integers(0, 40))]["id"] if rng.random() < 0.5 else \
            images[int(rng.integers(len(images)))]["id"]
        x, y = (int(v) for v in rng.integers(0, 150, 2))
        w, h = (int(v) for v in rng.integers(1, 50, 2))
        results.append({"image_id": img, "category_id": int(rng.choice([1, 2, 3])),
                        "bbox": [x, y, w, h], "score": float(rng.choice([0.1, 0.5, 0.9]))})
    gt = {"images": images, "categories": cats, "annotations": anns}
    on = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results)).to_dict()
    with monkeypatch.context() as m:
        m.setattr(match, "_kernels", None)
        m.setattr(rank, "_kernels", None)
        off = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results)).to_dict()
    assert on == off


# ------------------------------------------------------------------ coco_match

CUSTOM_COCO_PARAMS = [
    dict(iou_thresholds=[0.0, 0.5, 1.0]),
    dict(iou_thresholds=[0.9, 0.3, 0.75], max_dets=(2, 5)),
    dict(area_ranges={"all": (0, 1e10), "tiny": (0, 64), "mid": (64, 4096), "edge": (1024, 1024)}),
    dict(iou_thresholds=[0.5], area_ranges={"all": (0, 1e10)}, max_dets=(1,)),
]


@pytest.mark.parametrize("params", range(len(CUSTOM_COCO_PARAMS)))
@pytest.mark.parametrize("seed", range(4))
def test_evaluate_coco_custom_params_same_with_and_without_kernels(monkeypatch, seed, params):
    """Thresholds 0 and 1 (every pair a candidate; only identical boxes), unsorted
    thresholds, custom and degenerate area ranges, small max_dets."""
    case = _coco_gen().generate_case(1000 + seed)
    kw = CUSTOM_COCO_PARAMS[params]
    on = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results), **kw)
    with monkeypatch.context() as m:
        m.setattr(match, "_kernels", None)
        m.setattr(rank, "_kernels", None)
        off = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results), **kw)
    assert on.to_dict() == off.to_dict(), case


def test_match_coco_records_same_with_and_without_kernels(monkeypatch):
    """Every CocoMatches array, not only the summary figures."""
    from deteval.io.coco import load_coco_ground_truth, load_coco_results
    for seed in range(3):
        case = _coco_gen().generate_case(2000 + seed)
        gt = load_coco_ground_truth(copy.deepcopy(case.gt))
        det = load_coco_results(copy.deepcopy(case.results), gt)
        thr = np.array([0.0, 0.5, 0.55, 0.95, 1.0])
        areas = np.array([[0, 1e10], [0, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e10]])
        on = match.match_coco(gt, det, thr, areas, 100)
        with monkeypatch.context() as m:
            m.setattr(match, "_kernels", None)
            m.setattr(rank, "_kernels", None)
            off = match.match_coco(gt, det, thr, areas, 100)
        for f in dataclasses.fields(on):
            a, b = getattr(on, f.name), getattr(off, f.name)
            assert a.dtype == b.dtype and a.shape == b.shape, f.name
            assert np.array_equal(a, b), (f.name, case)
        assert on.matched.any() and on.ignored.any()


def _coco_args(n=2, g=2, a=1, t=1):
    i64 = np.int64
    return [np.zeros(n, i64), np.tile(np.array([0, 0, 10, 10.0]), n), np.zeros(g, i64),
            np.tile(np.array([0, 0, 10, 10.0]), g), np.zeros(g, np.uint8),
            np.zeros(g * a, np.uint8), np.full(t, 0.5), 1]


def test_coco_match_direct():
    matched, ign = kernels.coco_match(*_coco_args())
    # two identical detections, two identical GT: each detection takes one GT (the later
    # one first: pycocotools keeps the last of equal IoUs)
    assert list(matched) == [1, 1] and list(ign) == [0, 0]
    args = _coco_args()
    args[4] = np.array([1, 0], np.uint8)  # GT 0 crowd, hence ignored: the first detection
    args[5] = np.array([1, 0], np.uint8)  # takes GT 1, the second falls to the crowd GT
    matched, ign = kernels.coco_match(*args)
    assert list(matched) == [1, 1] and list(ign) == [0, 1]


@pytest.mark.parametrize("which, value", [
    (0, np.zeros(3, np.int64)),            # boxes say 2 records
    (1, np.zeros(7)),                      # not 4 per record
    (3, np.zeros(5)),                      # not 4 per GT
    (4, np.zeros(3, np.uint8)),            # crowd flags for 3 GT
    (5, np.zeros(3, np.uint8)),            # ignored flags not G*A
    (0, np.array([0, 5], np.int64)),       # group >= num_groups
    (2, np.array([-1, 0], np.int64)),      # negative group
])
def test_coco_match_bad_arguments(which, value):
    args = _coco_args()
    args[which] = value
    with pytest.raises(ValueError):
        kernels.coco_match(*args)


def test_coco_match_declines_huge_group_table():
    args = _coco_args()
    args[7] = 2 ** 40
    assert kernels.coco_match(*args) is None
