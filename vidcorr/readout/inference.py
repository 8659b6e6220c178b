"""Inference weights: read a checkpoint, recover its network spec, fold batch norm.

Matching evaluates thousands of backward passes, so it runs on the *folded*
network: each convolution absorbs the batch norm that follows it,
``W' = W * s`` and ``b' = beta - mean * s`` with ``s = gamma / sqrt(var + eps)``
per output channel. The result is the same function (up to float rounding)
with fewer ops per pass.

A run fine-tuned quantized (``model.quantize`` in its ``config.json``) is
evaluated as it was trained: :func:`quantize_values` fake-quantises the
weights (per output channel) and batch-norm parameters (per tensor) in numpy,
exactly as :mod:`vidcorr.model.quantize` does in the graph, before folding.

:class:`Predictor` is the folded network's forward pass alone (middle frames
for batches of pairs of one size), for evaluation and pictures; matching
builds its own graph around the same weights (:mod:`vidcorr.readout.sensitivity.gradients`).
"""

import os

import numpy as np

from vidcorr.io import rundir
from vidcorr.io.rundir import (checkpoint_values,  # noqa: F401  (re-exported: their old home)
                               spec_from_checkpoint)
from vidcorr.compat import default_device, gpu_available, session_config, tf
from vidcorr.errors import UserError
from vidcorr.model.network import BN_EPSILON, mind
from vidcorr.model.spec import ALL_SKIPS, CHANNEL_AXIS, DEFAULT_NUM_BITS, MODEL_SCOPE, NetworkSpec, \
    layer_plan

__all__ = ["checkpoint_values", "fold_batch_norm", "spec_from_checkpoint", "MODEL_SCOPE",
           "fake_quant_numpy", "quantize_values", "find_model",
           "save_initial_model", "load_folded_weights", "FoldedGraph", "Predictor"]


def _channel_axes():
    """``{layer name: axis of its weights that indexes output channels}`` from the plan."""
    every_skip = NetworkSpec(skips=ALL_SKIPS)  # layer names do not depend on the spec
    return {layer.name: CHANNEL_AXIS[layer.kind] for layer in layer_plan(every_skip)
            if layer.kind != "pool"}


_CHANNEL_AXES = _channel_axes()


def _channel_axis(name):
    """The output-channel axis of the weights ``<scope>/<layer>/weights``."""
    layer = name.rpartition("/")[0].partition("/")[2]
    return _CHANNEL_AXES.get(layer, 3)


def fold_batch_norm(values, epsilon=BN_EPSILON):
    """Folds every ``<layer>/bn`` into ``<layer>/weights`` and ``<layer>/biases``.

    Args:
      values: ``{name: array}`` from :func:`checkpoint_values`.
      epsilon: the batch norm's epsilon.

    Returns:
      ``{name: array}`` for the ``folded=True`` network.
    """
    folded = {}
    for name, value in values.items():
        if "/bn/" in name:
            continue
        layer, _, var = name.rpartition("/")
        bn = layer + "/bn/"
        if var == "weights" and bn + "gamma" in values:
            scale = values[bn + "gamma"] / np.sqrt(values[bn + "moving_variance"] + epsilon)
            axis = _channel_axis(name)
            shape = [1] * value.ndim
            shape[axis] = -1
            folded[name] = (value * scale.reshape(shape)).astype(np.float32)
            folded[layer + "/biases"] = (values[bn + "beta"] -
                                         values[bn + "moving_mean"] * scale).astype(np.float32)
        else:
            folded[name] = value
    return folded


def fake_quant_numpy(value, num_bits=DEFAULT_NUM_BITS, channel_axis=None, narrow_range=False):
    """Numpy twin of :func:`vidcorr.model.quantize.fake_quant` (TensorFlow's nudged fake quantisation).

    The range is the tensor's (or each channel's) min and max widened to
    contain zero; the zero point is nudged onto the integer grid.
    """
    x = np.asarray(value, np.float32)
    if channel_axis is not None and x.ndim >= 2:
        moved = np.moveaxis(x, channel_axis, -1)  # [..., C]
        flat = moved.reshape(-1, moved.shape[-1])
        lo, hi = flat.min(axis=0), flat.max(axis=0)
    else:
        moved, lo, hi = x, x.min(), x.max()
    lo = np.minimum(lo, 0.0).astype(np.float32)
    hi = np.maximum(np.maximum(hi, 0.0), lo + np.float32(1e-6)).astype(np.float32)
    q_min = np.float32(1.0 if narrow_range else 0.0)
    q_max = np.float32(2 ** num_bits - 1)
    scale = ((hi - lo) / (q_max - q_min)).astype(np.float32)
    zero = (q_min - lo / scale).astype(np.float32)
    nudged_zero = np.clip(np.floor(zero + np.float32(0.5)), q_min, q_max).astype(np.float32)
    n_min = ((q_min - nudged_zero) * scale).astype(np.float32)
    n_max = ((q_max - nudged_zero) * scale).astype(np.float32)
    clamped = np.clip(moved, n_min, n_max)
    inv_scale = (np.float32(1.0) / scale).astype(np.float32)  # as TensorFlow's kernel does
    q = (np.floor((clamped - n_min) * inv_scale + np.float32(0.5)) * scale + n_min).astype(
        np.float32)
    return np.moveaxis(q, -1, channel_axis) if channel_axis is not None and x.ndim >= 2 else q


def quantize_values(values, num_bits=DEFAULT_NUM_BITS):
    """Fake-quantises checkpoint values as the quantized graph sees them (before folding)."""
    out = {}
    for name, value in values.items():
        layer, _, var = name.rpartition("/")
        if var == "weights":
            out[name] = fake_quant_numpy(value, num_bits, channel_axis=_channel_axis(name))
        elif var in ("gamma", "beta", "moving_mean", "moving_variance"):
            out[name] = fake_quant_numpy(value, num_bits)
        else:
            out[name] = value
    return out


def _shapes(spec):
    """What a spec fixes about the weights: each layer's name and channels."""
    return [(l.name, l.cin, l.cout, l.kernel) for l in layer_plan(spec) if l.kind != "pool"]


def find_model(path):
    """Resolves a run directory or prefix to ``(prefix, spec, values)``.

    The values are fake-quantised (:func:`quantize_values`) when the run's
    ``config.json`` says it was trained quantized.
    """
    prefix = rundir.find_checkpoint(path)
    values = checkpoint_values(prefix)
    config = rundir.read_config(prefix)  # read once: it gives the spec and the quantize switch
    found = rundir.shapes_spec(prefix, values)
    spec = config.model.network_spec() if config is not None else found
    said, held = _shapes(spec), _shapes(found)
    if said != held:
        layer = next(a for a, b in zip(said, held) if a != b) if len(said) == len(held) \
            else said[-1]
        raise UserError("%s does not belong to checkpoint %s: it describes a network of width "
                        "%s, skips %s, kernel_size %s (layer %s: %s), the weights one of width %s, "
                        "skips %s, kernel_size %s"
                        % (rundir.config_path(prefix), prefix, spec.width, list(spec.skips),
                           spec.kernel_size, layer[0], layer[1:], found.width,
                           sorted(found.skips, reverse=True), found.kernel_size))
    if config is not None and config.model.quantize:
        values = quantize_values(values, config.model.num_bits)
    return prefix, spec, values


def save_initial_model(prefix, spec, seed=0):
    """Saves a freshly initialised (untrained) network as a checkpoint, for baselines and tests.

    Args:
      prefix: checkpoint prefix to write, e.g. ``/tmp/untrained/model.ckpt-0``.
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      seed: graph-level random seed.

    Returns:
      The prefix.
    """
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        mind(tf.zeros([1, 32, 32, 6]), False, spec=spec, name=MODEL_SCOPE)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver(tf.global_variables(MODEL_SCOPE)).save(sess, prefix)
    return prefix


def load_folded_weights(sess, weights, scope=MODEL_SCOPE, prefix=""):
    """Loads folded ``{name: array}`` weights into the graph's ``scope`` variables.

    Args:
      sess: the session.
      weights: ``{variable name: array}``.
      scope: the variables to load.
      prefix: what the variables' names have before the weights' names (a network built
        under an outer scope).

    Raises:
      UserError: if a variable is missing from ``weights`` (another
        architecture) or has another shape (another width).
    """
    for var in tf.global_variables(scope):
        name = var.op.name[len(prefix):] if var.op.name.startswith(prefix) else var.op.name
        if name not in weights:
            raise UserError("the checkpoint lacks %s: it was trained with another network "
                            "architecture" % name)
        if list(weights[name].shape) != var.shape.as_list():
            raise UserError("the checkpoint does not fit: %s has shape %s, the network "
                            "expects %s (%s?)" % (name, list(weights[name].shape),
                                                  var.shape.as_list(), rundir.shape_hint(
                                                      name, weights[name].shape, var.shape)))
        var.load(weights[name], sess)


class FoldedGraph(object):
    """A graph of the folded network for one image size, in its own session.

    Subclasses build their ops in ``_build(spec)``; this class makes the graph
    (on ``device``: the GPU when there is one), the session, loads the folded
    weights and finalises the graph, so nothing can be added per call.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      height: image height.
      width: image width.
      weights: folded ``{name: array}`` (:func:`fold_batch_norm`).
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).

    Attributes:
      graph_rewrites: whether Grappler rewrites the graph on a CPU (a class attribute; on a
        GPU it always does, for its layout optimizer); ``config``: the session's config.

    Raises:
      UserError: if ``weights`` do not fit the network.
    """

    cpu_devices = None  # subclasses spreading work over virtual CPU devices set this
    graph_rewrites = True  # False where a graph's rewrites cost more than they save

    def __init__(self, spec, height, width, weights, device=None, threads=None):
        self.height, self.width = int(height), int(width)
        self.graph = tf.Graph()
        self.sess = None
        with self.graph.as_default(), tf.device(device or default_device()):
            self._build(spec)
            self.config = session_config(threads, cpu_devices=self.cpu_devices,
                                         graph_rewrites=self.graph_rewrites or gpu_available())
            self.sess = tf.Session(graph=self.graph, config=self.config)
            load_folded_weights(self.sess, weights)
        self.graph.finalize()

    def _build(self, spec):
        raise TypeError("%s must define _build(spec)" % type(self).__name__)

    def close(self):
        """Releases the session."""
        if self.sess is not None:
            self.sess.close()
            self.sess = None


class Predictor(FoldedGraph):
    """The folded network's forward pass for one image size: middle frames of pairs.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      height: image height.
      width: image width.
      weights: folded ``{name: array}`` (:func:`fold_batch_norm`).
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).
      batch_size: pairs per ``sess.run``.

    Raises:
      UserError: if ``weights`` do not fit the network.
    """

    def __init__(self, spec, height, width, weights, device=None, threads=None, batch_size=8):
        self.batch_size = int(batch_size)
        super(Predictor, self).__init__(spec, height, width, weights, device, threads)

    def _build(self, spec):
        self.inputs = tf.placeholder(tf.float32, [None, self.height, self.width, 6], "inputs")
        self.prediction = mind(self.inputs, False, spec=spec, folded=True,
                               name=MODEL_SCOPE)  # [B, H, W, 3]

    def predict(self, inputs):
        """Middle frames ``[N, H, W, 3]`` of ``[N, H, W, 6]`` pairs (frames t, t+2) in [0, 1].

        Raises:
          UserError: if the pairs are not ``[N, height, width, 6]``.
        """
        inputs = np.asarray(inputs, np.float32)
        if inputs.ndim != 4 or inputs.shape[1:] != (self.height, self.width, 6):
            raise UserError("pairs must be [N, %d, %d, 6], got %s"
                            % (self.height, self.width, list(inputs.shape)))
        out = [np.zeros((0, self.height, self.width, 3), np.float32)]
        for i in range(0, len(inputs), self.batch_size):
            out.append(self.sess.run(self.prediction,
                                     {self.inputs: inputs[i:i + self.batch_size]}))
        return np.concatenate(out)
