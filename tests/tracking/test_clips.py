"""Clips with known tracks: the truth agrees with the rendered frames."""

import numpy as np

from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion


def _clip():
    rng = np.random.RandomState(0)
    smooth = lambda a: np.kron(a, np.ones((4, 4, 1)))  # noqa: E731 (blocks: sampled exactly at centres)
    background = Layer(smooth(rng.uniform(size=(40, 50, 3))), LayerMotion(
        velocity=(1.25, 0.0), rotation=0.0), (32.0, 24.0), (40.0, 40.0))
    disc = Layer(np.full((20, 20, 3), 0.5), LayerMotion(velocity=(-2.0, 0.5)), (50.0, 24.0),
                 (-40.0, -14.0), ellipse=(50.0, 24.0, 8.0, 8.0))
    return LayeredClip([background, disc], 48, 64, 8, supersample=1)


def test_affine_motion_is_its_closed_form():
    m = LayerMotion(velocity=(1.0, -0.5), rotation=90.0, zoom=1.0, wobble=(2.0, 0.0), period=4)
    a, b = m.matrix(1)
    np.testing.assert_allclose(a, [[0, -2], [2, 0]], atol=1e-12)
    np.testing.assert_allclose(b, [3.0, -0.5], atol=1e-12)
    layer = Layer(np.zeros((4, 4, 3)), m, (1.0, 1.0))
    p = np.array([[3.0, 1.0], [0.5, 2.0]])
    np.testing.assert_allclose(layer.backward(layer.forward(p, 1.7), 1.7), p, atol=1e-12)


def test_a_visible_point_keeps_its_colour_and_a_covered_one_is_hidden():
    clip = _clip()
    queries = np.array([[0, 20.0, 10.0], [0, 30.0, 24.0], [0, 50.0, 24.0]])
    tracks, visible = clip.truth(queries)
    first = clip.frame(0)
    colour0 = first[10, 20].astype(int)
    for t in range(8):
        x, y = tracks[0, t]
        assert visible[0, t] == (0 <= x <= 63)
        if visible[0, t] and float(x).is_integer():  # on a pixel centre the render is exact
            np.testing.assert_allclose(clip.frame(t)[int(y), int(x)], colour0, atol=1)
    np.testing.assert_allclose(tracks[2, 3], [50.0 - 6.0, 25.5])  # the disc's own point
    assert visible[2].all()
    # the background point at (30, 24) moves right 1.25 / frame, the disc left 2 / frame
    expected = np.array([np.hypot(30 + 1.25 * t - (50 - 2 * t), 24 - (24 + 0.5 * t)) > 8.0
                         for t in range(8)])
    np.testing.assert_array_equal(visible[1], expected)
    assert not expected.all()
