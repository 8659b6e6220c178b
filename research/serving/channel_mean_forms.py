"""The mean over a leading axis of 3 ([3, 1, 288, 384] -> [1, 288, 384]), 30 times after a
product, in TensorFlow and onnxruntime (one thread, median of 7): reduce_mean; two adds of
slices; add_n of the unstacked channels; a [1, 3] matmul (the package's _channel_mean).

    PYTHONPATH=. python research/serving/channel_mean_forms.py
"""
import os, sys, time, tempfile, numpy as np
from vidcorr.compat import tf
import onnxruntime, tf2onnx
N = 30
def f_mean(x): return tf.reduce_mean(x, axis=0)
def f_add(x): return (x[0] + x[1] + x[2]) * (1.0 / 3)
def f_addn(x): return tf.add_n(tf.unstack(x)) * (1.0 / 3)
def f_mm(x):
    s = tf.shape(x)
    return tf.reshape(tf.matmul(tf.fill([1, 3], 1.0 / 3), tf.reshape(x, [3, -1])), s[1:])
rng = np.random.RandomState(0)
xv = rng.rand(3, 1, 288, 384).astype(np.float32)
for name, fn in (("mean", f_mean), ("add", f_add), ("addn", f_addn), ("mm", f_mm)):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, None, 288, 384], "x")
        acc = []
        for k in range(N):
            acc.append(fn(x * (1.0 + k)))
        out = tf.identity(tf.stack(acc), "out")
        sess = tf.Session(graph=g, config=tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
    v = sess.run(out, {x: xv})
    ts = []
    for _ in range(7):
        t = time.perf_counter(); sess.run(out, {x: xv}); ts.append(time.perf_counter() - t)
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    tf2onnx.convert.from_graph_def(g.as_graph_def(), input_names=["x:0"], output_names=["out:0"], opset=13, output_path=path)
    so = onnxruntime.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
    s = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    o = s.run(None, {"x:0": xv})[0]
    os_ = []
    for _ in range(7):
        t = time.perf_counter(); s.run(None, {"x:0": xv}); os_.append(time.perf_counter() - t)
    print("%-5s TF %.1f ms ORT %.1f ms  diff %g" % (name, 1e3*np.median(ts), 1e3*np.median(os_), np.abs(o-v).max()))
