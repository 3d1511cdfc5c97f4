"""deteval: exact, fast PASCAL VOC and COCO evaluation for object detectors."""
__version__ = "0.1.0"

from .errors import InputError
from .ap import average_precision_raw, fbeta_score, precision_recall_at_k
from .evaluate import evaluate_coco, evaluate_voc
from .metric import MeanAveragePrecision, MetricInputError
from .compare import compare_reports
from . import testing
from .report import CocoReport, VocReport
from .tables import Detections, GroundTruth

__all__ = ["__version__", "InputError", "evaluate_voc", "evaluate_coco", "VocReport",
           "MeanAveragePrecision", "MetricInputError", "compare_reports", "testing",
           "CocoReport", "GroundTruth", "Detections", "precision_recall_at_k",
           "average_precision_raw", "fbeta_score"]
