"""Serving exports (vidcorr.apps.serving): a clean graph that computes what the library does."""

import os

import numpy as np
import pytest

from vidcorr.apps.serving import FORBIDDEN_OPS, ServingModel, export_serving
from vidcorr.errors import UserError
from vidcorr.readout.blend import BlendGraph
from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SIZES = [(32, 48), (40, 70), (57, 33)]  # padded inside the graph to multiples of 32


@pytest.fixture(scope="module")
def exported(random_kernel_checkpoint, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("serving") / "model")
    try:  # ONNX where the onnx extra is installed (Python 3.8+)
        import tf2onnx  # noqa: F401
        formats = ("saved_model", "onnx")
    except ImportError:
        formats = ("saved_model",)
    export_serving(random_kernel_checkpoint, out, formats=formats, log=lambda m: None)
    return random_kernel_checkpoint, out


def _library(checkpoint):
    _, spec, values = find_model(checkpoint)
    return spec, fold_batch_norm(values)


def test_the_graph_has_no_cond_variable_or_batch_norm(exported):
    _, out = exported
    model = ServingModel(out)
    ops = {node.op for node in model.graph.as_graph_def().node}
    model.close()
    assert not ops & set(FORBIDDEN_OPS), ops & set(FORBIDDEN_OPS)
    assert "Conv2D" in ops and "Placeholder" in ops
    assert sorted(model.signatures) == ["flow", "interpolate"]
    assert sorted(model.signatures["flow"][0]) == ["fields", "frame_t", "frame_t2"]
    assert sorted(model.signatures["flow"][1]) == ["confidence", "peak", "position"]


def test_saved_model_equals_the_library_at_any_size(exported):
    checkpoint, out = exported
    spec, weights = _library(checkpoint)
    model = ServingModel(out)
    rng = np.random.RandomState(0)
    for h, w in SIZES:
        a, b = rng.rand(2, 2, h, w, 3).astype(np.float32)  # a batch of two pairs
        predictor = Predictor(spec, h, w, weights)
        expected = predictor.predict(np.concatenate([a, b], axis=-1))
        predictor.close()
        np.testing.assert_allclose(model.interpolate(a, b), expected, atol=1e-5)
        fields = (2 * rng.randn(2, h, w, 4)).astype(np.float32)
        got = model.flow(a, b, fields)
        graph = BlendGraph(spec, h, w, weights, smooth=0)
        for i in range(2):
            ref = graph.run(a[i], b[i], (fields[i, ..., :2], fields[i, ..., 2:]))
            np.testing.assert_allclose(got["position"][i], ref["position"], atol=1e-3)
            np.testing.assert_allclose(got["peak"][i], ref["peak"], atol=1e-5)
            np.testing.assert_allclose(got["confidence"][i], ref["peak"].min(-1), atol=1e-5)
        graph.close()
    model.close()


def test_onnx_equals_the_library(exported):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    checkpoint, out = exported
    spec, weights = _library(checkpoint)
    rng = np.random.RandomState(1)
    interpolate = ort.InferenceSession(os.path.join(out, "onnx", "interpolate.onnx"),
                                       providers=["CPUExecutionProvider"])
    flow = ort.InferenceSession(os.path.join(out, "onnx", "flow.onnx"),
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in flow.get_outputs()]
    for h, w in SIZES:
        a, b = rng.rand(2, 1, h, w, 3).astype(np.float32)
        predictor = Predictor(spec, h, w, weights)
        expected = predictor.predict(np.concatenate([a, b], axis=-1))
        predictor.close()
        middle = interpolate.run(None, {"frame_t:0": a, "frame_t2:0": b})[0]
        np.testing.assert_allclose(middle, expected, atol=1e-5)
        got = dict(zip(names, flow.run(None, {"frame_t:0": a, "frame_t2:0": b,
                                               "fields:0": np.zeros((1, h, w, 4), np.float32)})))
        graph = BlendGraph(spec, h, w, weights, smooth=0)
        ref = graph.run(a[0], b[0])
        graph.close()
        np.testing.assert_allclose(got["position:0"][0], ref["position"], atol=1e-3)


def test_damaged_exports_and_unsafe_outputs(exported, random_checkpoint, tmp_path):
    checkpoint, out = exported
    with pytest.raises(UserError, match="not a complete serving export"):
        ServingModel(str(tmp_path))
    import shutil
    copy = str(tmp_path / "copy")
    shutil.copytree(out, copy)
    pb = os.path.join(copy, "saved_model", "saved_model.pb")
    with open(pb, "r+b") as f:
        f.truncate(os.path.getsize(pb) // 3)
    with pytest.raises(UserError, match="cannot load serving export .*copy") as info:
        ServingModel(copy)
    assert "\n" not in str(info.value)
    run = os.path.dirname(checkpoint)
    with pytest.raises(UserError, match="is not a serving export"):
        export_serving(checkpoint, run, log=lambda m: None)  # never over a run
    assert os.listdir(run)
    with pytest.raises(UserError, match="unknown export format"):
        export_serving(checkpoint, str(tmp_path / "x"), formats=("tflite",))
    earlier = str(tmp_path / "earlier")
    shutil.copytree(out, earlier)
    export_serving(random_checkpoint, earlier, log=lambda m: None)  # an earlier export: replaced
    model = ServingModel(earlier)
    assert sorted(model.signatures) == ["interpolate"]  # no kernel head: no flow
    model.close()


@pytest.mark.parametrize("runtime", ["onnx", "tf"])
def test_the_serving_example_runs_without_vidcorr(exported, runtime, tmp_path):
    """examples/serving_example.py, run where vidcorr cannot be imported."""
    import subprocess
    import sys

    from vidcorr.compat import TF1
    if runtime == "onnx":
        pytest.importorskip("onnxruntime")
        pytest.importorskip("tf2onnx")
    elif TF1:
        pytest.skip("the example's TensorFlow path is TensorFlow 2's tf.saved_model.load")
    _, out = exported
    (tmp_path / "vidcorr.py").write_text("raise ImportError('vidcorr must not be needed')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in sys.path if p and os.path.isdir(p)
                           and not os.path.isdir(os.path.join(p, "vidcorr"))]))
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "serving_example.py"), out,
         os.path.join(ROOT, "examples", "cockatoo_262.png"),
         os.path.join(ROOT, "examples", "cockatoo_264.png"), "--runtime", runtime,
         "--levels", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "median flow t -> t+2" in proc.stdout
