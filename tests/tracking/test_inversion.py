"""Flows at a frame's own pixels: the inverted read-out against closed-form affine maps."""

import numpy as np
import pytest

from vidcorr.tracking.inversion import apply_map, frame_flows, invert_map, sample_field


def _affine(angle_deg, zoom, shift):
    a = np.deg2rad(angle_deg)
    return zoom * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]), np.asarray(shift, float)


def _map(h, w, matrix, offset):
    yy, xx = np.mgrid[0:h, 0:w]
    grid = np.stack([xx, yy], axis=-1).astype(float)
    return grid @ matrix.T + offset  # [H, W, 2]


def test_sample_field_is_bilinear_and_clamped():
    field = np.arange(12, dtype=float).reshape(3, 4, 1)  # value = 4 y + x
    got = sample_field(field, np.array([[1.25, 0.5], [2.0, 2.0], [-3.0, 1.0], [9.0, 9.0]]))
    np.testing.assert_allclose(got[:, 0], [4 * 0.5 + 1.25, 10.0, 4.0, 11.0])


def test_inverse_of_an_affine_map_is_its_closed_form():
    h, w = 40, 56
    a1, b1 = _affine(4.0, 1.04, (-1.7, 2.3))  # middle -> frame t: rotation, zoom, shift
    targets = np.random.RandomState(0).uniform([8, 8], [w - 8, h - 8], (200, 2))
    middle, valid = invert_map(_map(h, w, a1, b1), targets)
    np.testing.assert_allclose(middle, (targets - b1) @ np.linalg.inv(a1).T, atol=1e-6)
    assert valid.all()


def test_frame_flows_match_the_closed_form_both_ways():
    h, w = 36, 48
    a1, b1 = _affine(-3.0, 0.97, (1.2, -0.6))
    a3, b3 = _affine(2.5, 1.03, (-0.9, 1.4))
    position = np.stack([_map(h, w, a1, b1), _map(h, w, a3, b3)], axis=2)  # [H, W, 2, 2]
    flows = frame_flows(position)
    yy, xx = np.mgrid[0:h, 0:w]
    x = np.stack([xx, yy], axis=-1).astype(float)
    np.testing.assert_allclose(flows["middle_to_t2"], _map(h, w, a3, b3) - x, atol=1e-9)
    for own, other, name in (((a1, b1), (a3, b3), "t_to_t2"), ((a3, b3), (a1, b1), "t2_to_t")):
        m = (x - own[1]) @ np.linalg.inv(own[0]).T  # the middle pixel seen at x
        # the map is known between the outer pixel centres; within half a pixel beyond
        # them it is the edge's displacement, not the affine map's
        seen = np.all((m >= 0) & (m <= [w - 1, h - 1]), axis=-1)
        unseen = np.any((m < -1) | (m > [w, h]), axis=-1)
        mask = flows["valid_" + name.split("_to_")[0]]
        assert mask[seen].all() and not mask[unseen].any() and seen.sum() > 0.8 * h * w
        truth = m @ other[0].T + other[1] - x
        np.testing.assert_allclose(flows[name][seen], truth[seen], atol=1e-6)
        assert np.isnan(flows[name][~mask]).all()


def test_a_point_no_middle_pixel_maps_to_is_invalid():
    h, w = 20, 40
    position = _map(h, w, np.eye(2), (0.0, 0.0))
    position[:, 20:, 0] += 6.0  # the right half moves 6 px right: frame t's columns 20-25 are not seen
    middle, valid = invert_map(position, np.array([[22.0, 10.0], [10.0, 10.0], [30.0, 10.0]]))
    assert valid.tolist() == [False, True, True]
    np.testing.assert_allclose(middle[1:], [[10.0, 10.0], [24.0, 10.0]], atol=1e-9)


def test_points_outside_the_frame_move_with_the_edge():
    h, w = 16, 16
    shift = np.zeros((h, w, 2))
    shift[..., 0] = 2.5
    np.testing.assert_allclose(apply_map(shift, [[-4.0, 3.0], [30.0, 20.0]]), [[-1.5, 3.0], [32.5, 20.0]])
    middle, valid = invert_map(shift + _map(h, w, np.eye(2), 0), np.array([[-4.0, 3.0]]))
    np.testing.assert_allclose(middle, [[-6.5, 3.0]])
    assert not valid[0]  # outside the middle frame


@pytest.mark.parametrize("iterations", [0, 3])
def test_few_iterations_leave_a_residual_that_is_flagged(iterations):
    h, w = 40, 40
    a1, b1 = _affine(25.0, 1.3, (0.0, 0.0))  # far from a translation: slow convergence
    targets = np.array([[30.0, 30.0]])
    middle, valid = invert_map(_map(h, w, a1, b1), targets, iterations=iterations)
    exact = (targets - b1) @ np.linalg.inv(a1).T
    assert not valid[0] and np.abs(middle - exact).max() > 0.05
