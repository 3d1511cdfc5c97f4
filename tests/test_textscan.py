"""The optional C scanner (deteval._textscan) against the pure-Python parser.

Differential: the same bytes through both paths of ``deteval.io.voc`` must give the same
ids, bit-identical values and the same line numbers, and bad input the same InputError
message. Tests that need the extension skip when it is not built; the Python-path tests
(id mapping, wide ids) always run.
"""
import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from deteval import InputError
from deteval.io import voc

textscan = voc._textscan
needs_c = pytest.mark.skipif(
    textscan is None, reason="deteval._textscan not built (no C compiler at install time); "
                             "the pure-Python parser is used")

SEPS = [" ", " ", " ", "\t", "  ", " \t ", "\v", "\f", "\t\t"]
EOLS = ["\n", "\n", "\n", "\r\n", "\r"]
ID_CHARS = "abcXYZ0123456789_-./" + "éß中文ü"


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def number_token(rng: random.Random) -> str:
    """A number in one of many textual forms that Python's float() accepts."""
    kind = rng.randrange(16)
    v = rng.choice([rng.uniform(-1e3, 1e3), rng.uniform(0, 1), rng.lognormvariate(0, 20)])
    if kind == 0:
        return str(rng.randint(-10**6, 10**6))
    if kind == 1:
        return rng.choice(["+", "-", ""]) + "0" * rng.randint(0, 3) + str(rng.randint(0, 999))
    if kind == 2:
        return f"{v:.{rng.randint(0, 8)}f}"
    if kind == 3:
        return repr(v)
    if kind == 4:
        return f"{v:.{rng.randint(0, 20)}e}".replace("e", rng.choice(["e", "E"]))
    if kind == 5:
        return f"{v:.{rng.randint(1, 17)}g}"
    if kind == 6:  # leading/trailing dot
        return rng.choice(["", "-", "+"]) + rng.choice([".%d" % rng.randint(0, 99999),
                                                        "%d." % rng.randint(0, 99999)])
    if kind == 7:  # 17+ significant digits
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(17, 40)))
        cut = rng.randint(0, len(digits))
        return rng.choice(["", "-"]) + digits[:cut] + "." + digits[cut:]
    if kind == 8:  # mantissa around 2^53
        m = 2**53 + rng.randint(-3, 3)
        return f"{m}e{rng.randint(-25, 25)}"
    if kind == 9:  # huge / tiny / subnormal / underflow to zero
        return rng.choice(["1.7976931348623157e308", "-1.7976931348623157e+308", "4.9e-324",
                           "5e-324", "2.2250738585072014e-308", "2.2250738585072011e-308",
                           "1e-400", "-1e-400", "1e308", "9.999999999999999e22", "1e23",
                           "8.98846567431158e307", "0e999999", "-0.0", "0", "-0"])
    if kind == 10:  # exponents at the edge of the exact path
        return f"{rng.randint(1, 10**15)}e{rng.choice(['', '+', '-'])}{rng.randint(20, 25)}"
    if kind == 11:
        return f"{rng.randint(1, 9999)}.{rng.randint(0, 9999):04d}e-{rng.randint(0, 30)}"
    if kind == 12:  # underscores (Python's float() accepts them between digits)
        return rng.choice(["1_000", "1_0.5", "0.000_1", "1e1_0", "-2_5e-3"])
    if kind == 13:  # long exponents, many leading zeros
        return rng.choice(["1e0000000000000000000000001", "0.0000000000000000000000000001e28",
                           "00000000000000000000000000012.5", "1" + "0" * 30 + "e-30"])
    if kind == 14:
        return f"{rng.uniform(0, 500):.1f}"
    return f"{rng.random():.6f}"


def id_token(rng: random.Random) -> str:
    return "".join(rng.choice(ID_CHARS) for _ in range(rng.choice([1, 3, 6, 6, 8, 9, 12, 20])))


def detection_text(rng: random.Random, rows: int) -> bytes:
    out = []
    for _ in range(rows):
        if rng.random() < 0.05:
            out.append(rng.choice(["", " ", "\t ", "\f"]) + rng.choice(EOLS))
        x1, x2, y1, y2 = (number_token(rng) for _ in range(4))
        if float(x2) < float(x1):
            x1, x2 = x2, x1
        if float(y2) < float(y1):
            y1, y2 = y2, y1
        fields = [id_token(rng), number_token(rng), x1, y1, x2, y2]
        lead = rng.choice(["", "", " ", "\t"])
        trail = rng.choice(["", "", " ", "\t "])
        out.append(lead + "".join(f + rng.choice(SEPS) for f in fields[:-1]) + fields[-1]
                   + trail + rng.choice(EOLS))
    text = "".join(out)
    if rng.random() < 0.5:
        text = text.rstrip("\r\n")  # last line without a line end
    return text.encode("utf-8")


def parse(data: bytes, use_c: bool):
    return voc._detection_columns(data, Path("dets.txt"), use_c=use_c)


def assert_same(data: bytes):
    ids_c, val_c, line_c = parse(data, True)
    ids_p, val_p, line_p = parse(data, False)
    assert ids_c.tolist() == ids_p.tolist()
    assert val_c.dtype == val_p.dtype == np.float64 and val_c.shape == val_p.shape
    assert np.ascontiguousarray(val_c).tobytes() == np.ascontiguousarray(val_p).tobytes()
    assert line_c.dtype == line_p.dtype == np.int64
    assert line_c.tolist() == line_p.tolist()
    return ids_p, val_p, line_p


def error_message(data: bytes, use_c: bool) -> str:
    with pytest.raises(InputError) as info:
        parse(data, use_c)
    return str(info.value)


# ----------------------------------------------------------------------------- scanner


@needs_c
@pytest.mark.parametrize("seed", range(8))
def test_scanner_values_equal_python_float(seed):
    rng = random.Random(seed)
    toks = [number_token(rng) for _ in range(5000)]
    toks += ["nan", "-nan", "NaN", "inf", "-inf", "+Infinity", "infinity", "1e400", "-1e999"]
    toks += [repr(rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 308)) for _ in range(2000)]
    while len(toks) % 5:
        toks.append("1")
    data = "".join("id " + " ".join(toks[i:i + 5]) + "\n" for i in range(0, len(toks), 5))
    values, id_start, id_len, line, error = textscan.scan_detections(data.encode())
    assert error is None
    got = np.frombuffer(values, dtype=np.float64)
    assert len(got) == len(toks)
    for tok, v in zip(toks, got.tolist()):
        assert bits(v) == bits(float(tok)), tok
    assert np.frombuffer(line, dtype=np.int64).tolist() == list(range(1, len(toks) // 5 + 1))
    assert np.frombuffer(id_len, dtype=np.int64).tolist() == [2] * (len(toks) // 5)


@needs_c
def test_scanner_random_digit_strings():
    """Random decimal strings near the fast path's limits (2^53 mantissa, |e| <= 22)."""
    rng = random.Random(7)
    toks = []
    for _ in range(20000):
        m = str(rng.randint(0, 2**rng.randint(1, 60)))
        cut = rng.randint(0, len(m))
        tok = m[:cut] + "." + m[cut:] if rng.random() < 0.7 else m
        if rng.random() < 0.5:
            tok += "e%d" % rng.randint(-30, 30)
        toks.append(rng.choice(["", "-", "+"]) + tok)
    data = "".join("i " + " ".join(toks[i:i + 5]) + "\n" for i in range(0, len(toks), 5))
    values, *_, error = textscan.scan_detections(data.encode())
    assert error is None
    for tok, v in zip(toks, np.frombuffer(values, dtype=np.float64).tolist()):
        assert bits(v) == bits(float(tok)), tok


@needs_c
@pytest.mark.parametrize("data, kind, line", [
    (b"a 1 2 3 4\n", "fields", 1),
    (b"a 1 2 3 4 5\nb 1 2 3 4 5 6\n", "fields", 2),
    (b"a 1 2 3 4 5\n\n  b 1 x 3 4 5\n", "number", 3),
    (b"a 1 2 3 4 5\r\nb 1 2 3 4 1e\n", "number", 2),
    (b"a 1 2 3 4 5\rb 1 2 3 4 1__0\n", "number", 2),
    (b"a 1 2 3 4 5\nb 1 2\x00 3 4 5\n", "binary", 2),
    (b"a\x00 1 2 3 4 5\n", "binary", 1),
    (b"a 1 2 3 4 5 \x00\n", "binary", 1),
])
def test_scanner_errors(data, kind, line):
    for buf in (data, bytearray(data), memoryview(data)):
        *_, error = textscan.scan_detections(buf)
        assert error is not None and error[0] == line and error[1] == kind


@needs_c
def test_scanner_line_ends_follow_splitlines():
    data = b"a 1 2 3 4 5\rb 1 2 3 4 5\r\n\r\nc 1 2 3 4 5\n\n\rd 1 2 3 4 5"
    *_, line, error = textscan.scan_detections(data)
    assert error is None
    expect = [i + 1 for i, ln in enumerate(data.splitlines()) if ln.split()]
    assert np.frombuffer(line, dtype=np.int64).tolist() == expect == [1, 2, 4, 7]


@needs_c
def test_scanner_buffer_without_terminating_nul():
    """A memoryview slice has no NUL after its data: the bounds-checked loop is used."""
    full = b"a 1 2 3 4 5\nb 1 2 3 4 56789"
    view = memoryview(full)[:-4]  # ends in "...4 5"
    out_view = textscan.scan_detections(view)
    out_bytes = textscan.scan_detections(bytes(view))
    assert out_view == out_bytes
    assert np.frombuffer(out_view[0]).tolist()[-1] == 5.0


@needs_c
def test_scanner_releases_gil_on_large_input():
    """Large buffers are scanned without the GIL; results must not depend on it."""
    import threading
    data = detection_text(random.Random(3), 20000)
    assert len(data) > 1 << 16
    expect = textscan.scan_detections(data)
    results = []
    threads = [threading.Thread(target=lambda: results.append(textscan.scan_detections(data)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expect] * 4


# ------------------------------------------------------------------------ differential


@needs_c
@pytest.mark.parametrize("seed", range(12))
def test_c_and_python_paths_identical(seed):
    rng = random.Random(100 + seed)
    ids, values, lines = assert_same(detection_text(rng, rng.choice([0, 1, 7, 300, 3000])))
    assert values.shape == (len(ids), 5)


@needs_c
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_c_and_python_paths_identical_sweep(seed):
    assert_same(detection_text(random.Random(1000 + seed), 20000))


@needs_c
@pytest.mark.parametrize("data", [
    b"", b"\n\n  \n", b"a 1 2 3 4 5", b"a 1 2 3 4 5\r", b"\ta\t1\t2\t3\t4\t5\t\r\n",
    b"a 1 2 3 4 5\rb 1 2 3 4 5", "é 1 2 3 4 5\n中文 0.5 1 1 1 1\n".encode(),
    b"\xff\xfe 1 2 3 4 5\n",  # invalid UTF-8 id
    b"a -0 -0.0 -0e5 0 0\n", b"a 1_0 1 2 3 4\n", b"a 1e-400 0 0 1e308 1e308\n",
])
def test_c_and_python_paths_identical_edge_cases(data):
    assert_same(data)


BAD = {
    "too few fields": b"a 1 2 3 4 5\nb 1 2 3 4\n",
    "too many fields": b"a 1 2 3 4 5\n\nb 1 2 3 4 5 6\n",
    "fields before a number error": b"a x 2 3 4 5\nb 1 2 3 4\n",
    "non-numeric": b"a 1 2 3 4 5\nb 0.9 1 two 3 4\n",
    "trailing garbage": b"a 1 2 3 4 5px\n",
    "two dots": b"a 1 2 3.4.5 4 5\n",
    "lone exponent": b"a 1 2 3 4 5e\n",
    "hex": b"a 0x1 2 3 4 5\n",
    "bad underscore": b"a 1 2 3 4 5_\n",
    "NaN score": b"a 1 2 3 4 5\nb nan 1 2 3 4\n",
    "negative NaN": b"a -NaN 1 2 3 4\n",
    "inf coordinate": b"a 1 2 3 inf 4\n",
    "overflow to inf": b"a 1 2 3 1e400 4\n",
    "-inf xmin": b"a 1 -Infinity 3 4 5\n",
    "xmin > xmax": b"a 1 5 2 4 6\n",
    "ymin > ymax": b"a 1 1 7 4 6\n",
    "NUL in number": b"a 1 2 3 4 5\nb 1 2\x00 3 4 5\n",
    "lone CR line count": b"a 1 2 3 4 5\rb 1 2 3 4 x\n",
    "long line": b"a 1 2 3 4 5 " + b"y" * 200 + b"\n",
    "long bad token": b"a 1 2 3 4 " + b"9" * 100 + b"z\n",
}


@needs_c
@pytest.mark.parametrize("name", sorted(BAD))
def test_error_messages_identical(name):
    data = BAD[name]
    msg = error_message(data, use_c=True)
    assert msg == error_message(data, use_c=False)
    assert "dets.txt: line " in msg


@needs_c
def test_nul_in_id_gives_python_result():
    """A NUL makes the C scanner give up; whatever the Python parser says is the answer."""
    assert_same(b"a\x00b 1 2 3 4 5\n")


@pytest.mark.parametrize("use_c", [True, False])
def test_file_errors_identical(tmp_path, use_c, monkeypatch):
    if not use_c:
        monkeypatch.setattr(voc, "_textscan", None)
    elif textscan is None:
        pytest.skip("deteval._textscan not built")
    path = tmp_path / "comp4_det_test_car.txt"
    path.write_bytes(b"a 1 2 3 4 5\nb 1 2 3 4\n")
    with pytest.raises(InputError, match=r"line 2: Expected 6 fields"):
        voc._parse_detection_file(path)
    path.write_bytes(b"a 1 2 3 4 5\x00\n")
    with pytest.raises(InputError, match="binary data"):
        voc._parse_detection_file(path)
    path.write_bytes("é 0.5 1 2 3 4\n".encode())
    ids, values, lines = voc._parse_detection_file(path)
    assert ids == ["é"] and values.tolist() == [[0.5, 1, 2, 3, 4]] and lines.tolist() == [1]


# ------------------------------------------------------------------------ id mapping


def dict_lookup(image_ids, raw_ids):
    index = {image_id: i for i, image_id in enumerate(image_ids)}
    return [index.get(bytes(r).decode("utf-8", "replace"), -1) for r in raw_ids]


@pytest.mark.parametrize("width", ["narrow", "wide", "mixed"])
def test_image_index_matches_dict(width):
    rng = random.Random(5)
    lengths = {"narrow": [1, 6, 8], "wide": [9, 12, 30], "mixed": [1, 6, 8, 9, 20]}[width]
    chars = ID_CHARS.encode("ascii", "ignore").decode() if width == "narrow" else ID_CHARS
    image_ids = ["".join(rng.choice(chars) for _ in range(rng.choice(lengths)))
                 for _ in range(300)]
    image_ids += image_ids[:10]  # repeated ids: the last position wins, as in a dict
    image_ids += ["\ufffd", "a\ufffd"]
    index = voc._ImageIndex(np.array(image_ids, dtype=object))
    raw = [s.encode() for s in rng.choices(image_ids, k=2000)]
    raw_known = list(raw)
    raw += [b"\xff", b"a\xff", b"\xff" * 9]  # invalid UTF-8: decodes to U+FFFD as before
    got = index(voc._id_array(raw))
    assert got.tolist() == dict_lookup(image_ids, raw)
    got_obj = index(np.array(raw_known, dtype=object))
    assert got_obj.tolist() == dict_lookup(image_ids, raw_known)


def test_image_index_unknown_ids():
    index = voc._ImageIndex(np.array(["000001", "000002", "abcdefghijk"], dtype=object))
    got = index(voc._id_array([b"000002", b"000003", b"000001", b"abcdefghij",
                               b"abcdefghijk", b"00000200"]))
    assert got[0] == 1 and got[1] == -1  # rows after the first unknown id may stay -1
    got = index(voc._id_array([b"abcdefghijk", b"000001", b"000002"]))
    assert got.tolist() == [2, 0, 1]
    assert voc._ImageIndex(np.array([], dtype=object))(voc._id_array([b"x"])).tolist() == [-1]
    assert voc._ImageIndex(np.array([1, 2], dtype=object))(voc._id_array([b"1"])).tolist() == [-1]


@pytest.mark.parametrize("use_c", [True, False])
def test_very_long_id_is_kept_as_object_array(use_c):
    if use_c and textscan is None:
        pytest.skip("deteval._textscan not built")
    long_id = b"L" * 20000
    data = b"".join(b"a%d 1 2 3 4 5\n" % i for i in range(1000)) + long_id + b" 1 2 3 4 5\n"
    ids, values, lines = parse(data, use_c)
    assert ids.dtype == object and ids.tolist()[-1] == long_id and ids.tolist()[0] == b"a0"
    names = [f"a{i}" for i in range(1000)] + [long_id.decode()]
    got = voc._ImageIndex(np.array(names, dtype=object))(ids)
    assert got.tolist() == list(range(1001))


@pytest.mark.parametrize("use_c", [True, False])
def test_load_voc_detections_same_with_and_without_c(tmp_path, monkeypatch, use_c):
    if use_c and textscan is None:
        pytest.skip("deteval._textscan not built")
    if not use_c:
        monkeypatch.setattr(voc, "_textscan", None)
    rng = random.Random(11)
    image_ids = sorted({id_token(rng) for _ in range(200)})

    class GT:
        pass
    gt = GT()
    gt.image_ids = np.array(image_ids, dtype=object)
    gt.class_names = ("car", "dog")
    for cls in gt.class_names:
        lines = [f"{rng.choice(image_ids)} {rng.random():.6f} {rng.uniform(0, 10):.1f} "
                 f"{rng.uniform(0, 10):.1f} {rng.uniform(10, 20):.1f} {rng.uniform(10, 20):.1f}"
                 for _ in range(500)]
        (tmp_path / f"comp4_det_test_{cls}.txt").write_text("\n".join(lines) + "\n")
    det = voc.load_voc_detections(tmp_path, gt)
    # reference: the dict mapping of the Python parser's ids
    ref_img = []
    for cls in gt.class_names:
        ids, _, _ = voc._parse_detection_bytes((tmp_path / f"comp4_det_test_{cls}.txt")
                                               .read_bytes(), Path("x"))
        ref_img += dict_lookup(image_ids, ids.tolist())
    assert det.image_idx.tolist() == ref_img
    # an unknown id: same message either way
    (tmp_path / "comp4_det_test_dog.txt").write_text(
        f"{image_ids[0]} 0.5 1 1 2 2\n\nnot-an-image 0.5 1 1 2 2\n")
    with pytest.raises(InputError) as info:
        voc.load_voc_detections(tmp_path, gt)
    assert str(info.value) == (f"{tmp_path / 'comp4_det_test_dog.txt'}: line 3: Expected image "
                               f"ids of the image set but got 'not-an-image', which is not in it")


def test_number_generator_is_valid():
    rng = random.Random(0)
    for _ in range(2000):
        assert not math.isnan(float(number_token(rng)))
