"""Tests of config parsing: defaults, frozen objects, errors naming the key."""

import dataclasses
import glob
import json
import os

import pytest

from vidcorr.model.config import Config, config_from_dict, load_config
from vidcorr.errors import UserError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_defaults_and_frozen():
    config = config_from_dict({"data": {"synthetic": True}})
    assert config.model.width == 1.0 and config.model.skips == (4, 3, 2)
    assert config.train.loss == "l1" and config.data.gap == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.train.steps = 3


def test_ints_become_floats_and_round_trip():
    config = config_from_dict({"model": {"width": 1}, "data": {"synthetic": True,
                                                               "velocity": [1, -2]}})
    assert isinstance(config.model.width, float) and config.data.velocity == (1.0, -2.0)
    assert config_from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert config.replace(train={"steps": 7}).train.steps == 7


@pytest.mark.parametrize("data,key", [
    ({"model": {"widht": 1.0}}, "model.widht"),
    ({"trian": {}}, "trian"),
    ({"train": {"steps": "ten"}}, "train.steps"),
    ({"train": {"steps": 1.5}}, "train.steps"),
    ({"data": {"synthetic": "yes"}}, "data.synthetic"),
    ({"data": {"sources": "a.mp4"}}, "data.sources"),
    ({"data": {"sources": []}}, "data.sources"),
    ({"data": {"synthetic": True, "gap": 0}}, "data.gap"),
    ({"data": {"synthetic": True}, "train": {"loss": "l3"}}, "train.loss"),
    ({"data": {"synthetic": True}, "model": {"skips": [4, 4]}}, "model.skips"),
    ({"data": {"synthetic": True}, "model": {"num_bits": 1}}, "model.num_bits"),
    ({"data": {"synthetic": True}, "model": {"residual": "sum"}}, "model.residual"),
    ({"data": {"synthetic": True}, "model": "big"}, "model"),
    ({"data": {"synthetic": True}, "train": {"init_widen": True}}, "train.init_widen"),
    ({"data": {"synthetic": True}, "model": {"kernel_size": 3, "output_kernel": 1},
      "train": {"frame_weight": 1.0, "frame_real_weight": 0.5}}, "train.frame_real_weight"),
    ({"data": {"synthetic": True}, "train": {"frame_real_weight": 1.5}},
     "train.frame_real_weight"),
])
def test_errors_name_the_key(data, key):
    with pytest.raises(UserError) as err:
        config_from_dict(data, origin="x.json")
    assert str(err.value).startswith("x.json: %s:" % key)


def test_load_config_errors(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_config(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_config(str(bad))


def _shipped(*path):
    """The shipped config at ``configs/<path>``, or a ranking run's at
    ``research/configs/ranking/<name>``."""
    if path[0] == "ranking":
        return load_config(os.path.join(ROOT, "research", "configs", *path))
    return load_config(os.path.join(ROOT, "configs", *path))


def test_shipped_configs_are_valid():
    paths = sorted(glob.glob(os.path.join(ROOT, "configs", "*.json")))
    names = {os.path.basename(p) for p in paths}
    paths += sorted(glob.glob(os.path.join(ROOT, "configs", "cpu_sharp_soup", "*.json")))
    assert {"mind_paper.json", "cpu_small.json", "cpu_match.json", "finetune_quantized.json",
            "tiny_test.json"} <= names
    ranking = sorted(glob.glob(os.path.join(ROOT, "research", "configs", "ranking", "*.json")))
    assert {"r0_l1.json", "r2_census.json", "r5_frames.json"} <= {os.path.basename(p)
                                                                 for p in ranking}
    for path in paths + ranking:
        config = load_config(path)
        assert isinstance(config, Config)
        # a model folder a config starts from is in the repository (runs/ are made by
        # another shipped config), so the config runs from a clean checkout
        if config.train.init_from.startswith(("vidcorr/", "research/")):
            assert os.path.isfile(os.path.join(ROOT, config.train.init_from, "checkpoint")), path
        if path in ranking:  # reproduces after the default changes: starts from a frozen copy
            assert config.train.init_from != "vidcorr/models/default", path
    assert _shipped("finetune_quantized.json").model.quantize
    weights = {os.path.basename(p): (load_config(p).train.gradient_weight,
                                     load_config(p).train.census_weight) for p in ranking}
    assert weights["r0_l1.json"] == (0.0, 0.0) and weights["r4_grad_census.json"] == (1.0, 0.2)
    frames = _shipped("ranking", "r5_frames.json").train
    assert (frames.census_weight, frames.frame_weight, frames.symmetry_weight) == (0.2, 0.5, 0.0)


def test_the_default_models_recipe():
    # the candidate's recipe, as docs/default_model.md describes it
    smooth = _shipped("ranking", "r16_frames2_mass_t2_smooth.json").train
    assert (smooth.census_weight, smooth.frame_weight, smooth.frame_mass, smooth.frame_temperature,
            smooth.smooth_weight, smooth.steps) == (0.2, 2.0, True, 2.0, 0.03, 800)
    warp = _shipped("ranking", "r21_r16_warp3.json").train
    assert dataclasses.replace(warp, warp_weight=0.0, run_dir=smooth.run_dir) == smooth
    assert warp.warp_weight == 3.0 and warp.init_from == "research/models/previous_default"
    # the default's first stage: r21's terms for 1600 steps from the previous default
    sharp = _shipped("cpu_sharp.json").train
    assert dataclasses.replace(sharp, steps=800, run_dir=warp.run_dir) == warp
    assert sharp.steps == 1600 and sharp.run_dir == "runs/cpu_sharp"
    # r28, the second stage until 2026-12-03 (frozen as research/models/sharp_stage2): census,
    # the frame term at temperature 1 and smoothness, no warp term, 600 steps at 3e-5
    r28 = _shipped("ranking", "r28_polish_r13.json")
    assert (r28.train.census_weight, r28.train.frame_weight, r28.train.frame_mass,
            r28.train.frame_temperature, r28.train.smooth_weight, r28.train.warp_weight,
            r28.train.steps, r28.train.learning_rate, r28.data.layered_fraction) == (
                0.2, 2.0, True, 1.0, 0.03, 0.0, 600, 3e-5, 0.75)
    # the second stage now (r48): r28's config with half the training triplets layered and
    # without the frame term, from the first stage (exported to research/models/sharp_stage1)
    polish_config = _shipped("cpu_sharp_polish.json")
    polish = polish_config.train
    r48 = _shipped("ranking", "r48_r43_frame0.json")
    assert dataclasses.replace(polish, run_dir=r48.train.run_dir) == r48.train
    assert polish_config.data == r48.data and polish_config.model == r48.model
    assert polish.init_from == "research/models/sharp_stage1"
    assert polish.run_dir == "runs/cpu_sharp_polish"
    assert dataclasses.replace(polish, frame_weight=2.0, frame_mass=True,
                               run_dir=r28.train.run_dir) == r28.train
    assert dataclasses.replace(polish_config.data, layered_fraction=0.75) == r28.data
    assert (polish.frame_weight, polish.warp_weight, polish_config.data.layered_fraction) == (
        0.0, 0.0, 0.5)
    # the default since 2026-12-03 (evening): the element-wise mean of four fine-tunes of the
    # second stage's export (r48, frozen as research/models/candidate_layered50_noframe), its
    # config for 400 steps at 5e-5 with train.seed 0, 1, 2 and at 3e-5 with seed 1: the
    # ranking runs r57 to r60, whose step-400 checkpoints vidcorr/models/default averages
    soup = {"finetune_seed0": ("r57_finetune_r48", 0, 5e-5),
            "finetune_seed1": ("r58_finetune_r48_seed1", 1, 5e-5),
            "finetune_seed2": ("r59_finetune_r48_seed2", 2, 5e-5),
            "finetune_seed1_lr3e-5": ("r60_finetune_r48_seed1_lr3", 1, 3e-5)}
    assert {os.path.basename(p)[:-5] for p in glob.glob(
        os.path.join(ROOT, "configs", "cpu_sharp_soup", "*.json"))} == set(soup)
    for name, (run, seed, rate) in soup.items():
        config = _shipped("cpu_sharp_soup", name + ".json")
        ranking = _shipped("ranking", run + ".json")
        assert config.train == dataclasses.replace(ranking.train,
                                                   run_dir="runs/cpu_sharp_soup/" + name)
        assert config.data == polish_config.data and config.model == polish_config.model
        assert config.train == dataclasses.replace(
            polish, steps=400, learning_rate=rate, seed=seed, checkpoint_every=100,
            validate_every=100, summary_every=100, run_dir=config.train.run_dir,
            init_from="research/models/candidate_layered50_noframe")
    with open(os.path.join(ROOT, "vidcorr", "models", "default", "card.json")) as f:
        card = json.load(f)
    assert card["steps"] == 400 and card["config"]["train"]["steps"] == 400
    # the card names the four checkpoints it averages: the ranking runs of the configs above
    assert card["averaged"] == [_shipped("ranking", run + ".json").train.run_dir
                                + "/model.ckpt-400" for run, _, _ in soup.values()]
    # its quantized fine-tune keeps the second stage's loss terms and data: ranking run r66,
    # the recipe from the soup before it became the default (research/models/candidate_soup4)
    quantized = _shipped("finetune_quantized.json")
    assert quantized.model.quantize and quantized.model.num_bits == 8
    assert dataclasses.replace(quantized.train, steps=600, learning_rate=3e-5,
                               validate_every=polish.validate_every, init_from=polish.init_from,
                               run_dir=polish.run_dir) == polish
    assert quantized.data == polish_config.data
    assert quantized.train.init_from == "vidcorr/models/default"
    r66 = _shipped("ranking", "r66_quantized_soup4.json")
    assert r66.train.init_from == "research/models/candidate_soup4"
    assert dataclasses.replace(r66.train, init_from=quantized.train.init_from,
                               run_dir=quantized.train.run_dir) == quantized.train
    assert r66.model == quantized.model and r66.data == quantized.data


@pytest.mark.parametrize("section,key,value,limit", [
    ("model", "width", 1e6, "at most 4"),
    ("data", "crop_height", 100000, "from 32 to 4096"),
    ("data", "crop_width", 5000, "from 32 to 4096"),
    ("data", "max_height", 10 ** 6, "to 4096"),
    ("data", "gap", 1000, "from 1 to 100"),
    ("data", "val_triplets", 10 ** 7, "from 1 to 10000"),
    ("train", "batch_size", 10 ** 6, "from 1 to 1024"),
    ("train", "num_devices", 1000, "from 1 to 64"),
    ("train", "steps", 10 ** 12, "from 1 to 1000000000"),
    ("train", "threads", 10 ** 5, "to 1024"),
])
def test_size_like_keys_are_bounded_by_what_can_be_built(section, key, value, limit):
    data = {"data": {"synthetic": True}}
    data.setdefault(section, {})[key] = value
    with pytest.raises(UserError) as err:
        config_from_dict(data, origin="x.json")
    message = str(err.value)
    assert message.startswith("x.json: %s.%s:" % (section, key)) and limit in message, message
    data[section][key] = {"width": 4.0, "crop_height": 4096, "crop_width": 4096,
                          "max_height": 4096, "gap": 100, "val_triplets": 10000,
                          "batch_size": 1024, "num_devices": 1, "steps": 10 ** 9,
                          "threads": 1024}[key]  # the limit itself is allowed
    config_from_dict(data)
