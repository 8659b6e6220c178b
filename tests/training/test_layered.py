"""Tests of layered triplets (real frames as translating layers with known motion)."""

import os

import numpy as np
import pytest
from PIL import Image

from vidcorr.model.config import config_from_dict
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.training.layered import _box_down, ellipse_mask, layered_triplet, window_size

FG = 255  # a constant foreground value the noise background never takes


def _noise(rng, height, width):
    return rng.randint(0, 250, (height, width, 3)).astype(np.uint8)


def test_background_moves_by_its_velocity(rng):
    wh, ww = window_size(20, 30, 4)
    assert (wh, ww) == (28, 38)
    for _ in range(10):
        frames, flow = layered_triplet(rng, _noise(rng, wh + 3, ww + 5), None, 20, 30, 4.7)
        vy, vx = flow[0, 0]
        assert np.all(flow == (vy, vx)) and abs(vy) <= 4 and abs(vx) <= 4
        # frame_k(p) = bg(p - k v): the middle pixel p is at p - v in frame t, p + v in t+2.
        for k, frame in ((-1, frames[0]), (1, frames[2])):
            ys = np.arange(max(0, k * vy), min(20, 20 + k * vy))
            xs = np.arange(max(0, k * vx), min(30, 30 + k * vx))
            np.testing.assert_array_equal(frame[np.ix_(ys, xs)],
                                          frames[1][np.ix_(ys - k * vy, xs - k * vx)])


def test_foreground_occludes_and_moves_by_its_own_velocity(rng):
    seen = set()
    for _ in range(20):
        wh, ww = window_size(32, 48, 5)
        fg = np.full((wh, ww, 3), FG, np.uint8)
        frames, flow = layered_triplet(rng, _noise(rng, wh, ww), fg, 32, 48, 5)
        masks = frames[..., 0] == FG  # [3, h, w]: where the foreground is, in each frame
        assert masks[1].sum() > 20
        fg_v = flow[masks[1]]
        assert np.all(fg_v == fg_v[0])  # one velocity for the whole foreground
        vy, vx = fg_v[0]
        seen.add((vy, vx))
        # The foreground mask of frame t+1 is that of frame t moved by v (where both in view).
        inner = masks[1][6:-6, 6:-6]
        np.testing.assert_array_equal(inner, masks[0][6 - vy:26 - vy, 6 - vx:42 - vx])
        np.testing.assert_array_equal(inner, masks[2][6 + vy:26 + vy, 6 + vx:42 + vx])
        # Background pixels copy from p - v_bg in frame t unless the foreground covers that spot.
        bg = ~masks[1]
        by, bx = flow[bg][0]
        ys, xs = np.nonzero(bg)
        ok = (ys - by >= 0) & (ys - by < 32) & (xs - bx >= 0) & (xs - bx < 48)
        ys, xs = ys[ok], xs[ok]
        src = frames[0][ys - by, xs - bx]
        visible = src[:, 0] != FG
        np.testing.assert_array_equal(src[visible], frames[1][ys, xs][visible])
    assert len(seen) > 5


def test_window_too_small(rng):
    with pytest.raises(ValueError, match="at least 46x36"):
        layered_triplet(rng, _noise(rng, 36, 45), None, 28, 38, 4)


def test_ellipse_mask_closed_form():
    mask = ellipse_mask(9, 11, (4, 5), (2, 3))
    assert mask.sum() == np.sum([(((y - 4) / 2.0) ** 2 + ((x - 5) / 3.0) ** 2) <= 1
                                 for y in range(9) for x in range(11)])
    assert mask[4, 5] and mask[4, 8] and not mask[4, 9] and mask[2, 5] and not mask[1, 5]


def _video(root, n=12, height=48, width=80):
    path = os.path.join(str(root), "v")
    os.makedirs(path)
    rng = np.random.RandomState(0)
    for i in range(n):
        Image.fromarray(_noise(rng, height, width)).save(os.path.join(path, "f%02d.png" % i))
    return path


def _data_config(path, **data):
    base = {"sources": [path], "crop_height": 32, "crop_width": 64, "val_triplets": 8,
            "static_threshold": 0.0, "max_motion": 6}
    base.update(data)
    return config_from_dict({"data": base}).data


def test_training_batches_are_layered_and_validation_stays_real(tmp_path):
    path = _video(tmp_path)
    layered = TripletData(_data_config(path, layered_fraction=1.0))
    inputs, targets = layered.batch(np.random.RandomState(1), 16)
    # Independent frames of noise: a real triplet's frames never agree; a layered one's
    # middle frame is (mostly) frame t shifted by an integer velocity within max_motion.
    for x, y in zip(inputs, targets):
        best = max(np.mean(np.abs(np.roll(x[..., :3], (vy, vx), (0, 1)) - y)[8:-8, 8:-8] < 1e-6)
                   for vy in range(-6, 7) for vx in range(-6, 7))
        assert best > 0.3
    real = TripletData(_data_config(path))
    np.testing.assert_array_equal(layered.validation_set()[0], real.validation_set()[0])
    x, y = real.batch(np.random.RandomState(1), 1)
    assert np.mean(np.abs(x[0, ..., :3] - y[0]) < 1e-6) < 0.05


@pytest.mark.parametrize("data, match", [
    ({"layered_fraction": 1.5}, "layered_fraction: must be in"),
    ({"layered_fraction": 0.5, "max_motion": 0.5}, "max_motion of at least"),
    ({"layered_fraction": 0.5, "max_motion": 20}, "smaller than the 104x72"),
])
def test_layered_config_errors(tmp_path, data, match):
    with pytest.raises(UserError, match=match):
        TripletData(_data_config(_video(tmp_path), **data))


def test_subpixel_triplet_moves_a_smooth_layer_by_its_fractional_velocity(rng):
    """A band-limited background: frame t+2 must equal the middle frame moved by v
    (checked by scipy's spline shift, an independent interpolator), with v on the 1/S
    lattice and not whole pixels (equality within half a grey level also says that no
    frame is sharper than the others)."""
    from scipy.ndimage import shift

    from vidcorr.training.layered import subpixel_layered_triplet

    yy, xx = np.mgrid[0:60, 0:90].astype(np.float64)
    image = 127.5 + 100 * np.sin(xx / 6.0 + 0.3) * np.cos(yy / 8.0)
    image = np.repeat(image[..., None], 3, axis=2)
    fractional = 0
    for _ in range(6):
        frames, flow = subpixel_layered_triplet(rng, image, None, 32, 48, 2.5, 4)
        vy, vx = flow[0, 0]
        assert np.all(flow == (vy, vx)) and abs(vy) <= 2.5 and abs(vx) <= 2.5
        assert (4 * vy) == int(4 * vy) and (4 * vx) == int(4 * vx)
        fractional += (vy % 1 != 0) or (vx % 1 != 0)
        for k, frame in ((1, frames[2]), (-1, frames[0])):  # frame_k(p) = middle(p - k v)
            moved = shift(frames[1][..., 0].astype(np.float64), (k * vy, k * vx), order=3)
            np.testing.assert_allclose(moved[6:-6, 6:-6], frame[6:-6, 6:-6, 0], atol=0.5)
    assert fractional >= 3  # most velocities are not whole pixels


def test_data_config_supersample_feeds_subpixel_layers(tmp_path):
    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.RandomState(0)
    for i in range(12):
        Image.fromarray(_noise(rng, 60, 80)).save(str(folder / ("%02d.png" % i)))
    base = {"sources": [str(folder)], "crop_height": 32, "crop_width": 48,
            "layered_fraction": 1.0, "max_motion": 1.5, "static_threshold": 0.0,
            "val_split": "time", "val_fraction": 0.3, "val_triplets": 2}
    config = config_from_dict({"data": dict(base, motion_supersample=4)})
    inputs, targets = TripletData(config.data).batch(np.random.RandomState(1), 3)
    assert inputs.shape == (3, 32, 48, 6) and targets.shape == (3, 32, 48, 3)
    assert 0 <= inputs.min() and inputs.max() <= 1
    # box-averaged frames are no longer on the 8-bit lattice of the source frames
    assert np.any(np.abs(targets * 255 - np.round(targets * 255)) > 1e-3)
    with pytest.raises(UserError, match="motion_supersample"):
        config_from_dict({"data": dict(base, motion_supersample=0)})
    with pytest.raises(UserError, match="layered_fraction"):
        config_from_dict({"data": dict(base, max_motion=0.2, motion_supersample=2)})


@pytest.mark.parametrize("power", [1.0, 2.0, 3.0])
def test_velocity_distribution_against_its_closed_form(power):
    """P(|v| <= k) = (k + 1/2) / (m + 1/2) to the power 1/p (uniform on {-m..m} at p = 1)."""
    from vidcorr.training.layered import random_velocity

    rng = np.random.RandomState(5)
    m = 6
    v = np.array([random_velocity(rng, m + 0.7, power) for _ in range(20000)])  # [N, 2]
    assert v.dtype.kind == "i" and np.abs(v).max() == m
    for k in range(m + 1):
        expected = ((k + 0.5) / (m + 0.5)) ** (1.0 / power)
        assert np.mean(np.abs(v) <= k) == pytest.approx(expected, abs=0.01)
    assert abs(np.mean(v)) < 0.05  # symmetric


def test_motion_power_is_validated():
    base = {"sources": ["x.mp4"], "layered_fraction": 0.5}
    with pytest.raises(UserError, match="motion_power"):
        config_from_dict({"data": dict(base, motion_power=0.5)})


def test_batch_kinds_name_the_layered_triplets(tmp_path):
    """``kinds`` flags each triplet as layered or real, the draws unchanged: on frames of
    independent noise a layered triplet's middle frame is frame t shifted, a real one's
    is not."""
    data = TripletData(_data_config(_video(tmp_path), layered_fraction=0.5))
    inputs, targets, layered = data.batch(np.random.RandomState(2), 24, kinds=True)
    plain = data.batch(np.random.RandomState(2), 24)
    np.testing.assert_array_equal(inputs, plain[0])
    np.testing.assert_array_equal(targets, plain[1])
    assert layered.dtype == np.float32 and layered.shape == (24,)
    shifted = [max(np.mean(np.abs(np.roll(x[..., :3], (vy, vx), (0, 1)) - y)[8:-8, 8:-8] < 1e-6)
                   for vy in range(-6, 7) for vx in range(-6, 7)) > 0.3
               for x, y in zip(inputs, targets)]
    np.testing.assert_array_equal(layered, np.array(shifted, np.float32))
    assert 0 < layered.sum() < 24
    _, _, flags = next(data.batches(4, seed=0))
    assert flags.shape == (4,)
    assert len(data.validation_set()) == 2  # validation stays (inputs, targets)


@pytest.mark.parametrize("s", [1, 2, 4])
def test_box_down_is_the_mean_of_each_block(rng, s):
    """The supersampled frames' box filter equals numpy's mean over each s x s block."""
    fine = (rng.rand(3, 5 * s, 7 * s, 3) * 255).astype(np.float32)
    want = fine.astype(np.float64).reshape(3, 5, s, 7, s, 3).mean(axis=(2, 4))
    got = _box_down(fine, s)
    assert got.shape == (3, 5, 7, 3) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)
