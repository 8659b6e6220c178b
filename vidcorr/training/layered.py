"""Triplets with known, larger motion made from real frames: two translating layers.

Real video from packages moves little between frames, and a narrow network
trained on it alone learns to sharpen the frame average rather than to move
content (its sensitivity peaks stay at the pixel itself). A *layered* triplet forces displacement:
a background crop of a real frame translates by ``v_bg`` pixels per frame
step, and a foreground layer, an ellipse cut from another real frame,
translates by its own ``v_fg`` on top of it (it occludes what is behind it):

    frame_k(p) = fg(p - k v_fg)   inside the ellipse moved by k v_fg,
                 bg(p - k v_bg)   elsewhere,          k = -1, 0, 1 (t, t+1, t+2).

So the middle-frame pixel p is seen at ``p - v`` in frame t and ``p + v`` in
frame t+2, with v the velocity of the layer p belongs to. Velocities are
integer pixel steps (exact copies, no interpolation blur that would tell the
frames apart), uniform in ``[-max_motion, max_motion]`` per axis, or, with
``power`` p > 1, ``(max_motion + 1/2) sign(u) |u|^p`` rounded (u uniform in
[-1, 1]): more of the triplets move by about a pixel, where interpolation is
most tempted to average instead of move. Mixed into
training by ``data.layered_fraction``; validation stays on real triplets.

Whole-pixel motion teaches a prior of whole-pixel displacements (the peaks of
a model trained on it snap to integers). With ``supersample`` S > 1 the layers
are upsampled S times (bicubic), moved by whole *fine* pixels, and each frame
is box-averaged back down: velocities on a 1/S-pixel lattice, and all three
frames go through the same filter, so no frame is sharper than the others
(a fractional shift of frames t and t+2 alone would blur only them).
"""

import numpy as np

from vidcorr.io.video import resize_float, uint8_to_float

__all__ = ["layered_triplet", "window_size", "ellipse_mask", "subpixel_layered_triplet",
           "random_velocity"]


def window_size(height, width, max_motion):
    """The window ``(h, w)`` a layer is cut from so that every shift stays inside."""
    margin = int(np.floor(max_motion))
    return height + 2 * margin, width + 2 * margin


def ellipse_mask(height, width, centre, radii):
    """A boolean ellipse ``[height, width]`` with ``centre (y, x)`` and ``radii (ry, rx)``."""
    yy, xx = np.ogrid[0:height, 0:width]  # [H, 1] and [1, W], broadcast
    return (((yy - centre[0]) / radii[0]) ** 2 + ((xx - centre[1]) / radii[1]) ** 2) <= 1.0


def random_velocity(rng, max_motion, power=1.0):
    """A random integer velocity ``(vy, vx)``, each component within ``max_motion``.

    Args:
      rng: a ``numpy.random.RandomState``.
      max_motion: bound of each component (its integer part m is used).
      power: 1 for uniform on ``{-m..m}``; p > 1 draws ``round((m + 1/2) sign(u)
        |u|^p)`` with u uniform in [-1, 1], so that ``P(|v| <= k) =
        ((k + 1/2) / (m + 1/2))^(1/p)``.

    Returns:
      int array ``[2]``.
    """
    m = int(np.floor(max_motion))
    if power == 1:
        return rng.randint(-m, m + 1, size=2)  # (vy, vx), integer pixels per frame step
    u = rng.uniform(-1.0, 1.0, size=2)
    v = np.rint((m + 0.5) * np.sign(u) * np.abs(u) ** power).astype(np.int64)
    return np.clip(v, -m, m)


def layered_triplet(rng, background, foreground, height, width, max_motion, power=1.0):
    """One layered triplet with integer motion.

    Args:
      rng: a ``numpy.random.RandomState``.
      background: ``[Hb, Wb, 3]`` window of a real frame, at least
        :func:`window_size` (extra is cropped at random).
      foreground: ``[Hf, Wf, 3]`` window of another real frame, the same
        minimum size, or None for a background-only triplet.
      height: crop height.
      width: crop width.
      max_motion: bound of each velocity component, pixels per frame step
        (its integer part is used).
      power: the velocity distribution's exponent (:func:`random_velocity`).

    Returns:
      ``(frames, flow_mid)``: ``[3, height, width, 3]`` (dtype of the inputs)
      and ``[height, width, 2]`` int: the per-pixel ``(vy, vx)`` of the middle
      frame (pixel p is at ``p - v`` in frame t, ``p + v`` in frame t+2).

    Raises:
      ValueError: if a window is smaller than :func:`window_size`.
    """
    wh, ww = window_size(height, width, max_motion)
    m = (wh - height) // 2
    layers = [background] + ([foreground] if foreground is not None else [])
    for layer in layers:
        if layer.shape[0] < wh or layer.shape[1] < ww:
            raise ValueError("a layer window must be at least %dx%d for a %dx%d crop at "
                             "max_motion %g, got %dx%d" % (ww, wh, width, height, max_motion,
                                                          layer.shape[1], layer.shape[0]))
    windows = []
    for layer in layers:  # random window of exactly (wh, ww) from each layer
        y = rng.randint(layer.shape[0] - wh + 1)
        x = rng.randint(layer.shape[1] - ww + 1)
        windows.append(layer[y:y + wh, x:x + ww])
    v_bg = random_velocity(rng, max_motion, power)
    frames = np.stack([windows[0][m - k * v_bg[0]:m - k * v_bg[0] + height,
                                  m - k * v_bg[1]:m - k * v_bg[1] + width]
                       for k in (-1, 0, 1)])  # [3, h, w, 3]
    flow_mid = np.broadcast_to(v_bg, (height, width, 2)).copy()
    if foreground is None:
        return frames, flow_mid
    v_fg = random_velocity(rng, max_motion, power)
    radii = (rng.uniform(0.15, 0.4) * height, rng.uniform(0.1, 0.3) * width)
    centre = (rng.uniform(0.25, 0.75) * height + m, rng.uniform(0.2, 0.8) * width + m)
    mask = ellipse_mask(wh, ww, centre, radii)  # [wh, ww], in the foreground window
    for i, k in enumerate((-1, 0, 1)):
        ys = slice(m - k * v_fg[0], m - k * v_fg[0] + height)
        xs = slice(m - k * v_fg[1], m - k * v_fg[1] + width)
        inside = mask[ys, xs]  # [h, w]: the ellipse moved by k v_fg
        np.copyto(frames[i], windows[1][ys, xs], where=inside[..., None])
        if k == 0:
            flow_mid[inside] = v_fg
    return frames, flow_mid


def _box_down(fine, s):
    """The mean of each ``s x s`` block of ``[N, hS, wS, C]`` frames: ``[N, h, w, C]``.
    Sums of strided slices, several times faster than ``mean`` over two inner axes."""
    n, height, width, c = fine.shape[0], fine.shape[1] // s, fine.shape[2] // s, fine.shape[3]
    rows = fine.reshape(n * height * s, width, s, c)
    across = rows[:, :, 0].copy()  # [N h S, w, C]
    for i in range(1, s):
        across += rows[:, :, i]
    blocks = across.reshape(n * height, s, width, c)
    out = blocks[:, 0].copy()  # [N h, w, C]
    for i in range(1, s):
        out += blocks[:, i]
    return (out * (1.0 / (s * s))).reshape(n, height, width, c)


def subpixel_layered_triplet(rng, background, foreground, height, width, max_motion,
                             supersample, power=1.0):
    """A layered triplet with velocities on a ``1 / supersample`` pixel lattice.

    The layers' random windows are upsampled ``supersample`` times, moved as
    in :func:`layered_triplet` by up to ``max_motion * supersample`` fine
    pixels, and every frame is box-downsampled back.

    Args:
      rng: a ``numpy.random.RandomState``.
      background: ``[Hb, Wb, 3]`` real frame (uint8 or float in 0-255), at
        least :func:`window_size` ``+ 1`` on each side.
      foreground: another such frame, or None.
      height: crop height.
      width: crop width.
      max_motion: bound of each velocity component, pixels per frame step
        (rounded down to the lattice).
      supersample: S >= 1.
      power: the velocity distribution's exponent (:func:`random_velocity`, on
        the fine lattice).

    Returns:
      ``(frames, flow_mid)``: ``[3, height, width, 3]`` float32 in 0-255 and
      ``[height, width, 2]`` float ``(vy, vx)`` of the middle frame, multiples of
      ``1 / S`` (a pixel on a layer border takes the velocity of its centre).

    Raises:
      ValueError: if a frame is smaller than the window.
    """
    s = int(supersample)
    wh, ww = window_size(height, width, max_motion)
    wh, ww = wh + 2, ww + 2  # one pixel more per side: the bicubic filter's support
    windows = []
    for layer in [background] + ([foreground] if foreground is not None else []):
        if layer.shape[0] < wh or layer.shape[1] < ww:
            raise ValueError("a layer frame must be at least %dx%d for a %dx%d crop at "
                             "max_motion %g, got %dx%d" % (ww, wh, width, height, max_motion,
                                                          layer.shape[1], layer.shape[0]))
        y = rng.randint(layer.shape[0] - wh + 1)
        x = rng.randint(layer.shape[1] - ww + 1)
        window = uint8_to_float(layer[y:y + wh, x:x + ww])  # [wh, ww, 3]
        windows.append(resize_float(window, wh * s, ww * s) * 255.0)  # [wh S, ww S, 3]
    fine, flow = layered_triplet(rng, windows[0], windows[1] if len(windows) > 1 else None,
                                 height * s, width * s,
                                 np.floor(max_motion * s + 1e-9), power)  # [3, hS, wS, 3]
    frames = _box_down(fine, s)  # [3, h, w, 3]
    flow_mid = flow[s // 2::s, s // 2::s] / float(s)  # [h, w, 2]
    return frames.astype(np.float32), flow_mid
