"""Regression gate: compare two JSON reports figure by figure.

Reports are comparable when they evaluate the same ground truth (its fingerprint)
with the same protocol and parameters. A figure *regressed* when
``baseline - candidate > max_drop``.
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

    @property
    def regressions(self) -> List[ComparisonRow]:
        return [r for r in self.rows if r.regressed]

    @property
    def passed(self) -> bool:
        return not self.regressions

    def format_table(self) -> str:
        width = max([len("figure")] + [len(r.figure) for r in self.rows])

        def num(v, signed=False):
            if v is None:
                return "-"
            return f"{v:+.4f}" if signed else f"{v:.4f}"

        head = f"{'figure':<{width}}  {'baseline':>9}  {'candidate':>9}  {'delta':>8}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            mark = "  REGRESSED" if r.regressed else ""
            lines.append(f"{r.figure:<{width}}  {num(r.baseline):>9}  {num(r.candidate):>9}  "
                         f"{num(r.delta, True):>8}{mark}")
        lines.append("")
        if self.passed:
            lines.append(f"OK: no figure dropped by more than {self.max_drop:g}")
        else:
            names = ", ".join(r.figure for r in self.regressions)
            lines.append(f"REGRESSION: {len(self.regressions)} figure(s) dropped by more than "
                         f"{self.max_drop:g}: {names}")
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


def _row(name: str, b, c, max_drop: float) -> ComparisonRow:
    b, c = number_or_none(b), number_or_none(c)
    if b is None or c is None:
        regressed = (b is None) != (c is None)  # a figure appeared or vanished
    else:
        regressed = (b - c) > max_drop
    return ComparisonRow(name, b, c, regressed)


def compare_reports(baseline: ReportLike, candidate: ReportLike, *, max_drop: float = 0.0,
                    metrics: Optional[Sequence[str]] = None, per_class: bool = False
                    ) -> Comparison:
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
        rows.append(_row(m, b, c, max_drop))
    if per_class:
        key = "name" if base["protocol"] == "voc" else "id"
        cmap = {c[key]: c for c in cand.get("classes", [])}
        for bc in base.get("classes", []):
            cc = cmap.get(bc[key], {})
            label = bc.get("name", str(bc[key]))
            if base["protocol"] == "voc":
                rows.append(_row(f"{label} AP", bc.get("ap"), cc.get("ap"), max_drop))
            else:
                for m in chosen:
                    rows.append(_row(f"{label} {m}", bc.get(m), cc.get(m), max_drop))
    return Comparison(rows=rows, max_drop=max_drop)
