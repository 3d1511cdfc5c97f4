"""The HTML report page and `deteval plot` (issue 15), without a browser.

The page is checked as text (sections present exactly when their report key is, nothing
external, size bounds, downloads that round-trip the figures); the curves it draws are
checked against pycocotools; the CLI options end to end. tests/test_html_browser.py renders
the same pages in Chromium.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import re
import sys
from argparse import Namespace
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from deteval import evaluate_coco
from deteval.cli import _html_implies_diagnostics, main as deteval_main
from deteval.html import (coco_curves, render_comparison, render_report, report_markdown,
                          voc_curves)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from html_fixtures import realistic_report  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VOC_ROOT = FIXTURES / "voc" / "VOC2007"
VOC_RESULTS = FIXTURES / "voc" / "results"
COCO_GT = FIXTURES / "coco" / "instances_val.json"
COCO_RESULTS = FIXTURES / "coco" / "results.json"
MiB = 1 << 20


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = deteval_main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def full():
    return realistic_report(30, 400, seed=0)


@pytest.fixture(scope="module")
def full_page(full):
    return render_report(full, generated_at="2026-01-01 00:00:00 UTC")


def data_urls(page):
    """{file name: decoded text} of the page's download links."""
    out = {}
    for name, b64 in re.findall(r'<a download="([^"]+)" href="data:[^;]+;charset=utf-8;'
                                r'base64,([A-Za-z0-9+/=]+)"', page):
        out[name] = base64.b64decode(b64).decode("utf-8")
    return out


# ------------------------------------------------------------------------ curves

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coco_curves_equal_pycocotools_precision(seed):
    pytest.importorskip("pycocotools")
    from coco_gen import generate_case, pycocotools_eval
    case = generate_case(seed)
    report = evaluate_coco(case.gt, case.results)
    d = report.to_dict()
    names = [c["name"] for c in d["classes"]]
    curves = coco_curves(report.precision, d["params"]["iou_thresholds"], names)
    E = pycocotools_eval(case.gt, case.results)
    P = E.eval["precision"]  # (T, R, K, A, M); categories in id order as ours
    assert curves["recall"] == [float(r) for r in E.params.recThrs]
    for t, key in ((0, "0.5"), (5, "0.75")):
        defined = []
        for k, name in enumerate(names):
            ref = P[t, :, k, 0, 2]
            got = curves["iou"][key]["per_class"][name]
            if (ref == -1).all():
                assert got is None, name
            else:
                assert not (ref == -1).any()
                assert np.array_equal(np.asarray(got), ref), (key, name)
                defined.append(ref)
        mean = curves["iou"][key]["mean"]
        if defined:
            np.testing.assert_allclose(mean, np.mean(defined, axis=0), rtol=0, atol=1e-12)
            stat = d["stats"]["AP50" if key == "0.5" else "AP75"]
            assert abs(float(np.mean(mean)) - stat) < 1e-12
        else:
            assert mean is None


def test_coco_curves_skip_thresholds_not_evaluated():
    prec = np.full((1, 101, 2, 1, 1), 0.5)
    prec[:, :, 1] = np.nan
    c = coco_curves(prec, [0.5], ["a", "b"])
    assert list(c["iou"]) == ["0.5"]
    assert c["iou"]["0.5"]["per_class"]["b"] is None
    assert c["iou"]["0.5"]["mean"] == [0.5] * 101
    assert coco_curves(prec, [0.6], ["a", "b"]) is None


def _slow_voc_page_curves(rows, npos, rec_thr):
    """Reference for one class: rows = (score, file position, outcome 1/0/-1)."""
    rows = sorted(rows, key=lambda r: (-r[0], r[1]))
    kept = [r for r in rows if r[2] >= 0]
    tp = fp = 0
    rec, prec, cuts = [], [], []
    for i, (s, _, o) in enumerate(kept):
        tp += o == 1
        fp += o == 0
        rec.append(tp / npos)
        prec.append(tp / (tp + fp))
        if i + 1 == len(kept) or kept[i + 1][0] != s:
            cuts.append((2 * tp / (tp + fp + npos), s, tp, fp))
    env = [max(prec[i:]) for i in range(len(prec))]
    q = []
    for r in rec_thr:
        idx = next((i for i, x in enumerate(rec) if x >= r), None)
        q.append(0.0 if idx is None else env[idx])
    best = None
    for f1, s, tp, fp in cuts:  # highest score first: strict > keeps the highest on ties
        if best is None or f1 > best[0]:
            best = (f1, s, tp, fp)
    return q, best


@pytest.mark.parametrize("seed", range(4))
def test_voc_curves_equal_a_slow_reference(seed):
    from deteval.match import VocMatches
    rng = np.random.default_rng(seed)
    n, K = 200, 3
    cls = rng.integers(0, K, n)
    scores = np.round(rng.random(n), 1)  # many ties
    outcome = rng.choice([1, 0, 0, -1], n).astype(np.int8)
    npos = np.array([40, 25, 0])
    m = VocMatches(class_idx=cls, scores=scores, tie_key=np.arange(n), outcome=outcome,
                   num_gt=npos, num_difficult=np.zeros(K, np.int64))
    got = voc_curves(m, ["a", "b", "c"], 0.5)
    rec_thr = np.linspace(0, 1, 101)
    for k, name in enumerate("abc"):
        if npos[k] == 0:
            assert got["iou"]["0.5"]["per_class"][name] is None
            assert got["best_f1"][name] is None
            continue
        rows = [(scores[i], i, outcome[i]) for i in range(n) if cls[i] == k]
        q, best = _slow_voc_page_curves(rows, npos[k], rec_thr)
        assert got["iou"]["0.5"]["per_class"][name] == q
        b = got["best_f1"][name]
        assert (b["f1"], b["score"]) == (best[0], best[1])
        assert b["precision"] == best[2] / (best[2] + best[3])
        assert b["recall"] == best[2] / npos[k]


# -------------------------------------------------------------------------- page

SECTIONS = {"curves": 'id="curves"', "tide": 'id="tide"', "confusion": 'id="confusion"',
            "images": 'id="images"'}


def test_every_section_appears_only_with_its_key(full):
    page = render_report(full)
    for key, marker in SECTIONS.items():
        assert marker in page, key
        without = {k: v for k, v in full.items() if k != key}
        assert marker not in render_report(without), key
    assert "bootstrap interval" in page
    plain = {k: v for k, v in full.items() if k not in SECTIONS and k != "uncertainty"}
    page = re.sub(r"<script>.*?</script>", "", render_report(plain), flags=re.S)
    assert "bootstrap" not in page and "best F1" not in page
    assert 'id="classes"' in page and 'id="headline"' in page


def test_page_is_self_contained(full_page):
    # the only URL is the SVG namespace (an identifier, never fetched)
    urls = set(re.findall(r"(?:https?|ftp)://[^\s\"'<>)]+", full_page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(?:img|iframe|embed|object|audio|video)\b", full_page)
    assert not re.search(r"<script[^>]*\bsrc=", full_page)
    assert not re.search(r"<link[^>]*stylesheet", full_page)
    assert "@import" not in full_page and "url(" not in full_page and "@font-face" not in full_page
    assert "default-src 'none'" in full_page  # CSP: the browser refuses any fetch


def test_page_states_what_was_evaluated(full, full_page):
    for text in ("runs/exp42/detections_val.json", "data/instances_val.json",
                 full["inputs"]["ground_truth_sha256"], "COCO (bbox", "0.50:0.95",
                 "2026-01-01 00:00:00 UTC", f"deteval</dt><dd>{full['deteval_version']}",
                 "image bootstrap, 1000 samples"):
        assert text in full_page, text
    assert f'data-figure="AP"><div class="k">AP</div><div class="v">' \
           f'{full["stats"]["AP"]:.4f}</div>' in full_page


def test_size_at_30_classes_and_400_images(full_page):
    assert len(full_page.encode()) <= 4 * MiB
    for name in [c["name"] for c in realistic_report(30, 400)["classes"]]:
        assert f'data-name="{name}"' in full_page


def test_lvis_scale_page_stays_small_and_collapses():
    d = realistic_report(1203, 1500, seed=3)
    page = render_report(d)
    assert len(page.encode()) <= 6 * MiB
    # the heatmap keeps the 30 most confused classes and background
    heat = page[page.index('class="chart heat"'):]
    heat = heat[:heat.index("</svg>")]
    assert heat.count('class="cell diag"') == 31
    assert 'data-page-size="50"' in page  # the script shows 50 rows, not 1203
    assert "30 best and the 30 worst of" in page
    for c in d["classes"][::97]:
        assert f'data-name="{c["name"]}"' in page


def test_downloads_round_trip_the_figures(full, full_page):
    files = data_urls(full_page)
    assert set(files) == {"summary.csv", "classes.csv", "images.csv", "confusion.csv",
                          "tide.csv", "report.md"}
    rows = list(csv.DictReader(io.StringIO(files["classes.csv"])))
    assert [r["name"] for r in rows] == [c["name"] for c in full["classes"]]
    for r, c in zip(rows, full["classes"]):
        for k in ("AP", "AP50", "AR100"):
            assert (r[k] == "") == (c[k] is None)
            if c[k] is not None:
                assert float(r[k]) == c[k]  # exact: shortest round-trip text
        b = full["curves"]["best_f1"][c["name"]]
        assert float(r["best_f1"]) == b["f1"]
    summary = {r["figure"]: r for r in csv.DictReader(io.StringIO(files["summary.csv"]))}
    assert float(summary["AP"]["value"]) == full["stats"]["AP"]
    assert float(summary["AP"]["lo"]) == full["uncertainty"]["intervals"]["AP"][0]
    images = list(csv.DictReader(io.StringIO(files["images.csv"])))
    assert len(images) == 400 and int(images[7]["fp"]) == full["images"][7]["fp"]
    conf = list(csv.DictReader(io.StringIO(files["confusion.csv"])))
    m = np.asarray(full["confusion"]["matrix"])
    assert sum(int(r["count"]) for r in conf) == m.sum()
    assert files["report.md"] == report_markdown(full)
    for c in full["classes"]:
        assert f"| {c['name']} |" in files["report.md"]


def test_worst_images_are_most_fp_plus_fn_ties_by_id(full, full_page):
    sec = full_page[full_page.index('id="images"'):]
    sec = sec[:sec.index("</section>")]
    ids = [int(x) for x in re.findall(r"<tr><td>(\d+)</td>", sec)]
    want = sorted(full["images"], key=lambda im: (-(im["fp"] + im["fn"]), im["image_id"]))
    assert ids == [im["image_id"] for im in want[:20]]


def test_names_are_escaped():
    d = realistic_report(3, 20, diagnostics=False)
    d["classes"][0]["name"] = '<script>alert("x")</script>'
    page = render_report(d)
    assert '<script>alert("x")</script>' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


# --------------------------------------------------------------------------- CLI

def test_cli_coco_html(tmp_path):
    page, js = tmp_path / "r.html", tmp_path / "r.json"
    code, out, err = cli("coco", COCO_GT, COCO_RESULTS, "--html", page, "--json", js)
    assert code == 0, err
    text = page.read_text()
    report = json.loads(js.read_text())
    # --html implies the diagnostics the page shows, so the JSON report carries them too
    assert {"curves", "confusion", "images"} <= set(report)
    assert 'id="curves"' in text and "curves-data" in text
    for c in report["classes"]:
        assert f'data-name="{c["name"]}"' in text
    assert f'{report["stats"]["AP"]:.4f}' in text
    assert "page generated" in text


def test_cli_voc_html(tmp_path):
    page = tmp_path / "voc.html"
    code, out, err = cli("voc", VOC_ROOT, VOC_RESULTS, "--html", page)
    assert code == 0, err
    code2, out2, _ = cli("voc", VOC_ROOT, VOC_RESULTS)
    # the plain tables are unchanged; the diagnostics --html implies are printed after them
    assert out.startswith(out2.rstrip("\n")) and "Confusion matrix" in out[len(out2):]
    text = page.read_text()
    assert 'id="curves"' in text and "PASCAL VOC" in text
    assert 'id="tide"' not in text


@pytest.mark.parametrize("bad", ["no/r.html", "."])
def test_cli_html_bad_path_exits_2_and_writes_nothing(tmp_path, bad):
    js = tmp_path / "r.json"
    code, out, err = cli("coco", COCO_GT, COCO_RESULTS, "--json", js, "--html", tmp_path / bad)
    assert code == 2 and "--html" in err and "Traceback" not in err
    assert not js.exists() and not (tmp_path / "no").exists()
    assert out == ""


def test_cli_html_to_stdout_moves_the_tables_to_stderr(tmp_path):
    code, out, err = cli("voc", VOC_ROOT, VOC_RESULTS, "--html", "-")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert "mAP" in err
    code, out, err = cli("voc", VOC_ROOT, VOC_RESULTS, "--html", "-", "--json", "-")
    assert code == 2 and "--json" in err and out == ""


def test_cli_compare_voc_html(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("voc", VOC_ROOT, VOC_RESULTS, "--json", a)[0] == 0
    rep = json.loads(a.read_text())
    worst = rep["classes"][2]["name"]
    rep["classes"][2]["ap"] -= 0.2
    rep["mAP"] -= 0.2 / len(rep["classes"])
    b.write_text(json.dumps(rep))
    page = tmp_path / "d.html"
    code, out, err = cli("compare", a, b, "--per-class", "--max-drop", "0.01", "--html", page)
    assert code == 1, err
    text = page.read_text()
    body = text[text.index('id="classes"'):]
    assert re.findall(r'<tr data-name="([^"]+)"', body)[0] == worst
    assert f"{worst} AP" in text[:text.index('id="classes"')]  # named in the verdict


def test_html_implies_the_diagnostics_the_command_has():
    a = Namespace(command="coco", html="p.html", iou_type="bbox", tide=False, curves=False)
    _html_implies_diagnostics(a)
    assert a.tide is True and a.curves is True
    assert not hasattr(a, "per_image")  # options the command lacks are not invented
    b = Namespace(command="coco", html="p.html", iou_type="segm", tide=False)
    _html_implies_diagnostics(b)
    assert b.tide is False  # diagnostics are bbox only
    c = Namespace(command="voc", html=None, confusion=False)
    _html_implies_diagnostics(c)
    assert c.confusion is False
    d = Namespace(command="voc", html="p.html", confusion=False, tide=False)
    _html_implies_diagnostics(d)
    assert d.confusion is True and d.tide is False


# ----------------------------------------------------------------------- compare

@pytest.fixture(scope="module")
def two_reports():
    base = realistic_report(12, 80, seed=5, diagnostics=False)
    cand = json.loads(json.dumps(base))
    drops = {"car": -0.05, "bus": -0.002, "dog": +0.03}
    for c in cand["classes"]:
        if c["name"] in drops and c["AP"] is not None:
            c["AP"] = c["AP"] + drops[c["name"]]
    cand["stats"]["AP"] -= 0.004
    return base, cand


def test_compare_page_regressions_first_with_verdict(two_reports, tmp_path):
    from deteval.compare import compare_reports
    base, cand = two_reports
    result = compare_reports(base, cand, max_drop=0.01)
    page = render_comparison(base, cand, result, names=("a.json", "b.json"))
    assert 'class="verdict pass"' in page  # AP dropped 0.004 <= 0.01
    body = page[page.index('id="classes"'):]
    names = re.findall(r'<tr data-name="([^"]+)"', body)
    assert names[0] == "car" and names[1] == "bus"
    assert body.count('class="regressed"') == 1  # car only: bus dropped 0.002 <= 0.01
    strict = compare_reports(base, cand, max_drop=0.0)
    page = render_comparison(base, cand, strict)
    assert 'class="verdict fail"' in page and "REGRESSION" in page


def test_cli_compare_html(tmp_path, two_reports):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    code, _, err = cli("coco", COCO_GT, COCO_RESULTS, "--json", a)
    assert code == 0, err
    rep = json.loads(a.read_text())
    rep["stats"]["AP"] -= 0.1
    b.write_text(json.dumps(rep))
    code, out, err = cli("compare", a, b, "--html", tmp_path / "d.html")
    assert code == 1 and "REGRESSION" in out
    page = (tmp_path / "d.html").read_text()
    assert 'class="verdict fail"' in page and "a.json" in page and "b.json" in page


# -------------------------------------------------------------------------- plot

@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_plot_writes_every_figure(tmp_path, full, fmt):
    pytest.importorskip("matplotlib")
    src = tmp_path / "r.json"
    # every section; the full 30 classes once (drawing them is most of the time)
    src.write_text(json.dumps(full if fmt == "png" else realistic_report(6, 60, seed=2)))
    out = tmp_path / "figs"
    code, stdout, err = cli("plot", src, "--out", out, "--format", fmt)
    assert code == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{n}.{fmt}" for n in ("pr_mean", "pr_per_class_01",
                                                   "ap_per_class", "figures", "tide",
                                                   "confusion"))
    assert sorted(Path(p).name for p in stdout.split()) == names
    assert all(Path(p).parent == out for p in stdout.split())
    magic = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt]
    for p in out.iterdir():
        assert p.read_bytes().startswith(magic)
    if fmt == "svg":
        text = (out / "pr_mean.svg").read_text()
        # labelled axes and a legend naming both IoUs (text kept as paths: look for ids)
        assert "recall" in text or "<!-- recall -->" in text
        assert "IoU 0.5" in text and "IoU 0.75" in text


def test_plot_pages_the_per_class_curves(tmp_path):
    pytest.importorskip("matplotlib")
    from deteval.plot import write_figures
    d = realistic_report(9, 40, seed=1, diagnostics=False)
    written = write_figures(d, str(tmp_path), "svg", per_page=4)
    assert [Path(p).name for p in written if "per_class_" in Path(p).name] == [
        "pr_per_class_01.svg", "pr_per_class_02.svg", "pr_per_class_03.svg"]
    names = [c["name"] for c in d["classes"]]
    last = (tmp_path / "pr_per_class_03.svg").read_text()
    assert f"<!-- {names[8]} -->" in last and f"<!-- {names[0]} -->" not in last


def test_plot_without_matplotlib_exits_2_naming_the_extra(tmp_path, full, monkeypatch):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(full))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = cli("plot", src, "--out", tmp_path / "figs")
    assert code == 2 and "deteval[plot]" in err and "Traceback" not in err
    assert not (tmp_path / "figs").exists()


def test_plot_bad_out_and_format(tmp_path, full):
    pytest.importorskip("matplotlib")
    src = tmp_path / "r.json"
    src.write_text(json.dumps(full))
    code, _, err = cli("plot", src, "--out", tmp_path / "a" / "b")
    assert code == 2 and "--out" in err
    (tmp_path / "file").write_text("x")
    code, _, err = cli("plot", src, "--out", tmp_path / "file")
    assert code == 2 and "--out" in err
    with pytest.raises(SystemExit) as e:
        cli("plot", src, "--out", tmp_path, "--format", "jpg")
    assert e.value.code == 2


@pytest.mark.parametrize("report", [
    {"protocol": "coco"},
    {"protocol": "voc", "classes": [], "mAP": None},
    {"protocol": "coco", "stats": {"AP": None}, "classes": [{"id": 1, "name": "a", "AP": None}],
     "curves": {"recall": [0.0, 1.0], "iou": {"0.5": {"per_class": {"a": None}, "mean": None}},
                "best_f1": {"a": None}},
     "confusion": {"classes": ["a", "background"], "matrix": [[0, 0], [0, 0]]},
     "images": [], "tide": {"main": {}, "special": {}, "counts": {}}},
])
def test_degenerate_reports_render(report):
    page = render_report(report)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert 'id="headline"' in page


def test_per_image_tide_counts_are_columns(full):
    d = dict(full)
    d["images"] = [dict(im, tide={"Cls": im["image_id"] % 3, "Miss": 1}) for im in full["images"]]
    page = render_report(d)
    sec = page[page.index('id="images"'):]
    assert "<th>tide Cls</th>" in sec and "<th>tide Miss</th>" in sec
    rows = list(csv.DictReader(io.StringIO(data_urls(page)["images.csv"])))
    assert rows[4]["tide_Cls"] == str(d["images"][4]["tide"]["Cls"])
