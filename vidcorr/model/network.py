"""MIND: the frame-interpolation network whose gradients give the matches.

Input: frames t and t+2 stacked on the channel axis, ``[B, H, W, 6]``, values
in [0, 1]. Output: the predicted frame t+1, ``[B, H, W, 3]``, in [0, 1]
(not clipped). Any H and W work: the input is reflect-padded to a multiple of
32 and the output cropped back.

Architecture (Long et al., ECCV 2016; the layers are listed once, by
:func:`vidcorr.model.spec.layer_plan`, which this module builds):

* encoder: 5 blocks of three 3x3 convolutions and a 2x2 max pool, with
  96, 96, 128, 128, 128 channels (times ``width``);
* decoder: 5 blocks of a 4x4 stride-2 transposed convolution and two 3x3
  convolutions, 128, 128, 128, 96, 96 channels; pool4, pool3 and pool2 are
  concatenated after the upsampling of decoder blocks 1, 2 and 3 (the
  ``skips`` of :class:`NetworkSpec` can add finer levels);
* every hidden convolution is followed by :func:`vidcorr.batch_norm` and a
  ReLU (or leaky ReLU); a linear 3x3 convolution makes the output, added to
  mid-grey (``residual="none"``, the paper's form) or to the mean of the two
  input frames (``residual="average"``);
* or, with ``kernel_size`` K > 0, the adaptive-kernel head of
  :mod:`vidcorr.model.kernels`: a linear 1x1 convolution predicts ``2 K^2`` softmax
  logits per pixel and the output is that blend of both frames' K x K
  neighbourhoods (the packaged default model uses it; see that module for why).

:func:`forward_flops` counts a forward pass's FLOPs from the same plan.

Why ``residual="average"``: a narrow network trained on a CPU struggles to
*copy* static pixels exactly; adding the frame average makes copying free, so
training spends its capacity on the moving pixels. But the sensitivity of an
output pixel then includes the average's ``0.5`` at the pixel itself, which
the network must learn to cancel where things move, and a direct-synthesis
network can lower its loss by sharpening rather than by moving content: its
sensitivity peaks stay at the pixel itself. The adaptive-kernel head
(``kernel_size``) is a softmax blend of input pixels that cannot sharpen and
has to weight the displaced ones, which is what the read-out looks for.
"""

import collections
import functools

from vidcorr.model import kernels
from vidcorr.model import layers
from vidcorr.model.batchnorm import batch_norm
from vidcorr.compat import tf
from vidcorr.model.quantize import quantize_transform
from vidcorr.model.spec import CONVS_PER_ENCODER_BLOCK, DEFAULT_NUM_BITS, MODEL_SCOPE, MULTIPLE, \
    NetworkSpec, layer_plan, plan_flops

__all__ = ["BN_EPSILON", "mind", "padding_for", "pad_to_multiple",
           "forward_flops"]

BN_EPSILON = 1e-3
OUTPUT_INIT = tf.random_normal_initializer(stddev=0.01)  # start near mid-grey


def padding_for(height, width, multiple=MULTIPLE):
    """``(top, bottom, left, right)`` reflect padding up to a multiple of ``multiple``.

    Raises:
      ValueError: if the image is too small to reflect that much padding.
    """
    pad_h, pad_w = -height % multiple, -width % multiple
    top, left = pad_h // 2, pad_w // 2
    if pad_h - top >= height or pad_w - left >= width:
        raise ValueError("frames of %dx%d are too small to pad to a multiple of %d; use at "
                         "least %dx%d pixels" % (height, width, multiple, multiple // 2 + 1,
                                                 multiple // 2 + 1))
    return top, pad_h - top, left, pad_w - left


def pad_to_multiple(x, multiple=MULTIPLE):
    """Reflect-pads H and W of ``x`` up to a multiple of ``multiple``.

    With static H and W the padding is computed here (:func:`padding_for`); with
    unknown ones (a graph for any image size, :mod:`vidcorr.apps.serving`) the same
    padding is computed in the graph.

    Args:
      x: ``[B, H, W, C]``.
      multiple: the multiple.

    Returns:
      ``(padded, (top, left, height, width))``: the padded tensor and the
      window that crops the original extent back out (ints, or scalar tensors
      for unknown sizes).

    Raises:
      ValueError: if a static H or W is too small to reflect the padding.
    """
    _, height, width, _ = layers.check_nhwc(x, "frames")
    if height is None or width is None:
        shape = tf.shape(x)
        height, width = shape[1], shape[2]
        # (m - n % m) % m, not (-n) % m: with non-negative operands every converter's
        # modulo agrees (ONNX's Mod of a negative int took C's sign).
        pad_h = (multiple - height % multiple) % multiple
        pad_w = (multiple - width % multiple) % multiple
        top, left = pad_h // 2, pad_w // 2
        paddings = tf.stack([[0, 0], [top, pad_h - top], [left, pad_w - left], [0, 0]])
        return tf.pad(x, paddings, mode="REFLECT"), (top, left, height, width)
    top, bottom, left, right = padding_for(height, width, multiple)
    if top or bottom or left or right:
        x = tf.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]], mode="REFLECT")
    return x, (top, left, height, width)


# How every unit of one network is built: its batch-norm mode, spec, variable transform,
# folded (inference) form, and whether training updates the moving statistics.
_Build = collections.namedtuple("_Build", ["is_training", "spec", "transform", "folded",
                                           "update_moving"])


def _conv_unit(name, x, filters, build, transpose=False):
    """conv (or 4x4 stride-2 transposed conv) -> batch norm -> activation.

    With ``build.folded`` the batch norm is replaced by the convolution's ``biases``
    (inference graphs whose weights come from :func:`vidcorr.readout.inference.fold_batch_norm`).
    """
    folded, transform, spec = build.folded, build.transform, build.spec
    if transpose:
        h = layers.conv2d_transpose(name, x, filters, 4, 2, use_bias=folded, transform=transform)
    else:
        h = layers.conv2d(name, x, filters, 3, 1, use_bias=folded, transform=transform)
    if not folded:
        h = batch_norm(name + "/bn", h, build.is_training, decay=spec.bn_decay,
                       epsilon=BN_EPSILON, transform=transform,
                       update_moving=build.update_moving)
    return layers.activation(h, spec.activation, spec.leaky_alpha)


def _kernel_head(output, features, images, build, endpoints):
    """The kernel head on ``features [B, H', W', C]``: the blend of ``images [B, H', W', 6]``
    ``[B, H', W', 3]``; its logits and the head itself go into ``endpoints`` (if a dict)."""
    k = build.spec.kernel_size
    head = functools.partial(layers.conv2d, output.name, filters=output.cout, kernel_size=1,
                             use_bias=True, transform=build.transform, initializer=OUTPUT_INIT,
                             bias_initializer=tf.constant_initializer(kernels.logit_bias(k)))
    logits = head(features)  # [B, H', W', 2K^2]
    if endpoints is not None:
        endpoints["logits"] = logits
        endpoints["head"] = _reused(head, tf.get_variable_scope())
    # Training graphs (unfolded) blend by a batched matmul, faster forward and backward;
    # inference graphs (folded) by the product the sensitivity read-out knows.
    return kernels.apply_kernels(images, logits, k, matmul=not build.folded)  # [B, H', W', 3]


def _reused(layer, scope):
    """``layer`` (a callable of one tensor) re-entering ``scope`` with its variables reused,
    wherever it is called from."""
    def reused(x):
        with tf.variable_scope(scope, reuse=True):
            return layer(x)
    return reused


def mind(frames, is_training, quantize=False, spec=NetworkSpec(), num_bits=DEFAULT_NUM_BITS,
         name=MODEL_SCOPE, folded=False, endpoints=None):
    """Builds the MIND interpolation network.

    Args:
      frames: ``[B, H, W, 6]``, frames t (channels 0-2) and t+2 (3-5), in [0, 1].
      is_training: Python bool or boolean tensor (batch norm mode).
      quantize: Python bool or boolean tensor: fake-quantise weights and
        batch-norm parameters (see :mod:`vidcorr.model.quantize`).
      spec: a :class:`NetworkSpec` (width, activation, output kernel, BN decay).
      num_bits: quantisation bit width.
      name: the outer variable scope.
      folded: build the inference form with batch norm folded into the
        convolutions (``weights`` and ``biases`` per layer, no ``bn`` scopes;
        ``is_training`` is ignored). Load it with folded checkpoint values.
      endpoints: optional dict, filled with ``features`` (input of the output
        convolution), ``logits`` (kernel head only) and ``padded`` (the padded
        input frames), all at the padded size, and ``crop``, the ``(top, left,
        height, width)`` window of the original size in them; with the kernel head
        also ``head``, a callable giving the logits of any ``[B, h, w, C]`` features
        with the head's own variables (the read-out applies it in strips of rows).

    Returns:
      The predicted middle frame, ``[B, H, W, 3]``.

    Raises:
      ValueError: if ``frames`` is not ``[B, H, W, 6]`` with static H, W, or
        for bad spec values.
    """
    dims = layers.check_nhwc(frames, "frames")
    if dims[3] != 6:
        raise ValueError("frames must have 6 channels (frame t and frame t+2 as RGB), got %d"
                         % dims[3])
    plan = layer_plan(spec)  # validates the spec; sizes do not matter here
    # Training updates batch norm's moving statistics from the first network built on the
    # variables only: a copy built with ``reuse=True`` (the towers of a multi-device step
    # but the first) normalises with its own batch's statistics and updates nothing, as in
    # tensorpack's BatchNorm.
    build = _Build(is_training, spec, quantize_transform(quantize, num_bits), folded,
                   tf.get_variable_scope().reuse is not True)
    with tf.variable_scope(name):
        padded, (top, left, height, width) = pad_to_multiple(frames - 0.5)  # [B, H', W', 6]
        h = padded
        features = {}  # encoder level -> features at 1/2^level of the input
        pools = 0
        for layer in plan[:-1]:
            if layer.kind == "pool":
                h = layers.max_pool(layer.name, h)  # [B, H'/2^b, W'/2^b, C]
                pools += 1
                features[pools] = h  # pool b is level b
                continue
            if layer.skip is not None:
                h = tf.concat([h, features[layer.skip]], axis=3)  # [B, h, w, C + C_skip]
            h = _conv_unit(layer.name, h, layer.cout, build,
                           transpose=layer.kind == "up")  # [B, h, w, C]
            if layer.name == "enc1/conv%d" % CONVS_PER_ENCODER_BLOCK:
                features[0] = h  # [B, H', W', C]
        output = plan[-1]
        images = padded + 0.5  # [B, H', W', 6] in [0, 1]; one op for the blend and endpoints
        if endpoints is not None:
            endpoints.update(features=h, padded=images, crop=(top, left, height, width))
        if spec.kernel_size:
            out = _kernel_head(output, h, images, build, endpoints)  # [B, H', W', 3]
            return out[:, top:top + height, left:left + width, :]  # [B, H, W, 3]
        out = layers.conv2d(output.name, h, 3, output.kernel, use_bias=True,
                            transform=build.transform, initializer=OUTPUT_INIT)  # [B, H', W', 3]
        out = out[:, top:top + height, left:left + width, :]  # [B, H, W, 3]
        if spec.residual == "average":
            out += 0.5 * (frames[..., :3] + frames[..., 3:])  # [B, H, W, 3]
        else:
            out += 0.5
    return out


def forward_flops(height, width, spec=NetworkSpec()):
    """Multiply-adds x 2 of one forward pass at ``height`` x ``width``, convolutions only.

    Args:
      height: image height (padded up to a multiple of 32 as the network does).
      width: image width.
      spec: the network spec.

    Returns:
      The FLOP count as an int.
    """
    return plan_flops(layer_plan(spec, height, width), spec.kernel_size)
