"""deteval.compat, the pycocotools drop-in: real pycocotools usage run through both, and
everything they expose compared (arrays with np.array_equal, the printed text as text)."""
import contextlib
import copy
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pycocotools")
from pycocotools import mask as ref_mask  # noqa: E402
from pycocotools.coco import COCO as RefCOCO  # noqa: E402
from pycocotools.cocoeval import COCOeval as RefCOCOeval  # noqa: E402

import deteval  # noqa: E402
from deteval.compat import COCO, COCOeval  # noqa: E402
from deteval.compat import mask as maskUtils  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import coco_gen  # noqa: E402
import test_segm_keypoints as segkp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "data" / "reference" / "coco_val2014_fake100_cocoapi"
DEMO_GT = DEMO / "instances_val2014_100.json"
DEMO_BBOX = DEMO / "instances_val2014_fakebbox100_results.json"
DEMO_SEGM = DEMO / "instances_val2014_fakesegm100_results.json"
STATS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


def _timeless(text):
    """The printed text without its timings (``DONE (t=0.12s).``)."""
    import re
    return re.sub(r"\(t=\d+\.\d+s\)", "(t=*)", text)


def run_flow(coco_cls, eval_cls, gt, results, iou_type="bbox", edit=None, **kw):
    """The usual pycocotools flow on deep copies; returns (COCOeval, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if isinstance(gt, (str, Path)):
            cg = coco_cls(str(gt))
        else:
            cg = coco_cls()
            cg.dataset = copy.deepcopy(gt)
            cg.createIndex()
        cd = cg.loadRes(str(results) if isinstance(results, Path) else copy.deepcopy(results))
        E = eval_cls(cg, cd, iou_type, **kw)
        if edit is not None:
            edit(E.params)
        E.evaluate()
        E.accumulate()
        E.summarize()
    return E, _timeless(out.getvalue())


def assert_same_value(x, y, what):
    if isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray), what
        assert x.dtype == y.dtype and x.shape == y.shape, (what, x.dtype, y.dtype, x.shape,
                                                          y.shape)
        assert np.array_equal(x, y), (what, x, y)
    else:
        assert type(x) == type(y) and x == y, (what, x, y)


def assert_same_eval(ref, got, eval_imgs=True):
    for key in ("precision", "recall", "scores"):
        assert_same_value(ref.eval[key], got.eval[key], key)
    assert ref.eval["counts"] == got.eval["counts"]
    assert_same_value(np.asarray(ref.stats), np.asarray(got.stats), "stats")
    if not eval_imgs:
        return
    assert len(ref.evalImgs) == len(got.evalImgs)
    for i, (x, y) in enumerate(zip(ref.evalImgs, got.evalImgs)):
        assert (x is None) == (y is None), i
        if x is not None:
            assert list(x) == list(y)
            for k in x:
                assert_same_value(x[k], y[k], (i, k))
    assert list(ref.ious) == list(got.ious)
    for k, v in ref.ious.items():
        if isinstance(v, list):
            assert got.ious[k] == [] and isinstance(got.ious[k], list), k
        else:
            assert_same_value(v, got.ious[k], ("ious", k))


def check(gt, results, iou_type="bbox", edit=None, eval_imgs=True):
    ref, ref_text = run_flow(RefCOCO, RefCOCOeval, gt, results, iou_type, edit)
    got, got_text = run_flow(COCO, COCOeval, gt, results, iou_type, edit)
    assert got_text == ref_text
    assert_same_eval(ref, got, eval_imgs)
    return ref, got


# ------------------------------------------------------------------ real-world flows

def test_cocoapi_demo_flow_bbox_from_files():
    ref, got = check(DEMO_GT, DEMO_BBOX)
    expected = json.loads((DEMO / "expected_pycocotools.json").read_text())
    assert got.stats.shape == (12,)
    for name, v, e in zip(expected["stats_names"], got.stats, expected["stats"]):
        assert abs(v - e) <= 1e-12, (name, v, e)


def test_cocoapi_demo_summary_text_with_capsys(capsys):
    """The pycocoDemo notebook's lines, verbatim, printed by summarize()."""
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO(str(DEMO_GT))
        E = COCOeval(cg, cg.loadRes(str(DEMO_BBOX)), "bbox")
        E.evaluate()
        E.accumulate()
    capsys.readouterr()
    E.summarize()
    got = capsys.readouterr().out
    with contextlib.redirect_stdout(io.StringIO()):
        cg = RefCOCO(str(DEMO_GT))
        R = RefCOCOeval(cg, cg.loadRes(str(DEMO_BBOX)), "bbox")
        R.evaluate()
        R.accumulate()
    R.summarize()
    ref = capsys.readouterr().out
    assert got == ref
    lines = got.splitlines()
    assert len(lines) == 12
    assert lines[0] == (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ]"
                        " = 0.505")
    assert lines[8] == (" Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ]"
                        " = 0.595")


def test_cocoapi_demo_flow_segm_from_files():
    check(DEMO_GT, DEMO_SEGM, "segm")


def test_edited_params_flow():
    gt = json.loads(DEMO_GT.read_text())
    img_ids = sorted(im["id"] for im in gt["images"])

    def edit(p):
        p.imgIds = img_ids[:50][::-1]  # any order: evaluate() sorts them
        p.catIds = [44, 1, 18, 3]
        p.iouThrs = np.array([.3, .5, .7])
        p.maxDets = [1, 5, 50]

    ref, got = check(DEMO_GT, DEMO_BBOX, edit=edit)
    assert got.stats[0] == -1  # pycocotools' summary reads maxDets=100: not evaluated
    assert got.eval["precision"].shape == (3, 101, 4, 4, 3)


def test_custom_recall_thresholds_and_area_ranges():
    def edit(p):
        p.recThrs = np.array([0.0, 0.25, 0.5, 0.75, 0.9])
        p.areaRng = [[0, 1e10], [0, 2000], [2000, 1e10]]
        p.areaRngLbl = ["all", "small", "large"]

    check(DEMO_GT, DEMO_BBOX, edit=edit)


def test_use_cats_0_bbox_and_segm():
    def edit(p):
        p.useCats = 0

    check(DEMO_GT, DEMO_BBOX, edit=edit)
    check(DEMO_GT, DEMO_SEGM, "segm", edit=edit)


def test_use_cats_0_with_a_subset_of_categories_keeps_their_order():
    def edit(p):
        p.useCats = 0
        p.catIds = [18, 1, 3]

    check(DEMO_GT, DEMO_BBOX, edit=edit)


@pytest.mark.parametrize("seed", range(6))
def test_random_cases_bbox(seed):
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    check(case.gt, case.results)
    check(case.gt, case.results, edit=lambda p: setattr(p, "useCats", 0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 150))
def test_random_cases_bbox_sweep(seed):
    test_random_cases_bbox(seed)


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_segm(seed):
    gt, results = segkp.segm_case(seed)
    check(gt, results, "segm")
    gt, results = segkp.segm_case(seed, with_bbox=False)
    check(gt, results, "segm")
    check(gt, results, "segm", edit=lambda p: setattr(p, "useCats", 0))


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_keypoints(seed):
    gt, results = segkp.kp_case(seed)
    if not results:
        pytest.skip("no results in this case")
    check(gt, results, "keypoints")
    check(gt, results, "keypoints", edit=lambda p: setattr(p, "useCats", 0))


def test_keypoints_custom_sigmas():
    gt, results = segkp.kp_case(3, K=5)
    sigmas = np.array([0.05, 0.1, 0.07, 0.2, 0.03])
    check(gt, results, "keypoints", edit=lambda p: setattr(p, "kpt_oks_sigmas", sigmas))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4, 40))
def test_random_cases_segm_keypoints_sweep(seed):
    test_random_cases_segm(seed)
    gt, results = segkp.kp_case(seed)
    if results:
        check(gt, results, "keypoints")


def test_accumulate_with_other_params():
    """accumulate(p) with fewer categories, other recall thresholds and max dets."""
    outs = []
    for coco_cls, eval_cls in ((RefCOCO, RefCOCOeval), (COCO, COCOeval)):
        with contextlib.redirect_stdout(io.StringIO()):
            cg = coco_cls(str(DEMO_GT))
            E = eval_cls(cg, cg.loadRes(str(DEMO_BBOX)), "bbox")
            E.evaluate()
            p = copy.deepcopy(E.params)
            p.catIds = [3, 1, 999]
            p.recThrs = np.linspace(0, 1, 11)
            p.maxDets = [10, 100]
            p.areaRng = p.areaRng[::-1]
            E.accumulate(p)
        outs.append(E.eval)
    for key in ("precision", "recall", "scores"):
        assert_same_value(outs[0][key], outs[1][key], key)


# ------------------------------------------------------------------ ids and fixes

def _renumbered(seed):
    case = coco_gen.generate_case(seed)
    gt = copy.deepcopy(case.gt)
    for i, a in enumerate(gt["annotations"]):
        a["id"] = i  # ids from 0, as many converters write them
    return gt, case.results


TINY_GT = {"images": [{"id": 1, "height": 100, "width": 100}],
           "categories": [{"id": 1, "name": "a"}],
           "annotations": [{"id": 0, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20],
                            "area": 400, "iscrowd": 0},
                           {"id": 1, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20],
                            "area": 400, "iscrowd": 0}]}
TINY_RES = [{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
            {"image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 21], "score": 0.8}]


def test_annotation_id_0_as_pycocotools_by_default_and_fixed_on_request():
    ref, got = check(TINY_GT, TINY_RES)
    assert got.stats[0] < 0.3  # pycocotools never counts the match with id 0
    fixed, _ = run_flow(COCO, COCOeval, TINY_GT, TINY_RES, fixes=True)
    assert fixed.stats[0] == 1.0 and fixed.stats[1] == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_ids_from_0_equal_pycocotools_and_fixes_equal_deteval(seed):
    gt, results = _renumbered(seed)
    if not results:
        pytest.skip("no results in this case")
    check(gt, results)
    fixed, _ = run_flow(COCO, COCOeval, gt, results, fixes=True)
    native = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results)).to_dict()
    for name, v in zip(STATS, fixed.stats):
        ref = native["stats"][name]
        assert (v == -1) == (ref is None), name
        if ref is not None:
            assert abs(v - ref) <= 1e-12, (name, v, ref)


def test_detection_ids_0_and_negative_in_a_hand_built_results_object():
    """Results built in memory with ids 0 and -1: pycocotools lets the next detection take
    the same ground truth again."""
    res = [dict(r, id=i - 1, area=r["bbox"][2] * r["bbox"][3], iscrowd=0)
           for i, r in enumerate(TINY_RES + [dict(TINY_RES[0], score=0.5)])]
    outs = []
    for coco_cls, eval_cls in ((RefCOCO, RefCOCOeval), (COCO, COCOeval)):
        with contextlib.redirect_stdout(io.StringIO()):
            cg = coco_cls()
            cg.dataset = copy.deepcopy(TINY_GT)
            cg.createIndex()
            cd = coco_cls()
            cd.dataset = {"images": cg.dataset["images"], "categories": cg.dataset["categories"],
                          "annotations": copy.deepcopy(res)}
            cd.createIndex()
            E = eval_cls(cg, cd, "bbox")
            E.evaluate()
            E.accumulate()
            E.summarize()
        outs.append(E)
    assert_same_eval(outs[0], outs[1])


def test_max_dets_other_than_100_summary_fixed_on_request():
    def edit(p):
        p.maxDets = [1, 5, 50]

    ref, got = check(DEMO_GT, DEMO_BBOX, edit=edit)
    assert got.stats[0] == -1
    fixed, text = run_flow(COCO, COCOeval, DEMO_GT, DEMO_BBOX, edit=edit, fixes=True)
    native = deteval.evaluate_coco(DEMO_GT, DEMO_BBOX, max_dets=[1, 5, 50]).to_dict()["stats"]
    assert abs(fixed.stats[0] - native["AP"]) <= 1e-12
    assert abs(fixed.stats[6] - native["AR1"]) <= 1e-12
    assert abs(fixed.stats[7] - native["AR5"]) <= 1e-12
    assert abs(fixed.stats[8] - native["AR50"]) <= 1e-12
    assert "maxDets= 50 ] = " in text.splitlines()[-12]
    # fewer than three values: pycocotools fails; the fixed summary does not
    fixed2, _ = run_flow(COCO, COCOeval, DEMO_GT, DEMO_BBOX,
                         edit=lambda p: setattr(p, "maxDets", [7]), fixes=True)
    assert fixed2.stats[0] > 0
    with pytest.raises(IndexError):
        run_flow(COCO, COCOeval, DEMO_GT, DEMO_BBOX, edit=lambda p: setattr(p, "maxDets", [7]))


# ------------------------------------------------------------------ COCO object

def _both(gt_path=DEMO_GT):
    with contextlib.redirect_stdout(io.StringIO()):
        return RefCOCO(str(gt_path)), COCO(str(gt_path))


def test_coco_indexes_and_queries_equal_pycocotools():
    ref, got = _both()
    for name in ("dataset", "anns", "imgs", "cats"):
        assert getattr(ref, name) == getattr(got, name), name
    assert dict(ref.imgToAnns) == dict(got.imgToAnns)
    assert dict(ref.catToImgs) == dict(got.catToImgs)
    img_ids = sorted(ref.getImgIds())[:7]
    cat_ids = ref.getCatIds()[:5]
    for kw in ({}, {"imgIds": img_ids}, {"catIds": cat_ids}, {"imgIds": img_ids[0]},
               {"imgIds": img_ids, "catIds": cat_ids, "areaRng": [100, 5000]},
               {"iscrowd": 0}, {"iscrowd": 1}):
        assert ref.getAnnIds(**kw) == got.getAnnIds(**kw), kw
    for kw in ({}, {"catNms": ["person", "dog"]}, {"supNms": "animal"}, {"catIds": [1, 3, 5]}):
        assert ref.getCatIds(**kw) == got.getCatIds(**kw), kw
    for kw in ({}, {"imgIds": img_ids}, {"catIds": [1]}, {"catIds": [1, 3]},
               {"imgIds": img_ids, "catIds": 1}):
        assert sorted(ref.getImgIds(**kw)) == sorted(got.getImgIds(**kw)), kw
    ann_ids = ref.getAnnIds()[:9]
    assert ref.loadAnns(ann_ids) == got.loadAnns(ann_ids)
    assert ref.loadAnns(ann_ids[0]) == got.loadAnns(ann_ids[0])
    assert ref.loadCats([1, 2]) == got.loadCats([1, 2]) and ref.loadCats(1) == got.loadCats(1)
    assert ref.loadImgs(img_ids) == got.loadImgs(img_ids)
    out_ref, out_got = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_ref):
        ref.info()
    with contextlib.redirect_stdout(out_got):
        got.info()
    assert out_ref.getvalue() == out_got.getvalue()


def test_load_res_from_path_list_and_array_equal_pycocotools():
    ref, got = _both()
    results = json.loads(DEMO_BBOX.read_text())
    arr = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]]
                    for r in results[:300]])
    for source in (str(DEMO_BBOX), results, arr, str(DEMO_SEGM)):
        outs = []
        for coco in (ref, got):
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                src = copy.deepcopy(source) if isinstance(source, list) else source
                outs.append((coco.loadRes(src), _timeless(text.getvalue())))
        (r, rt), (g, gt_text) = outs
        assert rt == gt_text
        assert r.dataset.keys() == g.dataset.keys()
        for key in r.dataset:
            if key != "annotations":
                assert r.dataset[key] == g.dataset[key], key
        for a, b in zip(r.dataset["annotations"], g.dataset["annotations"]):
            assert a.keys() == b.keys()
            for k in a:
                assert_same_value(np.asarray(a[k]) if isinstance(a[k], np.ndarray) else a[k],
                                  np.asarray(b[k]) if isinstance(b[k], np.ndarray) else b[k], k)
        assert r.anns.keys() == g.anns.keys() and dict(r.imgToAnns).keys() == dict(
            g.imgToAnns).keys()
    # an N x 7 array evaluates as pycocotools does
    check(DEMO_GT, arr, eval_imgs=False)


def test_load_res_keypoints_equal_pycocotools():
    gt, results = segkp.kp_case(1)
    outs = []
    for coco_cls in (RefCOCO, COCO):
        with contextlib.redirect_stdout(io.StringIO()):
            cg = coco_cls()
            cg.dataset = copy.deepcopy(gt)
            cg.createIndex()
            outs.append(cg.loadRes(copy.deepcopy(results)).dataset["annotations"])
    assert outs[0] == outs[1]


def test_in_memory_ground_truth_and_ann_to_rle_mask():
    gt = json.loads(DEMO_GT.read_text())
    ref, got = RefCOCO(), COCO()
    with contextlib.redirect_stdout(io.StringIO()):
        for c in (ref, got):
            c.dataset = copy.deepcopy(gt)
            c.createIndex()
    for ann_id in list(ref.anns)[:40]:
        a = ref.anns[ann_id]
        assert ref.annToRLE(a) == got.annToRLE(got.anns[ann_id])
        assert np.array_equal(ref.annToMask(a), got.annToMask(got.anns[ann_id]))
    crowd = [a for a in ref.dataset["annotations"] if a["iscrowd"]]
    assert crowd and ref.annToRLE(crowd[0]) == got.annToRLE(got.anns[crowd[0]["id"]])


def test_mask_module_same_functions_and_results():
    rng = np.random.default_rng(0)
    m = np.asfortranarray((rng.random((30, 40, 3)) > 0.6).astype(np.uint8))
    rles = maskUtils.encode(m)
    assert rles == ref_mask.encode(m)
    assert np.array_equal(maskUtils.decode(rles), ref_mask.decode(rles))
    assert np.array_equal(maskUtils.area(rles), ref_mask.area(rles))
    assert np.array_equal(maskUtils.toBbox(rles), ref_mask.toBbox(rles))
    assert np.array_equal(maskUtils.iou(rles, rles, [0, 1, 0]), ref_mask.iou(rles, rles,
                                                                              [0, 1, 0]))
    assert maskUtils.merge(rles) == ref_mask.merge(rles)
    assert maskUtils.merge(rles, intersect=1) == ref_mask.merge(rles, intersect=1)
    poly = [[1, 1, 20, 3, 15, 25, 2, 18]]
    assert maskUtils.frPyObjects(poly, 30, 40) == ref_mask.frPyObjects(poly, 30, 40)
    boxes = np.array([[1, 2, 10, 12], [5, 5, 3, 4]], dtype=np.float64)
    assert np.array_equal(maskUtils.iou(boxes, boxes, [0, 0]), ref_mask.iou(boxes, boxes, [0, 0]))


# ------------------------------------------------------------------ laziness, messages

def test_eval_imgs_and_ious_are_built_only_when_read():
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO(str(DEMO_GT))
        E = COCOeval(cg, cg.loadRes(str(DEMO_BBOX)), "bbox")
        E.evaluate()
        E.accumulate()
    assert E._evalImgs is None and E._ious is None
    assert len(E.evalImgs) == len(E.params.catIds) * 4 * len(E.params.imgIds)
    assert E._evalImgs is not None


def test_messages_before_evaluate_and_accumulate_match_pycocotools():
    outs = []
    for coco_cls, eval_cls in ((RefCOCO, RefCOCOeval), (COCO, COCOeval)):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            cg = coco_cls(str(DEMO_GT))
            E = eval_cls(cg, cg.loadRes(str(DEMO_BBOX)), "bbox")
            with pytest.raises(AttributeError):
                E.accumulate()
            with pytest.raises(Exception, match="accumulate"):
                eval_cls(cg, cg, "bbox").summarize()
            E.params.imgIds = []  # nothing to evaluate: every figure -1
            E.evaluate()
            E.accumulate()
        outs.append((_timeless(text.getvalue()), E.eval["precision"]))
    assert outs[0][0] == outs[1][0]
    assert_same_value(outs[0][1], outs[1][1], "precision")


# ------------------------------------------------------------------ torchvision / DETR flow

def _per_image_evaluate(self):
    """The module-level ``evaluate(self)`` of the torchvision detection references (copied
    by DETR and its forks): pycocotools' private steps called one by one."""
    p = self.params
    p.imgIds = list(np.unique(p.imgIds))
    if p.useCats:
        p.catIds = list(np.unique(p.catIds))
    p.maxDets = sorted(p.maxDets)
    self.params = p
    self._prepare()
    cat_ids = p.catIds if p.useCats else [-1]
    compute = self.computeIoU if p.iouType in ("segm", "bbox") else self.computeOks
    self.ious = {(i, c): compute(i, c) for i in p.imgIds for c in cat_ids}
    max_det = p.maxDets[-1]
    eval_imgs = [self.evaluateImg(i, c, a, max_det) for c in cat_ids for a in p.areaRng
                 for i in p.imgIds]
    eval_imgs = np.asarray(eval_imgs).reshape(len(cat_ids), len(p.areaRng), len(p.imgIds))
    self._paramsEval = copy.deepcopy(self.params)
    return p.imgIds, eval_imgs


def _batched_flow(coco_cls, eval_cls, gt, results, iou_type, batches=3, use_cats=1):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cg = coco_cls()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        E = eval_cls(cg, iouType=iou_type)
        E.params.useCats = use_cats
        img_ids = sorted(cg.getImgIds())
        all_ids, all_evals = [], []
        for part in np.array_split(np.array(img_ids), batches):
            part = part.tolist()
            res = [r for r in copy.deepcopy(results) if r["image_id"] in set(part)]
            E.cocoDt = coco_cls.loadRes(cg, res) if res else coco_cls()
            E.params.imgIds = part
            ids, ev = _per_image_evaluate(E)
            all_ids.extend(ids)
            all_evals.append(ev)
        merged_ids, idx = np.unique(np.array(all_ids), return_index=True)
        merged = np.concatenate(all_evals, 2)[..., idx]
        E.evalImgs = list(merged.flatten())
        E.params.imgIds = list(merged_ids)
        E._paramsEval = copy.deepcopy(E.params)
        E.accumulate()
        E.summarize()
    return E, _timeless(out.getvalue())


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_torchvision_detr_per_image_flow(iou_type):
    if iou_type == "bbox":
        gt, results = json.loads(DEMO_GT.read_text()), json.loads(DEMO_BBOX.read_text())
    elif iou_type == "segm":
        gt, results = segkp.segm_case(2)
    else:
        gt, results = segkp.kp_case(2)
    for use_cats in (1, 0):
        ref, ref_text = _batched_flow(RefCOCO, RefCOCOeval, gt, results, iou_type,
                                      use_cats=use_cats)
        got, got_text = _batched_flow(COCO, COCOeval, gt, results, iou_type,
                                      use_cats=use_cats)
        assert got_text == ref_text
        assert_same_eval(ref, got)  # arrays, stats, the merged evalImgs, the last ious


def test_evaluated_object_pickles_and_copies():
    import pickle
    gt, results = segkp.segm_case(1)
    E, _ = run_flow(COCO, COCOeval, gt, results, "segm")
    for clone in (pickle.loads(pickle.dumps(E)), copy.deepcopy(E)):
        with contextlib.redirect_stdout(io.StringIO()):
            clone.accumulate()
        assert_same_value(E.eval["precision"], clone.eval["precision"], "precision")
        assert len(clone.evalImgs) == len(E.evalImgs)


def test_gts_and_dts_group_the_evaluated_dicts_as_pycocotools():
    ref, got = check(DEMO_GT, DEMO_BBOX, eval_imgs=False)

    def filled(d):  # pycocotools' defaultdicts also hold the empty lists it looked up
        return {k for k, v in d.items() if v}

    assert filled(ref._gts) == set(got._gts) and filled(ref._dts) == set(got._dts)
    for k in got._gts:
        assert [a["id"] for a in ref._gts[k]] == [a["id"] for a in got._gts[k]]
    for k in got._dts:
        assert [a["id"] for a in ref._dts[k]] == [a["id"] for a in got._dts[k]]


@pytest.mark.parametrize("seed", range(3))
def test_batched_rasterisation_equals_ann_to_rle_one_by_one(seed):
    """The engine rasterises polygons one call per image size; the masks are those of
    annToRLE annotation by annotation (several polygons, crowd RLE, results' RLE)."""
    from deteval.compat._engine import _masks
    from deteval.masks import masks_from_segmentations
    gt, results = segkp.segm_case(seed)
    a0 = gt["annotations"][0]
    gt["annotations"].append(dict(a0, id=10 ** 6, segmentation=[[1, 1, 9, 1, 9, 9, 1, 9],
                                                                 [3, 3, 4, 4], [20, 20, 30, 20,
                                                                                25, 28]]))
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = gt
        cg.createIndex()
        cd = cg.loadRes(results)
    for coco, anns in ((cg, gt["annotations"]), (cd, cd.dataset["annotations"])):
        fast = _masks(coco, anns)
        rles = [coco.annToRLE(a) for a in anns]
        h = np.array([r["size"][0] for r in rles])
        w = np.array([r["size"][1] for r in rles])
        ref = masks_from_segmentations(rles, h, w, "x", "annotations")
        for f in ("counts", "offsets", "heights", "widths", "areas"):
            assert np.array_equal(getattr(fast, f), getattr(ref, f)), f


# ------------------------------------------------------------------ random parameters

def _random_edit(seed, gt):
    img_ids = [im["id"] for im in gt["images"]]
    cat_ids = [c["id"] for c in gt["categories"]]

    def edit(p):  # the same edits on each call
        rng = np.random.default_rng(1000 + seed)
        if rng.random() < 0.6:
            k = int(rng.integers(1, len(img_ids) + 1))
            p.imgIds = [img_ids[i] for i in rng.permutation(len(img_ids))[:k]]
        if rng.random() < 0.5:
            k = int(rng.integers(1, len(cat_ids) + 1))
            p.catIds = [cat_ids[i] for i in rng.permutation(len(cat_ids))[:k]]
        if rng.random() < 0.5:
            grid = np.round(np.arange(0.05, 1.0, 0.05), 2)
            p.iouThrs = np.sort(rng.choice(grid, int(rng.integers(1, 6)), replace=False))
        if rng.random() < 0.5:
            p.maxDets = sorted(rng.choice([1, 2, 3, 5, 10, 20, 100], 3, replace=False).tolist())
        if rng.random() < 0.4:
            r = np.round(rng.random(int(rng.integers(1, 30))), 2)
            p.recThrs = r if rng.random() < 0.5 else np.sort(r)  # any order
        if rng.random() < 0.4:
            edges = np.sort(rng.choice([0, 100, 400, 1024, 3000, 9216, 1e10], 3, replace=False))
            p.areaRng = [[0, 1e10], [float(edges[0]), float(edges[1])],
                         [float(edges[1]), float(edges[2])], [float(edges[0]), float(edges[2])]]
        if rng.random() < 0.3:
            p.useCats = 0

    return edit


@pytest.mark.parametrize("seed", range(6))
def test_random_parameters_equal_pycocotools(seed):
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    gt = copy.deepcopy(case.gt)
    if seed % 2:
        for i, a in enumerate(gt["annotations"]):
            a["id"] = i  # ids from 0: pycocotools' id rules are reproduced
    check(gt, case.results, edit=_random_edit(seed, gt))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 120))
def test_random_parameters_sweep(seed):
    test_random_parameters_equal_pycocotools(seed)


def _hand_built_flow(coco_cls, eval_cls, gt, results, edit=None):
    with contextlib.redirect_stdout(io.StringIO()):
        cg = coco_cls()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        cd = coco_cls()
        cd.dataset = {"images": cg.dataset["images"], "categories": cg.dataset["categories"],
                      "annotations": copy.deepcopy(results)}
        cd.createIndex()
        E = eval_cls(cg, cd, "bbox")
        if edit is not None:
            edit(E.params)
        E.evaluate()
        E.accumulate()
        E.summarize()
    return E


@pytest.mark.parametrize("seed", range(4))
def test_hand_built_results_with_ids_from_minus_one(seed):
    """Detections with ids -1, 0, 1, ... (a results object built in memory): pycocotools
    lets a later detection take the ground truth such a detection took."""
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(case.results)) - 1
    results = [dict(r, id=int(i), area=r["bbox"][2] * r["bbox"][3], iscrowd=0)
               for r, i in zip(case.results, ids)]
    gt = copy.deepcopy(case.gt)
    for i, a in enumerate(gt["annotations"]):
        a["id"] = i
    edit = _random_edit(seed, gt) if seed % 2 else None
    ref = _hand_built_flow(RefCOCO, RefCOCOeval, gt, results, edit)
    got = _hand_built_flow(COCO, COCOeval, gt, results, edit)
    assert_same_eval(ref, got)


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_empty_results_object(iou_type):
    """``COCO()`` as the results (the torchvision flow's batch without detections)."""
    gt = segkp.kp_case(0)[0] if iou_type == "keypoints" else segkp.segm_case(0)[0]
    outs = []
    for coco_cls, eval_cls in ((RefCOCO, RefCOCOeval), (COCO, COCOeval)):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            cg = coco_cls()
            cg.dataset = copy.deepcopy(gt)
            cg.createIndex()
            E = eval_cls(cg, coco_cls(), iou_type)
            E.evaluate()
            E.accumulate()
            E.summarize()
        outs.append((E, _timeless(text.getvalue())))
    assert outs[0][1] == outs[1][1]
    assert_same_eval(outs[0][0], outs[1][0])


@pytest.mark.parametrize("seed", range(3))
def test_repeated_annotation_ids_as_pycocotools_and_fixed(seed):
    """Ground truth whose annotation ids repeat (merged datasets): pycocotools looks each
    one up by id and evaluates the last record with that id in place of the others."""
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    gt = copy.deepcopy(case.gt)
    anns = gt["annotations"]
    for i in range(1, len(anns), 3):
        anns[i]["id"] = anns[i - 1]["id"]
    check(gt, case.results)
    fixed, _ = run_flow(COCO, COCOeval, gt, case.results, fixes=True)
    native = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(case.results)).to_dict()
    for name, v in zip(STATS, fixed.stats):
        ref = native["stats"][name]
        assert (v == -1) == (ref is None), name
        if ref is not None:
            assert abs(v - ref) <= 1e-12, (name, v, ref)


def test_pycocotools_own_coco_objects_are_accepted():
    """deteval's COCOeval on pycocotools' COCO objects (code that builds them elsewhere)."""
    ref, _ = run_flow(RefCOCO, RefCOCOeval, DEMO_GT, DEMO_SEGM, "segm")
    mixed, _ = run_flow(RefCOCO, COCOeval, DEMO_GT, DEMO_SEGM, "segm")
    assert_same_eval(ref, mixed, eval_imgs=False)
