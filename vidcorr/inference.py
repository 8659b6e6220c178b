"""Inference weights: read a checkpoint, recover its network spec, fold batch norm.

Matching evaluates thousands of backward passes, so it runs on the *folded*
network: each convolution absorbs the batch norm that follows it,
``W' = W * s`` and ``b' = beta - mean * s`` with ``s = gamma / sqrt(var + eps)``
per output channel. The result is the same function (up to float rounding)
with fewer ops per pass.
"""

import json
import os

import numpy as np

from vidcorr import checkpoints
from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.config import config_from_dict
from vidcorr.network import BN_EPSILON, NetworkSpec, channel_plan, network_spec

__all__ = ["checkpoint_values", "fold_batch_norm", "spec_from_checkpoint", "MODEL_SCOPE"]

MODEL_SCOPE = "mind"
_CHANNEL_AXIS = {"up": 2}  # transposed convolutions keep output channels on axis 2


def checkpoint_values(prefix, scope=MODEL_SCOPE):
    """The network's variables in a checkpoint, as ``{name: array}`` (optimizer state skipped).

    Raises:
      UserError: if the checkpoint cannot be read or holds no network.
    """
    try:
        names = [n for n, _ in tf.train.list_variables(prefix)]
    except (tf.errors.OpError, ValueError) as err:
        raise UserError("cannot read checkpoint %s: %s" % (prefix, err))
    reader = tf.train.load_checkpoint(prefix)
    values = {n: reader.get_tensor(n) for n in names
              if n.startswith(scope + "/") and "Adam" not in n}
    if not values:
        raise UserError("checkpoint %s holds no %r network" % (prefix, scope))
    return values


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
            axis = _CHANNEL_AXIS.get(layer.rpartition("/")[2], 3)
            shape = [1] * value.ndim
            shape[axis] = -1
            folded[name] = (value * scale.reshape(shape)).astype(np.float32)
            folded[layer + "/biases"] = (values[bn + "beta"] -
                                         values[bn + "moving_mean"] * scale).astype(np.float32)
        else:
            folded[name] = value
    return folded


def spec_from_checkpoint(prefix, values=None):
    """The :class:`NetworkSpec` a checkpoint was trained with.

    Uses the run's ``config.json`` beside the checkpoint when there is one;
    otherwise infers width and skips from the variable shapes (activation
    defaults to ReLU).

    Raises:
      UserError: if the shapes fit no MIND network.
    """
    config_path = os.path.join(os.path.dirname(prefix), "config.json")
    if os.path.isfile(config_path):
        with open(config_path) as f:
            return network_spec(config_from_dict(json.load(f), origin=config_path).model)
    values = values if values is not None else checkpoint_values(prefix)
    try:
        first = values[MODEL_SCOPE + "/enc1/conv1/weights"].shape[3]
        out_kernel = values[MODEL_SCOPE + "/output/weights"].shape[0]
    except KeyError:
        raise UserError("checkpoint %s is not a MIND network" % prefix)
    width = first / 96.0
    enc, dec = channel_plan(width)
    skips = []
    for level in range(5):
        block = 5 - level
        cin = values[MODEL_SCOPE + "/dec%d/conv1/weights" % block].shape[2]
        if cin == dec[block - 1] + (enc[0] if level == 0 else enc[level - 1]):
            skips.append(level)
    return NetworkSpec(width=width, output_kernel=out_kernel, skips=tuple(sorted(skips)[::-1]))


def find_model(path):
    """Resolves a run directory or prefix to ``(prefix, spec, values)``."""
    prefix = checkpoints.find_checkpoint(path)
    values = checkpoint_values(prefix)
    return prefix, spec_from_checkpoint(prefix, values), values
