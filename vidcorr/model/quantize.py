"""The float-to-quantized switch: fake quantisation through the variable pipeline.

``quantize_transform(quantize, num_bits)`` returns a variable transform (see
:mod:`vidcorr.model.layers`) that passes convolution weights (one range per output
channel) and batch-norm parameters (one range per tensor) through
``tf.quantization.fake_quant_with_min_max_vars[_per_channel]``.

* ``quantize`` may be a Python bool (``False`` returns ``None``: the graph is the
  float graph, op for op) or a boolean tensor, e.g. a
  ``tf.placeholder_with_default(False, [])``, so one graph trains in float and
  fine-tunes quantized by flipping a feed.
* The ranges are the current min and max of each tensor (widened to contain
  zero), the way ``contrib.quantize`` treats weights. No range variables are
  created, so a float checkpoint restores into a quantized graph unchanged.
* Gradients are straight-through: ``d fq(w) / d w = 1`` everywhere, including
  the weights that fall just outside the zero-nudged range.
"""

from vidcorr.compat import smart_cond, static_bool, tf
from vidcorr.model.spec import DEFAULT_NUM_BITS, NUM_BITS_RANGE

__all__ = ["QUANTIZED_NAMES", "check_num_bits", "fake_quant", "quantize_transform"]

QUANTIZED_NAMES = ("weights", "gamma", "beta", "moving_mean", "moving_variance")
_MIN_RANGE = 1e-6


def check_num_bits(num_bits):
    """Raises ValueError unless ``num_bits`` is an integer in ``NUM_BITS_RANGE``."""
    low, high = NUM_BITS_RANGE
    if isinstance(num_bits, bool) or not isinstance(num_bits, int) or not low <= num_bits <= high:
        raise ValueError("num_bits must be an integer from %d to %d, got %r"
                         % (low, high, num_bits))
    return num_bits


def fake_quant(value, num_bits=DEFAULT_NUM_BITS, channel_axis=None, narrow_range=False):
    """Fake-quantises ``value`` on its own range, with a straight-through gradient.

    Args:
      value: float tensor.
      num_bits: bit width, 2 to 16.
      channel_axis: axis with one range per index (per-channel), or ``None``
        for a single range over the whole tensor.
      narrow_range: use ``[1, 2^bits - 1]`` instead of ``[0, 2^bits - 1]``.

    Returns:
      A tensor of the same shape whose values lie on the quantisation grid.

    Raises:
      ValueError: for ``num_bits`` outside [2, 16] or a bad ``channel_axis``.
    """
    check_num_bits(num_bits)
    ndims = value.shape.ndims
    with tf.name_scope("fake_quant"):
        if channel_axis is None or ndims is None or ndims < 2:
            lo = tf.minimum(tf.reduce_min(value), 0.0)
            hi = tf.maximum(tf.reduce_max(value), 0.0)
            hi = tf.maximum(hi, lo + _MIN_RANGE)
            q = tf.quantization.fake_quant_with_min_max_vars(
                tf.stop_gradient(value), tf.stop_gradient(lo), tf.stop_gradient(hi),
                num_bits=num_bits, narrow_range=narrow_range)
        else:
            if not -ndims <= channel_axis < ndims:
                raise ValueError("channel_axis %d out of range for a %d-D tensor"
                                 % (channel_axis, ndims))
            axis = channel_axis % ndims
            perm = [i for i in range(ndims) if i != axis] + [axis]
            moved = tf.transpose(value, perm) if axis != ndims - 1 else value  # [..., C]
            reduce_axes = list(range(ndims - 1))
            lo = tf.minimum(tf.reduce_min(moved, axis=reduce_axes), 0.0)  # [C]
            hi = tf.maximum(tf.reduce_max(moved, axis=reduce_axes), 0.0)  # [C]
            hi = tf.maximum(hi, lo + _MIN_RANGE)
            q = tf.quantization.fake_quant_with_min_max_vars_per_channel(
                tf.stop_gradient(moved), tf.stop_gradient(lo), tf.stop_gradient(hi),
                num_bits=num_bits, narrow_range=narrow_range)
            if axis != ndims - 1:
                inverse = [0] * ndims
                for i, p in enumerate(perm):
                    inverse[p] = i
                q = tf.transpose(q, inverse)
        # Straight-through estimator: forward value q, gradient of the identity.
        return value + tf.stop_gradient(q - value)


def quantize_transform(quantize, num_bits=DEFAULT_NUM_BITS, names=QUANTIZED_NAMES, narrow_range=False):
    """A variable transform that fake-quantises parameters when ``quantize`` is on.

    Args:
      quantize: Python bool or scalar boolean tensor.
      num_bits: bit width, 2 to 16 (8 by default).
      names: the parameter names to quantise (others pass unchanged).
      narrow_range: see :func:`fake_quant`.

    Returns:
      ``None`` when ``quantize`` is ``False`` (nothing to add to the graph),
      otherwise a callable ``transform(value, name, channel_axis)``.

    Raises:
      ValueError: for a bad ``num_bits`` or a non-boolean ``quantize``.
    """
    check_num_bits(num_bits)
    if static_bool(quantize, "quantize") is False:
        return None
    names = frozenset(names)

    def transform(value, name, channel_axis):
        if name not in names:
            return value
        return smart_cond(
            quantize,
            lambda: fake_quant(value, num_bits, channel_axis, narrow_range),
            lambda: tf.identity(value),
            name=name + "_quantize")

    return transform
