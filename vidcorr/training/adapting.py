"""The training loop of an adaptation: a time budget, and the best weights kept.

:class:`AdaptTrainer` is the :class:`vidcorr.training.trainer.Trainer` with other hooks
(:mod:`vidcorr.training.hooks`): a progress bar, a :class:`DeadlineHook` that ends the
loop when the time budget is spent, and a :class:`BestHook` that validates on the
held-back triplets every ``train.validate_every`` steps and keeps the best weights in
memory (every network variable, the batch-norm statistics too), chosen on one half of the
held-back triplets and reported on the other too. ``vidcorr-adapt``
(:mod:`vidcorr.apps.adapt`) writes the best ones, or none when they do not beat the source.

Two more things a short fine-tune needs:

* **A learning rate that decays over the time budget**: under a deadline the learning rate
  is the recipe's times a cosine of the budget's elapsed share, from 1 at ``start`` down to
  ``train.min_lr_ratio`` at the deadline. The graph reads the clock itself
  (``tf.timestamp``), so every step has the rate of its own moment, whatever the steps cost.
* **A warm-up of the learning rate** (``warmup``): over the first ``warmup`` steps the
  rate rises linearly from ``1 / warmup`` of its value to all of it. Adam's first steps,
  with its second-moment estimate from a handful of gradients, move every weight by about
  the full learning rate whatever its gradient's size (the variance RAdam, Liu et al.,
  ICLR 2020, names); on a trained model at a fine-tuning rate of 1e-3, without the weights'
  average, that cost the held-back PSNR 1.5 dB in 50 steps. With the average the warm-up
  gained nothing reliable (docs/adaptation.md), so ``vidcorr-adapt`` leaves it off.
* **A pull towards the source weights** against forgetting (``anchor``): after each step
  every tuned weight moves ``anchor`` (times the learning rate's decay) of the way back to
  its source value, ``w <- w - anchor * (lr / lr_0) * (w - w_source)``: the decoupled form
  of the L2-SP penalty (Li, Grandvalet, Davoine, ICML 2018), as AdamW decouples weight
  decay from Adam's scaling.
* **A moving average of the weights** (``average``): after each step every network
  variable's average moves ``1 - average`` of the way to it, starting from the source
  weights; validation, and the weights kept, are the average's (Polyak averaging, as
  TF-Slim and tensorpack evaluate ``tf.train.ExponentialMovingAverage`` weights). A high
  learning rate's noisy steps average out, and early on the average stays near the
  source.
"""

import math
import os
import time

import numpy as np

from vidcorr.compat import tf
from vidcorr.io import rundir
from vidcorr.model.losses import psnr_numpy
from vidcorr.training import hooks
from vidcorr.training.trainer import Trainer

__all__ = ["AdaptTrainer", "DeadlineHook", "BestHook", "budget_decay", "warmup_factor"]

BEST_NAME = "best.ckpt"


class DeadlineHook(hooks.Hook):
    """Ends the loop after the step during which the clock passed ``deadline``
    (``time.time()`` seconds)."""

    def __init__(self, deadline):
        self.deadline = deadline

    def after_step(self, trainer, result):
        if time.time() >= self.deadline:
            trainer.stop_requested = "the time budget is spent"


class BestHook(hooks.Hook):
    """Validates every ``every`` steps and hands the result to ``trainer.consider``."""

    def __init__(self, every):
        self.every = every

    def after_step(self, trainer, result):
        if hooks.crossed(result.before, result.step, self.every):
            trainer.consider(trainer.report_validation(), result.step)


def budget_decay(start, deadline, min_ratio):
    """The cosine decay over a time budget, read from the clock when the graph runs.

    Args:
      start: when the budget began (``time.time()`` seconds).
      deadline: when it ends (after ``start``).
      min_ratio: the factor at and after the deadline.

    Returns:
      A float32 scalar tensor: ``min_ratio + (1 - min_ratio) * (1 + cos(pi f)) / 2``, ``f``
      the elapsed share of the budget clipped to [0, 1].
    """
    elapsed = (tf.timestamp() - start) / max(deadline - start, 1e-3)  # float64: epoch seconds
    share = tf.cast(tf.clip_by_value(elapsed, 0.0, 1.0), tf.float32)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + tf.cos(math.pi * share))


def warmup_factor(global_step, steps):
    """The linear warm-up's factor of the learning rate.

    Args:
      global_step: the step's tensor (0 at the first step).
      steps: the warm-up's length; 0 or 1: none.

    Returns:
      A float32 scalar tensor: ``min(1, (global_step + 1) / steps)``.
    """
    if steps <= 1:
        return tf.constant(1.0)
    done = tf.cast(global_step + 1, tf.float32)
    return tf.minimum(1.0, done / float(steps))


class AdaptTrainer(Trainer):
    """A trainer that keeps its best weights by the held-back PSNR.

    Args:
      config: the adaptation's :class:`vidcorr.model.config.Config`.
      deadline: when the time budget ends (``time.time()`` seconds), or None
        (``train.steps`` alone ends the loop, with the recipe's schedule).
      log: callable taking a message line.
      progress: show a progress bar.
      start: when the time budget began (default: now); the learning rate decays from it
        to the deadline (:func:`budget_decay`) unless ``decay`` is False.
      decay: decay the learning rate over the time budget (else constant).
      anchor: the share of the way back to the source weights (``train.init_from``) each
        tuned weight moves after a step, 0 (none) to 1 (it never moves).
      average: the weights' moving average's decay per step (0: none, validate and keep
        the weights themselves), below 1.
      warmup: steps of the learning rate's linear warm-up (0: none).
      keep: how many of the best validations' weights to keep (the guard of
        :mod:`vidcorr.apps.adapt` may choose among them), at least 1.

    Attributes:
      kept: the ``keep`` best validations, best first, each a dict of ``psnr``, ``step``,
        ``test_psnr`` and ``values`` (one per step).
      best_psnr: the best PSNR seen on the selecting half of the held-back triplets (dB;
        -inf until :meth:`consider`); ``best_step`` its step; ``best_test_psnr`` the other
        half's then; ``best_values`` its network variables' values: the first of ``kept``.
    """

    def __init__(self, config, deadline=None, log=None, progress=True, start=None, decay=True,
                 anchor=0.0, average=0.0, warmup=0, keep=1):
        super(AdaptTrainer, self).__init__(config, log=log, progress=progress)
        self.warmup = int(warmup)
        if self.warmup < 0:
            raise ValueError("warmup must be 0 or more steps, got %r" % (warmup,))
        self.deadline, self.decay, self.anchor = deadline, decay, float(anchor)
        self.average = float(average)
        if not 0.0 <= self.average < 1.0:
            raise ValueError("average must be in [0, 1), got %r" % (average,))
        self.averages = None
        self.start = time.time() if start is None else start
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError("keep must be an integer of at least 1, got %r" % (keep,))
        self.keep, self.kept = keep, []
        self._last_prediction = None
        self._best_saver = None  # built on the first save_best, then reused

    def _learning_rate(self):
        """The recipe's rate, decayed over the time budget (:func:`budget_decay`), after the
        warm-up (:func:`warmup_factor`)."""
        self.base_lr = super(AdaptTrainer, self)._learning_rate()  # [] constant under a budget
        rate = self.base_lr
        if self.deadline is not None and self.decay:
            rate = rate * budget_decay(self.start, self.deadline, self.config.train.min_lr_ratio)
        if self.warmup > 1:
            rate = rate * warmup_factor(self.global_step, self.warmup)
        return rate

    def _build(self, start_step):
        super(AdaptTrainer, self)._build(start_step)
        with tf.name_scope("load_network"):  # one run sets every network variable
            self._value_feeds = [tf.placeholder(v.dtype.base_dtype, v.shape)
                                 for v in self.network_variables]
            self._assign_values = tf.group(*[v.assign(f) for v, f in
                                             zip(self.network_variables, self._value_feeds)])
        if self.anchor > 0:
            self.train_op = self._pulled(self.train_op)
        if self.average > 0:
            self.train_op = self._averaged(self.train_op)

    def _averaged(self, train_op):
        """``train_op`` followed by the moving average's step; makes ``self.averages`` (one
        variable per network variable, outside the model's scope, so no checkpoint or
        saver of the network sees them) and ``self._reset_averages`` (each to its
        variable's value)."""
        with tf.name_scope("weight_average"):
            self.averages = [tf.Variable(tf.zeros(v.shape, v.dtype.base_dtype), trainable=False,
                                         name=v.op.name.replace("/", "_"))
                             for v in self.network_variables]
            self._reset_averages = tf.group(*[a.assign(v) for a, v in
                                              zip(self.averages, self.network_variables)])
            keep = self.average
            with tf.control_dependencies([train_op]):  # the weights after the step
                steps = [a.assign(keep * a + (1.0 - keep) * v)
                         for a, v in zip(self.averages, self.network_variables)]
            return tf.group(*steps, name="averaged_train_op")

    def _start_session(self, latest, start_step, init_prefix):
        super(AdaptTrainer, self)._start_session(latest, start_step, init_prefix)
        if self.averages is not None:  # the average starts at the source weights
            self.sess.run(self._reset_averages)

    def _pulled(self, train_op):
        """``train_op`` followed by the pull of every tuned weight towards its source value."""
        source = tf.train.load_checkpoint(rundir.find_checkpoint(self.config.train.init_from))
        tuned = [v for _, v in self.grads_and_vars]
        share = self.anchor * self.lr / self.base_lr  # [] decays with the learning rate
        with tf.control_dependencies([train_op]):
            pulls = [v.assign_sub(share * (v - source.get_tensor(v.op.name))) for v in tuned]
        return tf.group(*pulls, name="pulled_train_op")

    def hooks(self):
        total = None if self.deadline is not None else self.config.train.steps
        out = [hooks.ProgressHook(total, self.progress),
               BestHook(self.config.train.validate_every)]
        if self.deadline is not None:
            out.append(DeadlineHook(self.deadline))
        return out

    def final_checkpoint(self):
        """None: what adaptation leaves is the best weights (:meth:`save_best`), not the last
        step's, so the last step is not saved."""
        return None

    def predict(self, inputs, quantize=None):
        """The trainer's prediction, kept for :meth:`validate`'s halves."""
        out = super(AdaptTrainer, self).predict(inputs, quantize)
        self._last_prediction = out  # validate's, for the halves' PSNR
        return out

    def validate(self, quantize=None):
        """The trainer's validation, and the PSNR of each half of the held-back triplets:
        the even ones (``select_psnr``) choose the best step, the odd ones (``test_psnr``,
        NaN for fewer than two triplets) report it without having chosen it."""
        if self.averages is not None:  # the average's weights for the validation
            held = self.sess.run(self.network_variables)
            self._load(self.sess.run(self.averages))
            try:
                result = super(AdaptTrainer, self).validate(quantize)
            finally:
                self._load(held)
        else:
            result = super(AdaptTrainer, self).validate(quantize)
        each = psnr_numpy(self._last_prediction, self.val_targets)  # [N]
        result["select_psnr"] = float(np.mean(each[0::2]))
        result["test_psnr"] = float(np.mean(each[1::2])) if len(each) > 1 else float("nan")
        return result

    def consider(self, result, step):
        """Keeps the current weights if ``result["select_psnr"]`` is among the ``keep`` best
        so far (a step already kept is not kept twice; of equal PSNRs the earlier step
        leads)."""
        psnr = float(result["select_psnr"])
        if any(k["step"] == int(step) for k in self.kept) or (
                len(self.kept) == self.keep and psnr <= self.kept[-1]["psnr"]):
            return
        values = self.sess.run(self.averages if self.averages is not None
                               else self.network_variables)
        self.kept.append({"psnr": psnr, "step": int(step), "test_psnr": result["test_psnr"],
                          "values": values})
        self.kept.sort(key=lambda k: (-k["psnr"], k["step"]))
        del self.kept[self.keep:]

    def _best(self, key, default):
        return self.kept[0][key] if self.kept else default

    best_psnr = property(lambda self: self._best("psnr", float("-inf")))
    best_step = property(lambda self: self._best("step", 0))
    best_test_psnr = property(lambda self: self._best("test_psnr", None))
    best_values = property(lambda self: self._best("values", None))

    def _load(self, values):
        """Sets every network variable to ``values`` (in ``network_variables``' order), in
        one ``sess.run``: a ``Variable.load`` per variable is a ``sess.run`` of its own
        feed and fetch, for each of which TensorFlow builds an executor on first use
        (10-11 s for the default model's 152 variables on the 2-core CPU, out of a
        5-minute budget)."""
        self.sess.run(self._assign_values, dict(zip(self._value_feeds, values)))

    def held_back_frames(self):
        """Each clip's held-back frames, ``[n, H, W, 3]`` uint8, as the data's split keeps
        them."""
        data = self.data
        return [np.asarray(data.videos[video][first:]) for video, first, _ in data.val_ranges]

    def save_best(self, rank=0):
        """Writes the best weights (``rank`` 1: the second best of :attr:`kept`, ...) as a
        checkpoint in the run folder (with its ``config.json``); returns its prefix."""
        kept = self.kept[rank]
        with self.graph.as_default():
            self._load(kept["values"])
            self.global_step.load(kept["step"], self.sess)  # the step the card names
            if self._best_saver is None:
                self._best_saver = tf.train.Saver(self.network_variables + [self.global_step],
                                                  max_to_keep=None)
            return self._best_saver.save(self.sess, os.path.join(self.run_dir, BEST_NAME),
                              global_step=kept["step"], write_meta_graph=False)
