"""Tests of frame reading, triplet sampling and the synthetic generator."""

import os

import numpy as np
import pytest
from PIL import Image

from vidcorr.model.config import config_from_dict
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.training.synthetic import moving_triplet
from vidcorr.io.video import load_frames


def _folder(root, name, n, height=40, width=72, motion=True):
    """Frames whose value encodes the frame index in channel 0 and texture elsewhere."""
    path = os.path.join(str(root), name)
    os.makedirs(path)
    rng = np.random.RandomState(len(name))
    texture = rng.randint(0, 256, (height, width + 3 * n), np.uint8)
    for i in range(n):
        frame = np.zeros((height, width, 3), np.uint8)
        frame[..., 0] = 10 * i
        frame[..., 1] = texture[:, 3 * i:3 * i + width] if motion else texture[:, :width]
        Image.fromarray(frame).save(os.path.join(path, "f%d.png" % i))  # natural order f2 < f10
    return path


def _config(sources, **data):
    base = {"sources": sources, "crop_height": 32, "crop_width": 64, "val_triplets": 8,
            "static_threshold": 0.0, "flip_horizontal": False, "time_reversal": False}
    base.update(data)
    return config_from_dict({"data": base}).data


def test_folder_frames_natural_order(tmp_path):
    frames = load_frames(_folder(tmp_path, "v", 12))
    assert frames.shape == (12, 40, 72, 3)
    np.testing.assert_array_equal(frames[:, 0, 0, 0], 10 * np.arange(12))


def test_triplets_are_consecutive_at_gap_and_split_by_time(tmp_path):
    data = TripletData(_config([_folder(tmp_path, "v", 20)], gap=2, val_fraction=0.25))
    inputs, targets = data.batch(np.random.RandomState(0), 16)
    t = np.rint(inputs[..., 0] * 255 / 10)[:, 0, 0]
    np.testing.assert_array_equal(np.rint(targets[..., 0] * 255 / 10)[:, 0, 0], t + 2)
    np.testing.assert_array_equal(np.rint(inputs[..., 3] * 255 / 10)[:, 0, 0], t + 4)
    # 20 frames, 5 held out: training triplets end before frame 15, validation ones start there.
    assert t.max() + 4 <= 14
    val_in, _ = data.validation_set()
    assert np.rint(val_in[..., 0] * 255 / 10).min() >= 15


def _coded_folder(root, n=10, height=40, width=72):
    """Frames coding the frame index (channel 0), the row (channel 1) and the column (2)."""
    path = os.path.join(str(root), "coded")
    os.makedirs(path)
    yy, xx = np.mgrid[0:height, 0:width]
    for i in range(n):
        frame = np.stack([np.full((height, width), 10 * i), 6 * yy, 3 * xx], -1)
        Image.fromarray(frame.astype(np.uint8)).save(os.path.join(path, "f%d.png" % i))
    return path


def _transforms(inputs, targets):
    """Per drawn triplet: (time reversed, flipped left-right, flipped upside down), read
    from the coded channels."""
    reversed_ = inputs[:, 0, 0, 3] < inputs[:, 0, 0, 0]  # frame index falls from t to t+2
    flipped_x = targets[:, 0, 1, 2] < targets[:, 0, 0, 2]  # the column code falls to the right
    flipped_y = targets[:, 1, 0, 1] < targets[:, 0, 0, 1]  # the row code falls downwards
    return set(zip(reversed_.tolist(), flipped_x.tolist(), flipped_y.tolist()))


@pytest.mark.parametrize("on", [True, False])
def test_time_reversal_and_flips(tmp_path, on):
    data = TripletData(_config([_coded_folder(tmp_path)], time_reversal=on,
                               flip_horizontal=on, flip_vertical=on))
    inputs, targets = data.batch(np.random.RandomState(3), 64)
    seen = _transforms(inputs, targets)
    if on:  # all eight combinations occur in 64 draws
        assert len(seen) == 8, seen
    else:
        assert seen == {(False, False, False)}
    val_inputs, val_targets = data.validation_set()  # validation is never augmented
    assert _transforms(val_inputs, val_targets) == {(False, False, False)}


def test_static_triplets_are_skipped(tmp_path):
    moving = _folder(tmp_path, "moving", 10)
    still = _folder(tmp_path, "still", 10, motion=False)
    data = TripletData(_config([moving, still], static_threshold=0.05))
    inputs, _ = data.batch(np.random.RandomState(0), 16)
    # Half the draws land in the still video; all of those are resampled.
    assert np.all(np.mean(np.abs(inputs[..., 3:] - inputs[..., :3]), axis=(1, 2, 3)) > 0.05)
    unfiltered = TripletData(_config([moving, still], static_threshold=0.0))
    inputs, _ = unfiltered.batch(np.random.RandomState(0), 16)
    assert np.any(np.mean(np.abs(inputs[..., 3:] - inputs[..., :3]), axis=(1, 2, 3)) < 0.05)


def test_deterministic_given_seed(tmp_path):
    data = TripletData(_config([_folder(tmp_path, "v", 12)]))
    a = next(data.batches(4, seed=5))
    b = next(data.batches(4, seed=5))
    c = next(data.batches(4, seed=6))
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


def test_rehearsal_clips_give_their_share_of_training_triplets_whole(tmp_path):
    own = _folder(tmp_path, "own", 20)
    other = os.path.join(str(tmp_path), "other")  # channel 2 marks its frames
    os.makedirs(other)
    for i in range(12):
        frame = np.full((40, 72, 3), 255, np.uint8)
        frame[..., 0] = 10 * i
        Image.fromarray(frame).save(os.path.join(other, "f%d.png" % i))
    data = TripletData(_config([own], rehearsal_sources=[other], rehearsal_fraction=0.3,
                               val_fraction=0.25))
    inputs, _ = data.batch(np.random.RandomState(0), 1000)
    marked = inputs[:, 0, 0, 2] == 1.0  # [N] drawn from the rehearsal clip
    assert abs(marked.mean() - 0.3) < 0.05, marked.mean()  # binomial: 3.5 sigma
    t = np.rint(inputs[marked, 0, 0, 0] * 255 / 10)
    assert t.min() == 0 and t.max() == 9  # the whole clip, no part held back
    assert np.rint(inputs[~marked, 0, 0, 0] * 255 / 10).max() <= 15 - 2  # own: training part
    val_inputs, _ = data.validation_set()
    assert not np.any(val_inputs[..., 2] == 1.0)  # validation: the own clip's end only
    assert np.rint(val_inputs[..., 0] * 255 / 10).min() >= 15
    # without a share the stream is the one drawn without rehearsal clips
    plain = TripletData(_config([own], val_fraction=0.25))
    unused = TripletData(_config([own], rehearsal_sources=[other], val_fraction=0.25))
    np.testing.assert_array_equal(plain.batch(np.random.RandomState(1), 8)[0],
                                  unused.batch(np.random.RandomState(1), 8)[0])
    with pytest.raises(UserError, match="data.rehearsal_fraction: needs data.rehearsal_sources"):
        _config([own], rehearsal_fraction=0.5)


def _checker_folder(root, n=12, height=80, width=160):
    """Frames of a one-pixel checkerboard (0 and 90) plus 10 per frame index: their 2x2
    block mean, the half-size copy's every pixel, is 45 + 10 t, a value no pixel of the
    frames themselves has."""
    path = os.path.join(str(root), "checker")
    os.makedirs(path)
    yy, xx = np.mgrid[0:height, 0:width]
    for i in range(n):
        frame = np.repeat((90 * ((yy + xx) % 2) + 10 * i)[..., None], 3, axis=2)
        Image.fromarray(frame.astype(np.uint8)).save(os.path.join(path, "f%d.png" % i))
    return path


def _halved(triplets):
    """[B] whether every value of each triplet is 45 + 10 k (from the half-size copy)."""
    k = (triplets * 255.0 - 45.0) / 10.0
    return np.all(np.abs(k - np.rint(k)) < 1e-3, axis=tuple(range(1, triplets.ndim)))


def test_scales_cut_training_triplets_from_the_downscaled_frames(tmp_path):
    path = _checker_folder(tmp_path)
    # one scale, 0.5: every training triplet, real or layered, from the 20x72 box copy
    for layered in (0.0, 1.0):
        data = TripletData(_config([path], scales=[0.5], layered_fraction=layered,
                                   max_motion=3, motion_supersample=1, val_fraction=0.25))
        assert data.scaled[0, 0.5].shape == (12, 40, 80, 3)
        inputs, targets = data.batch(np.random.RandomState(0), 32)
        assert _halved(inputs).all() and _halved(targets).all()
        if not layered:  # a real triplet: frames t, t+1, t+2 of the training part, uniform
            t = np.rint((inputs[:, 0, 0, 0] * 255 - 45) / 10)  # the frame index, as coded
            assert t.max() <= 12 - 3 - 2
            k = t[:, None, None, None]
            np.testing.assert_allclose(targets * 255 - (55 + 10 * k), 0, atol=1e-3)
            np.testing.assert_allclose(inputs[..., 3:] * 255 - (65 + 10 * k), 0, atol=1e-3)
        # validation stays at the frames' own size: the checkerboard
        val_inputs, _ = data.validation_set()
        assert not _halved(val_inputs).any()
    # two scales: each drawn about half the time
    data = TripletData(_config([path], scales=[1, 0.5], val_fraction=0.25))
    share = _halved(data.batch(np.random.RandomState(1), 400)[0]).mean()
    assert abs(share - 0.5) < 0.09, share  # binomial: 3.6 sigma
    # a single scale of 1 draws nothing more: the stream is the one without the key
    plain = TripletData(_config([path], val_fraction=0.25))
    one = TripletData(_config([path], scales=[1], val_fraction=0.25))
    np.testing.assert_array_equal(plain.batch(np.random.RandomState(2), 8)[0],
                                  one.batch(np.random.RandomState(2), 8)[0])


def test_layers_of_a_small_scaled_copy_are_mirrored_to_the_window(tmp_path):
    path = _folder(tmp_path, "v", 12, height=72, width=132)
    data = TripletData(_config([path], scales=[0.5], layered_fraction=1.0, max_motion=3,
                               motion_supersample=1, val_fraction=0.25))
    frames = data.scaled[0, 0.5]  # [12, 36, 66, 3]: smaller than the 38x70 window
    layer = data._layer(0, 4, 0.5)
    assert layer.shape == (38, 70, 3)  # the 32x64 crop plus 3 pixels per side
    np.testing.assert_array_equal(layer[1:37, 2:68], frames[4])
    np.testing.assert_array_equal(layer[0, 2:68], frames[4, 1])  # mirrored, not repeated
    np.testing.assert_array_equal(layer[1:37, 0], frames[4, :, 2])
    np.testing.assert_array_equal(layer[1:37, 69], frames[4, :, 63])
    assert data.batch(np.random.RandomState(0), 4)[0].shape == (4, 32, 64, 6)


@pytest.mark.parametrize("scales,match", [
    ([], "data.scales: must list one or more factors"), ([0.05], "from 0.125 to 1"),
    ([1, 1.5], "from 0.125 to 1"), ("half", "expected a list of finite numbers")])
def test_bad_scales_are_one_line_errors(scales, match):
    with pytest.raises(UserError, match=match):
        _config(["x"], scales=scales)


def test_a_scale_smaller_than_the_crop_is_a_one_line_error(tmp_path):
    with pytest.raises(UserError, match="frames at data.scales 0.5 are 36x20, smaller than "
                                        "the crop 64x32"):
        TripletData(_config([_folder(tmp_path, "v", 8)], scales=[1, 0.5]))


@pytest.mark.parametrize("case,match", [
    ("missing", "not found"), ("short", "shorter than one triplet"),
    ("small", "smaller than the crop"), ("mixed", "differ in size"), ("corrupt", "cannot read"),
    ("video_split", "at least 2 sources"),
])
def test_bad_data_errors(tmp_path, case, match):
    if case == "missing":
        sources, extra = [str(tmp_path / "nope.mp4")], {}
    elif case == "short":
        sources, extra = [_folder(tmp_path, "v", 2)], {}
    elif case == "small":
        sources, extra = [_folder(tmp_path, "v", 8, height=20)], {}
    elif case == "mixed":
        path = _folder(tmp_path, "v", 5)
        Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(os.path.join(path, "f9.png"))
        sources, extra = [path], {}
    elif case == "corrupt":
        path = _folder(tmp_path, "v", 5)
        with open(os.path.join(path, "f3.png"), "wb") as f:
            f.write(b"not a png")
        sources, extra = [path], {}
    else:
        sources, extra = [_folder(tmp_path, "v", 8)], {"val_split": "video"}
    with pytest.raises(UserError, match=match):
        TripletData(_config(sources, **extra))


def test_resize_float_closed_forms():
    from vidcorr.io.video import resize_float

    rng = np.random.RandomState(2)
    image = rng.rand(8, 12, 3).astype(np.float32)
    box = resize_float(image, 4, 6, "box")  # a 2x downscale: the mean of each 2x2 block
    np.testing.assert_allclose(box, image.reshape(4, 2, 6, 2, 3).mean(axis=(1, 3)), atol=1e-6)
    flat = resize_float(np.full((8, 12, 3), 0.3, np.float32), 5, 7)  # bicubic keeps a constant
    np.testing.assert_allclose(flat, 0.3, atol=1e-6)
    assert flat.shape == (5, 7, 3) and flat.dtype == np.float32
    up = resize_float(np.eye(8, 12)[..., None].repeat(3, -1), 16, 24)  # overshoot is clipped
    assert up.min() >= 0.0 and up.max() <= 1.0
