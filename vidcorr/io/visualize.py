"""Pictures of matches: both frames side by side with match lines, and a flow image."""

import colorsys

import numpy as np
from PIL import Image, ImageDraw

__all__ = ["flow_to_color", "direction_color", "match_picture"]


def direction_color(dx, dy, magnitude=1.0):
    """An RGB uint8 tuple: hue from the direction of (dx, dy), saturation from magnitude."""
    hue = (np.arctan2(-dy, -dx) / (2 * np.pi)) % 1.0
    r, g, b = colorsys.hsv_to_rgb(hue, float(np.clip(magnitude, 0.0, 1.0)), 1.0)
    return int(255 * r), int(255 * g), int(255 * b)


def flow_to_color(flow, max_magnitude=None):
    """Colour-codes ``[H, W, 2]`` flow (hue: direction, saturation: speed); NaN is black."""
    u, v = flow[..., 0], flow[..., 1]
    valid = np.isfinite(u) & np.isfinite(v)
    mag = np.where(valid, np.hypot(np.nan_to_num(u), np.nan_to_num(v)), 0.0)
    scale = max_magnitude or max(float(mag.max()), 1e-6)
    hue = (np.arctan2(-np.nan_to_num(v), -np.nan_to_num(u)) / (2 * np.pi)) % 1.0
    sat = np.clip(mag / scale, 0.0, 1.0)
    hsv = np.stack([hue, sat, np.ones_like(sat)], axis=-1)
    rgb = np.asarray(Image.fromarray((hsv * 255).astype(np.uint8), "HSV").convert("RGB"))
    return np.where(valid[..., None], rgb, 0).astype(np.uint8)


def _uint8(image):
    image = np.asarray(image)
    return image if image.dtype == np.uint8 else (np.clip(image, 0, 1) * 255).astype(np.uint8)


def match_picture(frame_t, frame_t2, matches, path, max_lines=150):
    """Writes a PNG of a pair's matches.

    Left column: frame t above frame t+2, joined by match lines coloured by
    direction. Right column: the sparse flow t -> t+2 colour-coded (hue:
    direction, saturation: length; black: no match) above the frame average.

    Args:
      frame_t: ``[H, W, 3]`` array (uint8 or float in [0, 1]).
      frame_t2: the second frame.
      matches: :class:`vidcorr.readout.matching.Matches` of the pair.
      path: output PNG path.
      max_lines: at most this many lines (the most confident valid ones).

    Returns:
      The picture's ``(width, height)``: ``(2 W, 2 H)``.
    """
    a, b = _uint8(frame_t), _uint8(frame_t2)
    h, w = a.shape[:2]
    canvas = Image.new("RGB", (2 * w, 2 * h), (0, 0, 0))
    canvas.paste(Image.fromarray(a), (0, 0))
    canvas.paste(Image.fromarray(b), (0, h))
    draw = ImageDraw.Draw(canvas)
    flow = matches.p3 - matches.p1
    mags = np.hypot(flow[:, 0], flow[:, 1])
    top = max(float(np.percentile(mags[matches.valid], 95)) if matches.valid.any() else 1.0, 1.0)
    order = np.lexsort((np.arange(len(matches)), -matches.confidence))
    chosen = [i for i in order if matches.valid[i]][:max_lines]
    for i in chosen:
        (x1, y1), (x3, y3) = matches.p1[i], matches.p3[i]
        color = direction_color(x3 - x1, y3 - y1, 0.35 + 0.65 * min(mags[i] / top, 1.0))
        draw.line([(x1, y1), (x3, y3 + h)], fill=color, width=1)
        draw.ellipse([x1 - 1.5, y1 - 1.5, x1 + 1.5, y1 + 1.5], outline=color)
        draw.ellipse([x3 - 1.5, y3 + h - 1.5, x3 + 1.5, y3 + h + 1.5], outline=color)
    dense = np.full((h, w, 2), np.nan, np.float32)
    columns = np.unique(matches.grid[:, 0])
    stride = int(np.min(np.diff(columns))) if len(columns) > 1 else 1  # grid spacing
    half = stride // 2
    for (gx, gy), f, ok in zip(matches.grid, flow, matches.valid):
        if ok:
            dense[max(0, gy - half):gy - half + stride, max(0, gx - half):gx - half + stride] = f
    canvas.paste(Image.fromarray(flow_to_color(dense, top)), (w, 0))
    canvas.paste(Image.fromarray((0.5 * a + 0.5 * b).astype(np.uint8)), (w, h))
    canvas.save(path, format="PNG")
    return canvas.size
