"""The classic matchers vidcorr is compared with (vidcorr.evaluation.peers)."""

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.evaluation import peers
from vidcorr.readout.pyramid import warp


def _textured(rng, h=64, w=96):
    from scipy import ndimage
    noise = rng.rand(h, w, 3)
    return np.clip(ndimage.gaussian_filter(noise, (1.5, 1.5, 0)) * 2.5 - 0.75, 0, 1)


def test_zero_and_unknown_peers():
    a = np.zeros((8, 10, 3), np.float32)
    np.testing.assert_array_equal(peers.dense_flow("zero", a, a), np.zeros((8, 10, 2)))
    assert peers.peer_available("zero") == (True, "")
    with pytest.raises(UserError, match="unknown dense method"):
        peers.dense_flow("raft", a, a)


def test_dis_recovers_a_whole_pixel_shift():
    pytest.importorskip("cv2")
    rng = np.random.RandomState(0)
    image = _textured(rng)
    shifted = np.roll(image, (2, -3), axis=(0, 1))  # content moves by (dx, dy) = (-3, 2)
    flow = peers.dense_flow("dis", image, shifted)
    inner = flow[10:-10, 10:-10].reshape(-1, 2)
    np.testing.assert_allclose(np.median(inner, axis=0), [-3, 2], atol=0.25)


def test_midpoint_warp_of_a_static_pair_is_the_frame():
    pytest.importorskip("cv2")
    image = _textured(np.random.RandomState(1)).astype(np.float32)
    np.testing.assert_allclose(peers.midpoint_warp(image, image), image, atol=2e-3)


def test_sift_finds_a_translation():
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "SIFT_create"):
        pytest.skip("OpenCV without SIFT")
    image = _textured(np.random.RandomState(2), 128, 160)
    moved = warp(image, np.broadcast_to(np.array([4.0, -2.0], np.float32), (128, 160, 2)))
    p1, p3 = peers.sift_matches(image, moved)  # moved(x) = image(x + (4, -2))
    assert len(p1) >= 10
    np.testing.assert_allclose(np.median(p3 - p1, axis=0), [-4, 2], atol=0.3)
