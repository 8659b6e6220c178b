"""The training loop: MIND on triplets, checkpoints, resume, summaries, validation.

``Trainer(config).run()`` trains until ``train.steps``. Around one small loop:

* the run directory gets the resolved ``config.json``; an existing run is never
  written over unless ``resume=True``, which continues from its latest
  checkpoint (global step, weights and Adam state);
* ``train.init_from`` seeds a fresh run's network from another checkpoint
  (e.g. a float model for the quantized fine-tune, ``model.quantize: true``);
* checkpoints every ``checkpoint_every`` steps and at the end (the last
  ``keep_checkpoints`` kept); SIGINT/SIGTERM finish the current step, save
  and return;
* TensorBoard summaries (loss, PSNR, learning rate, input/prediction/target
  images) and a tqdm progress bar with loss, samples/s and ETA;
* validation PSNR on held-out triplets next to the frame-average baseline;
* a NaN or Inf loss stops the run with :class:`TrainingDiverged`, leaving the
  last good checkpoint as it was;
* ``train.num_devices`` > 1 splits each batch over towers (:mod:`vidcorr.training.towers`);
  :class:`vidcorr.training.distributed.DistributedTrainer` runs the same loop as one
  worker of a cluster (only the chief, ``is_chief``, saves and validates).
"""

import contextlib
import json
import os
import signal
import sys
import threading
import time

import numpy as np
from tqdm import tqdm

from vidcorr.io import checkpoints
from vidcorr.compat import session_config, tf
from vidcorr.model.config import config_from_dict
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.model.losses import psnr, psnr_numpy, reconstruction_loss_numpy
from vidcorr.training.towers import build_towers

__all__ = ["Trainer", "TrainingDiverged", "learning_rate", "train"]

CONFIG_FILE = "config.json"
CHECKPOINT_NAME = "model.ckpt"


class TrainingDiverged(RuntimeError):
    """The loss became NaN or Inf."""


def learning_rate(train_config, global_step):
    """The learning-rate schedule as a tensor of ``global_step``."""
    t = train_config
    if t.lr_schedule == "constant":
        return tf.constant(t.learning_rate)
    if t.lr_schedule == "exponential":
        return tf.train.exponential_decay(t.learning_rate, global_step, t.lr_decay_steps,
                                          t.lr_decay_rate, staircase=True)
    return tf.train.cosine_decay(t.learning_rate, global_step, t.steps, alpha=t.min_lr_ratio)


class Trainer(object):
    """Trains MIND as a config says.

    Args:
      config: a :class:`vidcorr.model.config.Config`.
      resume: continue the run in ``train.run_dir`` (fresh start when it has
        no checkpoint yet).
      log: callable taking a message line.
      progress: show a tqdm progress bar.
    """

    def __init__(self, config, resume=False, log=None, progress=True):
        self.config = config
        self.resume = resume
        self.log = log or (lambda msg: tqdm.write(msg, file=sys.stderr))
        self.progress = progress
        self.run_dir = config.train.run_dir
        self.sess = None
        self.writer = None
        self.step = 0
        self._stop_signal = None
        self.is_chief = True  # the process that writes checkpoints, summaries and validation
        self.task_seed = 0  # added to the data seed (distributed workers draw different data)

    # -- set-up ----------------------------------------------------------------------------
    def _check_run_dir(self):
        """Refuses to overwrite a run; returns the checkpoint to resume from, or None."""
        path = os.path.join(self.run_dir, CONFIG_FILE)
        existing = os.path.isdir(self.run_dir) and any(
            name == "checkpoint" or name.startswith("events.") for name in os.listdir(self.run_dir))
        if existing and not self.resume:
            raise UserError("run directory %s already holds a run; pass --resume to continue it "
                            "or set another train.run_dir" % self.run_dir)
        if existing and os.path.isfile(path):
            with open(path) as f:
                old = config_from_dict(json.load(f), origin=path)
            if old.model != self.config.model or old.data.crop_height != \
                    self.config.data.crop_height or old.data.crop_width != self.config.data.crop_width:
                raise UserError("cannot resume %s: its model or crop size differs from this "
                                "config (see %s)" % (self.run_dir, path))
        if existing and os.path.isfile(os.path.join(self.run_dir, "checkpoint")):
            return checkpoints.find_checkpoint(self.run_dir)
        return None

    def _write_config(self):
        """Copies the resolved config into the run directory (atomically)."""
        path = os.path.join(self.run_dir, CONFIG_FILE)
        os.makedirs(self.run_dir, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(self.config.to_dict(), f, indent=2, sort_keys=True)
        os.replace(path + ".tmp", path)

    def setup(self):
        """Loads data, builds the graph and session, restores or initialises variables."""
        c = self.config
        latest = self._check_run_dir() if self.is_chief else None
        start_step = checkpoints.checkpoint_step(latest) if latest else 0
        init_prefix = None
        if self.resume and not latest and self.is_chief:
            self.log("--resume: %s has no checkpoint yet; starting from step 0" % self.run_dir)
        if c.train.init_from and not latest and self.is_chief:
            init_prefix = checkpoints.find_checkpoint(c.train.init_from)
        self.data = TripletData(c.data, log=self.log)
        self.val_inputs, self.val_targets = self.data.validation_set()
        if self.is_chief:
            self._write_config()
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(c.train.seed + self.task_seed)
            with self._placement():
                self._build(start_step)
            self._start_session(latest, start_step, init_prefix)
        self.step = int(self.sess.run(self.global_step))
        if self.is_chief:
            self.writer = tf.summary.FileWriter(self.run_dir, self.graph if not latest else None)
        return self

    def _placement(self):
        """The device scope the graph is built in (distributed training overrides it)."""
        return contextlib.suppress()  # no scope

    def _optimizer(self, optimizer):
        """The optimizer as used (distributed training wraps it)."""
        return optimizer

    def _start_session(self, latest, start_step, init_prefix):
        """Creates ``self.sess`` and restores or initialises the variables."""
        c = self.config
        self.sess = tf.Session(graph=self.graph, config=session_config(
            c.train.threads, cpu_devices=c.train.num_devices))
        self.sess.run(tf.global_variables_initializer())
        if latest:
            self._restore(latest, start_step)
        elif init_prefix:
            self._init_from(self.sess, init_prefix)

    def _init_from(self, sess, init_prefix):
        restored, _ = checkpoints.restore_matching(sess, init_prefix, self.network_variables,
                                                   require_all=True)
        self.log("initialised %d network variables from %s" % (len(restored), init_prefix))

    def _run_step(self, fetches):
        """One training step's ``sess.run``; returns the fetched values and the global step."""
        out = self.sess.run(fetches + [self.global_step])
        return out[:-1], int(out[-1])

    def _restore(self, latest, start_step):
        """Restores a resumed run: everything, or, from a checkpoint without optimizer
        state (an export), the network and the step with a fresh Adam state."""
        try:
            held = {name for name, _ in tf.train.list_variables(latest)}
        except (tf.errors.OpError, ValueError) as err:
            raise UserError("cannot read checkpoint %s: %s" % (latest, err))
        lacking = [v.op.name for v in tf.global_variables() if v.op.name not in held]
        if not lacking:
            checkpoints.restore_all(self.saver, self.sess, latest)
            self.log("resumed %s at step %d" % (latest, start_step))
        else:
            checkpoints.restore_matching(self.sess, latest,
                                         self.network_variables + [self.global_step],
                                         require_all=True)
            self.log("resumed %s at step %d without optimizer state (it has none, e.g. an "
                     "exported model): Adam starts afresh" % (latest, start_step))
        self._recover_checkpoints()

    def _recover_checkpoints(self):
        """Tells the saver of the run's older checkpoints: without this it forgets those
        of earlier processes, and keep_checkpoints would never delete them."""
        state = tf.train.get_checkpoint_state(self.run_dir)
        older = [os.path.join(self.run_dir, os.path.basename(p))
                 for p in (state.all_model_checkpoint_paths if state else [])]
        self.saver.recover_last_checkpoints(
            [p for p in older if os.path.isfile(p + ".index")])

    def _build(self, start_step):
        c = self.config
        h, w = c.data.crop_height, c.data.crop_width
        self.global_step = tf.train.get_or_create_global_step()
        batch_in, batch_tg = tf.data.make_one_shot_iterator(
            self.data.dataset(c.train.batch_size, c.train.seed, start_step)).get_next()
        self.inputs = tf.placeholder_with_default(batch_in, [None, h, w, 6], "inputs")
        self.targets = tf.placeholder_with_default(batch_tg, [None, h, w, 3], "targets")
        self.is_training = tf.placeholder_with_default(True, [], "is_training")
        # A quantized run gets a tensor switch, so validation can report float too.
        self.quantize = (tf.placeholder_with_default(True, [], "quantize")
                         if c.model.quantize else False)
        self.lr = learning_rate(c.train, self.global_step)
        optimizer = self._optimizer(tf.train.AdamOptimizer(self.lr))
        # One device or data-parallel towers (vidcorr/training/towers.py).
        step = build_towers(c, optimizer, self.inputs, self.targets, self.is_training,
                            self.quantize, self.global_step)
        self.prediction, self.loss, self.train_op = step.prediction, step.loss, step.train_op
        self.grads_and_vars, self.network_variables = step.grads_and_vars, step.variables
        self.devices = step.devices
        self.psnr = psnr(self.prediction, self.targets)
        average = 0.5 * (self.inputs[..., :3] + self.inputs[..., 3:])  # [B, h, w, 3]
        self.summary_op = tf.summary.merge([
            tf.summary.scalar("loss", self.loss),
            tf.summary.scalar("psnr", self.psnr),
            tf.summary.scalar("baseline_psnr", psnr(average, self.targets)),
            tf.summary.scalar("learning_rate", self.lr),
            tf.summary.image("frame_t", self.inputs[:2, ..., :3]),
            tf.summary.image("prediction", tf.clip_by_value(self.prediction[:2], 0.0, 1.0)),
            tf.summary.image("target", self.targets[:2]),
        ])
        self.saver = tf.train.Saver(max_to_keep=c.train.keep_checkpoints, save_relative_paths=True)

    # -- validation and saving -------------------------------------------------------------
    def predict(self, inputs, quantize=None):
        """Runs the network in inference mode on ``[N, h, w, 6]`` arrays, in batches."""
        feed_extra = {}
        if quantize is not None and self.quantize is not False:
            feed_extra[self.quantize] = quantize
        out = []
        bs = self.config.train.batch_size
        n = self.config.train.num_devices
        for i in range(0, len(inputs), bs):
            batch = inputs[i:i + bs]
            extra = -len(batch) % n  # towers split the batch evenly: pad, then drop
            padded = np.concatenate([batch, batch[-1:].repeat(extra, axis=0)]) if extra else batch
            feed = {self.inputs: padded, self.is_training: False}
            feed.update(feed_extra)
            out.append(self.sess.run(self.prediction, feed)[:len(batch)])
        return np.concatenate(out)

    def validate(self, quantize=None):
        """Validation PSNR and loss with the frame-average baseline, as a dict."""
        pred = self.predict(self.val_inputs, quantize)
        average = 0.5 * (self.val_inputs[..., :3] + self.val_inputs[..., 3:])
        kind = self.config.train.loss
        return {"val_psnr": float(np.mean(psnr_numpy(pred, self.val_targets))),
                "baseline_psnr": float(np.mean(psnr_numpy(average, self.val_targets))),
                "val_loss": reconstruction_loss_numpy(pred, self.val_targets, kind),
                "baseline_loss": reconstruction_loss_numpy(average, self.val_targets, kind)}

    def _report_validation(self, tag=""):
        result = self.validate()
        self.log("step %d: validation PSNR %.2f dB, frame average %.2f dB (%+.2f dB)%s"
                 % (self.step, result["val_psnr"], result["baseline_psnr"],
                    result["val_psnr"] - result["baseline_psnr"], tag))
        summary = tf.Summary(value=[tf.Summary.Value(tag="val/" + k, simple_value=v)
                                    for k, v in result.items()])
        self.writer.add_summary(summary, self.step)
        return result

    def save(self):
        """Writes a checkpoint at the current step and returns its prefix."""
        prefix = self.saver.save(self.sess, os.path.join(self.run_dir, CHECKPOINT_NAME),
                                 global_step=self.step)
        self.writer.flush()
        return prefix

    # -- the loop --------------------------------------------------------------------------
    def _on_signal(self, signum, frame):
        self._stop_signal = signum

    def train(self):
        """Runs the loop to ``train.steps``; returns a dict of results."""
        c = self.config.train
        results = {"start_step": self.step}
        if self.config.model.quantize and self.step == 0:
            results["initial_float"] = self.validate(quantize=False)
            results["initial"] = self._report_validation(
                " [quantized; float %.2f dB]" % results["initial_float"]["val_psnr"])
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handlers[sig] = signal.signal(sig, self._on_signal)
        bar = tqdm(total=c.steps, initial=self.step, disable=not self.progress, unit="step",
                   dynamic_ncols=True, mininterval=1.0 if sys.stderr.isatty() else 30.0)
        last_saved, rate, losses = None, None, []
        try:
            while self.step < c.steps and self._stop_signal is None:
                fetches = [self.train_op, self.loss, self.psnr]
                want_summary = self.is_chief and (self.step + 1) % c.summary_every == 0
                if want_summary:
                    fetches.append(self.summary_op)
                start, before = time.perf_counter(), self.step
                out, self.step = self._run_step(fetches)
                if out is None:  # a distributed worker whose run has ended
                    break
                elapsed = time.perf_counter() - start
                loss, step_psnr = float(out[1]), float(out[2])
                if not np.isfinite(loss):
                    raise TrainingDiverged(
                        "loss became %s at step %d; stopped without saving. The last good "
                        "checkpoint is %s" % (loss, self.step,
                                              tf.train.latest_checkpoint(self.run_dir)))
                losses.append(loss)
                if want_summary:
                    self.writer.add_summary(out[3], self.step)
                speed = c.batch_size / max(elapsed, 1e-9)
                rate = speed if rate is None else 0.9 * rate + 0.1 * speed
                bar.update(self.step - before)  # a distributed step may move it by more
                bar.set_postfix(loss="%.4f" % loss, psnr="%.2f" % step_psnr,
                                samples_s="%.1f" % rate, refresh=False)
                # Crossing a multiple, not landing on it: a distributed worker's global
                # step can move by more than one between its own steps.
                if self.is_chief and self.step // c.checkpoint_every > before // c.checkpoint_every:
                    last_saved = self.save()
                if self.is_chief and self.step // c.validate_every > before // c.validate_every:
                    self._report_validation()
        finally:
            bar.close()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        results.update(step=self.step, checkpoint=None, samples_per_second=rate,
                       interrupted=self._stop_signal is not None, signal=self._stop_signal,
                       train_loss=float(np.mean(losses[-20:])) if losses else None)
        if not self.is_chief:  # the chief saves and validates
            return results
        if last_saved is None or checkpoints.checkpoint_step(last_saved) != self.step:
            last_saved = self.save()
        if self._stop_signal is not None:
            self.log("stopped by signal %d at step %d; saved %s"
                     % (self._stop_signal, self.step, last_saved))
        results.update(self._report_validation(" [final]"))
        results["checkpoint"] = last_saved
        return results

    def close(self):
        """Closes the session and the summary writer."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.sess is not None:
            self.sess.close()
            self.sess = None

    def run(self):
        """``setup()``, ``train()`` and ``close()``; returns the results dict."""
        try:
            self.setup()
            return self.train()
        finally:
            self.close()


def train(config, resume=False, progress=True, log=None):
    """Trains a config; returns the results dict (see :meth:`Trainer.train`)."""
    return Trainer(config, resume=resume, log=log, progress=progress).run()
