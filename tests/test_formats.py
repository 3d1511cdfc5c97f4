"""Issue 17: every ground-truth format x every results format, read directly, gives exactly
pycocotools' figures on the COCO version of the same data; the conventions; bad inputs."""
import json

from pathlib import Path

import numpy as np
import pytest

import formats_gen as fg
from deteval.cli import main
from deteval.errors import InputError
from deteval.evaluate import evaluate_coco
from deteval.io import yolo as yolo_io
from deteval.io.detect import (detect_ground_truth, detect_results, load_ground_truth,
                               load_pair)

pytest.importorskip("PIL", reason="the tests write real PNG/JPEG files with Pillow")

GT_FORMATS = ("coco", "yolo", "labelme", "cvat", "voc")
RESULT_FORMATS = ("coco", "coco-name", "coco-stem", "yolo", "voc")


def _write_all(data, root: Path) -> dict:
    gt_json, res_json = fg.write_coco(data, root / "coco")
    paths = {
        "gt": {"coco": gt_json, "yolo": fg.write_yolo(data, root / "yolo").parent,
               "labelme": fg.write_labelme(data, root / "labelme"),
               "cvat": fg.write_cvat(data, root / "cvat" / "annotations.xml"),
               "voc": fg.write_voc(data, root / "voc")},
        "res": {"coco": res_json, "yolo": fg.write_yolo_predictions(data, root / "pred"),
                "voc": fg.write_voc_results(data, root / "vocres")}}
    for by in ("name", "stem"):
        p = root / f"results-{by}.json"
        p.write_text(json.dumps(fg.coco_results(data, by)))
        paths["res"][f"coco-{by}"] = p
    return paths


@pytest.fixture(scope="module", params=[(0, False), (1, True)], ids=["seed0", "seed1-ties"])
def dataset(request, tmp_path_factory):
    seed, ties = request.param
    data = fg.generate(seed, ties=ties)
    root = tmp_path_factory.mktemp(f"formats{seed}")
    return data, _write_all(data, root)


def _reference(data):
    coco_gen = pytest.importorskip("coco_gen")
    pytest.importorskip("pycocotools")
    return coco_gen.pycocotools_figures(fg.coco_gt(data), fg.coco_results(data))


def _close(ours, ref):
    for name, v in ref.items():
        if v is None:
            assert ours[name] is None, name
        else:
            assert ours[name] == pytest.approx(v, abs=1e-12, rel=0), name


def _classes(g, paths):
    return paths["gt"]["voc"] / "classes.txt" if g == "voc" else None


@pytest.mark.parametrize("g", GT_FORMATS)
@pytest.mark.parametrize("r", RESULT_FORMATS)
def test_every_pair_equals_pycocotools(dataset, g, r):
    data, paths = dataset
    ref = _reference(data)
    pair = load_pair(paths["gt"][g], paths["res"][r], classes_file=_classes(g, paths))
    if g == "coco" and r == "coco":
        assert pair is None  # the ordinary COCO readers run
        report = evaluate_coco(paths["gt"][g], paths["res"][r])
    else:
        gt, det, warnings = pair
        assert warnings == []
        report = evaluate_coco(gt, det)
    _close(report.stats, ref["stats"])
    for row in report.classes:
        _close(row, ref["classes"][row["id"]])
    assert [c["name"] for c in report.classes] == fg.CLASSES


def _all_pairs_equal_pycocotools(data, paths):
    ref = _reference(data)
    for g in GT_FORMATS:
        for r in RESULT_FORMATS:
            pair = load_pair(paths["gt"][g], paths["res"][r], classes_file=_classes(g, paths))
            report = (evaluate_coco(paths["gt"][g], paths["res"][r]) if pair is None
                      else evaluate_coco(pair[0], pair[1]))
            _close(report.stats, ref["stats"])
            for row in report.classes:
                _close(row, ref["classes"][row["id"]])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 32))
def test_random_datasets_every_pair_slow(tmp_path, seed):
    rng = np.random.default_rng(seed)
    data = fg.generate(seed, n_images=int(rng.integers(3, 40)),
                       max_objects=int(rng.integers(1, 12)),
                       dets_per_image=int(rng.integers(1, 40)), ties=bool(seed % 2))
    _all_pairs_equal_pycocotools(data, _write_all(data, tmp_path))


@pytest.mark.parametrize("seed", [101, 102])
def test_random_datasets_every_pair(tmp_path, seed):
    """A seeded subset of the slow sweep: denser images, ties."""
    data = fg.generate(seed, n_images=6, max_objects=10, dets_per_image=30, ties=True)
    _all_pairs_equal_pycocotools(data, _write_all(data, tmp_path))


@pytest.mark.parametrize("g", GT_FORMATS)
def test_cli_json_report_per_format(dataset, tmp_path, g):
    data, paths = dataset
    ref = _reference(data)
    out = tmp_path / "r.json"
    args = ["coco", str(paths["gt"][g]), str(paths["res"]["yolo"]), "--json", str(out)]
    if g == "voc":
        args += ["--classes", str(_classes(g, paths))]
    assert main(args) == 0
    report = json.loads(out.read_text())
    _close(report["stats"], ref["stats"])


def test_every_format_has_the_coco_fingerprint(dataset):
    """Same objects, same ids, same boxes and areas, bit for bit."""
    data, paths = dataset
    want = load_ground_truth(paths["gt"]["coco"]).fingerprint()
    for g in GT_FORMATS[1:]:
        classes = fg.CLASSES if g == "voc" else None
        gt = load_ground_truth(paths["gt"][g], classes=classes)
        assert gt.fingerprint() == want, g
        assert gt.sources["file_names"] == data.names, g
        assert gt.image_sizes.tolist() == [[h, w] for (w, h) in data.sizes], g


def test_detection(dataset):
    data, paths = dataset
    gt = load_ground_truth(paths["gt"]["coco"])
    for g in GT_FORMATS:
        assert detect_ground_truth(paths["gt"][g])[0] == g
    assert detect_ground_truth(paths["gt"]["yolo"] / "data.yaml")[0] == "yolo"
    for r in ("coco", "yolo", "voc"):
        assert detect_results(paths["res"][r], gt)[0] == r


# ------------------------------------------------------------------ conventions


def test_images_sorted_by_file_name_whatever_the_file_order(tmp_path):
    data = fg.generate(3)
    gt = load_ground_truth(fg.write_cvat(data, tmp_path / "a.xml"))  # written in reverse
    assert gt.sources["file_names"] == sorted(data.names)
    assert gt.image_ids.tolist() == list(range(1, len(data.names) + 1))


def test_results_name_images_by_id_file_name_or_stem(tmp_path):
    data = fg.generate(4, n_images=4, empty_images=0)
    gt = load_ground_truth(fg.write_labelme(data, tmp_path / "lm"))
    base = fg.coco_results(data)[:3]
    keys = [2, data.names[1], data.names[2].rsplit(".", 1)[0]]
    for r, k in zip(base, keys):
        r["image_id"] = k
    p = tmp_path / "r.json"
    p.write_text(json.dumps(base))
    from deteval.io.detect import load_results
    det = load_results(p, gt)
    assert det.image_idx.tolist() == [1, 1, 2]
    base[0]["image_id"] = "no_such_image"
    p.write_text(json.dumps(base))
    with pytest.raises(InputError, match=r"no_such_image.*|results\[0\]") as e:
        load_results(p, gt)
    assert "results[0]" in str(e.value) and "no_such_image" in str(e.value)


def test_a_stem_of_two_images_is_ambiguous(tmp_path):
    lm = tmp_path / "lm"
    lm.mkdir()
    for stem, ext in (("a", "png"), ("b", "jpg")):
        (lm / f"{stem}.json").write_text(json.dumps({
            "shapes": [], "imagePath": f"x.{ext}", "imageHeight": 8, "imageWidth": 8}))
    gt = load_ground_truth(lm, classes=["c"])
    from deteval.io.detect import load_results
    p = tmp_path / "r.json"
    p.write_text(json.dumps([{"image_id": "x", "category_id": 1, "bbox": [0, 0, 1, 1],
                              "score": 0.5}]))
    with pytest.raises(InputError, match="stem of two images"):
        load_results(p, gt)
    p.write_text(json.dumps([{"image_id": "x.jpg", "category_id": "c", "bbox": [0, 0, 1, 1],
                              "score": 0.5}]))
    det = load_results(p, gt)  # a file name is unambiguous; a class by name
    assert det.image_idx.tolist() == [1] and det.class_idx.tolist() == [0]


def test_yolo_names_dict_and_class_k_is_id_k_plus_1(tmp_path):
    data = fg.generate(5)
    a = load_ground_truth(fg.write_yolo(data, tmp_path / "a"))
    b = load_ground_truth(fg.write_yolo(data, tmp_path / "b", names_as_dict=True))
    assert a.class_names == b.class_names == tuple(fg.CLASSES)
    assert a.class_ids.tolist() == [1, 2, 3, 4]
    assert a.fingerprint() == b.fingerprint()
    want = [c + 1 for (_, c, *_r) in sorted(data.gt, key=lambda g: g[0])]
    order = np.argsort(a.image_idx, kind="stable")
    assert a.class_ids[a.class_idx[order]].tolist() == want


@pytest.mark.parametrize("how", ["absent", "relative", "absolute"])
def test_yolo_path_key(tmp_path, how):
    data = fg.generate(6, n_images=3, empty_images=0)
    fg.write_yolo(data, tmp_path / "ds")
    text = (tmp_path / "ds" / "data.yaml").read_text()
    yaml_dir = tmp_path / "cfg"
    yaml_dir.mkdir()
    if how == "absent":
        yaml_path = tmp_path / "ds" / "data.yaml"
    else:
        path = "../ds" if how == "relative" else str(tmp_path / "ds")
        yaml_path = yaml_dir / "mine.yaml"
        yaml_path.write_text(f"path: {path}\n" + text)
    gt = load_ground_truth(yaml_path)
    assert gt.sources["file_names"] == data.names and len(gt) == len(data.gt)


def test_yolo_split_option(tmp_path):
    data = fg.generate(7, n_images=3, empty_images=0)
    fg.write_yolo(data, tmp_path / "ds")
    (tmp_path / "ds" / "data.yaml").write_text(
        "test: images/val\nval: images/none\nnames: [person, cat, zebra, dog]\n")
    gt = load_ground_truth(tmp_path / "ds", split="test")
    assert len(gt) == len(data.gt)
    with pytest.raises(InputError, match=r"`val` split folder to exist") as e:
        load_ground_truth(tmp_path / "ds")
    assert "line 2" in str(e.value) and "data.yaml" in str(e.value)


def test_image_without_label_file_has_no_objects_label_without_image_is_an_error(tmp_path):
    data = fg.generate(8, n_images=6, empty_images=3)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    labels = tmp_path / "ds" / "labels" / "val"
    missing = [n for n in data.names if not (labels / (n.rsplit(".", 1)[0] + ".txt")).exists()]
    assert missing  # the generator leaves some empty images without a label file
    gt = load_ground_truth(yaml_path)
    assert gt.num_images == 6
    (labels / "ghost.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    with pytest.raises(InputError, match="ghost.txt has none"):
        load_ground_truth(yaml_path)


def test_image_sizes_come_from_headers_without_decoding(tmp_path):
    """A PNG whose pixel data is cut off still gives its size (nothing is decoded)."""
    data = fg.generate(9, n_images=2, empty_images=0)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    png = next((tmp_path / "ds" / "images" / "val").glob("*.png"))
    png.write_bytes(png.read_bytes()[:40])
    gt = load_ground_truth(yaml_path)
    i = gt.sources["file_names"].index(png.name)
    W, H = data.sizes[data.names.index(png.name)]
    assert gt.image_sizes[i].tolist() == [H, W]


def test_labelme_class_order_rules(tmp_path, capsys):
    data = fg.generate(10)
    lm = fg.write_labelme(data, tmp_path / "lm")  # labels.txt with __ignore__, _background_
    assert load_ground_truth(lm).class_names == tuple(fg.CLASSES)
    (lm / "labels.txt").unlink()
    gt = load_ground_truth(lm)
    assert gt.class_names == tuple(sorted(fg.CLASSES))
    assert any("sorted label names" in w for w in gt.sources["warnings"])
    classes = tmp_path / "classes.txt"
    classes.write_text("\n".join(reversed(fg.CLASSES)) + "\n")
    gt = load_ground_truth(lm, classes=list(reversed(fg.CLASSES)))
    assert gt.class_names == tuple(reversed(fg.CLASSES)) and gt.sources["warnings"] == []
    # through the CLI: the warning goes to standard error, the table to standard output
    fg.write_yolo_predictions(data, tmp_path / "pred")
    assert main(["coco", str(lm), str(tmp_path / "pred")]) == 0
    out, err = capsys.readouterr()
    assert "warning" in err and "sorted label names" in err and "warning" not in out
    assert main(["coco", str(lm), str(tmp_path / "pred"), "--classes", str(classes)]) == 0
    assert "warning" not in capsys.readouterr().err
    classes.write_text("person\ncat\n")  # a label outside the list is an error
    assert main(["coco", str(lm), str(tmp_path / "pred"), "--classes", str(classes)]) == 2
    assert "not in it" in capsys.readouterr().err


def test_cvat_meta_label_order_and_polygons(tmp_path):
    data = fg.generate(11)
    gt = load_ground_truth(fg.write_cvat(data, tmp_path / "a.xml"))
    assert gt.class_names == tuple(fg.CLASSES)
    assert any(k == "poly" for *_, k in data.gt)


def test_voc_difficult_is_ordinary_with_a_warning(tmp_path):
    data = fg.generate(12, n_images=3, empty_images=0)
    root = fg.write_voc(data, tmp_path / "voc")
    xml = next((root / "Annotations").glob("*.xml"))
    xml.write_text(xml.read_text().replace("<difficult>0</difficult>",
                                           "<difficult>1</difficult>", 1))
    gt = load_ground_truth(root, classes=fg.CLASSES)
    assert len(gt) == len(data.gt) and gt.difficult.sum() == 1
    assert any("difficult" in w for w in gt.sources["warnings"])


def test_yolo_c_and_numpy_paths_agree(dataset, monkeypatch):
    """Labels and predictions: the C scanner and the numpy reference give the same bits."""
    data, paths = dataset
    gt = load_ground_truth(paths["gt"]["yolo"])
    a = yolo_io.load_yolo_predictions(paths["res"]["yolo"], gt)
    monkeypatch.setattr(yolo_io, "_textscan", None)
    b = yolo_io.load_yolo_predictions(paths["res"]["yolo"], gt)
    for k in ("image_idx", "class_idx", "boxes", "scores", "order"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    gt_numpy = load_ground_truth(paths["gt"]["yolo"])
    for k in ("image_idx", "class_idx", "boxes", "area"):
        assert np.array_equal(getattr(gt, k), getattr(gt_numpy, k)), k


def test_yolo_numbers_read_as_python_float_on_both_paths(tmp_path, monkeypatch):
    """Long, exponent and signed tokens: the same doubles as float() on each path."""
    data = fg.generate(18, n_images=1, empty_images=0, max_objects=1)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    label = next((tmp_path / "ds" / "labels" / "val").glob("*.txt"))
    tokens = ["0.1000000000000000055511151231257827", "+2.5e-1", "3e-1", ".125"]
    label.write_text("1 " + " ".join(tokens) + "\n")
    W, H = data.sizes[0]
    cx, cy, w, h = (float(t) for t in tokens)
    want = [(cx - w / 2) * W, (cy - h / 2) * H, w * W, h * H]
    assert load_ground_truth(yaml_path).boxes.tolist() == [want]
    monkeypatch.setattr(yolo_io, "_textscan", None)
    assert load_ground_truth(yaml_path).boxes.tolist() == [want]


def test_yolo_denormalisation_formula():
    rows = np.array([[0.5, 0.25, 0.25, 0.5]])
    out = yolo_io.denormalise(rows, np.array([[64, 128]]))
    assert out.tolist() == [[48.0, 0.0, 32.0, 32.0]]


def test_whitespace_variants_in_yolo_files(tmp_path):
    data = fg.generate(13, n_images=2, empty_images=0)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    want = load_ground_truth(yaml_path).fingerprint()
    for p in (tmp_path / "ds" / "labels" / "val").glob("*.txt"):
        p.write_bytes(b"\r\n\r\n" + p.read_bytes().replace(b" ", b"\t  ").replace(b"\n", b"\r\n"))
    assert load_ground_truth(yaml_path).fingerprint() == want


# ------------------------------------------------------------------ bad input (CLI)


def _bad(capsys, args, *needles, out=None):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)
    if out is not None:
        assert not Path(out).exists()
    return err


@pytest.fixture()
def yolo_case(tmp_path):
    data = fg.generate(14, n_images=4, empty_images=0)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    pred = fg.write_yolo_predictions(data, tmp_path / "pred")
    label = sorted((tmp_path / "ds" / "labels" / "val").glob("*.txt"))[0]
    return yaml_path, pred, label, tmp_path / "out.json"


@pytest.mark.parametrize("line,needles", [
    ("0 0.5 0.5 0.1", ["Expected 5 fields", "line 2"]),
    ("0 0.5 abc 0.1 0.1", ["Expected `cy` to be a number", "'abc'", "line 2"]),
    ("7 0.5 0.5 0.1 0.1", ["Expected `class` to be a class index in 0..3", "7", "line 2"]),
    ("0 0.5 0.5 12.5 0.1", ["Expected `w` to be a normalised coordinate in [0, 1]", "12.5",
                            "pixel coordinates?", "line 2"]),
    ("0 -0.2 0.5 0.1 0.1", ["Expected `cx`", "-0.2", "line 2"]),
    ("1.5 0.5 0.5 0.1 0.1", ["Expected `class`", "1.5", "line 2"]),
    ("0 0.5 0.5 nan 0.1", ["finite", "line 2"]),
])
def test_bad_yolo_label_lines(capsys, yolo_case, line, needles):
    yaml_path, pred, label, out = yolo_case
    label.write_text("0 0.5 0.5 0.25 0.25\n" + line + "\n")
    _bad(capsys, ["coco", str(yaml_path), str(pred), "--json", str(out)], str(label),
         *needles, out=out)


@pytest.mark.parametrize("line,needles", [
    ("0 0.5 0.5 0.1 0.1", ["Expected 6 fields", "line 3"]),
    ("0 0.5 0.5 0.1 0.1 x", ["Expected `conf` to be a number", "line 3"]),
    ("4 0.5 0.5 0.1 0.1 0.9", ["Expected `class`", "line 3"]),
    ("0 0.5 1.5 0.1 0.1 0.9", ["Expected `cy`", "1.5", "line 3"]),
])
def test_bad_yolo_prediction_lines(capsys, yolo_case, line, needles):
    yaml_path, pred, label, out = yolo_case
    p = sorted(pred.glob("*.txt"))[-1]
    p.write_text("0 0.5 0.5 0.25 0.25 0.5\n\n" + line + "\n")
    _bad(capsys, ["coco", str(yaml_path), str(pred), "--json", str(out)], str(p), *needles,
         out=out)


def test_prediction_file_for_an_unknown_image(capsys, yolo_case):
    yaml_path, pred, label, out = yolo_case
    (pred / "stranger.txt").write_text("0 0.5 0.5 0.1 0.1 0.9\n")
    _bad(capsys, ["coco", str(yaml_path), str(pred), "--json", str(out)], "stranger",
         "Expected `image_id` to be an image of the ground truth", out=out)


def test_missing_split_folder(capsys, yolo_case):
    yaml_path, pred, label, out = yolo_case
    yaml_path.write_text(yaml_path.read_text().replace("val: images/val", "val: images/nope"))
    _bad(capsys, ["coco", str(yaml_path), str(pred), "--json", str(out)], str(yaml_path),
         "line 2", "`val` split folder to exist", "images/nope", out=out)


def test_labelme_without_shapes(capsys, tmp_path):
    data = fg.generate(15, n_images=3, empty_images=0)
    lm = fg.write_labelme(data, tmp_path / "lm")
    pred = fg.write_yolo_predictions(data, tmp_path / "pred")
    bad = sorted(lm.glob("*.json"))[1]
    doc = json.loads(bad.read_text())
    del doc["shapes"]
    bad.write_text(json.dumps(doc))
    _bad(capsys, ["coco", str(lm), str(pred), "--json", str(tmp_path / "o.json")], str(bad),
         "without `shapes`", out=tmp_path / "o.json")


def test_cvat_video_schema_refused(capsys, tmp_path):
    p = tmp_path / "annotations.xml"
    p.write_text('<?xml version="1.0"?>\n<annotations>\n<version>1.1</version>\n'
                 '<track id="0" label="cat">\n<box frame="0" xtl="1" ytl="1" xbr="2" ybr="2" '
                 'outside="0" occluded="0" keyframe="1"/>\n</track>\n</annotations>\n')
    res = tmp_path / "r.json"
    res.write_text("[]")
    _bad(capsys, ["coco", str(p), str(res)], str(p), "video schema", "line 4")


def test_ambiguous_and_unknown_inputs(capsys, tmp_path):
    data = fg.generate(16, n_images=2, empty_images=0)
    fg.write_yolo(data, tmp_path / "both")
    fg.write_labelme(data, tmp_path / "both")
    res = tmp_path / "r.json"
    res.write_text(json.dumps(fg.coco_results(data)))
    _bad(capsys, ["coco", str(tmp_path / "both"), str(res)], "several", "yolo", "labelme")
    (tmp_path / "empty").mkdir()
    _bad(capsys, ["coco", str(tmp_path / "empty"), str(res)], "Expected `GROUND_TRUTH` to be",
         "YOLO data.yaml")
    _bad(capsys, ["coco", str(res), str(res)], "a results list: it goes second")
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    gt = fg.write_labelme(data, tmp_path / "lm")
    _bad(capsys, ["coco", str(gt), str(other)], "Expected `RESULTS` to be")


def test_ambiguous_results_folder(capsys, tmp_path):
    """Files named both like images and like classes, with lines valid in both formats."""
    data = fg.generate(17, n_images=2, empty_images=0)
    data.names = ["cat.png", "x_dog.png"]
    lm = fg.write_labelme(data, tmp_path / "lm")
    res = tmp_path / "res"
    res.mkdir()
    (res / "cat.txt").write_text("1 0.5 0.5 0.5 0.5 0.5\n")
    (res / "x_dog.txt").write_text("1 0.5 0.5 0.5 0.5 0.5\n")
    _bad(capsys, ["coco", str(lm), str(res)], "both as YOLO predictions", "VOC")


def test_split_only_with_yolo(capsys, dataset):
    data, paths = dataset
    _bad(capsys, ["coco", str(paths["gt"]["labelme"]), str(paths["res"]["coco"]), "--split",
                  "val"], "--split")


@pytest.mark.parametrize("fmt,ext,kw", [
    ("PNG", "png", {}), ("JPEG", "jpg", {}), ("JPEG", "jpeg", {"progressive": True}),
    ("GIF", "gif", {}), ("BMP", "bmp", {}), ("WEBP", "webp", {"lossless": True}),
    ("WEBP", "webp", {}), ("TIFF", "tif", {})])
@pytest.mark.parametrize("size", [(1, 1), (33, 17), (1024, 513)])
def test_image_header_sizes(tmp_path, fmt, ext, kw, size):
    from PIL import Image
    from deteval.io.dataset import image_size
    p = tmp_path / f"a.{ext}"
    if fmt == "JPEG":
        # the frame header more than 64 KiB in: past the first reads
        kw = dict(kw, exif=b"Exif\x00\x00" + b"\x00" * 60000, comment=b"c" * 60000)
    Image.new("RGB", size, (1, 2, 3)).save(p, fmt, **kw)
    assert image_size(p) == size


def test_unreadable_image_is_an_error_naming_it(tmp_path, capsys):
    data = fg.generate(19, n_images=2, empty_images=0)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    img = sorted((tmp_path / "ds" / "images" / "val").iterdir())[0]
    img.write_bytes(b"not an image")
    res = tmp_path / "r.json"
    res.write_text("[]")
    _bad(capsys, ["coco", str(yaml_path), str(res)], str(img), "width and height")


def test_voc_results_unknown_image(capsys, tmp_path):
    data = fg.generate(20, n_images=2, empty_images=0)
    lm = fg.write_labelme(data, tmp_path / "lm")
    res = fg.write_voc_results(data, tmp_path / "res")
    (res / "comp4_det_test_cat.txt").write_text("img_000 0.5 1 1 4 4\nnobody 0.5 1 1 4 4\n")
    _bad(capsys, ["coco", str(lm), str(res)], "comp4_det_test_cat.txt", "line 2", "nobody")


def test_classes_option_only_where_it_decides(capsys, dataset, tmp_path):
    data, paths = dataset
    classes = tmp_path / "c.txt"
    classes.write_text("\n".join(fg.CLASSES))
    _bad(capsys, ["coco", str(paths["gt"]["yolo"]), str(paths["res"]["yolo"]), "--classes",
                  str(classes)], "--classes", "LabelMe, CVAT or VOC")


def test_coco_ground_truth_with_yolo_and_voc_results(dataset):
    """COCO ground truth: image sizes and file names come from its `images`."""
    data, paths = dataset
    gt = load_ground_truth(paths["gt"]["coco"])
    assert gt.image_sizes.tolist() == [[h, w] for (w, h) in data.sizes]
    assert gt.sources["file_names"] == data.names


def test_results_folder_without_prediction_files(capsys, tmp_path):
    data = fg.generate(21, n_images=2, empty_images=0)
    lm = fg.write_labelme(data, tmp_path / "lm")
    other = tmp_path / "other"
    other.mkdir()
    (other / "readme.md").write_text("x")
    _bad(capsys, ["coco", str(lm), str(other)], "a folder without .txt files")
    (tmp_path / "empty").mkdir()
    assert main(["coco", str(lm), str(tmp_path / "empty")]) == 0
    assert "an empty folder: no detections" in capsys.readouterr().err


def test_a_bad_first_line_is_named_not_taken_for_another_format(capsys, yolo_case):
    yaml_path, pred, label, out = yolo_case
    for p in pred.glob("*.txt"):
        p.write_text("0 0.5 0.5 0.1 0.1\n")  # 5 fields in every prediction file
    _bad(capsys, ["coco", str(yaml_path), str(pred)], "Expected 6 fields", "line 1")


def test_yolo_lines_named_by_no_image(capsys, yolo_case):
    yaml_path, pred, label, out = yolo_case
    for p in pred.glob("*.txt"):
        p.rename(p.with_name("x" + p.name))
    _bad(capsys, ["coco", str(yaml_path), str(pred)], "Expected `image_id` to be an image")


def test_field_count_hints(capsys, yolo_case):
    yaml_path, pred, label, out = yolo_case
    p = sorted(pred.glob("*.txt"))[0]
    p.write_text("0 0.5 0.5 0.1 0.1\n")
    _bad(capsys, ["coco", str(yaml_path), str(pred)], "save_conf=True")
    label.write_text("0 0.1 0.1 0.2 0.1 0.2 0.2\n")
    _bad(capsys, ["coco", str(yaml_path), str(pred)], "segmentation label?")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_number_spellings_read_as_float_on_both_paths(tmp_path, monkeypatch, seed):
    """Random values written as repr, %g, %.6f, %.3e, with + signs and trailing zeros: the
    C scanner and the numpy path both give float(token) exactly."""
    rng = np.random.default_rng(seed)
    data = fg.generate(30 + seed, n_images=1, empty_images=0, max_objects=1)
    yaml_path = fg.write_yolo(data, tmp_path / "ds")
    label = next((tmp_path / "ds" / "labels" / "val").glob("*.txt"))
    spell = [repr, lambda v: f"{v:g}", lambda v: f"{v:.6f}", lambda v: f"{v:.3e}",
             lambda v: f"+{v!r}", lambda v: f"{v:.17f}0", lambda v: f"{v:.2E}"]
    lines, want = [], []
    W, H = data.sizes[0]
    for _ in range(200):
        v = rng.random(4) * 0.5 + [0.25, 0.25, 0.0, 0.0]
        toks = [spell[int(rng.integers(len(spell)))](float(x)) for x in v]
        lines.append("2 " + " ".join(toks))
        cx, cy, w, h = (float(t) for t in toks)
        want.append([(cx - w / 2) * W, (cy - h / 2) * H, w * W, h * H])
    label.write_text("\n".join(lines) + "\n")
    assert load_ground_truth(yaml_path).boxes.tolist() == want
    monkeypatch.setattr(yolo_io, "_textscan", None)
    assert load_ground_truth(yaml_path).boxes.tolist() == want


def test_cvat_label_outside_meta_and_skipped_shapes(tmp_path, capsys):
    data = fg.generate(22, n_images=2, empty_images=0)
    p = fg.write_cvat(data, tmp_path / "a.xml")
    text = p.read_text()
    p.write_text(text.replace("</image>", '<points label="cat" points="1,1"></points></image>',
                              1))
    gt = load_ground_truth(p)
    assert any("skipped 1 CVAT <points>" in w for w in gt.sources["warnings"])
    p.write_text(text.replace('label="cat"', 'label="lynx"', 1))
    res = tmp_path / "r.json"
    res.write_text("[]")
    err = _bad(capsys, ["coco", str(p), str(res)], str(p), "'lynx'", "not in it")
    assert "line " in err
