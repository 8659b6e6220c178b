"""Three ways to split a [10, 1, 288, 384] stack into its red and black pixels packed by
row (vidcorr.readout.refinement._pack), ten times, in TensorFlow and onnxruntime (one
thread, median of 7): a) strided slices of the [.., 2, .., 2] reshape; b) a transpose
that puts each row's column parities in contiguous rows, then a gather (the package's);
c) the transpose, then slices.

    PYTHONPATH=. python research/serving/pack_forms.py
"""
import os, sys, time, tempfile, numpy as np
from vidcorr.compat import tf
import onnxruntime, tf2onnx
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
rng = np.random.RandomState(0)
xv = rng.rand(N, 1, 288, 384).astype(np.float32)
ref = None
for name, fn in (("a", pack_a), ("b", pack_b), ("c", pack_c)):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 1, 288, 384], "x")
        r, b = fn(x)
        for k in range(9):  # repeated to time
            r2, b2 = fn(x * (1.0 + k))
            r, b = r + r2, b + b2
        out = tf.identity(tf.stack([r, b]), "out")
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
    ref = v if ref is None else ref
    print("%s TF %.1f ms ORT %.1f ms  diff %g %g" % (name, 1e3*np.median(ts), 1e3*np.median(os_), np.abs(v-ref).max(), np.abs(o-ref).max()))
