"""What the refinement costs in each runtime: the exported ``match`` with and without it.

    PYTHONPATH=. python research/serving/refine_share.py [--size 288x384] [--repeats 5]
        [--max-levels 3]

Exports the packaged model twice (SavedModel and ONNX; default options, and
``{"refine": "none"}``), then times ``match`` in the SavedModel (TensorFlow session) and in
onnxruntime, one thread each, the median of ``--repeats`` runs after a warm-up, the four
sessions interleaved run by run. The difference of the two exports is the refinement's
time in that runtime.
"""

import argparse
import os
import tempfile
import time

import numpy as np

from vidcorr.apps.serving import ServingModel, export_serving
from vidcorr.readout.matching import DEFAULT_MODEL
from vidcorr.readout.options import MatchOptions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="288x384")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-levels", type=int, default=3)
    args = parser.parse_args()
    import onnxruntime

    h, w = (int(v) for v in args.size.split("x"))
    rng = np.random.RandomState(0)
    a, b = rng.rand(2, 1, h, w, 3).astype(np.float32)
    feeds = {"frame_t:0": a, "frame_t2:0": b}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    runs = {}
    for name, opts in (("refined", MatchOptions()), ("none", MatchOptions(refine="none"))):
        folder = os.path.join(tempfile.mkdtemp(prefix="refine-share-"), "export")
        export_serving(DEFAULT_MODEL, folder, ("saved_model", "onnx"), options=opts,
                       max_levels=args.max_levels, log=lambda m: None)
        served = ServingModel(folder, threads=1)
        ort = onnxruntime.InferenceSession(os.path.join(folder, "onnx", "match.onnx"),
                                           options, providers=["CPUExecutionProvider"])
        runs["SavedModel " + name] = lambda s=served: s.match(a, b)
        runs["onnxruntime " + name] = lambda o=ort: o.run(None, feeds)
    seconds = {k: [] for k in runs}
    for f in runs.values():
        f()  # warm-up
    for _ in range(args.repeats):
        for k, f in runs.items():
            t = time.perf_counter()
            f()
            seconds[k].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) for k, v in seconds.items()}
    print("%s, one thread, median of %d interleaved runs, onnxruntime %s"
          % (args.size, args.repeats, onnxruntime.__version__))
    print("| runtime | match s | match without refinement s | refinement s |")
    print("|---|---|---|---|")
    for rt in ("SavedModel", "onnxruntime"):
        r, n = med[rt + " refined"], med[rt + " none"]
        print("| %s | %.3f | %.3f | %.3f |" % (rt, r, n, r - n))


if __name__ == "__main__":
    main()
