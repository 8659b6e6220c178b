"""The whole match in one graph (vidcorr.readout.kernel.graph): its warps against the numpy pyramid, known motions recovered."""

import os
import numpy as np
import pytest
from vidcorr.compat import gpu_available, tf
from vidcorr.errors import UserError
from vidcorr.readout.inference import find_model, fold_batch_norm
from vidcorr.readout.kernel.graph import LevelGraph as _Level
from vidcorr.readout.matching import DEFAULT_MODEL, Matcher
K = 5  # the random kernel checkpoint's kernel size (tests/conftest.py)
from tests.readout.kernel.test_blend import _example_crop


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
            rewrites = matcher.readout.graph_for(128, 256).config.graph_options.rewrite_options
            assert rewrites.disable_meta_optimizer == (not gpu_available())  # refining on a CPU
            unrefined = Matcher(readout="kernel", refine="none")
            unrefined.match(frame_t, frame_t2, stride=16)
            assert not unrefined.readout.graph_for(128, 256).config.graph_options \
                .rewrite_options.disable_meta_optimizer
            unrefined.close()
        matcher.close()
        g = matches.grid
        inner = (g[:, 0] >= 16) & (g[:, 0] < 240) & (g[:, 1] >= 8) & (g[:, 1] < 120)
        errors[levels] = (np.hypot(*(matches.p1 - (g - [12, 0])).T)[inner],
                          np.hypot(*(matches.p3 - (g + [12, 0])).T)[inner])
    # Coarse to fine, each frame's position is within a pixel (median), where one level,
    # whose kernel reaches 4 px per frame step, cannot find the motion.
    assert max(np.median(e) for e in errors[3]) < 1.0, [np.median(e) for e in errors[3]]
    assert min(np.median(e) for e in errors[1]) > 4.0, [np.median(e) for e in errors[1]]


def test_graph_warp_equals_the_pyramid_warp(sess, rng):
    from vidcorr.model.sampling import sample_at
    from vidcorr.readout.pyramid import sample_field, warp

    image = rng.rand(9, 13, 3).astype(np.float32)
    field = (4 * rng.randn(9, 13, 2)).astype(np.float32)  # reaching past the border too
    ys, xs = np.mgrid[0:9, 0:13]
    xy = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32) + field.reshape(-1, 2)
    got = sess.run(sample_at(tf.constant(image[None]), tf.constant(xy[None, :, None])))[0, :, 0]
    np.testing.assert_allclose(got.reshape(9, 13, 3), warp(image, field), atol=1e-5)
    np.testing.assert_allclose(got, sample_field(image, xy), atol=1e-5)


@pytest.mark.skipif(not os.path.isdir(DEFAULT_MODEL), reason="no packaged default model")
def test_the_default_match_is_precise_on_a_real_frame_with_sub_pixel_motion():
    """The packaged model's default match (kernel read-out, then the refinement) of a real
    frame moved by a sub-pixel step: the network alone reads it about half a pixel off,
    refined it is within a tenth of a pixel."""
    from scipy import ndimage

    from vidcorr.io.video import to_rgb_float
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
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


def test_blend_weights_give_the_level_read_out_centroid():
    """Matcher.blend_weights (softmax of the head's logits at chosen pixels) against the
    level read-out's moments: each frame's mass, and its centroid offset, in numpy."""
    a, b = _example_crop(0, 48, 64), _example_crop(2, 48, 64)  # 2 px apart
    matcher = Matcher()
    points = np.array([[20, 20], [31, 17], [40, 30]])
    weights = matcher.blend_weights(a, b, points)  # [N, 2, K, K]
    k = weights.shape[-1]
    assert weights.shape == (3, 2, k, k) and k == matcher.spec.kernel_size
    np.testing.assert_allclose(weights.sum(axis=(1, 2, 3)), 1.0, atol=1e-5)
    level = _Level(matcher.spec, 48, 64, matcher.weights, temperature=matcher.options.temperature)
    try:
        out = level.run(a, b)
    finally:
        level.close()
    dy, dx = np.mgrid[-(k // 2):k // 2 + 1, -(k // 2):k // 2 + 1]
    mass = weights.sum(axis=(2, 3))  # [N, 2]
    centroid = np.stack([(weights * dx).sum(axis=(2, 3)), (weights * dy).sum(axis=(2, 3))],
                        axis=-1) / mass[..., None]  # [N, 2, (dx, dy)]
    gx, gy = points[:, 0], points[:, 1]
    np.testing.assert_allclose(mass, out["mass"][gy, gx], atol=1e-4)
    np.testing.assert_allclose(points[:, None, :] + centroid, out["position"][gy, gx], atol=1e-3)
    with pytest.raises(UserError, match="points must be"):
        matcher.blend_weights(a, b, np.array([[64, 0]]))
    matcher.close()


@pytest.mark.skipif(not os.path.isdir(DEFAULT_MODEL), reason="no packaged default model")
def test_the_finer_read_out_follows_a_zoom_past_the_kernels_reach():
    """``upsample=2``: the pyramid's fields (handed on at every other pixel) densified, then
    a read-out of the pair resampled twice, back at the pair's pixels. A zoom with a
    translation (up to 13 px per frame step, past the 9-tap kernel's reach; a field that
    varies, so a misplaced densifying would show) is followed more closely than without."""
    from scipy import ndimage

    from vidcorr.io.video import to_rgb_float
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
    image = to_rgb_float(os.path.join(root, "cockatoo_262.png"))  # 128 x 384
    h, w, x0 = 64, 128, 128  # the middle frame: image[32:96, 128:256]
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])  # the zoom's centre (x, y)
    motion = {1: (0.9, np.array([-6.0, 1.0])), 3: (1.1, np.array([6.0, -1.0]))}

    def frame(f):  # middle pixel p is at c + (p - c) a + t in frame f
        a, t = motion[f]
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
        px, py = c[0] + (xs - c[0] - t[0]) / a, c[1] + (ys - c[1] - t[1]) / a
        return np.stack([ndimage.map_coordinates(image[..., k], [py + 32, px + x0], order=3)
                         for k in range(3)], -1).clip(0, 1).astype(np.float32)

    medians = {}
    for upsample in (1, 2):
        matcher = Matcher(readout="kernel", upsample=upsample, refine="none", min_confidence=0)
        m = matcher.match(frame(1), frame(3), stride=4)
        matcher.close()
        g = m.grid
        inner = np.all((g >= 12) & (g < [w - 12, h - 12]), axis=1)
        medians[upsample] = max(
            np.median(np.linalg.norm(p - (c + (g - c) * motion[f][0] + motion[f][1]),
                                     axis=1)[inner]) for f, p in ((1, m.p1), (3, m.p3)))
    print("median error (px) by upsample: %s" % medians)
    # 0.45 and 0.31 px measured; with the hand-on fields densified as if read at every
    # pixel, the finer read-out's median was 0.72 px
    assert medians[1] < 1.0 and medians[2] < 0.5, medians


def test_smoothing_stops_at_motion_boundaries_on_the_two_coarsest_levels_only(
        random_kernel_checkpoint, rng, monkeypatch):
    """Two passes per level: every hand-on but the finest level's calls the smoothing with
    the options' range width on the two coarsest levels, an infinite one (the Gaussian at
    the bilateral's taps) on the others, and the plain Gaussian (0) on the finest; with
    ``sigma_range`` 0, the plain Gaussian everywhere. Three levels of a 128x192 pair, four
    of a 256x384 one."""
    from vidcorr.readout.kernel import graph, smoothing

    calls = []

    def recording(field, confidence, size, sigma, sigma_range=0.0, floor=0.0):
        calls.append((sigma_range, floor))
        return smoothing.smooth_field(field, confidence, size, sigma, sigma_range, floor)

    monkeypatch.setattr(graph, "smooth_field", recording)
    inf = float("inf")
    for (h, w), levels, options, expected in (
            ((128, 192), 3, {"sigma_range": 0.7, "range_floor": 0.1},
             [(0.7, 0.1)] * 4 + [(0.0, 0.1)]),
            ((128, 192), 3, {"sigma_range": 0}, [(0.0, 0.03)] * 5),
            ((256, 384), 4, {"sigma_range": 0.7, "range_floor": 0.1},
             [(0.7, 0.1)] * 4 + [(inf, 0.1)] * 2 + [(0.0, 0.1)])):
        del calls[:]
        frames = rng.rand(2, h, w, 3).astype(np.float32)
        matcher = Matcher(random_kernel_checkpoint, max_seconds=0, levels=levels, **options)
        matcher.match(frames[0], frames[1], stride=8)
        matcher.close()
        # coarsest first, two hand-ons per level; the finest's second pass is the final
        # read-out, which hands nothing on
        assert calls == expected
