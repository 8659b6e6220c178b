"""The ``sensitivity`` read-out: the paper's exact read-out, coarse to fine on the host.

Each level's grid points are read out by their sensitivity peaks
(:class:`vidcorr.readout.sensitivity.gradients.SensitivityGraph`, one cached graph
per size; sub-pixel by :mod:`vidcorr.readout.sensitivity.subpixel`) on the pair
warped toward the middle frame by the coarser level's fields; the peaks are mapped
back through the warp and densified (:func:`vidcorr.readout.pyramid.densify`) into
the next level's fields (:func:`vidcorr.readout.pyramid.read_out_plan` lists the
levels). After the finest level the refinement on the frames
(:class:`vidcorr.readout.refinement.RefineGraph`) runs on the densified matches.
The confidence is the peak ratio times the refined residual's term times the
texture at both ends (:mod:`vidcorr.readout.confidence`).
"""

import numpy as np

from vidcorr.model.spec import layer_plan, plan_flops
from vidcorr.readout.confidence import match_confidence, peak_ratio
from vidcorr.readout.pyramid import (build_pyramid, densify, grid_points, pyramid_levels,
                                     read_out_plan, sample_field, upsample_exact,
                                     upsample_field, warp)
from vidcorr.readout.refinement import RefineGraph, residual_confidence
from vidcorr.readout.registry import ReadOut
from vidcorr.readout.sensitivity.gradients import GradientSettings, SensitivityGraph
from vidcorr.readout.sensitivity.memory import (activation_bytes_per_pixel, chunk_for_budget,
                                                fixed_bytes, pixel_extent)
from vidcorr.readout.sensitivity.subpixel import REFINEMENTS

__all__ = ["SensitivityReadOut", "SECONDS_PER_GFLOP"]

SECONDS_PER_GFLOP = 0.0061  # a grid point per GFLOP of its forward pass, the project's CPU


def _pixels(height, width):
    """Each pixel's own ``(x, y)``, ``[H, W, 2]`` float."""
    ys, xs = np.mgrid[0:height, 0:width]
    return np.stack([xs, ys], axis=-1).astype(np.float64)


def _unwarp(pos, fields):
    """Positions ``[N, 2 frames, (x, y)]`` in frames warped by ``fields`` (one per frame),
    mapped back to the frames' own pixels: ``x + field(x)``."""
    return np.stack([pos[:, f] + sample_field(fields[f], pos[:, f]) for f in (0, 1)], axis=1)


def densify_pair(grid, pos, conf, height, width, step):
    """Grid matches ``pos [N, 2 frames, (x, y)]`` as dense displacements of both frames,
    ``[H, W, 2, 2]`` (:func:`vidcorr.readout.pyramid.densify`)."""
    return np.stack([densify(grid, pos[:, f] - grid, conf, height, width, step)
                     for f in (0, 1)], axis=2)


class SensitivityReadOut(ReadOut):
    """The exact sensitivity read-out (see the module docstring)."""

    def __init__(self, matcher):
        super(SensitivityReadOut, self).__init__(matcher)
        self._graphs, self._refine_graphs = {}, {}

    @classmethod
    def level_cost(cls, spec, level, options):
        h, w = level.height, level.width
        # one read-out costs about a forward pass over the part of the image it covers
        gflop = plan_flops(layer_plan(spec, *pixel_extent(spec, h, w)), spec.kernel_size) / 1e9
        chunk = options.chunk or chunk_for_budget(spec, h, w, options.memory_mb)
        peak = fixed_bytes(spec, h, w) + chunk * activation_bytes_per_pixel(spec, h, w)
        return level.points * gflop * SECONDS_PER_GFLOP, peak / 2.0 ** 20

    def graph_for(self, height, width, full_maps=False):
        """The cached :class:`SensitivityGraph` for an image size (built on first use)."""
        m, o = self.matcher, self.matcher.options
        chunk = o.chunk or chunk_for_budget(m.spec, height, width, o.memory_mb)
        return m.built(self._graphs, (height, width, full_maps), lambda: SensitivityGraph(
            m.spec, height, width, m.weights, GradientSettings.from_options(o, chunk, full_maps),
            m.device, m.threads, devices=None if full_maps else m.devices))

    def read_out(self, pairs, points, stride, progress=False, desc="pixels"):
        out = [self._pair(a, b, points, stride, progress, desc if n == 0 else "swapped")
               for n, (a, b) in enumerate(pairs)]
        return tuple(np.stack(x) for x in zip(*out))

    def _pair(self, a, b, points, stride, progress, desc):
        """One pair's ``(pos [N, 2, 2], peak [N, 2], confidence [N])``, coarse to fine."""
        o = self.matcher.options
        h, w = a.shape[:2]
        levels = pyramid_levels(h, w, o.levels)
        plan = read_out_plan(h, w, levels, stride, o.upsample)
        pyr_a, pyr_b = build_pyramid(a, levels), build_pyramid(b, levels)
        fields = None  # (d1, d3): where frames t and t+2 show a middle-frame pixel
        for i, level in enumerate(plan):
            lh, lw, s = level.height, level.width, level.scale
            if s > 1:  # the finer read-out: the pair resampled, original pixel p at s p
                base_a, base_b = upsample_exact(a, int(s)), upsample_exact(b, int(s))
                fields = [upsample_exact(f, int(s), order=1) * s for f in fields]
                grid, name = points * int(s), "%s (x%d)" % (desc, s)
            else:
                base_a, base_b = pyr_a[level.index], pyr_b[level.index]
                if fields is not None:
                    fields = [upsample_field(f, lh, lw) for f in fields]
                grid = points if level.index == 0 else grid_points(lh, lw, level.step)
                name = desc if len(plan) == 1 else "%s (level %d)" % (desc, level.index)
            pos, peak, ratio = self._level(base_a, base_b, fields, grid, progress, name)
            if i + 1 < len(plan) or o.refine != "none":  # the next level's fields, or refined
                dense = densify_pair(grid, pos, ratio, lh, lw, level.step)
                fields = [dense[:, :, f] for f in (0, 1)]
        if o.refine != "none":
            pos, ratio = self._refine(base_a, base_b, dense, grid, ratio)
        if o.upsample > 1:
            pos = pos / float(o.upsample)
        return pos, peak, match_confidence(ratio, a, b, pos)

    def _level(self, base_a, base_b, fields, grid, progress, desc):
        """The read-out of the pair warped by ``fields`` (None: as it is) at ``grid``, its
        peaks mapped back through the warp: ``(pos [N, 2, 2], peak [N, 2], ratio [N])``."""
        img_a, img_b = base_a, base_b
        if fields is not None:
            img_a, img_b = warp(base_a, fields[0]), warp(base_b, fields[1])
        lh, lw = img_a.shape[:2]
        graph = self.graph_for(lh, lw)
        graph.set_images(img_a, img_b)
        res = graph.run(grid, progress=progress, desc=desc)
        subpixel = REFINEMENTS[self.matcher.options.subpixel]
        pos = subpixel(res["peak_xy"], res["patch"], lw, lh)  # [N, 2, (x, y)]
        if fields is not None:  # a peak in a warped frame: map it back through the warp
            pos = _unwarp(pos, fields)
        return pos, res["peak"], peak_ratio(res["peak"], res["second"])

    def _refine(self, base_a, base_b, dense, grid, ratio):
        """The refinement of a level's dense displacements ``dense [H, W, 2, 2]``, sampled at
        ``grid``: ``(pos [N, 2, 2], ratio [N])``, the ratio times the residual's term."""
        m, o = self.matcher, self.matcher.options
        lh, lw = base_a.shape[:2]
        graph = m.built(self._refine_graphs, (lh, lw), lambda: RefineGraph(
            lh, lw, o, m.device, m.threads))
        res = graph.run(base_a, base_b, dense + _pixels(lh, lw)[:, :, None])
        gx, gy = grid[:, 0], grid[:, 1]
        if o.residual_scale > 0:
            ratio = ratio * residual_confidence(res["residual"][gy, gx], o.residual_scale)
        return res["position"][gy, gx].astype(np.float64), ratio

    def close(self):
        for cache in (self._graphs, self._refine_graphs):
            for graph in cache.values():
                graph.close()
            cache.clear()
