"""Choosing the blend-weight read-out's settings by measurement, on the ground-truth pairs.

Three tables, all with the kernel read-out (``Matcher(readout="kernel")``) at the
evaluation's size (384 columns) and scored on the stride grid:

1. position statistic and pyramid settings: the weights' centroid, the centroid of
   the 3x3 taps around the largest, or the largest tap; the softmax temperature;
   passes per level; the median and the confidence-weighted Gaussian on the coarse
   levels' dense fields. Accuracy at 1/2/5 px, the most confident quarter and half,
   median error and seconds per pair (graphs built);
2. (the confidence cue study, which swapped the matcher's host-side confidence
   function, is not run any more: the confidence is in the match's graph since the
   read-out became one graph. Its table in docs/readouts.md was measured with this
   script as of commit 6895f3e: ``git show 6895f3e:benchmarks/readout_study.py``);
3. ``min_confidence``: per threshold, the share kept, the kept ones' accuracy and
   the share of the correct ones (error <= 5 px) dropped; and on texture-less pairs
   (constant grey, a smooth ramp), where every match should go.

    python benchmarks/readout_study.py [--checkpoint RUN] [--stride 8] [--quick]
"""

import argparse
import json
import time

import numpy as np

from vidcorr.evaluation.groundtruth import EVAL_WIDTH, builtin_pair
from vidcorr.evaluation.metrics import endpoint_errors, match_metrics
from vidcorr.readout.matching import Matcher

VARIANTS = [
    {"statistic": "centroid", "temperature": 1.0, "passes": 1, "smooth": 5, "sigma": 0},
    {"statistic": "local", "temperature": 1.0, "passes": 1, "smooth": 5, "sigma": 0},
    {"statistic": "argmax", "temperature": 1.0, "passes": 1, "smooth": 5, "sigma": 0},
    {"statistic": "centroid", "temperature": 1.0, "passes": 1, "smooth": 0, "sigma": 0},
    {"statistic": "centroid", "temperature": 1.0, "passes": 2, "smooth": 5, "sigma": 0},
    {"statistic": "centroid", "temperature": 1.0, "passes": 3, "smooth": 5, "sigma": 0},
    {"statistic": "centroid", "temperature": 1.5, "passes": 2, "smooth": 9, "sigma": 0},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 9, "sigma": 3},
    {"statistic": "centroid", "temperature": 1.5, "passes": 2, "smooth": 9, "sigma": 3},
    {"statistic": "centroid", "temperature": 1.5, "passes": 3, "smooth": 9, "sigma": 3},
    {"statistic": "local", "temperature": 1.5, "passes": 2, "smooth": 9, "sigma": 3},
    {"statistic": "centroid", "temperature": 1.5, "passes": 2, "smooth": 9, "sigma": 3,
     "levels": 4},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 0, "sigma": 3},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 0, "sigma": 4},
    {"statistic": "centroid", "temperature": 2.0, "passes": 3, "smooth": 0, "sigma": 4},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 5, "sigma": 4},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 0, "sigma": 8},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 0, "sigma": 12},
    {"statistic": "centroid", "temperature": 2.0, "passes": 2, "smooth": 0, "sigma": 10,
     "upsample": 2},
]


THRESHOLDS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)


def _flat_pairs(height=128, width=192):
    grey = np.full((height, width, 3), 0.5, np.float32)
    ramp = np.tile(np.linspace(0.2, 0.8, width, dtype=np.float32), (height, 1))
    return {"constant grey": (grey, grey), "smooth ramp": (np.dstack([ramp] * 3),) * 2}


def _score(matcher, pair, stride):
    matcher.match(pair.image1, pair.image2, stride=stride)  # builds the graphs
    start = time.time()
    m = matcher.match(pair.image1, pair.image2, stride=stride)
    seconds = time.time() - start
    return m, match_metrics(m.p1, m.p3, pair.truth, m.grid, confidence=m.confidence), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="run or model (default: the packaged model)")
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--pairs", default="motorcycle,grove3")
    parser.add_argument("--quick", action="store_true", help="only the default settings")
    args = parser.parse_args()
    pairs = [builtin_pair(n).resized(EVAL_WIDTH) for n in args.pairs.split(",") if n]
    cols = ("acc@1", "acc@2", "acc@5", "acc@1/25%", "acc@5/25%", "acc@1/50%", "median_epe")

    print("## 1. statistic and pyramid settings (stride %d)\n" % args.stride)
    print("| settings | pair | " + " | ".join(cols) + " | seconds |")
    print("|---|---|" + "---|" * (len(cols) + 1))
    for variant in ([{}] if args.quick else [{}] + VARIANTS):
        matcher = Matcher(args.checkpoint, readout="kernel", min_confidence=0, **variant)
        for pair in pairs:
            _, r, seconds = _score(matcher, pair, args.stride)
            print("| %s | %s | %s | %.2f |" % (json.dumps(variant) if variant else "defaults",
                                               pair.name, " | ".join("%.3f" % r[c] for c in cols),
                                               seconds), flush=True)
        matcher.close()

    print("\n## 3. min_confidence\n")
    print("| pair | min_confidence | kept | acc@1 kept | acc@5 kept | correct dropped |")
    print("|---|---|---|---|---|---|")
    matcher = Matcher(args.checkpoint, readout="kernel", min_confidence=0)
    for pair in pairs:
        m, _, _ = _score(matcher, pair, args.stride)
        errors, scored = endpoint_errors(m.p1, m.p3, pair.truth)
        conf, good = m.confidence[scored], errors <= 5
        for t in THRESHOLDS:
            keep = conf >= t
            print("| %s | %g | %.3f | %.3f | %.3f | %.3f |" % (
                pair.name, t, keep.mean(), np.mean(errors[keep] <= 1) if keep.any() else np.nan,
                np.mean(errors[keep] <= 5) if keep.any() else np.nan,
                np.mean(~keep[good]) if good.any() else np.nan), flush=True)
    for name, (a, b) in _flat_pairs().items():
        conf = matcher.match(a, b, stride=args.stride).confidence
        print("| %s | %s |" % (name, " | ".join("kept %.3f at %g" % (np.mean(conf >= t), t)
                                                for t in THRESHOLDS)))
    matcher.close()


if __name__ == "__main__":
    main()
