"""Match pictures and flow colours (vidcorr.io.visualize)."""

import colorsys

import numpy as np
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
