"""The training loop: MIND on triplets, checkpoints, resume, summaries, validation.

``Trainer(config).run()`` trains until ``train.steps``. Around one small loop:

* the run directory (:mod:`vidcorr.io.rundir`) is locked while the run writes to it, gets the
  resolved ``config.json``, and is never written over unless ``resume=True``, which continues
  from its latest checkpoint (global step, weights and Adam state); a fresh run that fails
  before its first checkpoint removes what it wrote, so a plain rerun is not refused;
* ``train.init_from`` seeds a fresh run's network from another checkpoint (a float model for
  the quantized fine-tune; with ``train.init_widen`` a narrower one, widened to the same
  function: :mod:`vidcorr.training.initial`);
* checkpoints every ``checkpoint_every`` steps and at the end (the last ``keep_checkpoints``
  kept); SIGINT/SIGTERM finish the current step, save and return;
* hooks (:mod:`vidcorr.training.hooks`): TensorBoard summaries (loss, PSNR, learning rate,
  images) and a tqdm progress bar;
* validation PSNR on held-out triplets next to the frame-average baseline;
* a NaN or Inf loss stops the run with :class:`TrainingDiverged`, leaving the last good
  checkpoint as it was;
* ``train.num_devices`` > 1 splits each batch over towers (:mod:`vidcorr.training.towers`);
  :class:`vidcorr.training.distributed.DistributedTrainer` runs the same loop as one
  worker of a cluster (only the chief, ``is_chief``, saves and validates).
"""

import contextlib
import os
import signal
import sys
import threading
import time

import numpy as np
from tqdm import tqdm

from vidcorr.compat import session_config, tf
from vidcorr.errors import UserError, first_line
from vidcorr.io import rundir
from vidcorr.model.losses import psnr, psnr_numpy, reconstruction_loss_numpy
from vidcorr.training import hooks
from vidcorr.training.data import TripletData
from vidcorr.training.initial import initialise_from
from vidcorr.training.schedule import learning_rate
from vidcorr.training.towers import build_towers

__all__ = ["Trainer", "TrainingDiverged", "train"]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or Inf."""


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
        self.task_index = 0  # distributed training: this worker's index
        self.lock = None
        self.last_saved = None  # the latest checkpoint this process wrote
        self.rate = None  # smoothed samples per second
        self._fresh = False  # a new run (nothing to resume)
        self._created_dir = False
        self._holding_signals = False  # run() holds the stop handlers through close()
        self.stop_requested = None  # a hook's reason to end the loop after this step

    @property
    def seed(self):
        """The graph and data seed: the config's plus the task index (each worker its own)."""
        return self.config.train.seed + self.task_index

    @property
    def is_chief(self):
        """Task 0: the process that writes checkpoints, summaries and validation."""
        return self.task_index == 0

    # -- set-up ----------------------------------------------------------------------------
    def _check_run_dir(self):
        """Refuses to overwrite a run; returns the checkpoint to resume from, or None."""
        existing = rundir.holds_run(self.run_dir)
        if existing and not self.resume:
            raise UserError("run directory %s already holds a run; pass --resume to continue it "
                            "or set another train.run_dir" % self.run_dir)
        old = rundir.read_config(self.run_dir) if existing else None
        if old is not None and (old.model != self.config.model or (
                old.data.crop_height, old.data.crop_width) != (
                self.config.data.crop_height, self.config.data.crop_width)):
            raise UserError("cannot resume %s: its model or crop size differs from this "
                            "config (see %s)" % (self.run_dir, rundir.config_path(self.run_dir)))
        if existing and rundir.has_checkpoint(self.run_dir):
            return rundir.find_checkpoint(self.run_dir)
        return None

    def _lock(self):
        """Takes the run directory's lock (the chief: the one process that writes it)."""
        if self.resume and not os.path.isdir(self.run_dir):
            raise UserError("--resume: there is no run directory %s (mistyped? leave out "
                            "--resume to start a new run there)" % self.run_dir)
        self._created_dir = not os.path.isdir(self.run_dir)
        self.lock = rundir.RunLock(self.run_dir, warn=self.log).acquire()

    def setup(self):
        """Loads data, builds the graph and session, restores or initialises variables.

        On an error the lock is released and a fresh run's files removed (the
        session, if made, stays for :meth:`close`).
        """
        try:
            return self._setup()
        except BaseException:
            self.abandon()
            raise

    def _setup(self):
        c = self.config
        if self.is_chief:
            self._lock()
        latest = self._check_run_dir() if self.is_chief else None
        self._fresh = latest is None
        start_step = rundir.checkpoint_step(latest) if latest else 0
        init_prefix = None
        if self.resume and not latest and self.is_chief:
            self.log("--resume: %s has no checkpoint yet; starting from step 0" % self.run_dir)
        if c.train.init_from and not latest and self.is_chief:
            init_prefix = rundir.find_checkpoint(c.train.init_from)
            rundir.checkpoint_variables(init_prefix)  # readable, before any work
        self.data = TripletData(c.data, log=self.log)
        self.val_inputs, self.val_targets = self.data.validation_set()
        if self.is_chief:
            rundir.write_config(self.run_dir, c)
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(self.seed)
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

    def _learning_rate(self):
        return learning_rate(self.config.train, self.global_step)  # [] the schedule's

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
        initialise_from(sess, init_prefix, self.config, self.network_variables, self.log)

    def _run_step(self, fetches):
        """One training step's ``sess.run``; returns the fetched values and the global step."""
        out = self.sess.run(fetches + [self.global_step])
        return out[:-1], int(out[-1])

    def _restore(self, latest, start_step):
        """Restores a resumed run: everything, or, from a checkpoint without optimizer
        state (an export), the network and the step with a fresh Adam state."""
        held = rundir.checkpoint_variables(latest)
        lacking = [v.op.name for v in tf.global_variables() if v.op.name not in held]
        if not lacking:
            rundir.restore_all(self.saver, self.sess, latest)
            self.log("resumed %s at step %d" % (latest, start_step))
        else:
            rundir.restore_matching(self.sess, latest, self.network_variables + [self.global_step],
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
        self.saver.recover_last_checkpoints([p for p in older if os.path.isfile(p + ".index")])

    def _build(self, start_step):
        c = self.config
        self.global_step = tf.train.get_or_create_global_step()
        # [B, h, w, 6], [B, h, w, 3], [B] (1: layered), fed or drawn from the data
        self.inputs, self.targets, self.layered = self.data.training_inputs(
            c.train.batch_size, self.seed, start_step)
        self.is_training = tf.placeholder_with_default(True, [], "is_training")
        # A quantized run gets a tensor switch, so validation can report float too.
        self.quantize = (tf.placeholder_with_default(True, [], "quantize")
                         if c.model.quantize else False)
        self.lr = self._learning_rate()
        optimizer = self._optimizer(tf.train.AdamOptimizer(self.lr))
        # One device or data-parallel towers (vidcorr/training/towers.py).
        step = build_towers(c, optimizer, self.inputs, self.targets, self.is_training,
                            self.quantize, self.global_step, self.layered)
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

    def report_validation(self, tag=""):
        """Validates, logs the PSNR beside the frame average and writes it as summaries."""
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
        try:
            prefix = self.saver.save(self.sess, os.path.join(self.run_dir, rundir.CHECKPOINT_NAME),
                                     global_step=self.step)
            self.writer.flush()
        except (tf.errors.OpError, OSError) as err:  # a full disk, a read-only folder
            last = self.last_saved or tf.train.latest_checkpoint(self.run_dir)
            raise UserError("cannot save a checkpoint at step %d in %s: %s (%s)"
                            % (self.step, self.run_dir, first_line(err),
                               "the last saved is %s" % last if last else "none was saved"))
        return prefix

    # -- the loop --------------------------------------------------------------------------
    def _on_signal(self, signum, frame):
        if self._stop_signal is None:
            self._stop_signal = signum
            self.log("signal %d: stopping after this step (a checkpoint is saved)" % signum)
        else:
            self.log("signal %d: still stopping (finishing the step and saving), please wait"
                     % signum)

    def hooks(self):
        """The hooks run around each step (:mod:`vidcorr.training.hooks`); the chief's
        write summaries, checkpoints and validation."""
        c = self.config.train
        out = [hooks.ProgressHook(c.steps, self.progress)]
        if self.is_chief:
            out += [hooks.SummaryHook(c.summary_every), hooks.CheckpointHook(c.checkpoint_every),
                    hooks.ValidationHook(c.validate_every)]
        return out

    def _loop(self, active):
        """Runs steps until ``train.steps``, a signal, or the end of a distributed run;
        returns the recent losses."""
        losses = []
        while self.step < self.config.train.steps and self._stop_signal is None and \
                self.stop_requested is None:
            fetches = [self.train_op, self.loss, self.psnr]
            extra = {}
            for hook in active:
                tensor = hook.before_step(self)
                if tensor is not None:
                    extra[hook] = len(fetches)
                    fetches.append(tensor)
            start, before = time.perf_counter(), self.step
            out, self.step = self._run_step(fetches)
            if out is None:  # a distributed worker whose run has ended
                break
            loss = float(out[1])
            if not np.isfinite(loss):
                raise TrainingDiverged(
                    "loss became %s at step %d; stopped without saving. The last good "
                    "checkpoint is %s" % (loss, self.step, tf.train.latest_checkpoint(self.run_dir)))
            losses = (losses + [loss])[-20:]
            seconds = time.perf_counter() - start
            for hook in active:
                hook.after_step(self, hooks.StepResult(
                    before, self.step, loss, float(out[2]), seconds,
                    out[extra[hook]] if hook in extra else None))
        return losses

    def train(self):
        """Runs the loop to ``train.steps``; returns a dict of results."""
        results = {"start_step": self.step}
        if self.config.model.quantize and self.step == 0:
            results["initial_float"] = self.validate(quantize=False)
            results["initial"] = self.report_validation(
                " [quantized; float %.2f dB]" % results["initial_float"]["val_psnr"])
        handlers = self._take_signals()
        try:  # the handlers stay until the final save is done: a second Ctrl-C waits for it
            results.update(self._train_and_save())
        finally:
            self._give_back_signals(handlers)
        return results

    def _take_signals(self):
        """Installs the stop handlers for SIGINT and SIGTERM (unless :meth:`run` holds them
        until the session is closed); returns the previous handlers to give back."""
        if self._holding_signals or threading.current_thread() is not threading.main_thread():
            return {}
        return {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

    @staticmethod
    def _give_back_signals(handlers):
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

    def _train_and_save(self):
        active = self.hooks()
        try:
            for hook in active:
                hook.begin(self)
            losses = self._loop(active)
        finally:
            for hook in active:
                hook.end(self)
        results = dict(step=self.step, checkpoint=None, samples_per_second=self.rate,
                       interrupted=self._stop_signal is not None, signal=self._stop_signal,
                       train_loss=float(np.mean(losses)) if losses else None)
        if not self.is_chief:  # the chief saves and validates
            return results
        checkpoint = self.final_checkpoint()
        if self._stop_signal is not None:
            self.log("stopped by signal %d at step %d%s" % (
                self._stop_signal, self.step, "; saved %s" % checkpoint if checkpoint else ""))
        results.update(self.report_validation(" [final]"))
        results["checkpoint"] = checkpoint
        return results

    def final_checkpoint(self):
        """Saves the last step (unless saved); returns the prefix a finished run leaves."""
        if self.last_saved is None or rundir.checkpoint_step(self.last_saved) != self.step:
            self.last_saved = self.save()
        return self.last_saved

    def abandon(self):
        """After an error (in :meth:`train` or the caller's work around it): closes the summary
        writer, removes a fresh run's files if it saved no checkpoint, releases the lock."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self._discard_fresh_run()
        if self.lock is not None:
            self.lock.release()

    def _discard_fresh_run(self):
        """After a fresh run failed before its first checkpoint: removes the config and
        events it wrote (and the folder if this run made it), so a rerun is not refused."""
        if not (self.is_chief and self._fresh and self.last_saved is None and self.lock
                and self.lock.held):
            return
        if rundir.has_checkpoint(self.run_dir):
            return
        for path in [rundir.config_path(self.run_dir)] + rundir.event_files(self.run_dir):
            if os.path.isfile(path):
                os.remove(path)
        self.lock.release(remove=True)
        if self._created_dir and not os.listdir(self.run_dir):
            os.rmdir(self.run_dir)

    def close(self):
        """Closes the session and the summary writer."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.sess is not None:
            self.sess.close()
            self.sess = None
        if self.lock is not None:
            self.lock.release()

    def run(self):
        """``setup()``, ``train()`` and ``close()``; returns the results dict."""
        handlers = {}
        try:
            self.setup()
            handlers = self._take_signals()  # held through close: a late signal waits too
            self._holding_signals = bool(handlers)
            return self.train()
        except BaseException:
            self.abandon()
            raise
        finally:
            self.close()
            self._holding_signals = False
            self._give_back_signals(handlers)


def train(config, resume=False, progress=True, log=None):
    """Trains a config; returns the results dict (see :meth:`Trainer.train`)."""
    return Trainer(config, resume=resume, log=log, progress=progress).run()
