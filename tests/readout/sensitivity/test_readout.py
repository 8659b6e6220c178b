"""The sensitivity read-out's coarse-to-fine loop (vidcorr.readout.sensitivity.readout): known motions through the pyramid, the finer level and the refinement."""

import os
import numpy as np
import pytest
from vidcorr.errors import UserError
from vidcorr.readout.pyramid import grid_points
from vidcorr.readout.matching import Matcher
from vidcorr.readout.pyramid import build_pyramid, densify, levels_that_fit, sample_field, \
    upsample_exact, upsample_field, upsampled_size, warp
from vidcorr.io.video import read_image
from tests.readout.test_pyramid import _BlockMatcher
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
MODEL_TOLERANCE = 2.0  # px; the packaged model's median error on this pair measured 0.92 px


def test_pyramid_mechanics_recover_motion_beyond_the_reach(monkeypatch):
    """With a read-out that sees at most 4 px per frame step, one level cannot find a
    12 px step; the pyramid (reads at 1/4 and 1/2 size, dense fields, warps, peaks mapped
    back) recovers it within 1 px."""
    image = read_image(os.path.join(EXAMPLES, "cockatoo_263.png")).astype(np.float32) / 255
    h, w = 96, 256
    # the middle frame would be image[8:, 24:]: middle(p) = frame_t(p - (12, 4))
    # and middle(p) = frame_t2(p + (12, 4))
    frame_t = image[8 + 4:8 + 4 + h, 24 + 12:24 + 12 + w]
    frame_t2 = image[8 - 4:8 - 4 + h, 24 - 12:24 - 12 + w]
    matcher = Matcher(levels=3, readout="sensitivity", refine="none")  # block matching
    monkeypatch.setattr(matcher.readout, "graph_for",
                            lambda height, width, full_maps=False: _BlockMatcher())
    errors = {}
    for levels in (1, 3):
        matcher.options = matcher.options.replace(levels=levels)
        m = matcher.match(frame_t, frame_t2, stride=8, offset=4)
        inner = ((m.grid[:, 0] >= 40) & (m.grid[:, 0] < w - 40) &
                 (m.grid[:, 1] >= 16) & (m.grid[:, 1] < h - 16))
        e1 = np.linalg.norm(m.p1[inner] - (m.grid[inner] + [-12, -4]), axis=1)
        e3 = np.linalg.norm(m.p3[inner] - (m.grid[inner] + [12, 4]), axis=1)
        errors[levels] = (np.median(e1), np.median(e3))
    matcher.close()
    assert max(errors[3]) <= 1.0 and min(errors[1]) >= 4.0, errors


def test_pyramid_finds_a_large_translation_with_the_default_model():
    """The packaged model on a real frame moving 12 px per frame step (24 px between the
    matched frames, three times the kernel's reach): one level fails, three levels find
    the motion (within the model's own precision)."""
    image = read_image(os.path.join(EXAMPLES, "cockatoo_263.png")).astype(np.float32) / 255
    h, w, v = 128, 320, 12
    frame_t = image[:h, 2 * v - v:2 * v - v + w]  # middle(p) is at p + (v, 0) in frame t
    frame_t2 = image[:h, 2 * v + v:2 * v + v + w]
    errors = {}
    for levels in (1, 3):
        matcher = Matcher(levels=levels, readout="sensitivity")  # the kernel's: test_blend.py
        m = matcher.match(frame_t, frame_t2, stride=16, offset=8)
        matcher.close()
        inner = (m.grid[:, 0] >= 2 * v) & (m.grid[:, 0] < w - 2 * v)  # both matches in view
        flow = (m.p3 - m.p1)[inner]
        errors[levels] = np.median(np.linalg.norm(flow - [-2 * v, 0], axis=1))
    print("median error (px) by levels: %s" % errors)
    assert errors[3] <= MODEL_TOLERANCE and errors[1] > 10.0, errors


def test_finer_read_out_mechanics_halve_the_sub_pixel_error(monkeypatch):
    """With a read-out of whole-pixel peaks, motion of 1.5 px per frame step is read 0.5 px
    off per frame at the network's size; ``upsample=2`` reads it at twice the size, where
    it is 3 whole pixels, and maps the peaks back exactly."""
    from scipy import ndimage

    image = read_image(os.path.join(EXAMPLES, "cockatoo_263.png")).astype(np.float32) / 255
    image = ndimage.gaussian_filter(image[:96, :192], (1.0, 1.0, 0))  # smooth: exact shifts
    # middle(p) = image(p) = frame_t(p + (1.5, 0)) = frame_t2(p - (1.5, 0))
    frame_t = ndimage.shift(image, (0, 1.5, 0), order=3, mode="nearest")
    frame_t2 = ndimage.shift(image, (0, -1.5, 0), order=3, mode="nearest")
    errors = {}
    for upsample in (1, 2):
        matcher = Matcher(levels=1, upsample=upsample, readout="sensitivity", refine="none")
        monkeypatch.setattr(matcher.readout, "graph_for",
                            lambda height, width, full_maps=False: _BlockMatcher())
        m = matcher.match(frame_t, frame_t2, stride=8, offset=4)
        inner = (m.grid[:, 0] >= 16) & (m.grid[:, 0] < 192 - 16)
        e1 = np.linalg.norm(m.p1[inner] - (m.grid[inner] + [1.5, 0]), axis=1)
        errors[upsample] = np.median(np.linalg.norm(m.p3[inner] - m.p1[inner] - [-3, 0],
                                                    axis=1))
        if upsample == 2:
            assert np.median(e1) <= 0.2, np.median(e1)  # 0.5 at the network size
    print("median flow error (px) by upsample: %s" % errors)
    assert errors[1] >= 0.9 and errors[2] <= 0.3, errors


def test_refinement_makes_whole_pixel_peaks_exact(monkeypatch):
    """The sensitivity read-out's path through the refinement (grid matches densified,
    refined on the frames, sampled back at the grid): a read-out of whole-pixel peaks reads
    1.5 px per frame step 0.5 px off per frame; refined, within a tenth of a pixel."""
    from scipy import ndimage

    image = read_image(os.path.join(EXAMPLES, "cockatoo_263.png")).astype(np.float32) / 255
    image = ndimage.gaussian_filter(image[:96, :192], (1.0, 1.0, 0))  # smooth: exact shifts
    frame_t = ndimage.shift(image, (0, 1.5, 0), order=3, mode="nearest")
    frame_t2 = ndimage.shift(image, (0, -1.5, 0), order=3, mode="nearest")
    errors = {}
    for refine in ("none", "variational"):
        matcher = Matcher(levels=1, readout="sensitivity", refine=refine)
        monkeypatch.setattr(matcher.readout, "graph_for",
                            lambda height, width, full_maps=False: _BlockMatcher())
        m = matcher.match(frame_t, frame_t2, stride=8, offset=4)
        inner = (m.grid[:, 0] >= 16) & (m.grid[:, 0] < 192 - 16)
        errors[refine] = np.median(np.linalg.norm(m.p3[inner] - m.p1[inner] - [-3, 0], axis=1))
    print("median flow error (px) by refinement: %s" % errors)
    assert errors["none"] >= 0.9 and errors["variational"] <= 0.1, errors
