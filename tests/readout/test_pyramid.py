"""Coarse-to-fine pieces against numpy and closed forms, and the pyramid on a large motion."""

import os

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.readout.pyramid import grid_points
from vidcorr.readout.matching import Matcher
from vidcorr.readout.pyramid import build_pyramid, densify, levels_that_fit, sample_field, \
    upsample_exact, upsample_field, upsampled_size, warp
from vidcorr.io.video import read_image

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
MODEL_TOLERANCE = 2.0  # px; the packaged model's median error on this pair measured 0.92 px
# (r48, the default before it: 0.86 px; r28 1.42 px)


def test_warp_by_a_whole_pixel_field_is_a_shift(rng):
    image = rng.rand(20, 30, 3).astype(np.float32)
    field = np.zeros((20, 30, 2), np.float32)
    field[..., 0], field[..., 1] = 3, -2  # out(y, x) = image(y - 2, x + 3)
    out = warp(image, field)
    np.testing.assert_allclose(out[2:, :-3], image[:-2, 3:], atol=1e-6)


def test_warp_is_bilinear_between_pixels(rng):
    image = rng.rand(12, 16, 2).astype(np.float32)
    field = rng.uniform(-2, 2, (12, 16, 2)).astype(np.float32)
    out = warp(image, field)
    for y, x in [(5, 7), (3, 3), (8, 12)]:
        sx, sy = x + field[y, x, 0], y + field[y, x, 1]
        x0, y0 = int(np.floor(sx)), int(np.floor(sy))
        fx, fy = sx - x0, sy - y0
        ref = ((1 - fy) * (1 - fx) * image[y0, x0] + (1 - fy) * fx * image[y0, x0 + 1] +
               fy * (1 - fx) * image[y0 + 1, x0] + fy * fx * image[y0 + 1, x0 + 1])
        np.testing.assert_allclose(out[y, x], ref, atol=1e-5)


def test_a_peak_maps_back_through_the_warp(rng):
    """Content at q in the warped frame sits at q + field(q) in the original."""
    image = rng.rand(24, 32, 1).astype(np.float32)
    yy, xx = np.mgrid[0:24, 0:32]
    field = np.stack([0.1 * xx + 1.0, -0.05 * yy + 2.0], axis=-1).astype(np.float32)  # linear
    out = warp(image, field)
    q = np.array([[4.0, 6.0], [10.0, 3.0], [20.0, 15.0]])  # (x, y), whole pixels
    back = q + sample_field(field, q)  # where the original holds what the warp shows at q
    for (qx, qy), (px, py) in zip(q.astype(int), back):
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        fx, fy = px - x0, py - y0
        ref = ((1 - fy) * (1 - fx) * image[y0, x0] + (1 - fy) * fx * image[y0, x0 + 1] +
               fy * (1 - fx) * image[y0 + 1, x0] + fy * fx * image[y0 + 1, x0 + 1])
        np.testing.assert_allclose(out[qy, qx], ref, atol=1e-5)
    # bilinear sampling is exact for a linear field, also between pixels
    xy = np.array([[3.25, 7.5], [30.9, 0.1]])
    np.testing.assert_allclose(sample_field(field, xy),
                               np.stack([0.1 * xy[:, 0] + 1.0, -0.05 * xy[:, 1] + 2.0], 1),
                               atol=1e-6)


def test_upsampled_field_doubles_displacements():
    field = np.zeros((8, 12, 2), np.float32)
    field[..., 0], field[..., 1] = 1.5, -0.75
    up = upsample_field(field, 16, 24)
    assert up.shape == (16, 24, 2)
    np.testing.assert_allclose(up[..., 0], 3.0, atol=1e-6)
    np.testing.assert_allclose(up[..., 1], -1.5, atol=1e-6)


def test_pyramid_sizes_and_box_average(rng):
    image = rng.rand(37, 50, 3).astype(np.float32)
    pyr = build_pyramid(image, 3)
    assert [p.shape for p in pyr] == [(37, 50, 3), (18, 25, 3), (9, 12, 3)]
    even = rng.rand(8, 8, 3).astype(np.float32)
    half = build_pyramid(even, 2)[1]
    np.testing.assert_allclose(half, even.reshape(4, 2, 4, 2, 3).mean(axis=(1, 3)), atol=1e-5)
    assert levels_that_fit(128, 384, 5, 32) == 3 and levels_that_fit(40, 400, 3, 32) == 1


def test_densify_matches_normalised_convolution():
    """Two weighted points, no median: d(x) = sum c_i G u_i / sum c_i G (closed form)."""
    points = np.array([[4, 4], [12, 4]])
    u = np.array([[2.0, 0.0], [-1.0, 3.0]])
    c = np.array([0.8, 0.2])
    field = densify(points, u, c, 10, 18, stride=8, sigma=3.0, median=False)
    for y, x in [(4, 4), (4, 8), (7, 10), (0, 17)]:
        g = np.exp(-((x - points[:, 0]) ** 2 + (y - points[:, 1]) ** 2) / (2 * 9.0))
        w = (c + 1e-3) * g
        np.testing.assert_allclose(field[y, x], (w[:, None] * u).sum(0) / w.sum(), atol=2e-3)


def test_densify_median_removes_an_isolated_outlier():
    points = grid_points(40, 40, 8)
    u = np.tile([1.0, -2.0], (len(points), 1))
    u[12] = [30.0, 30.0]  # one wrong peak inside the grid
    field = densify(points, u, np.ones(len(points)), 40, 40, stride=8)
    np.testing.assert_allclose(field[..., 0], 1.0, atol=1e-5)
    np.testing.assert_allclose(field[..., 1], -2.0, atol=1e-5)


def test_matcher_rejects_bad_levels():
    with pytest.raises(UserError, match="levels"):
        Matcher(levels=0)
    with pytest.raises(UserError, match="upsample must be one of 1, 2, 4, got 3"):
        Matcher(upsample=3)


def test_upsample_exact_keeps_pixels_on_the_fine_grid(rng):
    """Pixel (x, y) lands on (s x, s y); bilinear is exact on a linear ramp; cubic stays in
    the image's range."""
    image = rng.rand(6, 9, 3).astype(np.float32)
    for s in (2, 4):
        up = upsample_exact(image, s)
        assert up.shape == upsampled_size(6, 9, s) + (3,) == (5 * s + 1, 8 * s + 1, 3)
        np.testing.assert_allclose(up[::s, ::s], image, atol=1e-5)
        assert up.min() >= image.min() and up.max() <= image.max()
    yy, xx = np.mgrid[:6, :9].astype(np.float32)
    ramp = np.stack([2 * xx - yy, xx + 3 * yy], -1)  # a linear field
    fine = upsample_exact(ramp, 2, order=1)
    fy, fx = np.mgrid[:11, :17] / 2.0
    np.testing.assert_allclose(fine, np.stack([2 * fx - fy, fx + 3 * fy], -1), atol=1e-5)


class _BlockMatcher(object):
    """A stand-in for a sensitivity graph with the network's reach: for each grid point p
    it finds the symmetric offset o (|o| <= REACH per axis) whose 5x5 patches a(p + o)
    and b(p - o) agree best, and reports peaks p + o in frame t and p - o in frame t+2."""

    REACH = 4

    def set_images(self, a, b):
        pad = self.REACH + 2
        self.a = np.pad(a, [(pad, pad), (pad, pad), (0, 0)], mode="edge")
        self.b = np.pad(b, [(pad, pad), (pad, pad), (0, 0)], mode="edge")

    def run(self, grid, progress=False, desc=""):
        r, pad = self.REACH, self.REACH + 2
        peaks = []
        for x, y in grid:
            best = None
            for oy in range(-r, r + 1):
                for ox in range(-r, r + 1):
                    pa = self.a[pad + y + oy - 2:pad + y + oy + 3, pad + x + ox - 2:pad + x + ox + 3]
                    pb = self.b[pad + y - oy - 2:pad + y - oy + 3, pad + x - ox - 2:pad + x - ox + 3]
                    cost = np.sum((pa - pb) ** 2)
                    if best is None or cost < best[0]:
                        best = (cost, ox, oy)
            peaks.append([[x + best[1], y + best[2]], [x - best[1], y - best[2]]])
        n = len(grid)
        return {"peak_xy": np.array(peaks), "patch": np.ones((n, 2, 9)),
                "peak": np.ones((n, 2)), "second": np.zeros((n, 2))}


def test_the_default_depth_grows_with_the_image_so_the_coarsest_level_stays_small():
    from vidcorr.readout.pyramid import levels_for_size, pyramid_levels
    # 3 levels up to 384 pixels: the coarsest at most 96; then one more per doubling
    assert [levels_for_size(h, w) for h, w in ((32, 96), (288, 384), (259, 384), (480, 640),
                                               (500, 741), (720, 1280), (385, 200))] == \
        [3, 3, 3, 4, 4, 5, 4]
    for h, w in ((480, 640), (500, 741), (720, 1280), (1080, 1920)):
        n = levels_for_size(h, w)
        assert max(h, w) / 2 ** (n - 1) <= 96 < max(h, w) / 2 ** (n - 2)
    # an explicit depth is kept; no level below the network's minimum either way
    assert pyramid_levels(720, 1280, 2) == 2
    assert pyramid_levels(40, 400) == 1 and pyramid_levels(128, 384) == 3


