"""Finding and restoring checkpoints, with errors a user can act on.

``restore_matching`` restores the variables a checkpoint has (by name, with
matching shapes) and ignores the rest, like TF-Slim's ``ignore_missing_vars``:
a float checkpoint initialises a quantized graph, a trained model seeds a
fine-tune without its optimizer state.
"""

import glob
import os

from vidcorr.compat import tf
from vidcorr.errors import UserError

__all__ = ["find_checkpoint", "checkpoint_step", "restore_matching", "damaged", "restore_all"]


def find_checkpoint(path):
    """Resolves a run directory or checkpoint prefix to a checkpoint prefix.

    Args:
      path: a directory with a ``checkpoint`` file (its latest is used), or a
        checkpoint prefix such as ``runs/x/model.ckpt-1000``.

    Returns:
      The checkpoint prefix.

    Raises:
      UserError: if nothing loadable is there.
    """
    if os.path.isdir(path):
        state = tf.train.get_checkpoint_state(path)
        if state is None or not state.model_checkpoint_path:
            raise UserError("no checkpoint in directory %s" % path)
        # The checkpoint file may name an absolute path elsewhere (a copied or moved
        # run, a packaged model): the file of that name here wins.
        local = os.path.join(path, os.path.basename(state.model_checkpoint_path))
        if os.path.isfile(local + ".index"):
            return local
        if os.path.isfile(state.model_checkpoint_path + ".index"):
            return state.model_checkpoint_path
        raise UserError("the checkpoint file in %s names %s, which does not exist"
                        % (path, state.model_checkpoint_path))
    if os.path.isfile(path + ".index"):
        return path
    raise UserError("checkpoint not found: %s (give a run directory or a checkpoint prefix "
                    "like runs/x/model.ckpt-1000)" % path)


def damaged(prefix, err):
    """The one-line message for a checkpoint whose files cannot be read."""
    files = sorted(glob.glob(glob.escape(prefix) + ".data-*")) or [prefix + ".index"]
    reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return "checkpoint %s is damaged or truncated (%s): %s" % (prefix, ", ".join(files), reason)


def restore_all(saver, sess, prefix):
    """``saver.restore`` with a one-line :class:`UserError` for damaged files."""
    try:
        saver.restore(sess, prefix)
    except (tf.errors.OpError, ValueError, IndexError) as err:
        if isinstance(err, tf.errors.NotFoundError) and "not found in checkpoint" in str(err):
            raise
        raise UserError(damaged(prefix, err))


def checkpoint_step(prefix):
    """The ``global_step`` stored in a checkpoint (0 when it has none).

    Raises:
      UserError: if the checkpoint's files are damaged.
    """
    try:
        return int(tf.train.load_variable(prefix, "global_step"))
    except (tf.errors.NotFoundError, ValueError):
        return 0
    except (tf.errors.OpError, IndexError) as err:
        raise UserError(damaged(prefix, err))


def restore_matching(sess, prefix, var_list, require_all=False):
    """Restores the variables of ``var_list`` that the checkpoint holds.

    Args:
      sess: the session.
      prefix: a checkpoint prefix.
      var_list: candidate variables.
      require_all: raise if any variable is missing from the checkpoint.

    Returns:
      ``(restored, missing)``: lists of variable names.

    Raises:
      UserError: when shapes disagree (e.g. a checkpoint of another network
        width), when nothing matches, or when ``require_all`` and some are
        missing.
    """
    try:
        shapes = tf.train.list_variables(prefix)
    except (tf.errors.OpError, ValueError) as err:
        raise UserError("cannot read checkpoint %s: %s" % (prefix, err))
    shapes = dict(shapes)
    restore, missing = [], []
    for var in var_list:
        name = var.op.name
        if name not in shapes:
            missing.append(name)
        elif list(shapes[name]) != var.shape.as_list():
            raise UserError("checkpoint %s does not fit this network: %s has shape %s there but "
                            "%s here (a different model.width?)"
                            % (prefix, name, list(shapes[name]), var.shape.as_list()))
        else:
            restore.append(var)
    if not restore:
        raise UserError("checkpoint %s holds none of this network's variables" % prefix)
    if require_all and missing:
        raise UserError("checkpoint %s lacks %d variables, e.g. %s"
                        % (prefix, len(missing), missing[0]))
    restore_all(tf.train.Saver(restore), sess, prefix)
    return [v.op.name for v in restore], missing
