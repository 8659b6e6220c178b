"""Cost of the refinement on the frames, as ratios: to the default match without it, and
per pixel and sweep (the budget's ``SECONDS_PER_REFINE_SWEEP``).

For each size, in its own process, it matches a pair of the sample video's frames
(resized) with the packaged model's default match, with and without the refinement
(``refine="variational"`` / ``"none"``), after the graphs are built, and times the
refinement's graph alone with the default settings and with one sweep in all
(rounds, iterations and sweeps 1, on as many scales), so the marginal cost of a sweep
per pixel is the difference over the extra sweeps (a coarser scale's pixels count a
quarter). ``--options`` sets ``MatchOptions`` fields over the defaults. It prints:

* seconds per pair without and with the refinement, and their ratio (issue goal: at
  most 1.5 at 288x384);
* the refinement's graph alone, and its seconds per pixel and sweep against the
  budget's price (its constant times the sampler's ``REFINE_SAMPLER_COST``).

    python benchmarks/bench_refine.py [--sizes 288x384,720x1280] [--threads 1] [--repeats 5]
        [--options '{"refine_scales": 1}']
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

SIZES = "288x384,720x1280"


def _best(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def child(size, threads, repeats, overrides):
    from vidcorr.io.video import resize_float, to_rgb_float
    from vidcorr.readout.matching import Matcher
    from vidcorr.readout.options import MatchOptions
    from vidcorr.readout.refinement import RefineGraph

    h, w = (int(v) for v in size.split("x"))
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
    a, b = (resize_float(to_rgb_float(os.path.join(root, name)), h, w)
            for name in ("cockatoo_262.png", "cockatoo_264.png"))
    out = {"size": size, "threads": threads}
    for refine in ("none", "variational"):
        matcher = Matcher(threads=threads, max_seconds=0, **dict(overrides, refine=refine))
        out[refine] = _best(lambda: matcher.match(a, b, stride=1), repeats)
        matcher.close()
    options = MatchOptions(**overrides)
    sweeps = options.refine_rounds * options.refine_iterations * options.refine_sweeps
    scales = sum(0.25 ** k for k in range(options.refine_scales))  # pixels, coarse scales too
    ys, xs = np.mgrid[0:h, 0:w]
    position = np.stack([np.stack([xs, ys], -1)] * 2, axis=2).astype(np.float32)
    timed = {}
    for label, opts in (("default", options), ("one", options.replace(
            refine_rounds=1, refine_iterations=1, refine_sweeps=1))):
        graph = RefineGraph(h, w, opts, threads=threads)
        timed[label] = _best(lambda: graph.run(a, b, position), repeats)[0]
        graph.close()
    out["refine_graph"] = timed["default"]
    out["per_pixel_sweep"] = ((timed["default"] - timed["one"]) / max(1, sweeps - 1)
                              / (h * w * scales))
    out["sweeps"] = sweeps
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--options", default="{}",
                        help='JSON MatchOptions over the defaults, e.g. \'{"refine_scales": 1}\'')
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.threads, args.repeats, json.loads(args.options))
    from vidcorr.readout.budget import REFINE_SAMPLER_COST, SECONDS_PER_REFINE_SWEEP
    from vidcorr.readout.options import MatchOptions

    sampler = MatchOptions(**json.loads(args.options)).refine_sampler
    budgeted = SECONDS_PER_REFINE_SWEEP * REFINE_SAMPLER_COST[sampler]  # the budget's price

    print("| size | threads | without (s) | with (s) | ratio | refinement graph (s) | "
          "s per pixel-sweep | / budget's |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        line = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", size,
                               "--threads", str(args.threads), "--repeats", str(args.repeats),
                               "--options", args.options],
                              check=True, stdout=subprocess.PIPE, universal_newlines=True)
        r = json.loads(line.stdout.strip().splitlines()[-1])
        print("| %s | %d | %.3f | %.3f | %.2f | %.3f | %.2e | %.2f |" % (
            size, r["threads"], r["none"][0], r["variational"][0],
            r["variational"][0] / r["none"][0], r["refine_graph"], r["per_pixel_sweep"],
            r["per_pixel_sweep"] / budgeted))


if __name__ == "__main__":
    main()
