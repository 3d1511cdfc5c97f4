"""The one conversion of a figure to its report form: a float, or None when undefined."""
from __future__ import annotations

import math
from typing import Optional

__all__ = ["number_or_none"]


def number_or_none(x) -> Optional[float]:
    """``float(x)``, or None for None and NaN (``null`` in JSON, ``-`` in tables)."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x
