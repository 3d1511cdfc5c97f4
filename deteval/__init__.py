"""deteval: exact, fast PASCAL VOC and COCO evaluation for object detectors.

Public names are imported on first use (PEP 562), so ``deteval voc`` does not pay
for the COCO loaders and vice versa.
"""
__version__ = "0.1.0"

from .errors import InputError

_LAZY = {
    "evaluate_voc": "evaluate", "evaluate_coco": "evaluate",
    "MeanAveragePrecision": "metric", "MetricInputError": "metric",
    "compare_reports": "compare",
    "evaluate_lvis": "lvis", "LvisReport": "lvis",
    "VocReport": "report", "CocoReport": "report",
    "GroundTruth": "tables", "Detections": "tables",
    "precision_recall_at_k": "ap", "average_precision_raw": "ap", "fbeta_score": "ap",
}
_SUBMODULES = {"io", "testing", "evaluate", "metric", "compare", "report", "tables", "ap",
               "match", "cli", "errors", "lvis", "compat"}

__all__ = ["__version__", "InputError", "evaluate_voc", "evaluate_coco", "VocReport",
           "CocoReport", "MeanAveragePrecision", "MetricInputError", "compare_reports",
           "testing", "io", "GroundTruth", "Detections", "precision_recall_at_k",
           "average_precision_raw", "fbeta_score", "evaluate_lvis", "LvisReport"]


def __getattr__(name):
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'deteval' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
