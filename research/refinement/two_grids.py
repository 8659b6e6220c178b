"""Does a second sampling grid, half a pixel off, cancel a sampler's bias?

The same measurement as ``sampler_minimum.py`` (the whole-image least-squares minimum of
two frames of a translating texture, grey, 144x192, Nelder-Mead from the truth), with the
cost summed over one grid of middle-frame points or over two: the pixels and the pixels
moved by (0.5, 0.5). A sampler's shift at a fraction f of a pixel is odd about f = 1/2
and nearly periodic, so the second grid, at f + 1/2, sees it with the other sign. Printed:
the minimum's offset from the truth. Not used by the package (yet): a lead for the
refinement's data term (docs/refinement.md).

    python research/refinement/two_grids.py
"""

import os
import sys

import numpy as np
from scipy import optimize

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import sampler_minimum as sm  # noqa: E402

MOTIONS = sm.MOTIONS + [(0.3, 0.8), (2.7, -1.1)]
SAMPLERS = ["bilinear", "bspline_noprefilter"]  # the package's bilinear and bspline


def main():
    h, w = sm.H, sm.W
    m = max(h, w) // 2
    yy, xx = np.mgrid[16:h - 16, 16:w - 16].astype(np.float64)
    print("| motion (x, y) px | sampler | one grid: minimum - truth | two grids: minimum - truth |")
    print("|---|---|---|---|")
    for v in MOTIONS:
        clip = sm.LayeredClip([sm.Layer(sm._texture("astronaut", h + 2 * m, w + 2 * m),
                                        sm.LayerMotion(velocity=v), (w / 2, h / 2),
                                        offset=(m, m))], h, w, 2)
        a, b = (clip.frame(t).astype(np.float64).mean(2) for t in (0, 1))
        for kind in SAMPLERS:
            cells = []
            for grids in ((0.0,), (0.0, 0.5)):
                def cost(u, grids=grids):
                    return sum(np.sum((sm.sample(b, xx + g + u[0] / 2, yy + g + u[1] / 2, kind)
                                       - sm.sample(a, xx + g - u[0] / 2, yy + g - u[1] / 2,
                                                   kind)) ** 2) for g in grids)
                r = optimize.minimize(cost, np.array(v), method="Nelder-Mead",
                                      options=dict(xatol=1e-5, fatol=1e-9))
                cells.append("(%+.4f, %+.4f)" % tuple(r.x - np.array(v)))
            print("| (%.3f, %.3f) | %s | %s | %s |" % (v[0], v[1], kind, cells[0], cells[1]),
                  flush=True)


if __name__ == "__main__":
    main()
