"""The adaptation's matching guard (vidcorr.evaluation.guard): layered pairs of held-back
frames, scored against their motion in closed form."""

import numpy as np

from vidcorr.evaluation.guard import (GUARD_MOTION, compare, guard_clips, layered_clip,
                                    match_score, rendered)


class _Matches(object):
    def __init__(self, grid, p1, p3, valid):
        self.grid, self.p1, self.p3, self.valid = grid, p1, p3, valid


class _TruthMatcher(object):
    """Matches by the guard's translations in closed form: a middle-frame point on the
    foreground ellipse (where it is at frame 1) moves with the foreground, others with the
    background; ``error`` px is added along x to both ends, ``valid`` is every match's flag."""

    def __init__(self, size, error=0.0, valid=True):
        self.size, self.error, self.valid = size, error, valid

    def match(self, frame_t, frame_t2, stride):
        h, w = self.size
        ys, xs = np.mgrid[stride // 2:h:stride, stride // 2:w:stride]
        grid = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float64)  # [N, 2] (x, y)
        back, front = (np.asarray(m.velocity) for m in GUARD_MOTION)
        cx, cy, rx, ry = w * 0.55 + front[0], h * 0.5 + front[1], w // 5, h // 4
        on_front = ((grid[:, 0] - cx) / rx) ** 2 + ((grid[:, 1] - cy) / ry) ** 2 <= 1.0
        v = np.where(on_front[:, None], front, back)  # [N, 2] per frame
        off = np.array([self.error, 0.0])  # along x
        return _Matches(grid, grid - v + off, grid + v + off,
                        np.full(len(grid), self.valid))


def _frames(n, size=(48, 96), seed=0):
    rng = np.random.RandomState(seed)
    return (rng.rand(n, size[0], size[1], 3) * 255).astype(np.uint8)


def test_exact_matches_hit_every_point_seen_and_misses_count():
    clips = rendered(guard_clips([_frames(5)], 2))
    hits, points = match_score(_TruthMatcher((48, 96)), clips, stride=4)
    # the points seen in all three frames: most of the 12 x 24 grid of each clip, not all
    # (the foreground hides some, the border takes the fast ones)
    assert 0.5 * 2 * 288 < points < 2 * 288
    assert hits == points
    assert match_score(_TruthMatcher((48, 96), error=4.9), clips, stride=4) == (points, points)
    assert match_score(_TruthMatcher((48, 96), error=5.1), clips, stride=4) == (0, points)
    assert match_score(_TruthMatcher((48, 96), valid=False), clips, stride=4) == (0, points)


def test_the_truth_is_computed_once_for_every_model_scored():
    clips = rendered(guard_clips([_frames(5)], 2))
    calls = []
    for clip, _, _ in clips:
        clip.truth = (lambda truth: lambda q: calls.append(len(q)) or truth(q))(clip.truth)
    truths = {}
    first = match_score(_TruthMatcher((48, 96)), clips, stride=4, truths=truths)
    assert calls == [288, 288] and sorted(truths) == [0, 1]
    assert match_score(_TruthMatcher((48, 96), error=5.1), clips, stride=4,
                       truths=truths) == (0, first[1])
    assert calls == [288, 288]  # kept
    assert match_score(_TruthMatcher((48, 96)), clips, stride=8, truths=truths) != first
    assert calls == [288, 288, 72, 72]  # another grid: computed again


def test_clips_take_their_frames_from_every_held_back_part_in_turn():
    """Flat frames of distinct colours: the background's colour at a corner and the
    foreground's at the ellipse's centre name the frames each clip was cut from."""
    def flat(values):
        return np.stack([np.full((48, 96, 3), v, np.uint8) for v in values])

    held = [flat([10, 20, 30]), flat([100, 110, 120, 130, 140])]
    clips = guard_clips(held, 4)
    seen = [(int(c.frame(0)[2, 2, 0]), int(c.frame(0)[24, 53, 0])) for c in clips]
    # clip k from part k % 2; the j-th of a part at frame j n / 2, the front n // 2 later
    assert seen == [(10, 20), (100, 120), (20, 30), (120, 140)]


def test_a_clip_is_its_background_behind_a_moving_ellipse():
    frames = _frames(2)
    clip = layered_clip(frames[0], frames[1])
    assert clip.size == (48, 96) and clip.length == 3
    queries = np.array([[1.0, 20.0, 10.0], [1.0, 96 * 0.55 - 7.0, 24.0 + 2.0]])  # back, front
    tracks, visible = clip.truth(queries)
    np.testing.assert_allclose(tracks[0, 2] - tracks[0, 0], 2 * np.array([4.0, -1.5]))
    np.testing.assert_allclose(tracks[1, 2] - tracks[1, 0], 2 * np.array([-7.0, 2.0]))
    assert visible.all()


def test_compare_keeps_a_model_as_good_as_its_source(random_kernel_checkpoint):
    held = [_frames(4, size=(64, 96))]
    same = compare(random_kernel_checkpoint, random_kernel_checkpoint, held, 2, 0.0,
                   log=lambda m: None)
    assert same["passed"] and same["source_acc5"] == same["adapted_acc5"]
    assert same["pairs"] == 2 and same["points"] > 0
    stricter = compare(random_kernel_checkpoint, random_kernel_checkpoint, held, 2, -0.5,
                       log=lambda m: None)  # must gain half the points: cannot
    assert not stricter["passed"]
