"""The refinement's bias from its sampler: pure translations, started from the exact field.

A background-only clip of the track study's *astronaut* texture (144x192, rendered as the
study renders, ``vidcorr.tracking.clips``) translating by each of a few motions between
two frames. Every pixel's match starts exact (held about its midpoint, as the read-out
gives it); the median signed and absolute error of the refined flow (every second pixel,
16 px from the borders) show where the energy's minimum lies. Motions whose half is a
whole pixel or half a pixel sample both frames at the same fraction (no bias by symmetry);
the others show the sampler's shift.

    python research/refinement/sampler_bias.py     # output: sampler_2026-12-06.md
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from track_study import _texture  # noqa: E402

from vidcorr.readout.options import MatchOptions  # noqa: E402
from vidcorr.readout.refinement import RefineGraph  # noqa: E402
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion  # noqa: E402

H, W = 144, 192
MOTIONS = [(2.0, 0.0), (1.0, 0.0), (1.5, 0.0), (1.368, 0.684), (0.5, 0.25), (0.684, 0.342)]


def main():
    m = max(H, W) // 2
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    grid = np.stack([xx, yy], -1)
    print("| sampler | motion (x, y) px | median signed error (x, y) px | median error px |")
    print("|---|---|---|---|")
    for sampler in ("bilinear", "bspline", "spline"):
        graph = RefineGraph(H, W, MatchOptions(refine_sampler=sampler), threads=2)
        for motion in MOTIONS:
            clip = LayeredClip([Layer(_texture("astronaut", H + 2 * m, W + 2 * m),
                                      LayerMotion(velocity=motion), (W / 2, H / 2),
                                      offset=(m, m))], H, W, 2)
            a, b = (clip.frame(t).astype(np.float32) / 255 for t in (0, 1))
            u = np.array(motion)
            out = graph.run(a, b, np.stack([grid - u / 2, grid + u / 2], 2))["position"]
            e = (out[:, :, 1] - out[:, :, 0])[16:-16:2, 16:-16:2].reshape(-1, 2) - u
            med = np.median(e, 0)
            print("| %s | (%.3f, %.3f) | (%+.4f, %+.4f) | %.4f |" % (
                sampler, motion[0], motion[1], med[0], med[1],
                np.median(np.linalg.norm(e, axis=1))), flush=True)
        graph.close()


if __name__ == "__main__":
    main()
