"""MIND: the frame-interpolation network whose gradients give the matches.

Input: frames t and t+2 stacked on the channel axis, ``[B, H, W, 6]``, values
in [0, 1]. Output: the predicted frame t+1, ``[B, H, W, 3]``, in [0, 1]
(not clipped). Any H and W work: the input is reflect-padded to a multiple of
32 and the output cropped back.

Architecture (Long et al., ECCV 2016; ``../shared/DESIGN.md`` section 3):

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
  :mod:`vidcorr.kernels`: a linear 1x1 convolution predicts ``2 K^2`` softmax
  logits per pixel and the output is that blend of both frames' K x K
  neighbourhoods (the packaged default model uses it; see that module for why).

The full-width network costs 55.6 GFLOP per 128x384 forward pass
(:func:`forward_flops`).

Why ``residual="average"``: a narrow network trained for hours on a CPU
struggles to *copy* static pixels exactly (it lost 1.3 dB to the frame
average there, with most of its error on pixels that do not move). Adding
the frame average makes copying free, so training spends its capacity on
the moving pixels. Matching is unchanged in principle: the sensitivity of an
output pixel is that of the whole function, the average's ``0.5`` at the
pixel itself included, which a network must learn to cancel where things
move. A direct-synthesis model trained for an hour on the CPU never did:
its sensitivity peaks stayed at the pixel itself, also after 1500 further
steps with half of the triplets layered (motion up to 8 px per frame step). The packaged default model therefore
uses the adaptive-kernel head (``kernel_size``), a softmax blend of input
pixels that cannot sharpen and has to weight the displaced ones.
"""

import collections

from vidcorr import kernels, layers
from vidcorr.batchnorm import batch_norm
from vidcorr.compat import tf
from vidcorr.quantize import quantize_transform

__all__ = ["BN_EPSILON", "ENCODER_CHANNELS", "DECODER_CHANNELS", "MULTIPLE", "PAPER_SKIPS",
           "RESIDUALS", "NetworkSpec", "channel_plan", "check_kernel_head",
           "mind", "network_spec", "padding_for", "pad_to_multiple", "forward_flops"]

ENCODER_CHANNELS = (96, 96, 128, 128, 128)
DECODER_CHANNELS = (128, 128, 128, 96, 96)
CONVS_PER_ENCODER_BLOCK = 3
CONVS_PER_DECODER_BLOCK = 2
PAPER_SKIPS = (4, 3, 2)  # the paper's skips: pool4, pool3, pool2
RESIDUALS = ("none", "average")  # what the output convolution is added to
MULTIPLE = 32  # 2 ** number of pooling stages
BN_EPSILON = 1e-3
OUTPUT_INIT = tf.random_normal_initializer(stddev=0.01)  # start near mid-grey

NetworkSpec = collections.namedtuple(
    "NetworkSpec", ["width", "activation", "leaky_alpha", "output_kernel", "bn_decay", "skips",
                    "residual", "kernel_size"])
NetworkSpec.__new__.__defaults__ = (1.0, "relu", 0.2, 3, 0.99, PAPER_SKIPS, "none", 0)
NetworkSpec.__doc__ = """The network's hyper-parameters.

``skips`` lists the encoder levels whose features are concatenated into the
decoder at the same resolution: level k (1 to 4) is pool k, at 1/2^k of the
input, joined after the upsampling of decoder block 5 - k; level 0 is the
last full-resolution encoder convolution, joined in decoder block 5. The
paper's network uses (4, 3, 2); levels 1 and 0 give the decoder fine detail
(sharper frames, faster training) at the risk of a shortcut that bypasses the
motion-carrying coarse features. ``residual`` is ``"none"`` (output = conv +
0.5, the paper's) or ``"average"`` (output = conv + the mean of the two frames).
``kernel_size`` 0 is direct synthesis; an odd K from 3 to 15 selects the
adaptive-kernel head (:mod:`vidcorr.kernels`; needs ``output_kernel`` 1 and
``residual`` "none").
"""


def network_spec(model_config):
    """The :class:`NetworkSpec` of a :class:`vidcorr.config.ModelConfig`."""
    m = model_config
    return NetworkSpec(m.width, m.activation, m.leaky_alpha, m.output_kernel, m.bn_decay,
                       tuple(m.skips), m.residual, m.kernel_size)


def check_kernel_head(kernel_size, output_kernel, residual):
    """The error message for an invalid kernel-head setting, or None."""
    if kernel_size == 0:
        return None
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, int) or kernel_size < 3 \
            or kernel_size % 2 == 0 or kernel_size > kernels.MAX_KERNEL_SIZE:
        return "kernel_size must be 0 or an odd number from 3 to %d, got %r" % (
            kernels.MAX_KERNEL_SIZE, kernel_size)
    if output_kernel != 1:
        return "the kernel head needs output_kernel 1, got %r" % (output_kernel,)
    if residual != "none":
        return "the kernel head needs residual 'none', got %r" % (residual,)
    return None


def _skip_map(skips):
    """{decoder block: encoder level} for a skips tuple; validates it."""
    levels = tuple(skips)
    if len(set(levels)) != len(levels) or not all(
            isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= 4 for k in levels):
        raise ValueError("skips must be distinct encoder levels from 0 to 4, got %r" % (skips,))
    return {5 - k: k for k in levels}


def channel_plan(width):
    """The (encoder, decoder) channel counts for a width multiplier.

    Raises:
      ValueError: if ``width`` is not positive.
    """
    if not width > 0:
        raise ValueError("width must be positive, got %r" % (width,))
    scale = lambda c: max(2, int(round(c * width)))  # noqa: E731
    return [scale(c) for c in ENCODER_CHANNELS], [scale(c) for c in DECODER_CHANNELS]


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

    Args:
      x: ``[B, H, W, C]`` with static H and W.
      multiple: the multiple.

    Returns:
      ``(padded, (top, left, height, width))``: the padded tensor and the
      window that crops the original extent back out.

    Raises:
      ValueError: if H or W is unknown, or too small to reflect the padding.
    """
    _, height, width, _ = layers.check_nhwc(x, "frames")
    if height is None or width is None:
        raise ValueError("frames need a static height and width, got shape %s" % x.shape)
    top, bottom, left, right = padding_for(height, width, multiple)
    if top or bottom or left or right:
        x = tf.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]], mode="REFLECT")
    return x, (top, left, height, width)


def _conv_unit(name, x, filters, is_training, spec, transform, transpose=False, folded=False):
    """conv (or 4x4 stride-2 transposed conv) -> batch norm -> activation.

    With ``folded`` the batch norm is replaced by the convolution's ``biases``
    (inference graphs whose weights come from :func:`vidcorr.inference.fold_batch_norm`).
    """
    if transpose:
        h = layers.conv2d_transpose(name, x, filters, 4, 2, use_bias=folded, transform=transform)
    else:
        h = layers.conv2d(name, x, filters, 3, 1, use_bias=folded, transform=transform)
    if not folded:
        h = batch_norm(name + "/bn", h, is_training, decay=spec.bn_decay, epsilon=BN_EPSILON,
                       transform=transform)
    return layers.activation(h, spec.activation, spec.leaky_alpha)


def mind(frames, is_training, quantize=False, spec=NetworkSpec(), num_bits=8, transform=None,
         name="mind", folded=False, endpoints=None):
    """Builds the MIND interpolation network.

    Args:
      frames: ``[B, H, W, 6]``, frames t (channels 0-2) and t+2 (3-5), in [0, 1].
      is_training: Python bool or boolean tensor (batch norm mode).
      quantize: Python bool or boolean tensor: fake-quantise weights and
        batch-norm parameters (see :mod:`vidcorr.quantize`).
      spec: a :class:`NetworkSpec` (width, activation, output kernel, BN decay).
      num_bits: quantisation bit width.
      transform: an extra variable transform applied before quantisation.
      name: the outer variable scope.
      folded: build the inference form with batch norm folded into the
        convolutions (``weights`` and ``biases`` per layer, no ``bn`` scopes;
        ``is_training`` is ignored). Load it with folded checkpoint values.
      endpoints: optional dict, filled with ``features`` (input of the output
        convolution), ``logits`` (kernel head only) and ``padded`` (the padded
        input frames), all at the padded size.

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
    if spec.output_kernel not in (1, 3):
        raise ValueError("output_kernel must be 1 or 3, got %r" % (spec.output_kernel,))
    if spec.residual not in RESIDUALS:
        raise ValueError("residual must be one of %s, got %r" % (RESIDUALS, spec.residual))
    problem = check_kernel_head(spec.kernel_size, spec.output_kernel, spec.residual)
    if problem:
        raise ValueError(problem)
    enc_channels, dec_channels = channel_plan(spec.width)
    skip_map = _skip_map(spec.skips)
    transform = layers.compose_transforms(transform, quantize_transform(quantize, num_bits))
    with tf.variable_scope(name):
        padded, (top, left, height, width) = pad_to_multiple(frames - 0.5)  # [B, H', W', 6]
        h = padded
        features = {}  # encoder level -> features at 1/2^level of the input
        for b, channels in enumerate(enc_channels, 1):
            for c in range(1, CONVS_PER_ENCODER_BLOCK + 1):
                h = _conv_unit("enc%d/conv%d" % (b, c), h, channels, is_training, spec, transform,
                               folded=folded)
            if b == 1:
                features[0] = h  # [B, H', W', C]
            h = layers.max_pool("enc%d/pool" % b, h)  # [B, H'/2^b, W'/2^b, C]
            features[b] = h
        for b, channels in enumerate(dec_channels, 1):
            h = _conv_unit("dec%d/up" % b, h, channels, is_training, spec, transform,
                           transpose=True, folded=folded)  # [B, H'/2^(5-b), W'/2^(5-b), C]
            if b in skip_map:
                h = tf.concat([h, features[skip_map[b]]], axis=3)
            for c in range(1, CONVS_PER_DECODER_BLOCK + 1):
                h = _conv_unit("dec%d/conv%d" % (b, c), h, channels, is_training, spec, transform,
                               folded=folded)
        if endpoints is not None:
            endpoints.update(features=h, padded=padded + 0.5)
        if spec.kernel_size:
            k = spec.kernel_size
            logits = layers.conv2d("output", h, 2 * k * k, 1, use_bias=True, transform=transform,
                                   initializer=OUTPUT_INIT,
                                   bias_initializer=tf.constant_initializer(
                                       kernels.logit_bias(k)))  # [B, H', W', 2K^2]
            if endpoints is not None:
                endpoints["logits"] = logits
            out = kernels.apply_kernels(padded + 0.5, logits, k)  # [B, H', W', 3]
            return out[:, top:top + height, left:left + width, :]  # [B, H, W, 3]
        out = layers.conv2d("output", h, 3, spec.output_kernel, use_bias=True,
                            transform=transform, initializer=OUTPUT_INIT)  # [B, H', W', 3]
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
      spec: the network spec (its width multiplier and output kernel count).

    Returns:
      The FLOP count as an int.
    """
    enc_channels, dec_channels = channel_plan(spec.width)
    skip_map = _skip_map(spec.skips)
    h, w = height + (-height % MULTIPLE), width + (-width % MULTIPLE)
    flops, cin = 0, 6
    level_channels = {0: enc_channels[0]}
    for b, c in enumerate(enc_channels, 1):
        for _ in range(CONVS_PER_ENCODER_BLOCK):
            flops += 2 * h * w * 9 * cin * c
            cin = c
        h, w = h // 2, w // 2
        level_channels[b] = c
    for b, c in enumerate(dec_channels, 1):
        h, w = h * 2, w * 2
        flops += 2 * h * w * 16 * cin * c // 4  # each output pixel sees (4/2)^2 taps per channel
        cin = c + (level_channels[skip_map[b]] if b in skip_map else 0)
        for _ in range(CONVS_PER_DECODER_BLOCK):
            flops += 2 * h * w * 9 * cin * c
            cin = c
    if spec.kernel_size:  # 1x1 logits, then 2K^2 taps x 3 channels multiply-adds
        taps = 2 * spec.kernel_size ** 2
        return flops + 2 * h * w * cin * taps + 2 * h * w * taps * 3
    flops += 2 * h * w * spec.output_kernel ** 2 * cin * 3
    return flops
