"""Bad input: a clear message, exit status 2, no traceback, no half-written report.

Every failing case runs twice: through the Python API (``deteval.InputError`` whose
message names the file and the line / element / record) and through the CLI
(``python -m deteval ...``: exit 2, the same facts on stderr, no traceback, nothing on
stdout, and a pre-existing ``--json`` file left byte for byte as it was).
Valid edge cases (empty detection file, missing <difficult>, a class without a
detection file, an empty COCO results list) must evaluate and exit 0.
"""

import base64
import json
import random
import re
import select
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import deteval

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures"
VOC_ANN = FIX / "voc" / "VOC2007" / "Annotations"
VOC_RES = FIX / "voc" / "results"
COCO_GT = FIX / "coco" / "instances_val.json"
COCO_RES = FIX / "coco" / "results.json"

SENTINEL = '{"sentinel": 1}\n'
IMAGES = ["000539", "000649", "000657", "000866"]  # 000866: its dog has no <difficult>


# ----------------------------------------------------------------------------- helpers

def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "deteval", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def line_of(text, needle, nth=1):
    """1-based line number of the nth occurrence of ``needle`` in ``text``."""
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


def assert_patterns(text, patterns):
    for p in patterns:
        assert re.search(p, text), f"{p!r} not found in:\n{text}"


def assert_cli_rejected(proc, out, patterns):
    """Exit 2, no traceback, the patterns on stderr, nothing on stdout, report untouched."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip(), "no message on stderr"
    assert proc.stdout == "", proc.stdout
    assert_patterns(proc.stderr, patterns)
    assert out.read_text() == SENTINEL
    assert not list(out.parent.glob(".deteval-*")), "temporary report left behind"


# ----------------------------------------------------------------------------- VOC

@pytest.fixture
def voc(tmp_path):
    """A small valid VOC case: 4 XML files, their detections, an image set, a sentinel."""
    ann, det = tmp_path / "ann", tmp_path / "det"
    ann.mkdir()
    det.mkdir()
    for i in IMAGES:
        shutil.copy(VOC_ANN / f"{i}.xml", ann)
    for f in sorted(VOC_RES.glob("*.txt")):
        lines = [ln for ln in f.read_text().splitlines(True) if ln.split()[0] in IMAGES]
        (det / f.name).write_text("".join(lines))
    imageset = tmp_path / "set.txt"
    imageset.write_text("".join(i + "\n" for i in IMAGES))
    out = tmp_path / "out.json"
    out.write_text(SENTINEL)
    return SimpleNamespace(root=tmp_path, ann=ann, det=det, imageset=imageset, out=out,
                           args={"annotations": ann, "detections": det, "imageset": imageset})


def _edit_xml(c, image, fn):
    path = c.ann / f"{image}.xml"
    path.write_text(fn(path.read_text()))
    return path.read_text()


def _edit_det(c, cls, lineno, new_line):
    """Replace line ``lineno`` (1-based) of the class's detection file."""
    path = c.det / f"comp4_det_test_{cls}.txt"
    lines = path.read_text().splitlines(True)
    lines[lineno - 1] = new_line + "\n"
    path.write_text("".join(lines))


def v_malformed(c):
    text = _edit_xml(c, "000649", lambda t: t.replace("</bndbox>", "</bndbx>", 1))
    return [r"000649\.xml", rf"line {line_of(text, '</bndbx>')}\b", "Expected well-formed XML"]


def v_truncated(c):
    text = _edit_xml(c, "000649", lambda t: t[:t.index("<ymax>", t.index("<name>car"))])
    return [r"000649\.xml", r"line \d+", "Expected well-formed XML"]


def v_binary(c):
    rnd = random.Random(7)
    (c.ann / "000649.xml").write_bytes(bytes(rnd.randrange(256) for _ in range(512)) + b"\0")
    return [r"000649\.xml", "Expected .*text.* but got binary"]


def v_binary_no_nul(c):
    rnd = random.Random(8)
    data = bytes(rnd.randrange(128, 256) for _ in range(512))  # invalid UTF-8, no NUL
    (c.ann / "000649.xml").write_bytes(data)
    return [r"000649\.xml", "Expected .*but got"]


def v_wrong_root(c):
    def rename(t):
        head, tail = t.rsplit("</annotation>", 1)
        return head.replace("<annotation>", "<annotations>", 1) + "</annotations>" + tail
    _edit_xml(c, "000649", rename)
    return [r"000649\.xml", r"line 1\b", r"Expected `root element` to be <annotation> "
            r"but got '<annotations>'"]


def v_missing_bndbox(c):
    def drop(t):
        start = t.index("<bndbox>", t.index("<name>person"))
        return t[:start] + t[t.index("</bndbox>", start) + len("</bndbox>"):]
    text = _edit_xml(c, "000649", drop)
    obj_line = line_of(text, "<object>", 2)  # chair, person, car: the 2nd object
    return [r"000649\.xml", rf"line {obj_line}\b", r"Expected a <bndbox> .*\(person\)"]


def v_missing_coord(c):
    def drop(t):
        start = t.index("<ymax>", t.index("<name>car"))
        return t[:start] + t[t.index("\n", start) + 1:]
    text = _edit_xml(c, "000649", drop)
    bnd_line = line_of(text, "<bndbox>", 3)
    return [r"000649\.xml", rf"line {bnd_line}\b", r"Expected a <ymax> element .*but got none"]


def v_non_numeric_coord(c):
    text = _edit_xml(c, "000649", lambda t: re.sub(r"<xmin>\d+</xmin>", "<xmin>12px</xmin>",
                                                   t, count=1))
    return [r"000649\.xml", rf"line {line_of(text, '<bndbox>')}\b",
            r"Expected `xmin` to be a number but got '12px'"]


def v_xmax_lt_xmin(c):
    text = _edit_xml(c, "000649", lambda t: re.sub(r"<xmax>\d+</xmax>", "<xmax>1</xmax>",
                                                   t, count=1))
    return [r"000649\.xml", rf"line {line_of(text, '<bndbox>')}\b",
            r"Expected xmin <= xmax and ymin <= ymax but got"]


def v_det_too_few_fields(c):
    _edit_det(c, "cat", 3, "000539 0.5 10 20 30")
    return [r"comp4_det_test_cat\.txt", r"line 3\b", r"Expected 6 fields .* but got 5"]


def v_det_non_numeric_score(c):
    _edit_det(c, "cat", 3, "000539 high 10 20 30 40")
    return [r"comp4_det_test_cat\.txt", r"line 3\b",
            r"Expected `score` to be a number but got 'high'"]


def v_det_nan_score(c):
    _edit_det(c, "cat", 3, "000539 nan 10 20 30 40")
    return [r"comp4_det_test_cat\.txt", r"line 3\b",
            r"Expected `score` to be a finite number but got 'nan'"]


def v_det_outside_imageset(c):
    c.imageset.write_text("000539\n000649\n000657\n")  # 000866.xml exists but is not in the set
    for f in c.det.glob("*.txt"):
        f.write_text("".join(ln for ln in f.read_text().splitlines(True)
                             if not ln.startswith("000866")))
    path = c.det / "comp4_det_test_cat.txt"
    lines = path.read_text().splitlines(True)
    lines.insert(1, "000866 0.5 10 20 30 40\n")
    path.write_text("".join(lines))
    return [r"comp4_det_test_cat\.txt", r"line 2\b", r"Expected image ids of the image set "
            r"but got '000866'"]


def v_imageset_id_without_xml(c):
    c.imageset.write_text("000539\n000649\n424242\n000657\n")
    return [r"set\.txt", "424242", r"424242\.xml", "Expected an annotation file"]


def v_imageset_duplicate(c):
    c.imageset.write_text("000539\n000649\n000657\n000649\n000866\n")
    return [r"set\.txt", r"line 4\b", "'000649'", r"first on line 2"]


def v_missing_annotations(c):
    c.args["annotations"] = c.root / "no_such_annotations"
    return ["no_such_annotations", r"Expected `ANNOTATIONS` to be .* but got"]


def v_missing_detections(c):
    c.args["detections"] = c.root / "no_such_detections"
    return ["no_such_detections", r"Expected `DETECTIONS` to be .* but got"]


def v_missing_imageset(c):
    c.args["imageset"] = c.root / "no_such_set.txt"
    return ["no_such_set\\.txt", r"Expected `--imageset` to be .* but got"]


def v_xxe(c):
    xxe = ('<?xml version="1.0"?>\n<!DOCTYPE annotation [\n'
           '<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
           "<annotation>\n\t<object>\n\t\t<name>&x;</name>\n\t\t<bndbox><xmin>1</xmin>"
           "<ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox>\n\t</object>\n</annotation>\n")
    (c.ann / "000649.xml").write_text(xxe)
    return [r"000649\.xml", r"Expected .*without DTD or entity.* but got .*DOCTYPE"]


def v_xxe_utf16(c):
    # the same document in UTF-16: a byte search for <!DOCTYPE would not see it
    xxe = ('<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE annotation [\n'
           '<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
           "<annotation><object><name>&x;</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
           "<xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>\n")
    (c.ann / "000649.xml").write_bytes(xxe.encode("utf-16"))
    return [r"000649\.xml", r"Expected .* but got"]


BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE annotation [\n<!ENTITY lol "lol">\n'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
              for i in range(1, 10))
    + "]>\n<annotation><object><name>&lol9;</name><bndbox><xmin>1</xmin><ymin>1</ymin>"
      "<xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>\n")


def v_billion_laughs(c):
    (c.ann / "000649.xml").write_text(BILLION_LAUGHS)
    return [r"000649\.xml", r"Expected .*without DTD or entity.* but got"]


VOC_BAD = [v_malformed, v_truncated, v_binary, v_binary_no_nul, v_wrong_root,
           v_missing_bndbox, v_missing_coord, v_non_numeric_coord, v_xmax_lt_xmin,
           v_det_too_few_fields, v_det_non_numeric_score, v_det_nan_score,
           v_det_outside_imageset, v_imageset_id_without_xml, v_imageset_duplicate,
           v_missing_annotations, v_missing_detections, v_missing_imageset,
           v_xxe, v_xxe_utf16, v_billion_laughs]


def _case_id(fn):
    return fn.__name__[2:]


def _subset(cases, names):
    """The cases also run through the CLI (a subprocess each: keep the suite fast)."""
    chosen = [c for c in cases if _case_id(c) in names]
    assert len(chosen) == len(names)
    return chosen


VOC_CLI = _subset(VOC_BAD, {"malformed", "binary", "missing_bndbox", "det_too_few_fields",
                            "det_outside_imageset", "imageset_duplicate", "missing_imageset",
                            "xxe", "billion_laughs"})


def _voc_cli_args(c):
    return ["voc", c.args["annotations"], c.args["detections"],
            "--imageset", c.args["imageset"], "--json", c.out]


@pytest.mark.parametrize("case", VOC_BAD, ids=_case_id)
def test_voc_bad_input_api(voc, case):
    patterns = case(voc)
    t0 = time.perf_counter()
    with pytest.raises(deteval.InputError, match=patterns[-1]) as info:
        deteval.evaluate_voc(str(voc.args["annotations"]), str(voc.args["detections"]),
                             imageset=str(voc.args["imageset"]))
    assert time.perf_counter() - t0 < 2.0
    assert isinstance(info.value, ValueError)
    assert_patterns(str(info.value), patterns)
    assert "root:" not in str(info.value)  # /etc/passwd never read into a message


@pytest.mark.parametrize("case", VOC_CLI, ids=_case_id)
def test_voc_bad_input_cli(voc, case):
    patterns = case(voc)
    t0 = time.perf_counter()
    proc = run_cli(*_voc_cli_args(voc))
    assert time.perf_counter() - t0 < 2.0 + 3.0  # < 2 s of work plus interpreter start-up
    assert_cli_rejected(proc, voc.out, patterns)
    assert "root:" not in proc.stderr


@pytest.mark.parametrize("doc", ["dtd", "entity"])
def test_voc_untrusted_xml_no_network(voc, doc):
    """An external DTD or entity on a local listener: refused, and never fetched."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    url = f"http://127.0.0.1:{srv.getsockname()[1]}/x"
    try:
        decl = (f'<!DOCTYPE annotation SYSTEM "{url}">' if doc == "dtd" else
                f'<!DOCTYPE annotation [<!ENTITY x SYSTEM "{url}">]>')
        (voc.ann / "000649.xml").write_text(
            f'<?xml version="1.0"?>\n{decl}\n<annotation><object><name>&x;</name><bndbox>'
            "<xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
            "</annotation>\n")
        with pytest.raises(deteval.InputError, match=r"000649\.xml"):
            deteval.evaluate_voc(str(voc.ann), str(voc.det))
        if doc == "entity":  # one subprocess is enough
            proc = run_cli("voc", voc.ann, voc.det, "--json", voc.out)
            assert_cli_rejected(proc, voc.out, [r"000649\.xml", "DOCTYPE"])
        readable, _, _ = select.select([srv], [], [], 0.2)
        assert not readable, "the parser connected to the URL of the document"
    finally:
        srv.close()


def _utf7(text):
    """``text`` in UTF-7 with every character base64-encoded (no ASCII ``<!DOCTYPE`` left)."""
    return ("+" + base64.b64encode(text.encode("utf-16-be")).decode().rstrip("=") + "-").encode()


def _utf7_doc(decl, name):
    return (b'<?xml version="1.0" encoding="UTF-7"?>\n' + _utf7(decl) + b"\n<annotation><object>"
            b"<name>" + name.encode() + b"</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5"
            b"</xmax><ymax>5</ymax></bndbox></object></annotation>\n")


def test_voc_untrusted_xml_utf7_never_resolved(voc):
    """A DOCTYPE hidden from a byte search by UTF-7: still no network, no expansion."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    url = f"http://127.0.0.1:{srv.getsockname()[1]}/x"
    try:
        for decl in (f'<!DOCTYPE annotation SYSTEM "{url}">',
                     f'<!DOCTYPE annotation [<!ENTITY x SYSTEM "{url}">]>'):
            (voc.ann / "000649.xml").write_bytes(_utf7_doc(decl, "&x;"))
            with pytest.raises(deteval.InputError, match=r"000649\.xml"):
                deteval.evaluate_voc(str(voc.ann), str(voc.det))
        readable, _, _ = select.select([srv], [], [], 0.2)
        assert not readable, "the parser connected to the URL of the document"
    finally:
        srv.close()
    bomb_decl = BILLION_LAUGHS[BILLION_LAUGHS.index("<!DOCTYPE"):BILLION_LAUGHS.index("]>") + 2]
    (voc.ann / "000649.xml").write_bytes(_utf7_doc(bomb_decl, "&lol9;"))
    t0 = time.perf_counter()
    with pytest.raises(deteval.InputError, match=r"000649\.xml: line \d+: Expected"):
        deteval.evaluate_voc(str(voc.ann), str(voc.det))
    assert time.perf_counter() - t0 < 2.0
    passwd = _utf7_doc('<!DOCTYPE annotation [<!ENTITY x SYSTEM "file:///etc/passwd">]>', "&x;")
    (voc.ann / "000649.xml").write_bytes(passwd)
    with pytest.raises(deteval.InputError, match=r"000649\.xml") as info:
        deteval.evaluate_voc(str(voc.ann), str(voc.det))
    assert "root:" not in str(info.value)


def test_voc_untrusted_xml_utf7_refused(voc):
    decl = '<!DOCTYPE annotation [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    (voc.ann / "000649.xml").write_bytes(_utf7_doc(decl, "dog&x;"))
    with pytest.raises(deteval.InputError, match=r"000649\.xml.*DOCTYPE"):
        deteval.evaluate_voc(str(voc.ann), str(voc.det))


# ----------------------------------------------------------------------------- VOC valid

def _voc_ok(c):
    proc = run_cli("voc", c.ann, c.det, "--imageset", c.imageset, "--json", c.out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(c.out.read_text())
    return proc, report, {k["name"]: k for k in report["classes"]}


def test_voc_empty_detection_file_is_valid(voc):
    (voc.det / "comp4_det_test_car.txt").write_text("")
    proc, report, by = _voc_ok(voc)
    assert by["car"]["ap"] == 0.0 and by["car"]["num_detections"] == 0
    assert by["car"]["num_gt"] == 2
    assert by["cat"]["ap"] > 0  # the other classes are still evaluated


def test_voc_missing_difficult_means_not_difficult(tmp_path):
    ann, det = tmp_path / "ann", tmp_path / "det"
    ann.mkdir()
    det.mkdir()
    box = "<bndbox><xmin>10</xmin><ymin>10</ymin><xmax>50</xmax><ymax>50</ymax></bndbox>"
    (ann / "a.xml").write_text(f"<annotation><object><name>dog</name>{box}</object>"
                               f"<object><name>dog</name><difficult>1</difficult>{box}</object>"
                               "</annotation>\n")
    (ann / "b.xml").write_text(f"<annotation><object><name>dog</name>{box}</object>"
                               "</annotation>\n")
    (det / "comp4_det_test_dog.txt").write_text("a 0.9 10 10 50 50\nb 0.8 10 10 50 50\n")
    out = tmp_path / "out.json"
    proc = run_cli("voc", ann, det, "--json", out)
    assert proc.returncode == 0, proc.stderr
    dog = json.loads(out.read_text())["classes"][0]
    assert (dog["num_gt"], dog["num_difficult"], dog["tp"], dog["fp"]) == (2, 1, 2, 0)
    assert dog["ap"] == 1.0


def test_voc_class_without_detection_file(voc):
    (voc.det / "comp4_det_test_dog.txt").unlink()
    proc, report, by = _voc_ok(voc)
    assert by["dog"]["ap"] == 0.0 and by["dog"]["num_detections"] == 0
    assert by["dog"]["num_gt"] >= 1
    assert "no detection file" in by["dog"].get("note", "")
    assert re.search(r"dog: .*no detection file", proc.stdout), proc.stdout
    rep = deteval.evaluate_voc(str(voc.ann), str(voc.det), imageset=str(voc.imageset))
    assert rep["dog"].ap == 0.0 and "no detection file" in rep["dog"].note


# ----------------------------------------------------------------------------- COCO

@pytest.fixture
def coco(tmp_path):
    """Valid copies gt.json / res.json, their data (to corrupt), and a sentinel report."""
    c = SimpleNamespace(gt_path=tmp_path / "gt.json", res_path=tmp_path / "res.json",
                        gt=json.loads(COCO_GT.read_text()), res=json.loads(COCO_RES.read_text()),
                        out=tmp_path / "out.json")
    c.gt_path.write_text(json.dumps(c.gt, indent=1))
    c.res_path.write_text(json.dumps(c.res, indent=1))
    c.out.write_text(SENTINEL)
    return c


def _gt(c, mutate):
    mutate(c.gt)
    c.gt_path.write_text(json.dumps(c.gt, indent=1))  # allow_nan: NaN written as `NaN`


def _res(c, mutate):
    mutate(c.res)
    c.res_path.write_text(json.dumps(c.res, indent=1))


def _set(section, i, key, value):
    def f(data):
        recs = data if section == "results" else data[section]
        if value is _DEL:
            del recs[i][key]
        else:
            recs[i][key] = value
    return f


_DEL = object()
GT_FILE, RES_FILE = r"gt\.json", r"res\.json"


def c_gt_invalid_json(c):
    text = c.gt_path.read_text().replace('"width": 640,', '"width": 640,,', 1)
    c.gt_path.write_text(text)
    return [GT_FILE, rf"line {line_of(text, ',,')} column \d+", r"Expected valid JSON but got"]


def c_res_truncated_json(c):
    text = c.res_path.read_text()
    c.res_path.write_text(text[:len(text) // 2])
    return [RES_FILE, r"line \d+ column \d+", r"Expected valid JSON but got"]


def c_res_binary(c):
    rnd = random.Random(3)
    c.res_path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(rnd.randrange(256) for _ in range(300)))
    return [RES_FILE, r"Expected valid JSON but got .*binary"]


def c_gt_binary(c):
    c.gt_path.write_bytes(b"\xff\xfe\xfd" * 100)
    return [GT_FILE, r"Expected valid JSON but got .*binary"]


def _missing_key(key):
    def case(c):
        _gt(c, lambda d: d.pop(key))
        return [GT_FILE, rf"Expected a top-level `{key}` key but got"]
    case.__name__ = f"c_gt_missing_{key}"
    return case


_BAD_BOXES = {"3_numbers": [1.0, 2.0, 3.0], "string": "10 20 30 40", "null": None,
              "NaN": [1.0, float("nan"), 3.0, 4.0]}


def _bad_bbox(where, kind):
    value = _BAD_BOXES[kind]

    def case(c):
        if where == "gt":
            _gt(c, _set("annotations", 3, "bbox", value))
            return [GT_FILE, r"annotations\[3\]", r"Expected `bbox` to be four finite numbers"
                    r" .* but got"]
        _res(c, _set("results", 5, "bbox", value))
        return [RES_FILE, r"results\[5\]", r"Expected `bbox` to be four finite numbers .* but got"]
    case.__name__ = f"c_{where}_bbox_{kind}"
    return case


def c_gt_negative_width(c):
    _gt(c, lambda d: d["annotations"][7]["bbox"].__setitem__(2, -5.0))
    return [GT_FILE, r"annotations\[7\]", r"Expected `bbox` to be .*w >= 0 and h >= 0.* but got"]


def c_res_negative_height(c):
    _res(c, lambda d: d[9]["bbox"].__setitem__(3, -0.5))
    return [RES_FILE, r"results\[9\]", r"Expected `bbox` to be .*w >= 0 and h >= 0.* but got"]


def c_res_missing_score(c):
    _res(c, _set("results", 4, "score", _DEL))
    return [RES_FILE, r"results\[4\]", r"Expected a `score` field but got none"]


def c_res_string_score(c):
    _res(c, _set("results", 4, "score", "high"))
    return [RES_FILE, r"results\[4\]", r"Expected `score` to be a finite number but got 'high'"]


def c_res_nan_score(c):
    _res(c, _set("results", 4, "score", float("nan")))
    return [RES_FILE, r"results\[4\]", r"Expected `score` to be a finite number but got nan"]


def c_gt_ann_unknown_image(c):
    _gt(c, _set("annotations", 2, "image_id", 987654321))
    return [GT_FILE, r"annotations\[2\]", r"Expected `image_id` to be one of .* but got 987654321"]


def c_gt_ann_unknown_category(c):
    _gt(c, _set("annotations", 2, "category_id", 999))
    return [GT_FILE, r"annotations\[2\]", r"Expected `category_id` to be one of .* but got 999"]


def c_res_unknown_image(c):
    _res(c, _set("results", 6, "image_id", 987654321))
    return [RES_FILE, r"results\[6\]", r"Expected `image_id` to be .* but got .*987654321"]


def c_res_unknown_category(c):
    _res(c, _set("results", 6, "category_id", 999))
    return [RES_FILE, r"results\[6\]", r"Expected `category_id` to be .* but got .*999"]


def c_gt_duplicate_image_id(c):
    _gt(c, lambda d: d["images"][5].__setitem__("id", d["images"][2]["id"]))
    return [GT_FILE, r"images\[5\]", r"images\[2\]", r"Expected unique ids but got id 69462 twice"]


def c_res_is_dict(c):
    c.res_path.write_text(json.dumps({"annotations": c.res}))
    return [RES_FILE, r"Expected `results` to be a JSON list .* but got 'dict'"]


COCO_BAD = ([c_gt_invalid_json, c_res_truncated_json, c_res_binary, c_gt_binary]
            + [_missing_key(k) for k in ("images", "annotations", "categories")]
            + [_bad_bbox(w, k) for w in ("gt", "res") for k in _BAD_BOXES]
            + [c_gt_negative_width, c_res_negative_height, c_res_missing_score,
               c_res_string_score, c_res_nan_score, c_gt_ann_unknown_image,
               c_gt_ann_unknown_category, c_res_unknown_image, c_res_unknown_category,
               c_gt_duplicate_image_id, c_res_is_dict])


@pytest.mark.parametrize("case", COCO_BAD, ids=_case_id)
def test_coco_bad_input_api(coco, case):
    patterns = case(coco)
    with pytest.raises(deteval.InputError, match=patterns[-1]) as info:
        deteval.evaluate_coco(str(coco.gt_path), str(coco.res_path))
    assert_patterns(str(info.value), patterns)


COCO_CLI = _subset(COCO_BAD, {"gt_invalid_json", "res_binary", "gt_missing_annotations",
                              "res_bbox_NaN", "res_negative_height", "res_nan_score",
                              "res_unknown_image", "gt_duplicate_image_id", "res_is_dict"})


@pytest.mark.parametrize("case", COCO_CLI, ids=_case_id)
def test_coco_bad_input_cli(coco, case):
    patterns = case(coco)
    proc = run_cli("coco", coco.gt_path, coco.res_path, "--json", coco.out)
    assert_cli_rejected(proc, coco.out, patterns)


def test_coco_empty_results_is_valid(coco):
    coco.res_path.write_text("[]\n")
    proc = run_cli("coco", coco.gt_path, coco.res_path, "--json", coco.out)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(coco.out.read_text())
    assert report["inputs"]["num_detections"] == 0
    assert report["stats"]["AP"] == 0.0 and report["stats"]["AP50"] == 0.0
    assert all(v in (None, 0.0) for v in report["stats"].values())
    with_gt = {a["category_id"] for a in coco.gt["annotations"] if not a.get("iscrowd")}
    assert with_gt
    for cls in report["classes"]:
        if cls["id"] in with_gt:
            assert cls["AP"] == 0.0, cls
        assert all(cls[k] in (None, 0.0) for k in cls if k not in ("id", "name")), cls
    assert deteval.evaluate_coco(str(coco.gt_path), []).stats["AP"] == 0.0


# ----------------------------------------------------------------------------- usage

@pytest.mark.parametrize("args, patterns", [
    (["frobnicate", "a", "b"], [r"invalid choice: 'frobnicate'"]),
    (["voc", str(VOC_ANN), str(VOC_RES), "--metric", "voc09"], [r"--metric", r"'voc09'"]),
    (["voc", str(VOC_ANN), str(VOC_RES), "--iou", "half"], [r"--iou", r"'half'"]),
], ids=["subcommand", "metric", "iou"])
def test_usage_errors(tmp_path, args, patterns):
    out = tmp_path / "out.json"
    out.write_text(SENTINEL)
    proc = run_cli(*args, "--json", out)
    assert_cli_rejected(proc, out, patterns + ["usage: deteval"])


@pytest.mark.parametrize("kwargs, pattern", [
    ({"metric": "voc09"}, r"Expected `metric` to be one of 'voc07', 'voc12' but got 'voc09'"),
    ({"iou_threshold": "half"}, r"Expected `iou_threshold` to be a number in \[0, 1\] "
                                r"but got 'half'"),
])
def test_usage_errors_api(kwargs, pattern):
    with pytest.raises(deteval.InputError, match=pattern):
        deteval.evaluate_voc(str(VOC_ANN), str(VOC_RES), **kwargs)
