"""The fields a level hands on, smoothed in the graph: a median, then a confidence-weighted
Gaussian, over a batch of fields of any size.

A coarse level's dense positions carry the read-out's noise and its errors where
the frames disagree (occlusions, flat regions). Before they warp the next pass or
level, :func:`smooth_field` takes a ``size`` x ``size`` median of each component
(0 or 1: none) and then averages by a Gaussian of ``sigma`` pixels weighted by the
match's confidence, so confident matches outvote weak ones nearby. The border is
mirrored with the edge pixel repeated (numpy's and TensorFlow's ``symmetric``,
scipy's ``reflect``), periodically where a wide Gaussian reaches past a small level
(:func:`symmetric_pad`): the Gaussian is always truncated at ``4 sigma``.

Sizes may be unknown until run time (the exported ``match`` takes any size), and
the padding is one gather of computed indices, which every runtime runs.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.readout.pyramid import MIN_CONFIDENCE_WEIGHT

__all__ = ["smooth_field", "symmetric_pad"]


def symmetric_pad(x, before, after, axis):
    """``x`` extended by ``before`` and ``after`` (ints or scalar tensors) along ``axis``,
    mirrored with the edge pixel repeated, periodically where the padding is wider than
    the axis (numpy's ``np.pad(mode="symmetric")``): one gather of computed indices, for
    an axis whose length may be unknown until run time."""
    n = tf.shape(x)[axis]
    period = 2 * n
    # i + shift >= 0 for every i >= -before: a modulo of non-negative operands, which every
    # converter's Mod computes alike
    shift = period * (before // period + 1)
    m = (tf.range(-before, n + after) + shift) % period
    return tf.gather(x, tf.where(m < n, m, period - 1 - m), axis=axis)


def _gaussian_taps(sigma):
    r = int(np.ceil(4 * sigma))
    g = np.exp(-0.5 * (np.arange(-r, r + 1) / float(sigma)) ** 2)
    return (g / g.sum()).astype(np.float32), r


def _median(field, size):
    """The ``size`` x ``size`` median of each channel of ``field [B, H, W, C]``."""
    c = field.shape.as_list()[3]
    r = size // 2
    padded = symmetric_pad(symmetric_pad(field, r, size - 1 - r, 1), r, size - 1 - r, 2)
    patches = tf.extract_image_patches(padded, [1, size, size, 1], [1, 1, 1, 1],
                                       [1, 1, 1, 1], "VALID")  # [B, H, W, size^2 C]
    shape = tf.shape(field)
    values = tf.reshape(patches, tf.concat([shape[:3], [size * size, c]], 0))
    values = tf.transpose(values, [0, 1, 2, 4, 3])  # [B, H, W, C, size^2]
    return tf.nn.top_k(values, size * size // 2 + 1).values[..., -1]  # [B, H, W, C]


def _blur(x, taps, r):
    """The separable Gaussian of ``x [B, H, W, C]``, the border mirrored."""
    c = x.shape.as_list()[3]
    x = symmetric_pad(symmetric_pad(x, r, r, 1), r, r, 2)  # [B, H + 2r, W + 2r, C]
    kx = np.tile(taps.reshape(1, -1, 1, 1), (1, 1, c, 1))
    ky = np.tile(taps.reshape(-1, 1, 1, 1), (1, 1, c, 1))
    x = tf.nn.depthwise_conv2d(x, kx, [1, 1, 1, 1], "VALID")
    return tf.nn.depthwise_conv2d(x, ky, [1, 1, 1, 1], "VALID")


def smooth_field(field, confidence, size, sigma):
    """``field [B, H, W, C]`` median-filtered ``size`` x ``size`` (0, 1: not), then averaged
    by a Gaussian of ``sigma`` pixels (0: not) weighted by ``confidence [B, H, W]``.

    Args:
      field: ``[B, H, W, C]``, static C.
      confidence: ``[B, H, W]`` weights (negative ones count as 0).
      size: the median's size.
      sigma: the Gaussian's width in pixels.

    Returns:
      ``[B, H, W, C]``.
    """
    if size > 1:
        field = _median(field, size)
    if sigma > 0:
        taps, r = _gaussian_taps(sigma)
        weight = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT  # [B, H, W, 1]
        field = _blur(weight * field, taps, r) / _blur(weight, taps, r)
    return field
