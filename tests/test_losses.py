"""Tests of the losses and PSNR against closed forms."""

import numpy as np
import pytest

from vidcorr.compat import tf
from vidcorr.losses import psnr, psnr_numpy, reconstruction_loss, reconstruction_loss_numpy


@pytest.mark.parametrize("kind", ["l1", "l2", "charbonnier"])
def test_graph_and_numpy_losses_agree(sess, rng, kind):
    a = rng.rand(2, 4, 5, 3).astype(np.float32)
    b = rng.rand(2, 4, 5, 3).astype(np.float32)
    expected = {"l1": np.mean(np.abs(a - b)), "l2": np.mean((a - b) ** 2),
                "charbonnier": np.mean(np.sqrt((a - b) ** 2 + 1e-6))}[kind]
    got = sess.run(reconstruction_loss(tf.constant(a), tf.constant(b), kind))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(reconstruction_loss_numpy(a, b, kind), expected, rtol=1e-6)


def test_psnr_closed_form(sess):
    target = np.zeros((1, 4, 4, 3), np.float32)
    pred = np.full((1, 4, 4, 3), 0.1, np.float32)  # MSE 0.01 -> 20 dB
    np.testing.assert_allclose(psnr_numpy(pred, target), [20.0], rtol=1e-6)
    np.testing.assert_allclose(sess.run(psnr(tf.constant(pred), tf.constant(target))), 20.0,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="loss"):
        reconstruction_loss_numpy(pred, target, "l3")
