"""Engine building blocks against their slow, obvious equivalents."""
import numpy as np
import pytest

from deteval.match import candidate_pairs
from deteval.rank import ranked_order, stable_rank_order


@pytest.mark.parametrize("seed", range(30))
def test_ranked_order_is_a_stable_sort_by_major_then_descending_score(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    scores = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # many ties
    scores[rng.random(n) < 0.2] = 0.0
    scores[rng.random(n) < 0.1] = -0.0  # equal to 0.0: a tie, not a lower score
    scores[rng.random(n) < 0.02] = np.inf
    major = rng.integers(0, 6, n)
    expected = np.lexsort((np.arange(n), -scores, major))
    np.testing.assert_array_equal(ranked_order(major, scores), expected)
    tie = rng.permutation(n)
    np.testing.assert_array_equal(stable_rank_order(major, scores, tie),
                                  np.lexsort((tie, -scores, major)))


def test_candidate_pairs_lists_every_same_group_pair_in_gt_order():
    rng = np.random.default_rng(0)
    det_group = rng.integers(0, 7, 50)
    gt_group = rng.integers(0, 7, 30)
    pair_det, pair_gt, _ = candidate_pairs(det_group, gt_group)
    expected = [(d, g) for d in range(50) for g in range(30) if det_group[d] == gt_group[g]]
    assert list(zip(pair_det.tolist(), pair_gt.tolist())) == expected
