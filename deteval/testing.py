"""Helpers for test suites: a regression gate that fails a test with a readable table.

>>> from deteval.testing import assert_no_regression
>>> assert_no_regression("baseline.json", report, max_drop=0.005)
"""
from __future__ import annotations

from typing import Optional, Sequence

from .compare import Comparison, ReportLike, compare_reports

__all__ = ["assert_no_regression"]


def assert_no_regression(baseline: ReportLike, candidate: ReportLike, *, max_drop: float = 0.0,
                         metrics: Optional[Sequence[str]] = None,
                         per_class: bool = False, significant: bool = False) -> Comparison:
    """Fail (``AssertionError`` with the comparison table) if a figure dropped too much.

    ``baseline`` and ``candidate`` are report paths, dicts or report objects. Reports
    that cannot be compared raise :class:`deteval.InputError` (a ``ValueError``).
    Returns the comparison when nothing regressed.
    """
    result = compare_reports(baseline, candidate, max_drop=max_drop, metrics=metrics,
                             per_class=per_class, significant=significant)
    if not result.passed:
        raise AssertionError("\n" + result.format_table())
    return result
