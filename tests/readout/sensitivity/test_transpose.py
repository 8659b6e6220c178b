"""Each transposition rule of vidcorr.readout.sensitivity.transpose, alone, against tf.gradients."""

import numpy as np
import pytest

from tests.readout.sensitivity.test_backward import _check
from vidcorr.compat import tf
from vidcorr.readout.sensitivity.transpose import RULES, upsample2


def _w(rng, *shape):
    return tf.constant(rng.randn(*shape).astype(np.float32))


def _graphs(rng):
    """``{name: (op type it tests, builder of ys from xs [1, 8, 12, 4])}``."""
    return {
        "bias_add": ("BiasAdd", lambda x: tf.nn.bias_add(x, _w(rng, 4))),
        "add": ("AddV2", lambda x: x + tf.nn.relu(x)),
        "sub": ("Sub", lambda x: tf.nn.relu(x) - 0.5 * x),
        "mul": ("Mul", lambda x: x * _w(rng, 1, 8, 12, 4)),
        "relu": ("Relu", lambda x: tf.nn.relu(x - 0.1)),
        "leaky_relu": ("LeakyRelu", lambda x: tf.nn.leaky_relu(x, 0.2)),
        "conv": ("Conv2D", lambda x: tf.nn.conv2d(x, _w(rng, 3, 3, 4, 5), [1, 1, 1, 1], "SAME")),
        "conv_stride2": ("Conv2D", lambda x: tf.nn.conv2d(x, _w(rng, 3, 3, 4, 2), [1, 2, 2, 1],
                                                          "SAME")),
        "conv_transpose": ("Conv2DBackpropInput", lambda x: tf.nn.conv2d_transpose(
            x, _w(rng, 4, 4, 3, 4), [1, 16, 24, 3], [1, 2, 2, 1], "SAME")),
        "max_pool": ("MaxPool", lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")),
        "concat_last": ("ConcatV2", lambda x: tf.concat([x, 2.0 * x], axis=-1)),
        "concat_rows": ("ConcatV2", lambda x: tf.concat([x, tf.nn.relu(x)], axis=1)),
        "slice": ("StridedSlice", lambda x: x[:, 1:7, 2:10, :]),
        "identity": ("Identity", lambda x: tf.identity(x)),
    }


@pytest.mark.parametrize("name", sorted(_graphs(np.random.RandomState(0))))
def test_rule_matches_tf_gradients(sess, name):
    rng = np.random.RandomState(7)
    kind, build = _graphs(rng)[name]
    assert kind in RULES
    x = tf.placeholder(tf.float32, [1, 8, 12, 4])
    ys = build(x)
    assert kind in {op.type for op in sess.graph.get_operations()}
    _check(sess, x, ys, rng, {x: rng.randn(1, 8, 12, 4).astype(np.float32)})


def test_upsample2_repeats_each_pixel(sess):
    t = np.arange(2 * 2 * 3 * 2, dtype=np.float32).reshape(2, 2, 3, 2)
    got = sess.run(upsample2(tf.constant(t), 4, 6, 2))
    np.testing.assert_array_equal(got, t.repeat(2, axis=1).repeat(2, axis=2))
