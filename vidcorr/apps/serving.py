"""Serving export: a model as a cond-free SavedModel and ONNX files that run without vidcorr.

:func:`export_serving` writes a folder::

    OUT/saved_model/     a TF1-style SavedModel (tag "serve"): loads in TensorFlow 1.15
                         (tf.saved_model.loader.load) and 2.x (tf.saved_model.load)
    OUT/onnx/interpolate.onnx, OUT/onnx/match.onnx    (format "onnx", via tf2onnx)
    OUT/serving.json     the entry points, their tensors and the matcher's settings
    OUT/card.json        the model card (the exported model's, or one made here)

The graph is the *inference* network: batch norm folded into the convolutions
(:func:`vidcorr.readout.inference.fold_batch_norm`), weights as constants (no
variables), no ``tf.cond`` (no ``Switch``/``Merge``), no quantize switch (a
quantized model's weights are stored fake-quantized, as matching uses them).
Two entry points, each for a batch of pairs of any size (at least ``MIN_SIZE``
pixels a side; the network pads to a multiple of 32 by reflection, as the library
does):

* ``interpolate``: ``frame_t``, ``frame_t2`` ``[B, H, W, 3]`` float in [0, 1] ->
  ``middle`` ``[B, H, W, 3]``;
* ``match`` (networks with the kernel head): the whole matcher of the kernel
  read-out, :func:`vidcorr.readout.kernel.graph.match_ops`, the same ops
  :class:`vidcorr.Matcher` runs: the pyramid, every level's passes, the smoothing,
  the refinement on the frames and the confidence. For every pixel p of the middle
  frame: ``position`` ``[B, H, W, 2, 2]``, its ``(x, y)`` in frame t and in frame
  t+2 (clipped into the image, as :class:`vidcorr.Matches` has them); ``flow``
  ``[B, H, W, 2]``, ``position[..., 1, :] - position[..., 0, :]``, the motion
  t -> t+2 of the match through p (at the middle frame's pixels, not frame t's);
  ``confidence`` ``[B, H, W]``; ``valid`` ``[B, H, W]`` (bool), confidence at least
  the export's ``min_confidence`` and both ends inside the image.

**The input contract** of both entry points: ``frame_t`` and ``frame_t2`` of one shape
``[B, H, W, 3]``, ``B >= 1``, ``H, W >= MIN_SIZE`` (32), float32 RGB in [0, 1] (up to
``FLOAT_TOLERANCE`` outside, from resampling), finite. The SavedModel checks it in
the graph (:func:`checked_frames`; an ``InvalidArgumentError`` "assertion failed: [...]"
names the broken rule) and :class:`ServingModel` before it runs; the ONNX files cannot
(ONNX has no assertion), so code that runs them checks it itself, as
``examples/serving_example.py`` does.

The one-level ``flow`` entry point of earlier exports is gone: with the pyramid
in the graph nobody needs a level alone. The graph builds ``max_levels`` pyramid
levels and uses as many as the image's size calls for (the matcher's rule), so
sizes whose longer side exceeds ``96 * 2^(max_levels - 1)`` get ``max_levels``.
"""

import dataclasses
import json
import os
import shutil

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError, first_line
from vidcorr.io import rundir
from vidcorr.io.video import FLOAT_TOLERANCE, float_batch
from vidcorr.io.files import (atomic_write, check_replaceable, publish, replace_folder,
                              staging_folder)
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.inference import find_model, fold_batch_norm, load_folded_weights
from vidcorr.readout.kernel.blend import tempered
from vidcorr.readout.kernel.graph import match_ops
from vidcorr.readout.options import MIN_SIZE, MatchOptions

__all__ = ["FORMATS", "SAVED_MODEL_DIR", "ONNX_DIR", "SERVING_FILE", "MAX_LEVELS",
           "build_serving_graph", "checked_frames", "export_serving", "ServingModel",
           "FORBIDDEN_OPS"]

FORMATS = ("saved_model", "onnx")
SAVED_MODEL_DIR = "saved_model"
ONNX_DIR = "onnx"
SERVING_FILE = "serving.json"
ONNX_OPSET = 15
MAX_LEVELS = 6  # the match's pyramid: the matcher's own levels up to 3072 pixels a side
# Ops a serving graph must not hold: control flow of a tf.cond, variables, and
# batch norm (folded away; a training-mode one would use the batch's statistics).
FORBIDDEN_OPS = ("Switch", "Merge", "RefSwitch", "RefMerge", "Variable", "VariableV2",
                 "VarHandleOp", "ReadVariableOp", "FusedBatchNorm", "FusedBatchNormV2",
                 "FusedBatchNormV3")


def _match(spec, frame_t, frame_t2, options, max_levels):
    """The ``match`` entry point's outputs for any size: position, flow, confidence, valid."""
    out = match_ops(spec, frame_t, frame_t2, options, max_levels, unroll=True)
    shape = tf.shape(frame_t)
    size = tf.cast(tf.stack([shape[2], shape[1]]), tf.float32)  # (W, H)
    position = out["position"]  # [B, H, W, 2, 2]
    inside = tf.reduce_all((position >= -0.5) & (position <= size - 0.5), axis=[3, 4])
    position = tf.clip_by_value(position, 0.0, size - 1.0)
    valid = tf.logical_and(out["confidence"] >= options.min_confidence, inside)
    return {"position": tf.identity(position, "position"),
            "flow": tf.identity(position[..., 1, :] - position[..., 0, :], "flow"),
            "confidence": tf.identity(out["confidence"], "confidence"),
            "valid": tf.identity(valid, "valid")}


def checked_frames(frame_t, frame_t2):
    """The frames behind the input contract's checks, in the graph (see the module docstring).

    Each check is a bare ``Assert`` op with string data, which needs no ``tf.cond`` (the
    graph stays free of ``Switch``/``Merge``); each waits for the one before, so the first
    broken rule is the one reported. tf2onnx drops them: the ONNX files do not check.

    Returns:
      ``(frame_t, frame_t2)`` that can be computed only once every check passed.
    """
    with tf.name_scope("input_contract"):
        shape_t, shape_t2 = tf.shape(frame_t), tf.shape(frame_t2)
        low, high = -FLOAT_TOLERANCE, 1.0 + FLOAT_TOLERANCE
        frames = (frame_t, frame_t2)  # reduced one by one: no copy of the two joined
        finite = tf.logical_and(*[tf.reduce_all(tf.is_finite(f)) for f in frames])
        least = tf.minimum(*[tf.reduce_min(f) for f in frames])
        most = tf.maximum(*[tf.reduce_max(f) for f in frames])
        rules = [
            (tf.reduce_all(tf.equal(shape_t, shape_t2)),
             "frame_t and frame_t2 must have the same shape [B, H, W, 3]"),
            (shape_t[0] > 0, "the frames are an empty batch"),
            (tf.reduce_min(shape_t[1:3]) >= MIN_SIZE,
             "frames must be at least %d pixels on each side" % MIN_SIZE),
            (finite, "frames have NaN or infinite values"),
            (tf.logical_and(least >= low, most <= high),
             "frames must be float in [0, 1] (0-255 data? divide by 255.0)"),
        ]
        done = []
        for condition, message in rules:
            with tf.control_dependencies(done):
                done = [tf.Assert(condition, [message], name="check")]
        with tf.control_dependencies(done):
            return tf.identity(frame_t), tf.identity(frame_t2)


def build_serving_graph(spec, weights, options=None, max_levels=MAX_LEVELS):
    """The frozen inference graph of both entry points.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      weights: folded ``{name: array}`` (:func:`vidcorr.readout.inference.fold_batch_norm`).
      options: the :class:`vidcorr.readout.options.MatchOptions` of ``match``
        (default: the matcher's defaults; its ``levels``, ``passes``, ``refine`` ...).
      max_levels: the pyramid levels built into ``match``.

    Returns:
      ``(graph_def, signatures)``: a ``GraphDef`` with the weights as constants, and
      ``{entry point: {"inputs": {name: tensor name}, "outputs": {name: tensor name}}}``.
    """
    options = options if options is not None else MatchOptions()
    graph = tf.Graph()
    with graph.as_default():
        frame_t = tf.placeholder(tf.float32, [None, None, None, 3], "frame_t")
        frame_t2 = tf.placeholder(tf.float32, [None, None, None, 3], "frame_t2")
        frame_t, frame_t2 = checked_frames(frame_t, frame_t2)
        pair = tf.concat([frame_t, frame_t2], axis=3)  # [B, H, W, 6]
        middle = tf.identity(mind(pair, False, spec=spec, folded=True, name=MODEL_SCOPE),
                             "middle")  # [B, H, W, 3]
        frames = {"frame_t": "frame_t:0", "frame_t2": "frame_t2:0"}
        signatures = {"interpolate": {"inputs": dict(frames), "outputs": {"middle": middle.name}}}
        if spec.kernel_size:
            # the tempered head is the match's own: a second copy of the network's weights
            with tf.variable_scope("match"):
                outputs = _match(spec, frame_t, frame_t2, options, max_levels)
            signatures["match"] = {"inputs": dict(frames),
                                   "outputs": {k: t.name for k, t in outputs.items()}}
        with tf.Session(graph=graph) as sess:
            load_folded_weights(sess, weights)
            if spec.kernel_size:
                load_folded_weights(sess, tempered(weights, options.temperature),
                                    scope="match/" + MODEL_SCOPE, prefix="match/")
            names = [t.split(":")[0] for s in signatures.values() for t in s["outputs"].values()]
            graph_def = tf.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(add_shapes=True), names)  # shapes: for tf2onnx
    return graph_def, signatures


def _write_saved_model(graph_def, signatures, path):
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            builder = tf.saved_model.builder.SavedModelBuilder(path)
            defs = {name: tf.saved_model.signature_def_utils.predict_signature_def(
                inputs={k: graph.get_tensor_by_name(v) for k, v in s["inputs"].items()},
                outputs={k: graph.get_tensor_by_name(v) for k, v in s["outputs"].items()})
                for name, s in signatures.items()}
            builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
                                                 signature_def_map=defs,
                                                 strip_default_attrs=True)
            builder.save()


def _write_onnx(graph_def, signatures, folder):
    try:
        import tf2onnx
    except ImportError:
        raise UserError("--format onnx needs tf2onnx and onnxruntime: pip install -e .[onnx]")
    os.makedirs(folder)
    for name, s in signatures.items():
        outputs = [t.split(":")[0] for t in s["outputs"].values()]
        tf2onnx.convert.from_graph_def(  # each entry point's own part of the graph
            tf.graph_util.extract_sub_graph(graph_def, outputs),
            input_names=list(s["inputs"].values()),
            output_names=list(s["outputs"].values()), opset=ONNX_OPSET,
            output_path=os.path.join(folder, name + ".onnx"))


def export_serving(run, out, formats=("saved_model",), options=None, max_levels=MAX_LEVELS,
                   log=print):
    """Exports a run or model folder for serving (see the module docstring).

    Args:
      run: run directory, exported model folder or checkpoint prefix.
      out: the folder to write: new, empty or an earlier serving export (replaced
        atomically); never a run or a model folder.
      formats: ``"saved_model"`` and/or ``"onnx"`` (the ONNX files are converted
        from the SavedModel's graph, which is always written).
      options: the :class:`vidcorr.readout.options.MatchOptions` of the ``match`` entry
        point (default: the matcher's defaults).
      max_levels: the pyramid levels built into ``match`` (fewer: a smaller graph,
        converted faster; sizes that would use more get these).
      log: print-like.

    Returns:
      The ``serving.json`` description as a dict.

    Raises:
      UserError: for a missing checkpoint, an unknown format, an ``out`` that is
        not safe to replace, a missing tf2onnx for ONNX, or a write that fails.
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UserError("unknown export format %s; choose from checkpoint, %s"
                        % (", ".join(unknown), ", ".join(FORMATS)))
    prefix, spec, values = find_model(run)
    _check_out(out)
    options = options if options is not None else MatchOptions()
    graph_def, signatures = build_serving_graph(spec, fold_batch_norm(values), options,
                                                max_levels)
    config = rundir.read_config(prefix)
    card_path = rundir.card_path(prefix)
    description = {
        "source_checkpoint": os.path.basename(os.path.dirname(os.path.abspath(prefix))) + "/" +
        os.path.basename(prefix),
        "step": rundir.checkpoint_step(prefix),
        "network": {k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in dataclasses.asdict(spec).items()},
        "quantized": bool(config and config.model.quantize),
        "match_options": dataclasses.asdict(options), "max_levels": int(max_levels),
        "min_size": MIN_SIZE, "tag": "serve",
        "entry_points": signatures, "formats": ["saved_model"] + (
            ["onnx"] if "onnx" in formats else []),
    }
    with staging_folder(out) as staging:
        try:
            _write_saved_model(graph_def, signatures, os.path.join(staging, SAVED_MODEL_DIR))
            if "onnx" in formats:
                _write_onnx(graph_def, signatures, os.path.join(staging, ONNX_DIR))
            if os.path.isfile(card_path):
                shutil.copyfile(card_path, os.path.join(staging, rundir.CARD_FILE))
            atomic_write(os.path.join(staging, SERVING_FILE),
                         json.dumps(description, indent=2, sort_keys=True))
            for folder, dirs, files in os.walk(staging):
                for name in dirs + files:
                    path = os.path.join(folder, name)
                    publish(path, path)  # the modes a plain write would give
        except (OSError, tf.errors.OpError) as err:  # a full disk, a read-only folder
            raise UserError("cannot write %s: %s" % (out, first_line(err)))
        _check_out(out)
        replace_folder(staging, out)
    log("exported %s (step %d) for serving to %s: %s"
        % (prefix, description["step"], out, ", ".join(description["formats"])))
    return description


def _check_out(out):
    """Refuses an ``out`` whose replacement would lose anything but a serving export."""
    check_replaceable(out, lambda names: SERVING_FILE in names, "a serving export")


class ServingModel(object):
    """A serving export loaded in TensorFlow (either line), for checks and benchmarks.

    Args:
      path: the export folder.
      threads: intra-op threads (None: TensorFlow decides).

    Raises:
      UserError: for a folder that is not a complete serving export (one line).
    """

    def __init__(self, path, threads=None):
        from vidcorr.compat import session_config
        model = os.path.join(path, SAVED_MODEL_DIR)
        described = os.path.join(path, SERVING_FILE)
        if not os.path.isfile(os.path.join(model, "saved_model.pb")) or not os.path.isfile(
                described):
            raise UserError("%s is not a complete serving export (it needs %s and %s/"
                            "saved_model.pb)" % (path, SERVING_FILE, SAVED_MODEL_DIR))
        try:
            with open(described, encoding="utf-8") as f:
                self.description = json.load(f)
            self.graph = tf.Graph()
            self.sess = tf.Session(graph=self.graph, config=session_config(threads))
            with self.graph.as_default():
                meta = tf.saved_model.loader.load(self.sess, ["serve"], model)
        except Exception as err:  # a truncated protobuf raises DecodeError, others OpError
            raise UserError("cannot load serving export %s: %s" % (path, first_line(err)))
        self.signatures = {name: ({k: v.name for k, v in sig.inputs.items()},
                                  {k: v.name for k, v in sig.outputs.items()})
                           for name, sig in meta.signature_def.items()}

    def _run(self, entry, feeds):
        if entry not in self.signatures:
            raise UserError("this export has no %r entry point (it has %s)"
                            % (entry, ", ".join(sorted(self.signatures))))
        inputs, outputs = self.signatures[entry]
        frames = {k: float_batch(v, 3, k, MIN_SIZE) for k, v in feeds.items()}
        if frames["frame_t"].shape != frames["frame_t2"].shape:
            raise UserError("frame_t and frame_t2 must have the same shape, got %s and %s"
                            % (list(frames["frame_t"].shape), list(frames["frame_t2"].shape)))
        try:
            return self.sess.run(outputs, {inputs[k]: v for k, v in frames.items()})
        except tf.errors.InvalidArgumentError as err:  # the graph's own checks
            raise UserError("the %s entry point refused its input: %s" % (entry, first_line(err)))

    def interpolate(self, frame_t, frame_t2):
        """Middle frames ``[B, H, W, 3]`` of ``[B, H, W, 3]`` float pairs in [0, 1].

        Raises:
          UserError: for input outside the contract (see the module docstring).
        """
        return self._run("interpolate", {"frame_t": frame_t, "frame_t2": frame_t2})["middle"]

    def match(self, frame_t, frame_t2):
        """``{"position", "flow", "confidence", "valid"}`` of the ``match`` entry point for
        ``[B, H, W, 3]`` float pairs in [0, 1] (see the module docstring).

        Raises:
          UserError: for input outside the contract.
        """
        return self._run("match", {"frame_t": frame_t, "frame_t2": frame_t2})

    def close(self):
        """Releases the session."""
        if self.sess is not None:
            self.sess.close()
            self.sess = None
