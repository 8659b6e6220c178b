"""Losses and PSNR for frame interpolation (graph ops; numpy for the validation scores).

The training loss is a reconstruction loss on the middle frame (L1, L2 or Charbonnier) plus,
optionally, two terms that weigh edges and texture, where a precise blend and a blurred one
differ most: an L1 loss on the images' finite differences (``gradient``) and a soft census
distance (``census``: the signs of each pixel's differences to its 7x7 neighbourhood,
compared with a robust soft Hamming distance, as in UnFlow).

With the adaptive-kernel head two more terms act on the kernels themselves (no flow labels):

* ``frame``: the same loss on each frame's *own* blend (:func:`vidcorr.model.kernels.frame_blends`),
  the mean over the two frames. The blend of both frames is right to first order
  whenever the mass-weighted mean of the two frames' offsets is, so a kernel that reads
  a pixel's motion as none in both frames costs little where the image is smooth;
  each frame's own blend is right only where that frame's offset is.
  With ``frame_mass`` each frame's loss at a pixel is weighted by twice its share of the
  blend there, so that where the network blends from one frame only (the other one
  occluded) the other is not pulled towards a wrong place. With ``frame_real_weight`` < 1
  the frame and warp terms of the real training triplets are weighed down against the
  layered ones' (each triplet's kind comes with the batch; 0: layered triplets only).
* ``symmetry``: where motion is steady the two frames' offsets are opposite; the mean
  over pixels of ``|dx_t + dx_t2| + |dy_t + dy_t2|`` (pixels) pulls them so.
* ``smooth``: edge-aware first-order smoothness of the two frames' offsets
  (:func:`smoothness_loss`).
* ``warp``: the frame term's loss on each frame warped by its own kernel centroid
  (:func:`vidcorr.model.warping.warp_frames`), so each centroid must be the motion itself,
  not only a blend that reconstructs the middle frame.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.model.spec import LOSSES

__all__ = ["LOSSES", "reconstruction_loss", "reconstruction_loss_numpy", "gradient_loss",
           "census_loss", "frame_loss", "symmetry_loss", "smoothness_loss", "training_loss",
           "psnr", "psnr_numpy"]

CHARBONNIER_EPS = 1e-3
CENSUS_RADIUS = 3  # a 7x7 neighbourhood
CENSUS_SOFTNESS = 0.81  # t = d / sqrt(0.81 + d^2) for grey-level differences d in [0, 255] / 255
CENSUS_SCALE = 255.0  # the census compares grey levels in 0..255, as UnFlow does
HAMMING_EPS = 0.1  # soft Hamming distance per neighbour: e^2 / (0.1 + e^2)


def _wmean(values, weight, crop=(0, 0, 0, 0)):
    """Mean of ``values [B, h, w, C]``, each pixel weighted by ``weight [B, H, W]`` cut by
    ``crop = (top, bottom, left, right)`` pixels to ``h x w`` (None: the plain mean)."""
    if weight is None:
        return tf.reduce_mean(values)
    top, bottom, left, right = crop
    h, w = tf.shape(weight)[1], tf.shape(weight)[2]
    weight = weight[:, top:h - bottom, left:w - right, None]  # [B, h, w, 1]
    return tf.reduce_mean(values * weight)


def _wmean_numpy(values, weight, crop=(0, 0, 0, 0)):
    if weight is None:
        return float(np.mean(values))
    top, bottom, left, right = crop
    h, w = weight.shape[1:3]
    return float(np.mean(values * np.asarray(weight, np.float64)[:, top:h - bottom,
                                                                 left:w - right, None]))


def reconstruction_loss(prediction, target, kind="l1", weight=None):
    """Mean per-pixel loss between two ``[B, H, W, 3]`` tensors.

    Args:
      prediction: predicted frame.
      target: true frame.
      kind: ``'l1'``, ``'l2'`` or ``'charbonnier'`` (``sqrt(d^2 + 1e-6)``).
      weight: optional per-pixel weights ``[B, H, W]`` (the mean of weight x loss).

    Returns:
      A scalar tensor.

    Raises:
      ValueError: for an unknown ``kind``.
    """
    diff = prediction - target
    if kind == "l1":
        return _wmean(tf.abs(diff), weight)
    if kind == "l2":
        return _wmean(tf.square(diff), weight)
    if kind == "charbonnier":
        return _wmean(tf.sqrt(tf.square(diff) + CHARBONNIER_EPS ** 2), weight)
    raise ValueError("loss must be one of %s, got %r" % (", ".join(LOSSES), kind))


def reconstruction_loss_numpy(prediction, target, kind="l1", weight=None):
    """:func:`reconstruction_loss` on numpy arrays, as a float."""
    diff = np.asarray(prediction, np.float64) - np.asarray(target, np.float64)
    if kind == "l1":
        return _wmean_numpy(np.abs(diff), weight)
    if kind == "l2":
        return _wmean_numpy(diff ** 2, weight)
    if kind == "charbonnier":
        return _wmean_numpy(np.sqrt(diff ** 2 + CHARBONNIER_EPS ** 2), weight)
    raise ValueError("loss must be one of %s, got %r" % (", ".join(LOSSES), kind))


def _differences(images):
    """Horizontal and vertical finite differences of ``[B, H, W, C]`` images (tensors)."""
    return images[:, :, 1:] - images[:, :, :-1], images[:, 1:] - images[:, :-1]


def gradient_loss(prediction, target, weight=None):
    """Mean L1 distance between the finite differences of two ``[B, H, W, 3]`` tensors.

    The mean of the horizontal term (over ``B*H*(W-1)*3`` values) plus that of the vertical one.
    """
    (pdx, pdy), (tdx, tdy) = _differences(prediction), _differences(target)
    return (_wmean(tf.abs(pdx - tdx), weight, (0, 0, 0, 1))
            + _wmean(tf.abs(pdy - tdy), weight, (0, 1, 0, 0)))


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


def census_loss(prediction, target, weight=None):
    """Mean soft Hamming distance between the census signatures of two ``[B, H, W, 3]`` tensors.

    Per pixel (at least ``CENSUS_RADIUS`` from the border) and neighbour, ``e^2 / (0.1 + e^2)``
    with ``e`` the difference of the two soft signs; the mean over pixels and neighbours.
    """
    e = _census(prediction) - _census(target)
    r = CENSUS_RADIUS
    return _wmean(tf.square(e) / (HAMMING_EPS + tf.square(e)), weight, (r, r, r, r))


def _image_loss(prediction, target, train_config, weight=None):
    """Reconstruction plus the weighted edge terms, on ``[B, H, W, 3]`` tensors, each
    pixel weighted by ``weight [B, H, W]`` if given."""
    loss = reconstruction_loss(prediction, target, train_config.loss, weight)
    if train_config.gradient_weight > 0:
        loss += train_config.gradient_weight * gradient_loss(prediction, target, weight)
    if train_config.census_weight > 0:
        loss += train_config.census_weight * census_loss(prediction, target, weight)
    return loss


def _frame_weights(masses, example_weight, target):
    """Each frame's per-pixel weight ``[B, H, W]`` for the frame and warp terms: twice its
    share of the blend (``masses [B, H, W, 2]``) times the triplet's ``example_weight
    [B]``; None for a factor that is absent (both absent: the plain mean)."""
    if masses is None and example_weight is None:
        return [None, None]
    if masses is None:
        ones = tf.ones_like(target[..., 0])
        shares = [ones, ones]  # [B, H, W] each
    else:
        shares = [2.0 * masses[..., j] for j in range(2)]
    if example_weight is None:
        return shares
    return [share * example_weight[:, None, None] for share in shares]


def frame_loss(blends, target, train_config, masses=None, example_weight=None):
    """The image loss of each frame's own blend, the mean over the two frames.

    Args:
      blends: ``[B, H, W, 2, 3]`` (:func:`vidcorr.model.kernels.frame_blends`).
      target: true middle frames, ``[B, H, W, 3]``.
      train_config: its ``loss``, ``gradient_weight`` and ``census_weight`` apply.
      masses: optional ``[B, H, W, 2]``, each frame's share of the blend
        (:func:`vidcorr.model.kernels.frame_masses`): frame j's loss at a pixel is then
        weighted by ``2 m_j``, so a frame the blend does not use there (occluded) is not
        asked to reconstruct it, and equal shares give the unweighted loss.
      example_weight: optional ``[B]``, each triplet's weight (the mean stays over the
        whole batch, so weight 0 takes a triplet out of the term without renormalising).

    Returns:
      A scalar tensor.
    """
    weights = _frame_weights(masses, example_weight, target)
    return 0.5 * (_image_loss(blends[..., 0, :], target, train_config, weights[0])
                  + _image_loss(blends[..., 1, :], target, train_config, weights[1]))


def symmetry_loss(offsets):
    """Mean over pixels of ``|dx_t + dx_t2| + |dy_t + dy_t2|``, offsets ``[B, H, W, 2, 2]``
    (frame, then ``(dx, dy)``; :func:`vidcorr.model.kernels.frame_offsets`), in pixels."""
    return tf.reduce_mean(tf.reduce_sum(tf.abs(offsets[..., 0, :] + offsets[..., 1, :]), axis=-1))


def _neighbour_steps(values, axis):
    """``values[p + e_axis] - values[p]`` for ``axis`` 1 (rows) or 2 (columns), on tensors
    or arrays of rank 4 or more."""
    if axis == 2:
        return values[:, :, 1:] - values[:, :, :-1]
    return values[:, 1:] - values[:, :-1]


def smoothness_loss(offsets, image, edge):
    """Edge-aware first-order smoothness of the two frames' kernel centroids.

    Between each pair of horizontal and of vertical neighbours, the L1 difference of
    each frame's ``(dx, dy)`` (summed over the two components, averaged over the two
    frames), weighted by ``exp(-edge * mean_c |image step|)`` so that the offsets may
    change across the image's edges; the mean of the horizontal and vertical means.

    Args:
      offsets: ``[B, H, W, 2, 2]`` (:func:`vidcorr.model.kernels.frame_offsets`), pixels.
      image: ``[B, H, W, 3]`` in [0, 1], the frame the offsets live on (the middle one).
      edge: how fast the weight falls with the image step (0: plain smoothness).

    Returns:
      A scalar tensor.
    """
    image = tf.convert_to_tensor(image)
    means = []
    for axis in (2, 1):  # horizontal, then vertical neighbours
        gap = 0.5 * tf.reduce_sum(tf.abs(_neighbour_steps(offsets, axis)), axis=[-2, -1])
        image_step = tf.reduce_mean(tf.abs(_neighbour_steps(image, axis)), axis=-1)
        means.append(tf.reduce_mean(tf.exp(-edge * image_step) * gap))  # gap: [B, H', W']
    return 0.5 * (means[0] + means[1])


def _per_triplet(train_config, layered):
    """Each triplet's weight in the frame and warp terms ``[B]``: 1 for a layered one,
    ``train.frame_real_weight`` for a real one; None when that is 1 (every triplet alike)."""
    real = train_config.frame_real_weight
    if real == 1.0:
        return None
    if layered is None:
        raise ValueError("train.frame_real_weight needs each triplet's kind (layered or real)")
    return real + (1.0 - real) * layered


def training_loss(prediction, target, train_config, blends=None, offsets=None, masses=None,
                  warps=None, layered=None):
    """The loss a training config asks for: reconstruction plus the weighted terms.

    Args:
      prediction: predicted middle frames, ``[B, H, W, 3]``.
      target: true middle frames, ``[B, H, W, 3]``.
      train_config: a :class:`vidcorr.model.config.TrainConfig` (``loss``, ``gradient_weight``,
        ``census_weight``, ``frame_weight``, ``symmetry_weight``, ``smooth_weight``,
        ``warp_weight``).
      blends: each frame's own blend ``[B, H, W, 2, 3]``; needed when ``frame_weight`` > 0.
      offsets: each frame's kernel centroid ``[B, H, W, 2, 2]``; needed when
        ``symmetry_weight`` or ``smooth_weight`` > 0.
      masses: each frame's share of the blend ``[B, H, W, 2]`` (no gradient); needed when
        ``frame_mass`` is set. It weighs the frame and the warp terms.
      warps: each frame warped by its own kernel centroid ``[B, H, W, 2, 3]``
        (:func:`vidcorr.model.warping.warp_frames`); needed when ``warp_weight`` > 0.
        Its term is :func:`frame_loss` of the warped frames.
      layered: ``[B]``, 1 for a layered training triplet and 0 for a real one; needed
        when ``frame_real_weight`` < 1, which then weighs the frame and warp terms of
        the real triplets.

    Returns:
      A scalar tensor.

    Raises:
      ValueError: if a weighted term's input is missing.
    """
    loss = _image_loss(prediction, target, train_config)
    shares = masses if train_config.frame_mass else None
    if train_config.frame_mass and masses is None and (
            train_config.frame_weight > 0 or train_config.warp_weight > 0):
        raise ValueError("train.frame_mass needs each frame's share of the blend")
    per_triplet = _per_triplet(train_config, layered)
    # the frame and warp terms: the image loss of each frame's own blend / own warp
    for weight, images, needs in (
            (train_config.frame_weight, blends,
             "frame_weight needs each frame's blend (a kernel head)"),
            (train_config.warp_weight, warps,
             "warp_weight needs the frames warped by the kernels' offsets")):
        if weight > 0:
            if images is None:
                raise ValueError("train." + needs)
            loss += weight * frame_loss(images, target, train_config, shares, per_triplet)
    if train_config.symmetry_weight > 0:
        if offsets is None:
            raise ValueError("train.symmetry_weight needs the kernels' offsets (a kernel head)")
        loss += train_config.symmetry_weight * symmetry_loss(offsets)
    if train_config.smooth_weight > 0:
        if offsets is None:
            raise ValueError("train.smooth_weight needs the kernels' offsets (a kernel head)")
        loss += train_config.smooth_weight * smoothness_loss(offsets, target,
                                                             train_config.smooth_edge)
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
