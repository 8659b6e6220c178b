"""Image and video reading (vidcorr.io.video): ranges, orientation, limits, paths."""

import pathlib

import numpy as np
import pytest
from PIL import Image

from vidcorr.errors import UserError
from vidcorr.io.video import natural_key, read_image, to_rgb_float


def test_exif_orientation_is_applied(tmp_path):
    """A phone JPEG stored sideways (Orientation 6: rotate 90 degrees clockwise to view) reads
    as it is viewed, the same size and content as the upright file."""
    ys, xs = np.mgrid[0:16, 0:24]
    upright = np.stack([xs * 10, ys * 15, 128 + 0 * xs], axis=-1).astype(np.uint8)  # ramps
    upright[:4, :8] = 255  # a bright top-left corner to find
    stored = np.rot90(upright, k=1)  # [24, 16]: the sensor's orientation
    exif = Image.Exif()
    exif[0x0112] = 6
    path = str(tmp_path / "phone.jpg")
    Image.fromarray(stored).save(path, quality=100, exif=exif)
    Image.fromarray(upright).save(str(tmp_path / "plain.png"))
    viewed = read_image(path)
    assert viewed.shape == upright.shape
    assert np.abs(viewed.astype(int) - upright).mean() < 8  # JPEG noise only
    assert viewed[:4, :8].mean() > 240


def test_limits_and_paths(tmp_path, monkeypatch):
    image = np.zeros((20, 30, 3), np.uint8)
    path = tmp_path / "a.png"
    Image.fromarray(image).save(str(path))
    assert to_rgb_float(path).shape == (20, 30, 3)  # a pathlib.Path is a path
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # a "bomb" of 600 pixels (> 2x limit)
    with pytest.raises(UserError, match="cannot read image .*a.png: Image size \\(600 pixels\\)"):
        read_image(str(path))
    with pytest.raises(UserError, match="image not found"):
        read_image(str(tmp_path / "missing.png"))
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(UserError, match="cannot read image"):
        read_image(str(tmp_path / "bad.png"))


def test_float_and_integer_ranges():
    np.testing.assert_allclose(to_rgb_float(np.full((2, 2), 255, np.uint8)), 1.0)
    np.testing.assert_allclose(to_rgb_float(np.full((2, 2, 1), 65535, np.uint16)), 1.0)
    with pytest.raises(UserError, match="0-255 data"):
        to_rgb_float(np.full((2, 2, 3), 200.0))
    with pytest.raises(UserError, match="NaN"):
        to_rgb_float(np.full((2, 2, 3), np.nan))
    with pytest.raises(UserError, match="integer images"):
        to_rgb_float(np.zeros((2, 2, 3), np.int32))


def test_natural_order():
    assert sorted(["f10.png", "f2.png", "f1.png"], key=natural_key) == [
        "f1.png", "f2.png", "f10.png"]


def test_hidden_files_are_not_frames(tmp_path):
    from vidcorr.io.video import frame_names, load_frames

    for name in ("f2.png", "f10.png", "f1.png", ".hidden.png", "._f1.png", "notes.txt"):
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(str(tmp_path / name), format="PNG")
    assert frame_names(str(tmp_path)) == ["f1.png", "f2.png", "f10.png"]
    assert load_frames(str(tmp_path)).shape == (3, 8, 8, 3)


def test_a_package_without_the_file_is_not_called_missing(tmp_path, monkeypatch):
    from vidcorr.io import video

    with pytest.raises(UserError, match="is the package 'nosuchpackage' installed"):
        video.resolve_source("pkg:nosuchpackage/a.mp4")
    monkeypatch.setattr(video, "_SYSTEM_PACKAGE_DIRS", ())
    with pytest.raises(UserError) as err:  # numpy is installed and holds no such file
        video.resolve_source("pkg:numpy/resources/images/cockatoo.mp4")
    message = str(err.value)
    assert "the package 'numpy' is installed" in message and "does not hold " \
        "resources/images/cockatoo.mp4" in message and "is the package" not in message


def test_float_batch_is_the_input_contract():
    from vidcorr.io.video import float_batch

    ok = np.full((2, 32, 40, 3), 0.5, np.float64)
    out = float_batch(ok, 3, "frame_t", 32)
    assert out.dtype == np.float32 and out.shape == ok.shape
    for bad, message in ((ok * 255, "frame_t must be in \\[0, 1\\], got values from 127.5 to "
                                    "127.5 \\(0-255 data"),
                         ((ok * 255).astype(np.uint8), "got dtype uint8 \\(0-255 data"),
                         (ok[:, :16], "at least 32 pixels on each side, got 40x16"),
                         (ok[:0], "empty batch"),
                         (ok[0], "must be \\[B, H, W, 3\\], got shape \\[32, 40, 3\\]"),
                         (np.full_like(ok, np.nan), "NaN")):
        with pytest.raises(UserError, match=message):
            float_batch(bad, 3, "frame_t", 32)


def test_float_to_uint8_rounds_and_clips():
    from vidcorr.io.video import float_to_uint8, uint8_to_float
    got = float_to_uint8(np.array([-0.5, 0.0, 0.2, 0.6, 0.999, 1.5], np.float32))
    np.testing.assert_array_equal(got, [0, 0, 51, 153, 255, 255])  # 0.999 * 255 = 254.7 -> 255
    assert got.dtype == np.uint8
    every = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(float_to_uint8(uint8_to_float(every)), every)  # a round trip


def test_resize_uint8_is_the_block_mean():
    from vidcorr.io.video import resize_uint8
    frame = np.random.RandomState(0).randint(0, 256, (12, 20, 3)).astype(np.uint8)
    half = resize_uint8(frame, 6, 10)
    assert half.shape == (6, 10, 3) and half.dtype == np.uint8
    blocks = frame.astype(np.float64).reshape(6, 2, 10, 2, 3).mean(axis=(1, 3))  # [6, 10, 3]
    assert np.abs(half - blocks).max() <= 0.5  # rounded to the nearest level
