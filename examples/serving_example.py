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
import struct

import numpy as np
from PIL import Image


def run_match(export, frame_t, frame_t2, runtime):
    """The ``match`` outputs as numpy arrays: position, flow, confidence, valid."""
    if runtime == "onnx":
        import onnxruntime
        session = onnxruntime.InferenceSession(export + "/onnx/match.onnx",
                                               providers=["CPUExecutionProvider"])
        names = [o.name.split(":")[0].split("/")[-1] for o in session.get_outputs()]
        return dict(zip(names, session.run(None, {"frame_t:0": frame_t, "frame_t2:0": frame_t2})))
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
    a, b = (np.asarray(Image.open(p).convert("RGB"), np.float32)[None] / 255.0
            for p in (args.frame_t, args.frame_t2))  # [1, H, W, 3] in [0, 1]
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
