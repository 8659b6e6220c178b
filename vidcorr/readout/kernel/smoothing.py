"""The fields a level hands on, smoothed in the graph: a median, then a confidence-weighted
Gaussian, which may stop at motion boundaries, over a batch of fields of any size.

A coarse level's dense positions carry the read-out's noise and its errors where
the frames disagree (occlusions, flat regions). Before they warp the next pass or
level, :func:`smooth_field` takes a ``size`` x ``size`` median of each component
(0 or 1: none) and then averages by a Gaussian of ``sigma`` pixels weighted by the
match's confidence, so confident matches outvote weak ones nearby.

With ``sigma_range`` R > 0 the average is a joint bilateral on the fields themselves, taken
along rows and then along columns: a neighbour's weight is the Gaussian's tap times its
confidence times ``exp(-|f_n - f_c|^2 / 2 R^2) + floor``, with ``|f_n - f_c|`` the distance
between its field and the centre's (all components, pixels). Neighbours moving like the
centre count fully, those moving differently by ``floor`` only, so a small object moving
faster than its background keeps its own motion instead of being averaged into the
background's. As R grows it becomes the Gaussian above (the column pass weighs each pixel
by the row pass's summed weights, so the two passes make the same weighted average),
sampled at every ``RANGE_STEP``-th tap: a pass gathers each pixel's r + 1 neighbours at
offsets -r, -r + 2, ..., r at once, beside the axis it runs along (rows ``[B, H, W, r + 1,
C]``, columns ``[B, H, r + 1, W, C]``: no transposes; a few MB at the coarser levels;
every tap, gathered, took 4.77 s for an unrefined 720x1280 match against 4.54 s, and found
about the same matches). With R infinite (``inf``, known when the graph is built)
that sampled Gaussian is computed by two depthwise convolutions instead. The border is
mirrored with the edge pixel repeated (numpy's and TensorFlow's ``symmetric``,
scipy's ``reflect``), periodically where a wide Gaussian reaches past a small level
(:func:`symmetric_pad`): the Gaussian is always truncated at ``4 sigma``.

Sizes may be unknown until run time (the exported ``match`` takes any size), and
the padding is one gather of computed indices, which every runtime runs.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.readout.pyramid import MIN_CONFIDENCE_WEIGHT

__all__ = ["smooth_field", "symmetric_pad", "RANGE_STEP"]


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


def _gaussian_taps(sigma, multiple=1):
    """The Gaussian's taps to ``4 sigma``, the radius rounded up to a ``multiple``."""
    r = -(-int(np.ceil(4 * sigma)) // multiple) * multiple
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


RANGE_STEP = 2  # the bilateral's taps are every 2nd of the Gaussian's


def _bilateral_pass(field, weight, taps, r, scale, floor, axis):
    """One pass of the joint bilateral along ``axis`` (2: rows, 1: columns): ``(field,
    summed weights)``. The taps are gathered beside the axis, at ``axis + 1``."""
    n = tf.shape(field)[axis]
    index = tf.range(n)[:, None] + tf.range(0, 2 * r + 1, RANGE_STEP)[None, :]  # [N, K]
    near_f = tf.gather(symmetric_pad(field, r, r, axis), index, axis=axis)  # [B, H, W, K, C]
    near_w = tf.gather(symmetric_pad(weight, r, r, axis), index, axis=axis)[..., 0]
    centre = tf.expand_dims(field, axis + 1)  # (rows) [B, H, W, 1, C]; (columns) [B, H, 1, W, C]
    d2 = tf.reduce_sum(tf.square(near_f - centre), axis=4)  # [B, H, W, K] or [B, H, K, W]
    g = taps[::RANGE_STEP] if axis == 2 else taps[::RANGE_STEP, None]  # along K
    t = g * near_w * (tf.exp(scale * d2) + floor)  # [B, H, W, K] or [B, H, K, W]
    num = tf.reduce_sum(t[..., None] * near_f, axis=axis + 1)  # [B, H, W, C]
    den = tf.reduce_sum(t, axis=axis + 1)[..., None]  # [B, H, W, 1]
    return num / den, den


def _bilateral(field, weight, taps, r, sigma_range, floor):
    """The joint bilateral of ``field [B, H, W, C]`` weighted by ``weight [B, H, W, 1]``
    along rows, then columns (see the module docstring)."""
    if isinstance(sigma_range, tf.Tensor):  # known at run time: inf gives 0
        scale = -0.5 / tf.square(sigma_range)
    else:
        scale = -0.5 / float(sigma_range) ** 2
    field, weight = _bilateral_pass(field, weight, taps, r, scale, floor, axis=2)
    return _bilateral_pass(field, weight, taps, r, scale, floor, axis=1)[0]


def smooth_field(field, confidence, size, sigma, sigma_range=0.0, floor=0.0):
    """``field [B, H, W, C]`` median-filtered ``size`` x ``size`` (0, 1: not), then averaged
    by a Gaussian of ``sigma`` pixels (0: not) weighted by ``confidence [B, H, W]``, which
    stops at motion boundaries with ``sigma_range`` > 0 (see the module docstring).

    Args:
      field: ``[B, H, W, C]``, static C.
      confidence: ``[B, H, W]`` weights (negative ones count as 0).
      size: the median's size.
      sigma: the Gaussian's width in pixels.
      sigma_range: the range kernel's width in the field's units: 0 gives the plain
        Gaussian, ``inf`` the Gaussian at the bilateral's taps; a scalar tensor (any value
        but 0) is read at run time.
      floor: the range kernel's least value (a neighbour moving unlike the centre).

    Returns:
      ``[B, H, W, C]``.
    """
    if size > 1:
        field = _median(field, size)
    if sigma > 0:
        weight = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT  # [B, H, W, 1]
        if isinstance(sigma_range, tf.Tensor) or sigma_range > 0:
            taps, r = _gaussian_taps(sigma, RANGE_STEP)  # 0 among the sampled offsets
            if isinstance(sigma_range, tf.Tensor) or np.isfinite(sigma_range):
                return _bilateral(field, weight, taps, r, sigma_range, floor)
            # an infinite range: the weighted Gaussian at the bilateral's taps, which two
            # depthwise convolutions compute at a fraction of the gathers' cost
            taps = np.where(np.arange(-r, r + 1) % RANGE_STEP == 0, taps, 0).astype(np.float32)
        else:
            taps, r = _gaussian_taps(sigma)
        field = _blur(weight * field, taps, r) / _blur(weight, taps, r)
    return field
