"""vidcorr-track (vidcorr.apps.cli_track): the command end to end on a short clip of known
motion, and bad input as one-line errors with nothing written."""

import csv
import os
import re

import numpy as np
import pytest
from PIL import Image

from tests.apps.test_track import H, LENGTH, W, clip_dir  # noqa: F401 (a fixture)
from vidcorr.apps.cli_track import track_main
from vidcorr.apps.track import OUTPUTS, Tracks


def test_the_command_writes_every_output(clip_dir, tmp_path, capsys):
    query_file = tmp_path / "q.txt"
    query_file.write_text("# t x y\n0 20.5 30\n3 50 20.25\n\n8 70 40  # the last frame\n")
    out = tmp_path / "out"
    assert track_main([clip_dir, "--queries", str(query_file), "--out", str(out),
                       "--no-progress", "--every", "2"]) == 2  # t=3 is not tracked
    assert "query 2 (t=3) is not at a tracked frame" in capsys.readouterr().err
    assert not out.exists()
    assert track_main([clip_dir, "--queries", str(query_file), "--out", str(out),
                       "--no-progress"]) == 0
    assert sorted(os.listdir(str(out))) == sorted(OUTPUTS)
    result = Tracks.load(str(out / "tracks.npz"))
    assert result.tracks.shape == (3, LENGTH, 2) and result.visible.shape == (3, LENGTH)
    np.testing.assert_array_equal(result.frames, np.arange(LENGTH))
    np.testing.assert_allclose(result.tracks[[0, 1, 2], [0, 3, 8]], [[20.5, 30], [50, 20.25],
                                                                     [70, 40]], atol=1e-4)
    rows = list(csv.DictReader(open(str(out / "tracks.csv"))))
    assert len(rows) == 3 * LENGTH and rows[LENGTH + 3]["point"] == "1"
    assert float(rows[LENGTH + 3]["x"]) == pytest.approx(50.0, abs=1e-3)
    assert Image.open(str(out / "tracks.png")).size == (W, H)
    gif = Image.open(str(out / "tracks.gif"))
    assert gif.n_frames == LENGTH
    # a grid, and a second run replaces the folder whole
    assert track_main([clip_dir, "--grid", "16", "--out", str(out), "--no-progress",
                       "--start", "2", "--end", "6", "--consistency"]) == 0  # with the swap
    result = Tracks.load(str(out / "tracks.npz"))
    np.testing.assert_array_equal(result.frames, [2, 3, 4, 5, 6])
    assert len(result.tracks) == (H // 16) * (W // 16)


def _bad_inputs(tmp_path, clip_dir):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for i, size in enumerate([(W, H), (W, H), (W + 2, H)]):
        Image.new("RGB", size).save(str(mixed / ("%d.png" % i)))
    short = tmp_path / "short"
    short.mkdir()
    for i in range(2):
        Image.new("RGB", (W, H)).save(str(short / ("%d.png" % i)))
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("0 120 10\n")
    late = tmp_path / "late.txt"
    late.write_text("20 10 10\n")
    garbled = tmp_path / "garbled.txt"
    garbled.write_text("0 1\n")
    return [
        ([str(mixed), "--grid", "8"], "frames differ in size"),
        ([str(short), "--grid", "8"], "fewer than 3"),
        ([str(broken), "--grid", "8"], "cannot decode video|decoding video needs PyAV"),
        ([clip_dir, "--queries", str(empty)], "holds no queries"),
        ([clip_dir, "--queries", str(outside)], "outside the 96x64 frame"),
        ([clip_dir, "--queries", str(late)], "not at a tracked frame"),
        ([clip_dir, "--queries", str(garbled)], "a query is 't x y'"),
        ([clip_dir, "--queries", str(tmp_path / "missing.txt")], "cannot read the query file"),
        ([clip_dir, "--grid", "0"], "--grid must be"),
        ([clip_dir, "--grid", "8", "--every", "0"], "--every must be"),
        ([clip_dir, "--grid", "8", "--end", "1"], "fewer than 3"),
        ([str(tmp_path / "nowhere"), "--grid", "8"], "not found"),
    ]


def test_bad_input_is_one_line_and_nothing_is_written(clip_dir, tmp_path, capsys):
    for args, message in _bad_inputs(tmp_path, clip_dir):
        out = tmp_path / "out"
        code = track_main(args + ["--out", str(out), "--no-progress"])
        err = capsys.readouterr().err.strip()
        assert code == 2, (args, err)
        assert re.search(message, err) and len(err.splitlines()) == 1, (args, err)
        assert not out.exists()


def test_a_folder_that_is_not_an_earlier_output_is_refused(clip_dir, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert track_main([clip_dir, "--grid", "16", "--out", str(out), "--no-progress"]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert os.listdir(str(out)) == ["notes.txt"]
