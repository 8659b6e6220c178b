"""The training loop of an adaptation: a time budget, and the best weights kept.

:class:`AdaptTrainer` is the :class:`vidcorr.training.trainer.Trainer` with other hooks
(:mod:`vidcorr.training.hooks`): a progress bar, a :class:`DeadlineHook` that ends the
loop when the time budget is spent, and a :class:`BestHook` that validates on the
held-back triplets every ``train.validate_every`` steps and keeps the best weights in
memory (every network variable, the batch-norm statistics too). ``vidcorr-adapt``
(:mod:`vidcorr.apps.adapt`) writes the best ones, or none when they do not beat the source.
"""

import os
import time

from vidcorr.compat import tf
from vidcorr.training import hooks
from vidcorr.training.trainer import Trainer

__all__ = ["AdaptTrainer", "DeadlineHook", "BestHook"]

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


class AdaptTrainer(Trainer):
    """A trainer that keeps its best weights by the held-back PSNR.

    Args:
      config: the adaptation's :class:`vidcorr.model.config.Config`.
      deadline: when the time budget ends (``time.time()`` seconds), or None
        (``train.steps`` alone ends the loop).
      log: callable taking a message line.
      progress: show a progress bar.

    Attributes:
      best_psnr: the best held-back PSNR seen (dB); ``best_step`` its step;
        ``best_values`` its network variables' values (None until :meth:`consider`).
    """

    def __init__(self, config, deadline=None, log=None, progress=True):
        super(AdaptTrainer, self).__init__(config, log=log, progress=progress)
        self.deadline = deadline
        self.best_psnr, self.best_step, self.best_values = float("-inf"), 0, None

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

    def consider(self, result, step):
        """Keeps the current weights if ``result["val_psnr"]`` beats the best so far."""
        if result["val_psnr"] > self.best_psnr:
            self.best_psnr, self.best_step = float(result["val_psnr"]), int(step)
            self.best_values = self.sess.run(self.network_variables)

    def save_best(self):
        """Writes the best weights as a checkpoint in the run folder (with its
        ``config.json``); returns its prefix."""
        with self.graph.as_default():
            for var, value in zip(self.network_variables, self.best_values):
                var.load(value, self.sess)
            self.global_step.load(self.best_step, self.sess)  # the step the card names
            saver = tf.train.Saver(self.network_variables + [self.global_step])
            return saver.save(self.sess, os.path.join(self.run_dir, BEST_NAME),
                              global_step=self.best_step, write_meta_graph=False)
