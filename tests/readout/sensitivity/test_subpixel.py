"""The sensitivity peak's sub-pixel step (vidcorr.readout.sensitivity.subpixel) against closed forms."""

import os
import subprocess
import sys
import numpy as np
import pytest
from PIL import Image
from vidcorr.errors import UserError
from vidcorr.io.video import to_rgb_float
from vidcorr.readout.matching import Matcher, Matches
from vidcorr.readout.sensitivity.subpixel import centroid_peaks, refine_peaks
from vidcorr.training.synthetic import moving_triplet
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_refine_peaks_recovers_quadratic_vertex():
    yy, xx = np.mgrid[-1:2, -1:2]
    patch = -((xx - 0.3) ** 2 + (yy + 0.2) ** 2)  # vertex at (+0.3, -0.2)
    out = refine_peaks(np.array([[10, 10]]), patch.reshape(1, 9), 20, 20)
    np.testing.assert_allclose(out, [[10.3, 9.8]], atol=1e-9)
    border = refine_peaks(np.array([[0, 10]]), patch.reshape(1, 9), 20, 20)
    assert border[0, 0] == 0.0


def test_centroid_peaks_by_hand():
    """Centroid of the 3x3 values above their minimum, computed by hand."""
    patch = np.array([[1.0, 2.0, 2.0],
                      [2.0, 5.0, 4.0],
                      [1.0, 2.0, 2.0]])  # minus the minimum 1: [[0,1,1],[1,4,3],[0,1,1]]
    out = centroid_peaks(np.array([[10, 10]]), patch.reshape(1, 9), 20, 20)
    # total 12; x: (-1 * 1 + 1 * 5) / 12 = 1/3; y: (-1 * 2 + 1 * 2) / 12 = 0
    np.testing.assert_allclose(out, [[10 + 1 / 3.0, 10.0]], atol=1e-12)
    assert centroid_peaks(np.array([[19, 0]]), patch.reshape(1, 9), 20, 20)[0].tolist() == [
        19.0, 0.0]  # on the border: not moved
    with pytest.raises(UserError, match="refine"):
        Matcher(refine="parabola")
