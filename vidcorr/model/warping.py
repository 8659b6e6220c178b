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
warp does (:func:`vidcorr.readout.pyramid.warp`), with the bilinear sampler of
:mod:`vidcorr.model.sampling` (re-exported here: :func:`bilinear_sample`, :func:`sample_at`).
"""

from vidcorr.compat import tf
from vidcorr.model.sampling import bilinear_sample, sample_at

__all__ = ["bilinear_sample", "sample_at", "warp_frames"]


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
