"""Batch normalisation on ``tf.nn.fused_batch_norm`` with a train/test switch.

``batch_norm(name, x, is_training)`` normalises an NHWC tensor with the fused
kernel, so it is as fast as the stock layer, while keeping what the stock layer
does not offer:

* ``is_training`` may be a Python bool (one branch is built, no cond) or a
  boolean tensor (``tf.cond``; each branch's ops are created inside its branch
  function, so exactly one fused op runs per step).
* The moving statistics are updated only by the training branch, as control
  dependencies of its output. Nothing is added to ``tf.GraphKeys.UPDATE_OPS``
  (ops created inside a cond branch there break every control dependency built
  on the collection; TensorFlow issue 14699), so a plain
  ``optimizer.minimize(loss)`` keeps the averages current.
* A variable pipeline: gamma, beta, moving mean and moving variance pass
  through a user transform (see :mod:`vidcorr.model.layers`) before the fused op;
  the quantize switch is one such transform.

Bessel's correction: in training mode the fused kernel normalises with the
biased batch variance (divide by ``n = B*H*W``) but returns the *unbiased* one
(divide by ``n - 1``). The moving variance is updated from that returned value,
so it converges to the unbiased variance, ``n / (n - 1)`` times the variance
used to normalise a batch. ``tests/model/test_batchnorm.py`` checks both.
"""

from vidcorr.compat import gpu_available, smart_cond, static_bool, tf
from vidcorr.model.layers import apply_transform, check_nhwc, get_variable

__all__ = ["batch_norm", "MIN_EPSILON"]

MIN_EPSILON = 1.001e-5  # cuDNN's lower bound, also applied by TensorFlow


def _check_args(x, is_training, decay, epsilon, data_format):
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format must be 'NHWC' or 'NCHW', got %r" % (data_format,))
    if data_format == "NCHW":
        if not gpu_available():
            raise ValueError("data_format='NCHW' is only supported on a GPU; this machine has "
                             "none, use data_format='NHWC'")
        if x.shape.ndims != 4 or x.shape.as_list()[1] is None:
            raise ValueError("x must be a 4-D NCHW tensor with known channels, got shape %s"
                             % x.shape)
        channels = x.shape.as_list()[1]
    else:
        channels = check_nhwc(x, "x")[3]
    static_bool(is_training, "is_training")
    if not 0.0 <= float(decay) < 1.0:
        raise ValueError("decay must be in [0, 1), got %r" % (decay,))
    if not float(epsilon) > 0.0:
        raise ValueError("epsilon must be positive, got %r" % (epsilon,))
    return channels


def batch_norm(name, x, is_training, decay=0.99, epsilon=1e-3, transform=None,
               data_format="NHWC", update_moving=True):
    """Fused batch normalisation with a bool-or-tensor training switch.

    Args:
      name: variable scope; it holds ``gamma``, ``beta``, ``moving_mean`` and
        ``moving_variance``.
      x: input ``[B, H, W, C]`` (or ``[B, C, H, W]`` with ``data_format='NCHW'``,
        GPU only).
      is_training: Python bool or scalar boolean tensor. True normalises with
        batch statistics and updates the moving ones; False uses the moving
        statistics.
      decay: moving-average decay, ``moving = decay * moving + (1 - decay) *
        batch``.
      epsilon: added to the variance (at least ``MIN_EPSILON``).
      transform: optional variable transform applied to the four parameters.
      data_format: ``'NHWC'`` (default) or ``'NCHW'``.
      update_moving: False normalises with batch statistics in training but
        leaves the moving ones alone (the towers of a multi-device step after
        the first share the variables and must not update them again).

    Returns:
      The normalised tensor, same shape as ``x``.

    Raises:
      ValueError: for a non-4-D input, unknown channels, NCHW without a GPU,
        a non-boolean ``is_training`` or out-of-range ``decay``/``epsilon``.
    """
    channels = _check_args(x, is_training, decay, epsilon, data_format)
    epsilon = max(float(epsilon), MIN_EPSILON)
    decay = float(decay)
    with tf.variable_scope(name):
        gamma = get_variable("gamma", [channels], tf.ones_initializer())
        beta = get_variable("beta", [channels], tf.zeros_initializer())
        moving_mean = get_variable("moving_mean", [channels], tf.zeros_initializer(),
                                   trainable=False)
        moving_variance = get_variable("moving_variance", [channels], tf.ones_initializer(),
                                       trainable=False)
        scale = apply_transform(transform, gamma.value(), "gamma")  # [C]
        offset = apply_transform(transform, beta.value(), "beta")  # [C]

        def train_branch():
            y, batch_mean, batch_var = tf.nn.fused_batch_norm(
                x, scale, offset, epsilon=epsilon, data_format=data_format, is_training=True)
            if not update_moving:
                return y
            # batch_var is Bessel-corrected (n / (n - 1)), see the module docstring.
            update_mean = moving_mean.assign_sub((1.0 - decay) * (moving_mean.value() - batch_mean))
            update_var = moving_variance.assign_sub(
                (1.0 - decay) * (moving_variance.value() - batch_var))
            with tf.control_dependencies([update_mean, update_var]):
                return tf.identity(y)

        def test_branch():
            mean = apply_transform(transform, moving_mean.value(), "moving_mean")
            var = apply_transform(transform, moving_variance.value(), "moving_variance")
            y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                             epsilon=epsilon, data_format=data_format,
                                             is_training=False)
            return y

        y = smart_cond(is_training, train_branch, test_branch, name="switch")
        y.set_shape(x.shape)
    return y
