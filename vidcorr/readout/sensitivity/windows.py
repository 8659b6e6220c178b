"""Windowed cotangents: a batch of cotangents that are non-zero in one small window each.

The cotangent of one output pixel stays near that pixel for the first layers
of the backward pass (a 3x3 convolution widens it by one pixel a side, a
stride-2 one halves it). :class:`Window` holds such a batch as ``[N, h, w, C]``
windows with per-cotangent origins, and :data:`WINDOW_RULES` map windows
through the ops of :mod:`vidcorr.readout.sensitivity.transpose` on windows instead of whole
images: the masks are gathered per window, and positions outside the image
are kept at zero, which is what the forward pass's zero padding implies. A
rule returns None when it cannot follow (the caller then goes dense).

Every window of one pixel's pass contains that pixel's position at its level
(its *anchor*: the pixel itself, halved at each stride-2 step). A window
records how far it reaches before its anchor, as a static range ``reach``
per axis, so two windows that meet (a skip and the deeper path, or the
network's part and the kernel head's direct term) are summed in a union of
static size that is tight (:func:`add_windows`). The pass stays windowed
through the encoder for as long as the windows are cheaper than whole images
(:data:`vidcorr.readout.sensitivity.memory.DENSE_FRACTION`), and a window never grows past its
image: it is cropped to it (:meth:`Window.crop`). So one pixel's cost stops
growing with the image once the image is larger than the network's receptive
field.
"""

import math

import numpy as np

from vidcorr.readout.sensitivity import memory
from vidcorr.compat import tf
from vidcorr.readout.sensitivity.transpose import add_signs, slice_attrs, upsample2

__all__ = ["Window", "WINDOW_RULES", "dense", "add_windows", "reflect_fold", "fold_window",
           "union_shape", "sum_cotangents", "shift_rows"]


def shift_rows(data, offset, size, axis):
    """``data`` placed at per-item ``offset`` along ``axis`` (1 or 2) of a ``size`` long axis.

    ``out[n, offset[n] + i] = data[n, i]``, zero elsewhere; positions that fall
    outside ``[0, size)`` are dropped. One batched gather (no scatter).
    """
    length = data.shape.as_list()[axis]
    padding = [[0, 0]] * 4
    padding[axis] = [0, 1]
    padded = tf.pad(data, padding)  # a zero row at index `length`
    src = tf.range(size)[None, :] - offset[:, None]  # [N, size]
    src = tf.where((src >= 0) & (src < length), src, tf.fill(tf.shape(src), length))
    return tf.gather(padded, src, axis=axis, batch_dims=1)


def _clamp(reach, size):
    return max(0, min(reach[0], size - 1)), max(0, min(reach[1], size - 1))


class Window(object):
    """A batch of cotangents that are zero outside one small window each.

    ``data [N, h, w, C]`` holds rows ``oy[n] + i`` and columns ``ox[n] + j`` of a
    ``[height, width]`` tensor for cotangent n; all else is zero, positions
    outside the image included. Every origin is a multiple of ``align``
    (static), which is what a strided convolution needs to stay on its grid.
    ``reach`` is ``((lo, hi), (lo, hi))``: static bounds of ``anchor - origin``
    per axis (rows, columns), where the anchor is the window's pixel at this
    level (default: anywhere in the window).
    """

    def __init__(self, data, oy, ox, height, width, align, reach=None,
                 fraction=memory.DENSE_FRACTION):
        self.data, self.oy, self.ox = data, oy, ox  # [N, h, w, C], [N], [N]
        self.height, self.width, self.align = height, width, align
        self.fraction = fraction  # goes dense past this share of the image (memory.Density)
        self.h, self.w = data.shape.as_list()[1:3]
        reach = reach or ((0, self.h - 1), (0, self.w - 1))
        self.reach = (_clamp(reach[0], self.h), _clamp(reach[1], self.w))

    def like(self, data, **changes):
        """A window with other data (and optionally other geometry)."""
        geometry = dict(oy=self.oy, ox=self.ox, height=self.height, width=self.width,
                        align=self.align, reach=self.reach, fraction=self.fraction)
        geometry.update(changes)
        return Window(data, **geometry)

    def too_big(self):
        """Whether the dense op is cheaper than the windowed one (the window covers more
        than ``fraction`` of the image, :class:`vidcorr.readout.sensitivity.memory.Density`)."""
        return not memory.stays_windowed(self.h * self.w, self.height * self.width,
                                         self.fraction)

    def crop(self):
        """The same cotangents in a window no larger than the image (the data is zero
        outside it): a window that grew past an image side is cut to that side."""
        if self.h <= self.height and self.w <= self.width:
            return self
        data, oy, ox, reach = self.data, self.oy, self.ox, list(self.reach)
        for axis, size, limit in ((1, self.h, self.height), (2, self.w, self.width)):
            if size <= limit:
                continue
            origin = oy if axis == 1 else ox
            data = shift_rows(data, origin, limit, axis)  # rows 0 .. limit - 1 of the image
            reach[axis - 1] = (0, limit - 1)  # the anchor is in the image
            if axis == 1:
                oy = tf.zeros_like(oy)
            else:
                ox = tf.zeros_like(ox)
        return self.like(data, oy=oy, ox=ox, reach=tuple(reach))

    def _rows_cols(self):
        return (self.oy[:, None] + tf.range(self.h),  # [N, h]
                self.ox[:, None] + tf.range(self.w))  # [N, w]

    def valid(self):
        """``[N, h, w, 1]``: 1 where the window lies inside the image."""
        rows, cols = self._rows_cols()
        in_rows = tf.cast((rows >= 0) & (rows < self.height), tf.float32)
        in_cols = tf.cast((cols >= 0) & (cols < self.width), tf.float32)
        return in_rows[:, :, None, None] * in_cols[:, None, :, None]

    def _indices(self):
        """``[N, h, w, 2]`` (row, column), clipped into the image."""
        rows, cols = self._rows_cols()
        rows = tf.clip_by_value(rows, 0, self.height - 1)
        cols = tf.clip_by_value(cols, 0, self.width - 1)
        return tf.stack([tf.tile(rows[:, :, None], [1, 1, self.w]),
                         tf.tile(cols[:, None, :], [1, self.h, 1])], axis=-1)

    def gather(self, tensor):
        """Each window of a batch-1 ``tensor [1, H, W, C]``: ``[N, h, w, C]``, 0 outside the image."""
        image = tf.reshape(tensor, tensor.shape.as_list()[1:])  # [H, W, C], no copy (in a loop)
        return tf.gather_nd(image, self._indices()) * self.valid()

    def pad(self, margin):
        """The same cotangents in a window grown by ``margin`` on each side."""
        if not margin:
            return self
        data = tf.pad(self.data, [[0, 0], [margin, margin], [margin, margin], [0, 0]])
        return self.like(data, oy=self.oy - margin, ox=self.ox - margin,
                         align=math.gcd(self.align, margin),
                         reach=tuple((lo + margin, hi + margin) for lo, hi in self.reach))

    def even(self):
        """The same cotangents in a window with even origins and sizes (one row or column more)."""
        data, oy, ox, reach = self.data, self.oy, self.ox, self.reach
        if self.align % 2:  # per cotangent: pad above (odd origin) or below (even origin)
            reach = tuple((lo, hi + 1) for lo, hi in reach)
            odd = tf.cast(oy % 2, tf.float32)[:, None, None, None]  # [N, 1, 1, 1]
            data = (tf.pad(data, [[0, 0], [1, 0], [0, 0], [0, 0]]) * odd +
                    tf.pad(data, [[0, 0], [0, 1], [0, 0], [0, 0]]) * (1.0 - odd))
            odd = tf.cast(ox % 2, tf.float32)[:, None, None, None]
            data = (tf.pad(data, [[0, 0], [0, 0], [1, 0], [0, 0]]) * odd +
                    tf.pad(data, [[0, 0], [0, 0], [0, 1], [0, 0]]) * (1.0 - odd))
            oy, ox = oy - oy % 2, ox - ox % 2
        h, w = data.shape.as_list()[1:3]
        data = tf.pad(data, [[0, 0], [0, h % 2], [0, w % 2], [0, 0]])
        return self.like(data, oy=oy, ox=ox, align=max(2, self.align - self.align % 2),
                         reach=reach)

    def dense(self):
        """``[N, H, W, C]``."""
        n, channels = tf.shape(self.data)[0], self.data.shape.as_list()[3]
        batch = tf.tile(tf.range(n)[:, None, None, None], [1, self.h, self.w, 1])
        indices = tf.concat([batch, self._indices()], axis=-1)  # [N, h, w, 3]
        return tf.scatter_nd(indices, self.data * self.valid(),
                             tf.stack([n, self.height, self.width, channels]))


def union_shape(windows):
    """The static ``(h, w)`` of :func:`add_windows`'s result (before any crop) and its reach.

    Window i spans ``[anchor - r_i, anchor - r_i + h_i)`` with ``r_i`` in its reach
    ``[lo_i, hi_i]``; the union's extent ``max r + max (h - r)`` is at most
    ``h_i`` when one window supplies both maxima, else ``hi_i + h_j - lo_j``.
    """
    shape, reach = [], []
    for axis in (0, 1):
        sizes = [w.h if axis == 0 else w.w for w in windows]
        spans = [w.reach[axis] for w in windows]
        extent = max(sizes)
        for i, (_, hi) in enumerate(spans):
            for j, (lo, _) in enumerate(spans):
                if i != j:
                    extent = max(extent, hi + sizes[j] - lo)
        shape.append(extent)
        reach.append((max(lo for lo, _ in spans), max(hi for _, hi in spans)))
    return tuple(shape), tuple(reach)


def _starts_first(win, windows, axis):
    """Whether ``win``'s origin is the smallest of ``windows`` along ``axis`` for every item."""
    lo = win.reach[axis][0]
    return all(lo >= other.reach[axis][1] for other in windows if other is not win)


def add_windows(windows):
    """The sum of windows of the same tensor, as one window: their union, cropped to the image.

    Each window holds rows ``anchor - reach .. anchor - reach + h``; the union
    has the static size of :func:`union_shape`. A window that always starts
    first and spans the union is added in place (no gather).
    """
    first = windows[0]
    if len(windows) == 1:
        return first
    (h, w), reach = union_shape(windows)
    oy = tf.reduce_min(tf.stack([win.oy for win in windows]), 0)
    ox = tf.reduce_min(tf.stack([win.ox for win in windows]), 0)
    total = 0.0
    for win in windows:
        data = win.data
        if not (win.h == h and _starts_first(win, windows, 0)):
            data = shift_rows(data, win.oy - oy, h, 1)
        if not (win.w == w and _starts_first(win, windows, 1)):
            data = shift_rows(data, win.ox - ox, w, 2)
        total = total + data  # [N, h, w, C]
    return Window(total, oy, ox, first.height, first.width, 1, reach, first.fraction).crop()


def sum_cotangents(cotangents, join="union"):
    """One cotangent from several of the same tensor: with ``join`` "union", their union
    window if all are windows and the union is still worth keeping (no more than their
    ``fraction`` of the image, :class:`vidcorr.readout.sensitivity.memory.Density`); else the dense sum."""
    if len(cotangents) == 1:
        return cotangents[0]
    if join == "union" and all(isinstance(c, Window) for c in cotangents):
        (h, w), _ = union_shape(cotangents)
        height, width = cotangents[0].height, cotangents[0].width
        if memory.stays_windowed(min(h, height) * min(w, width), height * width,
                                 cotangents[0].fraction):
            return add_windows(cotangents)
    return tf.add_n([dense(c) for c in cotangents])


def dense(g):
    """A cotangent batch as a dense tensor (a :class:`Window` is scattered into its image)."""
    return g.dense() if isinstance(g, Window) else g


def _window_pass(op, win, prepared, deps):
    return [(0, win)]


def _window_add(op, win, prepared, deps):
    return [(i, win if sign > 0 else win.like(-win.data)) for i, sign in add_signs(op, deps)]


def _window_mul(op, win, prepared, deps):
    """A product with a constant factor (batch norm in inference mode): per channel (or a
    scalar), or a whole ``[1, H, W, C]`` image gathered per window; else None."""
    i = 0 if deps[0] else 1
    factor = op.inputs[1 - i]
    shape = factor.shape.as_list() if factor.shape.dims is not None else None
    if all(deps) or shape is None or None in shape or \
            op.inputs[i].shape.as_list() != op.outputs[0].shape.as_list():
        return None
    if all(d == 1 for d in shape[:-1]) and len(shape) <= 4:  # per channel, or a scalar
        return [(i, win.like(win.data * factor))]
    if len(shape) == 4 and shape[0] == 1 and shape[1:3] == [win.height, win.width]:
        return [(i, win.like(win.data * win.gather(factor)))]
    return None


def _window_mask(op, win, mask, deps):
    return [(0, win.like(win.data * win.gather(mask)))]


def _window_conv2d(op, win, flipped, deps):
    if flipped is None:
        return None
    kh, kw = op.inputs[1].shape.as_list()[:2]
    r = max(kh, kw) // 2
    # The exact margin (a later stride-2 step evens the origins itself); cut to the image
    # first (it is zero beyond, as SAME pads).
    grown = win.pad(r).crop()
    data = tf.nn.conv2d(grown.data, flipped, [1, 1, 1, 1], "SAME")  # [N, h', w', in]
    return [(0, grown.like(data * grown.valid()))]


def _window_conv2d_transpose(op, win, padding, deps):
    filters = op.inputs[1].shape.as_list()
    _, height, width, _ = op.inputs[2].shape.as_list()  # the coarse input
    if (filters[:2] != [4, 4] or list(op.get_attr("strides")) != [1, 2, 2, 1]
            or padding != "SAME" or list(op.get_attr("dilations")) != [1, 1, 1, 1]
            or win.height != 2 * height or win.width != 2 * width):
        return None
    grown = win.even().pad(2)  # on the stride-2 grid; covers coarse rows oy/2 - 1 .. (oy + h)/2
    data = tf.nn.conv2d(grown.data, op.inputs[1], [1, 2, 2, 1], "SAME")  # [N, h'/2, w'/2, C]
    coarse = Window(data, grown.oy // 2, grown.ox // 2, height, width, grown.align // 2,
                    tuple((lo // 2, hi // 2) for lo, hi in grown.reach), grown.fraction)
    return [(2, coarse.like(data * coarse.valid()).crop())]


def _window_max_pool(op, win, mask, deps):
    if mask is None:
        return None
    _, height, width, channels = op.inputs[0].shape.as_list()
    fine = win.like(upsample2(win.data, 2 * win.h, 2 * win.w, win.data.shape.as_list()[3]),
                    oy=2 * win.oy, ox=2 * win.ox, height=height, width=width,
                    align=2 * win.align, reach=tuple((2 * lo, 2 * hi + 1) for lo, hi in win.reach))
    return [(0, fine.like(fine.data * fine.gather(mask)).crop())]


CHANNEL_AXIS = 3  # NHWC


def _window_concat(op, win, prepared, deps):
    rank = op.outputs[0].shape.ndims
    if int(tf.get_static_value(op.inputs[-1])) % rank != CHANNEL_AXIS:  # -1 is 3 too
        return None
    sizes = [t.shape.as_list()[3] for t in op.inputs[:-1]]
    parts = tf.split(win.data, sizes, axis=3)
    return [(i, win.like(part)) for i, part in enumerate(parts) if deps[i]]


def _window_slice(op, win, prepared, deps):
    slice_attrs(op)
    strides = tf.get_static_value(op.inputs[3])
    if (strides is not None and all(int(v) == 1 for v in strides)
            and op.inputs[0].shape.as_list() == op.outputs[0].shape.as_list()):
        return [(0, win)]  # a slice that keeps everything (the network's crop at padded size)
    return None


WINDOW_RULES = {"StridedSlice": _window_slice, "Identity": _window_pass, "BiasAdd": _window_pass,
                "AddV2": _window_add, "Add": _window_add, "Sub": _window_add, "Mul": _window_mul,
                "Relu": _window_mask, "LeakyRelu": _window_mask, "Conv2D": _window_conv2d,
                "Conv2DBackpropInput": _window_conv2d_transpose, "MaxPool": _window_max_pool,
                "ConcatV2": _window_concat}


def reflect_fold(size, before, after):
    """``[size + before + after, size]`` 0/1 matrix: padded index -> the pixel it reflects."""
    fold = np.zeros((size + before + after, size), np.float32)
    for i in range(size + before + after):
        j = i - before
        if j < 0:
            j = -j
        elif j >= size:
            j = 2 * (size - 1) - j
        fold[i, j] = 1.0
    return fold


def _fold_axis(data, origin, before, after, size, axis):
    """Folds a window's reflect-padded positions back onto the pixels they copy, along one axis.

    ``data`` holds padded positions ``origin + i`` (``i < length``) along ``axis``;
    the result holds original positions ``start + a`` (``a < min(length, size)``),
    each the sum of its own value and those of its mirror copies in the padding
    (the rule of :func:`reflect_fold`). Returns ``(folded, start)``.
    """
    length = data.shape.as_list()[axis]
    out = min(length, size)
    start = tf.clip_by_value(origin - before, 0, size - out)  # [K]
    x = start[:, None] + tf.range(out)[None, :]  # [K, out] original positions
    sources = [(x + before, None)]
    if before:
        sources.append((before - x, (x >= 1) & (x <= before)))
    if after:
        sources.append((before + 2 * (size - 1) - x, (x >= size - 1 - after) & (x <= size - 2)))
    padding = [[0, 0]] * 4
    padding[axis] = [0, 1]
    padded = tf.pad(data, padding)  # a zero slice at index `length`
    total = 0.0
    for src, ok in sources:
        index = src - origin[:, None]  # [K, out] into the window
        inside = (index >= 0) & (index < length)
        inside = inside if ok is None else inside & ok
        index = tf.where(inside, index, tf.fill(tf.shape(index), length))
        total = total + tf.gather(padded, index, axis=axis, batch_dims=1)
    return total, start


def fold_window(window, padding, height, width):
    """A :class:`vidcorr.readout.sensitivity.windows.Window` of the padded input's cotangent as original pixels.

    Returns:
      ``(data [K, h, w, C], oy [K], ox [K])``: rows ``oy + i`` and columns
      ``ox + j`` of the ``[height, width]`` image; zero elsewhere.
    """
    top, bottom, left, right = padding
    data, oy = _fold_axis(window.data, window.oy, top, bottom, height, 1)
    data, ox = _fold_axis(data, window.ox, left, right, width, 2)
    return data, oy, ox
