"""Times the refinement's graph alone (``refine_field`` on one 288x384 pair, one thread) and
prints where its time goes by op type, for the speed study of 2026-12-06
(``speed_2026-12-06.md``).

    python research/refinement/refine_timing.py [--sampler bilinear] [--options JSON]
        [--xla] [--unroll] [--trace] [--save FILE.npy]

``--xla`` turns on XLA's just-in-time compilation for the CPU (set
``TF_XLA_FLAGS=--tf_xla_cpu_global_jit`` too); ``--trace`` prints the 15 op types that
took longest in one traced run (tracing slows each op, so compare op types, not totals);
``--save`` writes the refined frame-t positions, to compare two versions of the code.
"""

import argparse
import collections
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)

from vidcorr.compat import session_config, tf  # noqa: E402
from vidcorr.io.video import resize_float, to_rgb_float  # noqa: E402
from vidcorr.readout.options import MatchOptions  # noqa: E402
from vidcorr.readout.refinement import RefineSettings, refine_field  # noqa: E402


def _trace(sess, outputs, feed):
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    meta = tf.RunMetadata()
    sess.run(outputs, feed, options=options, run_metadata=meta)
    total, calls = collections.Counter(), collections.Counter()
    for device in meta.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label
            op = label.split(" = ")[1].split("(")[0] if " = " in label else node.node_name
            total[op] += node.all_end_rel_micros
            calls[op] += 1
    print("traced total %.1f ms" % (sum(total.values()) / 1e3))
    for op, micros in total.most_common(15):
        print("%-22s %9.1f ms %6d calls %7.1f us/call" % (op, micros / 1e3, calls[op],
                                                          micros / calls[op]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sampler", default="bilinear")
    parser.add_argument("--options", default="{}", help="MatchOptions fields, JSON")
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--unroll", action="store_true")
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--save")
    args = parser.parse_args()
    h, w = 288, 384
    a, b = (resize_float(to_rgb_float(os.path.join(ROOT, "examples", name)), h, w)
            for name in ("cockatoo_262.png", "cockatoo_264.png"))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    # a start 0.7 px and 0.3 px off the middle frame's pixels, as a read-out's would be
    position = np.stack([np.stack([xs - 0.7, ys + 0.3], -1),
                         np.stack([xs + 0.7, ys - 0.3], -1)], 2)[None]
    options = MatchOptions(refine_sampler=args.sampler, **json.loads(args.options))
    graph = tf.Graph()
    with graph.as_default():
        frames = tf.placeholder(tf.float32, [None, h, w, 6])
        positions = tf.placeholder(tf.float32, [None, h, w, 2, 2])
        outputs = refine_field(frames[..., :3], frames[..., 3:], positions[..., 0, :],
                               positions[..., 1, :], RefineSettings.from_options(options),
                               unroll=args.unroll)
        config = session_config(1)
        if args.xla:
            config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
        sess = tf.Session(graph=graph, config=config)
    feed = {frames: np.concatenate([a, b], -1)[None], positions: position}
    start = time.perf_counter()
    refined = sess.run(outputs, feed)
    first = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        sess.run(outputs, feed)
        times.append(time.perf_counter() - start)
    print("sampler %s options %s xla %s unroll %s: first run %.2f s, then min %.3f s, median "
          "%.3f s" % (args.sampler, args.options, args.xla, args.unroll, first, min(times),
                      float(np.median(times))))
    if args.trace:
        _trace(sess, outputs, feed)
    if args.save:
        np.save(args.save, refined[0])


if __name__ == "__main__":
    main()
