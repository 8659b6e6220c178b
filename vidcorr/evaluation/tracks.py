"""Scoring tracks against known ones, and the two peers they are compared with.

:func:`tapvid_metrics` computes the TAP-Vid benchmark's metrics (Doersch et al.
2022) over the frames after each point's query: ``delta_avg``, the fraction of
visible points within 1, 2, 4, 8 and 16 pixels, averaged over the thresholds;
``occlusion_accuracy``, how often the predicted visibility is right; and
``average_jaccard``, the Jaccard index of "visible and within the threshold"
averaged over the same thresholds. Unlike TAP-Vid it measures in the clip's own
pixels (no rescaling to 256x256). :func:`drift` is the median error after a
number of frames, over points visible there.

The peers follow points the way a user would with OpenCV:

* :func:`dis_tracks`: DIS flow (medium preset) of each consecutive pair, both ways,
  chained by the same :class:`vidcorr.tracking.chain.Chain` as vidcorr's read-outs
  (the forward flow is the pair's map, its forward-backward error the check), so
  the two differ only in the correspondences;
* :func:`lk_tracks`: OpenCV's pyramidal Lucas-Kanade tracker
  (``calcOpticalFlowPyrLK``, :func:`lk_params`: 21x21 windows, maxLevel 3) forward and back, a point
  visible where both succeed and the round trip returns within the tolerance.
"""

import numpy as np

from vidcorr.evaluation.peers import _gray, dense_flow, require_cv2
from vidcorr.io.video import uint8_to_float
from vidcorr.tracking.chain import Chain, PairReadout, TrackSettings
from vidcorr.tracking.inversion import apply_map

__all__ = ["tapvid_metrics", "drift", "dis_tracks", "lk_tracks", "lk_params", "THRESHOLDS"]

THRESHOLDS = (1, 2, 4, 8, 16)
LK_WINDOW, LK_LEVELS, LK_STOP = 21, 3, (30, 0.01)  # window, pyramid levels, (steps, eps)


def lk_params(cv2):
    """The Lucas-Kanade tracker's ``calcOpticalFlowPyrLK`` keywords (``cv2`` the module)."""
    return dict(winSize=(LK_WINDOW, LK_WINDOW), maxLevel=LK_LEVELS,
                criteria=(cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT,) + LK_STOP)


def tapvid_metrics(tracks, visible, truth, truth_visible, query_frames):
    """TAP-Vid's metrics of predicted tracks (see the module docstring).

    Args:
      tracks: ``[N, T, 2]`` predicted positions.
      visible: ``[N, T]`` predicted visibility.
      truth: ``[N, T, 2]``.
      truth_visible: ``[N, T]``.
      query_frames: ``[N]`` each point's query frame (its position in the T frames).

    Returns:
      ``{"delta_avg", "occlusion_accuracy", "average_jaccard"}`` and ``"delta_<d>"`` per
      threshold.
    """
    n, t = visible.shape
    evaluated = np.arange(t)[None, :] > np.asarray(query_frames)[:, None]  # after the query
    error = np.linalg.norm(np.nan_to_num(tracks, nan=1e9) - truth, axis=-1)
    out = {"occlusion_accuracy": float(np.mean((visible == truth_visible)[evaluated]))}
    deltas, jaccards = [], []
    for d in THRESHOLDS:
        within = error < d
        seen = truth_visible & evaluated
        deltas.append(np.sum(within & seen) / max(np.sum(seen), 1))
        true_positive = np.sum(within & seen & visible)
        false_positive = np.sum((~truth_visible | ~within) & visible & evaluated)
        jaccards.append(true_positive / max(np.sum(seen) + false_positive, 1))
        out["delta_%d" % d] = float(deltas[-1])
    out["delta_avg"] = float(np.mean(deltas))
    out["average_jaccard"] = float(np.mean(jaccards))
    return out


def drift(tracks, truth, truth_visible, after, query_frames):
    """``(median error, fraction within 3 px)`` ``after`` frames past each query, over the
    points visible there (NaN if none)."""
    rows = np.flatnonzero(np.asarray(query_frames) + after < truth.shape[1])
    cols = np.asarray(query_frames)[rows] + after
    seen = truth_visible[rows, cols]
    if not seen.any():
        return float("nan"), float("nan")
    error = np.linalg.norm(tracks[rows, cols] - truth[rows, cols], axis=-1)[seen]
    return float(np.median(error)), float(np.mean(error < 3.0))


def _dis_pair(a, b):
    """A :class:`PairReadout` from DIS flows of uint8 frames: the middle frame is frame a."""
    a, b = uint8_to_float(a), uint8_to_float(b)
    forward, backward = dense_flow("dis", a, b), dense_flow("dis", b, a)
    h, w = forward.shape[:2]
    grid = np.stack(np.meshgrid(np.arange(w), np.arange(h)), axis=-1).reshape(-1, 2)
    there = apply_map(forward, grid)
    back = apply_map(backward, there) - grid
    self = PairReadout.from_arrays({
        "shift1": np.zeros((h, w, 2)), "shift3": forward, "confidence": np.ones((h, w)),
        "disagreement": np.hypot(*back.T).reshape(h, w)})
    return self


def dis_tracks(frames, queries_xy, settings=None):
    """DIS flow chained from the first frame (see the module docstring).

    Args:
      frames: an iterable of ``[H, W, 3]`` uint8 frames.
      queries_xy: ``[N, 2]`` points of the first frame.
      settings: a :class:`TrackSettings` (its ``tolerance`` and templates are used).

    Returns:
      ``(tracks [N, T, 2], visible [N, T])``.
    """
    return _chained(frames, queries_xy, settings or TrackSettings(), _dis_pair)


def _chained(frames, queries_xy, settings, pair_of):
    tracks, visible, previous, chain = [], [], None, None
    for frame in frames:
        image = uint8_to_float(frame)
        if chain is None:
            chain = Chain(len(queries_xy), frame.shape[:2], settings)
            chain.start(np.arange(len(queries_xy)), queries_xy, image)
        else:
            chain.advance(pair_of(previous, frame), image)
        tracks.append(chain.position.copy())
        visible.append(chain.visible.copy())
        previous = frame
    return np.stack(tracks, axis=1), np.stack(visible, axis=1)


def lk_tracks(frames, queries_xy, tolerance=1.0):
    """Pyramidal Lucas-Kanade from the first frame, with a forward-backward check.

    Args:
      frames: an iterable of ``[H, W, 3]`` uint8 frames.
      queries_xy: ``[N, 2]`` points of the first frame.
      tolerance: the round trip's largest error (pixels).

    Returns:
      ``(tracks [N, T, 2], visible [N, T])``.
    """
    cv2 = require_cv2("the Lucas-Kanade tracker")
    params = lk_params(cv2)
    tracks, visible, previous = [], [], None
    position = np.asarray(queries_xy, np.float32).copy()
    velocity = np.zeros_like(position)
    for frame in frames:
        grey = _gray(uint8_to_float(frame))
        h, w = grey.shape
        if previous is None:
            seen = np.ones(len(position), bool)
        else:
            moved, ok, _ = cv2.calcOpticalFlowPyrLK(previous, grey, position[:, None], None,
                                                    **params)
            back, ok_back, _ = cv2.calcOpticalFlowPyrLK(grey, previous, moved, None, **params)
            moved, back = moved[:, 0], back[:, 0]
            good = (ok[:, 0] == 1) & (ok_back[:, 0] == 1) & (
                np.linalg.norm(back - position, axis=1) <= tolerance)
            new = np.where(good[:, None], moved, position + velocity)
            velocity = np.where(good[:, None], new - position, velocity)
            position = new.astype(np.float32)
            seen = good
        inside = np.all((position >= -0.5) & (position <= np.array([w, h]) - 0.5), axis=1)
        tracks.append(position.astype(np.float64).copy())
        visible.append(seen & inside)
        previous = grey
    return np.stack(tracks, axis=1), np.stack(visible, axis=1)
