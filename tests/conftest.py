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


@pytest.fixture(scope="session")
def trained_tiny(tmp_path_factory):
    """configs/tiny_test.json trained once per session: (config, results)."""
    import os

    from vidcorr.config import load_config
    from vidcorr.training import train

    root = os.path.join(os.path.dirname(__file__), "..")
    run_dir = str(tmp_path_factory.mktemp("tiny") / "run")
    config = load_config(os.path.join(root, "configs", "tiny_test.json"))
    config = config.replace(train={"run_dir": run_dir})
    return config, train(config, progress=False, log=lambda m: None)


@pytest.fixture(scope="session")
def random_checkpoint(tmp_path_factory):
    """A width-0.125 MIND with random weights and non-trivial batch norm, saved."""
    import os

    from vidcorr.network import NetworkSpec, mind

    path = str(tmp_path_factory.mktemp("random") / "model.ckpt")
    rng = np.random.RandomState(7)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(int(os.environ.get("VIDCORR_TEST_SEED", "7")))
        mind(tf.zeros([1, 32, 64, 6]), False, spec=NetworkSpec(width=0.125))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                shape = v.shape.as_list()
                if v.op.name.endswith(("gamma", "moving_variance")):
                    v.load(rng.uniform(0.5, 1.5, shape), session)
                elif v.op.name.endswith(("beta", "moving_mean", "biases")):
                    v.load(0.1 * rng.randn(*shape), session)
            tf.train.Saver().save(session, path)
    assert os.path.isfile(path + ".index")
    return path
