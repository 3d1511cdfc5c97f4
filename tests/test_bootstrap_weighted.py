"""The weighted bootstrap path (deteval.bootstrap + _kernels.boot_curves) against the
reference path (each replicate's records resampled explicitly and re-accumulated) and
against the reference tools on explicitly resampled datasets.

Tie order (stated in deteval.bootstrap and docs): in replicate ``b`` the image drawn
``j``-th is image ``j`` of the resampled dataset, so detections with equal scores are
ordered by draw position, then by their order within the image (COCO: rank; VOC: file
position) -- copies of one image included. That is what pycocotools (and the devkit on
detection files written in draw order) does on the explicitly resampled dataset.
"""
import numpy as np
import pytest

from deteval import bootstrap as boot
from deteval.ap import coco_stat_specs
from deteval.io.coco import load_coco_ground_truth, load_coco_results
from deteval.match import match_coco, match_voc
from deteval.params import COCO_RECALL_THRESHOLDS, coco_params

from coco_gen import generate_case, pycocotools_figures
from test_bootstrap import explicit_resample

needs_kernel = pytest.mark.skipif(not boot.weighted_available(4, 10),
                                  reason="compiled deteval._kernels not built")


def _coco_setup(gt_dict, results, **kw):
    thr, areas, md, default = coco_params(kw.get("iou_thresholds"), kw.get("area_ranges"),
                                          kw.get("max_dets"), "bbox")
    gt = load_coco_ground_truth(gt_dict)
    det = load_coco_results(results, gt)
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    image_key = np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")
    matches = match_coco(gt, det, thr, area_arr, md[-1])
    counts = boot.coco_gt_counts(gt, area_arr, image_key)
    return gt, matches, counts, thr, areas, md, default


def _coco_both(gt_dict, results, samples, seed, **kw):
    gt, matches, counts, thr, areas, md, default = _coco_setup(gt_dict, results, **kw)
    out = {}
    for method in ("weighted", "naive"):
        out[method] = boot.coco_replicate_figures(
            matches, counts, thr, list(areas), md, COCO_RECALL_THRESHOLDS, default, "bbox",
            samples=samples, seed=seed, method=method, progress=False)
    return out, gt


def _assert_close(a, b, what):
    assert np.array_equal(np.isnan(a), np.isnan(b)), what
    ok = ~np.isnan(a)
    if ok.any():
        assert np.max(np.abs(a[ok] - b[ok])) <= 1e-12, what


def _tied(case, seed):
    """The case's results with scores rounded so that ties across images abound."""
    rng = np.random.default_rng(seed)
    dec = seed % 3
    return [dict(r, score=round(r["score"], dec) if dec else float(rng.integers(1, 4)) / 4)
            for r in case.results]


CUSTOM = [{}, {"iou_thresholds": [0.3, 0.5, 0.7], "max_dets": [1, 3, 5],
               "area_ranges": {"all": (0, 1e10), "small": (0, 500)}},
          {"area_ranges": {"small": (0, 1000), "big": (1000, 1e10)}}]


@needs_kernel
@pytest.mark.parametrize("case_seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
def test_weighted_equals_naive_coco(case_seed, ties):
    case = generate_case(case_seed)
    results = _tied(case, case_seed) if ties else case.results
    out, _ = _coco_both(case.gt, results, 12, case_seed, **CUSTOM[case_seed % 3])
    (ws, wc), (ns, nc) = out["weighted"], out["naive"]
    assert set(ws) == set(ns)
    for name in ns:
        _assert_close(ws[name], ns[name], name)
        _assert_close(wc[name], nc[name], f"per class {name}")


@needs_kernel
@pytest.mark.slow
@pytest.mark.parametrize("case_seed", range(7, 47))
def test_weighted_equals_naive_coco_sweep(case_seed):
    case = generate_case(case_seed)
    out, _ = _coco_both(case.gt, _tied(case, case_seed), 20, case_seed,
                        **CUSTOM[case_seed % 3])
    for name in out["naive"][0]:
        _assert_close(out["weighted"][0][name], out["naive"][0][name], name)
        _assert_close(out["weighted"][1][name], out["naive"][1][name], name)


@needs_kernel
def test_mixed_tie_runs_are_exercised():
    """The tied cases above do contain runs of equal scores holding TPs and FPs."""
    case = generate_case(3)
    _, matches, *_ , md, _ = _coco_setup(case.gt, _tied(case, 3))
    items = boot.rank_coco_items(matches, md)
    assert items.block_mixed.sum() > 5
    sizes = np.diff(items.block_start)[items.block_mixed.astype(bool)]
    assert sizes.max() > 3


@needs_kernel
@pytest.mark.parametrize("case_seed", [1, 5, 8])
@pytest.mark.parametrize("boot_seed", [0, 11])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
def test_weighted_replicates_equal_pycocotools_on_resampled_data(case_seed, boot_seed, ties):
    pytest.importorskip("pycocotools")
    case = generate_case(case_seed)
    results = _tied(case, case_seed) if ties else case.results
    out, gt = _coco_both(case.gt, results, 3, boot_seed)
    stats, _ = out["weighted"]
    draws = boot.replicate_draws(gt.num_images, 3, boot_seed)
    for b, row in enumerate(draws):
        want = pycocotools_figures(*explicit_resample(case.gt, results, row))["stats"]
        for name, w in want.items():
            g = stats[name][b]
            if w is None:
                assert np.isnan(g), (name, g)
            else:
                assert g == pytest.approx(w, abs=1e-12), (b, name, g, w)


@needs_kernel
def test_tie_order_across_copies_of_one_image():
    """Every score equal: copies of an image are ordered by draw position. Draws that put
    the image with the FP before / after the image with the TP give different AP, and
    each equals pycocotools on that resampled dataset."""
    pytest.importorskip("pycocotools")
    img = lambda i: {"id": i, "width": 100, "height": 100}  # noqa: E731
    gt = {"images": [img(1), img(2)], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100, "iscrowd": 0},
                          {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100, "iscrowd": 0}]}
    res = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.5},
           {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.5},
           {"image_id": 2, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.5}]
    g, matches, counts, thr, areas, md, default = _coco_setup(gt, res)
    items = boot.rank_coco_items(matches, md)
    sparse = boot.GtCounts.from_dense(counts)
    seen = set()
    for row in ([1, 0], [0, 1], [1, 1], [0, 0]):
        draws = np.array([row], dtype=np.int64)
        value, tp, npig = boot.boot_curves(items, draws, sparse, COCO_RECALL_THRESHOLDS,
                                           len(thr), len(md), 0)
        st, _ = boot.coco_figures_from_curves(
            value, tp, npig, coco_stat_specs(thr, list(areas), md, default),
            COCO_RECALL_THRESHOLDS.shape[0])
        want = pycocotools_figures(*explicit_resample(gt, res, np.array(row)))["stats"]
        assert st["AP"][0] == pytest.approx(want["AP"], abs=1e-12), row
        seen.add(round(want["AP"], 9))
    assert len(seen) >= 3  # the order matters, and is reproduced


def test_draw_blocks_equal_one_draw():
    full = boot.replicate_draws(37, 101, 5)
    blocks = list(boot.iter_draw_blocks(37, 101, 5, block=16))
    assert [b.shape[0] for b in blocks] == [16] * 6 + [5]
    np.testing.assert_array_equal(np.concatenate(blocks), full)


@needs_kernel
def test_kernel_refuses_inconsistent_inputs():
    case = generate_case(2)
    _, matches, counts, thr, areas, md, _ = _coco_setup(case.gt, case.results)
    items = boot.rank_coco_items(matches, md)
    sparse = boot.GtCounts.from_dense(counts)
    bad = np.full((1, counts.shape[0]), counts.shape[0], dtype=np.int64)  # image out of range
    with pytest.raises(ValueError, match="inconsistent"):
        boot.boot_curves(items, bad, sparse, COCO_RECALL_THRESHOLDS, len(thr), len(md), 0)


# ----------------------------------------------------------------------------- VOC

def _voc_case(seed, n_images=12, ties=False):
    """Random VOC gt / dets lists as tests/voc_oracle.py takes them."""
    rng = np.random.default_rng(seed)
    classes = ["a", "b", "c"]
    gt, dets = [], []
    for i in range(n_images):
        iid = f"{i:04d}"
        for _ in range(rng.integers(0, 4)):
            c = classes[rng.integers(0, 3)]
            x, y = rng.integers(0, 80, 2)
            w, h = rng.integers(5, 30, 2)
            gt.append((iid, c, int(x), int(y), int(x + w), int(y + h),
                       bool(rng.random() < 0.15)))
            for _ in range(rng.integers(0, 3)):
                dx, dy = rng.integers(-4, 5, 2)
                dets.append((iid, c, 0.0, int(x + dx), int(y + dy), int(x + w + dx),
                             int(y + h + dy)))
        for _ in range(rng.integers(0, 3)):
            x, y = rng.integers(0, 80, 2)
            dets.append((iid, classes[rng.integers(0, 3)], 0.0, int(x), int(y), int(x + 9),
                         int(y + 9)))
    order = rng.permutation(len(dets))
    scores = (rng.integers(1, 5, len(dets)) / 4 if ties else rng.random(len(dets)))
    dets = [(d[0], d[1], float(scores[k])) + d[3:] for k, d in enumerate(dets)]
    return gt, [dets[k] for k in order], sorted({g[0] for g in gt} | {d[0] for d in dets})


def _voc_tables(gt_list, det_list, image_ids):
    """GroundTruth / Detections tables of the lists (detections in list = file order)."""
    from deteval.tables import Detections, GroundTruth
    classes = sorted({g[1] for g in gt_list} | {d[1] for d in det_list})
    pos = {i: k for k, i in enumerate(image_ids)}
    cpos = {c: k for k, c in enumerate(classes)}
    G = GroundTruth(image_idx=np.array([pos[g[0]] for g in gt_list], dtype=np.int64),
                    class_idx=np.array([cpos[g[1]] for g in gt_list], dtype=np.int64),
                    boxes=np.array([g[2:6] for g in gt_list], dtype=np.float64).reshape(-1, 4),
                    difficult=np.array([bool(g[6]) for g in gt_list], dtype=bool),
                    crowd=np.zeros(len(gt_list), dtype=bool),
                    area=np.zeros(len(gt_list)), image_ids=np.array(image_ids, dtype=object),
                    class_names=classes)
    D = Detections(image_idx=np.array([pos[d[0]] for d in det_list], dtype=np.int64),
                   class_idx=np.array([cpos[d[1]] for d in det_list], dtype=np.int64),
                   scores=np.array([d[2] for d in det_list], dtype=np.float64),
                   boxes=np.array([d[3:7] for d in det_list], dtype=np.float64).reshape(-1, 4),
                   order=np.arange(len(det_list), dtype=np.int64))
    return G, D


def _voc_resample(gt_list, det_list, image_ids, draws):
    """The explicitly resampled VOC dataset: image j is ``image_ids[draws[j]]`` (renamed
    ``r<j>``); its detections written in draw order, each image's in file order."""
    gt_r, det_r = [], []
    for j, d in enumerate(draws):
        old, new = image_ids[int(d)], f"r{j:05d}"
        gt_r += [(new,) + g[1:] for g in gt_list if g[0] == old]
        det_r += [(new,) + x[1:] for x in det_list if x[0] == old]
    return gt_r, det_r


@pytest.mark.parametrize("metric", ["voc07", "voc12"])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_voc_replicates_equal_voc_rules_on_resampled_data(metric, ties, seed):
    import voc_oracle
    gt_list, det_list, ids = _voc_case(seed, ties=ties)
    G, D = _voc_tables(gt_list, det_list, ids)
    m = match_voc(G, D, 0.5, "devkit")
    rec = boot.voc_records(G, D, m, "devkit")
    stats, per_class = boot.voc_replicate_figures(rec, metric, "devkit", 4, seed,
                                                  progress=False)
    classes = list(G.class_names)
    for b, row in enumerate(boot.replicate_draws(len(ids), 4, seed)):
        g_r, d_r = _voc_resample(gt_list, det_list, ids, row)
        want = voc_oracle.evaluate(g_r, d_r, metric=metric, compat="devkit", classes=classes)
        for k, c in enumerate(classes):
            w = want["classes"][c]["ap"]
            g = per_class["AP"][b, k]
            if w is None:
                assert np.isnan(g), (b, c, g, w)
            else:
                assert g == pytest.approx(w, abs=1e-12), (b, c, g, w)
        if want["mAP"] is None:
            assert np.isnan(stats["mAP"][b])
        else:
            assert stats["mAP"][b] == pytest.approx(want["mAP"], abs=1e-12)


@needs_kernel
@pytest.mark.parametrize("compat", ["devkit", "detectron2"])
@pytest.mark.parametrize("metric", ["voc07", "voc12"])
@pytest.mark.parametrize("seed", [4, 5])
def test_voc_weighted_equals_naive(compat, metric, seed):
    gt_list, det_list, ids = _voc_case(seed, n_images=30, ties=True)
    G, D = _voc_tables(gt_list, det_list, ids)
    m = match_voc(G, D, 0.5, compat)
    rec = boot.voc_records(G, D, m, compat)
    a = boot.voc_replicate_figures(rec, metric, compat, 25, seed, "weighted", False)
    b = boot.voc_replicate_figures(rec, metric, compat, 25, seed, "naive", False)
    _assert_close(a[0]["mAP"], b[0]["mAP"], "mAP")
    _assert_close(a[1]["AP"], b[1]["AP"], "AP")


# ------------------------------------------------------------------- the section

@needs_kernel
def test_section_intervals_are_numpy_percentiles_and_nulls_counted():
    case = generate_case(4)
    gt, matches, counts, thr, areas, md, default = _coco_setup(
        case.gt, case.results, area_ranges={"all": (0, 1e10), "tiny": (0, 30)})
    names = list(gt.class_names)
    u = boot.coco_uncertainty(counts, matches, None, list(areas), thr, md,
                              COCO_RECALL_THRESHOLDS, default, "bbox", names, 200, 3, 0.9)
    assert u["method"] == "image bootstrap" and u["samples"] == 200 and u["seed"] == 3
    assert u["confidence"] == 0.9
    for name, reps in u["replicates"].items():
        assert len(reps) == 200
        ok = np.array([v for v in reps if v is not None])
        assert u["null_replicates"][name] == 200 - ok.shape[0]
        if ok.shape[0]:
            assert u["intervals"][name] == list(np.percentile(
                ok, [100 * (1 - 0.9) / 2, 100 * (1 + 0.9) / 2]))
        else:
            assert u["intervals"][name] is None
    assert set(u["per_class_intervals"]) == set(names)
    assert any(u["null_replicates"].values()) or u["per_class_null_replicates"]


@needs_kernel
def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    bar = boot._Progress(10, "x", after=0.0)
    bar.tty = False
    bar.update(3)
    assert bar.bar is None
    bar.close()
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------- segm and keypoints

@needs_kernel
@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_weighted_equals_naive_segm_keypoints(iou_type, monkeypatch):
    pytest.importorskip("pycocotools")
    import deteval
    from test_segm_keypoints import kp_case, segm_case
    gt, results = (segm_case(3) if iou_type == "segm" else kp_case(3))
    fast = deteval.evaluate_coco(gt, results, iou_type=iou_type, bootstrap=15, seed=2)
    monkeypatch.setattr(boot, "weighted_available", lambda *a: False)
    ref = deteval.evaluate_coco(gt, results, iou_type=iou_type, bootstrap=15, seed=2)
    for name, values in ref.uncertainty["replicates"].items():
        a = np.array([np.nan if v is None else v for v in fast.uncertainty["replicates"][name]])
        b = np.array([np.nan if v is None else v for v in values])
        _assert_close(a, b, name)


def test_keypoints_replicate_equals_pycocotools_on_resampled_data():
    pytest.importorskip("pycocotools")
    import deteval
    from test_segm_keypoints import kp_case, pycocotools_eval
    gt, results = kp_case(5)
    rep = deteval.evaluate_coco(gt, results, iou_type="keypoints", bootstrap=2, seed=4)
    draws = boot.replicate_draws(len(gt["images"]), 2, 4)
    for b, row in enumerate(draws):
        E = pycocotools_eval(*explicit_resample(gt, results, row), "keypoints")
        want = float(E.stats[0])
        got = rep.uncertainty["replicates"]["AP"][b]
        assert (got is None) if want == -1 else got == pytest.approx(want, abs=1e-12)


def test_no_images_gives_null_replicates():
    import deteval
    gt = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "a"}]}
    rep = deteval.evaluate_coco(gt, [], bootstrap=5)
    assert rep.uncertainty["intervals"]["AP"] is None
    assert rep.uncertainty["null_replicates"]["AP"] == 5


def test_progress_bar_on_a_terminal_when_slow(monkeypatch):
    pytest.importorskip("tqdm")
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    bar = boot._Progress(10, "bootstrap", after=0.0)  # "slow": any work counts
    bar.update(2)
    bar.update(8)
    bar.close()
    assert "bootstrap:" in err.getvalue() and "/10 " in err.getvalue()
    fast = Tty()
    monkeypatch.setattr(sys, "stderr", fast)
    bar = boot._Progress(10, "bootstrap", after=3600.0)  # quick work: no bar
    bar.update(2)
    bar.close()
    assert fast.getvalue() == ""


@needs_kernel
@pytest.mark.parametrize("metric", ["voc07", "voc12"])
def test_voc_many_envelope_corners_from_one_duplicated_image(metric):
    """One image holding a TP and a duplicate FP at the same score, drawn every time: the
    replicate alternates TP, FP, TP, ... (one envelope corner per copy: more corners than
    the class has records) and equals the reference path."""
    from deteval.ap import summarize_voc
    ids = [f"{i:03d}" for i in range(40)]
    gt_list = [("000", "a", 10, 10, 50, 50, False)]
    det_list = [("000", "a", 0.5, 10, 10, 50, 50), ("000", "a", 0.5, 11, 11, 50, 50)]
    G, D = _voc_tables(gt_list, det_list, ids)
    m = match_voc(G, D, 0.5, "devkit")
    rec = boot.voc_records(G, D, m, "devkit")
    items = boot.rank_items(m.class_idx, m.scores, rec.image_key, rec.within,
                            (m.outcome == 1)[:, None, None], (m.outcome == 0)[:, None, None],
                            np.zeros(2, np.uint8), 1)
    assert items.block_mixed.tolist() == [1]
    draws = np.zeros((1, 40), dtype=np.int64)
    from deteval.ap import VOC07_GRID_MATLAB
    mode = 1 if metric == "voc07" else 2
    value, _, npig = boot.boot_curves(items, draws, boot.GtCounts.from_dense(rec.gt_counts),
                                      VOC07_GRID_MATLAB if mode == 1 else np.zeros(1), 1, 1,
                                      mode)
    assert npig[0, 0, 0] == 40
    got = value[0, 0, 0, 0, 0] / (11 if mode == 1 else 1)
    want = summarize_voc(boot.resample_voc_matches(rec, draws[0]), metric, "devkit").ap[0]
    assert got == pytest.approx(want, abs=1e-12)
