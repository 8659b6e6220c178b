"""Interpolation (Predictor) with the patches' blend or the tap sum: seconds and peak RSS.

    python research/speed/interpolate_tapsum.py {patches,tapsum} HxW

``patches`` is the interpolation graph as it is; ``tapsum`` replaces ``apply_kernels`` with
``_tap_sum`` (the exported graph's blend, the taps summed one by one).
"""
import os
import resource
import sys
import tempfile
import time

import numpy as np

from vidcorr.model import kernels


def main():
    mode, size = sys.argv[1:3]
    if mode == "tapsum":
        kernels.apply_kernels = kernels._tap_sum
    from vidcorr.readout.inference import Predictor, find_model, fold_batch_norm
    from vidcorr.readout.matching import DEFAULT_MODEL
    h, w = (int(v) for v in size.split("x"))
    _, spec, values = find_model(DEFAULT_MODEL)
    p = Predictor(spec, h, w, fold_batch_norm(values), threads=1)
    pair = np.random.RandomState(0).rand(1, h, w, 6).astype(np.float32)
    out = p.predict(pair)
    ts = []
    for _ in range(3):
        t = time.time()
        p.predict(pair)
        ts.append(time.time() - t)
    np.save(os.path.join(tempfile.gettempdir(), "tapsum_%s_%s.npy" % (mode, size)), out)
    print("%s %s: min %.3f s (%s), peak %.2f GB" % (
        mode, size, min(ts), " ".join("%.3f" % t for t in ts),
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6), flush=True)


if __name__ == "__main__":
    main()
