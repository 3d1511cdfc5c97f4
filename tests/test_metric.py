"""deteval.MeanAveragePrecision: streaming / merging / pickling give the one-shot figures.

COCO: per-image preds/targets are built from a COCO file pair with images in
``gt["images"]`` order and annotations / results in file order; every way of
feeding them (batches, shuffled image order, shards merged in any order, pickled
shards, tiny flush threshold) must give ``stats`` and ``classes`` *exactly* equal
to ``deteval.evaluate_coco`` on the files (which is itself checked against
pycocotools elsewhere), and the same ground-truth fingerprint.

VOC: the CLI breaks score ties by detection-file order, the metric by (image id,
position of the prediction within its image). We compare only where the two
orders agree: detection files whose lines are sorted by image id (the shipped
fixtures are; asserted below), with per-image predictions built by reading the
class files in order and appending each line to its image. Then, within one
class, file order == (image id, position) order, so the figures must be equal
exactly, ties included. ``compat="detectron2"`` (which orders ties like
``np.argsort``) is compared only on tie-free data.
"""
from __future__ import annotations

import copy
import itertools
import json
import pickle
import random
import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import deteval
import deteval.metric as metric_module
from deteval import MeanAveragePrecision, MetricInputError

try:
    from coco_gen import generate_case
except ImportError:  # pragma: no cover - run from another rootdir
    from tests.coco_gen import generate_case

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VOC_ROOT = FIXTURES / "voc" / "VOC2007"
VOC_RESULTS = FIXTURES / "voc" / "results"

# seeds chosen for their corner cases (asserted in test_coco_seeds_cover_the_corner_cases)
COCO_SEEDS = (28, 16, 21, 50, 29, 4, 0)
NEEDED_FEATURES = {"crowd_over_objects", "crowd_only_image", "area_field_differs",
                   "tied_scores", "many_dets", "zero_ids"}


# --------------------------------------------------------------------------- helpers
def coco_inputs(gt: dict, results: list):
    """(ids, preds, targets): one element per image of ``gt["images"]``, file order."""
    ids = [im["id"] for im in gt["images"]]
    tgt = {i: {"boxes": [], "labels": [], "iscrowd": [], "area": []} for i in ids}
    prd = {i: {"boxes": [], "scores": [], "labels": []} for i in ids}
    for a in gt["annotations"]:
        t = tgt[a["image_id"]]
        t["boxes"].append(list(a["bbox"]))
        t["labels"].append(a["category_id"])
        t["iscrowd"].append(int(a.get("iscrowd", 0)))
        t["area"].append(a["area"])
    for d in results:
        p = prd[d["image_id"]]
        p["boxes"].append(list(d["bbox"]))
        p["scores"].append(d["score"])
        p["labels"].append(d["category_id"])
    return ids, [_as_numpy(prd[i]) for i in ids], [_as_numpy(tgt[i]) for i in ids]


def _as_numpy(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        arr = np.asarray(v, dtype=np.float64 if k in ("boxes", "scores", "area") else np.int64)
        out[k] = arr.reshape(-1, 4) if k == "boxes" else arr
    return out


@lru_cache(maxsize=None)
def coco_case(name: str):
    """(gt, results) of a named case: "fixture" or "seed<N>"."""
    if name == "fixture":
        gt = json.loads((FIXTURES / "coco" / "instances_val.json").read_text())
        results = json.loads((FIXTURES / "coco" / "results.json").read_text())
        return gt, results
    case = generate_case(int(name[4:]))
    return case.gt, case.results


@lru_cache(maxsize=None)
def coco_reference(name: str) -> dict:
    gt, results = coco_case(name)
    return deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results)).to_dict()


def coco_metric_factory(name: str):
    gt, _ = coco_case(name)
    names = {c["id"]: c["name"] for c in gt["categories"]}
    return lambda: MeanAveragePrecision("coco", "xywh", class_names=names)


def assert_same_coco(got: dict, ref: dict):
    assert got["stats"] == ref["stats"]
    assert got["classes"] == ref["classes"]
    assert got["params"] == ref["params"]
    assert got["inputs"]["ground_truth_sha256"] == ref["inputs"]["ground_truth_sha256"]
    assert got["inputs"]["num_images"] == ref["inputs"]["num_images"]


def _read_voc_xml(path: Path):
    boxes, names, difficult = [], [], []
    for obj in ET.parse(path).getroot().iter("object"):
        bb = obj.find("bndbox")
        boxes.append([float(bb.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax")])
        names.append(" ".join(obj.findtext("name").split()))
        d = obj.findtext("difficult")
        difficult.append(d is not None and d.strip() == "1")  # devkit rule
    return boxes, names, difficult


@lru_cache(maxsize=None)
def voc_fixture_inputs():
    """(ids, preds, targets, class_names) read from the shipped VOC fixtures."""
    ids = (VOC_ROOT / "ImageSets" / "Main" / "test.txt").read_text().split()
    objs = {i: _read_voc_xml(VOC_ROOT / "Annotations" / f"{i}.xml") for i in ids}
    classes = sorted({n for _, names, _ in objs.values() for n in names})
    prd = {i: {"boxes": [], "scores": [], "labels": []} for i in ids}
    for k, cls in enumerate(classes):
        lines = (VOC_RESULTS / f"comp4_det_test_{cls}.txt").read_text().split("\n")
        rows = [ln.split() for ln in lines if ln.strip()]
        # precondition of the exact comparison (see the module docstring)
        assert [r[0] for r in rows] == sorted(r[0] for r in rows), cls
        for r in rows:
            p = prd[r[0]]
            p["boxes"].append([float(v) for v in r[2:6]])
            p["scores"].append(float(r[1]))
            p["labels"].append(k)
    targets = []
    for i in ids:
        boxes, names, difficult = objs[i]
        targets.append({"boxes": np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
                        "labels": np.asarray([classes.index(n) for n in names], dtype=np.int64),
                        "difficult": np.asarray(difficult, dtype=bool)})
    preds = [_as_numpy(prd[i]) for i in ids]
    return ids, preds, targets, classes


@lru_cache(maxsize=None)
def voc_fixture_reference(metric: str) -> dict:
    return deteval.evaluate_voc(VOC_ROOT, VOC_RESULTS, imageset="test", metric=metric).to_dict()


def assert_same_voc(got: dict, ref: dict):
    for key in ("protocol", "metric", "compat", "iou_threshold", "mAP", "num_classes_in_mAP",
                "classes"):
        assert got[key] == ref[key], key
    assert got["inputs"]["ground_truth_sha256"] == ref["inputs"]["ground_truth_sha256"]
    assert got["inputs"]["num_images"] == ref["inputs"]["num_images"]
    assert got["inputs"]["num_detections"] == ref["inputs"]["num_detections"]


# --------------------------------------------------------------------------- feeding strategies
def _batches(metric, ids, preds, targets, size):
    for s in range(0, len(ids), size):
        metric.update(preds[s:s + size], targets[s:s + size], image_ids=ids[s:s + size])
    return metric


def _shards(ids, k, seed):
    """Random (interleaved) assignment of image positions to k shards, none empty."""
    rng = random.Random(seed)
    pos = list(range(len(ids)))
    rng.shuffle(pos)
    shards = [sorted(pos[j::k]) for j in range(k)]
    return [s for s in shards if s]


def _feed(make, ids, preds, targets, positions, batch):
    m = make()
    sel = lambda xs: [xs[p] for p in positions]  # noqa: E731
    return _batches(m, sel(ids), sel(preds), sel(targets), batch)


def s_one_batch(make, ids, preds, targets):
    return _batches(make(), ids, preds, targets, max(len(ids), 1))


def s_batches_1(make, ids, preds, targets):
    return _batches(make(), ids, preds, targets, 1)


def s_batches_3(make, ids, preds, targets):
    return _batches(make(), ids, preds, targets, 3)


def s_batches_16(make, ids, preds, targets):
    return _batches(make(), ids, preds, targets, 16)


def s_shuffled(make, ids, preds, targets):
    order = list(range(len(ids)))
    random.Random(7).shuffle(order)
    return _feed(make, ids, preds, targets, order, 2)


def s_reversed_numpy_ids(make, ids, preds, targets):
    order = list(range(len(ids)))[::-1]
    m = make()
    m.update([preds[p] for p in order], [targets[p] for p in order],
             image_ids=np.asarray([ids[p] for p in order]))  # numpy ids (scalars unwrapped)
    return m


def s_two_shards(make, ids, preds, targets):
    a, b = (_feed(make, ids, preds, targets, s, 3) for s in _shards(ids, 2, 1))
    return b.merge(a)  # later shard first


def s_three_shards_all_orders(make, ids, preds, targets):
    shards = _shards(ids, 3, 2)
    results = []
    for perm in itertools.permutations(range(len(shards))):
        parts = [_feed(make, ids, preds, targets, shards[j], 2) for j in perm]
        total = make()
        for p in parts:
            total.merge(p)
        results.append(total.compute().to_dict())
    first = results[0]
    for r in results[1:]:
        assert r == first
    # nested merge: (s2 <- s0) <- s1 with a shuffled feed inside each shard
    parts = [_feed(make, ids, preds, targets, s[::-1], 1) for s in shards]
    head = parts[-1]
    for p in parts[:-1]:
        head.merge(p)
    return head


def s_pickled_shards(make, ids, preds, targets):
    shards = _shards(ids, 3, 3)
    parts = [_feed(make, ids, preds, targets, s, 4) for s in shards]
    parts[0].compute()  # one shard already flushed before pickling
    parts = [pickle.loads(pickle.dumps(p)) for p in parts]
    total = parts[1].merge(parts[0])
    for p in parts[2:]:
        total.merge(p)
    return pickle.loads(pickle.dumps(total))


def s_compute_in_between(make, ids, preds, targets):
    m = make()
    half = len(ids) // 2
    _batches(m, ids[:half], preds[:half], targets[:half], 5)
    m.compute()
    _batches(m, ids[half:], preds[half:], targets[half:], 5)
    return m


STRATEGIES = [s_one_batch, s_batches_1, s_batches_3, s_batches_16, s_shuffled,
              s_reversed_numpy_ids, s_two_shards, s_three_shards_all_orders, s_pickled_shards,
              s_compute_in_between]
STRATEGY_IDS = [s.__name__[2:] for s in STRATEGIES]


#: run with matching passes of ~7 detections (many chunks): a subset of the strategies
CHUNKED_STRATEGIES = [s_batches_3, s_shuffled, s_pickled_shards, s_compute_in_between]


@pytest.fixture
def small_flush(monkeypatch):
    monkeypatch.setattr(metric_module, "_FLUSH_DETECTIONS", 7)


# --------------------------------------------------------------------------- COCO
def test_coco_seeds_cover_the_corner_cases():
    covered = set()
    for s in COCO_SEEDS:
        covered |= generate_case(s).features
    assert NEEDED_FEATURES <= covered
    # tied scores across images and > 100 detections for one image and class, explicitly
    _, results = coco_case("seed28")
    images_by_score = {}
    per_image_class = {}
    for d in results:
        images_by_score.setdefault(d["score"], set()).add(d["image_id"])
        key = (d["image_id"], d["category_id"])
        per_image_class[key] = per_image_class.get(key, 0) + 1
    assert any(len(v) > 1 for v in images_by_score.values())
    assert max(per_image_class.values()) > 100
    gt, _ = coco_case("seed28")
    assert any(a["iscrowd"] for a in gt["annotations"])
    assert any(a["area"] != a["bbox"][2] * a["bbox"][3] for a in gt["annotations"])


COCO_CASES = ["fixture"] + [f"seed{s}" for s in COCO_SEEDS]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=STRATEGY_IDS)
@pytest.mark.parametrize("case", COCO_CASES)
def test_coco_equals_evaluate_coco(case, strategy):
    gt, results = coco_case(case)
    ids, preds, targets = coco_inputs(gt, results)
    m = strategy(coco_metric_factory(case), ids, preds, targets)
    assert_same_coco(m.compute().to_dict(), coco_reference(case))


@pytest.mark.parametrize("case", COCO_CASES)
def test_coco_equals_evaluate_coco_in_small_chunks(case, small_flush):
    gt, results = coco_case(case)
    ids, preds, targets = coco_inputs(gt, results)
    for strategy in CHUNKED_STRATEGIES:
        m = strategy(coco_metric_factory(case), ids, preds, targets)
        assert_same_coco(m.compute().to_dict(), coco_reference(case))
        assert len(m._chunks) > 1  # (private) the patch took effect: several matching passes


def test_coco_num_detections_counts_every_prediction():
    # many_dets: 100+ detections for one image and class, cut to max_dets when matching
    gt, results = coco_case("seed28")
    ids, preds, targets = coco_inputs(gt, results)
    m = coco_metric_factory("seed28")()
    m.update(preds, targets, image_ids=ids)
    ref = coco_reference("seed28")
    got = m.compute().to_dict()
    assert got["inputs"]["num_detections"] == ref["inputs"]["num_detections"] == len(results)


class ArrayLike:
    """Minimal non-numpy container exposing ``__array__`` (like a CPU tensor)."""

    def __init__(self, data):
        self._data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __len__(self):
        return len(self._data)


def _convert_fields(items, how):
    out = []
    for d in items:
        if how == "list":
            out.append({k: np.asarray(v).tolist() for k, v in d.items()})
        elif how == "array_like":
            out.append({k: ArrayLike(v) for k, v in d.items()})
        else:
            out.append(dict(d))
    return out


@pytest.mark.parametrize("case", ["fixture", "seed28"])
def test_input_containers_give_identical_results(case):
    gt, results = coco_case(case)
    ids, preds, targets = coco_inputs(gt, results)
    make = coco_metric_factory(case)
    reports = []
    for how in ("numpy", "list", "array_like"):
        m = make()
        _batches(m, ids, _convert_fields(preds, how), _convert_fields(targets, how), 4)
        reports.append(m.compute().to_dict())
    for r in reports[1:]:
        assert r["stats"] == reports[0]["stats"]
        assert r["classes"] == reports[0]["classes"]
        assert r["inputs"] == reports[0]["inputs"]
    assert_same_coco(reports[0], coco_reference(case))


def test_voc_input_containers_give_identical_results():
    ids, preds, targets, classes = voc_fixture_inputs()
    reports = []
    for how in ("numpy", "list", "array_like"):
        m = MeanAveragePrecision("voc12", "xyxy", class_names=classes)
        _batches(m, ids, _convert_fields(preds, how), _convert_fields(targets, how), 7)
        reports.append(m.compute().to_dict())
    assert reports[0] == reports[1] == reports[2]


def _integer_coco_seed():
    """A seed whose boxes are all integers (so xywh <-> xyxy is exact) with corner cases."""
    for s in range(200):
        c = generate_case(s)
        boxes = [a["bbox"] for a in c.gt["annotations"]] + [d["bbox"] for d in c.results]
        if (all(float(v).is_integer() for b in boxes for v in b)
                and {"crowd_over_objects", "area_field_differs", "many_dets"} <= c.features):
            return s
    raise AssertionError("no integer-coordinate seed")  # pragma: no cover


def test_coco_xyxy_equals_xywh_for_integer_boxes():
    seed = _integer_coco_seed()
    gt, results = coco_case(f"seed{seed}")
    ids, preds, targets = coco_inputs(gt, results)

    def to_xyxy(d):
        b = d["boxes"]
        xyxy = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1)
        # the conversion is exact: x2 - x1 gives w back bit for bit
        assert np.array_equal(xyxy[:, 2:] - xyxy[:, :2], b[:, 2:])
        return dict(d, boxes=xyxy)

    names = {c["id"]: c["name"] for c in gt["categories"]}
    m = MeanAveragePrecision("coco", "xyxy", class_names=names)
    # targets keep their explicit `area` field: only the boxes change format
    m.update([to_xyxy(p) for p in preds], [to_xyxy(t) for t in targets], image_ids=ids)
    got = m.compute().to_dict()
    assert_same_coco(got, coco_reference(f"seed{seed}"))


def test_coco_default_area_is_box_area():
    gt, results = coco_case("fixture")
    gt = copy.deepcopy(gt)
    for a in gt["annotations"]:
        a["area"] = a["bbox"][2] * a["bbox"][3]
    ref = deteval.evaluate_coco(gt, results).to_dict()
    ids, preds, targets = coco_inputs(gt, results)
    for t in targets:
        del t["area"]
    m = coco_metric_factory("fixture")()
    m.update(preds, targets, image_ids=ids)
    assert_same_coco(m.compute().to_dict(), ref)


# --------------------------------------------------------------------------- VOC
@pytest.mark.parametrize("strategy", STRATEGIES, ids=STRATEGY_IDS)
@pytest.mark.parametrize("protocol", ["voc07", "voc12"])
def test_voc_fixture_equals_evaluate_voc(protocol, strategy):
    ids, preds, targets, classes = voc_fixture_inputs()
    assert any(t["difficult"].any() for t in targets)
    make = lambda: MeanAveragePrecision(protocol, "xyxy", class_names=classes)  # noqa: E731
    m = strategy(make, ids, preds, targets)
    assert_same_voc(m.compute().to_dict(), voc_fixture_reference(protocol))


@pytest.mark.parametrize("protocol", ["voc07", "voc12"])
def test_voc_fixture_equals_evaluate_voc_in_small_chunks(protocol, small_flush):
    ids, preds, targets, classes = voc_fixture_inputs()
    make = lambda: MeanAveragePrecision(protocol, "xyxy", class_names=classes)  # noqa: E731
    for strategy in CHUNKED_STRATEGIES:
        m = strategy(make, ids, preds, targets)
        assert_same_voc(m.compute().to_dict(), voc_fixture_reference(protocol))


def _random_voc_case(seed: int, ties: bool):
    """GT and detections with string ids; detections listed in (image id, position) order."""
    rng = random.Random(seed)
    classes = ["bird", "boat", "tv"]
    ids = [f"{i:06d}" for i in sorted(rng.sample(range(1, 999999), 14))]
    levels = [0.2, 0.5, 0.9]
    gt, dets = [], []
    score = lambda: rng.choice(levels) if ties else rng.random()  # noqa: E731
    for img in ids:
        for _ in range(rng.randint(0, 5)):
            cls = rng.choice(classes)
            x1, y1 = rng.randint(1, 300), rng.randint(1, 300)
            x2, y2 = x1 + rng.randint(0, 120), y1 + rng.randint(0, 120)
            gt.append((img, cls, x1, y1, x2, y2, rng.random() < 0.25))
            for _ in range(rng.choice((0, 1, 1, 2))):
                j = lambda v: v + rng.choice((0, 0, 1, -1, 5, 20))  # noqa: E731
                a, b = j(x1), j(y1)
                dets.append((img, cls, score(), a, b, max(a, j(x2)), max(b, j(y2))))
        for _ in range(rng.randint(0, 3)):
            x1, y1 = rng.uniform(1, 300), rng.uniform(1, 300)
            dets.append((img, rng.choice(classes), score(), x1, y1,
                         x1 + rng.uniform(0, 99), y1 + rng.uniform(0, 99)))
    if not ties:
        assert len({d[2] for d in dets}) == len(dets)
    return ids, classes, gt, dets


def _voc_metric_inputs(ids, classes, gt, dets):
    prd = {i: {"boxes": [], "scores": [], "labels": []} for i in ids}
    tgt = {i: {"boxes": [], "labels": [], "difficult": []} for i in ids}
    for img, cls, x1, y1, x2, y2, diff in gt:
        tgt[img]["boxes"].append([x1, y1, x2, y2])
        tgt[img]["labels"].append(classes.index(cls))
        tgt[img]["difficult"].append(int(diff))
    for img, cls, s, x1, y1, x2, y2 in dets:
        prd[img]["boxes"].append([x1, y1, x2, y2])
        prd[img]["scores"].append(s)
        prd[img]["labels"].append(classes.index(cls))
    return [_as_numpy(prd[i]) for i in ids], [_as_numpy(tgt[i]) for i in ids]


@pytest.mark.parametrize("protocol,compat,ties", [
    ("voc07", "devkit", True), ("voc12", "devkit", True),
    ("voc12", "detectron2", False), ("voc07", "detectron2", False)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_voc_random_equals_evaluate_voc(seed, protocol, compat, ties, tmp_path,
                                        voc_case_writer):
    ids, classes, gt, dets = _random_voc_case(seed, ties)
    ann, res = voc_case_writer(tmp_path, gt, dets, images=ids)
    ref = deteval.evaluate_voc(ann, res, metric=protocol, compat=compat).to_dict()
    preds, targets = _voc_metric_inputs(ids, classes, gt, dets)
    make = lambda: MeanAveragePrecision(protocol, "xyxy", class_names=classes,  # noqa: E731
                                        compat=compat)
    for strategy in (s_batches_3, s_shuffled, s_pickled_shards):
        assert_same_voc(strategy(make, ids, preds, targets).compute().to_dict(), ref)


# --------------------------------------------------------------------------- state
def test_reset_empties():
    gt, results = coco_case("fixture")
    ids, preds, targets = coco_inputs(gt, results)
    make = coco_metric_factory("fixture")
    empty = make().compute().to_dict()
    m = make()
    m.update(preds, targets, image_ids=ids)
    m.compute()
    m.reset()
    assert m.image_ids == []
    assert m.compute().to_dict() == empty
    # the same ids are accepted again after reset, and give the full figures
    m.update(preds, targets, image_ids=ids)
    assert_same_coco(m.compute().to_dict(), coco_reference("fixture"))


def test_compute_twice_and_update_after_compute():
    gt, results = coco_case("seed21")
    ids, preds, targets = coco_inputs(gt, results)
    m = coco_metric_factory("seed21")()
    m.update(preds[:3], targets[:3], image_ids=ids[:3])
    first = m.compute().to_dict()
    assert m.compute().to_dict() == first
    m.update(preds[3:], targets[3:], image_ids=ids[3:])
    a = m.compute().to_dict()
    assert m.compute().to_dict() == a
    assert_same_coco(a, coco_reference("seed21"))


def test_merge_leaves_the_other_metric_usable():
    gt, results = coco_case("fixture")
    ids, preds, targets = coco_inputs(gt, results)
    make = coco_metric_factory("fixture")
    a, b = make(), make()
    a.update(preds[:10], targets[:10], image_ids=ids[:10])
    b.update(preds[10:], targets[10:], image_ids=ids[10:])
    before = b.compute().to_dict()
    assert a.merge(b) is a
    assert b.compute().to_dict() == before
    assert_same_coco(a.compute().to_dict(), coco_reference("fixture"))


def test_auto_image_ids_continue():
    ids, preds, targets, classes = voc_fixture_inputs()
    a = MeanAveragePrecision("voc12", "xyxy", class_names=classes)
    a.update(preds[:5], targets[:5])
    a.update(preds[5:9], targets[5:9])
    assert a.image_ids == list(range(9))


@pytest.mark.parametrize("other_kwargs", [
    dict(protocol="voc12"),
    dict(box_format="xyxy"),
    dict(iou_thresholds=[0.5, 0.75]),
    dict(max_dets=(1, 10, 50)),
    dict(area_ranges={"all": (0, 1e10)}),
    dict(class_names={1: "person"}),
], ids=lambda d: next(iter(d)))
def test_merge_different_parameters_raises(other_kwargs):
    gt, _ = coco_case("fixture")
    kwargs = dict(protocol="coco", box_format="xywh",
                  class_names={c["id"]: c["name"] for c in gt["categories"]})
    a = MeanAveragePrecision(**kwargs)
    b = MeanAveragePrecision(**dict(kwargs, **other_kwargs))
    with pytest.raises(MetricInputError, match="same protocol and parameters"):
        a.merge(b)
    with pytest.raises(MetricInputError, match="same protocol and parameters"):
        b.merge(a)


def test_merge_voc_different_iou_or_metric_raises():
    a = MeanAveragePrecision("voc12", "xyxy")
    for b in (MeanAveragePrecision("voc07", "xyxy"),
              MeanAveragePrecision("voc12", "xyxy", iou_threshold=0.7),
              MeanAveragePrecision("voc12", "xyxy", compat="detectron2")):
        with pytest.raises(MetricInputError, match="parameters"):
            a.merge(b)


def test_merge_shared_image_id_raises_and_changes_nothing():
    gt, results = coco_case("fixture")
    ids, preds, targets = coco_inputs(gt, results)
    make = coco_metric_factory("fixture")
    a, b = make(), make()
    a.update(preds[:10], targets[:10], image_ids=ids[:10])
    b.update(preds[9:], targets[9:], image_ids=ids[9:])
    before = a.compute().to_dict()
    with pytest.raises(MetricInputError, match=rf"disjoint image ids.*\b{ids[9]}\b"):
        a.merge(b)
    assert a.compute().to_dict() == before
    with pytest.raises(MetricInputError, match="disjoint image ids"):
        a.merge(a)
    with pytest.raises(MetricInputError, match="MeanAveragePrecision"):
        a.merge(coco_reference("fixture"))


# --------------------------------------------------------------------------- bad input
def _pred(**kw):
    d = {"boxes": [[10, 10, 20, 20]], "scores": [0.9], "labels": [1]}
    d.update(kw)
    return d


def _target(**kw):
    d = {"boxes": [[10, 10, 20, 20], [50, 50, 10, 10]], "labels": [1, 2]}
    d.update(kw)
    return d


BAD_INPUTS = [
    # (id, protocol, box_format, pred, target, field)
    ("pred-boxes-3-cols", "coco", "xywh", _pred(boxes=[[1, 2, 3]]), _target(), "preds['boxes']"),
    ("pred-boxes-1d", "coco", "xywh", _pred(boxes=[1, 2, 3, 4]), _target(), "preds['boxes']"),
    ("target-boxes-3d", "coco", "xywh", _pred(), _target(boxes=np.zeros((2, 4, 1))),
     "targets['boxes']"),
    ("scores-length", "coco", "xywh", _pred(scores=[0.9, 0.8]), _target(), "preds['scores']"),
    ("scores-2d", "coco", "xywh", _pred(scores=[[0.9]]), _target(), "preds['scores']"),
    ("labels-length", "coco", "xywh", _pred(), _target(labels=[1]), "targets['labels']"),
    ("nan-score", "coco", "xywh", _pred(scores=[float("nan")]), _target(), "preds['scores']"),
    ("inf-box", "coco", "xywh", _pred(boxes=[[0, 0, np.inf, 1]]), _target(), "preds['boxes']"),
    ("nan-gt-box", "voc12", "xyxy", _pred(), _target(boxes=[[1, 1, 2, 2], [1, np.nan, 2, 2]]),
     "targets['boxes']"),
    ("negative-w", "coco", "xywh", _pred(boxes=[[10, 10, -1, 5]]), _target(), "preds['boxes']"),
    ("negative-h-gt", "coco", "xywh", _pred(), _target(boxes=[[0, 0, 1, 1], [0, 0, 1, -2]]),
     "targets['boxes']"),
    ("x2-lt-x1", "voc07", "xyxy", _pred(boxes=[[10, 10, 5, 20]]), _target(boxes=[[1, 1, 2, 2],
     [3, 3, 4, 4]]), "preds['boxes']"),
    ("undeclared-pred-label", "coco", "xywh", _pred(labels=[7]), _target(), "preds['labels']"),
    ("undeclared-gt-label", "voc12", "xyxy", _pred(), _target(boxes=[[1, 1, 2, 2],
     [3, 3, 4, 4]], labels=[1, 3]), "targets['labels']"),
    ("fractional-label", "coco", "xywh", _pred(labels=[1.5]), _target(), "preds['labels']"),
    ("string-scores", "coco", "xywh", _pred(scores=["high"]), _target(), "preds['scores']"),
    ("nan-area", "coco", "xywh", _pred(), _target(area=[1.0, float("nan")]), "targets['area']"),
    ("area-length", "coco", "xywh", _pred(), _target(area=[1.0]), "targets['area']"),
    ("iscrowd-2", "coco", "xywh", _pred(), _target(iscrowd=[0, 2]), "targets['iscrowd']"),
    ("difficult-length", "voc07", "xyxy", _pred(), _target(boxes=[[1, 1, 2, 2], [3, 3, 4, 4]],
     difficult=[True]), "targets['difficult']"),
    ("missing-scores", "coco", "xywh", {"boxes": [[1, 1, 2, 2]], "labels": [1]}, _target(),
     "preds['scores']"),
    ("pred-not-a-dict", "coco", "xywh", [[1, 1, 2, 2]], _target(), "preds"),
]


@pytest.mark.parametrize("image_id", [4242, "img_0042"])
@pytest.mark.parametrize("protocol,box_format,pred,target,field",
                         [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_names_image_and_field(protocol, box_format, pred, target, field, image_id):
    m = MeanAveragePrecision(protocol, box_format, class_names={1: "a", 2: "b"})
    good = (_pred(), _target(boxes=[[1, 1, 2, 2], [3, 3, 4, 4]]))
    m.update([good[0]], [good[1]], image_ids=["ok"])
    before = m.compute().to_dict()
    with pytest.raises(MetricInputError) as info:
        # the bad image is second in its batch: the whole batch is refused
        m.update([good[0], pred], [good[1], target], image_ids=["ok2", image_id])
    msg = str(info.value)
    assert re.search(rf"image {re.escape(repr(image_id))}(?!\w)", msg), msg
    assert field in msg, msg
    assert isinstance(info.value, ValueError)
    # nothing of the refused batch was kept
    assert m.image_ids == ["ok"]
    assert m.compute().to_dict() == before
    m.update([good[0]], [good[1]], image_ids=["ok2"])  # the good image is still accepted


def test_mismatched_lengths_raise():
    m = MeanAveragePrecision("coco", "xywh")  # boxes below are [x, y, w, h]
    with pytest.raises(MetricInputError, match=r"`preds` and `targets`.*1 and 2"):
        m.update([_pred()], [_target(), _target()])
    with pytest.raises(MetricInputError, match=r"one image id per image \(1\) but got 2"):
        m.update([_pred()], [_target()], image_ids=[1, 2])
    assert m.image_ids == []


def test_duplicate_image_ids_raise():
    m = MeanAveragePrecision("coco", "xywh")  # boxes below are [x, y, w, h]
    with pytest.raises(MetricInputError, match=r"image id 5 again"):
        m.update([_pred(), _pred()], [_target(), _target()], image_ids=[5, 5])
    assert m.image_ids == []
    m.update([_pred()], [_target()], image_ids=[5])
    with pytest.raises(MetricInputError, match=r"image id 5 again"):
        m.update([_pred()], [_target()], image_ids=[np.int64(5)])
    with pytest.raises(MetricInputError, match=r"image id 'x' again"):
        m.update([_pred(), _pred()], [_target(), _target()], image_ids=["x", "x"])
    assert m.image_ids == [5]


@pytest.mark.parametrize("kwargs,name", [
    (dict(protocol="voc2010"), "protocol"),
    (dict(iou_threshold=1.5), "iou_threshold"),
    (dict(compat="mmdet"), "compat"),
    (dict(max_dets=(10, 1)), "max_dets"),
])
def test_bad_constructor_arguments_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MeanAveragePrecision(**kwargs)


def test_unknown_box_format_is_a_value_error():
    with pytest.raises(ValueError, match="box_format.*'cxcywh'"):
        MeanAveragePrecision("coco", box_format="cxcywh")


def test_unknown_box_format_raises_metric_input_error():
    with pytest.raises(MetricInputError, match="box_format"):
        MeanAveragePrecision("coco", box_format="cxcywh")
