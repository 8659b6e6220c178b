"""Where the whole-match graph spends its time: per-op timing from a TensorFlow trace.

Runs the default model's :class:`vidcorr.readout.kernel.graph.MatchGraph` on a
textured pair of one size, traces one run (``RunOptions.FULL_TRACE``) and prints the
ops' time summed by op type and by the scope the op was built in (the network, the
blend moments, the warps, the smoothing, the refinement, the confidence), biggest first.

    python benchmarks/trace_match.py [--size 720x1280] [--threads 1] [--refine none]
    python benchmarks/trace_match.py --refine variational --within refine   # inside one scope
    python benchmarks/trace_match.py --refine variational --memory   # tensors alive at once

``--memory`` prints, instead of the times, the largest total of op outputs alive at one
moment of the traced run (an output lives from its op's start to the end of its last
consumer; a buffer shared by several outputs counts once) and which stages' tensors make
it up: what the match itself needs, beside the process's peak RSS
(``benchmarks/bench_memory.py``).
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


def _alive_at_peak(meta, graph):
    """The traced run's largest total of live op outputs: ``(bytes, {stage: bytes})``.

    An output lives from its op's start to its last consumer's end; outputs sharing a
    buffer (a reshape, an op writing in place) count once, for the op that made it."""
    times, size, buffer = {}, {}, {}
    for device in meta.step_stats.dev_stats:
        for node in device.node_stats:
            name = node.node_name.split(":")[0]
            start = node.all_start_micros
            times[name] = (start, start + max(node.all_end_rel_micros, 1))
            for out in node.output:
                described = out.tensor_description.allocation_description
                size[(name, out.slot)] = described.allocated_bytes
                buffer[(name, out.slot)] = described.ptr or (name, out.slot)
    end = {}
    for op in graph.get_operations():  # an output lives until its last consumer ends
        for t in op.inputs if op.name in times else ():
            key = (t.op.name, t.value_index)
            end[key] = max(end.get(key, 0), times[op.name][1])
    life = {k: (times[k[0]][0], max(end.get(k, 0), times[k[0]][1]))
            for k, b in size.items() if b > 0}
    events = sorted([(s, 1, k) for k, (s, _) in life.items()] +
                    [(e, -1, k) for k, (_, e) in life.items()], key=lambda x: x[:2])
    users, owner, alive, peak, stages = collections.Counter(), {}, 0, 0, collections.Counter()
    for _, sign, key in events:
        ptr = buffer[key]
        users[ptr] += sign
        if sign > 0 and users[ptr] == 1:
            owner[ptr] = key
            alive += size[key]
        elif sign < 0 and users[ptr] == 0:
            alive -= size[owner.pop(ptr)]
        if alive > peak:
            peak = alive
            stages = collections.Counter()
            for k in owner.values():
                stages[_scope(k[0])] += size[k]
    return peak, stages


def _print_memory(args, peak, stages):
    print("%s, %d thread(s), refine %s: at most %.0f MB of op outputs alive at once\n"
          % (args.size, args.threads, args.refine, peak / 2.0 ** 20))
    print("| stage | MB alive then |\n|---|---|")
    for key, size in stages.most_common(args.top):
        print("| %s | %.0f |" % (key, size / 2.0 ** 20))


def main():
    from vidcorr.compat import tf
    from vidcorr.readout.matching import Matcher

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="720x1280")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--refine", default="none")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--within", help="only the ops of this scope, by their sub-scopes")
    parser.add_argument("--memory", action="store_true",
                        help="the op outputs alive at once, by stage, instead of the times")
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
    if args.memory:
        _print_memory(args, *_alive_at_peak(meta, graph.graph))
        matcher.close()
        return 0
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
