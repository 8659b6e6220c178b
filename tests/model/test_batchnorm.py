"""Tests of vidcorr.model.batchnorm against closed-form numpy values."""

import numpy as np
import pytest

from tests import reference as ref
from vidcorr.model.batchnorm import batch_norm
from vidcorr.compat import tf

EPS = 1e-3
SHAPE = (4, 5, 6, 3)


def _build(sess, rng, is_training, decay=0.9):
    """A batch norm on a fed input with random gamma/beta/moving stats."""
    x = tf.placeholder(tf.float32, SHAPE)
    y = batch_norm("bn", x, is_training, decay=decay, epsilon=EPS)
    sess.run(tf.global_variables_initializer())
    params = {
        "gamma": rng.uniform(0.5, 2.0, 3).astype(np.float32),
        "beta": rng.randn(3).astype(np.float32),
        "moving_mean": rng.randn(3).astype(np.float32),
        "moving_variance": rng.uniform(0.5, 2.0, 3).astype(np.float32),
    }
    with tf.variable_scope("bn", reuse=True):
        for name, value in params.items():
            tf.get_variable(name).load(value, sess)
    return x, y, params


def _data(rng):
    return (rng.randn(*SHAPE) * 3.0 + 2.0).astype(np.float32)


def _moving(sess):
    with tf.variable_scope("bn", reuse=True):
        return sess.run([tf.get_variable("moving_mean"), tf.get_variable("moving_variance")])


@pytest.mark.parametrize("mode", ["bool", "tensor"])
def test_training_output_matches_numpy(sess, rng, mode):
    flag = True if mode == "bool" else tf.placeholder_with_default(False, [])
    x, y, p = _build(sess, rng, flag)
    data = _data(rng)
    feed = {x: data} if mode == "bool" else {x: data, flag: True}
    out = sess.run(y, feed)
    np.testing.assert_allclose(out, ref.batch_norm_train(data, p["gamma"], p["beta"], EPS),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["bool", "tensor"])
def test_inference_output_matches_numpy_and_keeps_stats(sess, rng, mode):
    flag = False if mode == "bool" else tf.placeholder_with_default(True, [])
    x, y, p = _build(sess, rng, flag)
    data = _data(rng)
    feed = {x: data} if mode == "bool" else {x: data, flag: False}
    out = sess.run(y, feed)
    expected = ref.batch_norm_test(data, p["gamma"], p["beta"], p["moving_mean"],
                                   p["moving_variance"], EPS)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    mean, var = _moving(sess)
    np.testing.assert_array_equal(mean, p["moving_mean"])
    np.testing.assert_array_equal(var, p["moving_variance"])


@pytest.mark.parametrize("mode", ["bool", "tensor"])
def test_moving_statistics_follow_recurrence_with_bessel(sess, rng, mode):
    decay = 0.8
    flag = True if mode == "bool" else tf.placeholder_with_default(True, [])
    x, y, p = _build(sess, rng, flag, decay=decay)
    mean, var = p["moving_mean"].astype(np.float64), p["moving_variance"].astype(np.float64)
    n = SHAPE[0] * SHAPE[1] * SHAPE[2]
    for _ in range(7):
        data = _data(rng)
        sess.run(y, {x: data})
        mean = decay * mean + (1 - decay) * data.mean((0, 1, 2))
        var = decay * var + (1 - decay) * data.var((0, 1, 2), ddof=1)  # unbiased: n / (n - 1)
    got_mean, got_var = _moving(sess)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_var, var, rtol=1e-5)
    # The biased variance would be clearly different at n = 120.
    assert n / (n - 1) > 1.008
    assert not np.allclose(got_var, var * (n - 1) / n, rtol=1e-3)


def test_no_update_ops_and_minimize_updates_stats(sess, rng):
    x, y, p = _build(sess, rng, True)
    loss = tf.reduce_mean(tf.square(y - 1.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    before = _moving(sess)
    sess.run(train, {x: _data(rng)})
    after = _moving(sess)
    assert not np.allclose(before[0], after[0])


@pytest.mark.parametrize("training", [True, False])
def test_gradients_match_finite_differences(sess, rng, training):
    x, y, p = _build(sess, rng, training)
    data = _data(rng)
    weights = rng.randn(*SHAPE).astype(np.float32)
    loss = tf.reduce_sum(y * weights)
    with tf.variable_scope("bn", reuse=True):
        gamma = tf.get_variable("gamma")
    gx, gg = sess.run(tf.gradients(loss, [x, gamma]), {x: data})

    def np_loss(d, g):
        if training:
            out = ref.batch_norm_train(d.astype(np.float64), g, p["beta"], EPS)
        else:
            out = ref.batch_norm_test(d.astype(np.float64), g, p["beta"], p["moving_mean"],
                                      p["moving_variance"], EPS)
        return np.sum(out * weights)

    h = 1e-3
    for idx in [(0, 0, 0, 0), (1, 2, 3, 1), (3, 4, 5, 2), (2, 1, 4, 0)]:
        plus, minus = data.astype(np.float64), data.astype(np.float64)
        plus[idx] += h
        minus[idx] -= h
        fd = (np_loss(plus, p["gamma"]) - np_loss(minus, p["gamma"])) / (2 * h)
        np.testing.assert_allclose(gx[idx], fd, rtol=2e-3, atol=2e-3)
    for c in range(3):
        gp, gm = p["gamma"].astype(np.float64), p["gamma"].astype(np.float64)
        gp[c] += h
        gm[c] -= h
        fd = (np_loss(data, gp) - np_loss(data, gm)) / (2 * h)
        np.testing.assert_allclose(gg[c], fd, rtol=2e-3, atol=2e-3)


def test_variable_names(sess):
    x = tf.placeholder(tf.float32, [None, 8, 8, 5])
    batch_norm("layer/bn", x, tf.placeholder_with_default(True, []))
    names = [(v.op.name, v.shape.as_list(), v in tf.trainable_variables())
             for v in tf.global_variables()]
    assert names == [("layer/bn/gamma", [5], True), ("layer/bn/beta", [5], True),
                     ("layer/bn/moving_mean", [5], False),
                     ("layer/bn/moving_variance", [5], False)]


def _executed_fused_ops(sess, fetch, feed):
    """Returns {is_training attr of each FusedBatchNorm node that ran}."""
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    meta = tf.RunMetadata()
    sess.run(fetch, feed, options=options, run_metadata=meta)
    ran = {ns.node_name.split(":")[0] for dev in meta.step_stats.dev_stats
           for ns in dev.node_stats}
    fused = {op.name: op.get_attr("is_training") for op in sess.graph.get_operations()
             if op.type.startswith("FusedBatchNorm")}
    assert len(fused) == 2
    return sorted(fused[name] for name in fused if name in ran)


def test_only_selected_branch_runs(sess, rng):
    flag = tf.placeholder_with_default(False, [])
    x, y, _ = _build(sess, rng, flag)
    data = _data(rng)
    assert _executed_fused_ops(sess, y, {x: data, flag: True}) == [True]
    assert _executed_fused_ops(sess, y, {x: data, flag: False}) == [False]


def test_bool_switch_builds_no_cond(sess):
    x = tf.placeholder(tf.float32, SHAPE)
    batch_norm("bn", x, False)
    types = {op.type for op in sess.graph.get_operations()}
    assert not types & {"Switch", "Merge", "If", "StatelessIf"}
    assert not [op for op in sess.graph.get_operations() if op.type == "AssignSubVariableOp"]


@pytest.mark.parametrize("shape,kwargs,match", [
    ([4, 5, 6], {}, "4-D"),
    ([4, 5, 6, None], {}, "channel"),
    ([4, 3, 5, 6], {"data_format": "NCHW"}, "NCHW"),
    ([4, 5, 6, 3], {"data_format": "NCWH"}, "data_format"),
    ([4, 5, 6, 3], {"decay": 1.5}, "decay"),
    ([4, 5, 6, 3], {"epsilon": 0.0}, "epsilon"),
])
def test_bad_input_raises(sess, shape, kwargs, match):
    x = tf.placeholder(tf.float32, shape)
    with pytest.raises(ValueError, match=match):
        batch_norm("bn", x, True, **kwargs)


def test_bad_switch_raises(sess):
    x = tf.placeholder(tf.float32, SHAPE)
    with pytest.raises(ValueError, match="is_training"):
        batch_norm("bn", x, tf.placeholder(tf.float32, []))
    with pytest.raises(ValueError, match="is_training"):
        batch_norm("bn2", x, "yes")
