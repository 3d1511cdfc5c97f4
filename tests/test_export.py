"""--csv DIR and --markdown: the JSON figures, round-tripped.

Every CSV cell reads back as the JSON report's value (floats as the same doubles, null as
an empty cell); every Markdown table cell is the JSON value as the printed table shows it;
nothing is written when the run fails.
"""
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from coco_gen import generate_case

REPO = Path(__file__).resolve().parents[1]
VOC = REPO / "fixtures" / "voc"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def cell(text):
    """A CSV cell back to a JSON value: empty -> None, numbers -> int/float, else str."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and float(a) == float(b)
    return a == b


@pytest.fixture()
def coco_run(tmp_path):
    case = generate_case(9)
    gt = dict(case.gt)
    # a class name with a comma and a quote: CSV must quote it
    gt["categories"] = [dict(c, name=c["name"] + ', "x"') if i == 0 else c
                        for i, c in enumerate(gt["categories"])]
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(gt))
    r.write_text(json.dumps(case.results))
    out, folder = tmp_path / "o.json", tmp_path / "csv"
    proc = run_cli("coco", g, r, "--confusion", "--curves", "--per-image", "--json", out,
                   "--csv", folder)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), folder, (g, r)


def test_csv_round_trips_the_json(coco_run):
    rep, folder, _ = coco_run
    assert sorted(p.name for p in folder.iterdir()) == ["classes.csv", "confusion.csv",
                                                        "curves.csv", "images.csv",
                                                        "summary.csv"]
    head, rows = read_csv(folder / "summary.csv")
    assert len(rows) == 1
    values = dict(zip(head, map(cell, rows[0])))
    for k, v in rep["stats"].items():
        assert same(values[k], v) or (v is None and values[k] is None), k
    assert values["num_images"] == rep["inputs"]["num_images"]

    head, rows = read_csv(folder / "classes.csv")
    assert len(rows) == len(rep["classes"])
    for row, c in zip(rows, rep["classes"]):
        got = dict(zip(head, row))
        assert got["name"] == c["name"]
        for k, v in c.items():
            if k != "name":
                assert (v is None and got[k] == "") or same(cell(got[k]), v), k
        b = rep["curves"]["best_f1"][c["name"]]
        if b is None:
            assert got["best_f1_score"] == "" and got["best_f1"] == ""
        else:
            assert float(got["best_f1_score"]) == b["score"] and float(got["best_f1"]) == b["f1"]

    head, rows = read_csv(folder / "images.csv")
    assert head == list(rep["images"][0])
    assert [dict(zip(head, map(cell, r))) for r in rows] == [
        {**e, "file_name": e["file_name"]} for e in rep["images"]]

    head, rows = read_csv(folder / "confusion.csv")
    assert head == ["ground_truth"] + rep["confusion"]["classes"]
    assert [[int(v) for v in r[1:]] for r in rows] == rep["confusion"]["matrix"]

    head, rows = read_csv(folder / "curves.csv")
    assert len(head) == 2 + 101
    for r in rows:
        iou, name = r[0], r[1]
        block = rep["curves"]["iou"][iou]
        want = block["mean"] if name == "(mean)" else block["per_class"][name]
        assert [cell(v) for v in r[2:]] == (want if want is not None else [None] * 101)


def _markdown_tables(text):
    """Markdown pipe tables -> list of (header cells, rows of cells)."""
    tables, cur = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
            if cur is None:
                cur = [cells, []]
            elif not set(line) <= set("|-: "):
                cur[1].append(cells)
        elif cur is not None:
            tables.append(cur)
            cur = None
    if cur is not None:
        tables.append(cur)
    return tables


def fmt(v):
    return "-" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))


def test_markdown_round_trips_the_json(coco_run):
    rep, _, (g, r) = coco_run
    proc = run_cli("coco", g, r, "--confusion", "--curves", "--per-image", "--markdown")
    assert proc.returncode == 0, proc.stderr
    tables = _markdown_tables(proc.stdout)
    by_head = {tuple(h[:2]): rows for h, rows in tables}
    summary = by_head[("figure", "value")]
    assert {a: b for a, b in summary} == {k: fmt(v) for k, v in rep["stats"].items()}
    classes = next(rows for h, rows in tables if h[:2] == ["id", "class"])
    per = next(h for h, rows in tables if h[:2] == ["id", "class"])[2:]
    for row, c in zip(classes, rep["classes"]):
        assert row[1] == c["name"] and row[2:] == [fmt(c[k]) for k in per]
    conf = next(rows for h, rows in tables if h[:2] == ["class", "GT"])
    m = rep["confusion"]["matrix"]
    for i, row in enumerate(conf):
        assert int(row[1]) == sum(m[i]) and int(row[2]) == m[i][i]
    curves = next(rows for h, rows in tables if h[:2] == ["class", "AP50"])
    for row in curves[:-1]:
        b = rep["curves"]["best_f1"][row[0]]
        assert row[3] == fmt(None if b is None else b["score"])
        assert row[6] == fmt(None if b is None else b["f1"])
    worst = next(rows for h, rows in tables if h[:2] == ["image_id", "file_name"])
    entries = {e["image_id"]: e for e in rep["images"]}
    for row in worst:
        e = entries[int(row[0])]
        assert row[1] == e["file_name"] and [int(v) for v in row[2:8]] == [
            e[k] for k in ("num_gt", "num_detections", "tp", "fp", "fn", "ignored")]


def test_voc_csv_and_markdown(tmp_path):
    out, folder = tmp_path / "o.json", tmp_path / "csv"
    proc = run_cli("voc", VOC / "VOC2007", VOC / "results", "--imageset", "test", "--json",
                   out, "--csv", folder, "--markdown")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    assert sorted(p.name for p in folder.iterdir()) == ["classes.csv", "summary.csv"]
    head, rows = read_csv(folder / "summary.csv")
    assert same(cell(dict(zip(head, rows[0]))["mAP"]), rep["mAP"])
    head, rows = read_csv(folder / "classes.csv")
    for row, c in zip(rows, rep["classes"]):
        got = dict(zip(head, map(cell, row)))
        assert got["name"] == c["name"] and same(got["ap"], c["ap"]) or c["ap"] is None
        assert got["tp"] == c["tp"] and got["fp"] == c["fp"]
    table = _markdown_tables(proc.stdout)[0]
    assert [r[0] for r in table[1]] == [c["name"] for c in rep["classes"]]
    assert [r[1] for r in table[1]] == [fmt(c["ap"]) for c in rep["classes"]]


def test_plain_csv_without_diagnostics(tmp_path):
    case = generate_case(2)
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(case.gt))
    r.write_text(json.dumps(case.results))
    folder = tmp_path / "new"
    proc = run_cli("coco", g, r, "--csv", folder)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["classes.csv", "summary.csv"]
    # the printed table is the plain report's, unchanged
    plain = run_cli("coco", g, r)
    assert proc.stdout == plain.stdout


def test_csv_bad_folder_writes_nothing(tmp_path):
    case = generate_case(2)
    g, r = tmp_path / "gt.json", tmp_path / "res.json"
    g.write_text(json.dumps(case.gt))
    r.write_text(json.dumps(case.results))
    a_file = tmp_path / "file.txt"
    a_file.write_text("keep")
    out = tmp_path / "never.json"
    for target in (a_file, tmp_path / "missing" / "deeper", "-"):
        proc = run_cli("coco", g, r, "--per-image", "--csv", target, "--json", out)
        assert proc.returncode == 2 and "--csv" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and not out.exists()
    assert a_file.read_text() == "keep"
    # an input error after the options were accepted: nothing written either
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    folder = tmp_path / "csv"
    proc = run_cli("coco", g, bad, "--per-image", "--csv", folder, "--json", out)
    assert proc.returncode == 2 and not folder.exists() and not out.exists()
