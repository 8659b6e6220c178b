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


def _bilateral_reference(field, conf, sigma, sigma_range, floor, step=2):
    """The separable joint bilateral in numpy, tap by tap (rows, then columns), its taps
    every ``step``-th of a Gaussian to 4 sigma (the radius rounded up to a multiple of the
    step), symmetric padding, float64."""
    r = int(np.ceil(np.ceil(4 * sigma) / step)) * step
    g = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    g /= g.sum()
    f = field.astype(np.float64)
    w = conf.astype(np.float64)[..., None].clip(0) + 1e-3
    for axis in (1, 0):  # along rows, then along columns
        n = f.shape[axis]
        pad = [(0, 0)] * 3
        pad[axis] = (r, r)
        pf, pw = np.pad(f, pad, mode="symmetric"), np.pad(w, pad, mode="symmetric")
        num, den = np.zeros_like(f), np.zeros_like(w)
        for k in range(0, 2 * r + 1, step):
            fn = np.take(pf, np.arange(k, k + n), axis=axis)
            wn = np.take(pw, np.arange(k, k + n), axis=axis)
            d2 = ((fn - f) ** 2).sum(-1, keepdims=True)
            t = g[k] * wn * (np.exp(-d2 / (2 * sigma_range ** 2)) + floor)
            num += t * fn
            den += t
        f, w = num / den, den
    return f


def test_bilateral_smoothing_equals_numpy_reference(sess, rng):
    """Two random fields with a step between halves, sizes unknown until run time, one of
    them narrower than the Gaussian's reach (mirrored periodically)."""
    from vidcorr.readout.kernel.smoothing import smooth_field

    f_in = tf.placeholder(tf.float32, [None, None, None, 4])
    c_in = tf.placeholder(tf.float32, [None, None, None])
    out = smooth_field(f_in, c_in, 0, 2.0, 0.8, 0.05)
    for h, w in ((20, 24), (6, 9)):
        field = rng.randn(2, h, w, 4).astype(np.float32)
        field[:, :, w // 2:] += 3.0
        conf = rng.rand(2, h, w).astype(np.float32) - 0.1  # a few negative weights
        got = sess.run(out, {f_in: field, c_in: conf})
        for i in range(2):
            np.testing.assert_allclose(got[i], _bilateral_reference(field[i], conf[i], 2.0, 0.8,
                                                                    0.05), rtol=1e-4, atol=1e-5)


def test_bilateral_with_a_wide_range_is_the_weighted_gaussian_of_its_taps(sess, rng):
    """With the range far wider than the field's span or infinite, the two passes make the
    confidence-weighted average by the Gaussian sampled at every second tap (zeros at the
    odd offsets), separable, as scipy's correlation over the mirrored field computes it."""
    from scipy import ndimage

    from vidcorr.readout.kernel.smoothing import RANGE_STEP, smooth_field

    field = rng.randn(18, 22, 4) * 3
    conf = rng.rand(18, 22)
    f_in, c_in = (tf.constant(x[None].astype(np.float32)) for x in (field, conf))
    # the bilateral with a wide range, with an infinite one read at run time, and the
    # infinite range known when the graph is built (two depthwise convolutions)
    wide, run_time, built = sess.run(
        [smooth_field(f_in, c_in, 0, 3.0, width, 0.03)
         for width in (1e4, tf.constant(float("inf")), float("inf"))])
    r = 12  # 4 sigma, a multiple of the step
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / 3.0) ** 2)
    k[np.arange(-r, r + 1) % RANGE_STEP != 0] = 0

    def blur(x):
        x = np.pad(x, [(r, r), (r, r), (0, 0)], mode="symmetric")
        x = ndimage.correlate1d(ndimage.correlate1d(x, k, axis=1), k, axis=0)
        return x[r:-r, r:-r]

    weight = conf[..., None] + 1e-3
    expected = blur(weight * field) / blur(weight)
    for got in (wide, run_time, built):
        np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-4)
    assert np.ptp(expected[..., 0]) > 0.1


def test_bilateral_keeps_a_small_fast_object_the_gaussian_averages_away(sess, rng):
    """A disc of radius 4 moving 3 px more than its background, a little noise, a Gaussian
    of 5 px: the plain Gaussian pulls the disc's centre more than half way to the
    background; stopping at the boundary (range 1 px, floor 0.03) keeps it within 0.25 px
    and the background away from the disc within 0.05 px."""
    from vidcorr.readout.kernel.smoothing import smooth_field

    h, w = 40, 48
    yy, xx = np.mgrid[0:h, 0:w]
    disc = (yy - 20) ** 2 + (xx - 24) ** 2 <= 16
    field = 0.05 * rng.randn(1, h, w, 4).astype(np.float32)
    field[0][disc] += 3.0
    conf = tf.constant(np.full((1, h, w), 0.5, np.float32))
    plain, edge = sess.run([smooth_field(tf.constant(field), conf, 0, 5.0),
                            smooth_field(tf.constant(field), conf, 0, 5.0, 1.0, 0.03)])
    assert plain[0, 20, 24, 0] < 1.5
    assert abs(edge[0, 20, 24, 0] - 3.0) < 0.25
    far = (yy - 20) ** 2 + (xx - 24) ** 2 >= 100
    assert np.abs(edge[0][far]).max() < 0.05
