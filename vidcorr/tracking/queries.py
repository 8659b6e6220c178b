"""Where tracks start: a query file (``t x y`` per line), a grid, or a frame's most
confident matches; and the frames a run tracks (``start``, ``end``, ``every``)."""

import numpy as np

from vidcorr.errors import UserError

__all__ = ["read_queries", "grid_queries", "confident_queries", "frame_indices", "check_queries"]


def read_queries(path):
    """Queries ``[N, 3]`` (t, x, y) from a text file: one ``t x y`` per line (frame index of
    the source, sub-pixel position); blank lines and ``#`` comments are skipped.

    Raises:
      UserError: for a missing or unreadable file, a malformed line or no queries.
    """
    rows = []
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UserError("cannot read the query file %s: %s" % (path, err))
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.replace(",", " ").split()
        try:
            t, x, y = (float(p) for p in parts) if len(parts) == 3 else (None,) * 3
        except ValueError:
            t = None
        if t is None or t != int(t) or not np.isfinite([x, y]).all():
            raise UserError("%s:%d: a query is 't x y' (an integer frame, two numbers), got %r"
                            % (path, number, line.strip()))
        rows.append((t, x, y))
    if not rows:
        raise UserError("%s holds no queries (one 't x y' per line)" % path)
    return np.array(rows, np.float64)


def grid_queries(frame_index, height, width, stride):
    """Queries on a grid of ``stride`` pixels (offset ``stride // 2``) of one frame.

    Raises:
      UserError: for a stride below 1 or beyond the frame.
    """
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or \
            not 1 <= stride <= min(height, width):
        raise UserError("--grid must be a whole number of pixels in [1, %d], got %r"
                        % (min(height, width), stride))
    ys, xs = np.mgrid[stride // 2:height:stride, stride // 2:width:stride]
    return np.column_stack([np.full(xs.size, frame_index), xs.ravel(), ys.ravel()]).astype(float)


def confident_queries(frame_index, positions, confidence, count, spacing):
    """The ``count`` most confident matches of a frame, at least ``spacing`` pixels apart.

    Args:
      frame_index: the frame's index.
      positions: ``[H, W, 2]`` (x, y) in that frame of each middle-frame pixel of a pair
        read-out whose first frame it is.
      confidence: ``[H, W]``.
      count: how many.
      spacing: the least distance between two of them (greedy, most confident first).

    Returns:
      ``[n, 3]`` queries (t, x, y), n <= count.
    """
    order = np.argsort(-confidence.ravel(), kind="stable")
    points = positions.reshape(-1, 2)[order]
    cell = max(float(spacing), 1e-6)
    taken, occupied = [], {}
    for x, y in points:
        key = (int(x // cell), int(y // cell))
        near = [occupied[(key[0] + i, key[1] + j)] for i in (-1, 0, 1) for j in (-1, 0, 1)
                if (key[0] + i, key[1] + j) in occupied]
        if any(np.hypot(x - p[0], y - p[1]) < spacing for group in near for p in group):
            continue
        occupied.setdefault(key, []).append((x, y))
        taken.append((frame_index, x, y))
        if len(taken) == count:
            break
    return np.array(taken, np.float64).reshape(-1, 3)


def frame_indices(count, start=0, end=None, every=1):
    """The source's frame indices a run tracks: ``start, start + every, ...`` up to ``end``
    (inclusive; None: the last frame). ``count`` None: not known yet (a video that does not
    say), then only the arguments are checked.

    Raises:
      UserError: for bad values or fewer than three frames.
    """
    for name, value, low in (("--start", start, 0), ("--every", every, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise UserError("%s must be a whole number >= %d, got %r" % (name, low, value))
    if end is not None and (isinstance(end, bool) or not isinstance(end, (int, np.integer))
                            or end < start):
        raise UserError("--end must be a frame index >= --start (%d), got %r" % (start, end))
    if count is None:
        return None
    last = count - 1 if end is None else min(end, count - 1)
    frames = np.arange(start, last + 1, every)
    if len(frames) < 3:
        raise UserError("the clip has %d frames; --start %d --end %s --every %d leave %d, "
                        "fewer than 3" % (count, start, end, every, len(frames)))
    return frames


def check_queries(queries, frames, height, width):
    """Refuses queries outside the frame or at frames the run does not track.

    Args:
      queries: ``[N, 3]`` (t, x, y).
      frames: the tracked frame indices.
      height: frame height.
      width: frame width.

    Returns:
      ``[N]`` the position of each query's frame in ``frames``.

    Raises:
      UserError: naming the first bad query.
    """
    where = {int(f): i for i, f in enumerate(frames)}
    slots = []
    for n, (t, x, y) in enumerate(queries):
        if int(t) not in where:
            raise UserError("query %d (t=%d) is not at a tracked frame (frames %d to %d, every "
                            "%d)" % (n + 1, t, frames[0], frames[-1],
                                     frames[1] - frames[0] if len(frames) > 1 else 1))
        if not (-0.5 <= x <= width - 0.5 and -0.5 <= y <= height - 0.5):
            raise UserError("query %d (%g, %g) at t=%d is outside the %dx%d frame"
                            % (n + 1, x, y, t, width, height))
        slots.append(where[int(t)])
    return np.array(slots, int)
