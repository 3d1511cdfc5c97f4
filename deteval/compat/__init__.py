"""A pycocotools 2.0.x drop-in over deteval's engine.

Replace::

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    from pycocotools import mask as maskUtils

with::

    from deteval.compat import COCO, COCOeval
    from deteval.compat import mask as maskUtils

and existing evaluation code runs unchanged and sees the same numbers, arrays and printed
summary. ``COCOeval(..., fixes=True)`` corrects pycocotools' two plain mistakes (an
annotation with id 0 is never counted as matched; the summary's first line and its AP50 /
AP75 / area lines read ``maxDets=100`` and fixed positions whatever ``params.maxDets`` is).
See ``README.md``, section "pycocotools drop-in", for the differences.
"""
from . import mask
from .coco import COCO
from .cocoeval import COCOeval, Params

__all__ = ["COCO", "COCOeval", "Params", "mask"]
