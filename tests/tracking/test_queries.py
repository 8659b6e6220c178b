"""Where tracks start, and which frames are tracked."""

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.tracking.queries import (check_queries, confident_queries, frame_indices,
                                      grid_queries, read_queries)


def test_a_query_file_is_read_with_comments_and_commas(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("# t x y\n\n0 1.5 2\n3, 4, 5.25  # late\n")
    np.testing.assert_array_equal(read_queries(str(path)), [[0, 1.5, 2], [3, 4, 5.25]])


@pytest.mark.parametrize("text,message", [("", "holds no queries"), ("0 1\n", "a query is"),
                                          ("0.5 1 2\n", "a query is"), ("a b c\n", "a query is"),
                                          ("0 nan 2\n", "a query is")])
def test_bad_query_files(tmp_path, text, message):
    path = tmp_path / "q.txt"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_queries(str(path))


def test_grid_and_frames():
    q = grid_queries(5, 10, 20, 8)
    np.testing.assert_array_equal(q, [[5, 4, 4], [5, 12, 4]])
    np.testing.assert_array_equal(frame_indices(10, 2, 8, 3), [2, 5, 8])
    np.testing.assert_array_equal(frame_indices(10), np.arange(10))
    for args, message in (((10, 0, None, 0), "--every"), ((10, 5, 3, 1), "--end"),
                          ((2,), "fewer than 3"), ((10, -1), "--start")):
        with pytest.raises(UserError, match=message):
            frame_indices(*args)
    with pytest.raises(UserError, match="--grid"):
        grid_queries(0, 10, 20, 11)


def test_check_queries_names_the_first_bad_one():
    frames = np.array([0, 2, 4])
    np.testing.assert_array_equal(check_queries(np.array([[4, 1, 1], [0, 9.4, 0]]), frames,
                                                8, 10), [2, 0])
    with pytest.raises(UserError, match="query 2 .t=3. is not at a tracked frame"):
        check_queries(np.array([[0, 1, 1], [3, 1, 1]]), frames, 8, 10)
    with pytest.raises(UserError, match="query 1 .10, 1. at t=0 is outside the 10x8 frame"):
        check_queries(np.array([[0, 10, 1]]), frames, 8, 10)


def test_confident_queries_are_the_best_ones_spaced_apart():
    yy, xx = np.mgrid[0:20, 0:30]
    positions = np.stack([xx, yy], axis=-1).astype(float) + 0.25
    confidence = np.exp(-((xx - 10) ** 2 + (yy - 8) ** 2) / 50.0)
    q = confident_queries(7, positions, confidence, 5, 4.0)
    assert len(q) == 5 and (q[:, 0] == 7).all()
    np.testing.assert_array_equal(q[0], [7, 10.25, 8.25])  # the most confident first
    gaps = np.linalg.norm(q[:, None, 1:] - q[None, :, 1:], axis=-1) + 99 * np.eye(5)
    assert gaps.min() >= 4.0
    # greedy: each is the most confident point at least 4 px from those before it
    for k in range(1, 5):
        far = np.all(np.linalg.norm(positions[..., None, :] - q[None, None, :k, 1:], axis=-1)
                     >= 4.0, axis=-1)
        assert confidence[far].max() == pytest.approx(
            confidence[int(q[k, 2] - 0.25), int(q[k, 1] - 0.25)])
