"""The training step, on one device or as data-parallel towers over several.

With one device (the default) the step is the network, its loss and the
optimizer's update, placed by TensorFlow (the GPU when there is one).

``train.num_devices: N`` (``scripts/train.py --devices N``) splits every
batch over N devices: the GPUs when there are that many, otherwise N virtual
CPU devices (:func:`vidcorr.compat.tower_devices`). The variables live on the
parameter device (the CPU) and are shared by every tower (the same names as a
single-device run, so checkpoints are interchangeable); each tower computes
its loss and gradients on its own device; the gradients are averaged on the
parameter device and applied once, as in TensorFlow's multi-GPU CIFAR-10
example and tensorpack's replicated trainers.

Batch norm: only the first tower updates the moving statistics, from its
share of the batch. Every share estimates the same population statistics; an
in-step average across devices would need a synchronisation in every layer
(sync batch norm); and one update per step keeps the decay the config says.
"""

import collections
import contextlib

from vidcorr.compat import tf, tower_devices
from vidcorr.model import kernels
from vidcorr.model.config import KERNEL_TERMS, TUNE_SCOPES
from vidcorr.model.warping import warp_frames
from vidcorr.model.losses import training_loss
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE

__all__ = ["Towers", "build_towers", "kernel_terms", "tuned_variables", "PARAMETER_DEVICE"]

PARAMETER_DEVICE = "/device:CPU:0"
_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")

Towers = collections.namedtuple("Towers", ["prediction", "loss", "train_op", "grads_and_vars",
                                           "variables", "devices"])


def _placer(device):
    """Variables on the parameter device, every other op on ``device``."""
    return lambda op: PARAMETER_DEVICE if op.type in _VARIABLE_OPS else device


def kernel_terms(endpoints, config):
    """The kernel head's per-frame blends, offsets, masses and warps the config's loss
    needs, cropped to the input size: ``{'blends': [B, h, w, 2, 3], 'offsets':
    [B, h, w, 2, 2], 'masses': [B, h, w, 2], 'warps': [B, h, w, 2, 3]}`` (only those the
    config's terms use). Blends and offsets are under each frame's softmax at
    ``train.frame_temperature``; the masses, shares of the network's own blend, at
    temperature 1; the warps are the padded input frames sampled at each pixel plus
    its offsets (so a centroid may reach outside the crop).

    Args:
      endpoints: the endpoints :func:`vidcorr.model.network.mind` filled.
      config: the :class:`vidcorr.model.config.Config`.
    """
    k, train, terms = config.model.kernel_size, config.train, {}
    temperature = train.frame_temperature
    if not k or not any(getattr(train, key) > 0 for key in KERNEL_TERMS):
        return terms
    top, left, height, width = endpoints["crop"]
    logits = endpoints["logits"][:, top:top + height, left:left + width]  # [B, h, w, 2K^2]
    if train.frame_mass:  # weighs the frame and warp terms; no gradient through the shares
        terms["masses"] = tf.stop_gradient(kernels.frame_masses(logits, k))  # [B, h, w, 2]
    if train.frame_weight > 0:
        blends = kernels.frame_blends(endpoints["padded"], endpoints["logits"], k, temperature)
        terms["blends"] = blends[:, top:top + height, left:left + width]  # [B, h, w, 2, 3]
    if train.symmetry_weight > 0 or train.smooth_weight > 0 or train.warp_weight > 0:
        terms["offsets"] = kernels.frame_offsets(logits, k, temperature)  # [B, h, w, 2, 2]
    if train.warp_weight > 0:
        terms["warps"] = warp_frames(endpoints["padded"], terms["offsets"], top, left)
    return terms


def tuned_variables(tune):
    """The network's trainable variables that ``train.tune`` lets the optimizer change:
    ``"all"``, ``"decoder"`` (the decoder blocks and the output layer) or ``"head"`` (the
    output layer)."""
    scopes = TUNE_SCOPES[tune]
    variables = tf.trainable_variables(MODEL_SCOPE)
    if scopes is None:
        return variables
    return [v for v in variables
            if v.op.name[len(MODEL_SCOPE) + 1:].split("/")[0].startswith(scopes)]


def build_towers(config, optimizer, inputs, targets, is_training, quantize, global_step,
                 layered=None):
    """Builds the towers' training step.

    Args:
      config: the :class:`vidcorr.model.config.Config` (``train.num_devices`` towers).
      optimizer: the optimizer whose ``apply_gradients`` takes the average.
      inputs: ``[B, h, w, 6]`` frames t and t+2, B a multiple of the towers.
      targets: ``[B, h, w, 3]`` middle frames.
      is_training: batch norm's switch (bool or tensor).
      quantize: the quantize switch (bool or tensor).
      global_step: incremented by the step.
      layered: ``[B]``, 1 for a layered triplet and 0 for a real one (the loss needs it
        when ``train.frame_real_weight`` < 1).

    Returns:
      :class:`Towers`: the whole batch's prediction ``[B, h, w, 3]`` and mean loss,
      the train op, the averaged ``(gradient, variable)`` pairs, the network's
      variables and the devices.
    """
    n = config.train.num_devices
    if n == 1:  # one step, placed by TensorFlow
        devices, shares_in, shares_tg, shares_ly = [None], [inputs], [targets], [layered]
    else:
        devices = tower_devices(n)
        shares_in = tf.split(inputs, n)  # n x [B/n, h, w, 6]
        shares_tg = tf.split(targets, n)  # n x [B/n, h, w, 3]
        shares_ly = [None] * n if layered is None else tf.split(layered, n)  # n x [B/n]
    predictions, losses, grads, variables = [], [], [], None
    for i, device in enumerate(devices):
        place = contextlib.ExitStack() if device is None else tf.device(_placer(device))
        scope = contextlib.ExitStack() if device is None else tf.name_scope("tower%d" % i)
        with place, scope, tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
            ends = {}
            # the towers after the first reuse the variables: their batch norms update
            # no moving statistics (see vidcorr.model.network.mind)
            pred = mind(shares_in[i], is_training, quantize, config.model.network_spec(),
                        config.model.num_bits, name=MODEL_SCOPE,
                        endpoints=ends)  # [B/n, h, w, 3]
            if i == 0:
                variables = tf.global_variables(MODEL_SCOPE)  # before optimizer slots
            loss = training_loss(pred, shares_tg[i], config.train, layered=shares_ly[i],
                                 **kernel_terms(ends, config))
            grads.append(optimizer.compute_gradients(
                loss, var_list=tuned_variables(config.train.tune)))
            predictions.append(pred)
            losses.append(loss)
    if n == 1:
        train_op = optimizer.apply_gradients(grads[0], global_step=global_step)
        return Towers(predictions[0], losses[0], train_op, grads[0], variables, devices)
    with tf.device(PARAMETER_DEVICE):
        averaged = [(tf.add_n([g for g, _ in per_tower]) / float(len(devices)), per_tower[0][1])
                    for per_tower in zip(*grads)]  # one (gradient, variable) per tower
        loss = tf.add_n(losses) / float(len(devices))  # equal shares: the batch mean
        prediction = tf.concat(predictions, axis=0)  # [B, h, w, 3]
        train_op = optimizer.apply_gradients(averaged, global_step=global_step)
    return Towers(prediction, loss, train_op, averaged, variables, devices)
