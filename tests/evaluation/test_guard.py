"""The adaptation's matching guard (vidcorr.evaluation.guard): layered pairs of held-back
frames, scored against their motion in closed form."""

import numpy as np

import pytest

from vidcorr.errors import UserError
from vidcorr.evaluation import guard
from vidcorr.evaluation.guard import (GUARD_MOTION, check_settings, choose, guard_clips,
                                    layered_clip, match_score, rendered)


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

    def counted(truth):
        def inner(queries):
            calls.append(len(queries))
            return truth(queries)
        return inner

    for clip, _, _ in clips:
        clip.truth = counted(clip.truth)
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


def test_a_model_as_good_as_its_source_is_chosen(random_kernel_checkpoint):
    held = [_frames(4, size=(64, 96))]
    index, same = choose(random_kernel_checkpoint, [(7, random_kernel_checkpoint)], held, 2,
                         0.0, log=lambda m: None)
    assert index == 0 and same["passed"] and same["source_acc5"] == same["adapted_acc5"]
    assert same["pairs"] == 2 and same["points"] > 0 and same["chosen_step"] == 7
    assert same["tried"] == [{"step": 7, "acc5": same["source_acc5"]}]
    index, stricter = choose(random_kernel_checkpoint, [(7, random_kernel_checkpoint)], held,
                             2, -0.5, log=lambda m: None)  # must gain half the points: cannot
    assert index is None and not stricter["passed"] and stricter["chosen_step"] is None


def _shares(monkeypatch, shares, seconds=0.0):
    """``choose`` with each model's share given (``{model: share}``); each scoring takes
    ``seconds`` on a clock that only scoring moves."""
    clock, scored = [1000.0], []

    def share(model, clips, truths, threads):
        scored.append(model)
        clock[0] += seconds
        return shares[model], 100

    monkeypatch.setattr(guard, "_share", share)
    monkeypatch.setattr(guard.time, "time", lambda: clock[0])
    return scored


def test_the_best_candidate_that_passes_is_chosen(monkeypatch):
    held = [_frames(3)]
    scored = _shares(monkeypatch, {"src": 0.90, "a": 0.85, "b": 0.895, "c": 0.95})
    lines = []
    index, record = choose("src", [(30, "a"), (20, "b"), (10, "c")], held, 1, 0.01,
                           log=lines.append)
    assert index == 1 and scored == ["src", "a", "b"]  # c, beyond the first that passes, not
    assert record["tried"] == [{"step": 30, "acc5": 0.85}, {"step": 20, "acc5": 0.895}]
    assert record["chosen_step"] == 20 and record["adapted_acc5"] == 0.895
    assert record["passed"] and record["source_acc5"] == 0.9
    assert lines[1:] == ["guard: the weights of step 30: acc@5 0.850 (worse by more than 0.01)",
                         "guard: the weights of step 20: acc@5 0.895 (kept)"]
    scored[:] = []
    index, record = choose("src", [(30, "a"), (20, "a")], held, 1, 0.01, log=lambda m: None)
    assert index is None and not record["passed"] and record["adapted_acc5"] == 0.85
    assert len(record["tried"]) == 2 and record["chosen_step"] is None
    # a loss of exactly the tolerance passes
    assert choose("src", [(5, "b")], held, 1, 0.005, log=lambda m: None)[0] == 0


def test_the_deadline_stops_the_candidates_after_the_first(monkeypatch):
    held = [_frames(3)]
    scored = _shares(monkeypatch, {"src": 0.9, "a": 0.5, "b": 0.5, "c": 0.95}, seconds=10.0)
    # the source at 1010, a at 1020: b would end at 1030, past 1025
    index, record = choose("src", [(3, "a"), (2, "b"), (1, "c")], held, 1, 0.0,
                           deadline=1025.0, log=lambda m: None)
    assert index is None and scored == ["src", "a"] and len(record["tried"]) == 1
    scored = _shares(monkeypatch, {"src": 0.9, "a": 0.5, "b": 0.5, "c": 0.95}, seconds=10.0)
    index, _ = choose("src", [(3, "a"), (2, "b"), (1, "c")], held, 1, 0.0, deadline=1045.0,
                      log=lambda m: None)  # b ends at 1030, c at 1040
    assert index == 2 and scored == ["src", "a", "b", "c"]


@pytest.mark.parametrize("args, message", [
    (("yes", 4, 0.01, 3), "guard must be True or False"),
    ((True, 0, 0.01, 3), "guard_pairs must be an integer from 1 to 100"),
    ((True, 4, 0.01, 11), "guard_candidates must be an integer from 1 to 10"),
    ((True, 4, 0.01, 2.0), "guard_candidates must be an integer"),
    ((True, 4, -1.5, 3), "guard_tolerance must be from -1 to 1"),
])
def test_bad_settings_are_one_line_errors(args, message):
    with pytest.raises(UserError, match=message):
        check_settings(*args)
    check_settings(True, 4, 0.01, 3)
