"""TAP-Vid's metrics against hand-counted cases, and the two peers on a known motion."""

import numpy as np
import pytest

from vidcorr.evaluation.peers import peer_available
from vidcorr.evaluation.tracks import dis_tracks, drift, lk_tracks, tapvid_metrics


def test_tapvid_metrics_by_hand():
    truth = np.zeros((2, 3, 2))
    truth_visible = np.array([[True, True, False], [True, True, True]])
    tracks = truth.copy()
    tracks[0, 1] = [3.0, 0.0]  # 3 px off: within 4, 8, 16 only
    visible = np.array([[True, True, True], [True, True, True]])  # point 0 wrongly seen at t=2
    m = tapvid_metrics(tracks, visible, truth, truth_visible, np.array([0, 0]))
    # evaluated: t=1, 2 of both; visible truth there: (0,1), (1,1), (1,2)
    assert m["occlusion_accuracy"] == pytest.approx(3 / 4.0)
    assert m["delta_1"] == pytest.approx(2 / 3.0) and m["delta_4"] == pytest.approx(1.0)
    assert m["delta_avg"] == pytest.approx((2 / 3.0 * 2 + 3) / 5.0)
    # at 1 and 2 px: 2 true positives; false positives: (0,1) off and (0,2) hidden -> 2/5
    # at 4, 8, 16 px: 3 true positives, 1 false positive -> 3/4
    assert m["average_jaccard"] == pytest.approx((2 * 2 / 5.0 + 3 * 3 / 4.0) / 5.0)
    median, within = drift(tracks, truth, truth_visible, 1, np.array([0, 0]))
    assert median == pytest.approx(1.5) and within == 0.5


def _translating(frames=6, velocity=(0.5, 0.25)):
    rng = np.random.RandomState(0)
    from scipy import ndimage
    big = ndimage.gaussian_filter(rng.uniform(size=(120, 140, 3)), (2, 2, 0))
    big = np.clip(0.5 + 4 * (big - 0.5), 0, 1)
    out = []
    for t in range(frames):
        shifted = ndimage.shift(big, (velocity[1] * t, velocity[0] * t, 0), order=3, mode="reflect")
        out.append((shifted[20:84, 20:116] * 255).round().astype(np.uint8))
    return out


@pytest.mark.parametrize("method", ["dis", "lk"])
def test_the_peers_follow_a_translation(method):
    if not peer_available("dis")[0]:
        pytest.skip("OpenCV is not installed (the eval extra)")
    frames = _translating()
    queries = np.array([[30.0, 20.0], [60.0, 40.0], [48.5, 31.0]])
    tracks, visible = (dis_tracks if method == "dis" else lk_tracks)(frames, queries)
    truth = queries[:, None, :] + np.arange(6)[None, :, None] * np.array([0.5, 0.25])
    assert visible.all()
    np.testing.assert_allclose(tracks, truth, atol=0.3)
