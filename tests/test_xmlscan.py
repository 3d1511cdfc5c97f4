"""The C VOC annotation scanner (``_textscan.scan_voc_annotations``) against lxml + XSLT.

For every document: if the scanner does not fall back, lxml must accept it (with the
checks of ``_parse_xml``) and the XSLT ``_OBJECT_LINES`` must write the same bytes; if
lxml rejects it, the scanner must have fallen back. Inputs: the fixture and reference
annotations, hand-written variants, and seeded byte-level and snippet mutations.

    pytest -m slow tests/test_xmlscan.py    # the larger mutation sweep
"""
import random
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

import deteval
import deteval.io.voc as voc
from deteval.errors import InputError
try:
    from mutation import OBJ, XML_ALPHABET, XML_SNIPPETS, doc, mutate
except ImportError:  # tests/ imported as a package
    from tests.mutation import OBJ, XML_ALPHABET, XML_SNIPPETS, doc, mutate

REPO = Path(__file__).resolve().parents[1]
FIXTURE_XML = REPO / "fixtures" / "voc" / "VOC2007" / "Annotations"

scanner = getattr(voc._textscan, "scan_voc_annotations", None)
pytestmark = pytest.mark.skipif(scanner is None, reason="C extension not built")


def _lxml_lines(data: bytes):
    """The XSLT object lines of ``data`` as file 1, or None if ``_parse_xml`` rejects it."""
    try:
        root = voc._parse_xml(Path("doc.xml"), data)
    except InputError:
        return None
    return voc._object_lines([root]).encode("utf-8")


def check(data: bytes) -> bool:
    """Assert the scanner agrees with lxml on ``data``; True if it did not fall back."""
    out, fallback = scanner([data])
    assert len(fallback) == 1 and fallback[0] in (0, 1)
    expected = _lxml_lines(data)
    if fallback[0]:
        assert out == b""
        return False
    assert expected is not None, f"scanner accepted a document lxml rejects: {data!r}"
    assert out == expected, data
    return True


def _real_files():
    files = sorted(FIXTURE_XML.glob("*.xml"))
    assert files
    return [p.read_bytes() for p in files]


def _reference_files(reference_dir):
    found = []
    for sub in ("voc_padilla_toy10/gts_vocpascal_format",
                "voc_padilla_voc2012_100img/gts/pascalvoc_format"):
        folder = reference_dir / sub
        if not folder.is_dir():
            pytest.skip(f"reference folder {folder} absent")
        found += [p.read_bytes() for p in sorted(folder.glob("*.xml"))]
    return found


def test_fixture_files_scanned():
    datas = _real_files()
    assert all(check(d) for d in datas)  # all inside the subset: the fast path is used
    # one call over all files numbers them 1..n like the XSLT over all roots
    out, fallback = scanner(datas)
    assert not any(fallback)
    roots = [etree.fromstring(d, voc._xml_parser()) for d in datas]
    assert out == voc._object_lines(roots).encode("utf-8")


def test_reference_files_scanned(reference_dir):
    datas = _reference_files(reference_dir)
    assert all(check(d) for d in datas)


ACCEPTED = [
    doc(),
    doc(head=b'<?xml version="1.0"?>\n'),
    doc(head=b'<?xml version="1.0" encoding="utf-8"?>'),
    doc(head=b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n"),
    doc(head=b'<?xml version="1.0" encoding="us-ascii"?>'),
    doc(head=b'<?xml version="1.0" encoding="ASCII"?>'),
    doc(head=b"\xef\xbb\xbf"),
    doc(head=b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?>'),
    doc(head=b"\n \t"),
    doc() + b"\n\n  \r\n",
    b"<annotation/>",
    b"<annotation />",
    b"<annotation></annotation >",
    doc(b"<object/>"),
    doc(b"<object></object>"),
    doc(OBJ.replace(b"<name>", b"<name >").replace(b"</name>", b"</name\n>")),
    doc(OBJ.replace(b"<difficult>0</difficult>", b"<difficult/>")),
    doc(OBJ.replace(b"<difficult>0</difficult>", b"<difficult />")),
    doc(OBJ.replace(b"<difficult>0</difficult>", b"")),
    doc(OBJ.replace(b"<difficult>0</difficult>", b"<difficult> 1 </difficult><difficult>0"
                                                 b"</difficult>")),
    doc(OBJ.replace(b"<bndbox><xmin>48</xmin><ymin>240</ymin><xmax>195</xmax><ymax>371"
                    b"</ymax></bndbox>", b"")),
    doc(OBJ.replace(b"<xmin>48</xmin>", b"")),
    doc(OBJ.replace(b"<xmin>48</xmin>", b"<xmin/>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>dog</name><name>cat</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"")),
    doc(OBJ.replace(b"</bndbox>", b"</bndbox><bndbox><xmin>1</xmin><ymin>2</ymin>"
                    b"<xmax>3</xmax><ymax>4</ymax></bndbox>")),
    doc(OBJ.replace(b"<bndbox><xmin>48</xmin>", b"<bndbox><ymin>9</ymin></bndbox>"
                    b"<bndbox><xmin>48</xmin>")),
    doc(OBJ.replace(b"</bndbox>", b"</bndbox><part><name>hand</name><bndbox><xmin>1</xmin>"
                    b"<ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></part>")),
    doc(OBJ.replace(b"<object>", b"<object><part><name>head</name><difficult>1</difficult>"
                    b"<bndbox><xmin>7</xmin></bndbox></part>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>\n\t  dining \r\n  table\t\n</name>")
        .replace(b"<xmin>48</xmin>", b"<xmin>\n  48.5 \n</xmin>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>   </name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>a]]b ' \" = / ? ! ;</name>")),
    doc(OBJ.replace(b"48", b"-1e3").replace(b"240", b"nan").replace(b"195", b"1_000")),
    doc(OBJ * 3),
    doc(OBJ + b"<segmented>0</segmented>" + OBJ.replace(b"dog", b"cat")),
    doc(b"text <x>in</x> the root" + OBJ),
    doc(b"<size><width>500</width><height>375</height><depth>3</depth></size>"
        b"<object><object><name>nested</name></object></object>"),
    doc(b"<Object><name>case</name></Object>"),
    doc(b"<a.b-c_1>x</a.b-c_1>" + OBJ),
    doc(OBJ.replace(b"<pose>Left</pose>", b"<pose><a><b>deep</b></a></pose>")),
    doc(b"<xml>1</xml><XML/><xmlns/><xml-stylesheet/><_/><_._-9/><a>]]</a><b>]</b>" + OBJ),
    b"<annotation\n\t>\r\n</annotation\r\n>",
    b"<annotation>" + b"<a>" * 63 + b"</a>" * 63 + b"</annotation>",
    doc(b"<" + b"n" * 200 + b"/>"),
    doc(b"<object><name>x</name><bndbox><xmin>1</xmin><xmin>2</xmin></bndbox>"
        b"<bndbox><xmin>3</xmin></bndbox></object>"),
    b'<?xml  version="1.0" ?>  <annotation/>  ',
]

REJECTED = [
    b"",
    b"   ",
    b"<annotation>",
    b"<Annotation/>",
    b"<doc/>",
    doc(head=b" <?xml version=\"1.0\"?>"),
    doc(head=b'<?xml version="1.0" encoding="latin-1"?>'),
    doc(head=b'<?xml version="1.0" encoding="utf-16"?>'),
    doc(head=b'<?xml version="1.1"?>'),
    doc(head=b'<?xml encoding="utf-8"?>'),
    doc(head=b'<?xml version="1.0" standalone="maybe"?>'),
    doc(head=b'<?xml version="1.0"encoding="utf-8"?>'),
    doc(head=b'<?xml version="1.0\'?>'),
    doc(head=b'\xef\xbb\xbf<?xml version="1.0" encoding="us-ascii"?>'),
    doc(head=b"<!DOCTYPE annotation>"),
    doc(head=b'<!DOCTYPE a [<!ENTITY e "dog">]>'),
    doc(head=b"<!-- c -->"),
    doc(head=b"<?pi x?>"),
    doc() + b"<!-- trailing -->",
    doc() + b"x",
    doc() + b"<annotation/>",
    doc(OBJ.replace(b"<object>", b'<object id="1">')),
    doc(OBJ.replace(b"<name>", b"<name a='1' >")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d<!-- c -->og</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name><![CDATA[dog]]></name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d&amp;g</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>&#100;og</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d\xc3\xb6g</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d\xffg</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d\x01g</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d\x7fg</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>a > b</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>a]]>b</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>a < b</name>")),
    doc(OBJ.replace(b"<name>dog</name>", b"<name>d<b>o</b>g</name>")),
    doc(OBJ.replace(b"<xmin>48</xmin>", b"<xmin>4<i/>8</xmin>")),
    doc(OBJ.replace(b"<difficult>0</difficult>", b"<difficult>0<x/></difficult>")),
    doc(OBJ.replace(b"</name>", b"</nam>")),
    doc(OBJ.replace(b"</name>", b"</Name>")),
    doc(OBJ.replace(b"</name>", b"</name/>")),
    doc(OBJ.replace(b"</name>", b"")),
    doc(OBJ.replace(b"<name>", b"< name>")),
    doc(OBJ.replace(b"<name>", b"<name / >")),
    doc(OBJ.replace(b"<name>", b"<ns:name>").replace(b"</name>", b"</ns:name>")),
    doc(OBJ.replace(b"<name>", b"<1name>").replace(b"</name>", b"</1name>")),
    doc(OBJ.replace(b"<name>", b"<n\xc3\xa4me>").replace(b"</name>", b"</n\xc3\xa4me>")),
    doc(OBJ + b"</object>"),
    b"<annotation>" + b"<a>" * 80 + b"</a>" * 80 + b"</annotation>",
    b"<annotation><" + b"n" * 300 + b"/></annotation>",
    doc(b"<x>" + b" " * (1 << 20) + b"</x>"),
    b'<?xml version="1.0"standalone="yes"?><annotation/>',
    b'<?xml version="1.0" standalone="yes" encoding="utf-8"?><annotation/>',
    b'<?xml version="1.0" ?><?xml version="1.0" ?><annotation/>',
    b'<?xml version="1.0"?>\xef\xbb\xbf<annotation/>',
    b"\xef\xbb\xbf\xef\xbb\xbf<annotation/>",
    b'<?xml version="1.0" encoding=""?><annotation/>',
    b'<?xml version="1.0" encoding="utf-8"?',
]


@pytest.mark.parametrize("data", ACCEPTED)
def test_accepted_variants(data):
    assert check(data), "expected inside the subset"


@pytest.mark.parametrize("data", REJECTED)
def test_rejected_variants(data):
    assert not check(data), "expected a fallback"


def test_non_bytes_rejected():
    with pytest.raises(TypeError):
        scanner([b"<annotation/>", "<annotation/>"])
    assert scanner([]) == (b"", b"")


ALPHABET = XML_ALPHABET
SNIPPETS = XML_SNIPPETS


def _fuzz(seed, n):
    rng = random.Random(seed)
    base = _real_files()
    # a few hand variants in the pool too (declaration, BOM, empty elements)
    base += [d for d in ACCEPTED[:20]]
    scanned = 0
    for _ in range(n):
        scanned += check(mutate(rng.choice(base), rng, ALPHABET, SNIPPETS))
    return scanned


def test_mutation_fuzz():
    scanned = _fuzz(20240601, 3000)
    assert scanned > 300  # the mutants exercise the fast path, not only the fallback


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_mutation_fuzz_sweep(seed):
    _fuzz(1000 + seed, 20000)


# ------------------------------------------------------------------- end to end

def _no_scanner(monkeypatch):
    class Stub:  # the extension without scan_voc_annotations (keeps scan_detections)
        scan_detections = staticmethod(voc._textscan.scan_detections)
    monkeypatch.setattr(voc, "_textscan", Stub())


def _reports(monkeypatch, *args, **kwargs):
    on = deteval.evaluate_voc(*args, **kwargs).to_dict()
    with monkeypatch.context() as m:
        _no_scanner(m)
        off = deteval.evaluate_voc(*args, **kwargs).to_dict()
    return on, off


def test_end_to_end_fixtures(monkeypatch):
    for metric in ("voc07", "voc12"):
        on, off = _reports(monkeypatch, REPO / "fixtures" / "voc" / "VOC2007",
                           REPO / "fixtures" / "voc" / "results", imageset="test",
                           metric=metric)
        assert on == off


def test_end_to_end_voc2012_100img(monkeypatch, reference_dir, tmp_path):
    base = reference_dir / "voc_padilla_voc2012_100img"
    if not base.is_dir():
        pytest.skip(f"{base} absent")
    names = [n.strip() for n in (base / "voc.names").read_text().splitlines() if n.strip()]
    per_class = {}
    for path in sorted((base / "dets" / "abs_xyx2y2").glob("*.txt")):
        for line in path.read_text().splitlines():
            if line.strip():
                k, s, *box = line.split()
                per_class.setdefault(names[int(k)], []).append(
                    " ".join([path.stem, s, *box]))
    for cls, lines in per_class.items():
        (tmp_path / f"comp4_det_test_{cls}.txt").write_text("\n".join(lines) + "\n")
    on, off = _reports(monkeypatch, base / "gts" / "pascalvoc_format", tmp_path)
    assert on == off
    assert len(on["classes"]) == 20


def test_mixed_fast_and_fallback_files(monkeypatch, tmp_path):
    """Files in and out of the subset, and a file the fast checks reject, merge in
    image-set order; the first error is the one the lxml path raises."""
    xml = tmp_path / "Annotations"
    xml.mkdir()
    variants = {
        "a": doc(OBJ + OBJ.replace(b"dog", b"cat")),
        "b": doc(OBJ.replace(b"dog", b"d\xc3\xb6g"), head=b'<?xml version="1.0"?>'),
        "c": doc(OBJ.replace(b"<xmin>48</xmin>", b"<xmin> 48.0 </xmin>")),
        "d": doc(OBJ.replace(b"<name>dog</name>", b"<name>horse</name><!-- x -->")),
        "e": b"<annotation/>",
        "f": doc(OBJ.replace(b"<difficult>0</difficult>", b"<difficult>1</difficult>") * 2),
    }
    for k, v in variants.items():
        (xml / f"{k}.xml").write_bytes(v)
    sets = tmp_path / "ImageSets" / "Main"
    sets.mkdir(parents=True)
    (sets / "test.txt").write_text("f\nb\ne\na\nd\nc\n")

    def load():
        return voc.load_voc_annotations(tmp_path, "test")

    def same(x, y):
        for f in ("image_idx", "class_idx", "boxes", "difficult", "area", "image_ids"):
            a, b = getattr(x, f), getattr(y, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        assert x.class_names == y.class_names and x.sources == y.sources

    on = load()
    with monkeypatch.context() as m:
        _no_scanner(m)
        off = load()
    same(on, off)
    assert len(on.boxes) == 7

    # errors: a semantic error in an early file, a syntax error in a later one -> syntax
    (xml / "b.xml").write_bytes(doc(OBJ.replace(b"<xmin>48</xmin>", b"<xmin>x</xmin>")))
    (xml / "d.xml").write_bytes(doc(OBJ) + b"<junk")
    (xml / "c.xml").write_bytes(doc(OBJ.replace(b"dog", b"d\x00g")))
    for fixed in (None, "d", "c"):  # syntax error (d), then NUL (c), then semantic (b)
        if fixed is not None:
            (xml / f"{fixed}.xml").write_bytes(variants[fixed])
        with pytest.raises(InputError) as on_err:
            load()
        with monkeypatch.context() as m:
            _no_scanner(m)
            with pytest.raises(InputError) as off_err:
                load()
        assert str(on_err.value) == str(off_err.value)
    (xml / "b.xml").write_bytes(variants["b"])
    same(load(), off)
