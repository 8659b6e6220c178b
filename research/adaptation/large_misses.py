"""Where an adapted model misses on the clip's large-motion layered pairs, against the
default model: the foreground ellipse (7 px per frame), the background (4 px per frame),
or near the ellipse's border (within ``--band`` pixels of it in the middle frame).

Same pairs, read-out and scoring as ``gt_layered.py`` (which it imports): a point counts
if it is seen in all three frames; it is a miss when its match is invalid or more than
5 px off in either frame.

    python research/adaptation/large_misses.py --model default= --model adapted=DIR \
        [--options '{"sigma": 0}']
"""

import argparse
import json
import os
import sys

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gt_layered  # noqa: E402  (the study's pairs and scoring)

from vidcorr.readout.matching import Matcher  # noqa: E402


def misses(matcher, clip, stride):
    """``(grid [N, 2], seen [N], miss [N])`` of one pair."""
    f0, f2 = (clip.frame(t) / 255.0 for t in (0, 2))
    m = matcher.match(f0.astype(np.float32), f2.astype(np.float32), stride=stride)
    queries = np.column_stack([np.ones(len(m.grid)), m.grid]).astype(np.float64)
    tracks, visible = clip.truth(queries)
    seen = visible.all(axis=1)
    err = np.maximum(np.linalg.norm(m.p1 - tracks[:, 0], axis=1),
                     np.linalg.norm(m.p3 - tracks[:, 2], axis=1))
    return m.grid, seen, ~(m.valid & (err <= 5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True,
                        help="LABEL=MODEL_DIR (LABEL= for the packaged model); repeatable")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--band", type=float, default=8.0)
    parser.add_argument("--options", default="{}",
                        help="the matcher's options as JSON, e.g. '{\"sigma\": 0}'")
    parser.add_argument("--clip-model", help="an adapted model whose config names the clip "
                        "(default: the first --model with a folder)")
    args = parser.parse_args()
    adapted = [spec.partition("=")[2] for spec in args.model if spec.partition("=")[2]]
    _, _, held = gt_layered.held_back(args.clip_model or adapted[0])
    h, w = held.shape[1:3]
    print("| model | pair | misses: foreground | background, near the border | "
          "background, away | points (fg / near / away) |")
    print("|---|---|---|---|---|---|")
    for spec in args.model:
        label, _, path = spec.partition("=")
        matcher = Matcher(path or None, max_seconds=0, **json.loads(args.options))
        totals = np.zeros(6, np.int64)
        for n in range(args.pairs):
            clip = gt_layered.layered(held, n * len(held) // args.pairs,
                                      gt_layered.MOTIONS["large"])
            grid, seen, miss = misses(matcher, clip, args.stride)
            layer = clip.which_layer(grid.astype(np.float64), 1)  # [N] 0 background, 1 front
            front = np.zeros((h, w), bool)
            yy, xx = np.mgrid[0:h, 0:w]
            front[clip.which_layer(np.column_stack([xx.ravel(), yy.ravel()]).astype(
                np.float64), 1).reshape(h, w) == 1] = True
            near_map = ndimage.distance_transform_edt(~front) <= args.band  # [h, w]
            gx, gy = np.rint(grid).astype(int).T
            near = near_map[np.clip(gy, 0, h - 1), np.clip(gx, 0, w - 1)] & (layer == 0)
            groups = [(layer == 1), near, (layer == 0) & ~near]
            row = [int(np.sum(miss & seen & g)) for g in groups] + \
                  [int(np.sum(seen & g)) for g in groups]
            totals += row
            print("| %s | %d | %d | %d | %d | %d / %d / %d |" % ((label, n) + tuple(row)))
        print("| %s | all | %d | %d | %d | %d / %d / %d |" % ((label,) + tuple(totals)),
              flush=True)
        matcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
