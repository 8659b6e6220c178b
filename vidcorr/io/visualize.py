"""Pictures: matches, flow (an HSV wheel, and the Middlebury colour wheel), a pixel's
sensitivity maps and blend weights, tracks; each an ``[H, W, 3]`` uint8 array (or a file),
and :func:`show` puts them in a matplotlib figure for a notebook (matplotlib optional)."""

import colorsys

import numpy as np
from PIL import Image, ImageDraw

from vidcorr.io.video import float_to_uint8

__all__ = ["flow_to_color", "direction_color", "match_picture", "matches_image", "TrackDrawing",
           "flow_wheel", "sensitivity_image", "weights_image", "tracks_image", "show"]

# The Middlebury colour wheel (Baker et al. 2011): red, yellow, green, cyan, blue, magenta,
# with these many steps between each hue and the next.
WHEEL_STEPS = (15, 6, 4, 11, 13, 6)


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
    return image if image.dtype == np.uint8 else float_to_uint8(image)


def match_picture(frame_t, frame_t2, matches, path, max_lines=150):
    """Writes :func:`matches_image` as a PNG at ``path``; returns its ``(width, height)``:
    ``(2 W, 2 H)``."""
    canvas = Image.fromarray(matches_image(frame_t, frame_t2, matches, max_lines))
    canvas.save(path, format="PNG")
    return canvas.size


def matches_image(frame_t, frame_t2, matches, max_lines=150):
    """A picture of a pair's matches, ``[2 H, 2 W, 3]`` uint8.

    Left column: frame t above frame t+2, joined by match lines coloured by
    direction. Right column: the sparse flow t -> t+2 colour-coded (hue:
    direction, saturation: length; black: no match) above the frame average.

    Args:
      frame_t: ``[H, W, 3]`` array (uint8 or float in [0, 1]).
      frame_t2: the second frame.
      matches: :class:`vidcorr.readout.matching.Matches` of the pair.
      max_lines: at most this many lines (the most confident valid ones).
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
    return np.asarray(canvas)


def _track_colours(queries):
    """A colour per track, its hue from where it starts (neighbours look alike)."""
    q = np.asarray(queries, np.float64)
    span = np.ptp(q[:, 1]) if len(q) else 1.0
    hues = (q[:, 1] - q[:, 1].min()) / max(span, 1e-6) * 0.8 if len(q) else []
    return [tuple(int(255 * c) for c in colorsys.hsv_to_rgb(h, 0.9, 1.0)) for h in hues]


class TrackDrawing(object):
    """Pictures of :class:`vidcorr.apps.track.Tracks`: every track on the last frame (solid
    where visible, a hollow end where the point is hidden) and an animated GIF of the clip
    with each point and its last ``tail`` frames drawn. Frames are added one at a time;
    the GIF keeps at most ``max_frames`` of them (evenly spaced) at most ``max_width``
    pixels wide, so its memory is bounded whatever the clip's length.
    """

    def __init__(self, tracks, tail=10, max_frames=120, max_width=480):
        self.result, self.tail = tracks, tail
        self.colours = _track_colours(tracks.queries)
        count = len(tracks.frames)
        self.keep = set(np.linspace(0, count - 1, min(count, max_frames)).round().astype(int))
        self.max_width, self.gif, self.last = max_width, [], None

    def _draw(self, frame, k, tail, scale=1.0):
        image = Image.fromarray(_uint8(frame))
        if scale != 1.0:
            image = image.resize((max(1, int(round(image.width * scale))),
                                  max(1, int(round(image.height * scale)))), Image.BILINEAR)
        draw = ImageDraw.Draw(image)
        r = self.result
        first = 0 if tail is None else max(0, k - tail)
        for n, colour in enumerate(self.colours):
            xy = (r.tracks[n, first:k + 1] + 0.5) * scale - 0.5
            seen = r.visible[n, first:k + 1]
            for i in range(1, len(xy)):
                if seen[i] and seen[i - 1] and np.isfinite(xy[i - 1:i + 1]).all():
                    draw.line([tuple(xy[i - 1]), tuple(xy[i])], fill=colour, width=1)
            if np.isfinite(xy[-1]).all():
                x, y = xy[-1]
                box = [x - 2, y - 2, x + 2, y + 2]
                draw.ellipse(box, fill=colour if seen[-1] else None, outline=colour)
        return image

    def add(self, k, frame):
        """Adds tracked frame ``k`` ([H, W, 3] uint8 or float)."""
        self.last = (k, frame)
        if k in self.keep:
            scale = min(1.0, self.max_width / float(np.asarray(frame).shape[1]))
            self.gif.append(self._draw(frame, k, self.tail, scale).convert(
                "P", palette=Image.ADAPTIVE))

    def picture(self):
        """The tracks on the last frame added, ``[H, W, 3]`` uint8."""
        k, frame = self.last
        return np.asarray(self._draw(frame, k, None))

    def save(self, png, gif):
        """Writes the last frame's picture and the animation."""
        Image.fromarray(self.picture()).save(png)
        self.gif[0].save(gif, save_all=True, append_images=self.gif[1:], duration=80, loop=0)


def _wheel():
    """``[55, 3]`` the Middlebury colour wheel, 0-255."""
    ry, yg, gc, cb, bm, mr = WHEEL_STEPS
    up = lambda n: 255.0 * np.arange(n) / n  # noqa: E731
    zero, full = (lambda n: np.zeros(n)), (lambda n: np.full(n, 255.0))  # noqa: E731
    return np.concatenate([
        np.stack([full(ry), up(ry), zero(ry)], 1), np.stack([255 - up(yg), full(yg), zero(yg)], 1),
        np.stack([zero(gc), full(gc), up(gc)], 1), np.stack([zero(cb), 255 - up(cb), full(cb)], 1),
        np.stack([up(bm), zero(bm), full(bm)], 1), np.stack([full(mr), zero(mr), 255 - up(mr)], 1)])


def flow_wheel(flow, max_magnitude=None):
    """``[H, W, 2]`` flow as the Middlebury colour wheel's colours: hue from the direction
    (right red, down yellow, left cyan-blue, up violet-blue), saturation from the length
    over ``max_magnitude`` (default: the largest), beyond it darkened by a quarter; white
    is no motion, black no flow (NaN)."""
    flow = np.asarray(flow, np.float64)
    valid = np.all(np.isfinite(flow), axis=-1)
    u, v = np.where(valid, flow[..., 0], 0.0), np.where(valid, flow[..., 1], 0.0)
    radius = np.hypot(u, v)
    scale = max_magnitude or max(float(radius.max()), 1e-9)
    u, v, radius = u / scale, v / scale, radius / scale
    wheel = _wheel() / 255.0
    index = (np.arctan2(-v, -u) / np.pi + 1) / 2 * (len(wheel) - 1)
    k0 = np.floor(index).astype(int)
    k1, f = (k0 + 1) % len(wheel), (index - k0)[..., None]
    colour = (1 - f) * wheel[k0] + f * wheel[k1]
    near = (radius <= 1)[..., None]
    colour = np.where(near, 1 - radius[..., None] * (1 - colour), colour * 0.75)
    return np.where(valid[..., None], np.floor(255 * colour), 0).astype(np.uint8)


def sensitivity_image(frame, sensitivity, alpha=0.7, gamma=0.5):
    """A pixel's sensitivity map over its frame: the frame in grey, the map (over its
    largest value, to the power ``gamma``: a peaked map's tail shows) in red to yellow on
    top, ``alpha`` its opacity where it peaks.

    Args:
      frame: ``[H, W, 3]`` uint8 or float in [0, 1].
      sensitivity: ``[H, W]`` non-negative (a map of ``Matcher.sensitivity_maps``).
      alpha: the map's opacity at its peak.
      gamma: the level's exponent (1: linear).
    """
    grey = _uint8(frame).astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    level = np.clip(np.asarray(sensitivity, np.float64) / max(float(np.max(sensitivity)),
                                                              1e-12), 0, 1) ** gamma
    heat = np.stack([np.full_like(level, 255.0), 255.0 * level, np.zeros_like(level)], -1)
    mix = (alpha * level)[..., None]
    return np.rint((1 - mix) * grey[..., None] + mix * heat).astype(np.uint8)


def weights_image(weights, scale=12):
    """A pixel's blend weights ``[2, K, K]`` (frame t's taps, then frame t+2's) as two
    grey squares side by side, white at the largest weight of both, each tap ``scale``
    pixels, a 2-pixel red rule between them."""
    weights = np.asarray(weights, np.float64)
    level = np.rint(255 * weights / max(float(weights.max()), 1e-12))
    tiles = [np.kron(w, np.ones((scale, scale))) for w in level]
    rule = np.zeros((tiles[0].shape[0], 2, 3))
    rule[..., 0] = 255
    grey = [np.repeat(t[..., None], 3, axis=2) for t in tiles]
    return np.concatenate([grey[0], rule, grey[1]], axis=1).astype(np.uint8)


def tracks_image(frame, tracks, k=-1, tail=None):
    """Tracks (:class:`vidcorr.Tracks`) up to tracked frame ``k`` drawn on ``frame``: solid
    where visible, a hollow end where the point is hidden; ``tail`` frames back (None: all)."""
    k = k % len(tracks.frames)
    return np.asarray(TrackDrawing(tracks, tail=tail)._draw(frame, k, tail))


def show(images, titles=None, columns=None, width=12.0):
    """A matplotlib figure of images side by side (a notebook shows it inline).

    Raises:
      UserError: if matplotlib is not installed.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        from vidcorr.errors import UserError
        raise UserError("show() needs matplotlib: pip install matplotlib (the pictures "
                        "themselves are arrays: save them with PIL)")
    images = list(images)
    columns = columns or len(images)
    rows = -(-len(images) // columns)
    h, w = np.asarray(images[0]).shape[:2]
    figure, axes = plt.subplots(rows, columns, figsize=(width, width * rows * h / (w * columns)),
                                squeeze=False)
    for i, axis in enumerate(axes.ravel()):
        axis.axis("off")
        if i < len(images):
            axis.imshow(images[i])
            if titles:
                axis.set_title(titles[i])
    figure.tight_layout()
    return figure
