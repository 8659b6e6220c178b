"""Matches from the inverted interpolation network: :class:`Matcher` and :class:`Matches`.

``Matcher(checkpoint).match(frame_t, frame_t2, stride=4)`` loads the network
once (batch norm folded), builds one :class:`vidcorr.readout.gradients.SensitivityGraph`
per image size (cached), and turns the reduced sensitivities into matches:
for each grid point p of the middle frame, the peak of its sensitivity in
frame t, ``(x1, y1)``, and in frame t+2, ``(x3, y3)``, refined to sub-pixel
precision by the centroid of the 3x3 neighbourhood (or a quadratic fit,
``subpixel="quadratic"``; the centroid measured better in
``benchmarks/precision_study.py``), with a confidence: the peak ratio
``1 - second / peak`` (the best value outside a radius against the peak; the
lower of the two frames) times the image texture at both ends
(:mod:`vidcorr.readout.confidence`); matches below ``min_confidence`` are invalid. An
optional consistency check runs the pair in swapped order and keeps matches
that agree within a tolerance.

With ``levels`` N > 1 the read-out is coarse to fine (:mod:`vidcorr.readout.pyramid`):
the coarsest of N half-size levels is read out on the grid, its matches become
dense displacement fields, and each finer level reads out the residual between
frames warped toward the middle frame by them, so motion beyond the network's
reach (``K // 2`` pixels per frame step) is found. Every level has its own
cached sensitivity graph; the coarse levels use the grid stride in their own
pixels, at most ``MAX_COARSE_STRIDE``, so their fields rest on enough matches.
"""

import os
import time

import numpy as np

from vidcorr.compat import tower_devices
from vidcorr.errors import UserError
from vidcorr.io.video import FLOAT_TOLERANCE, resize_float
from vidcorr.readout.blend import BlendGraph, blend_confidence
from vidcorr.readout.budget import check_budget
from vidcorr.readout.confidence import match_confidence, peak_ratio
from vidcorr.readout.gradients import SensitivityGraph
from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
from vidcorr.readout.memory import chunk_for_budget
from vidcorr.readout.options import MIN_SIZE, MatchOptions
from vidcorr.readout.pyramid import (DEFAULT_LEVELS, read_pair,
                                     build_pyramid, densify, grid_points, pyramid_levels,
                                     read_out_plan, sample_field, upsample_exact, upsample_field,
                                     warp)
from vidcorr.readout.refinement import RefineGraph, residual_confidence
from vidcorr.readout.subpixel import REFINEMENTS

__all__ = ["Matches", "Matcher", "MIN_SIZE", "DEFAULT_LEVELS"]

DEFAULT_MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models",
                             "default")




class Matches(object):
    """Matches of one image pair, in the original image's pixel coordinates.

    Attributes:
      grid: ``[N, 2]`` (x, y) grid points of the middle frame.
      p1: ``[N, 2]`` (x1, y1) in frame t (sub-pixel).
      p3: ``[N, 2]`` (x3, y3) in frame t+2 (sub-pixel).
      peak: ``[N, 2]`` peak sensitivity in frame t and frame t+2.
      confidence: ``[N]`` in [0, 1].
      valid: ``[N]`` bool, False where the consistency check failed.
      size: ``(height, width)`` of the images.
    """

    FIELDS = ("grid", "p1", "p3", "peak", "confidence", "valid")

    def __init__(self, grid, p1, p3, peak, confidence, valid, size):
        self.grid, self.p1, self.p3 = np.asarray(grid), np.asarray(p1), np.asarray(p3)
        self.peak, self.confidence = np.asarray(peak), np.asarray(confidence)
        self.valid = np.asarray(valid, bool)
        self.size = tuple(int(s) for s in size)

    def __len__(self):
        return len(self.grid)

    def to_flow(self, only_valid=True):
        """Sparse flow t -> t+2 as ``[H, W, 2]``: ``p3 - p1`` at ``round(p1)``, NaN elsewhere.

        Where several matches land on one pixel, the most confident wins.
        """
        h, w = self.size
        flow = np.full((h, w, 2), np.nan, np.float32)
        keep = self.valid if only_valid else np.ones(len(self), bool)
        order = np.argsort(self.confidence[keep])  # ascending: the best is written last
        p1, p3 = self.p1[keep][order], self.p3[keep][order]
        xy = np.rint(p1).astype(int)
        inside = (xy[:, 0] >= 0) & (xy[:, 0] < w) & (xy[:, 1] >= 0) & (xy[:, 1] < h)
        flow[xy[inside, 1], xy[inside, 0]] = (p3 - p1)[inside]
        return flow

    def save(self, path):
        """Writes ``path`` (``.npz``) with every array and the image size."""
        np.savez_compressed(path, size=np.array(self.size),
                            **{k: getattr(self, k) for k in self.FIELDS})

    def save_text(self, path):
        """Writes a plain table: one match per line with a header."""
        table = np.column_stack([self.grid, self.p1, self.p3, self.peak, self.confidence,
                                 self.valid.astype(int)])
        np.savetxt(path, table, fmt=["%d", "%d"] + ["%.3f"] * 4 + ["%.6g"] * 2 + ["%.4f", "%d"],
                   header="x2 y2 x1 y1 x3 y3 peak1 peak3 confidence valid")

    @classmethod
    def load(cls, path):
        """Reads matches written by :meth:`save`."""
        with np.load(path) as data:
            return cls(size=tuple(data["size"]), **{k: data[k] for k in cls.FIELDS})


def _pixels(height, width):
    """Each pixel's own ``(x, y)``, ``[H, W, 2]`` float."""
    ys, xs = np.mgrid[0:height, 0:width]
    return np.stack([xs, ys], axis=-1).astype(np.float64)


def _unwarp(pos, fields):
    """Positions ``[N, 2 frames, (x, y)]`` in frames warped by ``fields`` (one per frame),
    mapped back to the frames' own pixels: ``x + field(x)``."""
    return np.stack([pos[:, f] + sample_field(fields[f], pos[:, f]) for f in (0, 1)], axis=1)


def _densify_pair(grid, pos, conf, height, width, step):
    """Grid matches ``pos [N, 2 frames, (x, y)]`` as dense displacements of both frames,
    ``[H, W, 2, 2]`` (:func:`vidcorr.readout.pyramid.densify`)."""
    return np.stack([densify(grid, pos[:, f] - grid, conf, height, width, step)
                     for f in (0, 1)], axis=2)


class Matcher(object):
    """Finds matches between two frames with a trained interpolation network.

    Args:
      checkpoint: a run directory or checkpoint prefix (default: the model
        shipped with the package).
      options: a :class:`vidcorr.readout.options.MatchOptions` (default: its defaults).
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads.
      devices: spread every sensitivity read-out's pixels over these devices (a
        list, or a count N for the first N GPUs, or N virtual CPU devices without
        GPUs); one replica of the pass per device, the same matches.
      **settings: any :class:`~vidcorr.readout.options.MatchOptions` field, over
        ``options``: ``readout`` (``"sensitivity"``, the exact read-out, a
        backward pass per grid point; ``"kernel"``, the kernel head's blend
        weights, one forward pass per level for every pixel), ``levels``,
        ``upsample``, ``min_confidence``, ``max_seconds``, ``max_size``, ...

    Raises:
      UserError: for a missing or incompatible checkpoint, an unknown option or
        a bad value (one line naming it).
    """

    def __init__(self, checkpoint=None, options=None, device=None, threads=None, devices=None,
                 **settings):
        self.options = (options if options is not None else MatchOptions()).replace(**settings)
        self.subpixel = REFINEMENTS[self.options.subpixel]
        if checkpoint is None:
            if not os.path.isdir(DEFAULT_MODEL):
                raise UserError("no checkpoint given and no default model is installed; pass a "
                                "run directory or checkpoint prefix")
            checkpoint = DEFAULT_MODEL
        self.checkpoint, self.spec, values = find_model(checkpoint)
        if self.options.readout == "auto":
            self.options = self.options.replace(
                readout="kernel" if self.spec.kernel_size else "sensitivity")
        if self.options.readout == "kernel" and not self.spec.kernel_size:
            raise UserError("readout 'kernel' needs a network with a kernel head "
                            "(model.kernel_size > 0); %s synthesises its output directly: use "
                            "readout 'sensitivity'" % self.checkpoint)
        self.weights = fold_batch_norm(values)
        self.device, self.threads = device, threads
        if isinstance(devices, int) and not isinstance(devices, bool):
            if devices < 1:
                raise UserError("devices must be at least 1, got %d" % devices)
            devices = tower_devices(devices) if devices > 1 else None
        self.devices = list(devices) if devices else None
        self._graphs, self._predictors, self._blend_graphs = {}, {}, {}
        self._refine_graphs = {}
        self.build_seconds = 0.0  # time spent building graphs, for timing the read-outs

    def _built(self, cache, key, build):
        """``cache[key]``, built (and its building timed) on first use."""
        if key not in cache:
            start = time.time()
            cache[key] = build()
            self.build_seconds += time.time() - start
        return cache[key]

    def graph_for(self, height, width):
        """The cached :class:`SensitivityGraph` for an image size (built on first use)."""
        o = self.options
        chunk = o.chunk or chunk_for_budget(self.spec, height, width, o.memory_mb)
        return self._built(self._graphs, (height, width), lambda: SensitivityGraph(
            self.spec, height, width, self.weights, chunk, o.norm, o.radius, self.device,
            self.threads, o.max_pixels_per_run, devices=self.devices))

    def _prepare(self, frame_t, frame_t2):
        a, b = read_pair(frame_t, frame_t2)
        h, w = a.shape[:2]
        scale = 1.0
        if self.options.max_size and max(h, w) > self.options.max_size:
            scale = self.options.max_size / float(max(h, w))
            nh, nw = max(MIN_SIZE, int(round(h * scale))), max(MIN_SIZE, int(round(w * scale)))
            a, b = resize_float(a, nh, nw), resize_float(b, nh, nw)
        return a, b, (h, w)

    def match(self, frame_t, frame_t2, stride=4, offset=0, consistency=False, tolerance=2.0,
              progress=False):
        """Matches between frame t and frame t+2 on a grid of the middle frame.

        Args:
          frame_t: path or array of the first frame.
          frame_t2: path or array of the second frame (same size).
          stride: grid stride in (network) pixels.
          offset: grid offset in ``[0, stride)``.
          consistency: also run the swapped pair and mark disagreeing matches
            invalid.
          tolerance: consistency tolerance in pixels.
          progress: show a progress bar over pixels.

        Returns:
          :class:`Matches`.

        Raises:
          UserError: for unreadable or mismatched images, images smaller than
            32 pixels, a bad stride, or a pair over the time or memory limit.
        """
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or \
                not tolerance >= 0:
            raise UserError("tolerance must be a number of pixels >= 0, got %r" % (tolerance,))
        a, b, (h, w) = self._prepare(frame_t, frame_t2)
        nh, nw = a.shape[:2]
        points = grid_points(nh, nw, stride, offset)
        levels = pyramid_levels(nh, nw, self.options.levels)
        check_budget(self.spec, nh, nw, stride, self.options, passes=2 if consistency else 1)
        pos, peak, ratio = self._read_out(a, b, points, stride, levels, progress, "pixels")
        conf = match_confidence(ratio, a, b, pos)  # [N]: texture in its own 9x9 window
        valid = conf >= self.options.min_confidence
        if consistency:
            back, _, _ = self._read_out(b, a, points, stride, levels, progress, "swapped")
            valid &= np.all(np.abs(back[:, ::-1] - pos) <= tolerance, axis=(1, 2))
        sx, sy = w / float(nw), h / float(nh)
        to_orig = lambda xy: np.stack([(xy[..., 0] + 0.5) * sx - 0.5,  # noqa: E731
                                       (xy[..., 1] + 0.5) * sy - 0.5], axis=-1)
        pos = to_orig(pos)  # [N, 2, 2]
        # A position beyond the image's edge (more than half a pixel past the outer pixel
        # centres) shows the point leaving the view: not a match. The rest are clipped in.
        inside = np.all((pos >= -0.5) & (pos <= np.array([w, h], np.float64) - 0.5), axis=(1, 2))
        pos = np.clip(pos, 0.0, np.array([w - 1, h - 1], np.float64))
        return Matches(np.rint(to_orig(points)).astype(int), pos[:, 0], pos[:, 1], peak, conf,
                       valid & inside, (h, w))

    def _read_out(self, a, b, points, stride, levels, progress, desc):
        """Coarse-to-fine positions of ``points`` on the pair ``(a, b)``, by either read-out.

        The levels are :func:`vidcorr.readout.pyramid.read_out_plan`'s. Each reads out
        the residual between the frames warped toward the middle frame by the coarser
        level's fields (:meth:`_level`), and maps its positions back through the warp.
        The next level's fields are the read-out's own dense positions, median-filtered
        and confidence-smoothed (blend weights), or its grid matches densified
        (sensitivity). The kernel read-out reads each level ``passes`` times, each pass
        warping by the previous one's fields.

        Returns:
          ``(pos [N, 2 frames, (x, y)], peak [N, 2], confidence [N])`` at the
          finest level.
        """
        h, w = a.shape[:2]
        plan = read_out_plan(h, w, levels, stride, self.options.upsample)
        pyr_a, pyr_b = build_pyramid(a, levels), build_pyramid(b, levels)
        fields = None  # (d1, d3): where frames t and t+2 show a middle-frame pixel
        for i, level in enumerate(plan):
            last = i + 1 == len(plan)
            lh, lw, s = level.height, level.width, level.scale
            if s > 1:  # the finer read-out: the pair resampled, original pixel p at s p
                base_a, base_b = upsample_exact(a, int(s)), upsample_exact(b, int(s))
                fields = [upsample_exact(f, int(s), order=1) * s for f in fields]
                grid = points * int(s)
                name = "%s (x%d)" % (desc, s)
            else:
                base_a, base_b = pyr_a[level.index], pyr_b[level.index]
                if fields is not None:
                    fields = [upsample_field(f, lh, lw) for f in fields]
                grid = points if level.index == 0 else grid_points(lh, lw, level.step)
                name = desc if len(plan) == 1 else "%s (level %d)" % (desc, level.index)
            passes = self.options.passes if self.options.readout == "kernel" else 1
            for n in range(passes):
                final = last and n + 1 == passes
                handing_on = s <= 1 and not final  # fields handed on are smoothed
                pos, peak, conf, dense = self._read_warped(base_a, base_b, fields, grid,
                                                           progress, name, handing_on)
                if final:
                    break
                if dense is None:  # the sensitivity read-out's grid matches, densified
                    dense = _densify_pair(grid, pos, conf, lh, lw, level.step)
                fields = [dense[:, :, f] for f in (0, 1)]
        if self.options.refine != "none":
            if dense is None:
                dense = _densify_pair(grid, pos, conf, lh, lw, level.step)
            pos, conf = self._refine(base_a, base_b, dense, grid, conf)
        if self.options.upsample > 1:
            pos = pos / float(self.options.upsample)
        return pos, peak, conf

    def _read_warped(self, base_a, base_b, fields, grid, progress, desc, smoothed=False):
        """One level's read-out of the pair warped by ``fields`` (None: as it is) at the
        points ``grid``, its positions mapped back through the warp.

        Returns:
          ``(pos [N, 2, 2], peak [N, 2], confidence [N], dense)``: positions in the
          pair's pixels; ``dense`` is ``[H, W, 2, 2]`` displacements of every pixel
          (blend weights, warped on the device; ``smoothed`` there, as the fields a
          level hands on, :func:`vidcorr.readout.blend.smooth_field`) or None (sensitivity).
        """
        if self.options.readout == "kernel":
            lh, lw = base_a.shape[:2]
            res = self.blend_graph_for(lh, lw).run(base_a, base_b, fields, smoothed=smoothed)
            gx, gy = grid[:, 0], grid[:, 1]
            dense = res["fields"] if smoothed else res["position"] - _pixels(lh, lw)[:, :, None]
            return (res["position"][gy, gx].astype(np.float64), res["peak"][gy, gx],
                    blend_confidence(res["peak"][gy, gx]), dense)
        img_a, img_b = base_a, base_b
        if fields is not None:
            img_a, img_b = warp(base_a, fields[0]), warp(base_b, fields[1])
        pos, peak, conf = self._level(img_a, img_b, grid, progress, desc)
        if fields is not None:  # a peak in a warped frame: map it back through the warp
            pos = _unwarp(pos, fields)
        return pos, peak, conf, None

    def _refine(self, base_a, base_b, dense, grid, conf):
        """The refinement on the frames (:mod:`vidcorr.readout.refinement`) of a level's dense
        displacements ``dense [H, W, 2, 2]``, sampled at ``grid``: ``(pos [N, 2, 2],
        confidence [N])``, the confidence times the refined residual's term."""
        lh, lw = base_a.shape[:2]
        graph = self._built(self._refine_graphs, (lh, lw), lambda: RefineGraph(
            lh, lw, self.options, self.device, self.threads))
        res = graph.run(base_a, base_b, dense + _pixels(lh, lw)[:, :, None])
        gx, gy = grid[:, 0], grid[:, 1]
        if self.options.residual_scale > 0:
            conf = conf * residual_confidence(res["residual"][gy, gx],
                                              self.options.residual_scale)
        return res["position"][gy, gx].astype(np.float64), conf

    def _level(self, img_a, img_b, grid, progress, desc):
        """The sensitivity read-out of a (warped) pair at the points ``grid``:
        ``(pos [N, 2, 2], peak [N, 2], confidence [N])``."""
        lh, lw = img_a.shape[:2]
        graph = self.graph_for(lh, lw)
        graph.set_images(img_a, img_b)
        res = graph.run(grid, progress=progress, desc=desc)
        pos = self.subpixel(res["peak_xy"], res["patch"], lw, lh)  # [N, 2, (x, y)]
        return pos, res["peak"], peak_ratio(res["peak"], res["second"])

    def blend_graph_for(self, height, width):
        """The cached :class:`vidcorr.readout.blend.BlendGraph` for an image size."""
        return self._built(self._blend_graphs, (height, width), lambda: BlendGraph(
            self.spec, height, width, self.weights, self.options.statistic,
            self.options.temperature, self.options.smooth, self.options.sigma, self.device,
            self.threads))

    def predictor_for(self, height, width):
        """The cached forward-only :class:`vidcorr.readout.inference.Predictor` for an image size."""
        return self._built(self._predictors, (height, width), lambda: Predictor(
            self.spec, height, width, self.weights, self.device, self.threads))

    def predict(self, frame_t, frame_t2):
        """The network's middle frame for a pair (at the matching size), ``[H, W, 3]``."""
        a, b, _ = self._prepare(frame_t, frame_t2)
        pair = np.concatenate([a, b], axis=-1)[None]  # [1, H, W, 6]
        return self.predictor_for(*a.shape[:2]).predict(pair)[0]

    def predict_batch(self, inputs):
        """Middle frames ``[N, H, W, 3]`` of ``[N, H, W, 6]`` float pairs in [0, 1].

        Raises:
          UserError: for another shape, NaN or values outside [0, 1] (e.g. 0-255 data).
        """
        inputs = np.asarray(inputs, np.float32)
        if inputs.ndim != 4 or inputs.shape[3] != 6:
            raise UserError("pairs must be [N, H, W, 6] (frames t and t+2 stacked), got %s"
                            % list(inputs.shape))
        if inputs.size and not (np.all(np.isfinite(inputs)) and inputs.min() >= -FLOAT_TOLERANCE
                                and inputs.max() <= 1 + FLOAT_TOLERANCE):
            raise UserError("pairs must be finite floats in [0, 1], got values from %g to %g "
                            "(0-255 data? divide by 255.0)" % (inputs.min(), inputs.max()))
        return self.predictor_for(*inputs.shape[1:3]).predict(inputs)

    def sensitivity_maps(self, frame_t, frame_t2, points):
        """The paper's sensitivity maps of middle-frame pixels, at full size (no pyramid).

        Args:
          frame_t: path or array of the first frame.
          frame_t2: path or array of the second frame.
          points: ``[N, 2]`` integer ``(x, y)`` pixels of the middle frame (after
            ``max_size``, if the pair is downscaled).

        Returns:
          ``[N, 2, H, W]`` float32: for each point, how strongly its value depends on
          each pixel of frame t and of frame t+2 (the ``norm`` over colour of the
          gradient); the peaks are the sensitivity read-out's matches.

        Raises:
          UserError: for bad images or points outside the image.
        """
        a, b, _ = self._prepare(frame_t, frame_t2)
        h, w = a.shape[:2]
        points = np.asarray(points)
        if points.ndim != 2 or points.shape[1] != 2 or points.dtype.kind not in "iu" or \
                np.any(points < 0) or np.any(points >= [w, h]):
            raise UserError("points must be [N, 2] integer (x, y) pixels inside %dx%d" % (w, h))
        o = self.options
        graph = self._built(self._graphs, (h, w, "maps"), lambda: SensitivityGraph(
            self.spec, h, w, self.weights, o.chunk or chunk_for_budget(self.spec, h, w,
                                                                       o.memory_mb),
            o.norm, o.radius, self.device, self.threads, o.max_pixels_per_run, full_maps=True))
        graph.set_images(a, b)
        return graph.run(points)["maps"]

    def close(self):
        """Releases every cached graph's session."""
        for cache in (self._graphs, self._predictors, self._blend_graphs, self._refine_graphs):
            for graph in cache.values():
                graph.close()
            cache.clear()
