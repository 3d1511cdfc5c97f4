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

import numpy as np
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
