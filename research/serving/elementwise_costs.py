"""Element-wise op costs in TensorFlow and onnxruntime (one thread): a chain of 60 ops of
one kind between fed tensors (values near 1: no underflow), microseconds per op.

    PYTHONPATH=. python research/serving/elementwise_costs.py mul,add,sum4,slice,mul3,bcast3

``mul`` .. ``slice`` on [2, 1, 288, 384] (the refinement's field); ``mul3`` a product of two
[1, 288, 384, 3] tensors (three colour channels) and ``bcast3`` the bilinear sampler's old
product, [1, 288, 384, 3] times a [1, 288, 384, 1] fraction broadcast over the channels.
"""
import sys

import numpy as np

from two_runtimes import time_both
from vidcorr.compat import tf

N = 60
SHAPE = [2, 1, 288, 384]
COLOUR = [1, 288, 384, 3]


def build(kind, x, ys):
    f = x
    for k in range(N):
        y = ys[k % 3]
        if kind == "mul":
            f = f * y
        elif kind == "add":
            f = f + y
        elif kind == "sum4":
            f = tf.add_n([f, ys[0], ys[1], ys[2]])
        elif kind == "slice":
            f = tf.pad(f, [[0, 0], [0, 0], [1, 1], [1, 1]])[:, :, 2:, 1:-1]
        elif kind in ("mul3", "bcast3"):
            f = f * ys[3]
    return f


def main():
    rng = np.random.RandomState(0)
    for kind in sys.argv[1].split(","):
        graph = tf.Graph()
        with graph.as_default():
            shape = COLOUR if kind.endswith("3") else SHAPE
            other = COLOUR[:3] + [1] if kind == "bcast3" else shape
            x = tf.placeholder(tf.float32, shape, "x")
            ys = [tf.placeholder(tf.float32, shape, "y%d" % i) for i in range(3)]
            ys.append(tf.placeholder(tf.float32, other, "y3"))
            out = tf.identity(build(kind, x, ys), "out")
        values = [rng.rand(*shape) for _ in range(4)] + [rng.rand(*other)]
        values = [v.astype(np.float32) * 0.01 + 0.995 for v in values]
        tf_s, ort_s, _, _ = time_both(graph, out, dict(zip([x] + ys, values)))
        print("%-7s TF %6.1f us/op  ORT %6.1f us/op" % (kind, 1e6 * tf_s / N, 1e6 * ort_s / N))


if __name__ == "__main__":
    main()
