"""The adaptation's loop (vidcorr.training.adapting): the deadline, the best weights, the
learning rate's decay over the time budget and the pull towards the source weights."""

import math
import os
import time

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.config import load_config
from vidcorr.model.losses import psnr_numpy
from vidcorr.training import hooks
from vidcorr.training.adapting import (AdaptTrainer, BestHook, DeadlineHook, budget_decay,
                                       warmup_factor)
from vidcorr.training.trainer import train

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


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


def test_the_budget_decay_is_a_cosine_of_the_elapsed_share():
    now = time.time()
    with tf.Graph().as_default(), tf.Session() as sess:
        for start, deadline, share in [(now - 50, now + 50, 0.5), (now - 30, now + 90, 0.25),
                                       (now, now + 1e6, 0.0), (now - 90, now - 10, 1.0)]:
            expected = 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * share))
            got = sess.run(budget_decay(start, deadline, 0.05))
            assert abs(got - expected) < 0.02, (share, got, expected)  # a second of drift


def _tiny(**train):
    """configs/tiny_test.json, narrower, with ``train`` fields."""
    return load_config(os.path.join(ROOT, "configs", "tiny_test.json")).replace(
        model={"width": 0.125}, data={"crop_width": 32, "val_triplets": 8}, train=train)


@pytest.fixture(scope="module")
def source_run(tmp_path_factory):
    """A tiny model trained two steps: the source the adaptation tests start from."""
    source = _tiny(run_dir=str(tmp_path_factory.mktemp("source") / "run"), steps=2,
                   validate_every=10 ** 6)
    train(source, progress=False, log=lambda m: None)
    return source.train.run_dir


def _adapt_one_step(tmp_path, source, anchor):
    """One adaptation step from ``source``: (tuned names, values before, values after)."""
    config = _tiny(run_dir=str(tmp_path / ("anchor%g" % anchor)), init_from=source, steps=1,
                   lr_schedule="constant", learning_rate=0.01, validate_every=10 ** 6,
                   checkpoint_every=10 ** 6)
    trainer = AdaptTrainer(config, progress=False, log=lambda m: None, anchor=anchor).setup()
    try:
        tuned = [v for _, v in trainer.grads_and_vars]
        before = trainer.sess.run(tuned)
        trainer.sess.run(trainer.train_op)
        return [v.op.name for v in tuned], before, trainer.sess.run(tuned)
    finally:
        trainer.close()


def test_the_anchor_pulls_each_tuned_weight_back_towards_its_source_value(tmp_path,
                                                                          source_run):
    """After a step, a weight is ``(1 - a) w' + a w_source``, ``w'`` the step without the
    pull (the same data and seed), for a = 0.25; a = 0 is the plain step."""
    names, w0, plain = _adapt_one_step(tmp_path, source_run, 0.0)
    names_a, w0_a, pulled = _adapt_one_step(tmp_path, source_run, 0.25)
    assert names == names_a and len(names) > 10
    moved = 0
    for name, a, b, c, d in zip(names, w0, w0_a, plain, pulled):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(d, 0.75 * c + 0.25 * a, rtol=1e-4, atol=1e-6, err_msg=name)
        moved += np.abs(c - a).max() > 1e-4
    assert moved > len(names) // 2  # the step did change the weights


def test_the_trainer_runs_at_the_decayed_rate_and_without_decay_at_the_recipe_s(tmp_path):
    """A budget that ended: Adam's rate is the recipe's times ``min_lr_ratio``; with
    ``decay=False`` it is the recipe's."""
    now = time.time()
    for decay, expected in ((True, 0.01 * 0.05), (False, 0.01)):
        config = _tiny(run_dir=str(tmp_path / str(decay)), steps=10 ** 6, lr_schedule="constant",
                       learning_rate=0.01, min_lr_ratio=0.05)
        trainer = AdaptTrainer(config, now - 1, progress=False, log=lambda m: None,
                               start=now - 100, decay=decay).setup()
        try:
            assert abs(trainer.sess.run(trainer.lr) - expected) < 1e-9
        finally:
            trainer.close()


def test_the_warmup_rises_linearly_over_its_steps_then_holds():
    with tf.Graph().as_default(), tf.Session() as sess:
        step = tf.placeholder(tf.int64, [])
        for steps in (0, 1, 4, 50):
            factor = warmup_factor(step, steps)
            for k in (0, 1, 2, 3, 10, 49, 50, 1000):
                expected = 1.0 if steps <= 1 else min(1.0, (k + 1.0) / steps)
                assert abs(sess.run(factor, {step: k}) - expected) < 1e-7, (steps, k)


def test_the_trainer_warms_up_at_each_step_and_under_the_budget_decay(tmp_path, source_run):
    """With ``warmup=4`` Adam's rate is the recipe's times ``(k + 1) / 4`` at step k (the
    global step, run after run of the train op), then the recipe's; under a spent budget
    with decay it is also times ``min_lr_ratio``."""
    now = time.time()
    for decay, tail in ((False, 1.0), (True, 0.05)):
        config = _tiny(run_dir=str(tmp_path / ("warm%s" % decay)), init_from=source_run,
                       steps=10 ** 6, lr_schedule="constant", learning_rate=0.01,
                       min_lr_ratio=0.05, validate_every=10 ** 6, checkpoint_every=10 ** 6)
        trainer = AdaptTrainer(config, now - 1, progress=False, log=lambda m: None,
                               start=now - 100, decay=decay, warmup=4).setup()
        try:
            rates = []
            for _ in range(6):
                rates.append(trainer.sess.run(trainer.lr))
                trainer.sess.run(trainer.train_op)
            expected = [0.01 * tail * min(1.0, (k + 1) / 4.0) for k in range(6)]
            np.testing.assert_allclose(rates, expected, rtol=1e-6)
        finally:
            trainer.close()
    with pytest.raises(ValueError, match="warmup must be 0 or more"):
        AdaptTrainer(config, warmup=-1)


def test_the_weights_average_starts_at_the_source_and_is_what_validation_sees(tmp_path,
                                                                            source_run):
    """With ``average`` a, after steps giving weights w1, w2 from the source w0 the
    average is ``a (a w0 + (1 - a) w1) + (1 - a) w2``; validation predicts with the average
    (the PSNR of setting the variables to it by hand), then puts the weights back; the
    weights kept (``best_values``) are the average's."""
    config = _tiny(run_dir=str(tmp_path / "averaged"), init_from=source_run, steps=2,
                   lr_schedule="constant", learning_rate=0.01, validate_every=10 ** 6,
                   checkpoint_every=10 ** 6)
    a = 0.75
    trainer = AdaptTrainer(config, progress=False, log=lambda m: None, average=a).setup()
    try:
        variables = trainer.network_variables
        names = [v.op.name for v in variables]
        assert not any(n.startswith("weight_average") for n in names)
        weights = [trainer.sess.run(variables)]
        np.testing.assert_array_equal(np.concatenate([x.ravel() for x in weights[0]]),
                                      np.concatenate([x.ravel() for x in
                                                      trainer.sess.run(trainer.averages)]))
        for _ in range(2):
            trainer.sess.run(trainer.train_op)
            weights.append(trainer.sess.run(variables))
        expected = [a * (a * w0 + (1 - a) * w1) + (1 - a) * w2 for w0, w1, w2 in zip(*weights)]
        for name, got, want in zip(names, trainer.sess.run(trainer.averages), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=name)
        result = trainer.validate()
        for name, got, want in zip(names, trainer.sess.run(variables), weights[-1]):
            np.testing.assert_array_equal(got, want, err_msg=name)  # the weights are back
        for var, value in zip(variables, expected):
            var.load(value, trainer.sess)
        by_hand = float(np.mean(psnr_numpy(trainer.predict(trainer.val_inputs),
                                           trainer.val_targets)))
        plain = [var.load(value, trainer.sess) for var, value in zip(variables, weights[-1])]
        assert len(plain) == len(names)
        assert abs(result["val_psnr"] - by_hand) < 1e-4
        assert abs(result["val_psnr"] -
                   float(np.mean(psnr_numpy(trainer.predict(trainer.val_inputs),
                                            trainer.val_targets)))) > 1e-4  # not the weights'
        trainer.consider(result, 2)
        for name, got, want in zip(names, trainer.best_values, expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=name)
    finally:
        trainer.close()


def test_the_best_validations_are_kept_best_first_and_each_can_be_saved(tmp_path, source_run):
    """``keep=2``: validations at steps 0-30 with PSNRs 20, 21, 20.5, 19 keep steps 10 and
    20 (each with its own weights, the first variable moved by the step); a step already
    kept is not kept again; ``save_best(rank)`` writes that validation's weights."""
    config = _tiny(run_dir=str(tmp_path / "kept"), init_from=source_run, steps=2,
                   validate_every=10 ** 6, checkpoint_every=10 ** 6)
    with pytest.raises(ValueError, match="keep must be an integer of at least 1"):
        AdaptTrainer(config, progress=False, log=lambda m: None, keep=0)
    trainer = AdaptTrainer(config, progress=False, log=lambda m: None, keep=2).setup()
    try:
        first = trainer.network_variables[0]
        start = trainer.sess.run(first)
        for step, psnr in ((0, 20.0), (10, 21.0), (20, 20.5), (20, 22.0), (30, 19.0)):
            first.load(start + step, trainer.sess)
            trainer.consider({"select_psnr": psnr, "test_psnr": psnr - 1}, step)
        assert [(k["step"], k["psnr"], k["test_psnr"]) for k in trainer.kept] == \
            [(10, 21.0, 20.0), (20, 20.5, 19.5)]
        assert (trainer.best_step, trainer.best_psnr, trainer.best_test_psnr) == (10, 21.0, 20.0)
        np.testing.assert_array_equal(trainer.best_values[0], start + 10)
        second = trainer.save_best(1)
        ops = len(trainer.graph.get_operations())
        best = trainer.save_best()
        assert len(trainer.graph.get_operations()) == ops  # one saver for every save
        assert os.path.basename(second) == "best.ckpt-20" and os.path.basename(best) == \
            "best.ckpt-10"
        for prefix, step in ((second, 20), (best, 10)):  # both still there
            np.testing.assert_array_equal(tf.train.load_variable(prefix, first.op.name),
                                          start + step)
            assert tf.train.load_variable(prefix, "global_step") == step
    finally:
        trainer.close()
