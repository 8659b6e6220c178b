"""The matcher's options: one validated, frozen record shared by every entry point.

:class:`MatchOptions` holds how a pair is read out: which read-out, the pyramid,
the confidence threshold, the time and memory limits and each read-out's own
settings. :class:`vidcorr.readout.matching.Matcher`,
:func:`vidcorr.apps.correspond.correspond_pairs`,
:func:`vidcorr.evaluation.evaluate.run_evaluation` and the command-line programs
take one, so a value is checked once, in one place, with one message. It loads
without TensorFlow (the CLI's ``--help`` stays fast).

The read-out is a name of :mod:`vidcorr.readout.registry`; two are built in:

* ``sensitivity``: the exact read-out of the paper, the peak of each grid point's
  gradient with respect to both frames (:mod:`vidcorr.readout.sensitivity`): a backward
  pass per point, for any network;
* ``kernel``: the kernel head's blend weights (:mod:`vidcorr.readout.kernel`): one
  forward pass per level gives every pixel's position in both frames, the whole match
  one graph.
"""

import dataclasses
import numbers
from typing import Optional

from vidcorr.errors import UserError
from vidcorr.readout.budget import DEFAULT_MAX_SECONDS
from vidcorr.readout.confidence import DEFAULT_MIN_CONFIDENCE
from vidcorr.readout import registry
from vidcorr.readout.pyramid import MIN_SIZE, UPSAMPLES

__all__ = ["MatchOptions", "READOUTS", "DEFAULT_READOUT", "STATISTICS", "DEFAULT_STATISTIC",
           "NORMS", "SUBPIXEL_METHODS", "REFINE_METHODS", "DEFAULT_REFINE", "MIN_SIZE",
           "DEFAULT_MEMORY_MB", "DEFAULT_RADIUS", "DEFAULT_SMOOTH",
           "DEFAULT_PASSES", "DEFAULT_TEMPERATURE", "DEFAULT_SIGMA",
           "DEFAULT_SIGMA_RANGE", "DEFAULT_RANGE_FLOOR"]

READOUTS = registry.names()  # the built-in ones; registry.names() has any added since
DEFAULT_READOUT = registry.AUTO  # kernel for a network with a kernel head, else sensitivity
STATISTICS = ("centroid", "local", "argmax")  # the kernel read-out's position from the weights
DEFAULT_STATISTIC = "centroid"
NORMS = ("l2", "l1", "max")  # the sensitivity's reduction over a frame's channels
SUBPIXEL_METHODS = ("centroid", "quadratic")  # the sensitivity peak's sub-pixel step
REFINE_METHODS = ("variational", "none")  # the refinement on the frames (readout/refinement.py)
DEFAULT_REFINE = "variational"
REFINE_SAMPLERS = ("bilinear", "bspline", "spline")  # vidcorr.model.sampling's, without TF
DEFAULT_MEMORY_MB = 1024  # one batched backward pass's budget
DEFAULT_RADIUS = 4  # the sensitivity's second peak is searched this far from the first
# The kernel read-out's defaults, chosen on the evaluation pairs (docs/readouts.md).
TEMPERATURES = (0.1, 10.0)  # the kernel head's temperatures that keep its weights finite
DEFAULT_TEMPERATURE = 2.0  # the softmax's temperature: flatter weights, a less biased centroid
DEFAULT_SMOOTH = 0  # a median over the coarse levels' dense fields (0: none; slow when large)
DEFAULT_SIGMA = 10.0  # then a confidence-weighted Gaussian of this many pixels on them
DEFAULT_SIGMA_RANGE = 1.0  # on the 2 coarsest levels' fields, stopping at motion boundaries
DEFAULT_RANGE_FLOOR = 0.03  # the weight left to a neighbour moving unlike the centre
DEFAULT_PASSES = 2  # passes per level, each warping by the previous one's fields
# The refinement's defaults, chosen on the evaluation pairs (docs/refinement.md).
DEFAULT_REFINE_ROUNDS = 3
DEFAULT_REFINE_ITERATIONS = 4
DEFAULT_REFINE_SWEEPS = 4
DEFAULT_REFINE_ALPHA = 10.0
DEFAULT_REFINE_DELTA = 5.0
DEFAULT_REFINE_GAMMA = 10.0
DEFAULT_REFINE_SCALES = 2
DEFAULT_REFINE_SAMPLER = "bilinear"
DEFAULT_RESIDUAL_SCALE = 0.02  # the residual (0-1 grey) at which its confidence term is 1/2


def _integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class MatchOptions:
    """How pairs are read out (every field has a default; see :class:`vidcorr.Matcher`).

    Attributes:
      readout: a read-out's name (:mod:`vidcorr.readout.registry`): ``"kernel"`` (the
        blend weights), ``"sensitivity"`` (the exact read-out) or ``"auto"``: kernel
        for a network with a kernel head, else sensitivity.
      levels: pyramid levels of the coarse-to-fine read-out (fewer where the
        coarsest would be under ``MIN_SIZE`` pixels); None: by the image's size
        (:func:`vidcorr.readout.pyramid.levels_for_size`: 3 up to 384 pixels, one more
        each time the longer side doubles).
      upsample: 2 or 4 adds a read-out of the residual at that many times the size
        after the finest level; 1: none.
      min_confidence: matches whose confidence is below it are invalid.
      max_seconds: refuse pairs estimated to take longer (0 or None: no limit), or
        whose estimated memory exceeds the machine's.
      max_size: downscale pairs whose longer side exceeds it (None: never).
      memory_mb: the sensitivity read-out's batched backward pass budget.
      chunk: pixels per batched backward pass (overrides ``memory_mb``).
      max_pixels_per_run: at most this many pixels per ``sess.run`` (None: all).
      norm: the sensitivity's channel reduction, ``l2``, ``l1`` or ``max``.
      radius: the sensitivity's second peak is searched outside it.
      subpixel: the sensitivity peak's sub-pixel step, ``centroid`` or ``quadratic``.
      statistic: the kernel read-out's position, ``centroid``, ``local`` or ``argmax``.
      temperature: the kernel read-out's softmax temperature.
      passes: the kernel read-out's passes per level.
      smooth: the median (its size; 0: none) on the fields a level of the kernel
        read-out hands on (to its next pass or the next level).
      sigma: then a confidence-weighted Gaussian of this many pixels (0: none).
      sigma_range: on the kernel read-out's two coarsest levels (not the finest), that
        Gaussian stops at motion boundaries: a neighbour whose field differs from the
        centre's by d pixels (of the level) weighs ``exp(-d^2 / 2 sigma_range^2) +
        range_floor`` times as much (0: the plain Gaussian everywhere;
        :mod:`vidcorr.readout.kernel.smoothing`).
      range_floor: that weight's least value.
      refine: the refinement on the frames after the finest level
        (:mod:`vidcorr.readout.refinement`): ``variational`` or ``none``.
      refine_rounds: its re-warpings; ``refine_iterations``: fixed-point steps per
        round; ``refine_sweeps``: SOR sweeps per step.
      refine_alpha: its smoothness weight; ``refine_delta``: brightness constancy;
        ``refine_gamma``: gradient constancy.
      refine_scales: the image scales it refines on, coarse to fine, each half the last's
        size (1: only the images' own size).
      refine_sampler: how it samples the frames: ``bilinear``, ``bspline`` (the cubic
        B-spline kernel, a little smoothing) or ``spline`` (the interpolating cubic spline);
        the spline kernels are nearly free of bilinear sampling's shift at fractional
        positions (:mod:`vidcorr.model.sampling`).
      residual_scale: the refined match's photometric residual (0-1 grey) at which its
        confidence term is 1/2 (0: no such term).
    """
    readout: str = DEFAULT_READOUT
    levels: Optional[int] = None
    upsample: int = 1
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    max_seconds: Optional[float] = DEFAULT_MAX_SECONDS
    max_size: Optional[int] = None
    memory_mb: int = DEFAULT_MEMORY_MB
    chunk: Optional[int] = None
    max_pixels_per_run: Optional[int] = None
    norm: str = "l2"
    radius: int = DEFAULT_RADIUS
    subpixel: str = "centroid"
    statistic: str = DEFAULT_STATISTIC
    temperature: float = DEFAULT_TEMPERATURE
    passes: int = DEFAULT_PASSES
    smooth: int = DEFAULT_SMOOTH
    sigma: float = DEFAULT_SIGMA
    sigma_range: float = DEFAULT_SIGMA_RANGE
    range_floor: float = DEFAULT_RANGE_FLOOR
    refine: str = DEFAULT_REFINE
    refine_rounds: int = DEFAULT_REFINE_ROUNDS
    refine_iterations: int = DEFAULT_REFINE_ITERATIONS
    refine_sweeps: int = DEFAULT_REFINE_SWEEPS
    refine_alpha: float = DEFAULT_REFINE_ALPHA
    refine_delta: float = DEFAULT_REFINE_DELTA
    refine_gamma: float = DEFAULT_REFINE_GAMMA
    refine_scales: int = DEFAULT_REFINE_SCALES
    refine_sampler: str = DEFAULT_REFINE_SAMPLER
    residual_scale: float = DEFAULT_RESIDUAL_SCALE

    def __post_init__(self):
        for name, values in (("readout", registry.names()), ("statistic", STATISTICS),
                             ("norm", NORMS), ("subpixel", SUBPIXEL_METHODS),
                             ("refine", REFINE_METHODS),
                             ("refine_sampler", REFINE_SAMPLERS)):
            if getattr(self, name) not in values:
                raise UserError("%s must be one of %s, got %r"
                                % (name, ", ".join(values), getattr(self, name)))
        if not _integer(self.upsample) or self.upsample not in UPSAMPLES:
            raise UserError("upsample must be one of %s, got %r"
                            % (", ".join(map(str, UPSAMPLES)), self.upsample))
        if self.levels is not None and (not _integer(self.levels) or self.levels < 1):
            raise UserError("levels must be an integer >= 1 or None (by the image's size), "
                            "got %r" % (self.levels,))
        for name, low, what in (("passes", 1, ">= 1"),
                                ("smooth", 0, ">= 0 (a median's size)"),
                                ("radius", 1, ">= 1"), ("memory_mb", 1, ">= 1 (MB)"),
                                ("refine_rounds", 1, ">= 1"), ("refine_iterations", 1, ">= 1"),
                                ("refine_sweeps", 1, ">= 1"),
                                ("refine_scales", 1, ">= 1 (1: the images' own size)")):
            value = getattr(self, name)
            if not _integer(value) or value < low:
                raise UserError("%s must be an integer %s, got %r" % (name, what, value))
        for name in ("chunk", "max_pixels_per_run"):
            value = getattr(self, name)
            if value is not None and (not _integer(value) or value < 1):
                raise UserError("%s must be an integer >= 1 or None, got %r" % (name, value))
        if self.max_size is not None and (not _integer(self.max_size)
                                          or self.max_size < MIN_SIZE):
            raise UserError("max_size must be an integer of at least %d pixels, got %r"
                            % (MIN_SIZE, self.max_size))
        if not _number(self.min_confidence) or not 0 <= self.min_confidence <= 1:
            raise UserError("min_confidence must be in [0, 1], got %r" % (self.min_confidence,))
        if self.max_seconds is not None and (not _number(self.max_seconds)
                                             or not self.max_seconds >= 0):
            raise UserError("max_seconds must be >= 0 (0: no limit), got %r"
                            % (self.max_seconds,))
        if not _number(self.temperature) or not TEMPERATURES[0] <= self.temperature <= \
                TEMPERATURES[1]:
            raise UserError("temperature must be from %g to %g (the kernel head's logits are "
                            "divided by it; outside, its weights under- or overflow), got %r"
                            % (TEMPERATURES + (self.temperature,)))
        for name in ("sigma", "sigma_range", "range_floor", "refine_alpha", "refine_delta", "refine_gamma",
                     "residual_scale"):
            value = getattr(self, name)
            if not _number(value) or not 0 <= value < float("inf"):
                raise UserError("%s must be a finite number >= 0, got %r" % (name, value))
        if self.refine_alpha + self.refine_delta + self.refine_gamma <= 0:
            raise UserError("refine_alpha, refine_delta and refine_gamma cannot all be 0")

    def replace(self, **changes):
        """A copy with ``changes`` (validated), e.g. ``options.replace(readout="kernel")``.

        Raises:
          UserError: for an unknown option or a bad value.
        """
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise UserError("unknown matcher option %s (known: %s)"
                            % (", ".join(map(repr, unknown)), ", ".join(sorted(known))))
        return dataclasses.replace(self, **changes)
