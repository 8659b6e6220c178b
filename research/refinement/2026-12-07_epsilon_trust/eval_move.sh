#!/bin/bash
# eval_move.sh MAXMOVE WIDTH OUT: evaluate.py with the refinement's flow change capped
mv=$1; width=$2; out=$3
mkdir -p /tmp/evals/$out && cd /tmp/evals/$out
PYTHONPATH=/tmp/exp ~/.cache/vidcorr-ci/py311/bin/python - <<PY
import sys, runpy
from vidcorr.readout import refinement
refinement.MAX_MOVE = float("$mv")
sys.argv = ["evaluate.py", "--readout", "kernel", "--refine", "variational", "--stride", "8",
            "--no-interpolation", "--methods", "", "--width", "$width", "--out", "table", "--no-progress"]
runpy.run_path("/tmp/exp/scripts/evaluate.py", run_name="__main__")
PY
