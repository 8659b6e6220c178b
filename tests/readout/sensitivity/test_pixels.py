"""Per-pixel gradients of any network (PixelGradients) against the seed's loop: one
``tf.gradients`` and one ``sess.run`` per pixel, in the network's own session."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.sensitivity.pixels import PixelGradients

H, W, C = 16, 24, 3


def _conv(x, name, cout, k=3, stride=1):
    cin = x.shape.as_list()[-1]
    w = tf.get_variable(name + "/w", [k, k, cin, cout],
                        initializer=tf.random_normal_initializer(0, 0.3, seed=len(name)))
    b = tf.get_variable(name + "/b", [cout], initializer=tf.constant_initializer(0.05))
    return tf.nn.conv2d(x, w, [1, stride, stride, 1], "SAME") + b


def unet(x, fused=False):
    """An encoder-decoder with a skip and batch norm in inference mode: plain ops (which
    the transposed pass follows) or fused batch norm and ELU (which it cannot)."""
    e1 = tf.nn.relu(_conv(x, "e1", 8))  # [1, H, W, 8]
    e2 = tf.nn.relu(_conv(tf.nn.max_pool(e1, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), "e2", 8))
    up_w = tf.get_variable("up/w", [4, 4, 8, 8],
                           initializer=tf.random_normal_initializer(0, 0.3, seed=7))
    up = tf.nn.conv2d_transpose(e2, up_w, [1, H, W, 8], [1, 2, 2, 1], "SAME")
    d = _conv(tf.concat([up, e1], axis=3), "d", 8)
    mean = tf.get_variable("bn/mean", [8], initializer=tf.constant_initializer(0.1))
    var = tf.get_variable("bn/var", [8], initializer=tf.constant_initializer(2.0))
    scale = tf.get_variable("bn/scale", [8], initializer=tf.constant_initializer(1.5))
    offset = tf.get_variable("bn/offset", [8], initializer=tf.constant_initializer(-0.2))
    if fused:
        d, _, _ = tf.nn.fused_batch_norm(d, scale, offset, mean, var, 1e-3, is_training=False)
        d = tf.nn.elu(d)
    else:
        d = tf.nn.relu(tf.nn.batch_normalization(d, mean, var, offset, scale, 1e-3))
    return _conv(d, "out", 2, k=1)  # [1, H, W, 2]


def classifier_features(x):
    """A plain CNN's feature map (strided, no skips): a classifier's trunk."""
    h = tf.nn.relu(_conv(x, "c1", 6))
    h = tf.nn.relu(_conv(tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), "c2", 12))
    return _conv(h, "c3", 4)  # [1, H/2, W/2, 4]


def _seed_loop(build, image, points):
    """One tf.gradients op and one sess.run per pixel (the seed's code)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [1, H, W, C])
        y = build(x)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            maps = [sess.run(tf.gradients(tf.reduce_sum(y[0, py, px, :]), x)[0],
                             {x: image[None]})[0] for px, py in points]
            return np.stack(maps), (x, y)


@pytest.mark.parametrize("fused,backward", [(False, "transpose"), (True, "pfor"), (True, "loop")])
def test_maps_equal_the_seeds_loop(fused, backward):
    image = np.random.RandomState(0).uniform(size=(H, W, C)).astype(np.float32)
    build = lambda x: unet(x, fused)  # noqa: E731
    points = np.array([[0, 0], [5, 3], [23, 15], [12, 8], [7, 14]])
    expected, _ = _seed_loop(build, image, points)
    grads = PixelGradients(build, input_shape=(H, W, C), reduce="maps", chunk=2,
                           backward="loop" if backward == "loop" else "auto")
    assert grads.backward == backward and grads.output_shape == (H, W, 2)
    grads.set_input(image)
    got = grads.run(points)["maps"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    grads.close()


def test_a_built_graph_with_its_session_and_the_reductions():
    image = np.random.RandomState(1).uniform(size=(H, W, C)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, H, W, C])
        y = classifier_features(x)
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        points = np.array([[0, 0], [3, 2], [11, 7], [6, 5]])
        maps = np.stack([sess.run(tf.gradients(tf.reduce_sum(y[0, py, px, :]), x)[0],
                                  {x: image[None]})[0] for px, py in points])
        engines = {r: PixelGradients((x, y), session=sess, reduce=r) for r in ("maps", "norm",
                                                                               "peak")}
        sess.close()
    for engine in engines.values():
        engine.set_input(image)
    np.testing.assert_allclose(engines["maps"].run(points)["maps"], maps, rtol=1e-4, atol=1e-6)
    norm = np.sqrt((maps ** 2).sum(axis=3))  # [N, H, W]
    np.testing.assert_allclose(engines["norm"].run(points)["norm"], norm, rtol=1e-4, atol=1e-6)
    peak = engines["peak"].run(points)
    flat = norm.reshape(len(points), -1)
    np.testing.assert_array_equal(peak["y"] * W + peak["x"], flat.argmax(axis=1))
    np.testing.assert_allclose(peak["peak"], flat.max(axis=1), rtol=1e-5)
    for n, (px, py) in enumerate(zip(peak["x"], peak["y"])):  # the 3x3 centroid in numpy
        padded = np.pad(norm[n], 1)
        around = padded[py:py + 3, px:px + 3]
        d = np.arange(-1, 2)
        np.testing.assert_allclose(peak["subpixel"][n], [px + (around.sum(0) * d).sum() /
                                                         around.sum(), py + (around.sum(1) * d).sum()
                                                         / around.sum()], rtol=1e-5)
    assert engines["maps"].grid(stride=4).shape == (((H // 2) // 4) * ((W // 2) // 4), 2)
    for engine in engines.values():
        engine.close()


def test_bad_networks_and_inputs_are_one_line_errors():
    with pytest.raises(UserError, match="input_shape=.height, width, channels."):
        PixelGradients(lambda x: x, input_shape=(H, W))
    with pytest.raises(UserError, match="does not depend on the input"):
        PixelGradients(lambda x: tf.zeros([1, 4, 4, 1]) + tf.get_variable(
            "v", [1], initializer=tf.ones_initializer()), input_shape=(H, W, C))
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [H, W, C])
        with pytest.raises(UserError, match="input must be 4-D"):
            PixelGradients((x, x * 2.0))
    grads = PixelGradients(lambda x: _conv(x, "one", 1), input_shape=(H, W, C))
    with pytest.raises(UserError, match="the image must be"):
        grads.set_input(np.zeros((H + 1, W, C)))
    with pytest.raises(UserError, match="points must be"):
        grads.run(np.array([[W, 0]]))
    with pytest.raises(UserError, match="reduce must be"):
        PixelGradients(lambda x: x, input_shape=(H, W, C), reduce="mean")
    with pytest.raises(UserError, match="unknown setting.s. chunks; PixelGradients takes"):
        PixelGradients(lambda x: x, input_shape=(H, W, C), chunks=3)
    with pytest.raises(UserError, match="chunk None or a positive integer"):
        PixelGradients(lambda x: x, input_shape=(H, W, C), chunk=0)
    with pytest.raises(UserError, match="window must be"):
        PixelGradients(lambda x: x, input_shape=(H, W, C), window=(3, 0))
    with pytest.raises(UserError, match="k must be"):
        PixelGradients(lambda x: x, input_shape=(H, W, C), reduce="topk", k=0)
    grads.close()


def test_windows_and_top_k_against_the_loops_maps():
    """The receptive-field windows (the pass runs on windows, through batch norm's products
    by constants too) hold all of each map; a given window is the map's crop around the
    pixel; top-k is numpy's sort of the norm."""
    height, width = 48, 64
    rng = np.random.RandomState(2)
    image = rng.uniform(size=(height, width, C)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [1, height, width, C])
        y = tf.nn.batch_normalization(classifier_features(x), tf.constant([.1, .2, .3, .4]),
                                      tf.constant([2., 1., .5, 3.]), 0.1, 1.5, 1e-3)
        y = y * tf.constant(rng.uniform(0.5, 1.5, (1, 24, 32, 1)), tf.float32)  # [1, 24, 32, 4]
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        points = np.array([[0, 0], [31, 23], [10, 7], [20, 12], [5, 22]])
        maps = np.stack([sess.run(tf.gradients(tf.reduce_sum(y[0, py, px, :]), x)[0],
                                  {x: image[None]})[0] for px, py in points])
        auto = PixelGradients((x, y), session=sess, reduce="maps", window="auto", chunk=2)
        given = PixelGradients((x, y), session=sess, reduce="norm", window=(9, 7))
        top = PixelGradients((x, y), session=sess, reduce="topk", k=4, window="auto")
        sess.close()
    assert auto.window_shape[0] * auto.window_shape[1] < height * width / 4  # a window, not dense
    for engine in (auto, given, top):
        engine.set_input(image)
    got = auto.run(points)
    np.testing.assert_allclose(auto.paste(got["maps"], got["origin"]), maps, rtol=1e-4, atol=1e-6)
    got = given.run(points)
    norm = np.sqrt((maps ** 2).sum(axis=3))  # [N, H, W]
    np.testing.assert_array_equal(got["origin"], points * 2 + 1 - [3, 4])  # centre 2 p + 1
    padded = np.pad(norm, [(0, 0), (9, 9), (7, 7)])
    crops = np.stack([padded[i, oy + 9:oy + 18, ox + 7:ox + 14]
                      for i, (ox, oy) in enumerate(got["origin"])])
    np.testing.assert_allclose(got["norm"], crops, rtol=1e-4, atol=1e-6)
    got = top.run(points)
    flat = norm.reshape(len(points), -1)
    order = np.argsort(-flat, axis=1, kind="stable")[:, :4]
    np.testing.assert_allclose(got["value"], np.take_along_axis(flat, order, 1), rtol=1e-4)
    np.testing.assert_array_equal(got["y"] * width + got["x"], order)
    for engine in (auto, given, top):
        engine.close()


def test_vidcorrs_own_network_gives_the_matchers_sensitivity_maps():
    """The packaged model's predictor graph, taken as a user's (input, output), on the
    transposed pass (mirror padding, patches, softmax, the blend's products): the per-frame
    norms of its maps are the Matcher's sensitivity maps."""
    import vidcorr

    rng = np.random.RandomState(3)
    a, b = (rng.uniform(size=(32, 48, 3)).astype(np.float32) for _ in range(2))
    matcher = vidcorr.Matcher()
    points = np.array([[0, 0], [20, 11], [47, 31]])
    expected = matcher.sensitivity_maps(a, b, points)  # [N, 2, H, W]
    predictor = matcher.predictor_for(32, 48)
    grads = PixelGradients((predictor.inputs, predictor.prediction), session=predictor.sess,
                           reduce="maps")
    assert grads.backward == "transpose"  # the kernel head's ops transposed too
    grads.set_input(np.concatenate([a, b], axis=-1))
    maps = grads.run(points)["maps"]  # [N, H, W, 6]
    norms = np.stack([np.sqrt((maps[..., :3] ** 2).sum(-1)), np.sqrt((maps[..., 3:] ** 2).sum(-1))], 1)
    np.testing.assert_allclose(norms, expected, rtol=1e-4, atol=1e-5)
    grads.close()
    matcher.close()
