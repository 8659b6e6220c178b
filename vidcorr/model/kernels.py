"""The adaptive-kernel output head: each output pixel is a softmax blend of input pixels.

With ``model.kernel_size`` K > 0 the network's last convolution predicts, per
pixel p, ``2 K^2`` logits, one per tap: frame t or t+2 and an offset
``(dy, dx)`` in ``[-r, r]^2`` (``r = K // 2``). A softmax over all ``2 K^2``
taps gives non-negative weights summing to 1, and

    out(p) = sum_j sum_(dy, dx) w_(j, dy, dx)(p) * frame_j(p + (dy, dx)),

with zeros outside the image. Why: a direct-synthesis network can lower its
loss by *sharpening* the frame average instead of moving content, so its
sensitivity peaks stay at the pixel itself and its matches are zero flow. A
softmax blend cannot sharpen; to lower the loss where things
move it must put its weight on the displaced pixels, which is exactly what the
gradient read-out looks for. The sensitivity of out(p) is then the weights
themselves (the *direct* term) plus the gradient through the logits (the
*indirect* term); :mod:`vidcorr.readout.sensitivity.gradients` computes both without building
``2 K^2`` dense per-pixel maps (:func:`logit_cotangent`;
:func:`vidcorr.readout.sensitivity.gradients.direct_window`).

Channel order of the logits: frame (t, then t+2), then dy, then dx.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.model.spec import MAX_KERNEL_SIZE

__all__ = ["CENTRE_LOGIT", "MAX_KERNEL_SIZE", "tap_grid", "logit_bias", "apply_kernels",
           "frame_weights", "frame_masses", "frame_blends", "frame_offsets", "logit_cotangent"]

CENTRE_LOGIT = 1.0  # initial logit of the two centre taps: a mild prior towards no motion


def tap_grid(kernel_size):
    """Offsets ``(dx, dy)`` of one frame's taps in logit order: ``[K^2, 2]`` float32."""
    r = kernel_size // 2
    dy, dx = np.mgrid[-r:r + 1, -r:r + 1]
    return np.stack([dx.ravel(), dy.ravel()], axis=1).astype(np.float32)


def logit_bias(kernel_size):
    """Initial biases ``[2 K^2]``: ``CENTRE_LOGIT`` on each frame's centre tap, 0 elsewhere."""
    k2 = kernel_size * kernel_size
    bias = np.zeros(2 * k2, np.float32)
    bias[[k2 // 2, k2 + k2 // 2]] = CENTRE_LOGIT
    return bias


def _reshape_pixels(values, x, tail):
    """``values`` reshaped to ``[B, H, W] + tail`` with B, H, W those of ``x``: static
    where known; otherwise taken from ``tf.shape(x)`` in one piece, so that a graph for
    any size (``vidcorr.apps.serving``) has one shape tensor, not three unknowns."""
    height, width = x.shape.as_list()[1:3]
    if height is None or width is None:
        return tf.reshape(values, tf.concat([tf.shape(x)[:3], tail], axis=0))
    return tf.reshape(values, [tf.shape(x)[0], height, width] + list(tail))


def _patches(frames, kernel_size):
    """Each pixel's K x K neighbourhood of both frames, zero outside: ``[B, H, W, K^2, 2, 3]``.

    One ``extract_image_patches`` op rather than ``K^2`` shifted slices: one
    op and one gradient op per blend, whatever K is.
    """
    k = kernel_size
    if None in frames.shape.as_list()[1:3]:
        # A graph for any size (frame_blends; apply_kernels sums its taps instead,
        # _tap_sum): K^2 shifted slices of the zero-padded frames, ops every converter
        # knows (ONNX has no ExtractImagePatches).
        r = k // 2
        padded = tf.pad(frames, [[0, 0], [r, r], [r, r], [0, 0]])  # zeros outside
        size = tf.shape(frames)
        taps = [padded[:, dy:dy + size[1], dx:dx + size[2], :]
                for dy in range(k) for dx in range(k)]  # (dy, dx) order, [B, H, W, 6] each
        return _reshape_pixels(tf.stack(taps, axis=3), frames, [k * k, 2, 3])
    patches = tf.extract_image_patches(frames, [1, k, k, 1], [1, 1, 1, 1], [1, 1, 1, 1],
                                       "SAME")  # [B, H, W, K*K*6], ordered (dy, dx, channel)
    return _reshape_pixels(patches, frames, [k * k, 2, 3])


def _per_tap(values, kernel_size):
    """``[B, H, W, 2K^2]`` in logit order (frame, dy, dx) -> ``[B, H, W, K^2, 2]``."""
    k2 = kernel_size * kernel_size
    return tf.transpose(_reshape_pixels(values, values, [2, k2]), [0, 1, 2, 4, 3])


def apply_kernels(frames, logits, kernel_size, matmul=False):
    """Blends ``frames [B, H, W, 6]`` (in [0, 1]) with softmax ``logits [B, H, W, 2K^2]``.

    Args:
      frames: ``[B, H, W, 6]``.
      logits: ``[B, H, W, 2K^2]``.
      kernel_size: K.
      matmul: blend each pixel's patch by one batched matrix product (``[1, 2K^2]`` weights
        times ``[2K^2, 3]`` taps) instead of a broadcast product and a sum: the same
        values, and forward and back to the logits about 1.6x faster on a CPU
        (``benchmarks/bench_blend.py``), so training graphs use it. The inference graphs
        keep the product and sum, the form the sensitivity read-out's transposed pass has
        rules for (:mod:`vidcorr.readout.sensitivity.windows`).

    Returns:
      ``[B, H, W, 3]``.
    """
    if None in frames.shape.as_list()[1:3]:
        return _tap_sum(frames, logits, kernel_size)
    if matmul:
        return _matmul_blend(frames, logits, kernel_size)
    weights = _per_tap(tf.nn.softmax(logits, axis=-1), kernel_size)  # [B, H, W, K^2, 2]
    return tf.reduce_sum(_patches(frames, kernel_size) * weights[..., None], axis=[3, 4])


def _matmul_blend(frames, logits, kernel_size):
    """:func:`apply_kernels` as one batched matrix product per pixel (static sizes)."""
    k2 = kernel_size * kernel_size
    weights = _per_tap(tf.nn.softmax(logits, axis=-1), kernel_size)  # [B, H, W, K^2, 2]
    rows = tf.reshape(weights, [-1, 1, 2 * k2])  # [BHW, 1, 2K^2] in (dy, dx, frame) order
    taps = tf.reshape(_patches(frames, kernel_size), [-1, 2 * k2, 3])  # [BHW, 2K^2, 3], alike
    return _reshape_pixels(tf.matmul(rows, taps), frames, [3])  # [B, H, W, 3]


def _tap_sum(frames, logits, kernel_size):
    """:func:`apply_kernels` for a graph of any size (``vidcorr.apps.serving``): a running
    sum over the ``2 K^2`` taps of each softmax numerator times its shifted frame, divided
    by the numerators' sum at the end. The logits are laid out tap first (``[2K^2, B, H,
    W]``, one transpose), so a tap is a leading slice and the softmax's max and sum run over
    the outer axis; the patches (``[B, H, W, K^2, 2, 3]``, 486 values per pixel at K = 9)
    are never materialised, as :func:`_patches`'s stacked slices would be. Both cost
    onnxruntime most of the interpolation: its softmax over the last axis of an NHWC
    tensor that tf2onnx turned NCHW, and the stack, its product and its sum."""
    k, r = kernel_size, kernel_size // 2
    size = tf.shape(frames)
    by_tap = tf.transpose(logits, [3, 0, 1, 2])  # [2K^2, B, H, W]
    numerators = tf.exp(by_tap - tf.reduce_max(by_tap, axis=0))  # the softmax's, stable
    out = 0.0
    for j in range(2):
        padded = tf.pad(frames[..., 3 * j:3 * j + 3], [[0, 0], [r, r], [r, r], [0, 0]])
        for dy in range(k):
            for dx in range(k):
                tap = padded[:, dy:dy + size[1], dx:dx + size[2], :]  # [B, H, W, 3]
                out = out + numerators[(j * k + dy) * k + dx][..., None] * tap
    return out / tf.reduce_sum(numerators, axis=0)[..., None]  # [B, H, W, 3]


def frame_weights(logits, kernel_size, temperature=1.0):
    """Each frame's own softmax over its ``K^2`` taps: ``[B, H, W, K^2, 2]``.

    These are the blend weights of one frame divided by that frame's share of the
    weight (``w_(j, tap) / sum_tap w_(j, tap)``), computed from the frame's logits alone
    so that a frame with almost no weight still has well-defined, stable weights;
    ``temperature`` divides the logits first (the blend-weight read-out's softmax).
    """
    if temperature != 1.0:
        logits = logits / temperature
    return tf.nn.softmax(_per_tap(logits, kernel_size), axis=3)  # [B, H, W, K^2, 2]


def frame_masses(logits, kernel_size):
    """Each frame's share of the blend weight, ``[B, H, W, 2]`` (frame t, then t+2)."""
    return tf.reduce_sum(_per_tap(tf.nn.softmax(logits, axis=-1), kernel_size), axis=3)


def frame_blends(frames, logits, kernel_size, temperature=1.0):
    """Each frame's own blend: frame j's taps under :func:`frame_weights`.

    Where the blend of both frames can be right to first order with the two frames'
    offsets wrong in opposite directions (a smooth image blended half from each frame
    moves by the mean of the two offsets), each frame's own blend is right only if
    its own offset is: the loss on these is a loss on each frame's position.

    Args:
      frames: ``[B, H, W, 6]`` in [0, 1].
      logits: ``[B, H, W, 2K^2]``.
      kernel_size: K.
      temperature: of each frame's softmax (1: the network's own weights).

    Returns:
      ``[B, H, W, 2, 3]``: frame t's blend, then frame t+2's.
    """
    weights = frame_weights(logits, kernel_size, temperature)  # [B, H, W, K^2, 2]
    return tf.reduce_sum(_patches(frames, kernel_size) * weights[..., None], axis=3)


def frame_offsets(logits, kernel_size, temperature=1.0):
    """Each frame's weight centroid relative to the pixel, ``(dx, dy)``: ``[B, H, W, 2, 2]``
    (frame t, then t+2). The blend-weight read-out's ``centroid`` statistic at this
    softmax ``temperature``."""
    weights = frame_weights(logits, kernel_size, temperature)  # [B, H, W, K^2, 2]
    grid = tf.constant(tap_grid(kernel_size))  # [K^2, 2]
    return tf.reduce_sum(weights[..., None] * grid[:, None, :], axis=3)  # [B, H, W, 2, 2]


def logit_cotangent(weights, sums):
    """Gradient of ``sum_c out_c(p)`` w.r.t. the logits at p: ``w * (s - <w, s>)``.

    Args:
      weights: softmax weights at p, ``[..., 2K^2]``.
      sums: per tap, the sum over RGB of the tapped pixel at p, ``[..., 2K^2]``.
    """
    return weights * (sums - tf.reduce_sum(weights * sums, axis=-1, keepdims=True))
