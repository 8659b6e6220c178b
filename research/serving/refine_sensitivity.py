"""How much the refinement on the frames amplifies a tiny change of its starting field.

    PYTHONPATH=. python research/serving/refine_sensitivity.py [--pair grove3] [--noise 1e-4]

The exported ``match`` and ``Matcher.match`` reach the refinement with fields that differ
by about 1e-4 px (different kernels of the same ops). This matches the pair without
refinement (``Matcher``, one thread), refines the field with :class:`RefineGraph` as it is
and with a uniform change of +-``--noise`` px added to every position, and prints the
largest and the 99.9th percentile change of the refined positions, and the same for the
options given by ``--options`` (JSON, MatchOptions fields).
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from vidcorr.evaluation.groundtruth import builtin_pair  # noqa: E402
from vidcorr.readout.matching import Matcher  # noqa: E402
from vidcorr.readout.options import MatchOptions  # noqa: E402
from vidcorr.readout.refinement import RefineGraph  # noqa: E402


def set_epsilon(text):
    """Sets the refinement's robust epsilons: ``e`` for both, ``d:s`` data and smoothness."""
    from vidcorr.readout import refinement
    data, _, smooth = text.partition(":")
    refinement.EPSILON = float(data)
    refinement.SMOOTH_EPSILON = float(smooth or data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pair", default="grove3")
    parser.add_argument("--noise", type=float, default=1e-4)
    parser.add_argument("--options", default="[{}]", help="a JSON list of MatchOptions changes")
    parser.add_argument("--epsilon", default="", help="robust penalties' epsilons to try "
                        "(comma-separated; 'data:smooth' sets them apart, which needs "
                        "research/refinement/2026-12-07_epsilon_trust/variant.diff applied)")
    args = parser.parse_args()
    p = builtin_pair(args.pair)
    a, b = p.image1, p.image2
    matcher = Matcher("vidcorr/models/default", {"refine": "none"}, threads=1)
    m = matcher.match(a, b, stride=1)
    h, w = m.size
    start = np.stack([m.p1, m.p3], 1).reshape(h, w, 2, 2)
    matcher.close()
    noise = np.random.RandomState(0).uniform(-args.noise, args.noise, start.shape)
    runs = [(change, None) for change in json.loads(args.options)]
    runs += [({}, e) for e in args.epsilon.split(",") if e]
    for change, epsilon in runs:
        if epsilon:
            set_epsilon(epsilon)
        refine = RefineGraph(h, w, MatchOptions().replace(**change), threads=1)
        x = refine.run(a, b, start)["position"]
        y = refine.run(a, b, start + noise)["position"]
        refine.close()
        d = np.abs(x - y).max(axis=(2, 3))
        print("%s%s: start changed by up to %.0e px -> refined changed by max %.4f px, 99.9%% "
              "%.4f, 99%% %.5f, pixels over 0.01 px %d" % (
                  json.dumps(change), " epsilon " + epsilon if epsilon else "", args.noise, d.max(), np.percentile(d, 99.9),
                  np.percentile(d, 99), int((d > 0.01).sum())), flush=True)


if __name__ == "__main__":
    main()
