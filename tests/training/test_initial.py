"""Starting a run from another checkpoint (vidcorr.training.initial): copied exactly, or
widened into a wider network that computes the same function."""

import types

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.io.rundir import checkpoint_values
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE, NetworkSpec
from vidcorr.readout.inference import save_initial_model
from vidcorr.training.initial import initialise_from, needs_widening


def _run(width, prefix, frames, widen=True):
    """This run's network of ``width`` initialised from ``prefix``: its output on ``frames``,
    its variables' values and the log."""
    spec = NetworkSpec(width=width)
    config = types.SimpleNamespace(
        train=types.SimpleNamespace(init_widen=widen, seed=3),
        model=types.SimpleNamespace(network_spec=lambda: spec))
    lines = []
    graph = tf.Graph()
    with graph.as_default():
        out = mind(tf.constant(frames), False, spec=spec)
        variables = tf.global_variables(MODEL_SCOPE)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            widening = needs_widening(prefix, variables)
            initialise_from(sess, prefix, config, variables, lines.append)
            values = {v.op.name: sess.run(v) for v in variables}
            return sess.run(out), values, lines, widening


def test_the_same_width_is_copied_exactly(tmp_path, rng):
    prefix = save_initial_model(str(tmp_path / "a" / "model.ckpt-0"), NetworkSpec(width=0.125),
                                seed=1)
    frames = rng.rand(1, 32, 32, 6).astype(np.float32)
    _, values, lines, widening = _run(0.125, prefix, frames)
    held = checkpoint_values(prefix)
    assert not widening and set(values) == set(held)
    for name, value in values.items():
        np.testing.assert_array_equal(value, held[name])
    assert lines == ["initialised %d network variables from %s" % (len(values), prefix)]


def test_a_narrower_checkpoint_widens_to_the_same_function(tmp_path, rng):
    prefix = save_initial_model(str(tmp_path / "b" / "model.ckpt-0"), NetworkSpec(width=0.125),
                                seed=2)
    frames = rng.rand(1, 32, 32, 6).astype(np.float32)
    narrow, _, _, _ = _run(0.125, prefix, frames)
    wide, values, lines, widening = _run(0.25, prefix, frames)
    assert widening and "widened from width 0.125 to 0.25" in lines[0]
    assert values[MODEL_SCOPE + "/enc1/conv1/weights"].shape[3] == 2 * checkpoint_values(
        prefix)[MODEL_SCOPE + "/enc1/conv1/weights"].shape[3]
    np.testing.assert_allclose(wide, narrow, atol=1e-4)
    with pytest.raises(UserError, match="shape"):  # without init_widen the shapes must fit
        _run(0.25, prefix, frames, widen=False)
