"""Which matches the refinement moves across the 5 px line, and from where.

For each evaluation pair (at ``--width`` columns, stride 8), the default match is made
with and without the refinement; the grid is the same (a middle-frame pixel per grid
point), so each grid point's endpoint error can be compared before and after. It prints
how many valid matches cross 5 px each way, their errors before and after, and their
confidence, and the acc@5 of both.

    python research/refinement/acc5_crossings.py [--pairs grove3,motorcycle] [--width 384]
"""

import argparse

import numpy as np


def _errors(matches, truth):
    from vidcorr.evaluation.metrics import endpoint_errors
    errors, scored = endpoint_errors(matches.p1.reshape(-1, 2), matches.p3.reshape(-1, 2),
                                     truth)
    out = np.full(len(scored), np.nan)
    out[scored] = errors
    return out, matches.valid.reshape(-1), matches.confidence.reshape(-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", default="grove3,motorcycle")
    parser.add_argument("--width", type=int, default=384, help="0: full size")
    parser.add_argument("--threshold", type=float, default=5.0)
    args = parser.parse_args()
    from vidcorr.evaluation.groundtruth import builtin_pair
    from vidcorr.readout.matching import Matcher

    matchers = {"unrefined": Matcher(refine="none"), "refined": Matcher()}
    t = args.threshold
    for name in args.pairs.split(","):
        pair = builtin_pair(name)
        pair = pair.resized(args.width) if args.width else pair
        (e0, v0, c0), (e1, v1, c1) = (
            _errors(m.match(pair.image1, pair.image2, stride=8), pair.truth)
            for m in matchers.values())
        k0, k1 = v0 & ~np.isnan(e0), v1 & ~np.isnan(e1)
        print("## %s %dx%d" % (name, pair.image1.shape[1], pair.image1.shape[0]))
        print("acc@%g unrefined %.4f (%d of %d over), refined %.4f (%d of %d over)" % (
            t, np.mean(e0[k0] <= t), np.sum(e0[k0] > t), k0.sum(),
            np.mean(e1[k1] <= t), np.sum(e1[k1] > t), k1.sum()))
        both = k0 & k1
        lost, won = both & (e0 <= t) & (e1 > t), both & (e0 > t) & (e1 <= t)
        print("over in both: %d; crossed out (<= %g before, > after): %d; crossed in: %d"
              % (np.sum(both & (e0 > t) & (e1 > t)), t, lost.sum(), won.sum()))
        print("over only where one of them is invalid: unrefined %d, refined %d" % (
            np.sum(k0 & ~k1 & (e0 > t)), np.sum(k1 & ~k0 & (e1 > t))))
        for label, rows in (("crossed out", lost), ("crossed in", won)):
            if rows.any():
                print("%s (%d): error before median %.2f [%.2f, %.2f], after median %.2f "
                      "[%.2f, %.2f]; median confidence before %.2f, after %.2f" % (
                          label, rows.sum(), np.median(e0[rows]), e0[rows].min(),
                          e0[rows].max(), np.median(e1[rows]), e1[rows].min(),
                          e1[rows].max(), np.median(c0[rows]), np.median(c1[rows])))
        near = both & (np.abs(e0 - t) <= 1.0)
        print("within 1 px of the line before: %d; their median move in error %+.2f px"
              % (near.sum(), np.median(e1[near] - e0[near]) if near.any() else np.nan))
        print("median confidence, all valid refined %.2f; of those over the line %.2f"
              % (np.median(c1[k1]), np.median(c1[k1 & (e1 > t)])))
    for m in matchers.values():
        m.close()


if __name__ == "__main__":
    main()
