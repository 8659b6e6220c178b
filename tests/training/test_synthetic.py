"""Synthetic triplets (vidcorr.training.synthetic): exact motion, augmented like real ones."""

import os
import numpy as np
import pytest
from PIL import Image
from vidcorr.model.config import config_from_dict
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.training.synthetic import moving_triplet
from vidcorr.io.video import load_frames


def test_synthetic_triplets_are_augmented_like_real_ones():
    """A texture moving right by 2 px per step: flipped left-right it moves left."""
    config = config_from_dict({"data": {"synthetic": True, "velocity": [0.0, 2.0],
                                        "crop_height": 32, "crop_width": 48,
                                        "flip_horizontal": True, "time_reversal": False}}).data
    inputs, targets = TripletData(config).batch(np.random.RandomState(0), 16)
    right = np.abs(targets[:, :, 4:-4] - inputs[:, :, 2:-6, :3]).mean(axis=(1, 2, 3)) < 1e-4
    left = np.abs(targets[:, :, 2:-6] - inputs[:, :, 4:-4, :3]).mean(axis=(1, 2, 3)) < 1e-4
    assert np.all(right ^ left) and right.any() and left.any()


def test_synthetic_motion_is_exact(rng):
    frames, v = moving_triplet(rng, 40, 60, velocity=(0.0, 2.0))
    # Integer motion: frame t shifted right by 2 px is frame t+1 (away from the border).
    np.testing.assert_allclose(frames[1][:, 4:-4], frames[0][:, 2:-6], atol=1e-5)
    np.testing.assert_allclose(frames[2][:, 4:-4], frames[1][:, 2:-6], atol=1e-5)
