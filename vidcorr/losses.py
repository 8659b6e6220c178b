"""Reconstruction losses and PSNR for frame interpolation (graph ops and numpy)."""

import numpy as np

from vidcorr.compat import tf
from vidcorr.spec import LOSSES

__all__ = ["LOSSES", "reconstruction_loss", "reconstruction_loss_numpy", "psnr", "psnr_numpy"]

CHARBONNIER_EPS = 1e-3


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


def psnr(prediction, target):
    """Mean over the batch of the PSNR (dB, peak 1) of ``[B, H, W, 3]`` tensors."""
    mse = tf.reduce_mean(tf.square(tf.clip_by_value(prediction, 0.0, 1.0) - target), axis=[1, 2, 3])
    return tf.reduce_mean(-10.0 * tf.log(tf.maximum(mse, 1e-10)) / np.log(10.0))


def psnr_numpy(prediction, target):
    """Per-image PSNR (dB, peak 1) of ``[B, H, W, 3]`` arrays, as a ``[B]`` array."""
    prediction = np.clip(np.asarray(prediction, np.float64), 0.0, 1.0)
    mse = np.mean((prediction - np.asarray(target, np.float64)) ** 2, axis=(1, 2, 3))
    return -10.0 * np.log10(np.maximum(mse, 1e-10))
