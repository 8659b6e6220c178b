"""The engine every per-pixel gradient in vidcorr runs on: one backward pass, one loop.

Two front ends ask for the input gradients of thousands of output pixels: the matcher's
exact read-out (:class:`vidcorr.readout.sensitivity.gradients.SensitivityGraph`: MIND,
with its reflect fold, its kernel-head term and its peak reductions) and
:class:`vidcorr.PixelGradients` (any frozen network, with windows and its reductions).
Both build their backward pass and walk their pixels with the two pieces here, so a
speed-up or a fix of either reaches both:

* :class:`PixelBackward` chooses the batched backward pass once per network and builds
  it for a chunk of pixels: the graph transposed into forward ops over the chunk
  (:class:`vidcorr.readout.sensitivity.backward.BatchedVJP`, on windows around the
  pixels) where every op on the path has a rule; else ``tf.gradients`` vectorised over
  the chunk's one-pixel cotangents by ``tf.vectorized_map`` (pfor); else, where pfor
  cannot convert an op (TensorFlow 1.15 has fewer converters), ``tf.gradients`` in a
  ``tf.map_fn``. The forward pass is shared by the chunk's pixels in every case.
* :func:`chunk_loop` walks a fed list of pixels of any length in a ``tf.while_loop``,
  one batched backward pass per chunk, writing each chunk's reductions to tensor
  arrays: one ``sess.run`` computes the forward pass once for all its pixels (feeding
  one chunk per ``sess.run`` recomputes it for every chunk).
"""

from vidcorr.compat import tf
from vidcorr.errors import first_line
from vidcorr.readout.sensitivity.backward import BatchedVJP, UnsupportedGraph
from vidcorr.readout.sensitivity.transpose import NOT_DIFFERENTIABLE

__all__ = ["BACKWARDS", "PixelBackward", "chunk_loop"]

BACKWARDS = ("auto", "transpose", "pfor", "loop")


class PixelBackward(object):
    """The batched input gradient of one-pixel cotangents of ``y``, for chunks of pixels.

    Build it outside any loop (the transposed pass derives its masks from the forward
    pass once per ``sess.run``), call it inside one, once per chunk.

    Args:
      y: the output ``[1, h, w, c]``, static shape.
      x: the input ``[1, H, W, C]``, static shape.
      backward: ``"auto"`` (transposed if every op has a rule, else pfor, else the loop),
        ``"transpose"``, ``"pfor"`` (the loop where pfor cannot convert is an error) or
        ``"loop"``.

    Attributes:
      method: the pass in use, ``"transpose"``, ``"pfor"`` or ``"loop"``; a pfor that
        cannot convert an op turns into ``"loop"`` when the pass is first built.

    Raises:
      UnsupportedGraph: for ``backward="transpose"`` on a graph with an op it cannot
        transpose, or for an output that does not depend on the input.
      ValueError: for an unknown ``backward``.
    """

    def __init__(self, y, x, backward="auto"):
        if backward not in BACKWARDS:
            raise ValueError("backward must be one of %s, got %r" % (", ".join(BACKWARDS),
                                                                     backward))
        self.y, self.x, self._asked = y, x, backward
        self._transposed = None
        if backward in ("auto", "transpose"):
            try:
                self._transposed = BatchedVJP(y, x)
            except UnsupportedGraph:
                if backward == "transpose":
                    raise
        if self._transposed is None and not _depends(y, x):
            raise UnsupportedGraph("%s does not depend on %s" % (y.name, x.name))
        self.method = ("transpose" if self._transposed is not None else
                       "loop" if backward == "loop" else "pfor")

    def __call__(self, rows, cols, values, windowed=False, density=None):
        """``d(sum_c values[k, c] y[0, rows[k], cols[k], c]) / dx`` for a chunk of pixels.

        Args:
          rows: int32 ``[K]`` rows of ``y``.
          cols: int32 ``[K]`` columns.
          values: ``[K, c]`` each pixel's cotangent over the output channels.
          windowed: the transposed pass may return a
            :class:`vidcorr.readout.sensitivity.windows.Window` (where it stays windowed up
            to the input).
          density: where the transposed pass goes dense
            (:class:`vidcorr.readout.sensitivity.memory.Density`; default its default).

        Returns:
          ``[K, H, W, C]``, or a Window of it.

        Raises:
          UnsupportedGraph: for ``backward="pfor"`` where pfor cannot convert an op.
        """
        if self._transposed is not None:
            return self._transposed.points(values, rows, cols, windowed=windowed,
                                           density=density)
        h, w = self.y.shape.as_list()[1:3]
        cotangents = (tf.one_hot(rows, h)[:, :, None, None] * tf.one_hot(cols, w)[:, None, :, None]
                      * values[:, None, None, :])  # [K, h, w, c]
        one = lambda g: tf.gradients(self.y, self.x, grad_ys=g[None])[0][0]  # noqa: E731
        if self.method == "pfor":
            try:
                return tf.vectorized_map(one, cotangents)  # [K, H, W, C]
            except (ValueError, NotImplementedError) as err:  # an op pfor cannot convert
                if self._asked == "pfor":
                    raise UnsupportedGraph(first_line(err))
                self.method = "loop"
        return tf.map_fn(one, cotangents)  # [K, H, W, C], one pixel per iteration


def _depends(y, x):
    """Whether a differentiable path of floating tensors leads from ``x`` to ``y``.

    The walk ``tf.gradients`` makes, without building the gradient graph it would leave
    behind unused.
    """
    seen, stack = set(), [y]
    while stack:
        t = stack.pop()
        if t.name == x.name:
            return True
        if t.name in seen or not t.dtype.is_floating or t.op.type in NOT_DIFFERENTIABLE:
            continue
        seen.add(t.name)
        stack.extend(t.op.inputs)
    return False


def chunk_loop(pixels, chunk, body, dtypes):
    """Runs ``body`` over a fed list of pixels, ``chunk`` at a time, in one graph loop.

    Args:
      pixels: a list of int32 ``[N]`` tensors (say rows and columns), ``N`` known at run
        time; they are padded with zeros to a whole number of chunks.
      chunk: pixels per iteration, a Python int or an int32 scalar tensor (fed at run time).
      body: ``body(*chunk_pixels) -> {name: [chunk, ...] tensor}``, built once, run once
        per chunk.
      dtypes: ``{name: dtype}`` of the results ``body`` returns.

    Returns:
      ``{name: [N, ...]}``: the chunks' results in order, the padding dropped.
    """
    count = tf.shape(pixels[0])[0]
    n_chunks = (count + chunk - 1) // chunk
    padded = [tf.pad(p, [[0, n_chunks * chunk - count]]) for p in pixels]
    names = sorted(dtypes)

    def step(i, arrays):
        results = body(*[p[i * chunk:(i + 1) * chunk] for p in padded])
        return i + 1, [a.write(i, results[n]) for a, n in zip(arrays, names)]

    arrays = [tf.TensorArray(dtypes[n], size=n_chunks) for n in names]
    _, arrays = tf.while_loop(lambda i, _: i < n_chunks, step, [tf.constant(0), arrays],
                              parallel_iterations=1, back_prop=False)
    return {n: a.concat()[:count] for n, a in zip(names, arrays)}
