"""Peak memory of one serving runtime and entry point at one size, in its own process.

    python research/serving/mem_probe.py export DIR     # SavedModel and ONNX, 5 levels
    python research/serving/mem_probe.py run DIR {own,saved,ort,ort_noarena} {interpolate,match} HxW

One thread; three runs (the first a warm-up); the peak resident memory before, after
loading and after the runs. ``ort_noarena`` turns onnxruntime's CPU memory arena and memory
pattern off.
"""
import os
import resource
import sys
import time

import numpy as np


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1e6
    return float("nan")


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main():
    if sys.argv[1] == "export":
        from vidcorr.apps.serving import export_serving
        from vidcorr.readout.matching import DEFAULT_MODEL
        t = time.time()
        export_serving(DEFAULT_MODEL, sys.argv[2], ("saved_model", "onnx"), max_levels=5,
                       log=print)
        print("export %.0f s, peak %.2f GB" % (time.time() - t, peak()))
        return
    folder, mode, entry, size = sys.argv[2:6]
    h, w = (int(v) for v in size.split("x"))
    a, b = np.random.RandomState(0).rand(2, 1, h, w, 3).astype(np.float32)
    base = peak()
    if mode == "own":
        from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
        from vidcorr.readout.kernel.graph import MatchGraph
        from vidcorr.readout.matching import DEFAULT_MODEL
        from vidcorr.readout.options import MatchOptions
        _, spec, values = find_model(DEFAULT_MODEL)
        weights = fold_batch_norm(values)
        if entry == "match":
            g = MatchGraph(spec, h, w, weights, MatchOptions(), threads=1)
            run = lambda: g.run(a, b)
        else:
            g = Predictor(spec, h, w, weights, threads=1)
            pair = np.concatenate([a, b], -1)
            run = lambda: g.predict(pair)
    elif mode == "saved":
        from vidcorr.apps.serving import ServingModel
        s = ServingModel(folder, threads=1)
        run = lambda: getattr(s, entry)(a, b)
    else:
        import onnxruntime
        o = onnxruntime.SessionOptions()
        o.intra_op_num_threads, o.inter_op_num_threads = 1, 1
        if mode == "ort_noarena":
            o.enable_cpu_mem_arena = False
            o.enable_mem_pattern = False
        sess = onnxruntime.InferenceSession(os.path.join(folder, "onnx", entry + ".onnx"), o,
                                            providers=["CPUExecutionProvider"])
        run = lambda: sess.run(None, {"frame_t:0": a, "frame_t2:0": b})
    loaded = peak()
    times = []
    for _ in range(3):
        t = time.time()
        run()
        times.append(time.time() - t)
    print("%s %s %s: peak before %.2f, after load %.2f, after 3 runs %.2f GB (rss now %.2f); "
          "seconds %s" % (mode, entry, size, base, loaded, peak(), rss(),
                          " ".join("%.2f" % x for x in times)), flush=True)


if __name__ == "__main__":
    main()
