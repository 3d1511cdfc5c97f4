"""torchmetrics' MeanAveragePrecision (pycocotools backend) as a test oracle, or a skip."""
import sys
from pathlib import Path

import pytest


def torchmetrics_map():
    """``torchmetrics.detection.mean_ap.MeanAveragePrecision`` (skips without torch or
    torchmetrics). Where no torchvision imports (the CPU torch wheel here has no matching
    build), the test stand-in ``tests/tm_stub/torchvision`` supplies the one function the
    metric calls, ``torchvision.ops.box_convert``, after torchmetrics itself is imported."""
    pytest.importorskip("torch", reason="torch is not installed (.ci/run installs the CPU build)")
    pytest.importorskip("torchmetrics", reason="torchmetrics is not installed")
    import torchmetrics.detection.mean_ap as mean_ap
    try:
        import torchvision.ops  # noqa: F401
    except Exception:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        stub = str(Path(__file__).parent / "tm_stub")
        if stub not in sys.path:
            sys.path.insert(0, stub)
        mean_ap._TORCHVISION_AVAILABLE = True
    return mean_ap.MeanAveragePrecision
