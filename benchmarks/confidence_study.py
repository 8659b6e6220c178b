"""Choosing ``min_confidence``: what each threshold keeps on real pairs and on flat images.

For the ground-truth pairs (at 384 columns, the evaluation's size) it matches
on the stride grid with every match kept (``min_confidence=0``) and prints,
per threshold, the share of matches kept, the accuracy of the kept ones and
the share of the correct ones (error <= 5 px) that the threshold throws away;
then, for the same pairs, the accuracy of the most confident 25 / 50 % by the
peak ratio alone against the peak ratio times the texture (the confidence);
for several texture scales; then the same thresholds on texture-less pairs (a constant grey image, and a
smooth gradient), where every match should be dropped.

    python benchmarks/confidence_study.py [--checkpoint RUN] [--stride 8]
"""

import argparse

import numpy as np

from vidcorr.readout.confidence import TEXTURE_SCALE, min_eigenvalue, texture_at
from vidcorr.readout.pyramid import grid_points
from vidcorr.evaluation.groundtruth import EVAL_WIDTH, builtin_pair
from vidcorr.readout.matching import Matcher
from vidcorr.evaluation.metrics import coverage_accuracy, endpoint_errors

THRESHOLDS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
SCALES = tuple((g / 255.0) ** 2 for g in (0.25, 0.5, 1.0, 2.0))  # grey levels per pixel


def _flat_pairs(height=128, width=192):
    grey = np.full((height, width, 3), 0.5, np.float32)
    ramp = np.tile(np.linspace(0.2, 0.8, width, dtype=np.float32), (height, 1))
    return {"constant grey": (grey, grey), "smooth ramp": (np.dstack([ramp] * 3),) * 2}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="run or model (default: the packaged model)")
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--pairs", default="motorcycle,grove3")
    args = parser.parse_args()
    matcher = Matcher(args.checkpoint, min_confidence=0.0)
    print("| pair | min_confidence | kept | acc@1 kept | acc@5 kept | correct dropped |")
    print("|---|---|---|---|---|---|")
    ranking = []
    for name in [p for p in args.pairs.split(",") if p]:
        pair = builtin_pair(name).resized(EVAL_WIDTH)
        h, w = pair.image1.shape[:2]
        m = matcher.match(pair.image1, pair.image2, stride=args.stride)
        errors, scored = endpoint_errors(m.p1, m.p3, pair.truth)
        conf = m.confidence[scored]
        lam = np.minimum(texture_at(min_eigenvalue(pair.image1), m.p1),
                         texture_at(min_eigenvalue(pair.image2), m.p3))[scored]
        tex = lam / (lam + TEXTURE_SCALE)
        ratio = conf / np.maximum(tex, 1e-12)
        good = errors <= 5
        for t in THRESHOLDS:
            keep = conf >= t
            print("| %s | %g | %.3f | %.3f | %.3f | %.3f |" % (
                name, t, keep.mean(), np.mean(errors[keep] <= 1) if keep.any() else np.nan,
                np.mean(errors[keep] <= 5) if keep.any() else np.nan,
                np.mean(~keep[good]) if good.any() else np.nan))
        scores = [("peak ratio", ratio)] + [
            ("ratio x texture, scale (%.2g/255)^2" % (255 * np.sqrt(sc)), ratio * lam / (lam + sc))
            for sc in SCALES]
        for label, score in scores:
            cov = coverage_accuracy(errors, score)
            columns = sorted(cov)
            ranking.append("| %s | %s | %s |" % (name, label, " | ".join(
                "%.3f" % cov[k] for k in columns)))
    print("\n| pair | ranking | %s |" % " | ".join(columns))
    print("|---|---|%s" % ("---|" * len(columns)))
    print("\n".join(ranking))
    print("\n| texture-less pair | mean confidence | %s |"
          % " | ".join("kept at %g" % t for t in THRESHOLDS))
    print("|---|---|%s" % ("---|" * len(THRESHOLDS)))
    for name, (a, b) in _flat_pairs().items():
        m = matcher.match(a, b, stride=args.stride)
        print("| %s | %.4f | %s |" % (name, m.confidence.mean(), " | ".join(
            "%.3f" % np.mean(m.confidence >= t) for t in THRESHOLDS)))
    matcher.close()


if __name__ == "__main__":
    main()
