"""The one TensorFlow import point (vidcorr.compat): static predicates, the one-branch cond,
device placement and session settings on this CPU."""

import numpy as np
import pytest

from vidcorr.compat import (default_device, gpu_count, session_config, smart_cond, static_bool,
                            tf, tower_devices)


def test_static_bool_knows_python_and_constant_predicates():
    assert static_bool(True) is True and static_bool(False) is False
    assert static_bool(tf.constant(True)) is True
    assert static_bool(tf.placeholder(tf.bool, [])) is None
    with pytest.raises((TypeError, ValueError)):
        static_bool(tf.placeholder(tf.float32, []))


def test_smart_cond_builds_one_branch_for_a_known_predicate(sess):
    built = []

    def branch(value):
        def fn():
            built.append(value)
            return tf.constant(value)
        return fn

    assert sess.run(smart_cond(False, branch(1.0), branch(2.0))) == 2.0
    assert built == [2.0]
    pred = tf.placeholder(tf.bool, [])
    out = smart_cond(pred, branch(3.0), branch(4.0))
    assert built == [2.0, 3.0, 4.0]  # a tensor: both branches, inside a cond
    assert sess.run(out, {pred: True}) == 3.0 and sess.run(out, {pred: False}) == 4.0


def test_placement_on_a_machine_without_a_gpu():
    if gpu_count():
        pytest.skip("a GPU is present")
    assert default_device().upper().endswith("CPU:0")
    devices = tower_devices(2)
    assert len(devices) == 2 and all("CPU" in d.upper() for d in devices)
    config = session_config(threads=1, cpu_devices=2)
    assert config.intra_op_parallelism_threads == 1 and config.allow_soft_placement
    assert config.device_count["CPU"] == 2
    assert not config.graph_options.rewrite_options.disable_meta_optimizer
    assert session_config(graph_rewrites=False).graph_options.rewrite_options.disable_meta_optimizer
    graph = tf.Graph()
    with graph.as_default(), tf.device(devices[1]):
        x = tf.constant(np.arange(3.0)) * 2.0
    with tf.Session(graph=graph, config=config) as s:
        np.testing.assert_array_equal(s.run(x), [0.0, 2.0, 4.0])
