"""A stand-in for torchvision in the test suite, for torchmetrics' MeanAveragePrecision.

torchmetrics needs torchvision only for ``torchvision.ops.box_convert``; the CPU torch wheel
these tests run on has no matching torchvision build. ``ops.box_convert`` below follows
torchvision's documented conversions (through ``xyxy``, in the boxes' own dtype). Test-only:
``tests/tm_oracle.py`` puts this folder on ``sys.path`` when no real torchvision imports.
"""
__version__ = "0.0.0+deteval-test-stub"
from . import ops  # noqa: E402,F401
