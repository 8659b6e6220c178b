"""Flows at a frame's own pixels from a read-out of the middle frame's pixels.

A pair's read-out gives, for every pixel m of the (virtual) middle frame, its
position ``p1(m)`` in frame t and ``p3(m)`` in frame t+2. From the middle frame the
correspondences are direct: ``m -> p1(m)``, ``m -> p3(m)``. From a pixel x of frame t
they are not: the middle pixel that maps to x is ``m = p1^-1(x)``, and x's match in
frame t+2 is ``p3(p1^-1(x))``.

**How the map is inverted.** ``p1`` is a smooth, nearly-identity map wherever the
scene is seen in both frames, so ``p1(m) = x`` is solved by the fixed point of
Chen et al. (2008, "A simple fixed-point approach to invert a deformation field"):

    m_0 = x - d(x),   m_{n+1} = m_n + (x - p1(m_n)) = x - d(m_n),   d(m) = p1(m) - m,

with the displacement ``d`` sampled bilinearly between the middle frame's pixels
(and held at the border's value beyond them, so points outside the frame move
with its edge). Each step removes
the error up to the map's deviation from a translation (it converges when the
map's Jacobian is within 1 of the identity: any smooth motion, rotation and zoom
of a few percent per frame step). It is cheap (a few bilinear samples per point,
no scattering), exact to the field's own interpolation, and its failure tells
something: where no middle pixel maps to x, because x is hidden in the middle
frame (it is being covered) or because the map folds there, the residual
``|p1(m) - x|`` stays large. Such points are marked invalid (``tolerance``), and so
are points whose middle pixel falls outside the frame. Splatting ``p1``'s
values onto frame t's pixels (the other common inversion) leaves holes and
collisions that need filling rules; the fixed point needs none.
"""

import numpy as np

from vidcorr.errors import UserError

__all__ = ["sample_field", "displacement", "apply_map", "invert_map", "invert_shift", "frame_flows", "ITERATIONS", "TOLERANCE"]

ITERATIONS = 12  # fixed-point steps: the error shrinks geometrically on smooth motion
TOLERANCE = 0.05  # pixels: a residual above this means nothing maps to the point


def sample_field(field, points):
    """Bilinear samples of ``field`` ``[H, W, ...]`` at ``points`` ``[N, 2]`` (x, y),
    clamped to the outer pixel centres. Returns ``[N, ...]`` float64."""
    field = np.asarray(field)
    h, w = field.shape[:2]
    x = np.clip(np.asarray(points, np.float64)[:, 0], 0.0, w - 1.0)
    y = np.clip(np.asarray(points, np.float64)[:, 1], 0.0, h - 1.0)
    x0 = np.minimum(np.floor(x).astype(np.int64), w - 2) if w > 1 else np.zeros(len(x), int)
    y0 = np.minimum(np.floor(y).astype(np.int64), h - 2) if h > 1 else np.zeros(len(y), int)
    fx, fy = x - x0, y - y0
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    extra = (slice(None),) + (None,) * (field.ndim - 2)
    fx, fy = fx[extra], fy[extra]
    top = field[y0, x0] * (1 - fx) + field[y0, x1] * fx
    bottom = field[y1, x0] * (1 - fx) + field[y1, x1] * fx
    return top * (1 - fy) + bottom * fy


def displacement(positions):
    """``positions - grid``: a map ``[H, W, 2]`` of (x, y) positions as displacements."""
    positions = np.asarray(positions, np.float64)
    h, w = positions.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    return positions - np.stack([xx, yy], axis=-1)


def apply_map(shift, points):
    """A map given as displacements ``shift`` ``[H, W, 2]`` at ``points`` ``[N, 2]``:
    ``points + shift(points)``, the displacement interpolated bilinearly inside the
    frame and held at the border's beyond it (a point outside moves with the edge)."""
    points = np.asarray(points, np.float64)
    return points + sample_field(shift, points)


def invert_map(positions, targets, iterations=ITERATIONS, tolerance=TOLERANCE):
    """The middle-frame points that a map sends to ``targets`` (see the module docstring).

    Args:
      positions: ``[H, W, 2]`` the map: for each middle-frame pixel, its (x, y) in a frame.
      targets: ``[N, 2]`` (x, y) points of that frame (outside it too: beyond the
        border the map moves points with the edge's displacement).
      iterations: fixed-point steps.
      tolerance: the largest residual ``|positions(m) - target|`` (pixels) of a valid result.

    Returns:
      ``(middle, valid)``: ``[N, 2]`` (x, y) middle-frame points and ``[N]`` bool, False
      where the residual stays above ``tolerance`` or the point is outside the middle frame.
    """
    return invert_shift(displacement(positions), targets, iterations, tolerance)


def invert_shift(shift, targets, iterations=ITERATIONS, tolerance=TOLERANCE):
    """:func:`invert_map` of a map given as its displacements ``shift`` ``[H, W, 2]``."""
    targets = np.asarray(targets, np.float64).reshape(-1, 2)
    h, w = shift.shape[:2]
    middle = targets - sample_field(shift, targets)
    for _ in range(iterations):  # m + (x - p(m)) = x - d(m)
        middle = targets - sample_field(shift, middle)
    residual = np.hypot(*(apply_map(shift, middle) - targets).T)
    inside = np.all((middle >= -0.5) & (middle <= np.array([w, h]) - 0.5), axis=1)
    return middle, (residual <= tolerance) & inside & np.all(np.isfinite(middle), axis=1)


def frame_flows(position, iterations=ITERATIONS, tolerance=TOLERANCE):
    """Dense correspondences of a pair's read-out at each frame's own pixels.

    Args:
      position: ``[H, W, 2, 2]`` the read-out: for each middle-frame pixel, its (x, y)
        in frame t (``[..., 0, :]``) and in frame t+2 (``[..., 1, :]``); or the
        :class:`vidcorr.Matches` of ``Matcher.match(a, b, stride=1)``.
      iterations: fixed-point steps of the inversion.
      tolerance: the inversion's largest residual (pixels).

    Returns:
      A dict of ``[H, W, 2]`` displacement fields (NaN where invalid) and ``[H, W]``
      masks: ``middle_to_t``, ``middle_to_t2`` (direct, valid everywhere);
      ``t_to_middle``, ``t_to_t2``, ``valid_t`` (at frame t's pixels, inverted);
      ``t2_to_middle``, ``t2_to_t``, ``valid_t2`` (at frame t+2's pixels).

    Raises:
      UserError: for another shape, or matches that are not one per pixel.
    """
    position = _dense(position)
    h, w = position.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    grid = np.stack([xx, yy], axis=-1).astype(np.float64)  # [H, W, 2]
    out = {"middle_to_t": position[..., 0, :] - grid, "middle_to_t2": position[..., 1, :] - grid}
    pixels = grid.reshape(-1, 2)
    for own, other, name, other_name in ((0, 1, "t", "t2"), (1, 0, "t2", "t")):
        middle, valid = invert_map(position[..., own, :], pixels, iterations, tolerance)
        there = apply_map(displacement(position[..., other, :]), middle)
        nan = np.where(valid[:, None], 0.0, np.nan)
        out[name + "_to_middle"] = (middle - pixels + nan).reshape(h, w, 2)
        out[name + "_to_" + other_name] = (there - pixels + nan).reshape(h, w, 2)
        out["valid_" + name] = valid.reshape(h, w)
    return out


def _dense(position):
    """``[H, W, 2, 2]`` float64 from an array or from dense :class:`vidcorr.Matches`."""
    if hasattr(position, "p1") and hasattr(position, "p3"):  # Matches, stride 1
        h, w = position.size
        yy, xx = np.mgrid[0:h, 0:w]
        if len(position.grid) != h * w or not np.array_equal(
                position.grid, np.stack([xx.ravel(), yy.ravel()], axis=1)):
            raise UserError("frame flows need a match for every pixel: Matcher.match(a, b, "
                            "stride=1) at the images' own size (no max_size)")
        return np.stack([position.p1, position.p3], axis=1).reshape(h, w, 2, 2).astype(
            np.float64)
    position = np.asarray(position, np.float64)
    if position.ndim != 4 or position.shape[2:] != (2, 2):
        raise UserError("a read-out's positions are [H, W, 2, 2], got shape %s"
                        % (position.shape,))
    return position
