"""Element-wise op costs in TensorFlow and onnxruntime (one thread), on [2, 1, 288, 384]
float tensors: a chain of 60 ops of one kind between fed tensors, microseconds per op.

    PYTHONPATH=. python research/serving/elementwise_costs.py mul,add,sum4,slice,bcast

(``scalar`` is folded away by both runtimes' optimizers: not a measurement.)
"""
import os, sys, time, tempfile, numpy as np
from vidcorr.compat import tf
import onnxruntime, tf2onnx
N = 60
shape = [2, 1, 288, 384]
def build(kind, x, ys):
    f = x
    for k in range(N):
        y = ys[k % len(ys)]
        if kind == "mul": f = f * y
        elif kind == "add": f = f + y
        elif kind == "sum4": f = tf.add_n([f, ys[0], ys[1], ys[2]])
        elif kind == "slice": f = tf.pad(f, [[0,0],[0,0],[1,1],[1,1]])[:, :, 2:, 1:-1]
        elif kind == "bcast": f = f * ys[3]
        elif kind == "scalar": f = f * 0.999
    return f
rng = np.random.RandomState(0)
for kind in sys.argv[1].split(","):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, shape, "x")
        ys = [tf.placeholder(tf.float32, shape, "y%d" % i) for i in range(3)]
        ys.append(tf.placeholder(tf.float32, [2, 1, 288, 1], "y3"))
        yv = [rng.rand(*shape).astype(np.float32) * 0.01 + 0.995 for _ in range(3)] + [rng.rand(2, 1, 288, 1).astype(np.float32)]
        out = tf.identity(build(kind, x, ys), "out")
        sess = tf.Session(graph=g, config=tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
    xv = rng.rand(*shape).astype(np.float32)
    sess.run(out, dict([(x, xv)] + list(zip(ys, yv))))
    ts = []
    for _ in range(7):
        t = time.perf_counter(); sess.run(out, dict([(x, xv)] + list(zip(ys, yv)))); ts.append(time.perf_counter() - t)
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    tf2onnx.convert.from_graph_def(g.as_graph_def(), input_names=["x:0", "y0:0", "y1:0", "y2:0", "y3:0"], output_names=["out:0"], opset=13, output_path=path)
    so = onnxruntime.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
    s = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s.run(None, dict([("x:0", xv)] + [("y%d:0" % i, v) for i, v in enumerate(yv)]))
    os_ = []
    for _ in range(7):
        t = time.perf_counter(); s.run(None, dict([("x:0", xv)] + [("y%d:0" % i, v) for i, v in enumerate(yv)])); os_.append(time.perf_counter() - t)
    print("%-7s TF %6.1f us/op  ORT %6.1f us/op" % (kind, 1e6 * np.median(ts) / N, 1e6 * np.median(os_) / N))
