"""One level of the blend-weight read-out: every pixel's position in both frames, in ops.

A network with the adaptive-kernel head (:mod:`vidcorr.model.kernels`) makes each
middle-frame pixel p a softmax blend of the K x K taps of frame t and frame t+2
around p. The weights say where p comes from: their centroid over frame t's
taps is p's sub-pixel position in frame t, and over frame t+2's taps its
position in frame t+2. One forward pass gives this for every pixel at once,
where the exact sensitivity read-out (:mod:`vidcorr.readout.sensitivity`) costs
a backward pass per point.

:func:`blend_level` is the one builder of a level, used by the whole-match graph
(:mod:`vidcorr.readout.kernel.graph`) and therefore by the exported ``match``
entry point alike. For a batch of pairs of any size it

1. warps frame t and frame t+2 toward the middle frame by the coarser level's
   fields (bilinear, :func:`vidcorr.model.sampling.bilinear_sample`),
2. runs the folded network and crops its logits to the image (the network's own
   ``crop`` endpoint),
3. reduces the ``[B, H, W, 2K^2]`` logits to a few numbers per pixel and frame
   (:func:`blend_moments`; they never leave the device), on a large level strip of rows
   after strip of rows (:func:`strip_count`), so the whole level's logits never exist:

   * ``position``: ``[B, H, W, 2, 2]``, each pixel's ``(x, y)`` in frame t and
     frame t+2, the pixel plus an offset by the statistic: ``centroid``, the
     weights' centroid over the frame's taps; ``local``, the centroid of the 3x3
     taps around the frame's largest tap; ``argmax``, the largest tap;
   * ``mass``: each frame's share of the weight, ``[B, H, W, 2]``;
   * ``peak``: each frame's largest weight divided by its mass, ``[B, H, W, 2]``;

4. reflects the positions into the image (as the network's padding mirrors it)
   and maps them back through the warp: ``q + d(q)``.

The softmax's ``temperature`` (< 1 sharpens it, > 1 flattens it) is folded into the
head's weights (:func:`tempered`): the head is a 1x1 convolution.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.model import kernels
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.model.sampling import bilinear_sample
from vidcorr.readout.options import DEFAULT_STATISTIC

__all__ = ["blend_level", "blend_moments", "reflect", "pixel_grid", "tempered",
           "strip_count", "MASS_FLOOR", "STRIP_PIXELS", "ANY_SIZE_STRIPS"]

MASS_FLOOR = 1e-6  # a frame with less weight than this has no defined position
STRIP_PIXELS = 1 << 18  # padded pixels per strip of a level's logits (:func:`strip_count`)
# Strips of a level of unknown size (the exported match): a 720x1280 level's count. With one,
# the SavedModel's match peaked at 2.34 GB at 720x1280, with four at 1.85 GB
# (research/serving/memory_720_2026-12-07.md).
ANY_SIZE_STRIPS = 4
HEAD = MODEL_SCOPE + "/output"  # the kernel head's 1x1 convolution


def pixel_grid(height, width, stride=1):
    """The ``(x, y)`` of pixels ``stride (i, j)``, ``[1, h, w, 2]`` float, ``h = ceil(height /
    stride)``; sizes are ints or scalar tensors."""
    return tf.stack(_pixel_xy(height, width, stride), axis=-1)  # [1, h, w, 2]


def tempered(weights, temperature):
    """Folded weights whose kernel head gives ``logits / temperature``: the head is a 1x1
    convolution, so dividing its weights and biases divides the logits, at no cost per
    pixel. A copy; ``weights`` stay as they are (the interpolation uses them)."""
    out = dict(weights)
    for name in (HEAD + "/weights", HEAD + "/biases"):
        out[name] = (np.asarray(weights[name]) / float(temperature)).astype(np.float32)
    return out


def blend_level(spec, frame_t, frame_t2, fields=None, statistic=DEFAULT_STATISTIC, stride=1):
    """The blend-weight read-out of one level (see the module docstring).

    The network's variables (``MODEL_SCOPE``) are shared between calls; the softmax's
    temperature is in its weights (:func:`tempered`).

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      frame_t: ``[B, H, W, 3]`` float in [0, 1]; H and W may be unknown.
      frame_t2: ``[B, H, W, 3]``.
      fields: None, or ``[B, H, W, 2, 2]`` displacements ``(dx, dy)`` of both frames: the
        network sees frame t at ``p + d1(p)`` and frame t+2 at ``p + d3(p)``.
      statistic: ``"centroid"``, ``"local"`` or ``"argmax"``.
      stride: read out every ``stride``-th pixel of every ``stride``-th row only (pixel
        ``stride (i, j)`` at ``[i, j]``): the head and the moments run on those pixels'
        features alone, ``stride^2`` times fewer (the fields a pass hands on, which are
        smoothed wider than that anyway; :mod:`vidcorr.readout.kernel.graph`).

    Returns:
      ``{"position": [B, h, w, 2, 2], "mass": [B, h, w, 2], "peak": [B, h, w, 2]}``,
      positions in the frames' own pixels (the warp undone), ``h = ceil(H / stride)``
      and ``w = ceil(W / stride)``.
    """
    k = spec.kernel_size
    shape = tf.shape(frame_t)
    h, w = shape[1], shape[2]
    flat = None  # the fields as [B, H, W, 4]: (dx, dy) of frame t, then of frame t+2
    if fields is not None:
        with tf.name_scope("warp"):
            flat = tf.reshape(fields, tf.concat([tf.shape(fields)[:3], [4]], 0))
            d = tf.unstack(flat, axis=3)  # d1x, d1y, d3x, d3y: [B, H, W] each, one op
            px, py = _pixel_xy(h, w, 1)  # [1, H, W]
            frame_t = bilinear_sample(frame_t, px + d[0], py + d[1])  # frame t at p + d1(p)
            frame_t2 = bilinear_sample(frame_t2, px + d[2], py + d[3])
    endpoints = {}
    with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE):
        mind(tf.concat([frame_t, frame_t2], axis=3), False, spec=spec, folded=True,
             name=MODEL_SCOPE, endpoints=endpoints)  # [B, H, W, 6] in
    top, left, _, _ = endpoints["crop"]
    if stride > 1:  # the chosen pixels' features, then their moments
        features = endpoints["features"][:, top:top + h, left:left + w]  # [B, H, W, C]
        # every stride-th pixel and row (a 1x1 pool with a stride: faster than a strided slice)
        features = tf.nn.max_pool(features, [1, 1, 1, 1], [1, stride, stride, 1], "VALID")
        with tf.name_scope("moments"):  # [B, h, w, ...]
            offset, mass, peak = _strip_moments(features, endpoints["head"], None, k, statistic)
    else:
        # The moments of every padded pixel, then the crop: the crop copies a few channels,
        # not 2K^2 (the padding is under 5 % of the pixels).
        with tf.name_scope("moments"):  # [B, H', W', ...]
            offset, mass, peak = (x[:, top:top + h, left:left + w] for x in _strip_moments(
                endpoints["features"], endpoints["head"], endpoints["logits"], k, statistic))
    with tf.name_scope("unwarp"):
        position = _unwarp(offset, flat, w, h, stride)  # [B, h, w, 2, 2]
    return {"position": position, "mass": mass, "peak": peak}


def _pixel_xy(height, width, stride):
    """The x and the y of pixels ``stride (i, j)``, ``[1, h, w]`` each, ``h = ceil(height /
    stride)``."""
    ys, xs = tf.meshgrid(tf.range(0, height, stride), tf.range(0, width, stride), indexing="ij")
    return tf.cast(xs, tf.float32)[None], tf.cast(ys, tf.float32)[None]


def reflect(v, size):
    """Coordinates ``v`` reflected into ``[0, size - 1]`` (pixel -1 is pixel 1), as the
    network's padding mirrors the image; ``size`` a number or a scalar tensor."""
    last = tf.cast(size, tf.float32) - 1.0
    v = tf.abs(v)
    return tf.where(v > last, 2.0 * last - v, v)


def _unwarp(offset, fields, width, height, stride):
    """Each read-out pixel's position in both frames: the pixel plus its ``offset``
    ``[B, h, w, 4]`` (``(dx, dy)`` of frame t, then of frame t+2), reflected into the image,
    then mapped back through the warp by the level's ``fields`` ``[B, H, W, 4]`` (None: no
    warp): ``q + d(q)``. Returns ``[B, h, w, 2, 2]``."""
    px, py = _pixel_xy(height, width, stride)  # [1, h, w]
    o = tf.unstack(offset, axis=3)  # [B, h, w] each
    out = []
    for f in (0, 1):
        x, y = reflect(px + o[2 * f], width), reflect(py + o[2 * f + 1], height)
        if fields is not None:  # the four channels at once: no slice of the fields per frame
            d = tf.unstack(bilinear_sample(fields, x, y), axis=3)
            x, y = x + d[2 * f], y + d[2 * f + 1]
        out += [x, y]
    position = tf.stack(out, axis=3)  # [B, h, w, 4]
    return tf.reshape(position, tf.concat([tf.shape(position)[:3], [2, 2]], 0))


def strip_count(features):
    """How many strips of rows :func:`blend_level` reads a level's logits in: one per
    ``STRIP_PIXELS`` padded pixels of a pair; ``ANY_SIZE_STRIPS`` when the size is unknown
    (the exported graph: its rows split by the run-time height)."""
    height, width = features.shape.as_list()[1:3]
    if height is None or width is None:
        return ANY_SIZE_STRIPS
    return max(1, min(height, -(-height * width // STRIP_PIXELS)))


def _strip_moments(features, head, logits, k, statistic):
    """The head's logits and their moments, strip of rows after strip of rows.

    The ``[B, H', W', 2K^2]`` logits and their softmax were the read-out's largest tensors
    (two of 0.6 GB at 720x1280). Each strip's head runs after the previous strip's moments
    (a control dependency), so only one strip's logits and weights are alive at a time.

    Args:
      features: ``[B, H', W', C]``, the head's input.
      head: the kernel head, ``[B, h, w, C]`` features -> ``[B, h, w, 2K^2]`` logits.
      logits: None, or the head's logits of all ``features`` (used when one strip does).
      k: the kernel size.
      statistic: the position statistic.

    Returns:
      ``(offset [B, H', W', 4], mass [B, H', W', 2], peak [B, H', W', 2])``: each padded
      pixel's offset by ``statistic`` in both frames, and its blend mass and peak share.
    """
    strips = strip_count(features)
    height = tf.shape(features)[1]
    outs, done = [], []
    for n in range(strips):
        if strips > 1 or logits is None:
            with tf.control_dependencies(done):  # the previous strip's moments first
                rows = (features if strips == 1 else  # [B, r, W', C]
                        features[:, height * n // strips:height * (n + 1) // strips])
            logits = head(rows)  # [B, r, W', 2K^2]
        weights, mass, centroid, peak = blend_moments(logits, k)  # rows: [B r W']
        if statistic == "centroid":
            offset = centroid  # [B r W', frame, (dx, dy)]
        else:
            offset = _around_largest(weights, k, statistic == "local")
        grid = tf.shape(logits)[:3]  # [B, r, W']
        done = [tf.reshape(offset, tf.concat([grid, [4]], 0)),
                tf.reshape(mass, tf.concat([grid, [2]], 0)),
                tf.reshape(peak, tf.concat([grid, [2]], 0))]
        outs.append(done)
    return tuple(tf.concat(parts, axis=1) if strips > 1 else parts[0] for parts in zip(*outs))


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


def blend_moments(logits, kernel_size):
    """The blend weights of ``logits [..., 2K^2]`` reduced per pixel and frame.

    Returns:
      ``(weights [N 2, K^2], mass [N, 2], centroid [N, 2, (dx, dy)], peak [N, 2])`` for the
      N pixels: the softmax over both frames' taps (frame-major rows); each frame's share
      of the weight; the weights' centroid over the frame's taps
      (:func:`vidcorr.model.kernels.tap_grid`); the frame's largest weight over its share.
    """
    k2 = kernel_size * kernel_size
    weights = tf.nn.softmax(tf.reshape(logits, [-1, 2 * k2]))  # [N, 2K^2]
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
    per_frame = tf.reshape(weights, [-1, k2])  # [N 2, K^2]
    peak = tf.reshape(tf.reduce_max(per_frame, axis=1), [-1, 2]) / safe  # [N, 2]
    return per_frame, mass, centroid, peak

