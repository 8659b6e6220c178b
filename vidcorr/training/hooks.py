"""Hooks around the training loop: progress, summaries, checkpoints, validation.

:meth:`vidcorr.training.trainer.Trainer.train` is a small loop that runs one
step at a time; everything done *around* a step is a :class:`Hook`, in the
manner of tensorpack's callbacks and ``tf.train.SessionRunHook``:

* :meth:`Hook.before_step` may return one extra tensor to fetch with the step;
* :meth:`Hook.after_step` sees the step's result (:class:`StepResult`);
* :meth:`Hook.end` runs once when the loop ends, however it ends.

A subclass of the trainer adds or replaces hooks by overriding
:meth:`~vidcorr.training.trainer.Trainer.hooks`.
"""

import collections
import sys

from tqdm import tqdm

__all__ = ["Hook", "StepResult", "ProgressHook", "SummaryHook", "CheckpointHook",
           "ValidationHook", "crossed"]

StepResult = collections.namedtuple("StepResult", ["before", "step", "loss", "psnr", "seconds",
                                                   "fetched"])
StepResult.__doc__ = """One step as the hooks see it.

``before``/``step``: the global step before and after (a distributed step may
move it by more than one); ``loss``/``psnr``: the batch's; ``seconds``: the
step's wall time; ``fetched``: the value of the hook's own extra fetch, or None.
"""


def crossed(before, after, every):
    """Whether the step crossed a multiple of ``every`` (not only landed on one):
    a distributed worker's global step can move by more than one between its steps."""
    return after // every > before // every


class Hook(object):
    """Something done around the training steps; every method is optional."""

    def begin(self, trainer):
        """Before the first step."""

    def before_step(self, trainer):
        """Returns a tensor to fetch with the coming step, or None."""
        return None

    def after_step(self, trainer, result):
        """After a step, with its :class:`StepResult`."""

    def end(self, trainer):
        """When the loop ends (also on an error or a signal)."""


class ProgressHook(Hook):
    """A tqdm bar with loss, PSNR and a smoothed samples/s (also in ``trainer.rate``)."""

    def __init__(self, total, enabled=True):
        self.total, self.enabled, self.bar = total, enabled, None

    def begin(self, trainer):
        self.bar = tqdm(total=self.total, initial=trainer.step, disable=not self.enabled,
                        unit="step", dynamic_ncols=True,
                        mininterval=1.0 if sys.stderr.isatty() else 30.0)

    def after_step(self, trainer, result):
        speed = trainer.config.train.batch_size / max(result.seconds, 1e-9)
        trainer.rate = speed if trainer.rate is None else 0.9 * trainer.rate + 0.1 * speed
        self.bar.update(result.step - result.before)
        self.bar.set_postfix(loss="%.4f" % result.loss, psnr="%.2f" % result.psnr,
                             samples_s="%.1f" % trainer.rate, refresh=False)

    def end(self, trainer):
        if self.bar is not None:
            self.bar.close()


class SummaryHook(Hook):
    """Writes the merged TensorBoard summary every ``every`` steps."""

    def __init__(self, every):
        self.every = every

    def before_step(self, trainer):
        return trainer.summary_op if (trainer.step + 1) % self.every == 0 else None

    def after_step(self, trainer, result):
        if result.fetched is not None:
            trainer.writer.add_summary(result.fetched, result.step)


class CheckpointHook(Hook):
    """Saves a checkpoint every ``every`` steps; the last one is ``trainer.last_saved``."""

    def __init__(self, every):
        self.every = every

    def after_step(self, trainer, result):
        if crossed(result.before, result.step, self.every):
            trainer.last_saved = trainer.save()


class ValidationHook(Hook):
    """Reports the validation PSNR every ``every`` steps."""

    def __init__(self, every):
        self.every = every

    def after_step(self, trainer, result):
        if crossed(result.before, result.step, self.every):
            trainer.report_validation()
