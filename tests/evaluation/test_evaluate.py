"""Evaluation: peers on known motion, skipped peers, the report files, the script end to end."""

import json
import os

import numpy as np
import pytest
from PIL import Image

from vidcorr.evaluation import evaluate
from vidcorr.evaluation import peers
from vidcorr.apps.cli import evaluate_main
from vidcorr.errors import UserError
from vidcorr.io.flowio import write_flo
from vidcorr.evaluation.groundtruth import EvalPair, GroundTruth
from vidcorr.training.synthetic import moving_triplet



def _shifted_pair(shift=3, h=48, w=96):
    """Frame t and t+2 of a texture moving ``shift`` px right per frame pair."""
    frames, _ = moving_triplet(np.random.RandomState(5), h, w, velocity=(0.0, shift / 2.0))
    flow = np.zeros((h, w, 2), np.float32)
    flow[..., 0] = shift
    return EvalPair("shifted", frames[0], frames[2], GroundTruth(flow, np.ones((h, w), bool)))


def test_zero_peer_scores_match_hand_computation():
    pair = _shifted_pair(shift=3)
    rows, skipped = evaluate.evaluate_matching([pair], {}, methods=["zero"], stride=8, width=0,
                                               log=lambda m: None)
    (row,) = rows
    assert row["method"] == "zero" and skipped == {}
    # zero flow against a uniform 3 px motion: every error is exactly 3
    assert row["median_epe"] == 3.0 and row["acc@2"] == 0.0 and row["acc@5"] == 1.0
    assert row["matches"] == (48 // 8) * (96 // 8) and row["coverage"] == 1.0


def test_dense_peers_recover_known_motion():
    if not peers.peer_available("dis")[0]:
        pytest.skip("OpenCV (the eval extra) is not installed")
    pair = _shifted_pair(shift=3)
    rows, _ = evaluate.evaluate_matching([pair], {}, methods=["dis", "sift"], stride=8, width=0,
                                         log=lambda m: None)
    by_method = {r["method"]: r for r in rows}
    assert by_method["dis"]["acc@1"] > 0.8
    assert by_method["sift"]["matches"] > 10 and by_method["sift"]["acc@1"] > 0.8


def test_missing_opencv_skips_peers_and_says_which_extra(monkeypatch):
    def no_cv2(what="the OpenCV peers"):
        raise UserError("%s need OpenCV: %s" % (what, peers.EXTRA))
    monkeypatch.setattr(peers, "require_cv2", no_cv2)
    messages = []
    rows, skipped = evaluate.evaluate_matching([_shifted_pair()], {}, methods=list(peers.PEERS),
                                               stride=8, width=0, log=messages.append)
    assert [r["method"] for r in rows] == ["zero"]
    assert set(skipped) == {"sift", "dis", "deepflow", "farneback"}
    assert all("pip install -e .[eval]" in m for m in messages) and len(messages) == 4
    with pytest.raises(UserError, match=r"\.\[eval\]"):
        peers.dense_flow("dis", np.zeros((8, 8, 3)), np.zeros((8, 8, 3)))
    pair = _shifted_pair()
    inputs = np.concatenate([pair.image1, pair.image2], -1)[None]
    interp = evaluate.interpolation_quality({}, inputs, pair.image1[None], log=messages.append)
    assert [r["method"] for r in interp] == ["frame average"]


def test_interpolation_quality_frame_average_by_hand():
    rng = np.random.RandomState(2)
    inputs = rng.rand(3, 16, 24, 6).astype(np.float32)
    targets = rng.rand(3, 16, 24, 3).astype(np.float32)
    rows = evaluate.interpolation_quality({}, inputs, targets, log=lambda m: None)
    avg = next(r for r in rows if r["method"] == "frame average")
    mean = 0.5 * (inputs[..., :3] + inputs[..., 3:])
    mse = ((mean.astype(np.float64) - targets) ** 2).mean(axis=(1, 2, 3))
    assert avg["psnr"] == pytest.approx(np.mean(-10 * np.log10(mse)), rel=1e-6)
    assert avg["triplets"] == 3


def test_unknown_method_is_refused():
    with pytest.raises(UserError, match="unknown method"):
        evaluate.evaluate_matching([_shifted_pair()], {}, methods=["orb"], log=lambda m: None)


def _write_pair(tmp_path, pair, flow_shape=None):
    paths = [str(tmp_path / n) for n in ("f1.png", "f2.png", "gt.flo")]
    for path, image in zip(paths, (pair.image1, pair.image2)):
        Image.fromarray(np.rint(image * 255).astype(np.uint8)).save(path)
    flow = pair.truth.flow if flow_shape is None else np.zeros(flow_shape, np.float32)
    write_flo(paths[2], flow)
    return paths


def test_script_end_to_end_with_an_untrained_network(tmp_path, capsys):
    paths = _write_pair(tmp_path, _shifted_pair(shift=2, h=32, w=64))
    out = str(tmp_path / "report" / "eval")
    code = evaluate_main(["--untrained", "0.125", "--pairs", "", "--gt-pair"] + paths +
                         ["--methods", "zero", "--stride", "8", "--out", out])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "| f1 | 64x32 | vidcorr untrained w0.125 |" in printed.out
    assert "no interpolation scores" in printed.out
    for ext in (".md", ".json"):
        assert os.path.getsize(out + ext) > 0
    try:
        import matplotlib  # noqa: F401
        with open(out + ".png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert "no chart: matplotlib is missing" in printed.out and not os.path.exists(out + ".png")
    with open(out + ".json") as f:
        report = json.load(f)
    zero = next(r for r in report["matching"] if r["method"] == "zero")
    assert zero["median_epe"] == 2.0 and zero["matches"] == 4 * 8
    # every zero-flow match is 2 px off: any ranking keeps acc@1 at 0 and acc@5 at 1
    assert zero["acc@1/25%"] == zero["acc@1/50%"] == 0.0
    assert zero["acc@5/25%"] == zero["acc@5/50%"] == 1.0
    model = next(r for r in report["matching"] if r["method"].startswith("vidcorr"))
    # the valid ones of the 4 x 8 grid (min_confidence drops texture-poor matches)
    assert 0 < model["matches"] <= 4 * 8 and "acc@1/25%" in model


def test_script_bad_input_one_line(tmp_path, capsys):
    paths = _write_pair(tmp_path, _shifted_pair(h=32, w=64), flow_shape=(30, 64, 2))
    code = evaluate_main(["--untrained", "0.125", "--pairs", "", "--gt-pair"] + paths +
                         ["--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "is 64x30 but the images are 64x32" in err
    assert len(err.strip().splitlines()) == 1
    assert not os.path.exists(str(tmp_path / "x.md"))
    assert evaluate_main(["--untrained", "0.125", "--pairs", "kitti"]) == 2
    assert "unknown evaluation pair 'kitti'" in capsys.readouterr().err


def test_script_reads_the_held_out_triplets_before_the_matching(tmp_path, capsys):
    """A data config whose video is missing fails before any pair is matched: the middle
    frames are scored last, and finding the video missing then would lose the work."""
    paths = _write_pair(tmp_path, _shifted_pair(shift=2, h=32, w=64))
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "configs", "tiny_test.json")) as f:
        config = json.load(f)
    missing = str(tmp_path / "gone.mp4")
    config["data"].update(synthetic=False, sources=[missing])
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    out = str(tmp_path / "eval")
    code = evaluate_main(["--untrained", "0.125", "--pairs", "", "--gt-pair"] + paths +
                         ["--methods", "zero", "--stride", "8", "--config", str(config_path),
                          "--out", out, "--no-progress"])
    printed = capsys.readouterr()
    assert code == 2 and printed.err.startswith("error:") and "gone.mp4" in printed.err
    assert len(printed.err.strip().splitlines()) == 1
    assert "f1 / " not in printed.out and "acc@5" not in printed.out  # nothing was matched
    assert not any(os.path.exists(out + ext) for ext in (".md", ".json", ".png"))


def test_midpoint_warp_moves_each_frame_half_way():
    """A smooth texture shifted by 4 px between the frames: the DIS midpoint warp must be
    close to the true middle frame (2 px from each) and far closer than the frame average;
    the peer is in the README's interpolation table."""
    pytest.importorskip("cv2")
    frames, _ = moving_triplet(np.random.RandomState(3), 64, 96, velocity=(0.0, 2.0))
    middle = peers.midpoint_warp(frames[0], frames[2])
    inner = (slice(8, -8), slice(8, -8))
    warp_err = np.abs(middle[inner] - frames[1][inner]).mean()
    average_err = np.abs(0.5 * (frames[0] + frames[2])[inner] - frames[1][inner]).mean()
    assert middle.shape == frames[1].shape and middle.dtype == np.float32
    assert warp_err < 0.25 * average_err, (warp_err, average_err)


def test_script_scores_with_and_without_the_refinement_in_one_run(tmp_path, capsys):
    paths = _write_pair(tmp_path, _shifted_pair(shift=2, h=32, w=64))
    out = str(tmp_path / "eval")
    code = evaluate_main(["--untrained", "0.125", "--pairs", "", "--gt-pair"] + paths +
                         ["--methods", "", "--stride", "8", "--refine", "none,variational",
                          "--no-progress", "--out", out])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    with open(out + ".json") as f:
        report = json.load(f)
    assert [r["method"] for r in report["matching"]] == [
        "vidcorr untrained w0.125 refine none", "vidcorr untrained w0.125 refine variational"]
    assert report["meta"]["refines"] == ["none", "variational"]
    assert "--refine: expected variational or none" in _bad_refine(tmp_path, capsys)


def _bad_refine(tmp_path, capsys):
    with pytest.raises(SystemExit):
        evaluate_main(["--refine", "none,lk", "--out", str(tmp_path / "x")])
    return capsys.readouterr().err


def test_the_report_prefix_of_out():
    assert evaluate.report_prefix("results/run1") == "results/run1"
    assert evaluate.report_prefix("results/") == os.path.join("results", "eval")
    for empty in ("", "  "):
        with pytest.raises(UserError, match="--out is empty: give an output prefix"):
            evaluate.report_prefix(empty)


def test_out_as_a_folder_and_no_empty_folder_after_a_failure(tmp_path, capsys):
    paths = _write_pair(tmp_path, _shifted_pair(shift=2, h=32, w=64))
    common = ["--untrained", "0.125", "--pairs", "", "--methods", "zero", "--stride", "8",
              "--no-progress"]
    folder = str(tmp_path / "reports") + os.sep
    assert evaluate_main(common + ["--gt-pair"] + paths + ["--out", folder]) == 0
    assert sorted(n for n in os.listdir(folder) if not n.endswith(".png")) == [
        "eval.json", "eval.md"]  # not hidden ".md" and ".json"
    assert evaluate_main(common + ["--gt-pair"] + paths + ["--out", ""]) == 2
    assert "--out is empty" in capsys.readouterr().err
    deep = tmp_path / "new" / "deeper" / "eval"
    assert evaluate_main(common + ["--gt-pair", paths[0], paths[1], str(tmp_path / "no.flo"),
                                   "--out", str(deep)]) == 2
    assert not (tmp_path / "new").exists()  # the failed run took back the folders it made


def test_a_run_whose_data_is_not_here_is_scored_without_interpolation(random_checkpoint,
                                                                      tmp_path, capsys):
    import shutil

    from vidcorr.io import rundir
    from vidcorr.model.config import config_from_dict

    run = tmp_path / "run"
    run.mkdir()
    for name in os.listdir(os.path.dirname(random_checkpoint)):
        shutil.copy(os.path.join(os.path.dirname(random_checkpoint), name), str(run))
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "configs",
                           "tiny_test.json")) as f:
        data = json.load(f)
    data["model"] = {"width": 0.125}  # the random checkpoint's network
    data["data"].update(synthetic=False, sources=["pkg:numpy/resources/images/cockatoo.mp4"])
    rundir.write_config(str(run), config_from_dict(data))
    paths = _write_pair(tmp_path, _shifted_pair(shift=2, h=32, w=64))
    out = str(tmp_path / "eval")
    code = evaluate_main(["--checkpoint", os.path.join(str(run), "model.ckpt"), "--pairs", "",
                          "--gt-pair"] + paths + ["--methods", "zero", "--stride", "8",
                                                  "--out", out, "--no-progress"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "no interpolation scores: the run's data cannot be read here" in printed.out
    assert "the package 'numpy' is installed" in printed.out
    with open(out + ".json") as f:
        report = json.load(f)
    assert report["interpolation"] == [] and "cockatoo.mp4" in report["meta"]["no_interpolation"]
