"""Round trips of .flo and KITTI PNG flow files, including other PNG row filters."""

import struct
import zlib

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.io.flowio import read_flo, read_kitti_flow, write_flo, write_kitti_flow


def test_flo_round_trip(tmp_path, rng):
    flow = rng.randn(5, 7, 2).astype(np.float32)
    flow[2, 3] = np.nan
    path = str(tmp_path / "a.flo")
    write_flo(path, flow)
    np.testing.assert_array_equal(read_flo(path), flow)
    with open(path, "rb") as f:
        assert struct.unpack("<fii", f.read(12)) == (202021.25, 7, 5)


def test_kitti_round_trip_with_invalid(tmp_path, rng):
    flow = np.round(rng.randn(6, 9, 2) * 20 * 64) / 64
    flow[0, 0] = np.nan
    path = str(tmp_path / "k.png")
    write_kitti_flow(path, flow)
    out, valid = read_kitti_flow(path)
    assert not valid[0, 0] and valid.sum() == 6 * 9 - 1
    np.testing.assert_allclose(out[valid], flow[valid], atol=1e-6)


def _png_with_filters(rgb16):
    """Encodes with each row using filter (row % 5), independently of the library."""
    h, w, _ = rgb16.shape
    rows = rgb16.astype(">u2").view(np.uint8).reshape(h, w * 6).astype(int)
    raw, prev = b"", np.zeros(w * 6, int)
    for y in range(h):
        kind, line = y % 5, rows[y]
        left = np.concatenate([np.zeros(6, int), line[:-6]])
        upleft = np.concatenate([np.zeros(6, int), prev[:-6]])
        if kind == 0:
            enc = line
        elif kind == 1:
            enc = line - left
        elif kind == 2:
            enc = line - prev
        elif kind == 3:
            enc = line - (left + prev) // 2
        else:
            p = left + prev - upleft
            pa, pb, pc = abs(p - left), abs(p - prev), abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
            enc = line - pred
        raw += bytes([kind]) + bytes((enc & 0xff).astype(np.uint8))
        prev = line

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_kitti_reader_handles_all_row_filters(tmp_path, rng):
    enc = rng.randint(0, 65536, (10, 6, 3)).astype(np.uint16)
    enc[..., 2] = rng.randint(0, 2, (10, 6))
    path = tmp_path / "f.png"
    path.write_bytes(_png_with_filters(enc))
    flow, valid = read_kitti_flow(str(path))
    np.testing.assert_allclose(flow, (enc[..., :2].astype(float) - 2 ** 15) / 64, atol=1e-6)
    np.testing.assert_array_equal(valid, enc[..., 2] > 0)


def test_bad_files(tmp_path):
    bad = tmp_path / "x.flo"
    bad.write_bytes(b"abcdefghijkl")
    with pytest.raises(UserError, match="not a Middlebury"):
        read_flo(str(bad))
    with pytest.raises(UserError, match="not a PNG"):
        read_kitti_flow(str(bad))


def test_kitti_files_agree_with_opencv(tmp_path, rng):
    """KITTI PNGs written here read back by OpenCV (BGR, IMREAD_ANYDEPTH, as RAFT's
    frame_utils does), and OpenCV's PNGs (its own row filters) read here."""
    cv2 = pytest.importorskip("cv2")
    flow = np.round(rng.randn(7, 11, 2) * 30 * 64) / 64
    flow[3, 4] = np.nan
    ours = str(tmp_path / "ours.png")
    write_kitti_flow(ours, flow)
    raw = cv2.imread(ours, cv2.IMREAD_ANYDEPTH | cv2.IMREAD_COLOR)[..., ::-1].astype(float)
    assert raw.dtype == float and raw.shape == (7, 11, 3)
    valid = raw[..., 2] > 0
    np.testing.assert_array_equal(valid, np.isfinite(flow[..., 0]))
    np.testing.assert_allclose((raw[..., :2][valid] - 2 ** 15) / 64.0, flow[valid], atol=1e-9)
    enc = rng.randint(0, 65536, (9, 13, 3)).astype(np.uint16)
    enc[..., 2] = rng.randint(0, 2, (9, 13))
    theirs = str(tmp_path / "theirs.png")
    assert cv2.imwrite(theirs, enc[..., ::-1])
    got, got_valid = read_kitti_flow(theirs)
    np.testing.assert_allclose(got, (enc[..., :2].astype(float) - 2 ** 15) / 64, atol=1e-6)
    np.testing.assert_array_equal(got_valid, enc[..., 2] > 0)
