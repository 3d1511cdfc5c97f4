from pathlib import Path

import pytest

# Real cases with expected values from the official tools, with their provenance and
# licences (tests/data/reference/*/SOURCE.md); part of the repository and the sdist.
REFERENCE_DIR = Path(__file__).resolve().parent / "data" / "reference"


@pytest.fixture(scope="session")
def reference_dir():
    assert REFERENCE_DIR.is_dir(), f"test data missing: {REFERENCE_DIR}"
    return REFERENCE_DIR


def _fmt(v):
    """Numbers as text: ints as ints, floats with repr (round-trips exactly), str verbatim."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        raise TypeError("bool is not a coordinate/score")
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


def write_voc_case(root, gt, dets, *, images=None, empty_det_classes=(),
                   prefix="comp4_det_test_", sep=" "):
    """Write a VOC case in devkit layout under ``root``.

    gt:   list of (image_id, class, x1, y1, x2, y2, difficult); difficult True/False writes
          <difficult>1/0</difficult>, None omits the tag, a str is written verbatim.
    dets: list of (image_id, class, score, x1, y1, x2, y2); one file ``<prefix><class>.txt``
          per class, lines in list order.
    images: image ids to write an XML for (default: every image id in gt and dets, sorted).
    empty_det_classes: classes that get an empty detection file.
    Returns (annotations_dir, detections_dir).
    """
    root = Path(root)
    ann = root / "Annotations"
    res = root / "results"
    ann.mkdir(parents=True, exist_ok=True)
    res.mkdir(parents=True, exist_ok=True)
    if images is None:
        images = sorted({g[0] for g in gt} | {d[0] for d in dets})
    objs = {img: [] for img in images}
    for g in gt:
        objs.setdefault(g[0], []).append(g)
    for img, items in objs.items():
        parts = ["<annotation>\n", f"\t<filename>{img}.jpg</filename>\n"]
        for (_img, cls, x1, y1, x2, y2, diff) in items:
            parts.append(f"\t<object>\n\t\t<name>{cls}</name>\n")
            if diff is not None:
                text = diff if isinstance(diff, str) else ("1" if diff else "0")
                parts.append(f"\t\t<difficult>{text}</difficult>\n")
            parts.append(
                "\t\t<bndbox>\n"
                f"\t\t\t<xmin>{_fmt(x1)}</xmin>\n\t\t\t<ymin>{_fmt(y1)}</ymin>\n"
                f"\t\t\t<xmax>{_fmt(x2)}</xmax>\n\t\t\t<ymax>{_fmt(y2)}</ymax>\n"
                "\t\t</bndbox>\n\t</object>\n")
        parts.append("</annotation>\n")
        (ann / f"{img}.xml").write_text("".join(parts))
    lines = {c: [] for c in empty_det_classes}
    for (img, cls, score, x1, y1, x2, y2) in dets:
        lines.setdefault(cls, []).append(
            sep.join([img, _fmt(score), _fmt(x1), _fmt(y1), _fmt(x2), _fmt(y2)]) + "\n")
    for cls, ls in lines.items():
        (res / f"{prefix}{cls}.txt").write_text("".join(ls))
    return ann, res


@pytest.fixture(scope="session")
def voc_case_writer():
    """The ``write_voc_case(root, gt, dets, ...)`` helper (session-scoped, so module-scoped
    fixtures can use it too)."""
    return write_voc_case
