"""Layers built from ``tf.get_variable`` and ``tf.nn`` ops, NHWC.

Every layer is a function whose first argument names its variable scope and
whose variables have fixed names (``weights``, ``biases``), so checkpoints stay
compatible across versions. Every layer accepts a *variable transform*: a
callable ``transform(value, name, channel_axis)`` applied to each parameter
before use, inside the layer's variable scope. ``value`` is the variable's
value as a tensor, ``name`` its fixed name and ``channel_axis`` the axis that
indexes output channels (``None`` for per-channel vectors). It returns a tensor
of the same shape. This is how the quantize switch plugs in
(:mod:`vidcorr.model.quantize`) and how users insert their own operators.
"""

import math

from vidcorr.compat import tf

__all__ = [
    "ACTIVATIONS",
    "check_nhwc",
    "compose_transforms",
    "apply_transform",
    "get_variable",
    "conv2d",
    "conv2d_transpose",
    "max_pool",
    "activation",
]

ACTIVATIONS = ("relu", "leaky_relu", "linear")


def check_nhwc(x, name="x"):
    """Checks that ``x`` is a 4-D NHWC tensor with a known channel count.

    Args:
      x: the tensor to check.
      name: the argument's name, used in the error message.

    Returns:
      The static shape as a list ``[B, H, W, C]`` (entries may be ``None``
      except ``C``).

    Raises:
      ValueError: if ``x`` is not 4-D or its channel count is unknown.
    """
    shape = x.shape
    if shape.ndims != 4:
        raise ValueError("%s must be a 4-D NHWC tensor, got shape %s" % (name, shape))
    dims = shape.as_list()
    if dims[3] is None:
        raise ValueError("%s must have a known channel count (last axis), got shape %s" % (name, shape))
    return dims


def compose_transforms(*transforms):
    """Chains variable transforms left to right, skipping ``None`` entries.

    Args:
      *transforms: callables ``fn(value, name, channel_axis)`` or ``None``.

    Returns:
      One transform applying them in order, or ``None`` when all are ``None``.
    """
    fns = [t for t in transforms if t is not None]
    if not fns:
        return None
    if len(fns) == 1:
        return fns[0]

    def composed(value, name, channel_axis):
        for fn in fns:
            value = fn(value, name, channel_axis)
        return value

    return composed


def apply_transform(transform, value, name, channel_axis=None):
    """Applies ``transform`` to a parameter value (identity when it is None)."""
    if transform is None:
        return value
    out = transform(value, name, channel_axis)
    if out.shape.as_list() != value.shape.as_list():
        raise ValueError("variable transform changed the shape of %r from %s to %s"
                         % (name, value.shape, out.shape))
    return out


def get_variable(name, shape, initializer, trainable=True):
    """Creates (or reuses) a float32 resource variable in the current scope."""
    return tf.get_variable(name, shape=shape, dtype=tf.float32, initializer=initializer,
                           trainable=trainable, use_resource=True)


def _he_normal(fan_in):
    return tf.random_normal_initializer(stddev=math.sqrt(2.0 / max(1, fan_in)))


def conv2d(name, x, filters, kernel_size=3, stride=1, use_bias=True, transform=None,
           initializer=None, bias_initializer=None):
    """2-D convolution with SAME padding (its parameters mirror ``tf.nn.conv2d``'s and the
    variables' initialisers, so it takes nine).

    Args:
      name: variable scope name.
      x: input ``[B, H, W, C]``.
      filters: number of output channels.
      kernel_size: square kernel size.
      stride: spatial stride.
      use_bias: whether to add ``biases``.
      transform: optional variable transform (see module docstring).
      initializer: weights initializer (He normal by default).
      bias_initializer: biases initializer (zeros by default).

    Returns:
      ``[B, H/stride, W/stride, filters]``.

    Raises:
      ValueError: for a non-4-D input or unknown channel count.
    """
    channels = check_nhwc(x, "x")[3]
    with tf.variable_scope(name):
        init = initializer or _he_normal(kernel_size * kernel_size * channels)
        w = get_variable("weights", [kernel_size, kernel_size, channels, filters], init)
        w = apply_transform(transform, w, "weights", channel_axis=3)
        y = tf.nn.conv2d(x, w, strides=[1, stride, stride, 1], padding="SAME",
                         data_format="NHWC")  # [B, H', W', filters]
        if use_bias:
            b = get_variable("biases", [filters], bias_initializer or tf.zeros_initializer())
            b = apply_transform(transform, b, "biases")
            y = tf.nn.bias_add(y, b, data_format="NHWC")
    return y


def conv2d_transpose(name, x, filters, kernel_size=4, stride=2, use_bias=False, transform=None,
                     initializer=None):
    """Transposed 2-D convolution (learned upsampling) with SAME padding.

    The weights are stored as ``[k, k, filters, C]`` (TensorFlow's layout);
    their output-channel axis, passed to the transform, is 2.

    Args:
      name: variable scope name.
      x: input ``[B, H, W, C]`` with static H and W.
      filters: number of output channels.
      kernel_size: square kernel size.
      stride: upsampling factor.
      use_bias: whether to add ``biases``.
      transform: optional variable transform.
      initializer: weights initializer (He normal by default).

    Returns:
      ``[B, H*stride, W*stride, filters]``.

    Raises:
      ValueError: for a non-4-D input or unknown channels.
    """
    _, height, width, channels = check_nhwc(x, "x")
    dynamic = tf.shape(x)
    out_h = height * stride if height is not None else dynamic[1] * stride
    out_w = width * stride if width is not None else dynamic[2] * stride
    with tf.variable_scope(name):
        fan_in = channels * (kernel_size // stride) ** 2
        init = initializer or _he_normal(fan_in)
        w = get_variable("weights", [kernel_size, kernel_size, filters, channels], init)
        w = apply_transform(transform, w, "weights", channel_axis=2)
        out_shape = tf.stack([dynamic[0], out_h, out_w, filters])
        y = tf.nn.conv2d_transpose(x, w, out_shape, strides=[1, stride, stride, 1],
                                   padding="SAME", data_format="NHWC")
        y.set_shape([x.shape[0], height and height * stride, width and width * stride,
                     filters])  # [B, sH, sW, F]
        if use_bias:
            b = get_variable("biases", [filters], tf.zeros_initializer())
            b = apply_transform(transform, b, "biases")
            y = tf.nn.bias_add(y, b, data_format="NHWC")
    return y


def max_pool(name, x, size=2, stride=2):
    """Max pooling with VALID padding: ``[B, H, W, C] -> [B, H/2, W/2, C]``."""
    check_nhwc(x, "x")
    return tf.nn.max_pool(x, ksize=[1, size, size, 1], strides=[1, stride, stride, 1],
                          padding="VALID", data_format="NHWC", name=name)


def activation(x, kind="relu", alpha=0.2):
    """Applies a named activation.

    Args:
      x: input tensor.
      kind: one of ``ACTIVATIONS``.
      alpha: negative slope of the leaky ReLU.

    Returns:
      A tensor of the same shape.

    Raises:
      ValueError: for an unknown ``kind``.
    """
    if kind == "relu":
        return tf.nn.relu(x)
    if kind == "leaky_relu":
        return tf.nn.leaky_relu(x, alpha=alpha)
    if kind == "linear":
        return x
    raise ValueError("activation must be one of %s, got %r" % (", ".join(ACTIVATIONS), kind))
