"""Flow files: Middlebury ``.flo`` and KITTI 16-bit PNG, read and write.

KITTI flow PNGs are 16-bit RGB: ``R = u * 64 + 2^15``, ``G = v * 64 + 2^15``,
``B = 1`` where the flow is valid, 0 elsewhere. Pillow cannot write 16-bit
RGB, so a small PNG codec (zlib, all five row filters on reading) lives here.
"""

import struct
import zlib

import numpy as np

from vidcorr.errors import UserError

__all__ = ["write_flo", "read_flo", "write_kitti_flow", "read_kitti_flow", "FLO_MAGIC"]

FLO_MAGIC = 202021.25
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


def _chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))


def _write_png16(path, rgb):
    height, width, _ = rgb.shape
    raw = np.zeros((height, 1 + width * 6), np.uint8)  # filter byte 0 per row
    raw[:, 1:] = rgb.astype(">u2").view(np.uint8).reshape(height, width * 6)
    with open(path, "wb") as f:
        f.write(_PNG_SIGNATURE)
        f.write(_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)))
        f.write(_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)))
        f.write(_chunk(b"IEND", b""))


def _unfilter(raw, height, stride, bpp):
    out = np.zeros((height, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    pos = 0
    for y in range(height):
        kind = raw[pos]
        line = raw[pos + 1:pos + 1 + stride].astype(np.int32)
        pos += 1 + stride
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xff
        else:
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:  # Paeth
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (line[x] + pred) & 0xff
        out[y] = cur
        prev = cur
    return out.astype(np.uint8)


def _read_png16(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(_PNG_SIGNATURE):
        raise UserError("%s is not a PNG file" % path)
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    if header is None or header[2] != 16 or header[3] != 2 or header[6] != 0:
        raise UserError("%s is not a 16-bit RGB PNG (a KITTI flow file)" % path)
    width, height = header[0], header[1]
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    except zlib.error as err:
        raise UserError("%s is corrupt: %s" % (path, err))
    rows = _unfilter(raw, height, width * 6, 6)
    return rows.reshape(height, width * 3, 2).view(">u2").reshape(height, width, 3).astype(
        np.uint16)


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
