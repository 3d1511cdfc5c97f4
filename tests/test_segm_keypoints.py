"""COCO segm and keypoints against pycocotools itself: randomised differential tests (every
figure and the whole precision/recall arrays at 1e-12), the compiled RLE kernels against
their numpy references, the real cocoapi segm demo, and bad input."""
import contextlib
import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pycocotools")
from pycocotools import mask as mask_api  # noqa: E402
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402

import deteval  # noqa: E402
from deteval import masks as dm  # noqa: E402
from deteval.errors import InputError  # noqa: E402
from deteval.keypoints import COCO_PERSON_SIGMAS, oks_pairs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "data" / "reference" / "coco_val2014_fake100_cocoapi"


def pycocotools_eval(gt, results, iou_type, sigmas=None):
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(results))
        E = COCOeval(cg, cd, iou_type)
        if sigmas is not None:
            E.params.kpt_oks_sigmas = np.array(sigmas)
        E.evaluate()
        E.accumulate()
        E.summarize()
    return E


def check_equal(gt, results, iou_type, sigmas=None):
    E = pycocotools_eval(gt, results, iou_type, sigmas)
    rep = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results), iou_type=iou_type,
                                oks_sigmas=sigmas)
    got = list(rep.stats.values())
    assert len(got) == len(E.stats)
    for name, a, b in zip(rep.stats, got, E.stats):
        if b == -1:
            assert a is None, name
        else:
            assert a is not None and abs(a - b) <= 1e-12, (name, a, b)
    ref_p = np.where(E.eval["precision"] == -1, np.nan, E.eval["precision"])
    ref_r = np.where(E.eval["recall"] == -1, np.nan, E.eval["recall"])
    np.testing.assert_allclose(rep.precision, ref_p, rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(rep.recall, ref_r, rtol=0, atol=1e-12, equal_nan=True)
    # the same from files (the typed fast reading of results files)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        g, r = Path(d) / "gt.json", Path(d) / "res.json"
        g.write_text(json.dumps(gt))
        r.write_text(json.dumps(results))
        from_files = deteval.evaluate_coco(g, r, iou_type=iou_type, oks_sigmas=sigmas)
    assert from_files.stats == rep.stats
    assert np.array_equal(from_files.precision, rep.precision, equal_nan=True)
    return rep


# ------------------------------------------------------------------------- segm cases

def _random_mask(rng, h, w, around=None):
    m = np.zeros((h, w), dtype=np.uint8)
    if around is not None and around.any() and rng.random() < 0.8:
        ys, xs = np.nonzero(around)
        y0, y1, x0, x1 = ys.min(), ys.max(), xs.min(), xs.max()
        dy, dx = rng.integers(-3, 4, 2)
        y0, y1 = np.clip([y0 + dy, y1 + dy + rng.integers(-2, 3)], 0, h - 1)
        x0, x1 = np.clip([x0 + dx, x1 + dx + rng.integers(-2, 3)], 0, w - 1)
    else:
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        y1, x1 = min(h - 1, y0 + rng.integers(0, h)), min(w - 1, x0 + rng.integers(0, w))
    if rng.random() < 0.05:
        return m  # empty
    m[min(y0, y1):max(y0, y1) + 1, min(x0, x1):max(x0, x1) + 1] = 1
    m &= (rng.random((h, w)) < 0.9).astype(np.uint8)
    return m


def _polygon(rng, h, w):
    n = int(rng.integers(3, 8))
    cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    r = rng.uniform(2, max(h, w) / 2)
    ang = np.sort(rng.uniform(0, 2 * np.pi, n))
    xs = np.clip(cx + r * np.cos(ang), 0, w)
    ys = np.clip(cy + r * np.sin(ang), 0, h)
    coords = np.round(np.stack([xs, ys], 1).ravel() * 4) / 4  # quarter pixels
    return [float(v) for v in coords]


def segm_case(seed, with_bbox=True):
    rng = np.random.default_rng(seed)
    images, anns, results = [], [], []
    cats = [{"id": c, "name": f"c{c}"} for c in (1, 2, 5)]
    aid = 1
    for i in range(int(rng.integers(2, 6))):
        h, w = int(rng.integers(16, 48)), int(rng.integers(16, 48))
        img_id = int(rng.integers(1, 10 ** 6))
        while any(im["id"] == img_id for im in images):
            img_id += 1
        images.append({"id": img_id, "height": h, "width": w, "file_name": f"{img_id}.jpg"})
        gts = []
        for _ in range(int(rng.integers(0, 6))):
            cat = int(rng.choice([1, 2, 5]))
            kind = rng.choice(["poly", "rle", "crle"])
            crowd = int(rng.random() < 0.12)
            if kind == "poly" and not crowd:
                seg = [_polygon(rng, h, w) for _ in range(int(rng.integers(1, 4)))]
                rle = mask_api.merge(mask_api.frPyObjects(seg, h, w))
                mask = mask_api.decode(rle)
            else:
                mask = _random_mask(rng, h, w)
                rle = mask_api.encode(np.asfortranarray(mask))
                if kind == "rle" or crowd:  # uncompressed counts, as crowd regions are stored
                    flat = mask.T.ravel()
                    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
                    runs = np.diff(np.concatenate([[0], change, [flat.size]])).tolist()
                    if flat[0]:
                        runs = [0] + runs
                    seg = {"size": [h, w], "counts": runs}
                else:
                    seg = {"size": [h, w], "counts": rle["counts"].decode()}
            area = float(mask_api.area(rle)) if rng.random() < 0.8 else float(
                rng.uniform(0, h * w))
            bbox = [float(v) for v in mask_api.toBbox(rle)]
            anns.append({"id": aid, "image_id": img_id, "category_id": cat, "segmentation": seg,
                         "area": area, "bbox": bbox, "iscrowd": crowd})
            aid += 1
            gts.append((cat, mask))
        for _ in range(int(rng.integers(0, 9))):
            if gts and rng.random() < 0.7:
                cat, around = gts[int(rng.integers(0, len(gts)))]
                if rng.random() < 0.15:
                    cat = int(rng.choice([1, 2, 5]))
            else:
                cat, around = int(rng.choice([1, 2, 5])), None
            mask = _random_mask(rng, h, w, around)
            rle = mask_api.encode(np.asfortranarray(mask))
            r = {"image_id": img_id, "category_id": cat,
                 "segmentation": {"size": [h, w], "counts": rle["counts"].decode()},
                 "score": float(np.round(rng.random(), 1))}  # ties
            if with_bbox:
                r["bbox"] = [float(v) for v in mask_api.toBbox(rle)]
            results.append(r)
    if not results:
        results.append({"image_id": images[0]["id"], "category_id": 1, "score": 0.5,
                        "segmentation": {"size": [images[0]["height"], images[0]["width"]],
                                         "counts": mask_api.encode(np.asfortranarray(
                                             np.ones((images[0]["height"], images[0]["width"]),
                                                     np.uint8)))["counts"].decode()}})
        if with_bbox:
            results[0]["bbox"] = [0.0, 0.0, float(images[0]["width"]),
                                  float(images[0]["height"])]
    return {"images": images, "annotations": anns, "categories": cats}, results


@pytest.mark.parametrize("seed", range(10))
def test_segm_random_cases_equal_pycocotools(seed):
    gt, results = segm_case(seed, with_bbox=seed % 3 != 0)
    check_equal(gt, results, "segm")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 200))
def test_segm_random_sweep(seed):
    gt, results = segm_case(seed, with_bbox=seed % 3 != 0)
    check_equal(gt, results, "segm")


def test_segm_cocoapi_demo_equals_pycocotools():
    expected = json.loads((DEMO / "expected_pycocotools.json").read_text())
    rep = deteval.evaluate_coco(DEMO / "instances_val2014_100.json",
                                DEMO / "instances_val2014_fakesegm100_results.json",
                                iou_type="segm")
    assert rep.to_dict()["iou_type"] == "segm"
    for a, b in zip(rep.stats.values(), expected["segm_stats"]):
        assert abs(a - b) <= 1e-12


def test_rle_kernels_equal_their_references():
    rng = np.random.default_rng(3)
    arrs = (rng.random((12, 23, 17)) > 0.55).astype(np.uint8)
    arrs[3] = 0
    arrs[4] = 1
    enc = mask_api.encode(np.asfortranarray(arrs.transpose(1, 2, 0)))
    ms = dm.masks_from_segmentations(enc, np.full(12, 23), np.full(12, 17), "x", "results")
    assert np.array_equal(ms.counts, dm.masks_from_arrays(arrs).counts)
    for j, e in enumerate(enc):
        assert np.array_equal(dm.decode_rle_string(e["counts"]),
                              ms.counts[ms.offsets[j]:ms.offsets[j + 1]])
    assert np.array_equal(ms.areas, mask_api.area(enc))
    pa = rng.integers(0, 12, 200)
    pb = rng.integers(0, 12, 200)
    crowd = rng.random(200) < 0.3
    got = dm.rle_pair_ious(ms, ms, pa, pb, crowd)
    assert np.array_equal(got, dm.rle_pair_ious_reference(ms, ms, pa, pb, crowd))
    ref = np.array([mask_api.iou([enc[a]], [enc[b]], [int(c)])[0, 0]
                    for a, b, c in zip(pa, pb, crowd)])
    assert np.array_equal(got, ref)


# -------------------------------------------------------------------- keypoint cases

def kp_case(seed, K=17):
    rng = np.random.default_rng(seed)
    images, anns, results = [], [], []
    aid = 1
    for i in range(int(rng.integers(2, 7))):
        img_id = i + 1 + int(rng.integers(0, 3)) * 100
        while any(im["id"] == img_id for im in images):
            img_id += 1
        images.append({"id": img_id, "height": 480, "width": 640})
        persons = []
        for _ in range(int(rng.integers(0, 5))):
            x, y = rng.uniform(0, 500), rng.uniform(0, 350)
            w, h = rng.uniform(10, 140), rng.uniform(20, 130)
            kx = x + rng.uniform(0, w, K)
            ky = y + rng.uniform(0, h, K)
            v = rng.choice([0, 1, 2], K, p=[0.3, 0.2, 0.5])
            if rng.random() < 0.15:
                v[:] = 0  # no labelled keypoint: ignored, and the box-distance rule
            kx, ky = np.where(v > 0, kx, 0), np.where(v > 0, ky, 0)
            kps = np.stack([np.round(kx, 2), np.round(ky, 2), v], 1).ravel().tolist()
            area = float(w * h * rng.uniform(0.4, 1.0))
            anns.append({"id": aid, "image_id": img_id, "category_id": 1, "keypoints": kps,
                         "num_keypoints": int((v > 0).sum()), "area": area,
                         "bbox": [float(x), float(y), float(w), float(h)],
                         "iscrowd": int(rng.random() < 0.06)})
            aid += 1
            persons.append((np.stack([kx, ky], 1), x, y, w, h))
        for _ in range(int(rng.integers(0, 7))):
            if persons and rng.random() < 0.75:
                pts, x, y, w, h = persons[int(rng.integers(0, len(persons)))]
                pts = np.where(pts > 0, pts, np.stack([x + rng.uniform(0, w, K),
                                                       y + rng.uniform(0, h, K)], 1))
                pts = pts + rng.normal(0, rng.choice([1, 4, 12]), pts.shape)
            else:
                pts = np.stack([rng.uniform(0, 640, K), rng.uniform(0, 480, K)], 1)
            kps = np.concatenate([np.round(pts, 2), np.ones((K, 1))], 1).ravel().tolist()
            results.append({"image_id": img_id, "category_id": 1, "keypoints": kps,
                            "score": float(np.round(rng.random(), 1))})
    if not results:
        results.append({"image_id": images[0]["id"], "category_id": 1,
                        "keypoints": [1.0, 2.0, 1.0] * K, "score": 0.3})
    cats = [{"id": 1, "name": "person", "keypoints": [f"k{i}" for i in range(K)]}]
    return {"images": images, "annotations": anns, "categories": cats}, results


@pytest.mark.parametrize("seed", range(10))
def test_keypoints_random_cases_equal_pycocotools(seed):
    gt, results = kp_case(seed)
    rep = check_equal(gt, results, "keypoints")
    assert list(rep.stats) == ["AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75",
                               "ARm", "ARl"]


@pytest.mark.parametrize("seed", range(4))
def test_keypoints_custom_sigmas_equal_pycocotools(seed):
    gt, results = kp_case(100 + seed, K=5)
    sigmas = [0.05, 0.08, 0.1, 0.03, 0.12]
    rep = check_equal(gt, results, "keypoints", sigmas)
    assert rep.params["oks_sigmas"] == sigmas


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 200))
def test_keypoints_random_sweep(seed):
    check_equal(*kp_case(seed), "keypoints")


def test_oks_pairs_equal_pycocotools_compute_oks():
    gt, results = kp_case(5)
    E = pycocotools_eval(gt, results, "keypoints")
    g = np.array([a["keypoints"] for a in gt["annotations"]], float).reshape(-1, 17, 3)
    d = np.array([r["keypoints"] for r in results], float).reshape(-1, 17, 3)
    boxes = np.array([a["bbox"] for a in gt["annotations"]], float)
    area = np.array([a["area"] for a in gt["annotations"]], float)
    for (img, cat), ious in E.ious.items():
        if len(ious) == 0:
            continue
        gi = [i for i, a in enumerate(gt["annotations"]) if a["image_id"] == img]
        di = [i for i, r in enumerate(results) if r["image_id"] == img]
        di = [di[j] for j in np.argsort([-results[i]["score"] for i in di], kind="mergesort")]
        pd = np.repeat(di, len(gi))
        pg = np.tile(gi, len(di))
        got = oks_pairs(d, g, boxes, area, pd, pg, COCO_PERSON_SIGMAS).reshape(len(di), len(gi))
        assert np.array_equal(got, ious)


# ------------------------------------------------------------------------- bad input

def _write(tmp_path, gt, results):
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(results))
    return g, r


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mutate, message", [
    (lambda g, r: g["annotations"][0].update(segmentation=[[1, 2, 3, 4, 5]]), "even number"),
    (lambda g, r: g["annotations"][0].update(segmentation=[[1, 2, 3, 4]]), "at least 6"),
    (lambda g, r: r[0]["segmentation"].update(counts=[1, 2, 3]), "summing to height x width"),
    (lambda g, r: r[0]["segmentation"].update(size=[7, 9]), "segmentation size"),
    (lambda g, r: r[0]["segmentation"].update(counts=3.5), "segmentation counts"),
    (lambda g, r: r[0].pop("segmentation"), "segmentation` in every result"),
    (lambda g, r: r[0]["segmentation"].update(counts="!!"), "compressed COCO RLE"),
])
def test_bad_segmentations_exit_2_naming_the_record(tmp_path, mutate, message):
    gt, results = segm_case(1)
    for a in gt["annotations"]:
        if not a["iscrowd"]:
            a["segmentation"] = [_polygon(np.random.default_rng(0), 16, 16)]
            break
    gt["annotations"].insert(0, gt["annotations"].pop(gt["annotations"].index(a)))
    mutate(gt, results)
    g, r = _write(tmp_path, gt, results)
    p = _cli("coco", g, r, "--iou-type", "segm")
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert ("annotations[0]" in p.stderr) or ("results[0]" in p.stderr)


def test_bad_keypoints_and_sigmas_exit_2(tmp_path):
    gt, results = kp_case(2)
    g, r = _write(tmp_path, gt, results)
    p = _cli("coco", g, r, "--iou-type", "keypoints", "--oks-sigmas", "0.1,0.2")
    assert p.returncode == 2 and "keypoints" in p.stderr and "annotations[0]" in p.stderr
    results[0]["keypoints"] = results[0]["keypoints"][:-1]
    g, r = _write(tmp_path, gt, results)
    p = _cli("coco", g, r, "--iou-type", "keypoints")
    assert p.returncode == 2 and "results[0]" in p.stderr
    p = _cli("coco", g, r, "--oks-sigmas", "0.1")
    assert p.returncode == 2 and "--oks-sigmas" in p.stderr
    with pytest.raises(InputError, match="oks_sigmas"):
        deteval.evaluate_coco(gt, results, iou_type="keypoints", oks_sigmas=[0, 1])


def test_cli_segm_and_keypoints_reports(tmp_path):
    p = _cli("coco", DEMO / "instances_val2014_100.json",
             DEMO / "instances_val2014_fakesegm100_results.json", "--iou-type", "segm",
             "--json", tmp_path / "s.json")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "s.json").read_text())["iou_type"] == "segm"
    assert p.stdout.startswith("COCO segm")
    gt, results = kp_case(3)
    g, r = _write(tmp_path, gt, results)
    p = _cli("coco", g, r, "--iou-type", "keypoints", "--json", tmp_path / "k.json")
    assert p.returncode == 0, p.stderr
    rep = json.loads((tmp_path / "k.json").read_text())
    assert rep["params"]["max_dets"] == [20] and list(rep["params"]["area_ranges"]) == [
        "all", "medium", "large"]


@pytest.mark.parametrize("width", [3, 8, 17, 33, 128])
def test_numpy_sum_rows_is_np_sum_bit_for_bit(width):
    from deteval.keypoints import numpy_sum_rows
    rng = np.random.default_rng(width)
    a = np.exp(-rng.random((3000, width)) * rng.choice([1, 30], (3000, 1)))
    n = rng.integers(1, width + 1, 3000)
    got = numpy_sum_rows(a, n)
    assert np.array_equal(got, [np.sum(a[p, :n[p]]) for p in range(3000)])


# ------------------------------------------------------- the streaming metric

def _per_image(gt, results, key):
    by_img = {im["id"]: ([], []) for im in gt["images"]}
    for a in gt["annotations"]:
        by_img[a["image_id"]][0].append(a)
    for r in results:
        by_img[r["image_id"]][1].append(r)
    return by_img


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("as_arrays", [False, True])
def test_metric_segm_gives_the_cli_numbers(seed, as_arrays):
    gt, results = segm_case(seed, with_bbox=False)
    sizes = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    m = deteval.MeanAveragePrecision("coco", "xywh", iou_type="segm",
                                     class_names={c["id"]: c["name"] for c in gt["categories"]})
    ids, preds, targets = [], [], []
    for img, (anns, res) in _per_image(gt, results, "segmentation").items():
        h, w = sizes[img]

        def masks(segs):
            rles = [mask_api.merge(mask_api.frPyObjects(s, h, w)) if isinstance(s, list)
                    else (mask_api.frPyObjects(s, h, w) if isinstance(s["counts"], list) else s)
                    for s in segs]
            if as_arrays:
                return (np.stack([mask_api.decode(r) for r in rles]) if rles
                        else np.zeros((0, h, w), np.uint8))
            return [{"size": [h, w], "counts": r["counts"]} for r in rles]

        ids.append(img)
        preds.append({"masks": masks([r["segmentation"] for r in res]),
                      "scores": [r["score"] for r in res],
                      "labels": [r["category_id"] for r in res]})
        targets.append({"masks": masks([a["segmentation"] for a in anns]),
                        "labels": [a["category_id"] for a in anns],
                        "iscrowd": [a["iscrowd"] for a in anns],
                        "area": [a["area"] for a in anns]})
    m.update(preds, targets, image_ids=ids)
    got = m.compute().to_dict()
    ref = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results), iou_type="segm")
    assert got["iou_type"] == "segm"
    assert got["stats"] == ref.to_dict()["stats"]
    assert got["classes"] == ref.to_dict()["classes"]


@pytest.mark.parametrize("seed", range(4))
def test_metric_keypoints_gives_the_cli_numbers(seed):
    gt, results = kp_case(seed)
    m = deteval.MeanAveragePrecision("coco", "xywh", iou_type="keypoints")
    ids, preds, targets = [], [], []
    for img, (anns, res) in _per_image(gt, results, "keypoints").items():
        ids.append(img)
        preds.append({"keypoints": np.array([r["keypoints"] for r in res]).reshape(-1, 17, 3),
                      "scores": [r["score"] for r in res],
                      "labels": [r["category_id"] for r in res]})
        targets.append({"keypoints": np.array([a["keypoints"] for a in anns]).reshape(-1, 17, 3),
                        "boxes": np.array([a["bbox"] for a in anns]).reshape(-1, 4),
                        "labels": [a["category_id"] for a in anns],
                        "iscrowd": [a["iscrowd"] for a in anns],
                        "area": [a["area"] for a in anns],
                        "num_keypoints": [a["num_keypoints"] for a in anns]})
    m.update(preds, targets, image_ids=ids)
    got = m.compute().to_dict()
    ref = deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results), iou_type="keypoints")
    assert list(got["stats"]) == ["AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75",
                                  "ARm", "ARl"]
    assert got["stats"] == ref.to_dict()["stats"]
