"""Per-pixel sensitivity of the interpolation network, built once and batched.

For an output pixel p the sensitivity is ``d(sum_c out[p, c]) / d(input)``, a
``[H, W, 6]`` map; reduced over each frame's 3 channels (L2 norm by default)
its peak in frame t and in frame t+2 is the match of p.

:class:`SensitivityGraph` builds this computation once for a network and an
image size, never per pixel:

* the image pair lives in a device-resident variable (on the GPU when there is
  one), loaded once per pair, already reflect-padded to a multiple of 32 (so
  no MirrorPad op sits in the batched backward pass: TF 1.15's pfor has no
  converter for its gradient); the gradient of the padded copies is folded
  back onto the pixels they copy with two constant 0/1 matrices;
* the network runs once; the VJP is batched over a chunk of one-hot
  cotangents, one per pixel, while the forward activations are shared. By
  default the network's graph is transposed into forward convolutions over
  the chunk, on windows around the pixels through the decoder and, where the
  image is larger than the receptive field (about 500 pixels for MIND,
  :func:`vidcorr.readout.sensitivity.memory.pixel_extent`), through the encoder up to the input, so that a
  pixel's cost stops growing with the image
  (:class:`vidcorr.readout.sensitivity.backward.BatchedVJP`, :mod:`vidcorr.readout.sensitivity.windows`); the kernel
  head's direct term, the fold of the padding and the reduction then work on
  the window too; ``backward="pfor"``
  vectorises ``tf.gradients`` with ``tf.vectorized_map`` instead (their
  speeds: ``benchmarks/bench_gradients.py`` and the README);
* the reduction happens on the device: per pixel and frame only the argmax,
  the peak, the best value outside a radius (for the confidence) and the 3x3
  neighbourhood of the peak (for sub-pixel refinement) come back; full maps
  are fetched only on request;
* the graph is finalised after construction, so its op count cannot grow with
  the number of pixels or calls.

The whole grid is one ``sess.run``: the pixel list is fed once and an in-graph
``tf.while_loop`` walks it in chunks, so the forward pass runs once per call
(a fed chunk index would recompute it for every chunk; measured slower). The
chunk size comes from a memory budget (:func:`vidcorr.readout.sensitivity.memory.chunk_for_budget`).
"""

import dataclasses
from typing import Optional

import numpy as np
from tqdm import tqdm

from vidcorr.compat import tf
from vidcorr.readout.sensitivity.engine import BACKWARDS, PixelBackward, chunk_loop
from vidcorr.errors import UserError
from vidcorr.readout.inference import FoldedGraph
from vidcorr.model.kernels import logit_cotangent
from vidcorr.readout.options import DEFAULT_RADIUS, NORMS
from vidcorr.readout.sensitivity.memory import DEFAULT_DENSITY, JOINS, Density, pixel_extent
from vidcorr.model.network import mind, padding_for
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.sensitivity.windows import Window, dense, fold_window, reflect_fold, sum_cotangents

__all__ = ["NORMS", "BACKWARDS", "GradientSettings", "SensitivityGraph", "pixel_vjp",
           "kernel_head_vjp", "direct_window", "reduce_channels"]


def _reduce(sens, radius, oy=None, ox=None):
    """Device-side reduction of ``[K, 2, h, w]`` maps to per-pixel, per-frame summaries.

    ``oy``/``ox`` ``[K]``: the maps are windows at these origins of a larger
    image that is zero outside them (None: whole images). Positions come back
    in image coordinates, as if the whole image had been reduced.
    """
    k, h, w = tf.shape(sens)[0], sens.shape.as_list()[2], sens.shape.as_list()[3]
    flat = tf.reshape(sens, [-1, 2, h * w])  # [K, 2, hw]
    arg = tf.argmax(flat, axis=-1, output_type=tf.int32)  # [K, 2]
    win_y, win_x = arg // w, arg % w
    peak = tf.reduce_max(flat, axis=-1)  # [K, 2]
    if oy is None:
        peak_y, peak_x = win_y, win_x
    else:  # an all-zero map's argmax is the image's first pixel, as for a whole image
        found = tf.cast(peak > 0, tf.int32)
        peak_y, peak_x = (win_y + oy[:, None]) * found, (win_x + ox[:, None]) * found
    ys = tf.constant(np.repeat(np.arange(h), w).astype(np.float32))  # [hw]
    xs = tf.constant(np.tile(np.arange(w), h).astype(np.float32))  # [hw]
    dist2 = (tf.square(ys - tf.cast(win_y, tf.float32)[..., None]) +
             tf.square(xs - tf.cast(win_x, tf.float32)[..., None]))  # [K, 2, hw]
    second = tf.reduce_max(tf.where(dist2 > float(radius) ** 2, flat, tf.zeros_like(flat)),
                           axis=-1)  # [K, 2]
    padded = tf.reshape(tf.pad(sens, [[0, 0], [0, 0], [1, 1], [1, 1]]), [-1])
    base = tf.reshape(tf.range(k * 2), [k, 2]) * ((h + 2) * (w + 2))  # [K, 2] map starts
    patch = [tf.gather(padded, base + (win_y + 1 + dy) * (w + 2) + win_x + 1 + dx)
             for dy in (-1, 0, 1) for dx in (-1, 0, 1)]  # 9 x [K, 2]
    return {"peak_x": peak_x, "peak_y": peak_y, "peak": peak,
            "second": second, "patch": tf.stack(patch, axis=-1)}  # patch: [K, 2, 9]


def kernel_head_vjp(spec, frames, endpoints):
    """The adaptive-kernel head's part of the per-pixel VJP (see :mod:`vidcorr.model.kernels`).

    The sensitivity of out(p) is the direct term (p's softmax weights at
    their taps) plus the gradient through the logits. The latter's
    cotangent is non-zero at p only, so it is pulled through the 1x1
    output convolution by hand onto the features (C channels) instead of
    back-propagating a dense ``2 K^2``-channel map per pixel.

    Args:
      spec: the network spec (``kernel_size`` > 0).
      frames: the network's padded input ``[1, H', W', 6]``.
      endpoints: the endpoints :func:`vidcorr.model.network.mind` filled.

    Returns:
      ``head(padded_indices [K])`` -> the cotangents of the features at
      those pixels ``[K, C]`` and the direct term, a
      :class:`vidcorr.readout.sensitivity.windows.Window` ``[K, K, K, 6]`` around each pixel.
    """
    k, r = spec.kernel_size, spec.kernel_size // 2
    taps = 2 * k * k
    _, hp, wp, _ = frames.shape.as_list()
    features = endpoints["features"]  # [1, H', W', C]
    features = tf.reshape(features, [hp * wp, features.shape.as_list()[3]])
    sums = tf.reduce_sum(tf.reshape(frames, [1, hp, wp, 2, 3]), -1)  # [1, H', W', 2]
    with tf.variable_scope(MODEL_SCOPE + "/output", reuse=True):
        out_w = tf.reshape(tf.get_variable("weights"), [-1, taps])  # [C, 2K^2]
        out_b = tf.get_variable("biases")  # [2K^2]

    def head(padded_indices):
        # The head at the chunk's pixels only (no full-size 2K^2-channel map): the
        # logits, and each tap's RGB sum from a K x K window of the frames' channel sums.
        logits = tf.matmul(tf.gather(features, padded_indices), out_w) + out_b  # [K, 2K^2]
        w_p = tf.nn.softmax(logits, axis=-1)
        rows, cols = padded_indices // wp, padded_indices % wp
        taps_window = Window(tf.zeros([tf.size(padded_indices), k, k, 1]), rows - r, cols - r,
                             hp, wp, 1)
        s_p = tf.reshape(tf.transpose(taps_window.gather(sums), [0, 3, 1, 2]),
                         [-1, taps])  # [K, 2K^2] in logit order (frame, dy, dx)
        g = logit_cotangent(w_p, s_p)  # [K, 2K^2]
        g_features = tf.matmul(g, out_w, transpose_b=True)  # [K, C]
        return g_features, direct_window(w_p, rows, cols, hp, wp, k)

    return head


def direct_window(weights, rows, cols, height, width, kernel_size):
    """The kernel head's direct term of pixels ``(rows, cols)`` as a window of their taps.

    Args:
      weights: ``[K, 2 k^2]`` softmax weights in logit order (frame, dy, dx).
      rows: int32 ``[K]``.
      cols: int32 ``[K]``.
      height: image height.
      width: image width.
      kernel_size: k.

    Returns:
      A :class:`vidcorr.readout.sensitivity.windows.Window` ``[K, k, k, 6]`` at ``(row - k // 2,
      col - k // 2)``: the weight of each tap on each RGB channel of its
      frame; taps outside the image vanish.
    """
    k, r = kernel_size, kernel_size // 2
    w = tf.transpose(tf.reshape(weights, [-1, 2, k, k]), [0, 2, 3, 1])  # [K, dy, dx, frame]
    data = tf.reshape(w[..., None] * tf.ones([1, 1, 1, 1, 3]), [-1, k, k, 6])
    win = Window(data, rows - r, cols - r, height, width, 1, ((r, r), (r, r)))
    return win.like(data * win.valid())


def pixel_vjp(spec, frames, out, endpoints, backward="auto", windowed=False,
              density=DEFAULT_DENSITY):
    """The per-pixel input gradient as a function of a batch of padded pixel indices.

    Args:
      spec: the network spec.
      frames: the padded input ``[1, H', W', 6]``.
      out: the network's output at the padded size ``[1, H', W', 3]``.
      endpoints: the endpoints :func:`vidcorr.model.network.mind` filled.
      backward: ``'transpose'``, ``'pfor'`` or ``'auto'`` (see :class:`SensitivityGraph`).
      windowed: let ``vjp`` return a :class:`vidcorr.readout.sensitivity.windows.Window` where the
        transposed pass stays windowed up to the input (images larger than the
        receptive field).
      density: where the windowed pass goes dense (:class:`vidcorr.readout.sensitivity.memory.Density`).

    Returns:
      ``(vjp, engine)``: ``vjp(indices [K])`` -> ``d(sum_c out[p, c]) / d frames``
      ``[K, H', W', 6]`` (or a window of it) for the flat padded indices
      ``p``; and the :class:`vidcorr.readout.sensitivity.engine.PixelBackward` it runs
      on, whose ``method`` says which pass (final once ``vjp`` is built).

    Raises:
      UnsupportedGraph: with ``backward='transpose'`` for an op it cannot transpose.
    """
    _, hp, wp, _ = frames.shape.as_list()
    # The VJP runs from `target`: the output, or for the kernel head the features under
    # its 1x1 convolution (the head's own part is done by hand).
    target = endpoints["features"] if spec.kernel_size else out  # [1, H', W', C]
    # Windows through the encoder only where they reach the input (a large image).
    through = windowed and pixel_extent(spec, hp, wp, density.fraction) != (hp, wp)
    join = density.join if density.join != "auto" else ("union" if through else "dense")
    head = kernel_head_vjp(spec, frames, endpoints) if spec.kernel_size else None
    engine = PixelBackward(target, frames, backward)

    def vjp(indices):
        if head is None:
            values, direct = tf.ones([tf.size(indices), 3]), None  # [K, 3]
        else:
            values, direct = head(indices)  # [K, C], a window [K, k, k, 6]
        # windowed near the output (or all the way), then dense; or pfor's dense maps
        grads = engine(indices // wp, indices % wp, values, windowed=windowed,
                       density=Density(density.fraction, join))
        if direct is None:
            return grads
        if isinstance(grads, Window):
            return sum_cotangents([grads, direct])
        return grads + dense(direct)

    return vjp, engine


def reduce_channels(grads, norm):
    """Per-frame sensitivity maps from input gradients: ``[K, H, W, 6]`` -> ``[K, 2, H, W]``."""
    _, h, w, _ = grads.shape.as_list()
    grads = tf.reshape(grads, [-1, h, w, 2, 3])  # [K, H, W, frame, RGB]
    if norm == "l2":
        sens = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=-1))
    elif norm == "l1":
        sens = tf.reduce_sum(tf.abs(grads), axis=-1)
    else:
        sens = tf.reduce_max(tf.abs(grads), axis=-1)
    return tf.transpose(sens, [0, 3, 1, 2])  # [K, 2, H, W]


@dataclasses.dataclass(frozen=True)
class GradientSettings:
    """How :class:`SensitivityGraph` computes and reduces the sensitivity (validated here).

    Attributes:
      chunk: pixels per batched VJP (one iteration of the in-graph loop).
      norm: per-frame channel reduction, ``'l2'``, ``'l1'`` or ``'max'``.
      radius: the second-best peak is searched outside this radius (pixels).
      max_pixels_per_run: at most this many pixels per ``sess.run`` (None: all).
      backward: how the VJP is batched over pixels: ``'transpose'``
        (:class:`vidcorr.readout.sensitivity.backward.BatchedVJP`, forward convolutions
        over a batch of cotangents), ``'pfor'`` (``tf.gradients`` under
        ``tf.vectorized_map``), ``'loop'`` (``tf.gradients`` in a ``tf.map_fn``) or
        ``'auto'`` (transpose, pfor if the network has an op it cannot transpose, the loop
        where pfor cannot convert one); the engine is
        :class:`vidcorr.readout.sensitivity.engine.PixelBackward`.
      full_maps: also return every pixel's full ``[2, H, W]`` maps from
        :meth:`SensitivityGraph.run` (``maps``; :meth:`vidcorr.Matcher.sensitivity_maps`
        shows them; memory grows with the number of pixels).
      density: where the windowed backward pass goes dense
        (:class:`vidcorr.readout.sensitivity.memory.Density`; benchmarks vary it).

    Raises:
      UserError: for a bad ``norm``, ``backward`` or ``density``.
    """
    chunk: int = 16
    norm: str = "l2"
    radius: int = DEFAULT_RADIUS
    max_pixels_per_run: Optional[int] = None
    backward: str = "auto"
    full_maps: bool = False
    density: Density = DEFAULT_DENSITY

    def __post_init__(self):
        if self.norm not in NORMS:
            raise UserError("norm must be one of %s, got %r" % (", ".join(NORMS), self.norm))
        if self.backward not in BACKWARDS:
            raise UserError("backward must be one of %s, got %r"
                            % (", ".join(BACKWARDS), self.backward))
        d = self.density
        if d.join not in JOINS or not 0 <= d.fraction <= 1:
            raise UserError("density must have a fraction in [0, 1] and a join in %s, got %r"
                            % (", ".join(JOINS), (d,)))

    @classmethod
    def from_options(cls, options, chunk, full_maps=False):
        """The settings a :class:`vidcorr.readout.options.MatchOptions` asks for, with
        ``chunk`` pixels per batched VJP."""
        return cls(int(chunk), options.norm, options.radius, options.max_pixels_per_run,
                   full_maps=full_maps)


class SensitivityGraph(FoldedGraph):
    """The batched, reduced sensitivity computation for one network and image size.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      height: image height.
      width: image width.
      weights: ``{name: array}`` of the *folded* network
        (:func:`vidcorr.readout.inference.fold_batch_norm`).
      settings: a :class:`GradientSettings` (default: its defaults); the backward pass
        chosen for ``'auto'`` is ``self.backward``.
      device: where to place the computation (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).
      devices: optional list of devices to share each ``sess.run``'s pixels
        over (e.g. :func:`vidcorr.compat.tower_devices`): one replica of the
        forward and backward pass per device, each looping over its own
        contiguous part of the pixels; results are concatenated in order.

    After construction, ``window`` is the ``[h, w]`` of one pixel's window at
    the (padded) input when the pass stays windowed all the way, else None.

    Raises:
      UserError: if ``weights`` do not fit the network (another width or
        architecture).
    """

    def __init__(self, spec, height, width, weights, settings=None, device=None, threads=None,
                 devices=None):
        g = settings if settings is not None else GradientSettings()
        self.chunk, self.max_pixels_per_run = int(g.chunk), g.max_pixels_per_run
        self.norm, self.radius, self.full_maps = g.norm, g.radius, g.full_maps
        self.backward, self.density = g.backward, g.density
        self.window = None  # set by the build: [h, w] of one pixel's input window, if any
        self.devices = list(devices) if devices else None
        if self.devices and any("CPU" in d.upper() for d in self.devices):
            self.cpu_devices = len(self.devices)
        super(SensitivityGraph, self).__init__(spec, height, width, weights,
                                               self.devices[0] if self.devices else device,
                                               threads)

    def _build(self, spec):
        h, w = self.height, self.width
        top, bottom, left, right = self.padding = padding_for(h, w)
        hp, wp = h + top + bottom, w + left + right
        self.image = tf.get_variable("image", [1, hp, wp, 6], tf.float32, tf.zeros_initializer(),
                                     trainable=False, use_resource=True)
        self.pixels = tf.placeholder(tf.int32, [None], name="pixels")
        count = tf.shape(self.pixels)[0]
        devices = self.devices or [None]
        # Each replica gets a contiguous part, a whole number of chunks (the padding
        # pixels are pixel 0, dropped from the results). chunk_loop would pad a part of
        # ceil(count / replicas) itself to the same number of chunks (ceil(ceil(n/r)/k) is
        # ceil(n/(r k))); whole parts also keep one device's chunks, so the sums agree.
        per = (count + len(devices) * self.chunk - 1) // (len(devices) * self.chunk) * self.chunk
        padded_pixels = tf.pad(self.pixels, [[0, per * len(devices) - count]])
        parts = []
        for i, device in enumerate(devices):
            with tf.device(device), tf.name_scope("replica%d" % i if self.devices else None), \
                    tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
                parts.append(self._replica(spec, padded_pixels[i * per:(i + 1) * per]))
        self.results = {name: (tf.concat([p[name] for p in parts], 0) if len(parts) > 1
                               else parts[0][name])[:count] for name in parts[0]}

    def _replica(self, spec, pixels):
        """The forward pass and the chunked, reduced backward pass of ``pixels`` ``[N]``
        (:func:`vidcorr.readout.sensitivity.engine.chunk_loop`): a dict of result tensors."""
        h, w, chunk = self.height, self.width, self.chunk
        top, bottom, left, right = self.padding
        hp, wp = h + top + bottom, w + left + right
        frames = self.image.value()  # [1, H', W', 6], reflect-padded, device resident
        endpoints = {}
        out = mind(frames, False, spec=spec, folded=True, endpoints=endpoints)  # [1, H', W', 3]
        vjp, engine = pixel_vjp(spec, frames, out, endpoints, self.backward, windowed=True,
                                density=self.density)
        rows = tf.constant(reflect_fold(h, top, bottom))  # [H', H]
        cols = tf.constant(reflect_fold(w, left, right))  # [W', W]

        def sensitivity(pixels):  # [K] flat y * W + x -> [K, 2, h, w] maps, origins or None
            grads = vjp((pixels // w + top) * wp + pixels % w + left)  # [K, H', W', 6] or window
            self.window = grads.data.shape.as_list()[1:3] if isinstance(grads, Window) else None
            if isinstance(grads, Window):  # one pixel's share of a large image
                data, oy, ox = fold_window(grads, self.padding, h, w)  # [K, h', w', 6]
                return reduce_channels(data, self.norm), oy, ox
            if hp != h or wp != w:  # a padded pixel copies an original one: add it there
                grads = tf.einsum("khwc,hy->kywc", grads, rows)
                grads = tf.einsum("kywc,wx->kyxc", grads, cols)  # [K, H, W, 6]
            return reduce_channels(grads, self.norm), None, None

        # Any number of pixels in one sess.run: an in-graph loop over chunks of `chunk`
        # pixels, one batched VJP per iteration.
        dtypes = dict(peak_x=tf.int32, peak_y=tf.int32, peak=tf.float32, second=tf.float32,
                      patch=tf.float32)
        if self.full_maps:
            dtypes["maps"] = tf.float32

        def body(chunk_pixels):
            sens, oy, ox = sensitivity(chunk_pixels)  # [chunk, 2, h, w]
            reduced = _reduce(sens, self.radius, oy, ox)
            if self.full_maps:
                reduced["maps"] = sens if oy is None else tf.transpose(dense(Window(
                    tf.transpose(sens, [0, 2, 3, 1]), oy, ox, h, w, 1)), [0, 3, 1, 2])
            return reduced

        results = chunk_loop([pixels], chunk, body, dtypes)
        self.backward = engine.method  # known once the loop's body is built
        return results

    def set_images(self, frame_t, frame_t2):
        """Loads an image pair (``[H, W, 3]`` float arrays in [0, 1]) onto the device."""
        pair = np.concatenate([frame_t, frame_t2], axis=-1)[None].astype(np.float32)
        if pair.shape != (1, self.height, self.width, 6):
            raise UserError("images must be %dx%d, got %dx%d"
                            % (self.width, self.height, pair.shape[2], pair.shape[1]))
        top, bottom, left, right = self.padding
        pair = np.pad(pair, [(0, 0), (top, bottom), (left, right), (0, 0)], mode="reflect")
        self.image.load(pair, self.sess)

    def run(self, points, progress=False, desc="pixels"):
        """Reduced sensitivities for grid points ``[N, 2]`` of ``(x, y)``.

        All points are evaluated in one ``sess.run`` (an in-graph loop over
        chunks), or in runs of at most ``max_pixels_per_run`` points; with
        ``progress`` and no such bound, in about 20 runs so the bar moves.

        Returns:
          A dict of arrays: ``peak_xy`` ``[N, 2, 2]`` (frame, (x, y)),
          ``peak`` and ``second`` ``[N, 2]``, ``patch`` ``[N, 2, 9]``, and with
          ``full_maps`` the maps ``[N, 2, H, W]``.
        """
        flat = (points[:, 1] * self.width + points[:, 0]).astype(np.int32)
        per_run = self.max_pixels_per_run or len(flat)
        if progress and not self.max_pixels_per_run:
            per_run = max(self.chunk, -(-len(flat) // (20 * self.chunk)) * self.chunk)
        parts = []
        with tqdm(total=len(flat), disable=not progress, unit="px", desc=desc,
                  leave=False) as bar:
            for i in range(0, len(flat), max(1, per_run)):
                parts.append(self.sess.run(self.results, {self.pixels: flat[i:i + per_run]}))
                bar.update(len(flat[i:i + per_run]))
        res = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        out = {"peak_xy": np.stack([res["peak_x"], res["peak_y"]], axis=-1),
               "peak": res["peak"], "second": res["second"], "patch": res["patch"]}
        if self.full_maps:
            out["maps"] = res["maps"]
        return out
