"""Streaming, mergeable evaluation for training loops and distributed evaluation.

>>> metric = MeanAveragePrecision(protocol="coco", box_format="xywh")
>>> metric.update(preds, targets, image_ids=[...])   # one list element per image
>>> other.merge(metric)                              # shards from other processes
>>> report = metric.compute()                        # same report as the CLI's

``update`` converts and validates each batch and buffers it; matching runs on the
buffer once it holds enough detections (and on what is left at ``compute``), so
matching work is done once, in large vectorised steps, whatever the batch size.
The state is plain numpy arrays and lists: it pickles, and shards merge by
concatenation. Ties between equal scores are broken by image id, then by the
position of the prediction within its image, so the figures do not depend on
batch size, batch order or sharding.
"""
from __future__ import annotations

import copy
import dataclasses
import types
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .ap import summarize_coco, summarize_voc
from .errors import InputError, expected
from .params import (COCO_RECALL_THRESHOLDS, VOC_COMPATS, check_choice,
                     check_iou, coco_params)
from .match import CocoMatches, VocMatches, match_coco, match_voc
from .report import CocoReport, VocReport, coco_report, voc_report
from .tables import Detections, GroundTruth, fingerprint_rows

__all__ = ["MeanAveragePrecision", "MetricInputError"]

_FLUSH_DETECTIONS = 200_000  # buffered detections that trigger a matching pass


class MetricInputError(InputError):
    """Bad input to :meth:`MeanAveragePrecision.update` (a ``ValueError``)."""


def _array(value: Any, image: Any, field: str, dtype) -> np.ndarray:
    try:
        arr = np.asarray(value)
        if arr.dtype == object or arr.dtype.kind in "USV":
            raise TypeError
        return arr.astype(dtype, copy=False)
    except (TypeError, ValueError):
        raise MetricInputError(expected(field, "numeric array-like", value),
                               f"image {image!r}") from None


class _Pending:
    """Converted, validated inputs not yet matched (columns + per-image offsets)."""

    def __init__(self):
        self.clear()

    def clear(self):
        self.images: List[int] = []       # local image index of each pending image
        self.gt: List[tuple] = []         # (boxes, labels, difficult, crowd, area)
        self.det: List[tuple] = []        # (boxes, scores, labels)
        self.num_det = 0


#: Keywords only deteval's own metric has: any of them (or a positional ``protocol``)
#: selects deteval's behaviour; without them the metric behaves as torchmetrics'.
NATIVE_KEYWORDS = ("protocol", "class_names", "iou_threshold", "compat", "area_ranges",
                   "max_dets")


class MeanAveragePrecision:
    """Mergeable mean-average-precision metric (COCO or PASCAL VOC rules).

    One class, two faces. Called as ``torchmetrics.detection.MeanAveragePrecision`` is
    called (``MeanAveragePrecision()``, ``MeanAveragePrecision(box_format="xywh",
    class_metrics=True)``, ...), it behaves as torchmetrics with its pycocotools backend
    (see :mod:`deteval.metric_tm`): ``update(preds, target)``, ``compute()`` returning its
    dict of keys. With any of deteval's own keywords (``protocol`` first, positionally or
    by name; ``class_names``, ``iou_threshold``, ``compat``, ``area_ranges``, ``max_dets``)
    it is deteval's metric described below, whose ``compute()`` returns the CLI's report.

    Parameters
    ----------
    protocol : {"coco", "voc07", "voc12"}
        COCO (pycocotools ``COCOeval``, bbox) or VOC with the 11-point / area metric.
    box_format : {"xyxy", "xywh"}
        Format of the boxes passed to :meth:`update` (default ``xyxy``, as torchmetrics). COCO evaluates ``[x, y, w, h]``
        (``xyxy`` input is converted with ``w = x2 - x1``); VOC evaluates inclusive
        pixel corners ``[x1, y1, x2, y2]`` (``xywh`` input is converted with
        ``x2 = x + w``).
    class_names : mapping label -> name, or sequence of names, optional
        Declares the classes: a sequence means labels ``0..n-1``. Labels outside the
        declared classes are an error. Default: the labels seen.
    iou_threshold, compat : VOC options, as :func:`deteval.evaluate_voc`.
        Under ``compat="detectron2"``, ties are still broken by image id and position.
    iou_thresholds, area_ranges, max_dets : COCO options, as :func:`deteval.evaluate_coco`.
    """

    def __new__(cls, *args, **kwargs):
        if cls is MeanAveragePrecision and not args and not any(
                k in kwargs for k in NATIVE_KEYWORDS):
            return object.__new__(_TorchmetricsMeanAveragePrecision)
        return object.__new__(cls)

    def __init__(self, protocol: str = "coco", box_format: str = "xyxy", *,
                 class_names: Optional[Union[Mapping[int, str], Sequence[str]]] = None,
                 iou_threshold: float = 0.5, compat: str = "devkit",
                 iou_thresholds=None, area_ranges=None, max_dets=None, iou_type: str = "bbox",
                 oks_sigmas=None):
        try:
            check_choice("protocol", protocol, ("coco", "voc07", "voc12"))
            check_choice("box_format", box_format, ("xywh", "xyxy"))
            check_choice("compat", compat, VOC_COMPATS)
            check_choice("iou_type", iou_type, ("bbox",) if protocol != "coco"
                         else ("bbox", "segm", "keypoints"))
            self.iou_threshold = check_iou("iou_threshold", iou_threshold)
            self.iou_thresholds, self.area_ranges, self.max_dets, self._default_thr = \
                coco_params(iou_thresholds, area_ranges, max_dets, iou_type)
            from .evaluate import _oks_sigmas
            self.oks_sigmas = _oks_sigmas(oks_sigmas) if iou_type == "keypoints" else None
        except InputError as exc:
            raise MetricInputError(exc.message, "MeanAveragePrecision()") from None
        self.iou_type = iou_type
        self.protocol = protocol
        self.box_format = box_format
        self.compat = compat
        if class_names is None:
            self.class_names: Optional[Dict[int, str]] = None
        elif isinstance(class_names, Mapping):
            self.class_names = {int(k): str(v) for k, v in class_names.items()}
        else:
            self.class_names = {i: str(n) for i, n in enumerate(class_names)}
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget every image seen."""
        self.image_ids: List[Any] = []
        self._id_set: set = set()
        self._pending = _Pending()
        self._chunks: List[_Chunk] = []    # one per matching pass: the matcher's records
        self._num_detections = 0           # every prediction, before any max_dets cut

    def __getnewargs_ex__(self):  # unpickling rebuilds the same face of the class
        return ((self.protocol,), {})

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_id_set"] = None  # rebuilt on load
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._id_set = set(self.image_ids)

    def _params(self) -> tuple:
        return (self.protocol, self.compat, self.iou_threshold, self.box_format,
                tuple(self.iou_thresholds.tolist()), tuple(self.area_ranges.items()),
                self.max_dets, self.class_names, getattr(self, "iou_type", "bbox"),
                None if getattr(self, "oks_sigmas", None) is None
                else tuple(self.oks_sigmas.tolist()))

    # ----------------------------------------------------------------- update
    def update(self, preds: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]],
               image_ids: Optional[Sequence[Any]] = None) -> None:
        """Add a batch: ``preds[i]`` and ``targets[i]`` belong to image ``image_ids[i]``.

        ``preds[i]``: ``boxes`` (N, 4), ``scores`` (N,), ``labels`` (N,).
        ``targets[i]``: ``boxes`` (G, 4), ``labels`` (G,); optionally ``iscrowd`` and
        ``area`` (COCO; default the box area) or ``difficult`` (VOC).
        Arrays may be numpy arrays, lists or anything with ``__array__``.

        Raises
        ------
        MetricInputError
            Naming the image and the field.
        """
        if len(preds) != len(targets):
            raise MetricInputError(f"Expected `preds` and `targets` to have the same length "
                                   f"but got {len(preds)} and {len(targets)}", "update()")
        if image_ids is None:
            start = len(self.image_ids)
            image_ids = list(range(start, start + len(preds)))
            if any(i in self._id_set for i in image_ids):  # after a merge: go past the largest id
                start = max(int(i) for i in self._id_set if isinstance(i, (int, np.integer))) + 1
                image_ids = list(range(start, start + len(preds)))
        else:
            image_ids = [i.item() if isinstance(i, np.generic) else i for i in image_ids]
            if len(image_ids) != len(preds):
                raise MetricInputError(f"Expected one image id per image ({len(preds)}) but "
                                       f"got {len(image_ids)}", "update()")
        seen = set()
        for i in image_ids:
            if i in self._id_set or i in seen:
                raise MetricInputError(f"Expected each image once but got image id {i!r} "
                                       f"again", "update()")
            seen.add(i)
        batch = [self._convert(p, t, i) for p, t, i in zip(preds, targets, image_ids)]
        for image_id, (gt, det) in zip(image_ids, batch):
            self._pending.images.append(len(self.image_ids))
            self.image_ids.append(image_id)
            self._id_set.add(image_id)
            self._pending.gt.append(gt)
            self._pending.det.append(det)
            self._pending.num_det += det[1].shape[0]
            self._num_detections += det[1].shape[0]
        if self._pending.num_det >= _FLUSH_DETECTIONS:
            self._flush()

    def _convert(self, pred: Mapping[str, Any], target: Mapping[str, Any], image: Any):
        kind = getattr(self, "iou_type", "bbox")
        pred_fields = ("boxes", "scores", "labels") if kind == "bbox" else ("scores", "labels")
        target_fields = ("labels",) if kind == "segm" else ("boxes", "labels")
        for name, obj, fields in (("preds", pred, pred_fields),
                                  ("targets", target, target_fields)):
            if not isinstance(obj, Mapping):
                raise MetricInputError(expected(name, "a dict per image", type(obj).__name__),
                                       f"image {image!r}")
            for f in fields:
                if f not in obj:
                    raise MetricInputError(f"Expected a `{name}['{f}']` field but got only "
                                           f"{sorted(obj)}", f"image {image!r}")
        iou_type = getattr(self, "iou_type", "bbox")
        geo_key = {"segm": "masks", "keypoints": "keypoints"}.get(iou_type)
        for name, obj in (("preds", pred), ("targets", target)):
            if geo_key and geo_key not in obj:
                raise MetricInputError(f"Expected a `{name}['{geo_key}']` field for iou_type "
                                       f"{iou_type!r} but got only {sorted(obj)}",
                                       f"image {image!r}")
        n_det = len(pred["scores"]) if np.ndim(pred["scores"]) else 0
        n_gt = len(target["labels"]) if np.ndim(target["labels"]) else 0
        det_boxes = (self._boxes(pred["boxes"], image, "preds['boxes']") if "boxes" in pred
                     or iou_type == "bbox" else np.zeros((n_det, 4)))
        n = det_boxes.shape[0]
        scores = self._vector(pred["scores"], n, image, "preds['scores']", np.float64)
        det_labels = self._labels(pred["labels"], n, image, "preds['labels']")
        gt_boxes = (self._boxes(target["boxes"], image, "targets['boxes']") if "boxes" in target
                    or iou_type != "segm" else np.zeros((n_gt, 4)))
        g = gt_boxes.shape[0]
        gt_labels = self._labels(target["labels"], g, image, "targets['labels']")
        det_geo = gt_geo = None
        if geo_key:
            det_geo = self._geometry(pred[geo_key], n, image, f"preds['{geo_key}']")
            gt_geo = self._geometry(target[geo_key], g, image, f"targets['{geo_key}']")
        flag_name = "iscrowd" if self.protocol == "coco" else "difficult"
        if flag_name in target:
            flags = self._vector(target[flag_name], g, image, f"targets['{flag_name}']",
                                 np.float64)
            if not np.isin(flags, (0, 1)).all():
                raise MetricInputError(expected(f"targets['{flag_name}']", "0/1 or bool values",
                                                flags[~np.isin(flags, (0, 1))][0]),
                                       f"image {image!r}")
            flags = flags.astype(bool)
        else:
            flags = np.zeros(g, dtype=bool)
        if self.protocol == "coco" and "area" in target:
            area = self._vector(target["area"], g, image, "targets['area']", np.float64)
        elif iou_type == "segm":
            area = gt_geo.areas.astype(np.float64)
        elif self.protocol == "coco":
            area = gt_boxes[:, 2] * gt_boxes[:, 3]
        else:
            area = (gt_boxes[:, 2] - gt_boxes[:, 0] + 1) * (gt_boxes[:, 3] - gt_boxes[:, 1] + 1)
        if iou_type == "keypoints":
            num_kp = (self._vector(target["num_keypoints"], g, image,
                                   "targets['num_keypoints']", np.float64).astype(np.int64)
                      if "num_keypoints" in target
                      else np.count_nonzero(gt_geo[:, :, 2] > 0, axis=1))
            gt_geo = (gt_geo, num_kp)
        return ((gt_boxes, gt_labels, flags, area, gt_geo),
                (det_boxes, scores, det_labels, det_geo))

    def _geometry(self, value, n, image, field):
        """Masks (binary ``(n, H, W)`` arrays or RLE dicts) or keypoints ``(n, K, 3)``."""
        where = f"image {image!r}"
        try:
            if self.iou_type == "segm":
                from .masks import masks_from_arrays, masks_from_segmentations
                if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], dict)):
                    sizes = np.array([v.get("size", [0, 0]) for v in value],
                                     dtype=np.int64).reshape(-1, 2)
                    geo = masks_from_segmentations(list(value), sizes[:, 0], sizes[:, 1],
                                                   where, field)
                else:
                    arr = _array(value, image, field, np.uint8)
                    if arr.size == 0:
                        arr = arr.reshape(0, 1, 1)
                    geo = masks_from_arrays(arr)
                count = len(geo)
            else:
                geo = _array(value, image, field, np.float64)
                if geo.size == 0:
                    geo = geo.reshape(0, len(self.oks_sigmas), 3)
                if geo.ndim != 3 or geo.shape[2] != 3 or geo.shape[1] != len(self.oks_sigmas):
                    raise MetricInputError(expected(field, f"shape (N, {len(self.oks_sigmas)}, 3)"
                                                    " (one sigma per keypoint)",
                                                    f"shape {geo.shape}"), where)
                count = geo.shape[0]
        except InputError as exc:
            raise MetricInputError(exc.message, where) from None
        if count != n:
            raise MetricInputError(expected(field, f"{n} entries (one per label)", count), where)
        return geo

    def _vector(self, value, n, image, field, dtype) -> np.ndarray:
        arr = _array(value, image, field, dtype).reshape(-1) if np.ndim(value) <= 1 else None
        if arr is None or arr.shape[0] != n:
            shape = np.shape(value)
            raise MetricInputError(expected(field, f"shape ({n},)", f"shape {shape}"),
                                   f"image {image!r}")
        if dtype == np.float64 and not np.isfinite(arr).all():
            raise MetricInputError(expected(field, "finite numbers", arr[~np.isfinite(arr)][0]),
                                   f"image {image!r}")
        return arr

    def _labels(self, value, n, image, field) -> np.ndarray:
        raw = self._vector(value, n, image, field, np.float64)
        labels = raw.astype(np.int64)
        if (labels != raw).any():
            raise MetricInputError(expected(field, "integer category ids",
                                            raw[labels != raw][0]), f"image {image!r}")
        if self.class_names is not None:
            unknown = ~np.isin(labels, list(self.class_names))
            if unknown.any():
                raise MetricInputError(expected(field, f"one of the declared class labels "
                                                f"{sorted(self.class_names)[:10]}",
                                                int(labels[unknown][0])), f"image {image!r}")
        return labels

    def _boxes(self, value, image, field) -> np.ndarray:
        arr = _array(value, image, field, np.float64)
        if arr.size == 0:
            arr = arr.reshape(0, 4)
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise MetricInputError(expected(field, "shape (N, 4)", f"shape {arr.shape}"),
                                   f"image {image!r}")
        if not np.isfinite(arr).all():
            raise MetricInputError(expected(field, "finite numbers", arr[~np.isfinite(arr)][0]),
                                   f"image {image!r}")
        if self.box_format == "xywh":
            bad = (arr[:, 2] < 0) | (arr[:, 3] < 0)
        else:
            bad = (arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1])
        if bad.any():
            what = ("w >= 0 and h >= 0" if self.box_format == "xywh"
                    else "x2 >= x1 and y2 >= y1")
            raise MetricInputError(expected(field, f"boxes with {what} ({self.box_format})",
                                            arr[bad][0].tolist()), f"image {image!r}")
        if self.protocol == "coco" and self.box_format == "xyxy":
            arr = np.stack([arr[:, 0], arr[:, 1], arr[:, 2] - arr[:, 0], arr[:, 3] - arr[:, 1]], 1)
        elif self.protocol != "coco" and self.box_format == "xywh":
            arr = np.stack([arr[:, 0], arr[:, 1], arr[:, 0] + arr[:, 2], arr[:, 1] + arr[:, 3]], 1)
        return arr

    # ------------------------------------------------------------------ match
    def _flush(self) -> None:
        """Match every pending image (one vectorised pass) and keep the records."""
        p = self._pending
        if not p.images:
            return
        local = np.array(p.images, dtype=np.int64)
        n_gt = np.array([g[1].shape[0] for g in p.gt], dtype=np.int64)
        n_det = np.array([d[1].shape[0] for d in p.det], dtype=np.int64)
        gt_boxes = np.concatenate([g[0] for g in p.gt]).reshape(-1, 4)
        gt_labels = np.concatenate([g[1] for g in p.gt])
        gt_flags = np.concatenate([g[2] for g in p.gt])
        gt_area = np.concatenate([g[3] for g in p.gt])
        det_boxes = np.concatenate([d[0] for d in p.det]).reshape(-1, 4)
        scores = np.concatenate([d[1] for d in p.det])
        det_labels = np.concatenate([d[2] for d in p.det])
        labels = np.unique(np.concatenate([gt_labels, det_labels]))
        gt_image = np.repeat(np.arange(local.shape[0]), n_gt)
        det_image = np.repeat(np.arange(local.shape[0]), n_det)
        # position of each prediction within its image: the tie-break after the image id
        position = np.arange(scores.shape[0]) - np.repeat(np.cumsum(n_det) - n_det, n_det)
        coco = self.protocol == "coco"
        gt = GroundTruth(
            image_idx=gt_image, class_idx=np.searchsorted(labels, gt_labels), boxes=gt_boxes,
            difficult=np.zeros_like(gt_flags) if coco else gt_flags,
            crowd=gt_flags if coco else np.zeros_like(gt_flags), area=gt_area,
            image_ids=np.arange(local.shape[0]), class_names=tuple(str(x) for x in labels),
            class_ids=labels, box_format="xywh" if coco else "xyxy_pixel")
        det = Detections(image_idx=det_image, class_idx=np.searchsorted(labels, det_labels),
                         boxes=det_boxes, scores=scores,
                         order=np.arange(scores.shape[0], dtype=np.int64))
        iou_type = getattr(self, "iou_type", "bbox")
        geometry = {}
        if iou_type != "bbox":
            gt, det = self._with_geometry(gt, det, p)
            from .evaluate import _geometry
            geometry = _geometry(gt, det, iou_type, self.oks_sigmas)
        if coco:
            areas = np.array(list(self.area_ranges.values()), dtype=np.float64).reshape(-1, 2)
            m = match_coco(gt, det, self.iou_thresholds, areas, self.max_dets[-1], **geometry)
            record_image = m.image_key  # the batch's image index (image_ids is arange)
            record_position = np.zeros(0, dtype=np.int64)
        else:
            # ties by (image, position) under either compat; the records come back in
            # ranked order with the detection row as their tie key
            m = match_voc(gt, det, self.iou_threshold, self.compat, file_order_ties=True)
            record_image = det_image[m.tie_key]
            record_position = position[m.tie_key]
        self._chunks.append(_Chunk(
            matches=m, labels=labels, images=local, record_image=record_image,
            record_position=record_position, gt_label=gt_labels, gt_image=local[gt_image],
            gt_boxes=gt_boxes, gt_flags=gt_flags, gt_area=gt_area,
            det_label=det_labels, det_image=local[det_image], det_boxes=det_boxes,
            det_scores=scores))
        p.clear()

    def _with_geometry(self, gt: GroundTruth, det: Detections, p) -> tuple:
        """The pending images' masks or keypoints as table columns."""
        if self.iou_type == "segm":
            from .masks import MaskSet
            gm = MaskSet.concatenate([g[4] for g in p.gt])
            dm = MaskSet.concatenate([d[3] for d in p.det])
            return (dataclasses.replace(gt, masks=gm),
                    dataclasses.replace(det, masks=dm, area=dm.areas.astype(np.float64)))
        K = len(self.oks_sigmas)
        gk = np.concatenate([g[4][0] for g in p.gt] + [np.zeros((0, K, 3))])
        num = np.concatenate([g[4][1] for g in p.gt] + [np.zeros(0, np.int64)])
        dk = np.concatenate([d[3] for d in p.det] + [np.zeros((0, K, 3))])
        if dk.shape[0]:
            x, y = dk[:, :, 0], dk[:, :, 1]
            d_area = (x.max(axis=1) - x.min(axis=1)) * (y.max(axis=1) - y.min(axis=1))
        else:
            d_area = np.zeros(0)
        return (dataclasses.replace(gt, keypoints=gk, num_keypoints=num),
                dataclasses.replace(det, keypoints=dk, area=d_area))

    def merge(self, other: "MeanAveragePrecision") -> "MeanAveragePrecision":
        """Add another metric's images (e.g. from another process). Returns ``self``.

        Both must use the same protocol and parameters; sharing an image id is an error.
        """
        if not isinstance(other, MeanAveragePrecision):
            raise MetricInputError(expected("other", "a MeanAveragePrecision",
                                            type(other).__name__), "merge()")
        if other._params() != self._params():
            raise MetricInputError("Expected metrics with the same protocol and parameters "
                                   "but got different ones", "merge()")
        shared = self._id_set.intersection(other.image_ids)
        if shared:
            raise MetricInputError(f"Expected disjoint image ids but both metrics hold "
                                   f"{len(shared)} of them, e.g. {sorted(shared, key=str)[0]!r}",
                                   "merge()")
        other = copy.deepcopy(other)
        other._flush()
        offset = len(self.image_ids)
        for chunk in other._chunks:
            self._chunks.append(dataclasses.replace(
                chunk, images=chunk.images + offset, gt_image=chunk.gt_image + offset,
                det_image=None if chunk.det_image is None else chunk.det_image + offset))
        self._pending.images += [i + offset for i in other._pending.images]
        self._num_detections += other._num_detections
        self.image_ids += other.image_ids
        self._id_set.update(other.image_ids)
        return self

    # ---------------------------------------------------------------- compute
    def _image_rank(self) -> np.ndarray:
        """Rank of each local image by image id (ints numerically, else as strings)."""
        ids = self.image_ids
        if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
            keys = np.array(ids, dtype=np.int64) if ids else np.zeros(0, dtype=np.int64)
        else:
            keys = np.array([str(i) for i in ids], dtype=object)
        order = np.argsort(keys, kind="stable")
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids))
        return rank

    def compute(self, *, tide: bool = False,
                confusion: Union[bool, Mapping[str, float], None] = None,
                curves: bool = False, per_image: bool = False,
                bootstrap: Optional[int] = None, seed: int = 0, confidence: float = 0.95
                ) -> Union[CocoReport, VocReport]:
        """The report of every image so far: ``report.to_dict()`` is the CLI's JSON.

        Parameters
        ----------
        tide : bool
            Add the TIDE errors (COCO, bbox), as ``deteval coco --tide`` (``report.tide``,
            ``report["tide"]``): images in the order they were added (the ground-truth
            file's order), each image's predictions in the order given (the results file's
            order), ``iscrowd`` targets as crowd regions.
        confusion : bool or dict, optional
            Add supervision's confusion matrix (``True``: IoU 0.5, score 0.3; or
            ``{"iou_threshold": ..., "conf_threshold": ...}``), as ``deteval coco
            --confusion``.
        curves : bool
            Add the PR curves and best-F1 points (COCO, bbox), as ``--curves``.
        per_image : bool
            Add the per-image counts, as ``--per-image``.
        bootstrap, seed, confidence : optional
            ``bootstrap=N``: image-bootstrap intervals from ``N`` replicates drawn with
            ``numpy.random.default_rng(seed)`` over the image ids sorted ascending
            (``report.uncertainty``, as ``deteval coco|voc --bootstrap N``; see
            :mod:`deteval.bootstrap`). Not available for keypoints.

        With any of them the result is a :class:`deteval.diagnostics.run.DiagnosticsReport`
        around the plain report, computed from the same match records (no second pass
        over the data; TIDE makes its own pass over the kept predictions).
        """
        if bootstrap is not None:
            from .bootstrap import check_bootstrap_params, check_seed
            try:
                check_bootstrap_params(bootstrap, confidence)
                check_seed(seed)
                if getattr(self, "iou_type", "bbox") == "keypoints":
                    raise InputError(expected("bootstrap", "None with iou_type='keypoints' "
                                              "(not supported yet)", bootstrap))
            except InputError as exc:
                raise MetricInputError(exc.message, "compute()") from None
        if tide:
            self._check_tide()
        diag = None
        if tide or confusion or curves or per_image:
            try:
                diag = self._diagnostics_request(confusion, curves, per_image)
            except InputError as exc:
                raise MetricInputError(exc.message, "compute()") from None
        self._flush()
        rank = self._image_rank()
        chunks = self._chunks
        gt_label = _cat([c.gt_label for c in chunks], np.int64)
        gt_image = _cat([c.gt_image for c in chunks], np.int64)
        gt_flags = _cat([c.gt_flags for c in chunks], bool)
        gt_boxes = _cat([c.gt_boxes for c in chunks], np.float64).reshape(-1, 4)
        gt_area = _cat([c.gt_area for c in chunks], np.float64)
        labels = np.unique(_cat([c.labels for c in chunks], np.int64))
        if self.class_names is not None:
            labels = np.array(sorted(self.class_names), dtype=np.int64)
        names = [self.class_names[int(x)] if self.class_names else str(int(x)) for x in labels]
        K = labels.shape[0]
        gt_cls = np.searchsorted(labels, gt_label)
        # fingerprint keys as the loaders use them: COCO category ids, VOC class names
        fp_keys = names if self.protocol != "coco" else [int(x) for x in labels]
        inputs = {"source": "MeanAveragePrecision", "num_images": len(self.image_ids),
                  "num_detections": int(self._num_detections),
                  "ground_truth_sha256": fingerprint_rows(
                      np.array(self.image_ids, dtype=object)[gt_image]
                      if len(self.image_ids) else [],
                      [fp_keys[c] for c in gt_cls], gt_boxes,
                      gt_flags if self.protocol != "coco" else np.zeros(gt_cls.shape, bool),
                      gt_flags if self.protocol == "coco" else np.zeros(gt_cls.shape, bool),
                      gt_area)}
        # each chunk's records in the global class table and image order, then the
        # matcher's own record concatenation (per-class counts summed)
        width = 1 + max([int(c.record_position.max()) for c in chunks
                         if c.record_position.shape[0]], default=0)
        parts = [c.in_global_order(labels, rank, width) for c in chunks]
        if self.protocol == "coco":
            A, T = len(self.area_ranges), self.iou_thresholds.shape[0]
            if not parts:
                parts = [CocoMatches(
                    class_idx=np.zeros(0, np.int64), scores=np.zeros(0),
                    image_key=np.zeros(0, np.int64), rank=np.zeros(0, np.int64),
                    matched=np.zeros((0, A, T), bool), ignored=np.zeros((0, A, T), bool),
                    num_gt=np.zeros((K, A), np.int64))]
            matches = CocoMatches.concatenate(parts)
            iou_type = getattr(self, "iou_type", "bbox")
            summary = summarize_coco(matches, self.iou_thresholds, list(self.area_ranges),
                                     self.max_dets, COCO_RECALL_THRESHOLDS, self._default_thr,
                                     iou_type)
            report = coco_report(summary, labels, names, self.iou_thresholds, self.area_ranges,
                                 self.max_dets, COCO_RECALL_THRESHOLDS, inputs=inputs,
                                 iou_type=iou_type)
            if bootstrap is not None:
                report = dataclasses.replace(report, uncertainty=self._uncertainty(
                    bootstrap, seed, confidence, report,
                    (matches, rank, gt_cls, gt_image, gt_flags, gt_area, width)))
            if diag is None:
                return report
            from .diagnostics.run import coco_diagnostics
            gt, det = self._tables(labels, names)
            sections = None
            if tide:
                from .diagnostics.tide import tide_errors
                sections = {"tide": tide_errors(gt, det)}
            return coco_diagnostics(report, gt, det, matches, summary,
                                    confusion=diag["confusion"], curves=curves,
                                    per_image=per_image, image_key=rank,
                                    image_ids=self._report_ids(), sections=sections)
        if not parts:
            parts = [VocMatches(class_idx=np.zeros(0, np.int64), scores=np.zeros(0),
                                tie_key=np.zeros(0, np.int64), outcome=np.zeros(0, np.int8),
                                num_gt=np.zeros(K, np.int64), num_difficult=np.zeros(K, np.int64))]
        matches = VocMatches.concatenate(parts)
        summary = summarize_voc(matches, self.protocol, self.compat)
        report = voc_report(summary, names, self.protocol, self.compat, self.iou_threshold,
                            inputs=inputs)
        if bootstrap is not None:
            report = dataclasses.replace(report, uncertainty=self._uncertainty(
                bootstrap, seed, confidence, report,
                (matches, rank, gt_cls, gt_image, gt_flags, gt_area, width)))
        if diag is None:
            return report
        from .diagnostics.run import voc_diagnostics
        gt, det = self._tables(labels, names)
        record_image = _cat([c.images[c.record_image] for c in chunks], np.int64)
        return voc_diagnostics(report, gt, det, matches, self.compat,
                               confusion=diag["confusion"], per_image=per_image,
                               record_image=record_image, image_ids=self._report_ids())

    def _uncertainty(self, samples: int, seed: int, confidence: float, report, kept) -> dict:
        """The report's ``uncertainty`` section from the records :meth:`_compute` used."""
        from . import bootstrap as boot
        matches, rank, gt_cls, gt_image, gt_flags, gt_area, width = kept
        gt_key = rank[gt_image] if gt_image.shape[0] else gt_image
        I = len(self.image_ids)
        if self.protocol == "coco":
            K = matches.num_gt.shape[0]
            table = types.SimpleNamespace(num_images=I, num_classes=K, crowd=gt_flags,
                                          area=gt_area, image_idx=gt_key, class_idx=gt_cls)
            areas = np.array(list(self.area_ranges.values()), dtype=np.float64).reshape(-1, 2)
            counts = boot.coco_gt_counts(table, areas, np.arange(I, dtype=np.int64))
            return boot.coco_uncertainty(
                counts, matches, areas, list(self.area_ranges), self.iou_thresholds,
                self.max_dets, COCO_RECALL_THRESHOLDS, self._default_thr,
                getattr(self, "iou_type", "bbox"), [c["name"] for c in report.classes],
                samples, seed, confidence)
        records = boot.voc_records_of(matches, matches.tie_key // width,
                                      matches.tie_key % width, gt_key, gt_cls, gt_flags, I)
        return boot.voc_uncertainty(records, self.protocol, self.compat,
                                    [c.name for c in report.classes], samples, seed,
                                    confidence)

    # ------------------------------------------------------------ diagnostics
    def _check_tide(self) -> None:
        if self.protocol != "coco" or getattr(self, "iou_type", "bbox") != "bbox":
            raise MetricInputError(expected("tide", "False unless protocol='coco' and "
                                            "iou_type='bbox' (TIDE is defined on COCO boxes)",
                                            True), "compute()")
        if self.class_names is not None:
            from .diagnostics.run import check_unique_names
            try:
                check_unique_names(list(self.class_names.values()), "class_names")
            except InputError as exc:
                raise MetricInputError(exc.message, "compute()") from None

    def _diagnostics_request(self, confusion, curves, per_image) -> dict:
        """Check the diagnostics asked of :meth:`compute` (InputError when unsupported)."""
        from .diagnostics.confusion import (DEFAULT_CONF_THRESHOLD, DEFAULT_IOU_THRESHOLD,
                                            check_confusion_thresholds)
        if curves and self.protocol != "coco":
            raise InputError(f"Expected `curves` only with protocol 'coco' but got protocol "
                             f"{self.protocol!r}")
        if getattr(self, "iou_type", "bbox") != "bbox":
            raise InputError(f"Expected diagnostics with iou_type 'bbox' but got "
                             f"{self.iou_type!r}")
        conf = None
        if confusion:
            opts = dict(confusion) if isinstance(confusion, Mapping) else {}
            unknown = set(opts) - {"iou_threshold", "conf_threshold"}
            if unknown:
                raise InputError(expected("confusion", "True or a dict with iou_threshold "
                                          "and conf_threshold", sorted(unknown)))
            conf = check_confusion_thresholds(
                opts.get("iou_threshold", DEFAULT_IOU_THRESHOLD),
                opts.get("conf_threshold", DEFAULT_CONF_THRESHOLD))
        return {"confusion": conf}

    def _report_ids(self) -> np.ndarray:
        ids = self.image_ids
        if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
            return np.array(ids, dtype=np.int64).reshape(-1)
        return np.array([str(i) for i in ids], dtype=object)

    def _tables(self, labels: np.ndarray, names: List[str]):
        """Every image's ground truth and predictions as the loaders' tables (images in
        metric order, classes in ``labels`` order, predictions in their order per image)."""
        chunks = self._chunks
        if any(c.det_image is None for c in chunks):
            raise MetricInputError("Expected predictions kept for diagnostics but this "
                                   "metric's state predates them", "compute()")
        coco = self.protocol == "coco"
        gt_label = _cat([c.gt_label for c in chunks], np.int64)
        gt_flags = _cat([c.gt_flags for c in chunks], bool)
        gt = GroundTruth(
            image_idx=_cat([c.gt_image for c in chunks], np.int64),
            class_idx=np.searchsorted(labels, gt_label),
            boxes=_cat([c.gt_boxes for c in chunks], np.float64).reshape(-1, 4),
            difficult=np.zeros_like(gt_flags) if coco else gt_flags,
            crowd=gt_flags if coco else np.zeros_like(gt_flags),
            area=_cat([c.gt_area for c in chunks], np.float64),
            image_ids=np.arange(len(self.image_ids)), class_names=tuple(names),
            class_ids=labels, box_format="xywh" if coco else "xyxy_pixel")
        scores = _cat([c.det_scores for c in chunks], np.float64)
        det = Detections(
            image_idx=_cat([c.det_image for c in chunks], np.int64),
            class_idx=np.searchsorted(labels, _cat([c.det_label for c in chunks], np.int64)),
            boxes=_cat([c.det_boxes for c in chunks], np.float64).reshape(-1, 4),
            scores=scores, order=np.arange(scores.shape[0], dtype=np.int64))
        return gt, det


def _cat(parts: List[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


@dataclasses.dataclass(frozen=True)
class _Chunk:
    """One matching pass of the metric: the matcher's typed records, in the pass's own
    class table, with what places them among every image of the metric.

    Attributes
    ----------
    matches : CocoMatches or VocMatches
        As :func:`match_coco` / :func:`match_voc` returned them (classes index ``labels``).
    labels : ndarray of int64, shape (K_c,)
    images : ndarray of int64, shape (I_c,)
        The metric-local image of each of the pass's images.
    record_image : ndarray of int64, shape (N,)
        The pass's image of each record.
    record_position : ndarray of int64, shape (N,)
        VOC: the prediction's position within its image (the tie key after the image).
    gt_label, gt_image, gt_boxes, gt_flags, gt_area : ndarray
        The pass's ground truth (for the fingerprint, and TIDE).
    det_image, det_boxes, det_scores, det_labels : ndarray, optional
        COCO bbox: the pass's predictions (metric-local image, ``[x, y, w, h]``, score,
        label), each image's in the order given (``compute(tide=True)``).
    """

    matches: Any
    labels: np.ndarray
    images: np.ndarray
    record_image: np.ndarray
    record_position: np.ndarray
    gt_label: np.ndarray
    gt_image: np.ndarray
    gt_boxes: np.ndarray
    gt_flags: np.ndarray
    gt_area: np.ndarray
    det_label: Optional[np.ndarray] = None   # the pass's predictions, for diagnostics
    det_image: Optional[np.ndarray] = None   # (metric-local images, rows in image order)
    det_boxes: Optional[np.ndarray] = None
    det_scores: Optional[np.ndarray] = None

    def in_global_order(self, labels: np.ndarray, image_rank: np.ndarray, width: int):
        """The records with classes in ``labels`` and images keyed by ``image_rank``."""
        m = self.matches
        remap = np.searchsorted(labels, self.labels)
        image_key = image_rank[self.images[self.record_image]]
        K = labels.shape[0]

        def counts(per_class):
            out = np.zeros((K,) + per_class.shape[1:], dtype=np.int64)
            np.add.at(out, remap, per_class)
            return out

        if isinstance(m, CocoMatches):
            return CocoMatches(class_idx=remap[m.class_idx], scores=m.scores,
                               image_key=image_key, rank=m.rank, matched=m.matched,
                               ignored=m.ignored, num_gt=counts(m.num_gt))
        return VocMatches(class_idx=remap[m.class_idx], scores=m.scores,
                          tie_key=image_key * width + self.record_position, outcome=m.outcome,
                          num_gt=counts(m.num_gt), num_difficult=counts(m.num_difficult))


from .metric_tm import TorchmetricsMode  # noqa: E402  (after MeanAveragePrecision)


class _TorchmetricsMeanAveragePrecision(TorchmetricsMode, MeanAveragePrecision):
    """``MeanAveragePrecision`` called as torchmetrics' (see :mod:`deteval.metric_tm`)."""

    def __init__(self, box_format: str = "xyxy", iou_type: Any = "bbox",
                 iou_thresholds: Optional[List[float]] = None,
                 rec_thresholds: Optional[List[float]] = None,
                 max_detection_thresholds: Optional[List[int]] = None,
                 class_metrics: bool = False, extended_summary: bool = False,
                 average: str = "macro", backend: str = "pycocotools", **kwargs: Any) -> None:
        self._tm_kwargs = dict(box_format=box_format, iou_type=iou_type,
                               iou_thresholds=iou_thresholds, rec_thresholds=rec_thresholds,
                               max_detection_thresholds=max_detection_thresholds,
                               class_metrics=class_metrics, extended_summary=extended_summary,
                               average=average, backend=backend, **kwargs)
        self._tm_init(**self._tm_kwargs)

    def reset(self) -> None:
        """Forget every image seen."""
        self._tm_reset()

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)

    def update(self, preds, target) -> None:  # type: ignore[override]
        """Add a batch: ``preds[i]`` / ``target[i]`` dicts of image ``i`` (torchmetrics')."""
        self._tm_update(preds, target)

    def compute(self) -> Dict[str, Any]:  # type: ignore[override]
        """torchmetrics' result dict (gathered over every rank under torch.distributed)."""
        return self._tm_compute()

    def forward(self, preds, target) -> Dict[str, Any]:
        """The batch's own figures; the batch is also added to the state (torchmetrics)."""
        batch = _TorchmetricsMeanAveragePrecision(**self._tm_kwargs)
        batch.update(preds, target)
        value = batch._tm_compute_local()
        self.update(preds, target)
        return value

    __call__ = forward

    def _tm_compute_local(self):
        det, gt = self._det, self._gt
        self._tm_gathered = lambda: (det, gt)  # a batch value is this process's own
        return self._tm_compute()

    def merge(self, other) -> "_TorchmetricsMeanAveragePrecision":  # type: ignore[override]
        """Add another metric's images after ours (shards of one evaluation)."""
        if not isinstance(other, _TorchmetricsMeanAveragePrecision) or \
                other._tm_kwargs != self._tm_kwargs:
            raise MetricInputError("Expected a metric with the same arguments to merge",
                                   "merge()")
        self._tm_merge(other)
        return self

    def state_dict(self) -> Dict[str, Any]:
        """The state (per-image arrays) as a dict; :meth:`load_state_dict` restores it."""
        return {"det": list(self._det), "gt": list(self._gt), "tensors": self._tensors}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self._det, self._gt = list(state["det"]), list(state["gt"])
        self._tensors = bool(state["tensors"])
