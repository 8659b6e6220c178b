"""Batched input gradients of a batch-1 network, built from forward ops.

The matcher needs, for each of thousands of output pixels p, the gradient of
out(p) with respect to the input frames: a vector-Jacobian product (VJP) with
a one-hot cotangent. :class:`BatchedVJP` transposes the forward graph once,
for a whole batch of cotangents ``[N, ...]`` at one fixed batch-1 input:

* the forward pass runs once (batch 1) and only what the backward pass needs
  is derived from it, once per ``sess.run``: a 0/1 mask per ReLU (a 1/alpha
  one per leaky ReLU) and a first-maximum mask per 2x2 max pool;
* each convolution's input gradient is a *forward* convolution of the
  cotangents with the flipped, transposed kernel, and a transposed
  convolution's is a strided forward convolution; the N cotangents are the
  batch of these convolutions (the rules are in :mod:`vidcorr.readout.sensitivity.transpose`);
* for one-pixel cotangents (:meth:`BatchedVJP.points`) the pass runs on a
  small window around each pixel for as long as the window is cheaper than
  the whole image (:mod:`vidcorr.readout.sensitivity.windows`): through the decoder of MIND, and
  through the encoder where the image is larger than the receptive field, so
  that one pixel's cost stops growing with the image.

Why not ``tf.gradients`` under ``tf.vectorized_map`` (pfor): on TF 1.15's CPU
kernels ``Conv2DBackpropInput`` (the input gradient of a convolution) is much
slower than ``Conv2D``, which this pass uses instead, and pfor also broadcasts
every ReLU's features to the batch before ``ReluGrad``. Figures for both
lines are in ``benchmarks/bench_gradients.py``'s output and the README.

The transposition computes what ``tf.gradients`` computes, up to float
summation order. A max pool passes the gradient to the first maximum of its
window in row-major order, TensorFlow's CPU rule for ties.

It covers the op types of the MIND network and simple elementwise glue
(``Identity``, ``BiasAdd``, ``Add``, ``Sub``, ``Mul`` by a constant factor,
``ConcatV2``, ``StridedSlice``); any other op on a path from the input to the
output raises :class:`UnsupportedGraph`, so callers can fall back to pfor.
"""

from vidcorr.compat import tf
from vidcorr.readout.sensitivity.memory import DENSE_FRACTION, Density
from vidcorr.readout.sensitivity.transpose import NOT_DIFFERENTIABLE, RULES, UnsupportedGraph, batch_shape
from vidcorr.readout.sensitivity.windows import WINDOW_RULES, Window, dense, sum_cotangents

__all__ = ["UnsupportedGraph", "BatchedVJP"]


class BatchedVJP(object):
    """The input gradient of ``ys`` for a batch of cotangents, at a fixed batch-1 input.

    Build it outside any loop: the masks it derives from the forward pass are
    then computed once per ``sess.run``. Call it (also inside a
    ``tf.while_loop`` body) once per batch of cotangents.

    Args:
      ys: the output, ``[1, ...]`` with a static shape.
      xs: the input, ``[1, ...]`` with a static shape.

    Raises:
      UnsupportedGraph: if an op on a path from ``xs`` to ``ys`` has no rule
        here, a dependent tensor is not batch-1 with a static shape, or ``ys``
        does not depend on ``xs``.
    """

    def __init__(self, ys, xs):
        self.ys, self.xs = ys, xs
        self._ops = self._ops_between(ys, xs)  # topological order, inputs first
        self._prepared = {}
        for op, _ in self._ops:
            rule = RULES[op.type]
            self._prepared[op.name] = rule.prepare(op) if rule.prepare else None

    @staticmethod
    def _ops_between(ys, xs):
        """``[(op, deps)]`` on paths from ``xs`` to ``ys`` in topological order."""
        depends = {xs.name: True}
        order, visited = [], set()
        stack = [(ys.op, False)]
        while stack:
            op, expanded = stack.pop()
            rule = RULES.get(op.type)
            inputs = list(op.inputs)
            if rule is not None and rule.inputs is not None:
                inputs = [op.inputs[i] for i in rule.inputs]
            if op.type in NOT_DIFFERENTIABLE:
                inputs = []
            if not expanded:
                if op.name in visited:
                    continue
                visited.add(op.name)
                stack.append((op, True))
                stack.extend((t.op, False) for t in inputs
                             if t.name not in depends and t.op.name not in visited)
                continue
            deps = [bool(t.dtype.is_floating and depends.get(t.name, False)) for t in op.inputs]
            if op.type in NOT_DIFFERENTIABLE:
                deps = [False] * len(deps)
            elif rule is not None and rule.inputs is not None:
                deps = [d and i in rule.inputs for i, d in enumerate(deps)]
            hit = any(deps)
            for t in op.outputs:
                if t.name != xs.name:  # xs itself stays the start, whatever feeds it
                    depends[t.name] = hit
            if not hit:
                continue
            if rule is None:
                raise UnsupportedGraph("no batched transpose for %s (%s)" % (op.type, op.name))
            for t in list(op.inputs) + list(op.outputs):
                if depends.get(t.name) and t.dtype.is_floating:
                    shape = t.shape
                    if shape.ndims is None or not shape.is_fully_defined() or shape[0] != 1:
                        raise UnsupportedGraph("%s is not batch-1 with a static shape: %s"
                                               % (t.name, shape))
            order.append((op, deps))
        if not depends.get(ys.name):
            raise UnsupportedGraph("%s does not depend on %s" % (ys.name, xs.name))
        return order

    def __call__(self, cotangents):
        """Gradients w.r.t. ``xs`` for cotangents ``[N] + ys.shape[1:]``: ``[N] + xs.shape[1:]``."""
        return self._backward(cotangents)

    def points(self, values, rows, cols, windowed=False, density=None):
        """Gradients w.r.t. ``xs`` for cotangents that are non-zero at one pixel each.

        Cotangent n is ``values[n]`` at pixel ``(rows[n], cols[n])`` of ``ys``
        (``[1, H, W, C]``) and zero elsewhere. Near the output its backward pass
        stays inside a small window around the pixel: convolutions, masks and
        pools run on ``[N, h, w, C]`` windows instead of whole images until a
        window grows too large or meets an op it cannot follow (such as a
        strided convolution off its grid); from there on the pass is dense.
        The result is the same as :meth:`__call__` with the dense cotangents.

        Args:
          values: ``[N, C]``.
          rows: int32 ``[N]``.
          cols: int32 ``[N]``.
          windowed: return a :class:`vidcorr.readout.sensitivity.windows.Window` if the pass
            stayed windowed up to ``xs`` (else the dense tensor).
          density: where the pass goes dense, a
            :class:`vidcorr.readout.sensitivity.memory.Density` whose ``join`` is "union" or
            "dense" (default: the default fraction, "union").

        Returns:
          ``[N] + xs.shape[1:]``, or with ``windowed`` possibly a Window of it.
        """
        _, height, width, channels = self.ys.shape.as_list()
        oy, ox = rows // 2 * 2, cols // 2 * 2  # a 2x2 window at even origins
        data = (values[:, None, None, :] * tf.one_hot(rows - oy, 2)[:, :, None, None] *
                tf.one_hot(cols - ox, 2)[:, None, :, None])  # [N, 2, 2, C]
        density = density or Density(DENSE_FRACTION, "union")
        if density.join not in ("union", "dense"):
            raise ValueError("points() needs a density join of 'union' or 'dense', got %r"
                             % (density.join,))
        return self._backward(Window(data, oy, ox, height, width, 2, ((0, 1), (0, 1)),
                                     density.fraction), windowed, density.join)

    def _backward(self, cotangents, windowed=False, join="union"):
        grads = {self.ys.name: [cotangents]}
        for op, deps in reversed(self._ops):
            incoming = grads.pop(op.outputs[0].name, None)
            if incoming is None:
                continue
            g = sum_cotangents(incoming, join)
            prepared, results = self._prepared[op.name], None
            if isinstance(g, Window) and not g.too_big() and op.type in WINDOW_RULES:
                results = WINDOW_RULES[op.type](op, g, prepared, deps)
            if results is None:
                results = RULES[op.type].apply(op, dense(g), prepared, deps)
            for i, grad in results:
                grads.setdefault(op.inputs[i].name, []).append(grad)
        result = grads.get(self.xs.name)
        if result is None:
            return tf.zeros(batch_shape(dense(cotangents), self.xs))
        result = sum_cotangents(result)
        return result if windowed else dense(result)

