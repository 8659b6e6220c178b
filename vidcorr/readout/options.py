"""The matcher's options: one validated, frozen record shared by every entry point.

:class:`MatchOptions` holds how a pair is read out: which read-out, the pyramid,
the confidence threshold, the time and memory limits and each read-out's own
settings. :class:`vidcorr.readout.matching.Matcher`,
:func:`vidcorr.apps.correspond.correspond_pairs`,
:func:`vidcorr.evaluation.evaluate.run_evaluation` and the command-line programs
take one, so a value is checked once, in one place, with one message. It loads
without TensorFlow (the CLI's ``--help`` stays fast).

Two read-outs turn a (warped) pair into matches at one pyramid level:

* ``sensitivity``: the exact read-out of the paper, the peak of each grid point's
  gradient with respect to both frames (:mod:`vidcorr.readout.gradients`): a backward
  pass per point, for any network;
* ``kernel``: the kernel head's blend weights (:mod:`vidcorr.readout.blend`): one
  forward pass per level gives every pixel's position in both frames.
"""

import dataclasses
import numbers
from typing import Optional

from vidcorr.errors import UserError
from vidcorr.readout.budget import DEFAULT_MAX_SECONDS
from vidcorr.readout.confidence import DEFAULT_MIN_CONFIDENCE
from vidcorr.readout.pyramid import DEFAULT_LEVELS, MIN_SIZE, UPSAMPLES

__all__ = ["MatchOptions", "READOUTS", "DEFAULT_READOUT", "STATISTICS", "DEFAULT_STATISTIC",
           "NORMS", "REFINE_METHODS", "MIN_SIZE", "DEFAULT_MEMORY_MB", "DEFAULT_SMOOTH",
           "DEFAULT_PASSES", "DEFAULT_TEMPERATURE", "DEFAULT_SIGMA"]

READOUTS = ("auto", "kernel", "sensitivity")
DEFAULT_READOUT = "auto"  # kernel for a network with a kernel head, else sensitivity
STATISTICS = ("centroid", "local", "argmax")  # the kernel read-out's position from the weights
DEFAULT_STATISTIC = "centroid"
NORMS = ("l2", "l1", "max")  # the sensitivity's reduction over a frame's channels
REFINE_METHODS = ("centroid", "quadratic")  # the sensitivity peak's sub-pixel step
DEFAULT_MEMORY_MB = 1024  # one batched backward pass's budget
# The kernel read-out's defaults, chosen on the evaluation pairs (docs/readouts.md).
DEFAULT_TEMPERATURE = 2.0  # the softmax's temperature: flatter weights, a less biased centroid
DEFAULT_SMOOTH = 0  # a median over the coarse levels' dense fields (0: none; slow when large)
DEFAULT_SIGMA = 10.0  # then a confidence-weighted Gaussian of this many pixels on them
DEFAULT_PASSES = 2  # passes per level, each warping by the previous one's fields


def _integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class MatchOptions:
    """How pairs are read out (every field has a default; see :class:`vidcorr.Matcher`).

    Attributes:
      readout: ``"kernel"`` (the blend weights), ``"sensitivity"`` (the exact
        read-out) or ``"auto"``: kernel for a network with a kernel head, else
        sensitivity.
      levels: pyramid levels of the coarse-to-fine read-out (fewer where the
        coarsest would be under ``MIN_SIZE`` pixels).
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
      refine: the sensitivity peak's sub-pixel step, ``centroid`` or ``quadratic``.
      statistic: the kernel read-out's position, ``centroid``, ``local`` or ``argmax``.
      temperature: the kernel read-out's softmax temperature.
      passes: the kernel read-out's passes per level.
      smooth: the median (its size; 0: none) on the fields a level of the kernel
        read-out hands on (to its next pass or the next level).
      sigma: then a confidence-weighted Gaussian of this many pixels (0: none).
    """
    readout: str = DEFAULT_READOUT
    levels: int = DEFAULT_LEVELS
    upsample: int = 1
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    max_seconds: Optional[float] = DEFAULT_MAX_SECONDS
    max_size: Optional[int] = None
    memory_mb: int = DEFAULT_MEMORY_MB
    chunk: Optional[int] = None
    max_pixels_per_run: Optional[int] = None
    norm: str = "l2"
    radius: int = 4
    refine: str = "centroid"
    statistic: str = DEFAULT_STATISTIC
    temperature: float = DEFAULT_TEMPERATURE
    passes: int = DEFAULT_PASSES
    smooth: int = DEFAULT_SMOOTH
    sigma: float = DEFAULT_SIGMA

    def __post_init__(self):
        for name, values in (("readout", READOUTS), ("statistic", STATISTICS),
                             ("norm", NORMS), ("refine", REFINE_METHODS)):
            if getattr(self, name) not in values:
                raise UserError("%s must be one of %s, got %r"
                                % (name, ", ".join(values), getattr(self, name)))
        if not _integer(self.upsample) or self.upsample not in UPSAMPLES:
            raise UserError("upsample must be one of %s, got %r"
                            % (", ".join(map(str, UPSAMPLES)), self.upsample))
        for name, low, what in (("levels", 1, ">= 1"), ("passes", 1, ">= 1"),
                                ("smooth", 0, ">= 0 (a median's size)"),
                                ("radius", 1, ">= 1"), ("memory_mb", 1, ">= 1 (MB)")):
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
        if not _number(self.temperature) or not 0 < self.temperature < float("inf"):
            raise UserError("temperature must be a positive number, got %r"
                            % (self.temperature,))
        if not _number(self.sigma) or not 0 <= self.sigma < float("inf"):
            raise UserError("sigma must be a number >= 0 (0: no smoothing), got %r"
                            % (self.sigma,))

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
