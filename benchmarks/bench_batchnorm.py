"""Benchmark: the custom fused batch norm against the seed's and the stock layer.

A training step (forward, backward, Adam update) of a small conv stack, each
variant in its own graph, timed in interleaved rounds (median over rounds):

  a  vidcorr batch_norm, is_training a tensor (tf.cond)
  b  vidcorr batch_norm, is_training a Python bool (no cond)
  c  the seed's first layer: tf.nn.moments, both branches built outside tf.cond
  s  stock: tf.nn.fused_batch_norm, updates through UPDATE_OPS (TF-Slim style)
  q  vidcorr with the quantize switch fed on (q1) and off (q0), same graph

Goals: a/b <= 1.05, c/a >= 1.5, q1/q0 <= 1.25.

    python benchmarks/bench_batchnorm.py [--batch 8 --height 128 --width 384]
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vidcorr.model import layers
from vidcorr.model.batchnorm import batch_norm
from vidcorr.compat import TF_VERSION, session_config, tf
from vidcorr.model.quantize import quantize_transform


def seed_batch_norm(x, name, is_training, epsilon=0.001, decay=0.99):
    """The seed's first version (moments, both branches outside the cond)."""
    with tf.variable_scope(name):
        channels = x.shape.as_list()[3]
        gamma = tf.get_variable("gamma", [channels], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [channels], initializer=tf.zeros_initializer())
        moving_mean = tf.get_variable("moving_mean", [channels], trainable=False,
                                      initializer=tf.zeros_initializer())
        moving_var = tf.get_variable("moving_var", [channels], trainable=False,
                                     initializer=tf.ones_initializer())
        batch_mean, batch_var = tf.nn.moments(x, axes=[0, 1, 2])
        update_mean = moving_mean.assign(decay * moving_mean + (1. - decay) * batch_mean)
        update_var = moving_var.assign(decay * moving_var + (1. - decay) * batch_var)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update_mean)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update_var)
        bn_mean = tf.cond(is_training, lambda: tf.identity(batch_mean),
                          lambda: tf.identity(moving_mean))
        bn_var = tf.cond(is_training, lambda: tf.identity(batch_var),
                         lambda: tf.identity(moving_var))
        inv = tf.math.rsqrt(bn_var + epsilon) * gamma
        return x * inv - bn_mean * inv + beta


def stock_batch_norm(x, name, epsilon=0.001, decay=0.99):
    """tf.nn.fused_batch_norm with updates in UPDATE_OPS, training only."""
    with tf.variable_scope(name):
        channels = x.shape.as_list()[3]
        gamma = layers.get_variable("gamma", [channels], tf.ones_initializer())
        beta = layers.get_variable("beta", [channels], tf.zeros_initializer())
        mm = layers.get_variable("moving_mean", [channels], tf.zeros_initializer(), False)
        mv = layers.get_variable("moving_variance", [channels], tf.ones_initializer(), False)
        y, mean, var = tf.nn.fused_batch_norm(x, gamma, beta, epsilon=epsilon, is_training=True)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, mm.assign_sub((1 - decay) * (mm - mean)))
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, mv.assign_sub((1 - decay) * (mv - var)))
        return y


def build(variant, args):
    """Builds one variant's training step in the current graph; returns (op, feeds)."""
    x = tf.constant(np.random.RandomState(0).rand(args.batch, args.height, args.width, 6)
                    .astype(np.float32))  # [B, H, W, 6]
    feeds = {}
    flag = tf.placeholder_with_default(True, [], name="is_training")
    transform = None
    if variant in ("q1", "q0"):
        qflag = tf.placeholder_with_default(False, [], name="quantize")
        transform = quantize_transform(qflag)
        feeds[qflag] = variant == "q1"
    h = x
    for i in range(args.layers):
        h = layers.conv2d("conv%d" % i, h, args.channels, use_bias=False, transform=transform)
        if variant == "c":
            h = seed_batch_norm(h, "bn%d" % i, flag)
        elif variant == "s":
            h = stock_batch_norm(h, "bn%d" % i)
        else:
            h = batch_norm("conv%d/bn" % i, h, True if variant == "b" else flag,
                           transform=transform)
        h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.abs(layers.conv2d("out", h, 3, transform=transform)))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step = tf.train.AdamOptimizer(1e-4).minimize(loss)
    return step, feeds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--height", type=int, default=128)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    variants = ["a", "b", "c", "s", "q1", "q0"]
    runners = {}
    for v in variants:
        graph = tf.Graph()
        with graph.as_default():
            step, feeds = build(v, args)
            sess = tf.Session(graph=graph, config=session_config())
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(step, feeds)  # warm-up
        runners[v] = (sess, step, feeds)
    times = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            sess, step, feeds = runners[v]
            start = time.perf_counter()
            for _ in range(args.steps):
                sess.run(step, feeds)
            times[v].append((time.perf_counter() - start) / args.steps)
    med = {v: float(np.median(t)) for v, t in times.items()}
    print("TensorFlow %d.%d, Python %s, batch %d, %dx%d, %d layers x %d channels"
          % (TF_VERSION + (sys.version.split()[0], args.batch, args.height, args.width,
                           args.layers, args.channels)))
    for v in variants:
        print("  %-3s %8.1f ms/step" % (v, 1000 * med[v]))
    print("a/b  (tensor switch / bool)       = %.3f  (goal <= 1.05)" % (med["a"] / med["b"]))
    print("c/a  (seed's layer / vidcorr)     = %.3f  (goal >= 1.5)" % (med["c"] / med["a"]))
    print("a/s  (vidcorr / stock fused)      = %.3f" % (med["a"] / med["s"]))
    print("q1/q0 (quantize on / off)         = %.3f  (goal <= 1.25)" % (med["q1"] / med["q0"]))


if __name__ == "__main__":
    main()
