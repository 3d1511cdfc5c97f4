"""Tables as text, GitHub Markdown and CSV: one table model, three renderings.

A :class:`Table` is a title, column headers and rows of plain values (str, int, float or
None). :func:`render_text` draws the fixed-width table the CLI prints, :func:`render_markdown`
the same table as GitHub Markdown (``--markdown``: for pull-request comments and model
cards), :func:`csv_text` a CSV file (``--csv DIR``: one row per entity, a header row, plain
numbers written so they read back as the same doubles, an empty cell for null).

Nothing here prints or writes: the CLI writes through :mod:`deteval.outfile`.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence

__all__ = ["Table", "render_text", "render_markdown", "csv_text", "fmt_figure",
           "base_tables", "summary_csv_table", "classes_csv_table"]


@dataclass
class Table:
    """A titled table of plain values.

    Attributes
    ----------
    title : str
    headers : list of str
    rows : list of list of (str, int, float or None)
    notes : list of str
        Lines printed under the table.
    right : list of bool, optional
        Right-align each column (default: numbers right, text left).
    """

    title: str
    headers: List[str]
    rows: List[List[Any]]
    notes: List[str] = field(default_factory=list)
    right: Optional[List[bool]] = None


def fmt_figure(v: Any, digits: int = 4) -> str:
    """A value for a printed table: ``-`` for None/NaN, floats with ``digits`` decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _aligned(table: Table) -> List[bool]:
    if table.right is not None:
        return table.right
    out = []
    for j in range(len(table.headers)):
        col = [r[j] for r in table.rows if r[j] is not None]
        out.append(bool(col) and all(isinstance(v, (int, float)) for v in col))
    return out


def render_text(table: Table) -> str:
    """The fixed-width rendering (title, header, rule, rows, notes)."""
    cells = [[fmt_figure(v) for v in r] for r in table.rows]
    widths = [max([len(h)] + [len(r[j]) for r in cells]) for j, h in enumerate(table.headers)]
    right = _aligned(table)

    def line(vals):
        return "  ".join(v.rjust(w) if rt else v.ljust(w)
                         for v, w, rt in zip(vals, widths, right)).rstrip()

    head = line(table.headers)
    out = [table.title, head, "-" * len(head)] if table.title else [head, "-" * len(head)]
    out += [line(r) for r in cells]
    if table.notes:
        out += [""] + table.notes
    return "\n".join(out)


def _md_cell(v: Any) -> str:
    return fmt_figure(v).replace("|", "\\|").replace("\n", " ")


def render_markdown(table: Table) -> str:
    """The GitHub Markdown rendering: a bold title line, a pipe table, notes as text."""
    right = _aligned(table)
    out = [f"**{table.title}**", ""] if table.title else []
    out.append("| " + " | ".join(_md_cell(h) for h in table.headers) + " |")
    out.append("|" + "|".join("---:" if rt else ":---" for rt in right) + "|")
    out += ["| " + " | ".join(_md_cell(v) for v in r) + " |" for r in table.rows]
    if table.notes:
        out += [""] + table.notes
    return "\n".join(out)


def _csv_value(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # the shortest text that reads back as the same double
    return str(v)


def csv_text(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with a header row; ``None``/NaN as an empty cell, floats with ``repr``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(headers))
    for r in rows:
        w.writerow([_csv_value(v) for v in r])
    return buf.getvalue()


# ------------------------------------------------------------- the plain report

def base_tables(d: dict) -> List[Table]:
    """The plain evaluation's printed tables from its JSON report ``d`` (COCO or VOC)."""
    if d.get("protocol") == "voc":
        rows = [[c["name"], c["ap"], c["num_gt"], c["num_difficult"], c["num_detections"],
                 c["tp"], c["fp"], c["ignored"]] for c in d["classes"]]
        n_in = d.get("num_classes_in_mAP", 0)
        notes = [f"mAP {fmt_figure(d['mAP'])} ({d['metric']}, IoU {d['iou_threshold']:g}, "
                 f"{d['compat']}, {n_in} of {len(d['classes'])} classes)"]
        notes += [f"{c['name']}: {c['note']}" for c in d["classes"] if c.get("note")]
        return [Table("PASCAL VOC", ["class", "AP", "GT", "diff", "dets", "TP", "FP",
                                     "ignored"], rows, notes)]
    stats = d["stats"]
    summary = Table(f"COCO {d.get('iou_type', 'bbox')}", ["figure", "value"],
                    [[k, v] for k, v in stats.items()])
    per = [k for k in stats if k.startswith("AP")]
    md = d.get("params", {}).get("max_dets", [])
    if md and f"AR{md[-1]}" in stats:
        per.append(f"AR{md[-1]}")
    rows = [[c["id"], c["name"]] + [c.get(k) for k in per] for c in d["classes"]]
    notes = []
    if any(c.get(k) is None for c in d["classes"] for k in per):
        notes.append("- : undefined: no non-crowd ground truth of that class in that area "
                     "range (pycocotools prints -1)")
    notes += ["note: " + n for n in d.get("notes", [])]
    classes = Table("Per class", ["id", "class"] + per, rows, notes,
                    right=[True, False] + [True] * len(per))
    return [summary, classes]


def summary_csv_table(d: dict) -> tuple:
    """``summary.csv``: one row, the run's figures by name."""
    inputs = d.get("inputs", {})
    if d.get("protocol") == "voc":
        headers = ["protocol", "metric", "compat", "iou_threshold", "num_images",
                   "num_detections", "mAP", "num_classes_in_mAP"]
        row = ["voc", d["metric"], d["compat"], d["iou_threshold"], inputs.get("num_images"),
               inputs.get("num_detections"), d["mAP"], d["num_classes_in_mAP"]]
        return headers, [row]
    stats = d["stats"]
    headers = ["protocol", "iou_type", "num_images", "num_detections"] + list(stats)
    row = ["coco", d.get("iou_type", "bbox"), inputs.get("num_images"),
           inputs.get("num_detections")] + list(stats.values())
    return headers, [row]


def classes_csv_table(d: dict) -> tuple:
    """``classes.csv``: one row per class; with curves, each class's best-F1 point too."""
    classes = d["classes"]
    if d.get("protocol") == "voc":
        headers = ["name", "ap", "num_gt", "num_difficult", "num_detections", "tp", "fp",
                   "ignored", "note"]
        rows = [[c.get(h) for h in headers] for c in classes]
    else:
        keys = [k for k in classes[0] if k not in ("id", "name")] if classes else []
        headers = ["id", "name"] + keys
        rows = [[c.get(h) for h in headers] for c in classes]
    best = (d.get("curves") or {}).get("best_f1")
    if best is not None:
        headers = headers + ["best_f1_score", "best_f1_precision", "best_f1_recall", "best_f1"]
        for r, c in zip(rows, classes):
            b = best.get(c["name"])
            r += [None] * 4 if b is None else [b["score"], b["precision"], b["recall"], b["f1"]]
    return headers, rows
