"""The adaptation's matching guard: does an adapted model still match large motion?

Adaptation chooses its weights by the interpolation PSNR on the clip's held-back
triplets, which moves little where the clip moves a lot: a model can gain there and match
large motion worse than its source did (docs/adaptation.md). Before an adapted model is
written, the guard measures that on ground truth made from the same held-back frames.
Each of ``pairs`` layered clips (:mod:`vidcorr.tracking.clips`) has one held-back frame as
its background and an ellipse cut from another in front, moving 4.3 and 7.3 px per frame
(:data:`GUARD_MOTION`: beyond the 3.5 px of the layered triplets adaptation trains on) in
known motion. Frames 0 and 2 of each are matched by the model with the default read-out
on a ``GUARD_STRIDE`` grid of the middle frame, and the points seen in all three frames
are scored: a hit is a valid match within ``GUARD_PIXELS`` of the truth in both frames,
an invalid match is a miss. :func:`choose` scores the source model and the adapted
candidates (the best validations' weights, best first) on the same clips and picks the
first that loses at most ``tolerance`` of that share; none, and the adaptation writes the
source model.

The held-back frames are those adaptation never trains on nor takes layered textures
from, so the clips are new to both models.
"""

import time

import numpy as np

from vidcorr.errors import UserError
from vidcorr.io.video import resize_float
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion

__all__ = ["GUARD_MOTION", "GUARD_PIXELS", "GUARD_STRIDE", "layered_clip", "guard_clips",
           "rendered", "match_score", "check_settings", "choose"]

GUARD_MOTION = (LayerMotion(velocity=(4.0, -1.5)), LayerMotion(velocity=(-7.0, 2.0)))
GUARD_PIXELS = 5.0  # a hit is within this in both frames
GUARD_STRIDE = 8  # the middle frame's grid, as scripts/evaluate.py scores
MARGIN = 24  # the background is enlarged by this on each side, to cover its motion


def layered_clip(background, front, motion=GUARD_MOTION):
    """A three-frame :class:`LayeredClip` of ``background``'s size: it (enlarged by
    ``MARGIN`` px a side) behind an ellipse cut from the middle of ``front``.

    Args:
      background: ``[H, W, 3]`` uint8 frame.
      front: ``[h, w, 3]`` uint8 frame, any size (its middle is cut; reflected beyond).
      motion: ``(background, foreground)`` :class:`LayerMotion`.
    """
    h, w = background.shape[:2]
    back = resize_float(background / 255.0, h + 2 * MARGIN, w + 2 * MARGIN)
    front = front / 255.0
    bg = Layer(back, motion[0], (w / 2.0, h / 2.0), offset=(MARGIN, MARGIN))
    cx, cy = w * 0.55, h * 0.5
    fg = Layer(front, motion[1], (cx, cy),
               offset=(front.shape[1] / 2.0 - cx, front.shape[0] / 2.0 - cy),
               ellipse=(cx, cy, w // 5, h // 4))
    return LayeredClip([bg, fg], h, w, 3)


def guard_clips(held, pairs):
    """``pairs`` layered clips from held-back frames, taken in turn from each clip.

    Args:
      held: a list of ``[n, H, W, 3]`` uint8 arrays (n >= 1), one per clip.
      pairs: how many clips to make.

    Returns:
      A list of :class:`LayeredClip`: the k-th from clip ``k % len(held)``, its background
      spread over that clip's frames and its foreground half the frames later.
    """
    clips, per_clip = [], -(-pairs // len(held))  # the most clips one source gives
    for k in range(pairs):
        frames = held[k % len(held)]
        n = len(frames)
        i = (k // len(held)) * n // per_clip  # spread over the source's frames
        clips.append(layered_clip(frames[i], frames[(i + n // 2) % n]))
    return clips


def rendered(clips):
    """``[(clip, frame 0, frame 2)]``, the frames ``[H, W, 3]`` float32 in [0, 1]: rendered
    once for every model scored on them."""
    return [(clip,) + tuple(clip.frame(t).astype(np.float32) / 255.0 for t in (0, 2))
            for clip in clips]


def match_score(matcher, pairs, stride=GUARD_STRIDE, truths=None):
    """``(hits, points)`` of a matcher on layered clips (see the module docstring).

    Args:
      matcher: a :class:`vidcorr.readout.matching.Matcher` (or anything with its
        ``match(frame_t, frame_t2, stride=...)``).
      pairs: :func:`rendered` clips (each of at least three frames).
      stride: the middle frame's grid step.
      truths: a dict kept across calls on the same ``pairs``: each clip's truth at the
        matches' grid, computed once for every model scored (None: not kept).

    Returns:
      ``(hits, points)``: ints.
    """
    hits = points = 0
    truths = {} if truths is None else truths
    for k, (clip, f0, f2) in enumerate(pairs):
        m = matcher.match(f0, f2, stride=stride)
        grid = np.asarray(m.grid, np.float64)  # [N, 2] (x, y) on the middle frame
        if k not in truths or not np.array_equal(truths[k][0], grid):
            truths[k] = (grid,) + clip.truth(np.column_stack([np.ones(len(grid)), grid]))
        _, tracks, visible = truths[k]  # [N, T, 2], [N, T]
        seen = visible[:, :3].all(axis=1)
        error = np.maximum(np.linalg.norm(m.p1 - tracks[:, 0], axis=1),
                           np.linalg.norm(m.p3 - tracks[:, 2], axis=1))
        hits += int(np.sum(seen & m.valid & (error <= GUARD_PIXELS)))
        points += int(seen.sum())
    return hits, points


def check_settings(guard, pairs, tolerance, candidates):
    """Raises a one-line :class:`UserError` for bad guard settings (:func:`choose`'s)."""
    if not isinstance(guard, bool):
        raise UserError("guard must be True or False, got %r" % (guard,))
    for name, value, high in (("guard_pairs", pairs, 100), ("guard_candidates", candidates, 10)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise UserError("%s must be an integer from 1 to %d, got %r" % (name, high, value))
    if isinstance(tolerance, bool) or not (isinstance(tolerance, (int, float)) and
                                           -1 <= tolerance <= 1):
        raise UserError("guard_tolerance must be from -1 to 1, got %r" % (tolerance,))


def _share(model, clips, truths, threads):
    """The share of :func:`match_score`'s points that ``model`` hits."""
    from vidcorr.readout.matching import Matcher

    matcher = Matcher(model, threads=threads, max_seconds=0)
    try:
        hits, points = match_score(matcher, clips, truths=truths)
    finally:
        matcher.close()
    return hits / float(max(points, 1)), points


def choose(source, candidates, held, pairs, tolerance, threads=None, deadline=None,
           log=print):
    """The first candidate, in the order given, that matches large motion about as well as
    the source model, all scored on the same layered clips.

    Args:
      source: the source model (checkpoint prefix, model folder or run).
      candidates: ``[(step, model)]``, the adapted weights best first (by held-back PSNR).
      held: held-back frames per clip (see :func:`guard_clips`).
      pairs: the number of layered clips.
      tolerance: the most of the hit share a candidate may lose against the source.
      threads: the matchers' intra-op threads (None: TensorFlow's choice).
      deadline: after the first candidate, another is scored only if the last one's time
        still fits before this (``time.time()`` seconds; None: no limit).
      log: print-like.

    Returns:
      ``(index, record)``: the chosen candidate's index in ``candidates`` or None, and the
      card's ``guard`` record: ``pairs``, ``points``, ``motion_px_per_frame``,
      ``source_acc5``, ``tried`` (``[{"step", "acc5"}]`` in the order scored),
      ``adapted_acc5`` (the chosen one's, else the first's), ``chosen_step``,
      ``tolerance``, ``passed`` and ``seconds``.
    """
    start = time.time()
    clips, truths = rendered(guard_clips(held, pairs)), {}
    source_share, points = _share(source, clips, truths, threads)
    speeds = [round(float(np.hypot(*m.velocity)), 1) for m in GUARD_MOTION]
    log("guard: large motion on %d layered pairs of held-back frames (%d points): the source "
        "model's acc@5 %.3f" % (pairs, points, source_share))
    tried, chosen = [], None
    for index, (step, model) in enumerate(candidates):
        began = time.time()
        share = _share(model, clips, truths, threads)[0]
        tried.append({"step": int(step), "acc5": round(share, 4)})
        # a loss of exactly the tolerance passes (the shares are fractions of one count)
        passed = share >= source_share - tolerance - 1e-9
        log("guard: the weights of step %d: acc@5 %.3f (%s)" % (
            step, share, "kept" if passed else "worse by more than %g" % tolerance))
        if passed:
            chosen = index
            break
        now = time.time()
        if deadline is not None and now + (now - began) > deadline:
            break
    shown = tried[-1] if chosen is not None else (tried[0] if tried else {})  # or the best's
    record = {"pairs": int(pairs), "points": int(points), "motion_px_per_frame": speeds,
              "source_acc5": round(source_share, 4), "tried": tried,
              "adapted_acc5": shown.get("acc5"),
              "chosen_step": None if chosen is None else tried[-1]["step"],
              "tolerance": tolerance, "passed": chosen is not None,
              "seconds": round(time.time() - start, 1)}
    return chosen, record
