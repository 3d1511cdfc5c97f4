"""An LVIS report page in headless Chromium (the helpers of tests/test_html_browser.py).

A real ``evaluate_lvis`` report at LVIS scale (1203 categories) with the curves the CLI adds:
no script or console error, nothing fetched, every class name in the DOM, 50 rows a page,
sorting by AP and by frequency, filtering by name and by frequency group, and a screenshot
(kept under ``DETEVAL_SCREENSHOTS`` when that is set).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lvis_oracle import generate_lvis_case  # noqa: E402
from test_html_browser import (CHROMIUM, VISIBLE_NAMES, assert_clean, browser,  # noqa: E402,F401
                               click_header, open_page, shots_dir)
from test_html_lvis import with_curves  # noqa: E402

from deteval.html import render_report  # noqa: E402
from deteval.lvis import evaluate_lvis  # noqa: E402

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the pipe driver needs Linux fds 3/4"),
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not found at "
                       "/usr/bin/chromium (apt-get install chromium; .ci/run does)"),
]


def set_input(browser, element_id, value, event="input"):
    browser.eval(f"(() => {{const f = document.getElementById({json.dumps(element_id)});"
                 f"f.value = {json.dumps(value)}; f.dispatchEvent(new Event('{event}')); }})()")


def test_lvis_page_in_chromium(browser, tmp_path):
    gt, res = generate_lvis_case(7, num_images=1500, num_cats=1203, results_per_image=(0, 60))
    report = with_curves(evaluate_lvis(gt, res))
    classes = report["classes"]
    names = [c["name"] for c in classes]
    freq = {c["name"]: c["frequency"] for c in classes}
    ap = {c["name"]: c["AP"] for c in classes}
    path = tmp_path / "lvis_report.html"
    path.write_text(render_report(report, generated_at="2026-01-01 00:00:00 UTC"))
    url = open_page(browser, path)
    assert_clean(browser, url)

    assert f"{report['stats']['AP']:.4f}" in browser.eval(
        "document.querySelector('.card.main .v').innerText")
    cards = browser.eval("Array.from(document.querySelectorAll('#headline .card'))"
                         ".map(c => c.dataset.figure)")
    assert cards == list(report["stats"])
    # every class is in the DOM; 50 shown
    assert browser.eval("Array.from(document.querySelectorAll('#classes tbody tr'))"
                        ".map(r => r.dataset.name)") == names
    assert browser.eval(VISIBLE_NAMES) == names[:50]
    assert browser.eval("document.querySelectorAll('#multiples figure').length") == 50

    # sort by AP: descending, undefined last
    click_header(browser, "AP")
    defined = sorted((n for n in names if ap[n] is not None), key=lambda n: -ap[n])
    assert [ap[n] for n in browser.eval(VISIBLE_NAMES)] == [ap[n] for n in defined[:50]]
    # sort by frequency: rare first
    click_header(browser, "frequency")
    first = browser.eval(VISIBLE_NAMES)
    assert {freq[n] for n in first} == {"r"}

    # filter by frequency group, then also by name
    set_input(browser, "classes-frequency", "c", "change")
    browser.eval("document.querySelector('[data-pager-for=classes] select').value = '0';"
                 "document.querySelector('[data-pager-for=classes] select')"
                 ".dispatchEvent(new Event('change'))")  # all rows on one page
    common = browser.eval(VISIBLE_NAMES)
    assert sorted(common) == sorted(n for n in names if freq[n] == "c") and common
    assert "filtered from 1203" in browser.eval(
        "document.querySelector('[data-pager-for=classes] .info').textContent")
    target = common[len(common) // 2]
    set_input(browser, "classes-filter", target)
    assert browser.eval(VISIBLE_NAMES) == [target]
    set_input(browser, "classes-frequency", "r", "change")
    assert browser.eval(VISIBLE_NAMES) == []  # a common class is not rare
    assert browser.eval("document.querySelector('[data-pager-for=classes] .info')"
                        ".textContent") == "no match"
    set_input(browser, "classes-frequency", "", "change")
    set_input(browser, "classes-filter", "")
    assert len(browser.eval(VISIBLE_NAMES)) == 1203
    browser.eval("document.querySelector('[data-pager-for=classes] select').value = '50';"
                 "document.querySelector('[data-pager-for=classes] select')"
                 ".dispatchEvent(new Event('change'))")
    assert len(browser.eval(VISIBLE_NAMES)) == 50

    for sec in ("evaluated", "headline", "overview", "classes-section", "curves", "downloads"):
        assert browser.eval(f"!!document.getElementById('{sec}')"), sec
    for sec in ("tide", "confusion", "images"):
        assert not browser.eval(f"!!document.getElementById('{sec}')"), sec
    assert_clean(browser, url)
    shot = shots_dir(tmp_path) / "lvis_report.png"
    browser.screenshot(shot)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
