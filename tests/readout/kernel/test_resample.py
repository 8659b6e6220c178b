"""The pyramid's resampling in the graph (vidcorr.readout.kernel.resample) against Pillow and
scipy, the references the numpy pyramid uses."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.io.video import resize_float
from vidcorr.readout.kernel.resample import area_downscale, upsample_exact, upsample_fields
from vidcorr.readout.pyramid import upsample_exact as upsample_exact_numpy


@pytest.mark.parametrize("size,level", [((37, 53), 1), ((64, 96), 2), ((71, 45), 3)])
def test_area_downscale_equals_pillow_box(sess, rng, size, level):
    image = rng.rand(*size, 3).astype(np.float32)
    h, w = size[0] // 2 ** level, size[1] // 2 ** level
    got = sess.run(area_downscale(tf.constant(image[None]), h, w, 2 ** level))[0]
    np.testing.assert_allclose(got, resize_float(image, h, w, method="box"), atol=2e-6)


def test_upsample_exact_keeps_the_pixels_and_is_bilinear_for_fields(sess, rng):
    image = rng.rand(9, 13, 2).astype(np.float32)
    for factor in (2, 4):
        fine = sess.run(upsample_exact(tf.constant(image[None]), factor, cubic=False))[0]
        np.testing.assert_allclose(fine[::factor, ::factor], image, atol=1e-6)
        np.testing.assert_allclose(fine, upsample_exact_numpy(image, factor, order=1), atol=1e-5)
        cubic = sess.run(upsample_exact(tf.constant(image[None]), factor))[0]
        np.testing.assert_allclose(cubic[::factor, ::factor], image, atol=1e-6)
        assert cubic.min() >= image.min() - 1e-6 and cubic.max() <= image.max() + 1e-6


def test_upsampled_fields_scale_a_linear_field_exactly(sess):
    # a linear motion field d(x, y) = (a x + b, c y) is linear in the pixel centres: bilinear
    # upsampling through them reproduces it, displacements scaled by the size's ratio
    h, w, H, W = 6, 8, 12, 16
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    field = np.stack([0.3 * xs + 1.0, -0.2 * ys], axis=-1)  # [h, w, 2]
    fields = np.stack([field, 2 * field], axis=2)[None]  # [1, h, w, 2, 2]
    got = sess.run(upsample_fields(tf.constant(fields), H, W))[0]  # [H, W, 2, 2]
    Y, X = np.mgrid[0:H, 0:W].astype(np.float32)
    cx, cy = (X + 0.5) * w / W - 0.5, (Y + 0.5) * h / H - 0.5  # coarse coordinates
    inside = (cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1)
    expected = np.stack([(0.3 * cx + 1.0) * W / w, -0.2 * cy * H / h], axis=-1)
    np.testing.assert_allclose(got[inside][:, 0], expected[inside], atol=1e-4)
    np.testing.assert_allclose(got[inside][:, 1], 2 * expected[inside], atol=1e-4)


@pytest.mark.parametrize("height, width, scale", [(11, 15, 1), (11, 15, 2), (12, 16, 2)])
def test_fields_read_out_at_every_other_pixel_upsample_a_linear_field_exactly(sess, height,
                                                                              width, scale):
    # a level of height x width read out at pixels 2 (i, j) only (a pass's hand-on): the
    # linear field read there, upsampled to the same level (scale 1: the next pass) or the
    # next (scale 2), is the field at every pixel inside the samples, scaled
    ys, xs = np.mgrid[0:height:2, 0:width:2].astype(np.float32)  # the samples' level pixels
    field = np.stack([0.3 * xs + 1.0, -0.2 * ys + 0.1 * xs], axis=-1)  # [h, w, 2]
    fields = np.stack([field, -field], axis=2)[None]  # [1, ceil(H / 2), ceil(W / 2), 2, 2]
    H, W = scale * height, scale * width
    got = sess.run(upsample_fields(tf.constant(fields), H, W, (height, width), 2))[0]
    assert got.shape == (H, W, 2, 2)
    Y, X = np.mgrid[0:H, 0:W].astype(np.float32)
    cx, cy = (X + 0.5) / scale - 0.5, (Y + 0.5) / scale - 0.5  # the level's coordinates
    inside = (cx >= 0) & (cx <= xs.max()) & (cy >= 0) & (cy <= ys.max())
    expected = scale * np.stack([0.3 * cx + 1.0, -0.2 * cy + 0.1 * cx], axis=-1)
    np.testing.assert_allclose(got[inside][:, 0], expected[inside], atol=1e-4)
    np.testing.assert_allclose(got[inside][:, 1], -expected[inside], atol=1e-4)
    assert inside.mean() > 0.7
