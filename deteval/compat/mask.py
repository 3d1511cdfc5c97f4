"""``pycocotools.mask`` for the drop-in: ``from deteval.compat import mask as maskUtils``.

COCO run-length encoding is pycocotools' C implementation (``maskApi.c``); deteval already
depends on it for rasterising polygons (:mod:`deteval.masks`), so these names are
pycocotools' own functions, with the same signatures and the same results:

* ``encode(bimask)``: Fortran-ordered ``uint8`` array ``(H, W)`` or ``(H, W, N)`` -> RLE(s)
* ``decode(rleObjs)``: RLE(s) -> ``uint8`` array ``(H, W)`` or ``(H, W, N)``
* ``area(rleObjs)``, ``toBbox(rleObjs)``: foreground pixels, ``[x, y, w, h]``
* ``iou(dt, gt, iscrowd)``: ``(D, G)`` IoU of RLEs or boxes (crowd: ``|d & g| / |d|``)
* ``merge(rleObjs, intersect=0)``: union (or intersection) of RLEs
* ``frPyObjects(pyobj, h, w)``: polygons, boxes or uncompressed RLE -> compressed RLE

References
----------
.. [1] pycocotools ``mask.py`` and ``_mask.pyx``. https://github.com/cocodataset/cocoapi
"""
from __future__ import annotations

from ..masks import _mask_api

__all__ = ["encode", "decode", "area", "toBbox", "iou", "merge", "frPyObjects"]

_api = _mask_api()

encode = _api.encode
decode = _api.decode
area = _api.area
toBbox = _api.toBbox
iou = _api.iou
merge = _api.merge
frPyObjects = _api.frPyObjects
