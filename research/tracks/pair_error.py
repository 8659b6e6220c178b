"""One pair's precision on the track study's *translate* clip: vidcorr against pyramidal LK.

For a few pairs (frame t, frame t + gap) of the clip's background (away from the disc and
16 px from the borders, every 4th pixel), the signed and absolute error of each method's
displacement from frame t's pixels against the clip's true motion: vidcorr's default read-out
inverted to frame t's pixels (``vidcorr.frame_flows``, ``t_to_t2``), the same with the
refinement's B-spline sampler (tracking's default, ``refine_sampler="bspline"``), and OpenCV's
``calcOpticalFlowPyrLK`` (the study's LK tracker's settings, ``lk_params``) on the same
points.

    python research/tracks/pair_error.py            # needs the eval extra (OpenCV)
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from track_study import clips  # noqa: E402

import cv2  # noqa: E402
from vidcorr.evaluation.tracks import lk_params  # noqa: E402
from vidcorr.readout.matching import Matcher  # noqa: E402
from vidcorr.tracking.inversion import frame_flows  # noqa: E402

H, W = 288, 384
PAIRS = [(0, 1), (10, 1), (8, 8)]


def main():
    clip = clips(H, W, 40)["translate"]
    matchers = [("vidcorr", Matcher(min_confidence=0)),
                ("vidcorr, B-spline sampler", Matcher(min_confidence=0, refine_sampler="bspline"))]
    yy, xx = np.mgrid[16:H - 16:4, 16:W - 16:4]
    pts = np.stack([xx.ravel(), yy.ravel()], -1).astype(np.float64)
    print("| pair | true motion (x, y) px | method | median signed error (x, y) px | "
          "median error px | points |")
    print("|---|---|---|---|---|---|")
    for t, gap in PAIRS:
        bg = clip.layers[0]
        truth = bg.forward(bg.backward(pts, t), t + gap) - pts
        keep = (clip.which_layer(pts, t) == 0) & (clip.which_layer(pts + truth, t + gap) == 0)
        a, b = clip.frame(t), clip.frame(t + gap)
        rows = []
        for name, matcher in matchers:
            flow = frame_flows(matcher.match(a.astype(np.float32) / 255,
                                             b.astype(np.float32) / 255, stride=1))["t_to_t2"]
            ours = flow[pts[:, 1].astype(int), pts[:, 0].astype(int)]
            rows.append((name, ours, np.isfinite(ours).all(1)))
        grey = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in (a, b)]
        moved, status, _ = cv2.calcOpticalFlowPyrLK(
            grey[0], grey[1], pts.astype(np.float32)[:, None], None, **lk_params(cv2))
        lk = moved[:, 0].astype(np.float64) - pts
        for name, est, ok in rows + [("pyramidal LK", lk, status[:, 0] == 1)]:
            ok = ok & keep
            e = est[ok] - truth[ok]
            print("| %d to %d | (%.3f, %.3f) | %s | (%+.4f, %+.4f) | %.4f | %d |" % (
                t, t + gap, truth[ok, 0].mean(), truth[ok, 1].mean(), name, np.median(e[:, 0]),
                np.median(e[:, 1]), np.median(np.linalg.norm(e, axis=1)), ok.sum()), flush=True)


if __name__ == "__main__":
    main()
