"""The training loop's hooks (vidcorr.training.hooks), on a trainer stand-in."""

import types

from vidcorr.training import hooks


def test_crossed_counts_multiples_passed_not_landed_on():
    assert hooks.crossed(9, 10, 5) and hooks.crossed(8, 12, 5)  # landed on / jumped over 10
    assert not hooks.crossed(10, 14, 5) and not hooks.crossed(0, 0, 5)
    assert hooks.crossed(4, 16, 5)  # two multiples in one (distributed) step: once


def _result(before, step, fetched=None):
    return hooks.StepResult(before, step, 0.5, 30.0, 0.25, fetched)


def test_checkpoint_validation_and_summary_hooks_fire_on_their_steps():
    saved, validated, summaries = [], [], []
    trainer = types.SimpleNamespace(
        step=0, summary_op="SUMMARY", last_saved=None,
        save=lambda: saved.append(trainer.step) or "model.ckpt-%d" % trainer.step,
        report_validation=lambda: validated.append(trainer.step),
        writer=types.SimpleNamespace(add_summary=lambda s, step: summaries.append((s, step))))
    active = [hooks.CheckpointHook(4), hooks.ValidationHook(6), hooks.SummaryHook(3)]
    for step in range(1, 13):
        fetched = [h.before_step(trainer) for h in active]
        trainer.step = step
        for hook, value in zip(active, fetched):
            hook.after_step(trainer, _result(step - 1, step, value))
    assert saved == [4, 8, 12] and trainer.last_saved == "model.ckpt-12"
    assert validated == [6, 12]
    assert summaries == [("SUMMARY", 3), ("SUMMARY", 6), ("SUMMARY", 9), ("SUMMARY", 12)]


def test_progress_hook_smooths_the_rate():
    trainer = types.SimpleNamespace(step=0, rate=None,
                                    config=types.SimpleNamespace(
                                        train=types.SimpleNamespace(batch_size=8)))
    hook = hooks.ProgressHook(10, enabled=False)
    hook.begin(trainer)
    hook.after_step(trainer, _result(0, 1))  # 8 samples in 0.25 s
    assert trainer.rate == 32.0
    hook.after_step(trainer, hooks.StepResult(1, 2, 0.5, 30.0, 0.5, None))  # 16 samples/s
    assert abs(trainer.rate - (0.9 * 32.0 + 0.1 * 16.0)) < 1e-9
    hook.end(trainer)
