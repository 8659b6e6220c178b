"""Three ways to split a [10, 1, 288, 384] stack into its red and black pixels packed by
row (vidcorr.readout.refinement._pack), ten times, in TensorFlow and onnxruntime (one
thread, median of 7): a) strided slices of the [.., 2, .., 2] reshape; b) a transpose
that puts each row's column parities in contiguous rows, then a gather (the package's);
c) the transpose, then slices.

    PYTHONPATH=. python research/serving/pack_forms.py
"""
import numpy as np

from two_runtimes import time_both
from vidcorr.compat import tf

N = 10


def pack_a(x):
    s = tf.shape(x)
    x = tf.reshape(x, [s[0], s[1], s[2] // 2, 2, s[3] // 2, 2])
    half = [s[0], s[1], s[2], s[3] // 2]
    red = tf.stack([x[:, :, :, 0, :, 0], x[:, :, :, 1, :, 1]], axis=3)
    black = tf.stack([x[:, :, :, 0, :, 1], x[:, :, :, 1, :, 0]], axis=3)
    return tf.reshape(red, half), tf.reshape(black, half)


def pack_b(x):
    s = tf.shape(x)
    x = tf.reshape(x, [s[0], s[1], s[2] // 2, 2, s[3] // 2, 2])
    x = tf.transpose(x, [0, 1, 2, 3, 5, 4])
    x = tf.reshape(x, [s[0], s[1], s[2] // 2, 4, s[3] // 2])
    half = [s[0], s[1], s[2], s[3] // 2]
    return tf.reshape(tf.gather(x, [0, 3], axis=3), half), tf.reshape(tf.gather(x, [1, 2], axis=3), half)


def pack_c(x):
    s = tf.shape(x)
    x = tf.reshape(x, [s[0], s[1], s[2] // 2, 2, s[3] // 2, 2])
    x = tf.transpose(x, [0, 1, 2, 3, 5, 4])
    half = [s[0], s[1], s[2], s[3] // 2]
    red = tf.stack([x[:, :, :, 0, 0], x[:, :, :, 1, 1]], axis=3)
    black = tf.stack([x[:, :, :, 0, 1], x[:, :, :, 1, 0]], axis=3)
    return tf.reshape(red, half), tf.reshape(black, half)


def main():
    xv = np.random.RandomState(0).rand(N, 1, 288, 384).astype(np.float32)
    reference = None
    for name, fn in (("a", pack_a), ("b", pack_b), ("c", pack_c)):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [None, 1, 288, 384], "x")
            red, black = fn(x)
            for k in range(9):  # ten packings to time
                red2, black2 = fn(x * (1.0 + k))
                red, black = red + red2, black + black2
            out = tf.identity(tf.stack([red, black]), "out")
        tf_s, ort_s, tf_v, ort_v = time_both(graph, out, {x: xv})
        reference = tf_v if reference is None else reference
        print("%s TF %.1f ms ORT %.1f ms  diff %g %g" % (name, 1e3 * tf_s, 1e3 * ort_s,
                                                      np.abs(tf_v - reference).max(),
                                                      np.abs(ort_v - reference).max()))


if __name__ == "__main__":
    main()
