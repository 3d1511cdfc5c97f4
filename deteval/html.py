"""The report a person opens: one self-contained HTML page from a JSON report.

:func:`render_report` turns a report dict (``report.to_dict()``, or a ``--json`` file) into
one HTML string; :func:`render_comparison` does the same for two reports and the regression
gate's verdict. Pure functions: nothing is read or written here (the CLI writes the page with
:mod:`deteval.outfile`).

The page is one file that opens anywhere, offline: CSS, script and pictures are inline; the
pictures are small hand-written SVG (no matplotlib needed, no fonts, no network). Every
section appears only when the report has its data:

========================  ==========================================================
section                   report key
========================  ==========================================================
what was evaluated        ``protocol``, ``inputs``, ``params`` / ``metric``, version
headline figures          ``stats`` (COCO, LVIS) / ``mAP`` (VOC); ``uncertainty.intervals``
per-class table           ``classes`` (LVIS: with ``frequency``, filterable by it);
                          ``curves.best_f1``; ``uncertainty.per_class_intervals``
precision-recall curves   ``curves`` (``recall``, ``iou.<t>.mean / per_class``)
TIDE errors               ``tide`` (``main``, ``special``, ``counts``)
confusion matrix          ``confusion`` (``classes``, ``matrix``: rows GT, columns predicted)
worst images              ``images`` (``tp``, ``fp``, ``fn``, ...)
downloads                 CSV and Markdown of the above, embedded as ``data:`` URLs
========================  ==========================================================

Large vocabularies (LVIS, 1203 classes) stay usable: the class table and the per-class
curves are paginated by the page's script, the confusion heatmap shows the most confused
classes only (all pairs stay in the download), and curves are embedded as integers.
"""
from __future__ import annotations

import base64
import io
import csv
import json
import math
from html import escape
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import __version__

__all__ = ["render_report", "render_comparison", "diagnostics_for_html", "coco_curves",
           "voc_curves", "report_csv", "report_markdown"]

#: Colour-blind-safe palette (Okabe & Ito 2008); IoU 0.5 blue solid, 0.75 vermillion dashed.
_IOU_STYLE = [("#0072B2", ""), ("#D55E00", "6 4"), ("#009E73", "2 3"), ("#CC79A7", "8 3 2 3")]
#: Largest confusion heatmap drawn (classes, background excluded); more: the most confused.
MAX_HEATMAP_CLASSES = 30
#: Worst images listed on the page (all of them are in the images.csv download).
WORST_IMAGES = 20
#: Classes in the "AP by class" chart; more: the best and the worst half each.
MAX_AP_CHART_CLASSES = 60


# ------------------------------------------------------------------------------ hook

def diagnostics_for_html(command: str, iou_type: str = "bbox") -> Tuple[str, ...]:
    """Diagnostics ``--html`` asks the evaluation for, by their CLI option names.

    The CLI sets ``args.<name> = True`` for each name that is an option of the command, so
    the diagnostics options (``--tide``, ``--confusion``, ``--curves``, ``--per-image``)
    are implied by ``--html`` as soon as they exist; options the command does not have are
    skipped. COCO diagnostics are defined for bbox only.
    """
    if command == "coco":
        return ("tide", "confusion", "curves", "per_image") if iou_type == "bbox" else ()
    if command == "voc":
        return ("confusion", "per_image")
    return ()


# ------------------------------------------------------------------- curves for the page

def coco_curves(precision: np.ndarray, iou_thresholds: Sequence[float],
                class_names: Sequence[str], recall_thresholds: Optional[np.ndarray] = None,
                area_index: int = 0, max_dets_index: int = -1,
                ious: Sequence[float] = (0.5, 0.75)) -> Optional[dict]:
    """The ``curves`` report section (without ``best_f1``) from COCOeval's precision array.

    Parameters
    ----------
    precision : ndarray, shape (T, R, K, A, M) or (T, R, K, A)
        ``CocoReport.precision``: interpolated precision, NaN where a class has no
        non-ignored ground truth (pycocotools' -1); or ``LvisReport.precision`` (one
        max-detections setting, no M axis).
    iou_thresholds : sequence of float, length T
    class_names : sequence of str, length K
    recall_thresholds : ndarray, shape (R,), optional
        Default ``np.linspace(0, 1, R)`` (COCOeval ``recThrs``).
    area_index, max_dets_index : int
        The area range ``all`` and the largest max-detections (COCOeval's AP cell).
    ious : IoU thresholds to take (those absent from ``iou_thresholds`` are skipped).

    Returns
    -------
    dict or None
        ``{"recall": [R], "iou": {"0.5": {"per_class": {name: [R] | None},
        "mean": [R] | None}, ...}}``: ``per_class[name] = precision[t, :, k, a, m]``, ``None``
        for a class whose row is undefined; ``mean[r]`` the mean over defined classes.
        None when no requested threshold was evaluated.
    """
    precision = np.asarray(precision, dtype=np.float64)
    if precision.ndim == 4:  # LVIS: a single max-detections setting
        precision = precision[..., None]
    T, R, K = precision.shape[:3]
    rec = np.linspace(0, 1, R) if recall_thresholds is None else np.asarray(recall_thresholds)
    thr = np.asarray(list(iou_thresholds), dtype=np.float64)
    out = {"recall": [float(r) for r in rec], "iou": {}}
    for iou in ious:
        hits = np.flatnonzero(np.abs(thr - iou) < 1e-9)
        if not hits.size:
            continue
        cell = precision[hits[0], :, :, area_index, max_dets_index]  # (R, K)
        per_class = {}
        defined = []
        for k, name in enumerate(class_names):
            col = cell[:, k]
            if np.isnan(col).all():
                per_class[str(name)] = None
            else:
                per_class[str(name)] = [float(v) for v in col]
                defined.append(k)
        mean = ([float(v) for v in cell[:, defined].mean(axis=1)] if defined else None)
        out["iou"][f"{iou:g}"] = {"per_class": per_class, "mean": mean}
    return out if out["iou"] else None


def voc_curves(matches, class_names: Sequence[str], iou_threshold: float,
               compat: str = "devkit", num_points: int = 101) -> dict:
    """The ``curves`` section of a VOC evaluation, for display.

    ``per_class[name][i]`` is the precision envelope (``max`` of precision at recall
    ``>= r``, the devkit's all-point interpolation) at recall ``r_i =
    linspace(0, 1, num_points)[i]``: ``envelope[searchsorted(recall, r_i, 'left')]``, 0 beyond
    the last recall. ``best_f1[name]``: over the ranked detections (ignored ones left out),
    cut at each distinct score ``s`` (ties never split): ``f1 = 2 TP / (TP + FP + nGT)``,
    maximal, ties to the highest ``s``; None without ground truth or detections.

    Parameters
    ----------
    matches : deteval.match.VocMatches
    class_names : sequence of str, length K
    iou_threshold : float
    compat : {"devkit", "detectron2"}
    """
    from .ap import voc_curves as raw_curves
    from .rank import stable_rank_order

    rec_thr = np.linspace(0, 1, num_points)
    per_class, best = {}, {}
    curves = raw_curves(matches, compat)
    order = stable_rank_order(matches.class_idx, matches.scores, matches.tie_key)
    cls, scores, outcome = (matches.class_idx[order], matches.scores[order],
                            matches.outcome[order])
    bounds = np.searchsorted(cls, np.arange(len(class_names) + 1))
    defined = []
    for k, name in enumerate(class_names):
        rec, prec = curves[k][0], curves[k][1]
        npos = int(matches.num_gt[k])
        if npos == 0:
            per_class[name], best[name] = None, None
            continue
        keep = ~np.isnan(prec)
        rec, prec = rec[keep], prec[keep]
        env = np.maximum.accumulate(prec[::-1])[::-1] if prec.size else prec
        idx = np.searchsorted(rec, rec_thr, side="left")
        q = np.zeros(num_points)
        inside = idx < rec.size
        q[inside] = env[idx[inside]]
        per_class[name] = [float(v) for v in q]
        defined.append(q)
        o = outcome[bounds[k]:bounds[k + 1]]
        s = scores[bounds[k]:bounds[k + 1]]
        s, o = s[o >= 0], o[o >= 0]
        best[name] = _best_f1(s, o == 1, npos)
    mean = [float(v) for v in np.mean(defined, axis=0)] if defined else None
    return {"recall": [float(r) for r in rec_thr],
            "iou": {f"{iou_threshold:g}": {"per_class": per_class, "mean": mean}},
            "best_f1": best}


def _best_f1(scores: np.ndarray, is_tp: np.ndarray, num_gt: int) -> Optional[dict]:
    """Best-F1 cut of one ranked list (scores descending): see :func:`voc_curves`."""
    if num_gt == 0 or scores.size == 0:
        return None
    tp = np.cumsum(is_tp)
    fp = np.cumsum(~is_tp)
    last = np.r_[scores[1:] != scores[:-1], True]  # the end of each run of equal scores
    tp, fp, s = tp[last], fp[last], scores[last]
    f1 = 2.0 * tp / (tp + fp + num_gt)
    i = int(np.argmax(f1))  # first maximum = the highest score among equal F1s
    return {"score": float(s[i]), "precision": float(tp[i] / (tp[i] + fp[i])),
            "recall": float(tp[i] / num_gt), "f1": float(f1[i])}


# ------------------------------------------------------------------------------- model

def _num(v) -> Optional[float]:
    if v is None or isinstance(v, bool):
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _fmt(v, digits: int = 4) -> str:
    v = _num(v)
    return "–" if v is None else f"{v:.{digits}f}"


def _fmt_int(v) -> str:
    v = _num(v)
    return "–" if v is None else f"{int(v):,}"


def _class_columns(report: dict) -> List[Tuple[str, str, str]]:
    """(key, header, kind) of the per-class table: kind 'f' figure in [0,1], 'i' count."""
    classes = report.get("classes") or []
    if report.get("protocol") == "voc":
        cols = [("ap", "AP", "f"), ("num_gt", "GT", "i"), ("num_difficult", "difficult", "i"),
                ("num_detections", "detections", "i"), ("tp", "TP", "i"), ("fp", "FP", "i"),
                ("ignored", "ignored", "i")]
        return [c for c in cols if any(c[0] in row for row in classes)]
    keys: List[str] = []
    for row in classes:
        for k, v in row.items():
            if k not in ("id", "name") and k not in keys and (v is None or isinstance(
                    v, (int, float))):
                keys.append(k)
    if report.get("protocol") == "lvis":  # counts as counts, the frequency group first
        counts = {"num_gt": "GT", "num_results": "results"}
        cols = [(k, k, "f") for k in keys if k not in counts]
        cols += [(k, h, "i") for k, h in counts.items() if k in keys]
        if any("frequency" in row for row in classes):
            cols.insert(0, ("frequency", "frequency", "t"))
        return cols
    return [(k, k, "f") for k in keys]


#: LVIS frequency groups (``classes[i]["frequency"]``), in their sort order.
_FREQUENCIES = {"r": "rare", "c": "common", "f": "frequent"}
#: Their colours in the AP-by-class chart (Okabe & Ito).
_FREQUENCY_COLORS = {"r": "#D55E00", "c": "#E69F00", "f": "#0072B2"}


def _headline_key(report: dict) -> str:
    return "mAP" if report.get("protocol") == "voc" else "AP"


def _figures(report: dict) -> Dict[str, Optional[float]]:
    """The headline figures by name, headline first."""
    if report.get("protocol") == "voc":
        return {"mAP": _num(report.get("mAP"))}
    return {k: _num(v) for k, v in (report.get("stats") or {}).items()}


def _intervals(report: dict) -> Dict[str, Tuple[float, float]]:
    unc = report.get("uncertainty") or {}
    out = {}
    for k, v in (unc.get("intervals") or {}).items():
        if isinstance(v, (list, tuple)) and len(v) == 2 and None not in v:
            out[k] = (float(v[0]), float(v[1]))
    return out


def _class_intervals(report: dict) -> Dict[str, Dict[str, Tuple[float, float]]]:
    unc = report.get("uncertainty") or {}
    out = {}
    for name, figs in (unc.get("per_class_intervals") or {}).items():
        if isinstance(figs, dict):
            out[name] = {k: (float(v[0]), float(v[1])) for k, v in figs.items()
                         if isinstance(v, (list, tuple)) and len(v) == 2 and None not in v}
    return out


def _class_interval(ci: dict, name: str, key: str) -> Optional[Tuple[float, float]]:
    figs = ci.get(name) or {}
    for k in (key, key.upper(), key.lower()):
        if k in figs:
            return figs[k]
    return None


def _headline_class_key(report: dict) -> str:
    return "ap" if report.get("protocol") == "voc" else "AP"


# ------------------------------------------------------------------------- CSV, Markdown

def _csv(rows: Iterable[Sequence]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in r])
    return buf.getvalue()


def report_csv(report: dict) -> Dict[str, str]:
    """CSV files of a report by file name: ``summary.csv``, ``classes.csv``, and with their
    sections ``images.csv``, ``confusion.csv``, ``tide.csv``. One row per entity, a header
    row, plain numbers (floats as their shortest round-trip text), an empty cell for null."""
    figs = _figures(report)
    iv = _intervals(report)
    head = ["figure", "value"] + (["lo", "hi"] if iv else [])
    rows = [head] + [[k, v] + (list(iv.get(k, (None, None))) if iv else [])
                     for k, v in figs.items()]
    out = {"summary.csv": _csv(rows)}
    cols = _class_columns(report)
    best = (report.get("curves") or {}).get("best_f1") or {}
    ci = _class_intervals(report)
    hk = _headline_class_key(report)
    head = ["id", "name"] + [c[0] for c in cols]
    if ci:
        head += [f"{hk}_lo", f"{hk}_hi"]
    if best:
        head += ["best_f1_score", "best_f1_precision", "best_f1_recall", "best_f1"]
    rows = [head]
    for c in report.get("classes") or []:
        r = [c.get("id"), c.get("name")] + [c.get(k) for k, _, _ in cols]
        if ci:
            r += list(_class_interval(ci, c.get("name"), hk) or (None, None))
        if best:
            b = best.get(c.get("name")) or {}
            r += [b.get("score"), b.get("precision"), b.get("recall"), b.get("f1")]
        rows.append(r)
    out["classes.csv"] = _csv(rows)
    images = report.get("images")
    if isinstance(images, list) and images:
        images = [_flat_image(im) for im in images]
        keys: List[str] = []
        for im in images:
            keys += [k for k in im if k not in keys]
        out["images.csv"] = _csv([keys] + [[im.get(k) for k in keys] for im in images])
    conf = report.get("confusion")
    if isinstance(conf, dict) and conf.get("matrix"):
        names = list(conf.get("classes") or [])
        rows = [["ground_truth", "predicted", "count"]]
        m = np.asarray(conf["matrix"], dtype=np.int64)
        for i, j in zip(*np.nonzero(m)):
            rows.append([names[i], names[j], int(m[i, j])])
        out["confusion.csv"] = _csv(rows)
    tide = report.get("tide")
    if isinstance(tide, dict):
        rows = [["error", "dAP", "count"]]
        for group in ("main", "special"):
            for k, v in (tide.get(group) or {}).items():
                rows.append([k, v, (tide.get("counts") or {}).get(k)])
        out["tide.csv"] = _csv(rows)
    return out


def report_markdown(report: dict) -> str:
    """The headline figures and the per-class table as GitHub Markdown."""
    figs = _figures(report)
    iv = _intervals(report)

    def cell(v, k=None, table=None):
        s = _fmt(v)
        if k is not None and table and k in table:
            s += f" [{table[k][0]:.4f}, {table[k][1]:.4f}]"
        return s

    lines = ["| figure | value |", "|---|---:|"]
    lines += [f"| {k} | {cell(v, k, iv)} |" for k, v in figs.items()]
    cols = _class_columns(report)
    lines += ["", "| class | " + " | ".join(h for _, h, _ in cols) + " |",
              "|---|" + "---:|" * len(cols)]
    for c in report.get("classes") or []:
        name = str(c.get("name")).replace("|", "\\|")
        vals = [(_fmt_int(c.get(k)) if kind == "i" else
                 str(c.get(k) if c.get(k) is not None else "–") if kind == "t" else
                 _fmt(c.get(k))) for k, _, kind in cols]
        lines.append(f"| {name} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def _data_url(text: str, mime: str) -> str:
    return f"data:{mime};charset=utf-8;base64," + base64.b64encode(
        text.encode("utf-8")).decode("ascii")


# --------------------------------------------------------------------------------- SVG

def _svg_text(x, y, text, *, anchor="start", size=11, cls="", extra="") -> str:
    c = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{c}'
            f'{extra}>{escape(str(text))}</text>')


def _pr_svg(recall: Sequence[float], series: List[dict], *, width=420, height=320,
            title: str = "", background: Optional[List[Sequence[float]]] = None,
            background_label: str = "each class") -> str:
    """A precision-recall chart: axes 0..1 with grid, one polyline per series
    (``label``, ``values``, ``color``, ``dash``), legend in the empty lower-left corner."""
    ml, mr, mt, mb = 46, 14, 26 if title else 12, 40
    w, h = width - ml - mr, height - mt - mb

    def X(r):
        return ml + r * w

    def Y(p):
        return mt + (1 - p) * h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" class="chart">']
    if title:
        parts.append(f'<title>{escape(title)}</title>')
        parts.append(_svg_text(ml, 16, title, size=13, cls="ttl"))
    for i in range(6):
        v = i / 5
        parts.append(f'<line x1="{X(0):.1f}" x2="{X(1):.1f}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" '
                     f'class="grid"/>')
        parts.append(f'<line x1="{X(v):.1f}" x2="{X(v):.1f}" y1="{Y(0):.1f}" y2="{Y(1):.1f}" '
                     f'class="grid"/>')
        parts.append(_svg_text(X(v), Y(0) + 14, f"{v:.1f}", anchor="middle", size=10))
        parts.append(_svg_text(ml - 5, Y(v) + 3.5, f"{v:.1f}", anchor="end", size=10))
    parts.append(f'<rect x="{ml}" y="{mt}" width="{w}" height="{h}" class="frame"/>')
    parts.append(_svg_text(ml + w / 2, height - 6, "recall", anchor="middle", size=11))
    parts.append(_svg_text(12, mt + h / 2, "precision", anchor="middle", size=11,
                           extra=f' transform="rotate(-90 12 {mt + h / 2:.1f})"'))
    for vals in background or ():
        pts = " ".join(f"{X(r):.1f},{Y(p):.1f}" for r, p in zip(recall, vals))
        parts.append(f'<polyline points="{pts}" fill="none" class="faint"/>')
    for s in series:
        vals = s["values"]
        if vals is None:
            continue
        pts = " ".join(f"{X(r):.1f},{Y(p):.1f}" for r, p in zip(recall, vals))
        dash = f' stroke-dasharray="{s["dash"]}"' if s.get("dash") else ""
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{s["color"]}" '
                     f'stroke-width="2"{dash}><title>{escape(s["label"])}</title></polyline>')
    shown = [s for s in series if s["values"] is not None]
    if background:
        shown.append({"label": background_label, "values": (), "color": "#b9c3d0",
                      "dash": ""})
    lx, ly = X(0) + 10, Y(0) - 12 - 16 * (len(shown) - 1)
    if shown:
        bw = 16 + 7 * max(len(s["label"]) for s in shown)
        parts.append(f'<rect x="{lx - 6:.1f}" y="{ly - 12:.1f}" width="{bw + 34}" '
                     f'height="{16 * len(shown) + 6}" class="legend"/>')
    for i, s in enumerate(shown):
        y = ly + 16 * i
        dash = f' stroke-dasharray="{s["dash"]}"' if s.get("dash") else ""
        parts.append(f'<line x1="{lx:.1f}" x2="{lx + 26:.1f}" y1="{y - 4:.1f}" '
                     f'y2="{y - 4:.1f}" stroke="{s["color"]}" stroke-width="2"{dash}/>')
        parts.append(_svg_text(lx + 32, y, s["label"], size=11))
    parts.append("</svg>")
    return "".join(parts)


def _hbar_svg(items: List[dict], *, width=560, label_width=150, unit="", title="",
              diverging=False, domain: Optional[float] = None) -> str:
    """Horizontal bars (``label``, ``value``, ``note``, optional ``interval``, ``color``).

    ``diverging``: a zero line in the middle, negative bars to the left (deltas)."""
    row = 22
    mt = 24 if title else 6
    height = mt + row * len(items) + 28
    x0, x1 = label_width, width - 110
    vals = [abs(i["value"]) for i in items if i["value"] is not None]
    vals += [abs(v) for i in items if i.get("interval") for v in i["interval"]]
    top = domain if domain is not None else max(vals + [1e-12])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" class="chart">']
    if title:
        parts.append(f'<title>{escape(title)}</title>')
        parts.append(_svg_text(4, 15, title, size=13, cls="ttl"))
    zero = (x0 + x1) / 2 if diverging else x0
    scale = ((x1 - x0) / 2 if diverging else (x1 - x0)) / top

    def X(v):
        return zero + v * scale

    for i, it in enumerate(items):
        y = mt + row * i
        parts.append(_svg_text(x0 - 8, y + 15, it["label"], anchor="end", size=11))
        v = it["value"]
        if v is None:
            if it["label"] != "…":  # the row standing for the classes left out says nothing
                parts.append(_svg_text(zero + 4, y + 15, "undefined", size=10, cls="muted"))
            continue
        a, b = sorted((zero, X(v)))
        color = it.get("color") or ("#D55E00" if v < 0 else "#0072B2")
        parts.append(f'<rect x="{a:.1f}" y="{y + 4}" width="{max(b - a, 0.5):.1f}" '
                     f'height="{row - 8}" fill="{color}"><title>{escape(it["label"])}: '
                     f'{escape(it.get("note") or f"{v:.4f}")}</title></rect>')
        if it.get("interval"):
            lo, hi = it["interval"]
            yc = y + row / 2
            parts.append(f'<path d="M{X(lo):.1f} {yc:.1f}H{X(hi):.1f}M{X(lo):.1f} {yc - 5:.1f}'
                         f'V{yc + 5:.1f}M{X(hi):.1f} {yc - 5:.1f}V{yc + 5:.1f}" '
                         f'class="whisker"/>')
        parts.append(_svg_text(max(X(v), zero, X((it.get("interval") or (0, 0))[1])) + 6,
                               y + 15, it.get("note") or f"{v:.4f}", size=10))
    yb = mt + row * len(items) + 4
    parts.append(f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{mt}" y2="{yb}" class="axis"/>')
    ticks = ([-top, -top / 2, 0, top / 2, top] if diverging else
             [0, top / 4, top / 2, 3 * top / 4, top] if domain else [0, top / 2, top])
    for t in ticks:
        parts.append(_svg_text(X(t), yb + 14, f"{t:+.3g}" if diverging and t else f"{t:.3g}",
                               anchor="middle", size=10, cls="muted"))
    if unit:
        parts.append(_svg_text(x1, yb + 14, unit, anchor="start", size=10, cls="muted",
                               extra=' dx="22"'))
    parts.append("</svg>")
    return "".join(parts)


def _heat_color(f: float) -> str:
    """White to deep blue (sequential, monotone in lightness: prints in grey)."""
    f = min(max(f, 0.0), 1.0)
    lo, hi = (247, 251, 255), (8, 48, 107)
    return "#%02x%02x%02x" % tuple(round(a + (b - a) * f) for a, b in zip(lo, hi))


def _heatmap_svg(names: List[str], m: np.ndarray, *, full_row_sums: np.ndarray) -> str:
    """Confusion heatmap: rows ground truth, columns predicted; colour = share of the row
    (of the ground-truth class's objects; background row: of all false detections)."""
    n = len(names)
    full = names
    names = [s if len(s) <= 22 else s[:21] + "…" for s in names]
    cell = max(12, min(34, 620 // max(n, 1)))
    label_w = 8 + 6.6 * max(len(s) for s in names)
    top = label_w
    left = label_w
    width = int(left + cell * n + 30)
    height = int(top + cell * n + 40)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" class="chart heat">',
             '<title>confusion matrix: rows ground truth, columns predicted</title>']
    for i, name in enumerate(names):
        y = top + cell * i + cell / 2 + 4
        parts.append(_svg_text(left - 6, y, name, anchor="end", size=11))
        x = left + cell * i + cell / 2 + 4
        parts.append(_svg_text(x, top - 6, name, anchor="start", size=11,
                               extra=f' transform="rotate(-90 {x:.1f} {top - 6:.1f})"'))
    for i in range(n):
        denom = max(int(full_row_sums[i]), 1)
        for j in range(n):
            v = int(m[i, j])
            f = v / denom
            x, y = left + cell * j, top + cell * i
            tip = f"ground truth {full[i]} → predicted {full[j]}: {v}"
            if full_row_sums[i]:
                tip += f" ({100 * f:.1f}% of the row)"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                         f'fill="{_heat_color(f ** 0.5 if v else 0)}" class="cell'
                         f'{" diag" if i == j else ""}"><title>{escape(tip)}</title></rect>')
            if v and cell >= 18:
                dark = (f ** 0.5) > 0.55
                parts.append(_svg_text(x + cell / 2, y + cell / 2 + 4, str(v), anchor="middle",
                                       size=10 if v < 1000 else 8,
                                       cls="on-dark" if dark else ""))
    parts.append(_svg_text(left + cell * n / 2, top + cell * n + 22, "predicted class →",
                           anchor="middle", size=12))
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------- HTML

_CSS = """
:root{--fg:#1d2430;--muted:#5b6576;--line:#d9dee7;--bg:#ffffff;--panel:#f6f8fb;
--accent:#0072B2;--bad:#b3261e;--good:#1b7f3b;}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
sans-serif;color:var(--fg);background:var(--bg)}
header.top{padding:22px 32px 14px;border-bottom:1px solid var(--line);background:var(--panel)}
header.top h1{margin:0 0 4px;font-size:22px;font-weight:650}
header.top .sub{color:var(--muted)}
nav.toc{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--line);
padding:6px 32px;display:flex;gap:16px;flex-wrap:wrap;font-size:13px}
nav.toc a{color:var(--accent);text-decoration:none}
main{padding:8px 32px 48px;max-width:1400px}
section{margin-top:26px}
h2{font-size:17px;margin:0 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:14px 0 6px}
.note{color:var(--muted);font-size:12.5px;max-width:900px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 12px;min-width:104px;background:#fff}
.card .k{font-size:12px;color:var(--muted)}
.card .v{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.card.main{border-color:var(--accent);background:#f0f7fc}
.card.main .v{font-size:34px;color:#0b4f7c}
.card .ci{font-size:11.5px;color:var(--muted);font-variant-numeric:tabular-nums}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:0;font-size:13px}
dl.meta dt{color:var(--muted)} dl.meta dd{margin:0;word-break:break-all}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.controls{display:flex;gap:12px;align-items:center;margin:6px 0 8px;flex-wrap:wrap}
.controls input[type=search]{padding:5px 8px;border:1px solid var(--line);border-radius:6px;
min-width:240px;font:inherit}
.controls select,.controls button{font:inherit;padding:3px 8px;border:1px solid var(--line);
border-radius:6px;background:#fff;cursor:pointer}
.controls button:disabled{opacity:.4;cursor:default}
.tablewrap{overflow-x:auto;border:1px solid var(--line);border-radius:8px}
table.static{width:auto;min-width:50%}
table.dt,table.static{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
table.dt th,table.dt td,table.static th,table.static td{padding:4px 8px;border-bottom:1px solid #eef1f5;text-align:right;
white-space:nowrap}
table.dt th,table.static th{background:var(--panel);position:sticky;top:0;font-weight:600;user-select:none}
table.dt th.sortable{cursor:pointer}
table.dt th.sortable:hover{background:#e9eef5}
table.dt th[aria-sort=ascending]::after{content:" \\25B2";font-size:9px}
table.dt th[aria-sort=descending]::after{content:" \\25BC";font-size:9px}
table.dt td.name,table.dt th.name,table.static td.name,table.static th.name{text-align:left}
table.dt tr:hover td{background:#f7fafd}
td .track{display:inline-block;width:56px;height:8px;background:#e8edf3;border-radius:2px;
vertical-align:middle;margin-right:6px;position:relative;overflow:hidden}
td .bar{position:absolute;left:0;top:0;bottom:0;background:var(--accent);opacity:.8}
td .ci{color:var(--muted);font-size:11.5px}
td.bad,span.bad{color:var(--bad);font-weight:600} td.good,span.good{color:var(--good)}
tr.regressed td{background:#fdf1f0}
.grid{stroke:#e6e9ef;stroke-width:1}
.frame{fill:none;stroke:#8a93a3;stroke-width:1}
.axis{stroke:#8a93a3;stroke-width:1}
.legend{fill:#fff;fill-opacity:.9;stroke:#d9dee7}
.whisker{stroke:#1d2430;stroke-width:1.4;fill:none}
.faint{stroke:#b9c3d0;stroke-width:.8;stroke-opacity:.7}
svg text{fill:#1d2430} svg text.muted{fill:#5b6576} svg text.ttl{font-weight:600}
svg text.on-dark{fill:#fff}
svg.heat rect.cell{stroke:#fff;stroke-width:1} svg.heat rect.diag{stroke:#0072B2;stroke-width:1.5}
.figs{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px}
.multiples figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:4px;background:#fff}
.multiples figcaption{font-size:12px;display:flex;justify-content:space-between;gap:6px}
.multiples figcaption b{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.dl a{display:inline-block;margin:0 8px 8px 0;padding:5px 12px;border:1px solid var(--accent);
border-radius:6px;color:var(--accent);text-decoration:none;font-size:13px}
.dl a:hover{background:#f0f7fc}
.verdict{padding:12px 16px;border-radius:8px;font-size:16px;font-weight:600;margin-top:16px}
.verdict.pass{background:#e8f5ec;color:var(--good);border:1px solid #a8d5b5}
.verdict.fail{background:#fdecea;color:var(--bad);border:1px solid #f1b0aa}
.swatch{display:inline-block;width:26px;height:0;border-top:2px solid;vertical-align:middle;
margin-right:4px}
@media print{nav.toc{display:none}.controls{display:none}}
"""

_JS = r"""
(function(){
"use strict";
function num(td){var v=td.getAttribute("data-v");return v===null||v===""?null:parseFloat(v);}
function DataTable(table){
  var tbody=table.tBodies[0], rows=Array.prototype.slice.call(tbody.rows);
  var id=table.id, self=this;
  var filter=document.querySelector('[data-filter-for="'+id+'"]');
  var pager=document.querySelector('[data-pager-for="'+id+'"]');
  var size=parseInt(table.getAttribute("data-page-size")||"50",10), page=0, q="";
  var sortCol=-1, sortDir=1, facets={};
  Array.prototype.forEach.call(document.querySelectorAll('[data-facet-for="'+id+'"]'),function(s){
    s.addEventListener("change",function(){facets[s.getAttribute("data-facet")]=s.value;page=0;self.render();});});
  var heads=Array.prototype.slice.call(table.tHead.rows[0].cells);
  heads.forEach(function(th,i){
    if(!th.classList.contains("sortable"))return;
    th.setAttribute("tabindex","0");
    function go(){
      if(sortCol===i){sortDir=-sortDir;}else{sortCol=i;sortDir=th.getAttribute("data-type")==="text"||th.getAttribute("data-first")==="ascending"?1:-1;}
      heads.forEach(function(h){h.removeAttribute("aria-sort");});
      th.setAttribute("aria-sort",sortDir>0?"ascending":"descending");
      var text=th.getAttribute("data-type")==="text";
      rows.sort(function(a,b){
        var x,y;
        if(text){x=a.cells[i].textContent.toLowerCase();y=b.cells[i].textContent.toLowerCase();
          return x<y?-sortDir:x>y?sortDir:0;}
        x=num(a.cells[i]);y=num(b.cells[i]);
        if(x===null&&y===null)return 0; if(x===null)return 1; if(y===null)return -1;
        return (x-y)*sortDir;});
      rows.forEach(function(r){tbody.appendChild(r);});
      page=0; self.render();
    }
    th.addEventListener("click",go);
    th.addEventListener("keydown",function(e){if(e.key==="Enter")go();});
  });
  if(filter){filter.addEventListener("input",function(){q=filter.value.trim().toLowerCase();page=0;self.render();});}
  this.matching=function(){return rows.filter(function(r){
    for(var f in facets){if(facets[f]&&r.getAttribute("data-"+f)!==facets[f])return false;}
    return !q||(r.getAttribute("data-name")||"").toLowerCase().indexOf(q)>=0;});};
  this.visible=[];
  this.render=function(){
    var m=this.matching(), n=m.length, per=size>0?size:n||1;
    var pages=Math.max(1,Math.ceil(n/per)); if(page>=pages)page=pages-1;
    var lo=page*per, hi=Math.min(n,lo+per), shown=new Set(m.slice(lo,hi));
    rows.forEach(function(r){r.style.display=shown.has(r)?"":"none";});
    this.visible=m.slice(lo,hi);
    if(pager){
      pager.querySelector(".info").textContent=n?("rows "+(lo+1)+"\u2013"+hi+" of "+n+(n<rows.length?" (filtered from "+rows.length+")":"")):"no match";
      pager.querySelector(".prev").disabled=page===0;
      pager.querySelector(".next").disabled=page>=pages-1;
    }
    table.dispatchEvent(new CustomEvent("dt-render",{detail:this.visible}));
  };
  if(pager){
    pager.querySelector(".prev").addEventListener("click",function(){page--;self.render();});
    pager.querySelector(".next").addEventListener("click",function(){page++;self.render();});
    var sel=pager.querySelector("select");
    if(sel){sel.value=String(size);sel.addEventListener("change",function(){size=parseInt(sel.value,10);page=0;self.render();});}
  }
}
var tables={};
Array.prototype.forEach.call(document.querySelectorAll("table.dt"),function(t){tables[t.id]=new DataTable(t);});
// per-class precision-recall small multiples: the classes on the table's current page
var dataEl=document.getElementById("curves-data"), grid=document.getElementById("multiples");
if(dataEl&&grid&&tables.classes){
  var D=JSON.parse(dataEl.textContent), NS="http://www.w3.org/2000/svg";
  function el(tag,attrs,text){var e=document.createElementNS(NS,tag);
    for(var k in attrs)e.setAttribute(k,attrs[k]); if(text!==undefined)e.textContent=text; return e;}
  function draw(name){
    var W=190,H=150,ml=26,mr=6,mt=6,mb=20,w=W-ml-mr,h=H-mt-mb;
    var s=el("svg",{viewBox:"0 0 "+W+" "+H,width:W,height:H,role:"img","class":"chart"});
    s.appendChild(el("title",{},"precision-recall, "+name));
    for(var i=0;i<=4;i++){var v=i/4;
      s.appendChild(el("line",{x1:ml,x2:ml+w,y1:mt+(1-v)*h,y2:mt+(1-v)*h,"class":"grid"}));
      s.appendChild(el("line",{x1:ml+v*w,x2:ml+v*w,y1:mt,y2:mt+h,"class":"grid"}));}
    s.appendChild(el("rect",{x:ml,y:mt,width:w,height:h,"class":"frame"}));
    [["0",ml,mt+h+12,"middle"],["1",ml+w,mt+h+12,"middle"],["recall",ml+w/2,mt+h+14,"middle"],
     ["0",ml-4,mt+h+3,"end"],["1",ml-4,mt+8,"end"]].forEach(function(t){
      s.appendChild(el("text",{x:t[1],y:t[2],"font-size":9,"text-anchor":t[3],"class":"muted"},t[0]));});
    s.appendChild(el("text",{x:9,y:mt+h/2,"font-size":9,"text-anchor":"middle","class":"muted",
      transform:"rotate(-90 9 "+(mt+h/2)+")"},"precision"));
    var any=false;
    D.ious.forEach(function(iou,j){
      var c=D.per_class[iou][name]; if(!c)return; any=true;
      var pts=[];for(var r=0;r<D.recall.length;r++){var p=r<c.length?c[r]/10000:0;
        pts.push((ml+D.recall[r]*w).toFixed(1)+","+(mt+(1-p)*h).toFixed(1));}
      var a={points:pts.join(" "),fill:"none",stroke:D.styles[j][0],"stroke-width":1.6};
      if(D.styles[j][1])a["stroke-dasharray"]=D.styles[j][1];
      s.appendChild(el("polyline",a));});
    var b=D.best_f1&&D.best_f1[name];
    if(b){var c2=el("circle",{cx:ml+b[1]*w,cy:mt+(1-b[0])*h,r:3.5,fill:"#fff",stroke:"#1d2430","stroke-width":1.5});
      c2.appendChild(el("title",{},"best F1 "+b[2].toFixed(3)+" at score \u2265 "+b[3]));s.appendChild(c2);}
    if(!any)s.appendChild(el("text",{x:ml+w/2,y:mt+h/2,"font-size":10,"text-anchor":"middle","class":"muted"},"undefined: no ground truth"));
    return s;}
  document.getElementById("classes").addEventListener("dt-render",function(e){
    grid.textContent="";
    e.detail.forEach(function(row){var name=row.getAttribute("data-name");
      var f=document.createElement("figure"), cap=document.createElement("figcaption");
      var b=document.createElement("b");b.textContent=name;b.title=name;cap.appendChild(b);
      var ap=document.createElement("span");ap.textContent=row.getAttribute("data-headline")||"";cap.appendChild(ap);
      f.appendChild(cap);f.appendChild(draw(name));grid.appendChild(f);});
  });
}
Object.keys(tables).forEach(function(k){tables[k].render();});
window.detevalTables=tables;
})();
"""


def _page(title: str, subtitle: str, nav: List[Tuple[str, str]], body: List[str]) -> str:
    links = "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in nav)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            "<link rel=\"icon\" href=\"data:,\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<header class=\"top\"><h1>{escape(title)}</h1><div class=\"sub\">{subtitle}"
            f"</div></header><nav class=\"toc\">{links}</nav><main>"
            + "".join(body) + f"</main><script>{_JS}</script></body></html>\n")


def _meta_section(report: dict, generated_at: Optional[str], extra: Sequence = ()) -> str:
    inputs = report.get("inputs") or {}
    rows = []
    labels = {"ground_truth": "ground truth", "results": "results",
              "annotations": "annotations", "imageset": "image set",
              "detections": "detections", "num_images": "images",
              "num_detections": "detections (count)",
              "ground_truth_sha256": "ground truth fingerprint",
              "num_results": "results (count)",
              "num_results_kept": "results kept by the cap",
              "num_results_evaluated": "results evaluated (federated filter)"}
    for k, v in inputs.items():
        if v is None or k == "unused_detection_files":
            continue
        text = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
        rows.append((labels.get(k, k.replace("_", " ")), f"<code>{escape(text)}</code>"))
    proto = report.get("protocol")
    if proto == "voc":
        rows.append(("protocol", f"PASCAL VOC ({escape(str(report.get('metric')))}, "
                     f"{escape(str(report.get('compat')))} rules)"))
        rows.append(("IoU threshold", escape(f"{report.get('iou_threshold')}")))
    elif proto == "lvis":
        rows += _lvis_meta_rows(report)
    else:
        p = report.get("params") or {}
        rows.append(("protocol", f"COCO ({escape(str(report.get('iou_type', 'bbox')))}, "
                     "pycocotools COCOeval semantics)"))
        thr = p.get("iou_thresholds") or []
        if thr:
            span = (f"{thr[0]:.2f}:{thr[-1]:.2f} ({len(thr)} thresholds)" if len(thr) > 1
                    else f"{thr[0]:.2f}")
            rows.append(("IoU" if report.get("iou_type") != "keypoints" else "OKS",
                         escape(span)))
        if p.get("area_ranges"):
            rows.append(("area ranges", escape(", ".join(
                f"{n} {lo:g}–{hi:g}" for n, (lo, hi) in p["area_ranges"].items()))))
        if p.get("max_dets"):
            rows.append(("max detections", escape(", ".join(map(str, p["max_dets"])))))
        for k in ("class_agnostic",):
            if p.get(k):
                rows.append((k.replace("_", " "), "yes"))
    unc = report.get("uncertainty") or {}
    if unc:
        rows.append(("uncertainty", escape(
            f"{unc.get('method', 'bootstrap')}, {unc.get('samples')} samples, seed "
            f"{unc.get('seed')}, {100 * float(unc.get('confidence', 0.95)):g}% intervals")))
    if report.get("engine"):
        rows.append(("engine", escape(json.dumps(report["engine"]))))
    rows += list(extra)
    rows.append(("deteval", escape(str(report.get("deteval_version", "?")))
                 + (f" (page by {escape(__version__)})"
                    if report.get("deteval_version") not in (None, __version__) else "")))
    if generated_at:
        rows.append(("page generated", escape(generated_at)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    notes = report.get("notes") or []
    unused = inputs.get("unused_detection_files")
    if unused:
        notes = list(notes) + [f"{len(unused)} result file(s) match no evaluated class and were "
                               f"not read: {', '.join(unused[:5])}"
                               + (", ..." if len(unused) > 5 else "")]
    note = "".join(f'<p class="note">note: {escape(n)}</p>' for n in notes)
    return (f'<section id="evaluated"><h2>What was evaluated</h2><dl class="meta">{dl}</dl>'
            f"{note}</section>")


def _lvis_meta_rows(report: dict) -> List[Tuple[str, str]]:
    """What-was-evaluated rows of an LVIS report (escaped HTML)."""
    p = report.get("params") or {}
    iou_type = escape(str(report.get("iou_type", "bbox")))
    if p.get("fixed"):
        rows = [("protocol", f"LVIS Fixed AP ({iou_type}; Dave et al. 2021, lvis-api 0.5.3 "
                 "matching)")]
    else:
        rows = [("protocol", f"LVIS federated ({iou_type}, lvis-api 0.5.3 LVISEval "
                 "semantics)")]
    thr = p.get("iou_thresholds") or []
    if thr:
        rows.append(("IoU", escape(f"{thr[0]:.2f}:{thr[-1]:.2f} ({len(thr)} thresholds)"
                                   if len(thr) > 1 else f"{thr[0]:.2f}")))
    if p.get("area_ranges"):
        rows.append(("area ranges", escape(", ".join(
            f"{n} {lo:g}–{hi:g}" for n, (lo, hi) in p["area_ranges"].items()))))
    if p.get("fixed"):
        cap = p.get("max_dets_per_class")
        rows.append(("max results", escape(
            "no per-image cap; " + (f"at most {cap:,} per class over the dataset"
                                    if isinstance(cap, int) else "no per-class cap"))))
    elif isinstance(p.get("max_dets"), int):
        rows.append(("max results", escape(f"{p['max_dets']:,} per image (highest scores, "
                                           "over all its classes)")))
    groups = _frequency_counts(report)
    if groups:
        rows.append(("frequency groups", escape(" · ".join(
            f"{_FREQUENCIES.get(code, code)} {n:,} classes ({with_gt:,} with ground truth)"
            for code, (n, with_gt) in groups.items()))))
    return rows


def _frequency_counts(report: dict) -> Dict[str, Tuple[int, int]]:
    """{frequency code: (classes, classes with a defined AP)}, in r, c, f order."""
    out: Dict[str, List[int]] = {}
    for c in report.get("classes") or []:
        f = c.get("frequency")
        if f is None:
            continue
        n = out.setdefault(str(f), [0, 0])
        n[0] += 1
        n[1] += _num(c.get("AP")) is not None
    order = {k: i for i, k in enumerate(_FREQUENCIES)}
    return {k: (v[0], v[1]) for k, v in sorted(out.items(), key=lambda kv: (
        order.get(kv[0], len(order)), kv[0]))}


def _headline_section(report: dict) -> str:
    figs = _figures(report)
    iv = _intervals(report)
    unc = report.get("uncertainty") or {}
    conf = float(unc.get("confidence", 0.95))
    main = _headline_key(report)
    cards = []
    for k, v in figs.items():
        ci = (f'<div class="ci">{100 * conf:g}% [{iv[k][0]:.4f}, {iv[k][1]:.4f}]</div>'
              if k in iv else "")
        cls = "card main" if k == main else "card"
        cards.append(f'<div class="{cls}" data-figure="{escape(k)}"><div class="k">'
                     f'{escape(k)}</div><div class="v">{_fmt(v)}</div>{ci}</div>')
    extra = ""
    if report.get("protocol") == "voc":
        classes = report.get("classes") or []
        n_in = report.get("num_classes_in_mAP", sum(c.get("ap") is not None for c in classes))
        extra = (f'<p class="note">mean over {n_in} of {len(classes)} classes '
                 f'({escape(str(report.get("metric")))}, IoU {report.get("iou_threshold")})</p>')
    elif report.get("protocol") == "lvis":
        groups = _frequency_counts(report)
        p = report.get("params") or {}
        cap = ("no per-image cap (Fixed AP)" if p.get("fixed") else
               f"at most {p.get('max_dets')} results per image")
        extra = ('<p class="note">APr, APc, APf: AP over the '
                 + escape(", ".join(f"{_FREQUENCIES.get(k, k)} ({n} classes)"
                                    for k, (n, _) in groups.items()))
                 + f' classes; AR: recall averaged over IoU 0.50:0.95, {escape(cap)}. '
                 '– : undefined (no ground truth counted; lvis-api prints -1).</p>')
    chart = ""
    with_iv = [k for k in figs if k in iv]
    if with_iv:
        items = [{"label": k, "value": figs[k], "interval": iv[k],
                  "note": f"{_fmt(figs[k])} [{iv[k][0]:.3f}, {iv[k][1]:.3f}]"}
                 for k in with_iv]
        chart = ("<h3>Figures with their bootstrap intervals</h3>"
                 + _hbar_svg(items, width=640, label_width=70, domain=1.0))
    return (f'<section id="headline"><h2>Headline figures</h2><div class="cards">'
            f'{"".join(cards)}</div>{extra}{chart}</section>')


def _classes_section(report: dict, page_size: int) -> str:
    classes = report.get("classes") or []
    cols = _class_columns(report)
    best = (report.get("curves") or {}).get("best_f1") or {}
    ci = _class_intervals(report)
    hk = _headline_class_key(report)
    has_id = any(c.get("id") is not None for c in classes)
    heads = []
    if has_id:
        heads.append('<th class="sortable" data-type="num">id</th>')
    heads.append('<th class="sortable name" data-type="text">class</th>')
    for k, h, kind in cols:
        first = ' data-first="ascending"' if kind == "t" else ""  # rare, common, frequent
        heads.append(f'<th class="sortable{" name" if kind == "t" else ""}" data-type="num" '
                     f'data-col="{escape(k)}"{first}>{escape(h)}</th>')
    if best:
        heads += ['<th class="sortable" data-type="num" data-col="best_f1" title="best F1 over '
                  'score thresholds, IoU 0.5">best F1</th>',
                  '<th class="sortable" data-type="num" data-col="best_f1_score" title="score '
                  'threshold of the best F1 (keep detections with score >= it)">at score ≥</th>',
                  '<th class="sortable" data-type="num" data-col="best_f1_precision">P</th>',
                  '<th class="sortable" data-type="num" data-col="best_f1_recall">R</th>']
    body = []
    for c in classes:
        name = str(c.get("name"))
        hv = _num(c.get(hk))
        tds = []
        if has_id:
            tds.append(f'<td data-v="{"" if c.get("id") is None else c.get("id")}">'
                       f'{escape(str(c.get("id", "")))}</td>')
        tds.append(f'<td class="name">{escape(name)}</td>')
        for k, _, kind in cols:
            if kind == "t":  # the LVIS frequency group: sorts r < c < f
                f = c.get(k)
                rank = list(_FREQUENCIES).index(f) if f in _FREQUENCIES else ""
                tds.append(f'<td data-v="{rank}" class="name">'
                           f'{escape(_FREQUENCIES.get(f, "–" if f is None else str(f)))}</td>')
                continue
            v = _num(c.get(k))
            dv = "" if v is None else repr(v)
            if kind == "i":
                tds.append(f'<td data-v="{dv}">{_fmt_int(v)}</td>')
                continue
            txt = _fmt(v)
            if k == hk:
                bar = ('<span class="track"><span class="bar" style="width:'
                       f'{100 * min(max(v, 0), 1):.0f}%"></span></span>' if v is not None
                       else '<span class="track"></span>')
                iv = _class_interval(ci, name, k)
                civ = (f' <span class="ci">[{iv[0]:.3f}, {iv[1]:.3f}]</span>' if iv else "")
                tds.append(f'<td data-v="{dv}">{bar}{txt}{civ}</td>')
            else:
                tds.append(f'<td data-v="{dv}">{txt}</td>')
        if best:
            b = best.get(name) or {}
            for key, digits in (("f1", 4), ("score", None), ("precision", 4), ("recall", 4)):
                v = _num(b.get(key))
                shown = ("–" if v is None else (repr(b.get(key)) if digits is None
                                                else f"{v:.{digits}f}"))
                tds.append(f'<td data-v="{"" if v is None else repr(v)}">{escape(shown)}</td>')
        label = "AP" if hk == "ap" else hk
        freq = (f' data-frequency="{escape(str(c.get("frequency")))}"'
                if c.get("frequency") is not None else "")
        body.append(f'<tr data-name="{escape(name)}"{freq} data-headline="{label} '
                    f'{_fmt(hv, 3)}">{"".join(tds)}</tr>')
    controls = ('<div class="controls"><input type="search" id="classes-filter" '
                'data-filter-for="classes" placeholder="filter classes by name" '
                'aria-label="filter classes by name">' + _frequency_facet(report)
                + '<span data-pager-for="classes"><button class="prev" type="button">‹ prev'
                '</button> <span class="info"></span> <button class="next" type="button">next ›'
                '</button> <label>rows per page <select>'
                + "".join(f'<option value="{n}">{"all" if n == 0 else n}</option>'
                          for n in sorted({25, 50, 100, page_size} - {0}) + [0])
                + '</select></label></span></div>')
    note = ("Click a column to sort (again to reverse), type to filter. – : undefined ("
            + ("no non-difficult ground truth of that class)." if report.get("protocol") == "voc"
               else "no ground truth of that class in that cell; pycocotools prints -1)."))
    if best:
        note += (" Best F1: the score threshold maximising F1 = 2TP/(TP+FP+nGT) at IoU "
                 f"{report.get('iou_threshold', 0.5) if report.get('protocol') == 'voc' else 0.5}"
                 " (an operating point to deploy at).")
    if ci:
        note += " Brackets: bootstrap interval."
    if report.get("protocol") == "lvis":
        note = note.replace("pycocotools prints -1", "lvis-api prints -1")
        note += (" Frequency: the LVIS group of the class (rare: 1-10 training images, "
                 "common: 11-100, frequent: more); choose one above.")
    return (f'<section id="classes-section"><h2>Per class ({len(classes)})</h2>{controls}'
            f'<div class="tablewrap"><table class="dt" id="classes" data-page-size="{page_size}">'
            f'<thead><tr>{"".join(heads)}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            f'</div><p class="note">{escape(note)}</p></section>')


def _frequency_facet(report: dict) -> str:
    """The frequency-group filter of the class table (LVIS), or ''."""
    groups = _frequency_counts(report)
    if not groups:
        return ""
    opts = "".join(f'<option value="{escape(k)}">{escape(_FREQUENCIES.get(k, k))} ({n:,})'
                   f'</option>' for k, (n, _) in groups.items())
    return ('<select id="classes-frequency" data-facet-for="classes" data-facet="frequency" '
            f'aria-label="filter classes by frequency group"><option value="">every frequency'
            f'</option>{opts}</select>')


def _ap_chart(report: dict, ci: dict, hk: str) -> str:
    freq = {str(c.get("name")): c.get("frequency") for c in report.get("classes") or []}
    rows = [(str(c.get("name")), _num(c.get(hk))) for c in report.get("classes") or []]
    rows = [r for r in rows if r[1] is not None]
    if len(rows) < 2:
        return ""
    rows.sort(key=lambda r: (-r[1], r[0]))
    label = "AP" if hk in ("ap", "AP") else hk
    title = f"{label} by class, best first"
    if len(rows) > MAX_AP_CHART_CLASSES:
        half = MAX_AP_CHART_CLASSES // 2
        title = (f"{label} by class: the {half} best and the {half} worst of {len(rows)} "
                 "(all in the table)")
        rows = rows[:half] + [("…", None)] + rows[-half:]
    items = []
    for name, v in rows:
        iv = _class_interval(ci, name, hk) if v is not None else None
        f = freq.get(name) if v is not None else None
        items.append({"label": name if len(name) <= 24 else name[:23] + "…", "value": v,
                      "interval": iv, "color": _FREQUENCY_COLORS.get(f),
                      "note": "" if v is None else f"{v:.3f}"
                      + (f" ({_FREQUENCIES[f]})" if f in _FREQUENCIES else "")})
    lw = min(190, 14 + 6.6 * max(len(i["label"]) for i in items))
    legend = ""
    if any(i["color"] for i in items):
        legend = ('<p class="note">' + " ".join(
            f'<span class="swatch" style="border-color:{c};border-top-width:8px"></span>'
            f'{escape(_FREQUENCIES[k])}' for k, c in _FREQUENCY_COLORS.items()) + "</p>")
    return (f'<h3 style="margin-top:0">{escape(title)}</h3>{legend}'
            + _hbar_svg(items, width=600, label_width=lw, domain=1.0))


def _overview_section(report: dict) -> str:
    """Mean precision-recall curves beside AP by class."""
    ap_chart = _ap_chart(report, _class_intervals(report), _headline_class_key(report))
    curves = report.get("curves")
    if not isinstance(curves, dict) or not curves.get("iou"):
        return (f'<section id="overview"><h2>Overview</h2>{ap_chart}</section>'
                if ap_chart else "")
    recall = curves.get("recall") or list(np.linspace(0, 1, 101))
    ious = list(curves["iou"])
    series = []
    for j, iou in enumerate(ious):
        color, dash = _IOU_STYLE[j % len(_IOU_STYLE)]
        mean = curves["iou"][iou].get("mean")
        ap = None
        if mean is not None:
            ap = float(np.mean(mean))
        voc = report.get("protocol") == "voc"
        label = f"IoU {iou}" + ("" if ap is None or voc else f" (AP {ap:.3f})")
        series.append({"label": label, "values": mean, "color": color, "dash": dash})
    first = curves["iou"][ious[0]].get("per_class") or {}
    faint = [v for v in first.values() if v is not None]
    mean_svg = _pr_svg(recall, series, title="mean over classes",
                       background=faint if 2 <= len(faint) <= 100 else None,
                       background_label=f"each class, IoU {ious[0]}")
    p = report.get("params") or {}
    if report.get("protocol") == "voc":
        origin = "the precision envelope at 101 recall points"
    elif report.get("protocol") == "lvis":
        origin = ("lvis-api's interpolated precision at its 101 recall thresholds (area all, "
                  + ("Fixed AP" if p.get("fixed") else f"max {p.get('max_dets')} results per "
                     "image") + ")")
    else:
        md = p.get("max_dets") or [100]
        origin = ("COCOeval's interpolated precision at its 101 recall thresholds (area all, "
                  "max dets " + str(md[-1] if isinstance(md, list) else md) + ")")
    area = ("" if report.get("protocol") == "voc" else
            "; its mean over the recall thresholds is the AP at that IoU (AP50, AP75)")
    note = (f'<p class="note" style="max-width:420px">Curves are {escape(origin)}. The mean is '
            f'over the classes with ground truth{escape(area)}.</p>')
    return (f'<section id="overview"><h2>Overview</h2><div class="figs"><div>{mean_svg}{note}'
            f'</div><div>{ap_chart}</div></div></section>')


def _curves_section(report: dict) -> str:
    """Per-class precision-recall small multiples, drawn by the page's script."""
    curves = report.get("curves")
    if not isinstance(curves, dict) or not curves.get("iou"):
        return ""
    recall = curves.get("recall") or list(np.linspace(0, 1, 101))
    ious = list(curves["iou"])
    # per-class data for the script: precision x 10000 as integers, trailing zeros trimmed
    per = {}
    for iou in ious:
        per[iou] = {}
        for name, vals in (curves["iou"][iou].get("per_class") or {}).items():
            if vals is None:
                per[iou][name] = None
                continue
            q = [int(round(10000 * v)) for v in vals]
            while q and q[-1] == 0:
                q.pop()
            per[iou][name] = q
    best = {}
    for name, b in (curves.get("best_f1") or {}).items():
        if b:
            best[name] = [round(b["precision"], 5), round(b["recall"], 5), b["f1"], b["score"]]
    data = {"recall": [round(r, 6) for r in recall], "ious": ious, "per_class": per,
            "best_f1": best, "styles": [_IOU_STYLE[j % len(_IOU_STYLE)] for j in range(len(ious))]}
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    keys = " ".join(f'<span class="swatch" style="border-color:{c};'
                    f'{"border-top-style:dashed" if d else ""}"></span>IoU {escape(i)}'
                    for i, (c, d) in zip(ious, data["styles"]))
    dot = (" Circle: the best-F1 operating point." if best else "")
    return (f'<section id="curves"><h2>Precision–recall per class</h2>'
            f'<p class="note">{keys}; the classes on the table\'s current page, in its order '
            f'and filter.{escape(dot)}</p><div class="multiples" id="multiples">'
            f'</div><script type="application/json" id="curves-data">{blob}</script></section>')


_TIDE_NAMES = {"Cls": "classification", "Loc": "localisation", "Both": "cls + loc",
               "Dupe": "duplicate", "Bkg": "background", "Miss": "missed GT",
               "FalsePos": "false positives", "FalseNeg": "false negatives"}
_TIDE_COLORS = {"Cls": "#E69F00", "Loc": "#56B4E9", "Both": "#009E73", "Dupe": "#F0E442",
                "Bkg": "#D55E00", "Miss": "#CC79A7", "FalsePos": "#7f7f7f",
                "FalseNeg": "#4d4d4d"}


def _tide_section(report: dict) -> str:
    tide = report.get("tide")
    if not isinstance(tide, dict):
        return ""
    counts = tide.get("counts") or {}

    def items(group):
        out = []
        for k, v in (tide.get(group) or {}).items():
            v = _num(v)
            n = counts.get(k)
            out.append({"label": f"{k} · {_TIDE_NAMES.get(k, k)}", "value": v,
                        "color": _TIDE_COLORS.get(k),
                        "note": ("–" if v is None else f"{v:.2f}")
                        + ("" if n is None else f"  ({n:,} errors)")})
        return out

    main, special = items("main"), items("special")
    svg = _hbar_svg(main, width=620, label_width=170, unit="dAP",
                    title="main errors: AP50 gained by fixing each") if main else ""
    svg2 = _hbar_svg(special, width=620, label_width=170, unit="dAP",
                     title="special: all false positives / all false negatives") if special else ""
    ap50 = _num(tide.get("ap50"))
    head = (f'<p class="note">TIDE (Bolya et al. 2020), tidecv semantics: positive IoU '
            f'{tide.get("pos_threshold", 0.5)}, background IoU '
            f'{tide.get("background_threshold", 0.1)}. tidecv\'s own AP50 '
            f'{"–" if ap50 is None else f"{ap50:.2f}"} (0–100 scale). dAP: how much AP50 would '
            f'rise if that error type were fixed (each on its own).</p>')
    return (f'<section id="tide"><h2>Error breakdown (TIDE)</h2>{head}<div class="figs">'
            f'{svg}{svg2}</div></section>')


_NO_PAIRS = '<p class="note">none: no detection matched a ground truth of another class</p>'


def _confusion_section(report: dict) -> str:
    conf = report.get("confusion")
    if not isinstance(conf, dict) or not conf.get("matrix"):
        return ""
    names = [str(n) for n in conf.get("classes") or []]
    m = np.asarray(conf["matrix"], dtype=np.int64)
    K = len(names) - 1
    row_sums = m.sum(axis=1)
    off = m.copy()
    np.fill_diagonal(off, 0)
    note = ""
    idx = list(range(K + 1))
    if K > MAX_HEATMAP_CLASSES:
        mass = off[:K, :].sum(axis=1) + off[:, :K].sum(axis=0)
        top = sorted(np.argsort(-mass[:K], kind="stable")[:MAX_HEATMAP_CLASSES].tolist())
        idx = top + [K]
        note = (f" Showing the {MAX_HEATMAP_CLASSES} of {K} classes with the most confusions "
                "(off-diagonal counts, background included); every pair is in confusion.csv.")
    sub = m[np.ix_(idx, idx)]
    svg = _heatmap_svg([names[i] for i in idx], sub, full_row_sums=row_sums[idx])
    # the most frequent misclassifications (background is the matrix's last row and column)
    pairs = [(int(off[i, j]), i, j) for i, j in zip(*np.nonzero(off[:K, :K]))]
    pairs.sort(key=lambda t: (-t[0], t[1], t[2]))
    rows = []
    for v, i, j in pairs[:15]:
        share = f"{100 * v / row_sums[i]:.1f}%" if row_sums[i] else "–"
        rows.append(f'<tr><td class="name">{escape(names[i])}</td><td class="name">'
                    f'{escape(names[j])}</td><td>{v:,}</td><td>{share}</td>'
                    f'</tr>')
    table = ('<div class="tablewrap" style="max-width:720px"><table class="static">'
             '<thead><tr><th class="name">ground truth</th><th class="name">'
             'predicted</th><th>count</th><th>of the GT class</th></tr>'
             f'</thead><tbody>{"".join(rows)}</tbody></table></div>') if rows else ""
    head = (f'<p class="note">Detections with score ≥ {conf.get("conf_threshold")} matched to '
            f'ground truth at IoU &gt; {conf.get("iou_threshold")} (supervision '
            f'ConfusionMatrix semantics). Rows: ground-truth class; columns: predicted class; the '
            f'last row and column are background (false detections, missed objects). Colour: '
            f'share of the row.{escape(note)}</p>')
    return (f'<section id="confusion"><h2>Confusion matrix</h2>{head}'
            f'<div style="overflow-x:auto">{svg}</div><h3>Most frequent misclassifications</h3>'
            f'{table or _NO_PAIRS}</section>')


def _flat_image(im: dict) -> dict:
    """An ``images`` entry with nested counts (``{"tide": {"Cls": 1, ...}}``) flattened to
    ``tide_Cls``; other values kept as they are."""
    out = {}
    for k, v in im.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                out[f"{k}_{k2}"] = v2
        else:
            out[k] = v
    return out


def _images_section(report: dict) -> str:
    images = report.get("images")
    if not isinstance(images, list) or not images:
        return ""
    images = [_flat_image(im) for im in images if isinstance(im, dict)]

    def bad(im):
        return (_num(im.get("fp")) or 0) + (_num(im.get("fn")) or 0)

    worst = sorted(images, key=lambda im: (-bad(im), im.get("image_id", 0)))[:WORST_IMAGES]
    base = ["image_id", "file_name", "num_gt", "num_detections", "tp", "fp", "fn", "ignored"]
    extra = []
    for im in worst:
        extra += [k for k in im if k not in base and k not in extra
                  and isinstance(im[k], (int, float)) and not isinstance(im[k], bool)]
    cols = [c for c in base if any(c in im for im in worst)] + extra
    heads = "".join(f'<th{" class=name" if c == "file_name" else ""}>'
                    f'{escape(c.replace("num_", "").replace("_", " "))}</th>' for c in cols)
    heads += "<th>fp + fn</th>"
    rows = []
    for im in worst:
        tds = []
        for c in cols:
            v = im.get(c)
            if c == "file_name":
                tds.append(f'<td class="name"><code>{escape(str(v or ""))}</code></td>')
            else:
                tds.append(f"<td>{escape('–' if v is None else str(v))}</td>")
        tds.append(f"<td><b>{int(bad(im)):,}</b></td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    total = {k: int(sum((_num(im.get(k)) or 0) for im in images)) for k in ("tp", "fp", "fn")}
    return (f'<section id="images"><h2>Worst images</h2><p class="note">The '
            f'{len(worst)} of {len(images):,} images with the most errors (false positives + '
            f'false negatives at IoU 0.5, area all, max dets 100; ties by image id). Over all '
            f'images: TP {total["tp"]:,}, FP {total["fp"]:,}, FN {total["fn"]:,}. Every image '
            f'is in images.csv.</p><div class="tablewrap"><table class="static"><thead><tr>'
            f'{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')


def _downloads_section(files: Dict[str, Tuple[str, str]]) -> str:
    links = "".join(f'<a download="{escape(name)}" href="{_data_url(text, mime)}">'
                    f'⤓ {escape(name)}</a>' for name, (text, mime) in files.items())
    return (f'<section id="downloads"><h2>Data</h2><div class="dl">{links}</div>'
            f'<p class="note">The figures of this page as CSV (one row per entity, empty cell '
            f'for undefined) and Markdown (for pull requests and model cards), embedded in the '
            f'page.</p></section>')


def render_report(report: dict, *, generated_at: Optional[str] = None,
                  title: Optional[str] = None, page_size: int = 50) -> str:
    """One self-contained HTML page of a report.

    Parameters
    ----------
    report : dict
        A JSON report (``CocoReport.to_dict()`` / ``VocReport.to_dict()`` /
        ``LvisReport.to_dict()``, possibly with
        the diagnostics keys ``curves``, ``tide``, ``confusion``, ``images`` and
        ``uncertainty``). Sections whose key is absent are left out.
    generated_at : str, optional
        When the page was made (shown as is); the CLI passes the current UTC time.
    title : str, optional
        Default: the protocol and the results file name.
    page_size : int
        Rows per page of the per-class table (0: all).

    Returns
    -------
    str
        The HTML document (UTF-8 text; no external resource of any kind).
    """
    proto = report.get("protocol")
    inputs = report.get("inputs") or {}
    what = ("PASCAL VOC" if proto == "voc" else
            f"LVIS {report.get('iou_type', 'bbox')}" if proto == "lvis" else
            f"COCO {report.get('iou_type', 'bbox')}")
    src = inputs.get("results") or inputs.get("detections") or ""
    if title is None:
        title = f"deteval · {what}" + (f" · {str(src).rstrip('/').split('/')[-1]}" if src else "")
    figs = _figures(report)
    hk = _headline_key(report)
    n_cls = len(report.get("classes") or [])
    subtitle = (f"{escape(hk)} <b>{_fmt(figs.get(hk))}</b> · {n_cls} classes"
                + (f" · {inputs['num_images']:,} images" if isinstance(
                    inputs.get("num_images"), int) else "")
                + (f" · {inputs['num_detections']:,} detections" if isinstance(
                    inputs.get("num_detections"), int) else "")
                + (f" · {inputs['num_results']:,} results" if isinstance(
                    inputs.get("num_results"), int) else ""))
    body, nav = [], []

    def add(anchor, label, html_text):
        if html_text:
            body.append(html_text)
            nav.append((anchor, label))

    add("evaluated", "What was evaluated", _meta_section(report, generated_at))
    add("headline", "Headline", _headline_section(report))
    add("overview", "Overview", _overview_section(report))
    add("classes-section", "Per class", _classes_section(report, page_size))
    add("curves", "PR curves", _curves_section(report))
    add("tide", "TIDE errors", _tide_section(report))
    add("confusion", "Confusion", _confusion_section(report))
    add("images", "Worst images", _images_section(report))
    files = {name: (text, "text/csv") for name, text in report_csv(report).items()}
    files["report.md"] = (report_markdown(report), "text/markdown")
    add("downloads", "Data", _downloads_section(files))
    return _page(title, subtitle, nav, body)


# -------------------------------------------------------------------------- comparison

def _delta_cell(d: Optional[float], max_drop: float, extra: str = "") -> str:
    if d is None:
        return f'<td data-v="">–{extra}</td>'
    cls = "bad" if -d > max_drop else ("good" if d > 0 else "")
    return f'<td data-v="{d!r}" class="{cls}">{d:+.4f}{extra}</td>'


def _delta_domain(items) -> float:
    """Half-width of a delta chart: the largest |delta|, at least 0.01, rounded up to
    1, 2 or 5 times a power of ten (equal deltas do not blow up to a 1e-12 scale)."""
    top = max([abs(i["value"]) for i in items if i["value"] is not None] + [0.01])
    mag = 10 ** math.floor(math.log10(top))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= top)


def render_comparison(baseline: dict, candidate: dict, comparison, *,
                      names: Tuple[str, str] = ("baseline", "candidate"),
                      generated_at: Optional[str] = None, page_size: int = 50) -> str:
    """One self-contained HTML page comparing two reports: the gate's verdict, the figures
    side by side, and per-class deltas with regressions first.

    Parameters
    ----------
    baseline, candidate : dict
        JSON reports of the same protocol and ground truth (already checked by
        :func:`deteval.compare.compare_reports`).
    comparison : deteval.compare.Comparison
        The gate's result (its rows, ``max_drop`` and ``passed`` are shown as they are).
    names : the two reports' labels (file names).

    Notes
    -----
    A class row is marked regressed when its headline figure (AP) dropped by more than
    ``max_drop``, the gate's own rule; the verdict counts classes only when the gate was
    run with ``--per-class``.
    """
    max_drop = float(comparison.max_drop)
    passed = bool(comparison.passed)
    regs = [r.figure for r in comparison.regressions]
    verdict = (f'<div class="verdict pass" id="verdict">PASSED · no figure dropped by more than '
               f'{max_drop:g}</div>' if passed else
               f'<div class="verdict fail" id="verdict">REGRESSION · {len(regs)} figure(s) '
               f'dropped by more than {max_drop:g}: {escape(", ".join(regs[:12]))}'
               f'{" …" if len(regs) > 12 else ""}</div>')
    # figures
    headline = _figures(baseline)

    def gate_row(r) -> str:
        di = getattr(r, "delta_interval", None)  # paired bootstrap (issue 16), when present
        extra = f' <span class="ci">[{di[0]:+.4f}, {di[1]:+.4f}]</span>' if di else ""
        return (f'<tr class="{"regressed" if r.regressed else ""}"><td class="name">'
                f'{escape(r.figure)}</td><td>{_fmt(r.baseline)}</td><td>'
                f'{_fmt(r.candidate)}</td>{_delta_cell(r.delta, max_drop, extra)}'
                f'<td class="name">{"REGRESSED" if r.regressed else "ok"}</td></tr>')

    gate_details = ""
    head_rows = [r for r in comparison.rows if r.figure in headline]
    other_rows = sorted((r for r in comparison.rows if r.figure not in headline),
                        key=lambda r: (not r.regressed, r.delta is None, r.delta or 0))
    thead = ('<thead><tr><th class="name">figure</th><th>baseline</th><th>candidate</th>'
             '<th>delta</th><th class="name">gate</th></tr></thead>')
    figs_table = ('<div class="tablewrap" style="max-width:760px"><table class="static">'
                  + thead + "<tbody>" + "".join(map(gate_row, head_rows))
                  + "</tbody></table></div>")
    if other_rows:
        n_bad = sum(r.regressed for r in other_rows)
        gate_details = (f'<details style="margin-top:12px"{" open" if n_bad else ""}><summary>'
                       f'every per-class figure the gate checked ({len(other_rows)}, '
                       f'{n_bad} regressed; regressions first)</summary><div class="tablewrap" '
                       f'style="max-width:760px;max-height:420px;overflow-y:auto">'
                       f'<table class="static">{thead}<tbody>'
                       + "".join(map(gate_row, other_rows[:2000]))
                       + "</tbody></table></div></details>")
    fig_items = [{"label": r.figure, "value": r.delta,
                  "note": "–" if r.delta is None else f"{r.delta:+.4f}"}
                 for r in head_rows]
    fig_chart = (_hbar_svg(fig_items, width=620, label_width=70, diverging=True,
                           title="candidate − baseline", domain=_delta_domain(fig_items))
                 if fig_items else "")
    # per class
    proto = baseline.get("protocol")
    key = "name" if proto == "voc" else "id"
    hk = _headline_class_key(baseline)
    cols = ([("ap", "AP")] if proto == "voc" else
            [(k, k) for k in ("AP", "AP50", "AP75", "AR100")
             if any(k in c for c in baseline.get("classes") or [])])
    cand = {c.get(key): c for c in candidate.get("classes") or []}
    entries = []
    for bc in baseline.get("classes") or []:
        cc = cand.get(bc.get(key), {})
        b, c = _num(bc.get(hk)), _num(cc.get(hk))
        d = None if b is None or c is None else c - b
        entries.append((bc, cc, d))
    entries.sort(key=lambda e: (e[2] is None, e[2] if e[2] is not None else 0,
                                str(e[0].get("name"))))
    n_reg = sum(1 for _, _, d in entries if d is not None and -d > max_drop)
    heads = ['<th class="sortable name" data-type="text">class</th>']
    for k, h in cols:
        heads += [f'<th class="sortable" data-type="num">{escape(h)} base</th>',
                  f'<th class="sortable" data-type="num">{escape(h)} cand</th>',
                  f'<th class="sortable" data-type="num" data-col="d{escape(k)}">Δ{escape(h)}</th>']
    body = []
    for bc, cc, d in entries:
        name = str(bc.get("name"))
        tds = [f'<td class="name">{escape(name)}</td>']
        for k, _ in cols:
            b, c = _num(bc.get(k)), _num(cc.get(k))
            dd = None if b is None or c is None else c - b
            tds += [f'<td data-v="{"" if b is None else repr(b)}">{_fmt(b)}</td>',
                    f'<td data-v="{"" if c is None else repr(c)}">{_fmt(c)}</td>',
                    _delta_cell(dd, max_drop)]
        reg = d is not None and -d > max_drop
        body.append(f'<tr data-name="{escape(name)}" class="{"regressed" if reg else ""}">'
                    f'{"".join(tds)}</tr>')
    controls = ('<div class="controls"><input type="search" id="classes-filter" '
                'data-filter-for="classes" placeholder="filter classes by name" '
                'aria-label="filter classes by name"><span data-pager-for="classes">'
                '<button class="prev" type="button">‹ prev</button> <span class="info"></span> '
                '<button class="next" type="button">next ›</button> <label>rows per page '
                '<select><option value="25">25</option><option value="50">50</option>'
                '<option value="100">100</option><option value="0">all</option></select>'
                '</label></span></div>')
    class_items = [{"label": str(bc.get("name"))[:24], "value": d,
                    "note": "–" if d is None else f"{d:+.4f}",
                    "color": "#D55E00" if d is not None and -d > max_drop else
                    ("#0072B2" if d is not None and d >= 0 else "#E69F00")}
                   for bc, cc, d in entries if d is not None]
    chart_title = f"Δ{'AP'} by class, worst first"
    if len(class_items) > MAX_AP_CHART_CLASSES:
        half = MAX_AP_CHART_CLASSES // 2
        class_items = class_items[:half] + [{"label": "…", "value": None, "note": ""}] + \
            class_items[-half:]
        chart_title = f"ΔAP by class: the {half} largest drops and the {half} largest gains"
    class_chart = (_hbar_svg(class_items, width=640, label_width=170, diverging=True,
                             title=chart_title, domain=_delta_domain(class_items))
                   if class_items else "")
    meta_b = _meta_section(baseline, None).replace('id="evaluated"', 'id="evaluated-b"') \
        .replace("What was evaluated", f"Baseline · {escape(names[0])}")
    meta_c = _meta_section(candidate, None).replace('id="evaluated"', 'id="evaluated-c"') \
        .replace("What was evaluated", f"Candidate · {escape(names[1])}")
    sections = [
        ('verdict-section', "Verdict",
         f'<section id="verdict-section"><h2>Verdict</h2>{verdict}<p class="note">Gate: a '
         f'figure regresses when baseline − candidate &gt; {max_drop:g}. Class rows below are '
         f'marked by the same rule on {escape(hk)} ({n_reg} of {len(entries)} classes).</p>'
         '</section>'),
        ("figures", "Figures", f'<section id="figures"><h2>Figures</h2><div class="figs">'
                               f'{figs_table}{fig_chart}</div>{gate_details}</section>'),
        ("classes-section", "Per class",
         f'<section id="classes-section"><h2>Per class, regressions first</h2>{controls}'
         f'<div class="tablewrap"><table class="dt" id="classes" data-page-size="{page_size}">'
         f'<thead><tr>{"".join(heads)}</tr></thead><tbody>{"".join(body)}</tbody></table>'
         f'</div><div style="margin-top:18px">{class_chart}</div></section>'),
        ("evaluated-b", "Inputs", f'<div class="figs" style="gap:40px">{meta_b}{meta_c}</div>'),
    ]
    ok = "passed" if passed else "REGRESSION"
    subtitle = (f"{escape(names[0])} → {escape(names[1])} · gate "
                f"<b>{ok}</b> (max drop {max_drop:g})"
                + (f" · page generated {escape(generated_at)}" if generated_at else ""))
    return _page("deteval · comparison", subtitle, [(a, t) for a, t, _ in sections],
                 [s for _, _, s in sections])
