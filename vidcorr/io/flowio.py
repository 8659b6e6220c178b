"""Flow files: Middlebury ``.flo`` and KITTI 16-bit PNG, read and write.

KITTI flow PNGs are 16-bit RGB: ``R = u * 64 + 2^15``, ``G = v * 64 + 2^15``,
``B = 1`` where the flow is valid, 0 elsewhere. Pillow cannot write 16-bit
RGB; they are read and written with pypng (OpenCV, as RAFT uses, reads and
writes the same files: tested).
"""

import struct
import zlib

import numpy as np
import png

from vidcorr.errors import UserError

__all__ = ["write_flo", "read_flo", "write_kitti_flow", "read_kitti_flow", "FLO_MAGIC"]

FLO_MAGIC = 202021.25


def write_flo(path, flow):
    """Writes ``[H, W, 2]`` flow (u, v) to a Middlebury ``.flo`` file (NaN stays NaN)."""
    flow = np.asarray(flow, np.float32)
    if flow.ndim != 3 or flow.shape[2] != 2:
        raise ValueError("flow must be [H, W, 2], got %s" % (flow.shape,))
    with open(path, "wb") as f:
        f.write(struct.pack("<fii", FLO_MAGIC, flow.shape[1], flow.shape[0]))
        f.write(flow.astype("<f4").tobytes())


def read_flo(path):
    """Reads a Middlebury ``.flo`` file as ``[H, W, 2]`` float32.

    Raises:
      UserError: if the file is missing, truncated or has a bad magic number.
    """
    try:
        with open(path, "rb") as f:
            header = f.read(12)
            data = f.read()
    except OSError as err:
        raise UserError("cannot read flow file %s: %s" % (path, err))
    if len(header) < 12 or struct.unpack("<f", header[:4])[0] != FLO_MAGIC:
        raise UserError("%s is not a Middlebury .flo file" % path)
    width, height = struct.unpack("<ii", header[4:])
    if len(data) != width * height * 8:
        raise UserError("%s is truncated" % path)
    return np.frombuffer(data, "<f4").reshape(height, width, 2).astype(np.float32)


def _write_png16(path, rgb):
    """Writes ``[H, W, 3]`` uint16 as a 16-bit RGB PNG (pypng)."""
    height, width, _ = rgb.shape
    with open(path, "wb") as f:
        png.Writer(width, height, bitdepth=16, greyscale=False).write(
            f, np.asarray(rgb, np.uint16).reshape(height, width * 3))


def _read_png16(path):
    """Reads a 16-bit RGB PNG as ``[H, W, 3]`` uint16 (pypng; any row filter, interlacing).

    Raises:
      UserError: if the file is missing, not a PNG, corrupt, or not 16-bit RGB.
    """
    try:
        reader = png.Reader(filename=path)
        width, height, rows, info = reader.read()
        if info["bitdepth"] != 16 or info["planes"] != 3 or info.get("palette"):
            raise UserError("%s is not a 16-bit RGB PNG (a KITTI flow file)" % path)
        return np.vstack([np.asarray(row, np.uint16) for row in rows]).reshape(
            height, width, 3)
    except png.FormatError as err:
        raise UserError("%s is not a PNG file or is corrupt: %s" % (path, err))
    except (png.ChunkError, zlib.error, ValueError) as err:
        raise UserError("%s is corrupt: %s" % (path, err))
    except OSError as err:
        raise UserError("cannot read flow file %s: %s" % (path, err))


def write_kitti_flow(path, flow):
    """Writes ``[H, W, 2]`` flow as a KITTI 16-bit PNG; NaN pixels become invalid."""
    flow = np.asarray(flow, np.float64)
    valid = np.all(np.isfinite(flow), axis=-1)
    enc = np.zeros(flow.shape[:2] + (3,), np.uint16)
    clean = np.where(valid[..., None], flow, 0.0)
    enc[..., :2] = np.clip(np.round(clean * 64.0 + 2 ** 15), 0, 65535).astype(np.uint16)
    enc[..., 2] = valid
    _write_png16(path, enc)


def read_kitti_flow(path):
    """Reads a KITTI flow PNG as ``(flow [H, W, 2] float32, valid [H, W] bool)``."""
    enc = _read_png16(path).astype(np.float64)
    flow = (enc[..., :2] - 2 ** 15) / 64.0
    return flow.astype(np.float32), enc[..., 2] > 0
