"""The one place that loads the optional compiled extensions and decides which path runs.

``deteval._textscan`` (C scanners for VOC XML, VOC detection files and COCO results JSON)
and ``deteval._kernels`` (radix ranking and the VOC / COCO matching walks) are optional:
without a C compiler deteval installs and gives the same numbers through its Python/numpy
reference code, only slower. Every other module takes the extensions from here
(``textscan``, ``kernels``: the module, or None), and :func:`status` says which path is in
use and why (``deteval --version`` prints it).

``DETEVAL_REQUIRE_NATIVE=1`` in the environment makes a missing or broken extension an
error at import, so a CI run that means to test the compiled path cannot silently fall back
to the reference path (and its C-versus-numpy tests cannot silently turn into skips).
"""
from __future__ import annotations

import importlib
import os
from typing import Dict, Optional

__all__ = ["textscan", "kernels", "status", "REQUIRE_ENV", "scan_voc_files", "scan_detections",
           "scan_detection_files", "scan_coco_results", "scan_coco_segm_results", "id_table"]

REQUIRE_ENV = "DETEVAL_REQUIRE_NATIVE"
_ERRORS: Dict[str, str] = {}


def _load(name: str):
    try:
        return importlib.import_module(f"deteval.{name}")
    except ImportError as exc:
        _ERRORS[name] = f"{type(exc).__name__}: {exc}"
        return None


textscan = _load("_textscan")
kernels = _load("_kernels")

if os.environ.get(REQUIRE_ENV, "") not in ("", "0") and _ERRORS:
    raise ImportError(f"{REQUIRE_ENV} is set but the compiled extensions did not load ("
                      + "; ".join(f"deteval.{n}: {e}" for n, e in _ERRORS.items())
                      + "); build them with `pip install .` or "
                      "`python setup.py build_ext --inplace`")


def status() -> Dict[str, Optional[str]]:
    """Extension name -> None when loaded, else why not (the import error)."""
    return {"_textscan": _ERRORS.get("_textscan"), "_kernels": _ERRORS.get("_kernels")}


# ------------------------------------------------------------ named results
# Every call into the scanners goes through these: each returns numpy arrays by name (or
# None where the scanner declines and the Python reader decides). The loaders keep their own
# ``_textscan`` name only to choose the path (tests switch it off to run the references).

from typing import NamedTuple, Sequence  # noqa: E402

import numpy as np  # noqa: E402


class VocFilesScan(NamedTuple):
    fallback: np.ndarray    # bool per file: left to lxml
    counts: np.ndarray      # int64 objects per file
    names: list             # the name table (str)
    name_idx: np.ndarray    # int64 per object
    boxes: np.ndarray       # float64 (n, 4)
    difficult: np.ndarray   # bool per object
    ok: np.ndarray          # bool per object: the fast checks passed


class DetectionScan(NamedTuple):
    values: np.ndarray      # float64 (n, 5): score, x1, y1, x2, y2
    id_start: np.ndarray    # int64 byte offset of each id token
    id_len: np.ndarray      # int64
    line: np.ndarray        # int64 1-based line numbers
    error: object           # None, or (line, kind, token_start, token_len)


class DetectionFilesScan(NamedTuple):
    status: np.ndarray      # uint8 per file: 0 read here, else the Python reader decides
    counts: np.ndarray      # int64 rows per file
    scores: np.ndarray      # float64
    boxes: np.ndarray       # float64 (n, 4)
    image_idx: np.ndarray   # int64 positions in the id table


class CocoResultsScan(NamedTuple):
    image_id: np.ndarray
    category_id: np.ndarray
    score: np.ndarray
    bbox: np.ndarray        # float64 (n, 4)


class CocoSegmResultsScan(NamedTuple):
    image_id: np.ndarray
    category_id: np.ndarray
    score: np.ndarray
    bbox: np.ndarray        # float64 (n, 4); zeros when no record has one
    with_bbox: bool
    height: np.ndarray      # int64 (n,): the RLE's size
    width: np.ndarray
    runs: np.ndarray        # uint32: every record's decoded runs
    lengths: np.ndarray     # int64 (n,): runs per record
    totals: np.ndarray      # int64 (n,): pixels (the runs' sum)
    areas: np.ndarray       # int64 (n,): foreground pixels


def scan_voc_files(paths: Sequence[str]) -> VocFilesScan:
    fallback, counts, table, name_idx, boxes, difficult, ok = textscan.scan_voc_files(paths)
    return VocFilesScan(np.frombuffer(fallback, dtype=np.uint8).astype(bool),
                        np.frombuffer(counts, dtype=np.int64), table,
                        np.frombuffer(name_idx, dtype=np.int64),
                        np.frombuffer(boxes, dtype=np.float64).reshape(-1, 4),
                        np.frombuffer(difficult, dtype=np.uint8).astype(bool),
                        np.frombuffer(ok, dtype=np.uint8).astype(bool))


def scan_detections(data: bytes) -> DetectionScan:
    values, id_start, id_len, line, error = textscan.scan_detections(data)
    return DetectionScan(np.frombuffer(values, dtype=np.float64).reshape(-1, 5),
                         np.frombuffer(id_start, dtype=np.int64),
                         np.frombuffer(id_len, dtype=np.int64),
                         np.frombuffer(line, dtype=np.int64), error)


def scan_detection_files(paths: Sequence[str], table) -> DetectionFilesScan:
    status, counts, scores, boxes, img = textscan.scan_detection_files(paths, table)
    return DetectionFilesScan(np.frombuffer(status, dtype=np.uint8),
                              np.frombuffer(counts, dtype=np.int64),
                              np.frombuffer(scores, dtype=np.float64),
                              np.frombuffer(boxes, dtype=np.float64).reshape(-1, 4),
                              np.frombuffer(img, dtype=np.int64))


def scan_coco_segm_results(data: bytes):
    """:class:`CocoSegmResultsScan` (masks decoded), or None outside the scanner's subset
    (or without the compiled extension)."""
    if textscan is None:
        return None
    found = textscan.scan_coco_segm_results(data)
    if found is None:
        return None
    n, img, cat, scores, boxes, with_bbox, h, w, runs, lengths, totals, areas = found
    i64 = [np.frombuffer(b, dtype=np.int64) for b in (img, cat, h, w, lengths, totals, areas)]
    return CocoSegmResultsScan(i64[0], i64[1], np.frombuffer(scores, dtype=np.float64),
                               np.frombuffer(boxes, dtype=np.float64).reshape(n, 4),
                               bool(with_bbox), i64[2], i64[3],
                               np.frombuffer(runs, dtype=np.uint32), i64[4], i64[5], i64[6])


def scan_coco_results(data: bytes):
    """:class:`CocoResultsScan`, or None for a file outside the scanner's subset."""
    found = textscan.scan_coco_results(data)
    if found is None:
        return None
    n, img, cat, scores, boxes = found
    return CocoResultsScan(np.frombuffer(img, dtype=np.int64), np.frombuffer(cat, dtype=np.int64),
                           np.frombuffer(scores, dtype=np.float64),
                           np.frombuffer(boxes, dtype=np.float64).reshape(n, 4))


def id_table(keys):
    return textscan.id_table(keys)
