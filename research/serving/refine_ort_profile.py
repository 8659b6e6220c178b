"""Where the refinement's time goes, in TensorFlow and in onnxruntime (one thread each).

    PYTHONPATH=. python research/serving/refine_ort_profile.py

Builds :func:`vidcorr.readout.refinement.refine_field` with the default options, its loops
unrolled as the export has them, at 288x384 on a textured pair moving 2 px, with each of
the stage's helpers under a name scope of its own (set here, the package unchanged);
times it in TensorFlow and, converted by tf2onnx, in onnxruntime (median of 3 after a
warm-up), and sums onnxruntime's profile by helper and scale ("coarse:" the half-size
refinement, "fine:" the full size) and by op type. TensorFlow's traced times are not
summed: tracing inflates them (its sum exceeds the untraced run several times).
"""
import functools
import sys, time, json, collections, os, tempfile
import numpy as np
from vidcorr.compat import tf
import vidcorr.readout.refinement as R
from vidcorr.readout.refinement import refine_field, RefineSettings
from vidcorr.readout.options import MatchOptions
import onnxruntime, tf2onnx


def _scoped(fn, name):
    @functools.wraps(fn)
    def inner(*a, **k):
        with tf.name_scope(name):
            return fn(*a, **k)
    return inner


for _name in ("_constraints", "_data_system", "_smoothness_weights", "_sor_system",
              "_sor_sweep", "_inside", "_halve", "_coarse_correction"):
    setattr(R, _name, _scoped(getattr(R, _name), _name.strip("_")))
_sampler = R.frame_sampler
R.frame_sampler = lambda name: tuple(_scoped(f, n) for f, n in zip(_sampler(name),
                                                                    ("prepare", "sampler")))


H, W = 288, 384
import re
NAMES = ("constraints", "data_system", "smoothness_weights", "sor_system", "sor_sweep", "inside", "halve", "sampler", "prepare")
def key_of(name):
    parts = [re.sub(r"_\d+$", "", x) for x in name.split("/")]
    scale = "coarse:" if "coarse_correction" in parts else "fine:"
    for x in parts:
        if x in NAMES:
            return scale + x
    return scale + "other"
rng = np.random.RandomState(0)
g = tf.Graph()
with g.as_default():
    frames = tf.placeholder(tf.float32, [None, H, W, 6], "frames")
    pos = tf.placeholder(tf.float32, [None, H, W, 2, 2], "positions")
    p1, p3, res = refine_field(frames[..., :3], frames[..., 3:], pos[..., 0, :], pos[..., 1, :],
                               RefineSettings.from_options(MatchOptions()), unroll=True)
    out = tf.identity(tf.stack([p1, p3], 3), "out")
    sess = tf.Session(graph=g, config=tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
base = np.stack([xs, ys], -1)
img = rng.rand(H // 8 + 2, W // 8 + 2, 3)
img = np.kron(img, np.ones((8, 8, 1)))[:H, :W]
f = np.concatenate([img, np.roll(img, 2, 1)], -1)[None].astype(np.float32)
p = np.stack([base - [0.5, 0], base + [0.5, 0]], 2)[None].astype(np.float32)
feed = {frames: f, pos: p}
sess.run(out, feed)
ts = []
for _ in range(3):
    t = time.perf_counter(); sess.run(out, feed); ts.append(time.perf_counter() - t)
print("TF refine %.1f ms" % (1e3 * np.median(ts)))
gd = g.as_graph_def(add_shapes=True)
path = os.path.join(tempfile.mkdtemp(), "refine.onnx")
tf2onnx.convert.from_graph_def(gd, input_names=["frames:0", "positions:0"], output_names=["out:0"], opset=13, output_path=path)
so = onnxruntime.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
so.enable_profiling = True; so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
s = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
fd = {"frames:0": f, "positions:0": p}
s.run(None, fd)
ots = []
for _ in range(3):
    t = time.perf_counter(); s.run(None, fd); ots.append(time.perf_counter() - t)
print("ORT refine %.1f ms" % (1e3 * np.median(ots)))
ev = json.load(open(s.end_profiling()))
runs = [e for e in ev if e.get("name") == "model_run"]
warm = runs[0]["ts"] + runs[0]["dur"]
sc, ops = collections.Counter(), collections.Counter()
for e in ev:
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] > warm:
        parts = e["name"].split("/")
        sc[key_of(e["name"][:-len("_kernel_time")])] += e["dur"]
        ops[e["args"]["op_name"]] += e["dur"]
print("ORT kernels %.1f ms a run; by helper and scale (ms):" % (sum(sc.values()) / 3e3))
for k, v in sc.most_common():
    print("  %-28s %7.1f" % (k, v / 3e3))
print("ORT by op (ms):")
for k, v in ops.most_common(15):
    print("  %-28s %7.1f" % (k, v / 3e3))
