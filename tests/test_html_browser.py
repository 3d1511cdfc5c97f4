"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` package).

Driven through the DevTools protocol over a pipe (tests/cdp_browser.py, standard library
only). Checks: no script error or console error, no request leaves the page, the headline
figure and every class name are in the rendered DOM, sorting and filtering work when driven
from here, pagination at LVIS scale, and a screenshot is written (kept under
``DETEVAL_SCREENSHOTS`` when that is set, for a person to look at).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp_browser import Browser, chromium_path  # noqa: E402
from html_fixtures import realistic_report  # noqa: E402

from deteval.compare import compare_reports  # noqa: E402
from deteval.html import render_comparison, render_report  # noqa: E402

CHROMIUM = chromium_path()
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the pipe driver needs Linux fds 3/4"),
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not found at "
                       "/usr/bin/chromium (apt-get install chromium; .ci/run does)"),
]


@pytest.fixture(scope="module")
def browser():
    b = Browser(CHROMIUM)
    try:
        yield b
    finally:
        b.close()


def shots_dir(tmp_path):
    d = os.environ.get("DETEVAL_SCREENSHOTS")
    if d:
        Path(d).mkdir(parents=True, exist_ok=True)
        return Path(d)
    return tmp_path


def open_page(browser, path):
    browser.events.clear()
    browser.open(path)
    return path.resolve().as_uri()


def assert_clean(browser, url):
    assert browser.errors() == []
    leaving = [u for u in browser.requests() if u != url and not u.startswith("data:")]
    assert leaving == [], f"requests left the page: {leaving}"


VISIBLE_NAMES = ("Array.from(document.querySelectorAll('#classes tbody tr'))"
                 ".filter(r => r.style.display !== 'none').map(r => r.dataset.name)")


def click_header(browser, col):
    browser.eval(f"document.querySelector('#classes th[data-col=\"{col}\"]').click()")


def test_report_page_renders_sorts_and_filters(browser, tmp_path):
    report = realistic_report(30, 400, seed=0)
    names = [c["name"] for c in report["classes"]]
    path = tmp_path / "report.html"
    path.write_text(render_report(report, generated_at="2026-01-01 00:00:00 UTC"))
    url = open_page(browser, path)
    assert_clean(browser, url)

    text = browser.eval("document.body.innerText")
    assert f"{report['stats']['AP']:.4f}" in browser.eval(
        "document.querySelector('.card.main .v').innerText")
    for n in names:
        assert n in text, n
    assert browser.eval(VISIBLE_NAMES) == names  # 30 rows fit one page, file order
    assert browser.eval("document.querySelectorAll('#multiples figure').length") == 30

    # sort by AP: descending first, undefined last; again: ascending
    click_header(browser, "AP")
    ap = {c["name"]: c["AP"] for c in report["classes"]}
    defined = sorted((n for n in names if ap[n] is not None), key=lambda n: -ap[n])
    got = browser.eval(VISIBLE_NAMES)
    assert [ap[n] for n in got[:len(defined)]] == [ap[n] for n in defined]
    assert browser.eval("document.querySelector('#classes th[data-col=\"AP\"]')"
                        ".getAttribute('aria-sort')") == "descending"
    click_header(browser, "AP")
    got = browser.eval(VISIBLE_NAMES)
    assert [ap[n] for n in got[:len(defined)]] == [ap[n] for n in reversed(defined)]
    # the small multiples follow the table's order
    assert browser.eval("Array.from(document.querySelectorAll('#multiples figcaption b'))"
                        ".map(b => b.textContent)") == got

    # filter by name
    browser.eval("(() => {const f = document.getElementById('classes-filter');"
                 "f.value = 'BI'; f.dispatchEvent(new Event('input')); })()")
    got = browser.eval(VISIBLE_NAMES)
    assert sorted(got) == sorted(n for n in names if "bi" in n) and got
    assert browser.eval("document.querySelectorAll('#multiples figure').length") == len(got)
    assert "filtered from 30" in browser.eval(
        "document.querySelector('[data-pager-for=classes] .info').textContent")
    browser.eval("(() => {const f = document.getElementById('classes-filter');"
                 "f.value = ''; f.dispatchEvent(new Event('input')); })()")
    assert len(browser.eval(VISIBLE_NAMES)) == 30

    # every section rendered
    for sec in ("evaluated", "headline", "classes-section", "curves", "tide", "confusion",
                "images", "downloads"):
        assert browser.eval(f"!!document.getElementById('{sec}')"), sec
    assert_clean(browser, url)

    shot = shots_dir(tmp_path) / "report.png"
    browser.screenshot(shot)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_lvis_scale_paginates(browser, tmp_path):
    report = realistic_report(1203, 1500, seed=3)
    names = [c["name"] for c in report["classes"]]
    path = tmp_path / "lvis.html"
    path.write_text(render_report(report))
    url = open_page(browser, path)
    assert_clean(browser, url)
    assert browser.eval(VISIBLE_NAMES) == names[:50]
    assert browser.eval("document.querySelectorAll('#multiples figure').length") == 50
    browser.eval("document.querySelector('[data-pager-for=classes] .next').click()")
    assert browser.eval(VISIBLE_NAMES) == names[50:100]
    target = names[1000]
    browser.eval("(() => {const f = document.getElementById('classes-filter');"
                 f"f.value = {json.dumps(target)}; f.dispatchEvent(new Event('input')); }})()")
    assert browser.eval(VISIBLE_NAMES) == [target]
    # every class is in the DOM (rows beyond the page are hidden, not absent)
    assert browser.eval("document.querySelectorAll('#classes tbody tr').length") == 1203
    assert_clean(browser, url)
    browser.screenshot(shots_dir(tmp_path) / "lvis.png")


def test_comparison_page(browser, tmp_path):
    base = realistic_report(12, 80, seed=5, diagnostics=False)
    cand = json.loads(json.dumps(base))
    for c in cand["classes"]:
        if c["name"] == "car":
            c["AP"] -= 0.05
    result = compare_reports(base, cand, max_drop=0.01, per_class=True)
    path = tmp_path / "diff.html"
    path.write_text(render_comparison(base, cand, result, names=("base.json", "cand.json")))
    url = open_page(browser, path)
    assert_clean(browser, url)
    assert "REGRESSION" in browser.eval("document.getElementById('verdict').innerText")
    assert browser.eval(VISIBLE_NAMES)[0] == "car"
    browser.eval("document.querySelector('#classes th[data-col=\"dAP\"]').click()")
    assert browser.eval(VISIBLE_NAMES)[-1] == "car"  # largest delta first: car (a drop) last
    browser.screenshot(shots_dir(tmp_path) / "compare.png")
