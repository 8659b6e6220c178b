"""The pyramid's resampling in the graph: downscaled levels, upsampled fields, the finer level.

The ops of :mod:`vidcorr.readout.pyramid` for a batch of images whose size may be
unknown until run time, built from gathers and element-wise arithmetic only (every
runtime runs them, ONNX included):

* :func:`area_downscale`: a level of the pyramid, Pillow's ``BOX`` filter from the
  full-size image (each output pixel the mean of the input pixels whose centres
  fall in its footprint), as :func:`vidcorr.readout.pyramid.build_pyramid` makes it;
* :func:`upsample_fields`: a coarse level's fields at the next finer size, bilinear
  through the pixel centres, displacements scaled with the size
  (:func:`vidcorr.readout.pyramid.upsample_field`); fields read out at every other
  pixel go straight to the next pass's or level's size;
* :func:`upsample_exact`: the finer read-out's pair, pixel ``p`` at ``S p``
  (:func:`vidcorr.readout.pyramid.upsample_exact`), cubic (Catmull-Rom) for images,
  bilinear for fields.
"""

from vidcorr.compat import tf
from vidcorr.model.sampling import sample_at

__all__ = ["area_downscale", "upsample_fields", "upsample_exact"]


def _box_1d(x, out_size, max_ratio, axis):
    """``x`` box-downscaled along ``axis`` to ``out_size`` (a scalar tensor); ``max_ratio``
    (a Python number) bounds the input pixels per output pixel.

    Which input pixels an output pixel averages is Pillow's rule, in its double precision
    (``precompute_coeffs`` in its ``Resample.c``): pixel j belongs to output i when
    ``(j + 1/2 - c_i) / s`` is in ``(-1/2, 1/2]``, ``c_i = (i + 1/2) s``, ``s`` the ratio of
    the sizes; where a centre falls on a boundary exactly, rounding decides, as in Pillow.
    """
    n = tf.shape(x)[axis]
    scale = tf.cast(n, tf.float64) / tf.cast(out_size, tf.float64)
    center = (tf.cast(tf.range(out_size), tf.float64) + 0.5) * scale  # [out]
    first = tf.maximum(tf.cast(tf.floor(center - 0.5 * scale + 0.5), tf.int32), 0)
    end = tf.minimum(tf.cast(tf.floor(center + 0.5 * scale + 0.5), tf.int32), n)
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    total, count = 0.0, 0.0
    for t in range(int(max_ratio) + 2):
        j = first + t
        where = (tf.cast(j, tf.float64) - center + 0.5) * (1.0 / scale)
        inside = (j < end) & (where > -0.5) & (where <= 0.5)
        inside = tf.reshape(tf.cast(inside, tf.float32), shape)
        total += inside * tf.gather(x, tf.clip_by_value(j, 0, n - 1), axis=axis)
        count += inside
    return total / count


def area_downscale(images, height, width, factor):
    """``images [B, H, W, C]`` box-downscaled to ``height`` x ``width`` (scalar tensors or
    ints), Pillow's ``BOX``; ``factor`` (a Python int) bounds ``H / height`` and
    ``W / width`` (a pyramid level's ``2^level``)."""
    if factor == 1:
        return images
    return _box_1d(_box_1d(images, height, factor, 1), width, factor, 2)


def upsample_fields(fields, height, width, size=None, stride=1):
    """``fields [B, h, w, 2, 2]`` (two frames' ``(dx, dy)``) at ``height`` x ``width``: bilinear
    through the pixel centres, the border repeated, displacements scaled.

    Args:
      fields: ``[B, h, w, 2, 2]``.
      height: the output's height (an int or a scalar tensor).
      width: the output's width.
      size: ``(H, W)``, the size of the level the fields belong to (None: ``(h, w)``).
      stride: the fields were read out at every ``stride``-th pixel and row of that level
        (its pixel ``stride (i, j)`` at ``[i, j]``; :func:`vidcorr.readout.kernel.blend.blend_level`).

    Returns:
      ``[B, height, width, 2, 2]``.
    """
    shape = tf.shape(fields)
    h, w = (shape[1], shape[2]) if size is None else size
    h, w = tf.cast(h, tf.float32), tf.cast(w, tf.float32)
    sx, sy = tf.cast(width, tf.float32) / w, tf.cast(height, tf.float32) / h
    ys, xs = tf.meshgrid(tf.cast(tf.range(height), tf.float32),
                         tf.cast(tf.range(width), tf.float32), indexing="ij")
    s = float(stride)
    xy = tf.stack([((xs + 0.5) / sx - 0.5) / s, ((ys + 0.5) / sy - 0.5) / s], axis=-1)  # [H, W, 2]
    xy = tf.tile(xy[None], [shape[0], 1, 1, 1])  # [B, H, W, 2]
    flat = tf.reshape(fields, tf.concat([shape[:3], [4]], 0))  # [B, h, w, 4]
    up = tf.reshape(sample_at(flat, xy), tf.concat([tf.shape(xy)[:3], [2, 2]], 0))
    return up * tf.stack([sx, sy])  # [B, H, W, 2, 2]


def _cubic_1d(x, factor, axis):
    """``x`` along ``axis`` at every ``1 / factor`` of a pixel (pixel ``p`` at ``factor p``),
    Catmull-Rom through the pixel centres, the border repeated."""
    n = tf.shape(x)[axis]
    t = tf.cast(tf.range(factor * (n - 1) + 1), tf.float32) / float(factor)
    base = tf.floor(t)
    f = t - base
    base = tf.cast(base, tf.int32)
    weights = (((-0.5 * f + 1.0) * f - 0.5) * f, (1.5 * f - 2.5) * f * f + 1.0,
               ((-1.5 * f + 2.0) * f + 0.5) * f, (0.5 * f - 0.5) * f * f)
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    out = 0.0
    for k, weight in zip((-1, 0, 1, 2), weights):
        taps = tf.gather(x, tf.clip_by_value(base + k, 0, n - 1), axis=axis)
        out += tf.reshape(weight, shape) * taps
    return out


def upsample_exact(images, factor, cubic=True):
    """``images [B, H, W, C]`` resampled so that pixel ``(x, y)`` lands on ``(factor x,
    factor y)``, size ``factor (n - 1) + 1`` a side: Catmull-Rom clipped to each image's
    range (``cubic``), or bilinear (fields)."""
    if not cubic:
        shape = tf.shape(images)
        ys, xs = tf.meshgrid(tf.cast(tf.range(factor * (shape[1] - 1) + 1), tf.float32),
                             tf.cast(tf.range(factor * (shape[2] - 1) + 1), tf.float32),
                             indexing="ij")
        xy = tf.tile(tf.stack([xs, ys], -1)[None] / float(factor), [shape[0], 1, 1, 1])
        return sample_at(images, xy)
    out = _cubic_1d(_cubic_1d(images, factor, 1), factor, 2)
    low = tf.reduce_min(images, axis=[1, 2, 3], keepdims=True)
    high = tf.reduce_max(images, axis=[1, 2, 3], keepdims=True)
    return tf.clip_by_value(out, low, high)
