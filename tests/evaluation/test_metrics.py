"""Match metrics and SSIM against hand-computed values and closed forms."""

import numpy as np
import pytest

from vidcorr.evaluation.groundtruth import GroundTruth, from_disparity
from vidcorr.evaluation.metrics import coverage_accuracy, dense_to_matches, endpoint_errors, \
    match_metrics, ssim


def _truth():
    flow = np.zeros((4, 5, 2), np.float32)
    flow[..., 0] = 2.0  # everything moves 2 px right
    valid = np.ones((4, 5), bool)
    valid[3, 4] = False
    return GroundTruth(flow, valid)


def test_match_metrics_by_hand():
    truth = _truth()
    p1 = np.array([[0, 0], [1, 1], [2.4, 1.6], [4, 3], [9, 9], [3, 0]], np.float64)
    # errors: exact, 1.0 (v off by one), 3.0, invalid gt, outside, 5 (u off by 3, v by 4)
    p3 = p1 + np.array([[2, 0], [2, 1], [5, 0], [2, 0], [2, 0], [5, 4]])
    errors, scored = endpoint_errors(p1, p3, truth)
    np.testing.assert_array_equal(scored, [True, True, True, False, False, True])
    np.testing.assert_allclose(errors, [0.0, 1.0, 3.0, 5.0])
    m = match_metrics(p1, p3, truth, grid_points=[[0, 0], [2, 2], [4, 3], [1, 1]])
    assert m["acc@1"] == 0.5 and m["acc@2"] == 0.5 and m["acc@5"] == 1.0 and m["acc@10"] == 1.0
    assert m["mean_epe"] == pytest.approx(9.0 / 4) and m["median_epe"] == pytest.approx(2.0)
    assert m["matches"] == 4
    assert m["coverage"] == pytest.approx(4 / 3.0)  # 3 of the 4 grid points have valid gt
    # The most confident quarter / half of the 4 scored matches (errors 0, 1, 3, 5); the
    # confidences of unscored matches are dropped with them.
    conf = np.array([0.1, 0.2, 0.9, 1.0, 1.0, 0.8])  # scored: 0.1, 0.2, 0.9, 0.8
    m = match_metrics(p1, p3, truth, grid_points=[[0, 0]], confidence=conf)
    assert m["acc@1/25%"] == 0.0 and m["acc@5/25%"] == 1.0  # top 1: error 3
    assert m["acc@1/50%"] == 0.0 and m["acc@5/50%"] == 1.0  # top 2: errors 3 and 5 (<= 5)

    assert match_metrics(p1, p3, truth)["coverage"] is None


def test_metrics_with_disparity_ground_truth():
    disp = np.full((3, 6), 2.0)
    disp[0, 0] = np.inf
    truth = from_disparity(disp)
    p1 = np.array([[3.0, 1.0], [0.0, 0.0]])
    right = p1 - [[2.0, 0.0], [2.0, 0.0]]  # right x = left x - d
    m = match_metrics(p1, right, truth)
    assert m["matches"] == 1 and m["acc@1"] == 1.0 and m["median_epe"] == 0.0
    wrong_sign = match_metrics(p1, p1 + [[2.0, 0.0], [2.0, 0.0]], truth)
    assert wrong_sign["median_epe"] == pytest.approx(4.0)


def test_empty_matches_give_nan():
    m = match_metrics(np.zeros((0, 2)), np.zeros((0, 2)), _truth())
    assert m["matches"] == 0 and np.isnan(m["acc@5"]) and np.isnan(m["median_epe"])


def test_dense_to_matches_samples_at_grid_points():
    flow = np.zeros((3, 4, 2))
    flow[2, 1] = [0.5, -1.0]
    p1, p3 = dense_to_matches(flow, [[1, 2], [0, 0]])
    np.testing.assert_array_equal(p1, [[1, 2], [0, 0]])
    np.testing.assert_array_equal(p3, [[1.5, 1.0], [0, 0]])


def test_ssim_closed_forms():
    pytest.importorskip("skimage.metrics")
    rng = np.random.RandomState(0)
    x = rng.rand(24, 30, 3)
    assert ssim(x, x) == pytest.approx(1.0)
    # constant images: variances vanish, SSIM = (2 a b + C1) / (a^2 + b^2 + C1)
    a, b, c1 = 0.2, 0.6, 0.01 ** 2
    expected = (2 * a * b + c1) / (a * a + b * b + c1)
    assert ssim(np.full((20, 20), a), np.full((20, 20), b)) == pytest.approx(expected, rel=1e-9)
    # an inverted image: in each window mu_y = 1 - mu_x, var_y = var_x = v and cov = -v, so
    # SSIM = (positive luminance term) * (C2 - 2v) / (2v + C2), negative wherever 2v > C2
    assert ssim(x, 1.0 - x) < 0


def test_coverage_accuracy_ranks_by_confidence_or_at_random():
    errors = np.arange(10, dtype=float)  # 0..9 px
    best_first = coverage_accuracy(errors, -errors, fractions=(0.3, 1.0), thresholds=(2,))
    assert best_first == {"acc@2/30%": 1.0, "acc@2/100%": 0.3}
    worst_first = coverage_accuracy(errors, errors, fractions=(0.3,), thresholds=(2,))
    assert worst_first == {"acc@2/30%": 0.0}
    big = np.r_[np.zeros(500), np.full(500, 9.0)]
    random = coverage_accuracy(big, None, fractions=(0.5,), thresholds=(1,))["acc@1/50%"]
    assert 0.4 < random < 0.6  # a random half holds about half of the good matches
