"""Reports: what a person reads (tables) and what a program reads (JSON dicts).

Nothing here prints; the CLI does. Undefined values are ``None`` in dicts
(``null`` in JSON) and ``-`` in tables, each with a reason.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import __version__
from .ap import coco_accumulate, voc_average_precision, voc_curves
from .match import CocoMatches, VocMatches
from .tables import GroundTruth

__all__ = ["VocClassResult", "VocReport", "CocoReport", "build_voc_report",
           "build_coco_report", "coco_stat_specs", "ground_truth_fingerprint"]


def _num(x) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def fingerprint_rows(image_ids, class_keys, boxes, difficult, crowd, area) -> str:
    """SHA-256 of ground-truth objects, independent of file paths and image order.

    Parameters
    ----------
    image_ids : sequence, shape (G,)
        External image id of each object.
    class_keys : sequence, shape (G,)
        Category id (COCO) or class name (VOC) of each object.
    boxes : ndarray of float64, shape (G, 4)
    difficult, crowd : ndarray of bool, shape (G,)
    area : ndarray of float64, shape (G,)

    Objects are hashed in (image id, original order) order, so loading a file and
    streaming the same images in another order give the same fingerprint.
    """
    image_keys = np.asarray(image_ids).astype(str)
    class_str = np.asarray(class_keys).astype(str)
    images, image_rank = np.unique(image_keys, return_inverse=True)  # sorted id strings
    classes, class_rank = np.unique(class_str, return_inverse=True)
    order = np.argsort(image_rank.reshape(-1), kind="stable")
    h = hashlib.sha256()
    for table in (images, classes):
        h.update("\x1f".join(table.tolist()).encode())
        h.update(b"\x1e")
    for arr, dtype in ((image_rank, np.int64), (class_rank, np.int64), (boxes, np.float64),
                       (difficult, bool), (crowd, bool), (area, np.float64)):
        rows = np.asarray(arr, dtype=dtype)
        h.update(np.ascontiguousarray(rows[order] if len(order) else rows).tobytes())
    return "sha256:" + h.hexdigest()


def ground_truth_fingerprint(gt: GroundTruth) -> str:
    """:func:`fingerprint_rows` of a loaded ground-truth table.

    Two reports are comparable only when they were computed on the same ground truth.
    """
    if gt.class_ids is not None:
        keys = gt.class_ids[gt.class_idx]
    else:
        keys = np.array(gt.class_names, dtype=object)[gt.class_idx] if len(gt) else []
    return fingerprint_rows(gt.image_ids[gt.image_idx], keys, gt.boxes, gt.difficult,
                            gt.crowd, gt.area)


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

    def to_dict(self) -> dict:
        d = {"name": self.name, "ap": _num(self.ap), "num_gt": self.num_gt,
             "num_difficult": self.num_difficult, "num_detections": self.num_detections,
             "tp": self.tp, "fp": self.fp}
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
                "inputs": dict(self.inputs)}

    def format_table(self) -> str:
        """A fixed-width table: one row per class, then the mAP."""
        width = max([len("class")] + [len(c.name) for c in self.classes])
        head = (f"{'class':<{width}}  {'AP':>7}  {'GT':>6}  {'diff':>5}  {'dets':>7}  "
                f"{'TP':>6}  {'FP':>7}")
        rows = [head, "-" * len(head)]
        notes = []
        for c in self.classes:
            ap = "-" if c.ap is None else f"{c.ap:.4f}"
            mark = ""
            if c.note:
                notes.append(f"{c.name}: {c.note}")
                mark = " *"
            rows.append(f"{c.name:<{width}}  {ap:>7}  {c.num_gt:>6}  {c.num_difficult:>5}  "
                        f"{c.num_detections:>7}  {c.tp:>6}  {c.fp:>7}{mark}")
        rows.append("-" * len(head))
        n_in = sum(c.ap is not None for c in self.classes)
        m = "-" if self.mAP is None else f"{self.mAP:.4f}"
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
        return "\n".join(rows)


def build_voc_report(matches: VocMatches, class_names: Sequence[str], metric: str,
                     compat: str, iou_threshold: float, inputs: Optional[dict] = None,
                     class_notes: Optional[Dict[str, str]] = None) -> VocReport:
    """Curves and AP of every class from merged match records, then the mAP.

    A class without non-difficult GT has AP ``None`` and is left out of the mAP.
    """
    curves = voc_curves(matches, compat)
    num_det = np.bincount(matches.class_idx, minlength=len(class_names))
    results = []
    for k, name in enumerate(class_names):
        rec, prec, tp, fp = curves[k]
        note = (class_notes or {}).get(name)
        if matches.num_gt[k] == 0:
            ap = None
            note = "no non-difficult ground truth: AP undefined, left out of mAP"
        else:
            ap = voc_average_precision(rec, prec, metric, compat)
        results.append(VocClassResult(name=name, ap=ap, num_gt=int(matches.num_gt[k]),
                                      num_difficult=int(matches.num_difficult[k]),
                                      num_detections=int(num_det[k]), tp=tp, fp=fp, note=note))
    defined = [r.ap for r in results if r.ap is not None]
    mAP = float(np.mean(defined)) if defined else None
    return VocReport(metric=metric, compat=compat, iou_threshold=float(iou_threshold),
                     mAP=mAP, classes=results, inputs=inputs or {})


# ---------------------------------------------------------------------------- COCO

_AREA_SUFFIX = {"small": "s", "medium": "m", "large": "l"}
DEFAULT_AREA_RANGES = {"all": (0.0, 1e5 ** 2), "small": (0.0, 32.0 ** 2),
                       "medium": (32.0 ** 2, 96.0 ** 2), "large": (96.0 ** 2, 1e5 ** 2)}


def _thr_name(t: float) -> str:
    v = round(float(t) * 100, 6)
    return f"AP{int(v)}" if v == int(v) else f"AP{v:g}"


def coco_stat_specs(iou_thresholds: np.ndarray, area_names: Sequence[str],
                    max_dets: Sequence[int], default_thresholds: bool
                    ) -> List[tuple]:
    """Named summary figures: ``(name, kind, iou_index or None, area_index, maxdet_index)``.

    AP figures use the largest max-detections value; ``AR{m}`` one per value.
    With the default thresholds: AP, AP50, AP75 (pycocotools' 12); otherwise AP and
    one ``AP{100 t}`` per threshold. Area ranges ``small``/``medium``/``large`` are
    ``APs``/``APm``/``APl``; other names ``AP_<name>``.
    """
    all_a = list(area_names).index("all") if "all" in area_names else 0
    last = len(max_dets) - 1
    specs = [("AP", "AP", None, all_a, last)]
    for i, t in enumerate(iou_thresholds):
        if not default_thresholds or float(t) in (0.5, 0.75):
            specs.append((_thr_name(t), "AP", i, all_a, last))
    others = [(a, n) for a, n in enumerate(area_names) if a != all_a]
    for a, n in others:
        specs.append(("AP" + _AREA_SUFFIX.get(n, "_" + n), "AP", None, a, last))
    for m, md in enumerate(max_dets):
        specs.append((f"AR{md}", "AR", None, all_a, m))
    for a, n in others:
        specs.append(("AR" + _AREA_SUFFIX.get(n, "_" + n), "AR", None, a, last))
    return specs


def _mean_defined(values: np.ndarray) -> Optional[float]:
    v = values[~np.isnan(values)]
    return float(np.mean(v)) if v.size else None


@dataclass(frozen=True)
class CocoReport:
    """Result of a COCO evaluation. ``report.stats["AP50"]``, ``report.classes[i]["AP"]``."""

    stats: Dict[str, Optional[float]]
    classes: List[dict]
    params: dict
    precision: np.ndarray = field(repr=False)
    recall: np.ndarray = field(repr=False)
    inputs: dict = field(default_factory=dict)

    protocol = "coco"

    def to_dict(self) -> dict:
        """The stable JSON report (see README)."""
        return {"deteval_version": __version__, "protocol": "coco", "iou_type": "bbox",
                "stats": dict(self.stats), "classes": [dict(c) for c in self.classes],
                "params": dict(self.params), "inputs": dict(self.inputs)}

    def format_table(self) -> str:
        """The named summary figures, then one row per class."""
        names = list(self.stats)
        p = self.params
        thr = p.get("iou_thresholds", [])
        span = (f"{thr[0]:.2f}:{thr[-1]:.2f}" if len(thr) > 1 else f"{thr[0]:.2f}") if thr else ""
        lines = [f"COCO bbox  (IoU {span}, max dets {','.join(map(str, p.get('max_dets', [])))})"]
        for n in names:
            v = self.stats[n]
            lines.append(f"  {n:<10} {'-' if v is None else f'{v:.4f}':>8}")
        ar_max = [n for n in names if n == f"AR{p.get('max_dets', [0])[-1]}"]
        per = [n for n in names if n.startswith("AP")] + ar_max
        width = max([len("class")] + [len(c["name"]) for c in self.classes])
        head = f"{'id':>5}  {'class':<{width}}  " + "  ".join(f"{n:>7}" for n in per)
        lines += ["", head, "-" * len(head)]
        for c in self.classes:
            vals = "  ".join(f"{'-' if c[n] is None else f'{c[n]:.4f}':>7}" for n in per)
            lines.append(f"{c['id']:>5}  {c['name']:<{width}}  {vals}")
        if any(c[n] is None for c in self.classes for n in per):
            lines.append("")
            lines.append("- : undefined: no non-crowd ground truth of that class in that area "
                         "range (pycocotools prints -1)")
        return "\n".join(lines)


def build_coco_report(matches: CocoMatches, class_ids: Sequence[int],
                      class_names: Sequence[str], iou_thresholds: np.ndarray,
                      area_ranges: Dict[str, tuple], max_dets: Sequence[int],
                      rec_thresholds: np.ndarray, default_thresholds: bool,
                      inputs: Optional[dict] = None) -> CocoReport:
    """Accumulate merged records and summarize them by name, overall and per class.

    Each figure is the mean of the defined precision (recall) entries over the
    selected thresholds, recall points and classes, in pycocotools' array order
    ``(T, R, K)`` so the floating-point sum is the same.
    """
    md = np.asarray(max_dets, dtype=np.int64)
    precision, recall = coco_accumulate(matches, md, rec_thresholds)
    specs = coco_stat_specs(iou_thresholds, list(area_ranges), list(max_dets),
                            default_thresholds)

    cache = {}

    def cell(kind, a, m):  # contiguous (T, R, K) precision or (T, K) recall of one cell
        if (kind, a, m) not in cache:
            src = precision[:, :, :, a, m] if kind == "AP" else recall[:, :, a, m]
            cache[kind, a, m] = np.ascontiguousarray(src)
        return cache[kind, a, m]

    def figure(kind, t, a, m):
        s = cell(kind, a, m)
        if t is not None:
            s = s[t:t + 1]
        return _mean_defined(s.ravel())

    stats = {name: figure(kind, t, a, m) for name, kind, t, a, m in specs}
    # Per class: a class is absent from a cell as a whole (every entry NaN) or not at
    # all, so its figure is the plain mean of its row, in (T, R) order; a row-wise
    # mean over contiguous rows sums each row exactly as a 1-D mean does.
    K = len(class_ids)
    per_class = {}
    for name, kind, t, a, m in specs:
        s = cell(kind, a, m)
        if t is not None:
            s = s[t:t + 1]
        rows = np.ascontiguousarray(np.moveaxis(s, -1, 0)).reshape(K, -1)
        means = rows.mean(axis=1) if rows.shape[1] else np.full(K, np.nan)
        per_class[name] = [None if np.isnan(v) else float(v) for v in means]
    classes = []
    for k, (cid, cname) in enumerate(zip(class_ids, class_names)):
        row = {"id": int(cid), "name": str(cname)}
        for name in per_class:
            row[name] = per_class[name][k]
        classes.append(row)
    params = {"iou_thresholds": [float(t) for t in iou_thresholds],
              "area_ranges": {n: [float(lo), float(hi)] for n, (lo, hi) in area_ranges.items()},
              "max_dets": [int(m) for m in max_dets],
              "recall_thresholds": len(rec_thresholds)}
    return CocoReport(stats=stats, classes=classes, params=params, precision=precision,
                      recall=recall, inputs=inputs or {})
