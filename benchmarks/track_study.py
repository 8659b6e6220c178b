"""Tracks on clips with known motion: vidcorr, chained DIS and pyramidal LK side by side.

    python benchmarks/track_study.py --out-dir runs/track_study

Renders clips of real textures (scikit-image's pictures) in known, varying, sub-pixel
affine motion with foreground layers passing over the background
(:class:`vidcorr.tracking.clips.LayeredClip`), writes each to a frame folder, follows a
grid of points from the first frame with ``vidcorr.track`` (as a user would: frames
streamed from the folder), with DIS chained the same way and with OpenCV's pyramidal
Lucas-Kanade, and prints one markdown row per method and clip: TAP-Vid's delta_avg,
occlusion accuracy and average Jaccard (in the clip's pixels), the median error after
10 and 30 frames and the fraction within 3 px after 30, the fraction of hidden
point-frames marked invisible, and frames per second (vidcorr's split into read-out and
chaining). Needs the ``eval`` extra (OpenCV, scikit-image).
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.evaluation.tracks import drift, dis_tracks, lk_tracks, tapvid_metrics  # noqa: E402
from vidcorr.io.video import resize_float, stream_frames  # noqa: E402
from vidcorr.quiet import quiet_stderr  # noqa: E402
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion  # noqa: E402
from vidcorr.tracking.queries import grid_queries  # noqa: E402

from option_arg import checked, option  # noqa: E402  (beside this script)


def _texture(name, height, width):
    from skimage import data

    image = getattr(data, name)()
    image = np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image[..., :3]
    return resize_float(image.astype(np.float32) / 255.0, height, width)


def clips(height, width, length):
    """The study's clips: ``{name: LayeredClip}`` (motion per frame step)."""
    h, w = height, width
    m = max(h, w) // 2  # the background texture's margin around the frame
    centre = (w / 2.0, h / 2.0)

    def bg(name, motion):
        return Layer(_texture(name, h + 2 * m, w + 2 * m), motion, centre, offset=(m, m))

    def fg(name, motion, cx, cy, rx, ry):
        rx, ry = int(rx), int(ry)
        return Layer(_texture(name, 2 * ry + 8, 2 * rx + 8), motion, (cx, cy),
                     offset=(rx + 4 - cx, ry + 4 - cy), ellipse=(cx, cy, rx, ry))

    return {
        "translate": LayeredClip([
            bg("astronaut", LayerMotion(velocity=(0.7, 0.35), wobble=(3.0, 1.5), period=28)),
            fg("coffee", LayerMotion(velocity=(-2.3, 0.5), wobble=(2.0, 0.0), period=17),
               0.8 * w, 0.45 * h, 0.14 * w, 0.16 * h)], h, w, length),
        "rotate": LayeredClip([
            bg("chelsea", LayerMotion(velocity=(0.4, -0.2), rotation=0.35, wobble=(1.5, 1.0))),
            fg("rocket", LayerMotion(velocity=(1.9, 0.8), rotation=-0.8),
               0.2 * w, 0.3 * h, 0.12 * w, 0.18 * h)], h, w, length),
        "zoom": LayeredClip([
            bg("coffee", LayerMotion(velocity=(-0.3, 0.25), rotation=-0.2, zoom=0.006)),
            fg("astronaut", LayerMotion(velocity=(2.2, -0.6), zoom=-0.004, wobble=(1.0, 2.0)),
               0.15 * w, 0.6 * h, 0.13 * w, 0.15 * h),
            fg("chelsea", LayerMotion(velocity=(-1.6, -0.9), rotation=0.6),
               0.75 * w, 0.75 * h, 0.1 * w, 0.12 * h)], h, w, length)}


def scores(tracks, visible, truth, truth_visible, queries_at, seconds, frames):
    row = tapvid_metrics(tracks, visible, truth, truth_visible, queries_at)
    row["median_10"], _ = drift(tracks, truth, truth_visible, 10, queries_at)
    row["median_30"], row["within3_30"] = drift(tracks, truth, truth_visible, 30, queries_at)
    hidden = ~truth_visible & (np.arange(truth.shape[1])[None] > queries_at[:, None])
    row["hidden_marked"] = float(np.mean(~visible[hidden])) if hidden.any() else float("nan")
    row["fps"] = frames / seconds
    return row


COLUMNS = ("delta_avg", "occlusion_accuracy", "average_jaccard", "median_10", "median_30",
           "within3_30", "hidden_marked", "fps")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--size", type=int, nargs=2, default=(288, 384), metavar=("H", "W"))
    parser.add_argument("--length", type=int, default=40, help="frames per clip")
    parser.add_argument("--grid", type=int, default=16, help="query grid stride")
    parser.add_argument("--clips", default="translate,rotate,zoom")
    swap = parser.add_mutually_exclusive_group()
    swap.add_argument("--consistency", action="store_true", default=None,
                      help="vidcorr with the swapped read-out")
    swap.add_argument("--no-consistency", dest="consistency", action="store_false",
                      help="vidcorr without it (default: TrackSettings' default)")
    parser.add_argument("--round-trip", choices=("on", "off"), default=None,
                        help="vidcorr's round-trip check (default: TrackSettings' default)")
    parser.add_argument("--anchor-every", type=int, default=8, help="0: no anchors")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        type=option,
                        help="a MatchOptions field for vidcorr's read-out, e.g. passes=1")
    args = parser.parse_args(argv)
    from vidcorr.apps.track import track, tracking_matcher
    from vidcorr.tracking.chain import TrackSettings

    os.makedirs(args.out_dir, exist_ok=True)
    h, w = args.size
    chosen = {} if args.round_trip is None else {"round_trip": args.round_trip == "on"}
    if args.consistency is not None:
        chosen["consistency"] = args.consistency
    settings = TrackSettings(anchor_every=args.anchor_every, **chosen)
    options = checked(parser, args.option)
    matcher = tracking_matcher(**options)  # the tracking defaults, --option over them
    rows = []
    print("| clip | method | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for name, clip in clips(h, w, args.length).items():
        if name not in args.clips.split(","):
            continue
        folder = os.path.join(args.out_dir, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for t in range(args.length):
            Image.fromarray(clip.frame(t)).save(os.path.join(folder, "%04d.png" % t))
        queries = grid_queries(0, h, w, args.grid)
        truth, truth_visible = clip.truth(queries)
        at = np.zeros(len(queries), int)
        start = time.time()
        with quiet_stderr(True):
            result = track(folder, queries=queries, matcher=matcher, settings=settings,
                           out=os.path.join(args.out_dir, name + "_tracks"), progress=False)
        runs = {"vidcorr": (result.tracks, result.visible, result.seconds["total"])}
        del start
        for method, fn in (("dis", dis_tracks), ("lk", lk_tracks)):
            start = time.time()
            tracks, visible = fn(stream_frames(folder), queries[:, 1:])
            runs[method] = (tracks, visible, time.time() - start)
        for method, (tracks, visible, seconds) in runs.items():
            row = scores(tracks, visible, truth, truth_visible, at, seconds, args.length)
            row.update(clip=name, method=method)
            if method == "vidcorr":
                row.update({k: result.seconds[k] / args.length for k in ("read_out", "chain")})
            rows.append(row)
            print("| %s | %s | " % (name, method) + " | ".join(
                "%.3f" % row[c] if c != "fps" else "%.2f" % row[c] for c in COLUMNS) + " |",
                flush=True)
    means = {}
    for method in ("vidcorr", "dis", "lk"):
        mine = [r for r in rows if r["method"] == method]
        means[method] = {c: float(np.nanmean([r[c] for r in mine])) for c in COLUMNS}
        print("| mean | %s | " % method + " | ".join(
            "%.3f" % means[method][c] if c != "fps" else "%.2f" % means[method][c]
            for c in COLUMNS) + " |")
    with open(os.path.join(args.out_dir, "track_study.json"), "w") as handle:
        json.dump({"rows": rows, "means": means, "args": vars(args)}, handle, indent=1)


if __name__ == "__main__":
    main()
