"""Match pictures and flow colours (vidcorr.io.visualize)."""

import colorsys

import numpy as np
import pytest
from PIL import Image

from vidcorr.io.visualize import direction_color, flow_to_color, match_picture
from vidcorr.readout.matching import Matches


def test_direction_colours_follow_the_hsv_wheel():
    # hue = angle of (-dx, -dy) / 2 pi: motion to the left (-1, 0) is hue 0 (red)
    assert direction_color(-1, 0) == (255, 0, 0)
    assert direction_color(1, 0) == (0, 255, 255)  # right: hue 0.5, cyan
    assert direction_color(0, 1, magnitude=0.0) == (255, 255, 255)  # no saturation: white
    r, g, b = (v / 255.0 for v in direction_color(0, -1))  # up: hue 0.25
    assert abs(colorsys.rgb_to_hsv(r, g, b)[0] - 0.25) < 0.01


def test_flow_colours():
    flow = np.array([[[-2.0, 0.0], [0.0, 0.0]], [[np.nan, 1.0], [1.0, 0.0]]], np.float32)
    rgb = flow_to_color(flow, max_magnitude=2.0)
    assert rgb.dtype == np.uint8 and rgb.shape == (2, 2, 3)
    assert tuple(rgb[1, 0]) == (0, 0, 0)  # NaN: black
    assert tuple(rgb[0, 1]) == (255, 255, 255)  # zero flow: white
    assert rgb[0, 0, 0] == 255 and rgb[0, 0, 1] < 5 and rgb[0, 0, 2] < 5  # full speed left: red
    assert rgb[1, 1, 0] < 140 < rgb[1, 1, 1]  # half speed right: pale cyan


def test_match_picture_layout(tmp_path):
    h, w = 24, 32
    a = np.zeros((h, w, 3), np.float32)
    b = np.ones((h, w, 3), np.float32)
    grid = np.array([[8, 8], [16, 8]])
    m = Matches(grid, grid - [2, 0], grid + [2, 0], np.ones((2, 2)), np.array([1.0, 0.0]),
                np.array([True, False]), (h, w))
    path = str(tmp_path / "p.png")
    assert match_picture(a, b, m, path) == (2 * w, 2 * h)
    img = np.asarray(Image.open(path))
    assert img.shape == (2 * h, 2 * w, 3)
    np.testing.assert_array_equal(img[h + 12:, :w], 255)  # frame t+2 away from the match
    np.testing.assert_array_equal(img[12:h, 16:w], 0)  # frame t beside the line
    assert tuple(img[8, 6]) != (0, 0, 0)  # the valid match's end in frame t is drawn
    assert tuple(img[8, 14]) == (0, 0, 0)  # the invalid one is not
    np.testing.assert_array_equal(img[h:, w:], 127)  # the frame average
    assert (img[:h, w:] == 0).all(axis=-1).mean() > 0.8  # flow: black except the valid cell
    from vidcorr.io.visualize import matches_image
    np.testing.assert_array_equal(matches_image(a, b, m), img)  # the same picture, as an array


def test_flow_wheel_has_the_middlebury_colours():
    from vidcorr.io.visualize import flow_wheel
    flow = np.array([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [np.nan, 0.0], [2.0, 0.0]]])
    got = flow_wheel(flow, max_magnitude=1.0)[0]
    # white at rest; right red; down between the wheel's steps 13 and 14 of red to yellow
    # (255, 255 * 13.5 / 15, 0); no flow black; twice the maximum: red darkened by a quarter
    np.testing.assert_array_equal(got, [[255, 255, 255], [255, 0, 0], [255, 229, 0], [0, 0, 0],
                                        [191, 0, 0]])
    left = flow_wheel(np.array([[[-1.0, 0.0]]]), 1.0)[0, 0]  # step 27: cyan to blue
    np.testing.assert_array_equal(left, [0, int(255 - 255 * 2 / 11.0), 255])


def test_sensitivity_weights_and_track_pictures():
    from vidcorr.apps.track import Tracks
    from vidcorr.io.visualize import sensitivity_image, tracks_image, weights_image
    frame = np.full((8, 10, 3), 100, np.uint8)
    sens = np.zeros((8, 10))
    sens[3, 4] = 2.0
    img = sensitivity_image(frame, sens, alpha=0.5)
    np.testing.assert_array_equal(img[0, 0], [100, 100, 100])  # no sensitivity: the grey frame
    np.testing.assert_array_equal(img[3, 4], [178, 178, 50])  # half grey, half yellow
    weights = np.zeros((2, 3, 3))
    weights[0, 1, 1], weights[1, 0, 2] = 0.5, 0.25
    w = weights_image(weights, scale=4)
    assert w.shape == (12, 26, 3)
    np.testing.assert_array_equal(w[5, 5], [255, 255, 255])  # frame t's centre tap, the largest
    np.testing.assert_array_equal(w[1, 14 + 9], [128, 128, 128])  # frame t+2's top-right tap
    np.testing.assert_array_equal(w[0, 12], [255, 0, 0])  # the rule
    tracks = Tracks(np.array([[[2.0, 2.0], [6.0, 5.0]]]), np.array([[True, True]]),
                    np.ones((1, 2)), np.array([[0, 2.0, 2.0]]), np.array([0, 1]))
    drawn = tracks_image(np.zeros((8, 10, 3), np.uint8), tracks)
    assert drawn[5, 6].any() and drawn[4, 4].any() and not drawn[0, 9].any()


def test_show_makes_a_figure_or_says_what_is_missing():
    from vidcorr.errors import UserError
    from vidcorr.io.visualize import show
    images = [np.zeros((4, 6, 3), np.uint8)] * 3
    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        with pytest.raises(UserError, match="pip install matplotlib"):
            show(images)
        return
    figure = show(images, titles=["a", "b", "c"], columns=2)
    assert len(figure.axes) == 4 and figure.axes[0].get_title() == "a"
