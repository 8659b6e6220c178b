"""vidcorr: learning image matching by watching video (TensorFlow 1.x graph mode).

The public names below are imported on first use, so that TF-free parts
(:mod:`vidcorr.config`, :mod:`vidcorr.spec`, :mod:`vidcorr.pyramid`) load
without TensorFlow; ``vidcorr.tf`` (or anything that builds a graph) imports it
through :mod:`vidcorr.compat`, the one import point, with v2 behaviour disabled.
"""

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "tf": "vidcorr.compat",
    "batch_norm": "vidcorr.batchnorm",
    "fake_quant": "vidcorr.quantize",
    "quantize_transform": "vidcorr.quantize",
    "layers": None,
    "NetworkSpec": "vidcorr.spec",
    "layer_plan": "vidcorr.spec",
    "mind": "vidcorr.network",
    "load_config": "vidcorr.config",
    "Trainer": "vidcorr.training",
    "train": "vidcorr.training",
    "Matcher": "vidcorr.matching",
    "Matches": "vidcorr.matching",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError("module 'vidcorr' has no attribute %r" % (name,))
    module = _PUBLIC[name]
    value = importlib.import_module("vidcorr." + name) if module is None else getattr(
        importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
