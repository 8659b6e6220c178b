"""vidcorr-track's speed and memory: frames per second, and peak memory against clip length.

    python benchmarks/bench_track.py [--size 288x384] [--frames 40]
        [--lengths 100,1000] [--memory-size 96x128] [--work-dir DIR]
        [--option KEY=VALUE] [--skip-speed] [--skip-memory]

Speed: renders a clip (a smooth random texture turning and drifting under a passing
disc, :class:`vidcorr.tracking.clips.LayeredClip`) at ``--size``, follows a 16-pixel grid
through it with :func:`vidcorr.track` (tracking's matcher,
:func:`vidcorr.apps.track.tracking_matcher`, ``--option`` fields over its defaults) with
and without the forward-backward read-out,
and prints frames per second: of the whole call (graph building and drawing excluded),
and split into the read-outs and the chaining per frame.

Memory: renders clips of each of ``--lengths`` frames at ``--memory-size`` into frame
folders and runs ``vidcorr-track`` on each in a fresh process (a grid from the first
frame and one query in the middle of the clip, so the backward pass runs too), and
prints each run's peak resident memory and its ratio to the shortest clip's.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image
from scipy import ndimage

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from option_arg import checked, option  # noqa: E402  (beside this script)
from vidcorr.tracking.clips import Layer, LayeredClip, LayerMotion  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _texture(rng, h, w):
    noise = ndimage.gaussian_filter(rng.uniform(size=(h, w, 3)), (2.0, 2.0, 0))
    return np.clip(0.5 + 3.0 * (noise - 0.5), 0, 1)


def write_clip(folder, height, width, length, seed=0):
    """A frame folder of ``length`` frames; returns its path."""
    rng = np.random.RandomState(seed)
    m = max(height, width) // 2
    clip = LayeredClip([
        Layer(_texture(rng, height + 2 * m, width + 2 * m),
              LayerMotion(velocity=(0.4, 0.2), rotation=0.1, wobble=(3.0, 2.0), period=50),
              (width / 2.0, height / 2.0), (m, m)),
        Layer(_texture(rng, height // 2, height // 2), LayerMotion(wobble=(width / 3.0, 0.0),
                                                                   period=60),
              (width / 2.0, height / 2.0), (height / 4.0 - width / 2.0, height / 4.0 - height / 2.0),
              ellipse=(width / 2.0, height / 2.0, height / 5.0, height / 5.0))],
        height, width, length, supersample=1)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for t in range(length):
        Image.fromarray(clip.frame(t)).save(os.path.join(folder, "%05d.png" % t))
    return folder


MEASURE = """
import resource, sys
from vidcorr.apps.cli_track import track_main
code = track_main(sys.argv[1:])
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code)
"""


def peak_memory_mb(folder, out, length):
    queries = os.path.join(out + ".txt")
    with open(queries, "w") as handle:
        handle.write("0 20 20\n%d 30 30\n%d 40 20\n" % (length // 2, length - 1))
    run = subprocess.run([sys.executable, "-c", MEASURE, folder, "--queries", queries, "--out",
                          out, "--no-progress"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    line = [x for x in run.stdout.splitlines() if x.startswith("PEAK_KB")]
    if not line or not line[0].endswith(" 0"):
        raise SystemExit("vidcorr-track failed: %s" % run.stderr.strip().splitlines()[-1:])
    return int(line[0].split()[1]) / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="288x384")
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--lengths", default="100,1000")
    parser.add_argument("--memory-size", default="96x128")
    parser.add_argument("--work-dir", help="default: a temporary folder, removed after")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        type=option,
                        help="a MatchOptions field over tracking's defaults, e.g. passes=2")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="bench_track-")
    os.makedirs(work, exist_ok=True)
    try:
        if not args.skip_speed:
            import vidcorr
            from vidcorr.apps.track import tracking_matcher
            from vidcorr.quiet import quiet_stderr

            h, w = (int(v) for v in args.size.split("x"))
            folder = write_clip(os.path.join(work, "speed"), h, w, args.frames)
            matcher = tracking_matcher(**checked(parser, args.option))
            print("| size | swapped read-out (consistency) | frames/s | read-out s/frame | "
                  "chaining s/frame |")
            print("|---|---|---|---|---|")
            for consistency in (True, False):
                with quiet_stderr(True):
                    vidcorr.track(folder, grid=16, end=2, matcher=matcher, progress=False,
                                  settings=vidcorr.TrackSettings(consistency=consistency))
                    res = vidcorr.track(folder, grid=16, matcher=matcher, progress=False,
                                        settings=vidcorr.TrackSettings(consistency=consistency))
                s, n = res.seconds, len(res.frames)
                print("| %dx%d | %s | %.2f | %.3f | %.4f |" % (
                    w, h, "yes" if consistency else "no", n / (s["read_out"] + s["chain"]),
                    s["read_out"] / n, s["chain"] / n), flush=True)
            matcher.close()
        if args.skip_memory:
            return
        lengths = [int(v) for v in args.lengths.split(",")]
        h, w = (int(v) for v in args.memory_size.split("x"))
        print("\n| frames (%dx%d) | peak memory MB | ratio to %d frames |" % (w, h, lengths[0]))
        print("|---|---|---|")
        first = None
        for length in lengths:
            folder = write_clip(os.path.join(work, "clip%d" % length), h, w, length)
            peak = peak_memory_mb(folder, os.path.join(work, "out%d" % length), length)
            first = first or peak
            print("| %d | %.0f | %.2f |" % (length, peak, peak / first), flush=True)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
