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
    root = os.path.join(os.path.dirname(__file__), "..", "examples")
    image = to_rgb_float(os.path.join(root, "cockatoo_262.png"))
    y0, x0 = 0, 64  # the sample frame is 384x128: a quarter of the crop is still 32 rows
    return image[y0:y0 + height, x0 + dx:x0 + dx + width]


@pytest.mark.skipif(not os.path.isdir(DEFAULT_MODEL), reason="no packaged default model")
def test_pyramid_with_the_kernel_readout_recovers_a_24_pixel_translation():
    # The middle frame is the crop at x0; frame t shows its pixel p at p - 12, frame t+2 at
    # p + 12 (24 px from t to t+2, three times the kernel's reach per frame step).
    frame_t, frame_t2 = _example_crop(12), _example_crop(-12)
    errors = {}
    for levels in (1, 3):
        matcher = Matcher(readout="kernel", levels=levels, min_confidence=0)
        matches = matcher.match(frame_t, frame_t2, stride=4)
        if levels == 3:
            ops = len(matcher.readout.graph_for(128, 256).graph.get_operations())
            matcher.match(frame_t, frame_t2, stride=4)  # cached: nothing new is built
            assert len(matcher.readout.graph_for(128, 256).graph.get_operations()) == ops
            assert len(matcher.readout._graphs) == 1  # one graph for the whole match
        matcher.close()
        g = matches.grid
        inner = (g[:, 0] >= 16) & (g[:, 0] < 240) & (g[:, 1] >= 8) & (g[:, 1] < 120)
        errors[levels] = (np.hypot(*(matches.p1 - (g - [12, 0])).T)[inner],
                          np.hypot(*(matches.p3 - (g + [12, 0])).T)[inner])
    # Coarse to fine, each frame's position is within a pixel (median), where one level,
    # whose kernel reaches 4 px per frame step, cannot find the motion.
    assert max(np.median(e) for e in errors[3]) < 1.0, [np.median(e) for e in errors[3]]
    assert min(np.median(e) for e in errors[1]) > 4.0, [np.median(e) for e in errors[1]]


def test_bad_readout_options_are_one_line_errors(random_kernel_checkpoint):
    for kwargs, message in (({"readout": "blend"}, "readout must be one of auto, kernel, sensitivity"),
                            ({"statistic": "mean"}, "statistic must be one of"),
                            ({"temperature": 0}, "temperature must be a positive number"),
                            ({"smooth": -1}, "smooth must be an integer >= 0"),
                            ({"passes": 0}, "passes must be an integer >= 1"),
                            ({"sigma": -1}, "sigma must be a finite number >= 0")):
        with pytest.raises(UserError, match=message) as err:
            Matcher(random_kernel_checkpoint, **kwargs)
        assert "\n" not in str(err.value)


def test_a_network_without_a_kernel_head_refuses_the_kernel_readout(random_checkpoint):
    with pytest.raises(UserError, match="needs a network with a kernel head") as err:
        Matcher(random_checkpoint, readout="kernel")
    assert "\n" not in str(err.value) and "sensitivity" in str(err.value)
    Matcher(random_checkpoint, readout="sensitivity").close()  # the exact read-out still works


def test_graph_warp_equals_the_pyramid_warp(sess, rng):
    from vidcorr.model.warping import sample_at
    from vidcorr.readout.pyramid import sample_field, warp

    image = rng.rand(9, 13, 3).astype(np.float32)
    field = (4 * rng.randn(9, 13, 2)).astype(np.float32)  # reaching past the border too
    ys, xs = np.mgrid[0:9, 0:13]
    xy = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32) + field.reshape(-1, 2)
    got = sess.run(sample_at(tf.constant(image[None]), tf.constant(xy[None, :, None])))[0, :, 0]
    np.testing.assert_allclose(got.reshape(9, 13, 3), warp(image, field), atol=1e-5)
    np.testing.assert_allclose(got, sample_field(image, xy), atol=1e-5)


def test_graph_smoothing_equals_scipy_median_and_weighted_gaussian(sess, rng):
    """Over the whole image, the border included: the graph pads by repeating the edge
    pixel (``SYMMETRIC``), which is scipy's ``mode="reflect"``."""
    from scipy import ndimage

    from vidcorr.readout.kernel.smoothing import smooth_field

    field = rng.randn(40, 48, 4).astype(np.float32)
    field[10, 10] = 50.0  # an outlier the median removes
    conf = rng.rand(40, 48).astype(np.float32)
    median = np.stack([ndimage.median_filter(field[..., c], 9, mode="reflect")
                       for c in range(4)], -1)
    got = sess.run(smooth_field(tf.constant(field[None]), tf.constant(conf[None]), 9, 0))[0]
    np.testing.assert_allclose(got, median, atol=1e-6)
    assert abs(got[10, 10, 0]) < 5
    weight = conf.astype(np.float64)[..., None] + 1e-3
    blur = lambda x: np.stack([ndimage.gaussian_filter(x[..., c], 3.0, mode="reflect",  # noqa
                                                       truncate=4.0) for c in range(x.shape[2])], -1)
    expected = blur(weight * median) / blur(weight)
    got = sess.run(smooth_field(tf.constant(field[None]), tf.constant(conf[None]), 9, 3.0))[0]
    np.testing.assert_allclose(got, expected, atol=1e-4)


def test_auto_readout_follows_the_network(random_kernel_checkpoint, random_checkpoint):
    with_head = Matcher(random_kernel_checkpoint)
    without = Matcher(random_checkpoint)
    assert (with_head.options.readout, without.options.readout) == ("kernel", "sensitivity")
    with_head.close()
    without.close()


def test_smoothing_takes_fields_smaller_than_its_reach(sess, rng):
    """A 6x9 field under a median of 9 and a Gaussian of 3 px (reach 12): the border is
    mirrored periodically (numpy's ``symmetric`` padding of any width) and the Gaussian
    keeps its 4 sigma, as a direct numpy sum over that padding computes them; sizes
    unknown until run time, two fields in a batch."""
    from vidcorr.readout.kernel.smoothing import smooth_field

    h, w = 6, 9
    field = rng.randn(2, h, w, 4).astype(np.float32)
    conf = rng.rand(2, h, w).astype(np.float32)
    f_in = tf.placeholder(tf.float32, [None, None, None, 4])
    c_in = tf.placeholder(tf.float32, [None, None, None])
    got = sess.run(smooth_field(f_in, c_in, 9, 3.0), {f_in: field, c_in: conf})

    def gauss(r):
        g = np.exp(-0.5 * (np.arange(-r, r + 1) / 3.0) ** 2)
        return g / g.sum()

    def blur(x):  # the separable Gaussian to 12 pixels, symmetric padding
        r = 12
        x = np.pad(x, [(r, r), (r, r), (0, 0)], mode="symmetric")
        g = gauss(r)
        x = np.stack([sum(g[k] * x[:, k:k + w, c] for k in range(2 * r + 1))
                      for c in range(x.shape[2])], -1)
        return np.stack([sum(g[k] * x[k:k + h, :, c] for k in range(2 * r + 1))
                         for c in range(x.shape[2])], -1)

    for i in range(2):
        padded = np.pad(field[i].astype(np.float64), [(4, 4), (4, 4), (0, 0)], mode="symmetric")
        median = np.empty((h, w, 4))
        for y in range(h):
            for x in range(w):
                median[y, x] = np.median(padded[y:y + 9, x:x + 9].reshape(-1, 4), axis=0)
        weight = conf[i].astype(np.float64)[..., None] + 1e-3
        np.testing.assert_allclose(got[i], blur(weight * median) / blur(weight), rtol=1e-4,
                                   atol=1e-5)
        assert np.ptp(got[i][..., 0]) > 1e-3  # not a constant: the test can tell filters apart


def test_reflection_at_every_border_against_numpy():
    from vidcorr.readout.kernel.blend import reflect_positions

    w, h = 10, 7  # different sizes: x reflects at 0 and 9, y at 0 and 6
    xy = np.array([[-1.5, -0.25], [10.5, 7.75], [9.0, 6.0], [3.2, 2.1], [-3.0, 8.5]],
                  np.float32)
    expected = np.array([[1.5, 0.25], [7.5, 4.25], [9.0, 6.0], [3.2, 2.1], [3.0, 3.5]])
    with tf.Session(graph=tf.Graph()) as sess:
        got = sess.run(reflect_positions(tf.constant(xy), w, h))
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


def test_correspond_script_with_the_kernel_readout_at_stride_1_is_dense(
        random_kernel_checkpoint, tmp_path):
    import subprocess
    import sys

    from vidcorr.io.flowio import read_flo
    from vidcorr.readout.matching import Matches

    rng = np.random.RandomState(2)
    paths = []
    for name in ("f0.npy", "f2.npy"):
        from PIL import Image
        path = str(tmp_path / name.replace(".npy", ".png"))
        Image.fromarray((255 * rng.rand(48, 64, 3)).astype(np.uint8)).save(path)
        paths.append(path)
    out = tmp_path / "out"
    script = os.path.join(os.path.dirname(__file__), "..", "scripts", "correspond.py")
    proc = subprocess.run([sys.executable, script] + paths + [
        "--checkpoint", random_kernel_checkpoint, "--readout", "kernel", "--stride", "1",
        "--min-confidence", "0", "--levels", "1", "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    matches = Matches.load(str(out / "f0__f2.npz"))
    assert len(matches) == 48 * 64 and matches.valid.all()
    # every pixel gets a match; the sparse flow is defined where a match lands
    flo = read_flo(str(out / "f0__f2.flo"))
    assert flo.shape == (48, 64, 2) and np.isfinite(flo[..., 0]).mean() > 0.5
    proc = subprocess.run([sys.executable, script] + paths + ["--readout", "blend"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    assert proc.returncode == 2 and "invalid choice: 'blend'" in proc.stderr


@pytest.mark.skipif(not os.path.isdir(DEFAULT_MODEL), reason="no packaged default model")
def test_the_default_match_is_precise_on_a_real_frame_with_sub_pixel_motion():
    """The packaged model's default match (kernel read-out, then the refinement) of a real
    frame moved by a sub-pixel step: the network alone reads it about half a pixel off,
    refined it is within a tenth of a pixel."""
    from scipy import ndimage

    from vidcorr.io.video import to_rgb_float
    root = os.path.join(os.path.dirname(__file__), "..", "examples")
    image = to_rgb_float(os.path.join(root, "cockatoo_262.png"))[:128, 64:320]
    step = np.array([1.3, -0.45])  # per frame step (x, y); frame t shows p at p - step
    frame_t, frame_t2 = (np.clip(ndimage.shift(image, (s * step[1], s * step[0], 0), order=3,
                                               mode="nearest"), 0, 1) for s in (1, -1))
    errors = {}
    for refine in ("none", "variational"):
        matcher = Matcher(refine=refine, min_confidence=0)
        m = matcher.match(frame_t, frame_t2, stride=8)
        matcher.close()
        inner = np.all((m.grid >= 16) & (m.grid < [256 - 16, 128 - 16]), axis=1)
        errors[refine] = np.median(np.linalg.norm((m.p3 - m.p1)[inner] + 2 * step, axis=1))
    print("median flow error (px) by refinement: %s" % errors)
    assert errors["variational"] <= 0.1 and errors["none"] >= 4 * errors["variational"], errors
