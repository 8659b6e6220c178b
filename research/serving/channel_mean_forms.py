"""The mean over a leading axis of 3 ([3, 1, 288, 384] -> [1, 288, 384]), 30 times after a
product, in TensorFlow and onnxruntime (one thread, median of 7): reduce_mean; two adds of
slices; add_n of the unstacked channels; a [1, 3] matmul (the package's _channel_mean).

    PYTHONPATH=. python research/serving/channel_mean_forms.py
"""
import numpy as np

from two_runtimes import time_both
from vidcorr.compat import tf

N = 30


def f_mean(x):
    return tf.reduce_mean(x, axis=0)


def f_add(x):
    return (x[0] + x[1] + x[2]) * (1.0 / 3)


def f_addn(x):
    return tf.add_n(tf.unstack(x)) * (1.0 / 3)


def f_mm(x):
    s = tf.shape(x)
    return tf.reshape(tf.matmul(tf.fill([1, 3], 1.0 / 3), tf.reshape(x, [3, -1])), s[1:])


def main():
    xv = np.random.RandomState(0).rand(3, 1, 288, 384).astype(np.float32)
    for name, fn in (("mean", f_mean), ("add", f_add), ("addn", f_addn), ("mm", f_mm)):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [3, None, 288, 384], "x")
            out = tf.identity(tf.stack([fn(x * (1.0 + k)) for k in range(N)]), "out")
        tf_s, ort_s, tf_v, ort_v = time_both(graph, out, {x: xv})
        print("%-5s TF %.1f ms ORT %.1f ms  diff %g" % (name, 1e3 * tf_s, 1e3 * ort_s,
                                                    np.abs(ort_v - tf_v).max()))


if __name__ == "__main__":
    main()
