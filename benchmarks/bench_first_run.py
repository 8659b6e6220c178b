"""A pair's first run, refined against unrefined, with Grappler's rewrites on and off.

A new image size builds its match graph, and the first ``sess.run`` of that graph also
runs TensorFlow's graph rewrites (Grappler). The refined graph is the larger one, so its
first run costs more. For each read-out (``refine="none"`` / ``"variational"``) and each
setting of the match graph's rewrites on a CPU (``MatchGraph.graph_rewrites``), in a
process of its own, it matches Grove3 at 384 columns with the packaged model: the first
match (building included) and the least of ``--repeats`` later ones. It prints each row
and the refined/unrefined ratios per setting and under the matcher's rule (rewrites on for
the unrefined graph, off for the refined one; issue goal: the whole refined match within
1.5 times the unrefined one).

    python benchmarks/bench_first_run.py [--threads 2] [--repeats 3]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def one(refine, rewrites, threads, repeats):
    """Times one read-out in this process; prints a JSON line."""
    sys.path.insert(0, ROOT)
    from vidcorr.evaluation.groundtruth import builtin_pair
    from vidcorr.quiet import quiet_stderr
    from vidcorr.readout.kernel.graph import MatchGraph
    from vidcorr.readout.matching import Matcher

    MatchGraph.graph_rewrites = rewrites
    with quiet_stderr(True):
        pair = builtin_pair("grove3").resized(384)
        matcher = Matcher(refine=refine, threads=threads)
        start = time.time()
        matcher.match(pair.image1, pair.image2, stride=8)
        first = time.time() - start
        later = []
        for _ in range(repeats):
            start = time.time()
            matcher.match(pair.image1, pair.image2, stride=8)
            later.append(time.time() - start)
        matcher.close()
    print(json.dumps({"first": first, "later": min(later)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("REFINE", "REWRITES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args.one[0], args.one[1] == "on", args.threads, args.repeats)
    rows = {}
    print("| rewrites on a CPU | read-out | first run s | later runs s |")
    print("|---|---|---|---|")
    for rewrites in ("on", "off"):
        for refine in ("none", "variational"):
            out = subprocess.run([sys.executable, __file__, "--one", refine, rewrites,
                                  "--threads", str(args.threads), "--repeats", str(args.repeats)],
                                 stdout=subprocess.PIPE, universal_newlines=True, check=True)
            rows[rewrites, refine] = row = json.loads(out.stdout.strip().splitlines()[-1])
            print("| %s | %s | %.2f | %.3f |" % (rewrites, refine, row["first"], row["later"]),
                  flush=True)
    for rewrites in ("on", "off"):
        none, refined = rows[rewrites, "none"], rows[rewrites, "variational"]
        print("rewrites %s: refined / unrefined, first run %.2fx, later runs %.2fx"
              % (rewrites, refined["first"] / none["first"], refined["later"] / none["later"]))
    print("refined first run, rewrites off / on: %.2fx"
          % (rows["off", "variational"]["first"] / rows["on", "variational"]["first"]))
    none, refined = rows["on", "none"], rows["off", "variational"]
    print("the matcher's rule (rewrites on unrefined, off refined): refined / unrefined, "
          "first run %.2fx, later runs %.2fx" % (refined["first"] / none["first"],
                                                 refined["later"] / none["later"]))


if __name__ == "__main__":
    main()
