"""The C scanner for COCO results files (``_textscan.scan_coco_results``) against msgspec
and the stdlib json: whenever it accepts a file, its columns equal the decoded ones bit
for bit; anything outside its subset returns None (the caller decodes as before)."""
import copy
import json
import random

import msgspec
import numpy as np
import pytest

import deteval
import deteval.io.coco as coco
try:
    from mutation import mutate
except ImportError:  # tests/ imported as a package
    from tests.mutation import mutate

try:
    import coco_gen
except ImportError:  # tests/ imported as a package
    from tests import coco_gen

scan = getattr(coco._textscan, "scan_coco_results", None)
pytestmark = pytest.mark.skipif(scan is None, reason="C extension not built")


def decoded_columns(raw: bytes):
    """The msgspec columns of ``raw``, or None if msgspec (the fast path) rejects it."""
    try:
        fast = coco._RESULTS.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    img = np.array([r.image_id for r in fast], dtype=object)
    cat = np.array([r.category_id for r in fast], dtype=object)
    scores = np.array([r.score for r in fast], dtype=np.float64).reshape(-1)
    boxes = np.array([r.bbox for r in fast], dtype=np.float64).reshape(-1, 4)
    return img, cat, scores, boxes


def check(raw: bytes) -> bool:
    """Assert the scanner agrees with msgspec and json on ``raw``; True if it accepted."""
    got = coco._scanned_results(raw)
    if got is None:
        return False
    want = decoded_columns(raw)
    assert want is not None, f"scanner accepted what msgspec rejects: {raw[:200]!r}"
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert np.array_equal(got[2].view(np.int64), want[2].view(np.int64)), raw[:200]
    assert np.array_equal(got[3].view(np.int64), want[3].view(np.int64)), raw[:200]
    # the stdlib reading agrees too (the slow path the errors come from)
    data = json.loads(raw)
    assert [float(r["score"]) for r in data] == got[2].tolist()
    return True


def test_generated_cases_are_scanned():
    for seed in range(30):
        case = coco_gen.generate_case(seed)
        for raw in (json.dumps(case.results).encode(),
                    json.dumps(case.results, indent=2).encode(),
                    json.dumps(case.results, separators=(",", ":")).encode()):
            accepted = check(raw)
            extra = any(set(r) - {"image_id", "category_id", "bbox", "score"}
                        for r in case.results)
            assert accepted or extra, case  # plain records are always in the subset


RECORD = b'{"image_id": 7, "category_id": 2, "bbox": [1.5, 2, 30.25, 4e1], "score": 0.93}'


@pytest.mark.parametrize("raw, expect", [
    (b"[]", (0, [], [], [], [])),
    (b" \n[\t" + RECORD + b" ]\r\n", (1, [7], [2], [0.93], [1.5, 2.0, 30.25, 40.0])),
    (b'[{"score": -0, "bbox": [-0, 0, 1, 2], "category_id": -3, "image_id": 0}]',
     (1, [0], [-3], [0.0], [0.0, 0.0, 1.0, 2.0])),
    (b'[{"image_id": 1, "category_id": 2, "bbox": [0, 0, 1, 1], "score": -0.0, '
     b'"segmentation": {"size": [2, 2], "counts": "a\\"b\\\\c\\u00e9"}, "area": 1.5, '
     b'"id": null, "x": [true, false, [], {}]}]',
     (1, [1], [2], [-0.0], [0.0, 0.0, 1.0, 1.0])),
    (b'[{"image_id": 1, "category_id": 1, "bbox": [84.54933346501973, 1e-320, 1e300, '
     b'0.1234567890123456789], "score": 2.5e-8}]',
     (1, [1], [1], [2.5e-8], [84.54933346501973, 1e-320, 1e300, 0.1234567890123456789])),
    (b'[{"image_id": 9223372036854775807, "category_id": -9223372036854775808, '
     b'"bbox": [0, 0, 1, 1], "score": 1}]',
     (1, [2 ** 63 - 1], [-2 ** 63], [1.0], [0.0, 0.0, 1.0, 1.0])),
])
def test_accepted(raw, expect):
    n, img, cat, scores, boxes = expect
    got = coco._scanned_results(raw)
    assert got is not None
    assert got[0].tolist() == img and got[1].tolist() == cat
    assert got[2].tolist() == scores and got[3].reshape(-1).tolist() == boxes
    assert [np.signbit(v) for v in got[2]] == [np.signbit(v) for v in scores]
    assert [np.signbit(v) for v in got[3].reshape(-1)] == [np.signbit(v) for v in boxes]
    check(raw)


REJECTED = [
    b"", b"{}", b'{"annotations": []}', b"[", b"[,]", b"[] x", b"\xef\xbb\xbf[]",
    b"[" + RECORD + b",]",                                       # trailing comma
    b"[" + RECORD.replace(b'"image_id": 7', b'"image_id": 7.0') + b"]",   # float id
    b"[" + RECORD.replace(b'"image_id": 7', b'"image_id": 07') + b"]",    # leading zero
    b"[" + RECORD.replace(b'"image_id": 7', b'"image_id": "7"') + b"]",   # string id
    b"[" + RECORD.replace(b'"image_id": 7', b'"image_id": 9223372036854775808') + b"]",
    b"[" + RECORD.replace(b'"image_id": 7, ', b"") + b"]",               # missing key
    b"[" + RECORD.replace(b'"score": 0.93', b'"score": 0.93, "score": 0.5') + b"]",
    b"[" + RECORD.replace(b"0.93", b"NaN") + b"]",
    b"[" + RECORD.replace(b"0.93", b"Infinity") + b"]",
    b"[" + RECORD.replace(b"0.93", b".93") + b"]",
    b"[" + RECORD.replace(b"0.93", b"1.") + b"]",
    b"[" + RECORD.replace(b"0.93", b"+1") + b"]",
    b"[" + RECORD.replace(b"0.93", b"1e400") + b"]",              # overflows a double
    b"[" + RECORD.replace(b"0.93", b"-1E+999") + b"]",
    b"[" + RECORD.replace(b"0.93", b"0." + b"1" * 70) + b"]",     # a 72-byte token
    b"[" + RECORD.replace(b"0.93", b"true") + b"]",
    b"[" + RECORD.replace(b"[1.5, 2, 30.25, 4e1]", b"[1, 2, 3]") + b"]",
    b"[" + RECORD.replace(b"[1.5, 2, 30.25, 4e1]", b"[1, 2, 3, 4, 5]") + b"]",
    b"[" + RECORD.replace(b'"image_id"', b'"image\\u005fid"') + b"]",   # escaped key
    b"[" + RECORD.replace(b"}", b', "note": "caf\xc3\xa9"}') + b"]",   # non-ASCII string
    b"[" + RECORD.replace(b"}", b', "note": "a\tb"}') + b"]",         # control character
    b"[" + RECORD.replace(b"}", b', "deep": ' + b"[" * 40 + b"]" * 40 + b"}") + b"]",
    b"[" + RECORD + b"] []",
    b"[" + RECORD + b"]\x00",
]


@pytest.mark.parametrize("raw", REJECTED)
def test_rejected(raw):
    assert scan(raw) is None


def test_load_results_same_with_and_without_scanner(monkeypatch):
    for seed in range(10):
        case = coco_gen.generate_case(seed)
        on = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results))
        with monkeypatch.context() as m:
            m.setattr(coco, "_textscan", None)
            off = deteval.evaluate_coco(copy.deepcopy(case.gt), copy.deepcopy(case.results))
        assert on.to_dict() == off.to_dict()


def test_files_same_with_and_without_scanner(monkeypatch, tmp_path):
    """Through files (the scanner only reads files), including one the post-checks
    refuse (a negative width) and one outside the subset: same tables or same error."""
    case = coco_gen.generate_case(3)
    gt = coco.load_coco_ground_truth(copy.deepcopy(case.gt))
    variants = {
        "plain": case.results,
        "negative_w": [dict(r, bbox=[r["bbox"][0], r["bbox"][1], -1.0, r["bbox"][3]])
                       if k == 2 else r for k, r in enumerate(case.results)],
        "float_id": [dict(r, image_id=float(r["image_id"])) if k == 1 else r
                     for k, r in enumerate(case.results)],
    }
    for name, results in variants.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(results))

        def load():
            try:
                return coco.load_coco_results(path, gt)
            except deteval.InputError as exc:
                return str(exc)
        on = load()
        with monkeypatch.context() as m:
            m.setattr(coco, "_textscan", None)
            off = load()
        if isinstance(on, str):
            assert on == off and name != "plain"
        else:
            for f in ("image_idx", "class_idx", "boxes", "scores", "order"):
                assert np.array_equal(getattr(on, f), getattr(off, f)), (name, f)


ALPHABET = b'[]{},:"\\ 0123456789.-+eE\ntrufalsn_idxbcoyg\x00\xc3'


def _fuzz(seed, n):
    rng = random.Random(seed)
    base = [b"[" + RECORD + b", " + RECORD.replace(b"7", b"8") + b"]",
            json.dumps(coco_gen.generate_case(seed).results[:5]).encode()]
    accepted = 0
    for _ in range(n):
        accepted += check(mutate(rng.choice(base), rng, ALPHABET))
    return accepted


def test_mutation_fuzz():
    assert _fuzz(11, 3000) > 150  # >5% of the mutants reach the accepting path


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_mutation_fuzz_sweep(seed):
    _fuzz(500 + seed, 20000)
