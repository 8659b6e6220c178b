"""Timing helpers shared by the benchmarks (and research scripts): a sensitivity graph's
read-out, and the median of repeated runs.

Every ``sess.run`` of a :class:`vidcorr.readout.sensitivity.gradients.SensitivityGraph` runs the
forward pass once and then the pixels' backward passes, so the per-pixel
time is the difference between a run of all points and a run of one chunk,
and the rest is the time per run.
"""

import statistics
import time

__all__ = ["time_read_out", "median_seconds"]


def time_read_out(graph, points, chunk):
    """Times ``graph.run(points)`` after a warm-up.

    Args:
      graph: a SensitivityGraph with its images set.
      points: ``[N, 2]`` grid points, N > ``chunk``.
      chunk: the graph's chunk size.

    Returns:
      ``(result, seconds, per_pixel, per_run)``: the run's result, its
      seconds, the marginal seconds per pixel and the seconds per run.
    """
    graph.run(points[:chunk])  # warm-up (and the forward pass's first run)
    start = time.perf_counter()
    graph.run(points[:chunk])
    one = time.perf_counter() - start
    start = time.perf_counter()
    result = graph.run(points)
    seconds = time.perf_counter() - start
    per_pixel = (seconds - one) / max(1, len(points) - chunk)
    return result, seconds, per_pixel, max(0.0, one - chunk * per_pixel)


def median_seconds(run, repeats):
    """The median seconds of ``repeats`` calls of ``run()`` after one warm-up call (graph
    optimisation, allocations)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
