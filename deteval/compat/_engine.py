"""The drop-in's bridge to deteval's engine: COCO objects -> tables -> match records.

:func:`build_state` selects the records ``COCOeval.evaluate`` would (``params.imgIds``,
``catIds``, ``useCats``), turns them into :class:`~deteval.tables.GroundTruth` /
:class:`~deteval.tables.Detections` columns and matches them with
:func:`deteval.match.match_coco` (the compiled walk for boxes). What pycocotools keeps per
(image, category, area range) — ``evalImgs`` and ``ious`` — is rebuilt from the columns only
when read (:func:`eval_imgs`, :func:`ious`).

pycocotools stores matches by annotation id and tests them with ``> 0`` / truthiness, so a
ground truth with id 0 is never counted as matched and a detection with an id ``<= 0``
never takes its ground truth. Unless ``fixes`` is set, :func:`build_state` reproduces both
(with :func:`walk_rows`, which also records which ground truth each detection took).
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional

import numpy as np

from . import mask as maskUtils
from ..match import CocoMatches, candidate_pairs, coco_pair_ious, match_coco
from ..rank import group_rank, ranked_order, segment_starts, small_int
from ..tables import Detections, GroundTruth

__all__ = ["EvalState", "build_state", "walk_rows", "eval_imgs", "ious",
           "matches_from_eval_imgs"]

_NOT_IGNORED_BONUS = np.int64(1) << np.int64(62)


@dataclass
class EvalState:
    """Everything ``evaluate()`` computed, as columns.

    Attributes
    ----------
    gt, det : GroundTruth, Detections
        Rows in (image position, category position, file order); ``class_idx`` is the
        position in ``cat_ids`` (all 0 with ``useCats=0``).
    gt_ids, det_ids : ndarray of object, shape (G,) / (N,)
        The records' ``id`` values; ``det_scores`` their ``score`` values as given.
    gt_ignored : ndarray of bool, shape (G, A)
        Ignored at area range ``a`` (crowd, keypoints without labels, or outside).
    matches : CocoMatches
        Records in (class, image, rank) order; ``rec`` their detection rows.
    rows : ndarray of int64, shape (n, A, T), or None
        The ground-truth row each record took (-1: none); computed on demand.
    """

    iou_type: str
    img_ids: list
    cat_ids: list
    area_rng: list
    max_det: int
    thresholds: np.ndarray
    area_arr: np.ndarray
    gt: GroundTruth
    det: Detections
    gt_anns: list
    dt_anns: list
    gt_ignored: np.ndarray
    det_area: np.ndarray
    matches: CocoMatches
    pair_iou: Optional[Callable] = None
    gt_base_ignore: Optional[np.ndarray] = None
    fixes: bool = False
    rows: Optional[np.ndarray] = None
    extra: dict = field(default_factory=dict)

    def _cached(self, key, make):
        if key not in self.extra:
            self.extra[key] = make()
        return self.extra[key]

    @property
    def rec(self) -> np.ndarray:
        """Detection rows of the match records, in their order (computed when needed)."""
        return self._cached("rec", lambda: _records(self.gt, self.det,
                                                    np.arange(len(self.img_ids)),
                                                    self.max_det))

    @property
    def gt_ids(self) -> np.ndarray:
        return self._cached("gt_ids", lambda: _objects([a["id"] for a in self.gt_anns]))

    @property
    def det_ids(self) -> np.ndarray:
        return self._cached("det_ids", lambda: _objects([a["id"] for a in self.dt_anns]))

    @property
    def det_scores(self) -> np.ndarray:
        return self._cached("det_scores",
                            lambda: _objects([a["score"] for a in self.dt_anns]))


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _numeric_ids(anns: list) -> Optional[np.ndarray]:
    """The records' ``id`` values as float64 (None when one is not a number: pycocotools'
    id tests then do not apply)."""
    try:
        return np.fromiter([a["id"] for a in anns], np.float64, len(anns))
    except (TypeError, ValueError):
        return None


def _select(coco, img_ids, cat_pos, by_id: bool = True) -> tuple:
    """Annotations of ``coco`` on ``img_ids`` (in that order, file order within an image)
    whose category is in ``cat_pos``; returns ``(anns, image_idx, cat_idx)``.

    With ``by_id`` and annotation ids that repeat, each annotation is looked up by its id as
    pycocotools does (``loadAnns(getAnnIds(...))``): the last record with that id stands for
    every record with it, in the image of that record."""
    index = coco.imgToAnns
    per_image = [index.get(i, ()) for i in img_ids]
    counts = np.fromiter((len(x) for x in per_image), np.int64, len(per_image))
    anns = [a for x in per_image for a in x]
    image_idx = np.repeat(np.arange(len(img_ids), dtype=np.int64), counts)
    table = coco.anns
    if by_id and len(table) != len(coco.dataset.get("annotations", ())):
        anns = [table[a["id"]] for a in anns]  # repeated ids: pycocotools' reading
        img_pos = {v: i for i, v in enumerate(img_ids)}
        image_idx = np.fromiter((img_pos.get(a["image_id"], -1) for a in anns), np.int64,
                                len(anns))
        order = np.argsort(image_idx, kind="stable")
        order = order[image_idx[order] >= 0]
        anns = [anns[j] for j in order]
        image_idx = image_idx[order]
    cat_idx = np.fromiter((cat_pos.get(a["category_id"], -1) for a in anns), np.int64,
                          len(anns))
    keep = cat_idx >= 0
    if not keep.all():
        idx = np.flatnonzero(keep)
        anns = [anns[j] for j in idx]
        image_idx, cat_idx = image_idx[keep], cat_idx[keep]
    return anns, image_idx, cat_idx


def _boxes(anns, required: bool) -> np.ndarray:
    if not anns:
        return np.zeros((0, 4))
    if not required and any("bbox" not in a for a in anns):
        return np.zeros((len(anns), 4))
    n = len(anns)
    try:  # the usual four numbers per box, without an intermediate list of lists
        return np.fromiter(itertools.chain.from_iterable([a["bbox"] for a in anns]),
                           np.float64, 4 * n).reshape(n, 4)
    except (ValueError, TypeError):
        return np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(n, 4)


def _column(anns, key) -> np.ndarray:
    try:
        return np.fromiter([a[key] for a in anns], np.float64, len(anns))
    except (ValueError, TypeError):
        return np.array([a[key] for a in anns], dtype=np.float64).reshape(len(anns))


def _masks(coco, anns):
    """The annotations' masks as pycocotools' ``annToRLE`` gives them, as one MaskSet.

    Compressed RLE (results as detectors write them, and every rasterised polygon) is
    decoded in one compiled call; anything else goes through
    :func:`deteval.masks.masks_from_segmentations`."""
    from ..masks import MaskSet, _decode_strings, masks_from_segmentations
    rles = [None] * len(anns)
    polygons = {}  # (h, w) -> [(row, polygons)]: rasterised in one call per image size
    for j, a in enumerate(anns):
        seg = a["segmentation"]
        if type(seg) == dict and isinstance(seg.get("counts"), (str, bytes)):
            rles[j] = seg  # annToRLE returns a compressed RLE as it is
        elif (type(seg) == list and seg and all(type(q) == list for q in seg)
              and len(seg[0]) > 4):  # frPyObjects reads a first item of 4 as boxes
            img = coco.imgs[a["image_id"]]
            polygons.setdefault((img["height"], img["width"]), []).append((j, seg))
        else:
            rles[j] = coco.annToRLE(a)
    for (height, width), items in polygons.items():
        flat = [q for _, seg in items for q in seg]
        try:
            parts = maskUtils.frPyObjects(flat, height, width)
        except Exception:  # an odd polygon: annToRLE one by one raises as pycocotools
            for j, _ in items:
                rles[j] = coco.annToRLE(anns[j])
            continue
        at = 0
        for j, seg in items:
            k = len(seg)
            # one polygon: its RLE is the merge (pycocotools merges a list of one unchanged)
            rles[j] = parts[at] if k == 1 else maskUtils.merge(parts[at:at + k])
            at += k
    n = len(rles)
    h = np.array([r["size"][0] for r in rles], dtype=np.int64).reshape(n)
    w = np.array([r["size"][1] for r in rles], dtype=np.int64).reshape(n)
    strings = [r["counts"] for r in rles]
    if n and (all(isinstance(c, bytes) for c in strings)
              or all(isinstance(c, str) for c in strings)):
        try:
            counts, lengths, totals, areas = _decode_strings(strings)
        except (ValueError, TypeError, UnicodeEncodeError):
            totals = None
        if totals is not None and np.array_equal(totals, h * w):
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            return MaskSet(counts=counts, offsets=offsets, heights=h, widths=w, areas=areas)
    return masks_from_segmentations(rles, h, w, "<COCO>", "annotations")


def _mask_iou(det_masks, gt_masks, gt_crowd, det_rows, gt_rows):
    from ..masks import rle_pair_ious
    return rle_pair_ious(det_masks, gt_masks, det_rows, gt_rows, gt_crowd[gt_rows])


def _oks(det_kp, gt_kp, gt_boxes, gt_area, sigmas, det_rows, gt_rows):
    from ..keypoints import oks_pairs
    return oks_pairs(det_kp, gt_kp, gt_boxes, gt_area, det_rows, gt_rows, sigmas)


def _no_match(det_rows, gt_rows):
    return np.full(np.shape(det_rows)[0], -np.inf)


def build_state(coco_gt, coco_dt, p, fixes: bool) -> EvalState:
    """Select, tabulate and match what ``COCOeval.evaluate()`` evaluates under ``p``
    (``imgIds``/``catIds`` already made unique and sorted, ``maxDets`` sorted)."""
    img_ids = list(p.imgIds)
    use_cats = bool(p.useCats)
    cat_ids = list(p.catIds)
    cat_pos = {}
    for k, c in enumerate(cat_ids):
        cat_pos.setdefault(c, k)
    iou_type = p.iouType
    gt_anns, g_img, g_cat = _select(coco_gt, img_ids, cat_pos, not fixes)
    dt_anns, d_img, d_cat = _select(coco_dt, img_ids, cat_pos, not fixes)
    if not use_cats:  # one class, an image's objects gathered category by category
        Kc = max(len(cat_ids), 1)
        g_ord = np.argsort(g_img * Kc + g_cat, kind="stable")
        d_ord = np.argsort(d_img * Kc + d_cat, kind="stable")
        gt_anns = [gt_anns[j] for j in g_ord]
        dt_anns = [dt_anns[j] for j in d_ord]
        g_img, d_img = g_img[g_ord], d_img[d_ord]
        g_cat = np.zeros(len(gt_anns), dtype=np.int64)
        d_cat = np.zeros(len(dt_anns), dtype=np.int64)
        out_cats = [-1]
    else:
        out_cats = cat_ids
    K = len(out_cats)
    G, N = len(gt_anns), len(dt_anns)
    gt_area = _column(gt_anns, "area")
    crowd = np.array([bool(int(a["iscrowd"])) if "iscrowd" in a else False for a in gt_anns],
                     dtype=bool).reshape(G)
    det_area = _column(dt_anns, "area")
    gt = GroundTruth(image_idx=g_img, class_idx=g_cat, boxes=_boxes(gt_anns, iou_type != "segm"),
                     difficult=np.zeros(G, dtype=bool), crowd=crowd, area=gt_area,
                     image_ids=np.arange(len(img_ids), dtype=np.int64),
                     class_names=tuple(str(c) for c in out_cats),
                     class_ids=np.arange(K, dtype=np.int64), box_format="xywh")
    det = Detections(image_idx=d_img, class_idx=d_cat,
                     boxes=_boxes(dt_anns, iou_type != "segm"),
                     scores=_column(dt_anns, "score"),
                     order=np.arange(N, dtype=np.int64))
    base_ignore = crowd.copy()
    pair_iou = None
    if iou_type == "segm":
        gm, dm = _masks(coco_gt, gt_anns), _masks(coco_dt, dt_anns)
        pair_iou = functools.partial(_mask_iou, dm, gm, crowd)
    elif iou_type == "keypoints":
        sigmas = np.asarray(p.kpt_oks_sigmas, dtype=np.float64).reshape(-1)
        nk = sigmas.shape[0]
        gkp = np.array([a["keypoints"] for a in gt_anns], dtype=np.float64).reshape(G, nk, 3)
        dkp = np.array([a["keypoints"] for a in dt_anns], dtype=np.float64).reshape(N, nk, 3)
        num_kp = np.array([a["num_keypoints"] for a in gt_anns], dtype=np.int64).reshape(G)
        base_ignore = crowd | (num_kp == 0)
        gt = replace(gt, keypoints=gkp, num_keypoints=num_kp)
        det = replace(det, keypoints=dkp)
        if not use_cats and not fixes:
            # pycocotools looks the OKS up under category -1, finds none: nothing matches
            pair_iou = _no_match
        else:
            pair_iou = functools.partial(_oks, dkp, gkp, gt.boxes, gt_area, sigmas)
    thr = np.asarray(p.iouThrs, dtype=np.float64).reshape(-1)
    area_arr = np.asarray(p.areaRng, dtype=np.float64).reshape(-1, 2)
    max_det = int(p.maxDets[-1])
    lo, hi = area_arr[:, 0], area_arr[:, 1]
    gt_ignored = base_ignore[:, None] | (gt_area[:, None] < lo) | (gt_area[:, None] > hi)
    image_key = np.arange(len(img_ids), dtype=np.int64)
    matches = match_coco(gt, det, thr, area_arr, max_det, image_key, pair_iou=pair_iou,
                         det_area=det_area, gt_ignore=base_ignore)
    state = EvalState(iou_type=iou_type, img_ids=img_ids, cat_ids=out_cats,
                      area_rng=list(p.areaRng), max_det=max_det, thresholds=thr,
                      area_arr=area_arr, gt=gt, det=det, gt_anns=gt_anns, dt_anns=dt_anns,
                      gt_ignored=gt_ignored, det_area=det_area, matches=matches,
                      pair_iou=pair_iou, gt_base_ignore=base_ignore, fixes=fixes)
    if not fixes:
        gid, did = _numeric_ids(gt_anns), _numeric_ids(dt_anns)
        id0_gt = gid is not None and bool((gid == 0).any())
        bad_dt = did is not None and bool((did <= 0).any())
        if (id0_gt or bad_dt) and len(gt):
            state.matches = _id_quirks(state, gid, did)
    return state


def _records(gt: GroundTruth, det: Detections, image_key: np.ndarray, max_det: int
             ) -> np.ndarray:
    """The detection rows of :func:`match_coco`'s records, in its order: (class, image
    key, rank), each group cut to ``max_det``."""
    K = gt.num_classes
    det_group = image_key[det.image_idx] * K + det.class_idx
    by_score = ranked_order(det_group, det.scores)
    rank = group_rank(det_group, by_score)
    kept = by_score[rank[by_score] < max_det]
    return kept[np.argsort(small_int(det.class_idx[kept]), kind="stable")]


def _id_quirks(state: EvalState, gid, did) -> CocoMatches:
    """pycocotools' id rules: a detection with id <= 0 does not take its ground truth, and
    a detection matched to ground truth id 0 counts as unmatched (its ignore flag is then
    the ignored ground truth's, or its area-range test)."""
    takes = np.ones(len(state.det), dtype=bool) if did is None else did > 0
    rows = walk_rows(state, takes)
    state.rows = rows
    m = state.matches
    A = state.area_arr.shape[0]
    matched = rows >= 0
    safe = np.where(matched, rows, 0)
    a_idx = np.arange(A)[None, :, None]
    ign_gt = state.gt_ignored[safe, a_idx] & matched
    outside = ((state.det_area[state.rec][:, None] < state.area_arr[:, 0])
               | (state.det_area[state.rec][:, None] > state.area_arr[:, 1]))[:, :, None]
    counted = matched
    if gid is not None:
        counted = matched & (gid[safe] != 0)
    ignored = ign_gt | (~counted & outside)
    return replace(m, matched=counted, ignored=ignored)


def walk_rows(state: EvalState, takes: np.ndarray) -> np.ndarray:
    """The ground-truth row each record takes at each (area range, threshold), -1 for none.

    pycocotools' ``evaluateImg`` walk, vectorised over (image, class) groups and stepped
    through detection rank, as :func:`deteval.match.match_coco`'s numpy walk: the available
    ground truth of highest IoU ``>= min(t, 1 - 1e-10)``, non-ignored first, the later row
    among equal IoUs; crowd regions stay available; a detection with ``takes[row]`` False
    leaves its ground truth available (pycocotools' ids ``<= 0``).

    Returns
    -------
    ndarray of int64, shape (n, A, T)
    """
    gt, det, rec = state.gt, state.det, state.rec
    A, T = state.area_arr.shape[0], state.thresholds.shape[0]
    K = gt.num_classes
    n = rec.shape[0]
    out = np.full((n, A * T), -1, dtype=np.int64)
    if n == 0 or len(gt) == 0 or T == 0 or A == 0:
        return out.reshape(n, A, T)
    det_group = det.image_idx * K + det.class_idx
    gt_group = gt.image_idx * K + gt.class_idx
    rank = state.matches.rank
    thr = np.minimum(state.thresholds, 1 - 1e-10)
    loop = np.argsort(small_int(rank), kind="stable")
    pair_det, pair_gt, _ = candidate_pairs(det_group[rec[loop]], gt_group)
    lowest = float(thr.min())
    if state.pair_iou is None:
        pair_det, pair_gt, iou = coco_pair_ious(det.boxes[rec[loop]], gt.boxes, gt.crowd,
                                                pair_det, pair_gt, lowest)
    else:
        iou = np.asarray(state.pair_iou(rec[loop][pair_det], pair_gt), dtype=np.float64)
        keep = iou >= lowest
        pair_det, pair_gt, iou = pair_det[keep], pair_gt[keep], iou[keep]
    if pair_det.shape[0] == 0:
        return out.reshape(n, A, T)
    thr_at = np.tile(thr, A)
    gt_taken = np.zeros((len(gt), A * T), dtype=bool)
    pair_rank = rank[loop[pair_det]]
    bounds = np.searchsorted(pair_rank, np.arange(pair_rank[-1] + 2))
    ign_rep = np.repeat(state.gt_ignored, T, axis=1)
    base_key = (np.where(ign_rep[pair_gt], 0, _NOT_IGNORED_BONUS)
                + np.maximum(iou, 0.0).view(np.int64)[:, None])
    above = iou[:, None] >= thr_at[None, :]
    crowd = gt.crowd[pair_gt]
    takes_rec = takes[rec]
    for r in range(len(bounds) - 1):  # at most max(maxDets) steps, every group at once
        s, e = bounds[r], bounds[r + 1]
        if s == e:
            continue
        pg, pd = pair_gt[s:e], pair_det[s:e]
        elig = above[s:e] & (~gt_taken[pg] | crowd[s:e, None])
        key = np.where(elig, base_key[s:e], -1)
        starts = segment_starts(pd)
        best = np.maximum.reduceat(key, starts, axis=0)
        lengths = np.diff(np.append(starts, e - s))
        is_best = (key == np.repeat(best, lengths, axis=0)) & (key >= 0)
        rows = np.where(is_best, np.arange(e - s)[:, None], -1)
        last = np.maximum.reduceat(rows, starts, axis=0)
        seg, at = np.nonzero(last >= 0)
        g_rows = pg[last[seg, at]]
        d = loop[pd[starts[seg]]]
        t_ok = takes_rec[d]
        gt_taken[g_rows[t_ok], at[t_ok]] = True
        out[d, at] = g_rows
    return out.reshape(n, A, T)


def ensure_rows(state: EvalState) -> np.ndarray:
    if state.rows is None:
        takes = np.ones(len(state.det), dtype=bool)
        if not state.fixes:
            did = _numeric_ids(state.dt_anns)
            if did is not None:
                takes = did > 0
        state.rows = walk_rows(state, takes)
    return state.rows


def _group_bounds(keys_sorted: np.ndarray, num: int) -> np.ndarray:
    return np.searchsorted(keys_sorted, np.arange(num + 1))


def eval_imgs(state: EvalState) -> List[Optional[dict]]:
    """pycocotools' ``evalImgs``: one entry per (category, area range, image), in that
    nesting order; None where the image has neither ground truth nor detections of the
    category; otherwise the dict of ``evaluateImg`` with the same keys, values and dtypes.
    """
    rows = ensure_rows(state)
    gt, det, rec, m = state.gt, state.det, state.rec, state.matches
    I, K = len(state.img_ids), len(state.cat_ids)
    A, T = state.area_arr.shape[0], state.thresholds.shape[0]
    G = len(gt)
    gt_key = gt.class_idx * I + gt.image_idx
    det_key = det.class_idx * I + det.image_idx
    exists = np.zeros(K * I, dtype=bool)
    exists[gt_key] = True
    exists[det_key] = True
    rec_bounds = _group_bounds(det_key[rec], K * I)
    gid = _numeric_ids(state.gt_anns)
    did = _numeric_ids(state.dt_anns)
    if gid is None:
        gid = np.zeros(G)
    if did is None:
        did = np.zeros(len(det))
    matched = rows >= 0
    safe = np.where(matched, rows, 0)
    dtm = np.where(matched, gid[safe] if G else 0.0, 0.0)  # (n, A, T)
    gtm = np.zeros((G, A, T))
    j, a_i, t_i = np.nonzero(matched)
    if j.shape[0]:
        key = (rows[j, a_i, t_i] * A + a_i) * T + t_i
        # the last record (in rank order) to take a crowd region is the one pycocotools keeps
        rev = np.arange(key.shape[0])[::-1]
        _, first_rev = np.unique(key[rev], return_index=True)
        pick = rev[first_rev]
        gtm.reshape(-1)[key[pick]] = did[rec[j[pick]]]
    dt_ig = m.ignored
    dtm_t = np.ascontiguousarray(dtm.transpose(1, 2, 0))  # (A, T, n)
    dtig_t = np.ascontiguousarray(dt_ig.transpose(1, 2, 0))
    gtm_t = np.ascontiguousarray(gtm.transpose(1, 2, 0))  # (A, T, G)
    rec_ids = state.det_ids[rec].tolist()
    rec_scores = state.det_scores[rec].tolist()
    gt_ids = state.gt_ids
    gt_ign = state.gt_ignored.astype(np.int64)
    empty_ignore = np.array([])
    out: List[Optional[dict]] = []
    max_det = state.max_det
    orders = []
    for a in range(A):
        o = np.lexsort((np.arange(G), state.gt_ignored[:, a], gt_key)) if G else \
            np.zeros(0, dtype=np.int64)
        orders.append((o, _group_bounds(gt_key[o], K * I)))
    for k in range(K):
        cat = state.cat_ids[k]
        for a in range(A):
            a_rng = state.area_rng[a]
            order_a, gb = orders[a]
            dtm_a, dtig_a, gtm_a, ign_a = dtm_t[a], dtig_t[a], gtm_t[a], gt_ign[:, a]
            for i in range(I):
                g = k * I + i
                if not exists[g]:
                    out.append(None)
                    continue
                rs, re = rec_bounds[g], rec_bounds[g + 1]
                grows = order_a[gb[g]:gb[g + 1]]
                out.append({
                    "image_id": state.img_ids[i], "category_id": cat, "aRng": a_rng,
                    "maxDet": max_det, "dtIds": rec_ids[rs:re],
                    "gtIds": gt_ids[grows].tolist(), "dtMatches": dtm_a[:, rs:re].copy(),
                    "gtMatches": gtm_a[:, grows], "dtScores": rec_scores[rs:re],
                    "gtIgnore": ign_a[grows] if grows.shape[0] else empty_ignore.copy(),
                    "dtIgnore": dtig_a[:, rs:re].copy()})
    return out


def ious(state: EvalState) -> dict:
    """pycocotools' ``ious``: ``(image id, category id) -> (D, G)`` array (detections in
    score order cut to ``maxDets[-1]``, ground truth in file order), or ``[]`` where either
    side is empty (boxes and masks: where both are). Keypoints with ``useCats=0`` are all
    ``[]``, as pycocotools finds no objects under category -1."""
    gt, det, rec = state.gt, state.det, state.rec
    I, K = len(state.img_ids), len(state.cat_ids)
    gt_key = gt.class_idx * I + gt.image_idx
    det_key = det.class_idx * I + det.image_idx
    result = {}
    kp_none = state.iou_type == "keypoints" and state.cat_ids == [-1] and not state.fixes
    pair_det, pair_gt, gt_order = candidate_pairs(det_key[rec], gt_key)
    if state.pair_iou is None:
        _, _, values = coco_pair_ious(det.boxes[rec], gt.boxes, gt.crowd, pair_det, pair_gt,
                                      -np.inf)
    elif kp_none:
        values = np.zeros(pair_det.shape[0])
    else:
        values = np.asarray(state.pair_iou(rec[pair_det], pair_gt), dtype=np.float64)
    g_sorted = gt_key[gt_order]
    gb = _group_bounds(g_sorted, K * I)
    rb = _group_bounds(det_key[rec], K * I)
    pair_bounds = np.searchsorted(pair_det, rb)
    for i in range(I):
        for k in range(K):
            cat = state.cat_ids[k]
            g = k * I + i
            D, Gn = rb[g + 1] - rb[g], gb[g + 1] - gb[g]
            if kp_none or D == 0 or Gn == 0:
                result[state.img_ids[i], cat] = []
                continue
            s = pair_bounds[g]
            result[state.img_ids[i], cat] = values[s:s + D * Gn].reshape(D, Gn).copy()
    return result


def matches_from_eval_imgs(eval_imgs: list, k_list, a0: int, i_list, I0: int, A0: int,
                           T: int) -> CocoMatches:
    """Match records of one area range from a list of ``evaluateImg`` dicts (code that runs
    pycocotools' per-image steps itself and assigns ``evalImgs``, as the torchvision and DETR
    references do), for :func:`deteval.ap.coco_accumulate`.

    Entry ``k0 * A0 * I0 + a0 * I0 + i`` of ``eval_imgs`` is category ``k0`` (the ``k``-th of
    ``k_list``), area range ``a0``, image ``i``; a detection counts as matched where
    ``dtMatches`` is non-zero (pycocotools' truth test) and as ignored where ``dtIgnore`` is.
    """
    K = len(k_list)
    cls, img, rank, scores, matched, ignored = [], [], [], [], [], []
    num_gt = np.zeros((K, 1), dtype=np.int64)
    for k, k0 in enumerate(k_list):
        base = k0 * A0 * I0 + a0 * I0
        for pos, i in enumerate(i_list):
            e = eval_imgs[base + i]
            if e is None:
                continue
            d = len(e["dtScores"])
            num_gt[k, 0] += int(np.count_nonzero(np.asarray(e["gtIgnore"]) == 0))
            if d == 0:
                continue
            cls.append(np.full(d, k, dtype=np.int64))
            img.append(np.full(d, pos, dtype=np.int64))
            rank.append(np.arange(d, dtype=np.int64))
            scores.append(np.asarray(e["dtScores"], dtype=np.float64).reshape(d))
            matched.append(np.asarray(e["dtMatches"]).reshape(T, d).T != 0)
            ignored.append(np.asarray(e["dtIgnore"]).reshape(T, d).T != 0)
    if cls:
        cat = np.concatenate
        return CocoMatches(class_idx=cat(cls), scores=cat(scores), image_key=cat(img),
                           rank=cat(rank), matched=cat(matched)[:, None, :],
                           ignored=cat(ignored)[:, None, :], num_gt=num_gt)
    z = np.zeros(0, dtype=np.int64)
    return CocoMatches(class_idx=z, scores=np.zeros(0), image_key=z, rank=z,
                       matched=np.zeros((0, 1, T), dtype=bool),
                       ignored=np.zeros((0, 1, T), dtype=bool), num_gt=num_gt)
