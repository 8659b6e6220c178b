"""Where onnxruntime spends a `match` (and `interpolate`): its profiler, summed by op type.

    PYTHONPATH=. python research/serving/ort_profile.py [--size 288x384] [--max-levels 3]
        [--entry match] [--runs 3] [--top 25] [--export DIR]

Exports the packaged model (or reuses ``--export``), runs the entry point ``--runs``
times after a warm-up with one thread and profiling on, and prints milliseconds per run
by op type and the slowest nodes.
"""

import argparse
import collections
import json
import os
import tempfile

import numpy as np

from vidcorr.apps.serving import export_serving
from vidcorr.readout.matching import DEFAULT_MODEL


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="288x384")
    parser.add_argument("--max-levels", type=int, default=3)
    parser.add_argument("--entry", default="match")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--export", default=None)
    parser.add_argument("--depth", type=int, default=2, help="name parts per scope")
    parser.add_argument("--level", default="all", choices=["basic", "extended", "all"])
    args = parser.parse_args()
    import onnxruntime

    folder = args.export
    if folder is None or not os.path.isdir(folder):
        folder = folder or os.path.join(tempfile.mkdtemp(prefix="ort-profile-"), "export")
        export_serving(DEFAULT_MODEL, folder, ("onnx",), max_levels=args.max_levels,
                       log=lambda m: None)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    options.graph_optimization_level = {
        "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL}[args.level]
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    session = onnxruntime.InferenceSession(os.path.join(folder, "onnx", args.entry + ".onnx"),
                                           options, providers=["CPUExecutionProvider"])
    h, w = (int(v) for v in args.size.split("x"))
    rng = np.random.RandomState(0)
    feed = {i.name: rng.rand(1, h, w, 3).astype(np.float32) for i in session.get_inputs()}
    session.run(None, feed)  # warm-up
    for _ in range(args.runs):
        session.run(None, feed)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    runs = [e for e in events if e.get("name") == "model_run"]
    by_type, by_node = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_type[e["args"]["op_name"]] += e["dur"]
            by_node[(e["args"]["op_name"], e["name"][:-len("_kernel_time")])] += e["dur"]
    scale = 1e-3 / (len(runs) - 1)  # ms per timed run (the warm-up's events dropped below)
    warm = runs[0]["ts"] + runs[0]["dur"]
    by_type, by_node = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] > warm:
            by_type[e["args"]["op_name"]] += e["dur"]
            by_node[(e["args"]["op_name"], e["name"][:-len("_kernel_time")])] += e["dur"]
    print("%s %s, %d timed runs: %.1f ms a run (onnxruntime %s, level %s)"
          % (args.entry, args.size, len(runs) - 1,
             np.median([r["dur"] for r in runs[1:]]) / 1e3, onnxruntime.__version__, args.level))
    total = sum(by_type.values()) * scale
    print("kernels %.1f ms a run" % total)
    for op, t in by_type.most_common():
        print("  %-28s %8.1f ms" % (op, t * scale))
    scopes = collections.Counter()
    for (op, name), t in by_node.items():
        parts = name.split("/")
        scopes["/".join(parts[:args.depth]) + " " + op] += t
    print("by scope (the name's first %d parts) and op:" % args.depth)
    for key, t in scopes.most_common(args.top):
        print("  %-50s %8.1f ms" % (key, t * scale))
    print("slowest nodes:")
    for (op, name), t in by_node.most_common(args.top):
        print("  %-22s %8.1f ms  %s" % (op, t * scale, name[:90]))


if __name__ == "__main__":
    main()
