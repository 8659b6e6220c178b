"""Tests of the Matcher, Matches and the correspond script."""

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


def test_graph_does_not_grow_across_pairs(random_checkpoint):
    rng = np.random.RandomState(0)
    matcher = Matcher(random_checkpoint, chunk=8)
    pair = lambda: (rng.rand(32, 64, 3), rng.rand(32, 64, 3))  # noqa: E731
    matcher.match(*pair(), stride=8)
    graph = matcher.readout.graph_for(32, 64)
    count = len(graph.graph.get_operations())
    for _ in range(3):
        matches = matcher.match(*pair(), stride=8)
    assert len(graph.graph.get_operations()) == count and len(matcher.readout._graphs) == 1
    assert len(matches) == 4 * 8
    matcher.close()


def test_trained_network_recovers_known_motion(trained_tiny):
    config, _ = trained_tiny
    vy, vx = config.data.velocity
    frames, _ = moving_triplet(np.random.RandomState(11), 48, 96, velocity=(vy, vx))
    matcher = Matcher(config.train.run_dir, chunk=16)
    matches = matcher.match(frames[0], frames[2], stride=4)
    matcher.close()
    inner = ((matches.grid[:, 0] >= 8) & (matches.grid[:, 0] < 88) &
             (matches.grid[:, 1] >= 8) & (matches.grid[:, 1] < 40))
    err1 = np.hypot(*(matches.p1 - (matches.grid - [vx, vy])).T)[inner]
    err3 = np.hypot(*(matches.p3 - (matches.grid + [vx, vy])).T)[inner]
    assert np.mean((err1 < 1.0) & (err3 < 1.0)) > 0.6, (np.median(err1), np.median(err3))
    # Flow t -> t+2 is 2 v where matches are valid and good.
    flow = matches.to_flow()
    good = np.isfinite(flow[..., 0])
    assert good.sum() > 50
    assert np.median(np.abs(flow[good] - [2 * vx, 2 * vy])) < 1.0


def test_consistency_check_agrees_with_swapped_run(random_checkpoint):
    rng = np.random.RandomState(4)
    a, b = rng.rand(32, 64, 3), rng.rand(32, 64, 3)
    matcher = Matcher(random_checkpoint, chunk=8, refine="none")  # the mechanism alone
    forward = matcher.match(a, b, stride=8)
    backward = matcher.match(b, a, stride=8)
    distance = np.maximum(np.abs(backward.p3 - forward.p1).max(axis=1),
                          np.abs(backward.p1 - forward.p3).max(axis=1))
    tolerance = float(np.median(distance))  # about half agree
    checked = matcher.match(a, b, stride=8, consistency=True, tolerance=tolerance)
    matcher.close()
    expected = (distance <= tolerance) & forward.valid  # consistent and confident
    np.testing.assert_array_equal(checked.valid, expected)
    np.testing.assert_array_equal(checked.p1, forward.p1)
    assert 0 < expected.sum() < forward.valid.sum()  # a real mix, so the test can fail


def test_max_size_maps_back_to_original_pixels(random_checkpoint):
    rng = np.random.RandomState(1)
    a, b = rng.rand(64, 128, 3), rng.rand(64, 128, 3)
    matcher = Matcher(random_checkpoint, chunk=8, max_size=64)
    matches = matcher.match(a, b, stride=8)
    assert list(matcher.readout._graphs) == [(32, 64, False)]
    assert matches.size == (64, 128)
    assert matches.grid[:, 0].max() <= 127 and matches.grid[1, 0] - matches.grid[0, 0] == 16
    matcher.close()


def _known_read_out(matcher, d1, d3):
    """Replaces the matcher's read-out by an exact one: every grid point p (in the
    network's pixels) comes from ``p + d1`` in frame t and ``p + d3`` in frame t+2."""
    def read_out(pairs, points, stride, progress=False, desc="pixels"):
        pos = np.stack([points + d1, points + d3], axis=1).astype(np.float64)  # [N, 2, 2]
        n = len(pairs)
        return (np.repeat(pos[None], n, 0), np.ones((n, len(points), 2)),
                np.ones((n, len(points))))
    matcher.readout.read_out = read_out


@pytest.mark.parametrize("size, max_size, network", [
    ((50, 130), 64, (32, 64)),   # x and y scaled differently: y clamped to the 32-pixel minimum
    ((90, 60), 45, (45, 32)),    # portrait: the width clamped to 32, its scale 1.875, not 2
])
def test_max_size_maps_known_motion_back_with_the_half_pixel_convention(
        random_checkpoint, size, max_size, network):
    """Pixel centres of the network's image and the original's line up (pixel i of a side
    scaled by s covers [i s, (i + 1) s)): a network position x is ``(x + 0.5) s - 0.5`` in
    the original, per axis. With an exact read-out of a known motion in the network's pixels
    the matches must be that motion in original pixels."""
    h, w = size
    rng = np.random.RandomState(2)
    matcher = Matcher(random_checkpoint, max_size=max_size, refine="none", min_confidence=0)
    d1, d3 = np.array([1.5, -2.0]), np.array([-3.0, 0.75])  # in the network's pixels
    _known_read_out(matcher, d1, d3)
    m = matcher.match(rng.rand(h, w, 3), rng.rand(h, w, 3), stride=4)
    matcher.close()
    nh, nw = network
    sx, sy = w / float(nw), h / float(nh)
    grid_net = np.stack(np.meshgrid(np.arange(0, nw, 4), np.arange(0, nh, 4)), -1).reshape(-1, 2)
    orig = lambda p: np.stack([(p[:, 0] + 0.5) * sx - 0.5, (p[:, 1] + 0.5) * sy - 0.5], 1)  # noqa
    inside = np.all((orig(grid_net + d1) >= 0) & (orig(grid_net + d1) <= [w - 1, h - 1]) &
                    (orig(grid_net + d3) >= 0) & (orig(grid_net + d3) <= [w - 1, h - 1]), axis=1)
    np.testing.assert_array_equal(m.grid, np.rint(orig(grid_net)).astype(int))
    np.testing.assert_allclose(m.p1[inside], orig(grid_net + d1)[inside], atol=1e-9)
    np.testing.assert_allclose(m.p3[inside], orig(grid_net + d3)[inside], atol=1e-9)
    np.testing.assert_allclose((m.p3 - m.p1)[inside], np.broadcast_to(
        (d3 - d1) * [sx, sy], (inside.sum(), 2)), atol=1e-9)
    assert inside.sum() > len(inside) // 2


def test_a_match_leaving_the_image_is_invalid(random_checkpoint):
    """Ends more than half a pixel past the outer pixel centres leave the view: invalid;
    the rest are valid, their positions kept (or clipped onto the border)."""
    h, w = 32, 64
    rng = np.random.RandomState(3)
    matcher = Matcher(random_checkpoint, refine="none", min_confidence=0)
    _known_read_out(matcher, np.array([-5.0, 0.0]), np.array([5.0, 0.0]))
    m = matcher.match(rng.rand(h, w, 3), rng.rand(h, w, 3), stride=4)
    matcher.close()
    x = m.grid[:, 0]
    leaving = (x - 5 < -0.5) | (x + 5 > w - 0.5)  # x = 0, 4 (frame t: -1) and 60 (frame t+2)
    np.testing.assert_array_equal(m.valid, ~leaving)
    assert leaving.sum() == 3 * len(np.unique(m.grid[:, 1]))
    np.testing.assert_allclose(m.p1[~leaving, 0], x[~leaving] - 5.0)
    assert m.p1[:, 0].min() >= 0 and m.p3[:, 0].max() <= w - 1  # clipped in


def test_image_conversion_and_errors(tmp_path):
    gray = np.full((40, 40), 255, np.uint8)
    np.testing.assert_array_equal(to_rgb_float(gray), np.ones((40, 40, 3), np.float32))
    rgba = np.zeros((40, 40, 4), np.uint8)
    assert to_rgb_float(rgba).shape == (40, 40, 3)
    with pytest.raises(UserError, match="must be"):
        to_rgb_float(np.zeros((4, 4, 2)))
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"nope")
    with pytest.raises(UserError, match="cannot read"):
        to_rgb_float(str(bad))


def test_matcher_input_errors(random_checkpoint, tmp_path):
    matcher = Matcher(random_checkpoint)
    with pytest.raises(UserError, match="differ in size"):
        matcher.match(np.zeros((32, 64, 3)), np.zeros((32, 96, 3)))
    with pytest.raises(UserError, match="at least 32"):
        matcher.match(np.zeros((16, 64, 3)), np.zeros((16, 64, 3)))
    with pytest.raises(UserError, match="stride"):
        matcher.match(np.zeros((32, 64, 3)), np.zeros((32, 64, 3)), stride=0)
    with pytest.raises(UserError, match="checkpoint not found"):
        Matcher(str(tmp_path / "none"))
    a = np.zeros((32, 64, 3))
    with pytest.raises(UserError, match="consistency must be True or False, got 'no'"):
        matcher.match(a, a, consistency="no")
    for tolerance in (-1, float("nan"), True, "2"):
        with pytest.raises(UserError, match="tolerance must be a number of pixels"):
            matcher.match(a, a, tolerance=tolerance)
    matches = matcher.match(a, a, stride=16, consistency=np.bool_(True),
                            tolerance=np.float32(2))  # numpy scalars are numbers
    assert len(matches) == 8
    with pytest.raises(UserError, match=r"at least 32 pixels on each side, got 8x8"):
        matcher.predict_batch(np.zeros((1, 8, 8, 6), np.float32))
    with pytest.raises(UserError, match="empty batch"):
        matcher.predict_batch(np.zeros((0, 32, 32, 6), np.float32))


def test_matcher_settings_errors_and_a_dict_of_options(random_checkpoint):
    with pytest.raises(UserError, match="options must be a MatchOptions or a dict .*"
                                        "readout=..."):
        Matcher(random_checkpoint, options="kernel")
    with pytest.raises(UserError, match="unknown matcher option 'level'"):
        Matcher(random_checkpoint, options={"level": 2})
    for devices in (True, "2", [0, 1]):
        with pytest.raises(UserError, match="devices must be a count or a list of device "
                                            "names"):
            Matcher(random_checkpoint, devices=devices)
    matcher = Matcher(random_checkpoint, options={"levels": 2}, min_confidence=0.5)
    assert matcher.options.levels == 2 and matcher.options.min_confidence == 0.5
    matcher.close()


def test_matches_save_load_and_flow(tmp_path):
    # matches 0 and 2 land on one pixel (round(p1) = (3, 4)): the more confident one wins
    m = Matches(grid=[[4, 4], [8, 4], [4, 8]],
                p1=[[3.0, 4.0], [7.6, 4.2], [3.2, 3.9]], p3=[[5.0, 4.0], [9.0, 5.0], [6.2, 2.9]],
                peak=[[1, 1], [2, 2], [3, 3]], confidence=[0.5, 0.9, 0.7],
                valid=[True, False, True], size=(10, 12))
    flow = m.to_flow()
    np.testing.assert_array_equal(flow[4, 3], [3.0, -1.0])  # match 2 (0.7) beats match 0 (0.5)
    assert np.isnan(flow[4, 8]).all() and np.isfinite(flow).sum() == 2  # match 1 is invalid
    all_flow = m.to_flow(only_valid=False)
    np.testing.assert_allclose(all_flow[4, 8], [1.4, 0.8])
    assert np.isfinite(all_flow).sum() == 4
    path = str(tmp_path / "m.npz")
    m.save(path)
    back = Matches.load(path)
    assert back.size == (10, 12) and len(back) == 3
    for field in Matches.FIELDS:
        np.testing.assert_array_equal(getattr(back, field), getattr(m, field))
    text = str(tmp_path / "m.txt")
    m.save_text(text)
    table = np.loadtxt(text)  # x2 y2 x1 y1 x3 y3 peak1 peak3 confidence valid
    assert table.shape == (3, 10)
    np.testing.assert_allclose(table[:, 2:6], np.hstack([m.p1, m.p3]), atol=1e-3)
    np.testing.assert_array_equal(table[:, 9], [1, 0, 1])


def _write_pair(tmp_path, size=(48, 96)):
    frames, _ = moving_triplet(np.random.RandomState(2), size[0], size[1], velocity=(1.0, 1.0))
    paths = []
    for i in (0, 2):
        path = str(tmp_path / ("f%d.png" % i))
        Image.fromarray((frames[i] * 255).astype(np.uint8)).save(path)
        paths.append(path)
    return paths


def _correspond(args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "correspond.py")] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


@pytest.mark.parametrize("mode", ["I;16", "I", "F", "L", "P", "LA", "RGBA", "CMYK", "1"])
def test_every_image_mode_is_read_at_its_real_range(tmp_path, mode):
    """A ramp saved in each Pillow mode reads back as the same ramp in [0, 1]."""
    from PIL import Image

    ramp = np.tile(np.linspace(0.0, 1.0, 64), (8, 1))  # [8, 64]
    if mode in ("I;16", "I"):
        img = Image.fromarray(np.rint(ramp * 65535).astype(np.uint16 if mode == "I;16"
                                                                else np.int32))
        path, tol = str(tmp_path / "x.png" if mode == "I;16" else tmp_path / "x.tif"), 1e-4
    elif mode == "F":
        img, path, tol = Image.fromarray(ramp.astype(np.float32)), str(tmp_path / "x.tif"), 1e-4
    elif mode == "1":
        ramp = (ramp > 0.5).astype(np.float64)
        img, path, tol = Image.fromarray(ramp > 0.5), str(tmp_path / "x.png"), 0.0
    else:
        img = Image.fromarray(np.rint(ramp * 255).astype(np.uint8), "L").convert(mode)
        path, tol = str(tmp_path / ("x.tif" if mode == "CMYK" else "x.png")), 0.5 / 255 + 1e-6
    img.save(path)
    with Image.open(path) as check:
        if mode == "I;16":
            assert check.mode.startswith("I;16") or check.mode == "I"
    out = to_rgb_float(path)
    assert out.shape == (8, 64, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.repeat(ramp[..., None], 3, axis=2), atol=tol)


def test_array_contract(tmp_path):
    """uint8 0-255, uint16 0-65535, float 0-1; anything else is a clear error."""
    ramp = np.tile(np.arange(256, dtype=np.uint8), (4, 1))  # [4, 256]
    np.testing.assert_allclose(to_rgb_float(ramp)[..., 0], ramp / 255.0, atol=1e-7)
    np.testing.assert_allclose(to_rgb_float(ramp.astype(np.uint16) * 257)[..., 0],
                               ramp / 255.0, atol=1e-7)
    np.testing.assert_allclose(to_rgb_float(ramp / 255.0)[..., 0], ramp / 255.0, atol=1e-7)
    with pytest.raises(UserError, match=r"float images must be in \[0, 1\].*divide by 255"):
        to_rgb_float(ramp.astype(np.float64))
    with pytest.raises(UserError, match="uint8 .0-255. or uint16"):
        to_rgb_float(ramp.astype(np.int64))
    nan = np.full((8, 8), 0.5)
    nan[3, 3] = np.nan
    with pytest.raises(UserError, match="NaN or infinite"):
        to_rgb_float(nan)
    with pytest.raises(UserError, match="NaN or infinite"):
        to_rgb_float(np.full((8, 8), np.inf))
    with pytest.raises(UserError, match="numeric image array"):
        to_rgb_float(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(UserError, match="numeric image array"):
        to_rgb_float(np.ones((8, 8), bool))
    from PIL import Image
    Image.fromarray(np.full((4, 4), 70000, np.int32)).save(str(tmp_path / "big.tif"))
    with pytest.raises(UserError, match="^cannot read image .*big.tif: 32-bit integer pixels "
                                        "from 70000 to 70000, outside 0-65535$"):
        to_rgb_float(str(tmp_path / "big.tif"))


