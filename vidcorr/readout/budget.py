"""Time and memory of a read-out, estimated before anything is built, and the guard on them.

Each read-out says what a pyramid level costs it
(:meth:`vidcorr.readout.registry.ReadOut.level_cost`): a grid point's exact
sensitivity about one forward pass over the part of the image it covers
(``SECONDS_PER_GFLOP`` in :mod:`vidcorr.readout.sensitivity.readout`), the blend
weights a forward pass per level and pass at the level's full size, whatever the
stride (``SECONDS_PER_FORWARD_GFLOP`` in :mod:`vidcorr.readout.kernel.readout`,
``benchmarks/bench_dense.py`` prints it). :func:`estimate` adds this up over the
levels of the coarse-to-fine read-out (:func:`vidcorr.readout.pyramid.read_out_plan`);
:func:`check_budget` refuses work above a time limit or beyond the machine's memory,
with the estimate and the ``--max-size`` (or stride) that would fit. The time scales
were measured on the project's 2-core CPU (docs/benchmarks.md); a GPU or a larger
CPU is faster, and ``max_seconds=0`` turns the time guard off.

The refinement on the frames (:mod:`vidcorr.readout.refinement`) costs its SOR sweeps
(rounds x iterations x sweeps) over the finest level's pixels, each pixel-sweep
``SECONDS_PER_REFINE_SWEEP`` (``benchmarks/bench_refine.py`` measures it), whatever the
read-out, times the frames' sampler's ``REFINE_SAMPLER_COST`` (the spline samplers read 16
pixels where bilinear reads 4).
"""

import collections
import os

from vidcorr.errors import UserError
from vidcorr.readout import registry
from vidcorr.readout.pyramid import MIN_SIZE, pyramid_levels, read_out_plan

__all__ = ["Estimate", "estimate", "check_budget", "machine_memory_mb",
           "SECONDS_PER_REFINE_SWEEP", "REFINE_SAMPLER_COST", "DEFAULT_MAX_SECONDS",
           "MEMORY_SHARE"]

# one pixel through one sweep, its share of the data terms (benchmarks/bench_refine.py, one
# thread, 2026-12-06, after the quadratic-form data terms: 2.0e-8 at 288x384, 3.1e-8 at
# 720x1280; 3.2e-8 and 4.1e-8 before, in the same runs): a slower machine's day allowed for
SECONDS_PER_REFINE_SWEEP = 6.0e-8
# the refinement's time with each sampler against bilinear's (its graph alone, default
# settings, 288x384, one thread: benchmarks/bench_refine.py --options, 2026-12-06: 0.175 s
# bilinear, 0.258 s bspline, 0.245 s spline)
REFINE_SAMPLER_COST = {"bilinear": 1.0, "bspline": 1.5, "spline": 1.4}

DEFAULT_MAX_SECONDS = 3600.0
MEMORY_SHARE = 0.8  # refuse work whose estimated peak exceeds this share of the RAM

Estimate = collections.namedtuple("Estimate", ["points", "seconds", "peak_mb"])


def machine_memory_mb():
    """Physical memory of this machine in MB (None where unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2.0 ** 20
    except (ValueError, OSError, AttributeError):
        return None


def estimate(spec, height, width, stride, options, pairs=1):
    """The estimated points, seconds and peak memory of matching one pair.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      height: image height at the network (after any ``max_size``).
      width: image width.
      stride: grid stride.
      options: the :class:`vidcorr.readout.options.MatchOptions`: the read-out (``"auto"`` as the network resolves it), levels, upsample,
        refinement.
      pairs: 2 with the consistency check (the swapped pair too).

    Returns:
      An :class:`Estimate`: grid points of all levels, seconds, peak MB.
    """
    o = options
    readout = registry.resolve(o.readout, spec)
    points, seconds, peak = 0, 0.0, 0.0
    for level in read_out_plan(height, width, pyramid_levels(height, width, o.levels), stride,
                               o.upsample):
        level_seconds, level_mb = readout.level_cost(spec, level, o)
        points += level.points
        seconds += level_seconds
        peak = max(peak, level_mb)
    if o.refine != "none":  # the refinement runs once, on the finest level's pixels
        sweeps = o.refine_rounds * o.refine_iterations * o.refine_sweeps
        sweeps *= sum(0.25 ** k for k in range(o.refine_scales))  # coarser scales: 1/4 each
        seconds += (sweeps * level.height * level.width * SECONDS_PER_REFINE_SWEEP
                    * REFINE_SAMPLER_COST[o.refine_sampler])
    return Estimate(points * pairs, seconds * pairs, peak)


def _fits(est, max_seconds, ram_mb):
    return ((not max_seconds or est.seconds <= max_seconds) and
            (ram_mb is None or est.peak_mb <= MEMORY_SHARE * ram_mb))


def _duration(seconds):
    if seconds < 120:
        return "%.0f s" % seconds
    if seconds < 7200:
        return "%.0f min" % (seconds / 60.0)
    return "%.1f h" % (seconds / 3600.0)


def check_budget(spec, height, width, stride, options, passes=1, ram_mb=None):
    """Refuses a pair whose estimated time or memory is beyond the limits.

    Args:
      spec: the network spec.
      height: image height at the network.
      width: image width.
      stride: grid stride.
      options: the :class:`vidcorr.readout.options.MatchOptions` (read-out, levels,
        upsample, refinement, memory and time limits).
      passes: 2 with the consistency check.
      ram_mb: the machine's memory (default: :func:`machine_memory_mb`).

    Returns:
      The :class:`Estimate` when it fits.

    Raises:
      UserError: with the estimate and a ``--max-size`` that would fit.
    """
    o = options
    max_seconds, min_size = o.max_seconds, MIN_SIZE

    def cost(h, w):
        return estimate(spec, h, w, stride, o, passes)

    ram_mb = machine_memory_mb() if ram_mb is None else ram_mb
    est = cost(height, width)
    if _fits(est, max_seconds, ram_mb):
        return est
    longer = max(height, width)
    suggestion = None
    for size in range(longer - 32, min_size - 1, -32):
        scale = size / float(longer)
        h, w = max(min_size, int(round(height * scale))), max(min_size, int(round(width * scale)))
        small = cost(h, w)
        if _fits(small, max_seconds, ram_mb):
            suggestion = "--max-size %d (about %s)" % (size, _duration(small.seconds))
            break
    reasons = []
    if max_seconds and est.seconds > max_seconds:
        reasons.append("about %s (over the %s limit)" % (_duration(est.seconds),
                                                           _duration(max_seconds)))
    if ram_mb is not None and est.peak_mb > MEMORY_SHARE * ram_mb:
        reasons.append("about %.1f GB of memory (over %d%% of this machine's %.1f GB)"
                       % (est.peak_mb / 1024.0, 100 * MEMORY_SHARE, ram_mb / 1024.0))
    remedies = ([suggestion] if suggestion else []) + ["a larger --stride"]
    raise UserError("a %dx%d pair at stride %d (%d read-outs) would take %s; use %s, or raise "
                    "the limit with --max-seconds"
                    % (width, height, stride, est.points, " and ".join(reasons),
                       ", ".join(remedies)))
