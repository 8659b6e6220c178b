"""Tests of the losses and PSNR against closed forms."""

import numpy as np
import pytest

from vidcorr.compat import tf
from tests import reference_losses as ref
from vidcorr.model.losses import (census_loss, frame_loss, gradient_loss, psnr, psnr_numpy,
                                  reconstruction_loss, reconstruction_loss_numpy,
                                  smoothness_loss, symmetry_loss, training_loss)


@pytest.mark.parametrize("kind", ["l1", "l2", "charbonnier"])
def test_graph_and_numpy_losses_agree(sess, rng, kind):
    a = rng.rand(2, 4, 5, 3).astype(np.float32)
    b = rng.rand(2, 4, 5, 3).astype(np.float32)
    expected = {"l1": np.mean(np.abs(a - b)), "l2": np.mean((a - b) ** 2),
                "charbonnier": np.mean(np.sqrt((a - b) ** 2 + 1e-6))}[kind]
    got = sess.run(reconstruction_loss(tf.constant(a), tf.constant(b), kind))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(reconstruction_loss_numpy(a, b, kind), expected, rtol=1e-6)


def test_psnr_closed_form(sess):
    target = np.zeros((1, 4, 4, 3), np.float32)
    pred = np.full((1, 4, 4, 3), 0.1, np.float32)  # MSE 0.01 -> 20 dB
    np.testing.assert_allclose(psnr_numpy(pred, target), [20.0], rtol=1e-6)
    np.testing.assert_allclose(sess.run(psnr(tf.constant(pred), tf.constant(target))), 20.0,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="loss"):
        reconstruction_loss_numpy(pred, target, "l3")


def test_gradient_loss_closed_form(sess):
    # A horizontal ramp of slope 0.1 against a constant image: every horizontal difference
    # is 0.1 off and every vertical one agrees, so the loss is 0.1 exactly.
    ramp = np.tile(0.1 * np.arange(6, dtype=np.float32)[None, None, :, None], (2, 5, 1, 3))
    flat = np.full_like(ramp, 0.3)
    got = sess.run(gradient_loss(tf.constant(ramp), tf.constant(flat)))
    np.testing.assert_allclose(got, 0.1, rtol=1e-5)
    np.testing.assert_allclose(ref.gradient_loss(ramp, flat), 0.1, rtol=1e-9)
    # A brightness offset changes no difference: no loss, where L1 sees one.
    np.testing.assert_allclose(sess.run(gradient_loss(tf.constant(ramp), tf.constant(ramp + 0.2))),
                               0.0, atol=1e-6)


def test_census_loss_against_an_explicit_loop(sess, rng):
    a = rng.rand(2, 9, 10, 3).astype(np.float32)
    b = rng.rand(2, 9, 10, 3).astype(np.float32)

    def signature(img, y, x):  # one pixel's 48 soft signs, written out from the definition
        grey = img.mean(axis=2) * 255.0
        out = []
        for dy in range(-3, 4):
            for dx in range(-3, 4):
                if dy or dx:
                    d = grey[y + dy, x + dx] - grey[y, x]
                    out.append(d / np.sqrt(0.81 + d * d))
        return np.array(out)

    weight = rng.rand(2, 9, 10).astype(np.float32)
    total, weighted = [], []
    for i in range(2):
        for y in range(3, 6):
            for x in range(3, 7):
                e = signature(a[i].astype(np.float64), y, x) - signature(b[i].astype(np.float64), y, x)
                total.append(e ** 2 / (0.1 + e ** 2))
                weighted.append(weight[i, y, x] * total[-1])
    expected = np.mean(total)
    np.testing.assert_allclose(ref.census_loss(a, b), expected, rtol=1e-9)
    np.testing.assert_allclose(sess.run(census_loss(tf.constant(a), tf.constant(b))), expected,
                               rtol=1e-4)
    # a per-pixel weight multiplies each pixel's loss before the mean
    np.testing.assert_allclose(ref.census_loss(a, b, weight), np.mean(weighted), rtol=1e-6)
    np.testing.assert_allclose(sess.run(census_loss(tf.constant(a), tf.constant(b),
                                                    tf.constant(weight))),
                               np.mean(weighted), rtol=1e-4)
    # Invariant to a brightness offset, not to a change of texture.
    assert sess.run(census_loss(tf.constant(a), tf.constant(a + 0.1))) < 1e-6
    assert expected > 0.1


def test_training_loss_adds_the_weighted_terms(sess, rng):
    from vidcorr.model.config import TrainConfig

    a = rng.rand(1, 12, 12, 3).astype(np.float32)
    b = rng.rand(1, 12, 12, 3).astype(np.float32)
    config = TrainConfig(loss="l2", gradient_weight=0.5, census_weight=2.0)
    expected = (reconstruction_loss_numpy(a, b, "l2") + 0.5 * ref.gradient_loss(a, b)
                + 2.0 * ref.census_loss(a, b))
    got = sess.run(training_loss(tf.constant(a), tf.constant(b), config))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    plain = sess.run(training_loss(tf.constant(a), tf.constant(b), TrainConfig()))
    np.testing.assert_allclose(plain, reconstruction_loss_numpy(a, b, "l1"), rtol=1e-5)


def test_symmetry_loss_closed_form(sess):
    offsets = np.zeros((1, 1, 2, 2, 2), np.float32)  # [B, H, W, frame, (dx, dy)]
    offsets[0, 0, 0] = [[1.0, -0.5], [-1.0, 0.5]]  # opposite: steady motion, no loss
    offsets[0, 0, 1] = [[0.5, 0.25], [0.0, 0.0]]  # frame t moved, frame t+2 not: 0.75
    np.testing.assert_allclose(ref.symmetry_loss(offsets), 0.375, rtol=1e-12)
    np.testing.assert_allclose(sess.run(symmetry_loss(tf.constant(offsets))), 0.375, rtol=1e-6)


def _smoothness_by_loops(offsets, image, edge):
    b, h, w = offsets.shape[:3]
    sums = {}
    for name, (dy, dx) in (("x", (0, 1)), ("y", (1, 0))):
        total, count = 0.0, 0
        for n in range(b):
            for y in range(h - dy):
                for x in range(w - dx):
                    step = np.mean([abs(float(image[n, y + dy, x + dx, c]) - float(image[n, y, x, c]))
                                    for c in range(3)])
                    gap = sum(abs(float(offsets[n, y + dy, x + dx, j, k]) - float(offsets[n, y, x, j, k]))
                              for j in range(2) for k in range(2)) / 2.0
                    total += np.exp(-edge * step) * gap
                    count += 1
        sums[name] = total / count
    return 0.5 * (sums["x"] + sums["y"])


def test_smoothness_loss_closed_form(sess):
    offsets = np.zeros((1, 4, 5, 2, 2), np.float32)  # [B, H, W, frame, (dx, dy)]
    offsets[..., 0, 0] = 0.5 * np.arange(5)  # frame t's dx grows 0.5 px a column
    image = np.full((1, 4, 5, 3), 0.3, np.float32)  # no edges: every weight is 1
    # horizontal: half of 0.5 at every pair; vertical: 0; the mean of the two: 0.125
    np.testing.assert_allclose(ref.smoothness_loss(offsets, image, 10.0), 0.125, rtol=1e-12)
    np.testing.assert_allclose(sess.run(smoothness_loss(tf.constant(offsets), tf.constant(image),
                                                        10.0)), 0.125, rtol=1e-6)
    # A motion boundary on an image edge costs exp(-edge * step); off the edge, all of it.
    offsets = np.zeros((1, 3, 4, 2, 2), np.float32)
    offsets[:, :, 2:, 1, 1] = 2.0  # frame t+2's dy jumps by 2 px between columns 1 and 2
    image = np.zeros((1, 3, 4, 3), np.float32)
    image[:, :, 2:] = 0.5  # an edge of 0.5 in every channel at the same place
    # 3 of the 9 horizontal pairs cross it, each with gap 1 and weight exp(-10 * 0.5)
    want = 0.5 * (3 * np.exp(-5.0) / 9)
    np.testing.assert_allclose(ref.smoothness_loss(offsets, image, 10.0), want, rtol=1e-12)
    np.testing.assert_allclose(ref.smoothness_loss(offsets, image, 0.0), 0.5 * 3 / 9, rtol=1e-12)
    np.testing.assert_allclose(sess.run(smoothness_loss(tf.constant(offsets), tf.constant(image),
                                                        10.0)), want, rtol=1e-5)


def test_smoothness_loss_by_loops(sess, rng):
    offsets = rng.randn(2, 5, 7, 2, 2).astype(np.float32)
    image = rng.rand(2, 5, 7, 3).astype(np.float32)
    want = _smoothness_by_loops(offsets, image, 4.0)
    np.testing.assert_allclose(ref.smoothness_loss(offsets, image, 4.0), want, rtol=1e-9)
    np.testing.assert_allclose(sess.run(smoothness_loss(tf.constant(offsets), tf.constant(image),
                                                        4.0)), want, rtol=1e-5)


def test_frame_loss_is_the_mean_of_the_two_frames_losses(sess, rng):
    from vidcorr.model.config import TrainConfig

    blends = rng.rand(2, 10, 12, 2, 3).astype(np.float32)
    target = rng.rand(2, 10, 12, 3).astype(np.float32)
    config = TrainConfig(census_weight=0.5)
    expected = 0.5 * sum(np.mean(np.abs(blends[..., j, :].astype(np.float64) - target))
                         + 0.5 * ref.census_loss(blends[..., j, :], target) for j in range(2))
    np.testing.assert_allclose(ref.frame_loss(blends, target, config), expected, rtol=1e-9)
    np.testing.assert_allclose(sess.run(frame_loss(tf.constant(blends), tf.constant(target),
                                                   config)), expected, rtol=1e-4)
    # One frame exactly right: only the other frame's half remains.
    blends[..., 0, :] = target
    np.testing.assert_allclose(
        ref.frame_loss(blends, target, TrainConfig()),
        0.5 * np.mean(np.abs(blends[..., 1, :].astype(np.float64) - target)), rtol=1e-9)


def test_training_loss_with_the_kernel_terms(sess, rng):
    from vidcorr.model.config import TrainConfig

    pred = rng.rand(1, 9, 9, 3).astype(np.float32)
    target = rng.rand(1, 9, 9, 3).astype(np.float32)
    blends = rng.rand(1, 9, 9, 2, 3).astype(np.float32)
    offsets = rng.randn(1, 9, 9, 2, 2).astype(np.float32)
    config = TrainConfig(census_weight=0.2, frame_weight=0.5, symmetry_weight=0.1,
                         smooth_weight=0.3, smooth_edge=5.0)
    expected = (np.mean(np.abs(pred.astype(np.float64) - target)) + 0.2 * ref.census_loss(pred, target)
                + 0.5 * ref.frame_loss(blends, target, config)
                + 0.1 * np.mean(np.abs(offsets[..., 0, :].astype(np.float64)
                                       + offsets[..., 1, :]).sum(-1))
                + 0.3 * _smoothness_by_loops(offsets, target, 5.0))
    np.testing.assert_allclose(ref.training_loss(pred, target, config, blends, offsets),
                               expected, rtol=1e-9)
    got = sess.run(training_loss(tf.constant(pred), tf.constant(target), config,
                                 tf.constant(blends), tf.constant(offsets)))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    with pytest.raises(ValueError, match="frame_weight"):
        training_loss(tf.constant(pred), tf.constant(target), config)


def test_training_loss_warp_term_is_the_frame_loss_of_the_warps(sess, rng):
    """The warp term: each frame's warp against the middle frame, L1 plus census, each
    pixel of a frame weighted by twice the frame's share there."""
    from vidcorr.model.config import TrainConfig

    pred = rng.rand(1, 9, 10, 3).astype(np.float32)
    target = rng.rand(1, 9, 10, 3).astype(np.float32)
    warps = rng.rand(1, 9, 10, 2, 3).astype(np.float32)
    masses = rng.dirichlet([1, 1], (1, 9, 10)).astype(np.float32)  # [1, 9, 10, 2]
    config = TrainConfig(census_weight=0.2, warp_weight=0.6, frame_mass=True)
    w64, t64, m64 = warps.astype(np.float64), target.astype(np.float64), masses.astype(np.float64)
    warp_term = 0.0
    for j in range(2):
        weight = 2 * m64[..., j]
        l1 = (np.abs(w64[..., j, :] - t64).mean(-1) * weight).mean()
        warp_term += 0.5 * (l1 + 0.2 * ref.census_loss(warps[..., j, :], target, weight))
    expected = (np.mean(np.abs(pred.astype(np.float64) - t64))
                + 0.2 * ref.census_loss(pred, target) + 0.6 * warp_term)
    np.testing.assert_allclose(ref.training_loss(pred, target, config, masses=masses,
                                                   warps=warps), expected, rtol=1e-9)
    got = sess.run(training_loss(tf.constant(pred), tf.constant(target), config,
                                 masses=tf.constant(masses), warps=tf.constant(warps)))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    with pytest.raises(ValueError, match="warp_weight"):
        training_loss(tf.constant(pred), tf.constant(target), config, masses=tf.constant(masses))


def test_weighted_reconstruction_and_gradient_losses_by_loops(sess, rng):
    a = rng.rand(2, 5, 6, 3)
    b = rng.rand(2, 5, 6, 3)
    weight = rng.rand(2, 5, 6)
    l1 = np.mean([weight[n, y, x] * np.abs(a[n, y, x, c] - b[n, y, x, c])
                  for n in range(2) for y in range(5) for x in range(6) for c in range(3)])
    dx = [weight[n, y, x] * abs((a[n, y, x + 1, c] - a[n, y, x, c]) - (b[n, y, x + 1, c] - b[n, y, x, c]))
          for n in range(2) for y in range(5) for x in range(5) for c in range(3)]
    dy = [weight[n, y, x] * abs((a[n, y + 1, x, c] - a[n, y, x, c]) - (b[n, y + 1, x, c] - b[n, y, x, c]))
          for n in range(2) for y in range(4) for x in range(6) for c in range(3)]
    np.testing.assert_allclose(reconstruction_loss_numpy(a, b, "l1", weight), l1, rtol=1e-9)
    np.testing.assert_allclose(ref.gradient_loss(a, b, weight), np.mean(dx) + np.mean(dy),
                               rtol=1e-9)
    ta, tb, tw = (tf.constant(v.astype(np.float32)) for v in (a, b, weight))
    np.testing.assert_allclose(sess.run(reconstruction_loss(ta, tb, "l1", tw)), l1, rtol=1e-5)
    np.testing.assert_allclose(sess.run(gradient_loss(ta, tb, tw)), np.mean(dx) + np.mean(dy),
                               rtol=1e-5)


def test_mass_weighted_frame_loss_ignores_the_frame_the_blend_does_not_use(sess, rng):
    from vidcorr.model.config import TrainConfig

    target = rng.rand(1, 8, 8, 3)
    blends = rng.rand(1, 8, 8, 2, 3)
    masses = rng.rand(1, 8, 8, 1)
    masses = np.concatenate([masses, 1 - masses], axis=-1)  # [1, 8, 8, 2]
    # closed form for L1: the mean over pixels of m_t |b_t - y| + m_t2 |b_t2 - y| (RGB mean)
    per_frame = np.abs(blends - target[..., None, :]).mean(axis=-1)  # [1, 8, 8, 2]
    expected = np.mean(np.sum(masses * per_frame, axis=-1))
    config = TrainConfig(frame_weight=1.0, frame_mass=True)
    np.testing.assert_allclose(ref.frame_loss(blends, target, config, masses), expected,
                               rtol=1e-9)
    got = sess.run(frame_loss(tf.constant(blends.astype(np.float32)),
                              tf.constant(target.astype(np.float32)), config,
                              tf.constant(masses.astype(np.float32))))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # all the weight on frame t: frame t+2's blend, however wrong, costs nothing
    only_t = np.concatenate([np.ones_like(masses[..., :1]), np.zeros_like(masses[..., :1])], -1)
    wrong = blends.copy()
    wrong[..., 1, :] += 5.0
    np.testing.assert_allclose(ref.frame_loss(wrong, target, config, only_t),
                               np.mean(per_frame[..., 0]), rtol=1e-9)
    # equal shares: the unweighted frame loss
    np.testing.assert_allclose(ref.frame_loss(blends, target, config, np.full_like(masses, 0.5)),
                               ref.frame_loss(blends, target, config), rtol=1e-9)


@pytest.mark.parametrize("real_weight", [0.0, 0.25])
def test_frame_real_weight_weighs_the_real_triplets_frame_and_warp_terms(sess, rng, real_weight):
    """With ``frame_real_weight`` r the frame and warp terms are the batch mean of each
    triplet's own term, a real triplet's times r: for two triplets, one layered and one
    real, ``(F_0 + r F_1) / 2`` with ``F_b`` the term of triplet b alone."""
    from vidcorr.model.config import TrainConfig

    pred = rng.rand(2, 9, 10, 3)
    target = rng.rand(2, 9, 10, 3)
    blends = rng.rand(2, 9, 10, 2, 3)
    warps = rng.rand(2, 9, 10, 2, 3)
    masses = rng.dirichlet([1, 1], (2, 9, 10))  # [2, 9, 10, 2]
    layered = np.array([1.0, 0.0])
    config = TrainConfig(census_weight=0.2, frame_weight=0.7, warp_weight=0.4, frame_mass=True,
                         frame_real_weight=real_weight)

    def own(images, b):  # triplet b's frame (or warp) term alone, by the formula
        return 0.5 * sum(
            np.mean(2 * masses[b, ..., j] * np.abs(images[b, ..., j, :] - target[b]).mean(-1))
            + 0.2 * ref.census_loss(images[b:b + 1, ..., j, :], target[b:b + 1],
                                      2 * masses[b:b + 1, ..., j]) for j in range(2))

    expected = (np.mean(np.abs(pred - target)) + 0.2 * ref.census_loss(pred, target)
                + 0.7 * 0.5 * (own(blends, 0) + real_weight * own(blends, 1))
                + 0.4 * 0.5 * (own(warps, 0) + real_weight * own(warps, 1)))
    np.testing.assert_allclose(
        ref.training_loss(pred, target, config, blends, masses=masses, warps=warps,
                            layered=layered), expected, rtol=1e-9)
    f32 = lambda v: tf.constant(v.astype(np.float32))  # noqa: E731
    got = sess.run(training_loss(f32(pred), f32(target), config, f32(blends), masses=f32(masses),
                                 warps=f32(warps), layered=f32(layered)))
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    # without the shares, a plain mean per triplet
    plain = TrainConfig(frame_weight=1.0, frame_real_weight=real_weight)
    by_triplet = [np.mean(np.abs(blends[b] - target[b, ..., None, :])) for b in range(2)]
    np.testing.assert_allclose(
        ref.training_loss(pred, target, plain, blends, layered=layered),
        np.mean(np.abs(pred - target)) + 0.5 * (by_triplet[0] + real_weight * by_triplet[1]),
        rtol=1e-9)
    got = sess.run(training_loss(f32(pred), f32(target), plain, f32(blends),
                                 layered=f32(layered)))
    np.testing.assert_allclose(got, np.mean(np.abs(pred - target))
                               + 0.5 * (by_triplet[0] + real_weight * by_triplet[1]), rtol=1e-4)
    with pytest.raises(ValueError, match="frame_real_weight"):
        training_loss(f32(pred), f32(target), plain, f32(blends))
