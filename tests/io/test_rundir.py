"""Run directories (vidcorr.io.rundir): config.json, checkpoints, the run lock."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from vidcorr.errors import UserError
from vidcorr.io import rundir
from vidcorr.model.config import config_from_dict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _tiny(tmp_path, **train):
    with open(os.path.join(ROOT, "configs", "tiny_test.json")) as f:
        data = json.load(f)
    data["model"]["width"] = 0.125
    data["data"].update(crop_width=32, val_triplets=8)
    data["train"].update(run_dir=str(tmp_path / "run"), validate_every=1000, summary_every=1000,
                         **train)
    return config_from_dict(data)


def test_config_round_trip_and_errors(tmp_path):
    config = _tiny(tmp_path, steps=3)
    assert rundir.read_config(str(tmp_path)) is None  # no config.json: None, not an error
    path = rundir.write_config(str(tmp_path / "a"), config)
    assert path == str(tmp_path / "a" / "config.json")
    assert rundir.read_config(str(tmp_path / "a")) == config
    assert rundir.read_config(str(tmp_path / "a" / "model.ckpt-3")) == config  # beside a prefix
    (tmp_path / "a" / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="cannot read .*config.json"):
        rundir.read_config(str(tmp_path / "a"))
    assert [n for n in os.listdir(str(tmp_path / "a")) if n != "config.json"] == []  # no temp


def test_find_checkpoint_refuses_what_is_not_a_path(tmp_path):
    with pytest.raises(UserError, match="a path.*got int"):
        rundir.find_checkpoint(42)
    with pytest.raises(UserError, match="checkpoint not found"):
        rundir.find_checkpoint(str(tmp_path / "nothing"))
    with pytest.raises(UserError, match="no checkpoint in directory"):
        rundir.find_checkpoint(str(tmp_path))


def _holder(run_dir):
    """A child process that takes the lock and waits; returns it once it holds the lock."""
    code = ("import sys, time; from vidcorr.io.rundir import RunLock; "
            "RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(300)")
    proc = subprocess.Popen([sys.executable, "-c", code, run_dir], stdout=subprocess.PIPE,
                            universal_newlines=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_lock_refuses_a_second_process_and_a_killed_holder_leaves_none(tmp_path):
    run = str(tmp_path / "run")
    proc = _holder(run)
    try:
        with pytest.raises(UserError, match=r"in use by another process \(pid %d\)" % proc.pid):
            rundir.RunLock(run).acquire()
    finally:
        proc.send_signal(signal.SIGKILL)  # no chance to clean up
        proc.wait()
    with rundir.RunLock(run) as lock:  # the kernel released it with the process
        assert lock.held
        with pytest.raises(UserError, match="in use"):  # also within one process
            rundir.RunLock(run).acquire()
    assert not lock.held


@pytest.mark.parametrize("code", ["ENOLCK", "EOPNOTSUPP"])
def test_a_file_system_without_locks_warns_and_goes_on(tmp_path, monkeypatch, code):
    """An NFS mount without a lock daemon refuses flock with ENOLCK: the run goes on,
    unlocked, with a warning; any other error still refuses."""
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    warnings = []
    run = str(tmp_path / "nfs")
    with rundir.RunLock(run, warn=warnings.append) as lock:
        assert lock.held and not lock.locked
        assert open(os.path.join(run, ".lock")).read() == "%d\n" % os.getpid()
    assert len(warnings) == 1 and "has no file locks" in warnings[0] and run in warnings[0]

    def failing(fd, operation):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(fcntl, "flock", failing)
    with pytest.raises(UserError, match="cannot lock run directory .*Input/output error"):
        rundir.RunLock(run, warn=warnings.append).acquire()


def test_two_trainings_of_one_run_directory(tmp_path):
    """The second of two trainings on one run directory is refused while the first holds it,
    and a --resume of a live run too; the first is not disturbed."""
    from vidcorr.training.trainer import Trainer

    config = _tiny(tmp_path, steps=2, checkpoint_every=1)
    first = Trainer(config, log=lambda m: None, progress=False).setup()
    try:
        for resume in (False, True):
            with pytest.raises(UserError, match="in use by another process"):
                Trainer(config, resume=resume, log=lambda m: None, progress=False).setup()
        assert first.train()["step"] == 2
    finally:
        first.close()
    assert rundir.checkpoint_step(rundir.find_checkpoint(config.train.run_dir)) == 2
    later = Trainer(config.replace(train={"steps": 3}), resume=True, log=lambda m: None,
                    progress=False)
    assert later.run()["step"] == 3  # released on close: a later resume goes on


def test_a_fresh_run_that_fails_before_its_first_checkpoint_leaves_nothing(tmp_path):
    from vidcorr.training.trainer import train

    config = _tiny(tmp_path, steps=2, init_from=str(tmp_path / "missing"))
    with pytest.raises(UserError, match="checkpoint not found"):
        train(config, progress=False, log=lambda m: None)
    assert not os.path.exists(config.train.run_dir)
    os.makedirs(config.train.run_dir)  # a folder the user made stays, empty
    with pytest.raises(UserError, match="checkpoint not found"):
        train(config, progress=False, log=lambda m: None)
    assert os.listdir(config.train.run_dir) == []
    results = train(config.replace(train={"init_from": ""}), progress=False, log=lambda m: None)
    assert results["step"] == 2  # a plain rerun is not refused


def test_sigterm_while_training_saves_and_exits_143(tmp_path):
    """SIGTERM finishes the step and saves; a second signal during the save waits for it."""
    config = _tiny(tmp_path, steps=100000, checkpoint_every=1000)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_dict()))
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "train.py"),
                             "--config", str(path), "--no-progress"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, universal_newlines=True, cwd=ROOT)
    run, deadline = config.train.run_dir, time.time() + 120
    while time.time() < deadline and not (os.path.isdir(run) and any(
            n.startswith("events.") for n in os.listdir(run))):
        time.sleep(0.5)
    time.sleep(3)  # some steps
    proc.send_signal(signal.SIGTERM)
    lines = []
    for line in proc.stderr:  # until the trainer has taken the signal
        lines.append(line)
        if "stopping after this step" in line:
            break
    proc.send_signal(signal.SIGTERM)  # a second signal while it finishes and saves
    _, rest = proc.communicate(timeout=120)
    err = "".join(lines) + rest
    assert proc.returncode == 143, err
    assert "interrupted at step" in err and "nothing was saved" not in err, err
    assert "still stopping" in err, err
    assert rundir.checkpoint_step(rundir.find_checkpoint(config.train.run_dir)) >= 1


def test_the_layout_is_named_in_one_place(tmp_path):
    folder = str(tmp_path)
    assert not rundir.holds_run(folder) and not rundir.has_checkpoint(folder)
    assert rundir.checkpoint_prefix(folder, 12) == os.path.join(folder, "model.ckpt-12")
    assert rundir.card_path(folder) == os.path.join(folder, "card.json")
    assert rundir.card_path(os.path.join(folder, "model.ckpt-12")) == rundir.card_path(folder)
    (tmp_path / "events.out.tfevents.1.host").write_text("")
    assert rundir.holds_run(folder) and not rundir.has_checkpoint(folder)
    assert rundir.event_files(folder) == [os.path.join(folder, "events.out.tfevents.1.host")]
    (tmp_path / "checkpoint").write_text("")
    assert rundir.has_checkpoint(folder)
    model = ["card.json", "config.json", "checkpoint", "model.ckpt-3.index",
             "model.ckpt-3.data-00000-of-00001"]
    assert all(rundir.is_model_file(n) for n in model)
    assert not any(rundir.is_model_file(n) for n in (
        "model.ckpt-3.meta", "events.out.tfevents.1", "model.ckpt-x.index", ".lock",
        "notes.txt", "model.ckpt-3.index.bak"))


def test_a_run_directory_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    import errno

    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="run directory .*file exists and is not a folder"):
        rundir.RunLock(str(tmp_path / "file")).acquire()

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), args[0])
    monkeypatch.setattr(rundir.os, "open", read_only)  # an existing run on a read-only mount
    (tmp_path / "run").mkdir()
    with pytest.raises(UserError, match=r"cannot write to run directory .*run: Read-only file "
                                        r"system$"):
        rundir.RunLock(str(tmp_path / "run")).acquire()
    monkeypatch.setattr(rundir.os, "makedirs", read_only)  # a new one there
    with pytest.raises(UserError, match="cannot write to run directory .*new: Read-only file "):
        rundir.RunLock(str(tmp_path / "new")).acquire()


def test_shape_hint_names_the_key_that_differs():
    assert "model.kernel_size" in rundir.shape_hint("mind/output/weights", [1, 1, 24, 162],
                                                    [1, 1, 24, 98])
    assert "162 outputs there and 2 here" in rundir.shape_hint("mind/output/biases", [162], [2])
    assert "model.output_kernel" in rundir.shape_hint("mind/output/weights", [3, 3, 24, 3],
                                                      [1, 1, 24, 3])
    assert "model.width" in rundir.shape_hint("mind/enc1/conv1/weights", [3, 3, 6, 8],
                                              [3, 3, 6, 16])


def test_a_head_that_differs_is_blamed_on_the_kernel_size(random_kernel_checkpoint):
    from vidcorr.compat import tf
    from vidcorr.model.network import mind
    from vidcorr.model.spec import NetworkSpec

    graph = tf.Graph()
    with graph.as_default():
        mind(tf.zeros([1, 32, 32, 6]), False, spec=NetworkSpec(width=0.125, output_kernel=1,
                                                                  kernel_size=3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(UserError) as err:  # the checkpoint's head has K = 5
                rundir.restore_matching(sess, random_kernel_checkpoint, tf.global_variables(),
                                        require_all=True)
    message = str(err.value)
    assert "mind/output/" in message and "a different model.kernel_size: the output head " \
        "has 50 outputs there and 18 here" in message and "model.width" not in message, message
