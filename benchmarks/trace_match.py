"""Where the whole-match graph spends its time: per-op timing from a TensorFlow trace.

Runs the default model's :class:`vidcorr.readout.kernel.graph.MatchGraph` on a
textured pair of one size, traces one run (``RunOptions.FULL_TRACE``) and prints the
ops' time summed by op type and by the scope the op was built in (the network, the
blend moments, the warps, the smoothing, the refinement, the confidence), biggest first.

    python benchmarks/trace_match.py [--size 720x1280] [--threads 1] [--refine none]
    python benchmarks/trace_match.py --refine variational --within refine   # inside one scope
"""

import argparse
import collections
import re
import sys

import numpy as np


def _pair(h, w):
    from scipy import ndimage
    rng = np.random.RandomState(0)
    image = np.clip(ndimage.zoom(rng.rand(h // 8 + 2, w // 8 + 2, 3), (8, 8, 1), order=3), 0, 1)
    return image[1:h + 1, 2:w + 2].astype(np.float32), image[1:h + 1, :w].astype(np.float32)


def _scope(name):
    """The part of the graph an op belongs to, from its name."""
    if name.startswith("mind"):
        return "network (mind)"
    head = re.sub(r"_\d+$", "", name.split("/")[0])
    return head


def main():
    from vidcorr.compat import tf
    from vidcorr.readout.matching import Matcher

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="720x1280")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--refine", default="none")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--within", help="only the ops of this scope, by their sub-scopes")
    args = parser.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    a, b = _pair(h, w)
    matcher = Matcher(readout="kernel", threads=args.threads, refine=args.refine)
    graph = matcher.readout.graph_for(h, w)
    feed = {graph.frame_t: a[None], graph.frame_t2: b[None]}
    graph.sess.run(graph.outputs, feed)
    meta = tf.RunMetadata()
    graph.sess.run(graph.outputs, feed, options=tf.RunOptions(
        trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    by_type, by_scope = collections.Counter(), collections.Counter()
    names = {op.name: op.type for op in graph.graph.get_operations()}
    total = 0.0
    for device in meta.step_stats.dev_stats:
        for node in device.node_stats:
            name = node.node_name.split(":")[0]
            ms = (node.all_end_rel_micros or node.op_end_rel_micros) / 1000.0
            if args.within:
                if _scope(name) != args.within:
                    continue
                name = name.split("/", 1)[-1]  # its sub-scopes
            total += ms
            by_type[names.get(name, node.timeline_label.split("=")[-1].split("(")[0].strip() or
                              "?")] += ms
            by_scope[_scope(name)] += ms
    print("%s, %d thread(s), refine %s: %.0f ms of op time in one run%s\n"
          % (args.size, args.threads, args.refine, total,
             " in %s" % args.within if args.within else ""))
    for title, counter in (("op type", by_type), ("scope", by_scope)):
        print("| %s | ms | share |\n|---|---|---|" % title)
        for key, ms in counter.most_common(args.top):
            print("| %s | %.0f | %.0f %% |" % (key, ms, 100 * ms / total))
        print()
    matcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
