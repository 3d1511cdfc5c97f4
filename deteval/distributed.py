"""The same exact figures on a Dask cluster, from sharded results.

Matching is per image and the match records carry everything their global order needs
(score, image key, rank within the image), so the work splits in two shuffles, and no
process ever holds every record:

1. **Map, by image.** Each shard (a COCO results JSON file, JSON Lines, or Parquet) is read
   by one task against the ground truth; its rows are tagged with their global
   position (shard number, then record number: the order of the shards concatenated, which
   is the single-machine tie order) and split into ``P`` image partitions
   (``image key mod P``), so an image's detections meet in one partition whatever shards
   they came from.
2. **Match, per image partition.** The partition's detections, put back in global order,
   are matched against the ground truth of its own images (:func:`deteval.match.match_coco`);
   the records are split again into ``Q`` class partitions (``class mod Q``), and the
   partition's per-class ground-truth counts are reduced on the cluster.
3. **Accumulate, per class partition.** Each class's records from every image partition
   are concatenated and accumulated (:func:`deteval.ap.coco_accumulate`, pycocotools'
   order: score, then image id, then rank); a task returns only the precision/recall arrays
   of its classes at the recall points, ``(T, R, K_q, A, M)``.

The client loads the ground truth (and so do the workers, once per worker that needs it), then receives the ``(T, R, K, A, M)``
arrays and summarizes them (:func:`deteval.ap.summarize_accumulated`): its memory grows
with the ground truth and the number of classes, never with the number of detections. A
worker holds at most one shard, one image partition's records, or one class partition's
records at a time; the largest of these bounds worker memory (with skewed classes, the
class partition holding the most frequent class).

VOC (:func:`evaluate_voc`) shards are detection folders in the devkit layout (one file per
class each); there every class is matched and scored whole, so one shuffle suffices: each
shard's rows go to class partitions (``class mod Q``), and a class partition's task matches
its classes over every image (the detectron2 protocol's ``np.argsort`` over a class's whole
file needs exactly that) and returns their AP and counts.

Dask is an optional extra: ``pip install 'deteval[dask]'`` (Parquet shards also need
``pyarrow``).
"""
from __future__ import annotations

import glob
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import InputError, expected
from .params import COCO_MAX_DETS, COCO_RECALL_THRESHOLDS, coco_params
from .tables import Detections, GroundTruth

__all__ = ["evaluate_coco", "evaluate_voc", "compute_metric", "connect", "disconnect", "expand_shards", "load_shard"]

PathLike = Union[str, os.PathLike]
SHARD_FORMATS = (".json", ".jsonl", ".ndjson", ".parquet")
_RECORD_BITS = 40  # global position = shard number << 40 | record number


def _require_dask():
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise InputError("Expected the Dask extra to be installed for `--dask` but it is "
                         "not: pip install 'deteval[dask]'") from None


def connect(address: str):
    """A ``distributed.Client`` for ``address``: ``local:N`` starts a local cluster of ``N``
    single-threaded worker processes, anything else is a scheduler address
    (``tcp://host:8786``). The caller closes the client (and its cluster)."""
    _require_dask()
    from distributed import Client, LocalCluster
    if address.startswith("local"):
        rest = address[len("local"):]
        try:
            n = int(rest[1:]) if rest.startswith(":") else (os.cpu_count() or 1)
        except ValueError:
            n = 0
        if n <= 0 or (rest and not rest.startswith(":")):
            raise InputError(expected("--dask", "local:N with N >= 1 workers, or a scheduler "
                                      "address such as tcp://host:8786", address))
        import logging
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster)
    try:
        return Client(address, timeout="20s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"Expected `--dask` to name a reachable Dask scheduler but could not "
                         f"connect to {address!r}: {exc}") from None


def disconnect(client) -> None:
    """Close a client from :func:`connect`, and the local cluster it started."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


def expand_shards(shards: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """The shard files, in order: each pattern's matches sorted by name, patterns in the
    order given. A pattern that matches nothing, or a path that is not a file of a
    supported format, is an error naming it."""
    items = [shards] if isinstance(shards, (str, os.PathLike)) else list(shards)
    if not items:
        raise InputError(expected("shards", "at least one results file or pattern", []))
    paths: List[str] = []
    for item in items:
        item = os.fspath(item)
        if glob.has_magic(item):
            found = sorted(glob.glob(item))
            if not found:
                raise InputError("Expected the pattern to match result shards but it matches "
                                 "no file", item)
        else:
            found = [item]
        for path in found:
            if not os.path.isfile(path):
                raise InputError("Expected a results shard (a readable file) but it is "
                                 + ("a folder" if os.path.isdir(path) else "missing"), path)
            if not path.lower().endswith(SHARD_FORMATS):
                raise InputError(expected("shard format", "a results file named *.json, "
                                          "*.jsonl, *.ndjson or *.parquet",
                                          os.path.basename(path)), path)
            paths.append(path)
    return paths


def load_shard(path: str, gt: GroundTruth) -> Detections:
    """One shard's detections against ``gt`` (rows in record order).

    ``.json``: a COCO results list; ``.jsonl`` / ``.ndjson``: one result object per line;
    ``.parquet``: columns ``image_id``, ``category_id``, ``score`` and ``bbox`` (a list of
    four numbers) or ``x``, ``y``, ``w``, ``h``.
    """
    from .io import coco as coco_io
    lower = path.lower()
    if lower.endswith(".json"):
        return coco_io.load_coco_results(path, gt)
    if lower.endswith((".jsonl", ".ndjson")):
        import msgspec

        from .io.files import read_input
        data = read_input(path, "JSON Lines file")
        records = []
        for i, line in enumerate(data.splitlines()):
            if not line.strip():
                continue
            try:
                records.append(msgspec.json.decode(line))
            except msgspec.DecodeError as exc:
                raise InputError(f"Expected a JSON object per line but got invalid JSON "
                                 f"({exc})", path, f"line {i + 1}") from None
        try:
            det = coco_io.load_coco_results(records, gt)
        except InputError as exc:  # the list loader names no file
            raise InputError(exc.message, path, exc.location) from None
        return _with_source(det, path)
    return _load_parquet(path, gt)


def _with_source(det: Detections, path: str) -> Detections:
    return Detections(image_idx=det.image_idx, class_idx=det.class_idx, boxes=det.boxes,
                      scores=det.scores, order=det.order, sources={"results": path})


def _load_parquet(path: str, gt: GroundTruth) -> Detections:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("Expected pyarrow to be installed to read Parquet shards but it is "
                         "not: pip install 'deteval[dask]' pyarrow", path) from None
    from .io.coco import _detections_from_columns
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"Expected a Parquet file but could not read it: {exc}", path) from None
    cols = set(table.column_names)
    need = {"image_id", "category_id", "score"}
    if not need <= cols or not ({"bbox"} <= cols or {"x", "y", "w", "h"} <= cols):
        raise InputError(expected("columns", "image_id, category_id, score and bbox (or x, y, "
                                  "w, h)", sorted(cols)), path)
    img = np.asarray(table.column("image_id").to_numpy(zero_copy_only=False))
    cat = np.asarray(table.column("category_id").to_numpy(zero_copy_only=False))
    for name, col in (("image_id", img), ("category_id", cat)):
        if col.dtype.kind not in "iu":
            raise InputError(expected(name, "an integer column", str(col.dtype)), path)
    scores = np.asarray(table.column("score").to_numpy(zero_copy_only=False), dtype=np.float64)
    if "bbox" in cols:
        flat = table.column("bbox").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        if flat.shape[0] != 4 * table.num_rows:
            raise InputError(expected("bbox", "four numbers per row", "lists of other lengths"),
                             path)
        boxes = np.asarray(flat, dtype=np.float64).reshape(-1, 4)
    else:
        boxes = np.stack([np.asarray(table.column(c).to_numpy(zero_copy_only=False),
                                     dtype=np.float64) for c in "xywh"], axis=1)
    bad = ~(np.isfinite(scores) & np.isfinite(boxes).all(axis=1) & (boxes[:, 2:] >= 0).all(axis=1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError("Expected a finite `score` and a `bbox` of finite numbers with "
                         "w, h >= 0 but got another value", path, f"row {i}")
    return _detections_from_columns(img.astype(np.int64), cat.astype(np.int64), boxes, scores,
                                    gt, path)


# ------------------------------------------------------------------ cluster tasks

def _image_key(gt: GroundTruth) -> np.ndarray:
    return np.argsort(np.argsort(gt.image_ids, kind="stable"), kind="stable")


def _map_shard(path: str, shard: int, gt: GroundTruth, partitions: int
               ) -> Tuple[List[Dict[str, np.ndarray]], int]:
    """Read one shard and split its rows by image partition (columns only)."""
    det = load_shard(path, gt)
    n = len(det)
    if n >= 1 << _RECORD_BITS:
        raise InputError(f"Expected fewer than 2^{_RECORD_BITS} results per shard but got {n}",
                         path)
    return _split_rows(det, shard, _image_key(gt)[det.image_idx] % partitions, partitions), n


def _split_rows(det: Detections, shard: int, part: np.ndarray, partitions: int) -> list:
    """A shard's detections as column dicts per partition, each row tagged with its global
    position (shard number, then record number: the shards' concatenated order)."""
    position = (np.int64(shard) << np.int64(_RECORD_BITS)) + det.order
    out = []
    for p in range(partitions):
        rows = np.flatnonzero(part == p)
        out.append({"image_idx": det.image_idx[rows], "class_idx": det.class_idx[rows],
                    "boxes": det.boxes[rows], "scores": det.scores[rows],
                    "position": position[rows]})
    return out


def _identity(x):
    return x


def _count(pair):
    return pair[1]


def _take(pair, p):
    return pair[0][p]


def _match_partition(p: int, partitions: int, class_partitions: int, gt: GroundTruth,
                     thr: np.ndarray, areas: np.ndarray, max_det: int, *pieces):
    """Match one image partition; return its records split by class partition, and its
    per-class ground-truth counts."""
    from .match import CocoMatches, match_coco
    cols = {k: np.concatenate([pc[k] for pc in pieces]) for k in pieces[0]} if pieces else None
    order = np.argsort(cols["position"], kind="stable")  # the shards' concatenated order
    det = Detections(image_idx=cols["image_idx"][order], class_idx=cols["class_idx"][order],
                     boxes=cols["boxes"][order].reshape(-1, 4), scores=cols["scores"][order],
                     order=np.arange(order.shape[0], dtype=np.int64))
    key = _image_key(gt)
    mine = (key[gt.image_idx] % partitions) == p
    gt_p = _rows(gt, mine)
    m = match_coco(gt_p, det, thr, areas, max_det, image_key=key)
    return _by_class_partition(m, class_partitions), m.num_gt


def _by_class_partition(m, class_partitions: int) -> list:
    """``m``'s records split by ``class mod class_partitions`` (counts left to the caller)."""
    from .match import CocoMatches
    out = []
    for q in range(class_partitions):
        rows = np.flatnonzero(m.class_idx % class_partitions == q)
        out.append(CocoMatches(class_idx=m.class_idx[rows], scores=m.scores[rows],
                               image_key=m.image_key[rows], rank=m.rank[rows],
                               matched=m.matched[rows], ignored=m.ignored[rows],
                               num_gt=np.zeros_like(m.num_gt)))
    return out


def _rows(gt: GroundTruth, keep: np.ndarray) -> GroundTruth:
    import dataclasses
    values = {}
    for f in dataclasses.fields(gt):
        v = getattr(gt, f.name)
        per_row = (isinstance(v, np.ndarray) and f.name not in ("image_ids", "class_ids")
                   and v.shape[:1] == keep.shape)
        values[f.name] = v[keep] if per_row else v
    return GroundTruth(**values)


def _records_of(result, q):
    return result[0][q]


def _num_gt_of(result):
    return result[1]


def _sum(*arrays):
    return np.sum(arrays, axis=0)


def _accumulate_partition(q: int, class_partitions: int, num_gt: np.ndarray,
                          max_dets: np.ndarray, rec_thresholds: np.ndarray, *pieces):
    """Accumulate one class partition: ``(classes, precision, recall)`` of its classes."""
    from .ap import coco_accumulate
    from .match import CocoMatches
    recs = CocoMatches.concatenate(list(pieces))
    recs = CocoMatches(class_idx=recs.class_idx, scores=recs.scores, image_key=recs.image_key,
                       rank=recs.rank, matched=recs.matched, ignored=recs.ignored,
                       num_gt=num_gt)
    precision, recall = coco_accumulate(recs, max_dets, rec_thresholds)
    classes = np.arange(q, num_gt.shape[0], class_partitions)
    return classes, precision[:, :, classes], recall[:, classes]


# ------------------------------------------------------------------------ the API

def evaluate_coco(ground_truth: Union[PathLike, dict, GroundTruth],
                  shards: Union[PathLike, Sequence[PathLike]], *, client: Any,
                  iou_thresholds=None, area_ranges=None, max_dets: Sequence[int] = COCO_MAX_DETS,
                  partitions: Optional[int] = None, class_partitions: Optional[int] = None):
    """:func:`deteval.evaluate_coco` on a Dask cluster, from sharded results.

    Parameters
    ----------
    ground_truth : path, dict or GroundTruth
        A COCO instances file (its path is read by the client and by the workers).
    shards : path, pattern, or sequence of them
        Results shards (:func:`expand_shards`); together they are one results list, in
        shard order (the tie order of equal scores is the single-machine one of that
        concatenation).
    client : distributed.Client
    iou_thresholds, area_ranges, max_dets
        As :func:`deteval.evaluate_coco`.
    partitions, class_partitions : int, optional
        Image partitions and class partitions (default: twice the workers, at most the
        number of images / classes).

    Returns
    -------
    CocoReport
        Bit for bit the single-machine report, plus ``engine``
        (``{"name": "dask", "workers", "partitions", "class_partitions", "shards"}``).
    """
    _require_dask()
    from .ap import summarize_accumulated
    from .io.coco import load_coco_ground_truth
    from .report import coco_report
    thr, areas, md, default = coco_params(iou_thresholds, area_ranges, max_dets)
    gt = (ground_truth if isinstance(ground_truth, GroundTruth)
          else load_coco_ground_truth(ground_truth))
    paths = expand_shards(shards)
    gt_path = gt.sources.get("ground_truth")
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    P = int(partitions or max(1, min(2 * workers, gt.num_images)))
    Q = int(class_partitions or max(1, min(2 * workers, gt.num_classes)))
    if P < 1 or Q < 1:
        raise InputError(expected("partitions", "positive integers", (partitions,
                                                                      class_partitions)))
    area_arr = np.array(list(areas.values()), dtype=np.float64).reshape(-1, 2)
    md_arr = np.asarray(md, dtype=np.int64)
    # The ground truth reaches the workers as a task, not as scattered data: a worker lost
    # mid-run takes no irreplaceable copy with it (Dask recomputes the task: a file is read
    # again by a worker, an in-memory table is resent from the task graph).
    if isinstance(gt_path, str) and os.path.isfile(gt_path):
        gt_f = client.submit(load_coco_ground_truth, gt_path, pure=False)
    else:
        gt_f = client.submit(_identity, gt, pure=False)
    mapped = [client.submit(_map_shard, path, i, gt_f, P, pure=False)
              for i, path in enumerate(paths)]
    counts = [client.submit(_count, m, pure=False) for m in mapped]
    matched = []
    for p in range(P):
        pieces = [client.submit(_take, m, p, pure=False) for m in mapped]
        matched.append(client.submit(_match_partition, p, P, Q, gt_f, thr, area_arr,
                                     int(md[-1]), *pieces, pure=False))
    num_gt = client.submit(_sum, *[client.submit(_num_gt_of, m, pure=False) for m in matched],
                           pure=False)
    accumulated = []
    for q in range(Q):
        pieces = [client.submit(_records_of, m, q, pure=False) for m in matched]
        accumulated.append(client.submit(_accumulate_partition, q, Q, num_gt, md_arr,
                                         COCO_RECALL_THRESHOLDS, *pieces, pure=False))
    T, R, K, A, M = thr.shape[0], COCO_RECALL_THRESHOLDS.shape[0], gt.num_classes, \
        area_arr.shape[0], md_arr.shape[0]
    precision = np.full((T, R, K, A, M), np.nan)
    recall = np.full((T, K, A, M), np.nan)
    for fut in accumulated:  # as each class partition finishes: only its curves travel
        classes, prec_q, rec_q = fut.result()
        precision[:, :, classes] = prec_q
        recall[:, classes] = rec_q
    num_detections = int(sum(client.gather(counts)))
    summary = summarize_accumulated(precision, recall, thr, list(areas), md, default)
    inputs = {"ground_truth": gt.sources.get("ground_truth"), "results": paths,
              "num_images": gt.num_images, "num_detections": num_detections,
              "ground_truth_sha256": gt.fingerprint()}
    report = coco_report(summary, gt.class_ids, gt.class_names, thr, areas, md,
                         COCO_RECALL_THRESHOLDS, inputs=inputs)
    engine = {"name": "dask", "workers": workers, "partitions": P, "class_partitions": Q,
              "shards": len(paths)}
    return _with_engine(report, engine)


def _with_engine(report, engine: dict):
    import dataclasses
    return dataclasses.replace(report, engine=engine)


# ------------------------------------------------------------------------------ VOC

def _voc_map_shard(folder: str, shard: int, gt: GroundTruth, class_partitions: int):
    """Read one shard folder of per-class files; split its rows by class partition."""
    from .io.voc import load_voc_detections
    det = load_voc_detections(folder, gt)
    out = _split_rows(det, shard, det.class_idx % class_partitions, class_partitions)
    return out, len(det), det.sources.get("missing_files", []), det.sources.get("unused_files",
                                                                                    [])


def _voc_class_partition(q: int, class_partitions: int, gt: GroundTruth, iou_threshold: float,
                         compat: str, metric: str, *pieces):
    """Match and score the classes of one partition over every image."""
    from .ap import summarize_voc
    from .match import match_voc
    cols = {k: np.concatenate([pc[k] for pc in pieces]) for k in pieces[0]}
    order = np.argsort(cols["position"], kind="stable")  # the shards' concatenated files
    det = Detections(image_idx=cols["image_idx"][order], class_idx=cols["class_idx"][order],
                     boxes=cols["boxes"][order].reshape(-1, 4), scores=cols["scores"][order],
                     order=np.arange(order.shape[0], dtype=np.int64))
    gt_q = _rows(gt, gt.class_idx % class_partitions == q)
    summary = summarize_voc(match_voc(gt_q, det, iou_threshold, compat), metric, compat)
    classes = np.arange(q, gt.num_classes, class_partitions)
    return classes, {f: getattr(summary, f)[classes] for f in
                     ("ap", "tp", "fp", "ignored", "num_detections", "num_gt", "num_difficult")}


def _voc_load_gt(annotations, imageset, classes):
    from .io.voc import load_voc_annotations
    return load_voc_annotations(annotations, imageset, classes)


def evaluate_voc(annotations: PathLike, shards: Union[PathLike, Sequence[PathLike]], *,
                 client: Any, imageset: Optional[PathLike] = None, metric: str = "voc12",
                 iou_threshold: float = 0.5, compat: str = "devkit",
                 classes: Optional[Sequence[str]] = None,
                 class_partitions: Optional[int] = None):
    """:func:`deteval.evaluate_voc` on a Dask cluster, from sharded detection folders.

    ``shards`` are folders (or patterns of folders) in the devkit layout; for each class,
    the shards' files together are that class's detection file, in shard order (its tie
    order). Returns the single-process report, bit for bit, plus ``engine``.
    """
    _require_dask()
    import dataclasses

    from .ap import VocSummary
    from .params import VOC_COMPATS, VOC_METRICS, check_choice, check_iou
    from .report import voc_report
    check_choice("metric", metric, VOC_METRICS)
    check_choice("compat", compat, VOC_COMPATS)
    iou_threshold = check_iou("iou_threshold", iou_threshold)
    if classes is not None:
        classes = [str(c).strip() for c in classes]
    gt = _voc_load_gt(annotations, imageset, classes)
    items = [shards] if isinstance(shards, (str, os.PathLike)) else list(shards)
    folders: List[str] = []
    for item in items:
        item = os.fspath(item)
        found = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not found:
            raise InputError("Expected the pattern to match detection folders but it matches "
                             "nothing", item)
        for f in found:
            if not os.path.isdir(f):
                raise InputError("Expected a detection folder (devkit layout) but it is "
                                 + ("a file" if os.path.exists(f) else "missing"), f)
            folders.append(f)
    if not folders:
        raise InputError(expected("shards", "at least one detection folder", []))
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    Q = int(class_partitions or max(1, min(2 * workers, gt.num_classes)))
    gt_f = client.submit(_voc_load_gt, annotations, imageset, classes, pure=False)
    mapped = [client.submit(_voc_map_shard, f, i, gt_f, Q, pure=False)
              for i, f in enumerate(folders)]
    parts = []
    for q in range(Q):
        pieces = [client.submit(_take, m, q, pure=False) for m in mapped]
        parts.append(client.submit(_voc_class_partition, q, Q, gt_f, iou_threshold, compat,
                                   metric, *pieces, pure=False))
    K = gt.num_classes
    cols = {"ap": np.full(K, np.nan)}
    for f in ("tp", "fp", "ignored", "num_detections", "num_gt", "num_difficult"):
        cols[f] = np.zeros(K, dtype=np.int64)
    for fut in parts:
        cls, values = fut.result()
        for f, v in values.items():
            cols[f][cls] = v
    meta = client.gather(mapped)
    missing = set(gt.class_names)
    unused: List[str] = []
    for _, _, miss, unu in meta:
        missing &= set(miss)
        unused += [u for u in unu if u not in unused]
    defined = cols["ap"][~np.isnan(cols["ap"])]
    summary = VocSummary(mAP=float(np.mean(defined.tolist())) if defined.size else None, **cols)
    notes = {c: "no detection file: 0 detections, AP 0" for c in gt.class_names if c in missing}
    inputs = {"annotations": gt.sources.get("annotations"), "imageset": gt.sources.get("imageset"),
              "detections": folders, "num_images": gt.num_images,
              "num_detections": int(sum(m[1] for m in meta)),
              "ground_truth_sha256": gt.fingerprint()}
    if unused:
        inputs["unused_detection_files"] = unused
    report = voc_report(summary, gt.class_names, metric, compat, iou_threshold, inputs=inputs,
                        class_notes=notes)
    return dataclasses.replace(report, engine={"name": "dask", "workers": workers,
                                               "partitions": 1, "class_partitions": Q,
                                               "shards": len(folders)})


# ------------------------------------------------------------- streaming metrics

def _metric_meta(metric):
    """A rank's metric, matched: its image ids, labels and ground-truth columns (small)."""
    metric._flush()
    chunks = metric._chunks
    cat = (lambda f, dt: np.concatenate([getattr(c, f) for c in chunks]) if chunks
           else np.zeros(0, dtype=dt))
    return {"image_ids": list(metric.image_ids), "labels": cat("labels", np.int64),
            "gt_label": cat("gt_label", np.int64), "gt_image": cat("gt_image", np.int64),
            "gt_boxes": cat("gt_boxes", np.float64).reshape(-1, 4),
            "gt_flags": cat("gt_flags", bool), "gt_area": cat("gt_area", np.float64),
            "num_detections": int(metric._num_detections)}


def _metric_records(metric, labels, image_rank, class_partitions):
    """A rank's records in the global class table and image order, by class partition."""
    from .match import CocoMatches
    metric._flush()
    parts = [c.in_global_order(labels, image_rank, 1) for c in metric._chunks]
    K, A = labels.shape[0], len(metric.area_ranges)
    T = metric.iou_thresholds.shape[0]
    if not parts:
        parts = [CocoMatches(class_idx=np.zeros(0, np.int64), scores=np.zeros(0),
                             image_key=np.zeros(0, np.int64), rank=np.zeros(0, np.int64),
                             matched=np.zeros((0, A, T), bool), ignored=np.zeros((0, A, T), bool),
                             num_gt=np.zeros((K, A), np.int64))]
    m = CocoMatches.concatenate(parts)
    return _by_class_partition(m, class_partitions), m.num_gt


def compute_metric(metrics: Sequence[Any], *, client: Any, class_partitions: Optional[int] = None):
    """The report of several streaming metrics (``MeanAveragePrecision(protocol="coco")``,
    one per training rank, as objects or as futures on the cluster), reduced on the cluster.

    Equal to merging them in the given order and calling ``compute()`` (disjoint image ids),
    but the records never gather in one process: each rank's records go, by class partition,
    to the workers that accumulate them; the client receives the image ids and ground truth
    (for the report's fingerprint) and the ``(T, R, K, A, M)`` arrays.
    """
    _require_dask()
    from .ap import summarize_accumulated
    from .params import COCO_RECALL_THRESHOLDS as R_THR
    from .report import coco_report
    from .tables import fingerprint_rows
    futures = [m if type(m).__name__ == "Future" else client.scatter(m, hash=False)
               for m in metrics]
    metas = client.gather([client.submit(_metric_meta, f, pure=False) for f in futures])
    first = client.submit(lambda m: (m.protocol, m.iou_thresholds, dict(m.area_ranges),
                                     tuple(m.max_dets), m._default_thr, m.class_names),
                          futures[0], pure=False).result()
    protocol, thr, areas, md, default, class_names = first
    if protocol != "coco":
        raise InputError(expected("protocol", "'coco' for a cluster reduction", protocol))
    ids = [i for meta in metas for i in meta["image_ids"]]
    if len(set(ids)) != len(ids):
        raise InputError("Expected disjoint image ids across the metrics but some repeat",
                         "compute_metric()")
    if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
        keys = np.array(ids, dtype=np.int64) if ids else np.zeros(0, np.int64)
    else:
        keys = np.array([str(i) for i in ids], dtype=object)
    order = np.argsort(keys, kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    labels = np.unique(np.concatenate([meta["labels"] for meta in metas] +
                                      [meta["gt_label"] for meta in metas] +
                                      [np.zeros(0, np.int64)]))
    if class_names is not None:
        labels = np.array(sorted(class_names), dtype=np.int64)
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    Q = int(class_partitions or max(1, min(2 * workers, labels.shape[0] or 1)))
    offsets = np.cumsum([0] + [len(meta["image_ids"]) for meta in metas])
    recs = [client.submit(_metric_records, f, labels, rank[offsets[i]:offsets[i + 1]], Q,
                          pure=False) for i, f in enumerate(futures)]
    num_gt = client.submit(_sum, *[client.submit(_num_gt_of, r, pure=False) for r in recs],
                           pure=False)
    md_arr = np.asarray(md, dtype=np.int64)
    parts = [client.submit(_accumulate_partition, q, Q, num_gt, md_arr, R_THR,
                           *[client.submit(_records_of, r, q, pure=False) for r in recs],
                           pure=False) for q in range(Q)]
    K, A, T, M = labels.shape[0], len(areas), thr.shape[0], md_arr.shape[0]
    precision = np.full((T, R_THR.shape[0], K, A, M), np.nan)
    recall = np.full((T, K, A, M), np.nan)
    for fut in parts:
        classes, prec_q, rec_q = fut.result()
        precision[:, :, classes] = prec_q
        recall[:, classes] = rec_q
    summary = summarize_accumulated(precision, recall, thr, list(areas), md, default)
    names = [class_names[int(x)] if class_names else str(int(x)) for x in labels]
    gt_image = np.concatenate([meta["gt_image"] + offsets[i] for i, meta in enumerate(metas)])
    gt_cls = np.searchsorted(labels, np.concatenate([meta["gt_label"] for meta in metas]))
    flags = np.concatenate([meta["gt_flags"] for meta in metas])
    inputs = {"source": "MeanAveragePrecision", "num_images": len(ids),
              "num_detections": int(sum(meta["num_detections"] for meta in metas)),
              "ground_truth_sha256": fingerprint_rows(
                  np.array(ids, dtype=object)[gt_image] if ids else [],
                  [int(labels[c]) for c in gt_cls],
                  np.concatenate([meta["gt_boxes"] for meta in metas]).reshape(-1, 4),
                  np.zeros(gt_cls.shape, bool), flags,
                  np.concatenate([meta["gt_area"] for meta in metas]))}
    report = coco_report(summary, labels, names, thr, areas, md, R_THR, inputs=inputs)
    return _with_engine(report, {"name": "dask", "workers": workers, "partitions": len(metrics),
                                 "class_partitions": Q, "shards": len(metrics)})
