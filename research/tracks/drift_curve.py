"""The median error of tracks frame by frame on a study clip: where drift comes from.

Renders one clip of ``benchmarks/track_study.py`` (default *translate*, 40 frames at
384x288), follows its 16 px grid from the first frame with ``vidcorr.track`` (the
tracking defaults) for each ``--anchors`` value, and with OpenCV's pyramidal LK, and
prints per frame the median error over the points the clip never hid up to that frame
(so re-found points do not mix in), and the signed median (x, y) at frame 30.

    python research/tracks/drift_curve.py --out-dir runs/drift_curve [--anchors 8,4,0]
"""

import argparse
import os
import shutil
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import track_study  # noqa: E402

from vidcorr.evaluation.tracks import lk_tracks  # noqa: E402
from vidcorr.io.video import stream_frames  # noqa: E402
from vidcorr.quiet import quiet_stderr  # noqa: E402
from vidcorr.tracking.queries import grid_queries  # noqa: E402


def curve(tracks, truth, never_hidden):
    """Per frame from 1: the median error over the never-hidden points."""
    return [float(np.median(np.linalg.norm(tracks[s, t] - truth[s, t], axis=-1)))
            for t, s in enumerate(never_hidden.T) if t > 0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--clip", default="translate")
    parser.add_argument("--anchors", default="8,4,0", help="anchor_every values to run")
    parser.add_argument("--length", type=int, default=40)
    args = parser.parse_args()
    from vidcorr.apps.track import track, tracking_matcher
    from vidcorr.tracking.chain import TrackSettings

    h, w = 288, 384
    clip = track_study.clips(h, w, args.length)[args.clip]
    folder = os.path.join(args.out_dir, args.clip)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for t in range(args.length):
        Image.fromarray(clip.frame(t)).save(os.path.join(folder, "%04d.png" % t))
    queries = grid_queries(0, h, w, 16)
    truth, truth_visible = clip.truth(queries)
    never_hidden = truth_visible & (np.cumsum(~truth_visible, axis=1) == 0)  # [N, T]
    runs = {}
    matcher = tracking_matcher()
    for anchors in (int(a) for a in args.anchors.split(",")):
        with quiet_stderr(True):
            result = track(folder, queries=queries, matcher=matcher, progress=False,
                           settings=TrackSettings(anchor_every=anchors),
                           out=os.path.join(args.out_dir, "tracks_a%d" % anchors))
        runs["vidcorr, anchors %d" % anchors] = result.tracks
    matcher.close()
    runs["pyramidal LK"], _ = lk_tracks(stream_frames(folder), queries[:, 1:])
    frames = range(1, args.length)
    print("| frame | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    curves = {name: curve(tracks, truth, never_hidden) for name, tracks in runs.items()}
    for t in frames:
        print("| %d | %s |" % (t, " | ".join("%.3f" % curves[n][t - 1] for n in runs)))
    at = min(30, args.length - 1)
    s = never_hidden[:, at]
    print("\nsigned median (x, y) at frame %d over %d points: %s" % (at, s.sum(), "; ".join(
        "%s (%+.3f, %+.3f)" % ((name,) + tuple(np.median(tracks[s, at] - truth[s, at], axis=0)))
        for name, tracks in runs.items())))


if __name__ == "__main__":
    main()
