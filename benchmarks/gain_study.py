"""How much of the true motion a model's kernels read, by the size of the motion.

The kernel read-out at one level and one pass (no pyramid, no second pass that
would hide a bias), on a ground-truth pair at the evaluation size: for each grid
point, the read flow (position in frame t+2 minus position in frame t, from the
blend weights' centroids) against the true flow at the read position in frame t.
Per bin of true flow length it prints the *gain* ``sum(read . true) / sum(true . true)``
(1: the kernels place motion where it is; 0: they read none) and acc@1, for each
softmax temperature asked for. A model that reads motion as a fraction of itself
needs more pyramid passes and loses precision; this is the number the training
levers of issue 23 try to raise.

``--prewarp 0.5,0.9`` also reads the pair warped toward the middle frame by that
fraction of the true motion (frame t at ``p - a f/2``, frame t+2 at ``p + a f/2``, f
the ground truth with unknown pixels set to 0 and smoothed by a Gaussian of one pixel),
as a later pass or level of the read-out sees it: the gain is then that of the whole
read (warp plus residual), so a model that reads small residuals as none stays at
about ``a``.

    python benchmarks/gain_study.py --checkpoint default=vidcorr/models/default
        [--checkpoint r5=runs/ranking/r5_frames] [--pair grove3] [--temperatures 1,2]
        [--prewarp 0.5,0.9]
"""

import argparse
import os
import sys

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.evaluation.groundtruth import builtin_pair  # noqa: E402
from vidcorr.readout.kernel.graph import LevelGraph  # noqa: E402
from vidcorr.readout.inference import find_model, fold_batch_norm  # noqa: E402
from vidcorr.readout.pyramid import grid_points  # noqa: E402

BINS = ((0, 1), (1, 2), (2, 3), (3, 5), (5, 9))  # true flow length t -> t+2, pixels


def gains(read, true, bins=BINS):
    """Per bin of ``|true|``: ``(gain, acc@1, count)``; ``read``, ``true`` ``[N, 2]``."""
    length = np.linalg.norm(true, axis=-1)
    error = np.linalg.norm(read - true, axis=-1)
    out = []
    for lo, hi in bins:
        m = (length >= lo) & (length < hi)
        if not m.any():
            out.append((float("nan"), float("nan"), 0))
            continue
        gain = float(np.sum(read[m] * true[m]) / max(np.sum(true[m] ** 2), 1e-12))
        out.append((gain, float(np.mean(error[m] < 1.0)), int(m.sum())))
    return out


def truth_fields(pair, fraction):
    """The fields that warp ``pair`` toward its middle frame by ``fraction`` of the true
    motion: ``(d1, d3)``, ``[H, W, 2]`` each (unknown truth 0, Gaussian of 1 px)."""
    flow = np.where(pair.truth.valid[..., None], np.nan_to_num(pair.truth.flow), 0.0)
    flow = np.stack([ndimage.gaussian_filter(flow[..., c].astype(np.float64), 1.0)
                     for c in range(2)], axis=-1)  # [H, W, 2]
    half = (0.5 * fraction * flow).astype(np.float32)
    return -half, half


def study(path, pair, stride, temperature, prewarp=0.0):
    """Read and true flows ``[N, 2]`` at the valid grid points of ``pair``, the pair
    warped by ``prewarp`` of the true motion first (:func:`truth_fields`)."""
    prefix, spec, values = find_model(path)
    height, width = pair.image1.shape[:2]
    graph = LevelGraph(spec, height, width, fold_batch_norm(values), temperature=temperature)
    fields = truth_fields(pair, prewarp) if prewarp else None
    position = graph.run(pair.image1, pair.image2, fields=fields)["position"]  # [H, W, 2, 2]
    points = grid_points(height, width, stride, stride // 2)  # [N, 2] (x, y)
    at = position[points[:, 1], points[:, 0]]  # [N, 2, 2]
    read = at[:, 1] - at[:, 0]  # [N, 2]
    x1 = np.clip(np.round(at[:, 0]).astype(int), 0, [width - 1, height - 1])
    true = pair.truth.flow[x1[:, 1], x1[:, 0]]
    valid = pair.truth.valid[x1[:, 1], x1[:, 0]] & np.all(np.isfinite(true), axis=-1)
    return read[valid], true[valid]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", action="append", required=True,
                        help="LABEL=PATH or PATH (repeatable)")
    parser.add_argument("--pair", default="grove3")
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--temperatures", default="1,2")
    parser.add_argument("--prewarp", default="0",
                        help="comma list of fractions of the true motion to warp by first")
    args = parser.parse_args(argv)
    prewarps = [float(a) for a in args.prewarp.split(",")]
    pair = builtin_pair(args.pair).resized()
    print("%s at %dx%d, stride %d, one level, one pass; gain and acc@1 per bin of true "
          "flow length (px):" % (args.pair, pair.image1.shape[1], pair.image1.shape[0],
                                 args.stride))
    print("| model | T | prewarp | " + " | ".join("%d-%d px" % b for b in BINS)
          + " | all acc@1 |")
    print("|---|---|---|" + "---|" * (len(BINS) + 1))
    for item in args.checkpoint:
        label, _, path = item.rpartition("=")
        for temperature in [float(t) for t in args.temperatures.split(",")]:
            for prewarp in prewarps:
                read, true = study(path, pair, args.stride, temperature, prewarp)
                cells = ["%.2f / %.2f (%d)" % g for g in gains(read, true)]
                error = np.linalg.norm(read - true, axis=-1)
                print("| %s | %g | %g | %s | %.3f |" % (label or path, temperature, prewarp,
                                                        " | ".join(cells), np.mean(error < 1.0)))


if __name__ == "__main__":
    main()
