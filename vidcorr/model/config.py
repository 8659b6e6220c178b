"""Training configs: JSON files parsed into frozen, validated objects with defaults.

A config has three sections, ``model``, ``data`` and ``train``, plus a
``name``. Every key has a default (see the dataclasses below); unknown keys and
wrong types are errors that name the key, e.g. ``configs/x.json: train.steps:
expected an integer, got "ten"``. ``Config.to_dict()`` gives the resolved
config, which the trainer writes into the run directory.
"""

import dataclasses
import json
import math
import os
from typing import Tuple

from vidcorr.errors import UserError
from vidcorr.model.spec import DEFAULT_NUM_BITS, LOSSES, NUM_BITS_RANGE, NetworkSpec

__all__ = ["ModelConfig", "DataConfig", "TrainConfig", "Config", "load_config",
           "config_from_dict", "KERNEL_TERMS"]

# Bounds of the size-like keys: what can be built and run (every bound says its limit).
MAX_SIDE = 4096  # data.max_height, crop_height, crop_width (pixels)
MAX_GAP = 100  # data.gap (frames)
MAX_VAL_TRIPLETS = 10000
MAX_BATCH = 1024  # train.batch_size
MAX_DEVICES = 64  # train.num_devices (towers)
MAX_STEPS = 10 ** 9
MAX_THREADS = 1024
MIN_SCALE = 0.125  # data.scales: the smallest downscaling of the training frames

# train.tune: the layers a run changes, by the first part of their scope under the model's.
TUNES = ("all", "decoder", "head")
TUNE_SCOPES = {"all": None, "decoder": ("dec", "output"), "head": ("output",)}

# The train terms that act on the kernel head's weights.
KERNEL_TERMS = ("frame_weight", "symmetry_weight", "smooth_weight", "warp_weight")


@dataclasses.dataclass(frozen=True)
class ModelConfig(NetworkSpec):
    """The network (:class:`vidcorr.model.spec.NetworkSpec`, the one record of its
    hyper-parameters and checks) and its quantisation switch."""
    quantize: bool = False
    num_bits: int = DEFAULT_NUM_BITS

    def validate(self):
        for key, message in self.problems():
            raise _KeyError("model." + key, message)
        _check(NUM_BITS_RANGE[0] <= self.num_bits <= NUM_BITS_RANGE[1], "model.num_bits",
               "must be from %d to %d" % NUM_BITS_RANGE)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where triplets come from and how they are sampled and augmented."""
    sources: Tuple[str, ...] = ()
    synthetic: bool = False
    gap: int = 1
    max_height: int = 0
    crop_height: int = 128
    crop_width: int = 384
    flip_horizontal: bool = True
    flip_vertical: bool = False
    time_reversal: bool = True
    static_threshold: float = 0.01
    cut_threshold: float = 0.25
    max_motion: float = 2.0
    layered_fraction: float = 0.0
    motion_supersample: int = 1
    motion_power: float = 1.0
    velocity: Tuple[float, ...] = ()
    rehearsal_sources: Tuple[str, ...] = ()
    rehearsal_fraction: float = 0.0
    scales: Tuple[float, ...] = (1.0,)
    val_split: str = "time"
    val_fraction: float = 0.1
    val_triplets: int = 64
    seed: int = 0

    def validate(self):
        """Checks every ``data.*`` field; the first bad one becomes a one-line UserError."""
        _check(self.synthetic or len(self.sources) > 0, "data.sources",
               "is empty: list video files or frame folders, or set data.synthetic")
        _check(1 <= self.gap <= MAX_GAP, "data.gap", "must be from 1 to %d" % MAX_GAP)
        _check(0 <= self.max_height <= MAX_SIDE, "data.max_height",
               "must be from 0 (keep the size) to %d" % MAX_SIDE)
        for key in ("crop_height", "crop_width"):
            _check(32 <= getattr(self, key) <= MAX_SIDE, "data." + key,
                   "must be from 32 to %d pixels" % MAX_SIDE)
        _check(0 <= self.static_threshold < self.cut_threshold, "data.static_threshold",
               "must be >= 0 and below data.cut_threshold")
        _check(self.max_motion >= 0, "data.max_motion", "must be >= 0")
        _check(0 <= self.layered_fraction <= 1, "data.layered_fraction", "must be in [0, 1]")
        _check(1 <= self.motion_supersample <= 8, "data.motion_supersample",
               "must be from 1 (whole-pixel layer motion) to 8")
        _check(1 <= self.motion_power <= 4, "data.motion_power",
               "must be from 1 (uniform layer velocities) to 4 (most of them small)")
        _check(self.layered_fraction == 0 or (self.max_motion * self.motion_supersample >= 1
                                              and not self.synthetic),
               "data.layered_fraction", "needs real sources and data.max_motion of at least "
               "1 / data.motion_supersample (the motion lattice)")
        _check(len(self.velocity) in (0, 2), "data.velocity",
               "must be [] (random motion) or [vy, vx] in pixels per frame")
        _check(0 <= self.rehearsal_fraction < 1, "data.rehearsal_fraction", "must be in [0, 1)")
        _check(self.rehearsal_fraction == 0 or (self.rehearsal_sources and not self.synthetic),
               "data.rehearsal_fraction", "needs data.rehearsal_sources and real sources")
        _check(len(self.scales) >= 1 and all(MIN_SCALE <= v <= 1 for v in self.scales),
               "data.scales", "must list one or more factors from %g to 1 (the frames' size "
               "for training triplets, e.g. [1, 0.5])" % MIN_SCALE)
        _check(not self.synthetic or tuple(self.scales) == (1.0,), "data.scales",
               "needs real sources (synthetic triplets have no frames to downscale)")
        _check(self.val_split in ("time", "video"), "data.val_split", "must be 'time' or 'video'")
        _check(0 < self.val_fraction < 1, "data.val_fraction", "must be in (0, 1)")
        _check(1 <= self.val_triplets <= MAX_VAL_TRIPLETS, "data.val_triplets",
               "must be from 1 to %d" % MAX_VAL_TRIPLETS)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The optimisation loop, checkpoints, summaries and validation."""
    run_dir: str = "runs/default"
    batch_size: int = 8
    steps: int = 100000
    learning_rate: float = 1e-4
    lr_schedule: str = "cosine"
    lr_decay_steps: int = 20000
    lr_decay_rate: float = 0.5
    min_lr_ratio: float = 0.05
    loss: str = "l1"
    gradient_weight: float = 0.0
    census_weight: float = 0.0
    frame_weight: float = 0.0
    frame_mass: bool = False
    frame_real_weight: float = 1.0
    frame_temperature: float = 1.0
    symmetry_weight: float = 0.0
    smooth_weight: float = 0.0
    smooth_edge: float = 10.0
    warp_weight: float = 0.0
    checkpoint_every: int = 1000
    keep_checkpoints: int = 5
    summary_every: int = 100
    validate_every: int = 1000
    init_from: str = ""
    init_widen: bool = False
    threads: int = 0
    num_devices: int = 1
    seed: int = 0
    tune: str = "all"

    def validate(self):
        """Checks every ``train.*`` field; the first bad one becomes a one-line UserError."""
        _check(1 <= self.batch_size <= MAX_BATCH, "train.batch_size",
               "must be from 1 to %d" % MAX_BATCH)
        _check(1 <= self.num_devices <= MAX_DEVICES, "train.num_devices",
               "must be from 1 to %d" % MAX_DEVICES)
        _check(self.batch_size % self.num_devices == 0, "train.num_devices",
               "must divide train.batch_size (%d) so every tower gets the same share"
               % self.batch_size)
        _check(1 <= self.steps <= MAX_STEPS, "train.steps", "must be from 1 to %d" % MAX_STEPS)
        _check(self.tune in TUNES, "train.tune", "must be one of %s (the layers the optimizer "
               "changes)" % ", ".join(repr(t) for t in TUNES))
        _check(self.learning_rate > 0, "train.learning_rate", "must be positive")
        _check(self.lr_schedule in ("constant", "exponential", "cosine"), "train.lr_schedule",
               "must be 'constant', 'exponential' or 'cosine'")
        _check(self.lr_decay_steps >= 1, "train.lr_decay_steps", "must be at least 1")
        _check(0 < self.lr_decay_rate <= 1, "train.lr_decay_rate", "must be in (0, 1]")
        _check(0 <= self.min_lr_ratio <= 1, "train.min_lr_ratio", "must be in [0, 1]")
        _check(self.loss in LOSSES, "train.loss",
               "must be one of %s" % ", ".join(repr(n) for n in LOSSES))
        for key in ("gradient_weight", "census_weight", "frame_weight", "symmetry_weight",
                    "smooth_weight", "warp_weight"):
            _check(0 <= getattr(self, key) <= 100, "train." + key,
                   "must be from 0 (off) to 100")
        for key in ("checkpoint_every", "keep_checkpoints", "summary_every", "validate_every"):
            _check(getattr(self, key) >= 1, "train." + key, "must be at least 1")
        _check(0 <= self.threads <= MAX_THREADS, "train.threads",
               "must be from 0 (TensorFlow decides) to %d" % MAX_THREADS)
        _check(0 <= self.frame_real_weight <= 1, "train.frame_real_weight",
               "must be from 0 (the frame and warp terms on layered triplets only) to 1 "
               "(on every triplet)")
        _check(0.1 <= self.frame_temperature <= 10, "train.frame_temperature",
               "must be from 0.1 to 10 (1: the network's own weights)")
        _check(0 <= self.smooth_edge <= 1000, "train.smooth_edge",
               "must be from 0 (plain smoothness) to 1000")
        _check(bool(self.run_dir), "train.run_dir", "must not be empty")
        _check(bool(self.init_from) or not self.init_widen, "train.init_widen",
               "needs train.init_from (the narrower checkpoint to widen)")


@dataclasses.dataclass(frozen=True)
class Config:
    """A whole training config."""
    name: str = "default"
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    train: TrainConfig = TrainConfig()

    def to_dict(self):
        """The resolved config as plain JSON-able data."""
        out = dataclasses.asdict(self)
        for section in out.values():  # the list-valued keys: tuples in the config, lists here
            if isinstance(section, dict):
                section.update({k: list(v) for k, v in section.items() if isinstance(v, tuple)})
        return out

    def replace(self, **sections):
        """A copy with some keys of some sections changed, e.g. ``train={'steps': 5}``."""
        data = self.to_dict()
        for section, values in sections.items():
            data[section].update(values)
        return config_from_dict(data)


class _KeyError(Exception):
    def __init__(self, key, message):
        super().__init__(key, message)
        self.key, self.message = key, message


def _check(ok, key, message):
    if not ok:
        raise _KeyError(key, message)


def _coerce(key, value, field_type):
    """Checks (and converts ints to floats where a float is expected)."""
    if field_type is bool:
        if not isinstance(value, bool):
            raise _KeyError(key, "expected true or false, got %s" % json.dumps(value))
        return value
    if field_type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _KeyError(key, "expected an integer, got %s" % json.dumps(value))
        return value
    if field_type is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _KeyError(key, "expected a number, got %s" % json.dumps(value))
        if not math.isfinite(value):
            raise _KeyError(key, "expected a finite number, got %s" % json.dumps(value))
        return float(value)
    if field_type is str:
        if not isinstance(value, str):
            raise _KeyError(key, "expected a string, got %s" % json.dumps(value))
        return value
    if field_type == Tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _KeyError(key, "expected a list of strings, got %s" % json.dumps(value))
        return tuple(value)
    if field_type == Tuple[float, ...]:
        if not isinstance(value, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in value):
            raise _KeyError(key, "expected a list of finite numbers, got %s" % json.dumps(value))
        return tuple(float(v) for v in value)
    if field_type == Tuple[int, ...]:
        if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise _KeyError(key, "expected a list of integers, got %s" % json.dumps(value))
        return tuple(value)
    raise TypeError(field_type)  # pragma: no cover - a field type this module lacks


def _section(cls, prefix, values):
    if not isinstance(values, dict):
        raise _KeyError(prefix, "expected an object, got %s" % json.dumps(values))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        if key not in fields:
            raise _KeyError(prefix + "." + key, "unknown key (known: %s)" % ", ".join(fields))
        kwargs[key] = _coerce(prefix + "." + key, value, fields[key].type)
    section = cls(**kwargs)
    section.validate()
    return section


def config_from_dict(data, origin="config"):
    """Builds a validated :class:`Config` from a dict.

    Args:
      data: the parsed JSON object.
      origin: a name for error messages (the file path).

    Returns:
      A frozen :class:`Config`.

    Raises:
      UserError: for unknown keys, wrong types or invalid values, naming the key.
    """
    sections = {"model": ModelConfig, "data": DataConfig, "train": TrainConfig}
    try:
        if not isinstance(data, dict):
            raise _KeyError("(top level)", "expected a JSON object")
        kwargs = {}
        for key, value in data.items():
            if key == "name":
                kwargs["name"] = _coerce("name", value, str)
            elif key in sections:
                kwargs[key] = _section(sections[key], key, value)
            else:
                raise _KeyError(key, "unknown key (known: name, model, data, train)")
        for key, cls in sections.items():
            if key not in kwargs:
                kwargs[key] = _section(cls, key, {})
        _check(not kwargs["train"].frame_mass or kwargs["train"].frame_weight > 0
               or kwargs["train"].warp_weight > 0, "train.frame_mass",
               "weighs the frame and warp terms: needs train.frame_weight or warp_weight > 0")
        _check(kwargs["train"].frame_real_weight == 1.0 or (
            kwargs["train"].frame_weight > 0 or kwargs["train"].warp_weight > 0)
               and kwargs["data"].layered_fraction > 0, "train.frame_real_weight",
               "weighs the frame and warp terms on real triplets against layered ones: needs "
               "train.frame_weight or warp_weight > 0 and data.layered_fraction > 0")
        _check(kwargs["train"].frame_temperature == 1.0 or any(
            getattr(kwargs["train"], key) > 0 for key in KERNEL_TERMS),
               "train.frame_temperature", "acts on the kernel terms: needs train.frame_weight, "
               "symmetry_weight, smooth_weight or warp_weight > 0")
        for key in KERNEL_TERMS:
            _check(getattr(kwargs["train"], key) == 0 or kwargs["model"].kernel_size > 0,
                   "train." + key, "acts on the kernel head's weights: needs model.kernel_size > 0")
        return Config(**kwargs)
    except _KeyError as err:
        raise UserError("%s: %s: %s" % (origin, err.key, err.message))


def load_config(path):
    """Reads and validates a JSON config file.

    Relative ``data.sources`` stay relative to the working directory; a source
    starting with ``pkg:`` names a file in an installed package (see
    :mod:`vidcorr.io.video`).

    Raises:
      UserError: if the file is missing, is not JSON, or is invalid.
    """
    if not os.path.isfile(path):
        raise UserError("config file not found: %s" % path)
    try:
        with open(path) as f:
            data = json.load(f)
    except ValueError as err:
        raise UserError("%s: not valid JSON: %s" % (path, err))
    return config_from_dict(data, origin=path)
