"""vidcorr: learning image matching by watching video (TensorFlow 1.x graph mode).

The public names below are imported on first use, so that TF-free parts
(:mod:`vidcorr.model.config`, :mod:`vidcorr.model.spec`, :mod:`vidcorr.readout.pyramid`) load
without TensorFlow; ``vidcorr.tf`` (or anything that builds a graph) imports it
through :mod:`vidcorr.compat`, the one import point, with v2 behaviour disabled.
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "tf": "vidcorr.compat",
    "batch_norm": "vidcorr.model.batchnorm",
    "fake_quant": "vidcorr.model.quantize",
    "quantize_transform": "vidcorr.model.quantize",
    "layers": None,  # the module vidcorr.model.layers
    "NetworkSpec": "vidcorr.model.spec",
    "layer_plan": "vidcorr.model.spec",
    "mind": "vidcorr.model.network",
    "load_config": "vidcorr.model.config",
    "Trainer": "vidcorr.training.trainer",
    "train": "vidcorr.training.trainer",
    "Matcher": "vidcorr.readout.matching",
    "Matches": "vidcorr.readout.matching",
    "MatchOptions": "vidcorr.readout.options",
    "to_rgb_float": "vidcorr.io.video",
    "match_picture": "vidcorr.io.visualize",
    "run_evaluation": "vidcorr.evaluation.evaluate",
    "EvaluationPlan": "vidcorr.evaluation.plan",
    "adapt": "vidcorr.apps.adapt",
    "AdaptSettings": "vidcorr.apps.adapt",
    "track": "vidcorr.apps.track",
    "Tracks": "vidcorr.apps.track",
    "TrackSettings": "vidcorr.tracking.chain",
    "frame_flows": "vidcorr.tracking.inversion",
    "PixelGradients": "vidcorr.readout.sensitivity.pixels",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError("module 'vidcorr' has no attribute %r" % (name,))
    module = _PUBLIC[name]
    value = (importlib.import_module("vidcorr.model.layers") if module is None
             else getattr(importlib.import_module(module), name))
    globals()[name] = value
    return value


def __dir__():
    return __all__
