"""Match two frames with an exported vidcorr model, without vidcorr installed.

    python scripts/export_model.py --run vidcorr/models/default --out serving \
        --format saved_model,onnx
    python examples/serving_example.py serving frame_t.png frame_t2.png [--runtime tf]

Runs the ``flow`` entry point coarse to fine over ``--levels`` pyramid levels
(each level sees the pair warped by the coarser level's displacements, as in
``docs/serving.md``) with onnxruntime, or TensorFlow 2's ``tf.saved_model.load``
(``--runtime tf``), and prints the flow t -> t+2 at a few pixels. Needs numpy,
Pillow and onnxruntime or TensorFlow 2.
"""

import argparse

import numpy as np
from PIL import Image


def load(path, size=None):
    image = Image.open(path).convert("RGB")
    if size is not None:
        image = image.resize(size, Image.BOX)
    return np.asarray(image, np.float32)[None] / 255.0  # [1, H, W, 3] in [0, 1]


def runner(export, runtime):
    """``flow(frame_t, frame_t2, fields) -> (position, confidence)``."""
    if runtime == "onnx":
        import onnxruntime
        session = onnxruntime.InferenceSession(export + "/onnx/flow.onnx",
                                               providers=["CPUExecutionProvider"])
        return lambda a, b, f: session.run(["position:0", "confidence:0"], {
            "frame_t:0": a, "frame_t2:0": b, "fields:0": f})
    import tensorflow as tf
    flow = tf.saved_model.load(export + "/saved_model").signatures["flow"]

    def run(a, b, f):
        out = flow(frame_t=tf.constant(a), frame_t2=tf.constant(b), fields=tf.constant(f))
        return out["position"].numpy(), out["confidence"].numpy()
    return run


def upsample(field, height, width):
    """A displacement field ``[1, h, w, 4]`` at a finer size, displacements scaled."""
    _, h, w, _ = field.shape
    channels = [np.asarray(Image.fromarray(field[0, ..., c]).resize((width, height),
                                                                   Image.BILINEAR))
                for c in range(4)]
    scale = np.array([width / w, height / h] * 2)  # (d1x, d1y, d3x, d3y)
    return (np.stack(channels, -1) * scale)[None].astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export")
    parser.add_argument("frame_t")
    parser.add_argument("frame_t2")
    parser.add_argument("--runtime", choices=("onnx", "tf"), default="onnx")
    parser.add_argument("--levels", type=int, default=3)
    args = parser.parse_args()
    flow = runner(args.export, args.runtime)
    width, height = Image.open(args.frame_t).size
    fields = None
    for level in reversed(range(args.levels)):  # coarse to fine, halving per level
        size = (max(32, width >> level), max(32, height >> level))
        a, b = load(args.frame_t, size), load(args.frame_t2, size)
        h, w = a.shape[1:3]
        fields = np.zeros((1, h, w, 4), np.float32) if fields is None else upsample(fields, h, w)
        position, confidence = flow(a, b, fields)  # [1, H, W, 2, 2], [1, H, W]
        ys, xs = np.mgrid[0:h, 0:w]
        fields = (position - np.stack([xs, ys], -1)[None, :, :, None]).reshape(1, h, w, 4)
    flow_t_t2 = position[0, :, :, 1] - position[0, :, :, 0]  # [H, W, (dx, dy)]
    for y, x in ((height // 4, width // 4), (height // 2, width // 2)):
        print("pixel (%d, %d): flow t -> t+2 (%.2f, %.2f), confidence %.2f"
              % (x, y, flow_t_t2[y, x, 0], flow_t_t2[y, x, 1], confidence[0, y, x]))
    print("median flow t -> t+2: (%.2f, %.2f)" % tuple(np.median(flow_t_t2.reshape(-1, 2), 0)))


if __name__ == "__main__":
    main()
