"""Tests of the quantize switch against a numpy fake-quantisation reference."""

import os

import numpy as np
import pytest

from tests import reference as ref
from vidcorr.model import layers
from vidcorr.model.batchnorm import batch_norm
from vidcorr.compat import tf
from vidcorr.model.quantize import fake_quant, quantize_transform


def _stack(x, quantize, num_bits=8):
    """conv -> bn -> relu -> transposed conv -> bn, with the quantize switch."""
    transform = quantize_transform(quantize, num_bits)
    is_training = tf.placeholder_with_default(False, [], name="is_training")
    h = layers.conv2d("conv", x, 4, use_bias=False, transform=transform)
    h = tf.nn.relu(batch_norm("conv/bn", h, is_training, transform=transform))
    h = layers.conv2d_transpose("up", h, 3, transform=transform)
    return batch_norm("up/bn", h, is_training, transform=transform)


def _randomise(sess, rng):
    for v in tf.global_variables():
        value = rng.randn(*v.shape.as_list()).astype(np.float32)
        if "variance" in v.op.name or "gamma" in v.op.name:
            value = np.abs(value) + 0.5
        v.load(value, sess)


@pytest.mark.parametrize("num_bits", [8, 4])
@pytest.mark.parametrize("axis", [3, 2, None])
def test_fake_quant_matches_numpy_within_one_step(sess, rng, num_bits, axis):
    w = rng.randn(3, 3, 5, 6).astype(np.float32)
    out = sess.run(fake_quant(tf.constant(w), num_bits, channel_axis=axis))
    if axis is None:
        expected, scale = ref.fake_quant(w, min(w.min(), 0), max(w.max(), 0), num_bits)
    else:
        expected, scale = ref.fake_quant_per_channel(w, axis, num_bits)
        shape = [1] * 4
        shape[axis] = -1
        scale = np.reshape(scale, shape)
    assert np.all(np.abs(out - expected) <= scale * 1.0001)
    # Almost every value agrees exactly (ties and float rounding aside).
    assert np.mean(np.isclose(out, expected, rtol=0, atol=1e-6)) > 0.97
    # Values lie on the grid: at most 2^bits distinct levels per channel.
    chans = [out] if axis is None else [np.take(out, i, axis=axis) for i in range(out.shape[axis])]
    for c in chans:
        assert len(np.unique(c)) <= 2 ** num_bits


def test_switch_off_is_bit_identical_to_float_graph(sess, rng):
    data = rng.rand(2, 4, 6, 3).astype(np.float32)
    x = tf.constant(data)
    with tf.variable_scope("float"):
        y_float = _stack(x, False)
    with tf.variable_scope("switch"):
        flag = tf.placeholder_with_default(False, [], name="quantize")
        y_switch = _stack(x, flag)
    sess.run(tf.global_variables_initializer())
    _randomise(sess, rng)
    for src, dst in zip(tf.global_variables("float"), tf.global_variables("switch")):
        dst.load(sess.run(src), sess)
    a, b = sess.run([y_float, y_switch])
    np.testing.assert_array_equal(a, b)
    # A Python False adds no quantisation ops at all.
    assert quantize_transform(False) is None


def test_switch_on_matches_numpy_quantised_conv(sess, rng):
    data = rng.rand(2, 5, 7, 3).astype(np.float32)
    x = tf.constant(data)
    flag = tf.placeholder_with_default(False, [])
    y = layers.conv2d("conv", x, 4, use_bias=False, transform=quantize_transform(flag, 8))
    sess.run(tf.global_variables_initializer())
    with tf.variable_scope("conv", reuse=True):
        w = sess.run(tf.get_variable("weights"))
    wq, _ = ref.fake_quant_per_channel(w, 3, 8)
    out_q, out_f = sess.run(y, {flag: True}), sess.run(y, {flag: False})
    np.testing.assert_allclose(out_q, ref.conv2d_same(data, wq), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out_f, ref.conv2d_same(data, w), rtol=1e-4, atol=1e-4)
    assert np.abs(out_q - out_f).max() > 1e-5


def test_gradients_pass_straight_through(sess, rng):
    w = tf.constant(rng.randn(3, 3, 4, 5).astype(np.float32))
    r = rng.randn(3, 3, 4, 5).astype(np.float32)
    for axis in (3, None):
        grad = sess.run(tf.gradients(tf.reduce_sum(fake_quant(w, 4, axis) * r), w)[0])
        np.testing.assert_allclose(grad, r, rtol=1e-6)


def test_float_checkpoint_restores_and_switch_flips_by_feed(sess, rng, tmp_path):
    data = rng.rand(2, 4, 6, 3).astype(np.float32)
    path = os.path.join(str(tmp_path), "float.ckpt")
    graph = tf.Graph()
    with graph.as_default():
        y = _stack(tf.constant(data), False)
        with tf.Session() as float_sess:
            float_sess.run(tf.global_variables_initializer())
            _randomise(float_sess, rng)
            float_out = float_sess.run(y)
            tf.train.Saver().save(float_sess, path)
            float_names = sorted(v.op.name for v in tf.global_variables())
    flag = tf.placeholder_with_default(True, [])
    yq = _stack(tf.constant(data), flag)
    assert sorted(v.op.name for v in tf.global_variables()) == float_names
    tf.train.Saver().restore(sess, path)
    quant_out = sess.run(yq)
    np.testing.assert_array_equal(sess.run(yq, {flag: False}), float_out)
    err = np.abs(quant_out - float_out)
    assert 0 < err.max() < 0.2 * np.abs(float_out).max()


@pytest.mark.parametrize("bits", [1, 17, 8.0, True])
def test_bad_bits(bits):
    with pytest.raises(ValueError, match="num_bits"):
        quantize_transform(True, bits)
