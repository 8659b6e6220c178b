"""Benchmark: the cost of a strided grid of read-outs as the image grows, dense vs windowed.

For the packaged default model and for full-width MIND (random weights), at
128x384, 256x768, 480x640 and 720x1280, it times a sample of the stride-4 grid
(evenly spread over the image; the sample size is printed). The per-pixel
time is the difference between a run of the sample and a run of one chunk,
since each ``sess.run`` also runs the forward pass once; the grid's total
(one run) is that per-run time plus the per-pixel time times the grid's size.
Two modes:

  windowed  each pixel's backward pass on windows around it, through the
            decoder and, where the image is larger than the receptive field,
            through the encoder too (vidcorr's default)
  dense     the same pass with the encoder dense: the windows end at the first
            skip join (the previous behaviour)

Each run is its own process, so its peak RSS is its own; the first chunk is a
warm-up. It checks that both give the same argmax on every sampled pixel,
prints seconds per pixel, peak RSS, the window of one pixel at the input, and
the fitted exponent of total grid time against area over the larger sizes
(the goal: <= 1.1, linear in the number of points once the image is larger
than the receptive field). ``--fractions`` also times the windowed pass with
other switch points to dense (:data:`vidcorr.readout.sensitivity.memory.DENSE_FRACTION`) at one
size, the measurement behind the default.

    python benchmarks/bench_scaling.py [--models default,full] [--sample 24]
        [--sizes 128x384,256x768,480x640,720x1280] [--fractions 0.25,0.5,1.0@480x640]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from timing import time_read_out  # benchmarks/timing.py, beside this script

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

SIZES = "128x384,256x768,480x640,720x1280"
STRIDE = 4


def _model(name, height, width):
    """``(spec, folded weights)`` of the packaged model or of full-width MIND."""
    from vidcorr.readout.inference import find_model, fold_batch_norm
    from vidcorr.model.spec import NetworkSpec

    if name == "default":
        from vidcorr.readout.matching import DEFAULT_MODEL
        _, spec, values = find_model(DEFAULT_MODEL)
        return spec, fold_batch_norm(values)
    spec = NetworkSpec(width=1.0)
    from bench_gradients import _random_values  # beside this script
    return spec, fold_batch_norm(_random_values(spec, 32, 32))


def child(args):
    from vidcorr.readout.sensitivity import memory
    from vidcorr.readout.sensitivity.gradients import GradientSettings, SensitivityGraph
    from vidcorr.readout.pyramid import grid_points
    from vidcorr.readout.sensitivity.memory import chunk_for_budget

    height, width = (int(v) for v in args.child_size.split("x"))
    # dense: the pass goes dense where two paths meet (the skips)
    density = memory.Density(memory.DENSE_FRACTION if args.child_fraction is None
                             else args.child_fraction,
                             "dense" if args.child_mode == "dense" else "auto")
    spec, weights = _model(args.child_model, height, width)
    chunk = chunk_for_budget(spec, height, width, args.memory_mb, density.fraction)
    start = time.perf_counter()
    graph = SensitivityGraph(spec, height, width, weights,
                             GradientSettings(chunk=chunk, density=density), threads=args.threads)
    build = time.perf_counter() - start
    rng = np.random.RandomState(0)
    image = rng.rand(height, width, 6).astype(np.float32)
    graph.set_images(image[..., :3], image[..., 3:])
    grid = grid_points(height, width, STRIDE, STRIDE // 2)
    count = max(args.sample, 2 * chunk)  # at least a chunk beyond the first one
    sample = grid[np.linspace(0, len(grid) - 1, count).round().astype(int)]
    res, _, per_pixel, per_run = time_read_out(graph, sample, chunk)
    graph.close()
    print(json.dumps({"per_pixel": per_pixel, "per_run": per_run,
                      "grid_points": len(grid),
                      "sample": len(sample), "chunk": chunk, "build": build,
                      "window": graph.window, "peak_xy": res["peak_xy"].tolist(),
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


def _run(args, model, size, mode, fraction=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--child-model", model, "--child-size",
           size, "--child-mode", mode, "--sample", str(args.sample), "--memory-mb",
           str(args.memory_mb), "--threads", str(args.threads)]
    if fraction is not None:
        cmd += ["--child-fraction", str(fraction)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True)
    if proc.returncode:
        raise SystemExit("the %s %s %s run failed (exit %d)" % (model, size, mode,
                                                               proc.returncode))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _total(r):
    """The whole grid in one sess.run: one forward pass and every point."""
    return r["per_run"] + r["per_pixel"] * r["grid_points"]


def _exponent(rows):
    """Least-squares slope of log(total grid time) against log(area)."""
    area = [np.log(r["area"]) for r in rows]
    total = [np.log(_total(r)) for r in rows]
    return float(np.polyfit(area, total, 1)[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="default,full")
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--modes", default="windowed,dense")
    parser.add_argument("--sample", type=int, default=24, help="grid points timed per run")
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fractions", default="",
                        help="switch points to time, e.g. 0.25,0.5,1.0@480x640 (default model)")
    parser.add_argument("--child-model", help=argparse.SUPPRESS)
    parser.add_argument("--child-size", help=argparse.SUPPRESS)
    parser.add_argument("--child-mode", help=argparse.SUPPRESS)
    parser.add_argument("--child-fraction", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_model:
        return child(args)
    from vidcorr.compat import TF_VERSION
    print("TensorFlow %s, %d threads, stride %d, %d sampled grid points per run"
          % (TF_VERSION, args.threads, STRIDE, args.sample))
    print("\n| model | size | mode | s/pixel | s/run | grid points | grid s (scaled) "
          "| peak RSS MB | chunk | input window | argmax = dense |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    for model in args.models.split(","):
        for size in args.sizes.split(","):
            h, w = (int(v) for v in size.split("x"))
            runs = {mode: _run(args, model, size, mode) for mode in args.modes.split(",")}
            for mode, r in runs.items():
                r["area"] = h * w
                same = ("%d/%d" % (np.all(np.array(r["peak_xy"]) == np.array(
                    runs["dense"]["peak_xy"]), axis=(1, 2)).sum(), r["sample"])
                    if "dense" in runs else "-")
                print("| %s | %s | %s | %.3f | %.1f | %d | %.0f | %.0f | %d | %s | %s |" % (
                    model, size, mode, r["per_pixel"], r["per_run"], r["grid_points"],
                    _total(r), r["rss_mb"], r["chunk"],
                    "x".join(map(str, r["window"])) if r["window"] else "whole image", same))
                sys.stdout.flush()
                results.setdefault((model, mode), []).append(r)
    print()
    for (model, mode), rows in results.items():
        larger = [r for r in rows if r["area"] >= 480 * 640] or rows
        if len(larger) >= 2:
            print("%s %s: total grid time ~ area^%.2f over the sizes from 480x640 up "
                  "(all sizes: ^%.2f)" % (model, mode, _exponent(larger), _exponent(rows)))
        if mode == "windowed" and (model, "dense") in results:
            ratios = ["%s %.2fx" % (r["area"], d["per_pixel"] / r["per_pixel"])
                      for r, d in zip(rows, results[(model, "dense")])]
            print("%s: dense / windowed time per pixel by area: %s" % (model, ", ".join(ratios)))
    if args.fractions:
        fractions, size = args.fractions.split("@")
        print("\nSwitch point to dense (DENSE_FRACTION), default model at %s:" % size)
        for f in fractions.split(","):
            r = _run(args, "default", size, "windowed", float(f))
            print("  %s: %.3f s/pixel, window %s, peak RSS %.0f MB"
                  % (f, r["per_pixel"], r["window"], r["rss_mb"]))


if __name__ == "__main__":
    main()
