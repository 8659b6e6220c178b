"""The graphs' samplers: images read at float positions, in TensorFlow ops.

Three samplers, found by name in :data:`SAMPLERS` (all clamp positions to the image and
repeat its border, and are differentiable in the positions):

* ``bilinear`` (:func:`bilinear_sample`): four pixels. The sampler of the warp loss and
  the read-out's warps.
* ``bspline``: a cubic B-spline kernel over 4 x 4 pixels (:func:`bspline_columns`, then
  :func:`bspline_sample`). Without a prefilter it does not pass through the pixels: it
  smooths a little, about as a Gaussian of sigma 0.58 px would.
* ``spline``: the interpolating cubic spline, the B-spline kernel on the image's spline
  coefficients (:func:`spline_prefilter` first). It passes through the pixels.

Why more than bilinear: bilinear interpolation is not shift-invariant. An image sampled
at a fraction f of a pixel looks shifted by an amount that grows with its fine texture
and changes sign at f = 1/2, so two frames sampled at fractions f and 1 - f (a match's
two ends, held about its midpoint) agree best a few hundredths of a pixel off the truth.
Chained along a track, that bias adds up. The spline kernels are smooth, and their shift
is several times smaller (docs/refinement.md, "The sampler").

A sampler is used in two steps, ``sample(prepare(images), x, y)``: ``prepare`` (the
B-spline's layout of columns and the spline's prefilter, or nothing) once per image,
``sample`` at every warp.
"""

import numpy as np

from vidcorr.compat import tf

__all__ = ["bilinear_sample", "bspline_columns", "bspline_sample", "spline_prefilter",
           "sampler", "sample_at", "SAMPLERS"]

SPLINE_POLE = 3.0 ** 0.5 - 2.0  # the pole of the cubic B-spline's inverse filter
SPLINE_TAPS = 8  # the prefilter's taps each side: |pole|^8 < 3e-5


def _clamped(images, x, y):
    """Positions clamped to ``images``; their floors (int) and fractions ``[B, h, w, 1]``."""
    shape = tf.shape(images)
    x = tf.clip_by_value(x, 0.0, tf.cast(shape[2] - 1, tf.float32))  # [B, h, w]
    y = tf.clip_by_value(y, 0.0, tf.cast(shape[1] - 1, tf.float32))
    x0f, y0f = tf.floor(x), tf.floor(y)
    return (tf.cast(x0f, tf.int32), tf.cast(y0f, tf.int32),
            (x - x0f)[..., None], (y - y0f)[..., None])


def bilinear_sample(images, x, y):
    """``images`` sampled at float positions, bilinear, positions clamped to the image.

    Args:
      images: ``[B, H, W, C]``.
      x: ``[B, h, w]`` column positions (pixels; 0 is the first column's centre).
      y: ``[B, h, w]`` row positions.

    Returns:
      ``[B, h, w, C]``; differentiable in ``x`` and ``y`` (zero gradient where a
      position is clamped).
    """
    images = tf.convert_to_tensor(images)
    shape = tf.shape(images)
    b, height, width = shape[0], shape[1], shape[2]
    x0, y0, fx, fy = _clamped(images, x, y)
    x1, y1 = tf.minimum(x0 + 1, width - 1), tf.minimum(y0 + 1, height - 1)
    flat = tf.reshape(images, [-1, images.shape[-1]])  # [B H W, C]
    base = tf.range(b)[:, None, None] * height * width  # [B, 1, 1]

    def tap(rows, cols):
        return tf.gather(flat, base + rows * width + cols)  # [B, h, w, C]

    # as three interpolations, their fractions repeated over the channels once: products of
    # one shape (a broadcasting product is several times slower on a CPU, onnxruntime's most)
    fx, fy = (tf.concat([f] * int(images.shape[-1]), axis=3) for f in (fx, fy))  # [B, h, w, C]
    top, low = tap(y0, x0), tap(y1, x0)  # [B, h, w, C]
    top = top + fx * (tap(y0, x1) - top)
    low = low + fx * (tap(y1, x1) - low)
    return top + fy * (low - top)


def _bspline_weights(t):
    """The cubic B-spline's weights at fraction ``t`` ``[..., 1]``: ``[..., 4]``, for the
    pixels at offsets -1, 0, 1, 2."""
    t2, t3 = t * t, t * t * t
    return tf.concat([(1.0 - t) ** 3, 3.0 * t3 - 6.0 * t2 + 4.0,
                      -3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0, t3], axis=-1) / 6.0


def bspline_columns(images):
    """``images [B, H, W, C]`` laid out for :func:`bspline_sample`: each pixel's columns
    x - 1 .. x + 2 side by side, ``[B, H, W, 4 C]`` (the border repeated), so the four
    columns of a row come from one gather. Made once per image, read at every warp."""
    images = tf.convert_to_tensor(images)
    width = tf.shape(images)[2]
    padded = tf.concat([images[:, :, :1], images, images[:, :, -1:], images[:, :, -1:]],
                       axis=2)  # [B, H, W + 3, C]
    return tf.concat([padded[:, :, k:k + width] for k in range(4)], axis=3)  # [B, H, W, 4C]


def bspline_sample(columns, x, y):
    """An image sampled at float positions with the cubic B-spline kernel (4 x 4 pixels),
    positions clamped to the image and its border repeated; four gathers, as a bilinear
    sample takes.

    Args:
      columns: ``[B, H, W, 4 C]``, the image laid out by :func:`bspline_columns`.
      x: ``[B, h, w]`` column positions (pixels; 0 is the first column's centre).
      y: ``[B, h, w]`` row positions.

    Returns:
      ``[B, h, w, C]``; differentiable in ``x`` and ``y`` (zero gradient where a position is
      clamped).
    """
    columns = tf.convert_to_tensor(columns)
    shape = tf.shape(columns)
    b, height, width = shape[0], shape[1], shape[2]
    channels = int(columns.shape[-1]) // 4
    x0, y0, fx, fy = _clamped(columns, x, y)
    wx, wy = _bspline_weights(fx), _bspline_weights(fy)  # [B, h, w, 4]
    flat = tf.reshape(columns, [-1, 4 * channels])  # [B H W, 4C]
    base = tf.range(b)[:, None, None] * height * width + x0  # [B, h, w]
    # the four rows weighted first, on the gathered columns side by side, then the columns:
    # one product over the 4 x C columns, not four (a broadcasting product is slow on CPU)
    rows = []
    for j in range(4):
        row = tf.clip_by_value(y0 + (j - 1), 0, height - 1)
        rows.append(wy[..., j:j + 1] * tf.gather(flat, base + row * width))  # [B, h, w, 4C]
    rows = tf.add_n(rows)
    rows = tf.reshape(rows, tf.concat([tf.shape(rows)[:3], [4, channels]], 0))
    return tf.reduce_sum(wx[..., None] * rows, axis=3)  # [B, h, w, C]


def spline_prefilter(images):
    """The cubic spline's coefficients of ``images [B, H, W, C]``: the inverse of the
    B-spline's ``[1, 4, 1] / 6`` at the pixels, so that the B-spline kernel on them passes
    through the pixels.

    The inverse filter ``sqrt(3) pole^|k|`` is truncated to ``2 SPLINE_TAPS + 1`` taps
    along each axis (two depthwise convolutions), the border repeated beyond the image.
    """
    images = tf.convert_to_tensor(images)
    channels = int(images.shape[-1])
    taps = np.array([3.0 ** 0.5 * SPLINE_POLE ** abs(k)
                     for k in range(-SPLINE_TAPS, SPLINE_TAPS + 1)], np.float32)
    for axis, kernel in ((1, taps[:, None]), (2, taps[None, :])):
        edge = [slice(None)] * 4
        edge[axis] = slice(0, 1)
        first = images[tuple(edge)]
        edge[axis] = slice(-1, None)
        last = images[tuple(edge)]
        padded = tf.concat([first] * SPLINE_TAPS + [images] + [last] * SPLINE_TAPS, axis=axis)
        filters = np.tile(kernel[:, :, None, None], [1, 1, channels, 1])  # [kh, kw, C, 1]
        images = tf.nn.depthwise_conv2d(padded, tf.constant(filters), [1, 1, 1, 1], "VALID")
    return images  # [B, H, W, C]


def _unchanged(images):
    return images


def _spline_columns(images):
    return bspline_columns(spline_prefilter(images))


SAMPLERS = {"bilinear": (_unchanged, bilinear_sample),
            "bspline": (bspline_columns, bspline_sample),
            "spline": (_spline_columns, bspline_sample)}


def sampler(name):
    """``(prepare, sample)`` of the sampler ``name`` in :data:`SAMPLERS`: the images are
    read at ``x, y`` by ``sample(prepare(images), x, y)``; ``prepare`` once per image."""
    return SAMPLERS[name]


def sample_at(images, xy, name="bilinear"):
    """``images [B, H, W, C]`` at float positions ``xy [B, h, w, (x, y)]``: ``[B, h, w, C]``
    (the sampler ``name``, its ``prepare`` included, with the positions stacked as the
    read-out keeps them)."""
    prepare, sample = sampler(name)
    return sample(prepare(images), xy[..., 0], xy[..., 1])
