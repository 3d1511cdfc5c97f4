"""Regression gate: compare two JSON reports figure by figure.

Reports are comparable when they evaluate the same ground truth (its fingerprint)
with the same protocol and parameters. A figure *regressed* when
``baseline - candidate > max_drop``.

When both reports carry image-bootstrap replicates (``uncertainty``, see
:mod:`deteval.bootstrap`) drawn with the same seed and sample count, replicate ``b`` of
both evaluated the same resampled images, so the replicates pair draw by draw: a
figure's ``delta_interval`` is the percentile interval of ``candidate - baseline`` over
the replicates defined in both (the baseline's confidence). ``significant``: the
interval excludes zero. With ``significant=True`` (``--significant``) a figure with an
interval regresses only when it dropped by more than ``max_drop`` *and* its interval
lies wholly below zero; figures without one (per-class rows, reports without
replicates) keep the plain rule.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

from ._values import number_or_none
from .errors import InputError, expected

__all__ = ["ComparisonRow", "Comparison", "compare_reports", "load_report"]

ReportLike = Union[str, os.PathLike, dict, Any]


@dataclass(frozen=True)
class ComparisonRow:
    figure: str
    baseline: Optional[float]
    candidate: Optional[float]
    regressed: bool
    delta_interval: Optional[List[float]] = None  # paired bootstrap interval of the delta
    significant: Optional[bool] = None  # the interval excludes 0 (None: no interval)
    name: Optional[str] = None  # the figure's name (AP, mAP, ...)
    class_name: Optional[str] = None  # per-class rows: the class

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "candidate": self.candidate, "delta": self.delta,
                "delta_interval": self.delta_interval, "significant": self.significant,
                "regressed": self.regressed}

    @property
    def delta(self) -> Optional[float]:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate - self.baseline


@dataclass(frozen=True)
class Comparison:
    """Rows of a comparison; ``passed`` is False if any selected figure regressed."""

    rows: List[ComparisonRow]
    max_drop: float
    notes: List[str] = field(default_factory=list)
    significant: bool = False  # --significant: drops must be significant to fail
    paired: Optional[dict] = None  # {"samples", "seed", "confidence"} when paired

    @property
    def regressions(self) -> List[ComparisonRow]:
        return [r for r in self.rows if r.regressed]

    @property
    def passed(self) -> bool:
        return not self.regressions

    def to_dict(self) -> dict:
        """``{"passed", "figures": {name: {...}}, "classes": {class: {name: {...}}}}``."""
        figures, classes = {}, {}
        for r in self.rows:
            if r.class_name is None:
                figures[r.name or r.figure] = r.to_dict()
            else:
                classes.setdefault(r.class_name, {})[r.name or r.figure] = r.to_dict()
        return {"passed": self.passed, "max_drop": self.max_drop,
                "significant_only": self.significant, "paired": self.paired,
                "figures": figures, "classes": classes, "notes": list(self.notes)}

    def format_table(self) -> str:
        width = max([len("figure")] + [len(r.figure) for r in self.rows])

        def num(v, signed=False):
            if v is None:
                return "-"
            return f"{v:+.4f}" if signed else f"{v:.4f}"

        def interval(iv):
            return "-" if iv is None else f"[{iv[0]:+.4f}, {iv[1]:+.4f}]"

        show = self.paired is not None
        head = f"{'figure':<{width}}  {'baseline':>9}  {'candidate':>9}  {'delta':>8}"
        if show:
            head += f"  {'delta interval':>20}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            mark = "  REGRESSED" if r.regressed else ""
            if show and r.significant:
                mark = "  significant" + mark
            iv = f"  {interval(r.delta_interval):>20}" if show else ""
            lines.append(f"{r.figure:<{width}}  {num(r.baseline):>9}  {num(r.candidate):>9}  "
                         f"{num(r.delta, True):>8}{iv}{mark}")
        lines.append("")
        if show:
            p = self.paired
            lines.append(f"delta interval: {100 * p['confidence']:g}% paired image-bootstrap "
                         f"interval of candidate - baseline ({p['samples']} replicates, seed "
                         f"{p['seed']})")
        how = " (significant drops only)" if self.significant else ""
        if self.passed:
            lines.append(f"OK: no figure dropped by more than {self.max_drop:g}{how}")
        else:
            names = ", ".join(r.figure for r in self.regressions)
            lines.append(f"REGRESSION: {len(self.regressions)} figure(s) dropped by more than "
                         f"{self.max_drop:g}{how}: {names}")
        lines += self.notes
        return "\n".join(lines)


def load_report(source: ReportLike, what: str = "report") -> dict:
    """A report as a dict, from a path, a dict or an object with ``to_dict()``."""
    if hasattr(source, "to_dict"):
        return source.to_dict()
    if isinstance(source, dict):
        return source
    path = Path(source)
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise InputError(f"Expected a readable JSON report but got: {exc.strerror}", path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"Expected a JSON report written by `deteval voc|coco --json` but got "
                         f"invalid JSON ({exc})", path) from None
    _check_report(data, path)
    return data


def _is_figure(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _check_report(data: Any, source) -> None:
    """Refuse anything that is not a well-formed report, naming what is wrong."""
    def bad(what: str, wanted: str, found) -> InputError:
        return InputError(expected(what, wanted, found), source)

    if not isinstance(data, dict) or data.get("protocol") not in ("voc", "coco", "lvis"):
        raise bad("report", "a JSON report written by `deteval voc|coco|lvis --json`",
                  type(data).__name__ if not isinstance(data, dict)
                  else f"an object with protocol {data.get('protocol')!r}")
    if data["protocol"] == "voc":
        if not _is_figure(data.get("mAP", "missing")):
            raise bad("mAP", "a number or null", data.get("mAP", "missing"))
        figure_key = "ap"
    else:
        stats = data.get("stats")
        if not isinstance(stats, dict) or not all(_is_figure(v) for v in stats.values()):
            raise bad("stats", "an object of numbers or nulls", stats)
        figure_key = None
    classes = data.get("classes", [])
    if not isinstance(classes, list) or not all(isinstance(c, dict) for c in classes):
        raise bad("classes", "a list of objects", classes)
    for c in classes:
        values = [c.get(figure_key)] if figure_key else [
            v for k, v in c.items() if k not in ("id", "name", "frequency")]
        if not all(_is_figure(v) for v in values):
            raise bad("classes", "per-class figures that are numbers or nulls", c)


def _check_comparable(base: dict, cand: dict) -> None:
    def differ(key_path: str, a, b):
        raise InputError(f"Expected comparable reports but they differ in `{key_path}`: "
                         f"baseline {a!r}, candidate {b!r}")

    if base.get("protocol") != cand.get("protocol"):
        differ("protocol", base.get("protocol"), cand.get("protocol"))
    keys = (("metric", "compat", "iou_threshold") if base["protocol"] == "voc" else ("params",))
    for k in keys:
        if base.get(k) != cand.get(k):
            differ(k, base.get(k), cand.get(k))
    fb = (base.get("inputs") or {}).get("ground_truth_sha256")
    fc = (cand.get("inputs") or {}).get("ground_truth_sha256")
    if fb is None or fc is None:
        raise InputError("Expected reports that record their ground truth "
                         "(`inputs.ground_truth_sha256`) but got one without it")
    if fb != fc:
        differ("ground truth (inputs.ground_truth_sha256)", fb, fc)


def _row(label: str, b, c, max_drop: float, name: Optional[str] = None,
         class_name: Optional[str] = None, pairing: Optional["_Pairing"] = None,
         significant: bool = False) -> ComparisonRow:
    b, c = number_or_none(b), number_or_none(c)
    interval = pairing.interval(name) if pairing is not None and class_name is None else None
    sig = None if interval is None else bool(interval[1] < 0 or interval[0] > 0)
    if b is None or c is None:
        regressed = (b is None) != (c is None)  # a figure appeared or vanished
    else:
        regressed = (b - c) > max_drop
        if significant and interval is not None:
            regressed = regressed and interval[1] < 0
    return ComparisonRow(label, b, c, regressed, interval, sig, name or label, class_name)


class _Pairing:
    """Replicates of both reports, paired draw by draw."""

    def __init__(self, base_u: dict, cand_u: dict):
        self.base = base_u.get("replicates") or {}
        self.cand = cand_u.get("replicates") or {}
        self.confidence = float(base_u.get("confidence", 0.95))
        self.info = {"samples": base_u.get("samples"), "seed": base_u.get("seed"),
                     "confidence": self.confidence}

    def interval(self, name: Optional[str]) -> Optional[List[float]]:
        import numpy as np

        from .bootstrap import percentile_interval
        b, c = self.base.get(name), self.cand.get(name)
        if not isinstance(b, list) or not isinstance(c, list) or len(b) != len(c):
            return None
        fb = np.array([np.nan if v is None else v for v in b], dtype=np.float64)
        fc = np.array([np.nan if v is None else v for v in c], dtype=np.float64)
        iv, _ = percentile_interval(fc - fb, self.confidence)
        return None if iv is None else [iv[0], iv[1]]


def _pairing(base: dict, cand: dict, notes: List[str]) -> Optional[_Pairing]:
    """Pair the reports' replicates when both have them; refuse mismatched draws."""
    ub, uc = base.get("uncertainty"), cand.get("uncertainty")
    has_b = isinstance(ub, dict) and isinstance(ub.get("replicates"), dict)
    has_c = isinstance(uc, dict) and isinstance(uc.get("replicates"), dict)
    if not (has_b and has_c):
        if has_b or has_c:
            which = "baseline" if has_b else "candidate"
            notes.append(f"note: only the {which} has bootstrap replicates: deltas are not "
                         "paired (no delta interval)")
        return None
    for key in ("method", "seed", "samples"):
        if ub.get(key) != uc.get(key):
            raise InputError(f"Expected comparable reports but their bootstrap replicates "
                             f"differ in `uncertainty.{key}`: baseline {ub.get(key)!r}, "
                             f"candidate {uc.get(key)!r} (pairing needs the same draws: "
                             f"re-run both with the same --seed and --bootstrap)")
    for side, u in (("baseline", ub), ("candidate", uc)):
        for name, values in u["replicates"].items():
            if not isinstance(values, list) or len(values) != u.get("samples") or not all(
                    _is_figure(v) for v in values):
                raise InputError(expected(f"uncertainty.replicates.{name}",
                                          f"a list of {u.get('samples')} numbers or nulls",
                                          type(values).__name__), side)
    return _Pairing(ub, uc)


def compare_reports(baseline: ReportLike, candidate: ReportLike, *, max_drop: float = 0.0,
                    metrics: Optional[Sequence[str]] = None, per_class: bool = False,
                    significant: bool = False) -> Comparison:
    """Compare two reports.

    Parameters
    ----------
    baseline, candidate : path, dict or report
    max_drop : float
        Largest allowed absolute drop of a figure.
    metrics : sequence of str, optional
        Figures to compare: VOC ``mAP`` (default) or COCO stat names (default: all).
    per_class : bool
        Also compare each class (VOC ``ap``; COCO the selected stats).
    significant : bool
        Fail only on drops beyond ``max_drop`` whose paired bootstrap delta interval lies
        wholly below zero (figures without an interval keep the plain rule).

    Raises
    ------
    InputError
        Unreadable or incomparable reports, unknown figure names.
    """
    base = load_report(baseline, "baseline")
    cand = load_report(candidate, "candidate")
    _check_report(base, "baseline")
    _check_report(cand, "candidate")
    try:
        max_drop = float(max_drop)
    except (TypeError, ValueError):
        max_drop = float("nan")
    if not max_drop >= 0:
        raise InputError(expected("max_drop", "a number >= 0", max_drop))
    _check_comparable(base, cand)
    notes: List[str] = []
    pairing = _pairing(base, cand, notes)
    if significant and pairing is None:
        notes.append("note: --significant needs bootstrap replicates in both reports: the "
                     "plain rule was applied")
    rows: List[ComparisonRow] = []
    if base["protocol"] == "voc":
        available = ["mAP"]
        chosen = list(metrics) if metrics else ["mAP"]
    else:
        available = list(base.get("stats", {}))
        chosen = list(metrics) if metrics else available
    unknown = [m for m in chosen if m not in available]
    if unknown:
        raise InputError(f"Expected `--metrics` to be among {', '.join(available)} but got "
                         f"{', '.join(unknown)}")
    for m in chosen:
        b = base["mAP"] if base["protocol"] == "voc" else base["stats"].get(m)
        c = cand["mAP"] if cand["protocol"] == "voc" else cand["stats"].get(m)
        rows.append(_row(m, b, c, max_drop, m, None, pairing, significant))
    if per_class:
        key = "name" if base["protocol"] == "voc" else "id"
        cmap = {c[key]: c for c in cand.get("classes", [])}
        for bc in base.get("classes", []):
            cc = cmap.get(bc[key], {})
            label = bc.get("name", str(bc[key]))
            if base["protocol"] == "voc":
                rows.append(_row(f"{label} AP", bc.get("ap"), cc.get("ap"), max_drop, "AP",
                                 label))
            else:
                for m in chosen:
                    rows.append(_row(f"{label} {m}", bc.get(m), cc.get(m), max_drop, m, label))
    return Comparison(rows=rows, max_drop=max_drop, notes=notes, significant=significant,
                      paired=None if pairing is None else pairing.info)
