"""The torchmetrics face of :class:`deteval.metric.MeanAveragePrecision`.

``MeanAveragePrecision(...)`` called as ``torchmetrics.detection.MeanAveragePrecision`` is
called (none of deteval's own keywords ``protocol``, ``class_names``, ``iou_threshold``,
``compat``, ``area_ranges``, ``max_dets``) behaves as torchmetrics 1.x with its pycocotools
backend: the same arguments and defaults (``box_format="xyxy"``, float32 threshold grids from
``torch.linspace``), the same keys, -1 conventions, shapes and values, with deteval's engine
underneath (:func:`deteval.match.match_coco`, :func:`deteval.ap.coco_accumulate`).

torch stays optional: nothing imports it unless a tensor is passed; then the results are
tensors too (numpy arrays otherwise).

References
----------
.. [1] torchmetrics ``detection/mean_ap.py`` and ``detection/helpers.py``
   (``_get_coco_format``, ``_calculate_map_with_coco``), https://github.com/Lightning-AI/torchmetrics
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["TM_KEYWORDS", "TorchmetricsMode", "TM_IOU_THRESHOLDS", "TM_REC_THRESHOLDS"]

#: ``torch.linspace(0.5, 0.95, 10).tolist()``: float32 values (0.550000011920929, ...).
TM_IOU_THRESHOLDS = [0.5, 0.550000011920929, 0.6000000238418579, 0.6499999761581421,
                     0.699999988079071, 0.75, 0.800000011920929, 0.8500000238418579,
                     0.8999999761581421, 0.949999988079071]

TM_KEYWORDS = ("box_format", "iou_type", "iou_thresholds", "rec_thresholds",
               "max_detection_thresholds", "class_metrics", "extended_summary", "average",
               "backend")
#: torchmetrics ``Metric`` keywords: accepted (they tune torchmetrics' own machinery).
_METRIC_KWARGS = ("compute_on_cpu", "dist_sync_on_step", "process_group", "dist_sync_fn",
                  "distributed_available_fn", "sync_on_compute", "compute_with_cache")


#: ``torch.linspace(0.0, 1.00, 101).tolist()``: torch's float32 values, as written by it.
TM_REC_THRESHOLDS = [
    0.0, 0.009999999776482582, 0.019999999552965164, 0.029999999329447746, 0.03999999910593033,
    0.04999999701976776, 0.05999999865889549, 0.07000000029802322, 0.07999999821186066,
    0.08999999612569809, 0.09999999403953552, 0.10999999940395355, 0.11999999731779099,
    0.12999999523162842, 0.14000000059604645, 0.14999999105930328, 0.1599999964237213,
    0.17000000178813934, 0.17999999225139618, 0.1899999976158142, 0.19999998807907104,
    0.20999999344348907, 0.2199999988079071, 0.22999998927116394, 0.23999999463558197,
    0.25, 0.25999999046325684, 0.26999998092651367, 0.2800000011920929, 0.28999999165534973,
    0.29999998211860657, 0.3100000023841858, 0.3199999928474426, 0.32999998331069946, 0.3400000035762787,
    0.3499999940395355, 0.35999998450279236, 0.3700000047683716, 0.3799999952316284, 0.38999998569488525,
    0.3999999761581421, 0.4099999964237213, 0.41999998688697815, 0.429999977350235, 0.4399999976158142,
    0.44999998807907104, 0.4599999785423279, 0.4699999988079071, 0.47999998927116394, 0.4899999797344208,
    0.5, 0.5099999904632568, 0.5199999809265137, 0.5300000309944153, 0.5400000214576721,
    0.550000011920929, 0.5600000023841858, 0.5699999928474426, 0.5799999833106995, 0.5900000333786011,
    0.6000000238418579, 0.6100000143051147, 0.6200000047683716, 0.6299999952316284, 0.6399999856948853,
    0.6500000357627869, 0.6600000262260437, 0.6700000166893005, 0.6800000071525574, 0.6899999976158142,
    0.699999988079071, 0.7099999785423279, 0.7200000286102295, 0.7300000190734863, 0.7400000095367432,
    0.75, 0.7599999904632568, 0.7699999809265137, 0.7800000309944153, 0.7900000214576721,
    0.800000011920929, 0.8100000023841858, 0.8199999928474426, 0.8299999833106995, 0.8400000333786011,
    0.8500000238418579, 0.8600000143051147, 0.8700000047683716, 0.8799999952316284, 0.8899999856948853,
    0.8999999761581421, 0.9100000262260437, 0.9200000166893005, 0.9300000071525574, 0.9399999976158142,
    0.949999988079071, 0.9599999785423279, 0.9700000286102295, 0.9800000190734863, 0.9900000095367432,
    1.0,
]


def _is_tensor(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _to_numpy(x) -> np.ndarray:
    if _is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """torchvision ``box_convert(boxes, box_format, "xywh")`` in the boxes' own dtype."""
    b = boxes
    if box_format == "xywh" or b.shape[0] == 0:
        return b
    if box_format == "cxcywh":  # torchvision goes through xyxy
        half = b.dtype.type(0.5)
        x1, y1 = b[:, 0] - half * b[:, 2], b[:, 1] - half * b[:, 3]
        x2, y2 = b[:, 0] + half * b[:, 2], b[:, 1] + half * b[:, 3]
        b = np.stack([x1, y1, x2, y2], axis=1)
    return np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)


class TorchmetricsMode:
    """The state and behaviour of the torchmetrics-style metric (mixed into
    :class:`deteval.metric.MeanAveragePrecision`)."""

    def _tm_init(self, box_format: str = "xyxy", iou_type: Any = "bbox",
                 iou_thresholds: Optional[List[float]] = None,
                 rec_thresholds: Optional[List[float]] = None,
                 max_detection_thresholds: Optional[List[int]] = None,
                 class_metrics: bool = False, extended_summary: bool = False,
                 average: str = "macro", backend: str = "pycocotools", **kwargs: Any) -> None:
        unknown = [k for k in kwargs if k not in _METRIC_KWARGS]
        if unknown:
            raise ValueError(f"Unexpected keyword arguments: {', '.join(f'`{k}`' for k in unknown)}")
        allowed = ("xyxy", "xywh", "cxcywh")
        if box_format not in allowed:
            raise ValueError(f"Expected argument `box_format` to be one of {allowed} but got "
                             f"{box_format}")
        types = (iou_type,) if isinstance(iou_type, str) else tuple(iou_type)
        if not types or any(t not in ("bbox", "segm") for t in types):
            raise ValueError(f"Expected argument `iou_type` to be one of ('bbox', 'segm') or a "
                             f"tuple of them but got {iou_type}")
        for name, value in (("iou_thresholds", iou_thresholds),
                            ("rec_thresholds", rec_thresholds)):
            if value is not None and not isinstance(value, list):
                raise ValueError(f"Expected argument `{name}` to either be `None` or a list of "
                                 f"floats but got {value}")
        if max_detection_thresholds is not None and not isinstance(max_detection_thresholds,
                                                                   list):
            raise ValueError("Expected argument `max_detection_thresholds` to either be `None` "
                             f"or a list of ints but got {max_detection_thresholds}")
        if max_detection_thresholds is not None and len(max_detection_thresholds) != 3:
            raise ValueError("When providing a list of max detection thresholds it should have "
                             f"length 3. Got value {len(max_detection_thresholds)}")
        if not isinstance(class_metrics, bool):
            raise ValueError("Expected argument `class_metrics` to be a boolean")
        if not isinstance(extended_summary, bool):
            raise ValueError("Expected argument `extended_summary` to be a boolean")
        if average not in ("macro", "micro"):
            raise ValueError("Expected argument `average` to be one of ('macro', 'micro') but "
                             f"got {average}")
        if backend not in ("pycocotools", "faster_coco_eval"):
            raise ValueError("Expected argument `backend` to be one of ('pycocotools', "
                             f"'faster_coco_eval') but got {backend}")
        self.box_format = box_format
        self.iou_type = types
        self.iou_thresholds = list(iou_thresholds or TM_IOU_THRESHOLDS)
        self.rec_thresholds = list(rec_thresholds or TM_REC_THRESHOLDS)
        self.max_detection_thresholds = sorted(int(m) for m in (max_detection_thresholds
                                                                or [1, 10, 100]))
        self.class_metrics = class_metrics
        self.extended_summary = extended_summary
        self.average = average
        self.backend = backend
        self.protocol = "torchmetrics"
        self._tm_reset()

    def _tm_reset(self) -> None:
        self._det: List[tuple] = []   # per image: (boxes_xywh, scores, labels, masks)
        self._gt: List[tuple] = []    # per image: (boxes_xywh, labels, crowd, area, masks)
        self._tensors = False

    # ----------------------------------------------------------------- update
    def _tm_update(self, preds: Sequence[Dict[str, Any]], target: Sequence[Dict[str, Any]]
                   ) -> None:
        if not isinstance(preds, Sequence):
            raise ValueError("Expected argument `preds` to be of type Sequence")
        if not isinstance(target, Sequence):
            raise ValueError("Expected argument `target` to be of type Sequence")
        if len(preds) != len(target):
            raise ValueError("Expected argument `preds` and `target` to have the same length, "
                             f"but got {len(preds)} and {len(target)}")
        need = [k for k in ("bbox", "segm") if k in self.iou_type]
        keys = {"bbox": "boxes", "segm": "masks"}
        for name, items, fields in (("preds", preds, ["scores", "labels"]),
                                    ("target", target, ["labels"])):
            for it in items:
                for k in [keys[t] for t in need] + fields:
                    if k not in it:
                        raise ValueError(f"Expected all dicts in `{name}` to contain the `{k}` "
                                         "key")
        batch_det, batch_gt = [], []
        for p, t in zip(preds, target):
            self._tensors = self._tensors or any(_is_tensor(v) for v in list(p.values())
                                                 + list(t.values()))
            batch_det.append(self._tm_item(p, "preds", with_scores=True))
            batch_gt.append(self._tm_item(t, "target", with_scores=False))
        self._det += batch_det
        self._gt += batch_gt

    def _tm_item(self, item, name, with_scores):
        labels = _to_numpy(item["labels"]).reshape(-1)
        if labels.size and labels.dtype.kind not in "iu":
            raise ValueError(f"Expected all labels in `{name}` to be of integer type")
        labels = labels.astype(np.int64)
        n = labels.shape[0]
        boxes = masks = None
        if "bbox" in self.iou_type:
            raw = _to_numpy(item["boxes"])
            if raw.size == 0:
                raw = raw.reshape(0, 4)
            if raw.ndim != 2 or raw.shape[1] != 4 or raw.shape[0] != n:
                raise ValueError(f"Expected all boxes in `{name}` to be of shape (N, 4) with one "
                                 f"label each, but got {raw.shape} boxes and {n} labels")
            if raw.dtype.kind != "f":
                raw = raw.astype(np.float32)
            boxes = _xywh(raw, self.box_format).astype(np.float64)
        if "segm" in self.iou_type:
            from .masks import masks_from_arrays
            raw = _to_numpy(item["masks"])
            if raw.shape[0] != n:
                raise ValueError(f"Expected one mask per label in `{name}` but got "
                                 f"{raw.shape[0]} masks and {n} labels")
            masks = masks_from_arrays(raw.reshape(n, *raw.shape[-2:]) if n else
                                      raw.reshape(0, *(raw.shape[-2:] if raw.ndim == 3
                                                       else (0, 0))))
        if with_scores:
            scores = _to_numpy(item["scores"]).reshape(-1).astype(np.float64)
            if scores.shape[0] != n:
                raise ValueError(f"Expected all scores in `{name}` to have one per label, but "
                                 f"got {scores.shape[0]} and {n}")
            return boxes, scores, labels, masks
        crowd = (_to_numpy(item["iscrowd"]).reshape(-1).astype(bool) if "iscrowd" in item
                 else np.zeros(n, dtype=bool))
        area = (_to_numpy(item["area"]).reshape(-1).astype(np.float64) if "area" in item
                else np.zeros(n))
        return boxes, labels, crowd, area, masks

    def _tm_merge(self, other) -> None:
        self._det += other._det
        self._gt += other._gt
        self._tensors = self._tensors or other._tensors

    # ---------------------------------------------------------------- compute
    def _tm_gathered(self):
        """Every rank's images when torch.distributed runs (rank order), else ours."""
        det, gt = self._det, self._gt
        if self._tensors:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                parts = [None] * dist.get_world_size()
                dist.all_gather_object(parts, (det, gt))
                det = [d for p in parts for d in p[0]]
                gt = [g for p in parts for g in p[1]]
        return det, gt

    def _tm_compute(self) -> Dict[str, Any]:
        from .ap import coco_accumulate
        from .match import match_coco
        from .tables import Detections, GroundTruth
        det_items, gt_items = self._tm_gathered()
        n_img = len(gt_items)
        real_labels = np.unique(np.concatenate(
            [d[2] for d in det_items] + [g[1] for g in gt_items] + [np.zeros(0, np.int64)]))
        mdt = self.max_detection_thresholds
        thr = np.array(self.iou_thresholds, dtype=np.float64)
        rec_thr = np.array(self.rec_thresholds, dtype=np.float64)
        md = np.array(mdt, dtype=np.int64)
        areas = np.array([[0, 1e5 ** 2], [0, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]],
                         dtype=np.float64)
        out: Dict[str, Any] = {}
        multi = len(self.iou_type) > 1
        for i_type in self.iou_type:
            prefix = f"{i_type}_" if multi else ""
            keep = np.ones(n_img, dtype=bool)
            if i_type == "segm" and "bbox" not in self.iou_type:
                # torchmetrics lists an image only when its target has masks
                keep = np.array([len(g[4]) > 0 for g in gt_items], dtype=bool)
            results = []
            for average in (self.average, "macro") if self.class_metrics else (self.average,):
                labels = real_labels if average == "macro" else np.zeros(1, dtype=np.int64)
                results.append(self._tm_eval(det_items, gt_items, keep, labels, average, i_type,
                                             thr, rec_thr, md, areas, match_coco,
                                             coco_accumulate, GroundTruth, Detections))
            precision, recall = results[0]
            if n_img == 0 or not keep.any():
                stats = [-1.0] * 12
            else:
                stats = _summarize(precision, recall, thr, mdt)
            names = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large",
                     f"mar_{mdt[0]}", f"mar_{mdt[1]}", f"mar_{mdt[2]}", "mar_small",
                     "mar_medium", "mar_large"]
            for name, v in zip(names, stats):
                out[prefix + name] = np.float32(v)
            if self.extended_summary:
                matches, gt, det, labels = self._last
                out[prefix + "ious"] = _pair_iou_dict(gt, det, labels, n_img, int(md[-1]),
                                                      i_type)
                out[prefix + "precision"] = np.where(np.isnan(precision), -1.0, precision)
                out[prefix + "recall"] = np.where(np.isnan(recall), -1.0, recall)
                out[prefix + "scores"] = _scores_at_recall(matches, thr, rec_thr, md)
            if self.class_metrics:
                p_cls, r_cls = results[-1]
                per_map, per_mar = [], []
                for k in range(real_labels.shape[0]):
                    s = _summarize(p_cls[:, :, k:k + 1], r_cls[:, k:k + 1], thr, mdt)
                    per_map.append(s[0])
                    per_mar.append(s[8])
                out[prefix + "map_per_class"] = np.array(per_map, dtype=np.float32)
                out[prefix + f"mar_{mdt[-1]}_per_class"] = np.array(per_mar, dtype=np.float32)
            else:
                out[prefix + "map_per_class"] = np.array([-1], dtype=np.float32)
                out[prefix + f"mar_{mdt[-1]}_per_class"] = np.array([-1], dtype=np.float32)
        out["classes"] = real_labels.astype(np.int32)
        return self._tm_output(out)

    def _tm_eval(self, det_items, gt_items, keep, labels, average, i_type, thr, rec_thr, md,
                 areas, match_coco, coco_accumulate, GroundTruth, Detections):
        n_img = len(gt_items)
        K = labels.shape[0]
        img_g = np.concatenate([np.full(len(g[1]), i) for i, g in enumerate(gt_items)]
                               + [np.zeros(0, np.int64)]).astype(np.int64)
        img_d = np.concatenate([np.full(len(d[2]), i) for i, d in enumerate(det_items)]
                               + [np.zeros(0, np.int64)]).astype(np.int64)
        lab_g = np.concatenate([g[1] for g in gt_items] + [np.zeros(0, np.int64)])
        lab_d = np.concatenate([d[2] for d in det_items] + [np.zeros(0, np.int64)])
        if average == "micro":
            lab_g, lab_d = np.zeros_like(lab_g), np.zeros_like(lab_d)
        cls_g = np.searchsorted(labels, lab_g)
        cls_d = np.searchsorted(labels, lab_d)
        crowd = np.concatenate([g[2] for g in gt_items] + [np.zeros(0, bool)])
        given = np.concatenate([g[3] for g in gt_items] + [np.zeros(0)])
        if "bbox" in self.iou_type:
            gb = np.concatenate([g[0] for g in gt_items] + [np.zeros((0, 4))])
            db = np.concatenate([d[0] for d in det_items] + [np.zeros((0, 4))])
        else:
            gb = np.zeros((lab_g.shape[0], 4))
            db = np.zeros((lab_d.shape[0], 4))
        gt_masks = det_masks = None
        if "segm" in self.iou_type:
            from .masks import MaskSet
            gt_masks = MaskSet.concatenate([g[4] for g in gt_items])
            det_masks = MaskSet.concatenate([d[3] for d in det_items])
        if "segm" in self.iou_type:
            fallback = gt_masks.areas.astype(np.float64)
        else:
            fallback = gb[:, 2] * gb[:, 3]
        area = np.where(given > 0, given, fallback)
        scores = np.concatenate([d[1] for d in det_items] + [np.zeros(0)])
        g_keep, d_keep = keep[img_g], keep[img_d]
        gt = GroundTruth(image_idx=img_g[g_keep], class_idx=cls_g[g_keep], boxes=gb[g_keep],
                         difficult=np.zeros(int(g_keep.sum()), dtype=bool), crowd=crowd[g_keep],
                         area=area[g_keep], image_ids=np.arange(n_img, dtype=np.int64),
                         class_names=tuple(str(x) for x in labels),
                         class_ids=labels.astype(np.int64), box_format="xywh")
        det = Detections(image_idx=img_d[d_keep], class_idx=cls_d[d_keep], boxes=db[d_keep],
                         scores=scores[d_keep],
                         order=np.arange(int(d_keep.sum()), dtype=np.int64))
        kw = {}
        if i_type == "segm":
            from .masks import rle_pair_ious
            gm = gt_masks.take(np.flatnonzero(g_keep))
            dm = det_masks.take(np.flatnonzero(d_keep))

            def pair_iou(det_rows, gt_rows):
                return rle_pair_ious(dm, gm, det_rows, gt_rows, gt.crowd[gt_rows])

            kw = {"pair_iou": pair_iou, "det_area": dm.areas.astype(np.float64)}
        matches = match_coco(gt, det, thr, areas, int(md[-1]), **kw)
        self._last = (matches, gt, det, labels)  # for extended_summary's scores and ious
        if K == 0:
            T, R, A, M = thr.shape[0], rec_thr.shape[0], areas.shape[0], md.shape[0]
            return np.full((T, R, 0, A, M), np.nan), np.full((T, 0, A, M), np.nan)
        return coco_accumulate(matches, md, rec_thr)

    def _tm_output(self, out: Dict[str, Any]) -> Dict[str, Any]:
        """torchmetrics squeezes one-element results to 0-d; tensors when tensors came in."""
        squeezed = {}
        ious = {k: {key: (v.reshape(()) if isinstance(v, np.ndarray) and v.size == 1 else v)
                    for key, v in out.pop(k).items()}
                for k in list(out) if k.endswith("ious")}
        for k, v in out.items():
            v = np.asarray(v)
            squeezed[k] = v.reshape(()) if v.size == 1 else v
        if ious and self._tensors:
            import torch
            ious = {k: {key: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                        for key, v in d.items()} for k, d in ious.items()}
        if not self._tensors:
            return {**squeezed, **ious}
        import torch
        return {**{k: torch.from_numpy(np.array(v, copy=True)) for k, v in squeezed.items()},
                **ious}


def _summarize(precision: np.ndarray, recall: np.ndarray, thr: np.ndarray,
               max_dets: List[int]) -> List[float]:
    """pycocotools' ``summarize`` (bbox/segm): its 12 stats, -1 for no entry, with its
    hard-coded ``maxDets=100`` for the AP figures' default and its exact IoU lookups."""

    def figure(ap, iou=None, area=0, m_det=100):
        m = [i for i, v in enumerate(max_dets) if v == m_det]
        if ap:
            s = precision
            if iou is not None:
                s = s[np.flatnonzero(iou == thr)]
            s = s[:, :, :, area, m] if m else s[:, :, :, area, []]
        else:
            s = recall
            if iou is not None:
                s = s[np.flatnonzero(iou == thr)]
            s = s[:, :, area, m] if m else s[:, :, area, []]
        s = np.ascontiguousarray(s).ravel()
        s = s[~np.isnan(s)]
        return float(np.mean(s)) if s.size else -1.0

    last = max_dets[2]
    return [figure(1), figure(1, .5, 0, last), figure(1, .75, 0, last), figure(1, None, 1, last),
            figure(1, None, 2, last), figure(1, None, 3, last), figure(0, None, 0, max_dets[0]),
            figure(0, None, 0, max_dets[1]), figure(0, None, 0, last), figure(0, None, 1, last),
            figure(0, None, 2, last), figure(0, None, 3, last)]


def _scores_at_recall(matches, thr: np.ndarray, rec_thr: np.ndarray, max_dets: np.ndarray
                      ) -> np.ndarray:
    """pycocotools' ``eval["scores"]`` ``(T, R, K, A, M)``: the score of the detection at
    which each recall threshold is first reached (0 where it never is, -1 for a class
    without ground truth in the area range)."""
    from .ap import coco_rank_order
    N, A, T = matches.matched.shape
    K = matches.num_gt.shape[0]
    R, M = rec_thr.shape[0], max_dets.shape[0]
    out = np.full((T, R, K, A, M), -1.0)
    order = coco_rank_order(matches)
    cls = matches.class_idx[order]
    rank = matches.rank[order]
    scores = matches.scores[order]
    tp = (matches.matched & ~matches.ignored)[order]  # (N, A, T) in ranked order
    starts = np.searchsorted(cls, np.arange(K + 1))
    for k in range(K):
        a0, a1 = starts[k], starts[k + 1]
        for a in range(A):
            npig = int(matches.num_gt[k, a])
            if npig == 0:
                continue
            for m in range(M):
                keep = np.flatnonzero(rank[a0:a1] < max_dets[m]) + a0
                for t in range(T):
                    # recall after each kept detection (ignored ones included, as in
                    # pycocotools' dtScoresSorted), then its searchsorted lookup
                    rc = np.cumsum(tp[keep, a, t]).astype(np.float64) / npig
                    j = np.searchsorted(rc, rec_thr, side="left")
                    ok = j < keep.shape[0]
                    col = np.zeros(R)
                    col[ok] = scores[keep[j[ok]]]
                    out[t, :, k, a, m] = col
    return out


def _pair_iou_dict(gt, det, labels: np.ndarray, n_images: int, max_det: int, i_type: str
                   ) -> Dict[tuple, Any]:
    """pycocotools' ``ious``: for every (image index, class id), the IoUs (float32) of the
    class's detections in that image, by decreasing score (stable) and cut to ``max_det``,
    with its ground truth in input order; ``[]`` when either side is empty."""
    from .match import coco_pair_ious
    out: Dict[tuple, Any] = {}
    K = labels.shape[0]
    g_key = gt.image_idx * K + gt.class_idx
    d_key = det.image_idx * K + det.class_idx
    g_order = np.argsort(g_key, kind="stable")
    d_order = np.lexsort((-det.scores, d_key))  # by group, then decreasing score, stable
    g_bounds = np.searchsorted(g_key[g_order], np.arange(n_images * K + 1))
    d_bounds = np.searchsorted(d_key[d_order], np.arange(n_images * K + 1))
    for i in range(n_images):
        for k in range(K):
            key = i * K + k
            gs = g_order[g_bounds[key]:g_bounds[key + 1]]
            ds = d_order[d_bounds[key]:d_bounds[key + 1]][:max_det]
            if gs.shape[0] == 0 or ds.shape[0] == 0:
                out[(i, int(labels[k]))] = []
                continue
            if i_type == "segm":
                from .masks import rle_pair_ious
                pd = np.repeat(ds, gs.shape[0])
                pg = np.tile(gs, ds.shape[0])
                iou = rle_pair_ious(det.masks, gt.masks, pd, pg, gt.crowd[pg])
            else:
                pd = np.repeat(np.arange(ds.shape[0]), gs.shape[0])
                pg = np.tile(np.arange(gs.shape[0]), ds.shape[0])
                _, _, iou = coco_pair_ious(det.boxes[ds], gt.boxes[gs], gt.crowd[gs], pd, pg,
                                           0.0)
            out[(i, int(labels[k]))] = iou.reshape(ds.shape[0], gs.shape[0]).astype(np.float32)
    return out
