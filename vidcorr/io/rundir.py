"""Run directories: the one owner of their layout, ``config.json``, checkpoints and the lock.

A run directory (``train.run_dir``, an exported model folder) holds the
resolved ``config.json``, checkpoints ``model.ckpt-<step>`` with TensorFlow's
``checkpoint`` index, TensorBoard event files, an exported model's ``card.json``, and,
while a training process owns it, a lock. Every module asks here for these names
(:func:`checkpoint_prefix`, :func:`card_path`, :func:`has_checkpoint`,
:func:`event_files`, :func:`holds_run`).

* :func:`read_config` / :func:`write_config`: the run's config (written atomically).
* :func:`find_checkpoint`, :func:`checkpoint_variables`, :func:`checkpoint_step`:
  finding a checkpoint and reading it, with one-line errors for missing or damaged files.
* :func:`spec_from_checkpoint`: the network a checkpoint holds, from its ``config.json``
  or, without one, from its weights' shapes.
* :func:`restore_matching` restores the variables a checkpoint has (by name, with
  matching shapes) and ignores the rest, like TF-Slim's ``ignore_missing_vars``:
  a float checkpoint initialises a quantized graph, a trained model seeds a
  fine-tune without its optimizer state.
* :class:`RunLock`: an OS file lock (``flock``) on ``<run_dir>/.lock``. The kernel
  releases it when the process ends, however it ends, so a killed run never
  leaves a stale lock; a second training of the same directory is refused.
"""

import errno
import glob
import json
import os
import re
import sys

from vidcorr.compat import tf
from vidcorr.errors import UserError, first_line
from vidcorr.io.files import atomic_write
from vidcorr.model.config import config_from_dict
from vidcorr.model.spec import MODEL_SCOPE, spec_from_shapes

__all__ = ["CONFIG_FILE", "CHECKPOINT_NAME", "LOCK_FILE", "CARD_FILE", "CHECKPOINT_INDEX",
           "checkpoint_prefix", "card_path", "has_checkpoint", "event_files", "holds_run",
           "is_model_file", "shape_hint",
           "config_path", "read_config",
           "write_config", "find_checkpoint", "checkpoint_variables", "checkpoint_values",
           "checkpoint_step", "spec_from_checkpoint", "shapes_spec",
           "restore_matching", "damaged", "restore_all", "RunLock"]

CONFIG_FILE = "config.json"
CHECKPOINT_NAME = "model.ckpt"
LOCK_FILE = ".lock"
CARD_FILE = "card.json"  # an exported model's card
CHECKPOINT_INDEX = "checkpoint"  # TensorFlow's list of a folder's checkpoints
EVENTS_PREFIX = "events."  # TensorBoard's event files: events.out.tfevents.*


def checkpoint_prefix(folder, step):
    """The prefix of the checkpoint of ``step`` in ``folder``."""
    return os.path.join(folder, "%s-%d" % (CHECKPOINT_NAME, step))


def card_path(path):
    """The ``card.json`` of a model folder or beside a checkpoint prefix."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    return os.path.join(folder, CARD_FILE)


def has_checkpoint(folder):
    """Whether ``folder`` holds TensorFlow's checkpoint index (a checkpoint was saved)."""
    return os.path.isfile(os.path.join(folder, CHECKPOINT_INDEX))


def event_files(folder):
    """The TensorBoard event files in ``folder``."""
    return glob.glob(os.path.join(glob.escape(folder), EVENTS_PREFIX + "out.tfevents.*"))


def is_model_file(name):
    """Whether a file name is one an exported model folder holds (its card, config,
    checkpoint index and the checkpoint's files; no ``.meta``, no optimizer state)."""
    return name in (CARD_FILE, CONFIG_FILE, CHECKPOINT_INDEX) or bool(re.match(
        r"^%s-\d+\.(index|data-\d+-of-\d+)$" % re.escape(CHECKPOINT_NAME), name))


def holds_run(folder):
    """Whether ``folder`` holds a training run (a checkpoint or event files)."""
    return os.path.isdir(folder) and any(
        name == CHECKPOINT_INDEX or name.startswith(EVENTS_PREFIX) for name in os.listdir(folder))


def config_path(path):
    """The ``config.json`` of a run directory or beside a checkpoint prefix."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    return os.path.join(folder, CONFIG_FILE)


def read_config(path):
    """The :class:`vidcorr.model.config.Config` of a run directory or checkpoint prefix.

    Returns:
      The config, or None when there is no ``config.json``.

    Raises:
      UserError: if the file is not valid JSON or not a valid config.
    """
    path = config_path(path)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        raise UserError("cannot read %s: %s" % (path, err))
    return config_from_dict(data, origin=path)


def write_config(folder, config):
    """Writes ``config`` as ``<folder>/config.json`` atomically; returns the path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, CONFIG_FILE)
    atomic_write(path, json.dumps(config.to_dict(), indent=2, sort_keys=True))
    return path


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
    if not isinstance(path, (str, os.PathLike)):
        raise UserError("a checkpoint is a run directory or checkpoint prefix (a path), "
                        "got %s" % type(path).__name__)
    path = os.fspath(path)
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
    reason = first_line(err)
    if reason.rstrip(":").strip().lower() in ("graph execution error", ""):
        reason = "its data could not be decoded"
    return "checkpoint %s is damaged or truncated (%s): %s" % (prefix, ", ".join(files), reason)


def restore_all(saver, sess, prefix):
    """``saver.restore`` with a one-line :class:`UserError` for damaged files."""
    try:
        saver.restore(sess, prefix)
    except (tf.errors.OpError, ValueError, IndexError) as err:
        if isinstance(err, tf.errors.NotFoundError) and "not found in checkpoint" in str(err):
            raise
        raise UserError(damaged(prefix, err))


def checkpoint_variables(prefix):
    """``{name: shape}`` of the variables a checkpoint holds.

    Raises:
      UserError: if the checkpoint's index cannot be read.
    """
    try:
        return {name: list(shape) for name, shape in tf.train.list_variables(prefix)}
    except (tf.errors.OpError, ValueError) as err:
        raise UserError("cannot read checkpoint %s: %s" % (prefix, first_line(err)))


def checkpoint_values(prefix, scope=MODEL_SCOPE):
    """The network's variables in a checkpoint, as ``{name: array}`` (optimizer state skipped).

    Raises:
      UserError: if the checkpoint cannot be read or holds no network.
    """
    names = list(checkpoint_variables(prefix))
    try:
        reader = tf.train.load_checkpoint(prefix)
        values = {n: reader.get_tensor(n) for n in names
                  if n.startswith(scope + "/") and "Adam" not in n}
    except (tf.errors.OpError, ValueError, IndexError) as err:  # truncated data: IndexError
        raise UserError(damaged(prefix, err))
    if not values:
        raise UserError("checkpoint %s holds no %r network" % (prefix, scope))
    return values


def spec_from_checkpoint(prefix, values=None):
    """The :class:`vidcorr.model.spec.NetworkSpec` a checkpoint was trained with.

    Uses the run's ``config.json`` beside the checkpoint when there is one;
    otherwise infers width, skips and the kernel head from the variable shapes
    (:func:`vidcorr.model.spec.spec_from_shapes`: activation ReLU, residual "none").

    Args:
      prefix: a checkpoint prefix.
      values: its ``{name: array}`` if already read (:func:`checkpoint_values`).

    Raises:
      UserError: if the checkpoint cannot be read or its shapes fit no MIND network.
    """
    config = read_config(prefix)
    if config is not None:
        return config.model.network_spec()
    return shapes_spec(prefix, values if values is not None else checkpoint_variables(prefix))


def shapes_spec(prefix, values):
    """:func:`vidcorr.model.spec.spec_from_shapes` of a checkpoint's ``{name: array or shape}``.

    Raises:
      UserError: naming the checkpoint, if the shapes fit no MIND network.
    """
    try:
        return spec_from_shapes({name: getattr(value, "shape", value)
                                 for name, value in values.items()})
    except ValueError as err:
        raise UserError("checkpoint %s is not a MIND network: %s" % (prefix, err))


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


def shape_hint(name, there, here):
    """Which network key tells two networks apart whose variable ``name`` has the shapes
    ``there`` and ``here``: the output head's size is ``model.kernel_size`` (its outputs)
    or ``model.output_kernel`` (its window); other layers' channels, ``model.width``."""
    there, here = list(there), list(here)
    if name.split("/")[-2:-1] == ["output"]:
        if len(there) == 4 and len(here) == 4 and there[:2] != here[:2]:
            return "a different model.output_kernel"
        if there[-1] != here[-1]:
            return "a different model.kernel_size: the output head has %d outputs there and " \
                   "%d here" % (there[-1], here[-1])
    return "a different model.width or model.skips"


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
    shapes = checkpoint_variables(prefix)
    restore, missing = [], []
    for var in var_list:
        name = var.op.name
        if name not in shapes:
            missing.append(name)
        elif list(shapes[name]) != var.shape.as_list():
            raise UserError("checkpoint %s does not fit this network: %s has shape %s there but "
                            "%s here (%s?)" % (prefix, name, list(shapes[name]),
                                               var.shape.as_list(),
                                               shape_hint(name, shapes[name], var.shape)))
        else:
            restore.append(var)
    if not restore:
        raise UserError("checkpoint %s holds none of this network's variables" % prefix)
    if require_all and missing:
        raise UserError("checkpoint %s lacks %d variables, e.g. %s"
                        % (prefix, len(missing), missing[0]))
    restore_all(tf.train.Saver(restore), sess, prefix)
    return [v.op.name for v in restore], missing


# flock's errors on a file system that has no locks: no lock daemon (NFS), not supported
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS)


class RunLock(object):
    """An exclusive OS lock on a run directory, held while a process writes to it.

    Use as a context manager or call :meth:`acquire` / :meth:`release`. The lock
    is ``flock`` on ``<run_dir>/.lock``, which holds the owner's pid for the
    message a second process gets. On a file system without locks (an NFS mount
    without a lock daemon, some FUSE mounts) the run goes on unlocked after a
    warning through ``warn``: refusing would make such a disk unusable for training.

    Args:
      run_dir: the run directory (created if needed).
      warn: called with a one-line warning when the file system has no locks
        (default: printed to standard error).

    Raises:
      UserError: on :meth:`acquire` when another live process holds the lock.
    """

    def __init__(self, run_dir, warn=None):
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOCK_FILE)
        self._fd = None
        self._warn = warn or (lambda message: print(message, file=sys.stderr))
        self.locked = False  # True while the OS lock is held (False: no locks here)

    def acquire(self):
        """Takes the lock; returns self."""
        import fcntl  # POSIX; the support matrix is Linux
        if os.path.exists(self.run_dir) and not os.path.isdir(self.run_dir):
            raise UserError("run directory %s exists and is not a folder; choose another "
                            "train.run_dir (--run-dir)" % self.run_dir)
        try:
            os.makedirs(self.run_dir, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:  # a read-only mount, no permission, a full disk
            raise UserError("cannot write to run directory %s: %s" % (self.run_dir,
                                                                        first_line(err)))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.locked = True
        except OSError as err:
            if err.errno in _NO_LOCKS:
                self._warn("warning: the file system of %s has no file locks (%s); training "
                           "unlocked, so nothing stops a second training from writing to this "
                           "run directory at the same time" % (self.run_dir, err.strerror))
            else:
                owner = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise UserError("run directory %s is in use by another process (pid %s); "
                                    "wait for it to end or choose another train.run_dir"
                                    % (self.run_dir, owner))
                raise UserError("cannot lock run directory %s: %s"
                                % (self.run_dir, first_line(err)))
        try:
            os.ftruncate(fd, 0)
            os.write(fd, ("%d\n" % os.getpid()).encode("ascii"))
        except OSError as err:
            os.close(fd)
            raise UserError("cannot write to run directory %s: %s" % (self.run_dir,
                                                                        first_line(err)))
        self._fd = fd
        return self

    def release(self, remove=False):
        """Releases the lock (closing the file releases it); ``remove`` deletes the file."""
        if self._fd is None:
            return
        if remove and os.path.exists(self.path):
            os.remove(self.path)
        os.close(self._fd)
        self._fd, self.locked = None, False

    @property
    def held(self):
        return self._fd is not None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
