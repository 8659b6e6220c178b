"""Tests of the MIND network: variables, shapes, padding, FLOP count."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.network import forward_flops, mind, pad_to_multiple
from vidcorr.model.spec import NetworkSpec
from vidcorr.model.spec import channel_plan

BN = ["gamma", "beta", "moving_mean", "moving_variance"]


def _expected_variables():
    names = []
    for block in range(1, 6):
        for conv in range(1, 4):
            layer = "mind/enc%d/conv%d" % (block, conv)
            names += [layer + "/weights"] + [layer + "/bn/" + v for v in BN]
    for block in range(1, 6):
        for layer in ("up", "conv1", "conv2"):
            layer = "mind/dec%d/%s" % (block, layer)
            names += [layer + "/weights"] + [layer + "/bn/" + v for v in BN]
    return names + ["mind/output/weights", "mind/output/biases"]


def test_exact_variable_list_and_shapes(sess):
    x = tf.placeholder(tf.float32, [None, 64, 96, 6])
    mind(x, tf.placeholder_with_default(True, []), spec=NetworkSpec(width=0.125))
    variables = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert sorted(variables) == sorted(_expected_variables())
    assert len(variables) == 15 * 5 + 15 * 5 + 2
    # width 0.125: encoder 12, 12, 16, 16, 16; decoder 16, 16, 16, 12, 12
    assert variables["mind/enc1/conv1/weights"] == [3, 3, 6, 12]
    assert variables["mind/enc5/conv3/weights"] == [3, 3, 16, 16]
    assert variables["mind/dec1/up/weights"] == [4, 4, 16, 16]
    assert variables["mind/dec1/conv1/weights"] == [3, 3, 16 + 16, 16]  # + pool4
    assert variables["mind/dec3/conv1/weights"] == [3, 3, 16 + 12, 16]  # + pool2
    assert variables["mind/dec4/conv1/weights"] == [3, 3, 12, 12]  # no skip in the paper's net
    assert variables["mind/output/weights"] == [3, 3, 12, 3]
    trainable = {v.op.name for v in tf.trainable_variables()}
    assert not any("moving" in name for name in trainable)


def test_extra_skips_change_only_decoder_inputs(sess):
    x = tf.placeholder(tf.float32, [None, 32, 32, 6])
    mind(x, False, spec=NetworkSpec(width=0.125, skips=(4, 3, 2, 1, 0)))
    shapes = {v.op.name: v.shape.as_list() for v in tf.global_variables()}
    assert shapes["mind/dec4/conv1/weights"] == [3, 3, 12 + 12, 12]  # + pool1
    assert shapes["mind/dec5/conv1/weights"] == [3, 3, 12 + 12, 12]  # + full-resolution enc1
    assert sorted(shapes) == sorted(_expected_variables())


@pytest.mark.parametrize("height,width", [(32, 96), (37, 50), (20, 33), (64, 65)])
def test_output_shape_for_any_size(sess, rng, height, width):
    x = tf.placeholder(tf.float32, [None, height, width, 6])
    y = mind(x, False, spec=NetworkSpec(width=0.125))
    assert y.shape.as_list() == [None, height, width, 3]
    sess.run(tf.global_variables_initializer())
    out = sess.run(y, {x: rng.rand(2, height, width, 6)})
    assert out.shape == (2, height, width, 3) and np.all(np.isfinite(out))


def test_pad_to_multiple_reflects_and_crops_back(sess, rng):
    data = rng.rand(1, 37, 50, 2).astype(np.float32)
    padded, (top, left, h, w) = pad_to_multiple(tf.constant(data))
    out = sess.run(padded)
    assert out.shape == (1, 64, 64, 2)
    np.testing.assert_array_equal(out[:, top:top + h, left:left + w], data)
    np.testing.assert_array_equal(out[0, top - 1, left:left + w], data[0, 1])  # reflection
    with pytest.raises(ValueError, match="too small"):
        pad_to_multiple(tf.zeros([1, 10, 40, 2]))


def test_forward_flops_match_tensorflow_profiler():
    graph = tf.Graph()
    with graph.as_default():
        spec = NetworkSpec(width=0.25)
        mind(tf.zeros([1, 64, 96, 6]), False, spec=spec)
        opts = tf.profiler.ProfileOptionBuilder.float_operation()
        opts["output"] = "none"
        profile = tf.profiler.profile(graph, options=opts)
        conv_flops = sum(child.total_float_ops for child in _walk(profile)
                         if child.name.endswith(("Conv2D", "conv2d_transpose")))
    assert conv_flops == forward_flops(64, 96, spec)
    # The full-width network at 128x384 (analytic).
    assert abs(forward_flops(128, 384) / 1e9 - 55.61) < 0.01


def _walk(node):
    for child in node.children:
        yield child
        for grandchild in _walk(child):
            yield grandchild


def test_channel_plan_and_bad_input(sess):
    assert channel_plan(1.0) == ([96, 96, 128, 128, 128], [128, 128, 128, 96, 96])
    with pytest.raises(ValueError, match="width"):
        channel_plan(0)
    with pytest.raises(ValueError, match="6 channels"):
        mind(tf.zeros([1, 32, 32, 3]), False)
    with pytest.raises(ValueError, match="skips"):
        mind(tf.zeros([1, 32, 32, 6]), False, spec=NetworkSpec(skips=(5,)))


def test_residual_average_adds_the_frame_average(sess, rng):
    frames = rng.rand(2, 40, 72, 6).astype(np.float32)
    spec = NetworkSpec(width=0.125, residual="average")
    out = mind(tf.constant(frames), False, spec=spec)
    plain = mind(tf.constant(frames), False, spec=spec.replace(residual="none"), name="plain")
    sess.run(tf.global_variables_initializer())
    names = lambda scope: sorted(v.op.name.split("/", 1)[1]  # noqa: E731
                                 for v in tf.global_variables(scope))
    assert names("mind/") == names("plain/")  # same variables: checkpoints stay compatible
    for scope in ("mind", "plain"):
        for var in tf.global_variables(scope + "/output"):
            var.load(np.zeros(var.shape.as_list(), np.float32), sess)
    got, grey = sess.run([out, plain])
    np.testing.assert_allclose(got, 0.5 * (frames[..., :3] + frames[..., 3:]), atol=1e-6)
    np.testing.assert_allclose(grey, 0.5, atol=1e-7)
    with pytest.raises(ValueError, match="residual"):
        mind(tf.constant(frames), False, spec=spec.replace(residual="sum"), name="bad")


@pytest.mark.parametrize("spec", [NetworkSpec(width=0.125),
                                  NetworkSpec(width=0.25, skips=(4, 3, 2, 1, 0), output_kernel=1,
                                              kernel_size=5)])
def test_layer_plan_is_what_the_graph_builds(sess, spec):
    """Every planned layer's weights exist with the planned channels and the planned
    output size (read from the graph), and nothing else has weights."""
    from vidcorr.model.spec import CHANNEL_AXIS, layer_plan

    mind(tf.zeros([1, 40, 72, 6]), False, spec=spec)
    weights = {v.op.name[len("mind/"):-len("/weights")]: v.shape.as_list()
               for v in tf.global_variables() if v.op.name.endswith("/weights")}
    plan = layer_plan(spec, 40, 72)
    assert sorted(weights) == sorted(l.name for l in plan if l.kind != "pool")
    graph = tf.get_default_graph()
    for layer in plan:
        if layer.kind == "pool":
            op = graph.get_operation_by_name("mind/%s" % layer.name)
            assert op.outputs[0].shape.as_list()[1:] == [layer.height, layer.width, layer.cout]
            continue
        shape = weights[layer.name]
        assert shape[0] == shape[1] == layer.kernel
        assert shape[CHANNEL_AXIS[layer.kind]] == layer.cout
        assert shape[5 - CHANNEL_AXIS[layer.kind]] == layer.cin  # the other channel axis


def test_config_loads_without_tensorflow():
    """Reading a JSON config (and the layer plan) must not import TensorFlow."""
    import os
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    code = ("import sys; from vidcorr.model.config import load_config; from vidcorr.model.spec import "
            "layer_plan; c = load_config('configs/cpu_small.json'); "
            "layer_plan(c.model.network_spec(), 64, 64); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.check_call([sys.executable, "-c", code], cwd=root,
                          env=dict(os.environ, PYTHONPATH=os.path.abspath(root)))
