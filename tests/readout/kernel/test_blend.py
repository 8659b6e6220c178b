"""Tests of the blend-weight read-out (vidcorr.readout.kernel.blend) against closed forms."""

import os

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.inference import find_model, fold_batch_norm
from vidcorr.readout.kernel.graph import LevelGraph as _Level
from vidcorr.readout.matching import DEFAULT_MODEL, Matcher

K = 5  # the random kernel checkpoint's kernel size (tests/conftest.py)


def _taps(k=K):
    """One frame's tap offsets (dx, dy) in logit order, written out by hand."""
    r = k // 2
    return np.array([(dx, dy) for dy in range(-r, r + 1) for dx in range(-r, r + 1)], float)


def _constant_logits_weights(checkpoint, logits):
    """The folded weights of ``checkpoint`` with the head's 1x1 conv zeroed and its biases set
    to ``logits``: every pixel then blends with ``softmax(logits)``, whatever the input."""
    _, spec, values = find_model(checkpoint)
    weights = fold_batch_norm(values)
    weights["mind/output/weights"] = np.zeros_like(weights["mind/output/weights"])
    weights["mind/output/biases"] = np.asarray(logits, np.float32)
    return spec, weights


def _save_weights(values, path):
    """A checkpoint holding ``values`` ({variable name: array}) as they are."""
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.Variable(v, name=n) for n, v in sorted(values.items())]
        with tf.Session() as sess:
            sess.run(tf.variables_initializer(variables))
            tf.train.Saver(variables).save(sess, path)
    return path


def test_statistics_equal_the_closed_form_at_every_pixel(random_kernel_checkpoint, rng):
    logits = rng.randn(2 * K * K).astype(np.float32)
    spec, weights = _constant_logits_weights(random_kernel_checkpoint, logits)
    a, b = rng.rand(32, 64, 3), rng.rand(32, 64, 3)
    res = {}
    for statistic in ("centroid", "local", "argmax"):
        graph = _Level(spec, 32, 64, weights, statistic, temperature=1.0)
        out = graph.run(a, b)
        graph.close()
        ys, xs = np.mgrid[0:32, 0:64]
        offsets = out["position"] - np.stack([xs, ys], -1)[:, :, None, :]  # [H, W, 2, 2]
        res.update(out, **{statistic: offsets[2:-2, 2:-2]})  # taps inside the image
    w = np.exp(logits - logits.max())
    w = (w / w.sum()).reshape(2, K * K)  # [frame, tap]
    taps = _taps()
    mass = w.sum(axis=1)
    centroid = (w[:, :, None] * taps).sum(axis=1) / mass[:, None]  # [2, (dx, dy)]
    best = w.argmax(axis=1)
    local = []
    for f in range(2):
        near = np.abs(taps - taps[best[f]]).max(axis=1) <= 1  # the 3x3 taps around the best
        local.append((w[f, near, None] * taps[near]).sum(axis=0) / w[f, near].sum())
    for name, expected in (("centroid", centroid), ("local", np.array(local)),
                           ("argmax", taps[best]), ("mass", mass),
                           ("peak", w.max(axis=1) / mass)):
        got = res[name]
        assert got.shape[:2] in ((32, 64), (28, 60)), name
        np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_temperature_divides_the_logits(random_kernel_checkpoint, rng):
    logits = rng.randn(2 * K * K).astype(np.float32)
    spec, weights = _constant_logits_weights(random_kernel_checkpoint, logits)
    graph = _Level(spec, 32, 32, weights, temperature=2.0)  # its statistic: the centroid
    res = graph.run(rng.rand(32, 32, 3), rng.rand(32, 32, 3))
    graph.close()
    w = np.exp(logits / 2.0)
    w = (w / w.sum()).reshape(2, K * K)
    np.testing.assert_allclose(res["mass"][5, 7], w.sum(axis=1), rtol=1e-4)
    centroid = (w[:, :, None] * _taps()).sum(axis=1) / w.sum(axis=1)[:, None]
    np.testing.assert_allclose(res["position"][5, 7] - [7, 5], centroid, rtol=1e-4, atol=1e-5)


def test_sharp_one_hot_head_kernel_equals_sensitivity_argmax(random_kernel_checkpoint, rng,
                                                             tmp_path):
    # A head whose logits are one-hot (a tap of each frame) and constant: its output is
    # 0.5 frame_t(p + d1) + 0.5 frame_t2(p + d3), so the exact sensitivity peaks there too.
    d1, d3 = (2, -1), (-2, 1)  # (dx, dy)
    taps = [tuple(t) for t in _taps().astype(int)]
    logits = np.full(2 * K * K, -60.0, np.float32)
    logits[taps.index(d1)] = logits[K * K + taps.index(d3)] = 60.0
    _, values = find_model(random_kernel_checkpoint)[1:]
    values = dict(values)
    values["mind/output/weights"] = np.zeros_like(values["mind/output/weights"])
    values["mind/output/biases"] = logits
    path = _save_weights(values, str(tmp_path / "model.ckpt"))
    a, b = rng.rand(40, 72, 3), rng.rand(40, 72, 3)  # reflection-padded on every side
    out = {}
    for readout in ("kernel", "sensitivity"):  # one read-out each: a single pass
        matcher = Matcher(path, levels=1, readout=readout, min_confidence=0, chunk=16, passes=1,
                          refine="none")
        out[readout] = matcher.match(a, b, stride=4)
        matcher.close()
    grid = out["kernel"].grid
    inner = ((grid[:, 0] >= 4) & (grid[:, 0] < 68) & (grid[:, 1] >= 4) & (grid[:, 1] < 36))
    for m in out.values():
        np.testing.assert_allclose(m.p1[inner], grid[inner] + d1, atol=1e-3)
        np.testing.assert_allclose(m.p3[inner], grid[inner] + d3, atol=1e-3)
    # At the border too: a tap in the mirrored padding names the pixel it shows.
    np.testing.assert_allclose(out["kernel"].p1, out["sensitivity"].p1, atol=1e-3)
    np.testing.assert_allclose(out["kernel"].p3, out["sensitivity"].p3, atol=1e-3)


def _example_crop(dx, height=128, width=256):
    from vidcorr.io.video import to_rgb_float
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
    image = to_rgb_float(os.path.join(root, "cockatoo_262.png"))
    y0, x0 = 0, 64  # the sample frame is 384x128: a quarter of the crop is still 32 rows
    return image[y0:y0 + height, x0 + dx:x0 + dx + width]


def test_reflection_at_every_border_against_numpy():
    from vidcorr.readout.kernel.blend import reflect

    w, h = 10, 7  # different sizes: x reflects at 0 and 9, y at 0 and 6
    xy = np.array([[-1.5, -0.25], [10.5, 7.75], [9.0, 6.0], [3.2, 2.1], [-3.0, 8.5]],
                  np.float32)
    expected = np.array([[1.5, 0.25], [7.5, 4.25], [9.0, 6.0], [3.2, 2.1], [3.0, 3.5]])
    with tf.Session(graph=tf.Graph()) as sess:
        got = np.stack(sess.run([reflect(tf.constant(xy[:, 0]), w),
                                 reflect(tf.constant(xy[:, 1]), tf.constant(h))]), axis=-1)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_positions_map_back_through_fields_that_vary(random_kernel_checkpoint, rng):
    """A constant one-hot head reads frame t at tap d1 and frame t+2 at d3 of the warped
    pair; with fields that vary over the image the graph must return
    ``q + field(q)``, q the tap position reflected into the image, the field sampled
    bilinearly (scipy's ``map_coordinates``, an independent sampler)."""
    from scipy import ndimage

    d1, d3 = (2, -1), (-2, 2)
    taps = [tuple(t) for t in _taps().astype(int)]
    logits = np.full(2 * K * K, -60.0, np.float32)
    logits[taps.index(d1)] = logits[K * K + taps.index(d3)] = 60.0
    spec, weights = _constant_logits_weights(random_kernel_checkpoint, logits)
    h, w = 32, 64
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    fields = [np.stack([1.5 * np.sin(xs / 7.0) + 0.02 * ys, 0.8 * np.cos(ys / 5.0)], -1),
              np.stack([-0.03 * xs + 0.5, 0.6 * np.sin((xs + ys) / 9.0)], -1)]
    graph = _Level(spec, h, w, weights, "argmax", temperature=1.0)
    out = graph.run(rng.rand(h, w, 3), rng.rand(h, w, 3), [f.astype(np.float32) for f in fields])
    graph.close()
    for f, d in enumerate((d1, d3)):
        qx, qy = xs + d[0], ys + d[1]
        qx = np.where(qx < 0, -qx, np.where(qx > w - 1, 2 * (w - 1) - qx, qx))
        qy = np.where(qy < 0, -qy, np.where(qy > h - 1, 2 * (h - 1) - qy, qy))
        shift = [ndimage.map_coordinates(fields[f][..., c], [qy, qx], order=1, mode="nearest")
                 for c in range(2)]
        expected = np.stack([qx + shift[0], qy + shift[1]], -1)
        np.testing.assert_allclose(out["position"][:, :, f], expected, atol=1e-4)




@pytest.mark.parametrize("statistic", ["centroid", "local"])
def test_strips_of_rows_equal_the_whole_level(random_kernel_checkpoint, rng, monkeypatch,
                                              statistic):
    """The logits read strip after strip (5 uneven strips of a 32x64 level, a batch of two
    pairs, warped by fields; and a level of unknown size, the exported graph's, in
    ANY_SIZE_STRIPS strips split at run time) give what the whole level's logits give."""
    from vidcorr.readout.kernel import blend

    _, spec, values = find_model(random_kernel_checkpoint)
    weights = fold_batch_norm(values)
    h, w = 32, 64
    frames = [rng.rand(2, h, w, 3).astype(np.float32) for _ in range(2)]
    fields = (2.0 * rng.rand(2, h, w, 2, 2) - 1.0).astype(np.float32)
    outs, heads = [], []
    # one strip; ceil(2048 / 420) = 5 strips of 6 or 7 rows; the size unknown until run time
    for pixels, known in ((1 << 18, True), (420, True), (1 << 18, False)):
        monkeypatch.setattr(blend, "STRIP_PIXELS", pixels)
        graph = tf.Graph()
        with graph.as_default():
            shape = [2, h, w] if known else [None, None, None]
            a, b = (tf.placeholder(tf.float32, shape + [3]) for _ in frames)
            d = tf.placeholder(tf.float32, shape + [2, 2])
            out = blend.blend_level(spec, a, b, d, statistic)
            heads.append(sum(op.type == "Conv2D" and "output" in op.name
                             for op in graph.get_operations()))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for var in tf.global_variables():
                    var.load(weights[var.op.name], sess)
                outs.append(sess.run(out, {a: frames[0], b: frames[1], d: fields}))
    # the whole level's head (built, unused) and one per strip
    assert heads == [1, 6, 1 + blend.ANY_SIZE_STRIPS] and blend.ANY_SIZE_STRIPS > 1
    for name in ("position", "mass", "peak"):
        for other in outs[1:]:
            assert other[name].shape == outs[0][name].shape == (2, h, w, 2) + (
                (2,) if name == "position" else ())
            np.testing.assert_allclose(other[name], outs[0][name], rtol=1e-5, atol=1e-5,
                                       err_msg=name)


@pytest.mark.parametrize("pixels", [1 << 18, 100])
def test_a_strided_level_is_the_whole_level_at_every_other_pixel(random_kernel_checkpoint,
                                                                 rng, monkeypatch, pixels):
    """``stride=2`` (the fields a pass hands on) reads every 2nd pixel of every 2nd row of an
    odd-sized level, warped, a batch of two, in one strip or several: what the whole level
    reads at those pixels."""
    from vidcorr.readout.kernel import blend

    monkeypatch.setattr(blend, "STRIP_PIXELS", pixels)
    _, spec, values = find_model(random_kernel_checkpoint)
    weights = fold_batch_norm(values)
    h, w = 33, 47
    frames = [rng.rand(2, h, w, 3).astype(np.float32) for _ in range(2)]
    fields = (3.0 * rng.rand(2, h, w, 2, 2) - 1.5).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        a, b = (tf.constant(f) for f in frames)
        whole = blend.blend_level(spec, a, b, tf.constant(fields))
        strided = blend.blend_level(spec, a, b, tf.constant(fields), stride=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for var in tf.global_variables():
                var.load(weights[var.op.name], sess)
            whole, strided = sess.run([whole, strided])
    for name in ("position", "mass", "peak"):
        assert strided[name].shape[:3] == (2, 17, 24), name
        np.testing.assert_allclose(strided[name], whole[name][:, ::2, ::2], rtol=1e-5,
                                   atol=1e-5, err_msg=name)
