"""``vidcorr-track``: points followed through a video, with visibility per frame.

:func:`track` streams the frames once, reads every consecutive pair with the kernel
read-out (one graph for the frame size; with ``consistency``, the pair and its swap in
one ``sess.run``) and chains the read-outs (:mod:`vidcorr.tracking.chain`). A query may
start at any tracked frame: from there it is followed forward in the same pass, and
backward in a second pass over the read-outs and frames up to the last query's frame,
which the first pass kept in a scratch folder on disk (memory stays flat in the clip's
length). :class:`Tracks` holds the result and writes ``tracks.npz``, ``tracks.csv``,
``tracks.png`` (the tracks on the last frame) and ``tracks.gif`` (the clip with the
tracks drawn, a third pass over the frames) into a folder that appears whole or not at
all.
"""

import collections
import os
import shutil
import tempfile
import time

import numpy as np
from tqdm import tqdm

from vidcorr.errors import UserError
from vidcorr.io.files import check_replaceable, replace_folder, scratch_folder, staging_folder
from vidcorr.io.video import count_frames, stream_frames, uint8_to_float
from vidcorr.tracking.chain import Chain, PairReadout, TrackSettings
from vidcorr.tracking.queries import (check_queries, confident_queries, frame_indices,
                                      grid_queries, read_queries)

__all__ = ["Tracks", "track", "tracking_matcher", "OUTPUTS", "TRACK_OPTIONS"]

OUTPUTS = ("tracks.npz", "tracks.csv", "tracks.png", "tracks.gif")
# The read-out's options for tracking, over the matcher's defaults: a chained track adds
# up every pair's bias, and bilinear sampling's shift at fractional positions is one
# (docs/tracking.md: the B-spline sampler took the translate clip's median drift after
# 30 frames from 0.216 to 0.051 px). Consecutive frames move little and the refinement
# makes the matches precise, so one pass per pyramid level does as well as two there, in
# 0.7-0.9 times the read-out's time (docs/tracking.md, "Speed and memory").
TRACK_OPTIONS = {"readout": "kernel", "refine_sampler": "bspline", "passes": 1}
# track()'s keyword choice of points and frames, and their defaults
CHOICE_DEFAULTS = {"grid": None, "best": None, "start": 0, "end": None, "every": 1,
                   "max_height": 0}


class Tracks(object):
    """Tracks of N points over T frames.

    Attributes:
      tracks: ``[N, T, 2]`` (x, y) per frame (predicted where invisible; NaN before a
        point's query frame is reached, never after).
      visible: ``[N, T]`` bool.
      confidence: ``[N, T]`` the read-out's confidence at the point (1 at its query).
      queries: ``[N, 3]`` (t, x, y), t a frame index of the source.
      frames: ``[T]`` the source's frame indices.
      seconds: wall time of the tracking: ``read_out`` (every pair's read-out, the
        anchors' too), ``chain`` (the rest of following the points) and ``total``.
    """

    def __init__(self, tracks, visible, confidence, queries, frames, seconds=None):
        self.tracks, self.visible = np.asarray(tracks), np.asarray(visible, bool)
        self.confidence, self.queries = np.asarray(confidence), np.asarray(queries)
        self.frames, self.seconds = np.asarray(frames), dict(seconds or {})

    def save(self, path):
        """Writes the arrays as ``.npz``."""
        np.savez_compressed(path, tracks=self.tracks.astype(np.float32), visible=self.visible,
                            confidence=self.confidence.astype(np.float32),
                            queries=self.queries, frames=self.frames)

    def save_csv(self, path):
        """One row per point and frame: ``point,t,x,y,visible,confidence``."""
        n, t = self.visible.shape
        table = np.column_stack([np.repeat(np.arange(n), t), np.tile(self.frames, n),
                                 self.tracks.reshape(-1, 2), self.visible.ravel().astype(int),
                                 self.confidence.ravel()])
        np.savetxt(path, table, fmt=["%d", "%d", "%.3f", "%.3f", "%d", "%.4f"], delimiter=",",
                   header="point,t,x,y,visible,confidence", comments="")

    @classmethod
    def load(cls, path):
        """Reads tracks written by :meth:`save`."""
        with np.load(path) as data:
            return cls(data["tracks"], data["visible"], data["confidence"], data["queries"],
                       data["frames"])


def _queries(queries, grid, best):
    given = sum(x is not None for x in (queries, grid, best))
    if given != 1:
        raise UserError("give exactly one of --queries FILE, --grid S or --best N")
    if isinstance(queries, (str, os.PathLike)):
        return read_queries(os.fspath(queries))
    if queries is not None:
        queries = np.asarray(queries, np.float64)
        if queries.ndim != 2 or queries.shape[1] != 3 or not len(queries) or \
                not np.isfinite(queries).all():
            raise UserError("queries must be a non-empty [N, 3] array of (t, x, y)")
        return queries
    return None


def _check_out(out):
    if out is not None:
        check_replaceable(out, lambda names: set(names) <= set(OUTPUTS), "an earlier tracks folder")


class _ReadOuts(object):
    """The consecutive pairs' read-outs, one graph for the frame size."""

    def __init__(self, matcher, height, width, consistency):
        if matcher.options.readout != "kernel":
            raise UserError("tracking needs the kernel read-out (a model with a kernel head), "
                            "not %r" % matcher.options.readout)
        self.graph = matcher.readout.graph_for(height, width)
        self.consistency = consistency

    def read(self, a, b):
        if self.consistency:
            res = self.graph.run(np.stack([a, b]), np.stack([b, a]))
            return PairReadout(res["position"][0], res["confidence"][0],
                               (res["position"][1], res["confidence"][1])), res
        res = self.graph.run(a[None], b[None])
        return PairReadout(res["position"][0], res["confidence"][0]), res


def tracking_matcher(checkpoint=None, **options):
    """A :class:`vidcorr.Matcher` with :data:`TRACK_OPTIONS` (``options`` over them), the
    packaged model or ``checkpoint``."""
    from vidcorr.readout.matching import Matcher

    return Matcher(checkpoint, **dict(TRACK_OPTIONS, **options))


def track(source, queries=None, matcher=None, settings=None, out=None, progress=True,
          **choice):
    """Follows points through a clip (see the module docstring).

    Args:
      source: a video file, a frame folder or a ``pkg:`` path.
      queries: ``[N, 3]`` (t, x, y) or a query file's path; t a frame index of the source.
      matcher: a :class:`vidcorr.Matcher` (default: :func:`tracking_matcher`, the packaged
        model with :data:`TRACK_OPTIONS`).
      settings: a :class:`vidcorr.tracking.chain.TrackSettings`.
      out: a folder for ``tracks.npz``, ``.csv``, ``.png`` and ``.gif`` (None: nothing written).
      progress: progress bars over frames.
      **choice: which points and frames, each optional: ``grid`` (a grid stride on the
        first tracked frame, instead of ``queries``), ``best`` (the number of most
        confident matches of the first tracked frame to follow), ``start`` (the first
        frame, default 0), ``end`` (the last frame, inclusive; default the clip's end),
        ``every`` (the frame step, default 1), ``max_height`` (downscale frames taller
        than this; default 0, keep).

    Returns:
      :class:`Tracks`.

    Raises:
      UserError: one line, for bad input of any kind; nothing is written then.
    """
    grid, best, start, end, every, max_height = _choice(choice)
    given = _queries(queries, grid, best)
    settings = settings if settings is not None else TrackSettings()
    frame_indices(None, start, end, every)  # the arguments, before any decoding
    _check_out(out)
    count = count_frames(source) or sum(1 for _ in stream_frames(source, max_height))
    frames = frame_indices(count, start, end, every)
    clock = {"read_out": 0.0, "chain": 0.0, "start": time.time()}
    stream = _tracked(source, max_height, frames)
    first, second = next(stream), next(stream, None)
    if second is None:
        raise UserError("%s: fewer than 2 frames could be decoded" % source)
    height, width = first.shape[:2]
    if given is None and grid is not None:
        given = grid_queries(int(frames[0]), height, width, grid)
    elif given is None and (isinstance(best, bool) or not isinstance(best, (int, np.integer))
                            or best < 1):
        raise UserError("--best must be a whole number >= 1, got %r" % (best,))
    if given is not None:  # checked before any graph is built: a bad query fails at once
        slots = check_queries(given, frames, height, width)
    matcher = matcher if matcher is not None else tracking_matcher()
    readouts = _ReadOuts(matcher, height, width, settings.consistency)
    t0 = time.time()
    pair, res = readouts.read(uint8_to_float(first), uint8_to_float(second))
    clock["read_out"] += time.time() - t0
    if given is None:
        given = confident_queries(int(frames[0]), res["position"][0][..., 0, :],
                                  res["confidence"][0], best, max(4.0, np.sqrt(
                                      height * width / float(best)) / 2))
        slots = check_queries(given, frames, height, width)
    scratch = scratch_folder(tempfile.gettempdir(), "vidcorr-track-")
    try:
        run = _Follow(readouts, given, slots, frames, (height, width), settings, scratch, clock)
        run.forward(_chained_stream(first, second, stream, source, frames), pair, progress)
        if run.last_query > 0:
            run.backward(progress)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = run.result(frames)
    clock["total"] = time.time() - clock.pop("start")
    result.seconds = clock
    if out is not None:
        write_tracks(result, source, max_height, out, progress)
    return result


def _choice(choice):
    """``(grid, best, start, end, every, max_height)`` of track()'s keywords, defaults filled."""
    unknown = sorted(set(choice) - set(CHOICE_DEFAULTS))
    if unknown:
        raise UserError("unknown setting(s) %s; track takes %s" % (", ".join(unknown), ", ".join(
            ["queries", "matcher", "settings", "out", "progress"] + list(CHOICE_DEFAULTS))))
    return tuple(dict(CHOICE_DEFAULTS, **choice)[k] for k in CHOICE_DEFAULTS)


def _tracked(source, max_height, frames):
    """The tracked frames (uint8), streamed."""
    wanted, n = set(int(f) for f in frames), 0
    for index, frame in enumerate(stream_frames(source, max_height)):
        if index in wanted:
            n += 1
            yield frame
            if n == len(frames):
                return


def _chained_stream(first, second, rest, source, frames):
    """The tracked frames again, the first two already decoded; one line if the clip
    ends early (a container that promised more frames than it holds)."""
    yield first
    yield second
    for k in range(2, len(frames)):
        frame = next(rest, None)
        if frame is None:
            raise UserError("%s ended at tracked frame %d of %d (frame %d): its container "
                            "gives a wrong frame count" % (source, k, len(frames), frames[k]))
        yield frame


class _Follow(object):
    """One run's state: the result arrays, the scratch folder and the clocks."""

    def __init__(self, readouts, queries, slots, frames, size, settings, scratch, clock):
        self.readouts, self.queries, self.slots = readouts, queries, slots
        self.settings, self.scratch, self.clock, self.size = settings, scratch, clock, size
        n, self.count = len(queries), len(frames)
        self.tracks = np.full((n, self.count, 2), np.nan)
        self.visible = np.zeros((n, self.count), bool)
        self.confidence = np.zeros((n, self.count))
        self.last_query = int(slots.max())

    def result(self, frames):
        return Tracks(self.tracks, self.visible, self.confidence, self.queries, frames)

    def record(self, k, chain):
        which = np.flatnonzero(chain.active)
        self.tracks[which, k], self.visible[which, k] = chain.position[which], chain.visible[which]
        self.confidence[which, k] = chain.confidence[which]

    def read(self, a, b):
        """A pair's :class:`PairReadout`, its time on the read-out clock."""
        start = time.time()
        pair, _ = self.readouts.read(a, b)
        self.clock["read_out"] += time.time() - start
        return pair

    def chained(self, start, reads):
        """Adds the time since ``start`` to the chaining clock, less the read-outs' since then
        (``reads``: the read-out clock at ``start``): an anchor's read-out is a read-out."""
        self.clock["chain"] += time.time() - start - (self.clock["read_out"] - reads)

    def keep(self, k, frame, pair=None):
        """Frame k and the pair (k-1, k), for the backward pass."""
        if k <= self.last_query:
            np.save(self._path("frame", k, ".npy"), frame)
            if pair is not None:
                np.savez(self._path("pair", k, ".npz"), **pair.arrays())

    def _path(self, what, k, suffix):
        return os.path.join(self.scratch, "%s_%06d%s" % (what, k, suffix))

    def _frame(self, k):
        return uint8_to_float(np.load(self._path("frame", k, ".npy")))

    def forward(self, frames, pair, progress):
        """Every tracked frame in order (``frames`` the uint8 stream; ``pair`` the first
        pair's read-out); queries start at their frame."""
        every, chain = self.settings.anchor_every, Chain(len(self.queries), self.size,
                                                         self.settings)
        recent = collections.deque(maxlen=every + 1)  # frames k - every .. k
        for k, frame in enumerate(tqdm(frames, total=self.count, disable=not progress,
                                       unit="frame", desc="forward")):
            image = uint8_to_float(frame)
            if k >= 2:
                pair = self.read(uint8_to_float(recent[-1]), image)
            recent.append(frame)
            start, reads = time.time(), self.clock["read_out"]
            if k >= 1:
                chain.advance(pair, image, forward=True)
            if every and k >= every and k % every == 0:  # the pair (k - every, k): an anchor
                longer = self.read(uint8_to_float(recent[0]), image)
                chain.reanchor(longer, self.tracks[:, k - every], self.visible[:, k - every],
                               image)
            starting = np.flatnonzero(self.slots == k)
            chain.start(starting, self.queries[starting, 1:], image)
            self.record(k, chain)
            self.chained(start, reads)
            self.keep(k, frame, pair if k >= 1 else None)

    def backward(self, progress):
        """Queries after the first frame, followed back to it through the kept pairs."""
        every, chain = self.settings.anchor_every, Chain(len(self.queries), self.size,
                                                         self.settings)
        for k in tqdm(range(self.last_query, 0, -1), disable=not progress, unit="frame",
                      desc="backward"):
            starting = np.flatnonzero(self.slots == k)
            chain.start(starting, self.queries[starting, 1:], self._frame(k))
            with np.load(self._path("pair", k, ".npz")) as data:
                pair = PairReadout.from_arrays(data)
            j, earlier = k - 1, self._frame(k - 1)
            start, reads = time.time(), self.clock["read_out"]
            chain.advance(pair, earlier, forward=False)
            if every and j % every == 0 and j + every <= self.last_query:  # (j, j + every)
                longer = self.read(earlier, self._frame(j + every))
                chain.reanchor(longer, self.tracks[:, j + every],
                               self.visible[:, j + every] & (self.slots >= j + every), earlier,
                               forward=False)
            self.record(j, chain)
            self.chained(start, reads)


def write_tracks(result, source, max_height, out, progress=True):
    """Writes ``tracks.npz``, ``tracks.csv``, ``tracks.png`` and ``tracks.gif`` into ``out``
    (replacing an earlier tracks folder whole)."""
    from vidcorr.io.visualize import TrackDrawing

    _check_out(out)
    with staging_folder(out) as staging:
        result.save(os.path.join(staging, "tracks.npz"))
        result.save_csv(os.path.join(staging, "tracks.csv"))
        drawing = TrackDrawing(result)
        wanted = {int(f): k for k, f in enumerate(result.frames)}
        frames = (f for i, f in enumerate(stream_frames(source, max_height)) if i in wanted)
        for k, frame in enumerate(tqdm(frames, total=len(wanted), disable=not progress,
                                       unit="frame", desc="drawing")):
            drawing.add(k, frame)
            if k + 1 == len(wanted):
                break
        drawing.save(os.path.join(staging, "tracks.png"), os.path.join(staging, "tracks.gif"))
        replace_folder(staging, out)
