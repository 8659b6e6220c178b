"""Classic matchers to compare against, from OpenCV (the ``eval`` extra).

* ``sift``: SIFT keypoints, brute-force L2 matching with Lowe's ratio test
  (0.8); scored on its own keypoints.
* ``dis`` (DIS optical flow, medium preset), ``deepflow`` (opencv-contrib's
  ``optflow``), ``farneback``: dense flow, sampled at the same grid points
  as vidcorr.
* ``zero``: zero flow at the grid points (a floor every method should beat).

Also :func:`midpoint_warp`, a flow-based frame-interpolation baseline: DIS
flow both ways, the flow from the middle frame approximated as in Super
SloMo (``F_m0 = (F_10 - F_01) / 4``, ``F_m1 = (F_01 - F_10) / 4``), both
frames warped there and averaged.

Every function takes ``[H, W, 3]`` float images in [0, 1].
"""

import numpy as np

from vidcorr.errors import UserError
from vidcorr.io.video import float_to_uint8
from vidcorr.readout.pyramid import warp

__all__ = ["PEERS", "DENSE_PEERS", "require_cv2", "dense_flow", "sift_matches", "midpoint_warp",
           "peer_available"]

DENSE_PEERS = ("dis", "deepflow", "farneback", "zero")
PEERS = ("sift",) + DENSE_PEERS
EXTRA = "pip install -e .[eval]  (opencv-contrib-python-headless)"


def require_cv2(what="the OpenCV peers"):
    """Imports OpenCV or raises a UserError naming the extra to install."""
    try:
        import cv2
    except ImportError:
        raise UserError("%s need OpenCV: %s" % (what, EXTRA))
    return cv2


def peer_available(name):
    """``(True, "")`` if a peer can run here, else ``(False, reason)``."""
    if name == "zero":
        return True, ""
    try:
        cv2 = require_cv2()
    except UserError as err:
        return False, str(err)
    if name == "deepflow" and not hasattr(getattr(cv2, "optflow", None),
                                          "createOptFlow_DeepFlow"):
        return False, "DeepFlow needs opencv-contrib: %s" % EXTRA
    if name == "sift" and not hasattr(cv2, "SIFT_create"):
        return False, "SIFT needs OpenCV >= 4.4: %s" % EXTRA
    return True, ""


def _gray(image):
    image = np.asarray(image, np.float32)
    gray = image @ np.array([0.299, 0.587, 0.114], np.float32) if image.ndim == 3 else image
    return float_to_uint8(gray)


def dense_flow(name, image1, image2):
    """Dense flow ``[H, W, 2]`` from image 1 to image 2 by a named peer.

    Raises:
      UserError: for an unknown peer or a missing OpenCV (naming the extra).
    """
    if name not in DENSE_PEERS:
        raise UserError("unknown dense method %r; choose from %s" % (name, ", ".join(DENSE_PEERS)))
    h, w = np.asarray(image1).shape[:2]
    if name == "zero":
        return np.zeros((h, w, 2), np.float32)
    ok, reason = peer_available(name)
    if not ok:
        raise UserError(reason)
    cv2 = require_cv2()
    a, b = _gray(image1), _gray(image2)
    if name == "dis":
        flow = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(a, b, None)
    elif name == "deepflow":
        flow = cv2.optflow.createOptFlow_DeepFlow().calc(a, b, None)
    else:
        flow = cv2.calcOpticalFlowFarneback(a, b, None, 0.5, 3, 15, 3, 5, 1.2, 0)
    return np.asarray(flow, np.float32)


def sift_matches(image1, image2, ratio=0.8):
    """SIFT matches with Lowe's ratio test: ``(p1 [N, 2], p3 [N, 2])`` as (x, y).

    Raises:
      UserError: if OpenCV (>= 4.4) is missing.
    """
    ok, reason = peer_available("sift")
    if not ok:
        raise UserError(reason)
    cv2 = require_cv2()
    sift = cv2.SIFT_create()
    k1, d1 = sift.detectAndCompute(_gray(image1), None)
    k2, d2 = sift.detectAndCompute(_gray(image2), None)
    if d1 is None or d2 is None or len(k1) == 0 or len(k2) < 2:
        return np.zeros((0, 2)), np.zeros((0, 2))
    pairs = cv2.BFMatcher(cv2.NORM_L2).knnMatch(d1, d2, k=2)
    good = [m[0] for m in pairs if len(m) == 2 and m[0].distance < ratio * m[1].distance]
    p1 = np.array([k1[m.queryIdx].pt for m in good], np.float64).reshape(-1, 2)
    p3 = np.array([k2[m.trainIdx].pt for m in good], np.float64).reshape(-1, 2)
    return p1, p3


def midpoint_warp(frame_t, frame_t2):
    """The middle frame by DIS-flow warping (see the module docstring), ``[H, W, 3]``.

    Raises:
      UserError: if OpenCV is missing.
    """
    f01 = dense_flow("dis", frame_t, frame_t2)
    f10 = dense_flow("dis", frame_t2, frame_t)
    f_m0 = 0.25 * (f10 - f01)
    f_m1 = 0.25 * (f01 - f10)
    out = 0.5 * (warp(frame_t, f_m0) + warp(frame_t2, f_m1))
    return np.clip(out, 0.0, 1.0).astype(np.float32)
