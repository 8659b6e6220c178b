"""Inference weights: numpy fake quantisation and quantized runs evaluated as trained."""

import json
import os
import shutil

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.model.config import load_config
from vidcorr.errors import UserError
from vidcorr.readout.inference import fake_quant_numpy, find_model, save_initial_model
from vidcorr.readout.matching import Matcher
from vidcorr.model.network import mind
from vidcorr.model.spec import NetworkSpec
from vidcorr.model.quantize import fake_quant

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("num_bits,axis,shape", [(8, None, (40,)), (4, None, (3, 3, 5, 7)),
                                                 (8, 3, (3, 3, 5, 7)), (5, 2, (4, 4, 6, 3))])
def test_numpy_fake_quant_equals_tensorflow(sess, num_bits, axis, shape):
    rng = np.random.RandomState(num_bits)
    value = (rng.randn(*shape) * rng.uniform(0.01, 2.0)).astype(np.float32)
    if axis is None:
        value = np.abs(value) + 0.3  # all positive: the range is widened to contain zero
    expected = sess.run(fake_quant(tf.constant(value), num_bits, channel_axis=axis))
    got = fake_quant_numpy(value, num_bits, channel_axis=axis)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    levels = len(np.unique(got if axis is None else np.take(got, 0, axis=axis)))
    assert levels <= 2 ** num_bits and not np.allclose(got, value)


@pytest.mark.parametrize("head", ["direct", "kernel"])
def test_quantized_run_is_matched_with_quantized_weights(request, head, tmp_path):
    random_checkpoint = request.getfixturevalue(
        "random_checkpoint" if head == "direct" else "random_kernel_checkpoint")
    extra = {} if head == "direct" else {"output_kernel": 1, "kernel_size": 5}
    spec = NetworkSpec(width=0.125, **extra)
    run = tmp_path / "run"
    run.mkdir()
    for name in os.listdir(os.path.dirname(random_checkpoint)):
        shutil.copy(os.path.join(os.path.dirname(random_checkpoint), name), str(run / name))
    config = load_config(os.path.join(ROOT, "configs", "tiny_test.json")).replace(
        model=dict({"width": 0.125, "skips": [4, 3, 2], "quantize": True, "num_bits": 4}, **extra))
    with open(str(run / "config.json"), "w") as f:
        json.dump(config.to_dict(), f)
    rng = np.random.RandomState(3)
    a, b = rng.rand(32, 64, 3).astype(np.float32), rng.rand(32, 64, 3).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.concatenate([a, b], -1)[None])
        quantized = mind(x, False, quantize=True, spec=spec, num_bits=4)
        with tf.Session() as session:
            tf.train.Saver().restore(session, random_checkpoint)
            expected = session.run(quantized)[0]
    matcher = Matcher(str(run))
    got = matcher.predict(a, b)
    matcher.close()
    np.testing.assert_allclose(got, expected, atol=2e-4)
    plain = Matcher(random_checkpoint)  # no config.json beside it: float weights
    assert np.abs(plain.predict(a, b) - expected).max() > 1e-3
    plain.close()


def test_save_initial_model_round_trip(tmp_path):
    prefix = save_initial_model(str(tmp_path / "u" / "model.ckpt-0"),
                                NetworkSpec(width=0.125, skips=(4, 3, 2, 1, 0)))
    _, spec, values = find_model(str(tmp_path / "u"))
    assert spec.width == 0.125 and spec.skips == (4, 3, 2, 1, 0)
    assert all(not np.any(v) for k, v in values.items() if k.endswith("moving_mean"))
    assert prefix.endswith("model.ckpt-0")


def test_a_width_whose_channels_round_is_found_again(tmp_path):
    """Width 0.3 has 29 and 38 channels: its own config and its shapes agree."""
    spec = NetworkSpec(width=0.3, skips=(4, 3, 2, 1, 0), output_kernel=1, kernel_size=3)
    save_initial_model(str(tmp_path / "w" / "model.ckpt-0"), spec)
    _, found, _ = find_model(str(tmp_path / "w"))
    assert found == spec


def test_spec_inferred_from_shapes(random_checkpoint, random_kernel_checkpoint):
    """Without a config.json the head is read off the output layer's shape."""
    from vidcorr.readout.inference import spec_from_checkpoint

    assert spec_from_checkpoint(random_checkpoint) == NetworkSpec(width=0.125)
    assert spec_from_checkpoint(random_kernel_checkpoint) == NetworkSpec(
        width=0.125, output_kernel=1, kernel_size=5)


def test_predictor_equals_the_unfolded_network_in_batches(random_checkpoint):
    """The forward-only folded graph matches the checkpoint's batch-norm network."""
    rng = np.random.RandomState(4)
    pairs = rng.rand(5, 40, 72, 6).astype(np.float32)  # not a multiple of 32: padded inside
    graph = tf.Graph()
    with graph.as_default():
        unfolded = mind(tf.constant(pairs), False, spec=NetworkSpec(width=0.125))
        with tf.Session() as session:
            tf.train.Saver().restore(session, random_checkpoint)
            expected = session.run(unfolded)  # [5, 40, 72, 3]
    matcher = Matcher(random_checkpoint)
    try:
        predictor = matcher.predictor_for(40, 72)
        predictor.batch_size = 2  # 5 pairs: runs of 2, 2 and 1
        np.testing.assert_allclose(matcher.predict_batch(pairs), expected, atol=1e-4)
        np.testing.assert_allclose(matcher.predict(pairs[3, ..., :3], pairs[3, ..., 3:]),
                                   expected[3], atol=1e-4)
        assert matcher.predictor_for(40, 72) is predictor  # cached per size
        with pytest.raises(UserError, match=r"pairs must be \[N, 40, 72, 6\]"):
            predictor.predict(pairs[:, :32])
    finally:
        matcher.close()
