"""The C file readers of deteval._textscan against the reference paths.

* ``scan_voc_files(paths)`` (read + scan VOC annotation files into columns) against
  ``scan_voc_annotations([bytes])`` + ``voc._parse_object_lines`` on the same bytes, and
  ``load_voc_annotations`` with and without the extension.
* ``id_table(keys)`` + ``scan_detections(data, table)`` (image ids looked up in C) against
  a dict, and ``load_voc_detections`` with and without the extension (which uses
  ``scan_detection_files`` and the table).

    pytest -m slow tests/test_scan_files.py    # the larger mutation sweep
"""
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

import deteval.io.voc as voc
from deteval.errors import InputError
from deteval.tables import GroundTruth
try:
    from mutation import OBJ, XML_ALPHABET, XML_SNIPPETS, doc, mutate
except ImportError:  # tests/ imported as a package
    from tests.mutation import OBJ, XML_ALPHABET, XML_SNIPPETS, doc, mutate

textscan = voc._textscan
pytestmark = pytest.mark.skipif(getattr(textscan, "scan_voc_files", None) is None,
                                reason="deteval._textscan.scan_voc_files not built")

REPO = Path(__file__).resolve().parents[1]
FIXTURE_XML = REPO / "fixtures" / "voc" / "VOC2007" / "Annotations"
XS_MAXFILE = 1 << 20


# ------------------------------------------------------------------ scan_voc_files


def c_files(paths):
    """scan_voc_files as numpy columns."""
    fallback, counts, names, name_idx, boxes, difficult, ok = textscan.scan_voc_files(paths)
    n_obj = len(ok)
    out = dict(fallback=np.frombuffer(fallback, dtype=np.uint8),
               counts=np.frombuffer(counts, dtype=np.int64), names=names,
               name_idx=np.frombuffer(name_idx, dtype=np.int64),
               boxes=np.frombuffer(boxes, dtype=np.float64).reshape(-1, 4),
               difficult=np.frombuffer(difficult, dtype=np.uint8),
               ok=np.frombuffer(ok, dtype=np.uint8))
    assert len(out["fallback"]) == len(out["counts"]) == len(paths)
    assert out["name_idx"].shape == (n_obj,) and out["boxes"].shape == (n_obj, 4)
    assert out["difficult"].shape == (n_obj,)
    assert set(out["fallback"].tolist()) <= {0, 1} and set(out["ok"].tolist()) <= {0, 1}
    assert set(out["difficult"].tolist()) <= {0, 1}
    assert isinstance(names, list) and all(isinstance(s, str) for s in names)
    return out


def text_scan(datas):
    """The text scanner + the Python parser of its lines (the reference)."""
    out, fallback = textscan.scan_voc_annotations(datas)
    file_idx, names, boxes, difficult, ok, all_bad = voc._parse_object_lines(
        out.decode("utf-8"), np.arange(len(datas), dtype=np.int64))
    assert not all_bad
    return dict(fallback=np.frombuffer(fallback, dtype=np.uint8), file_idx=file_idx,
                names=names, boxes=boxes, difficult=difficult, ok=ok)


def compare(paths, datas):
    """scan_voc_files(paths) agrees with the text scanner on the files' bytes ``datas``.
    Returns (objects, objects the C checks accept)."""
    c = c_files(paths)
    t = text_scan(datas)
    assert c["fallback"].tolist() == t["fallback"].tolist()
    n = len(paths)
    counts = np.bincount(t["file_idx"], minlength=n)
    assert c["counts"].tolist() == counts.tolist()
    assert (c["counts"][c["fallback"] == 1] == 0).all()
    assert int(c["counts"].sum()) == len(c["ok"]) == len(t["names"])
    ok = c["ok"].astype(bool)
    # a name index exactly where the object passes the fast checks, inside the table
    assert ((c["name_idx"] == -1) == ~ok).all()
    assert (c["name_idx"][ok] < len(c["names"])).all()
    assert len(set(c["names"])) == len(c["names"])  # distinct names
    assert c["difficult"].astype(bool).tolist() == t["difficult"].tolist()
    # the C checks are the reference's checks plus the exact fast number path: every object
    # they accept is accepted by the reference, with the same name and the same doubles
    assert not (ok & ~t["ok"]).any()
    got_names = [c["names"][k] for k in c["name_idx"][ok].tolist()]
    want_names = [nm for nm, keep in zip(t["names"], ok.tolist()) if keep]
    assert got_names == want_names
    assert c["boxes"][ok].tobytes() == np.ascontiguousarray(t["boxes"][ok]).tobytes()
    return len(ok), int(ok.sum())


def write_corpus(folder: Path, datas, prefix="f"):
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, d in enumerate(datas):
        p = folder / f"{prefix}{i:05d}.xml"
        p.write_bytes(d)
        paths.append(str(p))
    return paths


def fixture_datas():
    files = sorted(FIXTURE_XML.glob("*.xml"))
    assert files
    return files, [p.read_bytes() for p in files]


def test_fixture_files():
    files, datas = fixture_datas()
    for paths in ([str(p) for p in files], files, [os.fsencode(p) for p in files]):
        n_obj, n_ok = compare(paths, datas)
        assert n_obj > 40 and n_ok == n_obj  # every fixture object takes the fast path
    c = c_files([str(p) for p in files])
    assert not c["fallback"].any()
    assert set(c["names"]) >= {"person", "car", "dog", "cat"}
    assert c["difficult"].any()


def obj(name=b"dog", coords=(b"48", b"240", b"195", b"371"), difficult=b"0"):
    d = b"" if difficult is None else b"<difficult>" + difficult + b"</difficult>"
    return (b"<object><name>" + name + b"</name>" + d + b"<bndbox><xmin>" + coords[0] +
            b"</xmin><ymin>" + coords[1] + b"</ymin><xmax>" + coords[2] + b"</xmax><ymax>" +
            coords[3] + b"</ymax></bndbox></object>")


# coordinates: exact fast path, or a form the fast checks leave to the reference reader
COORDS = [b"48", b" 48.0 ", b"\n\t48\r\n", b"-0", b"0", b"+5", b".5", b"5.", b"1e2", b"1E+02",
          b"0.000001", b"123456.789", b"9007199254740992", b"9007199254740993", b"1e22",
          b"1e23", b"1e-22", b"1e-23", b"0e999999", b"1e400", b"-1e400", b"1_0", b"nan",
          b"inf", b"-Infinity", b"0x10", b"4 8", b"", b"1.5e", b"--1", b"12345678901234567890",
          b"0.1000000000000000055511151231257827", b"2.2250738585072014e-308"]
NAMES = [b"dog", b"cat", b" dining\n\ttable ", b"", b"   ", b"a b", b"person", b"Dog"]
DIFFICULT = [b"0", b"1", b" 1 ", b"\n1\n", b"01", b"1 1", b"", b"true", None]


def variant_docs(rng: random.Random, n: int):
    """Documents inside the subset whose objects the fast checks accept or reject."""
    out = []
    for _ in range(n):
        objs = []
        for _ in range(rng.randint(0, 4)):
            x1, y1 = rng.randint(0, 300), rng.randint(0, 300)
            coords = [rng.choice(COORDS) if rng.random() < 0.12 else str(v).encode()
                      for v in (x1, y1, x1 + rng.randint(0, 200), y1 + rng.randint(0, 200))]
            o = obj(rng.choice(NAMES), tuple(coords), rng.choice(DIFFICULT))
            r = rng.random()
            if r < 0.05:
                o = o.replace(b"</name>", b"</name><name>cat</name>")  # two names
            elif r < 0.1:
                o = o.replace(b"</bndbox>", b"</bndbox><bndbox><xmin>1</xmin></bndbox>")
            elif r < 0.15:
                o = o.replace(b"<name>", b"<nam>").replace(b"</name>", b"</nam>")  # no name
            elif r < 0.2:
                o = o.replace(b"<difficult>", b"<difficult>1</difficult><difficult>")
            objs.append(o)
        out.append(doc(b"".join(objs)))
    return out


def test_variants_and_numbers(tmp_path):
    rng = random.Random(5)
    datas = variant_docs(rng, 400)
    paths = write_corpus(tmp_path, datas)
    n_obj, n_ok = compare(paths, datas)
    assert n_ok > 100 and n_obj - n_ok > 100  # both outcomes occur


def test_hand_checked_objects(tmp_path):
    cases = [
        (obj(), True, "dog", [48, 240, 195, 371], False),
        (obj(name=b"\n  dining \t table\r\n", coords=(b" 1.5 ", b"2", b"3.25", b"4"),
             difficult=b" 1 "), True, "dining table", [1.5, 2, 3.25, 4], True),
        (obj(difficult=None), True, "dog", [48, 240, 195, 371], False),
        (obj(difficult=b"01"), True, "dog", [48, 240, 195, 371], False),
        (obj(coords=(b"48", b"240", b"47", b"371")), False, None, None, False),  # xmax < xmin
        (obj(coords=(b"1e400", b"0", b"1", b"1")), False, None, None, False),  # not finite
        (obj(coords=(b"1_0", b"0", b"11", b"1")), False, None, None, False),  # underscore
        (obj(coords=(b"1e23", b"0", b"2e23", b"1")), False, None, None, False),  # slow path
        (obj(name=b"  "), False, None, None, False),  # empty after normalize-space
        (obj().replace(b"</name>", b"</name><name>cat</name>"), False, None, None, False),
        (doc(OBJ.replace(b"<bndbox>", b"<bndbox/><bndbox>")), False, None, None, False),
    ]
    datas = [c[0] if c[0].startswith(b"<annotation>") else doc(c[0]) for c in cases]
    paths = write_corpus(tmp_path, datas)
    compare(paths, datas)
    c = c_files(paths)
    assert not c["fallback"].any() and c["counts"].tolist() == [1] * len(cases)
    for k, (_, ok, name, box, diff) in enumerate(cases):
        assert bool(c["ok"][k]) is ok, k
        assert bool(c["difficult"][k]) is diff, k
        if ok:
            assert c["names"][c["name_idx"][k]] == name
            assert c["boxes"][k].tolist() == box
        else:
            assert c["name_idx"][k] == -1


def test_many_objects_and_names(tmp_path):
    """Thousands of objects and distinct names (long ones too): the columns, the name
    arena and its hash grow many times; a later fallback file drops only its own rows."""
    rng = random.Random(11)
    chars = "abcdefghijklmnopqrstuvwxyz0123456789_-.!?()"
    datas = []
    for f in range(60):
        objs = []
        for _ in range(rng.choice([0, 1, 50, 200])):
            name = "".join(rng.choice(chars) for _ in range(rng.choice([1, 3, 10, 300])))
            r = rng.random()
            if r < 0.3:
                name = rng.choice(["dog", "cat", " dog ", "dog\n"])
            elif r < 0.6:  # names that are prefixes of other names
                name = "n%d" % rng.randrange(3000)
                name = name[:rng.randint(1, len(name))]
            x, y = rng.randint(0, 999), rng.randint(0, 999)
            objs.append(obj(name.encode(), tuple(str(v).encode() for v in
                                                 (x, y, x + rng.randint(0, 99), y + 5)),
                            rng.choice([b"0", b"1"])))
        d = doc(b"".join(objs))
        if f % 7 == 3:
            d += b"<!-- falls back after all its objects were scanned -->"
        datas.append(d)
    paths = write_corpus(tmp_path, datas)
    n_obj, n_ok = compare(paths, datas)
    c = c_files(paths)
    assert n_obj == n_ok > 3000 and len(set(c["names"][k] for k in c["name_idx"])) > 1200
    assert c["fallback"].tolist() == [int(f % 7 == 3) for f in range(60)]
    assert c["names"].count("dog") == 1


ALPHABET = XML_ALPHABET + b"eE+"
SNIPPETS = XML_SNIPPETS + [b"e400", b"_", b".", b"e-5", b"99999999999999999"]


def fuzz(tmp_path, seed, n):
    rng = random.Random(seed)
    _, base = fixture_datas()
    base = base + variant_docs(rng, 40) + [doc(), b"<annotation/>",
                                           doc(head=b'<?xml version="1.0"?>\n')]
    datas = [mutate(rng.choice(base), rng, ALPHABET, SNIPPETS) for _ in range(n)]
    paths = write_corpus(tmp_path, datas)
    n_obj, n_ok = compare(paths, datas)
    # one call per chunk too: the name table and the counts do not depend on batching
    for start in range(0, n, 97):
        compare(paths[start:start + 97], datas[start:start + 97])
    fb = c_files(paths)["fallback"]
    return int((fb == 0).sum()), n_obj, n_ok


def test_mutation_fuzz(tmp_path):
    scanned, n_obj, n_ok = fuzz(tmp_path, 20250101, 3000)
    assert scanned > 250 and n_ok > 500 and n_obj > n_ok


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_mutation_fuzz_sweep(tmp_path, seed):
    fuzz(tmp_path, 7000 + seed, 8000)


# ---------------------------------------------------------------------- fallbacks


def test_fallback_files(tmp_path):
    good = doc(OBJ + OBJ.replace(b"dog", b"cat"))
    (tmp_path / "good.xml").write_bytes(good)
    (tmp_path / "folder.xml").mkdir()
    big_inside = doc(OBJ + b" " * XS_MAXFILE)  # in the subset but for its size
    assert len(big_inside) > XS_MAXFILE
    (tmp_path / "big.xml").write_bytes(big_inside)
    at_limit = doc(OBJ + b" " * (XS_MAXFILE - len(doc(OBJ))))
    assert len(at_limit) == XS_MAXFILE
    (tmp_path / "limit.xml").write_bytes(at_limit)
    (tmp_path / "comment.xml").write_bytes(doc(OBJ + b"<!-- c -->"))
    (tmp_path / "latin.xml").write_bytes(doc(OBJ.replace(b"dog", b"d\xc3\xb6g")))
    (tmp_path / "empty.xml").write_bytes(b"")
    names = ["good", "missing", "folder", "big", "limit", "comment", "latin", "empty", "good"]
    paths = [str(tmp_path / f"{n}.xml") for n in names]
    c = c_files(paths)
    assert c["fallback"].tolist() == [0, 1, 1, 1, 0, 1, 1, 1, 0]
    assert c["counts"].tolist() == [2, 0, 0, 0, 1, 0, 0, 0, 2]
    assert c["ok"].tolist() == [1] * 5
    assert [c["names"][k] for k in c["name_idx"]] == ["dog", "cat", "dog", "dog", "cat"]
    # the readable ones agree with the text scanner (which sees the same size limit)
    readable = [i for i, n in enumerate(names) if n not in ("missing", "folder")]
    compare([paths[i] for i in readable], [Path(paths[i]).read_bytes() for i in readable])
    assert textscan.scan_voc_files([]) == (b"", b"", [], b"", b"", b"", b"")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root can read a chmod 000 file")
def test_fallback_unreadable_file(tmp_path):
    p = tmp_path / "locked.xml"
    p.write_bytes(doc())
    p.chmod(0)
    try:
        c = c_files([str(p), str(p)])
        assert c["fallback"].tolist() == [1, 1] and c["counts"].tolist() == [0, 0]
    finally:
        p.chmod(0o644)
    assert c_files([str(p)])["fallback"].tolist() == [0]


def test_fallback_bad_paths():
    with pytest.raises(TypeError):
        textscan.scan_voc_files([1])
    with pytest.raises(ValueError):
        textscan.scan_voc_files(["a\0b.xml"])
    with pytest.raises(TypeError):
        textscan.scan_voc_files(5)
    c = c_files([os.devnull])  # a character device: not a regular file
    assert c["fallback"].tolist() == [1]


# ------------------------------------------------------------ load_voc_annotations


def same_gt(a: GroundTruth, b: GroundTruth):
    for f in ("image_idx", "class_idx", "boxes", "difficult", "crowd", "area", "image_ids"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape, f
        if x.dtype == object:
            assert x.tolist() == y.tolist(), f
        else:
            assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes(), f
    assert a.class_names == b.class_names
    assert a.sources == b.sources
    assert a.box_format == b.box_format and (a.class_ids is None) == (b.class_ids is None)


def load_both(monkeypatch, *args, **kwargs):
    on = voc.load_voc_annotations(*args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(voc, "_textscan", None)
        off = voc.load_voc_annotations(*args, **kwargs)
    return on, off


def error_both(monkeypatch, *args, **kwargs):
    with pytest.raises(InputError) as on:
        voc.load_voc_annotations(*args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(voc, "_textscan", None)
        with pytest.raises(InputError) as off:
            voc.load_voc_annotations(*args, **kwargs)
    assert str(on.value) == str(off.value)
    return str(on.value)


MIXED = {
    "a": doc(OBJ + OBJ.replace(b"dog", b"cat")),  # fast
    "b": doc(OBJ.replace(b"dog", b"d\xc3\xb6g"), head=b'<?xml version="1.0"?>\n'),  # lxml
    "c": doc(obj(coords=(b"48.0 ", b"\n240\n", b"195", b"371"), difficult=None)),  # fast
    "d": doc(OBJ + b"<!-- x -->"),  # lxml
    "e": b"<annotation/>",  # fast, no objects
    "f": doc(obj(difficult=b"1") * 2),
    "g": doc(obj(coords=(b"9007199254740993", b"1e23", b"1e30", b"1e31"))),  # re-read
    "h": doc(obj().replace(b"</name>", b"</name><name>cat</name>")),  # two names: re-read
    "i": doc(obj(name=b"\n dining\ttable \n", difficult=b" 1 ") +
             obj(coords=(b"0.1", b"0.2", b"0.30000000000000004", b"0.3"))),
    "j": doc(OBJ + b" " * XS_MAXFILE),  # too large for the C reader: lxml
    "k": doc(OBJ.replace(b"</bndbox>", b"</bndbox><bndbox/>")),  # two bndbox: re-read
    "l": doc(obj(name=b"horse", coords=(b"+1", b".5", b"2.", b"1E1")) +
             obj(name=b"cat", difficult=b"")),
}


def write_dataset(root: Path, docs: dict, order):
    xml = root / "Annotations"
    xml.mkdir(parents=True, exist_ok=True)
    for k, v in docs.items():
        (xml / f"{k}.xml").write_bytes(v)
    sets = root / "ImageSets" / "Main"
    sets.mkdir(parents=True, exist_ok=True)
    (sets / "test.txt").write_text("".join(f"{k}\n" for k in order))
    return xml


def test_load_voc_annotations_same_with_and_without_extension(tmp_path, monkeypatch):
    order = ["f", "b", "l", "e", "a", "k", "d", "c", "g", "j", "h", "i"]
    xml = write_dataset(tmp_path, MIXED, order)
    c = c_files([str(xml / f"{k}.xml") for k in order])
    assert c["fallback"].tolist() == [0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]
    assert not c["ok"].all()  # some objects are left to the reference reader
    on, off = load_both(monkeypatch, tmp_path, "test")
    same_gt(on, off)
    assert on.image_ids.tolist() == order
    assert len(on) == 15
    assert "dining table" in on.class_names and "d\xf6g" in on.class_names
    # without an image set (every XML, sorted), and with explicit classes
    on, off = load_both(monkeypatch, xml)
    same_gt(on, off)
    on, off = load_both(monkeypatch, tmp_path, "test", classes=["dog", "cat", "zebra"])
    same_gt(on, off)
    assert on.class_names == ("cat", "dog", "zebra")


def test_load_voc_annotations_fixtures_same(monkeypatch):
    on, off = load_both(monkeypatch, REPO / "fixtures" / "voc" / "VOC2007", "test")
    same_gt(on, off)
    assert len(on) > 40


@pytest.mark.parametrize("seed", range(3))
def test_load_voc_annotations_random_datasets(tmp_path, monkeypatch, seed):
    """Random datasets of valid documents (the fast path, lxml and the re-read path)."""
    rng = random.Random(300 + seed)
    docs = {}
    for i in range(60):
        objs = []
        for _ in range(rng.randint(0, 4)):
            x1, y1 = rng.randint(0, 300), rng.randint(0, 300)
            coords = [x1, y1, x1 + rng.randint(0, 99), y1 + rng.randint(0, 99)]
            coords = [str(v).encode() if rng.random() < 0.8 else
                      rng.choice([b"%d.0 " % v, b"\n%d\n" % v, b"%de0" % v,
                                  b"%d.00000000000000000001" % v]) for v in coords]
            objs.append(obj(rng.choice([b"dog", b"cat", b" dining  table", b"person"]),
                            tuple(coords), rng.choice([b"0", b"1", None, b" 1", b""])))
        d = doc(b"".join(objs))
        if rng.random() < 0.2:
            d = d.replace(b"<folder>", b"<!-- lxml --><folder>")
        docs[f"{i:03d}"] = d
    order = list(docs)
    rng.shuffle(order)
    write_dataset(tmp_path, docs, order)
    on, off = load_both(monkeypatch, tmp_path, "test")
    same_gt(on, off)


BROKEN = {
    "1e400": (doc(obj(coords=(b"1e400", b"1", b"2", b"3"))), r"a finite number but got '1e400'"),
    "-inf": (doc(obj(coords=(b"0", b"-inf", b"2", b"3"))), r"`ymin` to be a finite number"),
    "1_0": (doc(obj(coords=(b"0", b"1", b"1_0", b"3"))), r"`xmax` to be a number but got '1_0'"),
    "word": (doc(obj(coords=(b"0", b"1", b"2", b"three"))), r"`ymax` to be a number"),
    "empty coordinate": (doc(obj(coords=(b"", b"1", b"2", b"3"))), r"`xmin` to be a number"),
    "xmax < xmin": (doc(obj(coords=(b"5", b"1", b"2", b"3"))), r"xmin <= xmax"),
    "no bndbox": (doc(b"<object><name>dog</name></object>"), r"Expected a <bndbox>"),
    "no coordinate": (doc(OBJ.replace(b"<xmin>48</xmin>", b"")), r"<xmin> element"),
    "empty first bndbox": (doc(OBJ.replace(b"<bndbox>", b"<bndbox/><bndbox>")),
                           r"<xmin> element"),
    "empty name": (doc(obj(name=b" \n ")), r"non-empty <name>"),
    "syntax": (doc(OBJ) + b"<junk", r"well-formed XML"),
    "mismatched tag": (doc(OBJ.replace(b"</name>", b"</nam>")), r"well-formed XML"),
    "root": (b"<doc/>", r"root element"),
    "doctype": (doc(head=b"<!DOCTYPE annotation>"), r"DTD"),
    "binary": (doc(OBJ.replace(b"dog", b"d\x00g")), r"binary data"),
    "empty": (b"", r"(well-formed|empty)"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_load_voc_annotations_same_error(tmp_path, monkeypatch, name):
    data, pattern = BROKEN[name]
    docs = dict(MIXED, z=data)
    write_dataset(tmp_path, docs, ["a", "b", "j", "z", "c", "g"])
    msg = error_both(monkeypatch, tmp_path, "test")
    assert re.search(pattern, msg), msg
    assert "z.xml" in msg
    with pytest.raises(InputError, match=re.escape(msg)):  # the message of both paths
        voc.load_voc_annotations(tmp_path, "test")


def test_load_voc_annotations_folder_named_xml(tmp_path, monkeypatch):
    write_dataset(tmp_path, MIXED, ["a", "dir", "b"])
    (tmp_path / "Annotations" / "dir.xml").mkdir()
    msg = error_both(monkeypatch, tmp_path, "test")
    assert "dir.xml" in msg and "folder" in msg


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root can read a chmod 000 file")
def test_load_voc_annotations_unreadable_file(tmp_path, monkeypatch):
    xml = write_dataset(tmp_path, MIXED, ["a", "b", "c"])
    (xml / "b.xml").chmod(0)
    try:
        msg = error_both(monkeypatch, tmp_path, "test")
    finally:
        (xml / "b.xml").chmod(0o644)
    assert "b.xml" in msg and "readable" in msg


# -------------------------------------------------------- id_table + scan_detections


def dict_positions(keys, tokens):
    index = {k: i for i, k in enumerate(keys)}  # the last position of a repeated key
    return [index.get(t, -1) for t in tokens]


def scan_with_table(data, keys):
    table = textscan.id_table(keys)
    res = textscan.scan_detections(data, table)
    assert len(res) == 6
    values, id_start, id_len, line, error, image_idx = res
    plain = textscan.scan_detections(data)  # the same scan without a table
    assert (values, id_start, id_len, line, error) == plain
    image_idx = np.frombuffer(image_idx, dtype=np.int64)
    starts = np.frombuffer(id_start, dtype=np.int64).tolist()
    lens = np.frombuffer(id_len, dtype=np.int64).tolist()
    tokens = [bytes(data[s:s + k]) for s, k in zip(starts, lens)]
    assert image_idx.shape == (len(tokens),)
    return tokens, image_idx.tolist(), error


def test_id_table_positions():
    keys = [b"000001", b"000002", b"abcdefgh", b"abcdefghi", b"a-very-long-image-id-0001",
            "中文".encode(), "é".encode(), b"000002", b"", b"x", b"000001", b"X"]
    tokens = [b"000001", b"000002", b"abcdefgh", b"abcdefghi", b"abcdefg", b"abcdefghij",
              b"a-very-long-image-id-0001", b"a-very-long-image-id-0002", "中文".encode(),
              "中".encode(), "é".encode(), "e\u0301".encode(), b"x", b"X", b"y", b"0000010",
              b"\xff", "é".encode() + b"\xff"]
    data = b"\n".join(t + b" 0.5 1 2 3 4" for t in tokens) + b"\n"
    got_tokens, idx, error = scan_with_table(data, keys)
    assert error is None and got_tokens == tokens
    assert idx == dict_positions(keys, tokens)
    assert idx[:4] == [10, 7, 2, 3] and idx[4:6] == [-1, -1] and idx[6:8] == [4, -1]
    assert idx[8] == 5 and idx[10] == 6 and idx[11] == -1 and idx[12:15] == [9, 11, -1]


@pytest.mark.parametrize("seed", range(4))
def test_id_table_random(seed):
    rng = random.Random(seed)
    alphabet = "ab01_-." + "éß中"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 5, 8, 9, 16, 40])))
            .encode() for _ in range(rng.choice([1, 10, 3000]))]
    keys += rng.sample(keys, min(len(keys), 20))  # repeats: the last position wins
    tokens = [rng.choice(keys) if rng.random() < 0.7 else
              "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))).encode()
              for _ in range(5000)]
    sep = rng.choice([b" ", b"\t", b"  "])
    data = b"".join(t + sep + b"0.5 1 2 3 4" + rng.choice([b"\n", b"\r\n", b"\r"])
                    for t in tokens)
    got_tokens, idx, error = scan_with_table(data, keys)
    assert error is None and got_tokens == tokens
    assert idx == dict_positions(keys, tokens)
    assert min(idx) == -1 and max(idx) >= 0
    # the same answers from a bytearray / memoryview (no NUL sentinel) and a tuple of keys
    got2 = scan_with_table(bytearray(data), tuple(keys))[1]
    got3 = scan_with_table(memoryview(data)[:len(data)], keys)[1]
    assert got2 == got3 == idx


def test_id_table_errors_and_lifetime():
    with pytest.raises(TypeError):
        textscan.id_table([b"a", "b"])
    with pytest.raises(TypeError):
        textscan.id_table(5)
    with pytest.raises((TypeError, ValueError)):
        textscan.scan_detections(b"a 1 2 3 4 5\n", "not a table")
    with pytest.raises((TypeError, ValueError)):
        textscan.scan_detections(b"a 1 2 3 4 5\n", object())
    empty = textscan.id_table([])
    assert scan_with_table(b"a 1 2 3 4 5\n", [])[1] == [-1]
    assert textscan.scan_detections(b"", empty)[5] == bytearray()
    # the table keeps its keys alive: build it from temporary bytes
    table = textscan.id_table(("id%05d" % i).encode() for i in range(2000))
    import gc
    gc.collect()
    res = textscan.scan_detections(b"id01999 1 2 3 4 5\nid00000 1 2 3 4 5\nid2 1 2 3 4 5\n",
                                   table)
    assert np.frombuffer(res[5], dtype=np.int64).tolist() == [1999, 0, -1]


def test_id_table_rows_before_an_error():
    keys = [b"a", b"b"]
    for data, rows in ((b"a 1 2 3 4 5\nb 1 2 3 4 5\nc 1 2 3\n", 2),
                       (b"b 1 2 3 4 5\na 1 x 3 4 5\n", 1),
                       (b"b 1 2 3 4 5\na 1_0 2 3 4 5\nb 1 2 3 4 y\n", 2)):
        tokens, idx, error = scan_with_table(data, keys)
        assert error is not None and len(idx) == rows
        assert idx == dict_positions(keys, tokens)


# ------------------------------------------------------------ load_voc_detections


def gt_table(image_ids, class_names):
    return GroundTruth(image_idx=np.zeros(0, dtype=np.int64),
                       class_idx=np.zeros(0, dtype=np.int64), boxes=np.zeros((0, 4)),
                       difficult=np.zeros(0, dtype=bool), crowd=np.zeros(0, dtype=bool),
                       area=np.zeros(0), image_ids=np.array(image_ids, dtype=object),
                       class_names=tuple(class_names))


def same_det(a, b):
    for f in ("image_idx", "class_idx", "boxes", "scores", "order"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape, f
        assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes(), f
    assert a.sources == b.sources


def det_both(monkeypatch, folder, gt):
    on = voc.load_voc_detections(folder, gt)
    with monkeypatch.context() as m:
        m.setattr(voc, "_textscan", None)
        off = voc.load_voc_detections(folder, gt)
    return on, off


def det_error_both(monkeypatch, folder, gt):
    with pytest.raises(InputError) as on:
        voc.load_voc_detections(folder, gt)
    with monkeypatch.context() as m:
        m.setattr(voc, "_textscan", None)
        with pytest.raises(InputError) as off:
            voc.load_voc_detections(folder, gt)
    assert str(on.value) == str(off.value)
    return str(on.value)


IMAGE_IDS = ["000001", "a\ufffd", "中文", "long-image-id-000123", "000002", "x", "000001",
             "\ufffd\ufffd", "é"]


def lines(rows):
    return b"".join(i + b" " + b" ".join(v) + b"\n" for i, *v in rows)


def test_load_voc_detections_same_with_and_without_extension(tmp_path, monkeypatch):
    rng = random.Random(9)
    known = [i.encode() for i in IMAGE_IDS]
    files = {
        # every id a key of the table: the C pass
        "car": [(rng.choice(known), b"%.3f" % rng.random(), b"1", b"2", b"30.5", b"40")
                for _ in range(300)],
        # invalid UTF-8 ids that decode (with 'replace') to image ids: the reference path
        "dog": [(b"a\xff", b"0.5", b"1", b"2", b"3", b"4"),
                (b"000002", b"0.25", b"0", b"0", b"1", b"1"),
                (b"\xff\xfe", b"0.75", b"1", b"1", b"2", b"2"),
                (b"a\xc3", b"0.5", b"1", b"2", b"3", b"4")],
        # numbers the exact fast path declines: the reference path
        "cat": [(b"x", b"1e23", b"9007199254740993", b"0.1", b"1e300", b"1e301"),
                (b"\xc3\xa9", b"-0", b"0", b"0", b"0", b"0")],
        "bird": [],  # empty file
    }
    for cls, rows in files.items():
        (tmp_path / f"comp4_det_test_{cls}.txt").write_bytes(lines(rows))
    (tmp_path / "comp4_det_test_zebra.txt").write_bytes(b"x 1 2 3 4 5\n")  # unused
    gt = gt_table(IMAGE_IDS, ["bird", "car", "cat", "dog", "horse"])
    table = voc._id_table(gt.image_ids)
    paths = [tmp_path / f"comp4_det_test_{c}.txt" for c in ("bird", "car", "cat", "dog")]
    status = textscan.scan_detection_files(paths, table)[0]
    assert list(status) == [0, 0, 1, 1]  # both paths really run
    on, off = det_both(monkeypatch, tmp_path, gt)
    same_det(on, off)
    assert len(on) == 306
    assert on.sources["missing_files"] == ["horse"]
    # the exact semantics: the dict of the ids decoded with 'replace', last position wins
    dog = on.image_idx[on.class_idx == 3].tolist()
    assert dog == [1, 4, 7, 1]
    car_ids = [r[0] for r in files["car"]]
    assert on.image_idx[on.class_idx == 1].tolist() == dict_positions(known, car_ids)
    assert 0 not in on.image_idx.tolist()  # "000001" maps to its last position, 6
    assert on.image_idx[on.class_idx == 2].tolist() == [5, 8]
    assert on.scores[on.class_idx == 2].tolist()[0] == 1e23


@pytest.mark.parametrize("seed", range(3))
def test_load_voc_detections_random(tmp_path, monkeypatch, seed):
    rng = random.Random(40 + seed)
    image_ids = sorted({"".join(rng.choice("ab01é中_") for _ in range(rng.choice([3, 8, 9, 20])))
                        for _ in range(200)})
    image_ids += rng.sample(image_ids, 5)
    classes = ["c0", "c1", "c2", "c3"]
    for cls in classes[:3]:
        rows = []
        for _ in range(rng.randint(0, 800)):
            x1, y1 = rng.uniform(0, 100), rng.uniform(0, 100)
            vals = [rng.random(), x1, y1, x1 + rng.uniform(0, 50), y1 + rng.uniform(0, 50)]
            toks = [repr(v) if rng.random() < 0.9 else "%.20e" % v for v in vals]
            toks[1:] = [t if rng.random() < 0.95 else "%.1f" % float(t) for t in toks[1:]]
            if float(toks[3]) < float(toks[1]):
                toks[3] = toks[1]
            if float(toks[4]) < float(toks[2]):
                toks[4] = toks[2]
            rows.append(rng.choice(image_ids).encode() + b" " + " ".join(toks).encode())
        if rows and rng.random() < 0.5:
            rows[rng.randrange(len(rows))] = b"ab\xff 0.5 1 2 3 4"  # -> "ab\ufffd"
            image_ids.append("ab\ufffd")
        (tmp_path / f"res_{cls}.txt").write_bytes(b"\n".join(rows) + b"\n")
    gt = gt_table(image_ids, classes)
    on, off = det_both(monkeypatch, tmp_path, gt)
    same_det(on, off)


def test_load_voc_detections_same_errors(tmp_path, monkeypatch):
    gt = gt_table(IMAGE_IDS + ["s\udcff"], ["car", "dog"])
    good = lines([(b"x", b"0.5", b"1", b"2", b"3", b"4")])
    car = tmp_path / "comp4_det_test_car.txt"
    dog = tmp_path / "comp4_det_test_dog.txt"
    car.write_bytes(good)
    for bad, pattern in [
        (b"x 0.5 1 2 3 4\nnope 0.5 1 2 3 4\n", r"line 2: Expected image ids .* 'nope'"),
        # an image id that UTF-8 cannot encode: no token matches it on either path
        (b"x 0.5 1 2 3 4\ns\xff 0.5 1 2 3 4\n", "line 2: Expected image ids .* 's\ufffd'"),
        (b"x 0.5 1 2 3 4\n000001 nan 1 2 3 4\n", r"line 2: .*`score` to be a finite number"),
        (b"x 0.5 1 2 3 4\n\n000001 0.5 1 2 0 4\n", r"line 3: Expected xmin <= xmax"),
        (b"x 0.5 1 2 3 4\n000001 0.5 1 2 1e400 4\n", r"finite number"),
        (b"x 0.5 1 2 3\n", r"line 1: Expected 6 fields"),
        (b"x 0.5 1 2 3 4\x00\n", r"binary data"),
        (b"x 0.5 1_0 2 3 4\n", r"line 1:"),
    ]:
        dog.write_bytes(bad)
        msg = det_error_both(monkeypatch, tmp_path, gt)
        assert re.search(pattern, msg), (bad, msg)
        assert "comp4_det_test_dog.txt" in msg
    dog.unlink()
    dog.mkdir()  # a folder named like a result file is not a result file
    on, off = det_both(monkeypatch, tmp_path, gt)
    same_det(on, off)
    assert on.sources["missing_files"] == ["dog"] and on.image_idx.tolist() == [5]
    dog.rmdir()
    # an image set with a non-str id: never matched, on either path
    gt = gt_table(["1", 2], ["car"])
    car.write_bytes(b"1 0.5 1 2 3 4\n2 0.5 1 2 3 4\n")
    msg = det_error_both(monkeypatch, tmp_path, gt)
    assert "line 2" in msg and "'2'" in msg


def number_forms(rng: random.Random) -> str:
    """A finite number token in a form the multi-file pass reads itself (digit runs at
    the 7/8-digit boundaries of its 8-byte path, signs, exponents) or leaves to float()."""
    kind = rng.randrange(10)
    if kind == 0:
        return str(rng.randint(0, 10 ** rng.randint(1, 9)))
    if kind == 1:  # [-]d{1,8}.d{0,8}
        a = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 8)))
        b = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 8)))
        return rng.choice(["", "-"]) + a + "." + b
    if kind == 2:
        return f"{rng.uniform(0, 1000):.{rng.randint(0, 7)}f}"
    if kind == 3:
        return rng.choice(["0", "-0", "0.0", "-0.0", "1234567", "12345678", "1234567.1234567",
                           "1234567.12345678", "-9999999.9999999", "0000001.5", "00000001.5",
                           "1.", "-1.", ".5", "+5", "+0.5", "5e0", "5E-1", "1e22", "1e-7"])
    if kind == 4:
        return f"{rng.uniform(0, 1):.{rng.randint(1, 20)}g}"
    if kind == 5:  # 17 significant digits: float() only
        return repr(rng.uniform(0, 500))
    if kind == 6:
        return f"{rng.randint(1, 99999)}e{rng.randint(-25, 25)}"
    if kind == 7:
        return f"-{rng.uniform(0, 100):.{rng.randint(1, 6)}f}"
    if kind == 8:
        return "%d.%07d" % (rng.randint(0, 9999999), rng.randint(0, 9999999))
    return f"{rng.random():.6f}"


@pytest.mark.parametrize("seed", range(3))
def test_scan_detection_files_numbers_bit_identical(tmp_path, seed):
    """Values of the multi-file pass equal float(token) bit for bit; files it declines are
    left to the reference parser."""
    rng = random.Random(900 + seed)
    keys = [b"img%d" % i for i in range(50)]
    table = textscan.id_table(keys)
    paths, tokens = [], []
    for f in range(120):
        rows = []
        for _ in range(rng.choice([1, 2, 5, 20])):
            vals = [number_forms(rng) for _ in range(5)]
            if float(vals[3]) < float(vals[1]):
                vals[1], vals[3] = vals[3], vals[1]
            if float(vals[4]) < float(vals[2]):
                vals[2], vals[4] = vals[4], vals[2]
            rows.append(vals)
        ids = [rng.randrange(50) for _ in rows]
        text = "\n".join("img%d " % i + " ".join(v) for i, v in zip(ids, rows))
        if rng.random() < 0.5:
            text += "\n"  # else the last number ends the file
        p = tmp_path / f"{f}.txt"
        p.write_text(text)
        paths.append(p)
        tokens.append((ids, rows))
    status, counts, scores, boxes, img = textscan.scan_detection_files(paths, table)
    img = np.frombuffer(img, dtype=np.int64)
    counts = np.frombuffer(counts, dtype=np.int64)
    scores = np.frombuffer(scores, dtype=np.float64)
    boxes = np.frombuffer(boxes, dtype=np.float64).reshape(-1, 4)
    at = 0
    for f, (ids, rows) in enumerate(tokens):
        if status[f]:
            assert counts[f] == 0
            continue
        assert counts[f] == len(rows)
        want = np.array([[float(v) for v in r] for r in rows])
        got = np.column_stack((scores[at:at + len(rows)], boxes[at:at + len(rows)]))
        assert got.tobytes() == want.tobytes(), (f, rows)
        ref_ids, ref_vals, _ = voc._parse_detection_bytes(paths[f].read_bytes(), paths[f])
        assert ref_vals.tobytes() == want.tobytes()
        assert img[at:at + len(rows)].tolist() == ids
        at += len(rows)
    assert at == len(scores) == len(img)
    assert sum(1 for s in status if s == 0) > 20 and sum(1 for s in status if s) > 20


def test_scan_detection_files_status(tmp_path):
    """status 0 exactly when every line scans by the fast path to finite, ordered values
    with known ids; the rows then equal scan_detections with the table."""
    keys = [b"a", b"b", b"long-id-0000000001"]
    table = textscan.id_table(keys)
    cases = {
        "ok": (b"a 0.5 1 2 3 4\r\nb -0 0 0 0 0\n\n long-id-0000000001 1e-5 .5 1. 2e1 3E+1", 0),
        "empty": (b"", 0),
        "blank": (b"\n \n", 0),
        "unknown": (b"a 0.5 1 2 3 4\nc 0.5 1 2 3 4\n", 1),
        "utf8": (b"a 0.5 1 2 3 4\n\xff 0.5 1 2 3 4\n", 1),
        "nan": (b"a nan 1 2 3 4\n", 1),
        "inf": (b"a 0.5 1 2 inf 4\n", 1),
        "order": (b"a 0.5 3 2 1 4\n", 1),
        "slow": (b"a 1e23 1 2 3 4\n", 1),
        "underscore": (b"a 0.5 1_0 2 30 4\n", 1),
        "fields": (b"a 0.5 1 2 3\n", 1),
        "word": (b"a 0.5 1 2 3 x\n", 1),
        "nul": (b"a 0.5 1 2 3 4\x00\n", 1),
    }
    paths = []
    for name, (data, _) in cases.items():
        p = tmp_path / f"{name}.txt"
        p.write_bytes(data)
        paths.append(p)
    (tmp_path / "dir.txt").mkdir()
    paths += [tmp_path / "missing.txt", tmp_path / "dir.txt"]
    status, counts, scores, boxes, img = textscan.scan_detection_files(paths, table)
    want = [s for _, s in cases.values()] + [1, 1]
    assert list(status) == want
    counts = np.frombuffer(counts, dtype=np.int64)
    assert counts.tolist() == [3, 0, 0] + [0] * (len(want) - 3)
    values, _, _, _, error, idx = textscan.scan_detections(cases["ok"][0], table)
    assert error is None
    values = np.frombuffer(values, dtype=np.float64).reshape(-1, 5)
    assert np.frombuffer(scores, dtype=np.float64).tobytes() == \
        np.ascontiguousarray(values[:, 0]).tobytes()
    assert np.frombuffer(boxes, dtype=np.float64).tobytes() == \
        np.ascontiguousarray(values[:, 1:]).tobytes()
    assert np.frombuffer(img, dtype=np.int64).tolist() == \
        np.frombuffer(idx, dtype=np.int64).tolist() == [0, 1, 2]
