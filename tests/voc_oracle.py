"""Slow, literal reference implementation of PASCAL VOC detection AP (test oracle).

Written independently of ``deteval`` from docs/semantics.md sections 1 and 2, mirroring
the official devkit (``VOCevaldet.m`` + ``VOCap.m``) and py-faster-rcnn/detectron2
``voc_eval`` line by line, with plain Python loops over plain lists.  numpy is used only
where the detectron2 reference itself uses it and the exact numpy call matters:
``np.argsort(-confidence)`` (tie order), ``np.arange(0.0, 1.1, 0.1)`` (11-point grid) and
``np.sum`` (pairwise summation of the all-point AP terms).

Inputs
------
gt:   list of (image_id, class, x1, y1, x2, y2, difficult) in annotation-file order
      (objects of one image in XML order).  ``difficult`` is truthy for difficult objects;
      None (tag absent) means not difficult.
dets: list of (image_id, class, score, x1, y1, x2, y2) in detection-file order
      (the order of the lines of that class's result file).

Decision taken here (not in the references): under ``metric="voc07"`` the devkit gives NaN
when *every* detection of a class is ignored (all of them hit difficult objects, so the
whole precision curve is NaN and ``max(prec(rec >= 0))`` is NaN).  The oracle returns 0.0
for that grid point instead (the class has no true positive, so AP 0 is the meaningful
value, and it is what detectron2 gives thanks to its eps).
"""

import math

import numpy as np

DEVKIT = "devkit"
DETECTRON2 = "detectron2"

# MATLAB's 0:0.1:1 (the colon operator fills the range from both ends).
MATLAB_GRID = [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
# py-faster-rcnn / detectron2: np.arange(0.0, 1.1, 0.1)  (== GNU Octave's 0:0.1:1).
NUMPY_GRID = [float(t) for t in np.arange(0.0, 1.1, 0.1)]


def _nanmax2(a, b):
    """MATLAB max(a, b): NaN is ignored unless both are NaN."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a >= b else b


def iou_devkit(bb, bbgt):
    """VOCevaldet.m overlap, or None when the boxes do not intersect (iw<=0 or ih<=0)."""
    bi = [max(bb[0], bbgt[0]), max(bb[1], bbgt[1]), min(bb[2], bbgt[2]), min(bb[3], bbgt[3])]
    iw = bi[2] - bi[0] + 1
    ih = bi[3] - bi[1] + 1
    if iw > 0 and ih > 0:
        ua = ((bb[2] - bb[0] + 1) * (bb[3] - bb[1] + 1)
              + (bbgt[2] - bbgt[0] + 1) * (bbgt[3] - bbgt[1] + 1)
              - iw * ih)
        return iw * ih / ua
    return None


def iou_detectron2(bb, bbgt):
    """voc_eval overlap for one GT: iw, ih clipped at 0, so no intersection gives 0.0."""
    iw = max(min(bbgt[2], bb[2]) - max(bbgt[0], bb[0]) + 1.0, 0.0)
    ih = max(min(bbgt[3], bb[3]) - max(bbgt[1], bb[1]) + 1.0, 0.0)
    inters = iw * ih
    uni = ((bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
           + (bbgt[2] - bbgt[0] + 1.0) * (bbgt[3] - bbgt[1] + 1.0)
           - inters)
    return inters / uni


def sort_order(scores, compat):
    """Indices of the class's detections (file order) in evaluation order."""
    if compat == DEVKIT:
        # [sc, si] = sort(-confidence): MATLAB's sort is stable; so is Python's.
        return sorted(range(len(scores)), key=lambda i: -scores[i])
    confidence = np.array([float(s) for s in scores], dtype=np.float64)
    if confidence.size == 0:
        return []
    return [int(i) for i in np.argsort(-confidence)]


def match_class(cls, gt, dets, iou_threshold=0.5, compat=DEVKIT):
    """Run the per-class matching loop.

    Returns dict with npos, num_difficult, num_detections, the per-detection flags
    ``tp_flags``/``fp_flags`` in evaluation order, and ``best_ious`` (for diagnostics).
    """
    recs = {}  # image_id -> list of [box, difficult, claimed]
    npos = 0
    ndiff = 0
    for (img, c, x1, y1, x2, y2, diff) in gt:
        if c != cls:
            continue
        d = bool(diff)
        recs.setdefault(img, []).append([(x1, y1, x2, y2), d, False])
        if d:
            ndiff += 1
        else:
            npos += 1

    cdets = [d for d in dets if d[1] == cls]
    order = sort_order([d[2] for d in cdets], compat)

    tp_flags = []
    fp_flags = []
    best_ious = []
    for idx in order:
        img, _, _, x1, y1, x2, y2 = cdets[idx]
        bb = (x1, y1, x2, y2)
        objs = recs.get(img, [])
        tp = 0
        fp = 0
        if compat == DEVKIT:
            ovmax = -math.inf
            jmax = None
            for j, (bbgt, _diff, _det) in enumerate(objs):
                ov = iou_devkit(bb, bbgt)
                if ov is not None and ov > ovmax:
                    ovmax = ov
                    jmax = j
            matched = ovmax >= iou_threshold
        else:
            ovmax = -math.inf
            jmax = None
            for j, (bbgt, _diff, _det) in enumerate(objs):
                ov = iou_detectron2(bb, bbgt)
                if ov > ovmax:  # np.max / np.argmax: first maximum wins
                    ovmax = ov
                    jmax = j
            matched = ovmax > iou_threshold
        best_ious.append(ovmax)
        if matched:
            obj = objs[jmax]
            if not obj[1]:            # not difficult
                if not obj[2]:        # not yet claimed
                    tp = 1
                    obj[2] = True
                else:                 # duplicate, no fallback to the 2nd best GT
                    fp = 1
            # difficult: neither TP nor FP
        else:
            fp = 1
        tp_flags.append(tp)
        fp_flags.append(fp)

    return {
        "npos": npos,
        "num_difficult": ndiff,
        "num_detections": len(cdets),
        "tp_flags": tp_flags,
        "fp_flags": fp_flags,
        "best_ious": best_ious,
    }


def curve(tp_flags, fp_flags, npos, compat=DEVKIT):
    """rec/prec lists from cumulative sums (NaN precision for devkit where tp+fp == 0)."""
    rec = []
    prec = []
    ctp = 0
    cfp = 0
    eps = float(np.finfo(np.float64).eps)
    for t, f in zip(tp_flags, fp_flags):
        ctp += t
        cfp += f
        rec.append(ctp / npos)
        if compat == DEVKIT:
            prec.append(ctp / (cfp + ctp) if (cfp + ctp) > 0 else math.nan)
        else:
            prec.append(ctp / max(float(ctp + cfp), eps))
    return rec, prec


def ap_voc07(rec, prec, compat=DEVKIT):
    grid = MATLAB_GRID if compat == DEVKIT else NUMPY_GRID
    ap = 0.0
    for t in grid:
        vals = [p for r, p in zip(rec, prec) if r >= t]
        vals = [p for p in vals if not math.isnan(p)]  # max ignores NaN (see module doc)
        if vals:
            p = vals[0]
            for v in vals[1:]:
                if v > p:
                    p = v
        else:
            p = 0.0
        ap = ap + p / 11
    return ap


def ap_voc12(rec, prec, compat=DEVKIT):
    mrec = [0.0] + list(rec) + [1.0]
    mpre = [0.0] + list(prec) + [0.0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = _nanmax2(mpre[i], mpre[i + 1])
    terms = []
    for i in range(1, len(mrec)):
        if mrec[i] != mrec[i - 1]:
            terms.append((mrec[i] - mrec[i - 1]) * mpre[i])
    if compat == DEVKIT:
        ap = 0.0
        for term in terms:  # left to right
            ap = ap + term
        return ap
    return float(np.sum(np.array(terms, dtype=np.float64)))


def evaluate_class(cls, gt, dets, *, metric="voc12", iou_threshold=0.5, compat=DEVKIT):
    m = match_class(cls, gt, dets, iou_threshold=iou_threshold, compat=compat)
    npos = m["npos"]
    out = {
        "name": cls,
        "num_gt": npos,
        "num_difficult": m["num_difficult"],
        "num_detections": m["num_detections"],
        "tp": sum(m["tp_flags"]),
        "fp": sum(m["fp_flags"]),
        "ap": None,
    }
    if npos == 0:
        return out
    rec, prec = curve(m["tp_flags"], m["fp_flags"], npos, compat)
    if metric == "voc07":
        out["ap"] = float(ap_voc07(rec, prec, compat))
    elif metric == "voc12":
        out["ap"] = float(ap_voc12(rec, prec, compat))
    else:
        raise ValueError(metric)
    return out


def evaluate(gt, dets, *, metric="voc12", iou_threshold=0.5, compat=DEVKIT, classes=None):
    """Per-class results (dict name -> dict) and mAP over classes with a defined AP."""
    if classes is None:
        classes = sorted({g[1] for g in gt})
    per_class = {c: evaluate_class(c, gt, dets, metric=metric, iou_threshold=iou_threshold,
                                   compat=compat) for c in sorted(classes)}
    aps = [r["ap"] for r in per_class.values() if r["ap"] is not None]
    mean = None
    if aps:
        s = 0.0
        for a in aps:
            s = s + a
        mean = s / len(aps)
    return {"mAP": mean, "classes": per_class}


def count_ious_equal(gt, dets, cls, value, compat=DEVKIT):
    """How many detections of ``cls`` have a best IoU exactly equal to ``value``."""
    m = match_class(cls, gt, dets, iou_threshold=value, compat=compat)
    return sum(1 for v in m["best_ious"] if v == value)
