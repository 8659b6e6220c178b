"""Time and memory of a read-out, estimated before anything is built, and the guard on them.

A grid point's exact sensitivity costs about one forward pass of the network
at the image size (a dense backward pass through the encoder, windows through
the decoder), so a grid's time grows with its number of points times the
image area. :func:`estimate` adds this up over the pyramid levels of the
coarse-to-fine read-out; :func:`check_budget` refuses work above a time limit
or beyond the machine's memory, with the estimate and the ``--max-size`` (or
stride) that would fit.

The time scales ``SECONDS_PER_GFLOP`` (per grid point and GFLOP of the forward
pass) and ``SECONDS_PER_FORWARD_GFLOP`` were measured on the project's 2-core CPU
(docs/benchmarks.md); a GPU or a larger CPU is faster, and ``max_seconds=0``
turns the time guard off.

The blend-weight read-out (``readout="kernel"``) costs a forward pass per level and
pass at the level's full size, whatever the stride; ``SECONDS_PER_FORWARD_GFLOP``
is its time scale on the same CPU (``benchmarks/bench_dense.py`` prints it).

The refinement on the frames (:mod:`vidcorr.readout.refinement`) costs its SOR sweeps
(rounds x iterations x sweeps) over the finest level's pixels, each pixel-sweep
``SECONDS_PER_REFINE_SWEEP`` (``benchmarks/bench_refine.py`` measures it), whatever the
read-out.
"""

import collections
import os

from vidcorr.errors import UserError
from vidcorr.model.spec import layer_plan, plan_flops
from vidcorr.readout.pyramid import MIN_SIZE, pyramid_levels, read_out_plan

__all__ = ["Estimate", "estimate", "check_budget", "machine_memory_mb", "SECONDS_PER_GFLOP",
           "SECONDS_PER_FORWARD_GFLOP", "SECONDS_PER_REFINE_SWEEP",
           "DEFAULT_MAX_SECONDS", "MEMORY_SHARE"]

SECONDS_PER_GFLOP = 0.0061
SECONDS_PER_FORWARD_GFLOP = 0.012  # a forward pass with its host-side warps
SECONDS_PER_REFINE_SWEEP = 1.0e-7  # one pixel through one sweep, its share of the data terms

DEFAULT_MAX_SECONDS = 3600.0
MEMORY_SHARE = 0.8  # refuse work whose estimated peak exceeds this share of the RAM

Estimate = collections.namedtuple("Estimate", ["points", "seconds", "peak_mb"])


def machine_memory_mb():
    """Physical memory of this machine in MB (None where unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2.0 ** 20
    except (ValueError, OSError, AttributeError):
        return None


def estimate(spec, height, width, stride, levels=1, memory_mb=1024, passes=1, upsample=1,
             readout="sensitivity", level_passes=1, refine_sweeps=0):
    """The estimated points, seconds and peak memory of matching one pair.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      height: image height at the network (after any ``max_size``).
      width: image width.
      stride: grid stride.
      levels: pyramid levels actually used.
      memory_mb: the batched backward pass's budget.
      passes: 2 with the consistency check (the swapped pair too).
      upsample: the finer read-out's factor (:mod:`vidcorr.readout.pyramid`; 1: none).
      readout: ``"sensitivity"`` (a backward pass per grid point) or ``"kernel"`` (a
        forward pass per level).
      level_passes: the kernel read-out's passes per level.
      refine_sweeps: the refinement's SOR sweeps in all (0: no refinement).

    Returns:
      An :class:`Estimate`: grid points of all levels, seconds, peak MB.
    """
    from vidcorr.readout.memory import (activation_bytes_per_pixel, chunk_for_budget, fixed_bytes,
                                        forward_bytes, pixel_extent)

    points, seconds, peak = 0, 0.0, 0.0
    for level in read_out_plan(height, width, levels, stride, upsample):
        h, w, n = level.height, level.width, level.points
        if readout == "kernel":  # every pixel from one forward pass per pass of the level
            gflop = plan_flops(layer_plan(spec, h, w), spec.kernel_size) / 1e9
            points += n
            seconds += level_passes * gflop * SECONDS_PER_FORWARD_GFLOP
            peak = max(peak, forward_bytes(spec, h, w) / 2.0 ** 20)
            continue
        # One read-out costs about a forward pass over the part of the image it covers.
        gflop = plan_flops(layer_plan(spec, *pixel_extent(spec, h, w)), spec.kernel_size) / 1e9
        points += n
        seconds += n * gflop * SECONDS_PER_GFLOP
        chunk = chunk_for_budget(spec, h, w, memory_mb)
        peak = max(peak, (fixed_bytes(spec, h, w) + chunk * activation_bytes_per_pixel(
            spec, h, w)) / 2.0 ** 20)
    # the refinement runs once, on the finest level's pixels
    seconds += refine_sweeps * level.height * level.width * SECONDS_PER_REFINE_SWEEP
    return Estimate(points * passes, seconds * passes, peak)


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
        upsample, passes, memory and time limits).
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
        return estimate(spec, h, w, stride, pyramid_levels(h, w, o.levels),
                        o.memory_mb, passes, o.upsample, o.readout, o.passes, refine_sweeps)

    refine_sweeps = 0 if o.refine == "none" else (o.refine_rounds * o.refine_iterations *
                                                   o.refine_sweeps)

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
    raise UserError("a %dx%d pair at stride %d (%d read-outs) would take %s; use %s, a larger "
                    "--stride, or raise the limit with --max-seconds"
                    % (width, height, stride, est.points, " and ".join(reasons),
                       suggestion or "a larger --stride"))
