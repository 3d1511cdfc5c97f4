"""Hostile inputs found by fuzzing and review (issue 18, section 2): each ends as one clean
error line (exit 2 from the CLI) or a correct answer, on every reader path."""
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import deteval
import deteval.match as match
import deteval.rank as rank
from deteval.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT / "fixtures" / "coco" / "instances_val.json"
RES = ROOT / "fixtures" / "coco" / "results.json"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def one_line_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stderr[-500:])
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr[-500:]
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


@pytest.fixture(scope="module")
def gt():
    return json.loads(GT.read_text())


def _result(gt, **kw):
    r = {"image_id": gt["images"][0]["id"], "category_id": gt["categories"][0]["id"],
         "bbox": [1, 2, 3, 4], "score": 0.5}
    r.update(kw)
    return r


DEEP = 100_000


@pytest.mark.parametrize("where", ["results", "extra key", "ground truth"])
def test_deep_nesting_is_refused_on_every_path(tmp_path, gt, where):
    deep = "[" * DEEP + "]" * DEEP
    res, g = RES, GT
    if where == "results":
        res = tmp_path / "r.json"
        res.write_text(deep)
    elif where == "extra key":
        res = tmp_path / "r.json"
        res.write_text(json.dumps([_result(gt, x=0)]).replace("0}", deep + "}"))
    else:
        g = tmp_path / "g.json"
        g.write_text(json.dumps(gt).replace('{"images"', '{"deep": ' + deep + ', "images"', 1)
                     if '{"images"' in json.dumps(gt) else
                     json.dumps(gt)[:-1] + ', "deep": ' + deep + "}")
    one_line_error(cli("coco", g, res), "nested")


@pytest.mark.parametrize("field, value", [("id", 2 ** 63), ("id", 2 ** 64 - 1),
                                          ("id", -(2 ** 63) - 1), ("id", 10 ** 30)])
def test_ground_truth_ids_outside_int64_are_named(tmp_path, gt, field, value):
    g = json.loads(json.dumps(gt))
    g["images"][0][field] = value
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g))
    one_line_error(cli("coco", path, RES), "images[0]", str(value)[:20])
    with pytest.raises(InputError, match=r"images\[0\]"):
        deteval.evaluate_coco(g, json.loads(RES.read_text()))


def test_result_id_never_wraps_to_minus_one(tmp_path, gt):
    g = json.loads(json.dumps(gt))
    old = g["images"][0]["id"]
    g["images"][0]["id"] = -1
    for a in g["annotations"]:
        if a["image_id"] == old:
            a["image_id"] = -1
    gpath, rpath = tmp_path / "g.json", tmp_path / "r.json"
    gpath.write_text(json.dumps(g))
    rpath.write_text(json.dumps([_result(g, image_id=2 ** 64 - 1)]))
    one_line_error(cli("coco", gpath, rpath), "results[0]", "18446744073709551615")
    with pytest.raises(InputError, match="18446744073709551615"):
        deteval.evaluate_coco(g, [_result(g, image_id=2 ** 64 - 1)])


@pytest.mark.parametrize("key", ["bbox", "score"])
def test_huge_integers_follow_one_rule_on_every_path(tmp_path, gt, key):
    huge = 10 ** 400
    rec = _result(gt, bbox=[1, 2, 3, huge]) if key == "bbox" else _result(gt, score=huge)
    path = tmp_path / "r.json"
    path.write_text(json.dumps([rec]))
    one_line_error(cli("coco", GT, path), "results[0]", key)
    with pytest.raises(InputError, match=rf"results\[0\].*`{key}`"):
        deteval.evaluate_coco(gt, [rec])


@pytest.fixture()
def voc_copy(tmp_path):
    dst = tmp_path / "voc"
    shutil.copytree(ROOT / "fixtures" / "voc", dst)
    return dst


def _first_image(voc):
    return (voc / "VOC2007" / "ImageSets" / "Main" / "test.txt").read_text().split()[0]


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_non_regular_annotation_files_are_refused(voc_copy, kind):
    xml = voc_copy / "VOC2007" / "Annotations" / f"{_first_image(voc_copy)}.xml"
    xml.unlink()
    if kind == "fifo":
        os.mkfifo(xml)
    else:
        xml.symlink_to("/dev/zero")
    p = cli("voc", voc_copy / "VOC2007", voc_copy / "results", "--imageset", "test")
    one_line_error(p, xml.name, "regular file")


def test_non_regular_detection_file_is_refused(voc_copy):
    det = voc_copy / "results" / "comp4_det_test_car.txt"
    det.unlink()
    os.mkfifo(det)
    p = cli("voc", voc_copy / "VOC2007", voc_copy / "results", "--imageset", "test")
    one_line_error(p, det.name, "regular file")


def test_huge_annotation_file_is_refused(voc_copy):
    xml = voc_copy / "VOC2007" / "Annotations" / f"{_first_image(voc_copy)}.xml"
    with open(xml, "ab") as fh:
        fh.truncate(65 * 2 ** 20)  # sparse: no disk used
    p = cli("voc", voc_copy / "VOC2007", voc_copy / "results", "--imageset", "test")
    one_line_error(p, "at most 64 MiB")


def test_huge_unknown_id_fails_fast_with_a_short_message(voc_copy):
    with open(voc_copy / "results" / "comp4_det_test_car.txt", "a") as fh:
        fh.write("X" * 10_000_000 + " 0.5 1 2 3 4\n")
    p = cli("voc", voc_copy / "VOC2007", voc_copy / "results", "--imageset", "test")
    one_line_error(p, "'XXXX", "...")
    assert len(p.stderr) < 400


def test_boxes_near_the_float_limit_leak_no_warnings(tmp_path, gt, monkeypatch):
    g = json.loads(json.dumps(gt))
    g["annotations"][0]["bbox"] = [1e308, 1e308, 1e308, 1e308]
    a = g["annotations"][0]
    res = [{"image_id": a["image_id"], "category_id": a["category_id"],
            "bbox": [1e308, 1e308, 1.5e308, 1e308], "score": 0.9}]
    for kernels in (True, False):
        with monkeypatch.context() as m:
            if not kernels:
                m.setattr(match, "_kernels", None)
                m.setattr(rank, "_kernels", None)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                rep = deteval.evaluate_coco(json.loads(json.dumps(g)), res).to_dict()
        assert rep["stats"]["AP"] is not None
    voc = tmp_path / "voc"
    shutil.copytree(ROOT / "fixtures" / "voc", voc)
    img = _first_image(voc)
    xml = voc / "VOC2007" / "Annotations" / f"{img}.xml"
    text = xml.read_text()
    import re
    text = re.sub(r"<xmin>[^<]*</xmin>", "<xmin>1e308</xmin>", text, count=1)
    text = re.sub(r"<xmax>[^<]*</xmax>", "<xmax>1.7e308</xmax>", text, count=1)
    xml.write_text(text)
    with open(voc / "results" / "comp4_det_test_car.txt", "a") as fh:
        fh.write(f"{img} 0.99 1e308 1 1.7e308 100\n")
    for compat in ("devkit", "detectron2"):
        p = subprocess.run([sys.executable, "-W", "error", "-m", "deteval", "voc",
                            str(voc / "VOC2007"), str(voc / "results"), "--imageset", "test",
                            "--compat", compat], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 0 and p.stderr == "", p.stderr[-800:]
    assert np.isfinite(deteval.evaluate_voc(voc / "VOC2007", voc / "results",
                                            imageset="test").mAP)


@pytest.mark.parametrize("variant", ["nbsp", "child-element"])
def test_class_name_has_one_normalisation_on_every_path(voc_copy, variant):
    """`dog` + non-breaking space and `<name>do<b/>g</name>` are `dog` whichever reader
    (C scanner, lxml/XSLT, the element-by-element reference) reads the file."""
    from deteval.io import voc as voc_io
    ann = voc_copy / "VOC2007" / "Annotations"
    xml = ann / f"{_first_image(voc_copy)}.xml"
    text = xml.read_text(encoding="utf-8")
    i = text.index("<name>") + 6
    j = text.index("</name>", i)
    name = text[i:j]
    new = name + "\u00a0" if variant == "nbsp" else name[:1] + "<b/>" + name[1:]
    xml.write_text(text[:i] + new + text[j:], encoding="utf-8")
    # the same object read by a file that goes to lxml (an attribute leaves the C subset)
    other = ann / "zz_lxml.xml"
    other.write_text((text[:i] + new + text[j:]).replace("<annotation>",
                                                         '<annotation verified="yes">'),
                     encoding="utf-8")
    gt = voc_io.load_voc_annotations(ann)
    assert name in gt.class_names and new not in gt.class_names
    assert voc_io._read_objects(xml)[0][0] == name
    assert voc_io._read_objects(other)[0][0] == name


def test_kernels_read_private_copies_while_other_threads_write(monkeypatch):
    """The caller's arrays are copied before the kernels check and use them: a thread
    scribbling over them meanwhile cannot push an index out of range (no crash, and the
    result is one of the valid answers)."""
    import threading
    from deteval._native import kernels
    if kernels is None:
        pytest.skip("compiled kernels not built")
    rng = np.random.default_rng(0)
    major = rng.integers(0, 50, 200_000)
    scores = rng.random(200_000)
    stop = threading.Event()

    def scribble():
        while not stop.is_set():
            major[:] = -(2 ** 62)  # out of range for every count table
            major[:] = rng.integers(0, 50, major.shape[0])

    t = threading.Thread(target=scribble)
    t.start()
    try:
        for _ in range(30):
            try:
                order = np.frombuffer(kernels.rank_order(major, scores, None), dtype=np.int64)
            except ValueError:
                continue  # the copy it checked held the negative values: refused cleanly
            assert np.array_equal(np.sort(order), np.arange(major.shape[0]))
    finally:
        stop.set()
        t.join()
