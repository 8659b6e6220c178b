"""Function-preserving widening (vidcorr.model.widen): the wider network is the same function."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.model.network import mind
from vidcorr.model.spec import NetworkSpec
from vidcorr.model.spec import layer_plan
from vidcorr.model.widen import widen_values, widening_problem
from vidcorr.readout.inference import checkpoint_values, spec_from_checkpoint


def _forward(values, spec, frames, is_training):
    """The network of ``spec`` with ``values`` on ``frames``, in numpy."""
    graph = tf.Graph()
    with graph.as_default():
        out = mind(tf.constant(frames), is_training, spec=spec)  # [B, H, W, 3]
        with tf.Session(graph=graph) as sess:
            variables = tf.global_variables()
            assert sorted(v.op.name for v in variables) == sorted(values)
            for var in variables:
                var.load(values[var.op.name], sess)
            return sess.run(out)


def _random_values(spec, seed):
    """Variables of a MIND of ``spec``: random weights and non-trivial batch norm."""
    rng = np.random.RandomState(seed)
    values = {}
    for layer in layer_plan(spec):
        prefix = "mind/" + layer.name
        if layer.kind == "pool":
            continue
        k = layer.kernel
        shape = [k, k, layer.cout, layer.cin] if layer.kind == "up" else \
            [k, k, layer.cin, layer.cout]
        values[prefix + "/weights"] = rng.randn(*shape).astype(np.float32) * np.sqrt(
            2.0 / (k * k * layer.cin))
        if layer.kind == "output":
            values[prefix + "/biases"] = 0.1 * rng.randn(layer.cout).astype(np.float32)
            continue
        values[prefix + "/bn/gamma"] = rng.uniform(0.5, 1.5, layer.cout).astype(np.float32)
        values[prefix + "/bn/beta"] = 0.1 * rng.randn(layer.cout).astype(np.float32)
        values[prefix + "/bn/moving_mean"] = 0.1 * rng.randn(layer.cout).astype(np.float32)
        values[prefix + "/bn/moving_variance"] = rng.uniform(0.5, 1.5, layer.cout).astype(
            np.float32)
    return values


SPECS = [
    NetworkSpec(width=0.0625, output_kernel=1, kernel_size=5, skips=(4, 3, 2, 1, 0)),
    NetworkSpec(width=0.0625, skips=(4, 3, 2)),  # direct synthesis, the paper's skips
    NetworkSpec(width=0.0625, output_kernel=1, kernel_size=3, skips=(0, 2),
                activation="leaky_relu"),
]


@pytest.mark.parametrize("spec", SPECS, ids=["kernel_all_skips", "direct", "leaky_two_skips"])
def test_the_wider_network_computes_the_same_function(spec):
    values = _random_values(spec, 3)
    frames = np.random.RandomState(4).rand(2, 32, 64, 6).astype(np.float32)
    widened, target = widen_values(values, spec, 0.1, seed=5)
    assert target == spec.replace(width=0.1)
    for old, new in zip(layer_plan(spec), layer_plan(target)):
        if old.kind not in ("pool", "output"):
            assert new.cout > old.cout  # every hidden layer really gained channels
    for is_training in (False, True):  # moving statistics, and batch statistics
        expected = _forward(values, spec, frames, is_training)
        # batch statistics of the deepest levels (2 x 1 x 2 values) magnify float rounding
        tolerance = 2e-5 if not is_training else 1e-4 * np.abs(expected).max()
        np.testing.assert_allclose(_forward(widened, target, frames, is_training), expected,
                                   atol=tolerance)


def test_copies_split_the_outgoing_weights_unequally():
    spec = NetworkSpec(width=0.0625, output_kernel=1, kernel_size=3, skips=(4, 3, 2, 1, 0))
    values = _random_values(spec, 6)
    widened, target = widen_values(values, spec, 0.125, seed=7, noise=0.2)
    plan_old, plan_new = layer_plan(spec), layer_plan(target)
    last_old, last_new = plan_old[-2], plan_new[-2]  # dec5/conv2, read by the output layer
    old_bn = values["mind/%s/bn/gamma" % last_old.name]
    new_bn = widened["mind/%s/bn/gamma" % last_new.name]
    np.testing.assert_array_equal(new_bn[:last_old.cout], old_bn)  # originals stay in place
    old_w, new_w = values["mind/output/weights"], widened["mind/output/weights"]
    # which original each new channel copies, from its batch norm (distinct by construction)
    mapping = np.array([int(np.flatnonzero(old_bn == g)[0]) for g in new_bn])
    summed = np.zeros_like(old_w)
    for j, original in enumerate(mapping):
        summed[:, :, original, :] += new_w[:, :, j, :]
    np.testing.assert_allclose(summed, old_w, rtol=1e-5, atol=1e-7)  # shares sum to one
    copied = [o for o in np.unique(mapping) if np.sum(mapping == o) > 1]
    assert copied
    for original in copied:
        shares = new_w[0, 0, mapping == original, 0] / old_w[0, 0, original, 0]
        assert np.ptp(shares) > 1e-3  # unequal: training can tell the copies apart
        assert np.all(shares > 0.8 / len(shares)) and np.all(shares < 1.2 / len(shares))
    np.testing.assert_array_equal(widened["mind/output/biases"], values["mind/output/biases"])


def test_widening_the_shipped_model_keeps_its_predictions():
    prefix = "research/models/sharp_stage1"
    values = checkpoint_values(tf.train.latest_checkpoint(prefix))
    spec = spec_from_checkpoint(tf.train.latest_checkpoint(prefix), values)
    frames = np.random.RandomState(0).rand(1, 32, 64, 6).astype(np.float32)
    widened, target = widen_values(values, spec, 0.3)
    np.testing.assert_allclose(_forward(widened, target, frames, False),
                               _forward(values, spec, frames, False), atol=2e-5)


def test_widening_errors():
    spec = NetworkSpec(width=0.125, output_kernel=1, kernel_size=3)
    values = _random_values(spec, 0)
    with pytest.raises(ValueError, match="narrower than the trained 0.125"):
        widen_values(values, spec, 0.0625)
    with pytest.raises(ValueError, match="noise"):
        widen_values(values, spec, 0.25, noise=1.0)
    assert "kernel_size" in widening_problem(spec, spec.replace(width=0.25, kernel_size=5))
    assert widening_problem(spec, spec.replace(width=0.25)) is None
    del values["mind/dec2/conv1/bn/beta"]
    with pytest.raises(ValueError, match="lacks mind/dec2/conv1/bn/beta"):
        widen_values(values, spec, 0.25)


def test_training_starts_from_a_widened_run(trained_tiny, tmp_path):
    """``train.init_widen``: a wider run starts where the narrow one ended."""
    from vidcorr.training.trainer import Trainer

    config, results = trained_tiny
    wide = config.replace(model={"width": 0.3125},
                          train={"run_dir": str(tmp_path / "wide"), "steps": 1,
                                 "init_from": config.train.run_dir, "init_widen": True})
    trainer = Trainer(wide, progress=False, log=lambda m: None).setup()
    try:
        first = [v for v in trainer.network_variables if v.op.name == "mind/enc1/conv1/weights"]
        assert first[0].shape.as_list()[3] == 30  # 96 x 0.3125, against 24 trained
        np.testing.assert_allclose(trainer.validate()["val_psnr"], results["val_psnr"],
                                   atol=1e-3)
    finally:
        trainer.close()
    plain = wide.replace(train={"run_dir": str(tmp_path / "plain"), "init_widen": False})
    with pytest.raises(UserError, match="different model.width"):
        Trainer(plain, progress=False, log=lambda m: None).setup()
    # a checkpoint with no config.json beside it: its width is read off its shapes
    from vidcorr.readout.inference import save_initial_model
    bare = save_initial_model(str(tmp_path / "bare" / "model.ckpt-0"),
                              config.model.network_spec(), seed=3)
    from_bare = wide.replace(train={"run_dir": str(tmp_path / "from_bare"), "init_from": bare})
    trainer = Trainer(from_bare, progress=False, log=lambda m: None).setup()
    try:
        expected, _ = widen_values(checkpoint_values(bare), config.model.network_spec(), 0.3125,
                                   seed=from_bare.train.seed)
        got = trainer.sess.run({v.op.name: v for v in trainer.network_variables})
        assert sorted(got) == sorted(expected)
        for name, value in got.items():
            np.testing.assert_array_equal(value, expected[name])
    finally:
        trainer.close()
    # a bare checkpoint that is not a whole network: one line, not a KeyError
    graph = tf.Graph()
    with graph.as_default():
        tf.get_variable("mind/enc1/conv1/weights", [3, 3, 6, 24])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            partial = tf.train.Saver().save(sess, str(tmp_path / "partial" / "model.ckpt"))
    from_partial = wide.replace(train={"run_dir": str(tmp_path / "from_partial"),
                                       "init_from": partial})
    with pytest.raises(UserError, match="not a MIND network: no mind/enc3/conv1/weights"):
        Trainer(from_partial, progress=False, log=lambda m: None).setup()
    narrow = wide.replace(model={"width": 0.125}, train={"run_dir": str(tmp_path / "narrow")})
    with pytest.raises(UserError, match="narrower than the trained 0.25"):
        Trainer(narrow, progress=False, log=lambda m: None).setup()
