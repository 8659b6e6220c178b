"""The texture term in the graph (vidcorr.readout.kernel.texture) against the numpy one
(vidcorr.readout.confidence), which is checked against numpy's eigenvalues."""

import numpy as np

from vidcorr.compat import tf
from vidcorr.readout.confidence import texture_map as texture_map_numpy
from vidcorr.readout.kernel.texture import texture_at, texture_map


def test_texture_map_equals_numpy(sess, rng):
    images = rng.rand(2, 23, 31, 3).astype(np.float32)
    images[1, :, :15] = 0.5  # a flat part: no texture
    got = sess.run(texture_map(tf.constant(images)))
    for b in range(2):
        # float32 against float64: a structure tensor's tiny eigenvalues are divided by
        # TEXTURE_SCALE (~1e-6), so near zero the two differ by up to a few 1e-5
        np.testing.assert_allclose(got[b], texture_map_numpy(images[b]), atol=1e-4)
    assert got[1, 4:-4, :10].max() < 1e-6


def test_texture_at_reads_the_nearest_pixel_clamped(sess):
    texture = np.arange(4 * 5, dtype=np.float32).reshape(1, 4, 5)
    xy = np.array([[[[1.4, 2.6], [2.5, 0.0], [-3.0, 9.0], [4.6, 1.5]]]], np.float32)
    got = sess.run(texture_at(tf.constant(texture), tf.constant(xy)))[0, 0]
    # (1, 3), (2 round-half-even, 0), clamped (0, 3), clamped (4, 2 round-half-even)
    np.testing.assert_array_equal(got, texture[0, [3, 0, 3, 2], [1, 2, 0, 4]])
