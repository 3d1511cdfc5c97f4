"""Reports: what a person reads (tables) and what a program reads (JSON dicts).

Nothing here prints; the CLI does. Undefined values are ``None`` in dicts
(``null`` in JSON) and ``-`` in tables, each with a reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import __version__
from ._values import number_or_none as _num
from .ap import CocoSummary, VocSummary

__all__ = ["VocClassResult", "VocReport", "CocoReport", "voc_report", "coco_report"]


# ----------------------------------------------------------------------------- VOC

@dataclass(frozen=True)
class VocClassResult:
    name: str
    ap: Optional[float]
    num_gt: int
    num_difficult: int
    num_detections: int
    tp: int
    fp: int
    note: Optional[str] = None
    ignored: int = 0  # detections whose best ground truth is difficult: tp + fp + ignored = dets

    def to_dict(self) -> dict:
        d = {"name": self.name, "ap": _num(self.ap), "num_gt": self.num_gt,
             "num_difficult": self.num_difficult, "num_detections": self.num_detections,
             "tp": self.tp, "fp": self.fp, "ignored": self.ignored}
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class VocReport:
    """Result of a PASCAL VOC evaluation. Look figures up by name: ``report["car"].ap``."""

    metric: str
    compat: str
    iou_threshold: float
    mAP: Optional[float]
    classes: List[VocClassResult]
    inputs: dict = field(default_factory=dict)
    engine: Optional[dict] = None  # how it ran, when not in one process (deteval.distributed)
    uncertainty: Optional[dict] = None  # image-bootstrap intervals (deteval.bootstrap)

    protocol = "voc"

    def __getitem__(self, name: str) -> VocClassResult:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        """The stable JSON report (see README)."""
        return {"deteval_version": __version__, "protocol": "voc", "metric": self.metric,
                "compat": self.compat, "iou_threshold": self.iou_threshold,
                "mAP": _num(self.mAP),
                "num_classes_in_mAP": sum(c.ap is not None for c in self.classes),
                "classes": [c.to_dict() for c in self.classes],
                "inputs": dict(self.inputs),
                **({"engine": dict(self.engine)} if self.engine is not None else {}),
                **({"uncertainty": self.uncertainty} if self.uncertainty is not None else {})}

    def format_table(self) -> str:
        """A fixed-width table: one row per class, then the mAP."""
        width = max([len("class")] + [len(c.name) for c in self.classes])
        head = (f"{'class':<{width}}  {'AP':>7}  {'GT':>6}  {'diff':>5}  {'dets':>7}  "
                f"{'TP':>6}  {'FP':>7}  {'ignored':>7}")
        u = self.uncertainty
        if u is not None:
            head += f"  {_interval_title(u)}"
        rows = [head, "-" * len(head)]
        notes = []
        for c in self.classes:
            ap = "-" if c.ap is None else f"{c.ap:.4f}"
            mark = ""
            if c.note:
                notes.append(f"{c.name}: {c.note}")
                mark = " *"
            iv = ""
            if u is not None:
                iv = "  " + _interval_text((u["per_class_intervals"].get(c.name) or {}).get("AP"))
            rows.append(f"{c.name:<{width}}  {ap:>7}  {c.num_gt:>6}  {c.num_difficult:>5}  "
                        f"{c.num_detections:>7}  {c.tp:>6}  {c.fp:>7}  {c.ignored:>7}{iv}{mark}")
        rows.append("-" * len(head))
        n_in = sum(c.ap is not None for c in self.classes)
        m = "-" if self.mAP is None else f"{self.mAP:.4f}"
        if u is not None:
            m += " " + _interval_text(u["intervals"].get("mAP"))
        rows.append(f"{'mAP':<{width}}  {m:>7}  ({self.metric}, IoU {self.iou_threshold:g}, "
                    f"{self.compat}, {n_in} of {len(self.classes)} classes)")
        if notes:
            rows.append("")
            rows += ["* " + n for n in notes]
        unused = self.inputs.get("unused_detection_files")
        if unused:
            shown = ", ".join(unused[:5]) + (", ..." if len(unused) > 5 else "")
            rows.append("")
            rows.append(f"note: {len(unused)} result file(s) match no evaluated class and were "
                        f"not read: {shown}")
        if u is not None:
            rows += ["", _interval_note(u)]
        return "\n".join(rows)


def voc_report(summary: VocSummary, class_names: Sequence[str], metric: str, compat: str,
               iou_threshold: float, inputs: Optional[dict] = None,
               class_notes: Optional[Dict[str, str]] = None) -> VocReport:
    """The report of a VOC evaluation from its :class:`~deteval.ap.VocSummary`.

    A class without non-difficult GT has AP ``None`` (and a note saying why).
    """
    results = []
    for k, name in enumerate(class_names):
        note = (class_notes or {}).get(name)
        ap = float(summary.ap[k])
        if summary.num_gt[k] == 0:
            ap = None
            note = "no non-difficult ground truth: AP undefined, left out of mAP"
        results.append(VocClassResult(name=name, ap=ap, num_gt=int(summary.num_gt[k]),
                                      num_difficult=int(summary.num_difficult[k]),
                                      num_detections=int(summary.num_detections[k]),
                                      tp=int(summary.tp[k]), fp=int(summary.fp[k]), note=note,
                                      ignored=int(summary.ignored[k])))
    return VocReport(metric=metric, compat=compat, iou_threshold=float(iou_threshold),
                     mAP=summary.mAP, classes=results, inputs=inputs or {})


# ---------------------------------------------------------------------------- COCO

def coco_style_dict(report) -> dict:
    """The JSON keys COCO-style reports share (``deteval coco``, ``deteval lvis``): version,
    protocol, iou_type, stats, classes, params, inputs and the notes, if any."""
    d = {"deteval_version": __version__, "protocol": report.protocol,
         "iou_type": report.iou_type, "stats": dict(report.stats),
         "classes": [dict(c) for c in report.classes], "params": dict(report.params),
         "inputs": dict(report.inputs)}
    if report.notes:
        d["notes"] = list(report.notes)
    return d


@dataclass(frozen=True)
class CocoReport:
    """Result of a COCO evaluation. ``report.stats["AP50"]``, ``report.classes[i]["AP"]``."""

    stats: Dict[str, Optional[float]]
    classes: List[dict]
    params: dict
    precision: np.ndarray = field(repr=False)
    recall: np.ndarray = field(repr=False)
    inputs: dict = field(default_factory=dict)
    engine: Optional[dict] = None  # how it ran, when not in one process (deteval.distributed)
    notes: List[str] = field(default_factory=list)  # why figures are undefined
    iou_type: str = "bbox"
    uncertainty: Optional[dict] = None  # image-bootstrap intervals (deteval.bootstrap)

    protocol = "coco"

    def to_dict(self) -> dict:
        """The stable JSON report (see README)."""
        d = coco_style_dict(self)
        if self.engine is not None:
            d["engine"] = dict(self.engine)
        if self.uncertainty is not None:
            d["uncertainty"] = self.uncertainty
        return d

    def format_table(self) -> str:
        """The named summary figures, then one row per class."""
        names = list(self.stats)
        p = self.params
        thr = p.get("iou_thresholds", [])
        span = (f"{thr[0]:.2f}:{thr[-1]:.2f}" if len(thr) > 1 else f"{thr[0]:.2f}") if thr else ""
        lines = [f"COCO {self.iou_type}  ({'OKS' if self.iou_type == 'keypoints' else 'IoU'} {span}, max dets {','.join(map(str, p.get('max_dets', [])))})"]
        u = self.uncertainty
        for n in names:
            v = self.stats[n]
            iv = "" if u is None else " " + _interval_text(u["intervals"].get(n))
            lines.append(f"  {n:<10} {'-' if v is None else f'{v:.4f}':>8}{iv}")
        ar_max = [n for n in names if n == f"AR{p.get('max_dets', [0])[-1]}"
                  or (self.iou_type == "keypoints" and n == "AR")]
        per = [n for n in names if n.startswith("AP")] + ar_max
        width = max([len("class")] + [len(c["name"]) for c in self.classes])
        head = f"{'id':>5}  {'class':<{width}}  " + "  ".join(f"{n:>7}" for n in per)
        lines += ["", head, "-" * len(head)]
        for c in self.classes:
            vals = "  ".join(f"{'-' if c[n] is None else f'{c[n]:.4f}':>7}" for n in per)
            cid = "-" if c["id"] is None else c["id"]
            lines.append(f"{cid:>5}  {c['name']:<{width}}  {vals}")
        if any(c[n] is None for c in self.classes for n in per):
            lines.append("")
            lines.append("- : undefined: no non-crowd ground truth of that class in that area "
                         "range (pycocotools prints -1)")
        if self.notes:
            lines.append("")
            lines += ["note: " + n for n in self.notes]
        if u is not None:
            lines += ["", _interval_note(u)]
        return "\n".join(lines)


def coco_report(summary: CocoSummary, class_ids: Sequence[int], class_names: Sequence[str],
                iou_thresholds: np.ndarray, area_ranges: Dict[str, tuple],
                max_dets: Sequence[int], rec_thresholds: np.ndarray,
                inputs: Optional[dict] = None, iou_type: str = "bbox") -> CocoReport:
    """The report of a COCO evaluation from its :class:`~deteval.ap.CocoSummary`."""
    classes = []
    for k, (cid, cname) in enumerate(zip(class_ids, class_names)):
        row = {"id": None if cid is None else int(cid), "name": str(cname)}
        for name, values in summary.per_class.items():
            row[name] = values[k]
        classes.append(row)
    params = {"iou_thresholds": [float(t) for t in iou_thresholds],
              "area_ranges": {n: [float(lo), float(hi)] for n, (lo, hi) in area_ranges.items()},
              "max_dets": [int(m) for m in max_dets],
              "recall_thresholds": len(rec_thresholds)}
    notes = []
    if "all" not in area_ranges:
        plain = [n for n, v in summary.stats.items() if v is None
                 and not any(n.endswith(sfx) for sfx in _range_suffixes(area_ranges))]
        notes.append(f"{', '.join(plain)} undefined: they are figures of the `all` area range, "
                     "and the area ranges have none (pycocotools prints -1); add all=0:1e10 to "
                     "get them")
    return CocoReport(stats=dict(summary.stats), classes=classes, params=params,
                      precision=summary.precision, recall=summary.recall, inputs=inputs or {},
                      notes=notes, iou_type=iou_type)


def _range_suffixes(area_ranges) -> List[str]:
    short = {"small": "s", "medium": "m", "large": "l"}
    return [short.get(n, "_" + n) for n in area_ranges]


# ------------------------------------------------------------------- uncertainty

def _interval_text(iv) -> str:
    """``[lo, hi]`` of a bootstrap interval, ``[-]`` when no replicate defines it."""
    return "[-]" if iv is None else f"[{iv[0]:.4f}, {iv[1]:.4f}]"


def _interval_title(u: dict) -> str:
    return f"{100 * u['confidence']:g}% interval"


def _interval_note(u: dict) -> str:
    nulls = {k: v for k, v in u.get("null_replicates", {}).items() if v}
    text = (f"[lo, hi]: {100 * u['confidence']:g}% image-bootstrap percentile interval "
            f"({u['samples']} replicates, seed {u['seed']})")
    if nulls:
        text += "; replicates left out as undefined: " + ", ".join(
            f"{k} {v}" for k, v in nulls.items())
    return text
