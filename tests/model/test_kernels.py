"""The adaptive-kernel head against numpy: the blend, its logit gradient, the direct term."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.config import config_from_dict
from vidcorr.errors import UserError
from vidcorr.model.kernels import (CENTRE_LOGIT, apply_kernels, frame_blends, frame_offsets,
                                   logit_bias, logit_cotangent)
from vidcorr.model.network import forward_flops, mind
from vidcorr.model.spec import NetworkSpec


def tap_offsets(kernel_size):
    """The ``(dy, dx)`` offsets of one frame's taps, in logit order (``K^2`` pairs)."""
    r = kernel_size // 2
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)]


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _blend_numpy(frames, logits, k):
    """out(p) = sum_j sum_d w_(j,d)(p) frame_j(p + d), zeros outside, by explicit loops."""
    b, h, w, _ = frames.shape
    weights = _softmax(logits)
    out = np.zeros((b, h, w, 3))
    for n in range(b):
        for y in range(h):
            for x in range(w):
                for j in range(2):
                    for t, (dy, dx) in enumerate(tap_offsets(k)):
                        yy, xx = y + dy, x + dx
                        if 0 <= yy < h and 0 <= xx < w:
                            out[n, y, x] += weights[n, y, x, j * k * k + t] * \
                                frames[n, yy, xx, 3 * j:3 * j + 3]
    return out


def _frame_blends_numpy(frames, logits, k):
    """Each frame's own blend by explicit loops: the frame's softmax over its K^2 logits."""
    b, h, w, _ = frames.shape
    out = np.zeros((b, h, w, 2, 3))
    offsets = np.zeros((b, h, w, 2, 2))
    for j in range(2):
        weights = _softmax(logits[..., j * k * k:(j + 1) * k * k])  # [b, h, w, K^2]
        for t, (dy, dx) in enumerate(tap_offsets(k)):
            offsets[..., j, 0] += weights[..., t] * dx
            offsets[..., j, 1] += weights[..., t] * dy
            for n in range(b):
                for y in range(h):
                    for x in range(w):
                        yy, xx = y + dy, x + dx
                        if 0 <= yy < h and 0 <= xx < w:
                            out[n, y, x, j] += weights[n, y, x, t] * frames[n, yy, xx, 3 * j:3 * j + 3]
    return out, offsets


def test_frame_blends_and_offsets_equal_numpy(sess):
    rng = np.random.RandomState(3)
    frames = rng.rand(2, 6, 8, 6).astype(np.float32)
    logits = 2 * rng.randn(2, 6, 8, 50).astype(np.float32)
    blends, offsets = sess.run([frame_blends(tf.constant(frames), tf.constant(logits), 5),
                                frame_offsets(tf.constant(logits), 5)])
    want_blends, want_offsets = _frame_blends_numpy(frames, logits, 5)
    np.testing.assert_allclose(blends, want_blends, atol=1e-5)
    np.testing.assert_allclose(offsets, want_offsets, atol=1e-5)
    # A frame whose logits are all far below the other's still has its own full blend.
    logits[..., :25] -= 30.0
    blends = sess.run(frame_blends(tf.constant(frames), tf.constant(logits), 5))
    np.testing.assert_allclose(blends, _frame_blends_numpy(frames, logits, 5)[0], atol=1e-5)
    # At a temperature, each frame's softmax is of the logits divided by it.
    blends, offsets = sess.run([frame_blends(tf.constant(frames), tf.constant(logits), 5, 2.5),
                                frame_offsets(tf.constant(logits), 5, 2.5)])
    want_blends, want_offsets = _frame_blends_numpy(frames, logits / 2.5, 5)
    np.testing.assert_allclose(blends, want_blends, atol=1e-5)
    np.testing.assert_allclose(offsets, want_offsets, atol=1e-5)


def test_frame_blend_of_a_plane_is_the_plane_at_the_centroid(sess):
    """On a linear image I = a x + b y + c (away from the border) a frame's own blend is
    I(p + centroid) exactly, whatever the weights: the first-order link between the frame
    loss and the read-out's centroid."""
    rng = np.random.RandomState(4)
    h, w, k = 9, 11, 3
    yy, xx = np.mgrid[:h, :w].astype(np.float64)
    slopes = rng.rand(6, 3) * 0.05
    frames = np.stack([slopes[c, 0] * xx + slopes[c, 1] * yy + slopes[c, 2]
                       for c in range(6)], axis=-1)[None].astype(np.float32)
    logits = rng.randn(1, h, w, 2 * k * k).astype(np.float32)
    blends, offsets = sess.run([frame_blends(tf.constant(frames), tf.constant(logits), k),
                                frame_offsets(tf.constant(logits), k)])
    for j in range(2):
        cx, cy = offsets[0, ..., j, 0], offsets[0, ..., j, 1]  # [h, w]
        for c in range(3):
            s = slopes[3 * j + c]
            want = s[0] * (xx + cx) + s[1] * (yy + cy) + s[2]
            np.testing.assert_allclose(blends[0, 1:-1, 1:-1, j, c], want[1:-1, 1:-1], atol=1e-5)


def test_tap_order_and_initial_bias():
    assert tap_offsets(3) == [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 0), (0, 1),
                              (1, -1), (1, 0), (1, 1)]
    bias = logit_bias(3)
    assert bias.shape == (18,) and bias[4] == bias[13] == CENTRE_LOGIT
    assert np.count_nonzero(bias) == 2


@pytest.mark.parametrize("matmul", [False, True])
def test_blend_equals_numpy(sess, matmul):
    rng = np.random.RandomState(0)
    frames = rng.rand(2, 7, 9, 6).astype(np.float32)
    logits = 2 * rng.randn(2, 7, 9, 18).astype(np.float32)
    got = sess.run(apply_kernels(tf.constant(frames), tf.constant(logits), 3, matmul=matmul))
    np.testing.assert_allclose(got, _blend_numpy(frames, logits, 3), atol=1e-5)


@pytest.mark.parametrize("k", [3, 5])
def test_the_matmul_blend_has_the_logit_gradient_of_finite_differences(sess, k):
    """The training graphs' form (one batched matmul per pixel): its gradient w.r.t. the
    logits, of a weighted sum of the output, equals the product form's and central finite
    differences of the numpy blend at a few logits."""
    rng = np.random.RandomState(2)
    frames = rng.rand(2, 6, 7, 6)
    logits = 2 * rng.randn(2, 6, 7, 2 * k * k)
    cotangent = rng.randn(2, 6, 7, 3)
    z = tf.constant(logits, tf.float32)
    grads = [tf.gradients(tf.reduce_sum(apply_kernels(tf.constant(frames, tf.float32), z, k,
                                                      matmul=m) * cotangent), z)[0]
             for m in (True, False)]
    got, product = sess.run(grads)
    np.testing.assert_allclose(got, product, atol=1e-5)
    for index in [(0, 0, 0, 0), (1, 3, 4, k * k // 2), (0, 5, 6, 2 * k * k - 1), (1, 2, 0, 7)]:
        step = np.zeros_like(logits)
        step[index] = 1e-4
        numeric = ((_blend_numpy(frames, logits + step, k) * cotangent).sum() -
                   (_blend_numpy(frames, logits - step, k) * cotangent).sum()) / 2e-4
        assert abs(got[index] - numeric) < 1e-4, (index, got[index], numeric)


@pytest.mark.parametrize("k", [3, 5])
def test_blend_of_any_size_equals_numpy(sess, k):
    """The graph for any size (unknown height and width, the serving export's) sums the
    taps one by one; it must equal the explicit loops too, at K = 3 and 5 (taps past the
    border read zeros)."""
    rng = np.random.RandomState(1)
    frames = rng.rand(2, 6, 8, 6).astype(np.float32)
    logits = 2 * rng.randn(2, 6, 8, 2 * k * k).astype(np.float32)
    frames_in = tf.placeholder(tf.float32, [None, None, None, 6])
    logits_in = tf.placeholder(tf.float32, [None, None, None, 2 * k * k])
    got = sess.run(apply_kernels(frames_in, logits_in, k),
                   {frames_in: frames, logits_in: logits})
    np.testing.assert_allclose(got, _blend_numpy(frames, logits, k), atol=1e-5)


def test_logit_cotangent_is_the_gradient(sess):
    """d(sum_c out_c(p))/d logits(p) = w * (s - <w, s>), checked by finite differences."""
    rng = np.random.RandomState(1)
    frames = rng.rand(1, 5, 5, 6)
    z = rng.randn(18)

    def f(logits):
        full = np.zeros((1, 5, 5, 18))
        full[0, 2, 2] = logits
        return _blend_numpy(frames, full, 3)[0, 2, 2].sum()

    numeric = np.array([(f(z + 1e-5 * e) - f(z - 1e-5 * e)) / 2e-5 for e in np.eye(18)])
    sums = np.array([frames[0, 2 + dy, 2 + dx, 3 * j:3 * j + 3].sum()
                     for j in range(2) for dy, dx in tap_offsets(3)], np.float32)  # logit order
    got = sess.run(logit_cotangent(tf.constant(_softmax(z), tf.float32), tf.constant(sums)))
    np.testing.assert_allclose(got, numeric, atol=1e-5)


def test_direct_term_places_the_weights(sess):
    """The direct term's window, scattered into the image, against numpy (borders too)."""
    from vidcorr.readout.sensitivity.gradients import direct_window
    from vidcorr.readout.sensitivity.windows import dense

    rng = np.random.RandomState(2)
    weights = rng.rand(50).astype(np.float32)  # K = 5
    pixels = np.array([(3, 4), (0, 0), (6, 8)], np.int32)
    batch = np.stack([weights, 2 * weights, weights[::-1]])  # [3, 50], each its own weights
    win = direct_window(tf.constant(batch), tf.constant(pixels[:, 0]), tf.constant(pixels[:, 1]),
                        7, 9, 5)
    got = sess.run(dense(win))  # [3, 7, 9, 6]
    expected = np.zeros((3, 7, 9, 6), np.float32)
    for n, (y, x) in enumerate(pixels):
        for j in range(2):
            for t, (dy, dx) in enumerate(tap_offsets(5)):
                if 0 <= y + dy < 7 and 0 <= x + dx < 9:
                    expected[n, y + dy, x + dx, 3 * j:3 * j + 3] = batch[n, j * 25 + t]
    np.testing.assert_allclose(got, expected, atol=1e-7)


def test_kernel_network_blend_from_its_logits_and_copies_shifts(sess):
    """With the 1x1 output weights zeroed the logits are the biases: at initialisation
    the numpy blend of :func:`logit_bias`; with biases set by hand to the taps p - v
    (frame t) and p + v (frame t+2) the network reproduces a shifted pattern."""
    spec = NetworkSpec(width=0.125, output_kernel=1, kernel_size=5)
    rng = np.random.RandomState(3)
    texture = rng.rand(48, 80, 3).astype(np.float32)
    vy, vx = 1, -2
    frame_t = texture[8 + vy:40 + vy, 8 + vx:72 + vx]  # frame_t(p - v) = middle(p)
    frame_t2 = texture[8 - vy:40 - vy, 8 - vx:72 - vx]  # frame_t2(p + v) = middle(p)
    middle = texture[8:40, 8:72]
    pair = np.concatenate([frame_t, frame_t2], -1)[None]
    out = mind(tf.constant(pair), False, spec=spec)
    sess.run(tf.global_variables_initializer())
    [w] = [v for v in tf.global_variables() if v.op.name == "mind/output/weights"]
    [b] = [v for v in tf.global_variables() if v.op.name == "mind/output/biases"]
    np.testing.assert_array_equal(sess.run(b), logit_bias(5))
    w.load(np.zeros(w.shape.as_list(), np.float32), sess)
    expected = _blend_numpy(pair, np.broadcast_to(logit_bias(5), (1, 32, 64, 50)), 5)
    np.testing.assert_allclose(sess.run(out), expected, atol=1e-5)
    bias = np.full(50, -30.0, np.float32)
    bias[tap_offsets(5).index((-vy, -vx))] = 0.0
    bias[25 + tap_offsets(5).index((vy, vx))] = 0.0
    b.load(bias, sess)
    np.testing.assert_allclose(sess.run(out)[0][3:-3, 3:-3], middle[3:-3, 3:-3], atol=1e-5)
    assert forward_flops(128, 384, spec) > forward_flops(128, 384, NetworkSpec(width=0.125))


@pytest.mark.parametrize("model, match", [
    ({"kernel_size": 4}, "odd number from 3 to 15"),
    ({"kernel_size": 17}, "odd number from 3 to 15"),
    ({"kernel_size": 5}, "needs output_kernel 1"),
    ({"kernel_size": 5, "output_kernel": 1, "residual": "average"}, "needs residual 'none'"),
])
def test_kernel_config_errors(model, match):
    with pytest.raises(UserError, match="model.kernel_size: .*" + match):
        config_from_dict({"model": model, "data": {"synthetic": True}})
    with pytest.raises(ValueError, match=match):
        spec = NetworkSpec(kernel_size=model["kernel_size"],
                           output_kernel=model.get("output_kernel", 3),
                           residual=model.get("residual", "none"))
        mind(tf.zeros([1, 32, 32, 6]), False, spec=spec)
