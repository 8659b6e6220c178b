"""The packaged default model: present, small, described by its card, better than averaging."""

import json
import os

import numpy as np

from vidcorr.compat import tf
from vidcorr.losses import psnr_numpy
from vidcorr.matching import DEFAULT_MODEL, Matcher
from vidcorr.video import read_image

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = os.path.join(ROOT, "examples")


def test_card_describes_the_packaged_checkpoint():
    size = sum(os.path.getsize(os.path.join(DEFAULT_MODEL, n)) for n in os.listdir(DEFAULT_MODEL))
    assert size <= 25 * 2 ** 20
    with open(os.path.join(DEFAULT_MODEL, "card.json")) as f:
        card = json.load(f)
    with open(os.path.join(DEFAULT_MODEL, "config.json")) as f:
        config = json.load(f)
    assert card["config"] == config
    prefix = tf.train.latest_checkpoint(DEFAULT_MODEL)
    assert int(tf.train.load_variable(prefix, "global_step")) == card["steps"] > 0
    names = [n for n, _ in tf.train.list_variables(prefix)]
    assert not any("Adam" in n for n in names)
    val = card["validation"]
    assert val["model"]["psnr"] > val["frame average"]["psnr"]


def test_default_model_beats_the_frame_average_on_the_sample_triplet():
    frames = [read_image(os.path.join(EXAMPLES, "cockatoo_%d.png" % t)).astype(np.float32) / 255
              for t in (262, 263, 264)]
    matcher = Matcher()  # no checkpoint: the packaged model
    middle = matcher.predict(frames[0], frames[2])
    matcher.close()
    model = psnr_numpy(middle[None], frames[1][None])[0]
    average = psnr_numpy((0.5 * (frames[0] + frames[2]))[None], frames[1][None])[0]
    assert model > average + 1.0, (model, average)  # measured: 26.57 vs 24.01 dB
