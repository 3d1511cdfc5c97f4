"""``pycocotools.coco.COCO`` for the drop-in: the dataset as dicts and its indexes.

The object holds what pycocotools' holds (``dataset``, ``anns``, ``imgs``, ``cats``,
``imgToAnns``, ``catToImgs``) with the same look-ups, so code that reads them runs
unchanged; :class:`deteval.compat.COCOeval` turns the selected records into deteval's
columnar tables when it evaluates. The messages printed while loading are pycocotools'.

References
----------
.. [1] pycocotools ``coco.py`` (2.0.x). https://github.com/cocodataset/cocoapi
"""
from __future__ import annotations

import copy
import itertools
import json
import os
import time
from collections import defaultdict

import numpy as np

from . import mask as maskUtils

__all__ = ["COCO"]


def _is_array_like(obj) -> bool:
    return hasattr(obj, "__iter__") and hasattr(obj, "__len__")


def _as_list(value):
    return value if _is_array_like(value) else [value]


class COCO:
    """A COCO dataset (ground truth or results) and its indexes, as pycocotools' ``COCO``.

    Parameters
    ----------
    annotation_file : str, optional
        A COCO JSON file; without it the object is empty: set ``dataset`` and call
        :meth:`createIndex`.

    Attributes
    ----------
    dataset : dict
        The loaded JSON (``images``, ``annotations``, ``categories``, ...).
    anns, imgs, cats : dict id -> record
    imgToAnns : defaultdict(list) image id -> annotations, in file order
    catToImgs : defaultdict(list) category id -> image id of each of its annotations
    """

    def __init__(self, annotation_file=None):
        self.dataset, self.anns, self.cats, self.imgs = dict(), dict(), dict(), dict()
        self.imgToAnns, self.catToImgs = defaultdict(list), defaultdict(list)
        if annotation_file is not None:
            print("loading annotations into memory...")
            tic = time.time()
            with open(annotation_file, "r") as f:
                dataset = json.load(f)
            assert type(dataset) == dict, \
                "annotation file format {} not supported".format(type(dataset))
            print("Done (t={:0.2f}s)".format(time.time() - tic))
            self.dataset = dataset
            self.createIndex()

    def createIndex(self):
        """Build ``anns``, ``imgs``, ``cats``, ``imgToAnns`` and ``catToImgs`` from
        ``dataset`` (a later record with an id already seen replaces the earlier one)."""
        print("creating index...")
        ds = self.dataset
        annotations = ds.get("annotations")
        img_to_anns, cat_to_imgs = defaultdict(list), defaultdict(list)
        anns = {}
        if annotations is not None:
            for ann in annotations:
                img_to_anns[ann["image_id"]].append(ann)
            anns = {ann["id"]: ann for ann in annotations}
        imgs = {img["id"]: img for img in ds["images"]} if "images" in ds else {}
        cats = {cat["id"]: cat for cat in ds["categories"]} if "categories" in ds else {}
        if annotations is not None and "categories" in ds:
            for ann in annotations:
                cat_to_imgs[ann["category_id"]].append(ann["image_id"])
        print("index created!")
        self.anns, self.imgToAnns, self.catToImgs = anns, img_to_anns, cat_to_imgs
        self.imgs, self.cats = imgs, cats

    def info(self):
        """Print the dataset's ``info`` entries, one ``key: value`` a line."""
        for key, value in self.dataset["info"].items():
            print("{}: {}".format(key, value))

    # ------------------------------------------------------------------ queries

    def getAnnIds(self, imgIds=[], catIds=[], areaRng=[], iscrowd=None):
        """Ids of the annotations on ``imgIds`` (in that order, then file order), of
        ``catIds``, with ``areaRng[0] < area < areaRng[1]`` and ``iscrowd``; an empty
        filter is no filter."""
        imgIds, catIds = _as_list(imgIds), _as_list(catIds)
        if len(imgIds) == len(catIds) == len(areaRng) == 0:
            anns = self.dataset["annotations"]
        else:
            if len(imgIds):
                index = self.imgToAnns
                anns = list(itertools.chain.from_iterable(
                    [index[i] for i in imgIds if i in index]))
            else:
                anns = self.dataset["annotations"]
            if len(catIds):
                anns = [a for a in anns if a["category_id"] in catIds]
            if len(areaRng):
                anns = [a for a in anns if areaRng[0] < a["area"] < areaRng[1]]
        if iscrowd is not None:
            return [a["id"] for a in anns if a["iscrowd"] == iscrowd]
        return [a["id"] for a in anns]

    def getCatIds(self, catNms=[], supNms=[], catIds=[]):
        """Ids of the categories named ``catNms``, of supercategory ``supNms``, in
        ``catIds`` (file order)."""
        catNms, supNms, catIds = _as_list(catNms), _as_list(supNms), _as_list(catIds)
        cats = self.dataset["categories"]
        if len(catNms):
            cats = [c for c in cats if c["name"] in catNms]
        if len(supNms):
            cats = [c for c in cats if c["supercategory"] in supNms]
        if len(catIds):
            cats = [c for c in cats if c["id"] in catIds]
        return [c["id"] for c in cats]

    def getImgIds(self, imgIds=[], catIds=[]):
        """Ids of the images in ``imgIds`` that hold every category of ``catIds``
        (all images without filters; unordered, as pycocotools)."""
        imgIds, catIds = _as_list(imgIds), _as_list(catIds)
        if len(imgIds) == len(catIds) == 0:
            return list(self.imgs.keys())
        ids = set(imgIds)
        for i, cat in enumerate(catIds):
            if i == 0 and len(ids) == 0:
                ids = set(self.catToImgs[cat])
            else:
                ids &= set(self.catToImgs[cat])
        return list(ids)

    @staticmethod
    def _load(table, ids):
        if _is_array_like(ids):
            return [table[i] for i in ids]
        if type(ids) == int:
            return [table[ids]]
        return None

    def loadAnns(self, ids=[]):
        """The annotation records of ``ids`` (a list, or one int)."""
        return self._load(self.anns, ids)

    def loadCats(self, ids=[]):
        """The category records of ``ids`` (a list, or one int)."""
        return self._load(self.cats, ids)

    def loadImgs(self, ids=[]):
        """The image records of ``ids`` (a list, or one int)."""
        return self._load(self.imgs, ids)

    # ------------------------------------------------------------------ results

    def loadRes(self, resFile):
        """A results :class:`COCO` on this ground truth's images.

        Parameters
        ----------
        resFile : str or os.PathLike, list of dict or ndarray, shape (N, 7)
            A results JSON file, the loaded list, or rows
            ``[image_id, x, y, w, h, score, category_id]``.

        Each result gets ``id = position + 1``; box results get ``area = w * h``,
        ``iscrowd = 0`` and (without one) a rectangle ``segmentation``; segmentation
        results their mask's area and (without one) its box; keypoint results the extent
        of their keypoints as box and area. The result records are modified in place, as
        pycocotools does.
        """
        res = COCO()
        res.dataset["info"] = copy.deepcopy(self.dataset.get("info", {}))
        res.dataset["images"] = list(self.dataset["images"])
        print("Loading and preparing results...")
        tic = time.time()
        if isinstance(resFile, (str, os.PathLike)):
            with open(resFile) as f:
                anns = json.load(f)
        elif type(resFile) == np.ndarray:
            anns = self.loadNumpyAnnotations(resFile)
        else:
            anns = resFile
        assert type(anns) == list, "results in not an array of objects"
        ann_img_ids = {ann["image_id"] for ann in anns}
        assert ann_img_ids == (ann_img_ids & set(self.getImgIds())), \
            "Results do not correspond to current coco set"
        first = anns[0]  # an empty list fails here, as in pycocotools
        if "caption" in first:
            keep = {img["id"] for img in res.dataset["images"]} & ann_img_ids
            res.dataset["images"] = [i for i in res.dataset["images"] if i["id"] in keep]
            for i, ann in enumerate(anns):
                ann["id"] = i + 1
        elif "bbox" in first and not first["bbox"] == []:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                bb = ann["bbox"]
                x1, x2, y1, y2 = bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]
                if "segmentation" not in ann:
                    ann["segmentation"] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
                ann["area"] = bb[2] * bb[3]
                ann["id"] = i + 1
                ann["iscrowd"] = 0
        elif "segmentation" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                ann["area"] = maskUtils.area(ann["segmentation"])
                if "bbox" not in ann:
                    ann["bbox"] = maskUtils.toBbox(ann["segmentation"])
                ann["id"] = i + 1
                ann["iscrowd"] = 0
        elif "keypoints" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                s = ann["keypoints"]
                xs, ys = s[0::3], s[1::3]
                x0, x1, y0, y1 = np.min(xs), np.max(xs), np.min(ys), np.max(ys)
                ann["area"] = (x1 - x0) * (y1 - y0)
                ann["id"] = i + 1
                ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
        print("DONE (t={:0.2f}s)".format(time.time() - tic))
        res.dataset["annotations"] = anns
        res.createIndex()
        return res

    def loadNumpyAnnotations(self, data):
        """Result dicts from an ``(N, 7)`` array ``[image_id, x, y, w, h, score, class]``."""
        print("Converting ndarray to lists...")
        assert type(data) == np.ndarray
        print(data.shape)
        assert data.shape[1] == 7
        n = data.shape[0]
        rows = data.tolist()
        ann = []
        for i in range(n):
            if i % 1000000 == 0:
                print("{}/{}".format(i, n))
            r = data[i]
            ann.append({"image_id": int(rows[i][0]), "bbox": [r[1], r[2], r[3], r[4]],
                        "score": r[5], "category_id": int(rows[i][6])})
        return ann

    # ------------------------------------------------------------------ masks

    def annToRLE(self, ann):
        """The annotation's segmentation as a compressed RLE on its image (polygons are
        rasterised and merged, uncompressed RLE compressed; RLE returned as is)."""
        img = self.imgs[ann["image_id"]]
        h, w = img["height"], img["width"]
        segm = ann["segmentation"]
        if type(segm) == list:
            return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
        if type(segm["counts"]) == list:
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann):
        """The annotation's binary mask, ``uint8`` array ``(height, width)``."""
        return maskUtils.decode(self.annToRLE(ann))

    # ------------------------------------------------------------------ display

    def showAnns(self, anns, draw_bbox=False):
        """Draw annotations on the current matplotlib axes (pycocotools' own drawing)."""
        from pycocotools.coco import COCO as _Reference
        return _Reference.showAnns(self, anns, draw_bbox)

    def download(self, tarDir=None, imgIds=[]):
        """Download images (pycocotools' own code; needs network access)."""
        from pycocotools.coco import COCO as _Reference
        return _Reference.download(self, tarDir, imgIds)
