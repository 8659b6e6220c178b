"""The network's plan (vidcorr.model.spec) against the graph TensorFlow builds from it."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.network import mind
from vidcorr.model.spec import (ENCODER_CHANNELS, NetworkSpec, channel_plan, layer_plan,
                                padded_size, plan_flops, receptive_radius, spec_from_shapes,
                                width_for_channels)


def test_channel_plan_scales_and_keeps_two():
    encoder, _ = channel_plan(0.25)
    assert list(encoder) == [max(2, int(round(c * 0.25))) for c in ENCODER_CHANNELS]
    assert min(channel_plan(0.001)[0]) == 2
    with pytest.raises(ValueError):
        channel_plan(0)


def test_width_for_channels_inverts_the_rounding():
    """29 and 38 channels are width 0.3, though 29 / 96 = 0.302 would give 39 of 128."""
    assert width_for_channels(29, 38) == 0.3
    assert width_for_channels(24, 32) == 0.25 and width_for_channels(96, 128) == 1.0
    for width in np.arange(0.05, 1.5, 0.0025):  # every width's plan comes back
        encoder, decoder = channel_plan(width)
        found = width_for_channels(encoder[0], encoder[2])
        assert channel_plan(found) == (encoder, decoder), width
    assert width_for_channels(24, 40) is None  # no width gives both


def _graph_shapes(spec):
    """``{name: shape}`` of the variables TensorFlow builds for ``spec``."""
    graph = tf.Graph()
    with graph.as_default():
        mind(tf.zeros([1, 32, 32, 6]), False, spec=spec)
        return {v.op.name: v.shape.as_list() for v in tf.global_variables()}


@pytest.mark.parametrize("spec", [
    NetworkSpec(width=0.125), NetworkSpec(width=0.3, skips=(4, 3, 2, 1, 0)),
    NetworkSpec(width=0.25, skips=(4, 2, 0), output_kernel=1, kernel_size=9),
    NetworkSpec(width=0.5, skips=(), output_kernel=1), NetworkSpec(width=0.125, skips=(3, 1))])
def test_spec_from_shapes_reads_the_built_graph(spec):
    """The spec comes back from the shapes of the graph built for it."""
    assert spec_from_shapes(_graph_shapes(spec)) == spec


def test_spec_from_shapes_errors():
    shapes = _graph_shapes(NetworkSpec(width=0.25))
    lacking = {k: v for k, v in shapes.items() if not k.startswith("mind/enc3/")}
    with pytest.raises(ValueError, match="no mind/enc3/conv1/weights"):
        spec_from_shapes(lacking)
    with pytest.raises(ValueError, match="no width gives its channels"):
        spec_from_shapes(dict(shapes, **{"mind/enc3/conv1/weights": [3, 3, 24, 40]}))
    with pytest.raises(ValueError, match="output layer"):
        spec_from_shapes(dict(shapes, **{"mind/output/weights": [3, 3, 50, 3]}))
    with pytest.raises(ValueError, match="output layer"):  # 2 K^2 logits, K odd
        spec_from_shapes(dict(shapes, **{"mind/output/weights": [1, 1, 24, 60]}))


@pytest.mark.parametrize("spec", [NetworkSpec(width=0.125),
                                  NetworkSpec(width=0.125, kernel_size=5, output_kernel=1,
                                              skips=(4, 3, 2, 1, 0))])
def test_plan_flops_equal_the_built_graphs_convolutions(spec):
    """plan_flops against FLOPs counted from the shapes of every convolution in the graph."""
    h, w = 64, 96
    graph = tf.Graph()
    with graph.as_default():
        mind(tf.zeros([1, h, w, 6]), False, spec=spec, folded=True)
    counted = 0
    for op in graph.get_operations():
        if op.type == "Conv2D":
            k = op.inputs[1].shape.as_list()  # [kh, kw, cin, cout]
            out = op.outputs[0].shape.as_list()  # [1, H, W, cout]
            counted += 2 * out[1] * out[2] * k[0] * k[1] * k[2] * k[3]
        elif op.type == "Conv2DBackpropInput":  # a stride-2 transposed conv: k^2/4 taps per pixel
            k = op.inputs[1].shape.as_list()  # [kh, kw, cout, cin]
            out = op.outputs[0].shape.as_list()
            counted += 2 * out[1] * out[2] * k[0] * k[1] // 4 * k[2] * k[3]
    if spec.kernel_size:
        counted += 2 * h * w * 2 * spec.kernel_size ** 2 * 3  # the blend's multiply-adds
    assert plan_flops(layer_plan(spec, h, w), spec.kernel_size) == counted


def test_receptive_radius_bounds_the_gradient_of_one_pixel():
    """No input pixel further than receptive_radius from an output pixel affects it, and the
    reach is not far below the bound."""
    spec = NetworkSpec(width=0.125, skips=())
    size = 640
    radius = receptive_radius(layer_plan(spec, size, size))
    assert padded_size(size, size) == (size, size) and 2 * radius < size
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [1, size, size, 6])
        out = mind(x, False, spec=spec, folded=True)
        grad = tf.gradients(out[0, size // 2, size // 2, 0], x)[0][0]  # [H, W, 6]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            g = sess.run(grad, {x: np.random.RandomState(0).rand(1, size, size, 6)})
    ys, xs = np.nonzero(np.abs(g).sum(-1))
    reach = max(np.abs(ys - size // 2).max(), np.abs(xs - size // 2).max())
    assert radius // 2 < reach <= radius, (reach, radius)


def test_spec_validation_happens_when_planned():
    for bad, field in ((dict(skips=(4, 4)), "skips"), (dict(width=0), "width"),
                       (dict(kernel_size=4, output_kernel=1), "kernel_size")):
        with pytest.raises(ValueError, match=field):
            layer_plan(NetworkSpec(**bad))
