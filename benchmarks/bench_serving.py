"""The forward pass three ways: vidcorr's own graph, the serving SavedModel, onnxruntime.

    python benchmarks/bench_serving.py [--model vidcorr/models/default] [--threads 1]
        [--sizes 288x384,720x1280] [--repeats 5]

Exports the model for serving (SavedModel and ONNX, into a temporary folder),
then times, at each size and with the same number of threads, the median of
``--repeats`` runs after a warm-up of: ``interpolate`` (the middle frame) and
``match`` (the whole matcher: pyramid, passes, refinement, confidence) through
vidcorr's graphs (:class:`vidcorr.readout.inference.Predictor`,
:class:`vidcorr.readout.kernel.graph.MatchGraph`), the SavedModel in a TensorFlow
session, and the ONNX files in onnxruntime. Prints seconds and each one's
ratio to vidcorr's own graph (< 1: faster). Needs the onnx extra. The export
builds ``--max-levels`` pyramid levels (the sizes' own, 5 for 720x1280).
"""

import argparse
import os
import sys
import tempfile

import numpy as np

from vidcorr.apps.serving import ServingModel, export_serving
from vidcorr.readout.kernel.graph import MatchGraph
from vidcorr.readout.options import MatchOptions
from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
from vidcorr.readout.matching import DEFAULT_MODEL

from timing import median_seconds  # benchmarks/timing.py, beside this script


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sizes", default="288x384,720x1280")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-levels", type=int, default=5)
    args = parser.parse_args()
    import onnxruntime

    _, spec, values = find_model(args.model)
    weights = fold_batch_norm(values)
    folder = os.path.join(tempfile.mkdtemp(prefix="bench-serving-"), "export")
    export_serving(args.model, folder, ("saved_model", "onnx"), max_levels=args.max_levels,
                   log=lambda m: None)
    served = ServingModel(folder, threads=args.threads)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = args.threads, 1
    ort = {name: onnxruntime.InferenceSession(os.path.join(folder, "onnx", name + ".onnx"),
                                              options, providers=["CPUExecutionProvider"])
           for name in ("interpolate", "match")}
    print("model %s, %d thread(s), median of %d runs, onnxruntime %s"
          % (args.model, args.threads, args.repeats, onnxruntime.__version__))
    print("| size | entry point | vidcorr graph s | SavedModel s (ratio) | onnxruntime s (ratio) |")
    print("|---|---|---|---|---|")
    rng = np.random.RandomState(0)
    for size in args.sizes.split(","):
        h, w = (int(v) for v in size.split("x"))
        a, b = rng.rand(2, h, w, 3).astype(np.float32)
        predictor = Predictor(spec, h, w, weights, threads=args.threads)
        blend = MatchGraph(spec, h, w, weights, MatchOptions(), threads=args.threads)
        pair = np.concatenate([a, b], -1)[None]
        feeds = {"frame_t:0": a[None], "frame_t2:0": b[None]}
        rows = [("interpolate", lambda: predictor.predict(pair),
                 lambda: served.interpolate(a[None], b[None]),
                 lambda: ort["interpolate"].run(None, feeds)),
                ("match", lambda: blend.run(a[None], b[None]),
                 lambda: served.match(a[None], b[None]),
                 lambda: ort["match"].run(None, feeds))]
        for name, own, saved, onnx in rows:
            t = [median_seconds(f, args.repeats) for f in (own, saved, onnx)]
            print("| %dx%d | %s | %.3f | %.3f (%.2f) | %.3f (%.2f) |"
                  % (h, w, name, t[0], t[1], t[1] / t[0], t[2], t[2] / t[0]))
            sys.stdout.flush()
        predictor.close()
        blend.close()
    served.close()


if __name__ == "__main__":
    main()
