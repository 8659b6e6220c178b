"""Training triplets (t, t+g, t+2g) from real video, or synthetic, into ``tf.data``.

:class:`TripletData` loads every source once (downscaled to ``data.max_height``),
splits it into training and validation parts (by time: the last
``val_fraction`` of each video; or by video: the last sources), then samples
random crops with flips and time reversal. Triplets whose frames barely
change (below ``static_threshold``, mean absolute difference in [0, 1] units)
or change too much (above ``cut_threshold``: scene cuts) are skipped. The
validation set is a fixed list of random crops from the held-out part, drawn
with its own seed, without augmentation. Sampling is deterministic given the seed and the
step it starts from (so a resumed run draws a reproducible stream).

With ``data.layered_fraction`` > 0, that fraction of the training triplets
is made instead from two random training frames as translating layers with
known motion up to ``data.max_motion`` pixels per frame step, on a lattice
of ``1 / data.motion_supersample`` pixels (see :mod:`vidcorr.training.layered`): real
texture, but motion large enough that the
network has to learn to move content. Validation triplets are always real.

With ``data.scales`` listing factors below 1 (e.g. ``[1, 0.5]``), each training triplet,
real or layered, is cut from the frames downscaled by one of them, drawn uniformly (box
filter, as the read-out's pyramid makes its coarser levels): the network then also
learns from the content and motion its coarser levels see, where a clip's largest
motion is read (a layered triplet's motion in pixels is the same at every scale, so at
half size it stands for twice that motion in the frames). A copy smaller than a layered
triplet's window (the crop plus the motion's margins) is mirrored at its borders for the
layers. Validation triplets stay at the frames' size.

With ``data.rehearsal_fraction`` > 0, that fraction of the training triplets (real or
layered, as above) comes from ``data.rehearsal_sources`` instead: clips used whole for
training and never for validation, such as a model's own training clips while it is
adapted to new footage (rehearsal against forgetting).
"""

import numpy as np

from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.training.layered import layered_triplet, subpixel_layered_triplet, window_size
from vidcorr.training.synthetic import moving_triplet
from vidcorr.io.video import load_frames, resize_uint8, uint8_to_float

__all__ = ["TripletData", "MAX_TRIES", "FOREGROUND_PROBABILITY"]

VALIDATION_STREAM = 1000003  # seeds the validation triplets apart from every training stream

MAX_TRIES = 50  # resamples before a static or cut triplet is accepted anyway
FOREGROUND_PROBABILITY = 0.8  # layered triplets with a moving foreground (else background only)


class TripletData(object):
    """Triplet sampling for training and validation.

    Args:
      config: a :class:`vidcorr.model.config.DataConfig`.
      log: callable for progress messages (e.g. ``print``), or None.

    Raises:
      UserError: for missing or unreadable sources, videos shorter than a
        triplet, frames smaller than the crop or too little data for a
        validation split.
    """

    def __init__(self, config, log=None):
        self.config = config
        self.crop = (config.crop_height, config.crop_width)
        self.videos, self.names, self.train_ranges, self.val_ranges = [], [], [], []
        self.rehearsal_ranges = []  # (video, start, stop): data.rehearsal_sources, whole
        self.scaled = {}  # (video, scale) -> [N, h, w, 3] uint8: data.scales below 1
        if not config.synthetic:
            self._load(log)
            if config.layered_fraction > 0:
                self._check_layer_size()

    # -- loading and splitting -------------------------------------------------------------
    def _load(self, log):
        c = self.config
        span = 2 * c.gap  # a triplet covers frames t .. t + 2g
        for source in c.sources:
            self._load_one(source, log)
        for source in c.rehearsal_sources:
            self._load_one(source, log)
            self.rehearsal_ranges.append((len(self.videos) - 1, 0, len(self.videos[-1]) - span))
        self._split()
        self._downscale(log)

    def _load_one(self, source, log):
        """Reads one source into ``self.videos``, checking it holds a triplet and a crop."""
        c = self.config
        span = 2 * c.gap
        frames = load_frames(source, c.max_height)
        n, h, w = frames.shape[:3]
        if n <= span:
            raise UserError("%s: %d frames is shorter than one triplet at gap %d (needs %d)"
                            % (source, n, c.gap, span + 1))
        if h < self.crop[0] or w < self.crop[1]:
            raise UserError("%s: frames are %dx%d (after data.max_height), smaller than the "
                            "crop %dx%d (lower data.crop_height/crop_width or raise "
                            "data.max_height)" % (source, w, h, self.crop[1], self.crop[0]))
        self.videos.append(frames)
        self.names.append(source)
        if log:
            log("loaded %s: %d frames of %dx%d" % (source, n, w, h))

    def _split(self):
        """Splits ``data.sources`` (the first videos) into training and validation ranges."""
        c = self.config
        span = 2 * c.gap
        videos = self.videos[:len(c.sources)]
        if c.val_split == "video":
            if len(videos) < 2:
                raise UserError("data.val_split 'video' needs at least 2 sources, got %d"
                                % len(videos))
            n_val = min(len(videos) - 1, max(1, int(round(len(videos) * c.val_fraction))))
            for i, frames in enumerate(videos):
                target = self.val_ranges if i >= len(videos) - n_val else self.train_ranges
                target.append((i, 0, len(frames) - span))
        else:
            for i, frames in enumerate(videos):
                n = len(frames)
                n_val = max(span + 1, int(round(n * c.val_fraction)))
                split = n - n_val
                if split - span >= 1:
                    self.train_ranges.append((i, 0, split - span))
                    self.val_ranges.append((i, split, n - span))
                else:  # too short to split: training only
                    self.train_ranges.append((i, 0, n - span))
            if not self.val_ranges:
                raise UserError("no source is long enough for a validation split by time "
                                "(each needs at least %d frames); add video or use "
                                "data.val_split 'video'" % (2 * (span + 1)))

    def _downscale(self, log):
        """The copies of every video at ``data.scales`` below 1, checked against the crop."""
        for scale in sorted(set(self.config.scales) - {1.0}):
            for i, (source, frames) in enumerate(zip(self.names, self.videos)):
                h, w = frames.shape[1:3]
                size = (max(1, int(round(h * scale))), max(1, int(round(w * scale))))
                if size[0] < self.crop[0] or size[1] < self.crop[1]:
                    raise UserError("%s: frames at data.scales %g are %dx%d, smaller than the "
                                    "crop %dx%d (drop that scale or lower the crop)" % (
                                        source, scale, size[1], size[0], self.crop[1],
                                        self.crop[0]))
                self.scaled[i, scale] = np.stack(
                    [resize_uint8(frame, size[0], size[1]) for frame in frames])
            if log:
                log("data.scales: the training frames also at %g of their size" % scale)

    def _frames(self, i, scale):
        """Video ``i``'s frames at ``scale`` (1: as loaded)."""
        return self.videos[i] if scale == 1.0 else self.scaled[i, scale]

    def _layer_window(self):
        """The ``(h, w)`` a layered triplet's layers are cut from."""
        c = self.config
        wh, ww = window_size(c.crop_height, c.crop_width, c.max_motion)
        if c.motion_supersample > 1:  # the bicubic upsampling's extra pixel per side
            wh, ww = wh + 2, ww + 2
        return wh, ww

    def _check_layer_size(self):
        wh, ww = self._layer_window()
        for source, frames in zip(self.names, self.videos):
            if frames.shape[1] < wh or frames.shape[2] < ww:
                raise UserError("%s: frames are %dx%d, smaller than the %dx%d that layered "
                                "triplets need (the crop plus data.max_motion on each side); "
                                "lower data.max_motion or the crop" % (
                                    source, frames.shape[2], frames.shape[1], ww, wh))

    def _layer(self, i, t, scale):
        """Frame ``t`` of video ``i`` at ``scale`` as a layer: a downscaled copy narrower
        than the layer window (the crop plus the motion's margins) is mirrored at its
        borders to that size, so that a coarse scale need not be larger than the crop."""
        frame = self._frames(i, scale)[t]  # [h, w, 3]
        if scale == 1.0:
            return frame
        wh, ww = self._layer_window()
        dy, dx = max(0, wh - frame.shape[0]), max(0, ww - frame.shape[1])
        if dy or dx:
            frame = np.pad(frame, ((dy // 2, dy - dy // 2), (dx // 2, dx - dx // 2), (0, 0)),
                           mode="reflect")
        return frame

    # -- sampling --------------------------------------------------------------------------
    def _random_frame(self, rng, ranges):
        """A random (video index, frame index) from ``ranges``, weighted by their length."""
        sizes = np.array([stop - start for _, start, stop in ranges], np.float64)
        i, start, stop = ranges[rng.choice(len(ranges), p=sizes / sizes.sum())]
        return i, start + rng.randint(stop - start)

    def _layered(self, rng, ranges, scale=1.0):
        c = self.config
        i, t = self._random_frame(rng, ranges)
        background = self._layer(i, t + c.gap, scale)
        foreground = None
        if rng.rand() < FOREGROUND_PROBABILITY:
            j, u = self._random_frame(rng, ranges)
            foreground = self._layer(j, u + c.gap, scale)
        if c.motion_supersample > 1:
            frames, _ = subpixel_layered_triplet(rng, background, foreground, self.crop[0],
                                                 self.crop[1], c.max_motion,
                                                 c.motion_supersample,
                                                 c.motion_power)  # [3, h, w, 3] 0-255
        else:
            frames, _ = layered_triplet(rng, background, foreground, self.crop[0], self.crop[1],
                                        c.max_motion, c.motion_power)  # [3, h, w, 3] uint8
        return uint8_to_float(frames)

    def _real(self, rng, ranges, scale=1.0):
        """A random crop of a real triplet, resampled while static or a cut."""
        c = self.config
        ch, cw = self.crop
        for _ in range(MAX_TRIES):
            i, t = self._random_frame(rng, ranges)
            frames = self._frames(i, scale)
            y = rng.randint(frames.shape[1] - ch + 1)
            x = rng.randint(frames.shape[2] - cw + 1)
            triplet = frames[[t, t + c.gap, t + 2 * c.gap], y:y + ch, x:x + cw]
            triplet = uint8_to_float(triplet)  # [3, h, w, 3]
            static = np.mean(np.abs(triplet[2] - triplet[0]))
            cut = max(np.mean(np.abs(triplet[1] - triplet[0])),
                      np.mean(np.abs(triplet[2] - triplet[1])))
            if static >= c.static_threshold and cut <= c.cut_threshold:
                break
        return triplet

    def _draw(self, rng, ranges, training):
        """One ``[3, h, w, 3]`` triplet from its source (synthetic, layered or real), and
        whether it is layered."""
        c = self.config
        if c.synthetic:
            return moving_triplet(rng, self.crop[0], self.crop[1], c.max_motion,
                                  c.velocity or None)[0], False
        if training and c.rehearsal_fraction > 0 and rng.rand() < c.rehearsal_fraction:
            ranges = self.rehearsal_ranges  # whole clips of data.rehearsal_sources
        scale = 1.0
        if training:  # one scale draws nothing: the default's streams stay as they were
            scale = c.scales[rng.randint(len(c.scales))] if len(c.scales) > 1 else c.scales[0]
        if training and c.layered_fraction > 0 and rng.rand() < c.layered_fraction:
            return self._layered(rng, ranges, scale), True
        return self._real(rng, ranges, scale), False

    def _sample(self, rng, ranges, augment):
        triplet, layered = self._draw(rng, ranges, augment)
        return (self._augment(rng, triplet) if augment else triplet), layered

    def _augment(self, rng, triplet):
        """Random flips and time reversal of a ``[3, h, w, 3]`` triplet."""
        c = self.config
        if c.flip_horizontal and rng.rand() < 0.5:
            triplet = triplet[:, :, ::-1]
        if c.flip_vertical and rng.rand() < 0.5:
            triplet = triplet[:, ::-1]
        if c.time_reversal and rng.rand() < 0.5:
            triplet = triplet[::-1]
        return triplet

    def batch(self, rng, batch_size, validation=False, kinds=False):
        """Draws ``(inputs [B, h, w, 6], targets [B, h, w, 3])`` float32 in [0, 1].

        Every source (synthetic, layered, real) gives ``[3, h, w, 3]`` triplets;
        training triplets then pass through the same augmentation (flips, time
        reversal), validation triplets through none.

        Args:
          rng: a ``numpy.random.RandomState``.
          batch_size: the number of triplets B.
          validation: draw from the held-out part, without layers or augmentation.
          kinds: also return ``layered [B]`` float32, 1 for a layered triplet and 0 for
            a real (or synthetic) one; the draws are the same either way.

        Returns:
          ``(inputs, targets)``, or ``(inputs, targets, layered)`` with ``kinds``.
        """
        ranges = self.val_ranges if validation else self.train_ranges
        samples = [self._sample(rng, ranges, not validation) for _ in range(batch_size)]
        triplets = np.stack([triplet for triplet, _ in samples])  # [B, 3, h, w, 3]
        inputs = np.concatenate([triplets[:, 0], triplets[:, 2]], axis=-1)
        out = (np.ascontiguousarray(inputs), np.ascontiguousarray(triplets[:, 1]))
        if kinds:
            out += (np.array([layered for _, layered in samples], np.float32),)  # [B]
        return out

    def validation_set(self):
        """The fixed validation triplets: ``(inputs [N, h, w, 6], targets [N, h, w, 3])``."""
        rng = np.random.RandomState([self.config.seed, VALIDATION_STREAM])
        return self.batch(rng, self.config.val_triplets, validation=True)

    def batches(self, batch_size, seed, start_step=0):
        """An endless generator of training batches ``(inputs, targets, layered)``
        (:meth:`batch` with ``kinds``), deterministic in (seed, start_step)."""
        rng = np.random.RandomState([seed, start_step])
        while True:
            yield self.batch(rng, batch_size, kinds=True)

    def dataset(self, batch_size, seed, start_step=0, prefetch=4):
        """A prefetching ``tf.data.Dataset`` of training batches ``(inputs [B, h, w, 6],
        targets [B, h, w, 3], layered [B])``."""
        ch, cw = self.crop
        ds = tf.data.Dataset.from_generator(
            lambda: self.batches(batch_size, seed, start_step),
            (tf.float32, tf.float32, tf.float32),
            (tf.TensorShape([batch_size, ch, cw, 6]), tf.TensorShape([batch_size, ch, cw, 3]),
             tf.TensorShape([batch_size])))
        return ds.prefetch(prefetch)

    def training_inputs(self, batch_size, seed, start_step=0):
        """The training batches as graph inputs a caller may feed instead: placeholders
        defaulting to :meth:`dataset`'s next batch, ``(inputs [None, h, w, 6], targets
        [None, h, w, 3], layered [None])`` named ``inputs``, ``targets`` and ``layered``
        (feed ``layered`` beside ``inputs`` when a fed batch's loss needs the kinds)."""
        ch, cw = self.crop
        batch = tf.data.make_one_shot_iterator(
            self.dataset(batch_size, seed, start_step)).get_next()
        return tuple(tf.placeholder_with_default(tensor, [None] + shape, name) for tensor, shape, name
                     in zip(batch, ([ch, cw, 6], [ch, cw, 3], []), ("inputs", "targets", "layered")))
