"""The memory model of the batched sensitivity pass: how many pixels fit in a chunk.

A :class:`vidcorr.readout.sensitivity.gradients.SensitivityGraph` holds a fixed part (the
runtime, the forward pass at the padded image size and the masks the backward
pass derives from it) and, per pixel of a chunk, a few activations of the
largest layer at the size of that pixel's window: the whole padded image, or,
once the image is larger than the network's receptive field, a window of about
twice its radius a side (:func:`pixel_extent`; :mod:`vidcorr.readout.sensitivity.windows` decides
per layer by :data:`DENSE_FRACTION`). The budget module (:mod:`vidcorr.readout.budget`)
and the matcher size their work from it. No TensorFlow here.
"""

from vidcorr.model.spec import layer_plan, padded_size, receptive_radius

import collections

__all__ = ["RUNTIME_BYTES", "MAX_CHUNK", "DENSE_FRACTION", "Density", "DEFAULT_DENSITY",
           "JOINS", "stays_windowed", "pixel_extent",
           "activation_bytes_per_pixel", "fixed_bytes", "chunk_for_budget", "forward_bytes"]

# A window op costs about as much per position as the dense op, plus the gather of its
# masks: the backward pass goes dense once a window covers more than this share of its
# image (chosen with benchmarks/bench_scaling.py --fractions; docs/benchmarks.md).
DENSE_FRACTION = 0.6

JOINS = ("auto", "union", "dense")

Density = collections.namedtuple("Density", ["fraction", "join"])
Density.__doc__ = """Where a windowed backward pass goes dense: the one setting for it.

``fraction``: a window covering more than this share of its image goes dense
(the dense op is then cheaper). ``join``: where two paths of the pass meet (the
skips), ``"union"`` keeps their union window, ``"dense"`` goes dense there, and
``"auto"`` keeps the union only where the pass can stay windowed up to the input
(a large image; :func:`pixel_extent`): otherwise windows past the first join cost
more than they save (``benchmarks/bench_scaling.py`` measures both).
"""

DEFAULT_DENSITY = Density(DENSE_FRACTION, "auto")

# TensorFlow itself, the weights and the graph (the memory model's constant part; the
# benchmark's peak RSS against --memory-mb checks the whole model).
RUNTIME_BYTES = 600 * 2 ** 20
MAX_CHUNK = 64


def _layer_floats(spec, height, width):
    """Float counts of the network's activations at the padded size (from the layer plan):
    the input (with the kernel head's direct term), each layer's output and each skip's
    concatenation."""
    plan = layer_plan(spec, height, width)
    h, w = padded_size(height, width)
    sizes = [h * w * 6 * (3 if spec.kernel_size else 1)]
    for layer in plan[:-1]:
        sizes.append(layer.height * layer.width * layer.cout)
        if layer.skip is not None:
            sizes.append(layer.height * layer.width * layer.cin)
    return sizes


def stays_windowed(window_area, image_area, fraction=DENSE_FRACTION):
    """The one rule of where a windowed backward pass goes dense: a window of at most
    ``fraction`` of its image stays a window (:class:`Density`); a larger one costs more
    than the dense op it replaces."""
    return window_area <= fraction * image_area


def pixel_extent(spec, height, width, fraction=DENSE_FRACTION):
    """The part of the padded image one pixel's backward pass covers: ``(h, w)``.

    The whole padded image, unless the image is large enough against the
    receptive field (:func:`vidcorr.model.spec.receptive_radius`) for the pass to stay
    windowed up to the input (a window of at most ``fraction`` of the image,
    :class:`Density`); then a window of about twice that radius a side.
    """
    hp, wp = padded_size(height, width)
    side = 2 * receptive_radius(layer_plan(spec, height, width)) + 2
    h, w = min(hp, side), min(wp, side)
    return (h, w) if stays_windowed(h * w, hp * wp, fraction) else (hp, wp)


def activation_bytes_per_pixel(spec, height, width, fraction=DENSE_FRACTION):
    """Rough float32 bytes that one pixel adds to a batched backward pass (its share of a chunk).

    The pass holds about four activations of the largest layer per pixel at
    a time (the incoming and outgoing cotangents, a skip's waiting cotangent,
    a temporary), at the size of its window (:func:`pixel_extent`).
    """
    return 4 * 4 * max(_layer_floats(spec, *pixel_extent(spec, height, width, fraction)))


def fixed_bytes(spec, height, width):
    """Rough bytes of a sensitivity graph before any pixel: the runtime, the forward pass
    and the batch-1 masks the backward pass derives from it (two floats per activation)."""
    return RUNTIME_BYTES + 2 * 4 * sum(_layer_floats(spec, height, width))


def chunk_for_budget(spec, height, width, memory_mb, fraction=DENSE_FRACTION):
    """The number of pixels per batched VJP that keeps the process within ``memory_mb``.

    At least 1 (a budget below the fixed part cannot be met) and at most
    ``MAX_CHUNK`` (larger chunks amortise the per-iteration overhead of the loop).
    ``fraction`` is the :class:`Density`'s.
    """
    free = memory_mb * 2 ** 20 - fixed_bytes(spec, height, width)
    per_pixel = activation_bytes_per_pixel(spec, height, width, fraction)
    return int(max(1, min(MAX_CHUNK, free // per_pixel)))


def forward_bytes(spec, height, width):
    """Rough peak bytes of the blend-weight read-out's forward pass (:mod:`vidcorr.readout.kernel.blend`):
    the runtime, every activation once, and four copies of the ``[H, W, 2K^2]`` weights (the
    logits, their softmax and the reduction's temporaries)."""
    h, w = padded_size(height, width)
    taps = 2 * spec.kernel_size ** 2
    return RUNTIME_BYTES + 4 * sum(_layer_floats(spec, height, width)) + 4 * 4 * h * w * taps
