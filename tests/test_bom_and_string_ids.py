"""CLI gaps of issue 11: a UTF-8 byte-order mark at the start of VOC files (C and Python
paths), and string image ids in COCO files (sorted as strings, as pycocotools does)."""
import copy
import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import deteval
from deteval import _native
from deteval.errors import InputError
from deteval.io import voc

sys.path.insert(0, str(Path(__file__).parent))
import coco_gen  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VOC = ROOT / "fixtures" / "voc"
BOM = b"\xef\xbb\xbf"


def _with_bom(tmp_path):
    dst = tmp_path / "voc"
    shutil.copytree(VOC, dst)
    files = (list((dst / "results").glob("*.txt")) + list(dst.rglob("*.xml"))
             + list((dst / "VOC2007" / "ImageSets" / "Main").glob("*.txt")))
    for f in files:
        f.write_bytes(BOM + f.read_bytes())
    return dst


def _voc_dict(root):
    rep = deteval.evaluate_voc(root / "VOC2007", root / "results", imageset="test").to_dict()
    return rep["mAP"], [(c["name"], c["ap"], c["tp"], c["fp"], c["num_gt"]) for c in rep["classes"]]


def test_bom_in_voc_files_c_path(tmp_path):
    if _native.textscan is None:
        pytest.skip("compiled scanner not built")
    root = _with_bom(tmp_path)
    assert _voc_dict(root) == _voc_dict(VOC)
    # the C pass itself takes the files (no fallback to the Python reader)
    gt = voc.load_voc_annotations(root / "VOC2007", "test")
    paths = sorted(str(p) for p in (root / "results").glob("*.txt"))
    fast = _native.scan_detection_files(paths, voc._id_table(gt.image_ids))
    assert fast is not None and not fast.status.any()


def test_bom_in_voc_files_python_path(tmp_path, monkeypatch):
    root = _with_bom(tmp_path)
    expected = _voc_dict(VOC)
    monkeypatch.setattr(voc, "_textscan", None)
    assert _voc_dict(root) == expected


def test_bom_cli_exit_0(tmp_path):
    root = _with_bom(tmp_path)
    p = subprocess.run([sys.executable, "-m", "deteval", "voc", str(root / "VOC2007"),
                        str(root / "results"), "--imageset", "test"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "mAP" in p.stdout


def test_a_bom_inside_a_line_is_still_an_error(tmp_path):
    root = tmp_path / "voc"
    shutil.copytree(VOC, root)
    f = sorted((root / "results").glob("*.txt"))[0]
    lines = f.read_bytes().splitlines(keepends=True)
    f.write_bytes(lines[0] + BOM + lines[1] + b"".join(lines[2:]))
    with pytest.raises(InputError, match="line 2"):
        _voc_dict(root)


# ------------------------------------------------------------------ string image ids

def _pycocotools_stats(gt, results):
    pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        E = COCOeval(cg, cg.loadRes(copy.deepcopy(results)), "bbox")
        E.evaluate()
        E.accumulate()
        E.summarize()
    return [None if v == -1 else float(v) for v in E.stats]


def _stats(rep):
    return list(rep.to_dict()["stats"].values())


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert abs(x - y) <= 1e-12, (a, b)


def _stringify(gt, results, width=None):
    gt, results = copy.deepcopy(gt), copy.deepcopy(results)
    ids = sorted(im["id"] for im in gt["images"])
    # "9" > "10" as strings: the string order differs from the numeric one
    names = {v: str(i * 9 + 1) if width is None else str(i).zfill(width)
             for i, v in enumerate(ids)}
    for im in gt["images"]:
        im["id"] = names[im["id"]]
    for a in gt["annotations"]:
        a["image_id"] = names[a["image_id"]]
    for r in results:
        r["image_id"] = names[r["image_id"]]
    return gt, results


TIE_GT = {"images": [{"id": "9", "height": 100, "width": 100},
                     {"id": "10", "height": 100, "width": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": "9", "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100, "iscrowd": 0},
                          {"id": 2, "image_id": "10", "category_id": 1,
                           "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]}
TIE_RES = [{"image_id": "9", "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.5},
           {"image_id": "10", "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.5}]


def test_string_image_ids_sort_as_strings_and_decide_ties(tmp_path):
    ref = _pycocotools_stats(TIE_GT, TIE_RES)
    got = _stats(deteval.evaluate_coco(copy.deepcopy(TIE_GT), copy.deepcopy(TIE_RES)))
    _close(got, ref)
    # the same case with integer ids ranks image 9 first: another AP
    as_int = json.loads(json.dumps(TIE_GT).replace('"9"', "9").replace('"10"', "10"))
    res_int = json.loads(json.dumps(TIE_RES).replace('"9"', "9").replace('"10"', "10"))
    assert _stats(deteval.evaluate_coco(as_int, res_int))[0] != got[0]
    # from files, through the CLI
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(TIE_GT))
    r.write_text(json.dumps(TIE_RES))
    p = subprocess.run([sys.executable, "-m", "deteval", "coco", str(g), str(r), "--json",
                        str(tmp_path / "out.json")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    _close(list(json.loads((tmp_path / "out.json").read_text())["stats"].values()), ref)


@pytest.mark.parametrize("seed", range(6))
def test_string_image_ids_equal_pycocotools(seed, tmp_path):
    case = coco_gen.generate_case(seed)
    if not case.results:
        pytest.skip("no results in this case")
    gt, results = _stringify(case.gt, case.results, width=None if seed % 2 else 6)
    ref = _pycocotools_stats(gt, results)
    _close(_stats(deteval.evaluate_coco(copy.deepcopy(gt), copy.deepcopy(results))), ref)
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(results))
    _close(_stats(deteval.evaluate_coco(g, r)), ref)
    # the drop-in too
    from deteval.compat import COCO, COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO(str(g))
        E = COCOeval(cg, cg.loadRes(str(r)), "bbox")
        E.evaluate()
        E.accumulate()
        E.summarize()
    _close([None if v == -1 else float(v) for v in E.stats], ref)


def _cli_error(tmp_path, gt, results):
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(results))
    p = subprocess.run([sys.executable, "-m", "deteval", "coco", str(g), str(r)], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    return p.stderr


def test_mixed_image_id_types_are_errors_naming_the_record(tmp_path):
    gt = copy.deepcopy(TIE_GT)
    gt["images"][1]["id"] = 10
    err = _cli_error(tmp_path, gt, TIE_RES)
    assert "images[1]" in err and "a string like" in err and "but got 10" in err
    gt = copy.deepcopy(TIE_GT)
    gt["annotations"][1]["image_id"] = 10
    err = _cli_error(tmp_path, gt, TIE_RES)
    assert "annotations[1]" in err and "(id 2)" in err
    res = copy.deepcopy(TIE_RES)
    res[1]["image_id"] = 10
    err = _cli_error(tmp_path, TIE_GT, res)
    assert "results[1]" in err and "but got 10" in err
    # results of one type but not the ground truth's
    res = [dict(r, image_id=int(r["image_id"])) for r in TIE_RES]
    err = _cli_error(tmp_path, TIE_GT, res)
    assert "a string like the ground truth's image ids" in err
    with pytest.raises(InputError, match=r"an integer like the ground truth's image ids"):
        as_int = json.loads(json.dumps(TIE_GT).replace('"9"', "9").replace('"10"', "10"))
        deteval.evaluate_coco(as_int, copy.deepcopy(TIE_RES))
    dup = copy.deepcopy(TIE_GT)
    dup["images"][1]["id"] = "9"
    with pytest.raises(InputError, match="id '9' twice"):
        deteval.evaluate_coco(dup, copy.deepcopy(TIE_RES))


def test_string_image_ids_on_a_dask_cluster(tmp_path):
    pytest.importorskip("distributed", reason="the Dask extra (deteval[dask]) is not installed")
    import logging

    from distributed import Client, LocalCluster

    from deteval import distributed as dd
    case = coco_gen.generate_case(2)
    gt, results = _stringify(case.gt, case.results)
    g = tmp_path / "gt.json"
    g.write_text(json.dumps(gt))
    half = len(results) // 2
    shards = []
    for i, part in enumerate((results[:half], results[half:])):
        shards.append(tmp_path / f"part-{i}.json")
        shards[-1].write_text(json.dumps(part))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        rep = dd.evaluate_coco(g, [str(p) for p in shards], client=client, partitions=2)
    _close(_stats(rep), _pycocotools_stats(gt, results))
