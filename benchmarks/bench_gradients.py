"""Benchmark: per-pixel sensitivities, the seed's loop against vidcorr's batched graph.

Full-width MIND at 128x384, stride 4 (3072 pixels), random weights, on this
machine's device. Each strategy runs in its own process (so peak RSS is its own):

  seed     a new tf.gradients op and a sess.run per pixel (the seed's loop), on
           the first --seed-pixels pixels; its total over the grid is
           extrapolated from a linear fit of the per-pixel time (the graph grows)
  allinone all per-pixel gradient ops built, then evaluated in one sess.run, on
           --allinone-pixels pixels
  vidcorr  SensitivityGraph (folded batch norm, the VJP batched over pixels by
           transposing the graph into forward convolutions, reduced on the
           device, the grid in one sess.run through an in-graph loop over chunks);
           --grid-fraction < 1 times a prefix of the grid and scales it (the
           figure printed says so)
  pfor     the same with the VJP batched by tf.vectorized_map over tf.gradients
  fed      vidcorr driven one chunk per sess.run (a fed chunk index), which
           recomputes the forward pass per chunk

It also measures the conv throughput (a batched forward pass of the folded
network) to give the per-pixel limit, ``forward FLOPs / throughput``.
Goals: vidcorr per pixel <= 1.15x the limit, >= 300x the seed's loop over the
grid, peak RSS <= 2.5 GB. vidcorr's backward pass runs on windows around the
pixels through the decoder, so it can beat the (dense) limit; the encoder's
share stays dense at this size, and the script prints the bound that sets.

    python benchmarks/bench_gradients.py [--width 1.0 --grid-fraction 1.0]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.compat import TF_VERSION, session_config, tf  # noqa: E402
from vidcorr.readout.sensitivity.gradients import GradientSettings, SensitivityGraph  # noqa: E402
from vidcorr.readout.pyramid import grid_points  # noqa: E402
from vidcorr.readout.sensitivity.memory import chunk_for_budget  # noqa: E402
from vidcorr.readout.inference import fold_batch_norm  # noqa: E402
from vidcorr.model.network import forward_flops, mind  # noqa: E402
from vidcorr.model.spec import NetworkSpec  # noqa: E402
from vidcorr.model.spec import layer_plan, plan_flops  # noqa: E402


def _random_values(spec, height, width):
    """Random trained-looking weights (random init + non-trivial batch norm), as numpy."""
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)  # the same weights in every process
        mind(tf.zeros([1, height, width, 6]), False, spec=spec)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    for name in values:
        if name.endswith(("gamma", "moving_variance")):
            values[name] = rng.uniform(0.5, 1.5, values[name].shape).astype(np.float32)
        elif name.endswith(("beta", "moving_mean")):
            values[name] = (0.1 * rng.randn(*values[name].shape)).astype(np.float32)
    return values


def _encoder_flops(height, width, spec):
    """FLOPs of the encoder's convolutions (the part of a per-pixel backward pass that
    cannot be windowed at this size)."""
    return plan_flops([layer for layer in layer_plan(spec, height, width)
                       if layer.name.startswith("enc")])


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _unfolded_session(spec, args, values):
    image = np.random.RandomState(1).rand(1, args.height, args.image_width, 6).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(image)  # the seed's device-resident constant input
        out = mind(x, False, spec=spec)
        sess = tf.Session(graph=graph, config=session_config())
        for v in tf.global_variables():
            v.load(values[v.op.name], sess)
    return graph, sess, x, out


def run_seed(spec, args, values, points):
    graph, sess, x, out = _unfolded_session(spec, args, values)
    times, ops = [], [len(graph.get_operations())]
    with graph.as_default():
        for px, py in points[:args.seed_pixels]:
            start = time.perf_counter()
            grad_output = np.zeros((1, args.height, args.image_width, 3), np.float32)
            grad_output[0, py, px, :] = 1
            grad = tf.gradients(out, x, grad_output)[0]
            sess.run(grad)
            times.append(time.perf_counter() - start)
            ops.append(len(graph.get_operations()))
    n = len(times)
    idx = np.arange(n)
    slope, intercept = np.polyfit(idx[1:], times[1:], 1)  # the first call includes warm-up
    if slope < 0:  # too few pixels to see the growth through the noise: assume none
        slope, intercept = 0.0, float(np.mean(times[1:]))
    total_n = len(points)
    total = intercept * total_n + slope * total_n * (total_n - 1) / 2.0
    return {"pixels": n, "per_pixel_first": times[1], "per_pixel_last": times[-1],
            "slope_s_per_pixel": slope, "grid_seconds": total,
            "ops_per_pixel": (ops[-1] - ops[0]) / float(n)}


def run_allinone(spec, args, values, points):
    graph, sess, x, out = _unfolded_session(spec, args, values)
    with graph.as_default():
        build = time.perf_counter()
        grads = []
        for px, py in points[:args.allinone_pixels]:
            grad_output = np.zeros((1, args.height, args.image_width, 3), np.float32)
            grad_output[0, py, px, :] = 1
            grads.append(tf.gradients(out, x, grad_output)[0])
        build = time.perf_counter() - build
        start = time.perf_counter()
        sess.run(grads)
        run = time.perf_counter() - start
    n = len(grads)
    return {"pixels": n, "build_seconds": build, "per_pixel": (build + run) / n,
            "per_pixel_run_only": run / n, "grid_seconds": (build + run) / n * len(points)}


def run_vidcorr(spec, args, values, points, fed=False, backward="transpose"):
    chunk = args.chunk or chunk_for_budget(spec, args.height, args.image_width, args.memory_mb)
    graph = SensitivityGraph(spec, args.height, args.image_width, fold_batch_norm(values),
                             GradientSettings(chunk=chunk, backward=backward,
                                              max_pixels_per_run=chunk if fed else None))
    image = np.random.RandomState(1).rand(args.height, args.image_width, 6).astype(np.float32)
    graph.set_images(image[..., :3], image[..., 3:])
    ops_before = len(graph.graph.get_operations())
    graph.run(points[:chunk])  # warm-up
    n = max(chunk, int(round(len(points) * args.grid_fraction / chunk)) * chunk)
    n = min(n, len(points))
    start = time.perf_counter()
    graph.run(points[:n], progress=sys.stderr.isatty())
    elapsed = time.perf_counter() - start
    ops_after = len(graph.graph.get_operations())
    # Conv throughput: a batched forward pass of the same folded network.
    fgraph = tf.Graph()
    with fgraph.as_default():
        x = tf.constant(np.random.RandomState(2).rand(chunk, args.height, args.image_width, 6)
                        .astype(np.float32))
        out = mind(x, False, spec=spec, folded=True)
        sess = tf.Session(graph=fgraph, config=session_config())
        folded = fold_batch_norm(values)
        for v in tf.global_variables():
            v.load(folded[v.op.name], sess)
        sess.run(out)
        reps, start = 3, time.perf_counter()
        for _ in range(reps):
            sess.run(out)
        forward = (time.perf_counter() - start) / reps / chunk
    per_pixel = elapsed / n
    return {"pixels": n, "chunk": chunk, "per_pixel": per_pixel,
            "grid_seconds": per_pixel * len(points), "sess_runs": -(-len(points) // chunk) if fed else 1,
            "op_growth": ops_after - ops_before, "forward_per_image": forward}


def child(args):
    spec = NetworkSpec(width=args.width)
    values = _random_values(spec, args.height, args.image_width)
    points = grid_points(args.height, args.image_width, args.stride)
    result = {"seed": run_seed, "allinone": run_allinone, "vidcorr": run_vidcorr,
              "fed": lambda *a: run_vidcorr(*a, fed=True),
              "pfor": lambda *a: run_vidcorr(*a, backward="pfor")}[args.strategy](spec, args, values, points)
    result["peak_rss_mb"] = _peak_rss_mb()
    print("RESULT " + json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--height", type=int, default=128)
    parser.add_argument("--image-width", type=int, default=384)
    parser.add_argument("--stride", type=int, default=4)
    parser.add_argument("--seed-pixels", type=int, default=40)
    parser.add_argument("--allinone-pixels", type=int, default=32)
    parser.add_argument("--grid-fraction", type=float, default=1.0)
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--chunk", type=int, default=0)
    parser.add_argument("--strategies", default="seed,allinone,vidcorr,pfor,fed")
    parser.add_argument("--strategy", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.strategy:
        return child(args)
    spec = NetworkSpec(width=args.width)
    flops = forward_flops(args.height, args.image_width, spec)
    n_grid = len(grid_points(args.height, args.image_width, args.stride))
    results = {}
    for strategy in args.strategies.split(","):
        passed = list(sys.argv[1:])
        for i, a in enumerate(passed):  # drop --strategies and its value
            if a == "--strategies":
                passed[i:i + 2] = []
                break
        passed = [a for a in passed if not a.startswith("--strategies=")]
        cmd = [sys.executable, os.path.abspath(__file__), "--strategy", strategy] + passed
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True)
        line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        if proc.returncode or not line:
            print("%s failed (exit %d)" % (strategy, proc.returncode))
            continue
        results[strategy] = json.loads(line[-1][7:])
    print("TensorFlow %d.%d, Python %s; MIND width %.3g at %dx%d, stride %d: %d pixels"
          % (TF_VERSION + (sys.version.split()[0], args.width, args.height, args.image_width,
                           args.stride, n_grid)))
    print("forward: %.2f GFLOP" % (flops / 1e9))
    for name, r in results.items():
        print("%-9s %s" % (name, json.dumps(r, sort_keys=True)))
    if "vidcorr" in results:
        v = results["vidcorr"]
        rate = flops / v["forward_per_image"]
        limit = flops / rate
        print("conv throughput (batched forward, same run): %.1f GFLOP/s -> limit %.3f s/pixel"
              % (rate / 1e9, limit))
        print("vidcorr: %.3f s/pixel over %d pixels%s; %.2fx the limit; %d sess.run for the "
              "grid; op growth %d; peak RSS %.0f MB"
              % (v["per_pixel"], v["pixels"], "" if v["pixels"] == n_grid else
                 " (prefix of the grid, scaled to it)", v["per_pixel"] / limit, v["sess_runs"],
                 v["op_growth"], v["peak_rss_mb"]))
        print("vidcorr grid: %.1f s" % v["grid_seconds"])
        if "seed" in results:
            s = results["seed"]
            print("seed loop: %.3f s/pixel at first, +%.4f s per pixel, %.0f ops per pixel; "
                  "grid (extrapolated) %.0f s -> vidcorr is %.0fx faster"
                  % (s["per_pixel_first"], s["slope_s_per_pixel"], s["ops_per_pixel"],
                     s["grid_seconds"], s["grid_seconds"] / v["grid_seconds"]))
            print("a dense per-pixel backward pass costs one forward pass of FLOPs (the limit): "
                  "at best %.0fx the seed's loop on this device"
                  % (s["grid_seconds"] / (limit * n_grid)))
            encoder = _encoder_flops(args.height, args.image_width, spec) / rate
            print("the encoder's backward pass is dense (its receptive field covers the image), "
                  "%.1f GFLOP = %.3f s/pixel at the throughput above: an exact method is at best "
                  "about %.0fx the seed's loop (a bound where the forward pass runs at the speed "
                  "of the backward pass's kernels, as on TF 2.x; TF 1.15's slow transposed "
                  "convolutions drag its forward throughput down)"
                  % (_encoder_flops(args.height, args.image_width, spec) / 1e9, encoder,
                     s["grid_seconds"] / (encoder * n_grid)))
        if "pfor" in results:
            p = results["pfor"]
            print("pfor-batched VJP: %.3f s/pixel, %.2fx the limit -> transposed VJP %.2fx faster"
                  % (p["per_pixel"], p["per_pixel"] / limit, p["per_pixel"] / v["per_pixel"]))
        if "fed" in results:
            f = results["fed"]
            print("fed chunk index (one sess.run per chunk): %.3f s/pixel -> in-graph loop %.2fx "
                  "faster" % (f["per_pixel"], f["per_pixel"] / v["per_pixel"]))
        if "allinone" in results:
            a = results["allinone"]
            print("all-in-one sess.run: %.3f s/pixel (%.3f without building) -> vidcorr %.1fx"
                  % (a["per_pixel"], a["per_pixel_run_only"], a["per_pixel"] / v["per_pixel"]))


if __name__ == "__main__":
    main()
