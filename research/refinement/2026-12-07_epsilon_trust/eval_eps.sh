#!/bin/bash
# eval_eps.sh EPS WIDTH OUT: evaluate.py with the refinement's epsilons set (data[:smooth])
eps=$1; width=$2; out=$3
mkdir -p /tmp/evals/$out && cd /tmp/evals/$out
PYTHONPATH=/tmp/exp ~/.cache/vidcorr-ci/py311/bin/python - <<PY
import sys, runpy
from vidcorr.readout import refinement
d, _, s = "$eps".partition(":")
refinement.EPSILON = float(d); refinement.SMOOTH_EPSILON = float(s or d)
sys.argv = ["evaluate.py", "--readout", "kernel", "--refine", "variational", "--stride", "8",
            "--no-interpolation", "--methods", "", "--width", "$width", "--out", "table", "--no-progress"]
runpy.run_path("/tmp/exp/scripts/evaluate.py", run_name="__main__")
PY
