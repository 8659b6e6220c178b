"""Coarse-to-fine read-out: image pyramids, dense fields from sparse matches, warping.

The adaptive-kernel network sees at most ``K // 2`` pixels per frame step, so
one read-out cannot find larger motion. :meth:`vidcorr.Matcher.match` with
``levels=N`` reads out at the coarsest level of an N-level pyramid (each level
half the size of the one below), where the motion fits; turns those matches
into dense displacement fields (:func:`densify`); warps frame t and frame t+2
toward the middle frame at the next finer level by them (:func:`warp`), reads
out the residual there, and maps each peak back through the warp
(:func:`sample_field`). Either read-out (the exact sensitivity or the blend
weights, :mod:`vidcorr.readout.options`) works at every level; the pyramid only
decides where the network looks. :func:`read_out_plan` lists the levels, for the
matcher that runs them and the budget that prices them.

Above the network's size, ``upsample=S`` (2 or 4) adds one finer level: the
pair and the finest fields are resampled S times with the original pixels on
the fine grid (pixel ``p`` at ``S p``, :func:`upsample_exact`), the residual is
read out at ``S p`` and divided by S. The network's peaks are whole pixels of
the image it sees, and motion under about a pixel per frame step falls into a
dead zone of the read-out (Grove3: motion of 1-2 pixels between the frames was
read as about half of it); at S times the size both shrink S times.

Fields are ``[H, W, 2]`` arrays of ``(dx, dy)`` in pixels: for a middle-frame
pixel p, frame t's content is at ``p + d1(p)`` and frame t+2's at ``p + d3(p)``.

Densification is confidence-weighted normalised convolution: a 3x3 median over
the grid first removes isolated wrong peaks (a single bad match would otherwise
move a whole neighbourhood), then

    d(x) = sum_i c_i G(x - g_i) u_i / sum_i c_i G(x - g_i),

with G a Gaussian of ``sigma`` pixels, grid points g_i, displacements u_i and
confidences c_i. It is smooth, exact for a constant field, and lets confident
matches outvote weak ones nearby; an edge-aware alternative (e.g. DIS's
variational refinement) would keep motion boundaries sharper at a higher cost.
"""

import collections

import numpy as np
from scipy import ndimage

from vidcorr.errors import UserError
from vidcorr.io.video import resize_float, to_rgb_float

__all__ = ["MIN_SIZE", "Level", "read_pair", "read_out_plan", "grid_points", "MAX_COARSE_STRIDE",
           "build_pyramid", "densify", "warp", "sample_field", "upsample_field",
           "upsample_exact", "upsampled_size", "levels_that_fit", "levels_for_size",
           "pyramid_levels", "DEFAULT_LEVELS", "DEFAULT_STRIDE", "COARSEST_SIDE", "UPSAMPLES"]

DEFAULT_LEVELS = 3  # motion up to about 4 times the kernel's reach (docs/matching.md)
COARSEST_SIDE = 96  # by default, levels are added until the coarsest's longer side is <= this
UPSAMPLES = (1, 2, 4)  # the read-out's optional finer level (1: none)
MIN_CONFIDENCE_WEIGHT = 1e-3  # so a grid of zero confidences still gives a field
MIN_SIZE = 32  # the smallest image side the network takes
MAX_COARSE_STRIDE = 8  # coarse levels read out at least this densely (their fields need it)
DEFAULT_STRIDE = 4  # the grid of middle-frame points matched, unless the caller says

Level = collections.namedtuple("Level", ["index", "height", "width", "step", "points", "scale"])
Level.__doc__ = """One level of a read-out: ``index`` in the pyramid (0 the finest; the finer
read-out's level has index 0 too), its image size, the grid step in its own pixels, its number
of grid points and its ``scale`` against the input (``2^-index``, or ``upsample``)."""


def read_pair(frame_t, frame_t2):
    """A pair as the read-out takes it: two ``[H, W, 3]`` float images of one size.

    Args:
      frame_t, frame_t2: paths or arrays (:func:`vidcorr.io.video.to_rgb_float`).

    Returns:
      ``(a, b)``, float32 in [0, 1].

    Raises:
      UserError: for unreadable images, sizes that differ, or a side under ``MIN_SIZE``.
    """
    a, b = to_rgb_float(frame_t, "frame_t"), to_rgb_float(frame_t2, "frame_t2")
    if a.shape != b.shape:
        raise UserError("the two images differ in size: %dx%d and %dx%d"
                        % (a.shape[1], a.shape[0], b.shape[1], b.shape[0]))
    h, w = a.shape[:2]
    if min(h, w) < MIN_SIZE:
        raise UserError("images must be at least %d pixels on each side, got %dx%d"
                        % (MIN_SIZE, w, h))
    return a, b


def grid_points(height, width, stride, offset=0):
    """Grid points ``(x, y)`` of the middle frame, row-major, as an ``[N, 2]`` int array.

    Raises:
      UserError: for ``stride < 1`` or an offset outside ``[0, stride)``.
    """
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) and not (
            isinstance(stride, float) and stride.is_integer()) or stride < 1:
        raise UserError("stride must be an integer >= 1, got %r" % (stride,))
    if isinstance(offset, bool) or not 0 <= offset < max(stride, 1) or int(offset) != offset:
        raise UserError("offset must be an integer in [0, stride), got %r" % (offset,))
    ys, xs = np.meshgrid(np.arange(offset, height, stride), np.arange(offset, width, stride),
                         indexing="ij")
    return np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.int64)



def _grid_count(height, width, step):
    return len(range(0, height, step)) * len(range(0, width, step))


def read_out_plan(height, width, levels, stride, upsample=1):
    """The levels a coarse-to-fine read-out visits, coarsest first: the one plan the matcher
    runs and the budget prices.

    Args:
      height: image height at the network.
      width: image width.
      levels: pyramid levels actually used (:func:`levels_that_fit`).
      stride: the grid stride at full size; coarse levels use it in their own pixels, at
        most ``MAX_COARSE_STRIDE``.
      upsample: the finer read-out's factor (1: none); its level reads the full-size grid
        on the pair resampled to :func:`upsampled_size`.

    Returns:
      A list of :class:`Level`.
    """
    plan = []
    for index in range(levels - 1, -1, -1):
        h, w = height // 2 ** index, width // 2 ** index  # build_pyramid's sizes
        step = stride if index == 0 else min(stride, MAX_COARSE_STRIDE)
        plan.append(Level(index, h, w, step, _grid_count(h, w, step), 0.5 ** index))
    if upsample > 1:
        h, w = upsampled_size(height, width, upsample)
        plan.append(Level(0, h, w, stride * upsample, _grid_count(height, width, stride),
                          float(upsample)))
    return plan




def levels_for_size(height, width):
    """The default pyramid depth of an image: ``DEFAULT_LEVELS``, and one more each time
    the longer side doubles past ``COARSEST_SIDE * 2^(DEFAULT_LEVELS - 1)`` (384), so the
    coarsest level, where the largest motion is found, covers the same share of the image
    at any size (motion in pixels grows with the image; the kernel's reach does not)."""
    levels, longer = DEFAULT_LEVELS, max(height, width)
    while longer / 2.0 ** (levels - 1) > COARSEST_SIDE:
        levels += 1
    return levels


def pyramid_levels(height, width, levels=None):
    """The levels a read-out of an image uses: ``levels`` (None: :func:`levels_for_size`),
    fewer where the coarsest would be under ``MIN_SIZE`` (:func:`levels_that_fit`)."""
    if levels is None:
        levels = levels_for_size(height, width)
    return levels_that_fit(height, width, levels, MIN_SIZE)


def levels_that_fit(height, width, levels, min_size):
    """The number of levels (at most ``levels``) whose coarsest image is >= ``min_size``."""
    n = 1
    while n < levels and min(height, width) // 2 ** n >= min_size:
        n += 1
    return n


def build_pyramid(image, levels):
    """``[image, half, quarter, ...]``: ``levels`` images, each box-downscaled by 2.

    Sizes are rounded down; a level's size is ``(H // 2^l, W // 2^l)``.
    """
    pyramid = [np.asarray(image, np.float32)]
    h, w = pyramid[0].shape[:2]
    for level in range(1, levels):
        pyramid.append(resize_float(pyramid[0], h // 2 ** level, w // 2 ** level, method="box"))
    return pyramid


def _bilinear(field, x, y):
    """Samples ``[H, W, C]`` at float ``x``, ``y`` (``[N]``), clamped to the border."""
    h, w = field.shape[:2]
    x, y = np.clip(x, 0, w - 1), np.clip(y, 0, h - 1)
    x0, y0 = np.minimum(np.floor(x).astype(int), w - 2 if w > 1 else 0), \
        np.minimum(np.floor(y).astype(int), h - 2 if h > 1 else 0)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    return ((1 - fy) * ((1 - fx) * field[y0, x0] + fx * field[y0, x1]) +
            fy * ((1 - fx) * field[y1, x0] + fx * field[y1, x1]))


def sample_field(field, xy):
    """The field's ``(dx, dy)`` at float positions ``xy [N, 2]`` (bilinear): ``[N, 2]``."""
    xy = np.asarray(xy, np.float64)
    return _bilinear(np.asarray(field, np.float64), xy[:, 0], xy[:, 1])


def warp(image, field):
    """``out(p) = image(p + field(p))``, bilinear, the border repeated: ``[H, W, C]`` float32."""
    h, w = image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    coords = [ys + field[..., 1], xs + field[..., 0]]
    return np.stack([ndimage.map_coordinates(image[..., c].astype(np.float64), coords, order=1,
                                             mode="nearest")
                     for c in range(image.shape[2])], axis=-1).astype(np.float32)


def upsample_field(field, height, width):
    """A field at the next finer size: bilinear, displacements scaled with the size."""
    h, w = field.shape[:2]
    sx, sy = width / float(w), height / float(h)
    ys = (np.arange(height) + 0.5) / sy - 0.5
    xs = (np.arange(width) + 0.5) / sx - 0.5
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    out = _bilinear(np.asarray(field, np.float64), xx.ravel(), yy.ravel()).reshape(
        height, width, 2)
    return (out * [sx, sy]).astype(np.float32)


def upsampled_size(height, width, factor):
    """The size of :func:`upsample_exact`'s result: ``factor (n - 1) + 1`` a side."""
    return factor * (height - 1) + 1, factor * (width - 1) + 1


def upsample_exact(image, factor, order=3):
    """``[H, W, C]`` resampled so that pixel ``(x, y)`` lands on ``(factor x, factor y)``.

    A cubic spline (``order`` 3; 1 is bilinear) through the pixel centres,
    size :func:`upsampled_size`; images stay within their original range.
    """
    image = np.asarray(image, np.float32)
    h, w = image.shape[:2]
    nh, nw = upsampled_size(h, w, factor)
    zoom = (nh / float(h), nw / float(w)) + (1,) * (image.ndim - 2)
    out = ndimage.zoom(image, zoom, order=order, mode="nearest", grid_mode=False)
    assert out.shape[:2] == (nh, nw), out.shape
    return np.clip(out, image.min(), image.max()) if order > 1 else out


def densify(points, displacements, confidence, height, width, stride, sigma=None,
            median=True):
    """A dense ``[H, W, 2]`` field from matches on a regular grid.

    Args:
      points: ``[N, 2]`` int ``(x, y)`` grid points (row-major, spacing ``stride``).
      displacements: ``[N, 2]`` float ``(dx, dy)`` at those points.
      confidence: ``[N]`` weights >= 0.
      height: field height.
      width: field width.
      stride: the grid spacing.
      sigma: Gaussian width in pixels (default: ``stride``).
      median: apply a 3x3 median over the grid before interpolating.

    Returns:
      ``[height, width, 2]`` float32.
    """
    points = np.asarray(points, int)
    u = np.asarray(displacements, np.float64)
    c = np.maximum(np.asarray(confidence, np.float64), 0) + MIN_CONFIDENCE_WEIGHT
    if median:
        gy, gx = points[:, 1] // stride, points[:, 0] // stride
        grid = np.full((gy.max() + 1, gx.max() + 1, 2), np.nan)
        grid[gy, gx] = u
        for k in range(2):
            padded = np.pad(grid[..., k], 1, mode="edge")
            windows = np.stack([padded[dy:dy + grid.shape[0], dx:dx + grid.shape[1]]
                                for dy in range(3) for dx in range(3)])
            grid[..., k] = np.nanmedian(windows, axis=0)
        u = grid[gy, gx]
    sigma = float(sigma or stride)
    num = np.zeros((height, width, 2))
    den = np.zeros((height, width))
    np.add.at(num, (points[:, 1], points[:, 0]), c[:, None] * u)
    np.add.at(den, (points[:, 1], points[:, 0]), c)
    num = np.stack([ndimage.gaussian_filter(num[..., k], sigma, mode="constant", truncate=6.0)
                    for k in range(2)], axis=-1)
    den = ndimage.gaussian_filter(den, sigma, mode="constant", truncate=6.0)
    fallback = (c[:, None] * u).sum(axis=0) / c.sum()  # far from every point: the mean
    tiny = den < 1e-8 * c.max()
    field = np.where(tiny[..., None], fallback, num / np.where(tiny, 1.0, den)[..., None])
    return field.astype(np.float32)
