"""vidcorr: learning image matching by watching video (TensorFlow 1.x graph mode).

Importing the package imports TensorFlow (through :mod:`vidcorr.compat`, the one
import point) with v2 behaviour disabled.
"""

from vidcorr.compat import tf
from vidcorr.batchnorm import batch_norm
from vidcorr.quantize import fake_quant, quantize_transform
from vidcorr import layers
from vidcorr.network import NetworkSpec, mind
from vidcorr.config import load_config
from vidcorr.training import Trainer, train
from vidcorr.matching import Matcher, Matches

__version__ = "0.1.0"

__all__ = ["tf", "batch_norm", "fake_quant", "quantize_transform", "layers", "NetworkSpec", "mind",
           "load_config", "Trainer", "train", "Matcher", "Matches", "__version__"]
