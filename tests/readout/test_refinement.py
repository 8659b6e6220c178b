"""The refinement on the frames (vidcorr.readout.refinement) against closed-form motion.

The frames are rendered from a closed-form texture (a sum of sinusoids per channel), so
frame t and frame t+2 are exact at any sub-pixel position: for a middle-frame motion field
``v``, frame t shows the texture's point ``p`` at ``p - v(p)`` and frame t+2 at
``p + v(p)``, and the refined flow ``p3 - p1`` must come back to ``2 v(p)``.
"""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.options import REFINE_SAMPLERS, MatchOptions
from vidcorr.readout.refinement import (RefineGraph, RefineSettings, refine_field,
                                        residual_confidence)

H, W = 48, 80
MARGIN = 6  # positions near the border sample clamped frames; the interior is scored
WAVES = [((0.31, 0.17), 0.0), ((-0.13, 0.29), 1.0), ((0.23, -0.27), 2.0), ((0.07, 0.11), 0.5)]
# a finer texture (periods of 8 px and more) beside a coarse one: a start more than a
# half period off is drawn to the wrong stripe at the images' own size
FINE_WAVES = ([((2.5 * fx, 2.5 * fy), phase) for (fx, fy), phase in WAVES] +
              [((0.5 * fx, 0.5 * fy), phase + 1.0) for (fx, fy), phase in WAVES])


def texture(x, y, waves=WAVES):
    """The closed-form texture ``[..., 3]`` in [0, 1] at float positions."""
    channels = []
    for c in range(3):
        value = np.zeros_like(np.asarray(x, np.float64))
        for k, ((fx, fy), phase) in enumerate(waves):
            value += np.sin(fx * (1 + 0.2 * c) * x + fy * (1 - 0.15 * c) * y + phase + c * k)
        channels.append(0.5 + value / (2.0 * len(waves)))
    return np.stack(channels, axis=-1)


def pixels(size=(H, W)):
    ys, xs = np.mgrid[0:size[0], 0:size[1]].astype(np.float64)
    return xs, ys


def affine_pair(matrix, offset, size=(H, W), waves=WAVES):
    """Frames for the middle-frame motion ``v(p) = matrix p + offset``: frame t at pixel x
    shows the texture at the ``p`` with ``p - v(p) = x``, frame t+2 the ``p`` with
    ``p + v(p) = x``. Returns ``(frame_t, frame_t2, v [H, W, 2])``."""
    xs, ys = pixels(size)
    x = np.stack([xs, ys], axis=-1)  # [H, W, 2]
    eye = np.eye(2)
    frames = []
    for sign in (-1.0, 1.0):
        inverse = np.linalg.inv(eye + sign * matrix)
        p = (x - sign * offset) @ inverse.T
        frames.append(texture(p[..., 0], p[..., 1], waves))
    v = x @ matrix.T + offset
    return frames[0], frames[1], v


def run_refine(frame_t, frame_t2, p1, p3, rounds=4, iterations=5, sweeps=5, alpha=10.0,
               delta=5.0, gamma=10.0, anchor=0.5, scales=1, sampler="bilinear"):
    graph = tf.Graph()
    with graph.as_default():
        const = lambda a: tf.constant(np.asarray(a, np.float32)[None])  # noqa: E731
        out = refine_field(const(frame_t), const(frame_t2), const(p1), const(p3),
                           RefineSettings(rounds, iterations, sweeps, alpha, delta, gamma,
                                          scales, sampler), anchor)
        with tf.Session(graph=graph) as sess:
            r1, r3, residual = sess.run(out)
    return r1[0].astype(np.float64), r3[0].astype(np.float64), residual[0]


def interior(a):
    return a[MARGIN:-MARGIN, MARGIN:-MARGIN]


def off_by(v, amplitude):
    """A smooth error field of up to ``amplitude`` px in each of the two ends (so the flow
    ``p3 - p1`` is off by up to twice that), the midpoint kept."""
    xs, ys = pixels()
    e = np.stack([amplitude * np.sin(xs / 9.0 + 0.3), amplitude * np.cos(ys / 7.0)], axis=-1)
    return e


@pytest.mark.parametrize("matrix, offset", [
    (np.zeros((2, 2)), np.array([0.37, -0.61])),              # a sub-pixel translation
    (np.array([[0.012, -0.008], [0.006, 0.010]]), np.array([0.45, 0.2])),  # a smooth affine field
])
def test_recovers_known_motion_from_a_field_off_by_two_pixels(matrix, offset):
    frame_t, frame_t2, v = affine_pair(matrix, offset)
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    e = off_by(v, 0.7)  # the flow is off by up to 2 x 0.7 x sqrt(2), about 2 px
    assert np.abs(2 * e).max() > 1.3 and np.linalg.norm(2 * e, axis=-1).max() > 1.9
    r1, r3, residual = run_refine(frame_t, frame_t2, p - v - e, p + v + e)
    error = np.linalg.norm(interior((r3 - r1) - 2 * v), axis=-1)
    assert error.max() < 0.05, error.max()
    # the midpoint is held: both ends moved by half of the correction
    np.testing.assert_allclose(interior(0.5 * (r1 + r3)), interior(p), atol=1e-3)
    assert interior(residual).max() < 0.01  # the frames agree at the refined positions


def test_a_coarser_scale_reaches_a_start_too_far_off_for_the_images_own_size():
    frame_t, frame_t2, v = affine_pair(np.array([[0.012, -0.008], [0.006, 0.010]]),
                                       np.array([0.45, 0.2]), waves=FINE_WAVES)
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    e = off_by(v, 2.0)  # the flow is off by up to 2 x 2 x sqrt(2), about 5.7 px
    errors = {}
    for scales in (1, 2):
        r1, r3, _ = run_refine(frame_t, frame_t2, p - v - e, p + v + e, scales=scales)
        errors[scales] = np.linalg.norm(interior((r3 - r1) - 2 * v), axis=-1)
    assert np.median(errors[1]) > 0.3  # one scale: much of the field on the wrong stripe
    assert errors[2].max() < 0.05, errors[2].max()


@pytest.mark.parametrize("scales, size", [(1, (H, W)), (2, (H, W)), (3, (45, 77))])
def test_leaves_an_exact_field_unchanged(scales, size):
    frame_t, frame_t2, v = affine_pair(np.array([[0.01, 0.0], [0.0, -0.01]]),
                                       np.array([0.8, -0.3]), size)
    xs, ys = pixels(size)
    p = np.stack([xs, ys], axis=-1)
    r1, r3, _ = run_refine(frame_t, frame_t2, p - v, p + v, scales=scales)
    assert np.abs(interior(r1 - (p - v))).max() < 0.01
    assert np.abs(interior(r3 - (p + v))).max() < 0.01


def test_the_bspline_sampler_takes_out_bilinear_samplings_shift():
    """Bilinear sampling at a fraction f of a pixel shifts a fine texture by an amount odd
    about f = 1/2; the two ends, at fractions f and 1 - f, agree best off the truth. From the
    exact field, the bilinear refinement moves away by a few hundredths of a pixel; the
    splines' stay within a few thousandths."""
    fine = [((2.5 * fx, 2.5 * fy), phase) for (fx, fy), phase in WAVES]  # periods 8-20 px
    frame_t, frame_t2, v = affine_pair(np.zeros((2, 2)), np.array([0.342, 0.171]), waves=fine)
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    median = {}
    for sampler in ("bilinear", "bspline", "spline"):
        r1, r3, _ = run_refine(frame_t, frame_t2, p - v, p + v, sampler=sampler)
        median[sampler] = np.median(np.linalg.norm(interior((r3 - r1) - 2 * v), axis=-1))
    assert median["bilinear"] > 0.015, median  # 0.025 measured
    assert median["bspline"] < 0.004, median  # 0.0013 measured
    assert median["spline"] < 0.004, median


@pytest.mark.parametrize("sampler", ["bilinear", "bspline", "spline"])
def test_recovers_a_fine_textures_motion_with_either_sampler(sampler):
    frame_t, frame_t2, v = affine_pair(np.array([[0.012, -0.008], [0.006, 0.010]]),
                                       np.array([0.45, 0.2]), waves=FINE_WAVES)
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    e = off_by(v, 0.7)
    r1, r3, _ = run_refine(frame_t, frame_t2, p - v - e, p + v + e, scales=2, sampler=sampler)
    error = np.linalg.norm(interior((r3 - r1) - 2 * v), axis=-1)
    assert error.max() < 0.1, error.max()


def test_smoothness_alone_keeps_a_constant_field_up_to_the_border():
    """Without data terms a constant flow has no energy: no pixel, the border's included,
    may be pulled (an edge past the border must weigh nothing)."""
    rng = np.random.RandomState(0)
    frame_t, frame_t2 = rng.rand(H, W, 3), rng.rand(H, W, 3)
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    r1, r3, _ = run_refine(frame_t, frame_t2, p - [1.5, -0.75], p + [1.5, -0.75], delta=0.0,
                           gamma=0.0)
    np.testing.assert_allclose(r3 - r1, np.broadcast_to([3.0, -1.5], r1.shape), atol=1e-4)


def test_matches_whose_end_leaves_the_image_are_carried_by_their_neighbours():
    """Where a match's end is past the border the clamped frame says nothing true: its data
    terms are dropped and the smoothness term brings the motion of the pixels beside it."""
    frame_t, frame_t2, v = affine_pair(np.zeros((2, 2)), np.array([2.6, -0.4]))
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    e = off_by(v, 0.7)
    r1, r3, _ = run_refine(frame_t, frame_t2, p - v - e, p + v + e)
    error = np.linalg.norm((r3 - r1) - 2 * v, axis=-1)  # [H, W], the border's included
    outside = (xs < 2.6) | (xs > W - 1 - 2.6)  # columns whose true p1 or p3 is out
    assert outside.sum() >= 5 * H
    assert error[3:-3][outside[3:-3]].max() < 0.2, error[3:-3][outside[3:-3]].max()  # 1 px without
    assert interior(error).max() < 0.05


def test_holding_frame_t_moves_only_the_second_end():
    frame_t, frame_t2, v = affine_pair(np.zeros((2, 2)), np.array([0.5, 0.25]))
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    p1 = p - v  # exact in frame t
    r1, r3, _ = run_refine(frame_t, frame_t2, p1, p + v + 0.8, anchor=0.0)
    np.testing.assert_array_equal(r1, p1.astype(np.float32))
    assert np.abs(interior(r3 - (p + v))).max() < 0.05


def test_agrees_with_opencv_variational_refinement():
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "VariationalRefinement_create"):
        pytest.skip("this OpenCV has no VariationalRefinement")
    matrix, offset = np.array([[0.01, 0.004], [-0.006, 0.008]]), np.array([0.6, -0.4])
    frame_t, frame_t2, _ = affine_pair(matrix, offset)
    gray = [np.rint(255 * f.mean(axis=2)).astype(np.uint8) for f in (frame_t, frame_t2)]
    xs, ys = pixels()
    start = np.stack([1.0 + 0.5 * np.sin(xs / 11.0), 0.5 * np.cos(ys / 8.0)], -1)  # [H, W, 2]
    rounds, iterations, sweeps = 10, 5, 5  # OpenCV's fixed point is reached by then
    vr = cv2.VariationalRefinement_create()
    for name, value in (("FixedPointIterations", iterations), ("SorIterations", sweeps),
                        ("Alpha", 10.0), ("Delta", 5.0), ("Gamma", 10.0)):
        getattr(vr, "set" + name)(value)
    flow = start.astype(np.float32).copy()
    for _ in range(rounds):
        flow = vr.calc(gray[0], gray[1], flow)
    x = np.stack([xs, ys], -1)  # frame t's pixels, held (anchor 0, OpenCV's form)
    r1, r3, _ = run_refine(gray[0][..., None] / 255.0, gray[1][..., None] / 255.0, x,
                           x + start, rounds, iterations, sweeps, anchor=0.0)
    ours = r3 - r1
    difference = np.linalg.norm(interior(ours - flow), axis=-1)
    # OpenCV's derivatives are twice the central difference ([-1, 0, 1]), so each of its
    # steps goes half the way (after 3 rounds the two still differ by 0.2 px): both
    # converge to the same field.
    assert np.median(difference) < 0.02, np.median(difference)
    assert np.percentile(difference, 95) < 0.05, np.percentile(difference, 95)
    # Both are near the truth: frame t's pixel x shows the p with p - v(p) = x, which
    # moves by 2 v(p).
    p = (x + offset) @ np.linalg.inv(np.eye(2) - matrix).T
    truth = 2 * (p @ matrix.T + offset)
    assert np.median(np.linalg.norm(interior(ours - truth), axis=-1)) < 0.05
    assert np.median(np.linalg.norm(interior(flow - truth), axis=-1)) < 0.05


def test_graph_size_does_not_grow_with_the_iterations():
    sizes = []
    for counts in ((1, 1, 1), (1, 7, 9)):
        graph = tf.Graph()
        with graph.as_default():
            z = tf.zeros([1, 32, 40, 3])
            refine_field(z, z, tf.zeros([1, 32, 40, 2]), tf.zeros([1, 32, 40, 2]),
                         RefineSettings(*counts, alpha=10.0, delta=5.0, gamma=10.0))
        sizes.append(len(graph.get_operations()))
    assert sizes[0] == sizes[1]


def test_refine_graph_runs_one_pair_like_the_function():
    frame_t, frame_t2, v = affine_pair(np.zeros((2, 2)), np.array([0.3, 0.3]))
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    options = MatchOptions(refine_rounds=2, refine_iterations=3, refine_sweeps=3)
    graph = RefineGraph(H, W, options)
    try:
        out = graph.run(frame_t, frame_t2, np.stack([p - v + 0.4, p + v - 0.4], axis=2))
    finally:
        graph.close()
    r1, r3, residual = run_refine(frame_t, frame_t2, p - v + 0.4, p + v - 0.4, 2, 3, 3,
                                  options.refine_alpha, options.refine_delta,
                                  options.refine_gamma, scales=options.refine_scales)
    np.testing.assert_allclose(out["position"][:, :, 0], r1, atol=1e-4)
    np.testing.assert_allclose(out["position"][:, :, 1], r3, atol=1e-4)
    np.testing.assert_allclose(out["residual"], residual, atol=1e-6)


def test_the_options_samplers_are_the_graphs():
    from vidcorr.model.sampling import SAMPLERS
    assert set(REFINE_SAMPLERS) == set(SAMPLERS)


def test_settings_come_from_the_options():
    options = MatchOptions(refine_rounds=3, refine_iterations=2, refine_sweeps=5,
                           refine_alpha=7.0, refine_delta=2.0, refine_gamma=4.0,
                           refine_scales=3, refine_sampler="bspline")
    assert RefineSettings.from_options(options) == (3, 2, 5, 7.0, 2.0, 4.0, 3, "bspline")


def test_residual_confidence_is_half_at_its_scale():
    np.testing.assert_allclose(residual_confidence([0.0, 0.02, 0.06], 0.02), [1.0, 0.5, 0.25])


@pytest.mark.parametrize("settings, message", [
    ({"refine": "lucas"}, "refine must be one of variational, none"),
    ({"refine_rounds": 0}, "refine_rounds must be an integer >= 1"),
    ({"refine_sweeps": 2.5}, "refine_sweeps must be an integer >= 1"),
    ({"refine_scales": 0}, "refine_scales must be an integer >= 1"),
    ({"refine_sampler": "bicubic"}, "refine_sampler must be one of bilinear, bspline, spline"),
    ({"refine_alpha": -1}, "refine_alpha must be a finite number >= 0"),
    ({"refine_gamma": float("nan")}, "refine_gamma must be a finite number >= 0"),
    ({"residual_scale": float("inf")}, "residual_scale must be a finite number >= 0"),
    ({"refine_alpha": 0, "refine_delta": 0, "refine_gamma": 0}, "cannot all be 0"),
])
def test_bad_settings_are_one_line_errors(settings, message):
    with pytest.raises(UserError, match=message) as err:
        MatchOptions(**settings)
    assert "\n" not in str(err.value)


def test_a_batch_of_pairs_is_refined_as_each_pair_alone():
    pairs = [affine_pair(np.zeros((2, 2)), np.array([0.4, -0.2])),
             affine_pair(np.array([[0.01, 0.0], [0.0, 0.01]]), np.array([-0.3, 0.5]))]
    xs, ys = pixels()
    p = np.stack([xs, ys], axis=-1)
    starts = [(p - v + 0.3, p + v - 0.3) for _, _, v in pairs]
    settings = RefineSettings(2, 3, 3, 10.0, 5.0, 10.0, scales=2)
    graph = tf.Graph()
    with graph.as_default():
        stack = lambda arrays: tf.constant(np.stack(arrays).astype(np.float32))  # noqa: E731
        out = refine_field(stack([f for f, _, _ in pairs]), stack([g for _, g, _ in pairs]),
                           stack([a for a, _ in starts]), stack([b for _, b in starts]), settings)
        with tf.Session(graph=graph) as sess:
            batched = sess.run(out)
    for k, ((frame_t, frame_t2, _), (p1, p3)) in enumerate(zip(pairs, starts)):
        alone = run_refine(frame_t, frame_t2, p1, p3, *settings[:6], scales=settings.scales)
        for got, want in zip(batched, alone):
            np.testing.assert_allclose(got[k], want, atol=1e-4)


def test_a_constancy_terms_quadratic_form_is_its_mean_squared_residual():
    """Each round folds a term's colour channels into a quadratic form in the increment;
    at any increment it must equal the channels' mean of the normalised residual
    ``(gz + gx du + gy dv)^2 / (gx^2 + gy^2 + zeta^2)``, computed directly in numpy
    (float64), from flat pixels (gradients near 0, large gz) to textured ones."""
    from vidcorr.readout.refinement import ZETA, _energy, _quadratic

    rng = np.random.RandomState(3)
    shape = (3, 2, 5, 7)  # [C, B, H, W]
    gx, gy = rng.randn(2, *shape) * np.array([0.01, 1.0, 30.0])[rng.randint(3, size=shape)]
    gz = rng.randn(*shape) * 20.0
    du = rng.randn(2, *shape[1:]) * 2.0  # [2, B, H, W]
    residual = (gz + gx * du[0] + gy * du[1]) ** 2 / (gx ** 2 + gy ** 2 + ZETA ** 2)
    want = residual.mean(axis=0)  # [B, H, W]
    with tf.Graph().as_default(), tf.Session() as sess:
        const = lambda a: tf.constant(a.astype(np.float32))  # noqa: E731
        got = sess.run(_energy(_quadratic(const(gx), const(gy), const(gz)), const(du)))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-3)


@pytest.mark.parametrize("size", [(6, 8), (5, 7)])
def test_a_packed_sweep_is_red_black_sor_on_the_pixel_grid(size):
    """The sweeps run on the field packed by colour (odd sizes padded); one sweep must be
    red-black SOR on the pixel grid, computed directly in numpy (float64): each pixel of
    one colour, then of the other, solves its 2x2 system ``(A + S)(U* - u) = b - S u +
    sum_n w_n U_n`` given its neighbours, and moves ``omega`` of the way to ``U*``."""
    from vidcorr.readout.refinement import OMEGA, _pack, _sor_sweep, _sor_system, _unpack

    rng = np.random.RandomState(5)
    b, h, w = (2,) + size
    u = rng.randn(2, b, h, w)
    field = u + 0.3 * rng.randn(2, b, h, w)
    a11, a22 = rng.rand(2, b, h, w) + 0.5
    a12, b1, b2 = 0.2 * rng.randn(b, h, w), rng.randn(b, h, w), rng.randn(b, h, w)
    right, down = rng.rand(b, h, w), rng.rand(b, h, w)
    right[:, :, -1], down[:, -1] = 0.0, 0.0  # no edge past the border
    left = np.concatenate([np.zeros((b, h, 1)), right[:, :, :-1]], axis=2)
    up = np.concatenate([np.zeros((b, 1, w)), down[:, :-1]], axis=1)
    total = right + left + down + up
    matrix = np.stack([np.stack([a11 + total, a12], -1), np.stack([a12, a22 + total], -1)], -2)
    want = field.copy()
    colour = np.add.outer(np.arange(h), np.arange(w)) % 2  # 0: red, first
    for moved in (0, 1):
        padded = np.pad(want, ((0, 0), (0, 0), (1, 1), (1, 1)))
        nb = (right * padded[:, :, 1:-1, 2:] + left * padded[:, :, 1:-1, :-2] +
              down * padded[:, :, 2:, 1:-1] + up * padded[:, :, :-2, 1:-1])
        rhs = np.stack([b1, b2]) - total * u + nb  # [2, B, H, W]
        target = u + np.moveaxis(np.linalg.solve(matrix, np.moveaxis(rhs, 0, -1)[..., None])
                                 [..., 0], -1, 0)
        want = np.where(colour == moved, want + OMEGA * (target - want), want)
    with tf.Graph().as_default(), tf.Session() as sess:
        const = lambda a: tf.constant(np.asarray(a, np.float32))  # noqa: E731
        odd = const(np.broadcast_to(np.arange(w) % 2, (b, h, w)))
        shared = _sor_system(const(u), [const(a) for a in (a11, a12, a22, b1, b2)],
                             (const(right), const(down)), odd)
        fields = _sor_sweep(_pack(const(field)), shared)
        got = sess.run(_unpack(fields[0], fields[1], tf.shape(const(field))))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
