"""The coarse levels' hand-on smoothing, varied: a study of the lead from
``large_misses.py`` (the confidence-weighted Gaussian pulls a small, fast foreground
towards its background). Each variant replaces
:func:`vidcorr.readout.kernel.smoothing.smooth_field` in the kernel read-out's graph (the
packaged model, nothing else changed) and is scored on

* the adaptation clip's large-motion layered pairs (``gt_layered.py``'s six pairs of the
  held-back frames, stride 8): misses of the foreground ellipse and of the background,
  counted as ``large_misses.py`` does;
* with ``--dev``, the developers' pairs (``scripts/evaluate.py``'s table, 384 columns,
  stride 8, no peers), written to ``OUT_NAME.md``.

Variants (JSON, name -> settings):

* ``{}``: today's smoothing;
* ``{"kind": "frame"}``: the Gaussian's width constant in the frames' pixels (divided by
  2^level) instead of in each level's;
* ``{"kind": "bilateral", "sr": R, "floor": F, "levels": [2, 4], "step": 2}``: a joint
  bilateral on the fields themselves: each neighbour's weight is the Gaussian's tap times
  its confidence times ``exp(-|f_n - f_c|^2 / 2 R^2) + F`` (R in the level's pixels, over
  the four components), its taps every ``step``-th of the Gaussian's; only at the levels
  whose factor 2^level is listed (the others keep the Gaussian);
* ``{"kind": "separable", ...}``: the same settings, the bilateral taken along rows and
  then along columns, the column pass weighing each pixel by the row pass's summed
  weights (the read-out's ``sigma_range``, written with slices here).

Today's smoothing in the variants is the plain Gaussian (the read-out's own range kernel
is replaced along with it).

    python research/adaptation/handon_smoothing.py --clip-model ADAPTED_DIR --dev \
        '{"today": {}, "bilateral": {"kind": "bilateral", "sr": 1, "levels": [2, 4]}}'
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gt_layered  # noqa: E402  (the clip's pairs)
import large_misses  # noqa: E402  (the miss rule)

from vidcorr.compat import tf  # noqa: E402
from vidcorr.readout.kernel import graph, smoothing  # noqa: E402
from vidcorr.readout.matching import Matcher  # noqa: E402
from vidcorr.readout.pyramid import MIN_CONFIDENCE_WEIGHT  # noqa: E402

DEFAULT_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "vidcorr",
                             "models", "default")
_STATE = {"height": None}  # the frames' height of the graph being built
_TODAY = smoothing.smooth_field
_COARSE_TO_FINE = graph._coarse_to_fine


def _coarse_to_fine(spec, frame_t, frame_t2, options, max_levels):
    _STATE["height"] = frame_t.shape.as_list()[1]
    return _COARSE_TO_FINE(spec, frame_t, frame_t2, options, max_levels)


def _level_factor(field):
    """2^level of a hand-on field (read at every 2nd pixel of its level)."""
    return 2.0 ** round(np.log2(_STATE["height"] / (2.0 * field.shape.as_list()[1])))


def bilateral(field, confidence, sigma, sr, step, floor):
    """The joint bilateral of ``field [B, h, w, C]`` (see the module docstring)."""
    taps, r = smoothing._gaussian_taps(sigma)
    weight = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT  # [B, h, w, 1]

    def pad(x):
        return smoothing.symmetric_pad(smoothing.symmetric_pad(x, r, r, 1), r, r, 2)

    padded_f, padded_w = pad(field), pad(weight)
    h, w = tf.shape(field)[1], tf.shape(field)[2]
    offsets = sorted(set(range(-r, r + 1, step)) | {0})
    num, den = 0.0, 0.0
    for dy in offsets:
        for dx in offsets:
            f_n = padded_f[:, r + dy:r + dy + h, r + dx:r + dx + w]  # [B, h, w, C]
            w_n = padded_w[:, r + dy:r + dy + h, r + dx:r + dx + w]
            d2 = tf.reduce_sum(tf.square(f_n - field), axis=3, keepdims=True)
            k = float(taps[dy + r] * taps[dx + r]) * w_n * (tf.exp(-d2 / (2.0 * sr * sr)) + floor)
            num += k * f_n
            den += k
    return num / den


def separable_bilateral(field, confidence, sigma, sr, step, floor):
    """The joint bilateral along x, then along y (the second pass's range term against the
    first pass's output)."""
    taps, r = smoothing._gaussian_taps(sigma)
    weight = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT  # [B, h, w, 1]
    offsets = sorted(set(range(-r, r + 1, step)) | {0})
    for axis in (2, 1):
        padded_f = smoothing.symmetric_pad(field, r, r, axis)
        padded_w = smoothing.symmetric_pad(weight, r, r, axis)
        n = tf.shape(field)[axis]
        num, den = 0.0, 0.0
        for d in offsets:
            if axis == 2:
                f_n, w_n = padded_f[:, :, r + d:r + d + n], padded_w[:, :, r + d:r + d + n]
            else:
                f_n, w_n = padded_f[:, r + d:r + d + n], padded_w[:, r + d:r + d + n]
            d2 = tf.reduce_sum(tf.square(f_n - field), axis=3, keepdims=True)
            k = float(taps[d + r]) * w_n * (tf.exp(-d2 / (2.0 * sr * sr)) + floor)
            num += k * f_n
            den += k
        field, weight = num / den, den
    return field


def variant_smoothing(variant):
    """A ``smooth_field`` replacement for one variant's settings."""
    kind = variant.get("kind", "today")

    def smooth(field, confidence, size, sigma, *package_range):  # the read-out's own ignored
        factor = _level_factor(field)
        if kind == "frame":
            return _TODAY(field, confidence, size, sigma / factor)
        if kind in ("bilateral", "separable") and \
                factor in [float(v) for v in variant.get("levels", [factor])]:
            smoothing_of_kind = bilateral if kind == "bilateral" else separable_bilateral
            return smoothing_of_kind(field, confidence, sigma, float(variant["sr"]),
                                     int(variant.get("step", 2)),
                                     float(variant.get("floor", 0.0)))
        if kind not in ("today", "frame", "bilateral", "separable"):
            raise ValueError("unknown kind %r" % kind)
        return _TODAY(field, confidence, size, sigma)
    return smooth


def large_motion(held, pairs, stride):
    """``(foreground misses, background misses, foreground points, background points)``."""
    matcher = Matcher(None, max_seconds=0)
    totals = np.zeros(4, np.int64)
    for n in range(pairs):
        clip = gt_layered.layered(held, n * len(held) // pairs, gt_layered.MOTIONS["large"])
        grid, seen, miss = large_misses.misses(matcher, clip, stride)
        layer = clip.which_layer(grid.astype(np.float64), 1)  # [N] 0 background, 1 front
        groups = [layer == 1, layer == 0]
        totals += [int(np.sum(miss & seen & g)) for g in groups] + \
                  [int(np.sum(seen & g)) for g in groups]
    matcher.close()
    return totals


def developers_pairs(out):
    """The developers' pairs' table (see the module docstring), as markdown rows."""
    from vidcorr.evaluation.evaluate import run_evaluation
    from vidcorr.evaluation.plan import EvaluationPlan
    plan = EvaluationPlan(checkpoints=["default=" + DEFAULT_MODEL], methods=[], stride=8,
                          interpolation=False)
    run_evaluation(plan, out=out, progress=False, log=lambda *a: None)
    with open(out + ".md") as f:
        return [line for line in f if line.startswith("| motorcycle") or
                line.startswith("| grove3")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", help="JSON: name -> settings (see the docstring)")
    parser.add_argument("--clip-model", required=True,
                        help="an adapted model whose config names the clip")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--dev", action="store_true", help="also the developers' pairs")
    args = parser.parse_args()
    graph._coarse_to_fine = _coarse_to_fine
    _, _, held = gt_layered.held_back(args.clip_model)
    for name, variant in json.loads(args.variants).items():
        graph.smooth_field = variant_smoothing(variant)
        start = time.time()
        fg, bg, n_fg, n_bg = large_motion(held, args.pairs, args.stride)
        print("%s %s: large motion, foreground misses %d of %d, background %d of %d (%.0f s)"
              % (name, json.dumps(variant), fg, n_fg, bg, n_bg, time.time() - start), flush=True)
        if args.dev:
            for row in developers_pairs("handon_" + name):
                print("%s %s" % (name, row.strip()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
