"""Bilinear warping of frames by the kernel head's centroids, for the warp term.

The blend-weight read-out reads each frame's kernel centroid as the match. The
frame term asks each frame's own blend to rebuild the middle frame; a blend can
do that with its weight spread around the true position, so the centroid it
gives is only as precise as the spread is symmetric. The warp term asks the
centroid itself: frame j sampled bilinearly at ``p + d_j(p)`` must be the middle
frame at ``p`` (the photometric loss of unsupervised optical flow, on the
displacements the read-out reads). Its gradient reaches the centroid through
the bilinear weights, so a sub-pixel error costs what it costs in the image.

Sampling clamps positions to the image (the border repeated), as the read-out's
warp does (:func:`vidcorr.readout.pyramid.warp`). :func:`bilinear_sample` is the one
sampler of the graphs: the loss, the read-out's warps and the refinement use it.
"""

from vidcorr.compat import tf

__all__ = ["bilinear_sample", "sample_at", "warp_frames"]


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
    channels = images.shape[-1]
    x = tf.clip_by_value(x, 0.0, tf.cast(width - 1, tf.float32))  # [B, h, w]
    y = tf.clip_by_value(y, 0.0, tf.cast(height - 1, tf.float32))
    x0f, y0f = tf.floor(x), tf.floor(y)
    fx, fy = (x - x0f)[..., None], (y - y0f)[..., None]  # [B, h, w, 1]
    x0, y0 = tf.cast(x0f, tf.int32), tf.cast(y0f, tf.int32)
    x1, y1 = tf.minimum(x0 + 1, width - 1), tf.minimum(y0 + 1, height - 1)
    flat = tf.reshape(images, [-1, channels])  # [B H W, C]
    base = tf.range(b)[:, None, None] * height * width  # [B, 1, 1]

    def tap(rows, cols):
        return tf.gather(flat, base + rows * width + cols)  # [B, h, w, C]

    return ((1.0 - fy) * ((1.0 - fx) * tap(y0, x0) + fx * tap(y0, x1))
            + fy * ((1.0 - fx) * tap(y1, x0) + fx * tap(y1, x1)))


def sample_at(images, xy):
    """``images [B, H, W, C]`` at float positions ``xy [B, h, w, (x, y)]``: ``[B, h, w, C]``
    (:func:`bilinear_sample` with the positions stacked, as the read-out keeps them)."""
    return bilinear_sample(images, xy[..., 0], xy[..., 1])


def warp_frames(frames, offsets, top, left):
    """Each input frame sampled at the pixel plus its own kernel centroid.

    Args:
      frames: ``[B, H, W, 6]`` frames t and t+2 (the network's padded input).
      offsets: ``[B, h, w, 2, 2]`` (frame, then ``(dx, dy)``;
        :func:`vidcorr.model.kernels.frame_offsets`) for the ``h x w`` window of
        ``frames`` whose first pixel is ``(top, left)``.
      top: the window's first row in ``frames``.
      left: the window's first column in ``frames``.

    Returns:
      ``[B, h, w, 2, 3]``: frame t warped by its offsets, then frame t+2 by its own.
    """
    offsets = tf.convert_to_tensor(offsets)
    shape = tf.shape(offsets)
    rows = tf.cast(tf.range(shape[1]) + top, tf.float32)[None, :, None]  # [1, h, 1]
    cols = tf.cast(tf.range(shape[2]) + left, tf.float32)[None, None, :]  # [1, 1, w]
    warped = [bilinear_sample(frames[..., 3 * j:3 * j + 3],
                              cols + offsets[..., j, 0], rows + offsets[..., j, 1])
              for j in range(2)]  # 2 x [B, h, w, 3]
    return tf.stack(warped, axis=3)  # [B, h, w, 2, 3]
