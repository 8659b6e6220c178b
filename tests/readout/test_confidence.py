"""Match confidence: the Shi-Tomasi texture against numpy's eigenvalues; flat images give none."""

import numpy as np
import pytest

from vidcorr.readout.confidence import TEXTURE_SCALE, match_confidence, min_eigenvalue, peak_ratio, \
    texture_map
from vidcorr.errors import UserError
from vidcorr.readout.matching import Matcher


def test_min_eigenvalue_against_numpy(rng):
    image = rng.rand(20, 24, 3)
    gray = image.mean(axis=2)
    lam = min_eigenvalue(image, radius=2)
    gy, gx = np.gradient(gray)
    for y, x in [(5, 7), (10, 12), (14, 3)]:
        window = (slice(y - 2, y + 3), slice(x - 2, x + 3))
        j = np.array([[np.mean(gx[window] ** 2), np.mean(gx[window] * gy[window])],
                      [np.mean(gx[window] * gy[window]), np.mean(gy[window] ** 2)]])
        assert lam[y, x] == pytest.approx(np.linalg.eigvalsh(j)[0], rel=1e-9, abs=1e-15)


def test_texture_is_zero_on_flat_images_and_edges():
    flat = np.full((16, 16, 3), 0.4)
    np.testing.assert_array_equal(texture_map(flat), 0.0)
    yy, xx = np.mgrid[0:16, 0:16]
    ramp = np.repeat((0.02 * xx + 0.01 * yy)[..., None], 3, axis=2)  # one gradient direction
    np.testing.assert_allclose(texture_map(ramp), 0.0, atol=1e-9)
    checker = np.repeat((((yy // 2) + (xx // 2)) % 2)[..., None], 3, axis=2).astype(float)
    assert texture_map(checker)[4:12, 4:12].min() > 0.99
    lam = min_eigenvalue(checker)
    np.testing.assert_allclose(texture_map(checker, scale=TEXTURE_SCALE),
                               lam / (lam + TEXTURE_SCALE))


def test_peak_ratio_and_confidence():
    ratio = peak_ratio(np.array([[2.0, 4.0], [0.0, 1.0]]), np.array([[1.0, 1.0], [0.0, 0.5]]))
    np.testing.assert_allclose(ratio, [0.5, 0.0])  # min over frames; no peak: 0
    rng = np.random.RandomState(0)
    # faint textures (the texture term between 0 and 1): frame t fainter on the left half,
    # frame t+2 on the right, so each match's two ends read different textures
    left = (np.arange(32) < 16)[None, :, None]
    frame_t = 0.5 + np.where(left, 0.008, 0.03) * rng.rand(32, 32, 3)
    frame_t2 = 0.5 + np.where(left, 0.03, 0.008) * rng.rand(32, 32, 3)
    flat = np.full((32, 32, 3), 0.5)
    # each end in its own frame, at positions that round to different pixels
    pos = np.array([[[10.2, 11.7], [22.6, 10.4]], [[24.4, 20.0], [8.0, 21.0]]])  # [2, 2, 2]
    conf = match_confidence(np.array([0.5, 0.8]), frame_t, frame_t2, pos)

    def texture(image, x, y, radius=4):  # Shi-Tomasi from numpy's eigenvalues, at a pixel
        gy, gx = np.gradient(image.mean(axis=2))
        window = (slice(y - radius, y + radius + 1), slice(x - radius, x + radius + 1))
        j = np.array([[np.mean(gx[window] ** 2), np.mean(gx[window] * gy[window])],
                      [np.mean(gx[window] * gy[window]), np.mean(gy[window] ** 2)]])
        lam = np.linalg.eigvalsh(j)[0]
        return lam / (lam + TEXTURE_SCALE)

    expected = [0.5 * min(texture(frame_t, 10, 12), texture(frame_t2, 23, 10)),
                0.8 * min(texture(frame_t, 24, 20), texture(frame_t2, 8, 21))]
    np.testing.assert_allclose(conf, expected, rtol=1e-9)
    assert 0.05 < min(conf / [0.5, 0.8]) and max(conf / [0.5, 0.8]) < 0.95, conf
    np.testing.assert_array_equal(match_confidence(np.array([0.5, 0.8]), frame_t, flat, pos), 0)


def test_flat_pair_gives_no_valid_matches(random_kernel_checkpoint, rng):
    matcher = Matcher(random_kernel_checkpoint, levels=1, refine="none")
    flat = np.full((32, 64, 3), 0.5, np.float32)
    m = matcher.match(flat, flat, stride=8)
    np.testing.assert_array_equal(m.confidence, 0.0)
    assert not m.valid.any()
    textured = rng.rand(32, 64, 3).astype(np.float32)
    m = matcher.match(textured, textured, stride=8)
    assert m.valid.mean() > 0.5 and m.confidence.max() > 0.05
    everything = Matcher(random_kernel_checkpoint, levels=1, min_confidence=0.0)
    assert everything.match(flat, flat, stride=8).valid.all()
    with pytest.raises(UserError, match="min_confidence"):
        Matcher(random_kernel_checkpoint, min_confidence=1.5)
    matcher.close()
    everything.close()
