"""Where the refinement is most sensitive to its start: the 15 pixels of Grove3 (native
size) whose refined positions change most when every starting position moves by up to
1e-4 px (uniform noise), with their start, their refined move, confidence, residual and
how much the starting flow changes within two pixels (output of 2026-12-07: sensitive_pixels_2026-12-07.txt; docs/serving.md, "At native size
the refinement amplifies rounding").

    PYTHONPATH=. python research/serving/sensitive_pixels.py
"""
import numpy as np

from vidcorr.evaluation.groundtruth import builtin_pair
from vidcorr.readout.matching import Matcher
from vidcorr.readout.options import MatchOptions
from vidcorr.readout.refinement import RefineGraph
p = builtin_pair("grove3"); a, b = p.image1, p.image2
m = Matcher("vidcorr/models/default", {"refine": "none"}, threads=1).match(a, b, stride=1)
h, w = m.size
start = np.stack([m.p1, m.p3], 1).reshape(h, w, 2, 2)
noise = np.random.RandomState(0).uniform(-1e-4, 1e-4, start.shape)
r = RefineGraph(h, w, MatchOptions(), threads=1)
x = r.run(a, b, start); y = r.run(a, b, start + noise)
d = np.abs(x["position"] - y["position"]).max(axis=(2, 3))
idx = np.argsort(d.ravel())[::-1][:15]
conf = m.confidence.reshape(h, w)
for i in idx:
    yy, xx = divmod(i, w)
    s = start[yy, xx]; f = x["position"][yy, xx]
    # local field gradient of the start flow
    flow = start[..., 1, :] - start[..., 0, :]
    g = np.abs(flow[max(yy-2,0):yy+3, max(xx-2,0):xx+3] - flow[yy, xx]).max()
    print("(%d,%d) d %.4f start p1 %s p3 %s refined move %.2f conf %.2f resid %.3f flow-spread %.2f" % (
        yy, xx, d[yy, xx], np.round(s[0], 2), np.round(s[1], 2), np.abs(f - s).max(), conf[yy, xx], x["residual"][yy, xx], g))
