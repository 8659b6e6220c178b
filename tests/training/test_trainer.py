"""End-to-end tests of the trainer: learning, resume, signals, NaN, quantized fine-tune."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from vidcorr.io import rundir
from vidcorr.compat import tf
from vidcorr.model.config import load_config
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.training.trainer import Trainer, TrainingDiverged, train

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "configs", "tiny_test.json")


def _tiny(tmp_path, name="run", **train_overrides):
    train_cfg = {"run_dir": os.path.join(str(tmp_path), name)}
    train_cfg.update(train_overrides)
    return load_config(TINY).replace(train=train_cfg)


def _quick(tmp_path, name="run", **train_overrides):
    """An even smaller, faster variant for loop mechanics."""
    config = _tiny(tmp_path, name, **train_overrides)
    return config.replace(model={"width": 0.125}, data={"crop_width": 32, "val_triplets": 8})


def test_tiny_network_beats_frame_average(trained_tiny):
    config, results = trained_tiny
    assert results["step"] == 300
    # A clear margin over the mean of the two frames, on held-out triplets.
    assert results["val_loss"] < 0.75 * results["baseline_loss"], results
    assert results["val_psnr"] > results["baseline_psnr"] + 2.0, results
    run = config.train.run_dir
    assert os.path.isfile(os.path.join(run, "config.json"))
    assert any(name.startswith("events.") for name in os.listdir(run))


def test_resume_continues_step_and_restores_weights(tmp_path):
    config = _quick(tmp_path, steps=6, checkpoint_every=3, validate_every=100)
    first = train(config, progress=False, log=lambda m: None)
    assert first["step"] == 6
    prefix = rundir.find_checkpoint(config.train.run_dir)
    assert prefix.endswith("model.ckpt-6")
    with pytest.raises(UserError, match="--resume"):
        Trainer(config).setup()
    trainer = Trainer(config.replace(train={"steps": 9}), resume=True, log=lambda m: None,
                      progress=False).setup()
    try:
        assert trainer.step == 6
        with trainer.graph.as_default():
            variables = tf.global_variables()
        values = trainer.sess.run(variables)
        for var, value in zip(variables, values):
            np.testing.assert_array_equal(value, tf.train.load_variable(prefix, var.op.name))
        assert any("Adam" in v.op.name for v in variables)  # optimizer state came back too
        results = trainer.train()
    finally:
        trainer.close()
    assert results["start_step"] == 6 and results["step"] == 9
    assert rundir.checkpoint_step(rundir.find_checkpoint(config.train.run_dir)) == 9


def test_resume_from_a_checkpoint_without_optimizer_state(tmp_path):
    """An exported model as the run: the network and step come back, Adam starts afresh."""
    from vidcorr.apps.export import export_model

    config = _quick(tmp_path, steps=4, checkpoint_every=4, validate_every=100)
    train(config, progress=False, log=lambda m: None)
    exported = str(tmp_path / "exported")
    export_model(config.train.run_dir, exported, interpolation=False, log=lambda m: None)
    lines = []
    trainer = Trainer(config.replace(train={"run_dir": exported, "steps": 6}), resume=True,
                      log=lines.append, progress=False).setup()
    try:
        assert trainer.step == 4
        prefix = rundir.find_checkpoint(exported)
        with trainer.graph.as_default():
            for var, value in zip(trainer.network_variables,
                                  trainer.sess.run(trainer.network_variables)):
                np.testing.assert_array_equal(value, tf.train.load_variable(prefix, var.op.name))
        assert any("without optimizer state" in line for line in lines), lines
        assert trainer.train()["step"] == 6
    finally:
        trainer.close()


def test_resume_keeps_rotating_older_checkpoints(tmp_path):
    """keep_checkpoints counts the checkpoints of earlier processes too."""
    config = _quick(tmp_path, steps=4, checkpoint_every=1, validate_every=100,
                    keep_checkpoints=3)
    train(config, progress=False, log=lambda m: None)
    run = config.train.run_dir
    train(config.replace(train={"steps": 6}), resume=True, progress=False, log=lambda m: None)
    kept = sorted(int(n.split("-")[1].split(".")[0]) for n in os.listdir(run)
                  if n.endswith(".index"))
    assert kept == [4, 5, 6]
    state = tf.train.get_checkpoint_state(run)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-4", "model.ckpt-5", "model.ckpt-6"]


def test_resume_without_a_checkpoint_says_so(tmp_path):
    config = _quick(tmp_path, steps=1, validate_every=100)
    with pytest.raises(UserError, match="no run directory .*mistyped"):
        train(config, resume=True, progress=False, log=lambda m: None)  # no folder at all
    assert not os.path.exists(config.train.run_dir)
    os.makedirs(config.train.run_dir)  # a folder, but no checkpoint yet
    lines = []
    results = train(config, resume=True, progress=False, log=lines.append)
    assert results["step"] == 1
    assert any("no checkpoint yet; starting from step 0" in line for line in lines), lines


def test_resume_refuses_a_different_model(tmp_path):
    config = _quick(tmp_path, steps=2, checkpoint_every=2)
    train(config, progress=False, log=lambda m: None)
    with pytest.raises(UserError, match="differs"):
        Trainer(config.replace(model={"width": 0.25}), resume=True).setup()


def test_nan_loss_stops_and_keeps_last_checkpoint(tmp_path, monkeypatch):
    config = _quick(tmp_path, steps=50, checkpoint_every=4, validate_every=100)
    original = TripletData.batch
    calls = {"n": 0}

    def poisoned(self, rng, batch_size, validation=False, **kwargs):
        inputs, targets, *kinds = original(self, rng, batch_size, validation, **kwargs)
        if not validation:
            calls["n"] += 1
            if calls["n"] > 12:
                inputs = inputs * np.nan
        return (inputs, targets, *kinds)

    monkeypatch.setattr(TripletData, "batch", poisoned)
    with pytest.raises(TrainingDiverged, match="NaN|nan"):
        train(config, progress=False, log=lambda m: None)
    prefix = rundir.find_checkpoint(config.train.run_dir)
    step = rundir.checkpoint_step(prefix)
    assert 4 <= step <= 12 and step % 4 == 0
    weights = tf.train.load_variable(prefix, "mind/enc1/conv1/weights")
    assert np.all(np.isfinite(weights))


def test_quantized_finetune_starts_near_float_loss(trained_tiny, tmp_path):
    float_config, float_results = trained_tiny  # the float run: configs/tiny_test.json
    q_config = float_config.replace(
        model={"quantize": True},
        train={"run_dir": str(tmp_path / "quant"), "init_from": float_config.train.run_dir,
               "steps": 20, "learning_rate": 2e-4, "validate_every": 1000})
    results = train(q_config, progress=False, log=lambda m: None)
    float_loss = float_results["val_loss"]
    np.testing.assert_allclose(results["initial_float"]["val_loss"], float_loss, rtol=1e-5)
    assert abs(results["initial"]["val_loss"] - float_loss) < 0.1 * float_loss
    assert results["initial"]["val_loss"] != results["initial_float"]["val_loss"]
    assert results["val_loss"] < 1.1 * float_loss


def _run_script(args, **kwargs):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "train.py")] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, **kwargs)


def test_script_bad_config_prints_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": {"synthetic": true}, "train": {"stpes": 3}}')
    proc = _run_script(["--config", str(bad)])
    assert proc.returncode == 2
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert errors == ["error: %s: train.stpes: unknown key (known: %s)"
                      % (bad, ", ".join(f for f in [
                          "run_dir", "batch_size", "steps", "learning_rate", "lr_schedule",
                          "lr_decay_steps", "lr_decay_rate", "min_lr_ratio", "loss",
                          "gradient_weight", "census_weight", "frame_weight", "frame_mass",
                          "frame_real_weight",
                          "frame_temperature",
                          "symmetry_weight", "smooth_weight", "smooth_edge", "warp_weight",
                          "checkpoint_every",
                          "keep_checkpoints", "summary_every",
                          "validate_every", "init_from", "init_widen", "threads", "num_devices",
                          "seed", "tune"]))]
    assert "Traceback" not in proc.stderr


def test_sigterm_saves_a_loadable_checkpoint(tmp_path):
    run = tmp_path / "sig"
    proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "scripts", "train.py"), "--config", TINY,
         "--run-dir", str(run), "--steps", "100000", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if run.exists() and any(p.name.startswith("events.") for p in run.iterdir()):
            break
        time.sleep(0.5)
    time.sleep(3)  # inside the loop by now
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err  # interrupted is not finished
    assert "stopped by signal" in err and "resume with --resume" in err
    prefix = rundir.find_checkpoint(str(run))
    step = rundir.checkpoint_step(prefix)
    assert step >= 1
    assert np.all(np.isfinite(tf.train.load_variable(prefix, "mind/output/weights")))


def test_each_task_draws_its_own_training_stream(tmp_path):
    """A worker's seed is the config's plus its task index (``DistributedTrainer`` sets only
    ``task_index``); each draws that seed's stream, so workers do not train on the same
    triplets."""
    from vidcorr.training.trainer import Trainer

    drawn = []
    for task in (0, 1):
        t = Trainer(_quick(tmp_path, "t%d" % task), progress=False, log=lambda m: None)
        t.task_index = task
        assert t.seed == t.config.train.seed + task
        t.setup()
        try:
            drawn.append(t.sess.run(t.inputs))
            expected = next(t.data.batches(t.config.train.batch_size,
                                           t.config.train.seed + task))[0]
            np.testing.assert_array_equal(drawn[-1], expected)
        finally:
            t.close()
    assert not np.array_equal(drawn[0], drawn[1])
