"""numpy references of the training losses (vidcorr.model.losses), written out directly
from their definitions, for the tests: float64, one line of numpy per term."""

import numpy as np

from vidcorr.model.losses import (CENSUS_RADIUS, CENSUS_SCALE, CENSUS_SOFTNESS,
                                  HAMMING_EPS, reconstruction_loss_numpy)


def weighted_mean(values, weight, crop=(0, 0, 0, 0)):
    """Mean of ``values [B, h, w, C]`` weighted by ``weight [B, H, W]`` cut by ``crop``."""
    if weight is None:
        return float(np.mean(values))
    top, bottom, left, right = crop
    h, w = weight.shape[1:3]
    return float(np.mean(values * np.asarray(weight, np.float64)[:, top:h - bottom,
                                                                 left:w - right, None]))


def gradient_loss(prediction, target, weight=None):
    p, t = np.asarray(prediction, np.float64), np.asarray(target, np.float64)
    dx = np.diff(p, axis=2) - np.diff(t, axis=2)
    dy = np.diff(p, axis=1) - np.diff(t, axis=1)
    return (weighted_mean(np.abs(dx), weight, (0, 0, 0, 1)) +
            weighted_mean(np.abs(dy), weight, (0, 1, 0, 0)))


def census_loss(prediction, target, weight=None):
    r = CENSUS_RADIUS
    offsets = [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy or dx]

    def signature(images):
        grey = np.asarray(images, np.float64).mean(axis=3) * CENSUS_SCALE
        _, h, w = grey.shape
        centre = grey[:, r:h - r, r:w - r]
        d = np.stack([grey[:, r + dy:h - r + dy, r + dx:w - r + dx] - centre
                      for dy, dx in offsets], axis=3)
        return d / np.sqrt(CENSUS_SOFTNESS + d ** 2)

    e = signature(prediction) - signature(target)
    return weighted_mean(e ** 2 / (HAMMING_EPS + e ** 2), weight, (r, r, r, r))


def image_loss(prediction, target, train_config, weight=None):
    loss = reconstruction_loss_numpy(prediction, target, train_config.loss, weight)
    if train_config.gradient_weight > 0:
        loss += train_config.gradient_weight * gradient_loss(prediction, target, weight)
    if train_config.census_weight > 0:
        loss += train_config.census_weight * census_loss(prediction, target, weight)
    return loss


def frame_weights(masses, example_weight, target):
    if masses is None and example_weight is None:
        return [None, None]
    if masses is None:
        shares = [np.ones(np.shape(target)[:3])] * 2
    else:
        shares = [2.0 * np.asarray(masses, np.float64)[..., j] for j in range(2)]
    if example_weight is None:
        return shares
    example_weight = np.asarray(example_weight, np.float64)
    return [share * example_weight[:, None, None] for share in shares]


def frame_loss(blends, target, train_config, masses=None, example_weight=None):
    blends = np.asarray(blends, np.float64)
    weights = frame_weights(masses, example_weight, target)
    return 0.5 * (image_loss(blends[..., 0, :], target, train_config, weights[0]) +
                  image_loss(blends[..., 1, :], target, train_config, weights[1]))


def symmetry_loss(offsets):
    offsets = np.asarray(offsets, np.float64)
    return float(np.mean(np.abs(offsets[..., 0, :] + offsets[..., 1, :]).sum(axis=-1)))


def smoothness_loss(offsets, image, edge):
    offsets, image = np.asarray(offsets, np.float64), np.asarray(image, np.float64)
    total = 0.0
    for axis in (2, 1):
        gap = 0.5 * np.abs(np.diff(offsets, axis=axis)).sum(axis=(-2, -1))
        image_step = np.abs(np.diff(image, axis=axis)).mean(axis=-1)
        total += np.mean(np.exp(-edge * image_step) * gap)
    return 0.5 * total


def training_loss(prediction, target, train_config, blends=None, offsets=None, masses=None,
                  warps=None, layered=None):
    loss = image_loss(prediction, target, train_config)
    shares = masses if train_config.frame_mass else None
    real = train_config.frame_real_weight
    per_triplet = None if real == 1.0 else real + (1.0 - real) * np.asarray(layered, np.float64)
    for weight, images in ((train_config.frame_weight, blends), (train_config.warp_weight, warps)):
        if weight > 0:
            loss += weight * frame_loss(images, target, train_config, shares, per_triplet)
    if train_config.symmetry_weight > 0:
        loss += train_config.symmetry_weight * symmetry_loss(offsets)
    if train_config.smooth_weight > 0:
        loss += train_config.smooth_weight * smoothness_loss(offsets, target,
                                                             train_config.smooth_edge)
    return loss
