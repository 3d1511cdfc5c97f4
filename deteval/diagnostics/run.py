"""Diagnostics beside an evaluation: the one pass and the combined report.

:func:`coco_diagnostics` / :func:`voc_diagnostics` compute the diagnostics from an
evaluation's tables and match records (:func:`deteval.evaluate_coco`'s ``stages``) — the
curves and the per-image counts from the evaluation's own records when its parameters contain
pycocotools' standard cell (IoU 0.5 and 0.75, area ``all``, max dets 100), else from one
extra matching pass with exactly that cell — and wrap the plain report in a
:class:`DiagnosticsReport`, whose JSON, printed tables, Markdown and CSV files hold both.
The CLI's options are in :mod:`deteval.diagnostics.options`.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import numpy as np

from ..errors import InputError, expected
from . import export
from .confusion import ConfusionResult, coco_confusion, voc_confusion
from .curves import (ALL_AREA, CURVE_IOUS, CURVE_MAX_DETS, CurvesResult, pr_curves,
                     records_best_f1, standard_cell)
from .options import check_csv_dir
from .per_image import WORST_SHOWN, PerImage, coco_per_image, voc_per_image

__all__ = ["DiagnosticsReport", "check_unique_names", "coco_diagnostics", "voc_diagnostics"]


def check_unique_names(names, source=None) -> None:
    """A diagnostic names classes by their names: they must be unique."""
    seen = {}
    for k, n in enumerate(names):
        if n in seen:
            raise InputError(f"Expected unique category names (diagnostics name classes by "
                             f"name) but got {n!r} twice (categories {seen[n]} and {k} in "
                             f"category-id order)", source)
        seen[n] = k


# ------------------------------------------------------------------------ compute

def coco_diagnostics(report, gt, det, matches, summary, *, confusion=None, curves=False,
                     per_image=False, file_names=None, image_key=None,
                     image_ids=None, sections=None) -> "DiagnosticsReport":
    """The COCO diagnostics of one evaluation (tables, records, summary) around ``report``.

    Parameters
    ----------
    confusion : (iou_threshold, conf_threshold) or None
    image_key : ndarray of int64, shape (I,), optional
        The image keys ``matches`` were made with (default ascending image id).
    image_ids : ndarray, shape (I,), optional
        The image ids to report (default ``gt.image_ids``).
    sections : dict name -> object, optional
        Other diagnostics computed on the same tables (TIDE: ``{"tide": result}``), each with
        ``to_dict()`` (its report key) and optionally ``tables()`` (printed tables) and
        ``per_image_columns`` (dict column name -> int array, shape (I,), in ``gt``'s image
        order: attached to every ``report["images"]`` entry).
    """
    names = list(gt.class_names)
    if confusion is not None or curves:
        check_unique_names(names, gt.sources.get("ground_truth"))
    out = DiagnosticsReport(report, sections=sections)
    if confusion is not None:
        out.confusion = coco_confusion(gt, det, names, *confusion)
    if curves or per_image:
        p = report.params
        cell = standard_cell(p["iou_thresholds"], p["area_ranges"], p["max_dets"])
        if cell is not None:
            t50, t75, a, m = cell
            precision, records = summary.precision, matches
        else:  # the evaluation's parameters lack the cell: one pass with exactly it
            from ..ap import coco_accumulate
            from ..match import match_coco
            thr = np.array(list(CURVE_IOUS.values()))
            records = match_coco(gt, det, thr, np.array([ALL_AREA], dtype=np.float64),
                                 CURVE_MAX_DETS, image_key)
            precision, _ = coco_accumulate(records, np.array([CURVE_MAX_DETS]))
            t50, t75, a, m = 0, 1, 0, 0
        if curves:
            best = records_best_f1(records, t50, a, CURVE_MAX_DETS)
            out.curves = pr_curves(precision, t50, t75, a, m, best, names)
        if per_image:
            images = coco_per_image(gt, det, records, t50, a, CURVE_MAX_DETS, ALL_AREA,
                                    image_key=image_key, file_names=file_names)
            if image_ids is not None:
                images = PerImage(np.asarray(image_ids), images.file_names, images.counts)
            # the hook for TIDE's per-image error counts (and any other section's columns)
            for sec in out.sections.values():
                columns = getattr(sec, "per_image_columns", None)
                if columns:
                    images = images.with_extra(columns)
            out.images = images
    return out


def voc_diagnostics(report, gt, det, matches, compat="devkit", *, confusion=None,
                    per_image=False, record_image=None, image_ids=None) -> "DiagnosticsReport":
    """The VOC diagnostics (confusion matrix, per-image counts) around ``report``.

    ``record_image`` (shape (N,)): the image of each record when the records are not
    :func:`deteval.match.match_voc`'s of ``det`` with ``compat`` (the streaming metric)."""
    names = list(gt.class_names)
    out = DiagnosticsReport(report)
    if confusion is not None:
        check_unique_names(names)
        out.confusion = voc_confusion(gt, det, names, *confusion)
    if per_image:
        images = voc_per_image(gt, det, matches, compat, record_image=record_image)
        if image_ids is not None:
            images = PerImage(np.asarray(image_ids, dtype=object), images.file_names,
                              images.counts)
        out.images = images
    return out


# ------------------------------------------------------------------------ report

class DiagnosticsReport:
    """A plain report (``CocoReport`` / ``VocReport``) with its diagnostics.

    Everything of the plain report is reachable as before (``report.stats``,
    ``report["car"]``); :meth:`to_dict` adds ``confusion``, ``curves``, ``images`` (and any
    other section in ``sections``, such as ``tide``: an object with ``to_dict`` and
    ``tables``) to the plain JSON report.
    """

    def __init__(self, base, confusion: Optional[ConfusionResult] = None,
                 curves: Optional[CurvesResult] = None, images: Optional[PerImage] = None,
                 sections: Optional[Dict[str, Any]] = None):
        self.base = base
        self.confusion = confusion
        self.curves = curves
        self.images = images
        self.sections = dict(sections or {})

    def __getattr__(self, name):
        if name in ("base", "sections"):
            raise AttributeError(name)
        if name in self.sections:  # report.tide: the section's report key
            return self.sections[name].to_dict()
        return getattr(self.base, name)

    def __getitem__(self, key):
        return self.base[key]

    @property
    def protocol(self) -> str:
        return self.base.protocol

    def to_dict(self) -> dict:
        d = self.base.to_dict()
        if self.confusion is not None:
            d["confusion"] = self.confusion.to_dict()
        if self.curves is not None:
            d["curves"] = self.curves.to_dict()
        for name, sec in self.sections.items():
            d[name] = sec.to_dict()
        if self.images is not None:
            d["images"] = self.images.to_list()
        return d

    # -- tables
    def tables(self, d: Optional[dict] = None) -> List[export.Table]:
        """Every printed table: the plain report's, then each diagnostic's."""
        d = self.to_dict() if d is None else d
        out = export.base_tables(d)
        if self.confusion is not None:
            out += confusion_tables(self.confusion)
        if self.curves is not None:
            out.append(curves_table(d["curves"], [c["name"] for c in d["classes"]]))
        for sec in self.sections.values():
            out += list(sec.tables()) if hasattr(sec, "tables") else []
        if self.images is not None:
            out.append(worst_images_table(self.images))
        return out

    def format_table(self) -> str:
        """The plain report's table as it always prints, then the diagnostics' tables."""
        parts = [self.base.format_table()]
        for t in self.tables()[len(export.base_tables(self.base.to_dict())):]:
            parts.append(export.render_text(t))
        return "\n\n".join(parts)

    def to_markdown(self) -> str:
        """Every table as GitHub Markdown."""
        return "\n\n".join(export.render_markdown(t) for t in self.tables())

    def csv_files(self) -> Dict[str, str]:
        """File name -> CSV text: ``summary.csv``, ``classes.csv``, and ``images.csv``,
        ``confusion.csv``, ``curves.csv`` with those diagnostics."""
        d = self.to_dict()
        files = {"summary.csv": export.csv_text(*export.summary_csv_table(d)),
                 "classes.csv": export.csv_text(*export.classes_csv_table(d))}
        if self.images is not None:
            rows = d["images"]
            headers = list(rows[0]) if rows else ["image_id", "file_name", "num_gt",
                                                  "num_detections", "tp", "fp", "fn",
                                                  "ignored"] + list(self.images.extra)
            files["images.csv"] = export.csv_text(headers, [[r[h] for h in headers]
                                                            for r in rows])
        if self.confusion is not None:
            c = d["confusion"]
            files["confusion.csv"] = export.csv_text(
                ["ground_truth"] + c["classes"],
                [[name] + row for name, row in zip(c["classes"], c["matrix"])])
        if self.curves is not None:
            cv = d["curves"]
            headers = ["iou", "class"] + [f"{r:.2f}" for r in cv["recall"]]
            rows = []
            for iou, block in cv["iou"].items():
                for name, curve in block["per_class"].items():
                    rows.append([iou, name] + (curve if curve is not None else [None] * 101))
                mean = block["mean"]
                rows.append([iou, "(mean)"] + (mean if mean is not None else [None] * 101))
            files["curves.csv"] = export.csv_text(headers, rows)
        return files

    def write_csv(self, folder: str) -> List[str]:
        """Write :meth:`csv_files` into ``folder`` (created if new) through
        :mod:`deteval.outfile`; returns the paths written."""
        from ..outfile import write_output
        files = self.csv_files()  # everything computed before the first byte is written
        check_csv_dir(folder)
        if not os.path.isdir(folder):
            try:
                os.mkdir(folder)
            except OSError as exc:
                raise InputError(expected("--csv", "a folder that can be created",
                                          f"{folder} ({exc.strerror})")) from None
        paths = []
        for name, text in files.items():
            path = os.path.join(folder, name)
            write_output(path, text, what="--csv")
            paths.append(path)
        return paths


def confusion_tables(c: ConfusionResult) -> List[export.Table]:
    """Per class: ground truth, correct, confused with another class, missed, detections,
    false detections, the most frequent confusion; and the whole matrix for up to 12
    classes."""
    m = c.matrix
    K = m.shape[0] - 1
    names = c.classes
    rows = []
    for i in range(K):
        off = m[i, :K].copy()
        off[i] = 0
        j = int(np.argmax(off)) if K else 0
        top = f"{names[j]} ({int(off[j])})" if K and off[j] > 0 else ""
        rows.append([names[i], int(m[i].sum()), int(m[i, i]), int(off.sum()), int(m[i, K]),
                     int(m[:, i].sum()), int(m[K, i]), top])
    title = (f"Confusion matrix (supervision; IoU > {c.iou_threshold:g}, score >= "
             f"{c.conf_threshold:g}; non-crowd ground truth)")
    out = [export.Table(title, ["class", "GT", "correct", "as other", "missed", "dets",
                                "false dets", "most often predicted as"], rows,
                        right=[False, True, True, True, True, True, True, False])]
    if K <= 12:
        full = [[names[i]] + [int(v) for v in m[i]] for i in range(K + 1)]
        out.append(export.Table("Confusion matrix: rows ground truth, columns predicted",
                                ["GT \\ predicted"] + names, full,
                                right=[False] + [True] * (K + 1)))
    return out


def curves_table(cv: dict, names: List[str]) -> export.Table:
    """Per class: the mean of each curve (AP50, AP75 of COCOeval) and the best-F1 point."""
    rows = []
    for n in names:
        vals = []
        for iou in ("0.5", "0.75"):
            curve = cv["iou"][iou]["per_class"][n]
            vals.append(None if curve is None else float(np.mean(curve)))
        b = cv["best_f1"][n]
        rows.append([n] + vals + ([None] * 4 if b is None else
                                  [b["score"], b["precision"], b["recall"], b["f1"]]))
    means = [None if cv["iou"][i]["mean"] is None else float(np.mean(cv["iou"][i]["mean"]))
             for i in ("0.5", "0.75")]
    rows.append(["(mean)"] + means + [None] * 4)
    return export.Table("PR curves (pycocotools precision, area all, max dets 100) and best-F1 "
                        "operating points (IoU 0.5)",
                        ["class", "AP50", "AP75", "best-F1 score", "precision", "recall",
                         "F1"], rows, right=[False] + [True] * 6,
                        notes=["- : no non-crowd ground truth (or no detection) of that class"])


def worst_images_table(images: PerImage) -> export.Table:
    """The images of most ``fp + fn`` (ties by image id)."""
    rows = []
    for i in images.worst(WORST_SHOWN):
        e = images.entry(int(i))
        rows.append([str(e["image_id"]), e["file_name"] or "", e["num_gt"], e["num_detections"],
                     e["tp"], e["fp"], e["fn"], e["ignored"]]
                    + [e[k] for k in images.extra])
    n = len(images.image_ids)
    return export.Table(f"Worst images: most FP + FN ({min(n, WORST_SHOWN)} of {n} images)",
                        ["image_id", "file_name", "GT", "dets", "TP", "FP", "FN", "ignored"]
                        + list(images.extra), rows,
                        right=[True, False] + [True] * (6 + len(images.extra)))
