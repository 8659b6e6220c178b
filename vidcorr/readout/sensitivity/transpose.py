"""Transpose rules: each op's input cotangents for a batch of output cotangents.

:class:`vidcorr.readout.sensitivity.backward.BatchedVJP` walks a batch-1 forward graph backwards
and applies, per op type, a rule of :data:`RULES`. The forward tensors are
batch-1 and the cotangents ``[N, ...]``: a rule derives what it needs from the
forward pass once (``prepare``: a ReLU's 0/1 mask, a max pool's first-maximum
mask, a convolution's flipped kernel) and maps the N cotangents with forward
ops (``apply``). A convolution's input gradient is a forward convolution with
the flipped, transposed kernel; a transposed convolution's is a strided
forward convolution.
"""

import collections

from vidcorr.compat import tf

__all__ = ["NOT_DIFFERENTIABLE", "UnsupportedGraph", "Rule", "RULES", "batch_shape",
           "add_signs", "upsample2", "slice_attrs"]

NOT_DIFFERENTIABLE = frozenset(["Shape", "ShapeN", "Size", "Rank", "ZerosLike", "OnesLike",
                                 "StopGradient", "PreventGradient"])


class UnsupportedGraph(ValueError):
    """The graph between the input and the output has an op :class:`BatchedVJP` cannot transpose."""


Rule = collections.namedtuple("Rule", ["inputs", "prepare", "apply"])
RULES = {}


def _rule(*op_types, **kwargs):
    """Registers ``apply(op, g, prepared, deps) -> [(input index, cotangent)]``."""
    def register(apply):
        for op_type in op_types:
            RULES[op_type] = Rule(kwargs.get("inputs", (0,)), kwargs.get("prepare"), apply)
        return apply
    return register


def batch_shape(g, tensor):
    """``[N] + tensor's static shape[1:]`` as a shape tensor (N from the cotangents ``g``)."""
    return tf.concat([tf.shape(g)[:1], tf.constant(tensor.shape.as_list()[1:], tf.int32)], 0)


@_rule("Identity", "BiasAdd")
def _pass(op, g, prepared, deps):
    return [(0, g)]


def add_signs(op, deps):
    """``[(input index, +1 or -1)]`` for the inputs of an Add or Sub that depend on the input."""
    signs = []
    for i, sign in ((0, 1.0), (1, -1.0 if op.type == "Sub" else 1.0)):
        if deps[i]:
            if op.inputs[i].shape.as_list() != op.outputs[0].shape.as_list():
                raise UnsupportedGraph("%s %s broadcasts a dependent input" % (op.type, op.name))
            signs.append((i, sign))
    return signs


@_rule("AddV2", "Add", "Sub", inputs=(0, 1))
def _add(op, g, prepared, deps):
    return [(i, g if sign > 0 else -g) for i, sign in add_signs(op, deps)]


def _unbroadcast(op, g, i):
    """``g [N, ...]`` of ``op``'s output summed over the axes its input ``i`` broadcast."""
    shape, out = op.inputs[i].shape.as_list(), op.outputs[0].shape.as_list()
    if shape == out:
        return g
    if len(shape) != len(out):
        raise UnsupportedGraph("%s %s broadcasts a dependent input of another rank"
                               % (op.type, op.name))
    axes = [a for a in range(1, len(out)) if shape[a] == 1 and out[a] != 1]
    return tf.reduce_sum(g, axis=axes, keepdims=True)


@_rule("Mul", inputs=(0, 1))
def _mul(op, g, prepared, deps):
    """The product rule: each dependent factor gets ``g`` times the other (batch-1) factor,
    summed over the axes it was broadcast along."""
    return [(i, _unbroadcast(op, g * op.inputs[1 - i], i)) for i in (0, 1) if deps[i]]


@_rule("Softmax")
def _softmax(op, g, prepared, deps):
    s = op.outputs[0]  # [1, ..., K], the forward softmax
    return [(0, s * (g - tf.reduce_sum(g * s, axis=-1, keepdims=True)))]


@_rule("Reshape")
def _reshape(op, g, prepared, deps):
    return [(0, tf.reshape(g, batch_shape(g, op.inputs[0])))]


@_rule("Transpose")
def _transpose(op, g, prepared, deps):
    perm = tf.get_static_value(op.inputs[1])
    if perm is None or int(perm[0]) != 0:
        raise UnsupportedGraph("Transpose %s moves the batch axis" % op.name)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[int(p)] = i
    return [(0, tf.transpose(g, inverse))]


@_rule("Sum")
def _sum(op, g, prepared, deps):
    axes = tf.get_static_value(op.inputs[1])
    rank = len(op.inputs[0].shape)
    if axes is None:
        raise UnsupportedGraph("Sum %s sums over axes known only at run time" % op.name)
    axes = sorted(int(a) % rank for a in axes.reshape(-1))
    if not axes or axes[0] == 0:
        raise UnsupportedGraph("Sum %s sums over the batch axis" % op.name)
    if not op.get_attr("keep_dims"):
        for a in axes:
            g = tf.expand_dims(g, a)
    return [(0, tf.broadcast_to(g, batch_shape(g, op.inputs[0])))]


def _linear_op(op):
    """A function re-creating a linear op (its other inputs and attributes as given) on a
    batch of inputs."""
    if op.type == "MirrorPad":
        return lambda x: tf.pad(x, op.inputs[1], mode=op.get_attr("mode").decode())
    if op.type == "Pad":
        return lambda x: tf.pad(x, op.inputs[1])
    return lambda x: tf.image.extract_patches(
        x, list(op.get_attr("ksizes")), list(op.get_attr("strides")), list(op.get_attr("rates")),
        op.get_attr("padding").decode())


@_rule("MirrorPad", "Pad", "ExtractImagePatches")
def _linear(op, g, prepared, deps):
    """A linear op's transpose is its gradient, the same at every point: TensorFlow's own,
    taken at zeros of the cotangents' batch."""
    if op.type != "ExtractImagePatches" and tf.get_static_value(op.inputs[1]) is not None and \
            tf.get_static_value(op.inputs[1])[0].any():
        raise UnsupportedGraph("%s %s pads the batch axis" % (op.type, op.name))
    zeros = tf.zeros(batch_shape(g, op.inputs[0]))
    return [(0, tf.gradients(_linear_op(op)(zeros), zeros, grad_ys=g)[0])]


def _relu_mask(op):
    return tf.cast(op.outputs[0] > 0, tf.float32)  # [1, H, W, C]


@_rule("Relu", prepare=_relu_mask)
def _relu(op, g, mask, deps):
    return [(0, g * mask)]


def _leaky_mask(op):
    x = op.inputs[0]
    return tf.where(x > 0, tf.ones_like(x), tf.fill(tf.shape(x), op.get_attr("alpha")))


@_rule("LeakyRelu", prepare=_leaky_mask)
def _leaky_relu(op, g, mask, deps):
    return [(0, g * mask)]


def _check_nhwc(op):
    if op.get_attr("data_format") not in (b"NHWC", "NHWC"):
        raise UnsupportedGraph("%s %s is not NHWC" % (op.type, op.name))
    padding = op.get_attr("padding")
    if padding not in (b"SAME", b"VALID", "SAME", "VALID"):
        raise UnsupportedGraph("%s %s has padding %r" % (op.type, op.name, padding))
    return padding.decode() if isinstance(padding, bytes) else padding


def _flipped_kernel(op):
    """``[kh, kw, out, in]`` reversed in space: the kernel of the transposed stride-1 convolution."""
    padding = _check_nhwc(op)
    w = op.inputs[1]  # [kh, kw, in, out]
    kh, kw = w.shape.as_list()[:2]
    if (padding == "SAME" and list(op.get_attr("strides")) == [1, 1, 1, 1]
            and list(op.get_attr("dilations")) == [1, 1, 1, 1] and kh % 2 and kw % 2):
        return tf.transpose(tf.reverse(w, [0, 1]), [0, 1, 3, 2])
    return None  # another geometry: conv2d_backprop_input, the same numbers, slower on TF 1.15


@_rule("Conv2D", prepare=_flipped_kernel)
def _conv2d(op, g, flipped, deps):
    if flipped is not None:  # SAME, stride 1, odd kernel: symmetric padding
        return [(0, tf.nn.conv2d(g, flipped, [1, 1, 1, 1], "SAME"))]  # [N, H, W, in]
    return [(0, tf.nn.conv2d_backprop_input(
        batch_shape(g, op.inputs[0]), op.inputs[1], g, list(op.get_attr("strides")),
        _check_nhwc(op), dilations=list(op.get_attr("dilations"))))]


@_rule("Conv2DBackpropInput", inputs=(2,), prepare=_check_nhwc)
def _conv2d_transpose(op, g, padding, deps):
    # The transposed convolution is the adjoint of conv2d(., filter): its adjoint is conv2d.
    return [(2, tf.nn.conv2d(g, op.inputs[1], list(op.get_attr("strides")), padding,
                             dilations=list(op.get_attr("dilations"))))]


def upsample2(t, height, width, channels):
    """Nearest-neighbour x2: ``[N, H/2, W/2, C] -> [N, H, W, C]``."""
    t = tf.reshape(t, [-1, height // 2, 1, width // 2, 1, channels])
    return tf.reshape(tf.tile(t, [1, 1, 2, 1, 2, 1]), [-1, height, width, channels])


def _pool_mask(op):
    """``[1, H, W, C]``: 1 at the first maximum of each 2x2 window (in row-major order)."""
    _check_nhwc(op)
    x, y = op.inputs[0], op.outputs[0]  # [1, H, W, C], [1, H/2, W/2, C]
    _, height, width, channels = x.shape.as_list()
    if (list(op.get_attr("ksize")) != [1, 2, 2, 1] or list(op.get_attr("strides")) != [1, 2, 2, 1]
            or height % 2 or width % 2):
        return None  # other pools: MaxPoolGrad on the tiled forward tensors
    # SAME and VALID padding agree for even sizes.
    hit = tf.cast(tf.equal(x, upsample2(y, height, width, channels)), tf.float32)
    free, masks = 1.0, []
    for a in (0, 1):
        for b in (0, 1):
            h = hit[:, a::2, b::2, :]  # [1, H/2, W/2, C]: window position (a, b) is a maximum
            masks.append(h * free)
            free = free * (1.0 - h)
    rows = [tf.stack(masks[:2], axis=3), tf.stack(masks[2:], axis=3)]  # [1, H/2, W/2, 2, C]
    return tf.reshape(tf.stack(rows, axis=2), [1, height, width, channels])


@_rule("MaxPool", prepare=_pool_mask)
def _max_pool(op, g, mask, deps):
    x, y = op.inputs[0], op.outputs[0]
    _, height, width, channels = x.shape.as_list()
    if mask is None:
        n = tf.shape(g)[0]
        return [(0, tf.raw_ops.MaxPoolGrad(
            orig_input=tf.tile(x, [n, 1, 1, 1]), orig_output=tf.tile(y, [n, 1, 1, 1]), grad=g,
            ksize=list(op.get_attr("ksize")), strides=list(op.get_attr("strides")),
            padding=_check_nhwc(op)))]
    return [(0, upsample2(g, height, width, channels) * mask)]  # [N, H, W, C]


@_rule("ConcatV2", inputs=None)
def _concat(op, g, prepared, deps):
    axis = tf.get_static_value(op.inputs[-1])
    rank = len(op.outputs[0].shape)
    axis = int(axis) % rank
    if axis == 0:
        raise UnsupportedGraph("ConcatV2 %s joins along the batch axis" % op.name)
    sizes = [t.shape.as_list()[axis] for t in op.inputs[:-1]]
    parts = tf.split(g, sizes, axis=axis)
    return [(i, part) for i, part in enumerate(parts) if deps[i]]


def slice_attrs(op):
    """The masks of a StridedSlice; it must keep the batch axis whole."""
    attr = {name: op.get_attr(name) for name in
            ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    strides = tf.get_static_value(op.inputs[3])
    whole_batch = attr["ellipsis_mask"] & 1 or (
        attr["begin_mask"] & 1 and attr["end_mask"] & 1 and strides is not None
        and int(strides[0]) == 1)
    # a new axis is fine after a leading ellipsis (``x[..., None]``), never in front of it
    new_axis_ok = not attr["new_axis_mask"] or (attr["ellipsis_mask"] & 1 and
                                                not attr["new_axis_mask"] & 1)
    if not whole_batch or not new_axis_ok or attr["shrink_axis_mask"] & 1:
        raise UnsupportedGraph("StridedSlice %s does not keep the batch axis whole" % op.name)
    return attr


@_rule("StridedSlice")
def _strided_slice(op, g, prepared, deps):
    return [(0, tf.raw_ops.StridedSliceGrad(
        shape=batch_shape(g, op.inputs[0]), begin=op.inputs[1], end=op.inputs[2],
        strides=op.inputs[3], dy=g, **slice_attrs(op)))]
