"""Where two frames agree best under each sampler: the whole-image least-squares minimum.

For a background-only clip of the track study's *astronaut* texture translating by a
motion u between two frames (grey, 144x192), the flow u' minimising
``sum (I3(p + u'/2) - I1(p - u'/2))^2`` over the interior (Nelder-Mead from the truth),
each frame read by one sampler: bilinear, Keys' bicubic (a = -0.5), the cubic B-spline
with and without its prefilter (scipy), the quintic spline. Printed: u' - u. No
refinement is involved: this is the samplers' own bias
(research/refinement/sampler_2026-12-06.md).

    python research/refinement/sampler_minimum.py
"""

import os
import sys

import numpy as np
from scipy import ndimage, optimize

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from track_study import _texture  # noqa: E402

from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion  # noqa: E402

H, W = 144, 192
MOTIONS = [(1.368, 0.684), (0.5, 0.25), (1.5, 0.0)]
SAMPLERS = ["bilinear", "keys", "bspline", "bspline_noprefilter", "quintic"]


def keys(img, x, y):
    """Keys' cubic convolution (a = -0.5), the border repeated."""
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0

    def k(t):
        t, a = np.abs(t), -0.5
        return np.where(t <= 1, (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1,
                        np.where(t < 2, a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a, 0))

    out = 0
    for j in range(-1, 3):
        for i in range(-1, 3):
            out = out + k(fx - i) * k(fy - j) * img[np.clip(y0 + j, 0, img.shape[0] - 1),
                                                    np.clip(x0 + i, 0, img.shape[1] - 1)]
    return out


def sample(img, x, y, kind):
    if kind == "keys":
        return keys(img, x, y)
    if kind == "bspline_noprefilter":
        return ndimage.map_coordinates(img, [y, x], order=3, prefilter=False, mode="nearest")
    order = {"bilinear": 1, "bspline": 3, "quintic": 5}[kind]
    return ndimage.map_coordinates(img, [y, x], order=order, mode="nearest")


def main():
    m = max(H, W) // 2
    yy, xx = np.mgrid[16:H - 16, 16:W - 16].astype(np.float64)
    print("| motion (x, y) px | sampler | minimum - truth (x, y) px |")
    print("|---|---|---|")
    for v in MOTIONS:
        clip = LayeredClip([Layer(_texture("astronaut", H + 2 * m, W + 2 * m),
                                  LayerMotion(velocity=v), (W / 2, H / 2), offset=(m, m))],
                           H, W, 2)
        a, b = (clip.frame(t).astype(np.float64).mean(2) for t in (0, 1))
        for kind in SAMPLERS:
            def cost(u):
                return np.sum((sample(b, xx + u[0] / 2, yy + u[1] / 2, kind)
                               - sample(a, xx - u[0] / 2, yy - u[1] / 2, kind)) ** 2)
            r = optimize.minimize(cost, np.array(v), method="Nelder-Mead",
                                  options=dict(xatol=1e-5, fatol=1e-9))
            d = r.x - np.array(v)
            print("| (%.3f, %.3f) | %s | (%+.4f, %+.4f) |" % (v[0], v[1], kind, d[0], d[1]),
                  flush=True)


if __name__ == "__main__":
    main()
