"""The one definition of MIND's shape: hyper-parameters and the layer plan (no TensorFlow).

:class:`NetworkSpec` is the single record of the network's hyper-parameters,
validated once (the ``model`` section of a config extends it with the
quantisation switch). :func:`layer_plan` walks the architecture once for a spec
and an image size; everything that needs to know the layers reads it instead
of walking them again: the graph builder (:func:`vidcorr.model.network.mind`), the
FLOP count, the memory model of the sensitivity graph, batch-norm folding and
the inference of a spec from checkpoint shapes.

Architecture (Long et al., ECCV 2016): an encoder of 5 blocks of three 3x3
convolutions and a 2x2 max pool (96, 96, 128, 128, 128 channels times
``width``); a decoder of 5 blocks of a 4x4 stride-2 transposed convolution and
two 3x3 convolutions (128, 128, 128, 96, 96), with encoder features
concatenated after the upsampling (``skips``); a linear output convolution
(3 channels, or ``2 K^2`` softmax logits for the adaptive-kernel head).
"""

import collections
import dataclasses
from typing import Tuple

__all__ = ["MODEL_SCOPE", "ENCODER_CHANNELS", "DECODER_CHANNELS", "CONVS_PER_ENCODER_BLOCK",
           "CONVS_PER_DECODER_BLOCK", "PAPER_SKIPS", "ALL_SKIPS", "RESIDUALS", "ACTIVATIONS", "MULTIPLE",
           "MAX_KERNEL_SIZE", "NUM_BITS_RANGE", "DEFAULT_NUM_BITS", "LOSSES", "NetworkSpec", "Layer", "channel_plan",
           "layer_plan", "width_for_channels", "spec_from_shapes",
           "padded_size", "plan_flops", "receptive_radius", "CHANNEL_AXIS"]

MODEL_SCOPE = "mind"  # the network's outer variable scope in every graph and checkpoint
ENCODER_CHANNELS = (96, 96, 128, 128, 128)
DECODER_CHANNELS = (128, 128, 128, 96, 96)
CONVS_PER_ENCODER_BLOCK = 3
CONVS_PER_DECODER_BLOCK = 2
PAPER_SKIPS = (4, 3, 2)  # the paper's skips: pool4, pool3, pool2
ALL_SKIPS = (4, 3, 2, 1, 0)  # every encoder level: the widest plan (every layer name)
RESIDUALS = ("none", "average")  # what the output convolution is added to
ACTIVATIONS = ("relu", "leaky_relu")
MULTIPLE = 32  # 2 ** number of pooling stages
MAX_KERNEL_SIZE = 15
MAX_WIDTH = 4.0  # the widest network built: 76 million weights (the paper's has 4.7 million)
NUM_BITS_RANGE = (2, 16)  # fake-quantisation bit widths TensorFlow's ops accept
DEFAULT_NUM_BITS = 8  # the quantised model's bit width
LOSSES = ("l1", "l2", "charbonnier")  # reconstruction losses (vidcorr.model.losses)
INPUT_CHANNELS = 6
CHANNEL_AXIS = {"conv": 3, "up": 2, "output": 3}  # output channels in a layer's weights


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """The network's hyper-parameters.

    ``skips`` lists the encoder levels whose features are concatenated into the
    decoder at the same resolution: level k (1 to 4) is pool k, at 1/2^k of the
    input, joined after the upsampling of decoder block 5 - k; level 0 is the
    last full-resolution encoder convolution, joined in decoder block 5. The
    paper's network uses (4, 3, 2). ``residual`` is ``"none"`` (output = conv +
    0.5, the paper's) or ``"average"`` (output = conv + the mean of the two
    frames). ``kernel_size`` 0 is direct synthesis; an odd K from 3 to 15
    selects the adaptive-kernel head (:mod:`vidcorr.model.kernels`; needs
    ``output_kernel`` 1 and ``residual`` "none").
    """
    width: float = 1.0
    activation: str = "relu"
    leaky_alpha: float = 0.2
    output_kernel: int = 3
    bn_decay: float = 0.99
    skips: Tuple[int, ...] = PAPER_SKIPS
    residual: str = "none"
    kernel_size: int = 0

    def problems(self):
        """``[(field, message)]`` for every invalid value (empty when valid)."""
        out = []

        def check(ok, key, message):
            if not ok:
                out.append((key, message))

        check(isinstance(self.width, (int, float)) and 0 < self.width <= MAX_WIDTH, "width",
              "must be above 0 and at most %g (%g times the paper's channels: about %d "
              "million weights), got %r" % (MAX_WIDTH, MAX_WIDTH, 76, self.width))
        check(self.activation in ACTIVATIONS, "activation",
              "must be one of %s" % ", ".join(repr(a) for a in ACTIVATIONS))
        check(self.output_kernel in (1, 3), "output_kernel", "must be 1 or 3")
        check(0 <= self.bn_decay < 1, "bn_decay", "must be in [0, 1)")
        check(self.residual in RESIDUALS, "residual",
              "must be one of %s" % ", ".join(repr(r) for r in RESIDUALS))
        skips = tuple(self.skips)
        check(len(set(skips)) == len(skips) and all(
            isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= 4 for k in skips),
            "skips", "must be distinct encoder levels from 0 to 4, got %r" % (skips,))
        k = self.kernel_size
        if k != 0:
            if isinstance(k, bool) or not isinstance(k, int) or k < 3 or k % 2 == 0 \
                    or k > MAX_KERNEL_SIZE:
                out.append(("kernel_size", "must be 0 or an odd number from 3 to %d, got %r"
                            % (MAX_KERNEL_SIZE, k)))
            elif self.output_kernel != 1:
                out.append(("kernel_size", "the kernel head needs output_kernel 1, got %r"
                            % (self.output_kernel,)))
            elif self.residual != "none":
                out.append(("kernel_size", "the kernel head needs residual 'none', got %r"
                            % (self.residual,)))
        return out

    def validate(self):
        """Raises ValueError naming the first invalid field."""
        problems = self.problems()
        if problems:
            raise ValueError("%s %s" % problems[0])
        return self

    def replace(self, **changes):
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def network_spec(self):
        """This spec as a plain :class:`NetworkSpec` (drops fields of subclasses)."""
        return NetworkSpec(**{f.name: getattr(self, f.name)
                              for f in dataclasses.fields(NetworkSpec)})


Layer = collections.namedtuple("Layer", ["name", "kind", "cin", "cout", "kernel", "stride",
                                         "height", "width", "skip"])
Layer.__doc__ = """One layer of the plan.

``kind`` is ``conv`` (3x3, batch norm, activation), ``pool`` (2x2 max),
``up`` (4x4 stride-2 transposed conv, batch norm, activation) or ``output``;
``cin``/``cout`` its input/output channels (``cin`` of a decoder block's first
convolution includes the skip); ``height``/``width`` its output size at the
padded image size; ``skip`` the encoder level concatenated into its input (or
None); ``kernel`` and ``stride`` of its window.
"""


def channel_plan(width):
    """The (encoder, decoder) channel counts for a width multiplier.

    Raises:
      ValueError: if ``width`` is not positive.
    """
    if not width > 0:
        raise ValueError("width must be positive, got %r" % (width,))
    scale = lambda c: max(2, int(round(c * width)))  # noqa: E731
    return [scale(c) for c in ENCODER_CHANNELS], [scale(c) for c in DECODER_CHANNELS]


def width_for_channels(first, third):
    """The width multiplier whose :func:`channel_plan` has these encoder channels.

    Channel counts are rounded, so ``first / 96`` need not give them back (29
    channels of 96 and 38 of 128 come from 0.3, not from 29 / 96); this finds the
    shortest decimal width in the interval that rounds to both.

    Args:
      first: channels of encoder block 1 (96 times the width, rounded).
      third: channels of encoder block 3 (128 times the width, rounded).

    Returns:
      The width, or None if no width gives both counts.
    """
    (c1, c3) = ENCODER_CHANNELS[0], ENCODER_CHANNELS[2]
    low = max((first - 0.5) / c1, (third - 0.5) / c3, 1e-9)
    high = min((first + 0.5) / c1, (third + 0.5) / c3)
    if low > high:
        return None
    middle = (low + high) / 2.0
    for digits in range(1, 9):
        for width in sorted({round(middle, digits), round(low, digits), round(high, digits)}):
            if width > 0:
                enc, _ = channel_plan(width)
                if enc[0] == first and enc[2] == third:
                    return width
    return None


def spec_from_shapes(shapes):
    """The :class:`NetworkSpec` whose weights have these shapes.

    What the shapes cannot tell keeps its default (activation ReLU, residual
    "none", the batch-norm decay): a checkpoint without its ``config.json`` is
    read as a network of that kind.

    Args:
      shapes: ``{variable name: shape}`` of a checkpoint's network variables
        (names under :data:`MODEL_SCOPE`, as saved); other entries are ignored.

    Returns:
      The spec: width, skips, the output's kernel and the kernel head's size.

    Raises:
      ValueError: saying why, if the shapes fit no MIND network.
    """
    start = len(MODEL_SCOPE) + 1
    weights = {name[start:].rpartition("/")[0]: tuple(shape) for name, shape in shapes.items()
               if name.startswith(MODEL_SCOPE + "/") and name.endswith("/weights")}
    lacking = [n for n in ("enc1/conv1", "enc3/conv1", "output") if n not in weights]
    if lacking:
        raise ValueError("no %s/%s/weights" % (MODEL_SCOPE, lacking[0]))
    if any(len(weights[n]) != 4 for n in ("enc1/conv1", "enc3/conv1", "output")):
        raise ValueError("its convolution weights are not 4-d")
    width = width_for_channels(weights["enc1/conv1"][3], weights["enc3/conv1"][3])
    if width is None:
        raise ValueError("no width gives its channels (%d in encoder block 1, %d in block 3)"
                         % (weights["enc1/conv1"][3], weights["enc3/conv1"][3]))
    out_kernel, _, out_cin, out_channels = weights["output"]
    kernel_size = 0 if out_channels == 3 else int(round((out_channels / 2.0) ** 0.5))
    # A skip widens its decoder convolution's input: compare each with the plan.
    every_skip = NetworkSpec(width=width, skips=ALL_SKIPS)
    skips = tuple(layer.skip for layer in layer_plan(every_skip) if layer.skip is not None
                  and weights.get(layer.name, (0, 0, 0))[2] == layer.cin)
    spec = NetworkSpec(width=width, output_kernel=out_kernel, skips=skips,
                       kernel_size=kernel_size)
    if spec.problems() or layer_plan(spec)[-1].cin != out_cin \
            or (kernel_size and out_channels != 2 * kernel_size ** 2):
        raise ValueError("its output layer (%s) fits no decoder of width %g"
                         % (list(weights["output"]), width))
    return spec


def padded_size(height, width):
    """The network's working size: H and W rounded up to a multiple of 32."""
    return height + (-height % MULTIPLE), width + (-width % MULTIPLE)


def layer_plan(spec, height=MULTIPLE, width=MULTIPLE):
    """Every layer of the network for a spec and an image size, in order.

    Args:
      spec: a :class:`NetworkSpec` (validated here).
      height: image height (the plan uses the padded size).
      width: image width.

    Returns:
      A list of :class:`Layer`.

    Raises:
      ValueError: for an invalid spec.
    """
    spec.validate()
    enc, dec = channel_plan(spec.width)
    skip_of_block = {5 - k: k for k in spec.skips}  # decoder block -> encoder level
    h, w = padded_size(height, width)
    plan, cin = [], INPUT_CHANNELS
    level_channels = {0: enc[0]}  # encoder level -> channels of its features
    for b, c in enumerate(enc, 1):
        for i in range(1, CONVS_PER_ENCODER_BLOCK + 1):
            plan.append(Layer("enc%d/conv%d" % (b, i), "conv", cin, c, 3, 1, h, w, None))
            cin = c
        h, w = h // 2, w // 2
        plan.append(Layer("enc%d/pool" % b, "pool", c, c, 2, 2, h, w, None))
        level_channels[b] = c
    for b, c in enumerate(dec, 1):
        h, w = h * 2, w * 2
        plan.append(Layer("dec%d/up" % b, "up", cin, c, 4, 2, h, w, None))
        skip = skip_of_block.get(b)
        cin = c + (level_channels[skip] if skip is not None else 0)
        for i in range(1, CONVS_PER_DECODER_BLOCK + 1):
            plan.append(Layer("dec%d/conv%d" % (b, i), "conv", cin, c, 3, 1, h, w,
                              skip if i == 1 else None))
            cin = c
    if spec.kernel_size:
        plan.append(Layer("output", "output", cin, 2 * spec.kernel_size ** 2, 1, 1, h, w, None))
    else:
        plan.append(Layer("output", "output", cin, 3, spec.output_kernel, 1, h, w, None))
    return plan


def plan_flops(plan, kernel_size=0):
    """Multiply-adds x 2 of the convolutions in a plan (and the kernel head's blend).

    A transposed convolution's output pixel sees ``(4 / 2)^2`` taps per channel.
    """
    flops = 0
    for layer in plan:
        if layer.kind == "pool":
            continue
        taps = layer.kernel ** 2 // (layer.stride ** 2 if layer.kind == "up" else 1)
        flops += 2 * layer.height * layer.width * taps * layer.cin * layer.cout
    if kernel_size:  # the blend: 2K^2 taps x 3 channels multiply-adds per pixel
        last = plan[-1]
        flops += 2 * last.height * last.width * 2 * kernel_size ** 2 * 3
    return flops


def receptive_radius(plan):
    """How far (input pixels, each way) one output pixel's value reaches into the input.

    A 3x3 convolution at scale ``s`` (its pixels are ``s`` input pixels apart)
    adds ``s``, a 2x2 max pool onto scale ``2s`` adds ``s``, a 4x4 stride-2
    transposed convolution onto scale ``s`` adds ``2s`` (its coarse taps are one
    coarse pixel either side), the output convolution its half-width.
    About 250 for MIND: windows of one pixel's backward pass stop growing at
    about 500 pixels (:mod:`vidcorr.readout.sensitivity.windows`).
    """
    full = plan[0].height
    radius = 0
    for layer in plan:
        scale = full // layer.height
        if layer.kind == "conv":
            radius += scale * (layer.kernel // 2)
        elif layer.kind == "pool":
            radius += scale // 2
        elif layer.kind == "up":
            radius += 2 * scale
        else:
            radius += layer.kernel // 2
    return radius
