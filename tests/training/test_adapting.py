"""The adaptation's loop (vidcorr.training.adapting): the deadline and the best weights."""

import time

from vidcorr.training import hooks
from vidcorr.training.adapting import BestHook, DeadlineHook


class _Trainer(object):
    """What the hooks use of a trainer."""

    def __init__(self, psnrs):
        self.stop_requested, self.psnrs, self.considered = None, list(psnrs), []

    def report_validation(self):
        return {"val_psnr": self.psnrs.pop(0)}

    def consider(self, result, step):
        self.considered.append((step, result["val_psnr"]))


def _step(before, step):
    return hooks.StepResult(before, step, 0.1, 30.0, 0.01, None)


def test_the_deadline_stops_the_loop_after_the_step_that_passes_it():
    trainer = _Trainer([])
    hook = DeadlineHook(time.time() + 3600)
    hook.after_step(trainer, _step(0, 1))
    assert trainer.stop_requested is None
    hook = DeadlineHook(time.time() - 1)
    hook.after_step(trainer, _step(1, 2))
    assert trainer.stop_requested == "the time budget is spent"


def test_validation_every_n_steps_is_handed_to_consider():
    trainer = _Trainer([30.0, 31.0])
    hook = BestHook(every=5)
    for step in range(1, 12):
        hook.after_step(trainer, _step(step - 1, step))
    assert trainer.considered == [(5, 30.0), (10, 31.0)]
