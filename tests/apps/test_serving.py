"""Serving exports (vidcorr.apps.serving): a clean graph that computes what the library does."""

import os

import numpy as np
import pytest

from vidcorr.apps.serving import FORBIDDEN_OPS, ServingModel, export_serving
from vidcorr.errors import UserError
from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
from vidcorr.readout.matching import Matcher
from vidcorr.readout.options import MatchOptions

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZES = [(32, 48), (40, 70), (57, 33)]  # padded inside the graph to multiples of 32


LEVELS = 2  # the match's pyramid in the test exports: a smaller graph, converted faster
# The test exports' refinement: every stage and both scales, with 4 SOR sweeps where the
# default repeats them 48 times (3 rounds x 4 iterations x 4): the ONNX converter takes
# a few minutes over the default's unrolled sweeps (the refinement's sweeps are tested in
# tests/readout/test_refinement.py).
OPTIONS = MatchOptions(refine_rounds=1, refine_iterations=2, refine_sweeps=2)


@pytest.fixture(scope="module")
def exported(random_kernel_checkpoint, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("serving") / "model")
    try:  # ONNX where the onnx extra is installed (Python 3.8+)
        import tf2onnx  # noqa: F401
        formats = ("saved_model", "onnx")
    except ImportError:
        formats = ("saved_model",)
    export_serving(random_kernel_checkpoint, out, formats=formats, options=OPTIONS,
                   max_levels=LEVELS, log=lambda m: None)
    return random_kernel_checkpoint, out


def _library(checkpoint):
    _, spec, values = find_model(checkpoint)
    return spec, fold_batch_norm(values)


def _matched(checkpoint, a, b):
    """The library's dense matches of each pair: position [B, H, W, 2, 2], confidence, valid."""
    matcher = Matcher(checkpoint, OPTIONS, max_seconds=0)
    out = {"position": [], "confidence": [], "valid": []}
    for x, y in zip(a, b):
        m = matcher.match(x, y, stride=1)
        h, w = m.size
        out["position"].append(np.stack([m.p1, m.p3], 1).reshape(h, w, 2, 2))
        out["confidence"].append(m.confidence.reshape(h, w))
        out["valid"].append(m.valid.reshape(h, w))
    matcher.close()
    return {k: np.stack(v) for k, v in out.items()}


def test_the_graph_has_no_cond_variable_or_batch_norm(exported):
    _, out = exported
    model = ServingModel(out)
    ops = {node.op for node in model.graph.as_graph_def().node}
    model.close()
    assert not ops & set(FORBIDDEN_OPS), ops & set(FORBIDDEN_OPS)
    assert "Conv2D" in ops and "Placeholder" in ops
    assert sorted(model.signatures) == ["interpolate", "match"]
    assert sorted(model.signatures["match"][0]) == ["frame_t", "frame_t2"]
    assert sorted(model.signatures["match"][1]) == ["confidence", "flow", "position", "valid"]


def test_saved_model_equals_the_library_at_any_size(exported):
    """Sizes of one and of two pyramid levels (64x96: the export's second level in use),
    a batch of two pairs against the matcher one pair at a time."""
    checkpoint, out = exported
    spec, weights = _library(checkpoint)
    model = ServingModel(out)
    rng = np.random.RandomState(0)
    for h, w in SIZES + [(64, 96)]:
        a, b = rng.rand(2, 2, h, w, 3).astype(np.float32)  # a batch of two pairs
        predictor = Predictor(spec, h, w, weights)
        expected = predictor.predict(np.concatenate([a, b], axis=-1))
        predictor.close()
        np.testing.assert_allclose(model.interpolate(a, b), expected, atol=1e-5)
        got, ref = model.match(a, b), _matched(checkpoint, a, b)
        np.testing.assert_allclose(got["position"], ref["position"], atol=0.01)
        np.testing.assert_allclose(got["flow"], ref["position"][..., 1, :] -
                                   ref["position"][..., 0, :], atol=0.02)
        np.testing.assert_allclose(got["confidence"], ref["confidence"], atol=1e-3)
        assert np.mean(got["valid"] == ref["valid"]) > 0.99
    model.close()


def test_onnx_equals_the_library(exported):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    checkpoint, out = exported
    spec, weights = _library(checkpoint)
    rng = np.random.RandomState(1)
    interpolate = ort.InferenceSession(os.path.join(out, "onnx", "interpolate.onnx"),
                                       providers=["CPUExecutionProvider"])
    match = ort.InferenceSession(os.path.join(out, "onnx", "match.onnx"),
                                 providers=["CPUExecutionProvider"])
    names = [o.name.split(":")[0].split("/")[-1] for o in match.get_outputs()]
    for h, w in SIZES + [(64, 96)]:
        a, b = rng.rand(2, 1, h, w, 3).astype(np.float32)
        predictor = Predictor(spec, h, w, weights)
        expected = predictor.predict(np.concatenate([a, b], axis=-1))
        predictor.close()
        middle = interpolate.run(None, {"frame_t:0": a, "frame_t2:0": b})[0]
        np.testing.assert_allclose(middle, expected, atol=1e-5)
        got = dict(zip(names, match.run(None, {"frame_t:0": a, "frame_t2:0": b})))
        ref = _matched(checkpoint, a, b)
        np.testing.assert_allclose(got["position"], ref["position"], atol=0.01)
        np.testing.assert_allclose(got["confidence"], ref["confidence"], atol=1e-3)


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
    assert sorted(model.signatures) == ["interpolate"]  # no kernel head: no match
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
    checkpoint, out = exported
    (tmp_path / "vidcorr.py").write_text("raise ImportError('vidcorr must not be needed')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in sys.path if p and os.path.isdir(p)
                           and not os.path.isdir(os.path.join(p, "vidcorr"))]))
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "serving_example.py"), out,
         os.path.join(ROOT, "examples", "cockatoo_262.png"),
         os.path.join(ROOT, "examples", "cockatoo_264.png"), "--runtime", runtime,
         "--out", str(tmp_path / "example.flo")], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True, timeout=300, env=env,
        cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "median flow t -> t+2" in proc.stdout
    # the .flo vidcorr-correspond writes at stride 1 (the export's levels and refinement:
    # correspond_pairs, what the command runs, with the options the export was made with)
    from vidcorr.apps.correspond import correspond_pairs, list_pairs
    from vidcorr.io.flowio import read_flo
    pairs = list_pairs([os.path.join(ROOT, "examples", "cockatoo_26%d.png" % i) for i in (2, 4)])
    matcher = Matcher(checkpoint, OPTIONS, levels=LEVELS)
    results = correspond_pairs(pairs, str(tmp_path / "lib"), matcher, stride=1, progress=False)
    matcher.close()
    assert [(r.name, r.error) for r in results] == [("cockatoo_262__cockatoo_264", None)]
    lib = read_flo(os.path.join(str(tmp_path / "lib"), "cockatoo_262__cockatoo_264.flo"))
    example = read_flo(str(tmp_path / "example.flo"))
    both = np.isfinite(lib[..., 0]) & np.isfinite(example[..., 0])
    assert np.mean(np.isfinite(lib[..., 0]) == np.isfinite(example[..., 0])) > 0.99
    assert np.mean(np.abs(lib[both] - example[both]).max(-1) < 0.01) > 0.99


def test_the_input_contract_is_checked_by_the_wrapper_and_in_the_graph(exported):
    _, out = exported
    model = ServingModel(out)
    ok = np.full((1, 32, 48, 3), 0.5, np.float32)
    assert model.interpolate(ok, ok).shape == (1, 32, 48, 3)
    cases = [((ok * 255, ok), "0-255 data"), ((ok[:, :16, :16], ok[:, :16, :16]), "at least 32"),
             ((ok, ok[:, :, :40]), "same shape"), ((ok[:0], ok[:0]), "empty batch"),
             ((ok[:, :8, :8], ok[:, :8, :8]), "at least 32"),
             ((np.full_like(ok, np.nan), ok), "NaN")]
    for entry in ("interpolate", "match"):
        for (a, b), message in cases:
            with pytest.raises(UserError, match=message) as err:
                getattr(model, entry)(a, b)
            assert "\n" not in str(err.value)
    # the graph itself refuses what the wrapper would: the SavedModel run without vidcorr
    from vidcorr.compat import tf
    inputs, outputs = model.signatures["interpolate"]
    for (a, b), message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            model.sess.run(outputs, {inputs["frame_t"]: a, inputs["frame_t2"]: b})
        assert message.replace("at least 32", "at least 32 pixels") in str(err.value), message
    model.close()


def test_a_full_disk_is_one_line_and_leaves_no_folders(exported, tmp_path, monkeypatch):
    from vidcorr.apps import serving
    from vidcorr.compat import tf
    from tests.test_errors import TF2_FULL_DISK

    checkpoint, out = exported
    fresh = tmp_path / "new" / "deeper" / "model"

    def full(*args):
        raise tf.errors.ResourceExhaustedError(None, None, TF2_FULL_DISK)
    monkeypatch.setattr(serving, "_write_saved_model", full)
    with pytest.raises(UserError) as err:
        export_serving(checkpoint, str(fresh), options=OPTIONS, max_levels=1,
                       log=lambda m: None)
    assert str(err.value) == "cannot write %s: No space left on device" % fresh
    assert not (tmp_path / "new").exists()  # no empty parents left
    # the swap that keeps an earlier export: tests/io/test_files.py (replace_folder)


def test_the_serving_example_refuses_what_it_cannot_do(exported, tmp_path):
    import shutil
    import subprocess
    import sys

    _, out = exported
    frames = [os.path.join(ROOT, "examples", n) for n in ("cockatoo_262.png", "cockatoo_264.png")]
    from PIL import Image
    small = str(tmp_path / "small.png")
    Image.open(frames[1]).resize((64, 40)).save(small)
    tiny = str(tmp_path / "tiny.png")
    Image.open(frames[1]).resize((20, 20)).save(tiny)
    saved_only = str(tmp_path / "saved_only")
    shutil.copytree(out, saved_only, ignore=shutil.ignore_patterns("onnx"))

    def run(export, a, b, runtime="onnx"):
        return subprocess.run([sys.executable, os.path.join(ROOT, "examples",
                                                            "serving_example.py"),
                               export, a, b, "--runtime", runtime,
                               "--out", str(tmp_path / "x.flo")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=300)
    for args, message in (((out, frames[0], small), "the frames differ in size"),
                          ((out, tiny, tiny), "needs at least 32 pixels a side"),
                          ((saved_only,) + tuple(frames), "has no onnx/match.onnx")):
        proc = run(*args)
        assert proc.returncode == 1 and proc.stderr.startswith("error: "), proc.stderr
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not (tmp_path / "x.flo").exists()


def test_the_packaged_model_served_recovers_a_known_motion(tmp_path):
    """End to end as a user serves it: the packaged model exported as a SavedModel, a
    textured pair in a known sub-pixel translation, the served flow against the motion."""
    from vidcorr.readout.matching import DEFAULT_MODEL
    from vidcorr.training.synthetic import moving_triplet

    out = str(tmp_path / "served")
    export_serving(DEFAULT_MODEL, out, formats=("saved_model",), options=OPTIONS,
                   max_levels=LEVELS, log=lambda m: None)
    frames, (vy, vx) = moving_triplet(np.random.RandomState(5), 64, 96, velocity=(0.8, -1.3))
    model = ServingModel(out)
    got = model.match(frames[None, 0], frames[None, 2])
    model.close()
    inner = (0, slice(8, 56), slice(8, 88))  # away from the border
    flow, valid = got["flow"][inner], got["valid"][inner]  # [48, 80, 2], [48, 80]
    err = np.hypot(flow[..., 0] - 2 * vx, flow[..., 1] - 2 * vy)[valid]  # t -> t+2: 2 v
    assert valid.mean() > 0.8 and np.median(err) < 0.1 and np.mean(err < 0.25) > 0.95, (
        valid.mean(), np.median(err), np.mean(err < 0.25))  # measured: 1.0, 0.042, 1.0
