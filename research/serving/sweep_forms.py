"""Micro-benchmark of the refinement's SOR sweep: N unrolled red-black half-sweeps at
288x384 (random weights), in TensorFlow and in onnxruntime (one thread, median of 5).

    PYTHONPATH=. python research/serving/sweep_forms.py [N=48] [forms=abc]

Form a was vidcorr.readout.refinement._sor_sweep's until 2026-12-07 (the sweeps now run on the
field packed by colour: pack_forms.py); b stacks the four neighbours and takes
one product and one sum; c mixes the neighbour sum with its swap by one product with
stacked (p, q) and a sum. "vs a": the largest difference from form a's output.
"""
import sys

import numpy as np

from two_runtimes import time_both
from vidcorr.compat import tf

H, W, N = 288, 384, int(sys.argv[1]) if len(sys.argv) > 1 else 48
rng = np.random.RandomState(0)

def form_a(field, w, steps):
    right, left, down, up = w
    for k in range(N):
        keep, offset, p, q = steps[k % 2]
        padded = tf.pad(field, [[0, 0], [0, 0], [1, 1], [1, 1]])
        nb = tf.add_n([right * padded[:, :, 1:-1, 2:], left * padded[:, :, 1:-1, :-2],
                       down * padded[:, :, 2:, 1:-1], up * padded[:, :, :-2, 1:-1]])
        field = tf.add_n([keep * field, offset, p * nb, q * tf.reverse(nb, [0])])
    return field

def form_b(field, w, steps):
    # the four neighbours stacked once: one product, one sum
    w4 = tf.stack(w)  # [4, 2, B, H, W]
    for k in range(N):
        keep, offset, p, q = steps[k % 2]
        padded = tf.pad(field, [[0, 0], [0, 0], [1, 1], [1, 1]])
        shifts = tf.stack([padded[:, :, 1:-1, 2:], padded[:, :, 1:-1, :-2],
                           padded[:, :, 2:, 1:-1], padded[:, :, :-2, 1:-1]])
        nb = tf.reduce_sum(w4 * shifts, axis=0)
        field = tf.add_n([keep * field, offset, p * nb, q * tf.reverse(nb, [0])])
    return field

def form_c(field, w, steps):
    # p and q folded: field' = keep f + offset + P (p-side) ... : mix nb with its swap by one
    # product with [2, 2, ...] coefficients and a sum over the first axis
    pq = [tf.stack([p, q]) for _, _, p, q in steps]  # [2(p|q), 2, B, H, W]
    right, left, down, up = w
    for k in range(N):
        keep, offset, _, _ = steps[k % 2]
        padded = tf.pad(field, [[0, 0], [0, 0], [1, 1], [1, 1]])
        nb = tf.add_n([right * padded[:, :, 1:-1, 2:], left * padded[:, :, 1:-1, :-2],
                       down * padded[:, :, 2:, 1:-1], up * padded[:, :, :-2, 1:-1]])
        both = tf.stack([nb, tf.reverse(nb, [0])])
        field = keep * field + offset + tf.reduce_sum(pq[k % 2] * both, axis=0)
    return field

forms = {"a": form_a, "b": form_b, "c": form_c}
results = {}
for name in sys.argv[2].split(",") if len(sys.argv) > 2 else "abc":
    rng = np.random.RandomState(0)  # the same constants and input for every form
    g = tf.Graph()
    with g.as_default():
        field = tf.placeholder(tf.float32, [2, 1, H, W], "field")
        cs = [tf.constant(rng.rand(2, 1, H, W).astype(np.float32) * 0.3) for _ in range(12)]
        w = cs[:4]
        steps = [tuple(cs[4:8]), tuple(cs[8:12])]
        out = tf.identity(forms[name](field, w, steps), "out")
        x = rng.rand(2, 1, H, W).astype(np.float32)
    tf_s, ort_s, res, r2 = time_both(g, out, {field: x}, repeats=5)
    results[name] = res
    print("form %s: TF %.1f ms, ORT %.1f ms, ORT-TF max diff %.2e, vs a %.2e" % (
        name, 1e3 * tf_s, 1e3 * ort_s, np.abs(r2 - res).max(),
        np.abs(res - results.get("a", res)).max()), flush=True)
