"""The micro-studies' shared timing: one graph's output in TensorFlow and in onnxruntime.

Used by ``elementwise_costs.py``, ``pack_forms.py``, ``channel_mean_forms.py`` and
``sweep_forms.py`` (run from the project root with ``PYTHONPATH=.``).
"""
import os
import tempfile
import time

import numpy as np
import onnxruntime
import tf2onnx

from vidcorr.compat import tf


def _median_seconds(run, repeats):
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def time_both(graph, out, feed, repeats=7):
    """``out`` of ``graph`` fed ``feed`` ({placeholder: array}) in a TensorFlow session and,
    converted by tf2onnx (opset 13), in onnxruntime, one thread each, the median of
    ``repeats`` runs after a warm-up.

    Returns:
      ``(tf_seconds, ort_seconds, tf_value, ort_value)``.
    """
    config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.Session(graph=graph, config=config) as sess:
        tf_value = sess.run(out, feed)
        tf_seconds = _median_seconds(lambda: sess.run(out, feed), repeats)
    path = os.path.join(tempfile.mkdtemp(), "graph.onnx")
    tf2onnx.convert.from_graph_def(graph.as_graph_def(add_shapes=True),
                                   input_names=[p.name for p in feed],
                                   output_names=[out.name], opset=13, output_path=path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ort_feed = {p.name: v for p, v in feed.items()}
    ort_value = session.run(None, ort_feed)[0]
    ort_seconds = _median_seconds(lambda: session.run(None, ort_feed), repeats)
    return tf_seconds, ort_seconds, tf_value, ort_value
