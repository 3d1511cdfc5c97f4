"""The diagnostics options of ``deteval coco`` / ``deteval voc``, checked before any work.

:class:`Request` holds what was asked (``--confusion``, ``--curves``, ``--per-image``,
``--csv``, ``--markdown``); the evaluation fills ``request.stages`` with its tables and match
records (:func:`deteval.evaluate_coco`'s ``stages``) and :meth:`Request.finish` hands them to
:mod:`deteval.diagnostics.run`. Light to import: the CLI builds its parser from here.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import InputError, expected

__all__ = ["Request", "add_cli_options", "request_from_args", "check_csv_dir",
           "DEFAULT_IOU_THRESHOLD", "DEFAULT_CONF_THRESHOLD", "WORST_SHOWN"]

DEFAULT_IOU_THRESHOLD = 0.5
DEFAULT_CONF_THRESHOLD = 0.3
WORST_SHOWN = 20


# ------------------------------------------------------------------------ options

def add_cli_options(parser, protocol: str) -> None:
    """The diagnostics options of ``deteval coco`` / ``deteval voc``."""
    g = parser.add_argument_group("diagnostics")
    g.add_argument("--confusion", action="store_true",
                   help="detection confusion matrix (supervision's ConfusionMatrix)")
    g.add_argument("--confusion-iou", type=str, metavar="T",
                   help=f"with --confusion: IoU above which a pair matches (default "
                        f"{DEFAULT_IOU_THRESHOLD:g}, in (0, 1])")
    g.add_argument("--confusion-conf", type=str, metavar="S",
                   help=f"with --confusion: lowest score kept (default "
                        f"{DEFAULT_CONF_THRESHOLD:g}, in [0, 1])")
    g.add_argument("--curves", action="store_true",
                   help="precision-recall curves at IoU 0.5 and 0.75 (pycocotools) and "
                        "each class's best-F1 score threshold" if protocol == "coco"
                   else argparse.SUPPRESS)  # voc: a usage error with a message
    g.add_argument("--per-image", action="store_true",
                   help="per-image TP / FP / FN / ignored counts; prints the "
                        f"{WORST_SHOWN} worst images")
    g.add_argument("--csv", metavar="DIR",
                   help="also write summary.csv, classes.csv (and images.csv, confusion.csv, "
                        "curves.csv with those diagnostics) into DIR")
    g.add_argument("--markdown", action="store_true",
                   help="print the tables as GitHub Markdown")


@dataclass
class Request:
    """What diagnostics were asked for, checked.

    Attributes
    ----------
    protocol : {"coco", "voc"}
    confusion : tuple (iou_threshold, conf_threshold) or None
    curves, per_image, markdown : bool
    csv_dir : str or None
    stages : dict
        Filled by the evaluation (``gt``, ``det``, ``matches``, ``summary``).
    ground_truth : path or dict, optional
        Where ``images[].file_name`` is read from (COCO, per image).
    """

    protocol: str
    confusion: Optional[tuple] = None
    tide: bool = False
    curves: bool = False
    per_image: bool = False
    csv_dir: Optional[str] = None
    markdown: bool = False
    stages: dict = field(default_factory=dict)
    ground_truth: Any = None

    @property
    def needs_records(self) -> bool:
        """Whether the evaluation's tables and records are needed (not only its report)."""
        return self.confusion is not None or self.tide or self.curves or self.per_image

    def finish(self, report, compat: str = "devkit"):
        """The diagnostics from ``self.stages``, with the plain ``report``: a
        :class:`deteval.diagnostics.run.DiagnosticsReport`."""
        from .per_image import coco_file_names
        from .run import DiagnosticsReport, coco_diagnostics, voc_diagnostics
        if not self.needs_records:
            return DiagnosticsReport(report)
        s = self.stages
        if self.protocol == "voc":
            return voc_diagnostics(report, s["gt"], s["det"], s["matches"], compat,
                                   confusion=self.confusion, per_image=self.per_image)
        file_names = None
        if self.per_image and self.ground_truth is not None:
            file_names = coco_file_names(self.ground_truth, s["gt"])
        sections = None
        if self.tide:
            from .run import check_unique_names
            from .tide import tide_errors
            check_unique_names(s["gt"].class_names, s["gt"].sources.get("ground_truth"))
            sections = {"tide": tide_errors(s["gt"], s["det"])}
        return coco_diagnostics(report, s["gt"], s["det"], s["matches"], s["summary"],
                                confusion=self.confusion, curves=self.curves,
                                per_image=self.per_image, file_names=file_names,
                                sections=sections)


def request_from_args(args, protocol: str) -> Optional[Request]:
    """The checked :class:`Request` of parsed CLI arguments, or None when no diagnostics
    option was given. Raises InputError (exit 2) for a bad combination."""
    curves = bool(getattr(args, "curves", False))
    tide = bool(getattr(args, "tide", False))
    if tide and protocol != "coco":
        raise InputError(f"Expected `--tide` only with `deteval coco` (TIDE is defined on "
                         f"COCO files) but got it with `deteval {protocol}`")
    if curves and protocol != "coco":
        raise InputError(f"Expected `--curves` only with `deteval coco` (COCOeval's curves) "
                         f"but got it with `deteval {protocol}`")
    asked = (args.confusion or tide or curves or args.per_image or args.csv is not None
             or args.markdown or args.confusion_iou is not None
             or args.confusion_conf is not None)
    if not asked:
        return None
    for opt, val in (("--confusion-iou", args.confusion_iou),
                     ("--confusion-conf", args.confusion_conf)):
        if val is not None and not args.confusion:
            raise InputError(f"Expected `{opt}` only with `--confusion` but got it alone")
    confusion = None
    if args.confusion:
        from .confusion import check_confusion_thresholds
        confusion = check_confusion_thresholds(
            DEFAULT_IOU_THRESHOLD if args.confusion_iou is None else args.confusion_iou,
            DEFAULT_CONF_THRESHOLD if args.confusion_conf is None else args.confusion_conf)
    req = Request(protocol=protocol, confusion=confusion, tide=tide, curves=curves,
                  per_image=bool(args.per_image), csv_dir=args.csv,
                  markdown=bool(args.markdown))
    if req.needs_records:
        flag = next(f for f, on in (("--tide", tide), ("--confusion", args.confusion),
                                    ("--curves", curves),
                                    ("--per-image", args.per_image)) if on)
        if getattr(args, "dask", None):
            raise InputError(f"Expected `{flag}` without `--dask` (diagnostics run in one "
                             "process) but got both")
        if protocol == "coco":
            if args.iou_type != "bbox":
                raise InputError(expected(flag, "used with --iou-type bbox (the diagnostics "
                                          "are defined for boxes)", f"--iou-type {args.iou_type}"))
            if args.class_agnostic:
                raise InputError(f"Expected `{flag}` without `--class-agnostic` (the "
                                 "diagnostics are per class) but got both")
            req.ground_truth = args.ground_truth
    if req.csv_dir is not None:
        check_csv_dir(req.csv_dir)
    return req


def check_csv_dir(path: str) -> None:
    """``--csv DIR`` must be a folder, or a new name in an existing folder."""
    if path in ("", "-"):
        raise InputError(expected("--csv", "a folder (it holds several files, so not "
                                  "standard output)", path))
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(expected("--csv", "a folder", f"{path} (not a folder)"))
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(path) and not os.path.isdir(parent):
        raise InputError(expected("--csv", "a folder or a new folder in an existing one",
                                  f"{path} (its parent {parent} does not exist)"))
