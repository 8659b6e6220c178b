"""The warp term's bilinear sampling against scipy and finite differences."""

import numpy as np
from scipy import ndimage

from vidcorr.compat import tf
from vidcorr.model.warping import bilinear_sample, warp_frames


def _sample_scipy(images, x, y):
    """Bilinear, positions clamped to the image (scipy's ``nearest`` mode)."""
    out = np.zeros(x.shape + (images.shape[-1],))
    for b in range(images.shape[0]):
        for c in range(images.shape[-1]):
            out[b, ..., c] = ndimage.map_coordinates(images[b, ..., c].astype(np.float64),
                                                     [y[b], x[b]], order=1, mode="nearest")
    return out


def test_bilinear_sample_matches_scipy_inside_and_outside(sess, rng):
    images = rng.rand(2, 7, 9, 3).astype(np.float32)
    x = rng.uniform(-3, 11, (2, 4, 5)).astype(np.float32)  # some beyond either side
    y = rng.uniform(-3, 9, (2, 4, 5)).astype(np.float32)
    x[0, 0, :3] = [0.0, 8.0, 3.0]  # whole pixels and the last column exactly
    y[0, 0, :3] = [0.0, 6.0, 2.0]
    got = sess.run(bilinear_sample(tf.constant(images), tf.constant(x), tf.constant(y)))
    np.testing.assert_allclose(got, _sample_scipy(images, x, y), atol=1e-5)
    np.testing.assert_allclose(got[0, 0, 0], images[0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(got[0, 0, 1], images[0, 6, 8], atol=1e-6)
    np.testing.assert_allclose(got[0, 0, 2], images[0, 2, 3], atol=1e-6)


def test_bilinear_sample_gradient_by_finite_differences(sess, rng):
    images = rng.rand(1, 6, 8, 2).astype(np.float32)
    x = rng.uniform(0.2, 6.8, (1, 3, 4)).astype(np.float64)
    y = rng.uniform(0.2, 4.8, (1, 3, 4)).astype(np.float64)
    x = np.floor(x) + np.clip(x - np.floor(x), 0.1, 0.9)  # away from the kinks
    y = np.floor(y) + np.clip(y - np.floor(y), 0.1, 0.9)
    weights = rng.randn(1, 3, 4, 2)
    xt = tf.constant(x.astype(np.float32))
    yt = tf.constant(y.astype(np.float32))
    objective = tf.reduce_sum(bilinear_sample(tf.constant(images), xt, yt) * weights)
    gx, gy = sess.run(tf.gradients(objective, [xt, yt]))
    eps = 1e-4
    f = lambda xx, yy: (_sample_scipy(images, xx, yy) * weights).sum(-1)  # per position
    np.testing.assert_allclose(gx, (f(x + eps, y) - f(x - eps, y)) / (2 * eps), atol=1e-4)
    np.testing.assert_allclose(gy, (f(x, y + eps) - f(x, y - eps)) / (2 * eps), atol=1e-4)


def test_warp_frames_samples_each_frame_by_its_own_offsets(sess, rng):
    frames = rng.rand(2, 10, 12, 6).astype(np.float32)
    offsets = rng.uniform(-2.5, 2.5, (2, 4, 5, 2, 2)).astype(np.float32)
    top, left = 3, 2
    got = sess.run(warp_frames(tf.constant(frames), tf.constant(offsets), top, left))
    assert got.shape == (2, 4, 5, 2, 3)
    for j in range(2):
        rows, cols = np.mgrid[top:top + 4, left:left + 5].astype(np.float64)
        x = cols[None] + offsets[..., j, 0]
        y = rows[None] + offsets[..., j, 1]
        want = _sample_scipy(frames[..., 3 * j:3 * j + 3], x, y)
        np.testing.assert_allclose(got[..., j, :], want, atol=1e-5)
    # Zero offsets give the window itself.
    zero = sess.run(warp_frames(tf.constant(frames), tf.zeros((2, 4, 5, 2, 2)), top, left))
    np.testing.assert_allclose(zero[..., 0, :], frames[:, 3:7, 2:7, :3], atol=1e-6)
    np.testing.assert_allclose(zero[..., 1, :], frames[:, 3:7, 2:7, 3:], atol=1e-6)
