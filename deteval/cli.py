"""The ``deteval`` command line. The only module that prints.

Exit status: 0 success, 1 regression found (``compare``), 2 bad input or usage.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from . import __version__
from . import params
from .errors import InputError, expected
from .outfile import STDOUT, write_output

__all__ = ["main", "write_json"]


def write_json(path: str, payload: dict) -> None:
    """The JSON report to ``path`` (``-``: standard output), by :mod:`deteval.outfile`'s
    rules: never half-written, never replacing a link, a stream or a device."""
    text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    write_output(path, text, what="--json")


class _VersionAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        print(_version_text())
        parser.exit()


def _version_text() -> str:
    """deteval's version, whether the compiled fast path is in use (and why not), numpy's."""
    import numpy

    from ._native import status
    missing = {name: why for name, why in status().items() if why}
    if not missing:
        native = "compiled fast path: in use (deteval._textscan, deteval._kernels)"
    else:
        native = ("compiled fast path: NOT in use, the pure Python/numpy path runs (same "
                  "results, slower): " + "; ".join(f"deteval.{n}: {w}" for n, w in
                                                  missing.items())
                  + " -- build with `pip install .` or `python setup.py build_ext --inplace`")
    return f"deteval {__version__}\n{native}\nnumpy {numpy.__version__}"


def _float_list(text: str, what: str) -> List[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(expected(what, "comma-separated numbers such as 0.5,0.75", text)) from None
    return values


def _int_list(text: str, what: str) -> List[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(expected(what, "comma-separated integers such as 1,10,100",
                                  text)) from None


def _area_ranges(text: str) -> dict:
    ranges = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            name, span = item.split("=", 1)
            lo, hi = span.split(":", 1)
            ranges[name.strip()] = (float(lo), float(hi))
        except ValueError:
            raise InputError(expected("--area-ranges", "NAME=LO:HI,... such as "
                                      "all=0:1e10,small=0:1024", text)) from None
    return ranges


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="deteval", description="Exact, fast PASCAL VOC and COCO "
                                "evaluation of object detections.")
    p.add_argument("--version", action=_VersionAction, nargs=0,
                   help="show the version, whether the compiled fast path is in use, and exit")
    sub = p.add_subparsers(dest="command", metavar="{voc,coco,compare}")
    sub.required = True

    v = sub.add_parser("voc", help="PASCAL VOC evaluation (devkit semantics)",
                       description="PASCAL VOC evaluation: per-class AP and mAP.")
    v.add_argument("annotations", metavar="ANNOTATIONS",
                   help="folder of <image_id>.xml files, or a VOC year folder "
                        "(Annotations/, ImageSets/Main/)")
    v.add_argument("detections", metavar="DETECTIONS",
                   help="folder of per-class files <anything>_<class>.txt")
    v.add_argument("--imageset", metavar="FILE", help="image-set file, or a split name (test, "
                   "val) with a year folder; default: every XML file")
    v.add_argument("--metric", choices=params.VOC_METRICS, default=params.VOC_DEFAULT_METRIC,
                   help="voc07: 11-point; voc12: area under the envelope (default "
                        f"{params.VOC_DEFAULT_METRIC})")
    v.add_argument("--iou", type=float, default=params.VOC_IOU_THRESHOLD, metavar="T",
                   help=f"IoU threshold (default {params.VOC_IOU_THRESHOLD:g})")
    v.add_argument("--compat", choices=params.VOC_COMPATS, default=params.VOC_COMPATS[0],
                   help="devkit: official VOC devkit (default); detectron2: py-faster-rcnn / "
                        "detectron2 voc_eval")
    v.add_argument("--classes", metavar="NAME,...", help="only these classes")
    v.add_argument("--dask", metavar="ADDRESS",
                   help="evaluate on a Dask cluster (local:N or tcp://host:8786); DETECTIONS "
                        "may then be a glob pattern of shard folders. Needs deteval[dask]")
    v.add_argument("--json", metavar="PATH", help="also write the JSON report here (- for standard output, the tables then go to standard error)")
    _bootstrap_options(v)

    c = sub.add_parser("coco", help="COCO evaluation (pycocotools semantics: bbox, segm, "
                                    "keypoints)",
                       description="COCO evaluation: the standard figures and per-class "
                                   "figures, as pycocotools COCOeval.")
    c.add_argument("ground_truth", metavar="GROUND_TRUTH.json")
    c.add_argument("results", metavar="RESULTS.json")
    thr = params.COCO_IOU_THRESHOLDS
    c.add_argument("--iou-thresholds", metavar="T,...",
                   help=f"IoU thresholds (default {thr[0]:.2f}:{thr[1] - thr[0]:.2f}:{thr[-1]:.2f})")
    c.add_argument("--area-ranges", metavar="NAME=LO:HI,...",
                   help="area ranges (default " + ",".join(
                       f"{n}={lo:g}:{hi:g}".replace("e+", "e")
                       for n, (lo, hi) in params.COCO_AREA_RANGES.items())
                   + ")")
    max_dets = ",".join(map(str, params.COCO_MAX_DETS))
    c.add_argument("--max-dets", metavar="N,...",
                   help=f"max detections per image and class (default {max_dets}; "
                        f"keypoints {','.join(map(str, params.COCO_KEYPOINT_MAX_DETS))})")
    c.add_argument("--iou-type", choices=params.COCO_IOU_TYPES, default="bbox",
                   help="what is matched: bbox (default), segm (masks) or keypoints (OKS), "
                        "as pycocotools' iouType")
    c.add_argument("--oks-sigmas", metavar="S,...",
                   help="keypoints: per-keypoint OKS sigmas (default the 17 COCO person "
                        "sigmas); their number must equal the keypoint count")
    c.add_argument("--class-agnostic", action="store_true",
                   help="ignore categories when matching (pycocotools useCats=0)")
    c.add_argument("--dask", metavar="ADDRESS",
                   help="evaluate on a Dask cluster: local:N (N local worker processes) or a "
                        "scheduler address tcp://host:8786; RESULTS may then be a glob "
                        "pattern of shards (.json, .jsonl, .parquet). Needs deteval[dask]")
    c.add_argument("--partitions", type=int, metavar="N",
                   help="with --dask: image partitions (default twice the workers)")
    c.add_argument("--json", metavar="PATH", help="also write the JSON report here (- for standard output, the tables then go to standard error)")
    _bootstrap_options(c)

    k = sub.add_parser("compare", help="regression gate between two JSON reports",
                       description="Compare two reports; exit 1 if a figure dropped by more "
                                   "than --max-drop.")
    k.add_argument("baseline", metavar="BASELINE.json")
    k.add_argument("candidate", metavar="CANDIDATE.json")
    k.add_argument("--max-drop", type=float, default=0.0, metavar="D",
                   help="largest allowed absolute drop (default 0)")
    k.add_argument("--metrics", metavar="NAME,...",
                   help="figures to check (default: mAP for VOC, every stat for COCO)")
    k.add_argument("--per-class", action="store_true", help="also compare every class")
    k.add_argument("--significant", action="store_true",
                   help="with bootstrap replicates in both reports (same ground truth, seed and "
                        "samples): fail only on a drop beyond --max-drop whose paired delta "
                        "interval lies wholly below zero")
    k.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    return p


def _bootstrap_options(p) -> None:
    """--bootstrap / --seed / --confidence (issue 16: image-bootstrap intervals)."""
    p.add_argument("--bootstrap", type=int, metavar="N",
                   help="image-bootstrap intervals of every figure from N >= 1 replicates "
                        "(e.g. 1000)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="with --bootstrap: seed of numpy.random.default_rng (default 0)")
    p.add_argument("--confidence", type=float, metavar="C",
                   help="with --bootstrap: interval confidence in (0, 1) (default 0.95)")


def _bootstrap_kwargs(args) -> dict:
    """The evaluation's bootstrap keywords from the options, checked (InputError: exit 2)."""
    if args.bootstrap is None:
        for opt, value in (("--seed", args.seed), ("--confidence", args.confidence)):
            if value is not None:
                raise InputError(f"Expected `{opt}` only with `--bootstrap N` but got it alone")
        return {}
    if args.bootstrap < 1:
        raise InputError(expected("--bootstrap", "an integer >= 1 (replicates)", args.bootstrap))
    conf = 0.95 if args.confidence is None else args.confidence
    if not 0 < conf < 1:
        raise InputError(expected("--confidence", "a number in the open interval (0, 1)",
                                  args.confidence))
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise InputError(expected("--seed", "an integer >= 0", seed))
    if args.dask:
        raise InputError("Expected `--bootstrap` without `--dask` (not supported on a "
                         "cluster yet)")
    return {"bootstrap": args.bootstrap, "seed": seed, "confidence": conf}


def _run(args) -> int:
    if args.command == "voc":
        from .evaluate import evaluate_voc
        classes = None
        if args.classes is not None:
            classes = [c.strip() for c in args.classes.split(",")]
        kw = dict(imageset=args.imageset, metric=args.metric, iou_threshold=args.iou,
                  compat=args.compat, classes=classes)
        boot = _bootstrap_kwargs(args)
        if args.dask:
            from . import distributed
            client = distributed.connect(args.dask)
            try:
                report = distributed.evaluate_voc(args.annotations, args.detections,
                                                  client=client, **kw)
            finally:
                distributed.disconnect(client)
        else:
            report = evaluate_voc(args.annotations, args.detections, **kw, **boot)
    elif args.command == "coco":
        from .evaluate import evaluate_coco
        thr = _float_list(args.iou_thresholds, "--iou-thresholds") if args.iou_thresholds else None
        areas = _area_ranges(args.area_ranges) if args.area_ranges else None
        md = _int_list(args.max_dets, "--max-dets") if args.max_dets else None
        if args.oks_sigmas and args.iou_type != "keypoints":
            raise InputError(expected("--oks-sigmas", "given only with --iou-type keypoints",
                                      args.oks_sigmas))
        sigmas = _float_list(args.oks_sigmas, "--oks-sigmas") if args.oks_sigmas else None
        boot = _bootstrap_kwargs(args)
        if args.dask:
            if args.class_agnostic or args.iou_type != "bbox":
                raise InputError("Expected `--dask` with bbox evaluation (--class-agnostic, "
                                 "segm and keypoints are not supported on a cluster yet)")
            from . import distributed
            from .io.coco import load_coco_ground_truth
            gt = load_coco_ground_truth(args.ground_truth)  # bad input fails before the cluster
            shards = distributed.expand_shards(args.results)
            client = distributed.connect(args.dask)
            try:
                report = distributed.evaluate_coco(
                    gt, shards, client=client, iou_thresholds=thr,
                    area_ranges=areas, max_dets=md, partitions=args.partitions)
            finally:
                distributed.disconnect(client)
        else:
            if args.partitions is not None:
                raise InputError("Expected `--partitions` only with `--dask` but got it alone")
            report = evaluate_coco(args.ground_truth, args.results, iou_thresholds=thr,
                                   area_ranges=areas, max_dets=md,
                                   class_agnostic=args.class_agnostic,
                                   iou_type=args.iou_type, oks_sigmas=sigmas, **boot)
    else:
        from .compare import compare_reports
        result = compare_reports(args.baseline, args.candidate, max_drop=args.max_drop,
                               metrics=args.metrics.split(",") if args.metrics else None,
                               per_class=args.per_class, significant=args.significant)
        if args.json:
            write_json(args.json, result.to_dict())
        print(result.format_table(), file=sys.stderr if args.json == STDOUT else sys.stdout)
        return 0 if result.passed else 1
    if args.json:
        write_json(args.json, report.to_dict())
    # with --json -, standard output carries the JSON report alone
    print(report.format_table(), file=sys.stderr if args.json == STDOUT else sys.stdout)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``deteval`` console script."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except InputError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deteval: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
