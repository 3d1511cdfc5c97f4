"""PASCAL VOC loaders: XML annotations, image sets and per-class detection files.

Annotation files are untrusted input: the parser never resolves entities, never
loads a DTD and never touches the network; a document with a ``<!DOCTYPE`` is
refused outright (VOC annotations have none), which also stops entity bombs.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import InputError, expected
from ..tables import Detections, GroundTruth
from .files import XML_MAX_BYTES, check_regular_files, quote, read_input

from .. import _native
from .._native import textscan as _textscan  # None without it: the Python code is the reference

__all__ = ["load_voc_annotations", "load_voc_detections", "read_imageset",
           "resolve_voc_layout"]

PathLike = Union[str, os.PathLike]



def _etree():
    """lxml.etree, imported when a file needs it (the C reader handles typical files)."""
    from lxml import etree
    return etree


@functools.lru_cache(maxsize=None)
def _xml_parser():
    """The one parser configuration: no entities, no DTD, no network."""
    return _etree().XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                              dtd_validation=False, huge_tree=False, remove_comments=True)


_COORDS = ("xmin", "ymin", "xmax", "ymax")


def resolve_voc_layout(annotations: PathLike, imageset: Optional[PathLike] = None
                       ) -> Tuple[Path, Optional[Path]]:
    """Find the XML folder and the image-set file.

    ``annotations`` is a folder of ``<image_id>.xml`` files or a VOC year folder
    (``VOCdevkit/VOC2007``) holding ``Annotations/`` and ``ImageSets/Main/``.
    ``imageset`` is a file path, or with a year folder a split name (``test``).
    """
    root = Path(annotations)
    if not root.is_dir():
        raise InputError(expected("ANNOTATIONS", "a folder of VOC XML files or a VOC year "
                                  "folder", str(root)) + " (no such folder)", root)
    xml_dir = root / "Annotations" if (root / "Annotations").is_dir() else root
    if imageset is None:
        return xml_dir, None
    candidate = Path(imageset)
    if candidate.is_file():
        return xml_dir, candidate
    if xml_dir is not root and os.sep not in str(imageset) and "/" not in str(imageset):
        split = root / "ImageSets" / "Main" / (str(imageset) + ".txt")
        if split.is_file():
            return xml_dir, split
        raise InputError(expected("--imageset", "an image-set file or a split name under "
                                  "ImageSets/Main/", str(imageset))
                         + f" (no file {split})", root)
    raise InputError(expected("--imageset", "an existing image-set file", str(imageset))
                     + " (no such file)", candidate)


def read_imageset(path: PathLike) -> List[str]:
    """Image ids of an image-set file: the first token of each non-blank line.

    Raises :class:`InputError` on a duplicated id (the devkit would silently count
    its ground truth twice) or on a file that is not text.
    """
    path = Path(path)
    data = _strip_bom(_read_text_bytes(path))
    tokens = data.split()
    if len(tokens) == sum(1 for line in data.splitlines() if line.strip()):
        # one token per non-blank line (the usual file): no per-line work
        ids = [t.decode("utf-8", "replace") for t in tokens]
        if len(set(ids)) == len(ids):
            return ids
    ids = []
    first_line: Dict[str, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        image_id = fields[0].decode("utf-8", "replace")
        if image_id in first_line:
            raise InputError(f"Expected each image id once but got {image_id!r} again "
                             f"(first on line {first_line[image_id]})", path, f"line {lineno}")
        first_line[image_id] = lineno
        ids.append(image_id)
    return ids


def _read_text_bytes(path) -> bytes:
    return read_input(path, "text file")


_UTF8_BOM = b"\xef\xbb\xbf"


def _strip_bom(data: bytes) -> bytes:
    """The bytes without a leading UTF-8 byte-order mark (files written on Windows)."""
    return data[3:] if data.startswith(_UTF8_BOM) else data


def _parse_xml(path: Path, data: Optional[bytes] = None) -> "etree._Element":
    if data is None:
        data = _read_text_bytes(path)
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InputError("Expected a VOC annotation without DTD or entity declarations but "
                         "got a <!DOCTYPE>/<!ENTITY> (refused: untrusted XML)", path)
    etree = _etree()
    try:
        root = etree.fromstring(data, _xml_parser())
    except etree.XMLSyntaxError as exc:
        line = getattr(exc, "lineno", None) or (exc.position[0] if exc.position else None)
        msg = exc.msg if hasattr(exc, "msg") else str(exc)
        raise InputError(f"Expected well-formed XML but got a syntax error: {msg}", path,
                         f"line {line}" if line else None) from None
    except ValueError as exc:
        raise InputError(f"Expected well-formed XML but got: {exc}", path) from None
    if root is None:
        raise InputError("Expected an <annotation> document but got an empty document", path)
    info = root.getroottree().docinfo
    if info.doctype or info.internalDTD is not None:  # e.g. a DOCTYPE in UTF-7 / UTF-16
        raise InputError("Expected a VOC annotation without DTD or entity declarations but "
                         "got a <!DOCTYPE> (refused: untrusted XML)", path)
    if root.tag != "annotation":
        raise InputError(expected("root element", "<annotation>", f"<{root.tag}>"), path,
                         f"line {root.sourceline}")
    return root


def _number(text: Optional[str], what: str, path: Path, elem) -> float:
    if text is None:
        raise InputError(f"Expected a <{what}> element with a number but got none", path,
                         f"line {elem.sourceline}")
    try:
        if "_" in text:  # float() accepts "1_000"; a coordinate does not
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise InputError(expected(what, "a number", text.strip()), path,
                         f"line {elem.sourceline}") from None
    if not np.isfinite(value):
        raise InputError(expected(what, "a finite number", text.strip()), path,
                         f"line {elem.sourceline}")
    return value


def normalize_class_name(text: str) -> str:
    """The one rule for a ``<name>``: its whole text content (child elements' text
    included), with every run of Unicode whitespace (a non-breaking space too) collapsed
    to one space and the ends trimmed; the same on every reader path."""
    return " ".join(text.split())


def _read_objects(path: Path, root=None):
    """(names, boxes, difficult) of one annotation file, in file order.

    The reference reader: element by element, with a precise message for the
    first problem. :func:`_read_all_objects` uses it for any file its fast pass
    cannot read unambiguously.
    """
    if root is None:
        root = _parse_xml(path)
    names: List[str] = []
    boxes: List[Tuple[float, float, float, float]] = []
    difficult: List[bool] = []
    for obj in root.iterchildren("object"):
        name_el = obj.find("name")
        name = None if name_el is None else "".join(name_el.itertext())
        if name is None or not name.strip():
            raise InputError("Expected a non-empty <name> in <object> but got none", path,
                             f"line {obj.sourceline}")
        bnd = obj.find("bndbox")
        if bnd is None:
            raise InputError(f"Expected a <bndbox> in <object> ({name.strip()}) but got none",
                             path, f"line {obj.sourceline}")
        x1, y1, x2, y2 = (_number(bnd.findtext(c), c, path, bnd) for c in _COORDS)
        if x2 < x1 or y2 < y1:
            raise InputError(f"Expected xmin <= xmax and ymin <= ymax but got "
                             f"({x1:g}, {y1:g}, {x2:g}, {y2:g})", path,
                             f"line {bnd.sourceline}")
        d = obj.findtext("difficult")
        names.append(normalize_class_name(name))
        boxes.append((x1, y1, x2, y2))
        # devkit: difficult iff the trimmed text is exactly "1"; missing or empty -> False
        difficult.append(d is not None and d.strip() == "1")
    return names, boxes, difficult


# One XSLT pass (in C) over all parsed files writes each object as a tab-separated
# line (file number first); Python then touches one short line per object instead
# of walking ~30 elements.
_OBJECT_LINES_XSL = b"""\
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="utf-8"/>
<xsl:template match="/all"><xsl:for-each select="annotation"
><xsl:variable name="file" select="position()"/><xsl:for-each select="object"
><xsl:value-of select="$file"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="count(name)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(name)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="count(bndbox)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(bndbox/xmin)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(bndbox/ymin)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(bndbox/xmax)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(bndbox/ymax)"/><xsl:text>&#9;</xsl:text
><xsl:value-of select="normalize-space(difficult[1])"/><xsl:text>&#9;</xsl:text
></xsl:for-each></xsl:for-each></xsl:template>
</xsl:stylesheet>"""


@functools.lru_cache(maxsize=None)
def _object_lines_xslt():
    """The compiled :data:`_OBJECT_LINES_XSL` stylesheet."""
    etree = _etree()
    return etree.XSLT(etree.XML(_OBJECT_LINES_XSL))


def _object_lines(roots: List["etree._Element"]) -> str:
    """The ``_OBJECT_LINES_XSL`` text of the parsed files (file numbers 1..len(roots))."""
    container = _etree().Element("all")
    for root in roots:
        container.append(root)
    try:
        return bytes(_object_lines_xslt()(container)).decode("utf-8")
    finally:
        for root in list(container):
            container.remove(root)


def _parse_object_lines(out: str, file_map: np.ndarray):
    """Per object of ``_OBJECT_LINES_XSL``-format text (from the XSLT or the C scanner):
    ``(file_idx, names, boxes, difficult, ok, all_bad)``. File number ``k`` in the text
    is file ``file_map[k - 1]``; ``ok`` is False for an object the fast checks cannot
    accept; ``all_bad`` is True if the text is malformed (every file of ``file_map``
    must then be re-read).
    """
    # every field ends with a tab (normalize-space leaves none inside a field)
    tokens = out.split("\t")[:-1]
    if len(tokens) % 9:  # cannot happen with the stylesheet above
        return (np.zeros(0, dtype=np.int64), [], np.zeros((0, 4)), np.zeros(0, dtype=bool),
                np.zeros(0, dtype=bool), True)
    file_idx = file_map[np.array(tokens[0::9], dtype=np.int64) - 1]
    n = file_idx.shape[0]
    names = tokens[2::9]
    texts = [tokens[k::9] for k in (4, 5, 6, 7)]
    ok = np.ones(n, dtype=bool)
    try:
        boxes = np.array(texts, dtype=np.float64).T.reshape(n, 4)
    except ValueError:  # a non-numeric coordinate somewhere: find the rows
        boxes = np.zeros((n, 4))
        for j, vals in enumerate(zip(*texts)):
            try:
                boxes[j] = [float(v) for v in vals]
            except ValueError:
                ok[j] = False
    ok &= (np.array(tokens[1::9]) == "1") & (np.array(tokens[3::9]) == "1")
    ok &= np.array(names, dtype=object) != ""
    ok &= np.isfinite(boxes).all(axis=1) & (boxes[:, 0] <= boxes[:, 2]) & (
        boxes[:, 1] <= boxes[:, 3])
    if any("_" in "".join(t) for t in texts):  # float() accepts "1_000", VOC does not
        ok &= ~np.array(["_" in "".join(v) for v in zip(*texts)], dtype=bool)
    return file_idx, names, boxes, np.array(tokens[8::9]) == "1", ok, False


def _per_file(file_idx: np.ndarray, ok: np.ndarray, n_files: int):
    """Object count of each file, and the files with an object the fast checks reject."""
    bad = np.zeros(n_files, dtype=bool)
    bad[file_idx[~ok]] = True
    return np.bincount(file_idx, minlength=n_files), bad


def _c_scanned(paths: List[str]):
    """The C reader-scanner's objects as ``(file_idx, name_table, name_idx, boxes,
    difficult, ok)``, and the files it left to lxml (a bool mask); None without it."""
    if _textscan is None:
        return None, np.ones(len(paths), dtype=bool)
    found = _native.scan_voc_files(paths)
    file_idx = np.repeat(np.arange(len(paths), dtype=np.int64), found.counts)
    return ((file_idx, found.names, found.name_idx, found.boxes, found.difficult, found.ok),
            found.fallback)


def _scanned_objects(paths: List[str]):
    """``(roots, counts, name_table, name_idx, boxes, difficult, bad)`` of the files.

    The C extension, when built, reads and scans the files inside its strict XML
    subset (``roots[i]`` is None for those); lxml parses all others (every file
    without the extension), in file order, so the first read or syntax error is
    always the one lxml raises, and one XSLT pass (:data:`_OBJECT_LINES_XSL`) reads
    their objects. Object ``j`` is named ``name_table[name_idx[j]]`` (the table may
    repeat names and hold unused ones). ``bad`` flags files whose objects the fast
    checks reject: the caller re-reads them with :func:`_read_objects`, which
    accepts them or names the problem.
    """
    n_files = len(paths)
    check_regular_files(paths, "VOC annotation XML file", XML_MAX_BYTES)
    fast, fallback = _c_scanned(paths)
    slow = np.flatnonzero(fallback)  # files left to lxml (and unreadable ones)
    roots: List[Optional["etree._Element"]] = [None] * n_files
    for i in slow.tolist():
        roots[i] = _parse_xml(paths[i])
    parsed = [] if fast is None else [fast]
    malformed = False
    if len(slow):
        file_idx, names, boxes, difficult, ok, malformed = _parse_object_lines(
            _object_lines([roots[i] for i in slow]), slow)
        parsed.append((file_idx, names, np.arange(len(names), dtype=np.int64), boxes,
                       difficult, ok))
    if not parsed:
        parsed.append((np.zeros(0, dtype=np.int64), [], np.zeros(0, dtype=np.int64),
                       np.zeros((0, 4)), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)))
    table: List[str] = []
    name_idx = []
    for p in parsed:  # one name table: offset each producer's indices
        name_idx.append(np.where(p[2] >= 0, p[2] + len(table), -1))
        table.extend(p[1])
    file_idx = np.concatenate([p[0] for p in parsed])
    name_idx = np.concatenate(name_idx)
    boxes = np.concatenate([p[3] for p in parsed])
    difficult = np.concatenate([p[4] for p in parsed])
    ok = np.concatenate([p[5] for p in parsed])
    if len(parsed) > 1:  # merge the two producers' objects in file order
        order = np.argsort(file_idx, kind="stable")
        file_idx, name_idx, boxes = file_idx[order], name_idx[order], boxes[order]
        difficult, ok = difficult[order], ok[order]
    counts, bad = _per_file(file_idx, ok, n_files)
    if malformed:  # the XSLT text was malformed (cannot happen): re-read those files
        bad[slow] = True
    for i in np.flatnonzero(bad).tolist():  # the reference reader needs a tree
        if roots[i] is None:
            roots[i] = _parse_xml(paths[i])
    return roots, counts, table, name_idx, boxes, difficult, bad


def load_voc_annotations(annotations: PathLike, imageset: Optional[PathLike] = None,
                         classes: Optional[Sequence[str]] = None) -> GroundTruth:
    """Load VOC XML annotations into a :class:`~deteval.tables.GroundTruth` table.

    Parameters
    ----------
    annotations : path
        A folder of ``<image_id>.xml`` files, or a VOC year folder.
    imageset : path or str, optional
        Image-set file, or a split name under ``ImageSets/Main/``. Default: every
        XML file of the folder, in sorted order.
    classes : sequence of str, optional
        Classes to evaluate. Default: every class that occurs in the ground truth.

    Returns
    -------
    GroundTruth
        ``boxes`` in ``"xyxy_pixel"`` format (1-based inclusive pixel corners,
        used as written); ``image_ids`` in image-set order; ``class_names`` sorted.
    """
    xml_dir, set_path = resolve_voc_layout(annotations, imageset)
    if set_path is None:
        image_ids = sorted(p.name[:-4] for p in xml_dir.iterdir()
                           if p.name.endswith(".xml") and p.is_file())
        if not image_ids:
            raise InputError(expected("ANNOTATIONS", "a folder holding <image_id>.xml files",
                                      "no .xml file"), xml_dir)
    else:
        image_ids = read_imageset(set_path)
        if not image_ids:
            raise InputError("Expected at least one image id but got an empty image set",
                             set_path)
        listed = {name for name in os.listdir(xml_dir) if name.endswith(".xml")}
        missing = [i for i in image_ids if f"{i}.xml" not in listed]  # (a folder named
        # <id>.xml is reported when it is read)
        if missing:
            lineno = next(n for n, line in enumerate(set_path.read_bytes().splitlines(), 1)
                          if line.split() and line.split()[0].decode("utf-8", "replace")
                          == missing[0])
            more = f" ({len(missing)} ids have none)" if len(missing) > 1 else ""
            raise InputError(f"Expected an annotation file for image id {missing[0]!r} but "
                             f"there is no {xml_dir / (missing[0] + '.xml')}{more}", set_path,
                             f"line {lineno}")

    folder = str(xml_dir)
    paths = [f"{folder}{os.sep}{image_id}.xml" for image_id in image_ids]
    roots, counts, table, name_idx, all_boxes, all_difficult, bad = _scanned_objects(paths)
    if bad.any():  # re-read those files object by object (accept them, or say why not)
        bounds = np.concatenate(([0], np.cumsum(counts)))
        parts = []
        for i in range(len(paths)):
            if bad[i]:
                names, boxes, difficult = _read_objects(paths[i], roots[i])
                counts[i] = len(names)
                parts.append((np.arange(len(table), len(table) + len(names), dtype=np.int64),
                              np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
                              np.asarray(difficult, dtype=bool)))
                table.extend(names)
            else:
                a, b = bounds[i], bounds[i + 1]
                parts.append((name_idx[a:b], all_boxes[a:b], all_difficult[a:b]))
        name_idx = np.concatenate([p[0] for p in parts])
        all_boxes = np.concatenate([p[1] for p in parts])
        all_difficult = np.concatenate([p[2] for p in parts])

    # one normalisation and one lookup per name-table entry, not per object
    table = [normalize_class_name(t) for t in table]
    used = np.zeros(len(table), dtype=bool)
    used[name_idx] = True
    present = sorted({table[k] for k in np.flatnonzero(used).tolist()})
    if classes is None:
        class_names = tuple(present)
    else:
        class_names = tuple(sorted(set(classes)))
    lookup = {name: k for k, name in enumerate(class_names)}
    class_of_entry = np.array([lookup.get(n, -1) for n in table], dtype=np.int64)
    class_idx = class_of_entry[name_idx] if len(name_idx) else np.zeros(0, dtype=np.int64)
    image_idx = np.repeat(np.arange(len(image_ids), dtype=np.int64), counts)
    boxes = np.asarray(all_boxes, dtype=np.float64).reshape(-1, 4)
    difficult = np.asarray(all_difficult, dtype=bool)
    keep = class_idx >= 0
    boxes = boxes[keep]
    with np.errstate(over="ignore", invalid="ignore"):  # boxes near 1e308: area inf, no warning
        area = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    return GroundTruth(
        image_idx=image_idx[keep], class_idx=class_idx[keep], boxes=boxes,
        difficult=difficult[keep], crowd=np.zeros(int(keep.sum()), dtype=bool), area=area,
        image_ids=np.array(image_ids, dtype=object), class_names=class_names,
        box_format="xyxy_pixel",
        sources={"annotations": str(xml_dir), "imageset": None if set_path is None else
                 str(set_path), "classes_in_files": present})


def find_detection_files(detections: PathLike, class_names: Sequence[str]
                         ) -> Tuple[Dict[str, Path], List[str]]:
    """Map each class to its ``<anything>_<class>.txt`` file in ``detections``.

    Returns the mapping and the names of ``.txt`` files that belong to no class
    being evaluated.
    """
    folder = Path(detections)
    if not folder.is_dir():
        raise InputError(expected("DETECTIONS", "a folder of per-class result files "
                                  "<anything>_<class>.txt", str(folder)) + " (no such folder)",
                         folder)
    by_length = sorted(class_names, key=len, reverse=True)
    found: Dict[str, Path] = {}
    unused: List[str] = []
    for path in sorted(folder.iterdir()):
        if not path.name.endswith(".txt") or path.is_dir():
            continue  # a non-regular .txt (FIFO, device) is refused when it is read
        stem = path.name[:-4]
        cls = next((c for c in by_length if stem.endswith("_" + c) or stem == c), None)
        if cls is None:
            unused.append(path.name)
            continue
        if cls in found:
            raise InputError(f"Expected one result file per class but class {cls!r} has two: "
                             f"{found[cls].name} and {path.name}", folder)
        found[cls] = path
    return found, unused



def _parse_detection_file(path: Path):
    """Columns of one ``<image_id> <score> <x1> <y1> <x2> <y2>`` file, in line order.

    Returns ``(image_ids, values, line_numbers)`` where ``image_ids`` is a list of
    str, ``values`` float64 (N, 5): score, x1, y1, x2, y2.
    """
    raw_ids, values, line_numbers = _detection_columns(_read_text_bytes(path), path)
    return [i.decode("utf-8", "replace") for i in raw_ids.tolist()], values, line_numbers


def _detection_columns(data: bytes, path: Path, use_c: bool = True):
    """``_parse_detection_file`` of the file's bytes, with the image ids as raw bytes
    (a numpy ``S`` array). The C scanner is used when built; on anything it does not
    accept (or a value check fails) the Python parser reruns on the same bytes, so
    results and error messages are those of the Python parser. A leading UTF-8
    byte-order mark is skipped.
    """
    data = _strip_bom(data)
    if use_c and _textscan is not None:
        found = _scan_detections_c(data)
        if found is not None:
            return found
    return _parse_detection_bytes(data, path)


def _scan_detections_c(data: bytes):
    """C-scanned columns, or None if the Python parser must decide (an error)."""
    scan = _native.scan_detections(data)
    if scan.error is not None:
        return None
    values = scan.values
    if not np.isfinite(values).all() or \
            ((values[:, 3] < values[:, 1]) | (values[:, 4] < values[:, 2])).any():
        return None
    return _gather_ids(data, scan.id_start, scan.id_len), values, scan.line


def _id_table(image_ids):
    """The C scanner's table of the UTF-8 encoded image ids (None without it)."""
    if _textscan is None:
        return None
    make = _native.id_table
    keys = []
    for image_id in image_ids:
        try:  # an id that cannot be a token's exact bytes gets a key no token equals
            keys.append(image_id.encode("utf-8") if isinstance(image_id, str) else b"")
        except UnicodeEncodeError:
            keys.append(b"")
    return make(keys)


# bit masks keeping the first k bytes of a little-endian 8-byte word, k = 0..8
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype="<u8")


def _id_array_too_wide(n: int, width: int, total: int) -> bool:
    """True if a fixed-width array of ``n`` ids would be mostly padding (a few very
    long ids): such ids are kept as an object array of bytes instead."""
    return n * width > 2 * total + (1 << 24)


def _id_array(ids: List[bytes]) -> np.ndarray:
    """Raw id tokens as a fixed-width ``S`` array (or object array, see above)."""
    if not ids:
        return np.zeros(0, dtype="S8")
    width = max(map(len, ids))
    if _id_array_too_wide(len(ids), width, sum(map(len, ids))):
        return np.array(ids, dtype=object)
    return np.array(ids, dtype=f"S{width}")


def _gather_ids(data: bytes, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The tokens ``data[start:start + length]`` as a fixed-width ``S`` array (width a
    multiple of 8, NUL-padded), gathered as 8-byte little-endian words."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype="S8")
    nwords = (int(length.max()) + 7) // 8
    if _id_array_too_wide(n, 8 * nwords, int(length.sum())):
        return np.array([data[s:s + k] for s, k in zip(start.tolist(), length.tolist())],
                        dtype=object)
    padded = data + bytes(8 * nwords)  # every word read below lies inside
    windows = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    words = np.empty((n, nwords), dtype="<u8")
    for w in range(nwords):
        words[:, w] = windows[start + 8 * w] & _LOW_BYTES[np.clip(length - 8 * w, 0, 8)]
    return words.view(f"S{8 * nwords}").reshape(n)


def _parse_detection_bytes(data: bytes, path: Path):
    """The pure-Python parser (reference for the C scanner and its error messages)."""
    lines = data.splitlines()
    tokens = data.split()
    fields = [len(line.split()) for line in lines]
    if len(tokens) != 6 * sum(1 for f in fields if f) or any(f not in (0, 6) for f in fields):
        bad = next(i for i, f in enumerate(fields) if f not in (0, 6))
        raise InputError(f"Expected 6 fields `<image_id> <score> <xmin> <ymin> <xmax> <ymax>` "
                         f"but got {fields[bad]}: {lines[bad][:80].decode('utf-8', 'replace')!r}",
                         path, f"line {bad + 1}")
    line_numbers = np.flatnonzero(np.array(fields, dtype=np.int64)) + 1
    ids = _id_array(tokens[0::6])
    try:
        values = np.array([tokens[1::6], tokens[2::6], tokens[3::6], tokens[4::6],
                           tokens[5::6]], dtype=np.float64).T.reshape(-1, 5)
    except ValueError:
        names = ("score", "xmin", "ymin", "xmax", "ymax")
        for row, lineno in enumerate(line_numbers):
            for col in range(5):
                tok = tokens[6 * row + 1 + col]
                try:
                    float(tok)
                except ValueError:
                    raise InputError(expected(names[col], "a number", tok), path,
                                     f"line {lineno}") from None
        raise
    finite = np.isfinite(values)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        names = ("score", "xmin", "ymin", "xmax", "ymax")
        raise InputError(expected(names[col], "a finite number", tokens[6 * row + 1 + col]),
                         path, f"line {line_numbers[row]}")
    bad = (values[:, 3] < values[:, 1]) | (values[:, 4] < values[:, 2])
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"Expected xmin <= xmax and ymin <= ymax but got "
                         f"{tuple(float(v) for v in values[row, 1:])}", path,
                         f"line {line_numbers[row]}")
    return ids, values, line_numbers


class _ImageIndex:
    """Positions of image ids in ``image_ids``, looked up by raw UTF-8 bytes.

    Same answers as the dict ``{image_id: i for i, image_id in enumerate(image_ids)}``
    applied to ``raw.decode("utf-8", "replace")`` (a repeated id maps to its last
    position): a vectorised ``searchsorted`` over the sorted encoded ids (as uint64
    words when they all fit in 8 bytes), and the dict only for ids the bytes
    comparison does not find (so invalid UTF-8 decodes as before).
    """

    def __init__(self, image_ids):
        self.image_ids = image_ids
        self._dict = None
        keys, where = [], []
        for i, image_id in enumerate(image_ids):
            if isinstance(image_id, str):
                try:
                    key = image_id.encode("utf-8")
                except UnicodeEncodeError:
                    continue
                if key and b"\0" not in key:  # S arrays drop trailing NULs
                    keys.append(key)
                    where.append(i)
        keys_arr = np.array(keys, dtype="S") if keys else np.zeros(0, dtype="S8")
        self.narrow = keys_arr.dtype.itemsize <= 8
        if self.narrow:
            keys_arr = keys_arr.astype("S8").view("<u8")
        order = np.argsort(keys_arr, kind="stable")  # equal keys keep position order
        self.keys = keys_arr[order]
        self.where = np.array(where, dtype=np.int64)[order]

    def __call__(self, raw_ids: np.ndarray) -> np.ndarray:
        """int64 positions of ``raw_ids`` (an ``S`` array, or an object array of bytes);
        -1 marks the first unknown id (rows after it may be left at -1 too: the caller
        reports the first one)."""
        img = np.full(len(raw_ids), -1, dtype=np.int64)
        if len(self.keys) and len(raw_ids) and raw_ids.dtype.kind == "S":
            probe, usable = raw_ids, None
            if self.narrow:
                width = raw_ids.dtype.itemsize
                if width <= 8:
                    probe = raw_ids.astype("S8", copy=False).view("<u8")
                else:  # ids longer than 8 bytes match no key
                    chars = raw_ids.view(np.uint8).reshape(-1, width)
                    usable = ~chars[:, 8:].any(axis=1)
                    probe = np.ascontiguousarray(chars[:, :8]).view("<u8").reshape(-1)
            j = np.searchsorted(self.keys, probe, side="right") - 1
            np.maximum(j, 0, out=j)
            hit = self.keys[j] == probe
            if usable is not None:
                hit &= usable
            img[hit] = self.where[j[hit]]
        miss = np.flatnonzero(img < 0)
        if len(miss):
            if self._dict is None:
                self._dict = {image_id: i for i, image_id in enumerate(self.image_ids)}
            for row in miss.tolist():
                img[row] = self._dict.get(bytes(raw_ids[row]).decode("utf-8", "replace"), -1)
                if img[row] < 0:
                    break
        return img


def load_voc_detections(detections: PathLike, gt: GroundTruth) -> Detections:
    """Load the per-class detection files of ``gt.class_names`` from a folder.

    A class with no file has no detections (its AP is 0 when it has ground truth);
    ``sources["missing_files"]`` lists such classes. A detection for an image that
    is not in ``gt.image_ids`` is an error naming the file and line.
    """
    files, unused = find_detection_files(detections, gt.class_names)
    present = [(k, files[cls]) for k, cls in enumerate(gt.class_names) if cls in files]
    check_regular_files([p for _, p in present], "detection file")
    table = _id_table(gt.image_ids)
    fast = None
    if table is not None and _textscan is not None:  # one C pass reads and scans every file
        fast = _native.scan_detection_files([p for _, p in present], table)
    if fast is not None and not fast.status.any():  # every file read by the C pass
        scores, boxes, image_idx = fast.scores, fast.boxes, fast.image_idx
        class_idx = np.repeat(np.array([k for k, _ in present], dtype=np.int64), fast.counts)
    else:
        scores, boxes, image_idx, class_idx = _detection_parts(present, fast, gt)
    return Detections(
        image_idx=image_idx, class_idx=class_idx, boxes=boxes, scores=scores,
        order=np.arange(len(scores), dtype=np.int64),
        sources={"detections": str(detections),
                 "files": {c: str(p) for c, p in files.items()},
                 "missing_files": [c for c in gt.class_names if c not in files],
                 "unused_files": unused})


def _detection_parts(present, fast, gt: GroundTruth):
    """``(scores, boxes, image_idx, class_idx)`` of the files ``present`` (class
    position, path), in order: rows of the C pass where it read the file, else the
    reference path (which raises on the first problem, in file order)."""
    lookup = None
    bounds = None if fast is None else np.concatenate(([0], np.cumsum(fast.counts)))
    parts_img, parts_cls, parts_val = [], [], []
    for j, (k, path) in enumerate(present):
        if fast is not None and not fast.status[j]:
            a, b = bounds[j], bounds[j + 1]
            img = fast.image_idx[a:b]
            values = np.column_stack((fast.scores[a:b], fast.boxes[a:b]))
        else:  # the reference path: any error, an unknown or non-UTF-8 id
            ids, values, line_numbers = _detection_columns(_read_text_bytes(path), path)
            if lookup is None:
                lookup = _ImageIndex(gt.image_ids)
            img = lookup(ids)
            if (img < 0).any():
                row = int(np.flatnonzero(img < 0)[0])
                raise InputError(f"Expected image ids of the image set but got "
                                 f"{quote(bytes(ids[row]))}, which is not in it", path,
                                 f"line {line_numbers[row]}")
        parts_img.append(img)
        parts_cls.append(np.full(len(img), k, dtype=np.int64))
        parts_val.append(values.reshape(-1, 5))
    if not parts_val:
        return (np.zeros(0), np.zeros((0, 4)), np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64))
    values = np.concatenate(parts_val)
    return (np.ascontiguousarray(values[:, 0]), np.ascontiguousarray(values[:, 1:]),
            np.concatenate(parts_img), np.concatenate(parts_cls))
