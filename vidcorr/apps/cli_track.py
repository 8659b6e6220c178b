"""The command-line program ``vidcorr-track`` (also ``python scripts/track.py``): it parses
its arguments, calls :func:`vidcorr.apps.track.track` and turns user errors into one line
and an exit code (:func:`vidcorr.errors.run_cli`)."""

import argparse
import inspect

from vidcorr.errors import UserError, run_cli
from vidcorr.quiet import quiet_stderr
from vidcorr.tracking.chain import TrackSettings

__all__ = ["track_main"]


def track_main(argv=None):
    """Follow points through a video: positions, visibility and confidence per frame.

      vidcorr-track clip.mp4 --grid 16 --out tracks/
      vidcorr-track frames/ --queries points.txt --out tracks/   (one "t x y" per line)
      vidcorr-track clip.mp4 --best 200 --start 10 --end 90 --every 2 --out tracks/

    A query may start at any tracked frame and is followed forward and backward.
    Writes tracks.npz (tracks [N, T, 2], visible, confidence, queries, frames),
    tracks.csv, tracks.png (the tracks on the last frame) and tracks.gif."""
    defaults = TrackSettings()
    parser = argparse.ArgumentParser(description=inspect.cleandoc(track_main.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="a video file, a folder of frames or a pkg: path")
    parser.add_argument("--out", required=True, help="the folder to write")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--queries", help="a text file of 't x y' queries")
    which.add_argument("--grid", type=int, help="a grid of this stride on the first frame")
    which.add_argument("--best", type=int, help="this many most confident points of the first "
                                                "frame")
    parser.add_argument("--start", type=int, default=0, help="first frame (default 0)")
    parser.add_argument("--end", type=int, help="last frame, inclusive (default: the last)")
    parser.add_argument("--every", type=int, default=1, help="frame step (default 1)")
    parser.add_argument("--max-height", type=int, default=0,
                        help="downscale frames to at most this many rows (default: keep)")
    parser.add_argument("--checkpoint", help="a model folder (default: the packaged one)")
    parser.add_argument("--min-confidence", type=float, default=defaults.min_confidence,
                        help="a point below it is invisible (default %(default)s)")
    parser.add_argument("--tolerance", type=float, default=defaults.tolerance,
                        help="forward-backward check, pixels (default %(default)s)")
    swap = parser.add_mutually_exclusive_group()
    swap.add_argument("--consistency", action="store_true", default=defaults.consistency,
                      help="read every pair swapped too: an independent forward-backward check "
                           "at twice the read-out cost")
    swap.add_argument("--no-consistency", dest="consistency", action="store_false",
                      help="one read-out per pair (the default)")
    parser.add_argument("--no-round-trip", action="store_true",
                        help="skip the round trip through each pair's read-out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    try:
        settings = TrackSettings(min_confidence=args.min_confidence, tolerance=args.tolerance,
                                 consistency=args.consistency,
                                 round_trip=not args.no_round_trip)
    except UserError as err:
        parser.error("--" + str(err).replace("_", "-"))
    with quiet_stderr(not args.verbose):
        return _track(args, settings)


def _track(args, settings):
    from vidcorr.apps.track import track, tracking_matcher

    def work():
        matcher = tracking_matcher(args.checkpoint) if args.checkpoint else None
        return track(args.source, queries=args.queries, grid=args.grid, best=args.best,
                     start=args.start, end=args.end, every=args.every, matcher=matcher,
                     settings=settings, max_height=args.max_height, out=args.out,
                     progress=not args.no_progress)

    code, result = run_cli(work, interrupted="interrupted: nothing was written")
    if code:
        return code
    seen = result.visible[:, -1].sum()
    print("%d tracks over %d frames (%d visible at the last) in %.1f s: %s"
          % (len(result.tracks), len(result.frames), seen, result.seconds["total"], args.out))
    return 0
