"""The spline samplers (vidcorr.model.sampling) against scipy, closed forms and finite
differences; the bilinear one is tested with the warp in test_warping.py."""

import numpy as np
import pytest
from scipy import ndimage

from vidcorr.compat import tf
from vidcorr.model.sampling import bspline_columns, bspline_sample, sample_at, spline_prefilter


def _scipy(images, x, y, prefilter):
    """scipy's cubic spline (``prefilter``: interpolating; else the B-spline kernel on the
    pixels), positions clamped to the image, its border repeated (``nearest``)."""
    x = np.clip(x, 0, images.shape[2] - 1)
    y = np.clip(y, 0, images.shape[1] - 1)
    out = np.zeros(x.shape + (images.shape[-1],))
    for b in range(images.shape[0]):
        for c in range(images.shape[-1]):
            out[b, ..., c] = ndimage.map_coordinates(images[b, ..., c].astype(np.float64),
                                                     [y[b], x[b]], order=3,
                                                     prefilter=prefilter, mode="nearest")
    return out


def test_bspline_sample_matches_scipy_inside_and_outside(sess, rng):
    images = rng.rand(2, 7, 9, 3).astype(np.float32)
    x = rng.uniform(-3, 11, (2, 4, 5)).astype(np.float32)  # some beyond either side
    y = rng.uniform(-3, 9, (2, 4, 5)).astype(np.float32)
    x[0, 0, :2], y[0, 0, :2] = [0.0, 8.0], [0.0, 6.0]  # the first and last pixel exactly
    got = sess.run(bspline_sample(bspline_columns(images), tf.constant(x), tf.constant(y)))
    np.testing.assert_allclose(got, _scipy(images, x, y, prefilter=False), atol=1e-5)
    stacked = sess.run(sample_at(tf.constant(images), tf.constant(np.stack([x, y], -1)),
                                 "bspline"))
    np.testing.assert_array_equal(stacked, got)


def test_bspline_sample_keeps_a_constant_and_a_ramp(sess, rng):
    """The kernel's weights sum to 1 and reproduce linear functions: no smoothing there."""
    ys, xs = np.mgrid[0:8, 0:10].astype(np.float32)
    images = np.stack([np.full_like(xs, 0.3), 0.1 * xs - 0.05 * ys], -1)[None]  # [1, 8, 10, 2]
    x = rng.uniform(1, 7.9, (1, 5, 6)).astype(np.float32)  # two pixels from the right border
    y = rng.uniform(1, 5.9, (1, 5, 6)).astype(np.float32)
    got = sess.run(bspline_sample(bspline_columns(images), tf.constant(x), tf.constant(y)))
    np.testing.assert_allclose(got[..., 0], 0.3, atol=1e-6)
    np.testing.assert_allclose(got[..., 1], 0.1 * x - 0.05 * y, atol=1e-5)


def test_bspline_sample_gradient_by_finite_differences(sess, rng):
    images = rng.rand(1, 6, 8, 2).astype(np.float32)
    x = rng.uniform(0.2, 6.8, (1, 3, 4)).astype(np.float64)
    y = rng.uniform(0.2, 4.8, (1, 3, 4)).astype(np.float64)
    weights = rng.randn(1, 3, 4, 2)
    xt = tf.constant(x.astype(np.float32))
    yt = tf.constant(y.astype(np.float32))
    objective = tf.reduce_sum(bspline_sample(bspline_columns(images), xt, yt) * weights)
    gx, gy = sess.run(tf.gradients(objective, [xt, yt]))
    eps = 1e-4
    f = lambda xx, yy: (_scipy(images, xx, yy, False) * weights).sum(-1)  # noqa: E731
    np.testing.assert_allclose(gx, (f(x + eps, y) - f(x - eps, y)) / (2 * eps), atol=1e-3)
    np.testing.assert_allclose(gy, (f(x, y + eps) - f(x, y - eps)) / (2 * eps), atol=1e-3)


def test_spline_interpolates_the_pixels_and_matches_scipy_inside(sess, rng):
    images = rng.rand(1, 30, 40, 2).astype(np.float32)
    ys, xs = np.mgrid[0:30, 0:40].astype(np.float32)
    at_pixels = sess.run(sample_at(tf.constant(images), tf.constant(np.stack([xs, ys], -1)[None]),
                                   "spline"))
    # through the pixels: exactly inside, where the truncated prefilter does not see the border
    np.testing.assert_allclose(at_pixels[:, 10:-10, 10:-10], images[:, 10:-10, 10:-10],
                               atol=1e-4)
    x = rng.uniform(10, 29, (1, 5, 6)).astype(np.float32)
    y = rng.uniform(10, 19, (1, 5, 6)).astype(np.float32)
    got = sess.run(sample_at(tf.constant(images), tf.constant(np.stack([x, y], -1)), "spline"))
    np.testing.assert_allclose(got, _scipy(images, x, y, prefilter=True), atol=1e-4)


def test_spline_prefilter_is_the_inverse_of_the_bspline_at_the_pixels(sess, rng):
    """Coefficients c with (c[k-1] + 4 c[k] + c[k+1]) / 6 = image along each axis."""
    images = rng.rand(1, 24, 28, 1).astype(np.float32)
    c = sess.run(spline_prefilter(tf.constant(images)))[0, ..., 0].astype(np.float64)
    rows = (c[:-2] + 4 * c[1:-1] + c[2:]) / 6.0
    both = (rows[:, :-2] + 4 * rows[:, 1:-1] + rows[:, 2:]) / 6.0
    np.testing.assert_allclose(both[9:-9, 9:-9], images[0, 10:-10, 10:-10, 0], atol=1e-4)



def test_the_spline_samplers_convert_to_onnx_and_run_alike(rng):
    """The export's converter and runtime (the ``onnx`` extra) take both spline samplers."""
    tf2onnx = pytest.importorskip("tf2onnx")
    from vidcorr.apps.serving import ONNX_OPSET
    ort = pytest.importorskip("onnxruntime")
    images = rng.rand(2, 20, 30, 3).astype(np.float32)
    xy = rng.uniform(-2, 31, (2, 5, 7, 2)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        img = tf.placeholder(tf.float32, [None, None, None, 3], "img")
        pos = tf.placeholder(tf.float32, [None, None, None, 2], "xy")
        outs = [tf.identity(sample_at(img, pos, name), name) for name in ("spline", "bspline")]
        with tf.Session() as sess:
            want = sess.run(outs, {img: images, pos: xy})
        model, _ = tf2onnx.convert.from_graph_def(
            graph.as_graph_def(), input_names=["img:0", "xy:0"],
            output_names=["spline:0", "bspline:0"], opset=ONNX_OPSET)
    got = ort.InferenceSession(model.SerializeToString()).run(None, {"img:0": images, "xy:0": xy})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5)
