"""Speed and memory of the dense blend-weight read-out, as ratios to this machine's limits.

For each size it matches a pair with ``Matcher(readout="kernel")`` at stride 1 (a
match for every pixel) with the default levels and passes, in its own process, and
prints:

* seconds per pair after the graphs are built (the whole match, one graph:
  :class:`vidcorr.readout.kernel.graph.MatchGraph`), without and with the refinement on
  the frames (both in one process, so their ratio is of one run), the least of
  ``--repeats`` runs, and the forward passes alone (every level's network to the kernel
  head's logits, run once per pass);
* the read-out's convolution FLOPs per second against the *convolution limit*: the
  best GFLOP/s of a single 3x3 convolution at the network's widest channel counts,
  timed here with the same thread count (the most a forward pass of these layers
  could reach);
* the total time over the forward passes alone (what the match adds: warps, blend
  moments, smoothing, resampling, the confidence);
* peak RSS of the process (after the unrefined match; then after the refined one);
* with ``--batch N``: the pairs per second of the size's match graph given N copies of the
  benchmark's pair in one batch (one ``sess.run``) against them one at a time, per
  refinement (copies: the same work per pair, no other pair's content to time; each
  batch runs after its refinement's peak RSS is read, so the column includes the batches of
  the refinements before it, not its own).

    python benchmarks/bench_dense.py [--sizes 128x384,288x384,480x640,720x1280] [--threads 2]
        [--refine none,variational] [--repeats 3] [--batch 8]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

SIZES = "128x384,288x384,480x640,720x1280"


def conv_limit(threads, repeats=5):
    """Best GFLOP/s of one 3x3 convolution at a few channel counts (forward only)."""
    from vidcorr.compat import session_config, tf

    best = 0.0
    for size, cin, cout in ((256, 24, 24), (256, 48, 48), (128, 96, 96)):
        graph = tf.Graph()
        with graph.as_default():
            # variables, not constants: a constant convolution would be folded away
            x = tf.Variable(np.random.RandomState(0).rand(1, size, size, cin).astype(np.float32))
            w = tf.Variable(np.random.RandomState(1).rand(3, 3, cin, cout).astype(np.float32))
            y = tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
            with tf.Session(graph=graph, config=session_config(threads)) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(y)
                flops = 2.0 * size * size * 9 * cin * cout
                for _ in range(repeats):
                    start = time.perf_counter()
                    sess.run(y)
                    best = max(best, flops / (time.perf_counter() - start) / 1e9)
    return best


def logits_pass(matcher, height, width, threads):
    """A function running the network's forward pass to the kernel head's logits (what a
    level of the read-out needs) on one pair of the size, in its own session."""
    from vidcorr.compat import session_config, tf
    from vidcorr.model.network import mind
    from vidcorr.model.spec import MODEL_SCOPE
    from vidcorr.readout.inference import load_folded_weights

    graph = tf.Graph()
    with graph.as_default():
        # a variable input, so nothing is constant-folded
        pair = tf.Variable(np.zeros((1, height, width, 6), np.float32))
        endpoints = {}
        mind(pair, False, spec=matcher.spec, folded=True, name=MODEL_SCOPE, endpoints=endpoints)
        logits = tf.reduce_sum(endpoints["logits"])
        sess = tf.Session(graph=graph, config=session_config(threads))
        sess.run(pair.initializer)
        load_folded_weights(sess, matcher.weights)
    return lambda: sess.run(logits)


def _best(run, repeats):
    """The least of ``repeats`` timed runs of ``run()`` (after the caller's warm-up)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def batch_gain(matcher, a, b, batch, repeats):
    """``(seconds for batch pairs one at a time, seconds for them in one batch)`` through the
    size's cached match graph (the least of ``repeats`` each, after a warm-up)."""
    graph = matcher.readout.graph_for(*a.shape[:2])
    one = lambda: [graph.run(a[None], b[None]) for _ in range(batch)]  # noqa: E731
    many = lambda: graph.run(np.stack([a] * batch), np.stack([b] * batch))  # noqa: E731
    one()
    many()
    return _best(one, repeats), _best(many, repeats)


def child(size, threads, refines, repeats, batch=0):
    from vidcorr.model.network import forward_flops
    from vidcorr.readout.matching import Matcher
    from vidcorr.readout.pyramid import pyramid_levels, read_out_plan

    h, w = (int(v) for v in size.split("x"))
    rng = np.random.RandomState(0)
    base = rng.rand(h // 8 + 2, w // 8 + 2, 3)
    from scipy import ndimage
    image = np.clip(ndimage.zoom(base, (8, 8, 1), order=3), 0, 1)
    a, b = image[1:h + 1, 2:w + 2].astype(np.float32), image[1:h + 1, :w].astype(np.float32)
    seconds, rss, batched = {}, {}, {}
    for refine in refines:  # each refinement's match, in this one process
        matcher = Matcher(readout="kernel", threads=threads, min_confidence=0, max_seconds=0,
                          refine=refine)
        matches = matcher.match(a, b, stride=1)  # builds the size's graph
        seconds[refine] = _best(lambda: matcher.match(a, b, stride=1), repeats)
        rss[refine] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # peak so far
        if batch > 1:
            batched[refine] = batch_gain(matcher, a, b, batch, repeats)
        if refine != refines[-1]:
            matcher.close()
    plan = read_out_plan(h, w, pyramid_levels(h, w, matcher.options.levels), 1)
    forward, flops = 0.0, 0.0
    for level in plan:
        run = logits_pass(matcher, level.height, level.width, threads)
        run()
        forward += matcher.options.passes * _best(run, repeats)
        flops += matcher.options.passes * forward_flops(level.height, level.width, matcher.spec)
    matcher.close()
    print(json.dumps({"size": size, "matches": len(matches), "seconds": seconds,
                      "forward": forward, "gflop": flops / 1e9, "rss_mb": rss,
                      "batched": batched}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help="HxW list (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--refine", default="none,variational",
                        help="the refinement stages to time, in one process: a comma list of "
                             "none (the read-out alone) and variational (default: both)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs of each; the least is reported (default 3)")
    parser.add_argument("--batch", type=int, default=0,
                        help="also time N pairs in one batch against one at a time")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    refines = [r.strip() for r in args.refine.split(",") if r.strip()]
    if args.child:
        return child(args.child, args.threads, refines, args.repeats, args.batch)
    limit = conv_limit(args.threads)
    print("convolution limit: %.1f GFLOP/s (best 3x3 convolution, %d threads)\n"
          % (limit, args.threads))
    print("| size | refine | matches | seconds | forward passes alone | total / forward | "
          "x unrefined | GFLOP | GFLOP/s | of the conv limit | peak RSS GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", size,
                               "--threads", str(args.threads), "--refine", args.refine,
                               "--repeats", str(args.repeats), "--batch", str(args.batch)],
                              stdout=subprocess.PIPE,
                              universal_newlines=True)
        if proc.returncode:
            print("| %s | failed (exit %d) |" % (size, proc.returncode))
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rate = r["gflop"] / r["forward"]
        for refine in refines:
            seconds = r["seconds"][refine]
            plain = r["seconds"].get("none")
            print("| %s | %s | %d | %.2f | %.2f | %.2fx | %s | %.1f | %.1f | %.0f %% | %.2f |" % (
                size, refine, r["matches"], seconds, r["forward"], seconds / r["forward"],
                "%.2fx" % (seconds / plain) if plain else "-", r["gflop"], rate,
                100 * rate / limit, r["rss_mb"][refine] / 1024.0), flush=True)
        for refine, (one, many) in sorted(r.get("batched", {}).items()):
            print("\n%s, refine %s: %d pairs one at a time %.2f s, in one batch %.2f s: "
                  "%.2fx the pairs per second" % (size, refine, args.batch, one, many, one / many),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
