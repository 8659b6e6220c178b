"""The blend-weight read-out: dense matches from one forward pass of the kernel head.

A network with the adaptive-kernel head (:mod:`vidcorr.model.kernels`) makes each
middle-frame pixel p a softmax blend of the K x K taps of frame t and frame t+2
around p. The weights say where p comes from: their centroid over frame t's
taps is p's sub-pixel position in frame t, and over frame t+2's taps its
position in frame t+2. One forward pass gives this for every pixel at once,
where the exact sensitivity read-out (:mod:`vidcorr.readout.gradients`) costs a
backward pass per point. Coarse to fine, the graph also warps the pair by the
coarser level's fields before the network and maps the positions back through
the warp after it, so a level is one ``sess.run``.

:class:`BlendGraph` builds the folded network's forward pass for one image size
and reduces the ``[H, W, 2K^2]`` weights on the device to a few numbers per
pixel and frame (the host never sees the weights):

* ``position``: ``[H, W, 2, 2]``, each pixel's ``(x, y)`` in frame t and frame t+2,
  the pixel plus an offset by the statistic: ``centroid``, the weights' centroid
  over the frame's taps; ``local``, the centroid of the 3x3 taps around the
  frame's largest tap; ``argmax``, the largest tap (whole pixels);
* ``mass``: each frame's share of the weight, ``[H, W, 2]``;
* ``peak``: each frame's largest weight divided by its mass, ``[H, W, 2]``.

``statistic`` picks the position (:data:`vidcorr.readout.options.STATISTICS`;
only its ops are built), ``temperature`` sharpens (< 1) or flattens (> 1) the
softmax first.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.model import kernels
from vidcorr.model.network import mind, padding_for
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.inference import FoldedGraph
from vidcorr.readout.options import (DEFAULT_SIGMA, DEFAULT_SMOOTH, DEFAULT_STATISTIC,
                                     DEFAULT_TEMPERATURE, STATISTICS)
from vidcorr.readout.pyramid import MIN_CONFIDENCE_WEIGHT

__all__ = ["BlendGraph", "blend_confidence", "blend_moments", "sample_bilinear",
           "sample_bilinear_batch", "reflect_positions", "smooth_field", "MASS_FLOOR"]

MASS_FLOOR = 1e-6  # a frame with less weight than this has no defined position


class BlendGraph(FoldedGraph):
    """The kernel head's blend weights, reduced per pixel, for one image size.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      height: image height.
      width: image width.
      weights: folded ``{name: array}`` (:func:`vidcorr.readout.inference.fold_batch_norm`).
      statistic: the position statistic, ``"centroid"``, ``"local"`` or ``"argmax"``.
      temperature: the softmax's temperature (1: the network's own weights).
      smooth: the median's size for the smoothed fields (:func:`smooth_field`).
      sigma: the confidence-weighted Gaussian's width for them.
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).

    Raises:
      UserError: for a network without a kernel head, an unknown statistic or a
        temperature <= 0.
    """

    def __init__(self, spec, height, width, weights, statistic=DEFAULT_STATISTIC,
                 temperature=DEFAULT_TEMPERATURE, smooth=DEFAULT_SMOOTH, sigma=DEFAULT_SIGMA,
                 device=None, threads=None):
        if not spec.kernel_size:
            raise UserError("readout 'kernel' needs a network with a kernel head "
                            "(model.kernel_size > 0); this one synthesises its output directly: "
                            "use readout 'sensitivity'")
        if statistic not in STATISTICS:
            raise UserError("statistic must be one of %s, got %r"
                            % (", ".join(STATISTICS), statistic))
        if not temperature > 0:
            raise UserError("temperature must be positive, got %r" % (temperature,))
        self.kernel_size = spec.kernel_size
        self.statistic, self.temperature = statistic, float(temperature)
        self.smooth, self.sigma = int(smooth), float(sigma)
        super(BlendGraph, self).__init__(spec, height, width, weights, device, threads)

    def _build(self, spec):
        k = self.kernel_size
        k2 = k * k
        h, w = self.height, self.width
        self.frames = tf.placeholder(tf.float32, [h, w, 6], "frames")  # [H, W, 6]
        self.fields = tf.placeholder_with_default(tf.zeros([h, w, 4]), [h, w, 4],
                                                  "fields")  # [H, W, (d1, d3)]
        ys, xs = np.mgrid[0:h, 0:w]
        pixels = tf.constant(np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32))  # [HW, 2]
        fields = [tf.reshape(self.fields[..., 2 * f:2 * f + 2], [h * w, 2]) for f in (0, 1)]
        warped = [tf.reshape(sample_bilinear(self.frames[..., 3 * f:3 * f + 3],
                                             pixels + fields[f]), [h, w, 3])
                  for f in (0, 1)]  # frame f at p + d_f(p)
        inputs = tf.concat(warped, axis=2)[None]  # [1, H, W, 6]
        endpoints = {}
        mind(inputs, False, spec=spec, folded=True, name=MODEL_SCOPE, endpoints=endpoints)
        top, _, left, _ = padding_for(h, w)
        logits = endpoints["logits"][0, top:top + h, left:left + w, :]  # [H, W, 2K^2]
        logits = tf.reshape(logits, [h * w, 2 * k2])  # [HW, 2K^2]
        weights, mass, centroid, peak = blend_moments(logits, k, self.temperature)
        per_frame = tf.reshape(weights, [h * w * 2, k2])  # [HW*2, K^2], frame-major rows
        if self.statistic == "centroid":
            position = centroid
        else:
            position = tf.reshape(self._around_largest(per_frame, k, self.statistic == "local"),
                                  [h * w, 2, 2])  # [HW, frame, (dx, dy)]
        # Positions in the warped frames, reflected into the image as the network's
        # padding mirrors it, then mapped back through the warp: q + d_f(q).
        found = [reflect_positions(pixels + position[:, f], w, h) for f in (0, 1)]  # 2 x [HW, 2]
        found = [q + sample_bilinear(tf.reshape(fields[f], [h, w, 2]), q) for f, q in
                 enumerate(found)]
        position = tf.reshape(tf.stack(found, axis=1), [h, w, 2, 2])  # [H, W, frame, (x, y)]
        peak = tf.reshape(peak, [h, w, 2])  # [H, W, frame]
        self.outputs = {"position": position, "mass": tf.reshape(mass, [h, w, 2]), "peak": peak}
        # The fields a coarse level hands on: displacements, median-filtered, then averaged
        # by a Gaussian weighted by the confidence (fetched only where needed).
        displacement = tf.reshape(position - tf.reshape(pixels, [h, w, 1, 2]), [h, w, 4])
        self.smoothed = tf.reshape(smooth_field(displacement, tf.reduce_min(peak, axis=2),
                                                self.smooth, self.sigma), [h, w, 2, 2])

    @staticmethod
    def _around_largest(per_frame, k, local):
        """Each row's largest tap ``[rows, (dx, dy)]``, or the centroid of the 3x3 taps
        around it (``local``), from ``per_frame [rows, K^2]`` weights."""
        rows, k2 = tf.shape(per_frame)[0], k * k
        best = tf.argmax(per_frame, axis=1, output_type=tf.int32)  # [rows]
        by, bx = best // k, best % k  # tap row and column
        if not local:
            return tf.cast(tf.stack([bx, by], axis=1) - k // 2, tf.float32)  # [rows, 2]
        flat = tf.reshape(per_frame, [-1])  # [rows * K^2]
        starts = tf.range(rows) * k2  # [rows]
        zero = tf.zeros([rows], tf.float32)
        m, mx, my = zero, zero, zero
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                ty, tx = by + dy, bx + dx
                inside = (ty >= 0) & (ty < k) & (tx >= 0) & (tx < k)  # [rows]
                idx = starts + tf.clip_by_value(ty, 0, k - 1) * k + tf.clip_by_value(tx, 0, k - 1)
                v = tf.where(inside, tf.gather(flat, idx), zero)  # [rows]
                m += v
                mx += v * tf.cast(tx - k // 2, tf.float32)
                my += v * tf.cast(ty - k // 2, tf.float32)
        return tf.stack([mx, my], axis=1) / tf.maximum(m, MASS_FLOOR)[:, None]  # [rows, 2]

    def run(self, frame_t, frame_t2, fields=None, smoothed=False):
        """Every pixel's position in both frames, from the pair warped by ``fields``.

        Args:
          frame_t: ``[H, W, 3]`` float in [0, 1].
          frame_t2: ``[H, W, 3]`` float in [0, 1].
          fields: None, or ``(d1, d3)``, two ``[H, W, 2]`` fields ``(dx, dy)``: the
            network sees frame t at ``p + d1(p)`` and frame t+2 at ``p + d3(p)``
            (bilinear, the border repeated, as :func:`vidcorr.readout.pyramid.warp`).
          smoothed: also return ``fields``, ``[H, W, 2, 2]`` displacements ``(dx, dy)``
            of both frames, median-filtered and confidence-smoothed (:func:`smooth_field`).

        Returns:
          A dict of numpy arrays: ``position [H, W, 2, 2]``, each pixel's ``(x, y)`` in
          frame t and in frame t+2 (in the frames' own pixels, the warp undone);
          ``mass`` and ``peak`` ``[H, W, 2]`` (see the module docstring).
        """
        feed = {self.frames: np.concatenate([frame_t, frame_t2], axis=-1).astype(np.float32)}
        if fields is not None:
            feed[self.fields] = np.concatenate(fields, axis=-1).astype(np.float32)
        fetches = dict(self.outputs, fields=self.smoothed) if smoothed else self.outputs
        return self.sess.run(fetches, feed)


def blend_moments(logits, kernel_size, temperature=DEFAULT_TEMPERATURE):
    """The blend weights of ``logits [N, 2K^2]`` reduced per row and frame.

    Returns:
      ``(weights [N, 2K^2], mass [N, 2], centroid [N, 2, (dx, dy)], peak [N, 2])``:
      the softmax of ``logits / temperature``; each frame's share of the weight;
      the weights' centroid over the frame's taps (:func:`vidcorr.model.kernels.tap_grid`);
      the frame's largest weight over its share.
    """
    k2 = kernel_size * kernel_size
    weights = tf.nn.softmax(logits / temperature, axis=-1)  # [N, 2K^2]
    taps = kernels.tap_grid(kernel_size)  # [K^2, (dx, dy)]
    # One matmul gives both frames' mass and first moments: [2K^2, 6] columns
    # (mass, x moment, y moment) for frame t, then for frame t+2.
    moments = np.zeros((2 * k2, 6), np.float32)
    for f in range(2):
        moments[f * k2:(f + 1) * k2, 3 * f] = 1.0
        moments[f * k2:(f + 1) * k2, 3 * f + 1:3 * f + 3] = taps
    sums = tf.reshape(tf.matmul(weights, moments), [-1, 2, 3])  # [N, 2, (m, mx, my)]
    mass = sums[..., 0]  # [N, 2]
    safe = tf.maximum(mass, MASS_FLOOR)  # [N, 2]
    centroid = sums[..., 1:] / safe[..., None]  # [N, frame, (dx, dy)]
    peak = tf.reduce_max(tf.reshape(weights, [-1, 2, k2]), axis=2) / safe  # [N, 2]
    return weights, mass, centroid, peak


def smooth_field(field, confidence, size, sigma):
    """``field [H, W, C]`` median-filtered ``size`` x ``size`` (0, 1: not), then averaged by a
    Gaussian of ``sigma`` pixels weighted by ``confidence [H, W]`` (0: not); the border is
    mirrored (``SYMMETRIC``). On the device: a coarse level's fields never visit the host."""
    h, w, c = field.shape.as_list()
    size = min(size, h, w)  # the mirrored padding cannot exceed the image
    if size > 1:
        r = size // 2
        padded = tf.pad(field, [[r, size - 1 - r], [r, size - 1 - r], [0, 0]], "SYMMETRIC")
        patches = tf.extract_image_patches(padded[None], [1, size, size, 1], [1, 1, 1, 1],
                                           [1, 1, 1, 1], "VALID")  # [1, H, W, size^2 C]
        values = tf.transpose(tf.reshape(patches, [h, w, size * size, c]), [0, 1, 3, 2])
        n = size * size
        field = tf.nn.top_k(values, n // 2 + 1).values[..., -1]  # the median, [H, W, C]
    if sigma > 0:
        # the Gaussian to 4 sigma, or to the image's size where it is smaller (the mirrored
        # padding cannot exceed it)
        ry, rx = (min(int(np.ceil(4 * sigma)), n) for n in (h, w))

        def taps(r):
            g = np.exp(-0.5 * (np.arange(-r, r + 1) / float(sigma)) ** 2)
            return (g / g.sum()).astype(np.float32)

        weight = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT  # [H, W, 1]

        def blur(x):  # separable Gaussian of [H, W, C'], mirrored border
            x = tf.pad(x, [[ry, ry], [rx, rx], [0, 0]], "SYMMETRIC")[None]  # [1, H+2ry, W+2rx, C']
            cols = x.shape.as_list()[3]
            kx = np.tile(taps(rx).reshape(1, -1, 1, 1), (1, 1, cols, 1))
            ky = np.tile(taps(ry).reshape(-1, 1, 1, 1), (1, 1, cols, 1))
            x = tf.nn.depthwise_conv2d(x, kx, [1, 1, 1, 1], "VALID")
            return tf.nn.depthwise_conv2d(x, ky, [1, 1, 1, 1], "VALID")[0]

        field = blur(weight * field) / blur(weight)
    return field


def sample_bilinear(image, xy):
    """``image [H, W, C]`` at float positions ``xy [N, (x, y)]``: ``[N, C]``, bilinear, the
    border repeated (the graph form of :func:`vidcorr.readout.pyramid.sample_field`)."""
    return sample_bilinear_batch(image[None], xy[None, :, None, :])[0, :, 0]  # [N, C]


def sample_bilinear_batch(images, xy):
    """``images [B, H, W, C]`` at float positions ``xy [B, h, w, (x, y)]``: ``[B, h, w, C]``,
    bilinear, the border repeated; sizes may be unknown until run time."""
    shape = tf.shape(images)
    h, w = shape[1], shape[2]
    hf, wf = tf.cast(h, tf.float32), tf.cast(w, tf.float32)
    x = tf.clip_by_value(xy[..., 0], 0.0, wf - 1.0)  # [B, h, w]
    y = tf.clip_by_value(xy[..., 1], 0.0, hf - 1.0)
    x0 = tf.minimum(tf.floor(x), tf.maximum(wf - 2.0, 0.0))
    y0 = tf.minimum(tf.floor(y), tf.maximum(hf - 2.0, 0.0))
    x1, y1 = tf.minimum(x0 + 1, wf - 1.0), tf.minimum(y0 + 1, hf - 1.0)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]
    channels = images.shape.as_list()[3]
    flat = tf.reshape(images, [-1, shape[3] if channels is None else channels])  # [B H W, C]
    base = tf.reshape(tf.range(shape[0]) * h * w, [-1, 1, 1])  # [B, 1, 1]

    def at(yy, xx):
        return tf.gather(flat, base + tf.cast(yy, tf.int32) * w + tf.cast(xx, tf.int32))

    return ((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
            fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)))


def reflect_positions(xy, width, height):
    """Positions ``[..., (x, y)]`` reflected into ``[0, size - 1]`` (pixel -1 is pixel 1), as
    the network's padding mirrors the image; sizes are numbers or scalar tensors."""
    out = []
    for axis, size in ((0, width), (1, height)):
        last = tf.cast(size, tf.float32) - 1.0
        v = tf.abs(xy[..., axis])
        out.append(tf.where(v > last, 2.0 * last - v, v))
    return tf.stack(out, axis=-1)


def blend_confidence(peak, mass=None):
    """A match's confidence in [0, 1] from its blend weights, per pixel: the lower of the two
    frames' peak shares (a frame's largest weight over its weight; 1 where all of it is on
    one tap). The balance of the weight between the frames, an occlusion cue, ranked the
    matches worse (``benchmarks/readout_study.py``), so ``mass`` is not used.

    Args:
      peak: ``[..., 2]`` each frame's largest weight over its mass.
      mass: ``[..., 2]`` each frame's share of the weight (unused, see above).

    Returns:
      ``[...]`` float.
    """
    return np.asarray(peak, np.float64).min(axis=-1)
