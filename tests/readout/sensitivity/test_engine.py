"""The engine both per-pixel gradient front ends run on: each backward pass, inside the
chunk loop, against the seed's loop (one ``tf.gradients`` and ``sess.run`` per pixel)."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.readout.sensitivity.backward import UnsupportedGraph
from vidcorr.readout.sensitivity.engine import PixelBackward, chunk_loop

H, W = 10, 14


def _network(x, elu=False):
    """Two convolutions, a 2x2 max pool and a transposed convolution (constant weights)."""
    rng = np.random.RandomState(3)
    k1 = tf.constant(rng.randn(3, 3, 2, 5).astype(np.float32) * 0.4)
    k2 = tf.constant(rng.randn(3, 3, 5, 5).astype(np.float32) * 0.4)
    up = tf.constant(rng.randn(2, 2, 3, 5).astype(np.float32) * 0.4)
    h = tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME")
    h = tf.nn.elu(h) if elu else tf.nn.relu(h)  # [1, H, W, 5]
    h = tf.nn.relu(tf.nn.conv2d(tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), k2,
                                [1, 1, 1, 1], "SAME"))  # [1, H/2, W/2, 5]
    return tf.nn.conv2d_transpose(h, up, [1, H, W, 3], [1, 2, 2, 1], "VALID")  # [1, H, W, 3]


@pytest.mark.parametrize("backward,elu,method", [
    ("auto", False, "transpose"), ("auto", True, "pfor"), ("pfor", False, "pfor"),
    ("loop", False, "loop")])
def test_each_pass_in_the_chunk_loop_equals_the_seeds_loop(backward, elu, method):
    image = np.random.RandomState(0).rand(1, H, W, 2).astype(np.float32)
    points = np.array([[0, 0], [13, 9], [5, 4], [6, 4], [1, 8], [12, 1], [7, 7]])  # (x, y)
    with tf.Graph().as_default():
        x = tf.constant(image)
        y = _network(x, elu)
        engine = PixelBackward(y, x, backward)
        rows = tf.placeholder(tf.int32, [None])
        cols = tf.placeholder(tf.int32, [None])
        weights = tf.constant([[1.0, -2.0, 0.5]])  # each pixel's cotangent over channels

        def body(r, c):
            values = tf.tile(weights, [tf.shape(r)[0], 1])  # [K, 3]
            return {"maps": engine(r, c, values), "rows": r}

        out = chunk_loop([rows, cols], 3, body, {"maps": tf.float32, "rows": tf.int32})
        with tf.Session() as sess:
            got = sess.run(out, {rows: points[:, 1], cols: points[:, 0]})
            loop = np.stack([sess.run(tf.gradients(tf.reduce_sum(y[0, py, px] * weights[0]),
                                                   x)[0])[0] for px, py in points])
    assert engine.method == method
    assert got["rows"].tolist() == points[:, 1].tolist()  # in order, the padding dropped
    np.testing.assert_allclose(got["maps"], loop, rtol=1e-5, atol=1e-6)
    assert np.abs(loop).max() > 0.1


def test_chunk_loop_walks_any_count_with_a_fed_chunk():
    with tf.Graph().as_default():
        pixels = tf.placeholder(tf.int32, [None])
        chunk = tf.placeholder(tf.int32, [])
        calls = []

        def body(p):
            calls.append(1)
            return {"square": p * p, "size": tf.fill(tf.shape(p), tf.size(p))}

        out = chunk_loop([pixels], chunk, body, {"square": tf.int32, "size": tf.int32})
        with tf.Session() as sess:
            for n, k in [(1, 4), (7, 3), (9, 3), (5, 8)]:
                got = sess.run(out, {pixels: np.arange(n) + 2, chunk: k})
                np.testing.assert_array_equal(got["square"], (np.arange(n) + 2) ** 2)
                assert got["size"].tolist() == [k] * n  # every iteration a whole chunk
    assert len(calls) == 1  # the body is built once


def test_graphs_it_cannot_run_are_errors():
    with tf.Graph().as_default():
        x = tf.constant(np.ones((1, H, W, 2), np.float32))
        with pytest.raises(UnsupportedGraph, match="no batched transpose for Elu"):
            PixelBackward(_network(x, elu=True), x, "transpose")
        with pytest.raises(UnsupportedGraph, match="does not depend"):
            PixelBackward(tf.ones([1, H, W, 3]) * 2.0, x, "pfor")
        with pytest.raises(UnsupportedGraph, match="does not depend"):  # as tf.gradients sees it
            PixelBackward(tf.stop_gradient(_network(x)) * 2.0, x, "loop")
        before = len(tf.get_default_graph().get_operations())
        PixelBackward(_network(x) * 2.0, x, "pfor")  # the check builds no gradient ops
        assert not [op.name for op in tf.get_default_graph().get_operations()[before:]
                    if "gradients" in op.name]
        with pytest.raises(ValueError, match="backward must be one of"):
            PixelBackward(_network(x), x, "jacobian")
