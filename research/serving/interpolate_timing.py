"""Times the exported ``interpolate`` entry point alone at 288x384, one thread: the ONNX file
in onnxruntime and the SavedModel in TensorFlow (median of 5 runs after a warm-up), and
their largest difference. Exports the packaged model with one pyramid level (the
``match`` entry point is not timed, so its size does not matter), about two minutes.

    python research/serving/interpolate_timing.py

For comparing versions of the any-size blend (``vidcorr.model.kernels._tap_sum``) run one
after the other; ``benchmarks/bench_serving.py`` times every entry point.
"""

import os
import sys
import tempfile
import time

import numpy as np
import onnxruntime

from vidcorr.apps.serving import ServingModel, export_serving
from vidcorr.readout.matching import DEFAULT_MODEL

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from timing import median_seconds  # noqa: E402  (benchmarks/timing.py)


def main(height=288, width=384):
    folder = os.path.join(tempfile.mkdtemp(prefix="interpolate-timing-"), "export")
    start = time.perf_counter()
    export_serving(DEFAULT_MODEL, folder, ("saved_model", "onnx"), max_levels=1,
                   log=lambda m: None)
    print("export: %.1f s" % (time.perf_counter() - start))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    onnx = onnxruntime.InferenceSession(os.path.join(folder, "onnx", "interpolate.onnx"),
                                        options, providers=["CPUExecutionProvider"])
    served = ServingModel(folder, threads=1)
    a, b = np.random.RandomState(0).rand(2, height, width, 3).astype(np.float32)
    feeds = {"frame_t:0": a[None], "frame_t2:0": b[None]}
    difference = np.abs(np.asarray(onnx.run(None, feeds)[0]) -
                        np.asarray(served.interpolate(a[None], b[None]))).max()
    print("onnxruntime %.3f s, SavedModel %.3f s, largest difference %.2e" % (
        median_seconds(lambda: onnx.run(None, feeds), 5),
        median_seconds(lambda: served.interpolate(a[None], b[None]), 5), difference))
    served.close()


if __name__ == "__main__":
    main()
