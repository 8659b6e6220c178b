"""Times tracking's read-out graph alone on one 288x384 pair (the sample video's frames),
with its swap in the same batch (the forward-backward read-out) and without: the least and
the median of 7 runs after one warm-up, TensorFlow's default threads. For comparing two
versions of the code run one after the other (``PYTHONPATH=TREE python
research/tracks/readout_graph_timing.py``), where ``bench_track.py``'s frames per second
vary more between runs than the change being measured.
"""

import os
import time

import numpy as np

from vidcorr.apps.track import tracking_matcher
from vidcorr.io.video import resize_float, to_rgb_float

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def main(height=288, width=384, repeats=7):
    a, b = (resize_float(to_rgb_float(os.path.join(ROOT, name)), height, width)
            for name in ("cockatoo_262.png", "cockatoo_264.png"))
    graph = tracking_matcher(max_seconds=0).readout.graph_for(height, width)
    for swap in (True, False):
        first, second = (np.stack([a, b]), np.stack([b, a])) if swap else (a[None], b[None])
        graph.run(first, second)  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            graph.run(first, second)
            times.append(time.perf_counter() - start)
        print("%s: min %.3f s, median %.3f s" % ("pair and swap" if swap else "pair alone",
                                                 min(times), float(np.median(times))))


if __name__ == "__main__":
    main()
