"""The single TensorFlow import point of vidcorr.

Every other module does ``from vidcorr.compat import tf``. This module imports
``tensorflow.compat.v1`` and disables v2 behaviour, so the same graph-mode code
runs on TensorFlow 1.15 (Python 3.7) and on TensorFlow 2.x (Python 3.8+, as
setup.py installs it). It also holds the few helpers whose behaviour differs
between the two lines or that depend on the device: ``smart_cond``, GPU
detection and session configuration. Before the import it limits glibc to one heap
arena (:mod:`vidcorr.malloc`).
"""

import os
import warnings

from vidcorr.malloc import limit_arenas

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
limit_arenas()  # before TensorFlow starts its threads: see vidcorr.malloc
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import tensorflow.compat.v1 as tf  # noqa: E402  (the one TF import)
    from tensorflow.python.client import device_lib as _device_lib  # noqa: E402

tf.logging.set_verbosity(tf.logging.ERROR)
tf.disable_v2_behavior()

__all__ = [
    "tf",
    "TF_VERSION",
    "TF1",
    "smart_cond",
    "static_bool",
    "gpu_available",
    "default_device",
    "gpu_count",
    "tower_devices",
    "session_config",
]

TF_VERSION = tuple(int(p) for p in tf.__version__.split(".")[:2])
TF1 = TF_VERSION[0] == 1

if TF1:
    # TF 1.15's pfor reads an absl flag; an unparsed FLAGS then parses sys.argv and
    # fails on the host program's own options (pytest's -q, a script's --checkpoint).
    if not tf.flags.FLAGS.is_parsed():
        tf.flags.FLAGS.mark_as_parsed()

_GPU_AVAILABLE = None


def static_bool(pred, name="pred"):
    """Returns the Python value of ``pred`` when it is known at graph time.

    Args:
      pred: a Python bool, a numpy bool or a scalar boolean tensor.
      name: the argument's name, used in error messages.

    Returns:
      ``True`` or ``False`` when the value is a constant, ``None`` when ``pred``
      is a tensor whose value is only known at run time (e.g. a placeholder).

    Raises:
      ValueError: if ``pred`` is neither a bool nor a scalar boolean tensor.
    """
    if isinstance(pred, bool) or type(pred).__name__ == "bool_":
        return bool(pred)
    if isinstance(pred, (tf.Tensor, tf.Variable)):
        if pred.dtype.base_dtype != tf.bool:
            raise ValueError("%s must be a boolean tensor, got dtype %s" % (name, pred.dtype))
        if pred.shape.ndims not in (None, 0):
            raise ValueError("%s must be a scalar, got shape %s" % (name, pred.shape))
        if isinstance(pred, tf.Variable):
            return None
        value = tf.get_static_value(pred)
        return None if value is None else bool(value)
    raise ValueError("%s must be a Python bool or a boolean tensor, got %r" % (name, pred))


def smart_cond(pred, true_fn, false_fn, name=None):
    """``tf.cond`` that builds a single branch when ``pred`` is a constant.

    With a Python bool (or a constant tensor) only the selected function is
    called and no Switch/Merge is created; with a run-time tensor each branch's
    ops are created inside its own branch function, so only one branch runs.

    Args:
      pred: a Python bool or a scalar boolean tensor.
      true_fn: callable building the ``True`` branch.
      false_fn: callable building the ``False`` branch.
      name: optional name scope of the cond.

    Returns:
      The output of the selected branch.
    """
    value = static_bool(pred)
    if value is True:
        return true_fn()
    if value is False:
        return false_fn()
    return tf.cond(pred, true_fn, false_fn, name=name)


def gpu_available():
    """Returns True when TensorFlow can see at least one GPU (cached)."""
    global _GPU_AVAILABLE
    if _GPU_AVAILABLE is None:
        try:
            _GPU_AVAILABLE = bool(tf.config.experimental.list_physical_devices("GPU"))
        except AttributeError:  # pragma: no cover - very old builds
            _GPU_AVAILABLE = any(d.device_type == "GPU" for d in _device_lib.list_local_devices())
    return _GPU_AVAILABLE


def default_device():
    """The device for heavy work: the first GPU when there is one, else the CPU."""
    return "/device:GPU:0" if gpu_available() else "/device:CPU:0"


def gpu_count():
    """The number of GPUs TensorFlow can see."""
    if not gpu_available():
        return 0
    try:
        return len(tf.config.experimental.list_physical_devices("GPU"))
    except AttributeError:  # pragma: no cover - very old builds
        return sum(d.device_type == "GPU" for d in _device_lib.list_local_devices())


def tower_devices(count):
    """``count`` devices for data-parallel towers: GPUs when there are that many, else CPUs.

    CPU towers need a session made with ``session_config(cpu_devices=count)``
    (virtual CPU devices sharing the machine's cores).
    """
    kind = "GPU" if gpu_count() >= count else "CPU"
    return ["/device:%s:%d" % (kind, i) for i in range(count)]


def session_config(threads=None, cpu_devices=None, graph_rewrites=True):
    """A ``tf.ConfigProto`` with soft placement and GPU memory growth.

    Args:
      threads: optional number of intra-op threads (``None`` lets TF decide).
      cpu_devices: optional number of (virtual) CPU devices, for CPU towers.
      graph_rewrites: False turns Grappler's graph rewrites off (its meta optimizer), for a
        large graph whose rewrites cost more on its first run than they save.

    Returns:
      A ``tf.ConfigProto``.
    """
    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    if cpu_devices and cpu_devices > 1:
        config.device_count["CPU"] = int(cpu_devices)
    if threads:
        config.intra_op_parallelism_threads = int(threads)
        config.inter_op_parallelism_threads = max(1, min(2, int(threads)))
    if not graph_rewrites:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config
