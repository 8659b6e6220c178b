"""Tests of vidcorr.model.layers against numpy convolutions."""

import numpy as np
import pytest

from tests import reference as ref
from vidcorr.model import layers
from vidcorr.compat import tf


def test_conv2d_matches_numpy(sess, rng):
    data = rng.randn(2, 7, 9, 3).astype(np.float32)
    x = tf.constant(data)
    y = layers.conv2d("conv", x, 4, kernel_size=3, stride=1)
    y2 = layers.conv2d("conv_s2", x, 5, kernel_size=3, stride=2, use_bias=False)
    sess.run(tf.global_variables_initializer())
    with tf.variable_scope("conv", reuse=True):
        tf.get_variable("biases").load(rng.randn(4).astype(np.float32), sess)
        w, b = sess.run([tf.get_variable("weights"), tf.get_variable("biases")])
    with tf.variable_scope("conv_s2", reuse=True):
        w2 = sess.run(tf.get_variable("weights"))
    out, out2 = sess.run([y, y2])
    np.testing.assert_allclose(out, ref.conv2d_same(data, w) + b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out2, ref.conv2d_same(data, w2, 2), rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_matches_numpy(sess, rng):
    data = rng.randn(2, 3, 5, 4).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3, 5, 4])
    y = layers.conv2d_transpose("up", x, 6, kernel_size=4, stride=2)
    assert y.shape.as_list() == [None, 6, 10, 6]
    sess.run(tf.global_variables_initializer())
    with tf.variable_scope("up", reuse=True):
        w = sess.run(tf.get_variable("weights"))
    assert w.shape == (4, 4, 6, 4)
    np.testing.assert_allclose(sess.run(y, {x: data}), ref.conv2d_transpose_same(data, w, 2),
                               rtol=1e-4, atol=1e-4)


def test_max_pool_and_activations(sess, rng):
    data = rng.randn(1, 4, 6, 2).astype(np.float32)
    x = tf.constant(data)
    pooled = sess.run(layers.max_pool("pool", x))
    np.testing.assert_array_equal(pooled, data.reshape(1, 2, 2, 3, 2, 2).max(axis=(2, 4)))
    np.testing.assert_array_equal(sess.run(layers.activation(x, "relu")), np.maximum(data, 0))
    np.testing.assert_allclose(sess.run(layers.activation(x, "leaky_relu", 0.1)),
                               np.where(data > 0, data, 0.1 * data), rtol=1e-6)
    with pytest.raises(ValueError, match="activation"):
        layers.activation(x, "gelu")


def test_transform_sees_every_parameter_and_changes_output(sess, rng):
    seen = []

    def double(value, name, channel_axis):
        seen.append((tf.get_variable_scope().name, name, channel_axis))
        return value * 2.0

    data = rng.randn(1, 4, 4, 3).astype(np.float32)
    x = tf.constant(data)
    plain = layers.conv2d("c", x, 2, use_bias=False)
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        doubled = layers.conv2d("c", x, 2, use_bias=False, transform=double)
    layers.conv2d_transpose("t", x, 2, transform=double)
    layers.conv2d("b", x, 2, transform=double)
    assert seen == [("c", "weights", 3), ("t", "weights", 2), ("b", "weights", 3),
                    ("b", "biases", None)]
    sess.run(tf.global_variables_initializer())
    a, b = sess.run([plain, doubled])
    np.testing.assert_allclose(b, 2 * a, rtol=1e-5, atol=1e-6)


def test_compose_transforms_order():
    calls = []
    first = lambda v, n, a: calls.append("first") or v  # noqa: E731
    second = lambda v, n, a: calls.append("second") or v  # noqa: E731
    assert layers.compose_transforms(None, None) is None
    assert layers.compose_transforms(None, first) is first
    layers.compose_transforms(first, None, second)(tf.zeros([1]), "w", None)
    assert calls == ["first", "second"]


@pytest.mark.parametrize("shape,match", [([4, 5, 6], "4-D"), ([1, 4, 5, None], "channel")])
def test_bad_input(sess, shape, match):
    x = tf.placeholder(tf.float32, shape)
    with pytest.raises(ValueError, match=match):
        layers.conv2d("c", x, 2)
    with pytest.raises(ValueError, match=match):
        layers.conv2d_transpose("t", x, 2)


def test_transform_must_keep_shape(sess):
    x = tf.zeros([1, 4, 4, 2])
    with pytest.raises(ValueError, match="shape"):
        layers.conv2d("c", x, 2, transform=lambda v, n, a: tf.reshape(v, [-1]))
