"""Exporting a run: network variables only, same predictions, a card with measured numbers."""

import json
import os

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.apps.export import export_model
from vidcorr.readout.matching import Matcher


def test_export_keeps_the_function_and_drops_optimizer_state(trained_tiny, tmp_path):
    config, results = trained_tiny
    out = str(tmp_path / "models" / "tiny")
    card = export_model(config.train.run_dir, out, notes="test", log=lambda m: None)
    names = [n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(out))]
    assert not any("Adam" in n or "beta1_power" in n for n in names)
    assert "global_step" in names and "mind/output/weights" in names
    ckpt = "model.ckpt-%d" % config.train.steps
    assert sorted(os.listdir(out)) == sorted(
        ["card.json", "checkpoint", "config.json", ckpt + ".index",
         ckpt + ".data-00000-of-00001"])  # no .meta, no optimizer files
    with open(os.path.join(out, "checkpoint")) as f:  # relative paths: the folder can move
        assert f.readline().strip() == 'model_checkpoint_path: "%s"' % ckpt
    for name in ("card.json", "config.json", "checkpoint"):  # no path of this machine
        with open(os.path.join(out, name)) as f:
            text = f.read()
        assert str(tmp_path) not in text
        assert os.path.dirname(os.path.abspath(config.train.run_dir)) not in text
    rng = np.random.RandomState(0)
    a, b = rng.rand(32, 64, 3), rng.rand(32, 64, 3)
    original, exported = Matcher(config.train.run_dir), Matcher(out)
    np.testing.assert_array_equal(exported.predict(a, b), original.predict(a, b))
    original.close()
    exported.close()
    with open(os.path.join(out, "card.json")) as f:
        saved = json.load(f)
    assert saved == json.loads(json.dumps(card, default=float))
    assert saved["steps"] == results["step"] == config.train.steps
    # the card's PSNR is measured on the same held-out triplets as the trainer's validation
    assert saved["validation"]["model"]["psnr"] == pytest.approx(results["val_psnr"], abs=0.05)
    assert saved["validation"]["frame average"]["psnr"] == pytest.approx(
        results["baseline_psnr"], abs=0.01)


def test_training_continues_from_an_exported_model(trained_tiny, tmp_path):
    """An exported model has no optimizer slots; ``init_from`` seeds a new run from it."""
    from vidcorr.training.trainer import Trainer

    config, results = trained_tiny
    out = str(tmp_path / "exported")
    export_model(config.train.run_dir, out, log=lambda m: None)
    new = config.replace(train={"run_dir": str(tmp_path / "continued"), "init_from": out,
                                "steps": 1})
    trainer = Trainer(new, progress=False, log=lambda m: None).setup()
    try:
        assert trainer.step == 0  # a fresh run, not a resume
        np.testing.assert_allclose(trainer.validate()["val_psnr"], results["val_psnr"],
                                   atol=1e-3)
    finally:
        trainer.close()


def test_export_errors(random_checkpoint, tmp_path):
    with pytest.raises(UserError, match="no config.json"):
        export_model(random_checkpoint, str(tmp_path / "m"), log=lambda m: None)
    with pytest.raises(UserError, match="checkpoint not found"):
        export_model(str(tmp_path / "nothing"), str(tmp_path / "m"), log=lambda m: None)
    with pytest.raises(UserError, match="no checkpoint to export"):
        export_model([], str(tmp_path / "m"), log=lambda m: None)
    assert not os.path.exists(str(tmp_path / "m"))


def _contents(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


def test_export_never_replaces_a_training_run(trained_tiny, tmp_path):
    """Exporting onto the run itself or onto another run is refused, byte for byte intact."""
    import shutil

    config, _ = trained_tiny
    run = config.train.run_dir
    other = str(tmp_path / "other_run")
    shutil.copytree(run, other)
    before_run, before_other = _contents(run), _contents(other)
    assert any(n.startswith("events.") for n in before_other)
    with pytest.raises(UserError, match="is the run being exported"):
        export_model(run, run, interpolation=False, log=lambda m: None)
    with pytest.raises(UserError, match="is the run being exported"):  # a prefix in the run
        export_model(tf.train.latest_checkpoint(run), run + "/", interpolation=False,
                     log=lambda m: None)
    with pytest.raises(UserError, match="not an earlier export"):
        export_model(run, other, interpolation=False, log=lambda m: None)
    assert _contents(run) == before_run and _contents(other) == before_other
    stray = tmp_path / "notes"
    stray.mkdir()
    (stray / "todo.txt").write_text("mine")
    with pytest.raises(UserError, match="not an earlier export"):
        export_model(run, str(stray), interpolation=False, log=lambda m: None)
    assert (stray / "todo.txt").read_text() == "mine"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        export_model(run, str(a_file), interpolation=False, log=lambda m: None)
    # an earlier export is replaced, and an empty folder is used
    out = str(tmp_path / "exported")
    export_model(run, out, notes="first", interpolation=False, log=lambda m: None)
    export_model(run, out, notes="second", interpolation=False, log=lambda m: None)
    with open(os.path.join(out, "card.json")) as f:
        assert json.load(f)["notes"] == "second"
    empty = tmp_path / "empty"
    empty.mkdir()
    export_model(run, str(empty), interpolation=False, log=lambda m: None)
    assert "card.json" in os.listdir(str(empty))


def test_average_values_is_the_elementwise_mean():
    from vidcorr.apps.export import average_values

    rng = np.random.RandomState(0)
    shapes = {"mind/conv/weights": (3, 3, 2, 4), "mind/conv/bn/moving_mean": (4,)}
    runs = [{n: rng.randn(*s).astype(np.float32) for n, s in shapes.items()} for _ in range(3)]
    mean = average_values(runs)
    assert sorted(mean) == sorted(shapes)
    for name in shapes:
        assert mean[name].dtype == np.float32
        np.testing.assert_allclose(mean[name], (runs[0][name] + runs[1][name] + runs[2][name]) / 3,
                                   rtol=1e-6, atol=1e-7)
    fewer = {"mind/conv/weights": runs[1]["mind/conv/weights"]}
    other = dict(runs[1], **{"mind/conv/bn/moving_mean": np.zeros(5, np.float32)})
    for bad in (fewer, other):
        with pytest.raises(UserError, match="different networks"):
            average_values([runs[0], bad])


def test_an_export_of_an_exported_average_keeps_its_list(trained_tiny, tmp_path):
    """Re-exporting an average names the checkpoints it was made of, not the export."""
    config, _ = trained_tiny
    run = config.train.run_dir
    prefixes = [os.path.join(run, "model.ckpt-%d" % s) for s in (150, 300)]
    quiet = dict(interpolation=False, log=lambda m: None)
    soup = str(tmp_path / "soup")
    export_model(prefixes, soup, **quiet)
    again = export_model(soup, str(tmp_path / "again"), **quiet)
    assert again["averaged"] == ["run/model.ckpt-150", "run/model.ckpt-300"]
    assert again["source_checkpoint"].endswith("soup/model.ckpt-150")
    with open(str(tmp_path / "again" / "card.json")) as f:
        assert json.load(f)["averaged"] == again["averaged"]
    plain = export_model(str(tmp_path / "again"), str(tmp_path / "plain"), **quiet)
    assert plain["averaged"] == again["averaged"]  # passed on through any number of exports
    assert "averaged" not in export_model(run, str(tmp_path / "single"), **quiet)
    with open(str(tmp_path / "soup" / "card.json"), "w") as f:
        f.write("[1, 2")
    with pytest.raises(UserError, match="cannot read the model card .*soup"):
        export_model(soup, str(tmp_path / "broken"), **quiet)
    with open(str(tmp_path / "soup" / "card.json"), "w") as f:
        f.write("[1, 2]")
    with pytest.raises(UserError, match="model card .*soup.* is not a JSON object"):
        export_model(soup, str(tmp_path / "broken"), **quiet)
    assert not os.path.exists(str(tmp_path / "broken"))


def test_export_averages_checkpoints_and_measures_the_average(trained_tiny, tmp_path):
    """Several checkpoints export as their mean; the card's PSNR is the mean's own."""
    import shutil

    from vidcorr.evaluation.evaluate import interpolation_quality
    from vidcorr.io.rundir import checkpoint_values
    from vidcorr.training.data import TripletData

    config, _ = trained_tiny
    run = config.train.run_dir
    prefixes = [os.path.join(run, "model.ckpt-%d" % s) for s in (150, 300)]
    out = str(tmp_path / "soup")
    card = export_model(prefixes, out, log=lambda m: None)
    assert card["averaged"] == ["run/model.ckpt-150", "run/model.ckpt-300"]  # portable
    assert card["steps"] == 150
    got = checkpoint_values(tf.train.latest_checkpoint(out))
    first, last = (checkpoint_values(p) for p in prefixes)
    assert sorted(got) == sorted(first)
    for name in got:
        np.testing.assert_allclose(got[name], (first[name] + last[name]) / 2, rtol=1e-5,
                                   atol=1e-7)
    inputs, targets = TripletData(config.data).validation_set()
    for prefix, expected in ((out, True), (prefixes[0], False)):
        matcher = Matcher(prefix)
        rows = interpolation_quality({"model": matcher}, inputs, targets, lambda m: None)
        matcher.close()
        psnr = [r["psnr"] for r in rows if r["method"] == "model"][0]
        assert (round(psnr, 3) == card["validation"]["model"]["psnr"]) == expected, prefix
    wider = tmp_path / "wider"
    shutil.copytree(run, str(wider))
    with open(str(wider / "config.json")) as f:
        data = json.load(f)
    data["model"]["width"] = 0.5
    with open(str(wider / "config.json"), "w") as f:
        json.dump(data, f)
    with pytest.raises(UserError, match="networks differ"):
        export_model([run, str(wider)], str(tmp_path / "mixed"), interpolation=False,
                     log=lambda m: None)
    assert not os.path.exists(str(tmp_path / "mixed"))


def test_a_full_disk_keeps_the_earlier_export_and_leaves_no_folders(trained_tiny, tmp_path,
                                                                    monkeypatch):
    from vidcorr.apps import export
    from vidcorr.compat import tf
    from tests.test_errors import TF2_FULL_DISK

    run = trained_tiny[0].train.run_dir
    earlier = str(tmp_path / "model")
    export_model(run, earlier, interpolation=False, log=lambda m: None)
    before = _contents(earlier)

    def full(values, step, prefix):
        raise tf.errors.ResourceExhaustedError(None, None, TF2_FULL_DISK)
    monkeypatch.setattr(export, "_save_values", full)
    for out in (earlier, str(tmp_path / "new" / "deeper" / "model")):
        with pytest.raises(UserError) as err:
            export_model(run, out, interpolation=False, log=lambda m: None)
        assert str(err.value) == ("cannot write the model beside %s: No space left on device"
                                  % out)
    assert _contents(earlier) == before
    assert sorted(os.listdir(str(tmp_path))) == ["model"]  # no staging, no empty "new"
