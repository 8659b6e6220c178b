"""The confidence's texture term in the graph, for a batch of frames of any size.

The ops of :func:`vidcorr.readout.confidence.texture_map` and
:func:`~vidcorr.readout.confidence.texture_at` (the numpy reference the tests hold
these to): the Shi-Tomasi smaller eigenvalue of the structure tensor over a box
window of ``2 radius + 1`` pixels (numpy's ``gradient``: central differences,
one-sided at the border; the window's border repeated), mapped to [0, 1) as
``lambda / (lambda + TEXTURE_SCALE)``, and read at a match's nearest pixel.
"""

from vidcorr.compat import tf
from vidcorr.readout.confidence import TEXTURE_RADIUS, TEXTURE_SCALE

__all__ = ["texture_map", "texture_at"]


def _part(x, start, size, axis):
    """``size`` entries of ``x`` along ``axis`` from ``start`` (ints or scalar tensors): a
    slice, which copies rows where a gather would index every entry."""
    begin, sizes = [0, 0, 0, 0], [-1, -1, -1, -1]
    begin[axis], sizes[axis] = start, size
    return tf.slice(x, tf.stack(begin), tf.stack(sizes))


def _edge_pad(x, r, axis):
    """``x`` extended by ``r`` pixels on both sides of ``axis``, the edge repeated."""
    n = tf.shape(x)[axis]
    return tf.concat([_part(x, 0, 1, axis)] * r + [x] + [_part(x, n - 1, 1, axis)] * r,
                     axis=axis)


def _gradient(x, axis):
    """numpy's ``gradient`` along ``axis``: central differences, one-sided at the ends."""
    n = tf.shape(x)[axis]
    inner = 0.5 * (_part(x, 2, n - 2, axis) - _part(x, 0, n - 2, axis))
    first = _part(x, 1, 1, axis) - _part(x, 0, 1, axis)
    last = _part(x, n - 1, 1, axis) - _part(x, n - 2, 1, axis)
    return tf.concat([first, inner, last], axis=axis)


def texture_map(images, radius=TEXTURE_RADIUS, scale=TEXTURE_SCALE):
    """Texture in [0, 1) per pixel of ``images [B, H, W, C]`` (float in [0, 1]): ``[B, H, W]``."""
    gray = tf.reduce_mean(images, axis=3, keepdims=True)  # [B, H, W, 1]
    gx, gy = _gradient(gray, 2), _gradient(gray, 1)
    products = tf.concat([gx * gx, gy * gy, gx * gy], axis=3)  # [B, H, W, 3]
    size = 2 * radius + 1
    padded = _edge_pad(_edge_pad(products, radius, 1), radius, 2)
    window = tf.nn.avg_pool(tf.nn.avg_pool(padded, [1, size, 1, 1], [1, 1, 1, 1], "VALID"),
                            [1, 1, size, 1], [1, 1, 1, 1], "VALID")  # [B, H, W, 3]
    jxx, jyy, jxy = window[..., 0], window[..., 1], window[..., 2]
    root = tf.sqrt(tf.maximum(0.25 * (jxx - jyy) ** 2 + jxy ** 2, 0.0))
    lam = tf.maximum(0.5 * (jxx + jyy) - root, 0.0)
    return lam / (lam + scale)


def texture_at(texture, xy):
    """``texture [B, H, W]`` at the nearest pixels of ``xy [B, h, w, (x, y)]``, clamped to the
    image (half-way points round to even, as numpy's ``rint``): ``[B, h, w]``."""
    shape = tf.shape(texture)
    x = tf.clip_by_value(tf.cast(tf.round(xy[..., 0]), tf.int32), 0, shape[2] - 1)
    y = tf.clip_by_value(tf.cast(tf.round(xy[..., 1]), tf.int32), 0, shape[1] - 1)
    base = tf.reshape(tf.range(shape[0]) * shape[1] * shape[2], [-1, 1, 1])
    return tf.gather(tf.reshape(texture, [-1]), base + y * shape[2] + x)
