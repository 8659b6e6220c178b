"""The smoothing of handed-on fields (vidcorr.readout.kernel.smoothing) against scipy."""

import os
import numpy as np
import pytest
from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.inference import find_model, fold_batch_norm
from vidcorr.readout.kernel.graph import LevelGraph as _Level
from vidcorr.readout.matching import DEFAULT_MODEL, Matcher
K = 5  # the random kernel checkpoint's kernel size (tests/conftest.py)


def test_graph_smoothing_equals_scipy_median_and_weighted_gaussian(sess, rng):
    """Over the whole image, the border included: the graph pads by repeating the edge
    pixel (``SYMMETRIC``), which is scipy's ``mode="reflect"``."""
    from scipy import ndimage

    from vidcorr.readout.kernel.smoothing import smooth_field

    field = rng.randn(40, 48, 4).astype(np.float32)
    field[10, 10] = 50.0  # an outlier the median removes
    conf = rng.rand(40, 48).astype(np.float32)
    median = np.stack([ndimage.median_filter(field[..., c], 9, mode="reflect")
                       for c in range(4)], -1)
    got = sess.run(smooth_field(tf.constant(field[None]), tf.constant(conf[None]), 9, 0))[0]
    np.testing.assert_allclose(got, median, atol=1e-6)
    assert abs(got[10, 10, 0]) < 5
    weight = conf.astype(np.float64)[..., None] + 1e-3
    blur = lambda x: np.stack([ndimage.gaussian_filter(x[..., c], 3.0, mode="reflect",  # noqa
                                                       truncate=4.0) for c in range(x.shape[2])], -1)
    expected = blur(weight * median) / blur(weight)
    got = sess.run(smooth_field(tf.constant(field[None]), tf.constant(conf[None]), 9, 3.0))[0]
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_smoothing_takes_fields_smaller_than_its_reach(sess, rng):
    """A 6x9 field under a median of 9 and a Gaussian of 3 px (reach 12): the border is
    mirrored periodically (numpy's ``symmetric`` padding of any width) and the Gaussian
    keeps its 4 sigma, as a direct numpy sum over that padding computes them; sizes
    unknown until run time, two fields in a batch."""
    from vidcorr.readout.kernel.smoothing import smooth_field

    h, w = 6, 9
    field = rng.randn(2, h, w, 4).astype(np.float32)
    conf = rng.rand(2, h, w).astype(np.float32)
    f_in = tf.placeholder(tf.float32, [None, None, None, 4])
    c_in = tf.placeholder(tf.float32, [None, None, None])
    got = sess.run(smooth_field(f_in, c_in, 9, 3.0), {f_in: field, c_in: conf})

    def gauss(r):
        g = np.exp(-0.5 * (np.arange(-r, r + 1) / 3.0) ** 2)
        return g / g.sum()

    def blur(x):  # the separable Gaussian to 12 pixels, symmetric padding
        r = 12
        x = np.pad(x, [(r, r), (r, r), (0, 0)], mode="symmetric")
        g = gauss(r)
        x = np.stack([sum(g[k] * x[:, k:k + w, c] for k in range(2 * r + 1))
                      for c in range(x.shape[2])], -1)
        return np.stack([sum(g[k] * x[k:k + h, :, c] for k in range(2 * r + 1))
                         for c in range(x.shape[2])], -1)

    for i in range(2):
        padded = np.pad(field[i].astype(np.float64), [(4, 4), (4, 4), (0, 0)], mode="symmetric")
        median = np.empty((h, w, 4))
        for y in range(h):
            for x in range(w):
                median[y, x] = np.median(padded[y:y + 9, x:x + 9].reshape(-1, 4), axis=0)
        weight = conf[i].astype(np.float64)[..., None] + 1e-3
        np.testing.assert_allclose(got[i], blur(weight * median) / blur(weight), rtol=1e-4,
                                   atol=1e-5)
        assert np.ptp(got[i][..., 0]) > 1e-3  # not a constant: the test can tell filters apart
