"""vidcorr-correspond (vidcorr.apps.correspond): inputs, outputs, shards and errors."""

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
from tests.readout.test_matching import _correspond, _write_pair


def test_list_pairs_from_a_list_a_folder_and_a_video(tmp_path):
    from vidcorr.apps.correspond import list_pairs

    folder = tmp_path / "frames"
    folder.mkdir()
    for i in (1, 2, 10):  # natural order: f1, f2, f10
        Image.fromarray(np.full((8, 8, 3), i, np.uint8)).save(str(folder / ("f%d.png" % i)))
    pairs = list_pairs(frames_dir=str(folder), gap=1)
    assert [(n, os.path.basename(a), os.path.basename(b)) for n, a, b, _ in pairs] == [
        ("f1__f2", "f1.png", "f2.png"), ("f2__f10", "f2.png", "f10.png")]
    listing = tmp_path / "pairs.txt"
    listing.write_text("# comment\nframes/f1.png frames/f10.png\n\n")
    [(name, a, b, origin)] = list_pairs(pairs_file=str(listing))
    assert name == "f1__f10" and a == str(folder / "f1.png") and b == str(folder / "f10.png")
    assert origin == str(listing) + ":2"
    listing.write_text("frames/f1.png\n")
    with pytest.raises(UserError, match="pairs.txt:1: expected two paths"):
        list_pairs(pairs_file=str(listing))
    with pytest.raises(UserError, match="exactly one"):
        list_pairs(images=["a.png", "b.png"], frames_dir=str(folder))
    av = pytest.importorskip("av")
    video = str(tmp_path / "clip.mp4")
    with av.open(video, "w") as container:  # 6 frames whose brightness codes the index
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(6):
            frame = av.VideoFrame.from_ndarray(np.full((32, 32, 3), 40 * i, np.uint8), "rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    pairs = list_pairs(video=video, start=1, count=2, gap=3)
    assert [p.name for p in pairs] == ["clip_00001__00004", "clip_00002__00005"]
    levels = [(p.frame_t.mean() / 40.0, p.frame_t2.mean() / 40.0) for p in pairs]
    np.testing.assert_allclose(levels, [(1, 4), (2, 5)], atol=0.15)
    with pytest.raises(UserError, match="do not fit"):
        list_pairs(video=video, start=4, count=1, gap=3)


def test_correspond_script_writes_all_outputs(random_checkpoint, tmp_path):
    from vidcorr.io.flowio import read_flo, read_kitti_flow
    a, b = _write_pair(tmp_path)
    out = tmp_path / "out"
    proc = _correspond([a, b, "--checkpoint", random_checkpoint, "--stride", "8", "--out",
                        str(out), "--no-progress", "--min-confidence", "0", "--refine", "none"])
    assert proc.returncode == 0, proc.stderr
    assert "f0__f2: 72 matches" in proc.stdout
    base = str(out / "f0__f2")
    matches = Matches.load(base + ".npz")
    assert len(matches) == 6 * 12 and matches.size == (48, 96)
    flo = read_flo(base + ".flo")
    kitti, valid = read_kitti_flow(base + "_kitti.png")
    np.testing.assert_allclose(kitti[valid], flo[valid], atol=1 / 64.0)
    assert valid.sum() == np.isfinite(flo[..., 0]).sum() > 0
    table = np.loadtxt(base + ".txt")
    assert table.shape == (72, 10)
    with Image.open(base + ".png") as picture:
        assert picture.format == "PNG" and picture.size == (2 * 96, 2 * 48)


def test_correspond_script_bad_input_leaves_nothing(random_checkpoint, tmp_path):
    a, _ = _write_pair(tmp_path)
    Image.fromarray(np.zeros((40, 80, 3), np.uint8)).save(str(tmp_path / "small.png"))
    out = tmp_path / "out"
    cases = [
        ([a, str(tmp_path / "small.png")], "differ in size"),
        ([a, str(tmp_path / "missing.png")], "image not found"),
        ([a, a, "--stride", "0"], "stride"),
        ([a], "exactly two images"),
    ]
    for args, message in cases:
        proc = _correspond(args + ["--checkpoint", random_checkpoint, "--out", str(out),
                                   "--no-progress"])
        assert proc.returncode == 2
        lines = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
        assert len(lines) == 1 and message in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr
        assert not out.exists()  # a failed run leaves no empty folder either


def test_correspond_script_bad_out_fails_before_work(random_checkpoint, tmp_path):
    """A file as --out, a folder under a file, an output that is a folder: one line each."""
    a, b = _write_pair(tmp_path)
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    blocked = tmp_path / "blocked"
    (blocked / "f0__f2.png").mkdir(parents=True)
    cases = [(str(a_file), "exists and is not a folder"),
             (str(a_file / "sub"), "cannot be written"),
             ("/proc/vidcorr-out", "cannot be written"),
             (str(blocked), "f0__f2.png: it is a folder")]
    for out, message in cases:
        proc = _correspond([a, b, "--checkpoint", random_checkpoint, "--out", out,
                            "--no-progress", "--max-size", "64"])
        assert proc.returncode == 2, proc.stderr
        lines = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
        assert len(lines) == 1 and message in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr
    assert a_file.read_text() == "keep"
    assert sorted(os.listdir(str(blocked))) == ["f0__f2.png"]
    proc = _correspond([a, b, "--checkpoint", random_checkpoint, "--max-size", "-5"])
    assert proc.returncode == 2 and "--max-size must be an integer of at least 32 pixels, got -5" in proc.stderr


def test_correspond_checks_input_before_loading_the_network(tmp_path):
    """Bad pairs and a bad stride fail without importing TensorFlow or reading the
    checkpoint; the checkpoint is read (and a missing one reported) once a pair is ready."""
    code = """if True:
        import sys
        from vidcorr.apps.correspond import correspond_pairs
        from vidcorr.errors import UserError
        a, small, out = sys.argv[1:4]

        def missing():  # TensorFlow loads only when a pair is ready
            from vidcorr.readout.matching import Matcher
            return Matcher("no/such/run")

        for stride in (0, 2.5):
            try:
                correspond_pairs([("p", a, a)], out, missing, stride=stride)
            except UserError as err:
                assert "stride must be an integer" in str(err), err
            else:
                raise AssertionError("stride %r accepted" % stride)
        results = correspond_pairs([("p", a, small), ("q", a, out + "/missing.png")], out,
                                   missing, stride=8)
        assert ["differ in size" in results[0].error,
                "image not found" in results[1].error] == [True, True], results
        assert "tensorflow" not in sys.modules
        try:
            correspond_pairs([("p", a, small), ("r", a, a)], out, missing, stride=8)
        except UserError as err:
            assert "checkpoint not found: no/such/run" in str(err), err
        else:
            raise AssertionError("a missing checkpoint was not reported")
        print("ok")
    """
    a, _ = _write_pair(tmp_path)
    Image.fromarray(np.zeros((40, 80, 3), np.uint8)).save(str(tmp_path / "small.png"))
    proc = subprocess.run([sys.executable, "-c", code, a, str(tmp_path / "small.png"),
                           str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert not (tmp_path / "out").exists()


def test_shards_cover_a_pairs_list_once_and_reruns_skip_finished_pairs(random_checkpoint,
                                                                       tmp_path):
    from vidcorr.apps.correspond import parse_shard, shard_pairs

    items = list(range(7))
    shards = [shard_pairs(items, (k, 3)) for k in (1, 2, 3)]
    assert sorted(sum(shards, [])) == items and shards[0] == [0, 3, 6]
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(UserError, match="--shard"):
            parse_shard(bad)
    frames = []
    for i in range(4):
        frames.append(str(tmp_path / ("f%d.png" % i)))
        Image.fromarray(np.random.RandomState(i).randint(0, 255, (40, 64, 3), np.uint8)).save(
            frames[-1])
    listing = tmp_path / "pairs.txt"
    listing.write_text("".join("%s %s\n" % (frames[i], frames[i + 1]) for i in range(3)))
    out = tmp_path / "out"
    common = ["--pairs", str(listing), "--checkpoint", random_checkpoint, "--stride", "16",
              "--levels", "1", "--refine", "none", "--out", str(out), "--no-progress"]
    done = []
    for shard in ("1/2", "2/2"):
        proc = _correspond(common + ["--shard", shard])
        assert proc.returncode == 0, proc.stderr
        done.append([line.split(":")[0] for line in proc.stdout.splitlines()])
    assert done == [["f0__f1", "f2__f3"], ["f1__f2"]]
    names = sorted(os.listdir(str(out)))
    assert len(names) == 3 * 5 and not any(n.endswith(".part") for n in names)
    stamps = {n: os.stat(str(out / n)).st_mtime_ns for n in names}
    os.remove(str(out / "f1__f2.flo"))  # an unfinished pair is done again
    proc = _correspond(common)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["f1__f2"]
    assert "skipping 2 of 3 pairs" in proc.stderr
    assert all(os.stat(str(out / n)).st_mtime_ns == stamps[n] for n in names
               if not n.startswith("f1__f2"))
    proc = _correspond(common + ["--overwrite", "--shard", "1/2"])
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["f0__f1", "f2__f3"]


def _pair(frame_t, frame_t2):
    from vidcorr.apps.correspond import Pair, _stem
    return Pair("%s__%s" % (_stem(frame_t), _stem(frame_t2)), frame_t, frame_t2)


def test_colliding_names_take_the_shortest_distinguishing_parts():
    from vidcorr.apps.correspond import unique_names

    deep = "/" + "/".join("level%d" % i for i in range(40))  # a deep but valid folder
    names = lambda pairs: [p.name for p in unique_names(pairs)]  # noqa: E731
    # stems collide in one folder: the extensions tell them apart, no folder is named
    assert names([_pair(deep + "/f1.jpg", deep + "/f2.jpg"),
                  _pair(deep + "/f1.png", deep + "/f2.png")]) == ["f1_jpg__f2_jpg",
                                                                  "f1_png__f2_png"]
    # the nearest folder in which the paths differ, not the ones between or above it
    assert names([_pair("/data/seq1/cam/f0.png", "/data/seq1/cam/f2.png"),
                  _pair("/data/seq2/cam/f0.png", "/data/seq2/cam/f2.png"),
                  _pair("/data/seq2/cam/f5.png", "/data/seq2/cam/f7.png")]) == [
        "seq1_f0__seq1_f2", "seq2_f0__seq2_f2", "f5__f7"]
    # the same pair listed twice keeps one name; paths spelled differently are one file
    assert names([_pair("/a/f0.png", "/a/f2.png"), _pair("/a/./f0.png", "/a/f2.png")]) == [
        "f0__f2", "f0__f2"]
    # names too long for a file keep their start and get a digest of their paths
    long_a, long_b = "/x/" + "a" * 200 + ".png", "/x/" + "b" * 200 + ".png"
    [name] = names([_pair(long_a, long_b)])
    assert len(name) == 200 and name.startswith("a" * 150)
    assert names([_pair(long_a, long_b)]) == [name]  # the same on a rerun
    assert names([_pair(long_a, "/x/" + "b" * 199 + "c.png")]) != [name]


def test_a_list_names_each_pair_once_and_frames_skip_hidden_files(tmp_path):
    from vidcorr.apps.correspond import list_pairs

    for name in ("f0.png", "f1.png", "f2.png", ".f1.png", "._f2.png"):
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(str(tmp_path / name), format="PNG")
    assert [p.name for p in list_pairs(frames_dir=str(tmp_path), gap=1)] == ["f0__f1",
                                                                           "f1__f2"]
    listing = tmp_path / "pairs.txt"
    listing.write_text("f0.png f2.png\n" * 2000 + "f0.png f1.png\n./f0.png f2.png\n")
    pairs = list_pairs(pairs_file=str(listing))
    assert [(p.name, p.origin) for p in pairs] == [("f0__f2", str(listing) + ":1"),
                                                   ("f0__f1", str(listing) + ":2001")]


_KILLED_PAIR = """
import os, sys
from vidcorr.apps.correspond import correspond_pairs
from vidcorr.io import files
from vidcorr.readout.matching import Matcher
real, calls = os.replace, []
def replace(a, b):
    calls.append(b)
    if len(calls) == 3:
        os._exit(9)  # killed between a pair's renames: no clean-up runs
    real(a, b)
files.os.replace = replace
correspond_pairs([("p", sys.argv[2], sys.argv[3])], sys.argv[4], Matcher(sys.argv[1]), stride=16,
                 progress=False)
"""


def test_a_pair_killed_between_its_renames_is_incomplete_and_redone(random_checkpoint,
                                                                      tmp_path):
    from vidcorr.apps.correspond import OUTPUT_SUFFIXES, correspond_pairs, finished

    a, b = _write_pair(tmp_path, (40, 64))
    out = str(tmp_path / "out")
    code = subprocess.call([sys.executable, "-c", _KILLED_PAIR, random_checkpoint, a, b, out],
                           cwd=ROOT)
    assert code == 9
    names = sorted(os.listdir(out))
    published = [n for n in names if not n.endswith(".part")]
    assert published == ["p.png", "p_kitti.png"]  # the .npz, renamed last, is missing
    assert len(names) == 5 and not finished(out, "p")
    results = correspond_pairs([("p", a, b)], out, Matcher(random_checkpoint), stride=16,
                               progress=False)
    assert [r.name for r in results] == ["p"] and finished(out, "p")
    assert sorted(os.listdir(out)) == sorted("p" + s for s in OUTPUT_SUFFIXES)  # no .part


def test_a_full_disk_after_some_pairs_names_those_finished(random_checkpoint, tmp_path,
                                                           monkeypatch):
    import errno

    from vidcorr.apps import correspond

    a, b = _write_pair(tmp_path, (40, 64))
    writes = []
    real = correspond.write_outputs

    def write(matches, frame_t, frame_t2, out_dir, name):
        writes.append(name)
        if len(writes) == 3:
            raise UserError("cannot write %s.npz: %s" % (name, os.strerror(errno.ENOSPC)))
        return real(matches, frame_t, frame_t2, out_dir, name)
    monkeypatch.setattr(correspond, "write_outputs", write)
    pairs = [("p%d" % i, a, b) for i in range(4)]
    with pytest.raises(UserError) as err:
        correspond.correspond_pairs(pairs, str(tmp_path / "out"), Matcher(random_checkpoint),
                                    stride=16, progress=False)
    assert str(err.value) == ("cannot write p2.npz: No space left on device; 2 pair(s) of this "
                              "run finished before it: p0, p1")
