"""vidcorr.track (vidcorr.apps.track): the default model on short clips of known motion."""

import time

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from vidcorr.apps.track import track, tracking_matcher
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion

H, W, LENGTH = 64, 96, 9
VELOCITY = (0.6, 0.3)  # pixels per frame: a constant sub-pixel translation


@pytest.fixture(scope="module")
def matcher():
    m = tracking_matcher()  # what track() builds when given none
    yield m
    m.close()


def _texture(seed, h, w):
    noise = np.random.RandomState(seed).uniform(size=(h, w, 3))
    return np.clip(0.5 + 3.0 * (ndimage.gaussian_filter(noise, (2.0, 2.0, 0)) - 0.5), 0, 1)


def _clip(length=LENGTH):
    return LayeredClip([Layer(_texture(0, 200, 240), LayerMotion(velocity=VELOCITY),
                              (W / 2, H / 2), (60, 60))], H, W, length)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    clip = _clip()
    for t in range(LENGTH):
        Image.fromarray(clip.frame(t)).save(str(folder / ("%03d.png" % t)))
    return str(folder)


def _queries(t):
    ys, xs = np.mgrid[16:H - 15:12, 16:W - 15:12]
    return np.column_stack([np.full(xs.size, t), xs.ravel(), ys.ravel()]).astype(float)


def test_chained_translation_drifts_no_more_than_the_pair_errors_add_up(clip_dir, matcher):
    queries = _queries(0)
    result = track(clip_dir, queries=queries, matcher=matcher, progress=False)
    truth, _ = _clip().truth(queries)
    # the per-pair error: one step from the true position of each frame
    from vidcorr.apps.track import _ReadOuts
    readouts = _ReadOuts(matcher, H, W, True)
    clip, steps = _clip(), []
    for k in range(LENGTH - 1):
        pair, _ = readouts.read(clip.frame(k) / 255.0, clip.frame(k + 1) / 255.0)
        moved, _, _ = pair.step(truth[:, k], True, 1.0)
        steps.append(np.linalg.norm(moved - truth[:, k + 1], axis=1))
    per_pair = np.mean(steps, axis=1)  # [T - 1]
    error = np.linalg.norm(result.tracks - truth, axis=-1)  # [N, T]
    assert result.visible.all()
    assert per_pair.max() < 0.3
    # the errors may add up (a bias of the read-out does), but chaining adds nothing: after
    # k frames, at most the sum of the first k pairs' errors (and a hundredth of a pixel)
    bound = np.concatenate([[0.0], np.cumsum(per_pair)])
    assert np.all(np.mean(error, axis=0) <= 1.05 * bound + 0.01)
    assert np.median(error[:, -1]) < 1.0


def test_the_tracking_sampler_takes_out_the_bilinear_drift(clip_dir, matcher):
    """Each pair's bilinear bias (a few hundredths of a pixel at these sub-pixel steps) adds
    up along the chain; the tracking default's B-spline sampler keeps the end within a few
    thousandths of a pixel."""
    assert matcher.options.refine_sampler == "bspline"
    queries = _queries(0)
    truth, _ = _clip().truth(queries)
    final = {}
    bilinear = tracking_matcher(refine_sampler="bilinear")
    try:
        for name, m in (("bspline", matcher), ("bilinear", bilinear)):
            result = track(clip_dir, queries=queries, matcher=m, progress=False)
            final[name] = np.median(np.linalg.norm(result.tracks[:, -1] - truth[:, -1], axis=-1))
    finally:
        bilinear.close()
    assert final["bspline"] < 0.006, final  # 0.0017 measured (bilinear 0.0147)
    assert final["bspline"] < final["bilinear"] / 3, final


@pytest.mark.parametrize("consistency", [False, True])  # one read-out per pair, or with its swap
def test_a_query_in_the_middle_is_tracked_both_ways(clip_dir, matcher, consistency):
    from vidcorr.tracking.chain import TrackSettings

    queries = np.vstack([_queries(4)[:6], _queries(0)[:2]])
    result = track(clip_dir, queries=queries, matcher=matcher, progress=False,
                   settings=TrackSettings(consistency=consistency))
    truth, _ = _clip().truth(queries)
    assert np.isfinite(result.tracks).all()  # before the query frame too
    np.testing.assert_array_equal(result.tracks[:6, 4], queries[:6, 1:])
    error = np.linalg.norm(result.tracks - truth, axis=-1)
    assert error[:6, :4].max() < 1.5 and error[:6, 5:].max() < 1.5  # backward and forward
    assert result.visible.all()


def test_the_most_confident_points(clip_dir, matcher):
    result = track(clip_dir, best=10, matcher=matcher, progress=False)
    q = result.queries
    assert len(q) == 10 and (q[:, 0] == 0).all()
    gaps = np.linalg.norm(q[:, None, 1:] - q[None, :, 1:], axis=-1) + 1e9 * np.eye(10)
    assert gaps.min() >= np.sqrt(H * W / 10.0) / 2 - 1e-9
    from vidcorr.errors import UserError
    with pytest.raises(UserError, match="unknown setting.s. stride; track takes .*grid"):
        track(clip_dir, stride=4, matcher=matcher, progress=False)


def test_frame_flows_of_a_real_match_at_frame_t_pixels(clip_dir, matcher):
    """Item 1 end to end: the dense match of frames 0 and 2, inverted to frame 0's own
    pixels, is the clip's motion (1.2, 0.6) there."""
    import vidcorr
    from vidcorr.errors import UserError

    clip = _clip()
    matches = matcher.match(clip.frame(0), clip.frame(2), stride=1)
    flows = vidcorr.frame_flows(matches)
    inner = (slice(8, H - 8), slice(8, W - 8))
    assert flows["valid_t"][inner].mean() > 0.95
    ok = flows["valid_t"][inner]
    error = np.linalg.norm(flows["t_to_t2"][inner][ok] - 2 * np.array(VELOCITY), axis=-1)
    assert np.median(error) < 0.15
    with pytest.raises(UserError, match="a match for every pixel"):
        vidcorr.frame_flows(matcher.match(clip.frame(0), clip.frame(2), stride=2))


def test_the_clocks_count_each_read_out_once(clip_dir, matcher, monkeypatch):
    """An anchor's read-out sits inside the chaining step: it is on the read-out clock only
    (it was on both, so bench_track's chaining time held the anchors' read-outs)."""
    from vidcorr.apps import track as track_module
    from vidcorr.tracking.chain import TrackSettings

    read, delay, calls = track_module._ReadOuts.read, 0.4, []

    def slow_read(self, a, b):  # every read-out takes at least `delay` seconds
        calls.append(1)
        time.sleep(delay)
        return read(self, a, b)

    monkeypatch.setattr(track_module._ReadOuts, "read", slow_read)
    result = track(clip_dir, queries=_queries(0)[:4], matcher=matcher, progress=False,
                   settings=TrackSettings(anchor_every=2))
    assert len(calls) == (LENGTH - 1) + (LENGTH - 1) // 2  # the pairs and four anchors
    assert result.seconds["read_out"] >= delay * len(calls)
    assert result.seconds["chain"] < delay  # four anchors' sleeps would be 1.6 s
    assert result.seconds["read_out"] + result.seconds["chain"] <= result.seconds["total"]
