"""Benchmark: the kernel head's blend in training, by a broadcast product or a batched matmul.

The blend ``out(p) = sum_taps w(p) * frame(p + tap)`` (:func:`vidcorr.model.kernels.apply_kernels`)
is timed forward and back to the logits, the work it does in a training step (the frames
are data: no gradient flows to them), in two forms, each in its own graph, in interleaved
rounds (median over rounds):

  product  the patches times the weights broadcast over the colours, summed over the taps
           (the inference graphs' form, whose ops the sensitivity read-out's rules know)
  matmul   one batched ``[1, 2K^2] x [2K^2, 3]`` product per pixel (the training graphs')

Then a whole training step (forward, backward, Adam) of a model's recipe on fed random
crops, with the code as it is: run it under two checkouts (``PYTHONPATH``) for before and
after, as the closing note of the change did.

    python benchmarks/bench_blend.py [--batch 8 --height 64 --width 128 --rounds 5]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vidcorr.compat import TF_VERSION, session_config, tf  # noqa: E402
from vidcorr.model import kernels  # noqa: E402


def _blend_ops(batch, height, width, k, rng):
    """{form: the blend's output and its gradient w.r.t. the logits} in one graph."""
    frames = tf.constant(rng.rand(batch, height, width, 6).astype(np.float32))
    logits = tf.Variable(rng.randn(batch, height, width, 2 * k * k).astype(np.float32))
    cotangent = tf.constant(rng.randn(batch, height, width, 3).astype(np.float32))
    ops = {}
    for form in ("product", "matmul"):
        out = kernels.apply_kernels(frames, logits.value(), k, matmul=form == "matmul")
        ops[form] = (out, tf.gradients(tf.reduce_sum(out * cotangent), logits)[0])
    return ops


def time_blend(batch, height, width, k, rounds, repeats=5):
    """Median seconds per forward-and-backward of each form, interleaved."""
    rng = np.random.RandomState(0)
    times = {"product": [], "matmul": []}
    with tf.Graph().as_default():
        ops = _blend_ops(batch, height, width, k, rng)
        with tf.Session(config=session_config()) as sess:
            sess.run(tf.global_variables_initializer())
            product, matmul = sess.run(ops["product"]), sess.run(ops["matmul"])
            diff = max(float(np.abs(a - b).max()) for a, b in zip(product, matmul))
            for _ in range(rounds):
                for form, fetch in ops.items():
                    start = time.perf_counter()
                    for _ in range(repeats):
                        sess.run(fetch)
                    times[form].append((time.perf_counter() - start) / repeats)
    return {form: statistics.median(t) for form, t in times.items()}, diff


def time_training_step(model, batch, height, width, rounds, repeats=5):
    """Median seconds of one training step of ``model``'s recipe on fed random crops."""
    from vidcorr.io import rundir
    from vidcorr.model.spec import MODEL_SCOPE
    from vidcorr.training.towers import build_towers

    config = rundir.read_config(rundir.find_checkpoint(model))
    rng = np.random.RandomState(1)
    inputs = rng.rand(batch, height, width, 6).astype(np.float32)
    targets = rng.rand(batch, height, width, 3).astype(np.float32)
    times = []
    with tf.Graph().as_default():
        x = tf.constant(inputs)
        y = tf.constant(targets)
        step = build_towers(config, tf.train.AdamOptimizer(1e-4), x, y, True, False,
                            tf.train.get_or_create_global_step())
        assert step.variables and all(v.op.name.startswith(MODEL_SCOPE)
                                      for v in step.variables)
        with tf.Session(config=session_config()) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step.train_op)  # warm-up
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(repeats):
                    sess.run(step.train_op)
                times.append((time.perf_counter() - start) / repeats)
    return statistics.median(times)


def main():
    from vidcorr.readout.matching import DEFAULT_MODEL

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--height", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--kernel-size", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="the recipe of the training step (default: the packaged model)")
    parser.add_argument("--skip-step", action="store_true", help="only the blend")
    parser.add_argument("--skip-blend", action="store_true",
                        help="only the training step (for a checkout without the matmul form)")
    args = parser.parse_args()
    print("TensorFlow %s, batch %d of %dx%d, K = %d"
          % (TF_VERSION, args.batch, args.height, args.width, args.kernel_size))
    if not args.skip_blend:
        medians, diff = time_blend(args.batch, args.height, args.width, args.kernel_size,
                                   args.rounds)
        print("| form | blend forward and backward s |")
        print("|---|---|")
        for form, seconds in medians.items():
            print("| %s | %.4f |" % (form, seconds))
        print("product / matmul: %.2fx (largest difference of output and gradient %.1e)"
              % (medians["product"] / medians["matmul"], diff))
    if not args.skip_step:
        seconds = time_training_step(args.model, args.batch, args.height, args.width,
                                     args.rounds)
        print("training step of %s's recipe: %.4f s" % (os.path.basename(args.model), seconds))


if __name__ == "__main__":
    main()
