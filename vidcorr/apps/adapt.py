"""Adaptation: fine-tune a model on the user's own clips, never into a worse one.

``vidcorr-adapt CLIP [CLIP ...] --out MODEL`` (:func:`adapt`) trains the model (the
packaged one, or ``--model``) on triplets of the user's clips with the self-supervised
interpolation loss of the model's own recipe (its ``config.json``: the loss terms, the
layered-motion share, the crop and frame size), starting from its weights:

* **The clips' own held-back triplets judge it.** The data's time split keeps the last
  ``val_fraction`` of every clip out of training; the interpolation PSNR there is measured
  before the first step, every ``validate_every`` steps and at the end, and the best
  weights are kept (in memory, with the batch-norm statistics). Half of those triplets
  choose the best; the other half's PSNR is reported beside it (``test_psnr_*``), free of
  the choice's optimism.
* **Never worse.** If no validation beats the source model by ``MIN_GAIN_DB``, the folder
  gets the source model's weights and config unchanged, and the card and the log say so.
  Unless ``guard`` is off, they must also match large motion as well as the source, within
  ``guard_tolerance`` (:mod:`vidcorr.evaluation.guard`: layered pairs made from the
  held-back frames): the best of the ``guard_candidates`` best validations that passes is
  written, else the source; its time (``GUARD_RESERVE`` at most) is kept from training.
* **A budget**: ``minutes`` from the start, reading the clips and building the graph
  included (a constant learning rate, or one that decays with the clock), or ``steps``
  (cosine); Ctrl-C or SIGTERM ends the training after the current step and keeps the best
  so far.
* **A moving average of the weights** (``average``, on by default), validated and kept
  in their place: a high learning rate's gain with less forgetting. Against forgetting
  too, a **pull towards the source weights** (``anchor``,
  :class:`vidcorr.training.adapting.AdaptTrainer`), and **rehearsal** (``mix``): that share
  of the training triplets comes from the source model's own training clips (those of its
  recipe found on this machine), never from the user's held-back part.
* **Out**: a model folder like ``vidcorr-export``'s (every command takes it), written
  atomically; its card records the source model, the clips, the recipe, the steps and
  seconds, and the PSNR before and after.

Training runs in a hidden scratch run folder beside ``--out`` (``.adapt-PID-RANDOM``),
removed at the end, or by the next adaptation into that folder if the process was killed.
"""

import dataclasses
import math
import os
import shutil
import time
from typing import Optional, Tuple

from vidcorr.errors import UserError, first_line
from vidcorr.evaluation.guard import check_settings
from vidcorr.io import rundir
from vidcorr.io.files import check_writable_folder, remove_empty_folders, scratch_folder
from vidcorr.model.config import MAX_BATCH, MAX_SIDE, MIN_SCALE, TUNES

__all__ = ["AdaptSettings", "adapt", "adapt_to_footage", "rehearsal_clips", "MIN_GAIN_DB",
           "DEFAULT_MINUTES", "DEFAULT_WARMUP", "ADAPTED_MODEL", "DEFAULT_GUARD_PAIRS",
           "DEFAULT_GUARD_TOLERANCE", "DEFAULT_GUARD_CANDIDATES"]

DEFAULT_MINUTES = 5.0  # the default budget: a few minutes on a CPU
DEFAULT_LEARNING_RATE = 1e-3  # with the weights' average: the study's best within the
# forgetting bound (docs/adaptation.md, "The weights' moving average")
DEFAULT_DECAY = False  # constant: more gain within the forgetting bound (docs/adaptation.md)
DEFAULT_ANCHOR = 0.0
DEFAULT_MIX = 0.0
DEFAULT_AVERAGE = 0.99
DEFAULT_WARMUP = 0
MAX_AVERAGE = 0.999
MAX_MIX = 0.9
DEFAULT_VALIDATE_EVERY = 25
MIN_GAIN_DB = 0.01  # below this over the source model, adaptation did not help
DEFAULT_GUARD_PAIRS = 4
DEFAULT_GUARD_CANDIDATES = 3  # each 7-11 s on the study clip, 256x144 (docs/adaptation.md)
DEFAULT_GUARD_TOLERANCE = 0.01  # acc@5 on large motion: the developers' pairs' bound
GUARD_RESERVE = (30.0, 0.1)  # kept from training for the guard: seconds, budget share (least)
SCRATCH_PREFIX = ".adapt-"
ADAPTED_MODEL = "adapted_model"  # correspond --adapt's model folder in its --out


@dataclasses.dataclass(frozen=True)
class AdaptSettings:
    """How to adapt (validated; every field has a default).

    Attributes:
      minutes: the training time budget (ignored when ``steps`` is given).
      steps: a fixed number of steps instead (cosine learning rate); None: ``minutes``.
      learning_rate: Adam's, at the start.
      decay: under a time budget, decay the learning rate with the clock (a cosine to
        the recipe's ``min_lr_ratio`` at the deadline); False (the default): constant.
      anchor: after each step every tuned weight moves this share of the way back to its
        source value (0: none, up to 0.5), against forgetting.
      mix: the share of training triplets drawn from the source model's training clips
        (rehearsal against forgetting; 0: none, up to 0.9).
      average: validate and keep a moving average of the weights, this its decay per
        step (0: none, the weights themselves; up to 0.999): with it a learning rate
        three times higher gains more and forgets less.
      warmup: the first steps, over which the learning rate rises linearly to its value
        (0: none; :func:`vidcorr.training.adapting.warmup_factor`).
      tune: the layers to change: ``"all"``, ``"decoder"`` or ``"head"``.
      crop: ``(height, width)`` of the training crops; None: the recipe's.
      max_height: frames are downscaled to at most this many rows; None: the recipe's.
      batch_size: None: the recipe's.
      layered_fraction: the share of synthetic layered-motion triplets made from the clips'
        frames (:mod:`vidcorr.training.layered`); None: the recipe's.
      scales: the frames' sizes (factors up to 1) that training triplets are cut from,
        e.g. ``(1, 0.5)``: half of them from the frames at half size, as the read-out's
        coarser pyramid levels see them (``data.scales``); None: the recipe's.
      guard: check the best weights on large motion before writing them (see the module
        docstring); False: PSNR alone decides.
      guard_candidates: the most validations' weights the guard tries, best first (1-10).
      guard_pairs: the guard's layered pairs.
      guard_tolerance: the most acc@5 the adapted model may lose there (-1 to 1).
      validate_every: steps between validations on the held-back triplets.
      val_fraction: the share of each clip's frames held back (its end).
      seed: of the data and the graph.
    """
    minutes: float = DEFAULT_MINUTES
    steps: Optional[int] = None
    learning_rate: float = DEFAULT_LEARNING_RATE
    decay: bool = DEFAULT_DECAY
    anchor: float = DEFAULT_ANCHOR
    mix: float = DEFAULT_MIX
    average: float = DEFAULT_AVERAGE
    warmup: int = DEFAULT_WARMUP
    tune: str = "all"
    crop: Optional[Tuple[int, int]] = None
    max_height: Optional[int] = None
    batch_size: Optional[int] = None
    layered_fraction: Optional[float] = None
    scales: Optional[Tuple[float, ...]] = None
    guard: bool = True
    guard_candidates: int = DEFAULT_GUARD_CANDIDATES
    guard_pairs: int = DEFAULT_GUARD_PAIRS
    guard_tolerance: float = DEFAULT_GUARD_TOLERANCE
    validate_every: int = DEFAULT_VALIDATE_EVERY
    val_fraction: float = 0.1
    seed: int = 0

    def __post_init__(self):
        def integer(name, low, high, value):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UserError("%s must be an integer from %d to %d, got %r"
                                % (name, low, high, value))
        if self.steps is None and not (isinstance(self.minutes, (int, float)) and
                                       0 < self.minutes <= 24 * 60):
            raise UserError("minutes must be above 0 and at most a day (1440), got %r"
                            % (self.minutes,))
        if self.steps is not None:
            integer("steps", 1, 10 ** 6, self.steps)
        if not (isinstance(self.learning_rate, float) and 0 < self.learning_rate <= 1e-2):
            raise UserError("learning_rate must be above 0 and at most 0.01, got %r"
                            % (self.learning_rate,))
        if not isinstance(self.decay, bool):
            raise UserError("decay must be True or False, got %r" % (self.decay,))
        if isinstance(self.anchor, bool) or not (isinstance(self.anchor, (int, float)) and
                                                 0 <= self.anchor <= 0.5):
            raise UserError("anchor must be from 0 to 0.5, got %r" % (self.anchor,))
        if isinstance(self.mix, bool) or not (isinstance(self.mix, (int, float)) and
                                              0 <= self.mix <= MAX_MIX):
            raise UserError("mix must be from 0 to %g, got %r" % (MAX_MIX, self.mix))
        if isinstance(self.average, bool) or not (isinstance(self.average, (int, float)) and
                                                  0 <= self.average <= MAX_AVERAGE):
            raise UserError("average must be from 0 to %g, got %r"
                            % (MAX_AVERAGE, self.average))
        integer("warmup", 0, 10 ** 6, self.warmup)
        if self.tune not in TUNES:
            raise UserError("tune must be one of %s, got %r" % (", ".join(TUNES), self.tune))
        if self.crop is not None:
            if len(tuple(self.crop)) != 2:
                raise UserError("crop must be (height, width), got %r" % (self.crop,))
            for value in self.crop:
                integer("crop", 32, MAX_SIDE, value)
            object.__setattr__(self, "crop", tuple(self.crop))
        if self.max_height is not None:
            integer("max_height", 32, MAX_SIDE, self.max_height)
        if self.batch_size is not None:
            integer("batch_size", 1, MAX_BATCH, self.batch_size)
        if self.layered_fraction is not None and not (
                isinstance(self.layered_fraction, (int, float)) and
                0 <= self.layered_fraction <= 1):
            raise UserError("layered_fraction must be in [0, 1], got %r"
                            % (self.layered_fraction,))
        if self.scales is not None:
            object.__setattr__(self, "scales", _scales(self.scales))
        check_settings(self.guard, self.guard_pairs, self.guard_tolerance, self.guard_candidates)
        integer("validate_every", 1, 10 ** 6, self.validate_every)
        if not (isinstance(self.val_fraction, float) and 0 < self.val_fraction < 0.5):
            raise UserError("val_fraction must be above 0 and below 0.5, got %r"
                            % (self.val_fraction,))


def rehearsal_clips(source, log=print):
    """The source model's training clips (its recipe's ``data.sources``) that this machine
    has, logging the ones it lacks.

    Raises:
      UserError: when it has none of them.
    """
    from vidcorr.io.video import resolve_source

    found, missing = [], []
    for clip in source.data.sources:
        try:
            (found if os.path.exists(resolve_source(clip)) else missing).append(clip)
        except UserError:
            missing.append(clip)
    if not found:
        raise UserError("--mix needs the source model's training clips, and none of its %d is "
                        "on this machine (%s)" % (len(missing), ", ".join(missing) or "none"))
    if missing:
        log("rehearsal: %d of the model's %d training clips; missing: %s"
            % (len(found), len(found) + len(missing), ", ".join(missing)))
    return found


def _scales(value):
    """``AdaptSettings.scales`` as a tuple of floats, each from ``MIN_SCALE`` to 1.

    Raises:
      UserError: for anything else, an empty list included.
    """
    scales = tuple(value) if isinstance(value, (tuple, list)) else ()
    if not scales or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             and MIN_SCALE <= v <= 1 for v in scales):
        raise UserError("scales must list factors from %g to 1, got %r" % (MIN_SCALE, value))
    return tuple(float(v) for v in scales)


def _config(source, sources, settings, run_dir, prefix, log=print):
    """The adaptation's run config: the source model's recipe on the user's clips."""
    s = settings
    data = {"sources": list(sources), "synthetic": False, "val_split": "time",
            "val_fraction": s.val_fraction, "seed": s.seed}
    if s.mix > 0:
        data.update(rehearsal_sources=rehearsal_clips(source, log), rehearsal_fraction=s.mix)
    if s.crop is not None:
        data.update(crop_height=s.crop[0], crop_width=s.crop[1])
    if s.max_height is not None:
        data["max_height"] = s.max_height
    if s.layered_fraction is not None:
        data["layered_fraction"] = float(s.layered_fraction)
    if s.scales is not None:
        data["scales"] = list(s.scales)
    train = {"run_dir": run_dir, "init_from": prefix, "init_widen": False,
             "learning_rate": s.learning_rate, "tune": s.tune, "seed": s.seed,
             "steps": s.steps or 10 ** 6, "lr_schedule": "cosine" if s.steps else "constant",
             "lr_decay_steps": s.steps or 10 ** 6, "validate_every": s.validate_every,
             "checkpoint_every": 10 ** 6, "summary_every": 10 ** 6, "keep_checkpoints": 1,
             "num_devices": 1}
    if s.batch_size is not None:
        train["batch_size"] = s.batch_size
    return source.replace(data=data, train=train)


def adapt(sources, out, model=None, settings=None, log=print, progress=True):
    """Fine-tunes a model on the user's clips and writes a model folder (module docstring).

    Args:
      sources: video files or frame folders (``pkg:`` paths too).
      out: the model folder to write: new, empty or an earlier model folder (replaced
        atomically); never a run or the source model itself.
      model: the source model (a model folder, run or checkpoint prefix); None: the
        packaged default.
      settings: :class:`AdaptSettings` (None: the defaults).
      log: print-like, for one line per event.
      progress: show a progress bar over the steps.

    Returns:
      The card's ``adaptation`` record (a dict).

    Raises:
      UserError: for bad sources, settings, model or ``out`` (before any training), or a
        failed write.
    """
    from vidcorr.apps.export import check_out, export_model, portable
    from vidcorr.readout.matching import DEFAULT_MODEL

    settings = settings if settings is not None else AdaptSettings()
    sources = [os.fspath(s) for s in ([sources] if isinstance(sources, (str, os.PathLike))
                                      else list(sources))]
    if not sources:
        raise UserError("give at least one video or frame folder to adapt to")
    prefix = rundir.find_checkpoint(model or DEFAULT_MODEL)
    source_config = rundir.read_config(prefix)
    if source_config is None:
        raise UserError("%s has no config.json beside it: adaptation needs the model's recipe"
                        % prefix)
    if os.path.abspath(out) == os.path.abspath(os.path.dirname(prefix)):
        raise UserError("--out %s is the source model; write the adapted one elsewhere" % out)
    check_out(out, prefix)
    parent = os.path.dirname(os.path.abspath(out))
    created = check_writable_folder(parent, "the folder of --out")
    try:
        scratch = scratch_folder(parent, SCRATCH_PREFIX)  # and a killed run's removed
    except OSError as err:
        remove_empty_folders(created)
        raise UserError("cannot write into %s: %s" % (parent, first_line(err)))
    try:
        config = _config(source_config, sources, settings, os.path.join(scratch, "run"), prefix,
                         log)
        start = time.time()  # the budget counts the loading and building too
        record, candidates, held = _train(config, settings, start, log, progress)
        record.update(source_model=portable(prefix), clips=sources,
                      recipe=_recipe(settings, config), guard=None)
        best = candidates[0]["prefix"] if candidates else None
        if best is not None and settings.guard:
            best = _guard(record, prefix, candidates, held, settings, start, log)
        if best is None:  # never worse: the source model as it was
            export_model(prefix, out, notes="vidcorr-adapt: not adapted (%s)" % record["reason"],
                         interpolation=False, log=lambda m: None, extra={"adaptation": record})
        else:
            export_model(best, out, notes="vidcorr-adapt on %s" % ", ".join(sources),
                         interpolation=False, log=lambda m: None, extra={"adaptation": record})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        remove_empty_folders(created)
    log("%s: %s" % (out, _summary(record)))
    return record


def adapt_to_footage(source, out_dir, model, minutes, log=print, progress=True):
    """``vidcorr-correspond --adapt MINUTES``: adapts ``model`` (None: the packaged one) to
    the ``--video`` or ``--frames`` footage into ``OUT_DIR/adapted_model``; returns that folder.

    Raises:
      UserError: without footage (two images or a list), or as :func:`adapt` does.
    """
    if not source:
        raise UserError("--adapt needs the footage to learn from: --video FILE or --frames DIR")
    out = os.path.join(out_dir, ADAPTED_MODEL)
    adapt([source], out, model, AdaptSettings(minutes=minutes), log=log, progress=progress)
    return out


def _recipe(settings, config):
    """The card's record of how the adaptation trained."""
    d, t = config.data, config.train
    return {"learning_rate": settings.learning_rate, "tune": settings.tune,
            "schedule": ("cosine over the time budget" if settings.steps is None and
                         settings.decay else t.lr_schedule),
            "anchor": settings.anchor, "mix": settings.mix,
            "average": settings.average, "warmup": settings.warmup,
            "rehearsal_clips": list(d.rehearsal_sources), "batch_size": t.batch_size,
            "crop": [d.crop_height, d.crop_width], "max_height": d.max_height,
            "loss": t.loss, "census_weight": t.census_weight, "smooth_weight": t.smooth_weight,
            "layered_fraction": d.layered_fraction, "scales": list(d.scales),
            "validate_every": settings.validate_every, "guard": settings.guard,
            "guard_candidates": settings.guard_candidates,
            "guard_pairs": settings.guard_pairs, "guard_tolerance": settings.guard_tolerance,
            "minutes": settings.minutes, "steps": settings.steps}


def _summary(record):
    before, after = record["validation_psnr_before"], record["validation_psnr_after"]
    if record["adapted"]:
        test = ("" if record["test_psnr_before"] is None else
                "; the other half, not used to choose: %.2f -> %.2f dB (%+.2f dB)"
                % (record["test_psnr_before"], record["test_psnr_after"],
                   record["test_psnr_after"] - record["test_psnr_before"]))
        return ("adapted in %d steps (%.0f s): held-back PSNR %.2f -> %.2f dB (%+.2f dB)%s"
                % (record["best_step"], record["seconds"], before, after, after - before, test))
    return "not adapted: %s; the source model's weights are written unchanged" % record["reason"]


def _guard(record, source, candidates, held, settings, start, log):
    """Runs the guard into ``record`` within the budget that began at ``start``; returns the
    chosen candidate's prefix, or None."""
    from vidcorr.evaluation.guard import choose

    end = None if settings.steps is not None else start + 60.0 * settings.minutes
    try:
        index, record["guard"] = choose(
            source, [(c["step"], c["prefix"]) for c in candidates], held, settings.guard_pairs,
            settings.guard_tolerance, deadline=end, log=log)
    except KeyboardInterrupt:  # Ctrl-C keeps the best so far: by PSNR, unchecked, and said
        log("guard interrupted: the best weights by held-back PSNR are written unchecked")
        record["guard"] = {"interrupted": True}
        return candidates[0]["prefix"]
    if index is not None:
        chosen = candidates[index]
        record.update(best_step=chosen["step"], validation_psnr_after=round(chosen["psnr"], 3),
                      test_psnr_after=_rounded(chosen["test_psnr"]))
        return chosen["prefix"]
    record.update(adapted=False, validation_psnr_after=record["validation_psnr_before"],
                  test_psnr_after=record["test_psnr_before"],
                  reason="it matched large motion worse than the source model (acc@5 %.3f "
                         "against %.3f on layered pairs of held-back frames; %d step(s) tried)"
                         % (record["guard"]["adapted_acc5"], record["guard"]["source_acc5"],
                            len(record["guard"]["tried"])))
    return None


def _deadline(settings, start):
    """The training's deadline under a time budget (None: ``steps``), the guard's share kept."""
    if settings.steps is not None:
        return None
    budget = 60.0 * settings.minutes
    seconds, share = GUARD_RESERVE
    return start + budget - (min(seconds, share * budget) if settings.guard else 0.0)


def _rounded(value):
    return None if value is None or not math.isfinite(value) else round(value, 3)


def _train(config, settings, start, log, progress):
    """Trains under the budget that began at ``start``; returns ``(record, candidates, the
    held-back frames)``, the candidates (the guard's) the best validations that beat the
    source model, best first, each a dict of ``step``, ``psnr``, ``test_psnr`` and its
    checkpoint's ``prefix``."""
    from vidcorr.training.adapting import AdaptTrainer

    trainer = AdaptTrainer(config, _deadline(settings, start), log=log, progress=progress,
                           start=start, decay=settings.decay, anchor=settings.anchor,
                           average=settings.average, warmup=settings.warmup,
                           keep=settings.guard_candidates if settings.guard else 1)
    try:
        trainer.setup()
        before = trainer.validate()
        trainer.consider(before, 0)
        log("source model on %d held-back triplets: %.2f dB (frame average %.2f dB)"
            % (len(trainer.val_inputs), before["val_psnr"], before["baseline_psnr"]))
        results = trainer.train()
        trainer.consider(results, trainer.step)
        seconds = time.time() - start
        gain = trainer.best_psnr - before["select_psnr"]
        record = {"validation_psnr_before": round(before["select_psnr"], 3),
                  "validation_psnr_after": round(trainer.best_psnr, 3),
                  "test_psnr_before": _rounded(before["test_psnr"]),
                  "test_psnr_after": _rounded(trainer.best_test_psnr),
                  "frame_average_psnr": round(before["baseline_psnr"], 3),
                  "val_triplets": int(len(trainer.val_inputs)), "steps": int(trainer.step),
                  "best_step": int(trainer.best_step), "seconds": round(seconds, 1),
                  "interrupted": bool(results.get("interrupted")),
                  "adapted": gain >= MIN_GAIN_DB, "reason": None}
        if gain < MIN_GAIN_DB:
            record["reason"] = ("no validation beat the source model's %.2f dB on the held-back "
                                "triplets by %g dB (best %.2f dB)"
                                % (before["select_psnr"], MIN_GAIN_DB, trainer.best_psnr))
            record["validation_psnr_after"] = record["validation_psnr_before"]
            record["test_psnr_after"] = record["test_psnr_before"]
            return record, [], None
        candidates = [dict(step=k["step"], psnr=k["psnr"], test_psnr=k["test_psnr"],
                           prefix=trainer.save_best(rank))
                      for rank, k in enumerate(trainer.kept)
                      if k["psnr"] - before["select_psnr"] >= MIN_GAIN_DB]
        return record, candidates, trainer.held_back_frames()
    except BaseException:
        trainer.abandon()
        raise
    finally:
        trainer.close()
