"""Chaining pair read-outs into tracks: positions, visibility and confidence per frame.

A track is followed from frame to frame through the read-out of each consecutive
pair ``(k, k+1)``: a point x of frame k is sent to the middle-frame pixel that
frame k sees there (:func:`vidcorr.tracking.inversion.invert_map`) and on to that
pixel's position in frame k+1; going backward, the same read-out is inverted at
frame k+1's end. Positions stay sub-pixel throughout (bilinear samples of the
dense fields, no rounding).

**Visibility** is decided per frame, and a point is never dropped. It is visible in
the new frame when

* the inversion converged (some middle pixel maps to it: a point being covered
  has none),
* the round trip holds: the point's match, traced back through the same read-out
  (the middle pixel found again from the other end), comes home within
  ``tolerance`` pixels; where the map folds (two middle pixels claim one point, one
  of them hidden there) it does not,
* with ``consistency``, the forward-backward check holds too: the pair read the
  other way round (frames swapped, in the same batch) puts the middle pixel's two
  ends within ``tolerance`` pixels of where the forward read-out puts them (the two
  read-outs are then averaged, halving their independent errors),
* its confidence (the read-out's, sampled at the middle pixel) is at least
  ``min_confidence``,
* its look has not changed suddenly: its template (below) correlates at least
  ``KEEP_SIMILARITY`` with the new frame's patch (what covers a point passes the
  read-out's checks, since it is seen in both frames, but it looks different), and
* it is inside the frame.

**While a point is invisible** it keeps a predicted position: outside the frame it
moves with the frame's edge (the read-out's displacement held beyond the border,
so a point that left with the camera's motion comes back with it); inside, where
it is hidden, it moves on at its last visible velocity, not with the field, which
there belongs to whatever hides it.

**Re-finding.** A hidden point becomes visible again where the frame still looks
like the point did when it was last seen: a ``patch`` x ``patch`` grey-level
template must correlate (zero-mean normalised cross-correlation) at least
``min_similarity`` with the new frame's patch, and the position must pass the
checks above. Two positions are tried: where the field moves the point (right if
the point was only briefly doubted), and its predicted position, traced back
through the pair (inverting the read-out at the second frame's end), which finds
a point in the first frame it shows again. The template follows a visible point's
slow changes of look (it is replaced while the new look correlates at least
``TEMPLATE_UPDATE``) but not a sudden occluder's, and it keeps a hidden point from
re-attaching to what hid it, whose own read-out passes every check. A point
entering the frame from outside has no read-out that sees it in both frames: its
look alone decides.

**Anchors.** Chained errors add up pair by pair (a read-out's small bias most of all).
Every ``anchor_every`` frames, a point seen at both ends of the longer pair (the frame
that many frames back, and this one) is moved from its position back there by one
read-out of that pair, when the move passes every check above and stays within
``MAX_CORRECTION`` pixels of its chained position; anchors build on anchors, so after T
frames the error is that of T / ``anchor_every`` read-outs, not of T.
"""

import dataclasses

import numpy as np

from vidcorr.errors import UserError
from vidcorr.tracking.inversion import apply_map, displacement, invert_shift, sample_field

__all__ = ["TrackSettings", "PairReadout", "Chain", "patches", "similarity"]

FLAT = 0.02  # a template whose grey levels vary less than this (0-1 scale) is flat
TEMPLATE_UPDATE = 0.9  # a visible point's template takes its new look if this alike
MAX_ANCHOR = 32  # frames: the longest pair an anchor reads
MAX_CORRECTION = 1.0  # pixels: an anchor corrects drift; a larger move is not trusted
KEEP_SIMILARITY = 0.4  # a visible point whose look changes more is hidden (an occluder)


@dataclasses.dataclass(frozen=True)
class TrackSettings:
    """How tracks are chained (see the module docstring).

    Attributes:
      min_confidence: a point whose read-out confidence is below it is invisible.
      tolerance: pixels; the forward-backward checks' largest disagreement.
      consistency: read every pair both ways too (an independent forward-backward check,
        the two read-outs averaged) at twice the read-out cost; on the track study's
        clips it moved no mean score by more than 0.002 (``docs/tracking.md``).
      round_trip: a point's match traced back through the same read-out must come home
        (the check one read-out offers: it fails where the map folds).
      patch: the side of the re-finding template (odd, pixels).
      min_similarity: the template correlation a hidden point needs to be seen again.
      anchor_every: every this many frames, a point seen at both ends is moved from its
        position that many frames back by one read-out of that longer pair (0: never).
    """

    min_confidence: float = 0.05
    tolerance: float = 1.0
    consistency: bool = False
    round_trip: bool = True
    patch: int = 7
    min_similarity: float = 0.7
    anchor_every: int = 8

    def __post_init__(self):
        for name, low, high in (("min_confidence", 0.0, 1.0), ("tolerance", 0.0, 1e6),
                                ("min_similarity", -1.0, 1.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not low <= value <= high:
                raise UserError("%s must be a number in [%g, %g], got %r" % (name, low, high, value))
        for name in ("consistency", "round_trip"):
            if not isinstance(getattr(self, name), bool):
                raise UserError("%s must be True or False, got %r" % (name, getattr(self, name)))
        if isinstance(self.anchor_every, bool) or not isinstance(self.anchor_every, int) or \
                not 0 <= self.anchor_every <= MAX_ANCHOR:
            raise UserError("anchor_every must be a whole number of frames in [0, %d], got %r"
                            % (MAX_ANCHOR, self.anchor_every))
        if isinstance(self.patch, bool) or not isinstance(self.patch, int) or \
                not 3 <= self.patch <= 31 or self.patch % 2 == 0:
            raise UserError("patch must be an odd number of pixels in [3, 31], got %r"
                            % (self.patch,))


class PairReadout(object):
    """One consecutive pair's dense read-out, ready to move points either way.

    Args:
      position: ``[H, W, 2, 2]`` for each middle-frame pixel, its (x, y) in the first
        frame (``[..., 0, :]``) and the second.
      confidence: ``[H, W]``.
      swapped: None, or ``(position, confidence)`` of the pair read the other way
        round; then the two are averaged and ``disagreement`` kept.
    """

    def __init__(self, position, confidence, swapped=None):
        position = np.asarray(position, np.float64)
        confidence = np.asarray(confidence, np.float64)
        self.disagreement = None
        if swapped is not None:
            back = np.asarray(swapped[0], np.float64)[..., ::-1, :]  # its ends in our order
            self.disagreement = np.hypot(*np.moveaxis(position - back, -1, 0)).max(axis=-1)
            position = 0.5 * (position + back)
            confidence = np.minimum(confidence, swapped[1])
        self.confidence = confidence  # [H, W]
        self.shifts = (displacement(position[..., 0, :]), displacement(position[..., 1, :]))

    def arrays(self):
        """The arrays that define it, for :meth:`from_arrays` (a cache on disk)."""
        out = {"shift1": self.shifts[0], "shift3": self.shifts[1], "confidence": self.confidence}
        if self.disagreement is not None:
            out["disagreement"] = self.disagreement
        return {k: v.astype(np.float32) for k, v in out.items()}

    @classmethod
    def from_arrays(cls, arrays):
        """The read-out :meth:`arrays` described."""
        self = cls.__new__(cls)
        self.shifts = (np.asarray(arrays["shift1"], np.float64),
                       np.asarray(arrays["shift3"], np.float64))
        self.confidence = np.asarray(arrays["confidence"], np.float64)
        self.disagreement = (np.asarray(arrays["disagreement"], np.float64)
                             if "disagreement" in arrays else None)
        return self

    def step(self, points, forward, tolerance, round_trip=False):
        """Moves ``points`` ``[N, 2]`` from the first frame to the second (``forward``) or back.

        Args:
          points: ``[N, 2]`` (x, y).
          forward: from the first frame to the second; else back.
          tolerance: pixels, the checks' largest disagreement.
          round_trip: also trace each moved point back through the same read-out (its
            middle pixel found again from the other end): it must come home within
            ``tolerance``.

        Returns:
          ``(moved, passed, confidence)``: ``[N, 2]`` positions, ``[N]`` bool (the inversion
          converged and, with a swapped read-out, the forward-backward check holds; with
          ``round_trip``, so does the round trip) and ``[N]`` confidence.
        """
        own, other = (0, 1) if forward else (1, 0)
        middle, passed = invert_shift(self.shifts[own], points)
        moved = apply_map(self.shifts[other], middle)
        if self.disagreement is not None:
            passed &= sample_field(self.disagreement, middle) <= tolerance
        if round_trip:  # traced back from where it went, it comes home (no fold there)
            again, found = invert_shift(self.shifts[other], moved)
            home = apply_map(self.shifts[own], again)
            passed &= found & (np.hypot(*(home - points).T) <= tolerance)
        return moved, passed, sample_field(self.confidence, middle)


def patches(frame, points, side):
    """Grey-level patches ``[N, side * side]`` of ``frame`` ``[H, W, 3]`` (float, 0-1) around
    ``points`` ``[N, 2]``, sampled bilinearly (edges held)."""
    grey = np.asarray(frame, np.float64) @ np.array([0.299, 0.587, 0.114])
    r = np.arange(side) - side // 2
    offsets = np.stack(np.meshgrid(r, r), axis=-1).reshape(-1, 2)  # [P, 2] (dx, dy)
    where = np.asarray(points, np.float64)[:, None, :] + offsets[None]  # [N, P, 2]
    return sample_field(grey[..., None], where.reshape(-1, 2))[:, 0].reshape(len(where),
                                                                             len(offsets))


def similarity(a, b):
    """Zero-mean normalised cross-correlation of patches ``[N, P]`` row by row; where either
    is flat, 1 if their means agree within ``FLAT`` and -1 otherwise."""
    da, db = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    sa, sb = np.sqrt((da ** 2).mean(axis=1)), np.sqrt((db ** 2).mean(axis=1))
    flat = (sa < FLAT) | (sb < FLAT)
    ncc = (da * db).mean(axis=1) / np.maximum(sa * sb, 1e-12)
    same = np.abs(a.mean(axis=1) - b.mean(axis=1)) <= FLAT
    return np.where(flat, np.where(same, 1.0, -1.0), ncc)


class Chain(object):
    """Points followed in one direction through consecutive pairs (see the module docstring).

    Args:
      count: the number of points (all start inactive).
      size: ``(height, width)`` of the frames.
      settings: a :class:`TrackSettings`.

    Attributes:
      position: ``[N, 2]`` current (x, y), NaN before a point starts.
      visible: ``[N]`` bool.
      confidence: ``[N]`` the last step's confidence (1 at a point's start).
    """

    def __init__(self, count, size, settings):
        self.settings = settings
        self.size = tuple(size)
        self.position = np.full((count, 2), np.nan)
        self.visible = np.zeros(count, bool)
        self.confidence = np.zeros(count)
        self.active = np.zeros(count, bool)
        self.velocity = np.zeros((count, 2))
        self.template = np.zeros((count, settings.patch ** 2))

    def inside(self, points):
        """``[N]`` bool: within half a pixel of the frame's outer pixel centres."""
        h, w = self.size
        return np.all((points >= -0.5) & (points <= np.array([w, h]) - 0.5), axis=1)

    def start(self, which, points, frame):
        """Starts points ``which`` (indices) at ``points`` ``[n, 2]`` in ``frame`` [H, W, 3]."""
        points = np.asarray(points, np.float64).reshape(-1, 2)
        self.position[which] = points
        self.active[which] = True
        self.visible[which] = self.inside(points)
        self.confidence[which] = 1.0
        self.velocity[which] = 0.0
        self.template[which] = patches(frame, points, self.settings.patch)

    def advance(self, pair, frame, forward=True):
        """Moves the active points to the next frame ``frame`` (float [H, W, 3]) through the
        :class:`PairReadout` ``pair`` (whose second frame it is when ``forward``)."""
        s, idx = self.settings, np.flatnonzero(self.active)
        if not len(idx):
            return
        old, seen = self.position[idx], self.visible[idx]
        moved, passed, confidence = pair.step(old, forward, s.tolerance, s.round_trip)
        outside = ~self.inside(moved)
        came_in = ~self.inside(old) & ~outside  # no read-out sees it in both frames: its look
        look = patches(frame, moved, s.patch)
        alike = similarity(look, self.template[idx])
        alike_enough = alike >= np.where(seen, KEEP_SIMILARITY, s.min_similarity)
        visible = (passed | came_in) & alike_enough & ~outside & (
            confidence >= s.min_confidence)
        # the field moves a point that is seen, one that passes and one outside (the edge's
        # motion); a hidden one moves on at its last visible velocity ...
        guess = old + self.velocity[idx]
        take = visible | outside | ~self.inside(old) | seen & passed & alike_enough
        position = np.where(take[:, None], moved, guess)
        # ... and is looked for there in the new frame, traced back through the pair
        retry = np.flatnonzero(~seen & ~visible & ~take & self.inside(guess))
        if len(retry):
            _, back, back_confidence = pair.step(guess[retry], not forward, s.tolerance,
                                                s.round_trip)
            look[retry] = patches(frame, guess[retry], s.patch)
            alike[retry] = similarity(look[retry], self.template[idx][retry])
            found = back & (alike[retry] >= s.min_similarity) & (
                back_confidence >= s.min_confidence)
            visible[retry], confidence[retry] = found, back_confidence
        # the template follows a visible point's slow changes of look, not a sudden occluder
        update = visible & (came_in | (alike >= TEMPLATE_UPDATE))
        self.velocity[idx] = np.where(visible[:, None], position - old, self.velocity[idx])
        self.template[idx] = np.where(update[:, None], look, self.template[idx])
        self.position[idx], self.visible[idx], self.confidence[idx] = position, visible, confidence

    def reanchor(self, pair, earlier, seen_earlier, frame, forward=True):
        """Moves points seen at both ends of a longer pair from their positions at its first
        frame by its read-out: chained errors add up pair by pair, one read-out's do not.

        Args:
          pair: the :class:`PairReadout` of (the earlier frame, the current frame) (or, with
            ``forward`` False, of the current frame and the later one).
          earlier: ``[N, 2]`` the points' positions in the pair's other frame.
          seen_earlier: ``[N]`` bool, visible there.
          frame: the current frame (float [H, W, 3]).
          forward: the direction of the chain.

        Returns:
          ``[N]`` bool: the points moved (those that pass every check, with a move of at
          most ``MAX_CORRECTION`` pixels from their chained position).
        """
        s = self.settings
        idx = np.flatnonzero(self.active & self.visible & np.asarray(seen_earlier, bool))
        moved_any = np.zeros(len(self.active), bool)
        if not len(idx):
            return moved_any
        moved, passed, confidence = pair.step(earlier[idx], forward, s.tolerance, s.round_trip)
        alike = similarity(patches(frame, moved, s.patch), self.template[idx])
        ok = passed & self.inside(moved) & (confidence >= s.min_confidence) & (
            alike >= KEEP_SIMILARITY) & (
            np.linalg.norm(moved - self.position[idx], axis=1) <= MAX_CORRECTION)
        self.position[idx[ok]] = moved[ok]
        moved_any[idx[ok]] = True
        return moved_any
