"""`deteval compare` (CLI) and deteval.testing.assert_no_regression / compare_reports.

Reports are made by running ``deteval voc|coco --json`` on the shipped fixtures and
on modified copies in a temporary folder (once per module). Exit codes: 0 no
selected figure dropped by more than --max-drop, 1 one did, 2 bad input
(unreadable / not a report / not comparable / unknown figure).

Runtime: a ``python -m deteval`` process costs ~0.5 s of CPU, so one test per
behaviour runs the real command in a subprocess (``run``: exit code, stdout,
stderr, no traceback) and the variations call the same entry point in-process
(``cli``: ``deteval.cli.main(argv)``, same exit code and output).
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pytest

import deteval
from deteval.cli import main as deteval_main
from deteval.testing import assert_no_regression

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VOC_ROOT = FIXTURES / "voc" / "VOC2007"
VOC_RESULTS = FIXTURES / "voc" / "results"
COCO_GT = FIXTURES / "coco" / "instances_val.json"
COCO_RESULTS = FIXTURES / "coco" / "results.json"


def _cmd(*args):
    return [sys.executable, "-m", "deteval", *map(str, args)]


def run(*args) -> subprocess.CompletedProcess:
    proc = subprocess.run(_cmd(*args), capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def cli(*args) -> SimpleNamespace:
    """``deteval ARGS`` in-process: returncode, stdout, stderr like ``run``."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = deteval_main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code
    return SimpleNamespace(returncode=rc, stdout=out.getvalue(), stderr=err.getvalue())


def compare(*args) -> subprocess.CompletedProcess:
    """``deteval compare ARGS`` in a subprocess."""
    return run("compare", *args)


def compare_in(*args) -> SimpleNamespace:
    """``deteval compare ARGS`` in-process."""
    return cli("compare", *args)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """name -> path of a JSON report written by `deteval voc|coco --json`."""
    tmp = tmp_path_factory.mktemp("reports")

    # VOC: detections of `cat` halved (every other line) -> cat AP and mAP drop
    worse_res = tmp / "voc_results_worse"
    shutil.copytree(VOC_RESULTS, worse_res)
    cat = worse_res / "comp4_det_test_cat.txt"
    lines = cat.read_text().splitlines(keepends=True)
    cat.write_text("".join(lines[::2]))
    # VOC: ground truth with one box moved by a pixel -> another fingerprint
    other_gt = tmp / "VOC2007_other"
    shutil.copytree(VOC_ROOT, other_gt)
    xml = other_gt / "Annotations" / "000539.xml"
    text = xml.read_text()
    assert "<xmin>171</xmin>" in text
    xml.write_text(text.replace("<xmin>171</xmin>", "<xmin>172</xmin>", 1))

    # COCO: every other `person` (category 1) detection dropped
    results = json.loads(COCO_RESULTS.read_text())
    worse = [d for i, d in enumerate(results) if not (d["category_id"] == 1 and i % 2 == 0)]
    assert len(worse) < len(results)
    (tmp / "coco_results_worse.json").write_text(json.dumps(worse))
    gt = json.loads(COCO_GT.read_text())
    gt["annotations"][0]["bbox"][2] += 1.0
    (tmp / "coco_gt_other.json").write_text(json.dumps(gt))

    voc = ("voc", VOC_ROOT, VOC_RESULTS, "--imageset", "test")
    coco = ("coco", COCO_GT, COCO_RESULTS)
    jobs = {
        "voc": voc,
        "voc_again": voc,
        "voc_worse": ("voc", VOC_ROOT, worse_res, "--imageset", "test"),
        "voc07": voc + ("--metric", "voc07"),
        "voc_iou": voc + ("--iou", "0.6"),
        "voc_compat": voc + ("--compat", "detectron2"),
        "voc_other_gt": ("voc", other_gt, VOC_RESULTS, "--imageset", "test"),
        "coco": coco,
        "coco_worse": ("coco", COCO_GT, tmp / "coco_results_worse.json"),
        "coco_iou": coco + ("--iou-thresholds", "0.5,0.75"),
        "coco_max_dets": coco + ("--max-dets", "1,10,50"),
        "coco_areas": coco + ("--area-ranges", "all=0:1e10,small=0:1024"),
        "coco_other_gt": ("coco", tmp / "coco_gt_other.json", COCO_RESULTS),
    }
    out = {}
    for name, args in jobs.items():
        path = tmp / f"{name}.json"
        if name == "voc_again":  # one of them through a real process
            p = run(*args, "--json", path)
        else:
            p = cli(*args, "--json", path)
        assert p.returncode == 0, (name, p.stderr)
        out[name] = path
    return out


def load(path):
    return json.loads(Path(path).read_text())


def row(stdout: str, figure: str) -> str:
    """The table line of one figure."""
    found = [ln for ln in stdout.splitlines() if ln.split("  ")[0].strip() == figure]
    assert len(found) == 1, (figure, stdout)
    return found[0]


# --------------------------------------------------------------------------- fixtures sanity
def test_the_modified_inputs_regress(reports):
    base, worse = load(reports["voc"]), load(reports["voc_worse"])
    assert worse["mAP"] < base["mAP"]
    cat = lambda r: next(c for c in r["classes"] if c["name"] == "cat")["ap"]  # noqa: E731
    assert base["mAP"] - worse["mAP"] < 0.1 < cat(base) - cat(worse)
    cb, cw = load(reports["coco"]), load(reports["coco_worse"])
    assert cb["stats"]["AP50"] - cw["stats"]["AP50"] > 0.04
    assert cb["stats"]["AR1"] - cw["stats"]["AR1"] < 0.04


# --------------------------------------------------------------------------- exit 0 / 1
@pytest.mark.parametrize("kind", ["voc", "coco"])
def test_equal_reports_pass(reports, kind):
    runner = compare if kind == "voc" else compare_in
    p = runner(reports[kind], reports[f"{kind}_again" if kind == "voc" else kind])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK: no figure dropped" in p.stdout
    assert "REGRESSED" not in p.stdout
    assert p.stderr == ""


@pytest.mark.parametrize("kind", ["voc", "coco"])
def test_improvement_passes(reports, kind):
    p = compare_in(reports[f"{kind}_worse"], reports[kind])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "REGRESSED" not in p.stdout
    assert "OK" in p.stdout


def test_voc_regression_exits_1_and_names_the_figure(reports):
    p = compare(reports["voc"], reports["voc_worse"])
    assert p.returncode == 1, p.stdout + p.stderr
    assert "REGRESSED" in row(p.stdout, "mAP")
    assert "REGRESSION: 1 figure(s)" in p.stdout and p.stdout.rstrip().endswith("mAP")


def test_coco_regression_exits_1_and_names_the_figures(reports):
    p = compare_in(reports["coco"], reports["coco_worse"])
    assert p.returncode == 1, p.stdout + p.stderr
    for name in ("AP", "AP50", "AR100"):
        assert "REGRESSED" in row(p.stdout, name)
    assert "REGRESSION:" in p.stdout


def test_regression_within_max_drop_passes(reports):
    drop = load(reports["voc"])["mAP"] - load(reports["voc_worse"])["mAP"]
    assert drop > 0.005
    p = compare(reports["voc"], reports["voc_worse"], "--max-drop", f"{drop + 1e-4:.6f}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "REGRESSED" not in p.stdout
    p = compare_in(reports["voc"], reports["voc_worse"], "--max-drop", f"{drop - 1e-4:.6f}")
    assert p.returncode == 1, p.stdout + p.stderr
    p = compare_in(reports["voc"], reports["voc_worse"], "--max-drop", "0.005")
    assert p.returncode == 1


def test_metrics_selection_coco(reports):
    # AP50 dropped by ~0.05, AR1 by ~0.01
    p = compare(reports["coco"], reports["coco_worse"], "--metrics", "AP50", "--max-drop", "0.04")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "REGRESSED" in row(p.stdout, "AP50")
    figures = [ln.split()[0] for ln in p.stdout.splitlines()[2:] if ln.strip()
               and not ln.startswith(("OK", "REGRESSION"))]
    assert figures == ["AP50"]
    p = compare_in(reports["coco"], reports["coco_worse"], "--metrics", "AR1",
                   "--max-drop", "0.04")
    assert p.returncode == 0, p.stdout + p.stderr
    p = compare_in(reports["coco"], reports["coco_worse"], "--metrics", "AR1,AP50",
                   "--max-drop", "0.04")
    assert p.returncode == 1
    assert "REGRESSED" not in row(p.stdout, "AR1")
    assert "REGRESSED" in row(p.stdout, "AP50")


def test_per_class_names_the_class_voc(reports):
    # mAP drops by ~0.04 (within 0.1), cat AP by ~0.24 (beyond)
    p = compare_in(reports["voc"], reports["voc_worse"], "--max-drop", "0.1")
    assert p.returncode == 0, p.stdout + p.stderr
    p = compare(reports["voc"], reports["voc_worse"], "--max-drop", "0.1", "--per-class")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "REGRESSED" in row(p.stdout, "cat AP")
    assert "REGRESSED" not in row(p.stdout, "mAP")
    assert "REGRESSED" not in row(p.stdout, "dog AP")
    assert p.stdout.rstrip().endswith("cat AP")


def test_per_class_names_the_class_coco(reports):
    p = compare_in(reports["coco"], reports["coco_worse"], "--metrics", "AP50",
                   "--max-drop", "0.1", "--per-class")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "REGRESSED" in row(p.stdout, "person AP50")
    assert "REGRESSED" not in row(p.stdout, "AP50")
    assert "REGRESSED" not in row(p.stdout, "car AP50")


# --------------------------------------------------------------------------- exit 2
INCOMPARABLE = [
    ("voc", "coco", "protocol"),
    ("voc", "voc07", "metric"),
    ("voc", "voc_iou", "iou_threshold"),
    ("voc", "voc_compat", "compat"),
    ("voc", "voc_other_gt", "ground truth"),
    ("coco", "coco_iou", "params"),
    ("coco", "coco_max_dets", "params"),
    ("coco", "coco_areas", "params"),
    ("coco", "coco_other_gt", "ground truth"),
]


SUBPROCESS_PAIRS = {("voc", "coco"), ("coco", "coco_other_gt")}


@pytest.mark.parametrize("base,cand,what", INCOMPARABLE,
                         ids=[f"{b}-vs-{c}" for b, c, _ in INCOMPARABLE])
def test_incomparable_reports_exit_2(reports, base, cand, what):
    runner = compare if (base, cand) in SUBPROCESS_PAIRS else compare_in
    p = runner(reports[base], reports[cand], "--max-drop", "1")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "deteval: error:" in p.stderr
    assert "comparable" in p.stderr and what in p.stderr, p.stderr
    assert "REGRESS" not in p.stdout and "OK" not in p.stdout


@pytest.mark.parametrize("base,cand,what", INCOMPARABLE[:3] + INCOMPARABLE[-2:],
                         ids=[f"{b}-vs-{c}" for b, c, _ in INCOMPARABLE[:3] + INCOMPARABLE[-2:]])
def test_incomparable_reports_api(reports, base, cand, what):
    with pytest.raises(deteval.InputError, match=what):
        assert_no_regression(reports[base], reports[cand], max_drop=1)
    with pytest.raises(ValueError, match="comparable"):
        deteval.compare_reports(load(reports[base]), load(reports[cand]))


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "missing": tmp_path / "does_not_exist.json",
        "folder": tmp_path,
        "invalid_json": tmp_path / "invalid.json",
        "truncated": tmp_path / "truncated.json",
        "binary": tmp_path / "binary.json",
        "list": tmp_path / "list.json",
        "no_protocol": tmp_path / "no_protocol.json",
        "other_protocol": tmp_path / "other_protocol.json",
    }
    files["invalid_json"].write_text("{not json")
    files["truncated"].write_text('{"protocol": "voc", "mAP": 0.5')
    files["binary"].write_bytes(b"\xff\xfe\x00\x01")
    files["list"].write_text("[1, 2, 3]")
    files["no_protocol"].write_text('{"mAP": 0.5}')
    files["other_protocol"].write_text('{"protocol": "yolo", "mAP": 0.5}')
    return files


@pytest.mark.parametrize("which", ["missing", "folder", "invalid_json", "truncated", "binary",
                                   "list", "no_protocol", "other_protocol"])
@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_unreadable_or_not_a_report_exits_2(reports, bad_files, which, side):
    bad = bad_files[which]
    args = (bad, reports["voc"]) if side == "baseline" else (reports["voc"], bad)
    runner = compare if (which, side) in (("missing", "candidate"),
                                           ("invalid_json", "baseline")) else compare_in
    p = runner(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith("deteval: error:")
    assert str(bad) in p.stderr or bad.name in p.stderr, p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("payload", [
    {"protocol": "voc", "inputs": {"ground_truth_sha256": "sha256:x"}},
    {"protocol": "coco", "stats": [1], "inputs": {"ground_truth_sha256": "sha256:x"}},
], ids=["voc-without-mAP", "coco-stats-list"])
def test_malformed_report_exits_2(tmp_path, payload):
    path = tmp_path / "malformed.json"
    path.write_text(json.dumps(payload))
    p = compare_in(path, path)  # in-process: the crash propagates as KeyError/AttributeError
    assert p.returncode == 2, p.stderr


@pytest.mark.parametrize("kind,metrics,unknown", [
    ("coco", "AP,AP42", "AP42"),
    ("coco", "mAP", "mAP"),
    ("voc", "AP50", "AP50"),
])
def test_unknown_metric_name_exits_2(reports, kind, metrics, unknown):
    runner = compare if unknown == "AP42" else compare_in
    p = runner(reports[kind], reports[kind], "--metrics", metrics)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--metrics" in p.stderr and unknown in p.stderr, p.stderr


def test_negative_max_drop_exits_2(reports):
    p = compare_in(reports["voc"], reports["voc"], "--max-drop", "-0.1")
    assert p.returncode == 2
    assert "max_drop" in p.stderr


# --------------------------------------------------------------------------- Python API
def test_assert_no_regression_raises_with_the_table(reports):
    with pytest.raises(AssertionError) as info:
        assert_no_regression(reports["voc"], reports["voc_worse"], max_drop=0.005)
    msg = str(info.value)
    assert "baseline" in msg and "candidate" in msg and "delta" in msg
    assert "REGRESSED" in msg and "REGRESSION: 1 figure(s)" in msg and "mAP" in msg
    with pytest.raises(AssertionError, match=r"person AP50\s.*REGRESSED"):
        assert_no_regression(reports["coco"], reports["coco_worse"], max_drop=0.1,
                             metrics=["AP50"], per_class=True)


def test_assert_no_regression_returns_normally(reports):
    result = assert_no_regression(reports["voc"], reports["voc_again"])
    assert result.passed and [r.figure for r in result.rows] == ["mAP"]
    assert_no_regression(reports["voc_worse"], reports["voc"])  # improvement
    drop = load(reports["voc"])["mAP"] - load(reports["voc_worse"])["mAP"]
    assert_no_regression(reports["voc"], reports["voc_worse"], max_drop=drop + 1e-9)
    # AR1 dropped by less than 0.04
    assert_no_regression(reports["coco"], reports["coco_worse"], max_drop=0.04,
                         metrics=["AR1"])


def test_api_accepts_dicts_and_report_objects(reports):
    baseline = deteval.evaluate_voc(VOC_ROOT, VOC_RESULTS, imageset="test")  # a report object
    assert_no_regression(baseline, load(reports["voc"]))
    assert_no_regression(load(reports["voc"]), baseline)
    with pytest.raises(AssertionError, match="REGRESSED"):
        assert_no_regression(baseline, load(reports["voc_worse"]))
    # the CLI's figures and the comparison rows agree
    cmp = deteval.compare_reports(reports["coco"], reports["coco_worse"])
    base, worse = load(reports["coco"]), load(reports["coco_worse"])
    for r in cmp.rows:
        assert r.baseline == base["stats"][r.figure]
        assert r.candidate == worse["stats"][r.figure]
        assert r.regressed == (r.baseline - r.candidate > 0)
    assert not cmp.passed


def test_metric_report_compares_with_cli_report(reports):
    """A report from MeanAveragePrecision is comparable with the CLI's (same fingerprint)."""
    import numpy as np

    gt = json.loads(COCO_GT.read_text())
    results = json.loads(COCO_RESULTS.read_text())
    ids = [im["id"] for im in gt["images"]]
    tgt = {i: {"boxes": [], "labels": [], "iscrowd": [], "area": []} for i in ids}
    prd = {i: {"boxes": [], "scores": [], "labels": []} for i in ids}
    for a in gt["annotations"]:
        t = tgt[a["image_id"]]
        t["boxes"].append(a["bbox"])
        t["labels"].append(a["category_id"])
        t["iscrowd"].append(a["iscrowd"])
        t["area"].append(a["area"])
    for d in results:
        p = prd[d["image_id"]]
        p["boxes"].append(d["bbox"])
        p["scores"].append(d["score"])
        p["labels"].append(d["category_id"])
    fix = lambda d: {k: (np.reshape(v, (-1, 4)) if k == "boxes" else v)  # noqa: E731
                     for k, v in d.items()}
    m = deteval.MeanAveragePrecision(  # COCO boxes are [x, y, w, h]
        "coco", "xywh", class_names={c["id"]: c["name"] for c in gt["categories"]})
    m.update([fix(prd[i]) for i in ids], [fix(tgt[i]) for i in ids], image_ids=ids)
    report = m.compute()
    result = assert_no_regression(reports["coco"], report, per_class=True)
    assert all(r.delta == 0 for r in result.rows)
    with pytest.raises(AssertionError, match="REGRESSED"):
        assert_no_regression(report, reports["coco_worse"])
