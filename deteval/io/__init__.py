"""Loaders: files in, columnar tables (:mod:`deteval.tables`) out.

``deteval.io.voc`` (lxml) and ``deteval.io.coco`` (msgspec) load on first use.
"""
_LAZY = {"load_voc_annotations": "voc", "load_voc_detections": "voc", "read_imageset": "voc",
         "load_coco_ground_truth": "coco", "load_coco_results": "coco"}

__all__ = list(_LAZY)


def __getattr__(name):
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in ("voc", "coco"):
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'deteval.io' has no attribute {name!r}")
    globals()[name] = value
    return value
