"""Per-pixel input gradients of any TF1 network: :class:`PixelGradients`.

The question this project grew from: for a network ``out = f(x)`` and thousands of
output pixels p, evaluate ``d(sum_c out[p, c]) / dx`` fast. The naive answer builds one
``tf.gradients`` op and runs one ``sess.run`` per pixel. :class:`PixelGradients` takes a
user's network, as a builder function or as ``(input, output)`` tensors of a graph with
its session, and

* freezes it (its variables become constants, batch norm in inference mode included)
  and imports it once into its own graph, its input mapped to a variable that holds
  the image on the device (a GPU when there is one): the image is loaded once, every
  call reads it there;
* builds the per-pixel gradient once, for a chunk of pixels at a time, on the engine
  the matcher's exact read-out runs on (:mod:`vidcorr.readout.sensitivity.engine`): by
  default the network's graph transposed into forward ops over the chunk
  (:class:`vidcorr.readout.sensitivity.backward.BatchedVJP`); for a graph with an op it
  cannot transpose, ``tf.gradients`` vectorised over the chunk's cotangents by
  ``tf.vectorized_map`` (pfor), and where pfor cannot convert an op (TF 1.15 has fewer
  converters), ``tf.gradients`` in a ``tf.map_fn``;
* crops on the device, if asked, each map to a window: the receptive field, as far as
  the transposed pass follows it (``window="auto"``: the pass itself runs on windows,
  so a pixel's cost stops growing with the image), or a given ``(h, w)`` around the
  pixel's place in the input;
* reduces on the device: the (windowed) maps ``[N, H, W, C]``, their norm over
  channels ``[N, H, W]``, only each map's peak (position, value and a sub-pixel
  centroid over its 3x3 neighbourhood), or its ``k`` largest norms and their positions;
* runs as few ``sess.run`` calls as the memory budget allows, each computing the
  forward pass once and walking its pixels chunk by chunk in a graph loop: the chunk
  size comes from the sizes of the tensors on the path from input to output, the
  pixels per ``sess.run`` from the size of their results.
"""

import numpy as np
from tqdm import tqdm

from vidcorr.compat import default_device, session_config, tf
from vidcorr.errors import UserError
from vidcorr.readout.sensitivity.backward import UnsupportedGraph
from vidcorr.readout.sensitivity.engine import BACKWARDS, PixelBackward, chunk_loop
from vidcorr.readout.sensitivity.windows import Window

__all__ = ["PixelGradients", "REDUCTIONS", "BACKWARDS"]

REDUCTIONS = ("maps", "norm", "peak", "topk")
# what each reduction returns per pixel (and "origin" for maps and norms in a window)
_RESULTS = {"maps": ("maps",), "norm": ("norm",), "topk": ("x", "y", "value"),
            "peak": ("x", "y", "peak", "around")}
MAX_CHUNK = 256
# PixelGradients' keyword settings of how it runs, and their defaults
ENGINE_DEFAULTS = {"backward": "auto", "memory_mb": 1024, "chunk": None, "device": None,
                   "threads": None}


def _check_settings(reduce, backward, window, k):
    """One-line errors for the settings of :class:`PixelGradients`."""
    if reduce not in REDUCTIONS:
        raise UserError("reduce must be one of %s, got %r" % (", ".join(REDUCTIONS), reduce))
    if backward not in BACKWARDS:
        raise UserError("backward must be one of %s, got %r" % (", ".join(BACKWARDS), backward))
    if not (window is None or window == "auto" or (
            isinstance(window, (tuple, list)) and len(window) == 2 and
            all(isinstance(v, (int, np.integer)) and v > 0 for v in window))):
        raise UserError("window must be None, 'auto' or (height, width) in pixels, got %r"
                        % (window,))
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise UserError("k must be a positive integer, got %r" % (k,))


def _frozen(network, input_shape, session, restore):
    """``(graph_def, input name, output name, input shape [1, H, W, C])`` of a network."""
    if callable(network):
        if input_shape is None or len(input_shape) != 3:
            raise UserError("a network builder needs input_shape=(height, width, channels)")
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [1] + [int(v) for v in input_shape], "input")
            y = network(x)
            if not isinstance(y, tf.Tensor):
                raise UserError("the network builder must return its output tensor, got %r"
                                % (y,))
            session = tf.Session(graph=graph, config=session_config())
            session.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            if restore is not None:
                restore(session)
        try:
            return _freeze(session, x, y)
        finally:
            session.close()
    try:
        x, y = network
    except (TypeError, ValueError):
        raise UserError("network must be a builder function or an (input, output) pair of "
                        "tensors, got %r" % (network,))
    if session is None and x.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
        raise UserError("an (input, output) pair with variables needs its session=...")
    return _freeze(session, x, y)


def _freeze(session, x, y):
    shape = x.shape
    if shape.ndims != 4 or not shape[1:].is_fully_defined() or shape.as_list()[0] not in (None, 1):
        raise UserError("the input must be 4-D [1, H, W, C] with a known H, W and C, got %s"
                        % (shape,))
    if y.shape.ndims != 4:
        raise UserError("the output must be 4-D [1, h, w, c], got %s" % (y.shape,))
    graph_def = x.graph.as_graph_def()
    if session is not None and x.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
        graph_def = tf.graph_util.convert_variables_to_constants(session, graph_def, [y.op.name])
        if x.op.name not in {node.name for node in graph_def.node}:  # pruned away
            raise UserError("the output does not depend on the input")
    return graph_def, x.name, y.name, [1] + shape.as_list()[1:]


class PixelGradients(object):
    """Per-pixel input gradients of a network, built once (see the module docstring).

    Args:
      network: a builder ``f(x [1, H, W, C]) -> out [1, h, w, c]`` (its variables are
        initialised, then ``restore(session)`` runs if given), or an ``(input, output)``
        pair of tensors of a built graph (with ``session`` holding its weights).
      input_shape: ``(H, W, C)`` for a builder.
      session: the session of an ``(input, output)`` pair.
      restore: for a builder, a function of the session that loads its weights.
      reduce: ``"maps"``, ``"norm"`` (L2 over the input's channels), ``"peak"`` or
        ``"topk"`` (the ``k`` largest norms).
      backward (in ``engine``): ``"auto"`` (transposed if the graph allows, else pfor,
        else the loop), ``"transpose"``, ``"pfor"`` or ``"loop"`` (``tf.gradients`` in a
        ``tf.map_fn`` over the chunk: any graph, the slowest).
      window: None (whole maps), ``"auto"`` (the receptive field as the transposed pass
        follows it; the whole image where the pass goes dense or runs pfor) or
        ``(h, w)`` centred on the pixel's place in the input (``x (W / w_out)``; the map
        outside it is dropped). Windows reach beyond the image where the pixel is near
        its border: the part outside is zero.
      k: the number of positions of ``"topk"``.
      **engine: how it runs, each optional: ``backward`` (above), ``memory_mb`` (the
        budget of one chunk's backward pass and of one ``sess.run``'s results, default
        1024), ``chunk`` (pixels per batched backward pass; default: from ``memory_mb``),
        ``device`` (default: GPU if any, else
        CPU), ``threads`` (intra-op threads).

    Attributes:
      backward: the backward pass in use (``"transpose"``, ``"pfor"`` or ``"loop"``).
      chunk: pixels per batched backward pass (an iteration of the graph loop).
      per_run: pixels per ``sess.run`` (a whole number of chunks).
      output_shape: ``(h, w, c)``.
      window_shape: ``(h, w)`` of the maps returned.

    Raises:
      UserError: one line, for a network that is not 4-D in and out, an output that does
        not depend on the input, or a bad setting.
    """

    def __init__(self, network, input_shape=None, session=None, restore=None, reduce="norm",
                 window=None, k=5, **engine):
        unknown = sorted(set(engine) - set(ENGINE_DEFAULTS))
        if unknown:
            raise UserError("unknown setting(s) %s; PixelGradients takes %s" % (
                ", ".join(unknown), ", ".join(["reduce", "window", "k"] + list(ENGINE_DEFAULTS))))
        engine = dict(ENGINE_DEFAULTS, **engine)
        backward, memory_mb, chunk = engine["backward"], engine["memory_mb"], engine["chunk"]
        _check_settings(reduce, backward, window, k)
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, (int, float)) or \
                memory_mb <= 0 or not (chunk is None or (isinstance(chunk, (int, np.integer))
                                                         and chunk > 0)):
            raise UserError("memory_mb must be a positive number and chunk None or a positive "
                            "integer, got %r and %r" % (memory_mb, chunk))
        graph_def, x_name, y_name, shape = _frozen(network, input_shape, session, restore)
        self.reduce, self.k, self.input_shape = reduce, int(k), tuple(shape[1:])
        if reduce == "topk" and self.k > shape[1] * shape[2]:
            raise UserError("k must be at most the input's %d pixels, got %d"
                            % (shape[1] * shape[2], self.k))
        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(engine["device"] or default_device()):
            self.image = tf.Variable(tf.zeros(shape), trainable=False, name="image")
            x = tf.identity(self.image.read_value(), name="x")  # [1, H, W, C]
            y = tf.import_graph_def(graph_def, input_map={x_name: x},
                                    return_elements=[y_name], name="net")[0]
            if not y.shape.is_fully_defined():
                raise UserError("the output's shape must be known, got %s" % (y.shape,))
            self.output_shape = tuple(y.shape.as_list()[1:])
            self.rows = tf.placeholder(tf.int32, [None], "rows")
            self.cols = tf.placeholder(tf.int32, [None], "cols")
            self.chunk_size = tf.placeholder(tf.int32, [], "chunk")
            self.outputs = self._build(x, y, backward, window, chunk, memory_mb)
            self.sess = tf.Session(graph=self.graph, config=session_config(engine["threads"]))
            self.sess.run(self.image.initializer)
        self.graph.finalize()

    def _build(self, x, y, backward, window, chunk, memory_mb):
        """The reduced results of the fed pixels, a chunk per iteration of one graph loop
        (:func:`vidcorr.readout.sensitivity.engine.chunk_loop`); sets ``backward``,
        ``window_shape`` and ``chunk``."""
        try:
            engine = PixelBackward(y, x, backward)
        except UnsupportedGraph as err:
            if "does not depend" in str(err):
                raise UserError("the output does not depend on the input")
            raise UserError("backward 'transpose' cannot run this network: %s" % err)
        area = [None]  # the input window's pixels, where the pass stays windowed

        def body(rows, cols):
            values = tf.ones(tf.stack([tf.shape(rows)[0], self.output_shape[-1]]))  # [K, c]
            try:
                grads = engine(rows, cols, values, windowed=window == "auto")
            except UnsupportedGraph as err:
                raise UserError("backward 'pfor' cannot run this network: %s" % err)
            if not isinstance(grads, Window):  # pfor under TF 1.15 loses the static shape
                grads.set_shape([None] + list(self.input_shape))
            maps, origin = self._windowed(grads, window, rows, cols)  # [K, h, w, C], [K, 2]
            self.window_shape = tuple(maps.shape.as_list()[1:3])
            area[0] = grads.h * grads.w if isinstance(grads, Window) else None
            return self._reduced(maps, origin, window is not None)

        names = _RESULTS[self.reduce] + (
            ("origin",) if window is not None and self.reduce in ("maps", "norm") else ())
        dtypes = {n: tf.int32 if n in ("x", "y", "origin") else tf.float32 for n in names}
        outputs = chunk_loop([self.rows, self.cols], self.chunk_size, body, dtypes)
        self.backward = engine.method  # known once the loop's body is built
        per_pixel = self._pixel_bytes(3 if engine.method == "transpose" else 4, area[0])
        self.chunk = int(chunk or max(1, min(MAX_CHUNK, memory_mb * 2 ** 20 // per_pixel)))
        # pixels per sess.run: as many as keep their results within the budget too
        (h, w), c = self.window_shape, self.input_shape[2]
        result = 4 * {"maps": h * w * c + 2, "norm": h * w + 2, "topk": 3 * self.k,
                      "peak": 12}[self.reduce]
        self.per_run = max(1, memory_mb * 2 ** 20 // result // self.chunk) * self.chunk
        return outputs

    def _windowed(self, grads, window, rows, cols):
        """``(maps [K, h, w, C], origins [K, 2] (x, y))``: the maps of the pixels at
        ``rows``, ``cols`` ``[K]`` in their windows."""
        if isinstance(grads, Window):  # the transposed pass stayed windowed to the input
            return grads.data * grads.valid(), tf.stack([grads.ox, grads.oy], axis=1)
        zeros = tf.zeros_like(rows)
        if window is None or window == "auto":
            return grads, tf.stack([zeros, zeros], axis=1)
        (height, width), (h, w) = self.input_shape[:2], self.output_shape[:2]
        oy = (2 * rows + 1) * height // (2 * h) - window[0] // 2  # [K] the centre, less half
        ox = (2 * cols + 1) * width // (2 * w) - window[1] // 2
        rows = oy[:, None] + tf.range(window[0])  # [K, wh]
        cols = ox[:, None] + tf.range(window[1])  # [K, ww]
        inside = (tf.cast((rows >= 0) & (rows < height), tf.float32)[:, :, None, None] *
                  tf.cast((cols >= 0) & (cols < width), tf.float32)[:, None, :, None])
        k = tf.shape(rows)[0]
        index = tf.stack([tf.tile(tf.range(k)[:, None, None], [1] + list(window)),
                          tf.tile(tf.clip_by_value(rows, 0, height - 1)[:, :, None],
                                  [1, 1, window[1]]),
                          tf.tile(tf.clip_by_value(cols, 0, width - 1)[:, None, :],
                                  [1, window[0], 1])], axis=-1)  # [K, wh, ww, 3]
        return tf.gather_nd(grads, index) * inside, tf.stack([ox, oy], axis=1)

    def _pixel_bytes(self, copies, area=None):
        """One pixel's share of a chunk's backward pass: ``copies`` of the network's largest
        activation (the cotangents alive at once as the pass goes layer by layer) and its
        map of the input, float32; with a windowed pass of ``area`` pixels at the input,
        an activation counts at most that many pixels (the windows are no larger deeper
        in the network)."""
        largest = 0
        for op in self.graph.get_operations():
            t = op.outputs[0] if op.outputs and op.name.startswith("net/") else None
            if t is not None and t.dtype == tf.float32 and t.shape.is_fully_defined():
                shape = t.shape.as_list()
                if area and len(shape) == 4:
                    shape = [min(area, shape[1] * shape[2]), shape[3]]
                largest = max(largest, int(np.prod(shape)))
        pixels = area or int(np.prod(self.input_shape[:2]))
        return 4 * (copies * largest + pixels * self.input_shape[2])

    def _reduced(self, maps, origin, windowed):
        """The device-side reduction of ``[K, h, w, C]`` maps whose windows start at
        ``origin`` ``[K, 2]`` (x, y); positions come back in the input's pixels."""
        extra = {"origin": origin} if windowed else {}
        if self.reduce == "maps":
            return dict(maps=maps, **extra)
        norm = tf.sqrt(tf.reduce_sum(tf.square(maps), axis=3))  # [K, h, w]
        if self.reduce == "norm":
            return dict(norm=norm, **extra)
        h, w = self.window_shape
        flat = tf.reshape(norm, [-1, h * w])  # [K, h w]
        if self.reduce == "topk":
            value, arg = tf.nn.top_k(flat, k=min(self.k, h * w))  # [K, k]
            return {"x": arg % w + origin[:, :1], "y": arg // w + origin[:, 1:], "value": value}
        arg = tf.argmax(flat, axis=1, output_type=tf.int32)
        py, px = arg // w, arg % w
        padded = tf.pad(norm, [[0, 0], [1, 1], [1, 1]])  # zero beyond the image
        k = tf.range(tf.shape(norm)[0])
        around = tf.stack([tf.stack([tf.gather_nd(padded, tf.stack([k, py + dy, px + dx], 1))
                                     for dx in range(3)], 1) for dy in range(3)], 1)  # [K, 3, 3]
        return {"x": px + origin[:, 0], "y": py + origin[:, 1], "peak": tf.reduce_max(flat, axis=1),
                "around": around}

    def set_input(self, image):
        """Loads the image ``[H, W, C]`` (or ``[1, H, W, C]``) onto the device, once."""
        image = np.asarray(image, np.float32)
        image = image[None] if image.ndim == 3 else image
        if image.shape[1:] != self.input_shape or image.shape[0] != 1:
            raise UserError("the image must be %s, got %s" % (list(self.input_shape),
                                                              list(image.shape)))
        self.image.load(image, self.sess)

    def grid(self, stride=4, offset=0):
        """``[N, 2]`` (x, y) output pixels on a grid of ``stride``."""
        h, w = self.output_shape[:2]
        ys, xs = np.mgrid[offset:h:stride, offset:w:stride]
        return np.stack([xs.ravel(), ys.ravel()], axis=1)

    def run(self, points=None, stride=4, progress=False):
        """Gradients of output pixels w.r.t. the input loaded by :meth:`set_input`.

        Args:
          points: ``[N, 2]`` integer (x, y) output pixels (default: :meth:`grid`).
          stride: the grid's stride when ``points`` is None.
          progress: a progress bar over the pixels (in about 20 runs).

        Returns:
          ``{"maps": [N, H, W, C]}``, ``{"norm": [N, H, W]}`` (with a window: ``[N, h, w,
          ...]`` and ``"origin"`` ``[N, 2]``, the (x, y) of each window's top left in
          the input, which may lie outside it), for ``"peak"`` ``"x"``, ``"y"`` (the
          peak's pixel in the input), ``"peak"`` (its value) and ``"subpixel"`` ``[N, 2]``
          (x, y) (the centroid of the 3x3 neighbourhood), for ``"topk"`` ``"x"``, ``"y"``
          and ``"value"`` ``[N, k]``, the largest norm first.
        """
        points = self.grid(stride) if points is None else np.asarray(points)
        h, w = self.output_shape[:2]
        if points.ndim != 2 or points.shape[1] != 2 or points.dtype.kind not in "iu" or \
                np.any(points < 0) or np.any(points >= [w, h]):
            raise UserError("points must be [N, 2] integer (x, y) pixels of the %dx%d output"
                            % (w, h))
        per_run = self.per_run
        if progress:  # about 20 runs, so that the bar moves
            chunks = max(1, -(-len(points) // (20 * self.chunk)))
            per_run = min(per_run, chunks * self.chunk)
        parts = []
        with tqdm(total=len(points), disable=not progress, unit="px", leave=False) as bar:
            for i in range(0, len(points), per_run):
                part = points[i:i + per_run]
                parts.append(self.sess.run(self.outputs, {self.cols: part[:, 0],
                                                          self.rows: part[:, 1],
                                                          self.chunk_size: self.chunk}))
                bar.update(len(part))
        out = {k: np.concatenate([p[k] for p in parts]) for k in self.outputs}
        if self.reduce == "peak":
            around = out.pop("around")  # [N, 3, 3]
            d = np.arange(-1, 2)
            mass = np.maximum(around.sum(axis=(1, 2)), 1e-30)
            out["subpixel"] = np.stack([out["x"] + (around.sum(axis=1) * d).sum(1) / mass,
                                        out["y"] + (around.sum(axis=2) * d).sum(1) / mass], 1)
        return out

    def paste(self, windows, origin):
        """Windowed maps ``[N, h, w, ...]`` (``run``'s ``"maps"`` or ``"norm"`` with a
        window) at their ``origin`` ``[N, 2]`` (x, y) in zero maps of the input's size
        ``[N, H, W, ...]``; the parts outside the input are dropped."""
        windows = np.asarray(windows)
        n, h, w = windows.shape[:3]
        height, width = self.input_shape[:2]
        out = np.zeros((n, height + 2 * h, width + 2 * w) + windows.shape[3:], windows.dtype)
        for i, (ox, oy) in enumerate(np.asarray(origin)):  # room for windows past the border
            out[i, oy + h:oy + 2 * h, ox + w:ox + 2 * w] = windows[i]
        return out[:, h:h + height, w:w + width]

    def close(self):
        """Releases the session."""
        self.sess.close()
