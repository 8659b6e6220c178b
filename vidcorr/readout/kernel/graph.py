"""From two frames to a dense field in one graph: the kernel read-out's whole match.

:func:`match_ops` builds, for a batch of pairs ``[B, H, W, 3]``, everything
:meth:`vidcorr.Matcher.match` does with the blend weights, in TensorFlow ops:

1. the pyramid (:func:`vidcorr.readout.kernel.resample.area_downscale`), coarsest
   level first, each level read ``passes`` times by :func:`vidcorr.readout.kernel.blend.blend_level`,
   each pass warping by the previous one's fields; the fields a coarse level or a
   pass hands on are read out at every ``HAND_ON_STRIDE``-th pixel and row only,
   median-filtered and confidence-smoothed
   (:func:`vidcorr.readout.kernel.smoothing.smooth_field`, the Gaussian's width divided
   by the stride; on the two coarsest levels it stops at motion boundaries, ``sigma_range``)
   and upsampled to the next pass's or level's pixels
   (:func:`~vidcorr.readout.kernel.resample.upsample_fields`). The Gaussian (10 px by
   default) is far wider than the stride, and the head, the moments, the unwarp and the
   smoothing of those passes run on a quarter of the pixels: 288x384 unrefined went
   from 0.59-0.61 to 0.48-0.49 s, 720x1280 from 5.17 to 4.35 s, one thread, with the
   evaluation pairs' refined accuracy within 0.002 (``docs/benchmarks.md``);
2. with ``upsample`` S > 1, a finer level on the pair resampled S times;
3. the refinement on the frames (:func:`vidcorr.readout.refinement.refine_field`);
4. the confidence: the smaller blend peak share of the two frames, times the
   refined residual's term, times the texture at both ends
   (:mod:`vidcorr.readout.kernel.texture`).

It returns, for every middle-frame pixel, its ``position`` in both frames
``[B, H, W, 2, 2]``, the blend ``peak`` ``[B, H, W, 2]`` and the ``confidence``
``[B, H, W]``.

The number of levels is known when the size is (:func:`vidcorr.readout.pyramid.pyramid_levels`,
the matcher's graphs, one per size). For a graph of any size (the exported
``match``) :func:`match_ops` builds ``max_levels`` levels and computes in the graph
which of them the size uses, by the same rule: a level the size does not use runs
on a small image and hands on zero fields, so the first level it does use starts
from none, exactly as the matcher's own graph for that size. No ``tf.cond``: the
graph stays free of control flow but the refinement's loops.

:class:`MatchGraph` is one size's graph in its own session, as the matcher caches it.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.inference import FoldedGraph
from vidcorr.readout.kernel.blend import blend_level, pixel_grid, tempered
from vidcorr.readout.kernel.resample import area_downscale, upsample_exact, upsample_fields
from vidcorr.readout.kernel.smoothing import smooth_field
from vidcorr.readout.kernel.texture import texture_at, texture_map
from vidcorr.readout.pyramid import COARSEST_SIDE, DEFAULT_LEVELS, MIN_SIZE, pyramid_levels
from vidcorr.readout.refinement import RefineSettings, refine_field

__all__ = ["match_ops", "levels_in_graph", "MatchGraph", "LevelGraph", "WeightsGraph",
           "HAND_ON_STRIDE"]

HAND_ON_STRIDE = 2  # the fields a pass hands on are read out at every 2nd pixel and row
RANGE_LEVELS = 2  # the hand-on smoothing stops at motion boundaries on the 2 coarsest levels


def levels_in_graph(height, width, levels=None):
    """:func:`vidcorr.readout.pyramid.pyramid_levels` of a size given as scalar tensors: the
    levels a read-out of that size uses (``levels``: a fixed count, None: by size)."""
    longer, shorter = tf.maximum(height, width), tf.minimum(height, width)
    if levels is None:  # DEFAULT_LEVELS, one more each time the longer side doubles past 384
        count = tf.constant(DEFAULT_LEVELS)
        for n in range(DEFAULT_LEVELS, 16):
            count += tf.cast(longer > COARSEST_SIDE * 2 ** (n - 1), tf.int32)
    else:
        count = tf.constant(int(levels))
    fit = tf.constant(1)
    for n in range(1, 16):  # levels whose coarsest side stays >= MIN_SIZE
        fit += tf.cast(shorter // 2 ** n >= MIN_SIZE, tf.int32)
    return tf.minimum(count, fit)


def _level_size(height, width, index, static):
    """A level's size: ``(H // 2^index, W // 2^index)``; in a graph of any size, at least
    ``MIN_SIZE`` (a level the size does not use still runs)."""
    h, w = height // 2 ** index, width // 2 ** index
    return (h, w) if static else (tf.maximum(h, MIN_SIZE), tf.maximum(w, MIN_SIZE))


def _range_width(options, index, built, used):
    """The hand-on smoothing's range width at level ``index``: ``sigma_range`` on the
    ``RANGE_LEVELS`` coarsest levels the size uses, infinite (the Gaussian at the
    bilateral's taps) on the other coarser levels, 0 (the plain Gaussian) on the finest;
    a scalar tensor where the levels used are known at run time only (``used``)."""
    if index == 0 or options.sigma_range == 0:
        return 0.0
    if used is None:
        return options.sigma_range if index >= built - RANGE_LEVELS else float("inf")
    return tf.where(index >= used - RANGE_LEVELS, tf.constant(float(options.sigma_range)),
                    tf.constant(float("inf")))


def _passes(spec, base_a, base_b, fields, options, hand_on_smoothed, last, sigma_range=0.0):
    """A level's ``passes`` read-outs, each warping by the previous one's fields.

    Args:
      spec: the network's spec.
      base_a: the level's frame t, ``[B, H, W, 3]``.
      base_b: its frame t+2.
      fields: None, or ``[B, H, W, 2, 2]`` fields the first pass warps by.
      options: the match's options.
      hand_on_smoothed: the fields handed on are read out at every ``HAND_ON_STRIDE``-th
        pixel and smoothed; else every pixel's, as read.
      last: the last pass is the final read-out.
      sigma_range: the hand-on smoothing's range width (:func:`_range_width`).

    Returns:
      ``(out, fields, stride)``: the last pass's :func:`blend_level` dict, the fields it
      hands on (``[B, h, w, 2, 2]`` at every ``stride``-th pixel and row of the level; None
      when ``last``: the final read-out hands nothing on).
    """
    o = options
    size = tf.shape(base_a)[1], tf.shape(base_a)[2]  # (H, W)
    for n in range(o.passes):
        final = last and n + 1 == o.passes
        s = 1 if final or not hand_on_smoothed else HAND_ON_STRIDE
        out = blend_level(spec, base_a, base_b, fields, o.statistic, stride=s)
        if final:
            return out, None, 1
        shape = tf.shape(out["position"])  # [B, h, w, 2, 2], h = ceil(H / s)
        grid = pixel_grid(size[0], size[1], s)  # [1, h, w, 2]
        fields = out["position"] - grid[:, :, :, None]  # [B, h, w, 2, 2]
        if hand_on_smoothed:
            with tf.name_scope("smooth"):
                flat = tf.reshape(fields, tf.concat([shape[:3], [4]], 0))  # [B, h, w, 4]
                flat = smooth_field(flat, tf.reduce_min(out["peak"], axis=3), o.smooth,
                                    o.sigma / s, sigma_range, o.range_floor)
                fields = tf.reshape(flat, shape)
        if n + 1 < o.passes and s > 1:
            with tf.name_scope("densify"):  # the next pass warps every pixel
                fields = upsample_fields(fields, size[0], size[1], size, s)  # [B, H, W, 2, 2]
    return out, fields, s


def _coarse_to_fine(spec, frame_t, frame_t2, options, max_levels):
    """The pyramid's levels, coarsest first, then with ``upsample`` S > 1 the finer read-out
    (see :func:`match_ops` for the arguments).

    Returns:
      ``(out, base_a, base_b)``: the final read-out's :func:`blend_level` dict and the pair
      it read (the frames themselves, or resampled S times).
    """
    o = options
    static = max_levels is None
    if static:
        height, width = frame_t.shape.as_list()[1:3]
        built = pyramid_levels(height, width, o.levels)
        used = None
    else:
        shape = tf.shape(frame_t)
        height, width = shape[1], shape[2]
        built = int(max_levels)
        used = levels_in_graph(height, width, o.levels)
    fields, stride, size = None, 1, None  # what the previous level hands on
    for index in range(built - 1, -1, -1):  # coarsest first
        h, w = _level_size(height, width, index, static)
        with tf.name_scope("downscale"):
            base_a = area_downscale(frame_t, h, w, 2 ** index)  # [B, h, w, 3]
            base_b = area_downscale(frame_t2, h, w, 2 ** index)
        if fields is not None:
            with tf.name_scope("upsample"):
                fields = upsample_fields(fields, h, w, size, stride)  # [B, h, w, 2, 2]
        last = index == 0 and o.upsample == 1
        out, fields, stride = _passes(spec, base_a, base_b, fields, o, True, last,
                                      _range_width(o, index, built, used))
        size = (h, w)
        if used is not None and index > 0:  # a level the size does not use hands on nothing
            fields *= tf.cast(index < used, tf.float32)
    s = o.upsample
    if s > 1:  # the finer read-out: the pair resampled, pixel p at S p
        fields = upsample_fields(fields, height, width, size, stride)  # every pixel's
        base_a, base_b = upsample_exact(frame_t, s), upsample_exact(frame_t2, s)
        fields = s * upsample_exact(tf.reshape(fields, tf.concat([tf.shape(fields)[:3], [4]], 0)),
                                    s, cubic=False)
        shape = tf.shape(fields)
        fields = tf.reshape(fields, tf.concat([shape[:3], [2, 2]], 0))
        out, _, _ = _passes(spec, base_a, base_b, fields, o, False, True)
    return out, base_a, base_b


def match_ops(spec, frame_t, frame_t2, options, max_levels=None, unroll=False):
    """The whole match of a batch of pairs (see the module docstring).

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      frame_t: ``[B, H, W, 3]`` float in [0, 1].
      frame_t2: ``[B, H, W, 3]``.
      options: a :class:`vidcorr.readout.options.MatchOptions` (its ``temperature`` is the
        caller's: load :func:`vidcorr.readout.kernel.blend.tempered` weights).
      max_levels: None for a static size (the levels are known); for a size unknown
        until run time, the levels built (a size that would use more gets these).
      unroll: the refinement's loops in Python, not ``tf.while_loop`` (for converters
        without nested loops: the ONNX export).

    Returns:
      ``{"position": [B, H, W, 2, 2], "peak": [B, H, W, 2], "confidence": [B, H, W]}``.
    """
    o = options
    s = o.upsample
    out, base_a, base_b = _coarse_to_fine(spec, frame_t, frame_t2, o, max_levels)
    position, peak = out["position"], out["peak"]  # [B, h, w, 2, 2], [B, h, w, 2]
    ratio = tf.reduce_min(peak, axis=3)  # [B, h, w]: the smaller peak share
    if o.refine != "none":
        with tf.name_scope("refine"):
            p1, p3, residual = refine_field(base_a, base_b, position[..., 0, :],
                                            position[..., 1, :],
                                            RefineSettings.from_options(o), unroll=unroll)
        position = tf.stack([p1, p3], axis=3)
        if o.residual_scale > 0:
            ratio *= o.residual_scale / (o.residual_scale + tf.maximum(residual, 0.0))
    if s > 1:  # back to the pair's own pixels
        position, peak, ratio = (x[:, ::s, ::s] for x in (position, peak, ratio))
        position /= float(s)
    with tf.name_scope("texture"):
        texture = tf.minimum(texture_at(texture_map(frame_t), position[..., 0, :]),
                             texture_at(texture_map(frame_t2), position[..., 1, :]))
    return {"position": position, "peak": peak, "confidence": ratio * texture}


class MatchGraph(FoldedGraph):
    """:func:`match_ops` for one image size, in its own session (built once, cached by the
    matcher): a batch of pairs in, dense positions and confidences out, one ``sess.run``.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      height: image height.
      width: image width.
      weights: folded ``{name: array}`` (:func:`vidcorr.readout.inference.fold_batch_norm`).
      options: a :class:`vidcorr.readout.options.MatchOptions`.
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).

    On a CPU, Grappler's rewrites are off for a refining graph (``graph_rewrites`` None:
    off when ``options.refine`` is not ``"none"``). At 288x384 they made the refined
    match's first run 22.8 s against 14.0 s without them, and its later runs no faster
    (2.14 against 2.06 s); the unrefined graph's later runs need them (1.51 against
    2.07 s; ``benchmarks/bench_first_run.py``).
    """

    graph_rewrites = None

    def __init__(self, spec, height, width, weights, options, device=None, threads=None):
        self.options = options
        if self.graph_rewrites is None:
            self.graph_rewrites = options.refine == "none"
        super(MatchGraph, self).__init__(spec, height, width,
                                         tempered(weights, options.temperature), device, threads)

    def _build(self, spec):
        shape = [None, self.height, self.width, 3]
        self.frame_t = tf.placeholder(tf.float32, shape, "frame_t")  # [B, H, W, 3]
        self.frame_t2 = tf.placeholder(tf.float32, shape, "frame_t2")
        self.outputs = match_ops(spec, self.frame_t, self.frame_t2, self.options)

    def run(self, frames_t, frames_t2):
        """Every pixel's match for a batch of pairs.

        Args:
          frames_t: ``[B, H, W, 3]`` float in [0, 1].
          frames_t2: ``[B, H, W, 3]``.

        Returns:
          ``{"position": [B, H, W, 2, 2], "peak": [B, H, W, 2], "confidence": [B, H, W]}``
          numpy arrays.
        """
        return self.sess.run(self.outputs, {self.frame_t: np.asarray(frames_t, np.float32),
                                            self.frame_t2: np.asarray(frames_t2, np.float32)})


class LevelGraph(FoldedGraph):
    """One level of the read-out alone (:func:`vidcorr.readout.kernel.blend.blend_level`) for
    one size, in its own session: what the studies and tests look at inside the match.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      height: image height.
      width: image width.
      weights: folded ``{name: array}``.
      statistic: the position statistic.
      temperature: the softmax's temperature.
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).
    """

    def __init__(self, spec, height, width, weights, statistic="centroid", temperature=2.0,
                 device=None, threads=None):
        self.statistic = statistic
        super(LevelGraph, self).__init__(spec, height, width, tempered(weights, temperature),
                                         device, threads)

    def _build(self, spec):
        shape = [1, self.height, self.width]
        self.frame_t = tf.placeholder(tf.float32, shape + [3], "frame_t")
        self.frame_t2 = tf.placeholder(tf.float32, shape + [3], "frame_t2")
        self.fields = tf.placeholder(tf.float32, shape + [2, 2], "fields")
        self.warped = blend_level(spec, self.frame_t, self.frame_t2, self.fields,
                                  self.statistic)
        self.plain = blend_level(spec, self.frame_t, self.frame_t2, None, self.statistic)

    def run(self, frame_t, frame_t2, fields=None):
        """``{"position": [H, W, 2, 2], "mass": [H, W, 2], "peak": [H, W, 2]}`` of one pair,
        the network seeing it warped by ``fields`` (None, or ``(d1, d3)``, two ``[H, W, 2]``)."""
        feed = {self.frame_t: np.asarray(frame_t, np.float32)[None],
                self.frame_t2: np.asarray(frame_t2, np.float32)[None]}
        if fields is None:
            return {k: v[0] for k, v in self.sess.run(self.plain, feed).items()}
        feed[self.fields] = np.stack(fields, axis=2)[None].astype(np.float32)
        return {k: v[0] for k, v in self.sess.run(self.warped, feed).items()}


class WeightsGraph(FoldedGraph):
    """The kernel head's blend weights of chosen pixels, one level at the pair's own size (no
    pyramid, no warp), in its own session: what a notebook draws of a pixel.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      height: image height.
      width: image width.
      weights: folded ``{name: array}``.
      temperature: the softmax's temperature.
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).
    """

    def __init__(self, spec, height, width, weights, temperature=2.0, device=None, threads=None):
        super(WeightsGraph, self).__init__(spec, height, width, tempered(weights, temperature),
                                           device, threads)

    def _build(self, spec):
        k = spec.kernel_size
        shape = [1, self.height, self.width, 3]
        self.frame_t = tf.placeholder(tf.float32, shape, "frame_t")
        self.frame_t2 = tf.placeholder(tf.float32, shape, "frame_t2")
        self.points = tf.placeholder(tf.int32, [None, 2], "points")  # (x, y)
        endpoints = {}
        mind(tf.concat([self.frame_t, self.frame_t2], axis=3), False, spec=spec, folded=True,
             name=MODEL_SCOPE, endpoints=endpoints)
        top, left = endpoints["crop"][:2]  # the image inside the padded logits
        at = self.points[:, ::-1] + tf.cast(tf.stack([top, left]), tf.int32)  # (row, col)
        picked = tf.gather_nd(endpoints["logits"][0], at)  # [N, 2K^2]
        self.weights = tf.reshape(tf.nn.softmax(picked), [-1, 2, k, k])  # frame, dy, dx

    def run(self, frame_t, frame_t2, points):
        """``[N, 2, K, K]`` weights of ``points`` ``[N, 2]`` (x, y): frame t's taps, then frame
        t+2's, rows ``dy`` and columns ``dx`` from ``-K // 2``; together they sum to 1."""
        return self.sess.run(self.weights, {
            self.frame_t: np.asarray(frame_t, np.float32)[None],
            self.frame_t2: np.asarray(frame_t2, np.float32)[None],
            self.points: np.asarray(points, np.int32)})
