"""What every non-COCO dataset reader shares: image lists, class lists, numeric text rows,
image headers, and the one GroundTruth layout they all produce.

Conventions (README "Formats"):

* images get ids ``1..N`` in sorted file-name order; results may name an image by that id
  (an integer), by its file name or by its file stem (strings);
* categories get ids ``1..K`` in the dataset's class order;
* boxes are COCO ``[x, y, w, h]`` in continuous pixel coordinates, converted without
  rounding; ``area`` is the box's ``w * h``.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, expected
from ..tables import GroundTruth
from .files import quote, read_input

__all__ = ["IMAGE_EXTENSIONS", "image_size", "image_sizes", "dataset_ground_truth",
           "ImageNames", "read_class_file", "parse_rows", "NORMALISED_TOLERANCE"]

#: Image file extensions of a YOLO dataset (Ultralytics' list), lower case.
IMAGE_EXTENSIONS = frozenset(("bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff",
                              "webp", "pfm", "heic"))

#: How far outside [0, 1] a normalised YOLO coordinate may be (rounding of written values).
NORMALISED_TOLERANCE = 1e-3

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def _header_size(head: bytes, more) -> Optional[Tuple[int, int]]:
    """``(width, height)`` of a PNG, JPEG, GIF, BMP or WebP file from its first bytes
    (JPEG: walks the segments to the frame header, ``more()`` giving the next bytes);
    None for another format."""
    import struct
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", head[6:10])
    if head[:2] == b"BM" and len(head) >= 26:
        w, h = struct.unpack("<ii", head[18:26])
        return w, abs(h)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        kind = head[12:16]
        if kind == b"VP8 " and len(head) >= 30:
            w, h = struct.unpack("<HH", head[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if kind == b"VP8L" and len(head) >= 25:
            b = head[21:25]
            return (1 + (((b[1] & 0x3F) << 8) | b[0]),
                    1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6)))
        if kind == b"VP8X" and len(head) >= 30:
            return (1 + int.from_bytes(head[24:27], "little"),
                    1 + int.from_bytes(head[27:30], "little"))
        return None
    if head[:2] == b"\xff\xd8":
        data, pos = head, 2
        while True:
            while pos + 4 > len(data):
                chunk = more()
                if not chunk:
                    return None
                data += chunk
            if data[pos] != 0xFF:
                return None
            marker = data[pos + 1]
            if marker == 0xFF:  # fill byte
                pos += 1
                continue
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                pos += 2
                continue
            length = struct.unpack(">H", data[pos + 2:pos + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                          0xCE, 0xCF):  # start of frame: precision, height, width
                while pos + 9 > len(data):
                    chunk = more()
                    if not chunk:
                        return None
                    data += chunk
                h, w = struct.unpack(">HH", data[pos + 5:pos + 9])
                return w, h
            pos += 2 + length
    return None


def image_size(path) -> Tuple[int, int]:
    """``(width, height)`` of an image from its header, never decoding pixels.

    PNG, JPEG, GIF, BMP and WebP headers are read here; ``imagesize`` reads other
    headers (TIFF...), and Pillow (if installed) opens anything else lazily. The stored
    size is used (EXIF orientation is not applied).
    """
    try:
        fd = os.open(path, _READ_FLAGS)
        try:
            found = _header_size(os.read(fd, 4096), lambda: os.read(fd, 65536))
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"Expected a readable image file but got: {exc.strerror}",
                         path) from None
    if found is not None and found[0] > 0 and found[1] > 0:
        return int(found[0]), int(found[1])
    try:
        import imagesize
    except ImportError:  # pragma: no cover - a declared dependency
        imagesize = None
    w = h = -1
    if imagesize is not None:
        try:
            w, h = imagesize.get(os.fspath(path))
        except (OSError, ValueError):
            w = h = -1
    if w <= 0 or h <= 0:
        try:
            from PIL import Image
        except ImportError:
            Image = None
        if Image is not None:
            try:
                with Image.open(path) as im:  # reads the header only
                    w, h = im.size
            except Exception:  # noqa: BLE001 - any unreadable image: reported below
                w = h = -1
    if w <= 0 or h <= 0:
        raise InputError("Expected an image whose header gives its width and height but "
                         "could not read one (unknown or corrupt format)", path)
    return int(w), int(h)


def read_file(path, missing_ok: bool = False) -> Optional[bytes]:
    """The bytes of a small file (os-level reads: cheaper than a file object when there
    are thousands); None for a missing file when ``missing_ok``."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise InputError("Expected a readable file but there is none", path) from None
    except OSError as exc:
        raise InputError(f"Expected a readable file but got: {exc.strerror}", path) from None
    try:
        parts = []
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            parts.append(b)
    except IsADirectoryError:
        raise InputError("Expected a text file but got a folder", path) from None
    except OSError as exc:
        raise InputError(f"Expected a readable file but got: {exc.strerror}", path) from None
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def image_sizes(paths: Sequence) -> np.ndarray:
    """(N, 2) int64 ``height, width`` of every image (headers only)."""
    out = np.zeros((len(paths), 2), dtype=np.int64)
    for i, p in enumerate(paths):
        w, h = image_size(p)
        out[i, 0], out[i, 1] = h, w
    return out


def dataset_ground_truth(file_names: Sequence[str], sizes_hw: Optional[np.ndarray],
                         class_names: Sequence[str], image_idx: np.ndarray,
                         class_idx: np.ndarray, boxes_xywh: np.ndarray, *, source: str,
                         fmt: str, difficult: Optional[np.ndarray] = None,
                         warnings: Sequence[str] = (), class_order: str = "",
                         extra: Optional[dict] = None) -> GroundTruth:
    """The GroundTruth of a dataset with images ``1..N`` and categories ``1..K``.

    Parameters
    ----------
    file_names : sequence of str, length N
        Image file names (no folder) in id order.
    sizes_hw : ndarray of int64, shape (N, 2), or None
        Height and width of every image.
    image_idx, class_idx : ndarray of int64, shape (G,)
    boxes_xywh : ndarray of float64, shape (G, 4)
    fmt : str
        The format's name (``"yolo"``, ``"labelme"``, ``"cvat"``, ``"voc"``).
    warnings : sequence of str
        Messages for the user (the CLI prints them to standard error).
    class_order : str
        How the category order was decided (stated in ``sources``).
    """
    n = len(file_names)
    boxes = np.ascontiguousarray(boxes_xywh, dtype=np.float64).reshape(-1, 4)
    g = boxes.shape[0]
    sources = {"ground_truth": source, "format": fmt, "file_names": list(file_names),
               "warnings": list(warnings), "class_order": class_order}
    if extra:
        sources.update(extra)
    return GroundTruth(
        image_idx=np.asarray(image_idx, dtype=np.int64), class_idx=np.asarray(class_idx,
                                                                             dtype=np.int64),
        boxes=boxes, difficult=(np.zeros(g, dtype=bool) if difficult is None
                                else np.asarray(difficult, dtype=bool)),
        crowd=np.zeros(g, dtype=bool), area=boxes[:, 2] * boxes[:, 3],
        image_ids=np.arange(1, n + 1, dtype=np.int64), class_names=tuple(class_names),
        class_ids=np.arange(1, len(class_names) + 1, dtype=np.int64), box_format="xywh",
        sources=sources, image_sizes=None if sizes_hw is None else np.asarray(sizes_hw,
                                                                              dtype=np.int64))


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


class ImageNames:
    """Positions of images named by id (int), file name or file stem (str).

    ``image_ids`` are the ground truth's ids; ``file_names`` their file names (may be
    None: ids only). A stem shared by two images names neither (an error when used).
    """

    def __init__(self, image_ids: np.ndarray, file_names: Optional[Sequence[str]]):
        self.ids = {int(v): i for i, v in enumerate(np.asarray(image_ids).tolist())}
        self.names: Dict[str, int] = {}
        if file_names is not None:
            stems: Dict[str, int] = {}
            for i, name in enumerate(file_names):
                if name is None:
                    continue
                base = name.replace("\\", "/").rsplit("/", 1)[-1]
                self.names.setdefault(name, i)
                self.names.setdefault(base, i)
                s = _stem(base)
                stems[s] = -2 if s in stems and stems[s] != i else i
            for s, i in stems.items():
                self.names.setdefault(s, i)

    def find(self, key) -> int:
        """Position of ``key``; -1 unknown, -2 ambiguous (a stem of two images)."""
        if isinstance(key, bool):
            return -1
        if isinstance(key, (int, np.integer)):
            return self.ids.get(int(key), -1)
        if isinstance(key, str):
            return self.names.get(key, -1)
        return -1

    def positions(self, keys: Sequence, source, where) -> np.ndarray:
        """int64 positions of every key; InputError naming the first unknown one
        (``where(i)`` says where record ``i`` is)."""
        out = np.fromiter((self.find(k) for k in keys), np.int64, len(keys))
        bad = np.flatnonzero(out < 0)
        if bad.shape[0]:
            i = int(bad[0])
            if out[i] == -2:
                raise InputError(f"Expected an image id, file name or stem naming one image "
                                 f"but got {keys[i]!r}, the stem of two images", source,
                                 where(i))
            raise InputError(expected("image_id", "an image of the ground truth (its id, "
                                      "file name or file stem)", keys[i]), source, where(i))
        return out


_LAST_NAMES: list = []


def image_names(gt: GroundTruth) -> ImageNames:
    """:class:`ImageNames` of a ground truth (the last one is kept: format detection and
    the reader look images up in the same table)."""
    if _LAST_NAMES and _LAST_NAMES[0] is gt:
        return _LAST_NAMES[1]
    names = ImageNames(gt.image_ids, gt.sources.get("file_names"))
    _LAST_NAMES[:] = [gt, names]
    return names


def read_class_file(path) -> List[str]:
    """Class names of a text file, one per line, in order (the ``--classes FILE`` and
    LabelMe ``labels.txt`` format): blank lines and the labelme2coco lines ``__ignore__``
    and ``_background_`` are skipped; a repeated name is an error."""
    data = read_input(path, "class list text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("Expected a UTF-8 text file of class names but got other bytes",
                         path) from None
    names: List[str] = []
    seen: Dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        name = line.strip()
        if not name or name in ("__ignore__", "_background_"):
            continue
        if name in seen:
            raise InputError(f"Expected each class name once but got {name!r} again (first "
                             f"on line {seen[name]})", path, f"line {lineno}")
        seen[name] = lineno
        names.append(name)
    if not names:
        raise InputError("Expected at least one class name but got none", path)
    return names


# ------------------------------------------------------------------ numeric text rows

_NUMERIC_BYTES = np.zeros(256, dtype=bool)
for _c in b"0123456789.eE+- \t\n\r\v\f":
    _NUMERIC_BYTES[_c] = True
_BLANK = np.zeros(256, dtype=bool)
for _c in b" \t\n\r\v\f":
    _BLANK[_c] = True


def join_files(chunks: Sequence[bytes]) -> Tuple[bytes, np.ndarray]:
    """The files' bytes as one buffer, each ending with a line end, and the number of
    lines (as ``bytes.splitlines`` counts them) before each file: ``first_line`` (F + 1,)."""
    parts = []
    lines = np.zeros(len(chunks) + 1, dtype=np.int64)
    for i, c in enumerate(chunks):
        if c and c[-1:] not in (b"\n", b"\r"):
            c = c + b"\n"
        parts.append(c)
        lines[i + 1] = c.count(b"\n") + c.count(b"\r") - c.count(b"\r\n")
    return b"".join(parts), np.cumsum(lines)


def parse_rows(data: bytes, nfields: int):
    """Rows of ``nfields`` numbers per non-blank line, vectorised.

    Returns ``(values, line)``: float64 (R, nfields) and the 1-based line number of each
    row (lines as ``bytes.splitlines`` counts them), or ``None`` if some line has another
    field count or a token that is not a plain decimal number (the caller then finds and
    names the first bad line with :func:`first_bad_line`).
    """
    if not data:
        return np.zeros((0, nfields)), np.zeros(0, dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    if not _NUMERIC_BYTES[arr].all():
        return None
    lf, cr = arr == 10, arr == 13
    eol = lf | cr
    eol[1:] &= ~(lf[1:] & cr[:-1])  # \r\n is one line end
    line_of = np.cumsum(eol) - eol  # line index of every byte (a line end: its line)
    blank = _BLANK[arr]
    start = ~blank
    start[1:] &= blank[:-1]
    per_line = np.bincount(line_of[start], minlength=int(line_of[-1]) + 1)
    used = per_line > 0
    if (per_line[used] != nfields).any():
        return None
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            values = np.fromstring(data, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    if values.shape[0] != nfields * int(used.sum()):
        return None
    return values.reshape(-1, nfields), np.flatnonzero(used).astype(np.int64) + 1


def first_bad_line(data: bytes, nfields: int, what: str, names: Sequence[str]):
    """``(line_number, message)`` of the first line without ``nfields`` numbers."""
    for lineno, line in enumerate(data.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != nfields:
            return lineno, (f"Expected {nfields} fields `{what}` but got {len(tokens)}: "
                            f"{quote(line, 80)}")
        for name, tok in zip(names, tokens):
            try:
                if b"_" in tok:
                    raise ValueError
                float(tok)
            except ValueError:
                return lineno, expected(name, "a number", tok)
    return None
