"""Tests of windowed cotangents (vidcorr.readout.sensitivity.windows) and the window fold, against numpy."""

import numpy as np

from vidcorr.compat import tf
from vidcorr.readout.sensitivity.windows import fold_window, reflect_fold
from vidcorr.readout.sensitivity.windows import Window, add_windows, dense, shift_rows


def _scatter(data, oy, ox, height, width):
    """numpy reference of Window.dense."""
    out = np.zeros((len(data), height, width, data.shape[-1]), data.dtype)
    for n in range(len(data)):
        for i in range(data.shape[1]):
            for j in range(data.shape[2]):
                y, x = oy[n] + i, ox[n] + j
                if 0 <= y < height and 0 <= x < width:
                    out[n, y, x] += data[n, i, j]
    return out


def _window(rng, anchors, size, reach, height, width, channels=2):
    """Windows of ``size`` around ``anchors`` with a random reach in its range, zero outside
    the image (the invariant of every window)."""
    r = rng.randint(reach[0], reach[1] + 1, size=(len(anchors), 2))
    oy, ox = anchors[:, 0] - r[:, 0], anchors[:, 1] - r[:, 1]
    data = rng.randn(len(anchors), size[0], size[1], channels).astype(np.float32)
    dense_ref = _scatter(data, oy, ox, height, width)
    for n in range(len(anchors)):  # zero outside the image
        rows, cols = oy[n] + np.arange(size[0]), ox[n] + np.arange(size[1])
        data[n] *= (((rows >= 0) & (rows < height))[:, None] &
                    ((cols >= 0) & (cols < width))[None, :])[..., None]
    win = Window(tf.constant(data), tf.constant(oy.astype(np.int32)),
                 tf.constant(ox.astype(np.int32)), height, width, 1, (reach, reach))
    return win, dense_ref


def test_shift_rows_places_and_drops(sess):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4, 1)
    got = sess.run(shift_rows(tf.constant(data), tf.constant([1, -2]), 5, 1))
    expected = np.zeros((2, 5, 4, 1), np.float32)
    expected[0, 1:4] = data[0]
    expected[1, 0:1] = data[1, 2:3]
    np.testing.assert_array_equal(got, expected)


def test_union_of_overlapping_windows_is_their_sum(sess):
    """A small and a large window around the same anchors (near the borders too), summed
    in their union, and a window larger than the image cropped to it."""
    rng = np.random.RandomState(0)
    height, width = 20, 30
    anchors = np.array([[0, 0], [19, 29], [10, 15], [3, 27], [18, 1]])
    small, small_ref = _window(rng, anchors, (3, 4), (1, 2), height, width)
    big, big_ref = _window(rng, anchors, (11, 13), (4, 7), height, width)
    union = add_windows([small, big])
    assert (union.h, union.w) == (11, 13)  # the big one always contains the small one
    np.testing.assert_allclose(sess.run(dense(union)), small_ref + big_ref, atol=1e-6)
    # Offset windows whose union is larger than either.
    left, left_ref = _window(rng, anchors, (5, 5), (0, 4), height, width)
    right, right_ref = _window(rng, anchors, (5, 9), (0, 1), height, width)
    union = add_windows([left, right])
    assert union.w < 5 + 9 and union.h == 9
    np.testing.assert_allclose(sess.run(dense(union)), left_ref + right_ref, atol=1e-6)
    huge, huge_ref = _window(rng, anchors, (25, 40), (12, 24), height, width)
    cropped = huge.crop()
    assert (cropped.h, cropped.w) == (height, width)
    np.testing.assert_allclose(sess.run(dense(cropped)), huge_ref, atol=1e-6)


def test_fold_window_equals_the_densereflect_fold(sess):
    """Folding a window of the padded input onto the pixels equals the dense fold
    (the 0/1 matrices of the padding), at the borders and in the middle."""
    rng = np.random.RandomState(1)
    height, width, padding = 21, 40, (5, 6, 3, 5)  # top, bottom, left, right
    hp, wp = height + padding[0] + padding[1], width + padding[2] + padding[3]
    anchors = np.array([[5, 3], [5 + 20, 3 + 39], [15, 20], [6, 42], [25, 4]])  # in the image
    win, ref = _window(rng, anchors, (9, 9), (4, 4), hp, wp)
    data, oy, ox = sess.run(fold_window(win, padding, height, width))
    got = _scatter(data, oy, ox, height, width)
    rows = reflect_fold(height, padding[0], padding[1])  # [H', H]
    cols = reflect_fold(width, padding[2], padding[3])
    expected = np.einsum("nhwc,hy,wx->nyxc", ref, rows, cols)
    np.testing.assert_allclose(got, expected, atol=1e-5)
