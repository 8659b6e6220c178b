"""Learning-rate schedules (vidcorr.training.schedule) against their closed forms."""

import os
import signal
import subprocess
import sys
import time
import numpy as np
import pytest
from vidcorr.io import rundir
from vidcorr.compat import tf
from vidcorr.model.config import load_config
from vidcorr.training.data import TripletData
from vidcorr.errors import UserError
from vidcorr.training.trainer import Trainer, TrainingDiverged, train
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "configs", "tiny_test.json")


@pytest.mark.parametrize("schedule", ["constant", "exponential", "cosine"])
def test_learning_rate_schedules_closed_form(sess, schedule):
    from vidcorr.model.config import TrainConfig
    from vidcorr.training.schedule import learning_rate

    t = TrainConfig(learning_rate=0.01, lr_schedule=schedule, steps=1000, lr_decay_steps=300,
                    lr_decay_rate=0.5, min_lr_ratio=0.1)
    step = tf.placeholder(tf.int64, [])
    lr = learning_rate(t, step)
    for s in (0, 299, 300, 650, 1000, 1500):
        if schedule == "constant":
            expected = 0.01
        elif schedule == "exponential":  # staircase halving every 300 steps
            expected = 0.01 * 0.5 ** (s // 300)
        else:  # cosine from 0.01 to 0.1 * 0.01 over 1000 steps, then flat
            c = 0.5 * (1 + np.cos(np.pi * min(s, 1000) / 1000.0))
            expected = 0.01 * ((1 - 0.1) * c + 0.1)
        assert sess.run(lr, {step: s}) == pytest.approx(expected, rel=1e-5), s
