"""Issue 17: ``deteval convert``: round trips, what the target cannot hold, nothing written
on error."""
import json
from pathlib import Path

import numpy as np
import pytest

import formats_gen as fg
from deteval.cli import main
from deteval.convert import convert
from deteval.evaluate import evaluate_coco
from deteval.io.detect import load_ground_truth, load_pair

pytest.importorskip("PIL", reason="the tests write real PNG/JPEG files with Pillow")


def _coco_with_images(data, root: Path) -> Path:
    gt, _ = fg.write_coco(data, root)
    fg.write_images(data, root)  # beside the JSON: convert links them
    return gt


def _boxes_by_image(coco: dict):
    name = {im["id"]: im["file_name"] for im in coco["images"]}
    cat = {c["id"]: c["name"] for c in coco["categories"]}
    return sorted((name[a["image_id"]], cat[a["category_id"]], tuple(a["bbox"]))
                  for a in coco["annotations"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coco_yolo_coco_round_trip_is_exact(tmp_path, seed):
    data = fg.generate(seed)
    src = _coco_with_images(data, tmp_path / "coco")
    notes = convert(src, "yolo", tmp_path / "y")
    assert (tmp_path / "y" / "data.yaml").is_file()
    assert all(p.is_file() for p in (tmp_path / "y" / "images" / "val").iterdir())
    convert(tmp_path / "y", "coco", tmp_path / "back.json")
    a, b = fg.coco_gt(data), json.loads((tmp_path / "back.json").read_text())
    assert _boxes_by_image(a) == _boxes_by_image(b)
    assert a["images"] == b["images"] and a["categories"] == b["categories"]
    assert a["annotations"] == b["annotations"]  # same order, ids, areas too
    assert not any("crowd" in n for n in notes)


def test_coco_voc_coco_round_trip_is_exact(tmp_path):
    data = fg.generate(3)
    src = _coco_with_images(data, tmp_path / "coco")
    convert(src, "voc", tmp_path / "v")
    assert all((tmp_path / "v" / "JPEGImages" / n).is_file() for n in data.names)
    classes = tmp_path / "classes.txt"
    classes.write_text("\n".join(fg.CLASSES))
    convert(tmp_path / "v", "coco", tmp_path / "back.json", classes_file=classes)
    a, b = fg.coco_gt(data), json.loads((tmp_path / "back.json").read_text())
    assert a == b


def test_general_floats_round_trip_within_what_yolo_stores(tmp_path):
    """Non-dyadic sizes and boxes: back within a few ulps (YOLO stores w / W)."""
    data = fg.generate(4)
    rng = np.random.default_rng(4)
    data.sizes = [(int(rng.integers(100, 700)), int(rng.integers(100, 700))) for _ in data.names]
    data.gt = [(i, c, x * 1.37, y * 1.1, w * 1.3, h * 1.7, k)
               for (i, c, x, y, w, h, k) in data.gt]
    src = _coco_with_images(data, tmp_path / "coco")
    convert(src, "yolo", tmp_path / "y")
    convert(tmp_path / "y", "coco", tmp_path / "back.json")
    a = np.array([x["bbox"] for x in fg.coco_gt(data)["annotations"]])
    b = np.array([x["bbox"] for x in json.loads((tmp_path / "back.json").read_text())
                  ["annotations"]])
    assert np.allclose(a, b, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("source", ["labelme", "cvat", "voc", "yolo"])
def test_converted_coco_evaluates_like_the_source(tmp_path, source):
    """pycocotools on the converted file = deteval on the source = COCO version."""
    coco_gen = pytest.importorskip("coco_gen")
    data = fg.generate(5)
    src = {"labelme": lambda: fg.write_labelme(data, tmp_path / "s"),
           "cvat": lambda: fg.write_cvat(data, tmp_path / "s" / "a.xml"),
           "voc": lambda: fg.write_voc(data, tmp_path / "s"),
           "yolo": lambda: fg.write_yolo(data, tmp_path / "s")}[source]()
    classes = tmp_path / "s" / "classes.txt" if source == "voc" else None
    convert(src, "coco", tmp_path / "out.json", classes_file=classes)
    converted = json.loads((tmp_path / "out.json").read_text())
    assert converted == fg.coco_gt(data)
    ref = coco_gen.pycocotools_figures(converted, fg.coco_results(data))["stats"]
    res = tmp_path / "r.json"
    res.write_text(json.dumps(fg.coco_results(data)))
    gt, det, _ = load_pair(src, res, classes_file=classes)
    stats = evaluate_coco(gt, det).stats
    for k, v in ref.items():
        assert (stats[k] is None) if v is None else stats[k] == pytest.approx(v, abs=1e-12)


def test_what_yolo_and_voc_cannot_hold(tmp_path):
    data = fg.generate(6, n_images=4, empty_images=0)
    gt = fg.coco_gt(data)
    gt["annotations"][0]["iscrowd"] = 1
    gt["annotations"][1]["area"] = 3.0  # a segmentation's area
    root = tmp_path / "coco"
    root.mkdir()
    (root / "gt.json").write_text(json.dumps(gt))
    fg.write_images(data, root)
    notes = convert(root / "gt.json", "yolo", tmp_path / "y")
    assert any("1 crowd object(s) not written" in n for n in notes)
    assert any("area" in n for n in notes) and any("segmentations" in n for n in notes)
    assert len(load_ground_truth(tmp_path / "y")) == len(gt["annotations"]) - 1
    notes = convert(root / "gt.json", "voc", tmp_path / "v")
    assert any("crowd object(s) written as <difficult>1" in n for n in notes)
    voc = load_ground_truth(tmp_path / "v", classes=fg.CLASSES)
    assert voc.difficult.sum() == 1 and len(voc) == len(gt["annotations"])
    notes = convert(tmp_path / "v", "coco", tmp_path / "c.json", classes_file=None)
    assert any("difficult" in n for n in notes)


def test_ids_not_stored_note(tmp_path):
    data = fg.generate(7, n_images=3, empty_images=0)
    gt = fg.coco_gt(data)
    for im in gt["images"]:
        im["id"] += 100
    for a in gt["annotations"]:
        a["image_id"] += 100
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    fg.write_images(data, tmp_path)
    notes = convert(tmp_path / "gt.json", "yolo", tmp_path / "y")
    assert any("stores no ids" in n for n in notes)


def test_cli_convert_and_refusals(tmp_path, capsys):
    data = fg.generate(8, n_images=3, empty_images=0)
    lm = fg.write_labelme(data, tmp_path / "lm")
    out = tmp_path / "out"
    assert main(["convert", str(lm), "--to", "yolo", str(out)]) == 0
    cap = capsys.readouterr()
    assert "wrote" in cap.out and "polygons are written as their bounding boxes" in cap.err
    assert "source images not found" in cap.err  # LabelMe JSON only: no image files
    assert (out / "data.yaml").is_file() and not (out / "images").exists()
    # an existing non-empty folder is refused, untouched
    before = sorted(p.name for p in out.rglob("*"))
    assert main(["convert", str(lm), "--to", "voc", str(out)]) == 2
    assert "new or empty folder" in capsys.readouterr().err
    assert sorted(p.name for p in out.rglob("*")) == before
    # an empty folder is fine
    (tmp_path / "empty").mkdir()
    assert main(["convert", str(lm), "--to", "voc", str(tmp_path / "empty")]) == 0
    assert (tmp_path / "empty" / "Annotations").is_dir()
    # a bad source: exit 2, nothing written, no temporary folder left
    bad = sorted(lm.glob("*.json"))[0]
    bad.write_text('{"imagePath": "x.png"}')
    for target, dest in (("yolo", tmp_path / "o2"), ("coco", tmp_path / "o2.json")):
        assert main(["convert", str(lm), "--to", target, str(dest)]) == 2
        assert "without `shapes`" in capsys.readouterr().err
        assert not dest.exists()
    assert not [p for p in tmp_path.iterdir() if "deteval-tmp" in p.name]


def test_yolo_target_needs_image_sizes(tmp_path, capsys):
    data = fg.generate(9, n_images=2, empty_images=0)
    gt = fg.coco_gt(data)
    del gt["images"][1]["width"]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    assert main(["convert", str(tmp_path / "gt.json"), "--to", "yolo", str(tmp_path / "y")]) == 2
    assert "width and height" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()


def test_yolo_target_refuses_images_of_another_size(tmp_path, capsys):
    data = fg.generate(10, n_images=2, empty_images=0)
    src = _coco_with_images(data, tmp_path / "coco")
    from PIL import Image
    W, H = data.sizes[0]
    Image.new("RGB", (W + 1, H)).save(tmp_path / "coco" / data.names[0])
    assert main(["convert", str(src), "--to", "yolo", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert data.names[0] in err and f"{W}x{H}" in err and f"{W + 1}x{H}" in err
    assert not (tmp_path / "y").exists()


def test_classes_only_for_formats_without_their_own_order(tmp_path, capsys):
    data = fg.generate(11, n_images=2, empty_images=0)
    src = _coco_with_images(data, tmp_path / "coco")
    classes = tmp_path / "c.txt"
    classes.write_text("a\n")
    assert main(["convert", str(src), "--to", "yolo", str(tmp_path / "y"), "--classes",
                 str(classes)]) == 2
    assert "--classes" in capsys.readouterr().err and not (tmp_path / "y").exists()
