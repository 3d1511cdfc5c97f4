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
from .diagnostics import options as diagnostics

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
    sub = p.add_subparsers(dest="command", metavar="{voc,coco,lvis,compare,plot,convert}")
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
    diagnostics.add_cli_options(v, "voc")
    v.add_argument("--tide", action="store_true", help=argparse.SUPPRESS)  # COCO only: exit 2
    _add_html_option(v)
    _bootstrap_options(v)

    c = sub.add_parser("coco", help="COCO evaluation (pycocotools semantics: bbox, segm, "
                                    "keypoints)",
                       description="COCO evaluation: the standard figures and per-class "
                                   "figures, as pycocotools COCOeval.")
    c.add_argument("ground_truth", metavar="GROUND_TRUTH",
                   help="COCO JSON, YOLO data.yaml (or its folder), LabelMe folder, CVAT for "
                        "images XML or VOC folder (detected from the content)")
    c.add_argument("results", metavar="RESULTS",
                   help="COCO results JSON, folder of YOLO prediction .txt files or folder "
                        "of VOC comp4_det_*_<class>.txt files")
    c.add_argument("--split", metavar="NAME", help="YOLO dataset: the split (default val)")
    c.add_argument("--classes", metavar="FILE", help="LabelMe / CVAT / VOC ground truth: "
                   "the class order (one name per line; ids 1..K)")
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
    diagnostics.add_cli_options(c, "coco")
    c.add_argument("--tide", action="store_true",
                   help="add the TIDE error decomposition (tidecv's Cls, Loc, Both, Dupe, Bkg, "
                        "Miss dAPs and counts; bbox only): report key `tide`")
    _add_html_option(c)
    _bootstrap_options(c)

    _lvis_parser(sub)

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
    k.add_argument("--html", metavar="PATH", help="also write the comparison as one "
                   "self-contained HTML page (verdict, per-class deltas, regressions first)")
    k.add_argument("--significant", action="store_true",
                   help="with bootstrap replicates in both reports (same ground truth, seed and "
                        "samples): fail only on a drop beyond --max-drop whose paired delta "
                        "interval lies wholly below zero")
    k.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    _add_plot_parser(sub)

    v = sub.add_parser("convert", help="convert a dataset between COCO, YOLO and VOC",
                       description="Convert ground truth of any readable format (detected) "
                                   "without rounding; says what the target cannot hold.")
    v.add_argument("source", metavar="SOURCE")
    v.add_argument("--to", required=True, choices=("coco", "yolo", "voc"),
                   dest="target")
    v.add_argument("out", metavar="OUT", help="a .json file (coco) or a new folder")
    v.add_argument("--classes", metavar="FILE", help="class order (LabelMe / CVAT / VOC)")
    v.add_argument("--split", metavar="NAME", help="YOLO source: the split (default val)")
    return p


def _lvis_parser(sub) -> None:
    from .lvis import LVIS_IOU_TYPES, LVIS_MAX_DETS, LVIS_MAX_DETS_PER_CLASS
    lv = sub.add_parser("lvis", help="LVIS federated evaluation (lvis-api semantics), or "
                                     "Fixed AP",
                        description="LVIS evaluation: AP, APr/APc/APf, AR and per-class AP, "
                                    "as lvis-api 0.5.3 LVISEval; --fixed: the fixed-AP "
                                    "protocol (Dave et al. 2021).")
    lv.add_argument("ground_truth", metavar="GROUND_TRUTH.json")
    lv.add_argument("results", metavar="RESULTS.json")
    lv.add_argument("--iou-type", choices=LVIS_IOU_TYPES, default="bbox",
                    help="bbox (default) or segm (masks)")
    lv.add_argument("--max-dets", type=int, metavar="N",
                    help=f"results kept per image, highest scores first (default "
                         f"{LVIS_MAX_DETS}); not with --fixed")
    lv.add_argument("--fixed", action="store_true",
                    help="fixed AP: no per-image cap, at most --max-dets-per-class results "
                         "per category over the dataset")
    lv.add_argument("--max-dets-per-class", type=int, metavar="N",
                    help=f"with --fixed: results kept per category (default "
                         f"{LVIS_MAX_DETS_PER_CLASS})")
    lv.add_argument("--json", metavar="PATH", help="also write the JSON report here (- for "
                    "standard output, the tables then go to standard error)")
    _add_html_option(lv)


# ------------------------------------------------------- bootstrap intervals (#16)

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


# --------------------------------------------------------------- HTML page and plots (#15)

def _add_html_option(sub_parser) -> None:
    sub_parser.add_argument("--html", metavar="PATH",
                            help="also write one self-contained HTML page of the report "
                                 "(tables, curves, diagnostics; no network needed to view)")


def _add_plot_parser(sub) -> None:
    g = sub.add_parser("plot", help="write the report's figures as image files (matplotlib)",
                       description="Write the figures of a JSON report (precision-recall "
                                   "curves, AP by class, TIDE, confusion) as files for a "
                                   "paper. Needs deteval[plot].")
    g.add_argument("report", metavar="REPORT.json")
    g.add_argument("--out", metavar="DIR", required=True,
                   help="folder for the figures (created if missing, its parent must exist)")
    g.add_argument("--format", choices=("png", "svg", "pdf"), default="png",
                   help="file format (default png)")


def _now_utc() -> str:
    from datetime import datetime, timezone
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _check_html_path(args) -> None:
    """Refuse an unusable ``--html`` before any work (and before ``--json`` is written)."""
    import os
    path = getattr(args, "html", None)
    if not path:
        return
    if path == STDOUT:
        if getattr(args, "json", None) == STDOUT:
            raise InputError("Expected at most one of `--json` and `--html` to be - (standard "
                             "output) but got both")
        return
    if os.path.isdir(path):
        raise InputError(expected("--html", "a writable file path", f"{path} (a folder)"))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(expected("--html", "a file path in an existing folder",
                                  f"{path} (no folder {folder})"))


def _html_implies_diagnostics(args) -> None:
    """``--html`` asks for every diagnostic the page shows that the command offers."""
    if getattr(args, "dask", None) or getattr(args, "class_agnostic", False):
        return  # the diagnostics run in one process, per class: the page shows the rest
    if getattr(args, "html", None):
        from .html import diagnostics_for_html
        for name in diagnostics_for_html(args.command, getattr(args, "iou_type", "bbox")):
            if hasattr(args, name) and not getattr(args, name):
                setattr(args, name, True)


def _write_html_report(args, report, extra: Optional[dict] = None) -> None:
    from . import html
    data = report.to_dict()
    for key, value in (extra or {}).items():
        data.setdefault(key, value)
    if "curves" not in data and getattr(report, "precision", None) is not None:
        areas = list((data.get("params") or {}).get("area_ranges") or {})
        if "all" in areas:
            curves = html.coco_curves(report.precision, data["params"]["iou_thresholds"],
                                      [c["name"] for c in data["classes"]],
                                      area_index=areas.index("all"))
            if curves is not None:
                data["curves"] = curves
    write_output(args.html, html.render_report(data, generated_at=_now_utc()), what="--html")


def _write_html_comparison(args, result) -> None:
    import os
    from . import html
    from .compare import load_report
    page = html.render_comparison(load_report(args.baseline), load_report(args.candidate),
                                  result, names=(os.path.basename(args.baseline),
                                                 os.path.basename(args.candidate)),
                                  generated_at=_now_utc())
    write_output(args.html, page, what="--html")


def _run_plot(args) -> int:
    from .compare import load_report
    from .plot import write_figures
    report = load_report(args.report)
    progress = None
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm
            progress = lambda it, total: tqdm(it, total=total, desc="figures",  # noqa: E731
                                              file=sys.stderr, leave=False)
        except ImportError:
            pass
    written = write_figures(report, args.out, args.format, progress=progress)
    for path in written:
        print(path)
    return 0


def _run_lvis(args):
    from .lvis import evaluate_lvis
    if args.fixed and args.max_dets is not None:
        raise InputError(expected("--max-dets", "left out with --fixed (fixed AP has no "
                                  "per-image cap; see --max-dets-per-class)",
                                  args.max_dets))
    if not args.fixed and args.max_dets_per_class is not None:
        raise InputError(expected("--max-dets-per-class", "given only with --fixed",
                                  args.max_dets_per_class))
    return evaluate_lvis(args.ground_truth, args.results, iou_type=args.iou_type,
                         max_dets=args.max_dets, fixed=args.fixed,
                         max_dets_per_class=args.max_dets_per_class)


def _run(args) -> int:
    _check_html_path(args)
    if args.command == "plot":
        return _run_plot(args)
    _html_implies_diagnostics(args)
    html_extra = None
    diag = None
    if args.command in ("voc", "coco"):  # diagnostics options, checked before any work
        diag = diagnostics.request_from_args(args, args.command)
    stages = diag.stages if diag is not None and diag.needs_records else None
    if args.command == "voc" and getattr(args, "html", None) and not args.dask:
        stages = stages if stages is not None else {}  # the page's curves: the match records
    if args.command == "lvis":
        report = _run_lvis(args)
    elif args.command == "voc":
        if args.tide:
            raise InputError("Expected `--tide` only with `deteval coco` (TIDE is defined on "
                             "COCO files) but got it with `deteval voc`")
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
            report = evaluate_voc(args.annotations, args.detections, stages=stages, **kw,
                                  **boot)
            if args.html:
                from .html import voc_curves
                html_extra = {"curves": voc_curves(stages["matches"], stages["gt"].class_names,
                                                   args.iou, args.compat)}
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
            if args.split is not None or args.classes is not None:
                raise InputError("Expected `--dask` with COCO JSON inputs (--split and "
                                 "--classes are for other formats)")
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
            from .io.detect import load_pair  # other formats: detected, read as COCO tables
            pair = load_pair(args.ground_truth, args.results, split=args.split,
                             classes_file=args.classes)
            gt_in, res_in = args.ground_truth, args.results
            if pair is not None:
                if args.iou_type != "bbox":
                    raise InputError(expected("--iou-type", "bbox with non-COCO inputs",
                                              args.iou_type))
                gt_in, res_in, warnings = pair
                for w in warnings:
                    print(f"deteval: warning: {w}", file=sys.stderr)
            report = evaluate_coco(gt_in, res_in, iou_thresholds=thr,
                                   area_ranges=areas, max_dets=md,
                                   class_agnostic=args.class_agnostic,
                                   iou_type=args.iou_type, oks_sigmas=sigmas,
                                   stages=stages, **boot)
    elif args.command == "convert":
        from .convert import convert
        notes = convert(args.source, args.target, args.out, classes_file=args.classes,
                        split=args.split)
        for n in notes:
            print(f"deteval: note: {n}", file=sys.stderr)
        print(f"wrote {args.out} ({args.target})")
        return 0
    else:
        from .compare import compare_reports
        result = compare_reports(args.baseline, args.candidate, max_drop=args.max_drop,
                               metrics=args.metrics.split(",") if args.metrics else None,
                               per_class=args.per_class, significant=args.significant)
        if args.html:
            _write_html_comparison(args, result)
        if args.json:
            write_json(args.json, result.to_dict())
        print(result.format_table(),
              file=sys.stderr if STDOUT in (args.json, args.html) else sys.stdout)
        return 0 if result.passed else 1
    if diag is not None:
        report = diag.finish(report, getattr(args, "compat", "devkit"))
    if args.json:
        write_json(args.json, report.to_dict())
    if args.html:
        _write_html_report(args, report, html_extra)
    if diag is not None and diag.csv_dir is not None:
        report.write_csv(diag.csv_dir)
    text = report.to_markdown() if diag is not None and diag.markdown else report.format_table()
    # with --json - or --html -, standard output carries that file alone
    print(text, file=sys.stderr if STDOUT in (args.json, args.html) else sys.stdout)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``deteval`` console script."""
    args = _parser().parse_args(argv)
    import gc
    gc_was_enabled = gc.isenabled()
    # one short run over columnar arrays makes no reference cycles worth collecting, while
    # the cyclic collector would rescan the millions of parsed JSON objects again and again
    gc.disable()
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except InputError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deteval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`deteval ... | head`): no traceback
        import os
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more reaches the closed pipe
        return 141  # as a shell reports SIGPIPE
    finally:
        if gc_was_enabled:  # main() called from Python: leave the collector as it was
            gc.enable()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
