"""Serving export: a model as a cond-free SavedModel and ONNX files that run without vidcorr.

:func:`export_serving` writes a folder::

    OUT/saved_model/     a TF1-style SavedModel (tag "serve"): loads in TensorFlow 1.15
                         (tf.saved_model.loader.load) and 2.x (tf.saved_model.load)
    OUT/onnx/interpolate.onnx, OUT/onnx/flow.onnx    (format "onnx", via tf2onnx)
    OUT/serving.json     the entry points, their tensors and the model's settings
    OUT/card.json        the model card (the exported model's, or one made here)

The graph is the *inference* network: batch norm folded into the convolutions
(:func:`vidcorr.readout.inference.fold_batch_norm`), weights as constants (no
variables), no ``tf.cond`` (no ``Switch``/``Merge``), no quantize switch (a
quantized model's weights are stored fake-quantized, as matching uses them).
Two entry points, each for a batch of pairs of any size (at least
``MIN_SIZE`` pixels a side; the graph pads to a multiple of 32 by reflection,
as the library does):

* ``interpolate``: ``frame_t``, ``frame_t2`` ``[B, H, W, 3]`` float in [0, 1] ->
  ``middle`` ``[B, H, W, 3]``;
* ``flow`` (networks with the kernel head): the blend-weight read-out at one
  pyramid level. Inputs ``frame_t``, ``frame_t2`` and ``fields`` ``[B, H, W, 4]``:
  the displacements ``(d1x, d1y, d3x, d3y)`` by which the network sees frame t at
  ``p + d1(p)`` and frame t+2 at ``p + d3(p)`` (zeros for a single level). Outputs
  ``position`` ``[B, H, W, 2, 2]``, each pixel's ``(x, y)`` in frame t and frame t+2
  (the warp undone), ``peak`` ``[B, H, W, 2]``, each frame's largest blend weight
  over its share, and ``confidence`` ``[B, H, W]``, the smaller peak share.

The coarse-to-fine pyramid is not in the graph (its smoothing and level sizes
are host-side choices): a caller runs ``flow`` on the coarsest level with zero
fields, upsamples ``position - pixel`` (times the scale) to the next level and
passes it as ``fields`` there (``docs/serving.md``). vidcorr's own match
confidence multiplies ``confidence`` by the image texture at both ends
(:mod:`vidcorr.readout.confidence`).
"""

import dataclasses
import json
import os
import shutil

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError, first_line
from vidcorr.io import rundir
from vidcorr.io.files import (atomic_write, check_replaceable, os_reason, publish,
                              staging_folder)
from vidcorr.model.network import mind
from vidcorr.model.spec import MODEL_SCOPE
from vidcorr.readout.blend import (blend_moments, reflect_positions, sample_bilinear_batch)
from vidcorr.readout.inference import find_model, fold_batch_norm, load_folded_weights
from vidcorr.readout.options import DEFAULT_TEMPERATURE, MIN_SIZE

__all__ = ["FORMATS", "SAVED_MODEL_DIR", "ONNX_DIR", "SERVING_FILE", "build_serving_graph",
           "export_serving", "ServingModel", "FORBIDDEN_OPS"]

FORMATS = ("saved_model", "onnx")
SAVED_MODEL_DIR = "saved_model"
ONNX_DIR = "onnx"
SERVING_FILE = "serving.json"
ONNX_OPSET = 15
# Ops a serving graph must not hold: control flow of a tf.cond, variables, and
# batch norm (folded away; a training-mode one would use the batch's statistics).
FORBIDDEN_OPS = ("Switch", "Merge", "RefSwitch", "RefMerge", "Variable", "VariableV2",
                 "VarHandleOp", "ReadVariableOp", "FusedBatchNorm", "FusedBatchNormV2",
                 "FusedBatchNormV3")


def _pixels(batch_shape):
    """Each pixel's ``(x, y)`` as ``[1, H, W, 2]`` float for a ``tf.shape`` of ``[B, H, W, C]``."""
    ys, xs = tf.meshgrid(tf.range(batch_shape[1]), tf.range(batch_shape[2]), indexing="ij")
    return tf.cast(tf.stack([xs, ys], axis=-1), tf.float32)[None]  # [1, H, W, 2]


def _flow(spec, frame_t, frame_t2, fields, temperature):
    """The blend-weight read-out of one level, for any size: ``(position, peak, confidence)``."""
    k = spec.kernel_size
    shape = tf.shape(frame_t)
    h, w = shape[1], shape[2]
    pixels = _pixels(shape)  # [1, H, W, 2]
    d1, d3 = fields[..., :2], fields[..., 2:]  # [B, H, W, 2] each
    warped = tf.concat([sample_bilinear_batch(frame_t, pixels + d1),
                        sample_bilinear_batch(frame_t2, pixels + d3)], axis=3)  # [B, H, W, 6]
    endpoints = {}
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        mind(warped, False, spec=spec, folded=True, name=MODEL_SCOPE, endpoints=endpoints)
    top, left, _, _ = endpoints["crop"]
    logits = endpoints["logits"][:, top:top + h, left:left + w, :]  # [B, H, W, 2K^2]
    _, _, centroid, peak = blend_moments(tf.reshape(logits, [-1, 2 * k * k]), k, temperature)
    pixel_shape = shape[:3]  # [B, H, W] as one tensor: ONNX wants at most one -1
    centroid = tf.reshape(centroid, tf.concat([pixel_shape, [2, 2]], 0))  # [B, H, W, 2, 2]
    found = []
    for f, d in enumerate((d1, d3)):
        q = reflect_positions(pixels + centroid[:, :, :, f], w, h)  # in the warped frame
        found.append(q + sample_bilinear_batch(d, q))  # the warp undone: q + d(q)
    position = tf.identity(tf.stack(found, axis=3), "position")  # [B, H, W, 2, 2]
    peak = tf.reshape(peak, tf.concat([pixel_shape, [2]], 0), name="peak")  # [B, H, W, 2]
    confidence = tf.reduce_min(peak, axis=3, name="confidence")  # [B, H, W]
    return position, peak, confidence


def build_serving_graph(spec, weights, temperature=DEFAULT_TEMPERATURE):
    """The frozen inference graph of both entry points.

    Args:
      spec: the :class:`vidcorr.model.spec.NetworkSpec`.
      weights: folded ``{name: array}`` (:func:`vidcorr.readout.inference.fold_batch_norm`).
      temperature: the blend-weight read-out's softmax temperature.

    Returns:
      ``(graph_def, signatures)``: a ``GraphDef`` with the weights as constants, and
      ``{entry point: {"inputs": {name: tensor name}, "outputs": {name: tensor name}}}``.
    """
    graph = tf.Graph()
    with graph.as_default():
        frame_t = tf.placeholder(tf.float32, [None, None, None, 3], "frame_t")
        frame_t2 = tf.placeholder(tf.float32, [None, None, None, 3], "frame_t2")
        pair = tf.concat([frame_t, frame_t2], axis=3)  # [B, H, W, 6]
        middle = tf.identity(mind(pair, False, spec=spec, folded=True, name=MODEL_SCOPE),
                             "middle")  # [B, H, W, 3]
        frames = {"frame_t": frame_t.name, "frame_t2": frame_t2.name}
        signatures = {"interpolate": {"inputs": dict(frames), "outputs": {"middle": middle.name}}}
        if spec.kernel_size:
            fields = tf.placeholder(tf.float32, [None, None, None, 4], "fields")
            outputs = _flow(spec, frame_t, frame_t2, fields, temperature)
            signatures["flow"] = {
                "inputs": dict(frames, fields=fields.name),
                "outputs": {t.op.name: t.name for t in outputs}}
        with tf.Session(graph=graph) as sess:
            load_folded_weights(sess, weights)
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
        tf2onnx.convert.from_graph_def(
            graph_def, input_names=list(s["inputs"].values()),
            output_names=list(s["outputs"].values()), opset=ONNX_OPSET,
            output_path=os.path.join(folder, name + ".onnx"))


def export_serving(run, out, formats=("saved_model",), temperature=DEFAULT_TEMPERATURE,
                   log=print):
    """Exports a run or model folder for serving (see the module docstring).

    Args:
      run: run directory, exported model folder or checkpoint prefix.
      out: the folder to write: new, empty or an earlier serving export (replaced
        atomically); never a run or a model folder.
      formats: ``"saved_model"`` and/or ``"onnx"`` (the ONNX files are converted
        from the SavedModel's graph, which is always written).
      temperature: the ``flow`` entry point's softmax temperature.
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
    graph_def, signatures = build_serving_graph(spec, fold_batch_norm(values), temperature)
    config = rundir.read_config(prefix)
    card_path = os.path.join(os.path.dirname(prefix), "card.json")
    description = {
        "source_checkpoint": os.path.basename(os.path.dirname(os.path.abspath(prefix))) + "/" +
        os.path.basename(prefix),
        "step": rundir.checkpoint_step(prefix),
        "network": {k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in dataclasses.asdict(spec).items()},
        "quantized": bool(config and config.model.quantize),
        "temperature": float(temperature), "min_size": MIN_SIZE, "tag": "serve",
        "entry_points": signatures, "formats": ["saved_model"] + (
            ["onnx"] if "onnx" in formats else []),
    }
    with staging_folder(out) as staging:
        try:
            _write_saved_model(graph_def, signatures, os.path.join(staging, SAVED_MODEL_DIR))
            if "onnx" in formats:
                _write_onnx(graph_def, signatures, os.path.join(staging, ONNX_DIR))
            if os.path.isfile(card_path):
                shutil.copyfile(card_path, os.path.join(staging, "card.json"))
            atomic_write(os.path.join(staging, SERVING_FILE),
                         json.dumps(description, indent=2, sort_keys=True))
            for folder, dirs, files in os.walk(staging):
                for name in dirs + files:
                    path = os.path.join(folder, name)
                    publish(path, path)  # the modes a plain write would give
            _check_out(out)
            if os.path.isdir(out):
                shutil.rmtree(out)
            publish(staging, out)
        except OSError as err:
            raise UserError("cannot write %s: %s" % (out, os_reason(err)))
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
        return self.sess.run(outputs, {inputs[k]: np.asarray(v, np.float32)
                                       for k, v in feeds.items()})

    def interpolate(self, frame_t, frame_t2):
        """Middle frames ``[B, H, W, 3]`` of ``[B, H, W, 3]`` float pairs in [0, 1]."""
        return self._run("interpolate", {"frame_t": frame_t, "frame_t2": frame_t2})["middle"]

    def flow(self, frame_t, frame_t2, fields=None):
        """``{"position", "peak", "confidence"}`` of the ``flow`` entry point (one level)."""
        frame_t = np.asarray(frame_t, np.float32)
        if fields is None:
            fields = np.zeros(frame_t.shape[:3] + (4,), np.float32)
        return self._run("flow", {"frame_t": frame_t, "frame_t2": frame_t2, "fields": fields})

    def close(self):
        """Releases the session."""
        if self.sess is not None:
            self.sess.close()
            self.sess = None
