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

    from vidcorr.model.config import load_config
    from vidcorr.training.trainer import train

    root = os.path.join(os.path.dirname(__file__), "..")
    run_dir = str(tmp_path_factory.mktemp("tiny") / "run")
    config = load_config(os.path.join(root, "configs", "tiny_test.json"))
    config = config.replace(train={"run_dir": run_dir})
    return config, train(config, progress=False, log=lambda m: None)


def _random_network(path, spec, seed):
    """Saves a MIND of ``spec`` with random weights and non-trivial batch norm."""
    import os

    from vidcorr.model.network import mind

    rng = np.random.RandomState(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(int(os.environ.get("VIDCORR_TEST_SEED", str(seed))))
        mind(tf.zeros([1, 32, 64, 6]), False, spec=spec)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                shape = v.shape.as_list()
                if v.op.name.endswith(("gamma", "moving_variance")):
                    v.load(rng.uniform(0.5, 1.5, shape), session)
                elif v.op.name.endswith(("beta", "moving_mean", "biases")):
                    v.load(0.1 * rng.randn(*shape), session)
                if spec.kernel_size and v.op.name == "mind/output/weights":
                    v.load(0.3 * rng.randn(*shape), session)  # logits that vary with the input
            tf.train.Saver().save(session, path)
    assert os.path.isfile(path + ".index")
    return path


@pytest.fixture(scope="session")
def random_kernel_checkpoint(tmp_path_factory):
    """A width-0.125 MIND with the adaptive-kernel head (K = 5) and random weights, saved."""
    from vidcorr.model.spec import NetworkSpec

    path = str(tmp_path_factory.mktemp("random_kernel") / "model.ckpt")
    return _random_network(path, NetworkSpec(width=0.125, output_kernel=1, kernel_size=5), 11)


@pytest.fixture(scope="session")
def random_checkpoint(tmp_path_factory):
    """A width-0.125 MIND with random weights and non-trivial batch norm, saved."""
    from vidcorr.model.spec import NetworkSpec

    path = str(tmp_path_factory.mktemp("random") / "model.ckpt")
    return _random_network(path, NetworkSpec(width=0.125), 7)
