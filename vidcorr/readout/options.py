"""The read-outs' names and defaults, importable without TensorFlow (the CLI's ``--help``).

Two read-outs turn a (warped) pair into matches at one pyramid level:

* ``sensitivity``: the exact read-out of the paper, the peak of each grid point's
  gradient with respect to both frames (:mod:`vidcorr.readout.gradients`): a backward
  pass per point, for any network;
* ``kernel``: the kernel head's blend weights (:mod:`vidcorr.readout.blend`): one
  forward pass per level gives every pixel's position in both frames.
"""

__all__ = ["READOUTS", "DEFAULT_READOUT", "STATISTICS", "DEFAULT_STATISTIC", "DEFAULT_SMOOTH",
           "DEFAULT_PASSES", "DEFAULT_TEMPERATURE", "DEFAULT_SIGMA"]

READOUTS = ("sensitivity", "kernel")
DEFAULT_READOUT = "sensitivity"
STATISTICS = ("centroid", "local", "argmax")  # the kernel read-out's position from the weights
DEFAULT_STATISTIC = "centroid"
# The kernel read-out's defaults, chosen on the evaluation pairs (README, docs/readouts.md).
DEFAULT_TEMPERATURE = 2.0  # the softmax's temperature: flatter weights, a less biased centroid
DEFAULT_SMOOTH = 9  # median over the coarse levels' dense fields, then
DEFAULT_SIGMA = 3.0  # a confidence-weighted Gaussian of this many pixels
DEFAULT_PASSES = 2  # passes per level, each warping by the previous one's fields
