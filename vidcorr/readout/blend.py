"""The blend-weight read-out: dense matches from one forward pass of the kernel head.

A network with the adaptive-kernel head (:mod:`vidcorr.model.kernels`) makes each
middle-frame pixel p a softmax blend of the K x K taps of frame t and frame t+2
around p. The weights say where p comes from: their centroid over frame t's
taps is p's sub-pixel position in frame t, and over frame t+2's taps its
position in frame t+2. One forward pass gives this for every pixel at once,
where the exact sensitivity read-out (:mod:`vidcorr.readout.gradients`) costs a
backward pass per point.

:class:`BlendGraph` builds the folded network's forward pass for one image size
and reduces the ``[H, W, 2K^2]`` weights on the device to a few numbers per
pixel and frame (the host never sees the weights):

* ``centroid``: the weights' centroid over each frame's taps, ``[H, W, 2, 2]``
  offsets ``(dx, dy)``;
* ``local``: the centroid of the 3x3 taps around the frame's largest tap;
* ``argmax``: the offset of the frame's largest tap (whole pixels);
* ``mass``: each frame's share of the weight, ``[H, W, 2]``;
* ``peak``: each frame's largest weight divided by its mass, ``[H, W, 2]``.

``statistic`` picks the position (``STATISTICS``), ``temperature`` sharpens
(< 1) or flattens (> 1) the softmax first.
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.model.network import mind, padding_for
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.inference import FoldedGraph

__all__ = ["BlendGraph", "blend_confidence"]

MASS_FLOOR = 1e-6  # a frame with less weight than this has no defined position


def _tap_grid(kernel_size):
    """Offsets ``(dx, dy)`` of one frame's taps in logit order, ``[K^2, 2]`` float32."""
    r = kernel_size // 2
    dy, dx = np.mgrid[-r:r + 1, -r:r + 1]
    return np.stack([dx.ravel(), dy.ravel()], axis=1).astype(np.float32)


class BlendGraph(FoldedGraph):
    """The kernel head's blend weights, reduced per pixel, for one image size.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec` (``kernel_size`` > 0).
      height: image height.
      width: image width.
      weights: folded ``{name: array}`` (:func:`vidcorr.readout.inference.fold_batch_norm`).
      temperature: the softmax's temperature (1: the network's own weights).
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).

    Raises:
      UserError: for a network without a kernel head, or a temperature <= 0.
    """

    def __init__(self, spec, height, width, weights, temperature=1.0, device=None, threads=None):
        if not spec.kernel_size:
            raise UserError("readout 'kernel' needs a network with a kernel head "
                            "(model.kernel_size > 0); this one synthesises its output directly: "
                            "use readout 'sensitivity'")
        if not temperature > 0:
            raise UserError("temperature must be positive, got %r" % (temperature,))
        self.kernel_size = spec.kernel_size
        self.temperature = float(temperature)
        super(BlendGraph, self).__init__(spec, height, width, weights, device, threads)

    def _build(self, spec):
        k = self.kernel_size
        k2 = k * k
        h, w = self.height, self.width
        self.inputs = tf.placeholder(tf.float32, [1, h, w, 6], "inputs")  # [1, H, W, 6]
        endpoints = {}
        mind(self.inputs, False, spec=spec, folded=True, name=MODEL_SCOPE, endpoints=endpoints)
        top, _, left, _ = padding_for(h, w)
        logits = endpoints["logits"][0, top:top + h, left:left + w, :]  # [H, W, 2K^2]
        logits = tf.reshape(logits, [h * w, 2 * k2]) / self.temperature  # [HW, 2K^2]
        weights = tf.nn.softmax(logits, axis=-1)  # [HW, 2K^2]
        taps = _tap_grid(k)  # [K^2, 2]
        # One matmul gives both frames' mass and first moments: [2K^2, 6] columns
        # (mass, x moment, y moment) for frame t, then for frame t+2.
        moments = np.zeros((2 * k2, 6), np.float32)
        for f in range(2):
            moments[f * k2:(f + 1) * k2, 3 * f] = 1.0
            moments[f * k2:(f + 1) * k2, 3 * f + 1:3 * f + 3] = taps
        sums = tf.reshape(tf.matmul(weights, moments), [h * w, 2, 3])  # [HW, 2, (m, mx, my)]
        mass = sums[..., 0]  # [HW, 2]
        safe = tf.maximum(mass, MASS_FLOOR)[..., None]  # [HW, 2, 1]
        centroid = sums[..., 1:] / safe  # [HW, 2, (dx, dy)]

        per_frame = tf.reshape(weights, [h * w * 2, k2])  # [HW*2, K^2], frame-major rows
        best = tf.argmax(per_frame, axis=1, output_type=tf.int32)  # [HW*2]
        peak = tf.reshape(tf.reduce_max(per_frame, axis=1), [h * w, 2]) / safe[..., 0]  # [HW, 2]
        by, bx = best // k, best % k  # [HW*2] tap row and column
        flat = tf.reshape(per_frame, [-1])  # [HW*2*K^2]
        rows = tf.range(h * w * 2) * k2  # [HW*2]
        local_m = tf.zeros_like(flat[:h * w * 2])
        local_x, local_y = local_m, local_m
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                ty, tx = by + dy, bx + dx
                inside = (ty >= 0) & (ty < k) & (tx >= 0) & (tx < k)  # [HW*2]
                idx = rows + tf.clip_by_value(ty, 0, k - 1) * k + tf.clip_by_value(tx, 0, k - 1)
                v = tf.where(inside, tf.gather(flat, idx), tf.zeros_like(local_m))  # [HW*2]
                local_m += v
                local_x += v * tf.cast(tx - k // 2, tf.float32)
                local_y += v * tf.cast(ty - k // 2, tf.float32)
        local = tf.stack([local_x, local_y], axis=1) / tf.maximum(local_m, MASS_FLOOR)[:, None]
        argmax = tf.cast(tf.stack([bx, by], axis=1) - k // 2, tf.float32)  # [HW*2, 2]
        self.outputs = {
            "centroid": tf.reshape(centroid, [h, w, 2, 2]),
            "local": tf.reshape(local, [h, w, 2, 2]),
            "argmax": tf.reshape(argmax, [h, w, 2, 2]),
            "mass": tf.reshape(mass, [h, w, 2]),
            "peak": tf.reshape(peak, [h, w, 2]),
        }

    def run(self, frame_t, frame_t2):
        """The reduced weights of a pair at this graph's size.

        Args:
          frame_t: ``[H, W, 3]`` float in [0, 1].
          frame_t2: ``[H, W, 3]`` float in [0, 1].

        Returns:
          A dict of numpy arrays, see the module docstring; offsets are ``(dx, dy)``
          from each pixel, per frame (index 0: frame t, 1: frame t+2).
        """
        pair = np.concatenate([frame_t, frame_t2], axis=-1)[None].astype(np.float32)
        return self.sess.run(self.outputs, {self.inputs: pair})


def blend_confidence(peak, mass):
    """A match's confidence in [0, 1] from its blend weights, per pixel.

    The lower of the two frames' peak shares (how concentrated each frame's weights
    are), times the balance of the mass between the frames (``2 min(m) / sum(m)``:
    a pixel seen in one frame only, occluded in the other, gets little).

    Args:
      peak: ``[..., 2]`` each frame's largest weight over its mass.
      mass: ``[..., 2]`` each frame's share of the weight.

    Returns:
      ``[...]`` float.
    """
    peak, mass = np.asarray(peak, np.float64), np.asarray(mass, np.float64)
    balance = 2.0 * mass.min(axis=-1) / np.maximum(mass.sum(axis=-1), MASS_FLOOR)
    return peak.min(axis=-1) * balance
