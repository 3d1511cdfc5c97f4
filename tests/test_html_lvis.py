"""The HTML page and `deteval plot` on LVIS reports (``protocol: "lvis"``), without a browser.

The reports are real: ``evaluate_lvis`` on generated LVIS-like data (tests/lvis_oracle.py),
small and at LVIS scale (1203 categories). tests/test_html_lvis_browser.py renders the page
in Chromium.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main as deteval_main
from deteval.compare import compare_reports
from deteval.html import coco_curves, render_comparison, render_report, report_markdown
from deteval.lvis import evaluate_lvis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lvis_oracle import generate_lvis_case  # noqa: E402

MiB = 1 << 20
STATS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", "AR300", "ARs",
         "ARm", "ARl"]
ABSENT = ('id="tide"', 'id="confusion"', 'id="images"')  # no data for them in an LVIS report


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = deteval_main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def data_urls(page):
    out = {}
    for name, b64 in re.findall(r'<a download="([^"]+)" href="data:[^;]+;charset=utf-8;'
                                r'base64,([A-Za-z0-9+/=]+)"', page):
        out[name] = base64.b64decode(b64).decode("utf-8")
    return out


def with_curves(report):
    """The report dict plus the ``curves`` the CLI adds to the page (area all)."""
    d = report.to_dict()
    d["curves"] = coco_curves(report.precision, d["params"]["iou_thresholds"],
                              [c["name"] for c in d["classes"]])
    return d


@pytest.fixture(scope="module")
def small():
    gt, res = generate_lvis_case(3, num_images=40, num_cats=60)
    return evaluate_lvis(gt, res)


@pytest.fixture(scope="module")
def lvis_scale():
    gt, res = generate_lvis_case(7, num_images=1500, num_cats=1203, results_per_image=(0, 60))
    return evaluate_lvis(gt, res)


def section(page, anchor):
    s = page[page.index(f'id="{anchor}"'):]
    return s[:s.index("</section>")]


# -------------------------------------------------------------------------- page

def test_lvis_page_sections_meta_and_cards(small):
    d = small.to_dict()
    page = render_report(d, generated_at="2026-01-01 00:00:00 UTC")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for anchor in ("evaluated", "headline", "overview", "classes-section", "downloads"):
        assert f'id="{anchor}"' in page, anchor
    for marker in ABSENT + ('id="curves"',):
        assert marker not in page, marker
    meta = section(page, "evaluated")
    assert "LVIS federated (bbox, lvis-api 0.5.3 LVISEval semantics)" in meta
    assert "300 per image" in meta and "0.50:0.95 (10 thresholds)" in meta
    groups = {f: sum(c["frequency"] == f for c in d["classes"]) for f in "rcf"}
    with_gt = {f: sum(c["frequency"] == f and c["AP"] is not None for c in d["classes"])
               for f in "rcf"}
    for f, name in (("r", "rare"), ("c", "common"), ("f", "frequent")):
        assert f"{name} {groups[f]} classes ({with_gt[f]} with ground truth)" in meta
    assert d["inputs"]["ground_truth_sha256"] in meta
    assert f"results evaluated (federated filter)</dt><dd><code>" \
           f"{d['inputs']['num_results_evaluated']:,}" in meta
    for note in d.get("notes", []):
        assert note in meta
    # a card for every figure, in the report's order, undefined ones as a dash
    cards = re.findall(r'data-figure="([^"]+)"><div class="k">[^<]+</div><div class="v">'
                       r'([^<]+)</div>', page)
    assert [k for k, _ in cards] == STATS == list(d["stats"])
    for k, v in cards:
        want = d["stats"][k]
        assert v == ("–" if want is None else f"{want:.4f}"), k
    assert 'class="card main" data-figure="AP"' in page
    assert "APr, APc, APf: AP over the rare" in page


def test_lvis_class_table_has_frequency_and_every_class(small):
    d = small.to_dict()
    page = render_report(d)
    table = page[page.index('<table class="dt" id="classes"'):]
    table = table[:table.index("</table>")]
    heads = re.findall(r'data-col="([^"]+)"', table)
    assert heads == ["frequency", "AP", "AP50", "AP75", "APs", "APm", "APl", "AR300",
                     "num_gt", "num_results"]
    rows = re.findall(r'<tr data-name="([^"]+)" data-frequency="([rcf])"', table)
    assert rows == [(c["name"], c["frequency"]) for c in d["classes"]]
    # the frequency cell sorts r < c < f and reads as a word; counts are integers
    c0 = d["classes"][0]
    row = table[table.index(f'<tr data-name="{c0["name"]}"'):]
    row = row[:row.index("</tr>")]
    word = {"r": "rare", "c": "common", "f": "frequent"}[c0["frequency"]]
    assert f'<td data-v="{"rcf".index(c0["frequency"])}" class="name">{word}</td>' in row
    assert f'<td data-v="{float(c0["num_gt"])!r}">{c0["num_gt"]:,}</td>' in row
    # the frequency filter offers each group with its count
    facet = page[page.index('id="classes-frequency"'):]
    facet = facet[:facet.index("</select>")]
    for f, name in (("r", "rare"), ("c", "common"), ("f", "frequent")):
        n = sum(c["frequency"] == f for c in d["classes"])
        assert f'<option value="{f}">{name} ({n})</option>' in facet


def test_lvis_ap_chart_colours_by_frequency(small):
    d = small.to_dict()
    ov = section(render_report(d), "overview")
    best = max((c for c in d["classes"] if c["AP"] is not None), key=lambda c: c["AP"])
    colour = {"r": "#D55E00", "c": "#E69F00", "f": "#0072B2"}[best["frequency"]]
    word = {"r": "rare", "c": "common", "f": "frequent"}[best["frequency"]]
    assert f'fill="{colour}"><title>{best["name"]}: {best["AP"]:.3f} ({word})</title>' in ov
    assert "AP by class" in ov and "rare" in ov and "frequent" in ov


def test_lvis_downloads_round_trip(small):
    d = small.to_dict()
    files = data_urls(render_report(d))
    assert set(files) == {"summary.csv", "classes.csv", "report.md"}
    rows = list(csv.DictReader(io.StringIO(files["classes.csv"])))
    assert [r["name"] for r in rows] == [c["name"] for c in d["classes"]]
    for r, c in zip(rows, d["classes"]):
        assert r["frequency"] == c["frequency"] and int(r["num_gt"]) == c["num_gt"]
        for k in ("AP", "AR300"):
            assert (r[k] == "") == (c[k] is None)
            if c[k] is not None:
                assert float(r[k]) == c[k]
    summary = {r["figure"]: r["value"] for r in csv.DictReader(io.StringIO(files["summary.csv"]))}
    assert list(summary) == STATS
    assert files["report.md"] == report_markdown(d)
    c0 = d["classes"][0]
    assert f"| {c0['name']} | {c0['frequency']} |" in files["report.md"]


def test_lvis_curves_from_the_precision_array(small):
    d = with_curves(small)
    for iou, stat in (("0.5", "AP50"), ("0.75", "AP75")):
        mean = d["curves"]["iou"][iou]["mean"]
        assert abs(float(np.mean(mean)) - d["stats"][stat]) < 1e-12
        for c in d["classes"]:
            curve = d["curves"]["iou"][iou]["per_class"][c["name"]]
            assert (curve is None) == (c[stat] is None)
            if curve is not None:
                assert abs(float(np.mean(curve)) - c[stat]) < 1e-12
    page = render_report(d)
    assert 'id="curves"' in page and "max 300 results per image" in page


def test_lvis_fixed_ap_page():
    gt, res = generate_lvis_case(4, num_images=20, num_cats=30)
    d = evaluate_lvis(gt, res, fixed=True, max_dets_per_class=50).to_dict()
    page = render_report(d)
    meta = section(page, "evaluated")
    assert "LVIS Fixed AP" in meta and "no per-image cap; at most 50 per class" in meta
    assert 'data-figure="AR"' in page and 'data-figure="AR300"' not in page
    assert 'data-col="AR"' in page


def test_lvis_scale_page_size_and_every_class(lvis_scale):
    d = lvis_scale.to_dict()
    assert len(d["classes"]) == 1203
    for report in (d, with_curves(lvis_scale)):
        page = render_report(report)
        assert len(page.encode()) < 4 * MiB
        for c in d["classes"]:
            assert f'<tr data-name="{c["name"]}" data-frequency="{c["frequency"]}"' in page
        assert 'data-page-size="50"' in page  # the script shows 50 rows, not 1203
        assert "30 best and the 30 worst of" in page


def test_lvis_comparison_page(small, tmp_path):
    a = small.to_dict()
    b = json.loads(json.dumps(a))
    b["stats"]["APr"] -= 0.05
    result = compare_reports(a, b, max_drop=0.01)
    page = render_comparison(a, b, result, names=("a.json", "b.json"))
    assert 'class="verdict fail"' in page and "APr" in page
    assert "LVIS federated" in page


# --------------------------------------------------------------------------- CLI

@pytest.fixture(scope="module")
def lvis_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("lvis")
    gt, res = generate_lvis_case(5, num_images=30, num_cats=40)
    g, r = d / "gt.json", d / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(res))
    return g, r


def test_cli_lvis_html(tmp_path, lvis_files):
    g, r = lvis_files
    page, js, plain = tmp_path / "r.html", tmp_path / "r.json", tmp_path / "plain.json"
    code, out, err = cli("lvis", g, r, "--html", page, "--json", js)
    assert code == 0, err
    code2, out2, err2 = cli("lvis", g, r, "--json", plain)
    assert code2 == 0, err2
    assert js.read_text() == plain.read_text()  # --html adds nothing to the JSON report
    assert out == out2  # nor to the tables
    report = json.loads(js.read_text())
    text = page.read_text()
    assert "page generated" in text and "LVIS federated" in text
    assert 'id="curves"' in text and "curves-data" in text  # drawn from the report's arrays
    for c in report["classes"]:
        assert f'data-name="{c["name"]}" data-frequency="{c["frequency"]}"' in text
    assert f'{report["stats"]["AP"]:.4f}' in text
    code, out, err = cli("lvis", g, r, "--fixed", "--html", tmp_path / "f.html")
    assert code == 0, err
    assert "LVIS Fixed AP" in (tmp_path / "f.html").read_text()


@pytest.mark.parametrize("bad", ["no/r.html", "."])
def test_cli_lvis_html_bad_path_exits_2_and_writes_nothing(tmp_path, lvis_files, bad):
    g, r = lvis_files
    js = tmp_path / "r.json"
    code, out, err = cli("lvis", g, r, "--json", js, "--html", tmp_path / bad)
    assert code == 2 and "--html" in err and "Traceback" not in err
    assert not js.exists() and not (tmp_path / "no").exists()
    assert out == ""


def test_cli_lvis_html_to_stdout(lvis_files):
    g, r = lvis_files
    code, out, err = cli("lvis", g, r, "--html", "-")
    assert code == 0, err
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert "APr" in err  # the tables moved to standard error
    code, out, err = cli("lvis", g, r, "--html", "-", "--json", "-")
    assert code == 2 and out == ""


# -------------------------------------------------------------------------- plot

def test_plot_lvis_report(tmp_path, small):
    pytest.importorskip("matplotlib")
    src = tmp_path / "lvis.json"
    src.write_text(json.dumps(small.to_dict()))
    out = tmp_path / "figs"
    code, stdout, err = cli("plot", src, "--out", out, "--format", "svg")
    assert code == 0, err
    # no curves, intervals, TIDE or confusion in an LVIS report: AP by class only
    assert sorted(p.name for p in out.iterdir()) == ["ap_per_class.svg"]
    svg = (out / "ap_per_class.svg").read_text()
    for group in ("rare", "common", "frequent"):  # one hatched series per frequency group
        assert f"<!-- {group} -->" in svg, group


def test_plot_lvis_report_with_intervals(tmp_path, small):
    pytest.importorskip("matplotlib")
    from deteval.plot import write_figures
    d = small.to_dict()
    d["uncertainty"] = {"method": "image bootstrap", "samples": 100, "seed": 0,
                        "confidence": 0.95,
                        "intervals": {k: [v - 0.01, v + 0.01] for k, v in d["stats"].items()
                                      if v is not None},
                        "per_class_intervals": {c["name"]: {"AP": [max(c["AP"] - 0.05, 0),
                                                                   min(c["AP"] + 0.05, 1)]}
                                                for c in d["classes"] if c["AP"] is not None}}
    written = write_figures(d, str(tmp_path), "svg")
    assert sorted(Path(p).name for p in written) == ["ap_per_class.svg", "figures.svg"]
    svg = (tmp_path / "figures.svg").read_text()
    assert "APr" in svg and "AR300" in svg
