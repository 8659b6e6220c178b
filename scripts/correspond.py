"""Find matches between frames with a trained MIND network.

  python scripts/correspond.py FRAME_T FRAME_T2 [--checkpoint RUN] [--out DIR]
  python scripts/correspond.py --pairs LIST.txt      (one "frame_t frame_t2" per line)
  python scripts/correspond.py --frames DIR --gap 2  (consecutive frames of a folder)
  python scripts/correspond.py --video FILE --start 100 --count 3 --gap 2

Per pair it writes NAME.npz, NAME.txt (a table), NAME.flo and NAME_kitti.png
(sparse flow t -> t+2) and NAME.png (a picture) into the output folder.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.errors import run_cli  # noqa: E402
from vidcorr.correspond import correspond_pairs, list_pairs  # noqa: E402
from vidcorr.matching import DEFAULT_LEVELS  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="two images: frame t and frame t+2")
    parser.add_argument("--pairs", help="text file, one 'frame_t frame_t2' pair per line")
    parser.add_argument("--frames", help="folder of frames; pairs (i, i + gap)")
    parser.add_argument("--video", help="video file (or pkg:PACKAGE/path); pairs from --start")
    parser.add_argument("--start", type=int, default=0, help="first frame index for --video")
    parser.add_argument("--count", type=int, default=1, help="number of pairs from --video")
    parser.add_argument("--gap", type=int, default=2,
                        help="frame gap for --frames and --video (default 2)")
    parser.add_argument("--checkpoint", help="run directory or checkpoint prefix "
                                             "(default: the packaged model)")
    parser.add_argument("--stride", type=int, default=4, help="grid stride in pixels")
    parser.add_argument("--max-size", type=int, help="downscale pairs whose longer side exceeds "
                                                     "this; matches are mapped back")
    parser.add_argument("--levels", type=int, default=DEFAULT_LEVELS,
                        help="pyramid levels of the coarse-to-fine read-out; 1 reads out at "
                             "full size only (default %(default)s)")
    parser.add_argument("--consistency", action="store_true",
                        help="keep only matches that agree with the swapped pair")
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="memory budget of a batched backward pass")
    parser.add_argument("--out", default="matches", help="output folder")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    def work():
        pairs = list_pairs(args.images, args.pairs, args.frames, args.gap, args.video,
                           args.start, args.count)
        return correspond_pairs(pairs, args.out, checkpoint=args.checkpoint,
                                stride=args.stride, max_size=args.max_size,
                                consistency=args.consistency, memory_mb=args.memory_mb,
                                progress=not args.no_progress, levels=args.levels)

    code, written = run_cli(work)
    if code:
        return code
    for name, count, seconds in written:
        print("%s: %d matches in %.1f s" % (name, count, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
