"""Chaining pair read-outs: exact read-outs of clips with known motion (the closed form),
so what is tested is the chaining, visibility and re-finding, not the network."""

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.tracking.chain import Chain, PairReadout, TrackSettings, patches, similarity
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion

H, W = 48, 64


def _texture(rng, h, w, smooth=1.5):
    from scipy import ndimage
    noise = rng.uniform(size=(h, w, 3))
    return np.clip(0.5 + 2.5 * (ndimage.gaussian_filter(noise, (smooth, smooth, 0)) - 0.5), 0, 1)


def oracle_pair(clip, k, later=None, bias=0.0):
    """The exact read-out of frames (k, later) (default k+1), plus ``bias`` px on x: the
    middle frame is frame k itself; the check fails (disagreement 10 px) where a pixel's
    point is hidden in the later frame."""
    later = k + 1 if later is None else later
    yy, xx = np.mgrid[0:H, 0:W]
    pixels = np.stack([xx, yy], axis=-1).reshape(-1, 2).astype(float)
    top = clip.which_layer(pixels, k)
    there = np.zeros_like(pixels)
    for i, layer in enumerate(clip.layers):
        on = top == i
        there[on] = layer.forward(layer.backward(pixels[on], k), later)
    hidden = clip.which_layer(there, later) != top
    there[:, 0] += bias
    return PairReadout.from_arrays({
        "shift1": np.zeros((H, W, 2)), "shift3": (there - pixels).reshape(H, W, 2),
        "confidence": np.ones((H, W)), "disagreement": np.where(hidden, 10.0, 0.0).reshape(H, W)})


def follow(clip, queries_xy, length, settings=TrackSettings()):
    chain = Chain(len(queries_xy), (H, W), settings)
    chain.start(np.arange(len(queries_xy)), queries_xy, clip.frame(0) / 255.0)
    tracks, visible = [chain.position.copy()], [chain.visible.copy()]
    for k in range(length - 1):
        chain.advance(oracle_pair(clip, k), clip.frame(k + 1) / 255.0)
        tracks.append(chain.position.copy())
        visible.append(chain.visible.copy())
    return np.stack(tracks, 1), np.stack(visible, 1)


def _grid(step=6):
    ys, xs = np.mgrid[3:H:step, 3:W:step]
    return np.column_stack([xs.ravel(), ys.ravel()]).astype(float)


def test_chaining_exact_subpixel_motion_accumulates_no_drift():
    rng = np.random.RandomState(0)
    clip = LayeredClip([Layer(_texture(rng, 200, 200), LayerMotion(
        velocity=(0.37, -0.23), rotation=0.4, zoom=0.004), (W / 2, H / 2), (70, 70))], H, W, 20)
    queries = _grid()
    tracks, visible = follow(clip, queries, 20)
    truth, truth_visible = clip.truth(np.column_stack([np.zeros(len(queries)), queries]))
    seen = truth_visible & visible
    assert seen[:, -1].sum() > 0.6 * len(queries)  # the zoom and turn take the corners out
    core = np.all((truth >= 0) & (truth <= [W - 1, H - 1]), axis=-1) & seen
    np.testing.assert_allclose(tracks[core], truth[core], atol=1e-6)
    # within half a pixel past the outer pixel centres the edge's displacement is held
    np.testing.assert_allclose(tracks[seen], truth[seen], atol=5e-3)
    np.testing.assert_array_equal(visible, truth_visible)


def test_visibility_turns_off_when_a_point_leaves_and_on_when_it_returns():
    rng = np.random.RandomState(1)
    # the background swings 12 px right and back: points near the right edge leave and return
    clip = LayeredClip([Layer(_texture(rng, 120, 140), LayerMotion(wobble=(12.0, 0.0), period=16),
                              (W / 2, H / 2), (40, 40))], H, W, 17)
    queries = np.array([[58.0, 20.0], [55.3, 30.7], [20.0, 20.0]])
    tracks, visible = follow(clip, queries, 17)
    truth, truth_visible = clip.truth(np.column_stack([np.zeros(3), queries]))
    assert not truth_visible[0].all() and truth_visible[0, -1]  # it leaves and comes back
    np.testing.assert_array_equal(visible, truth_visible)
    np.testing.assert_allclose(tracks, truth, atol=1e-6)  # outside, it moves with the edge


def test_occluded_points_are_hidden_and_found_again_not_attached_to_the_occluder():
    rng = np.random.RandomState(2)
    background = Layer(_texture(rng, 100, 120), LayerMotion(velocity=(0.5, 0.0)), (W / 2, H / 2),
                       (30, 30))
    disc = Layer(_texture(rng, 30, 30, smooth=1.0), LayerMotion(velocity=(2.5, 0.0)),
                 (10.0, 24.0), (5.0, -9.0), ellipse=(10.0, 24.0, 9.0, 9.0))
    clip = LayeredClip([background, disc], H, W, 20)
    queries = np.array([[26.0, 24.0], [30.0, 22.0], [34.0, 26.0], [10.0, 24.0], [5.0, 5.0]])
    tracks, visible = follow(clip, queries, 20)
    truth, truth_visible = clip.truth(np.column_stack([np.zeros(len(queries)), queries]))
    assert (~truth_visible[:3]).sum() >= 9  # the disc passes over the first three
    assert truth_visible[:3, -1].all()  # and they are seen again at the end
    # a point is seen again one frame after it shows: the first pair that sees it in both
    reappears = truth_visible & ~np.roll(truth_visible, 1, axis=1)
    reappears[:, 0] = False
    np.testing.assert_array_equal(visible, truth_visible & ~reappears)
    seen = truth_visible & visible
    np.testing.assert_allclose(tracks[seen], truth[seen], atol=1e-6)


def test_a_hidden_point_moves_on_at_its_last_velocity():
    pair = PairReadout.from_arrays({"shift1": np.zeros((H, W, 2)), "shift3": np.full((H, W, 2), 1.5),
                                    "confidence": np.ones((H, W)),
                                    "disagreement": np.zeros((H, W))})
    frame = _texture(np.random.RandomState(3), H, W)
    chain = Chain(1, (H, W), TrackSettings())
    chain.start([0], [[20.0, 20.0]], frame)
    chain.advance(pair, np.roll(frame, (1, 1), axis=(0, 1)))  # moved 1 px, the template looks 1.5 px
    assert chain.visible[0]
    hidden = PairReadout.from_arrays(dict(pair.arrays(), disagreement=np.full((H, W), 9.0)))
    chain.advance(hidden, frame)
    assert not chain.visible[0]
    np.testing.assert_allclose(chain.position[0], [23.0, 23.0])  # 21.5 + 1.5 each way


def test_the_round_trip_fails_exactly_where_the_map_folds():
    # middle pixels left of column 30 move 4 px right, the rest stay: frame t's columns 26-29
    # land on 30-33, which belong to the middle pixels that stayed (a fold: hidden there)
    yy, xx = np.mgrid[0:H, 0:W].astype(float)
    fold = np.stack([np.where(xx < 30, 4.0, 0.0), np.zeros((H, W))], axis=-1)
    smooth = np.stack([0.02 * xx + 0.5, -0.01 * yy + 0.3], axis=-1)  # an affine motion
    points = np.column_stack([np.arange(10.0, 45.0), np.full(35, 20.0)])  # columns 10-44
    for shift, folded in ((fold, (points[:, 0] >= 26) & (points[:, 0] <= 29)),
                          (smooth, np.zeros(len(points), bool))):
        pair = PairReadout.from_arrays({"shift1": np.zeros((H, W, 2)), "shift3": shift,
                                        "confidence": np.ones((H, W))})
        moved, plain, _ = pair.step(points, True, 1.0)
        np.testing.assert_allclose(moved, points + shift[20, points[:, 0].astype(int)])
        assert plain.all()  # one read-out, no swap: only the inversion is checked
        again, checked, _ = pair.step(points, True, 1.0, round_trip=True)
        np.testing.assert_array_equal(again, moved)
        boundary = np.abs(points[:, 0] - 29.5) < 1  # the shift blends between 29 and 30
        np.testing.assert_array_equal(checked[~boundary], ~folded[~boundary])


def test_patches_and_similarity():
    frame = _texture(np.random.RandomState(4), H, W)
    a = patches(frame, np.array([[20.0, 20.0], [30.5, 10.25]]), 5)
    grey = frame @ np.array([0.299, 0.587, 0.114])
    np.testing.assert_allclose(a[0].reshape(5, 5), grey[18:23, 18:23])
    assert similarity(a, a).min() > 0.999 and similarity(a, 1 - a).max() < -0.999
    flat = np.full((1, 25), 0.5)
    assert similarity(flat, flat + 0.01)[0] == 1.0 and similarity(flat, flat + 0.2)[0] == -1.0


@pytest.mark.parametrize("field,value", [("tolerance", -1.0), ("min_confidence", 2.0),
                                         ("patch", 4), ("consistency", "yes"),
                                         ("round_trip", 1),
                                         ("min_similarity", "x")])
def test_bad_settings_are_one_line_errors(field, value):
    with pytest.raises(UserError, match=field):
        TrackSettings(**{field: value})


def test_anchors_keep_a_biased_chain_from_drifting():
    rng = np.random.RandomState(5)
    clip = LayeredClip([Layer(_texture(rng, 160, 180), LayerMotion(velocity=(0.6, 0.2)),
                              (W / 2, H / 2), (50, 50))], H, W, 17)
    queries = np.array([[20.0, 20.0], [40.0, 30.0]])
    truth, _ = clip.truth(np.column_stack([np.zeros(2), queries]))
    errors = {}
    for every in (0, 8):
        chain = Chain(2, (H, W), TrackSettings(anchor_every=every))
        chain.start([0, 1], queries, clip.frame(0) / 255.0)
        history = [chain.position.copy()]
        for k in range(16):
            frame = clip.frame(k + 1) / 255.0
            chain.advance(oracle_pair(clip, k, bias=0.1), frame)  # 0.1 px too far each pair
            if every and (k + 1) % every == 0:
                start = k + 1 - every
                moved = chain.reanchor(oracle_pair(clip, start, k + 1, bias=0.1),
                                       history[start], np.ones(2, bool), frame)
                assert moved.all()
            history.append(chain.position.copy())
        errors[every] = np.abs(np.array(history) - truth.transpose(1, 0, 2))[..., 0]
    np.testing.assert_allclose(errors[0][-1], 1.6, atol=1e-6)  # 16 pairs of 0.1 px
    np.testing.assert_allclose(errors[8][-1], 0.2, atol=1e-6)  # two anchors of 0.1 px
    np.testing.assert_allclose(errors[8][8], 0.1, atol=1e-6)
