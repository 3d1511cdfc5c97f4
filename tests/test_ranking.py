"""Raw (non-interpolated) AP and ranked-list metrics: worked examples of semantics.md s.4."""

import numpy as np
import pytest

import deteval

# TP TP FP TP FP TP FP FP FP TP, 5 relevant items
REL10 = [1, 1, 0, 1, 0, 1, 0, 0, 0, 1]
# TP FP TP FP TP, 3 relevant items
REL5 = [1, 0, 1, 0, 1]


def test_precision_recall_table_10():
    p, r = deteval.precision_recall_at_k(REL10, 5)
    p, r = np.asarray(p), np.asarray(r)
    assert p.shape == r.shape == (10,)
    assert p.dtype.kind == "f" and r.dtype.kind == "f"
    want_p = [1, 1, 2 / 3, 3 / 4, 3 / 5, 4 / 6, 4 / 7, 4 / 8, 4 / 9, 5 / 10]
    want_r = [.2, .4, .4, .6, .6, .8, .8, .8, .8, 1.0]
    np.testing.assert_allclose(p, want_p, rtol=0, atol=1e-15)
    np.testing.assert_allclose(r, want_r, rtol=0, atol=1e-15)
    # the rounded table as printed in the literature
    np.testing.assert_allclose(p, [1, 1, .667, .75, .6, .667, .571, .5, .444, .5], atol=5e-4)


def test_precision_recall_table_5():
    p, r = deteval.precision_recall_at_k(REL5, 3)
    np.testing.assert_allclose(p, [1, 1 / 2, 2 / 3, 2 / 4, 3 / 5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(r, [1 / 3, 1 / 3, 2 / 3, 2 / 3, 1], rtol=0, atol=1e-15)


def test_bool_relevance():
    p1, r1 = deteval.precision_recall_at_k([bool(x) for x in REL5], 3)
    p2, r2 = deteval.precision_recall_at_k(np.array(REL5, dtype=bool), 3)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_allclose(p1, [1, 1 / 2, 2 / 3, 2 / 4, 3 / 5], rtol=0, atol=1e-15)


def test_average_precision_raw_worked_example():
    # 0.2 + 0.2 + 0.75*0.2 + (4/6)*0.2 + 0.5*0.2 = 0.78333...
    ap = deteval.average_precision_raw(REL10, 5)
    assert isinstance(ap, float)
    assert ap == pytest.approx(0.2 + 0.2 + 0.75 * 0.2 + (4 / 6) * 0.2 + 0.5 * 0.2,
                               abs=1e-12, rel=0)
    assert ap == pytest.approx(0.7833333333333333, abs=1e-12, rel=0)


def test_average_precision_raw_second_example():
    # TP FP TP FP TP, 3 relevant: (1 + 2/3 + 3/5) / 3
    ap = deteval.average_precision_raw(REL5, 3)
    assert ap == pytest.approx((1 + 2 / 3 + 3 / 5) / 3, abs=1e-12, rel=0)


def test_average_precision_raw_missed_relevant():
    # only 2 of 4 relevant items retrieved: (1 + 1) * 0.25 = 0.5, no interpolation
    assert deteval.average_precision_raw([1, 1, 0], 4) == pytest.approx(0.5, abs=1e-12, rel=0)
    # nothing relevant retrieved
    assert deteval.average_precision_raw([0, 0, 0], 2) == 0.0


def test_raw_ap_is_not_interpolated():
    # FP TP TP with 2 relevant: raw = 0.5*(1/2) + 0.5*(2/3) = 0.58333;
    # the VOC envelope would give 2/3.
    ap = deteval.average_precision_raw([0, 1, 1], 2)
    assert ap == pytest.approx(0.5 * 0.5 + 0.5 * (2 / 3), abs=1e-12, rel=0)


def test_fbeta():
    # F2 with P = .5, R = .6: 5 * .3 / (4 * .5 + .6) = 1.5 / 2.6 = 0.5769...
    f2 = deteval.fbeta_score(0.5, 0.6, beta=2.0)
    assert f2 == pytest.approx(1.5 / 2.6, abs=1e-12, rel=0)
    assert round(f2, 4) == 0.5769
    # F1 is the harmonic mean (default beta)
    assert deteval.fbeta_score(0.5, 0.6) == pytest.approx(2 * 0.3 / 1.1, abs=1e-12, rel=0)
    assert deteval.fbeta_score(1.0, 1.0) == pytest.approx(1.0, abs=1e-12, rel=0)
