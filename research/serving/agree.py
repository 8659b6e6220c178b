"""How far the exported ``match`` is from ``Matcher.match`` (#47's "agree within 0.01 px").

    PYTHONPATH=. python research/serving/agree.py [--export DIR] [--onnx] [--pairs sample,grove3]

Exports the packaged model (default options, every level) once into ``--export`` (kept,
reused when it exists: a new ``--export`` for new ``--options``), then matches each pair at stride 1 with ``Matcher(threads=1)`` and
with the export's ``match`` (the SavedModel, and onnxruntime with ``--onnx``), and prints
per pair: the largest and the 99.9th percentile position difference over the pixels both
call valid, the count of pixels valid in one only, and where the largest differences sit
(their level of the pyramid is not known here; their rows and columns are).
Pairs: ``sample`` (examples/cockatoo_262/264, 128x384), ``grove3`` (640x480, native),
``motorcycle`` (741x500, native).
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from vidcorr.apps.serving import ServingModel, export_serving  # noqa: E402
from vidcorr.evaluation.groundtruth import builtin_pair  # noqa: E402
from vidcorr.readout.matching import Matcher  # noqa: E402
from vidcorr.io.video import read_image, to_rgb_float  # noqa: E402
from vidcorr.readout.options import MatchOptions  # noqa: E402

MODEL = "vidcorr/models/default"


def pair(name):
    if name == "sample":
        return [to_rgb_float(read_image("examples/cockatoo_%d.png" % i)) for i in (262, 264)]
    p = builtin_pair(name)
    return p.image1, p.image2


def library(a, b, options):
    matcher = Matcher(MODEL, options, threads=1)
    m = matcher.match(a, b, stride=1)
    h, w = m.size
    out = {"position": np.stack([m.p1, m.p3], 1).reshape(h, w, 2, 2),
           "valid": m.valid.reshape(h, w), "confidence": m.confidence.reshape(h, w)}
    matcher.close()
    return out


def onnx_match(export, a, b):
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(export, "onnx", "match.onnx"),
                                           providers=["CPUExecutionProvider"])
    names = [o.name.split(":")[0].split("/")[-1] for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"frame_t:0": a[None], "frame_t2:0": b[None]})))


def report(name, runtime, ref, got):
    pos = got["position"][0]  # [H, W, 2, 2]
    both = ref["valid"] & got["valid"][0].astype(bool)
    d = np.abs(pos - ref["position"]).max(axis=(2, 3))  # [H, W]
    worst = np.argsort(d[both])[::-1][:5]
    ys, xs = np.nonzero(both)
    print("%-10s %-11s max %.4f px, 99.9%% %.4f px, median %.1e px, valid in one only %d of "
          "%d; confidence max diff %.1e; worst at (y, x) %s"
          % (name, runtime, d[both].max(), np.percentile(d[both], 99.9), np.median(d[both]),
             int((ref["valid"] != got["valid"][0].astype(bool)).sum()), both.size,
             np.abs(got["confidence"][0] - ref["confidence"])[both].max(),
             [(int(ys[i]), int(xs[i])) for i in worst]), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--export", default="/tmp/agree_export")
    parser.add_argument("--onnx", action="store_true")
    parser.add_argument("--pairs", default="sample,grove3")
    parser.add_argument("--options", default="{}", help="MatchOptions as JSON, for both")
    args = parser.parse_args()
    options = MatchOptions().replace(**json.loads(args.options))
    if not os.path.isfile(os.path.join(args.export, "serving.json")):
        export_serving(MODEL, args.export, options=options,
                       formats=("saved_model", "onnx") if args.onnx else ("saved_model",))
    served = ServingModel(args.export, threads=1)
    for name in args.pairs.split(","):
        a, b = pair(name)
        ref = library(a, b, options)
        report(name, "savedmodel", ref, served.match(a[None], b[None]))
        if args.onnx:
            report(name, "onnxruntime", ref, onnx_match(args.export, a, b))


if __name__ == "__main__":
    main()
