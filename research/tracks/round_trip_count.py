"""How often the round trip alone fails on the track study's clips: each chaining step's
points counted where the inversion or another check fails, and where only the round trip
does (the tracks themselves use the round trip as the settings say).

    python research/tracks/round_trip_count.py --out-dir DIR --no-consistency --clips translate,zoom
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
import track_study  # noqa: E402
from vidcorr.tracking import chain as ch  # noqa: E402

counts = {"steps": 0, "points": 0, "inv_fail": 0, "rt_only_fail": 0}
orig = ch.PairReadout.step


def step(self, points, forward, tolerance, round_trip=False):
    moved, passed, conf = orig(self, points, forward, tolerance, False)
    _, checked, _ = orig(self, points, forward, tolerance, True)  # the same, with the round trip
    counts["steps"] += 1
    counts["points"] += len(points)
    counts["inv_fail"] += int((~passed).sum())
    counts["rt_only_fail"] += int((passed & ~checked).sum())
    return moved, checked if round_trip else passed, conf


ch.PairReadout.step = step
track_study.main(sys.argv[1:])
print(counts)
