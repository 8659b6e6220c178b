"""Match two frames with an exported vidcorr model, without vidcorr installed.

    python scripts/export_model.py --run vidcorr/models/default --out serving \
        --format saved_model,onnx
    python examples/serving_example.py serving frame_t.png frame_t2.png [--runtime tf]

Runs the ``match`` entry point (the whole matcher: pyramid, refinement, confidence)
with onnxruntime, or TensorFlow 2's ``tf.saved_model.load`` (``--runtime tf``), and
writes the flow t -> t+2 at frame t's pixels as a Middlebury ``.flo`` (``--out``),
the file ``vidcorr-correspond --stride 1`` writes. Needs numpy, Pillow and
onnxruntime or TensorFlow 2.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
from PIL import Image


def load_frames(export, paths):
    """The two frames as ``[1, H, W, 3]`` float32 in [0, 1], checked against the export's
    input contract (``serving.json``: one size, at least ``min_size`` a side); the ONNX
    files do not check it themselves. Exits with a one-line error where they break it."""
    try:
        with open(os.path.join(export, "serving.json")) as f:
            min_size = json.load(f)["min_size"]
        frames = [np.asarray(Image.open(p).convert("RGB"), np.float32)[None] / 255.0
                  for p in paths]  # [1, H, W, 3] in [0, 1]
    except (OSError, ValueError, KeyError) as err:
        sys.exit("error: %s" % err)
    a, b = frames
    if a.shape != b.shape:
        sys.exit("error: the frames differ in size: %dx%d and %dx%d (the export matches frames "
                 "of one size)" % (a.shape[2], a.shape[1], b.shape[2], b.shape[1]))
    if min(a.shape[1:3]) < min_size:
        sys.exit("error: the frames are %dx%d; the export needs at least %d pixels a side"
                 % (a.shape[2], a.shape[1], min_size))
    return a, b


def run_match(export, frame_t, frame_t2, runtime):
    """The ``match`` outputs as numpy arrays: position, flow, confidence, valid."""
    if runtime == "onnx":
        path = os.path.join(export, "onnx", "match.onnx")
        if not os.path.isfile(path):
            sys.exit("error: %s has no onnx/match.onnx (exported without --format onnx?); use "
                     "--runtime tf, or export again with --format saved_model,onnx" % export)
        import onnxruntime
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name.split(":")[0].split("/")[-1] for o in session.get_outputs()]
        return dict(zip(names, session.run(None, {"frame_t:0": frame_t, "frame_t2:0": frame_t2})))
    if not os.path.isfile(os.path.join(export, "saved_model", "saved_model.pb")):
        sys.exit("error: %s has no saved_model/saved_model.pb (not a serving export?)" % export)
    import tensorflow as tf
    match = tf.saved_model.load(export + "/saved_model").signatures["match"]
    return {k: v.numpy() for k, v in match(frame_t=tf.constant(frame_t),
                                            frame_t2=tf.constant(frame_t2)).items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export")
    parser.add_argument("frame_t")
    parser.add_argument("frame_t2")
    parser.add_argument("--runtime", choices=("onnx", "tf"), default="onnx")
    parser.add_argument("--out", default="flow.flo")
    args = parser.parse_args()
    a, b = load_frames(args.export, (args.frame_t, args.frame_t2))
    out = run_match(args.export, a, b, args.runtime)
    h, w = a.shape[1:3]
    # Each valid match's flow at its pixel of frame t; where several land, the most confident.
    position, confidence = out["position"].reshape(-1, 2, 2), out["confidence"].ravel()
    keep = np.flatnonzero(out["valid"].ravel())
    keep = keep[np.argsort(confidence[keep])]  # ascending: the best is written last
    x, y = np.rint(position[keep, 0]).astype(int).T
    flow = np.full((h, w, 2), np.nan, np.float32)
    flow[y, x] = position[keep, 1] - position[keep, 0]
    with open(args.out, "wb") as f:  # Middlebury .flo: magic, width, height, (u, v) rows
        f.write(struct.pack("<fii", 202021.25, w, h) + flow.astype("<f4").tobytes())
    print("%d matches of %d pixels, median flow t -> t+2 (%.2f, %.2f); wrote %s"
          % (len(keep), h * w, *np.nanmedian(flow.reshape(-1, 2), 0), args.out))


if __name__ == "__main__":
    main()
