"""Faults a user's run meets: SIGKILL mid-training, concurrent writers, damaged checkpoints."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from vidcorr.io import checkpoints
from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.matching import Matcher, Matches
from vidcorr.training.synthetic import moving_triplet

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCRIPTS = os.path.join(ROOT, "scripts")


def _script(name, args, **kwargs):
    return [sys.executable, os.path.join(SCRIPTS, name)] + list(args)


def _kept(run):
    """The checkpoints the index lists, each read in full (every tensor)."""
    state = tf.train.get_checkpoint_state(run)
    out = []
    for path in state.all_model_checkpoint_paths:
        prefix = os.path.join(run, os.path.basename(path))
        reader = tf.train.load_checkpoint(prefix)
        for name, _ in tf.train.list_variables(prefix):
            assert np.all(np.isfinite(reader.get_tensor(name))), (prefix, name)
        out.append(checkpoints.checkpoint_step(prefix))
    return out


def test_sigkill_at_a_random_step_then_resume(tmp_path):
    """A run killed with SIGKILL (no chance to save) resumes from its last checkpoint."""
    with open(os.path.join(ROOT, "configs", "tiny_test.json")) as f:
        config = json.load(f)
    config["model"]["width"] = 0.125
    config["data"].update(crop_width=32, val_triplets=8)
    config["train"].update(checkpoint_every=2, keep_checkpoints=3, validate_every=1000,
                           summary_every=1000, steps=100000)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    run = str(tmp_path / "run")
    proc = subprocess.Popen(_script("train.py", ["--config", str(path), "--run-dir", run,
                                                 "--no-progress"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 180
        target = np.random.RandomState(int(time.time())).randint(3, 9)  # checkpoints to wait for
        while time.time() < deadline and proc.poll() is None:
            state = os.path.isdir(run) and tf.train.get_checkpoint_state(run)
            if state and checkpoints.checkpoint_step(
                    os.path.join(run, os.path.basename(state.model_checkpoint_path))) >= 2 * target:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(np.random.uniform(0.0, 0.5))  # anywhere in the step, even inside a save
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    kept = _kept(run)
    assert len(kept) <= 3 and kept == sorted(kept) and all(s % 2 == 0 for s in kept), kept
    last = kept[-1]
    assert last >= 2 * target
    resumed = subprocess.run(_script("train.py", ["--config", str(path), "--run-dir", run,
                                                  "--resume", "--steps", str(last + 3),
                                                  "--no-progress"]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed" in resumed.stderr and "at step %d" % last in resumed.stderr
    after = _kept(run)
    assert after[-1] == last + 3 and len(after) == 3  # the older ones rotated out
    assert sorted(int(n.split("-")[1].split(".")[0]) for n in os.listdir(run)
                  if n.endswith(".index")) == after


def test_concurrent_runs_on_the_same_pair_leave_intact_outputs(random_checkpoint, tmp_path):
    frames, _ = moving_triplet(np.random.RandomState(3), 48, 96, velocity=(1.0, -1.0))
    paths = []
    for i in (0, 2):
        paths.append(str(tmp_path / ("f%d.png" % i)))
        Image.fromarray((frames[i] * 255).astype(np.uint8)).save(paths[-1])
    out = str(tmp_path / "out")
    listing = tmp_path / "pairs.txt"
    listing.write_text(("%s %s\n" % tuple(paths)) * 3)  # the same pair three times per run
    procs = [subprocess.Popen(_script("correspond.py", ["--pairs", str(listing), "--checkpoint",
                                                        random_checkpoint, "--stride", "8",
                                                        "--levels", "1", "--out", out,
                                                        "--no-progress"]),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err
    assert sorted(os.listdir(out)) == sorted("f0__f2" + x for x in
                                             (".npz", ".txt", ".flo", "_kitti.png", ".png"))
    written = Matches.load(os.path.join(out, "f0__f2.npz"))
    matcher = Matcher(random_checkpoint, levels=1)
    expected = matcher.match(paths[0], paths[1], stride=8)
    matcher.close()
    np.testing.assert_allclose(written.p1, expected.p1, atol=1e-6)
    np.testing.assert_allclose(written.p3, expected.p3, atol=1e-6)
    table = np.loadtxt(os.path.join(out, "f0__f2.txt"))
    assert table.shape == (len(expected), 10)


def _damaged_copy(prefix, tmp_path):
    folder = tmp_path / "damaged"
    folder.mkdir()
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(os.path.basename(prefix)):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), str(folder / name))
    copy = str(folder / os.path.basename(prefix))
    data = copy + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    return copy, data


def test_truncated_checkpoint_data_is_one_line_naming_the_file(random_checkpoint, tmp_path):
    copy, data = _damaged_copy(random_checkpoint, tmp_path)
    with pytest.raises(UserError, match="damaged or truncated .%s" % data):
        Matcher(copy)
    proc = subprocess.run(_script("correspond.py", [os.path.join(ROOT, "examples",
                                                                 "cockatoo_262.png"),
                                                    os.path.join(ROOT, "examples",
                                                                 "cockatoo_264.png"),
                                                    "--checkpoint", copy, "--out",
                                                    str(tmp_path / "out")]),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert len(lines) == 1 and data in lines[0]
    assert not (tmp_path / "out").exists()
