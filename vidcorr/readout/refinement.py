"""Refinement on the frames: a dense field of matches made precise by the images themselves.

The network says *where* a middle-frame pixel p comes from (``p1`` in frame t,
``p3`` in frame t+2); the frames say *exactly* where. This stage takes every
pixel's pair of positions from the read-out and moves them so that frame t at
``p1`` and frame t+2 at ``p3`` look alike, with a smooth field of moves: a
variational refinement in the manner of DIS and DeepFlow (Brox et al. 2004,
Weinzaepfel et al. 2013), written in TensorFlow ops so it runs on the GPU when
there is one, batches over pairs and goes wherever the graph goes.

**What is refined.** A match of the middle frame has two ends. Its flow
``u = p3 - p1`` is refined with the midpoint ``c = (p1 + p3) / 2`` held, so both
ends move by half of each step (``p1 = c - u/2``, ``p3 = c + u/2``): the field
stays on the middle frame's pixel grid, where the read-out gives it densely (no
scattering to frame t's pixels, no holes to fill), and the two frames are
treated alike. ``anchor=0`` holds ``p1`` instead (``p3 = p1 + u``): the form of
OpenCV's ``VariationalRefinement``, against which the tests check this stage.

**The energy**, over the field ``u`` (images on a 0-255 scale, as OpenCV's):

    E(u) = sum_p  delta/2 Psi(sum_c (I3_c(p3) - I1_c(p1))^2 / n_c)
                + gamma/2 Psi(sum_c |grad I3_c(p3) - grad I1_c(p1)|^2 / n'_c)
                + alpha/2 Psi(|grad u|^2),     Psi(s^2) = sqrt(s^2 + eps^2),

with DeepFlow's normalisation ``n = |grad I|^2 + zeta^2`` of each constancy term
and the colour channels averaged; a pixel with an end outside its frame has no
constancy terms (DeepFlow's warp mask), so smoothness carries it. It is minimised
in ``rounds`` of re-warping (the frames sampled at the current positions, the
constancy terms linearised around them with the derivatives of the warped pair's
average), each with ``iterations`` fixed-point steps (the robust weights lagged)
of ``sweeps`` red-black block-SOR sweeps over the 2x2 systems per pixel. All loops are
``tf.while_loop``: the graph's size does not depend on the iteration counts. The frames
are read by ``settings.sampler`` (:mod:`vidcorr.model.sampling`): bilinear, or a spline
kernel nearly free of bilinear sampling's shift at fractional positions, which biases
the energy's minimum by a few hundredths of a pixel.

Beside the refined positions it returns each pixel's photometric residual,
``mean_c |I3_c(p3) - I1_c(p1)|`` (0-1 scale), averaged over a 3x3 window: a
confidence term, since an occluded point has no position where the frames agree.
"""

import collections

import numpy as np

from vidcorr.compat import default_device, session_config, tf
from vidcorr.model.sampling import sampler as frame_sampler

__all__ = ["refine_field", "RefineSettings", "RefineGraph", "residual_confidence", "OMEGA",
           "ZETA", "EPSILON", "SCALE"]

OMEGA = 1.6  # SOR over-relaxation (OpenCV's and DIS's value)
ZETA = 0.1  # the constancy terms' normaliser, 0-255 grey levels per pixel
EPSILON = 1e-3  # the robust penalty's smoothing
SCALE = 255.0  # images are refined on a 0-255 scale, so alpha, delta, gamma mean OpenCV's

RefineSettings = collections.namedtuple(
    "RefineSettings", ["rounds", "iterations", "sweeps", "alpha", "delta", "gamma", "scales",
                       "sampler"])
RefineSettings.__new__.__defaults__ = (1, "bilinear")
RefineSettings.__doc__ = """The refinement's solver and energy: ``rounds`` re-warpings, each
of ``iterations`` fixed-point steps of ``sweeps`` red-black SOR sweeps (each >= 1); the
smoothness weight ``alpha``, brightness constancy ``delta``, gradient constancy ``gamma``;
``scales`` (default 1) the image scales refined coarse to fine (each half the last's size);
``sampler`` (default ``bilinear``) the frames' sampler, a name in
:data:`vidcorr.model.sampling.SAMPLERS`.
:meth:`from_options` reads them from a :class:`vidcorr.readout.options.MatchOptions`."""


def _from_options(options):
    """The :class:`RefineSettings` of a :class:`vidcorr.readout.options.MatchOptions`."""
    return RefineSettings(options.refine_rounds, options.refine_iterations,
                          options.refine_sweeps, options.refine_alpha, options.refine_delta,
                          options.refine_gamma, options.refine_scales, options.refine_sampler)


RefineSettings.from_options = staticmethod(_from_options)


def _dx(f):
    """Central differences along x of ``[C, B, H, W]``, the border repeated."""
    p = tf.concat([f[..., :1], f, f[..., -1:]], axis=3)
    return 0.5 * (p[..., 2:] - p[..., :-2])


def _dy(f):
    """Central differences along y of ``[C, B, H, W]``, the border repeated."""
    p = tf.concat([f[:, :, :1], f, f[:, :, -1:]], axis=2)
    return 0.5 * (p[:, :, 2:] - p[:, :, :-2])


def _next(f, axis):
    """``f [2, B, H, W]`` at each pixel's next neighbour along ``axis`` (3: x, 2: y), the
    last one repeated (its edge weight is 0)."""
    rest, last = [slice(None)] * 4, [slice(None)] * 4
    rest[axis], last[axis] = slice(1, None), slice(-1, None)
    return tf.concat([f[tuple(rest)], f[tuple(last)]], axis=axis)


def _channel_mean(x):
    """The mean of ``x [C, B, H, W]`` over its channels, ``[B, H, W]``: as a product with a
    ``[1, C]`` row (onnxruntime reduces a leading axis several times slower than that)."""
    s = tf.shape(x)
    channels = int(x.shape[0])
    row = tf.constant(np.full([1, channels], 1.0 / channels, np.float32))
    return tf.reshape(tf.matmul(row, tf.reshape(x, [channels, -1])), s[1:])


def _quadratic(gx, gy, gz):
    """A linearised constancy constraint ``gz + gx du + gy dv = 0`` per colour channel
    (each ``[C, B, H, W]``), normalised by ``sqrt(gx^2 + gy^2 + zeta^2)`` (DeepFlow's
    normalisation), as the channels' mean squared residual, a quadratic form in
    ``(du, dv)``: its coefficients ``(a11, a12, a22, b1, b2, c)``, each ``[B, H, W]``, with
    ``E = a11 du^2 + 2 a12 du dv + a22 dv^2 - 2 b1 du - 2 b2 dv + c`` (so ``(a, b)`` is its
    least-squares system). The channels lead, so their mean is over the outer axis."""
    scale = tf.rsqrt(gx * gx + gy * gy + ZETA ** 2)  # [C, B, H, W]
    gx, gy, gz = gx * scale, gy * scale, gz * scale
    mean = lambda a, b: _channel_mean(a * b)  # noqa: E731
    return (mean(gx, gx), mean(gx, gy), mean(gy, gy), -mean(gx, gz), -mean(gy, gz),
            mean(gz, gz))


def _energy(form, du):
    """The quadratic ``form`` of :func:`_quadratic` at the increment ``du [2, B, H, W]``:
    ``[B, H, W]``, at least 0 (float rounding)."""
    a11, a12, a22, b1, b2, c = form
    u, v = du[0], du[1]
    e = u * (a11 * u + 2.0 * (a12 * v - b1)) + v * (a22 * v - 2.0 * b2) + c
    return tf.maximum(e, 0.0)


def _constraints(warped1, warped3, inside):
    """The linearised constancy terms of one round as quadratic forms (:func:`_quadratic`),
    ``(brightness, gradient)``, the gradient's two components summed; ``inside`` ``[B, H,
    W]`` (0 or 1) zeroes both where an end left its frame. The derivatives are those of the
    warped pair's average; ``Iz`` its difference. ``warped*`` are ``[B, H, W, C]``."""
    warped1, warped3 = (tf.transpose(w, [3, 0, 1, 2]) for w in (warped1, warped3))
    avg = 0.5 * (warped1 + warped3)  # [C, B, H, W]
    iz = warped3 - warped1
    ix, iy = _dx(avg), _dy(avg)
    ixy = _dy(ix)
    brightness = _quadratic(ix, iy, iz)
    along_x, along_y = _quadratic(_dx(ix), ixy, _dx(iz)), _quadratic(ixy, _dy(iy), _dy(iz))
    gradient = [x + y for x, y in zip(along_x, along_y)]
    return [k * inside for k in brightness], [k * inside for k in gradient]


def _inside(q1, q3, shape):
    """``[B, h, w]``: 1 where both positions are in the image, else 0 (the data terms of a
    match whose end left the image say nothing; smoothness carries it)."""
    limit = tf.cast(tf.stack([shape[2] - 1, shape[1] - 1] * 2), tf.float32)  # (x, y) twice
    q = tf.concat([q1, q3], axis=3)  # [B, h, w, 4]
    ok = tf.cast(q >= 0.0, tf.float32) * tf.cast(q <= limit, tf.float32)  # no bool reduction
    return tf.reduce_min(ok, axis=3)  # for the ONNX export


def _data_system(constraints, du, delta, gamma):
    """The data terms' 2x2 system per pixel at the increment ``du [2, B, H, W]``, the robust
    penalties' weights lagged: ``(a11, a12, a22, b1, b2)``, each ``[B, H, W]``."""
    brightness, gradient = constraints
    eps2 = EPSILON ** 2
    robust_b = (0.5 * delta) * tf.rsqrt(_energy(brightness, du) + eps2)  # [B, H, W]
    robust_g = (0.5 * gamma) * tf.rsqrt(_energy(gradient, du) + eps2)
    a11, a12, a22, b1, b2 = (robust_b * b + robust_g * g
                             for b, g in zip(brightness[:5], gradient[:5]))
    zeta2 = ZETA ** 2
    return a11 + zeta2, a12, a22 + zeta2, b1, b2


def _smoothness_weights(field, alpha, last_x, last_y):
    """The robust smoothness weights of ``field [2, B, H, W]`` on the edges to the right and
    down neighbours, ``(right, down)`` each ``[B, H, W]`` (0 where there is none)."""
    gx = _next(field, 3) - field  # forward differences, 0 past the border
    gy = _next(field, 2) - field
    s = (0.5 * alpha) / tf.sqrt((gx[0] * gx[0] + gx[1] * gx[1]) * last_x +
                                (gy[0] * gy[0] + gy[1] * gy[1]) * last_y + EPSILON ** 2)
    return s * last_x, s * last_y


def _pack(x):
    """``x [N, B, H, W]`` as its red and black pixels (red: row + column even), each
    ``[N, B, H', W' / 2]``: ``H, W`` rounded up to even (zeros added), and each row's pixels
    of one colour side by side, so a half-sweep touches only the pixels it moves.

    A pixel at column ``c`` is at packed column ``c // 2`` whatever its colour; so of its
    neighbours (all of the other colour), the one above, below and the one in its column
    pair share its packed column, and the other one along its row is the packed column
    before (``c`` even) or after (``c`` odd)."""
    s = tf.shape(x)
    even = (s[2:] + 1) // 2  # half of H and W rounded up
    x = tf.pad(x, [[0, 0], [0, 0], [0, 2 * even[0] - s[2]], [0, 2 * even[1] - s[3]]])
    x = tf.reshape(x, [s[0], s[1], even[0], 2, even[1], 2])  # [N, B, H'/2, row, W'/2, column]
    # each row's pixels by column parity, as contiguous rows: strided slices of the last
    # axis are several times slower (onnxruntime's most)
    x = tf.reshape(tf.transpose(x, [0, 1, 2, 3, 5, 4]), [s[0], s[1], even[0], 4, even[1]])
    half = [s[0], s[1], 2 * even[0], even[1]]
    # by (row, column) parity: red (0, 0) and (1, 1), black (0, 1) and (1, 0)
    return (tf.reshape(tf.gather(x, [0, 3], axis=3), half),
            tf.reshape(tf.gather(x, [1, 2], axis=3), half))


def _unpack(red, black, shape):
    """The ``[N, B, H, W]`` field (``shape``'s last two sizes) of :func:`_pack`'s halves."""
    s = tf.shape(red)  # [N, B, H', W'/2]
    pairs = [s[0], s[1], s[2] // 2, 2, s[3]]
    x = tf.concat([tf.reshape(red, pairs), tf.reshape(black, pairs)], axis=3)  # [..., 4, W'/2]
    x = tf.gather(x, [0, 2, 3, 1], axis=3)  # by (row, column) parity
    x = tf.reshape(x, [s[0], s[1], s[2] // 2, 2, 2, s[3]])
    x = tf.reshape(tf.transpose(x, [0, 1, 2, 3, 5, 4]), [s[0], s[1], s[2], 2 * s[3]])
    return x[:, :, :shape[-2], :shape[-1]]


def _sor_system(u, system, edges, odd_columns):
    """What the SOR sweeps of one fixed-point step share, for the full field ``U = u + du``.

    Each pixel solves ``(A + S) du = b + sum_n w_n U_n - S u`` for its 2x2 ``A`` (data
    terms) and ``S``, the sum of its edge weights ``w_n``; so ``U* = c + M^-1 sum_n w_n U_n``
    with ``M = A + S`` and ``c = u + M^-1 (b - S u)``. A half-sweep over the pixels of one
    colour moves them ``U += omega (U* - U)``. ``M^-1 x`` is ``p * x + q * swap(x)``, its
    diagonal and off-diagonal parts, so the sweep is a few element-wise ops.

    The field's two components lead (``[2, B, H, W]``): swapping them is a cheap reverse
    of the outer axis, and every product of a sweep is between tensors of one shape
    (TensorFlow's CPU kernels for broadcasting products are several times slower). The
    sweeps run on the field packed by colour (:func:`_pack`), so their neighbours' weights
    are by packed position: the neighbour in the pixel's column pair, the one before, after,
    below and above (``odd_columns [B, H, W]`` 1 on odd columns).

    Returns:
      Per colour, red then black, ``(offset, p, q, weights)``: ``omega c``, ``omega p``,
      ``omega q`` and the five neighbours' weights, each ``[2, B, H', W' / 2]``.
    """
    a11, a12, a22, b1, b2 = system
    right, down = edges  # [B, H, W]
    # the edge to the left is the left neighbour's edge to the right; none on the first column
    left = tf.concat([tf.zeros_like(right[:, :, :1]), right[:, :, :-1]], axis=2)
    up = tf.concat([tf.zeros_like(down[:, :1]), down[:, :-1]], axis=1)
    total = right + left + down + up  # [B, H, W]
    m11, m22 = a11 + total, a22 + total
    inv = OMEGA / (m11 * m22 - a12 * a12)  # the smoothness terms keep it positive
    p1, p2, q = m22 * inv, m11 * inv, -a12 * inv  # omega M^-1
    r1, r2 = b1 - total * u[0], b2 - total * u[1]
    even_columns = 1.0 - odd_columns
    pair = even_columns * right + odd_columns * left  # the neighbour in the column pair
    parts = tf.stack([OMEGA * u[0] + p1 * r1 + q * r2, OMEGA * u[1] + q * r1 + p2 * r2,
                      p1, p2, q, pair, even_columns * left, odd_columns * right, down, up])
    shared = []
    for half in _pack(parts):  # [10, B, H', W'/2]
        two = [tf.stack([half[k], half[k]]) for k in range(4, 10)]  # both components
        shared.append((half[:2], half[2:4], two[0], two[1:]))
    return shared


def _half_sweep(field, other, shared):
    """One colour's pixels ``field [2, B, H', W' / 2]`` moved by their neighbours, the
    other colour's ``other``."""
    offset, p, q, (pair, before, after, down, up) = shared
    padded = tf.pad(other, [[0, 0], [0, 0], [1, 1], [1, 1]])  # zeros: no edge there
    nb = tf.add_n([pair * other, before * padded[:, :, 1:-1, :-2],
                   after * padded[:, :, 1:-1, 2:], down * padded[:, :, 2:, 1:-1],
                   up * padded[:, :, :-2, 1:-1]])
    return tf.add_n([(1.0 - OMEGA) * field, offset, p * nb, q * tf.reverse(nb, [0])])


def _sor_sweep(fields, shared):
    """One red-black block-SOR sweep over the packed field ``(red, black)``."""
    red, black = fields
    red = _half_sweep(red, black, shared[0])
    return red, _half_sweep(black, red, shared[1])


def _loop(count, body, state, unroll):
    """``state = body(state)`` ``count`` times: a ``tf.while_loop``, or Python's (``unroll``)."""
    if unroll:
        for _ in range(count):
            state = body(state)
        return state
    return tf.while_loop(lambda i, x: i < count, lambda i, x: (i + 1, body(x)), (0, state),
                         back_prop=False)[1]


def _halve(x):
    """``[B, H, W, C]`` at half the size: 2x2 means (an odd last row or column repeated;
    a concat and a slice rather than a symmetric pad, which ONNX lacks).

    Not the pyramid's :func:`~vidcorr.readout.kernel.resample.area_downscale`: that one
    resamples to a given size by Pillow's rule, so an odd side ``n`` goes to ``ceil(n / 2)``
    at a ratio ``n / ceil(n / 2)`` below 2, and the scales' geometry (coarse ``x_c`` at fine
    ``2 x_c + 0.5``) would hold nowhere but the first pixel; one pooling op does the exact
    2:1 halving, where the box filter gathers 8 times.
    """
    even = (tf.shape(x)[1:3] + 1) // 2 * 2  # [2]: H and W rounded up to even
    x = tf.concat([x, x[:, -1:]], axis=1)[:, :even[0]]
    x = tf.concat([x, x[:, :, -1:]], axis=2)[:, :, :even[1]]
    return tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")


def _coarse_correction(image1, image3, base, u, settings, anchor, unroll):
    """The change of ``u`` [2, B, h, w] that refining it on the images at half their size
    (and coarser, ``settings.scales`` in all) makes, brought back to the fine grid.

    A coarse pixel ``j`` is the fine pixels ``2j, 2j + 1``, at fine ``x = 2 x_c + 0.5``.
    """
    flow = tf.transpose(u, [1, 2, 3, 0])  # [B, h, w, 2]
    coarse_u = tf.transpose(_halve(flow) / 2.0, [3, 0, 1, 2])  # [2, B, h/2, w/2]
    refined = _refine(_halve(image1), _halve(image3), (_halve(base) - 0.5) / 2.0, coarse_u,
                      settings, anchor, unroll)
    change = tf.transpose(refined - coarse_u, [1, 2, 3, 0])  # [B, h/2, w/2, 2]
    shape = tf.shape(flow)
    even = 2 * tf.shape(change)[1:3]
    change = tf.image.resize_bilinear(change, even, half_pixel_centers=True)
    return tf.transpose(2.0 * change[:, :shape[1], :shape[2]], [3, 0, 1, 2])


def _refine(image1, image3, base, u, settings, anchor, unroll):
    """``u`` [2, B, h, w] refined around ``base`` [B, h, w, 2] on images on the 0-255 scale,
    first (``settings.scales`` > 1) on the images halved, then at their own size."""
    rounds, iterations, sweeps, alpha, delta, gamma, scales, sampler = settings
    if scales > 1:
        u = u + _coarse_correction(image1, image3, base, u, settings._replace(scales=scales - 1),
                                   anchor, unroll)
    prepare, sample = frame_sampler(sampler)
    image1, image3 = prepare(image1), prepare(image3)  # once for all rounds
    shape = tf.shape(base)
    ones = tf.ones(shape[:3])  # [B, h, w]
    last_x = tf.concat([ones[:, :, 1:], 0 * ones[:, :, :1]], axis=2)  # 0 on the last column
    last_y = tf.concat([ones[:, 1:], 0 * ones[:, :1]], axis=1)  # 0 on the last row
    odd_columns = tf.cast(tf.range(shape[2]) % 2, tf.float32) * ones  # [B, h, w]
    for _ in range(rounds):
        flow = tf.transpose(u, [1, 2, 3, 0])  # [B, h, w, 2]
        q1, q3 = base - anchor * flow, base + (1.0 - anchor) * flow  # [B, h, w, 2]
        constraints = _constraints(sample(image1, q1[..., 0], q1[..., 1]),
                                   sample(image3, q3[..., 0], q3[..., 1]),
                                   _inside(q1, q3, tf.shape(image1)))

        def fixed_point(du, u=u, d=constraints):
            shared = _sor_system(u, _data_system(d, du, delta, gamma),
                                 _smoothness_weights(u + du, alpha, last_x, last_y),
                                 odd_columns)
            fields = _loop(sweeps, lambda x: _sor_sweep(x, shared), _pack(u + du), unroll)
            return _unpack(fields[0], fields[1], tf.shape(u)) - u

        u = u + _loop(iterations, fixed_point, tf.zeros_like(u), unroll)
    return u


def refine_field(image1, image3, p1, p3, settings, anchor=0.5, unroll=False):
    """Refines every pixel's positions in both frames on the frames themselves.

    Args:
      image1: ``[B, H, W, C]`` frame t, float in [0, 1].
      image3: ``[B, H, W, C]`` frame t+2.
      p1: ``[B, h, w, 2]`` float ``(x, y)`` positions in frame t, one per pixel of a grid
        (the middle frame's pixels), whose neighbours are the grid's; with
        ``settings.scales`` > 1 the grid must be the images' own pixels (``h, w = H, W``).
      p3: ``[B, h, w, 2]`` their positions in frame t+2.
      settings: a :class:`RefineSettings`.
      anchor: 0.5 holds each match's midpoint, 0 holds ``p1`` (see the module docstring).
      unroll: build the loops in Python (a graph for converters without nested loops,
        the ONNX export) instead of ``tf.while_loop``; the same result.

    Returns:
      ``(p1, p3, residual)``: refined ``[B, h, w, 2]`` positions, and ``[B, h, w]`` the
      photometric residual at them (the frames read by the same sampler), averaged over
      3x3 pixels (0-1 scale).
    """
    image1, image3 = image1 * SCALE, image3 * SCALE
    base = p1 + anchor * (p3 - p1)  # the held point, [B, h, w, 2]
    u = tf.transpose(p3 - p1, [3, 0, 1, 2])  # [2, B, h, w]: the components lead
    u = _refine(image1, image3, base, u, settings, anchor, unroll)
    u = tf.transpose(u, [1, 2, 3, 0])  # [B, h, w, 2]
    p1, p3 = base - anchor * u, base + (1.0 - anchor) * u
    prepare, sample = frame_sampler(settings.sampler)
    image1, image3 = prepare(image1), prepare(image3)
    diff = tf.reduce_mean(tf.abs(sample(image3, p3[..., 0], p3[..., 1]) -
                                 sample(image1, p1[..., 0], p1[..., 1])), axis=3, keepdims=True)
    residual = tf.nn.avg_pool(tf.pad(diff, [[0, 0], [1, 1], [1, 1], [0, 0]], "SYMMETRIC"),
                              [1, 3, 3, 1], [1, 1, 1, 1], "VALID")[..., 0] / SCALE
    return p1, p3, residual


def residual_confidence(residual, scale):
    """A confidence term in (0, 1] from the photometric residual: ``scale / (scale +
    residual)`` (1 where the frames agree exactly, 1/2 at a residual of ``scale``)."""
    residual = np.asarray(residual, np.float64)
    return scale / (scale + np.maximum(residual, 0.0))


class RefineGraph(object):
    """:func:`refine_field` for one image size, in its own session (built once).

    Args:
      height: image height (the positions' grid is the image's pixels).
      width: image width.
      options: a :class:`vidcorr.readout.options.MatchOptions` (its ``refine_*`` fields).
      device: TensorFlow device (default: GPU if any, else CPU).
      threads: intra-op threads (None: TensorFlow decides).
    """

    def __init__(self, height, width, options, device=None, threads=None):
        self.height, self.width = int(height), int(width)
        h, w = self.height, self.width
        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(device or default_device()):
            self.frames = tf.placeholder(tf.float32, [None, h, w, 6], "frames")  # [B, H, W, 6]
            self.positions = tf.placeholder(tf.float32, [None, h, w, 2, 2],
                                            "positions")  # [B, H, W, frame, (x, y)]
            p1, p3, residual = refine_field(
                self.frames[..., :3], self.frames[..., 3:], self.positions[..., 0, :],
                self.positions[..., 1, :], RefineSettings.from_options(options))
            self.outputs = {"position": tf.stack([p1, p3], axis=3), "residual": residual}
            self.sess = tf.Session(graph=self.graph, config=session_config(threads))
        self.graph.finalize()

    def run(self, frame_t, frame_t2, position):
        """Refined positions of one pair.

        Args:
          frame_t: ``[H, W, 3]`` float in [0, 1].
          frame_t2: ``[H, W, 3]``.
          position: ``[H, W, 2, 2]`` each pixel's ``(x, y)`` in frame t and frame t+2.

        Returns:
          ``{"position": [H, W, 2, 2], "residual": [H, W]}`` numpy arrays.
        """
        feed = {self.frames: np.concatenate([frame_t, frame_t2], -1)[None].astype(np.float32),
                self.positions: np.asarray(position, np.float32)[None]}
        out = self.sess.run(self.outputs, feed)
        return {k: v[0] for k, v in out.items()}

    def close(self):
        """Releases the session."""
        if self.sess is not None:
            self.sess.close()
            self.sess = None
