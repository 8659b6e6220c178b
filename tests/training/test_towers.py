"""Multi-device training: towers on virtual CPU devices agree with one device."""

import os

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.config import load_config
from vidcorr.errors import UserError
from vidcorr.model.spec import layer_plan
from vidcorr.training.trainer import Trainer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _trainer(tmp_path, name, devices):
    config = load_config(os.path.join(ROOT, "configs", "tiny_test.json")).replace(
        model={"width": 0.125}, data={"crop_width": 32, "val_triplets": 6},
        train={"run_dir": str(tmp_path / name), "num_devices": devices, "batch_size": 4})
    return Trainer(config, progress=False, log=lambda m: None).setup()


def _copy_network(source, target):
    with source.graph.as_default():
        values = dict(zip([v.op.name for v in source.network_variables],
                          source.sess.run(source.network_variables)))
    with target.graph.as_default():
        for var in target.network_variables:
            var.load(values[var.op.name], target.sess)


def _moving(trainer):
    with trainer.graph.as_default():
        variables = [v for v in trainer.network_variables if "moving_" in v.op.name]
        return dict(zip([v.op.name for v in variables], trainer.sess.run(variables)))


def test_two_towers_agree_with_one_device(tmp_path):
    one, two = _trainer(tmp_path, "one", 1), _trainer(tmp_path, "two", 2)
    try:
        assert two.devices == ["/device:CPU:0", "/device:CPU:1"]
        with one.graph.as_default():
            names_one = sorted(v.op.name for v in tf.global_variables())
        with two.graph.as_default():
            names_two = sorted(v.op.name for v in tf.global_variables())
            placed = {op.device for op in two.graph.get_operations() if op.name.startswith(
                "tower1/") and op.type == "Conv2D"}
        assert names_one == names_two  # the checkpoint is the same as a single device's
        assert placed == {"/device:CPU:1"}
        _copy_network(one, two)
        rng = np.random.RandomState(0)
        inputs = rng.rand(4, 32, 32, 6).astype(np.float32)
        targets = rng.rand(4, 32, 32, 3).astype(np.float32)
        # inference-mode batch norm has no batch statistics: loss and averaged
        # gradients must equal the single device's on the whole batch
        results = []
        for t in (one, two):
            feed = {t.inputs: inputs, t.targets: targets, t.is_training: False}
            results.append(t.sess.run([t.loss, [g for g, _ in t.grads_and_vars]], feed))
        assert results[1][0] == pytest.approx(results[0][0], rel=1e-6)
        for g1, g2, (_, var) in zip(results[0][1], results[1][1], one.grads_and_vars):
            np.testing.assert_allclose(g2, g1, rtol=1e-4, atol=1e-7, err_msg=var.op.name)
        np.testing.assert_allclose(two.predict(inputs[:3]), one.predict(inputs[:3]),
                                   rtol=1e-5, atol=1e-6)  # a batch the towers cannot split
        # a training step updates the moving statistics once, from the first tower's
        # share: with both halves of the batch equal, that is the whole batch's mean
        doubled = np.concatenate([inputs[:2], inputs[:2]])
        doubled_tg = np.concatenate([targets[:2], targets[:2]])
        before = _moving(one)
        sizes = {layer.name: layer for layer in layer_plan(one.config.model.network_spec(),
                                                           32, 32)}
        for t in (one, two):
            t.sess.run(t.train_op, {t.inputs: doubled, t.targets: doubled_tg})
        after_one, after_two = _moving(one), _moving(two)
        for name in after_one:
            if name.endswith("moving_mean"):
                np.testing.assert_allclose(after_two[name], after_one[name], rtol=1e-4,
                                           atol=1e-6, err_msg=name)
                assert not np.allclose(after_one[name], before[name])
            else:  # the fused kernel's Bessel factor n / (n - 1), with half the n per share
                layer = sizes[name[len("mind/"):-len("/bn/moving_variance")]]
                n = 4 * layer.height * layer.width
                decay = one.config.model.bn_decay
                ratio = ((after_two[name] - decay * before[name]) /
                         (after_one[name] - decay * before[name]))
                np.testing.assert_allclose(ratio, (n / 2.0 / (n / 2.0 - 1)) / (n / (n - 1.0)),
                                           rtol=2e-3, err_msg=name)
    finally:
        one.close()
        two.close()


def test_kernel_terms_crop_each_frames_blend_to_the_input(sess, rng):
    """The loss of a kernel network with the frame, symmetry, smoothness and warp terms,
    at a size the network pads (40x48 -> 64x64), against numpy on the network's own
    logits."""
    from tests.model.test_kernels import _frame_blends_numpy
    from tests.model.test_warping import _sample_scipy
    from vidcorr.model import network
    from vidcorr.model.config import config_from_dict
    from tests import reference_losses as ref
    from vidcorr.model.losses import training_loss
    from vidcorr.training.towers import kernel_terms

    config = config_from_dict({
        "model": {"width": 0.125, "kernel_size": 3, "output_kernel": 1},
        "data": {"synthetic": True},
        "train": {"census_weight": 0.2, "frame_weight": 0.5, "symmetry_weight": 0.1,
                  "frame_mass": True, "smooth_weight": 0.3, "frame_temperature": 2.0,
                  "warp_weight": 0.7}})
    frames = rng.rand(2, 40, 48, 6).astype(np.float32)
    target = rng.rand(2, 40, 48, 3).astype(np.float32)
    with tf.variable_scope("kt"):
        ends = {}
        pred = network.mind(tf.constant(frames), False, spec=config.model.network_spec(),
                            endpoints=ends)
        terms = kernel_terms(ends, config)
        loss = training_loss(pred, tf.constant(target), config.train, **terms)
    sess.run(tf.global_variables_initializer())
    # random logit biases so that the kernels are not all alike
    bias = [v for v in tf.global_variables("kt") if v.op.name.endswith("output/biases")][0]
    bias.load(rng.randn(18).astype(np.float32), sess)
    got, p, logits, padded = sess.run([loss, pred, ends["logits"], ends["padded"]])
    top, left, h, w = ends["crop"]
    assert (top, left, h, w) == (12, 8, 40, 48) and logits.shape[1:3] == (64, 64)
    blends, offsets = _frame_blends_numpy(padded, logits / 2.0, 3)  # at frame_temperature
    blends, offsets = blends[:, top:top + h, left:left + w], offsets[:, top:top + h, left:left + w]
    e = np.exp(logits - logits.max(-1, keepdims=True))  # shares at temperature 1
    shares = e / e.sum(-1, keepdims=True)  # [B, H', W', 18]: frame t's 9 taps, then t+2's
    masses = np.stack([shares[..., :9].sum(-1), shares[..., 9:].sum(-1)], -1)
    masses = masses[:, top:top + h, left:left + w]
    assert np.ptp(masses) > 0.01  # the test's logits give the frames unequal shares
    rows, cols = np.mgrid[top:top + h, left:left + w].astype(np.float64)
    warps = np.stack([_sample_scipy(padded[..., 3 * j:3 * j + 3], cols + offsets[..., j, 0],
                                    rows + offsets[..., j, 1]) for j in range(2)], axis=3)
    assert np.abs(offsets).max() > 0.2  # the warps move by a good part of a pixel
    want = ref.training_loss(p, target, config.train, blends, offsets, masses, warps)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert kernel_terms(ends, config.replace(train={"frame_weight": 0.0, "frame_mass": False,
                                                    "symmetry_weight": 0.0,
                                                    "smooth_weight": 0.0, "warp_weight": 0.0,
                                                    "frame_temperature": 1.0})) == {}


def test_kernel_terms_need_a_kernel_head():
    from vidcorr.model.config import config_from_dict
    for key in ("frame_weight", "symmetry_weight", "smooth_weight", "warp_weight"):
        with pytest.raises(UserError, match="train.%s: .*model.kernel_size" % key):
            config_from_dict({"data": {"synthetic": True}, "train": {key: 0.5}})
    with pytest.raises(UserError, match="train.frame_mass: .*train.frame_weight or warp_weight > 0"):
        config_from_dict({"data": {"synthetic": True}, "train": {"frame_mass": True}})
    kernel_head = {"kernel_size": 3, "output_kernel": 1}
    with pytest.raises(UserError, match="train.frame_temperature: .*smooth_weight or warp_weight > 0"):
        config_from_dict({"data": {"synthetic": True}, "model": kernel_head,
                          "train": {"frame_temperature": 2.0}})
    with pytest.raises(UserError, match="train.frame_temperature: must be from 0.1 to 10"):
        config_from_dict({"data": {"synthetic": True}, "model": kernel_head,
                          "train": {"frame_temperature": 0.0, "frame_weight": 1.0}})


def test_num_devices_must_divide_the_batch(tmp_path):
    config = load_config(os.path.join(ROOT, "configs", "tiny_test.json"))
    with pytest.raises(UserError, match="num_devices"):
        config.replace(train={"num_devices": 3})


def test_sharded_matching_on_two_devices_equals_one(random_kernel_checkpoint, rng):
    from vidcorr.readout.matching import Matcher

    a = rng.rand(32, 64, 3).astype(np.float32)
    b = np.roll(a, 2, axis=1)
    one = Matcher(random_kernel_checkpoint, levels=2, chunk=4, readout="sensitivity")
    two = Matcher(random_kernel_checkpoint, levels=2, chunk=4, devices=2,
                  readout="sensitivity")
    try:
        m1, m2 = one.match(a, b, stride=6), two.match(a, b, stride=6)  # 66 points: uneven parts
        assert two.devices == ["/device:CPU:0", "/device:CPU:1"]
        graph = two.readout.graph_for(32, 64).graph
        assert {op.device for op in graph.get_operations()
                if op.name.startswith("replica1/") and op.type == "Conv2D"} == {"/device:CPU:1"}
        for field in ("p1", "p3", "peak", "confidence", "valid"):
            np.testing.assert_allclose(getattr(m2, field), getattr(m1, field), rtol=1e-5,
                                       atol=1e-6, err_msg=field)
    finally:
        one.close()
        two.close()


def test_frame_real_weight_takes_real_triplets_out_of_the_frame_term(tmp_path):
    """The trainer feeds each triplet's kind to the loss, split over the towers as the
    batch is: with ``frame_real_weight`` 0 and every triplet marked real, the loss is the
    middle frame's L1 alone (numpy, from the prediction); marking one triplet layered adds
    its own frame term, a positive amount, and the four amounts add up to the whole
    batch's frame term (so each tower weighs its own share's triplets)."""
    from PIL import Image

    folder = tmp_path / "v"
    folder.mkdir()
    rng = np.random.RandomState(0)
    for i in range(12):
        Image.fromarray(rng.randint(0, 256, (48, 80, 3)).astype(np.uint8)).save(
            str(folder / ("%02d.png" % i)))
    config = load_config(os.path.join(ROOT, "configs", "tiny_test.json")).replace(
        model={"width": 0.125, "kernel_size": 3, "output_kernel": 1},
        data={"synthetic": False, "sources": [str(folder)], "crop_width": 32,
              "val_triplets": 2, "layered_fraction": 0.5, "max_motion": 2.0,
              "static_threshold": 0.0, "val_fraction": 0.3},
        train={"run_dir": str(tmp_path / "run"), "batch_size": 4, "num_devices": 2,
               "frame_weight": 1.0, "frame_mass": True, "frame_real_weight": 0.0})
    inputs = rng.rand(4, 32, 32, 6).astype(np.float32)
    targets = rng.rand(4, 32, 32, 3).astype(np.float32)
    t = Trainer(config, progress=False, log=lambda m: None).setup()
    try:
        def loss(kinds):
            feed = {t.inputs: inputs, t.targets: targets, t.is_training: False,
                    t.layered: np.asarray(kinds, np.float32)}
            return t.sess.run([t.loss, t.prediction], feed)

        real, pred = loss([0, 0, 0, 0])
        np.testing.assert_allclose(real, np.mean(np.abs(pred - targets)), rtol=1e-5)
        each = [loss(np.eye(4)[b])[0] - real for b in range(4)]
        assert min(each) > 1e-4
        assert sum(each) == pytest.approx(loss([1, 1, 1, 1])[0] - real, rel=1e-3)
    finally:
        t.close()


def test_tune_chooses_the_layers_the_optimizer_changes():
    from vidcorr.compat import tf
    from vidcorr.model.network import mind
    from vidcorr.model.spec import NetworkSpec
    from vidcorr.training.towers import tuned_variables

    with tf.Graph().as_default():
        mind(tf.zeros([1, 32, 32, 6]), True, spec=NetworkSpec(width=0.125))
        names = {t: [v.op.name for v in tuned_variables(t)] for t in ("all", "decoder", "head")}
    assert sorted(names["head"]) == ["mind/output/biases", "mind/output/weights"]
    assert all(n.startswith(("mind/dec", "mind/output/")) for n in names["decoder"])
    assert set(names["head"]) < set(names["decoder"]) < set(names["all"])
    assert any(n.startswith("mind/enc") for n in names["all"])
