"""Function-preserving widening of a trained MIND (Net2WiderNet), in numpy.

To rank a wider network against a trained narrow one on the same budget, the
wider one starts as the *same function*: every hidden layer keeps its channels
and gains copies of randomly chosen ones (Chen, Goodfellow, Shlens,
"Net2Net: Accelerating Learning via Knowledge Transfer", ICLR 2016). A copy
has its original's incoming weights and batch-norm parameters, so its
activations equal the original's in training and in inference mode (batch
statistics of equal channels are equal); every layer that reads the copies
splits the original's outgoing weights among them, fractions summing to one,
so its input is unchanged. The fractions are not equal (``noise``): copies with
equal outgoing weights would get equal gradients and stay copies for ever.

:func:`widen_values` works on the ``{name: array}`` of
:func:`vidcorr.io.rundir.checkpoint_values`, walking the layer plan of
:mod:`vidcorr.model.spec` (the skips' concatenations included); the trainer uses
it for ``train.init_widen``. It is exact for float networks; a quantised
network's ranges change with the split weights.
"""

import numpy as np

from vidcorr.model.spec import CHANNEL_AXIS, CONVS_PER_ENCODER_BLOCK, MODEL_SCOPE, layer_plan

__all__ = ["BN_NAMES", "widen_values", "widening_problem"]

BN_NAMES = ("gamma", "beta", "moving_mean", "moving_variance")
_INPUT_AXIS = {"conv": 2, "up": 3, "output": 2}  # input channels in a layer's weights


def widening_problem(spec, target):
    """Why a network of ``spec`` cannot be widened into one of ``target`` (None if it can).

    Args:
      spec: the trained network's :class:`vidcorr.model.spec.NetworkSpec`.
      target: the wider network's spec.

    Returns:
      A message, or None.
    """
    differ = [f for f in ("activation", "leaky_alpha", "output_kernel", "skips", "residual",
                          "kernel_size") if getattr(spec, f) != getattr(target, f)]
    if differ:
        return "the networks differ in more than width (%s: %r against %r)" % (
            differ[0], getattr(spec, differ[0]), getattr(target, differ[0]))
    for old, new in zip(layer_plan(spec), layer_plan(target)):
        if new.cout < old.cout:
            return ("width %g is narrower than the trained %g (%s: %d channels against %d)"
                    % (target.width, spec.width, new.name, new.cout, old.cout))
    return None


def _split_fractions(mapping, rng, noise):
    """Per new input channel, the share of its original's outgoing weights it takes.

    The shares of the copies of one original sum to one; with ``noise`` > 0 they
    differ by up to that fraction of the mean share.
    """
    fractions = np.ones(len(mapping), np.float64)
    for original in np.unique(mapping):
        copies = np.flatnonzero(mapping == original)
        if len(copies) > 1:
            share = 1.0 + noise * rng.uniform(-1.0, 1.0, len(copies))
            fractions[copies] = share / share.sum()
    return fractions


def _shape(axis, length):
    shape = [1, 1, 1, 1]
    shape[axis] = length
    return shape


def widen_values(values, spec, width, seed=0, noise=0.1, scope=MODEL_SCOPE):
    """The variables of a wider network computing the same function.

    Args:
      values: ``{name: array}``, the trained network's variables (``<scope>/<layer>/
        weights``, ``biases`` of the output layer, ``bn/gamma`` and so on).
      spec: its :class:`vidcorr.model.spec.NetworkSpec`.
      width: the new width multiplier; every layer must keep at least its channels.
      seed: seeds the choice of copied channels and the split of their weights.
      noise: how unequal the copies' shares of the outgoing weights are (0: equal,
        and the copies stay copies under training).

    Returns:
      ``(widened, target)``: ``{name: array}`` of the same names, float32, and the
      wider network's spec.

    Raises:
      ValueError: if ``width`` is narrower than ``spec``'s anywhere, ``noise`` is
        outside [0, 1), or ``values`` lacks a variable of the plan.
    """
    if not 0 <= noise < 1:
        raise ValueError("noise must be in [0, 1), got %r" % (noise,))
    target = spec.replace(width=width)
    problem = widening_problem(spec, target)
    if problem:
        raise ValueError("cannot widen: " + problem)
    rng = np.random.RandomState(seed)
    widened = dict(values)

    def get(name):
        key = "%s/%s" % (scope, name)
        if key not in values:
            raise ValueError("cannot widen: the checkpoint lacks %s" % key)
        return np.asarray(values[key], np.float64)

    def put(name, value):
        widened["%s/%s" % (scope, name)] = value.astype(np.float32)

    current = np.arange(layer_plan(spec)[0].cin)  # new channel -> original, of the input
    levels = {}  # encoder level -> the mapping of its features
    previous_cout = None  # the previous layer's channels in the trained network
    for old, new in zip(layer_plan(spec), layer_plan(target)):
        if old.kind == "pool":
            levels[int(old.name[3:old.name.index("/")])] = current
            continue
        mapping = current
        if old.skip is not None:  # [up's channels, the skip's] in both networks
            mapping = np.concatenate([current, levels[old.skip] + previous_cout])
        weights = get(old.name + "/weights")
        in_axis = _INPUT_AXIS[old.kind]
        weights = np.take(weights, mapping, axis=in_axis) * \
            _split_fractions(mapping, rng, noise).reshape(_shape(in_axis, len(mapping)))
        if old.kind == "output":
            put(old.name + "/weights", weights)
            continue
        copies = rng.randint(0, old.cout, new.cout - old.cout)
        current = np.concatenate([np.arange(old.cout), copies])  # this layer's outputs
        put(old.name + "/weights", np.take(weights, current, axis=CHANNEL_AXIS[old.kind]))
        for bn in BN_NAMES:
            put("%s/bn/%s" % (old.name, bn), get("%s/bn/%s" % (old.name, bn))[current])
        if old.name == "enc1/conv%d" % CONVS_PER_ENCODER_BLOCK:
            levels[0] = current
        previous_cout = old.cout
    return widened, target
