"""Tests of the batched sensitivity graph against per-pixel tf.gradients and numpy."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.sensitivity.gradients import GradientSettings, SensitivityGraph
from vidcorr.readout.pyramid import grid_points
from vidcorr.readout.sensitivity.memory import chunk_for_budget, pixel_extent
from vidcorr.readout.inference import checkpoint_values, fold_batch_norm, spec_from_checkpoint
from vidcorr.model.network import mind
from vidcorr.model.spec import NetworkSpec

H, W = 32, 64


def _reference(prefix, image, points, folded=True, spec=NetworkSpec(width=0.125)):
    """Per-pixel tf.gradients, one sess.run each, on the folded (or unfolded) network."""
    H, W = image.shape[:2]  # noqa: N806
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(image[None])
        out = mind(x, False, spec=spec, folded=folded)
        cotangent = tf.placeholder(tf.float32, [1, H, W, 3])
        grad = tf.gradients(out, x, grad_ys=cotangent)[0]
        with tf.Session() as sess:
            if folded:
                values = fold_batch_norm(checkpoint_values(prefix))
                for v in tf.global_variables():
                    v.load(values[v.op.name], sess)
            else:
                tf.train.Saver().restore(sess, prefix)
            grads = []
            for px, py in points:
                ct = np.zeros((1, H, W, 3), np.float32)
                ct[0, py, px] = 1.0
                grads.append(sess.run(grad, {cotangent: ct})[0])
            prediction = sess.run(out)[0]
    return np.stack(grads), prediction  # [N, H, W, 6]


@pytest.fixture(scope="module")
def setup(random_checkpoint):
    rng = np.random.RandomState(3)
    image = rng.rand(H, W, 6).astype(np.float32)
    points = grid_points(H, W, 8, offset=3)[::3]
    grads, prediction = _reference(random_checkpoint, image, points)
    return random_checkpoint, image, points, grads, prediction


@pytest.fixture(scope="module")
def padded_setup(random_checkpoint):
    """A 40x70 pair: the network pads it (by reflection) to 64x96."""
    rng = np.random.RandomState(5)
    image = rng.rand(40, 70, 6).astype(np.float32)
    points = np.concatenate([grid_points(40, 70, 9, offset=2)[::2], [[0, 0], [69, 39]]])
    grads, prediction = _reference(random_checkpoint, image, points)
    return random_checkpoint, image, points, grads, prediction


KERNEL_SPEC = NetworkSpec(width=0.125, output_kernel=1, kernel_size=5)


@pytest.fixture(scope="module")
def kernel_setup(random_kernel_checkpoint):
    """The adaptive-kernel head on a 40x70 pair (padded inside), points near the borders too."""
    rng = np.random.RandomState(6)
    image = rng.rand(40, 70, 6).astype(np.float32)
    points = np.concatenate([grid_points(40, 70, 9, offset=1)[::2], [[0, 0], [69, 39], [1, 38]]])
    grads, prediction = _reference(random_kernel_checkpoint, image, points, spec=KERNEL_SPEC)
    return random_kernel_checkpoint, image, points, grads, prediction


@pytest.fixture(scope="module")
def wide_setup(random_kernel_checkpoint):
    """A 40x1500 pair, much wider than the network's receptive field (about 480 pixels):
    each pixel's backward pass stays in a window all the way to the input."""
    rng = np.random.RandomState(8)
    image = rng.rand(40, 1500, 6).astype(np.float32)
    points = np.array([[0, 0], [1499, 39], [1, 38], [700, 20], [1497, 3], [250, 17], [260, 0],
                       [1200, 39]])
    grads, prediction = _reference(random_kernel_checkpoint, image, points, spec=KERNEL_SPEC)
    return random_kernel_checkpoint, image, points, grads, prediction


@pytest.mark.parametrize("norm,size,backward", [
    ("l2", "plain", "auto"), ("l1", "plain", "auto"), ("max", "plain", "auto"),
    ("l2", "padded", "auto"), ("l2", "kernel", "auto"), ("max", "kernel", "auto"),
    ("l2", "padded", "pfor"), ("l2", "kernel", "pfor"), ("l2", "kernel", "loop"),
    ("l2", "wide", "auto"),
    ("max", "wide", "auto")])
def test_batched_reduced_equals_per_pixel_reference(request, norm, size, backward):
    prefix, image, points, grads, prediction = request.getfixturevalue(
        {"plain": "setup", "padded": "padded_setup", "kernel": "kernel_setup",
         "wide": "wide_setup"}[size])
    H, W = image.shape[:2]  # noqa: N806
    values = checkpoint_values(prefix)
    spec = spec_from_checkpoint(prefix, values)
    graph = SensitivityGraph(spec, H, W, fold_batch_norm(values), GradientSettings(
        chunk=4, norm=norm, radius=3, backward=backward, full_maps=size in ("kernel", "wide")))
    assert graph.backward == ("transpose" if backward == "auto" else backward)
    # Windowed up to the input only where the image is wider than the receptive field.
    if size == "wide":  # the memory model's estimate of the window holds
        extent = pixel_extent(spec, H, W)
        assert graph.window is not None and graph.window[1] <= extent[1] < 600, graph.window
    else:
        assert graph.window is None
    graph.set_images(image[..., :3], image[..., 3:])
    res = graph.run(points)
    per_frame = grads.reshape(len(points), H, W, 2, 3)
    sens = {"l2": np.sqrt((per_frame ** 2).sum(-1)), "l1": np.abs(per_frame).sum(-1),
            "max": np.abs(per_frame).max(-1)}[norm]  # [N, H, W, 2]
    for i in range(len(points)):
        for f in range(2):
            m = sens[i, ..., f]
            y, x = np.unravel_index(np.argmax(m), m.shape)
            assert tuple(res["peak_xy"][i, f]) == (x, y)
            np.testing.assert_allclose(res["peak"][i, f], m.max(), rtol=1e-4)
            yy, xx = np.mgrid[:H, :W]
            far = (yy - y) ** 2 + (xx - x) ** 2 > 9
            tol = 1e-4 * m.max()  # float32 sums in another order (the padding fold)
            np.testing.assert_allclose(res["second"][i, f], m[far].max(), rtol=0, atol=tol)
            padded = np.pad(m, 1)
            np.testing.assert_allclose(res["patch"][i, f], padded[y:y + 3, x:x + 3].ravel(),
                                       rtol=0, atol=tol)
    if size in ("kernel", "wide"):  # the hand-built VJP of the kernel head, map for map
        maps = res["maps"]  # [N, 2, H, W]
        np.testing.assert_allclose(maps, np.transpose(sens, [0, 3, 1, 2]), rtol=0,
                                   atol=1e-5 * sens.max())
    graph.close()


def test_folded_network_agrees_with_unfolded(setup):
    """Folding batch norm changes float rounding only: ReLU kinks and max-pool ties may
    move a few gradients, so most argmax positions and all peaks agree closely."""
    prefix, image, points, _, prediction = setup
    grads, unfolded_prediction = _reference(prefix, image, points, folded=False)
    np.testing.assert_allclose(prediction, unfolded_prediction, atol=1e-4)
    values = checkpoint_values(prefix)
    graph = SensitivityGraph(spec_from_checkpoint(prefix, values), H, W,
                             fold_batch_norm(values), GradientSettings(chunk=4))
    graph.set_images(image[..., :3], image[..., 3:])
    res = graph.run(points)
    graph.close()
    sens = np.sqrt((grads.reshape(len(points), H, W, 2, 3) ** 2).sum(-1))  # [N, H, W, 2]
    flat = sens.reshape(len(points), H * W, 2)
    expected = np.stack([flat.argmax(1) % W, flat.argmax(1) // W], axis=-1)  # [N, 2, 2]
    same = np.all(res["peak_xy"] == expected, axis=-1)
    assert same.mean() >= 0.9, same
    np.testing.assert_allclose(res["peak"], flat.max(1), rtol=0.02)


def test_gradients_match_finite_differences(setup):
    """vidcorr's batched backward pass (BatchedVJP.points, windowed near the output) agrees
    with central finite differences of the forward pass."""
    from vidcorr.readout.sensitivity.backward import BatchedVJP
    from vidcorr.readout.inference import load_folded_weights

    prefix, image, points, _, _ = setup
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [1, H, W, 6])
        out = mind(x, False, spec=NetworkSpec(width=0.125), folded=True)  # as matching runs it
        px, py = points[2]
        vjp = BatchedVJP(out, x).points(tf.ones([1, 3]), tf.constant([py]), tf.constant([px]))
        with tf.Session() as sess:
            load_folded_weights(sess, fold_batch_norm(checkpoint_values(prefix)))
            base = image.astype(np.float32)
            g = sess.run(vjp, {x: base[None]})[0]  # [H, W, 6]: d sum_c out[py, px, c] / d x
            assert np.abs(g).max() > 0
            agree = 0
            for flat in np.argsort(-np.abs(g).ravel())[:8]:  # the strongest input entries
                idx = np.unravel_index(flat, g.shape)
                h = 1e-3
                plus, minus = base.copy(), base.copy()
                plus[idx] += h
                minus[idx] -= h
                fp = sess.run(out, {x: plus[None]})[0, py, px].sum()
                fm = sess.run(out, {x: minus[None]})[0, py, px].sum()
                fd = (fp - fm) / (2 * h)
                # float32 differences; a ReLU kink inside [-h, h] may spoil one entry
                agree += abs(fd - g[idx]) <= 0.02 * abs(g[idx]) + 2e-4
    assert agree >= 7, agree


def test_graph_is_finalised_and_full_maps(setup):
    prefix, image, points, grads, _ = setup
    values = checkpoint_values(prefix)
    graph = SensitivityGraph(spec_from_checkpoint(prefix, values), H, W,
                             fold_batch_norm(values), GradientSettings(chunk=3, full_maps=True))
    graph.set_images(image[..., :3], image[..., 3:])
    before = len(graph.graph.get_operations())
    maps = graph.run(points[:4])["maps"]
    whole = graph.run(points)  # one sess.run, in-graph loop over chunks of 3
    graph.max_pixels_per_run = 2  # one sess.run per 2 pixels
    split = graph.run(points, progress=True)
    for key in whole:
        # float sums in another order: a few 1e-4 entries differ by 3e-9 on oneDNN builds
        np.testing.assert_allclose(split[key], whole[key], rtol=1e-5,
                                   atol=1e-6 * np.abs(whole[key]).max())
    graph.set_images(image[..., 3:], image[..., :3])
    graph.run(points)
    assert len(graph.graph.get_operations()) == before
    with pytest.raises(RuntimeError):
        with graph.graph.as_default():
            tf.constant(1.0)
    expected = np.sqrt((grads[:4].reshape(4, H, W, 2, 3) ** 2).sum(-1)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(maps, expected, rtol=1e-3, atol=1e-6)
    graph.close()


def test_bad_weights_and_grid(setup, random_checkpoint):
    values = fold_batch_norm(checkpoint_values(random_checkpoint))
    with pytest.raises(UserError, match="a different model.width"):
        SensitivityGraph(NetworkSpec(width=0.25), H, W, values)
    with pytest.raises(UserError, match="backward must be one of"):
        GradientSettings(backward="jacobian")
    with pytest.raises(UserError, match="stride"):
        grid_points(H, W, 0)
    assert grid_points(5, 7, 2).tolist()[:4] == [[0, 0], [2, 0], [4, 0], [6, 0]]
    assert chunk_for_budget(NetworkSpec(), 128, 384, 2048) < chunk_for_budget(
        NetworkSpec(width=0.25), 128, 384, 2048)
    assert chunk_for_budget(NetworkSpec(), 128, 384, 100) == 1  # below the fixed part
    assert 1 < chunk_for_budget(NetworkSpec(), 128, 384, 2048) < chunk_for_budget(
        NetworkSpec(), 128, 384, 3072)


def test_matcher_sensitivity_maps_are_the_gradient_norms(setup):
    """Matcher.sensitivity_maps: each point's per-frame L2 norm over colour of the gradient,
    against tf.gradients of the unfolded network."""
    from vidcorr.readout.matching import Matcher

    prefix, image, points, grads, _ = setup
    matcher = Matcher(prefix, readout="sensitivity", levels=1)
    maps = matcher.sensitivity_maps(image[..., :3], image[..., 3:], points[:3])
    with pytest.raises(UserError, match="points must be"):
        matcher.sensitivity_maps(image[..., :3], image[..., 3:], [[W, 0]])
    matcher.close()
    expected = np.sqrt((grads[:3].reshape(3, H, W, 2, 3) ** 2).sum(-1)).transpose(0, 3, 1, 2)
    assert maps.shape == (3, 2, H, W)
    np.testing.assert_allclose(maps, expected, rtol=2e-3, atol=1e-6 * expected.max())
