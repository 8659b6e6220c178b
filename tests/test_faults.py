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

from vidcorr.io import rundir
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
        out.append(rundir.checkpoint_step(prefix))
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
        seed = int(os.environ.get("VIDCORR_TEST_SEED", "0"))  # reproducible; vary it to explore
        target = np.random.RandomState(seed).randint(3, 9)  # checkpoints to wait for
        while time.time() < deadline and proc.poll() is None:
            state = os.path.isdir(run) and tf.train.get_checkpoint_state(run)
            if state and rundir.checkpoint_step(
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


OUTPUTS = (".npz", ".txt", ".flo", "_kitti.png", ".png")


def _frames(folder, seed=3):
    os.makedirs(str(folder), exist_ok=True)
    frames, _ = moving_triplet(np.random.RandomState(seed), 48, 96, velocity=(1.0, -1.0))
    paths = []
    for i in (0, 2):
        paths.append(str(folder / ("f%d.png" % i)))
        Image.fromarray((frames[i] * 255).astype(np.uint8)).save(paths[-1])
    return paths


def test_a_pairs_list_with_a_bad_entry_in_the_middle(random_checkpoint, tmp_path):
    """Pairs 1 and 3 (same file names in two folders) are both written under distinct names,
    readable by others under umask 022; the missing pair 2 is named with its line; exit 1."""
    x, y = _frames(tmp_path / "x"), _frames(tmp_path / "y", seed=4)
    listing = tmp_path / "pairs.txt"
    listing.write_text("\ufeff%s %s\nx/f0.png x/missing.png\n%s %s\n" % (x[0], x[1], y[0], y[1]))
    out = str(tmp_path / "out")
    proc = subprocess.run(_script("correspond.py", ["--pairs", str(listing), "--checkpoint",
                                                    random_checkpoint, "--stride", "8",
                                                    "--levels", "1", "--out", out,
                                                    "--no-progress"]),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, preexec_fn=lambda: os.umask(0o022))
    assert proc.returncode == 1, proc.stderr
    assert "1 of 3 pairs failed" in proc.stderr and "pairs.txt:2" in proc.stderr, proc.stderr
    assert "image not found" in proc.stderr
    assert sorted(os.listdir(out)) == sorted(n + x for n in ("x_f0__x_f2", "y_f0__y_f2")
                                             for x in OUTPUTS)
    assert all(os.stat(os.path.join(out, n)).st_mode & 0o777 == 0o644 for n in os.listdir(out))
    first, third = (Matches.load(os.path.join(out, n + ".npz")) for n in ("x_f0__x_f2",
                                                                         "y_f0__y_f2"))
    assert not np.array_equal(first.p1, third.p1)  # two pairs, not one written twice


def test_disk_full_while_writing_a_pair_leaves_none_of_its_files(random_checkpoint, tmp_path,
                                                                  monkeypatch):
    import errno

    from vidcorr.apps import correspond

    paths = _frames(tmp_path)

    def full(path, flow):
        with open(path, "wb") as f:
            f.write(b"\0" * 10)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(correspond, "write_flo", full)
    out = str(tmp_path / "out")
    with pytest.raises(UserError, match=r"cannot write .*f0__f2\.flo: No space left on device"):
        correspond.correspond_pairs([("f0__f2", paths[0], paths[1])], out,
                                    lambda: Matcher(random_checkpoint), stride=8,
                                    progress=False)
    assert not os.path.exists(out) or os.listdir(out) == []  # not .npz and .txt alone


def test_outputs_that_cannot_be_written_are_found_before_the_work(random_checkpoint, tmp_path,
                                                                   monkeypatch):
    import errno

    from vidcorr.evaluation.evaluate import run_evaluation
    from vidcorr.evaluation.plan import EvaluationPlan
    from vidcorr.io import files

    (tmp_path / "report.md").mkdir()
    with pytest.raises(UserError, match="report.md: it is a folder"):
        run_evaluation(EvaluationPlan(checkpoints=[random_checkpoint]),
                       out=str(tmp_path / "report"))
    with pytest.raises(UserError, match="config file not found"):
        run_evaluation(EvaluationPlan(checkpoints=[random_checkpoint],
                                      data_config=str(tmp_path / "missing.json")),
                       out=str(tmp_path / "r2"))

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(files.tempfile, "mkstemp", read_only)
    with pytest.raises(UserError, match="cannot be written: Read-only file system"):
        run_evaluation(EvaluationPlan(checkpoints=[random_checkpoint]), out=str(tmp_path / "r3"))
    from vidcorr.apps.correspond import correspond_pairs
    with pytest.raises(UserError, match="cannot be written: Read-only file system"):
        correspond_pairs([("a__b", "a.png", "b.png")], str(tmp_path / "o"),
                         lambda: Matcher(random_checkpoint))


def test_a_full_disk_while_training_is_one_line(tmp_path, monkeypatch):
    """A checkpoint that cannot be written (ENOSPC from TensorFlow's writer) stops the run
    with one line naming the step, the folder and the last good checkpoint."""
    from vidcorr.model.config import config_from_dict
    from vidcorr.training.trainer import Trainer

    with open(os.path.join(ROOT, "configs", "tiny_test.json")) as f:
        data = json.load(f)
    data["model"]["width"] = 0.125
    data["data"].update(crop_width=32, val_triplets=8)
    data["train"].update(run_dir=str(tmp_path / "run"), steps=4, checkpoint_every=2,
                         validate_every=1000, summary_every=1000)
    trainer = Trainer(config_from_dict(data), log=lambda m: None, progress=False).setup()
    saves = []

    def full(sess, path, global_step=None):
        if saves:
            raise tf.errors.ResourceExhaustedError(None, None, "model.ckpt-4.data: No space "
                                                   "left on device\n\t [[node save/SaveV2]]")
        saves.append(global_step)
        return original(sess, path, global_step=global_step)
    original = trainer.saver.save
    monkeypatch.setattr(trainer.saver, "save", full)
    try:
        with pytest.raises(UserError) as info:
            trainer.train()
    finally:
        trainer.close()
    message = str(info.value)
    assert "\n" not in message and "No space left on device" in message, message
    assert "at step 4" in message and message.endswith("model.ckpt-2)"), message
