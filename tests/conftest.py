"""Shared fixtures: a fresh graph and session per test, seeded numpy."""

import numpy as np
import pytest

from vidcorr.compat import session_config, tf


@pytest.fixture
def sess():
    """A session on a fresh default graph, closed after the test."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        with tf.Session(graph=graph, config=session_config()) as session:
            yield session


@pytest.fixture
def rng():
    return np.random.RandomState(1234)
