"""Synthetic triplets with exact motion: smooth random textures translated sub-pixel.

Frame k of a triplet (k = 0, 1, 2 for t, t+1, t+2) shows the texture moved by
``(k - 1) * velocity``: ``frame_k(p) = T(p - (k - 1) * v)``. So the middle-frame
pixel p is seen at ``p - v`` in frame t and at ``p + v`` in frame t+2, and the
flow from frame t to frame t+2 is ``2 v`` everywhere. Used by the tests and by
``data.synthetic: true`` configs.
"""

import numpy as np
from scipy import ndimage

__all__ = ["smooth_texture", "moving_triplet"]

TEXTURE_SIGMAS = (1.0, 2.0, 4.0)


def smooth_texture(rng, height, width, sigmas=TEXTURE_SIGMAS):
    """A colour texture in [0, 1]: Gaussian-filtered noise at several scales.

    Args:
      rng: a ``numpy.random.RandomState``.
      height: texture height.
      width: texture width.
      sigmas: the filter widths (pixels) of the summed noise layers.

    Returns:
      ``[height, width, 3]`` float64.
    """
    tex = np.zeros((height, width, 3))
    for sigma in sigmas:
        noise = rng.randn(height, width, 3)
        layer = ndimage.gaussian_filter(noise, (sigma, sigma, 0), mode="wrap")
        tex += layer / (layer.std() + 1e-12)
    tex = (tex - tex.min()) / (tex.max() - tex.min() + 1e-12)
    return tex


def moving_triplet(rng, height, width, max_motion=2.0, velocity=None):
    """One triplet of a texture translating at constant sub-pixel velocity.

    Args:
      rng: a ``numpy.random.RandomState``.
      height: frame height.
      width: frame width.
      max_motion: bound of each velocity component (pixels per frame).
      velocity: optional fixed ``(vy, vx)``; random in the bound otherwise.

    Returns:
      ``(frames, velocity)``: ``[3, height, width, 3]`` float32 in [0, 1] and the
      ``(vy, vx)`` motion per frame step.
    """
    if velocity is None:
        velocity = rng.uniform(-max_motion, max_motion, 2)
    velocity = np.asarray(velocity, np.float64)
    margin = int(np.ceil(np.abs(velocity).max())) + 4
    tex = smooth_texture(rng, height + 2 * margin, width + 2 * margin)
    yy, xx = np.meshgrid(np.arange(height) + margin, np.arange(width) + margin, indexing="ij")
    frames = []
    for k in (-1, 0, 1):
        coords = [yy - k * velocity[0], xx - k * velocity[1]]
        frames.append(np.stack([ndimage.map_coordinates(tex[..., c], coords, order=3,
                                                        mode="reflect")
                                for c in range(3)], axis=-1))
    return np.clip(np.stack(frames), 0.0, 1.0).astype(np.float32), velocity
