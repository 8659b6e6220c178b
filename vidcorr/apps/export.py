"""Exporting a trained run as a small, self-describing model folder (the packaged default).

:func:`export_model` copies the network's variables of a run's checkpoint
(no optimizer state) into a new folder with its own relative ``checkpoint``
file, the run's ``config.json`` and a ``card.json`` describing the model: the
config, the data it saw, its training steps, its validation PSNR against the
frame average and DIS midpoint warping (measured here on the config's
held-out triplets), and, when given, the evaluation table written by
``scripts/evaluate.py``. :class:`vidcorr.Matcher` loads such a folder like any
run directory; ``vidcorr/models/default`` is one.

Given several checkpoints of one network (fine-tunes from a common start), it
exports their element-wise mean (:func:`average_values`: weights and batch-norm
statistics alike; a "uniform soup"), with the first one's config and the list in
the card.
"""

import datetime
import json
import os
import shutil

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError, first_line
from vidcorr.io import rundir
from vidcorr.io.files import (atomic_write, check_replaceable, check_writable_folder,
                              publish, remove_empty_folders, replace_folder, staging_folder)
from vidcorr.readout.inference import checkpoint_values

__all__ = ["export_model", "average_values", "check_out", "portable", "CARD_FILE", "MAX_MODEL_MB"]

CARD_FILE = rundir.CARD_FILE
MAX_MODEL_MB = 25.0


def check_out(out, prefix):
    """Refuses an ``out`` whose replacement would lose anything but an earlier export.

    Raises:
      UserError: if ``out`` is the run (or holds the checkpoint) being exported, is
        a file, or is a non-empty folder that is not an earlier export (a
        training run: checkpoints, optimizer state, events).
    """
    target = os.path.realpath(out)
    source = os.path.realpath(os.path.dirname(prefix))
    if target == source:
        raise UserError("--out %s is the run being exported; choose another folder" % out)
    # a folder holding anything an export does not write is not replaced
    check_replaceable(out, lambda names: CARD_FILE in names and all(
        rundir.is_model_file(n) for n in names), "an earlier export")


def _save_values(values, step, prefix):
    """Writes ``{name: array}`` and ``global_step`` as a checkpoint at ``prefix``."""
    graph = tf.Graph()
    with graph.as_default():
        variables = {name: tf.Variable(value, name=name.replace("/", "_"))
                     for name, value in sorted(values.items())}
        variables["global_step"] = tf.Variable(step, dtype=tf.int64, name="global_step")
        saver = tf.train.Saver(variables, save_relative_paths=True)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, prefix)


def portable(path):
    """A path for a shipped card: relative to the working directory when inside it,
    otherwise the run folder and file name only (no paths of the exporting machine)."""
    if not isinstance(path, str) or not os.path.isabs(path) and not path.startswith(".."):
        return path
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, os.getcwd())
    if not relative.startswith(".."):
        return relative
    return os.path.join(os.path.basename(os.path.dirname(absolute)), os.path.basename(absolute))


def average_values(values):
    """The element-wise mean of several checkpoints' ``{name: array}`` (the same network).

    Args:
      values: a list of dicts, as :func:`vidcorr.io.rundir.checkpoint_values` gives.

    Returns:
      ``{name: mean array}``, in each variable's dtype.

    Raises:
      UserError: if the checkpoints do not hold the same variables and shapes.
    """
    first = values[0]
    for other in values[1:]:
        if sorted(other) != sorted(first) or any(
                other[n].shape != first[n].shape for n in first):
            raise UserError("cannot average checkpoints of different networks: their variables "
                            "or shapes differ")
    return {n: np.mean([v[n] for v in values], axis=0).astype(first[n].dtype) for n in first}


def _read_card(folder):
    """The card of an exported model folder as a dict; {} for a folder without one.

    Raises:
      UserError: for a card that is not a JSON object.
    """
    path = os.path.join(folder, CARD_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as f:
            card = json.load(f)
    except (OSError, ValueError) as err:
        raise UserError("cannot read the model card %s: %s" % (path, err))
    if not isinstance(card, dict):
        raise UserError("the model card %s is not a JSON object" % path)
    return card


def _validation_split(data):
    if data.val_split == "video":
        return "the last %g of the videos (%d triplets)" % (data.val_fraction, data.val_triplets)
    return "the last %g of every video in time (%d triplets)" % (data.val_fraction,
                                                                 data.val_triplets)


def export_model(run, out, evaluation=None, notes="", interpolation=True, log=print,
                 extra=None):
    """Exports a run's latest (or given) checkpoint to a model folder with a card.

    Args:
      run: run directory or checkpoint prefix (with ``config.json`` beside it), or a
        list of them: their average (:func:`average_values`), with the first's config.
        The card lists an average's checkpoints under ``averaged``; a single ``run``
        that is itself an exported average passes its card's list on.
      out: the folder to write: new, empty, or an earlier export (replaced
        atomically); never the run itself or another training run.
      evaluation: optional path to an ``evaluate.py`` JSON report to embed.
      notes: free text for the card.
      interpolation: measure the validation PSNR/SSIM for the card.
      log: print-like.
      extra: more card entries, ``{key: JSON-able value}`` (``vidcorr-adapt``'s record).

    Returns:
      The card as a dict.

    Raises:
      UserError: for a missing checkpoint or config, an unreadable source card,
        checkpoints of different networks, an ``out`` that is not safe to replace
        (see above), or a model over 25 MB.
    """
    runs = list(run) if isinstance(run, (list, tuple)) else [run]
    if not runs:
        raise UserError("no checkpoint to export")
    prefixes = [rundir.find_checkpoint(r) for r in runs]
    for p in prefixes:
        check_out(out, p)
    created = check_writable_folder(os.path.dirname(os.path.abspath(out)), "the folder of --out")
    try:
        config = _common_config(prefixes)
        step = rundir.checkpoint_step(prefixes[0])
        values = average_values([checkpoint_values(p) for p in prefixes])
        card = _card(config, prefixes, step, notes, evaluation)
        card.update(extra or {})
        with staging_folder(out) as staging:
            _write_model(staging, values, step, config, out)
            if interpolation:  # measured on the folder's own weights (an average's too)
                card["validation"] = _validation(staging, step, config.data, log)
            _finish(staging, card)
            for p in prefixes:  # again: the folder may have changed while we measured
                check_out(out, p)
            replace_folder(staging, out)
    finally:  # a failed or interrupted export leaves no empty folders it made
        remove_empty_folders(created)
    log("exported %s (step %d, %.2f MB) to %s" % (" + ".join(prefixes), step, card["size_mb"],
                                                  out))
    return card


def _common_config(prefixes):
    """The config of the first checkpoint, made portable; the others must share its
    network."""
    prefix = prefixes[0]
    config = rundir.read_config(prefix)
    if config is None:
        raise UserError("%s has no config.json beside it; export needs the run's config" % prefix)
    for p in prefixes[1:]:
        other = rundir.read_config(p)
        if other is not None and other.model != config.model:
            raise UserError("cannot average %s and %s: their configs' networks differ"
                            % (prefix, p))
    return config.replace(train={"run_dir": portable(config.train.run_dir),
                                 "init_from": portable(config.train.init_from)})


def _card(config, prefixes, step, notes, evaluation):
    """The card's record of what was exported: the source, its data, an average's
    checkpoints (an export of an export keeps its list), the evaluation report."""
    card = {
        "name": config.name, "exported": datetime.date.today().isoformat(),
        "source_checkpoint": portable(prefixes[0]), "steps": step,
        "samples_seen": step * config.train.batch_size,
        "data": {"sources": list(config.data.sources), "max_height": config.data.max_height,
                 "gap": config.data.gap, "crop": [config.data.crop_height, config.data.crop_width],
                 "validation": _validation_split(config.data)},
        "config": config.to_dict(), "notes": notes,
    }
    if len(prefixes) > 1:
        card["averaged"] = [portable(p) for p in prefixes]
    else:
        source_card = _read_card(os.path.dirname(prefixes[0]))
        if source_card.get("averaged"):
            card["averaged"] = list(source_card["averaged"])
    if evaluation:
        try:
            with open(evaluation) as f:
                report = json.load(f)
            models = report.get("meta", {}).get("models", {})
            report.setdefault("meta", {})["models"] = {k: portable(v) for k, v in models.items()}
            card["evaluation"] = report
        except (OSError, ValueError) as err:
            raise UserError("cannot read the evaluation report %s: %s" % (evaluation, err))
    return card


def _write_model(staging, values, step, config, out):
    """The checkpoint (no ``.meta``: the graph is rebuilt from ``config.json``) and its
    config in ``staging``."""
    try:
        _save_values(values, step, rundir.checkpoint_prefix(staging, step))
    except (tf.errors.OpError, OSError) as err:
        raise UserError("cannot write the model beside %s: %s" % (out, first_line(err)))
    for name in os.listdir(staging):
        if name.endswith(".meta"):
            os.remove(os.path.join(staging, name))
    try:
        rundir.write_config(staging, config)
    except OSError as err:
        raise UserError("cannot write the model beside %s: %s" % (out, first_line(err)))


def _validation(staging, step, data_config, log):
    """The exported weights' PSNR/SSIM on the config's held-out triplets, for the card."""
    from vidcorr.evaluation.evaluate import interpolation_quality
    from vidcorr.readout.matching import Matcher
    from vidcorr.training.data import TripletData
    inputs, targets = TripletData(data_config, log=log).validation_set()
    matcher = Matcher(rundir.checkpoint_prefix(staging, step))
    rows = interpolation_quality({"model": matcher}, inputs, targets, log)
    matcher.close()
    validation = {r["method"]: {"psnr": round(r["psnr"], 3),
                                "ssim": None if r["ssim"] is None else round(r["ssim"], 4)}
                  for r in rows}
    validation["triplets"] = int(len(inputs))
    return validation


def _finish(staging, card):
    """The card, with the model's size (refused over ``MAX_MODEL_MB``), and every file given
    the mode a plain write would."""
    size_mb = sum(os.path.getsize(os.path.join(staging, n)) for n in os.listdir(staging)) / 2**20
    card["size_mb"] = round(size_mb, 3)
    if size_mb > MAX_MODEL_MB:
        raise UserError("the exported model is %.1f MB, over the %g MB limit for package data"
                        % (size_mb, MAX_MODEL_MB))
    atomic_write(os.path.join(staging, CARD_FILE),
                 json.dumps(card, indent=2, sort_keys=True, default=float))
    for name in os.listdir(staging):
        publish(os.path.join(staging, name), os.path.join(staging, name))
