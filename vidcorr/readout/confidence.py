"""How much to trust a match: the sensitivity's peak ratio times the local texture.

The network's sensitivity always has a peak, even where the image has nothing
to match: on a flat region the output depends on the frames only through the
adaptive kernel's blend weights, whose pattern is as peaked there as anywhere.
So the peak ratio ``1 - second / peak`` alone calls matches on a constant image
confident. A match is only as good as the texture around it: a texture-less
window (or an edge, the aperture problem) fits many displacements equally well.

The texture measure is the classic one of Shi and Tomasi: the smaller
eigenvalue ``lambda_min`` of the structure tensor ``J = sum_w grad I grad I^T``
(box window ``w`` of ``2 radius + 1`` pixels; gray values in [0, 1]), mapped
to [0, 1) as ``lambda_min / (lambda_min + TEXTURE_SCALE)``. ``TEXTURE_SCALE``
is the value of a gradient of a quarter grey level (of 255) per pixel in every
direction: half-way textured. ``benchmarks/confidence_study.py`` chose it: of
the scales (2, 1, 0.5, 0.25 grey levels)^2 it is the one whose confidence
ranks the matches of both evaluation pairs best (acc@1 of the most confident
quarter: Motorcycle 0.510 against 0.504 for the peak ratio alone, Grove3 0.509
against 0.495); larger scales penalise real but weak texture. The match's
confidence is

    confidence = (1 - second / peak) * min(texture_t(p1), texture_t2(p3)),

and ``Matcher(min_confidence=c)`` marks matches below ``c`` invalid.
"""

import numpy as np
from scipy import ndimage

__all__ = ["TEXTURE_SCALE", "TEXTURE_RADIUS", "DEFAULT_MIN_CONFIDENCE", "min_eigenvalue", "texture_map",
           "texture_at", "peak_ratio", "match_confidence"]

TEXTURE_SCALE = (0.25 / 255.0) ** 2
TEXTURE_RADIUS = 4  # the structure tensor is summed over (2 r + 1)^2 pixels
# Chosen with benchmarks/confidence_study.py and readout_study.py (docs/readouts.md): it
# keeps nearly every correct match of the real pairs and no match of a flat image.
DEFAULT_MIN_CONFIDENCE = 0.05


def min_eigenvalue(image, radius=TEXTURE_RADIUS):
    """The structure tensor's smaller eigenvalue per pixel (Shi-Tomasi), ``[H, W]`` float64.

    Args:
      image: ``[H, W, 3]`` (or ``[H, W]``) float in [0, 1].
      radius: half-size of the box window.
    """
    gray = np.asarray(image, np.float64)
    if gray.ndim == 3:
        gray = gray.mean(axis=2)  # [H, W]
    gy, gx = np.gradient(gray)  # central differences, [H, W] each
    size = 2 * radius + 1
    jxx = ndimage.uniform_filter(gx * gx, size, mode="nearest")
    jyy = ndimage.uniform_filter(gy * gy, size, mode="nearest")
    jxy = ndimage.uniform_filter(gx * gy, size, mode="nearest")
    half_trace = 0.5 * (jxx + jyy)
    root = np.sqrt(np.maximum(0.25 * (jxx - jyy) ** 2 + jxy ** 2, 0.0))
    return np.maximum(half_trace - root, 0.0)


def texture_map(image, radius=TEXTURE_RADIUS, scale=TEXTURE_SCALE):
    """Texture in [0, 1) per pixel: ``lambda_min / (lambda_min + scale)``.

    Args:
      image: ``[H, W, 3]`` (or ``[H, W]``) float in [0, 1].
      radius: half-size of the box window.
      scale: the ``lambda_min`` that counts as half textured.

    Returns:
      ``[H, W]`` float64.
    """
    lam = min_eigenvalue(image, radius)
    return lam / (lam + scale)


def texture_at(texture, xy):
    """``texture [H, W]`` at the nearest pixels of ``xy [N, 2]`` (x, y), clamped to the image."""
    h, w = texture.shape
    x = np.clip(np.rint(xy[:, 0]).astype(int), 0, w - 1)
    y = np.clip(np.rint(xy[:, 1]).astype(int), 0, h - 1)
    return texture[y, x]


def peak_ratio(peak, second):
    """``1 - second / peak`` per frame (0 where the peak is 0), the smaller of the two frames.

    Args:
      peak: ``[N, 2]`` the sensitivity's maximum in frame t and frame t+2.
      second: ``[N, 2]`` the largest value outside the peak's radius.

    Returns:
      ``[N]`` in [0, 1].
    """
    peak, second = np.asarray(peak, np.float64), np.asarray(second, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(peak > 0, 1.0 - second / peak, 0.0)
    return np.clip(ratio, 0.0, 1.0).min(axis=1)


def match_confidence(ratio, frame_t, frame_t2, pos, radius=TEXTURE_RADIUS):
    """The confidence of each match: peak ratio times the texture at both ends.

    Args:
      ratio: ``[N]`` from :func:`peak_ratio`.
      frame_t: ``[H, W, 3]`` float in [0, 1].
      frame_t2: the same for frame t+2.
      pos: ``[N, 2 frames, (x, y)]`` the matches in frame t and frame t+2.
      radius: the texture window's half-size.

    Returns:
      ``[N]`` in [0, 1].
    """
    tex = np.minimum(texture_at(texture_map(frame_t, radius), pos[:, 0]),
                     texture_at(texture_map(frame_t2, radius), pos[:, 1]))
    return np.asarray(ratio, np.float64) * tex
