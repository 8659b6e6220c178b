"""Sub-pixel positions of the sensitivity read-out's peaks, from the 3x3 values around them.

The sensitivity graph (:mod:`vidcorr.readout.sensitivity.gradients`) returns each map's
integer peak and its 3x3 neighbourhood; ``MatchOptions.refine`` picks how the
matcher moves the peak between pixels: ``centroid`` (the default) or
``quadratic`` (``benchmarks/precision_study.py`` compares them).
"""

import numpy as np

__all__ = ["refine_peaks", "centroid_peaks", "REFINEMENTS"]


def refine_peaks(peak_xy, patch, width, height):
    """Sub-pixel peaks by a separable quadratic fit on the 3x3 neighbourhood.

    Args:
      peak_xy: ``[..., 2]`` integer (x, y) peaks.
      patch: ``[..., 9]`` the 3x3 values around each peak, row-major.
      width: map width (peaks on the border are not refined across it).
      height: map height.

    Returns:
      ``[..., 2]`` float (x, y), each moved by at most half a pixel.
    """
    p = patch.reshape(patch.shape[:-1] + (3, 3)).astype(np.float64)
    centre = p[..., 1, 1]

    def offset(minus, plus, lo_ok, hi_ok):
        curv = minus - 2 * centre + plus
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(curv < 0, 0.5 * (minus - plus) / curv, 0.0)
        return np.where(lo_ok & hi_ok, np.clip(d, -0.5, 0.5), 0.0)

    x, y = peak_xy[..., 0], peak_xy[..., 1]
    dx = offset(p[..., 1, 0], p[..., 1, 2], x > 0, x < width - 1)
    dy = offset(p[..., 0, 1], p[..., 2, 1], y > 0, y < height - 1)
    return np.stack([x + dx, y + dy], axis=-1)


def centroid_peaks(peak_xy, patch, width, height):
    """Sub-pixel peaks as the centroid of the 3x3 neighbourhood above its minimum.

    Args:
      peak_xy: ``[..., 2]`` integer (x, y) peaks.
      patch: ``[..., 9]`` the 3x3 values around each peak, row-major.
      width: map width (peaks on the border are not moved across it).
      height: map height.

    Returns:
      ``[..., 2]`` float (x, y), each moved by less than one pixel.
    """
    p = patch.reshape(patch.shape[:-1] + (3, 3)).astype(np.float64)
    p = p - p.min(axis=(-1, -2), keepdims=True)
    total = np.maximum(p.sum(axis=(-1, -2)), 1e-12)
    off = np.array([-1.0, 0.0, 1.0])
    dx = (p.sum(axis=-2) * off).sum(-1) / total
    dy = (p.sum(axis=-1) * off).sum(-1) / total
    x, y = peak_xy[..., 0], peak_xy[..., 1]
    dx = np.where((x > 0) & (x < width - 1), dx, 0.0)
    dy = np.where((y > 0) & (y < height - 1), dy, 0.0)
    return np.stack([x + dx, y + dy], axis=-1)


REFINEMENTS = {"centroid": centroid_peaks, "quadratic": refine_peaks}
