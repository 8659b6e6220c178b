"""Matches from the inverted interpolation network: :class:`Matcher` and :class:`Matches`.

``Matcher(checkpoint).match(frame_t, frame_t2, stride=4)`` loads the network once
(batch norm folded), reads the pair with its read-out (found by name in
:mod:`vidcorr.readout.registry`) and returns, for each grid point p of the middle
frame, its position in frame t, ``(x1, y1)``, and in frame t+2, ``(x3, y3)``, with a
confidence in [0, 1]; matches below ``min_confidence`` are invalid, and so are
matches that leave the image. The read-outs:

* ``kernel`` (:mod:`vidcorr.readout.kernel`): the kernel head's blend weights give
  every pixel's positions; the whole coarse-to-fine match, the refinement on the
  frames and the confidence are one graph per image size, one ``sess.run`` per pair
  (or per batch: the consistency check's swapped pair rides in the same run);
* ``sensitivity`` (:mod:`vidcorr.readout.sensitivity`): the paper's exact read-out,
  the peak of each grid point's sensitivity, coarse to fine on the host.

Coarse to fine (:mod:`vidcorr.readout.pyramid`), the coarsest of N half-size levels
is read first, its matches become dense displacement fields, and each finer level
reads the residual between the frames warped toward the middle frame by them, so
motion beyond the network's reach (``K // 2`` pixels per frame step) is found. An
optional consistency check reads the swapped pair and keeps matches that agree
within a tolerance.
"""

import numbers
import os
import time

import numpy as np

from vidcorr.compat import tower_devices
from vidcorr.errors import UserError
from vidcorr.io.video import float_batch, resize_float
from vidcorr.readout import registry
from vidcorr.readout.budget import check_budget
from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
from vidcorr.readout.options import MIN_SIZE, MatchOptions
from vidcorr.readout.pyramid import DEFAULT_LEVELS, DEFAULT_STRIDE, grid_points, read_pair

__all__ = ["Matches", "Matcher", "MIN_SIZE", "DEFAULT_LEVELS", "DEFAULT_MODEL"]

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
        ``options``: ``readout`` (a name of :mod:`vidcorr.readout.registry`:
        ``"kernel"``, the kernel head's blend weights, the whole match in one graph
        per size; ``"sensitivity"``, the exact read-out, a backward pass per grid
        point; ``"auto"``), ``levels``, ``upsample``, ``min_confidence``,
        ``max_seconds``, ``max_size``, ...

    Attributes:
      readout: the read-out (a :class:`vidcorr.readout.registry.ReadOut`) bound to
        this matcher.

    Raises:
      UserError: for a missing or incompatible checkpoint, an unknown option or
        a bad value (one line naming it).
    """

    def __init__(self, checkpoint=None, options=None, device=None, threads=None, devices=None,
                 **settings):
        if isinstance(options, dict):
            options = MatchOptions().replace(**options)
        elif options is not None and not isinstance(options, MatchOptions):
            raise UserError("options must be a MatchOptions or a dict of its fields, got %r "
                            "(a read-out is chosen with readout=..., e.g. Matcher(readout="
                            "'kernel'))" % (options,))
        self.options = (options if options is not None else MatchOptions()).replace(**settings)
        if checkpoint is None:
            if not os.path.isdir(DEFAULT_MODEL):
                raise UserError("no checkpoint given and no default model is installed; pass a "
                                "run directory or checkpoint prefix")
            checkpoint = DEFAULT_MODEL
        self.checkpoint, self.spec, values = find_model(checkpoint)
        readout = registry.resolve(self.options.readout, self.spec)
        self.options = self.options.replace(readout=readout.name)
        self.weights = fold_batch_norm(values)
        self.device, self.threads = device, threads
        if isinstance(devices, bool) or not (devices is None or isinstance(
                devices, (int, np.integer)) or (isinstance(devices, (list, tuple)) and all(
                    isinstance(d, str) for d in devices))):
            raise UserError("devices must be a count or a list of device names like "
                            "['/gpu:0', '/gpu:1'], got %r" % (devices,))
        if isinstance(devices, (int, np.integer)):
            devices = int(devices)
            if devices < 1:
                raise UserError("devices must be at least 1, got %d" % devices)
            devices = tower_devices(devices) if devices > 1 else None
        self.devices = list(devices) if devices else None
        self._predictors = {}
        self._maps = None  # the sensitivity maps' read-out, when asked for
        self.build_seconds = 0.0  # time spent building graphs, for timing the read-outs
        self.readout = readout(self)

    def built(self, cache, key, build):
        """``cache[key]``, built (and its building timed) on first use."""
        if key not in cache:
            start = time.time()
            cache[key] = build()
            self.build_seconds += time.time() - start
        return cache[key]

    def _prepare(self, frame_t, frame_t2):
        a, b = read_pair(frame_t, frame_t2)
        h, w = a.shape[:2]
        scale = 1.0
        if self.options.max_size and max(h, w) > self.options.max_size:
            scale = self.options.max_size / float(max(h, w))
            nh, nw = max(MIN_SIZE, int(round(h * scale))), max(MIN_SIZE, int(round(w * scale)))
            a, b = resize_float(a, nh, nw), resize_float(b, nh, nw)
        return a, b, (h, w)

    def match(self, frame_t, frame_t2, stride=DEFAULT_STRIDE, offset=0, consistency=False, tolerance=2.0,
              progress=False):
        """Matches between frame t and frame t+2 on a grid of the middle frame.

        Args:
          frame_t: path or array of the first frame.
          frame_t2: path or array of the second frame (same size).
          stride: grid stride in (network) pixels.
          offset: grid offset in ``[0, stride)``.
          consistency: also read out the swapped pair (in the same batch) and mark
            disagreeing matches invalid.
          tolerance: consistency tolerance in pixels.
          progress: show a progress bar over pixels.

        Returns:
          :class:`Matches`.

        Raises:
          UserError: for unreadable or mismatched images, images smaller than
            32 pixels, a bad stride, or a pair over the time or memory limit.
        """
        if isinstance(tolerance, (bool, np.bool_)) or not isinstance(
                tolerance, numbers.Real) or not 0 <= tolerance < float("inf"):
            raise UserError("tolerance must be a number of pixels >= 0, got %r" % (tolerance,))
        if not isinstance(consistency, (bool, np.bool_)):
            raise UserError("consistency must be True or False, got %r" % (consistency,))
        a, b, (h, w) = self._prepare(frame_t, frame_t2)
        nh, nw = a.shape[:2]
        points = grid_points(nh, nw, stride, offset)
        check_budget(self.spec, nh, nw, stride, self.options, passes=2 if consistency else 1)
        pairs = [(a, b), (b, a)] if consistency else [(a, b)]
        pos, peak, conf = self.readout.read_out(pairs, points, stride, progress)
        valid = conf[0] >= self.options.min_confidence
        if consistency:
            valid &= np.all(np.abs(pos[1][:, ::-1] - pos[0]) <= tolerance, axis=(1, 2))
        pos, peak, conf = pos[0], peak[0], conf[0]
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

    def predictor_for(self, height, width):
        """The cached forward-only :class:`vidcorr.readout.inference.Predictor` for an image size."""
        return self.built(self._predictors, (height, width), lambda: Predictor(
            self.spec, height, width, self.weights, self.device, self.threads))

    def predict(self, frame_t, frame_t2):
        """The network's middle frame for a pair (at the matching size), ``[H, W, 3]``."""
        a, b, _ = self._prepare(frame_t, frame_t2)
        pair = np.concatenate([a, b], axis=-1)[None]  # [1, H, W, 6]
        return self.predictor_for(*a.shape[:2]).predict(pair)[0]

    def predict_batch(self, inputs):
        """Middle frames ``[N, H, W, 3]`` of ``[N, H, W, 6]`` float pairs in [0, 1].

        Raises:
          UserError: for another shape, an empty batch, sides under 32 pixels, NaN or
            values outside [0, 1] (e.g. 0-255 data).
        """
        inputs = float_batch(inputs, 6, "pairs (frames t and t+2 stacked)", MIN_SIZE)
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
        from vidcorr.readout.sensitivity.readout import SensitivityReadOut

        a, b, _ = self._prepare(frame_t, frame_t2)
        h, w = a.shape[:2]
        points = self._check_points(points, h, w)
        if self._maps is None:
            self._maps = SensitivityReadOut(self)
        graph = self._maps.graph_for(h, w, full_maps=True)
        graph.set_images(a, b)
        return graph.run(points)["maps"]

    def blend_weights(self, frame_t, frame_t2, points):
        """The kernel head's blend weights of middle-frame pixels, at full size (no pyramid).

        Args:
          frame_t: path or array of the first frame.
          frame_t2: path or array of the second frame.
          points: ``[N, 2]`` integer ``(x, y)`` pixels of the middle frame.

        Returns:
          ``[N, 2, K, K]``: how much each tap of frame t and of frame t+2 around the pixel
          (rows ``dy``, columns ``dx`` from ``-K // 2``) makes of it; they sum to 1.

        Raises:
          UserError: for a network without a kernel head, bad images or points.
        """
        from vidcorr.readout.kernel.graph import WeightsGraph

        if not self.spec.kernel_size:
            raise UserError("this network has no kernel head (model.kernel_size 0): it has "
                            "no blend weights")
        a, b, _ = self._prepare(frame_t, frame_t2)
        h, w = a.shape[:2]
        points = self._check_points(points, h, w)
        graph = self.built(self._predictors, ("weights", h, w), lambda: WeightsGraph(
            self.spec, h, w, self.weights, self.options.temperature, self.device, self.threads))
        return graph.run(a, b, points)

    @staticmethod
    def _check_points(points, h, w):
        points = np.asarray(points)
        if points.ndim != 2 or points.shape[1] != 2 or points.dtype.kind not in "iu" or \
                np.any(points < 0) or np.any(points >= [w, h]):
            raise UserError("points must be [N, 2] integer (x, y) pixels inside %dx%d" % (w, h))
        return points

    def close(self):
        """Releases every cached graph's session."""
        for readout in (self.readout, self._maps):
            if readout is not None:
                readout.close()
        for graph in self._predictors.values():
            graph.close()
        self._predictors.clear()
