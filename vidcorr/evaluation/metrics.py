"""Scores for matches against ground truth, and SSIM for interpolated frames.

A set of matches ``(p1, p3)`` (points in image 1 and image 2) is scored
where the ground truth is valid at ``round(p1)``: the endpoint error of a
match is ``|(p3 - p1) - gt(round(p1))|``. :func:`match_metrics` reports

* ``acc@T``: the share of scored matches with an endpoint error <= T px
  (T = 1, 2, 5, 10 by default),
* ``mean_epe`` and ``median_epe`` in pixels,
* ``matches``: how many were scored, and ``coverage``: that count over the
  grid points where the ground truth is valid (for grid-based methods);
* ``acc@T/F%``: accuracy of the most confident fraction F of the scored
  matches (T in ``COVERAGE_THRESHOLDS``, F in ``COVERAGE_FRACTIONS``), so a
  sparse matcher that knows where it is right is compared fairly with a dense
  one. A method without a confidence is ranked at random (a fixed seed).
"""

import numpy as np

from vidcorr.errors import UserError

__all__ = ["THRESHOLDS", "COVERAGE_FRACTIONS", "COVERAGE_THRESHOLDS", "endpoint_errors",
           "match_metrics", "coverage_accuracy", "ssim", "dense_to_matches"]

THRESHOLDS = (1, 2, 5, 10)
COVERAGE_FRACTIONS = (0.25, 0.5)
COVERAGE_THRESHOLDS = (1, 5)


def endpoint_errors(p1, p3, truth):
    """Endpoint errors of matches against a :class:`vidcorr.evaluation.groundtruth.GroundTruth`.

    Args:
      p1: ``[N, 2]`` (x, y) in image 1.
      p3: ``[N, 2]`` (x, y) in image 2.
      truth: the ground truth (image-1 pixels).

    Returns:
      ``(errors [M], scored [N] bool)``: the errors of the M matches whose
      rounded ``p1`` lies inside the image on a valid ground-truth pixel.
    """
    p1, p3 = np.asarray(p1, np.float64).reshape(-1, 2), np.asarray(p3, np.float64).reshape(-1, 2)
    h, w = truth.size
    ij = np.rint(p1).astype(np.int64)
    inside = (ij[:, 0] >= 0) & (ij[:, 0] < w) & (ij[:, 1] >= 0) & (ij[:, 1] < h)
    scored = inside.copy()
    scored[inside] = truth.valid[ij[inside, 1], ij[inside, 0]]
    gt = truth.flow[ij[scored, 1], ij[scored, 0]].astype(np.float64)  # [M, 2]
    errors = np.linalg.norm((p3[scored] - p1[scored]) - gt, axis=1)
    return errors, scored


def coverage_accuracy(errors, confidence, fractions=COVERAGE_FRACTIONS,
                      thresholds=COVERAGE_THRESHOLDS, seed=0):
    """Accuracy of the most confident share of matches: ``{"acc@T/F%": value}``.

    Args:
      errors: ``[M]`` endpoint errors.
      confidence: ``[M]`` scores (higher: more confident), or None to rank
        at random with ``seed``.
      fractions: shares of the matches to keep, each in (0, 1]; the top
        ``ceil(F * M)`` are kept (ties broken by order).
      thresholds: accuracy thresholds in pixels.
      seed: the random ranking's seed.
    """
    errors = np.asarray(errors, np.float64)
    if confidence is None:
        confidence = np.random.RandomState(seed).rand(len(errors))
    order = np.argsort(-np.asarray(confidence, np.float64), kind="stable")
    out = {}
    for f in fractions:
        top = errors[order[:int(np.ceil(f * len(errors)))]]
        for t in thresholds:
            out["acc@%g/%d%%" % (t, round(100 * f))] = (
                float(np.mean(top <= t)) if len(top) else float("nan"))
    return out


def match_metrics(p1, p3, truth, grid_points=None, thresholds=THRESHOLDS, confidence=None):
    """Accuracy, endpoint error and counts of a set of matches.

    Args:
      p1: ``[N, 2]`` (x, y) in image 1.
      p3: ``[N, 2]`` (x, y) in image 2.
      truth: a :class:`vidcorr.evaluation.groundtruth.GroundTruth`.
      grid_points: ``[G, 2]`` (x, y) of the grid the matches were sought on;
        gives ``coverage`` (``None`` for keypoint methods).
      thresholds: the accuracy thresholds in pixels.
      confidence: ``[N]`` per-match confidence for the ``acc@T/F%`` columns
        (None: random ranking); only grid-based methods get these columns.

    Returns:
      A dict: ``acc@T`` per threshold, ``mean_epe``, ``median_epe``,
      ``matches`` and ``coverage`` (NaN / None where undefined), and with
      ``grid_points`` the ``acc@T/F%`` columns.
    """
    errors, scored = endpoint_errors(p1, p3, truth)
    out = {}
    for t in thresholds:
        out["acc@%g" % t] = float(np.mean(errors <= t)) if len(errors) else float("nan")
    out["mean_epe"] = float(np.mean(errors)) if len(errors) else float("nan")
    out["median_epe"] = float(np.median(errors)) if len(errors) else float("nan")
    out["matches"] = int(len(errors))
    out["coverage"] = None
    if grid_points is not None:
        g = np.asarray(grid_points).reshape(-1, 2).astype(np.int64)
        valid_grid = int(np.sum(truth.valid[g[:, 1], g[:, 0]]))
        out["coverage"] = float(len(errors)) / valid_grid if valid_grid else float("nan")
        out.update(coverage_accuracy(
            errors, None if confidence is None else np.asarray(confidence)[scored]))
    return out


def dense_to_matches(flow, points):
    """Samples a dense flow ``[H, W, 2]`` at integer grid points: ``(p1, p3)``."""
    pts = np.asarray(points).reshape(-1, 2).astype(np.int64)
    p1 = pts.astype(np.float64)
    return p1, p1 + np.asarray(flow, np.float64)[pts[:, 1], pts[:, 0]]


def ssim(image1, image2, data_range=1.0):
    """Mean structural similarity (Wang et al. 2004) of two ``[H, W]`` or ``[H, W, C]`` images.

    scikit-image's ``structural_similarity`` with the paper's settings:
    Gaussian weights (sigma 1.5), ``K1 = 0.01``, ``K2 = 0.03``, sample
    covariances, averaged over channels.

    Raises:
      UserError: if scikit-image is missing (the ``eval`` extra).
      ValueError: if the images differ in shape.
    """
    try:
        from skimage.metrics import structural_similarity
    except ImportError:
        raise UserError("SSIM needs scikit-image: pip install -e .[eval]")
    x, y = np.asarray(image1, np.float64), np.asarray(image2, np.float64)
    if x.shape != y.shape:
        raise ValueError("images differ in shape: %s and %s" % (x.shape, y.shape))
    return float(structural_similarity(x, y, data_range=data_range, gaussian_weights=True,
                                       sigma=1.5, use_sample_covariance=True,
                                       channel_axis=-1 if x.ndim == 3 else None))