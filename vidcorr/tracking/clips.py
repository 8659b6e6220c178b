"""Clips with known tracks: textured layers in affine motion, one passing over another.

A clip is a background layer and elliptic foreground layers, each cut from a
texture (a real image, or any ``[H, W, 3]`` float array) and moved by its own
affine motion over time: about the layer's centre ``c``, at frame t,

    p = c + R(angle(t)) zoom(t) (u - c) + shift(t),
    angle(t) = rotation t,  zoom(t) = (1 + zoom) ** t,
    shift(t) = velocity t + wobble sin(2 pi t / period),

so the motion turns, scales and changes speed (sub-pixel throughout). Foreground
layers are drawn over the background in order and hide what is behind them.
Frames are rendered with ``supersample`` x ``supersample`` samples per pixel
(bicubic from the texture, box-averaged), so edges are anti-aliased and every
frame is made the same way. The truth follows in closed form: a point's layer
coordinates are fixed, its position at any frame is the layer's map of them, and
it is visible where it is inside the frame and no layer above covers it.
"""

import dataclasses
from typing import Tuple

import numpy as np
from scipy import ndimage

from vidcorr.io.video import float_to_uint8

__all__ = ["LayerMotion", "Layer", "LayeredClip"]


@dataclasses.dataclass(frozen=True)
class LayerMotion:
    """One layer's motion (see the module docstring); angles in degrees, per frame."""

    velocity: Tuple[float, float] = (0.0, 0.0)
    rotation: float = 0.0
    zoom: float = 0.0
    wobble: Tuple[float, float] = (0.0, 0.0)
    period: float = 24.0

    def matrix(self, t):
        """``(A, b)``: frame position ``p = A u + b`` of layer point u at frame t, about the
        origin (the layer's centre is applied by :class:`Layer`)."""
        a = np.deg2rad(self.rotation * t)
        z = (1.0 + self.zoom) ** t
        rot = z * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        shift = np.asarray(self.velocity) * t + np.asarray(self.wobble) * np.sin(
            2 * np.pi * t / self.period)
        return rot, shift


@dataclasses.dataclass(frozen=True)
class Layer:
    """A textured layer: ``texture`` ``[h, w, 3]`` float in [0, 1], placed so that its pixel
    ``offset + (x, y)`` is frame pixel (x, y) at t = 0; ``ellipse`` None for the background,
    else ``(cx, cy, rx, ry)`` in frame pixels at t = 0; it moves about ``centre``."""

    texture: np.ndarray
    motion: LayerMotion
    centre: Tuple[float, float]
    offset: Tuple[float, float] = (0.0, 0.0)
    ellipse: Tuple[float, float, float, float] = None

    def forward(self, points, t):
        """Frame positions at frame t of layer points ``[N, 2]`` (frame coordinates at t=0)."""
        a, b = self.motion.matrix(t)
        c = np.asarray(self.centre)
        return (np.asarray(points) - c) @ a.T + c + b

    def backward(self, points, t):
        """Layer points (frame coordinates at t=0) seen at frame positions ``[N, 2]`` at t."""
        a, b = self.motion.matrix(t)
        c = np.asarray(self.centre)
        return (np.asarray(points) - c - b) @ np.linalg.inv(a).T + c

    def covers(self, layer_points):
        """``[N]`` bool: the layer's own points inside its ellipse (all for a background)."""
        if self.ellipse is None:
            return np.ones(len(layer_points), bool)
        cx, cy, rx, ry = self.ellipse
        p = np.asarray(layer_points)
        return ((p[:, 0] - cx) / rx) ** 2 + ((p[:, 1] - cy) / ry) ** 2 <= 1.0

    def sample(self, layer_points):
        """Bicubic colours ``[N, 3]`` of the texture at layer points."""
        p = np.asarray(layer_points) + np.asarray(self.offset)
        return np.stack([ndimage.map_coordinates(self.texture[..., c], [p[:, 1], p[:, 0]],
                                                 order=3, mode="reflect")
                         for c in range(3)], axis=-1)


class LayeredClip(object):
    """A clip of ``length`` frames of ``height`` x ``width`` from layers (bottom first).

    Args:
      layers: a list of :class:`Layer`, the background first.
      height: frame height.
      width: frame width.
      length: the number of frames.
      supersample: samples per pixel along each axis.
    """

    def __init__(self, layers, height, width, length, supersample=2):
        self.layers, self.size, self.length = list(layers), (height, width), length
        self.supersample = supersample

    def which_layer(self, points, t):
        """``[N]`` the index of the top layer seen at frame positions ``points`` at frame t."""
        top = np.zeros(len(points), int)
        for i, layer in enumerate(self.layers[1:], 1):
            top[layer.covers(layer.backward(points, t))] = i
        return top

    def frame(self, t):
        """Frame t, ``[H, W, 3]`` uint8."""
        h, w = self.size
        s = self.supersample
        fine = (np.arange(s) + 0.5) / s - 0.5
        yy, xx = np.mgrid[0:h, 0:w]
        px = np.broadcast_to(xx[..., None, None] + fine[None, None, None, :], (h, w, s, s))
        py = np.broadcast_to(yy[..., None, None] + fine[None, None, :, None], (h, w, s, s))
        points = np.stack([px, py], axis=-1).reshape(-1, 2)
        top = self.which_layer(points, t)
        colour = np.zeros((len(points), 3))
        for i, layer in enumerate(self.layers):
            on = top == i
            if on.any():
                colour[on] = layer.sample(layer.backward(points[on], t))
        colour = colour.reshape(h, w, s * s, 3).mean(axis=2)
        return float_to_uint8(colour)

    def truth(self, queries):
        """The true tracks of queries ``[N, 3]`` (t, x, y).

        Returns:
          ``(tracks, visible)``: ``[N, T, 2]`` positions at every frame and ``[N, T]`` bool.
        """
        queries = np.asarray(queries, np.float64)
        h, w = self.size
        n = len(queries)
        tracks, visible = np.zeros((n, self.length, 2)), np.zeros((n, self.length), bool)
        for j, (t0, x, y) in enumerate(queries):
            point = np.array([[x, y]])
            layer = int(self.which_layer(point, t0)[0])
            own = self.layers[layer].backward(point, t0)
            for t in range(self.length):
                p = self.layers[layer].forward(own, t)
                tracks[j, t] = p[0]
                inside = -0.5 <= p[0, 0] <= w - 0.5 and -0.5 <= p[0, 1] <= h - 0.5
                visible[j, t] = inside and int(self.which_layer(p, t)[0]) == layer
        return tracks, visible
