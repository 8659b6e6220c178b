"""A new run's starting point (``train.init_from``): a checkpoint's network, or a widened one.

``train.init_from`` names a run, an exported model or a checkpoint prefix whose
network variables start a new run (its optimizer state and step are not taken:
the run is a fine-tune from step 0). Two cases:

* the same network: every network variable is restored by name and shape
  (:func:`vidcorr.io.rundir.restore_matching`, all required);
* ``train.init_widen`` and a narrower checkpoint: its values are widened to
  this run's ``model.width`` by :func:`vidcorr.model.widen.widen_values`, so the
  wider network starts as the same function (Net2WiderNet).

The checkpoint's own network is read from its ``config.json``, or, without one,
from its weights' shapes (:func:`vidcorr.io.rundir.spec_from_checkpoint`).
"""

from vidcorr.errors import UserError
from vidcorr.io import rundir
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.model.widen import widen_values

__all__ = ["initialise_from", "needs_widening", "widened_values"]

_FIRST = MODEL_SCOPE + "/enc1/conv1/weights"  # its output channels say the width


def needs_widening(prefix, variables):
    """Whether the checkpoint's network is narrower than ``variables``' (it differs at enc1).

    Args:
      prefix: the checkpoint prefix.
      variables: this run's network variables.
    """
    held = rundir.checkpoint_variables(prefix)
    ours = [v.shape.as_list() for v in variables if v.op.name == _FIRST]
    return _FIRST in held and bool(ours) and list(held[_FIRST]) != ours[0]


def widened_values(prefix, target, seed):
    """The checkpoint's network variables widened to the network ``target``.

    Args:
      prefix: the checkpoint prefix.
      target: this run's :class:`vidcorr.model.spec.NetworkSpec`.
      seed: the seed of the copied channels' choice and shares.

    Returns:
      ``(values, width)``: ``{name: array}`` for the wider network, and the
      checkpoint's own width.

    Raises:
      UserError: if the checkpoint is no MIND network or cannot widen to ``target``
        (narrower, or another architecture).
    """
    values = rundir.checkpoint_values(prefix)
    source = rundir.spec_from_checkpoint(prefix, values)
    try:
        widened, _ = widen_values(values, source, target.width, seed=seed)
    except ValueError as err:
        raise UserError("train.init_widen: %s into this network: %s" % (prefix, err))
    return widened, source.width


def initialise_from(sess, prefix, config, variables, log):
    """Loads ``train.init_from``'s network into this run's ``variables``.

    Args:
      sess: the run's session (variables already initialised).
      prefix: the checkpoint prefix ``train.init_from`` resolves to.
      config: the run's :class:`vidcorr.model.config.Config`.
      variables: the run's network variables.
      log: a function of one line.

    Raises:
      UserError: if the checkpoint lacks a variable or a shape differs (and
        ``train.init_widen`` does not apply), or cannot be widened to this network.
    """
    if config.train.init_widen and needs_widening(prefix, variables):
        target = config.model.network_spec()
        values, width = widened_values(prefix, target, config.train.seed)
        for var in variables:
            value = values.get(var.op.name)
            if value is None or list(value.shape) != var.shape.as_list():
                raise UserError("train.init_widen: %s does not fit this network: %s is %s"
                                % (prefix, var.op.name, "missing" if value is None
                                   else "%s there, %s here" % (list(value.shape),
                                                               var.shape.as_list())))
            var.load(value, sess)
        log("initialised %d network variables from %s, widened from width %g to %g "
            "(the same function)" % (len(variables), prefix, width, target.width))
        return
    restored, _ = rundir.restore_matching(sess, prefix, variables, require_all=True)
    log("initialised %d network variables from %s" % (len(restored), prefix))
