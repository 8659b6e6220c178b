"""Losses and PSNR for frame interpolation (graph ops, and numpy for tests and validation).

The training loss is a reconstruction loss on the middle frame (L1, L2 or Charbonnier) plus,
optionally, two terms that weigh edges and texture, where a precise blend and a blurred one
differ most: an L1 loss on the images' finite differences (``gradient``) and a soft census
distance (``census``: the signs of each pixel's differences to its 7x7 neighbourhood,
compared with a robust soft Hamming distance, as in UnFlow).
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.model.spec import LOSSES

__all__ = ["LOSSES", "reconstruction_loss", "reconstruction_loss_numpy", "gradient_loss",
           "gradient_loss_numpy", "census_loss", "census_loss_numpy", "training_loss", "psnr",
           "psnr_numpy"]

CHARBONNIER_EPS = 1e-3
CENSUS_RADIUS = 3  # a 7x7 neighbourhood
CENSUS_SOFTNESS = 0.81  # t = d / sqrt(0.81 + d^2) for grey-level differences d in [0, 255] / 255
CENSUS_SCALE = 255.0  # the census compares grey levels in 0..255, as UnFlow does
HAMMING_EPS = 0.1  # soft Hamming distance per neighbour: e^2 / (0.1 + e^2)


def reconstruction_loss(prediction, target, kind="l1"):
    """Mean per-pixel loss between two ``[B, H, W, 3]`` tensors.

    Args:
      prediction: predicted frame.
      target: true frame.
      kind: ``'l1'``, ``'l2'`` or ``'charbonnier'`` (``sqrt(d^2 + 1e-6)``).

    Returns:
      A scalar tensor.

    Raises:
      ValueError: for an unknown ``kind``.
    """
    diff = prediction - target
    if kind == "l1":
        return tf.reduce_mean(tf.abs(diff))
    if kind == "l2":
        return tf.reduce_mean(tf.square(diff))
    if kind == "charbonnier":
        return tf.reduce_mean(tf.sqrt(tf.square(diff) + CHARBONNIER_EPS ** 2))
    raise ValueError("loss must be one of %s, got %r" % (", ".join(LOSSES), kind))


def reconstruction_loss_numpy(prediction, target, kind="l1"):
    """:func:`reconstruction_loss` on numpy arrays, as a float."""
    diff = np.asarray(prediction, np.float64) - np.asarray(target, np.float64)
    if kind == "l1":
        return float(np.mean(np.abs(diff)))
    if kind == "l2":
        return float(np.mean(diff ** 2))
    if kind == "charbonnier":
        return float(np.mean(np.sqrt(diff ** 2 + CHARBONNIER_EPS ** 2)))
    raise ValueError("loss must be one of %s, got %r" % (", ".join(LOSSES), kind))


def _differences(images):
    """Horizontal and vertical finite differences of ``[B, H, W, C]`` images (tensors)."""
    return images[:, :, 1:] - images[:, :, :-1], images[:, 1:] - images[:, :-1]


def gradient_loss(prediction, target):
    """Mean L1 distance between the finite differences of two ``[B, H, W, 3]`` tensors.

    The mean of the horizontal term (over ``B*H*(W-1)*3`` values) plus that of the vertical one.
    """
    (pdx, pdy), (tdx, tdy) = _differences(prediction), _differences(target)
    return tf.reduce_mean(tf.abs(pdx - tdx)) + tf.reduce_mean(tf.abs(pdy - tdy))


def gradient_loss_numpy(prediction, target):
    """:func:`gradient_loss` on numpy arrays, as a float."""
    p, t = np.asarray(prediction, np.float64), np.asarray(target, np.float64)
    dx = np.diff(p, axis=2) - np.diff(t, axis=2)
    dy = np.diff(p, axis=1) - np.diff(t, axis=1)
    return float(np.mean(np.abs(dx)) + np.mean(np.abs(dy)))


def _census_offsets():
    r = CENSUS_RADIUS
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if (dy, dx) != (0, 0)]


def _census(images):
    """Soft census signature ``[B, H-2r, W-2r, 48]`` of ``[B, H, W, 3]`` images (tensors)."""
    r = CENSUS_RADIUS
    grey = tf.reduce_mean(images, axis=3) * CENSUS_SCALE  # [B, H, W]
    h, w = tf.shape(grey)[1], tf.shape(grey)[2]
    centre = grey[:, r:h - r, r:w - r]  # [B, H-2r, W-2r]
    diffs = [grey[:, r + dy:h - r + dy, r + dx:w - r + dx] - centre for dy, dx in _census_offsets()]
    d = tf.stack(diffs, axis=3)  # [B, H-2r, W-2r, 48]
    return d / tf.sqrt(CENSUS_SOFTNESS + tf.square(d))


def census_loss(prediction, target):
    """Mean soft Hamming distance between the census signatures of two ``[B, H, W, 3]`` tensors.

    Per pixel (at least ``CENSUS_RADIUS`` from the border) and neighbour, ``e^2 / (0.1 + e^2)``
    with ``e`` the difference of the two soft signs; the mean over pixels and neighbours.
    """
    e = _census(prediction) - _census(target)
    return tf.reduce_mean(tf.square(e) / (HAMMING_EPS + tf.square(e)))


def census_loss_numpy(prediction, target):
    """:func:`census_loss` on numpy arrays, as a float."""
    r = CENSUS_RADIUS

    def signature(images):
        grey = np.asarray(images, np.float64).mean(axis=3) * CENSUS_SCALE
        _, h, w = grey.shape
        centre = grey[:, r:h - r, r:w - r]
        d = np.stack([grey[:, r + dy:h - r + dy, r + dx:w - r + dx] - centre
                      for dy, dx in _census_offsets()], axis=3)
        return d / np.sqrt(CENSUS_SOFTNESS + d ** 2)

    e = signature(prediction) - signature(target)
    return float(np.mean(e ** 2 / (HAMMING_EPS + e ** 2)))


def training_loss(prediction, target, train_config):
    """The loss a training config asks for: reconstruction plus the weighted edge terms.

    Args:
      prediction: predicted middle frames, ``[B, H, W, 3]``.
      target: true middle frames, ``[B, H, W, 3]``.
      train_config: a :class:`vidcorr.model.config.TrainConfig` (``loss``, ``gradient_weight``,
        ``census_weight``).

    Returns:
      A scalar tensor.
    """
    loss = reconstruction_loss(prediction, target, train_config.loss)
    if train_config.gradient_weight > 0:
        loss += train_config.gradient_weight * gradient_loss(prediction, target)
    if train_config.census_weight > 0:
        loss += train_config.census_weight * census_loss(prediction, target)
    return loss


def psnr(prediction, target):
    """Mean over the batch of the PSNR (dB, peak 1) of ``[B, H, W, 3]`` tensors."""
    mse = tf.reduce_mean(tf.square(tf.clip_by_value(prediction, 0.0, 1.0) - target), axis=[1, 2, 3])
    return tf.reduce_mean(-10.0 * tf.log(tf.maximum(mse, 1e-10)) / np.log(10.0))


def psnr_numpy(prediction, target):
    """Per-image PSNR (dB, peak 1) of ``[B, H, W, 3]`` arrays, as a ``[B]`` array."""
    prediction = np.clip(np.asarray(prediction, np.float64), 0.0, 1.0)
    mse = np.mean((prediction - np.asarray(target, np.float64)) ** 2, axis=(1, 2, 3))
    return -10.0 * np.log10(np.maximum(mse, 1e-10))
