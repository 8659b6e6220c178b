"""Tests of the batched graph transposition against tf.gradients, one cotangent at a time."""

import numpy as np
import pytest

from vidcorr.readout.sensitivity.backward import BatchedVJP, UnsupportedGraph
from vidcorr.compat import tf

N = 3  # cotangents per batch


def _check(sess, xs, ys, rng, feed=None):
    """BatchedVJP on N random cotangents equals tf.gradients for each of them (up to float
    summation order: the convolutions run in another form)."""
    vjp = BatchedVJP(ys, xs)
    cotangents = tf.placeholder(tf.float32, [None] + ys.shape.as_list()[1:])
    batched = vjp(cotangents)
    one = tf.placeholder(tf.float32, ys.shape)
    reference = tf.gradients(ys, xs, grad_ys=one)[0]
    values = rng.randn(N, *ys.shape.as_list()[1:]).astype(np.float32)
    feed = dict(feed or {})
    got = sess.run(batched, {**feed, cotangents: values})
    assert got.shape == (N,) + tuple(xs.shape.as_list()[1:])
    for i in range(N):
        expected = sess.run(reference, {**feed, one: values[i:i + 1]})[0]
        np.testing.assert_allclose(got[i], expected, rtol=1e-4,
                                   atol=1e-5 * np.abs(expected).max())
    return vjp


def test_mind_like_graph_matches_tf_gradients(sess, rng):
    """Every rule: convolutions (fast and general paths), transposed convolution,
    ReLU and leaky ReLU, 2x2 and general max pools, concat, slices, add/sub/mul."""
    x = tf.placeholder(tf.float32, [1, 8, 12, 6])
    w1 = tf.constant(rng.randn(3, 3, 6, 5).astype(np.float32))
    w2 = tf.constant(rng.randn(1, 1, 5, 4).astype(np.float32))
    w3 = tf.constant(rng.randn(2, 2, 4, 4).astype(np.float32))  # even kernel: general path
    wt = tf.constant(rng.randn(4, 4, 3, 4).astype(np.float32))  # transposed: [kh, kw, out, in]
    h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x - 0.5, w1, [1, 1, 1, 1], "SAME"),
                                  tf.constant(rng.randn(5).astype(np.float32))))
    h = tf.nn.leaky_relu(tf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME"), alpha=0.3)  # [1, 8, 12, 4]
    skip = h
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")  # [1, 4, 6, 4]
    h = tf.nn.conv2d(h, w3, [1, 1, 1, 1], "SAME")  # [1, 4, 6, 4]
    h = tf.nn.max_pool(h, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")  # general pool
    h = tf.nn.conv2d_transpose(h, wt, tf.stack([tf.shape(h)[0], 8, 12, 3]), [1, 2, 2, 1],
                               "SAME")  # [1, 8, 12, 3]
    h = tf.concat([h, skip], axis=3)  # [1, 8, 12, 7]
    h = tf.nn.conv2d(h, tf.constant(rng.randn(3, 3, 7, 3).astype(np.float32)), [1, 2, 2, 1],
                     "VALID")  # stride 2: general path, [1, 3, 5, 3]
    out = h[:, 1:3, :, :] * 2.0 + 0.5 * (x[:, 2:4, 3:8, :3] - x[:, 2:4, 3:8, 3:])  # [1, 2, 5, 3]
    feed = {x: rng.rand(1, 8, 12, 6).astype(np.float32)}
    _check(sess, x, out, rng, feed)


def test_kernel_head_ops_match_tf_gradients(sess, rng):
    """The ops of an adaptive-kernel head: mirror and zero padding, image patches, a softmax,
    reshapes and a transpose, a product of two tensors that both depend on the input (with
    broadcasting, through a new axis), and sums."""
    x = tf.placeholder(tf.float32, [1, 6, 8, 2])
    k = 3
    padded = tf.pad(x, [[0, 0], [2, 2], [2, 2], [0, 0]], mode="REFLECT")  # [1, 10, 12, 2]
    padded = tf.pad(tf.nn.relu(padded), [[0, 0], [1, 0], [0, 1], [0, 0]])  # [1, 11, 13, 2]
    patches = tf.image.extract_patches(padded, [1, k, k, 1], [1, 1, 1, 1], [1, 1, 1, 1],
                                       "VALID")  # [1, 9, 11, 18]
    patches = tf.reshape(patches, [1, 9, 11, k * k, 2])
    w = tf.constant(rng.randn(1, 1, 2, k * k).astype(np.float32))
    logits = tf.nn.conv2d(padded[:, :9, :11, :], w, [1, 1, 1, 1], "VALID")  # [1, 9, 11, 9]
    weights = tf.transpose(tf.reshape(tf.nn.softmax(logits * 2.0), [1, 9, 11, 1, k * k]),
                           [0, 1, 2, 4, 3])  # [1, 9, 11, 9, 1]
    blend = tf.reduce_sum(patches * weights, axis=3)  # [1, 9, 11, 2]
    kept = tf.reduce_sum(patches * weights[..., 0][..., None], axis=[3], keepdims=True)
    out = blend + tf.reshape(kept, [1, 9, 11, 2])  # a new axis, a kept sum: [1, 9, 11, 2]
    _check(sess, x, out, rng, {x: rng.randn(1, 6, 8, 2).astype(np.float32)})
    _check(sess, x, x * x, rng, {x: rng.randn(1, 6, 8, 2).astype(np.float32)})


def test_max_pool_ties_go_to_the_first_maximum(sess, rng):
    """Exact ties (flat patches) at positive values: the same as TensorFlow's gradient."""
    x = tf.placeholder(tf.float32, [1, 6, 8, 2])
    out = tf.nn.max_pool(tf.nn.relu(x), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")  # [1, 3, 4, 2]
    values = np.repeat(np.repeat(rng.rand(1, 3, 4, 2), 2, axis=1), 2, axis=2)  # 2x2 ties
    values[0, 2:4, 4:6, 0] = [[0.1, 0.9], [0.9, 0.9]]  # ties after the first place
    values[0, 0:2, 0:2, 1] = -1.0  # all below zero: the ReLU kills the gradient
    _check(sess, x, out, rng, {x: values.astype(np.float32)})


def test_output_that_ignores_the_input_and_unsupported_ops(sess, rng):
    x = tf.placeholder(tf.float32, [1, 4, 4, 2])
    y = tf.placeholder(tf.float32, [1, 4, 4, 2])
    with pytest.raises(UnsupportedGraph, match="does not depend"):
        BatchedVJP(tf.nn.relu(y), x)
    with pytest.raises(UnsupportedGraph, match="Sin"):
        BatchedVJP(tf.nn.relu(tf.sin(x)), x)
    column = tf.placeholder(tf.float32, [1, 1, 4, 2])
    with pytest.raises(UnsupportedGraph, match="moves the batch axis"):
        BatchedVJP(tf.transpose(column, [1, 0, 2, 3]) * 1.0, column)(tf.zeros([N, 1, 4, 2]))
    with pytest.raises(UnsupportedGraph, match="batch-1"):
        z = tf.placeholder(tf.float32, [2, 4, 4, 2])
        BatchedVJP(tf.nn.relu(z), z)
    ident = tf.constant(rng.randn(N, 4, 4, 2).astype(np.float32))
    np.testing.assert_array_equal(*sess.run([BatchedVJP(x, x)(ident), ident]))
    # A path that ends in a non-float shape computation is not followed.
    h = tf.nn.relu(x) + tf.cast(tf.shape(x)[1], tf.float32)
    _check(sess, x, h, rng, {x: rng.randn(1, 4, 4, 2).astype(np.float32)})


def _mind_like(rng, x, skips=True):
    """conv/ReLU/pool encoder, a transposed-conv decoder with skips, 3x3 output."""
    def conv(h, cout, k=3):
        w = tf.constant(rng.randn(k, k, h.shape.as_list()[3], cout).astype(np.float32) / k)
        return tf.nn.relu(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME") + 0.1)

    def up(h, cout):
        b, hh, ww, cin = h.shape.as_list()
        w = tf.constant(rng.randn(4, 4, cout, cin).astype(np.float32) / 4)
        return tf.nn.relu(tf.nn.conv2d_transpose(h, w, [b, 2 * hh, 2 * ww, cout], [1, 2, 2, 1],
                                                 "SAME"))

    e0 = conv(conv(x - 0.5, 5), 5)  # [1, H, W, 5]
    e1 = tf.nn.max_pool(e0, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    e2 = tf.nn.max_pool(conv(e1, 6), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    e3 = tf.nn.max_pool(conv(e2, 6), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    d = up(conv(e3, 6), 6)  # 1/4
    d = conv(tf.concat([d, e2], 3) if skips else d, 6)
    d = conv(up(d, 5), 5)  # 1/2
    d = conv(tf.concat([up(d, 5), e0], 3) if skips else up(d, 5), 4)  # full resolution
    return tf.nn.conv2d(d, tf.constant(rng.randn(3, 3, 4, 3).astype(np.float32)),
                        [1, 1, 1, 1], "SAME")  # [1, H, W, 3]


@pytest.mark.parametrize("height,width,skips", [(32, 48, True), (64, 96, False)])
def test_windowed_points_equal_dense_one_hot_cotangents(sess, rng, monkeypatch, height, width,
                                                        skips):
    """The windowed backward pass of point cotangents (near the borders and corners too)
    equals the dense pass and tf.gradients."""
    from vidcorr.readout.sensitivity.windows import WINDOW_RULES

    followed = []  # the op types the pass followed in windows
    for kind, rule in list(WINDOW_RULES.items()):
        def recording(op, g, prepared, deps, rule=rule):
            result = rule(op, g, prepared, deps)
            if result is not None:
                followed.append(op.type)
            return result
        monkeypatch.setitem(WINDOW_RULES, kind, recording)
    x = tf.placeholder(tf.float32, [1, height, width, 6])
    out = _mind_like(rng, x, skips)
    vjp = BatchedVJP(out, x)
    pixels = np.array([[0, 0], [1, 1], [height - 1, width - 1], [height // 2, width // 2 + 1],
                       [0, width - 2], [height - 3, 5], [7, 30]], np.int32)
    values = rng.randn(len(pixels), 3).astype(np.float32)
    windowed = vjp.points(tf.constant(values), tf.constant(pixels[:, 0]),
                          tf.constant(pixels[:, 1]))
    # The windows follow the decoder up to its coarsest level that they do not fill.
    assert followed.count("Conv2DBackpropInput") == (2 if height == 32 else 3)
    assert ("ConcatV2" in followed) == skips and "Relu" in followed
    dense_cot = np.zeros((len(pixels), height, width, 3), np.float32)
    dense_cot[np.arange(len(pixels)), pixels[:, 0], pixels[:, 1]] = values
    dense = vjp(tf.constant(dense_cot))
    one = tf.placeholder(tf.float32, [1, height, width, 3])
    reference = tf.gradients(out, x, grad_ys=one)[0]
    feed = {x: rng.rand(1, height, width, 6).astype(np.float32)}
    got_w, got_d = sess.run([windowed, dense], feed)
    for i in range(len(pixels)):
        expected = sess.run(reference, {**feed, one: dense_cot[i:i + 1]})[0]
        scale = np.abs(expected).max()
        assert scale > 0
        np.testing.assert_allclose(got_w[i], expected, rtol=1e-4, atol=1e-5 * scale)
        np.testing.assert_allclose(got_d[i], expected, rtol=1e-4, atol=1e-5 * scale)
